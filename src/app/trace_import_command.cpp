// `dyno stream import mooncake|azure|burstgpt`: a trace's requests with exact prompts, counted
// by the target's tokenizer, and send times (at_ms) for replay.
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "app/run_command.h"
#include "app/stream_import_command.h"
#include "app/target_counter.h"
#include "json/json_text.h"
#include "workload/request_stream.h"
#include "workload/trace_import.h"
#include "workload/trace_prompts.h"

namespace dyno::app {

namespace {

/// At most this many tokenize connections at once.
constexpr std::size_t kTokenizeConnections = 4;

}  // namespace

int trace_import_command(const StreamImportOptions& o) {
  if (o.max_tokens) {
    throw UsageError(
        "--max-tokens: a trace sets each request's output length (max_tokens = "
        "min_tokens, ignore_eos)");
  }
  if (o.block_tokens < 1) throw UsageError("--block-tokens must be at least 1");
  for (const auto& [given, flag] : {std::pair{o.shuffle_seed.has_value(), "--shuffle-seed"},
                                    {o.output_from_reference, "--output-from-reference"},
                                    {o.min_prompt_chars != 0, "--min-prompt-chars"},
                                    {!o.columns.empty(), "--columns"},
                                    {!o.format.empty(), "--format"},
                                    {!o.scorer.empty(), "--scorer"},
                                    {!o.instruction.empty(), "--instruction"},
                                    {!o.image_dir.empty(), "--image-dir"}}) {
    if (given) throw UsageError(std::string(flag) + ": not for a trace (" + o.kind + ")");
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string api = o.api.value_or("completions");
  // The trace first: a malformed file is reported before any engine is asked.
  const workload::TraceFile trace =
      about("stream import", [&] { return workload::read_trace_file(o.kind, o.input, o.limit); });
  TargetFlags flags{o.url, o.model, api, o.profile, o.timeout_s, o.insecure, o.ca_file};
  TargetCounter count(flags, o.seed);
  workload::TracePromptOptions to;
  to.api = count.api();
  to.block_tokens = o.block_tokens;
  to.seed = o.seed;
  to.skip_short = o.skip_short;
  // Prompts are counted on a few connections at once (the engine tokenizes one while dyno
  // builds and sends the next).
  const std::size_t connections =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kTokenizeConnections);
  const std::vector<workload::PromptTokenCounter> parallel =
      count.parallel(connections, o.timeout_s);
  workload::TraceReport report;
  const workload::RequestStream stream = about("stream import", [&] {
    return workload::build_trace_stream(
        trace, to, [&count](const workload::Request& r) { return count(r); }, &report, parallel);
  });
  about("-o", [&] { workload::write_stream_file(o.output, stream); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (o.json) {
    boost::json::array adjusted;
    for (const std::string& id : report.adjusted) adjusted.emplace_back(id);
    boost::json::object doc{{"output", o.output},
                            {"source", stream.source},
                            {"kind", o.kind},
                            {"engine", count.engine()},
                            {"embedded_sim", count.embedded()},
                            {"model", count.model()},
                            {"tokenizer", count.flavor()},
                            {"api", api},
                            {"rows", trace.rows},
                            {"skipped_no_output", trace.skipped_no_output},
                            {"skipped_no_input", trace.skipped_no_input},
                            {"skipped_short", report.skipped_short.size()},
                            {"requests", stream.requests.size()},
                            {"block_tokens", o.block_tokens},
                            {"distinct_blocks", report.distinct_blocks},
                            {"vocabulary", report.vocabulary},
                            {"calibration_calls", report.calibration_calls},
                            {"count_calls", report.count_calls},
                            {"tokenize_connections", connections},
                            {"exact_first", report.exact_first},
                            {"adjusted", std::move(adjusted)},
                            {"requested_tokens", report.requested_tokens},
                            {"achieved_tokens", report.achieved_tokens},
                            {"seconds", seconds},
                            {"canonical_sha256", stream.sha256}};
    std::cout << json_text::pretty(doc);
    return kExitOk;
  }
  std::cout << count.describe(api);
  std::cout << "read " << trace.rows << " rows of " << o.input << ": " << stream.requests.size()
            << " requests";
  if (trace.skipped_no_output > 0) {
    std::cout << ", " << trace.skipped_no_output << " skipped with 0 output tokens"
              << (o.kind == "burstgpt" ? " (failed requests)" : "");
  }
  if (trace.skipped_no_input > 0) {
    std::cout << ", " << trace.skipped_no_input << " skipped with 0 input tokens";
  }
  if (!report.skipped_short.empty()) {
    std::cout << ", " << report.skipped_short.size()
              << " skipped below a prompt's fixed cost (--skip-short; first on line "
              << report.skipped_short.front() << ")";
  }
  std::cout << "\n";
  if (report.distinct_blocks > 0) {
    std::cout << report.distinct_blocks << " distinct hash ids, blocks of " << o.block_tokens
              << " tokens\n";
  }
  std::cout << "calibration: " << report.vocabulary << " one-token words ("
            << report.calibration_calls << " tokenize calls)\n";
  std::cout << "prompts: " << report.exact_first << "/" << stream.requests.size()
            << " exact at their first count, " << report.adjusted.size()
            << " re-fitted; every prompt exact (" << report.achieved_tokens << " tokens, "
            << report.count_calls << " tokenize calls)\n";
  std::cout << "wrote " << stream.requests.size() << " requests to " << o.output << " in "
            << json_text::compact(boost::json::value(std::round(seconds * 100) / 100))
            << " s\ncanonical sha256 " << stream.sha256 << "\n";
  return kExitOk;
}

}  // namespace dyno::app
