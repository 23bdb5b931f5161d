#include "app/stream_command.h"

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <memory>
#include <sstream>
#include <vector>

#include "app/run_command.h"
#include "session/engine_session.h"
#include "sim/profile.h"
#include "sim/server.h"
#include "transport/http_target.h"
#include "transport/tokenize_client.h"
#include "workload/exact_prompt.h"
#include "workload/request_stream.h"

namespace dyno::app {

namespace {

namespace json = boost::json;

workload::Api validate(const StreamMakeOptions& o) {
  const workload::Api api = session::parse_api(o.api);
  if (o.url && !o.model) throw UsageError("--model is required with --url");
  if (o.shared_prefix >= o.input_tokens) {  // ranges: checked as parsed (app/flag_values.h)
    throw UsageError("--shared-prefix (" + std::to_string(o.shared_prefix) +
                     ") must be less than --input-tokens (" + std::to_string(o.input_tokens) + ")");
  }
  if (o.output.empty()) throw UsageError("-o FILE is required");
  return api;
}

}  // namespace

int stream_make_command(const StreamMakeOptions& o, std::ostream& out) {
  const workload::Api api = validate(o);

  // The tokenizer: the engine the user names, or the embedded simulated engine.
  session::TargetOptions target;
  target.url = o.url;
  target.model = o.model;
  target.api = o.api;
  target.profile = o.profile;
  target.insecure = o.insecure;
  target.ca_file = o.ca_file;
  telemetry::TelemetryOptions telemetry;
  telemetry.mode = "off";  // no load is measured: no sampler thread, no idle baseline
  const std::atomic<bool> never_stop{false};  // no engine is launched (no --engine here)
  session::EngineSession session(target, telemetry, o.seed, api, never_stop);
  const std::string engine = session.display();
  const bool embedded = session.embedded() != nullptr;
  const std::string model = session.model();
  session::PromptCounter count(session, o.timeout_s);

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
    if (embedded) {
      out << "no --url: lengths measured by the embedded dyno sim (" << engine
          << "); its tokenizer is not your engine's\n";
    }
    out << "tokenizer: " << engine << " /tokenize (" << flavor << "), model " << model << ", api "
        << o.api << "\n";
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
