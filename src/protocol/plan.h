// Named, versioned protocols — sweep, ladder, speed, real — as plans: the protocol's options
// and the flags the cells share become a list of cells (each repetition's CellSpec), the
// campaign's parameters and the figures each cell reports (docs/protocols.md). Pure: no
// request is sent and no file is written here; a ladder's exact prompt lengths come from a
// counter the caller gives (the engine's /tokenize).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine_session/run_cell.h"
#include "load/options.h"
#include "load/plan.h"
#include "metrics/summary.h"
#include "record/options.h"
#include "workload/request.h"
#include "workload/request_stream.h"
#include "workload/stream_options.h"

namespace dyno::protocol {

/// Selection of one repetition among K: the median by `select` (a metric name, see
/// docs/protocols.md); every repetition stays in the campaign file.
struct RepeatOptions {
  std::uint32_t repeat = 1;
  std::string select;  ///< "" = the protocol's primary metric
};

/// What the user declares of a campaign (docs/protocols.md, "What a campaign file says of
/// itself"): recorded verbatim in the campaign file, never read or acted on. The command checks
/// the values (exit 2 naming the flag).
struct CampaignDeclared {
  std::optional<std::string> name;            ///< --campaign-name: the campaign's own name
  std::vector<std::string> notes;             ///< --notes, in order
  std::optional<std::string> status;          ///< --campaign-status: the user's, never dyno's
  std::optional<std::string> hardware_label;  ///< --hardware-label
  std::vector<std::string> evidence;          ///< --evidence: paths or URLs, as given
};

struct SweepOptions {
  std::string concurrencies = "1,2,4,8";  ///< closed-loop cells
  std::optional<std::string> rates;       ///< open-loop cells instead (req/s)
  std::uint64_t min_requests = 32;        ///< each cell gets max(min_requests, k·C) requests
  std::uint64_t per_slot = 8;             ///< k
  double rate_duration_s = 30.0;          ///< open-loop cells: how long each sends
  RepeatOptions rep;
  CampaignDeclared declared;
};

struct LadderOptions {
  std::string depths = "0,8000,16000,32000";    ///< decode cells: context depth in tokens
  std::string prefill_sizes = "512,2048,8192";  ///< prefill-only cells: prompt size
  std::int64_t decode_tokens = 256;             ///< output tokens of a decode cell
  std::int64_t prefill_decode_tokens = 1;       ///< output tokens of a prefill cell
  RepeatOptions rep{3, ""};
  CampaignDeclared declared;
};

struct SpeedOptions {
  std::string passes = "main";    ///< named passes, e.g. "fr,en,fr2"
  std::uint32_t concurrency = 8;  ///< the aggregate burst
  RepeatOptions rep;
  CampaignDeclared declared;
};

struct RealOptions {
  RepeatOptions rep;
  CampaignDeclared declared;
};

/// The flags every cell of a protocol shares, applied to each cell as `dyno run` applies them
/// (load::plan, then engine_session::cell_from_flags).
struct Shared {
  workload::Api api = workload::Api::kChat;
  load::LoadOptions load;  ///< arrival, burstiness, seed, warm-up, client threads, error budget…
  workload::StreamOptions stream;  ///< sampling defaults, synthetic lengths, --stream, extra body
  record::RecordOptions record;    ///< what the records keep, the label
};

/// A protocol's figures of one repetition of a cell (each protocol's own names).
using Figures = std::function<boost::json::object(const engine_session::CellOutcome&)>;

struct CellPlan {
  std::string name;            ///< e.g. "c8", "decode@8000", "fr/solo"
  boost::json::object params;  ///< the campaign file's cell params
  std::string metric;          ///< replaces the protocol's primary metric ("" = keep it)
  /// The spec of repetition r (0-based); called just before it runs.
  std::function<engine_session::CellSpec(std::uint32_t)> spec_for;
  /// Where the cell's headline figures sit in the campaign file's `headline` (nested keys):
  /// a pass and its part for speed ({"fr", "solo"}), the kind and size for ladder
  /// ({"decode", "8000"}), the case for real; empty: the cell's name.
  std::vector<std::string> key = {};
};

struct ProtocolPlan {
  std::string name;  ///< sweep | ladder | speed | real
  int version = 1;
  boost::json::object params;
  RepeatOptions rep;
  std::string primary;  ///< the selection metric unless --select names one
  Figures figures;
  std::vector<CellPlan> cells;
  /// A search (capacity): its cells run as it decides (ProtocolCampaign::run_repetition), a
  /// cell that fails — no request succeeded, errors over the budget — is a finding, not a
  /// failure of the campaign, and rep.repeat is the most repetitions a cell may get.
  bool search = false;
};

/// The figures of one repetition of a cell of `protocol` (sweep, ladder, speed, real): the one
/// definition the plans and the campaign check (campaign_check.h) share; empty for another name.
Figures protocol_figures(const std::string& protocol);

/// Where a cell's figures sit in the campaign file's `headline`: speed's "<pass>/<part>" →
/// {pass, part}, ladder's "<kind>@<tokens>" → {kind, tokens}, any other cell → {its name}.
std::vector<std::string> headline_key(const std::string& protocol, const std::string& cell);

/// Sweep: one closed-loop cell per level of `levels` (a concurrency: max(min_requests,
/// per_slot·C) requests each), or with sweep.rates one open-loop cell per rate (rate_duration_s
/// each), over `stream` cyclically. The caller checked the levels against the flags' limits.
ProtocolPlan plan_sweep(const SweepOptions& sweep, const std::vector<double>& levels,
                        const Shared& shared, const workload::RequestStream& stream);

/// The load of the sweep's cell at `level`: closed at concurrency `level` for max(min_requests,
/// per_slot·C) requests, or with sweep.rates open at rate `level` for rate_duration_s (named
/// --rates and --rate-duration in load::plan's messages); --warmup per cell.
load::CellLoad sweep_cell_load(const SweepOptions& sweep, double level);

/// The requests a sweep needs of its stream besides the warm-up: the most any cell sends.
std::uint64_t sweep_requests(const SweepOptions& sweep, const std::vector<double>& levels);

/// Counts a request's prompt tokens with the engine's tokenizer.
using PromptCounter = std::function<std::int64_t(const workload::Request&)>;

/// Ladder: one decode cell per depth (decode_tokens each) and one prefill cell per size; each
/// repetition sends a prompt no earlier request sent. With `count`, prompt lengths are exact
/// (`tokenizer` names its flavour in the params) and `after_count` runs once a prompt is made
/// (e.g. closing the tokenizer's connection before the cell runs); without, about one token a
/// word.
ProtocolPlan plan_ladder(const LadderOptions& ladder, const std::vector<double>& depths,
                         const std::vector<double>& sizes, const Shared& shared,
                         PromptCounter count, const std::string& tokenizer,
                         std::function<void()> after_count = {});

/// Speed: per pass of `passes`, a solo streamed request (the session's one warm-up before the
/// first) and a burst of speed.concurrency. Prompts: `file`'s requests tagged pass=<name> (a
/// pass "fr2" without its own repeats "fr"), else synthetic prompts seeded by the pass's base
/// name. Throws UsageError when a pass has no prompt in `file`.
ProtocolPlan plan_speed(const SpeedOptions& speed, const std::vector<std::string>& passes,
                        const Shared& shared, const std::optional<workload::RequestStream>& file);

/// Real: one cell per case (requests tagged case=<name>, else each request its own case).
ProtocolPlan plan_real(const RealOptions& real, const Shared& shared,
                       const workload::RequestStream& stream);

}  // namespace dyno::protocol
