// A protocol's campaign: runs its cells (every repetition kept, one record each), selects one
// repetition per cell by the declared rule, writes <runs-root>/campaigns/<id>.json and prints
// the console table (docs/protocols.md).
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "app/protocols.h"
#include "app/run_cell.h"

namespace dyno::app {

/// A protocol's figures of one repetition of a cell (each protocol's own names).
using Figures = std::function<boost::json::object(const CellOutcome&)>;

/// A figure's spread over a cell's repetitions (the campaign file's `figures`): min, median and
/// max of its finite values — the median of an even count is the lower middle value, one a
/// repetition had, never a mean of two — and `selected`, the selected repetition's own value
/// (null when it is not a finite number).
boost::json::object figure_spread(std::vector<double> values, const boost::json::value& selected);

class Campaign {
 public:
  /// Throws UsageError when --select names no known metric.
  Campaign(const RunOptions& o, std::string protocol, int version, boost::json::object params,
           const RepeatOptions& rep, std::string primary, Figures figures);

  const std::string& id() const { return id_; }
  bool stopped() const { return stopped_; }

  /// Runs `base` repeat_ times as cell `cell`. `cell_metric` replaces the protocol's primary
  /// metric for this cell (e.g. prefill cells have no decode rate) unless --select was given.
  void run(EngineSession& engine, const CellSpec& base, const std::string& cell,
           boost::json::object cell_params, const std::atomic<bool>& stop,
           const std::string& cell_metric = "");

  /// As above, with the spec of each repetition (0-based) from `spec_for`.
  void run(EngineSession& engine, const std::function<CellSpec(std::uint32_t)>& spec_for,
           const std::string& cell, boost::json::object cell_params, const std::atomic<bool>& stop,
           const std::string& cell_metric = "");

  /// Writes <runs-root>/campaigns/<id>.json, prints the table; returns the exit code.
  int finish(const EngineSession& engine);

 private:
  struct CellResult {
    std::string name;
    boost::json::object params;
    std::string metric;  // the selection metric of this cell
    std::vector<CellOutcome> reps;
  };

  boost::json::object selection_json(const std::string& metric) const;
  /// One row per cell, one column per figure: the selected repetition's value (a run's own
  /// figures, never a blend of runs).
  void print_table(const boost::json::object& doc, const std::filesystem::path& file) const;

  const RunOptions& o_;
  std::string protocol_;
  int version_;
  boost::json::object params_;
  std::uint32_t repeat_;
  std::string metric_;
  bool user_selected_;
  Figures figures_;
  std::chrono::system_clock::time_point started_;
  std::string id_;
  std::vector<CellResult> cells_;
  bool stopped_ = false;
  bool crashed_ = false;
  bool failed_ = false;
};

}  // namespace dyno::app
