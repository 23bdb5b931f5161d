// A protocol's campaign: runs its cells (every repetition kept, one record each, through the
// runner the command gives), selects one repetition per cell by the declared rule, and makes
// the campaign document (<runs-root>/campaigns/<id>.json, docs/protocols.md). The document is
// built from the outcomes alone: no file is read or written here.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine_session/run_cell.h"
#include "protocol/plan.h"

namespace dyno::protocol {

/// A figure's spread over a cell's repetitions (the campaign file's `figures`): min, median and
/// max of its finite values — the median of an even count is the lower middle value, one a
/// repetition had, never a mean of two — and `selected`, the selected repetition's own value
/// (null when it is not a finite number).
boost::json::object figure_spread(std::vector<double> values, const boost::json::value& selected);

/// A cell's member of the campaign file (`cells[i]`: its runs with their figures, the selected
/// repetition — the median by `metric` —, the figures' spreads) from its repetitions' outcomes,
/// with the selected figures put at `key` in `headline`. The one definition ProtocolCampaign
/// and the campaign check (campaign_check.h) share.
boost::json::object cell_document(const Figures& figures, const std::string& name,
                                  const std::vector<std::string>& key,
                                  const boost::json::object& params, const std::string& metric,
                                  const boost::json::object& selection,
                                  const std::vector<engine_session::CellOutcome>& reps,
                                  boost::json::object& headline);

/// Runs one cell spec into a record and returns its outcome (the command shows it).
using CellRunner = std::function<engine_session::CellOutcome(const engine_session::CellSpec&)>;

class ProtocolCampaign {
 public:
  /// `label`: the records' label ("" = the protocol's name); `declared`: what the user says of
  /// the campaign (checked by the command), recorded as given. Throws UsageError when --select
  /// names no known metric.
  ProtocolCampaign(const ProtocolPlan& plan, std::string label, CampaignDeclared declared = {});

  /// A campaign taken up again (`dyno capacity --resume`): its id and start time as its file
  /// says.
  struct Resumed {
    std::string id;
    std::chrono::system_clock::time_point started;
  };
  ProtocolCampaign(const ProtocolPlan& plan, std::string label, CampaignDeclared declared,
                   const Resumed& resumed);

  const std::string& id() const { return id_; }
  bool stopped() const { return stopped_; }

  /// Runs every cell of the plan, each repetition through `run` (announced on `say`), until
  /// a cell is interrupted or the engine is lost.
  void run(const CellRunner& run, const std::function<void(const std::string&)>& say);

  /// Runs one more repetition of `cell` (its first when the campaign has not run it): the
  /// step of a search whose next cell depends on the last (`dyno capacity`). Numbered after
  /// the cell's earlier repetitions; plan.rep.repeat is the most a cell may get.
  void run_repetition(const CellPlan& cell, const CellRunner& run,
                      const std::function<void(const std::string&)>& say);
  /// A repetition that ran before the campaign was resumed, read back from its record.
  void adopt(const CellPlan& cell, engine_session::CellOutcome outcome);
  /// Each cell's name and its repetitions so far, in the order the cells first ran.
  std::vector<std::pair<std::string, const std::vector<engine_session::CellOutcome>*>> results()
      const;

  /// The campaign document; `engine` and `model` are the engine session's (manifest.engine
  /// and the model requested), `vram_after_load` its per-GPU snapshot once the engine was
  /// ready (null without GPUs), `hardware_detected` the hardware line the records' manifests
  /// hold (hardware.label). The writer adds its digest (record/campaign_file.h) once secrets
  /// are taken out.
  boost::json::object document(const boost::json::object& engine, const std::string& model,
                               const boost::json::value& vram_after_load,
                               const std::string& hardware_detected = "") const;
  /// ok | partial (a cell failed) | interrupted | engine_crashed.
  std::string status() const;
  /// The figures of the first repetition of each cell, in the protocol's order: the columns
  /// of the console's table.
  std::vector<std::string> columns() const;

 private:
  struct CellResult {
    std::string name;
    std::vector<std::string> key;  // its place in `headline`
    boost::json::object params;
    std::string metric;  // the selection metric of this cell
    std::vector<engine_session::CellOutcome> reps;
  };

  void run_cell(const CellPlan& cell, const CellRunner& run,
                const std::function<void(const std::string&)>& say);
  CellResult& result_of(const CellPlan& cell);
  engine_session::CellOutcome run_one(const CellPlan& cell, std::uint32_t r,
                                      const std::string& metric, const CellRunner& run,
                                      const std::function<void(const std::string&)>& say);
  boost::json::object cell_json(const CellResult& c, boost::json::object& headline) const;
  boost::json::object selection_json(const std::string& metric) const;

  const ProtocolPlan& plan_;
  std::string label_;
  CampaignDeclared declared_;
  std::string metric_;
  bool user_selected_;
  std::chrono::system_clock::time_point started_;
  std::string id_;
  std::vector<CellResult> cells_;
  bool stopped_ = false;
  bool crashed_ = false;
  bool unreachable_ = false;
  bool failed_ = false;
};

}  // namespace dyno::protocol
