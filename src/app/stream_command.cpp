#include "app/stream_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <iomanip>
#include <utility>
#include <vector>

#include "app/flag_values.h"
#include "app/run_command.h"
#include "app/target_counter.h"
#include "engine_session/engine_session.h"
#include "workload/exact_prompt.h"
#include "workload/request_stream.h"

namespace dyno::app {

void add_stream_make_options(CLI::App& cmd, StreamMakeOptions& o) {
  cmd.add_option("--url", o.url,
                 "base URL whose /tokenize measures lengths (default: the embedded simulated "
                 "engine)");
  cmd.add_option("--model", o.model, "model name (required with --url)");
  cmd.add_option("--api", o.api, "chat or completions")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  cmd.add_option("--profile", o.profile, "embedded simulated engine profile (no --url)")
      ->capture_default_str();
  cmd.add_option("--count", o.count, "requests to generate (required without --sessions)")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("--input-tokens", o.input_tokens,
                 "exact prompt tokens per request (chat: with the chat template; required "
                 "without --sessions)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--output-tokens", o.output_tokens,
                 "output tokens per request (max_tokens = min_tokens, ignore_eos)")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->required();
  cmd.add_option("--seed", o.seed, "seed of the generated text")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--shared-prefix", o.shared_prefix,
                 "every prompt starts with the same text of exactly P tokens")
      ->transform(flags::integer(0, flags::kMaxTokens));
  cmd.add_option("--system", o.system, "chat: a system message; completions: leading text");
  cmd.add_option("--sessions", o.sessions,
                 "a session stream of N multi-turn sessions (chat; with --turns and "
                 "--turn-input-tokens)")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("--turns", o.turns, "sessions: turns per session")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("--turn-input-tokens", o.turn_input_tokens,
                 "sessions: tokens each new user message adds to the conversation (turn 0: "
                 "with --system-tokens, the whole prompt)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--system-tokens", o.system_tokens,
                 "sessions: a system message of exactly S tokens (alone, template included)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_flag("--shared-system,!--no-shared-system", o.shared_system,
               "sessions: one system text for every session (default), or one per session");
  cmd.add_option("--think-ms", o.think_ms,
                 "sessions: the user's pause before each turn >= 1, in ms")
      ->transform(flags::number(0, 86'400'000));
  cmd.add_option("-o,--output", o.output, "stream file to write (JSONL)")->required();
  cmd.add_flag("--json", o.json, "print the length report as JSON on stdout");
  cmd.add_option("--timeout", o.timeout_s, "seconds per tokenize call")
      ->transform(flags::seconds())
      ->capture_default_str();
  cmd.add_flag("--insecure", o.insecure, "https: do not verify the server's certificate");
  cmd.add_option("--ca-file", o.ca_file, "https: PEM file of extra CA certificates");
}

namespace {

namespace json = boost::json;

workload::Api validate(const StreamMakeOptions& o) {
  const workload::Api api = engine_session::parse_api(o.api);
  if (o.url && !o.model) throw UsageError("--model is required with --url");
  if (o.count == 0) throw UsageError("--count is required (or --sessions for a session stream)");
  if (o.input_tokens == 0) throw UsageError("--input-tokens is required");
  for (const auto& [given, flag] : {std::pair{o.turns != 0, "--turns"},
                                    {o.turn_input_tokens != 0, "--turn-input-tokens"},
                                    {o.system_tokens != 0, "--system-tokens"},
                                    {!o.shared_system, "--no-shared-system"},
                                    {o.think_ms.has_value(), "--think-ms"}}) {
    if (given) throw UsageError(std::string(flag) + " belongs to a session stream (--sessions)");
  }
  if (o.shared_prefix >= o.input_tokens) {  // ranges: checked as parsed (app/flag_values.h)
    throw UsageError("--shared-prefix (" + std::to_string(o.shared_prefix) +
                     ") must be less than --input-tokens (" + std::to_string(o.input_tokens) + ")");
  }
  if (o.output.empty()) throw UsageError("-o FILE is required");
  return api;
}

}  // namespace

int stream_make_command(const StreamMakeOptions& o, std::ostream& out) {
  if (o.sessions > 0) return stream_sessions_command(o, out);
  const workload::Api api = validate(o);

  // The tokenizer: the engine the user names, or the embedded simulated engine.
  TargetFlags flags{o.url, o.model, o.api, o.profile, o.timeout_s, o.insecure, o.ca_file};
  TargetCounter count(flags, o.seed);
  const std::string engine = count.engine();
  const bool embedded = count.embedded();
  const std::string model = count.model();

  workload::ExactOptions eo;
  eo.api = api;
  eo.count = o.count;
  eo.input_tokens = o.input_tokens;
  eo.output_tokens = o.output_tokens;
  eo.seed = o.seed;
  eo.shared_prefix_tokens = o.shared_prefix;
  eo.system_prompt = o.system;
  std::vector<workload::LengthReport> report;
  workload::RequestStream stream = workload::make_exact_stream(
      eo, [&count](const workload::Request& r) { return count(r); }, &report);

  // Re-count every request as written: the achieved figures are measured, not assumed.
  std::int64_t hit = 0;
  std::int64_t requested_total = 0;
  std::int64_t achieved_total = 0;
  std::int64_t calls_total = 0;
  for (std::size_t i = 0; i < report.size(); ++i) {
    report[i].achieved = count(stream.requests[i]);
    ++report[i].calls;
    if (report[i].achieved == report[i].requested) ++hit;
    requested_total += report[i].requested;
    achieved_total += report[i].achieved;
    calls_total += report[i].calls;
  }
  workload::write_stream_file(o.output, stream);
  const bool ok = hit == static_cast<std::int64_t>(report.size());
  const char* flavor = count.flavor();

  if (o.json) {
    json::array rows;
    for (const workload::LengthReport& r : report) {
      json::object row;
      row["id"] = r.id;
      row["requested"] = r.requested;
      row["achieved"] = r.achieved;
      if (r.prefix_requested > 0) {
        row["prefix_requested"] = r.prefix_requested;
        row["prefix_achieved"] = r.prefix_achieved;
      }
      row["calls"] = r.calls;
      rows.push_back(std::move(row));
    }
    json::object doc;
    doc["file"] = o.output;
    doc["canonical_sha256"] = stream.sha256;  // = a run's workload.request_stream.sha256
    doc["source"] = stream.source;
    doc["engine"] = engine;
    doc["embedded_sim"] = embedded;
    doc["model"] = model;
    doc["tokenizer"] = flavor;
    doc["requests"] = std::move(rows);
    doc["totals"] = json::object{{"requests", report.size()},
                                 {"hit", hit},
                                 {"missed", static_cast<std::int64_t>(report.size()) - hit},
                                 {"requested_tokens", requested_total},
                                 {"achieved_tokens", achieved_total},
                                 {"tokenize_calls", calls_total}};
    doc["ok"] = ok;
    out << json::serialize(doc) << "\n";
  } else {
    out << count.describe(o.api);
    const bool prefix = o.shared_prefix > 0;
    if (prefix) {
      out << "shared prefix: " << report.front().prefix_achieved << " / " << o.shared_prefix
          << " tokens\n";
    }
    std::size_t id_width = 5;
    for (const auto& r : report) id_width = std::max(id_width, r.id.size());
    out << std::left << std::setw(static_cast<int>(id_width)) << "id" << std::right << std::setw(11)
        << "requested" << std::setw(10) << "achieved" << std::setw(7) << "calls"
        << "\n";
    for (const auto& r : report) {
      out << std::left << std::setw(static_cast<int>(id_width)) << r.id << std::right
          << std::setw(11) << r.requested << std::setw(10) << r.achieved << std::setw(7) << r.calls
          << (r.achieved == r.requested ? "" : "  MISS") << "\n";
    }
    out << std::left << std::setw(static_cast<int>(id_width)) << "total" << std::right
        << std::setw(11) << requested_total << std::setw(10) << achieved_total << std::setw(7)
        << calls_total << "\n";
    out << hit << "/" << report.size() << " requests hit their target exactly\n";
    out << "wrote " << o.output << " (" << report.size() << " requests, canonical sha256 "
        << stream.sha256 << ")\n";
  }
  return ok ? kExitOk : kExitRunFailed;
}

}  // namespace dyno::app
