// `dyno rescore`: the kept outputs of a finished record judged again, with a scorer given or
// with the requests' own scorers as this dyno implements them, into a new derived record
// (docs/record.md "Derived records", docs/metrics.md "Re-scoring"). The source is never
// modified: the derived record is built from its verified bytes alone.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "error/error.h"
#include "metrics/trace.h"
#include "record/manifest_sections.h"
#include "workload/request.h"

namespace dyno::record {

/// A record that cannot be re-scored (still running, fails verification, no scored request,
/// no kept output or expected answer, a scorer that does not fit a request): exit 2.
class RescoreError : public Error {
 public:
  explicit RescoreError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// The expectation a request is judged against when `scorer` (from --scorer; nullopt: the
/// request's own) is applied to its own expectation `own`: the answer stays; the scorer is the
/// one given; a regex or choice scorer given without its pattern or choices takes the request's
/// own when the request had that scorer. The result is checked like a stream's expectation.
/// Throws RescoreError naming `where` when the scorer lacks its pattern or choices, and
/// workload::StreamError when the expectation cannot be used (an answer not among the choices).
workload::Expectation effective_expectation(const workload::Expectation& own,
                                            const std::optional<workload::Expectation>& scorer,
                                            const std::string& where);

/// requests.jsonl's lines judged again.
struct RescoredRequests {
  std::vector<boost::json::object> lines;  ///< every line; `score` replaced where there was one
  std::vector<metrics::Trace> traces;      ///< the lines read back, with the new scores
  std::size_t scored = 0;                  ///< lines with a score (warm-up included)
  std::size_t changed = 0;                 ///< of which the verdict (`correct`) changed
};

/// Judges every scored line again (a completed request's `output_text` with its effective
/// expectation; a failed request stays incorrect with an empty `extracted`). Lines without a
/// score are kept as they are. `run_id` names the record in errors. Throws RescoreError when a
/// scored line has no `expected` answer (written before dyno kept it), a completed scored line
/// has no `output_text` (outputs not kept), or no line is scored; RecordReadError for a
/// malformed line.
RescoredRequests rescore_requests(std::vector<boost::json::object> lines,
                                  const std::optional<workload::Expectation>& scorer,
                                  const std::string& run_id);

struct RescoreOptions {
  std::filesystem::path source;      ///< the run directory to re-score
  std::filesystem::path runs_root;   ///< where the derived record is written
  std::optional<std::string> label;  ///< default: the source's label + "-rescore", or "rescore"
  std::optional<workload::Expectation> scorer;  ///< --scorer (workload::parse_scorer_spec)
  HarnessIdentity harness;                      ///< the dyno that derives (manifest `harness`)
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

struct RescoreOutcome {
  std::string run_id;  ///< the derived record's
  std::filesystem::path dir;
  std::string source_run_id;
  boost::json::object before;        ///< the source's summary `quality`
  boost::json::object after;         ///< the derived record's
  boost::json::object derived_from;  ///< its manifest's `derived_from`
  std::size_t scored = 0;
  std::size_t changed = 0;
};

/// Re-scores the record at `source` into a new record under `runs_root`: a new run id; the
/// source's manifest with `derived_from` {kind "rescore", run_id, summary_sha256,
/// sha256sums_sha256, scorer, created_at, harness} and the new label; requests.jsonl with the
/// new scores; summary.json with `quality` recomputed and every other figure the source's;
/// telemetry and evidence copied byte for byte; SHA256SUMS. Refuses (RescoreError) a record
/// still `running` or being written, one that fails verify_run_dir, and what
/// rescore_requests refuses. Does not index the new record (index_finished_run).
RescoreOutcome rescore_run(const RescoreOptions& options);

}  // namespace dyno::record
