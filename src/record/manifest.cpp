#include "record/manifest.h"

#include <boost/json.hpp>
#include <stdexcept>
#include <utility>

#include "record/object_reader.h"
#include "record/owner_sections.h"
#include "record/record_json.h"

namespace dyno::record {

namespace json = boost::json;

namespace {

template <typename T>
json::value or_null(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

[[noreturn]] void malformed(const std::string& key, const std::string& what) {
  throw std::runtime_error("manifest.json: " + key + " " + what);
}

using Reader = ObjectReader;

/// `imported`: an imported record, whose file does not state dyno's warm-up (null, never 0).
json::object workload_to_json(const WorkloadSection& w, bool imported) {
  const RequestStreamRef& s = w.request_stream;
  json::object o{
      {"protocol", protocol_to_json(w.protocol)},
      {"api", w.api},
      {"request_stream",
       json::object{
           {"source", s.source},
           {"sha256", s.sha256.empty() ? json::value(nullptr) : json::value(s.sha256)},
           // 0 only in an imported record whose file does not say how many
           // requests (runs) it made: null.
           {"count", s.count == 0 && (s.sha256.empty() || imported) ? json::value(nullptr)
                                                                    : json::value(s.count)},
           {"cycle", s.cycle}}},
      {"sampling", w.sampling},
      {"warmup_requests", imported ? json::value(nullptr) : json::value(w.warmup_requests)}};
  if (w.extra_body) o["extra_body"] = *w.extra_body;
  if (w.extra_body_override) o["extra_body_override"] = true;
  return o;
}

json::object load_to_json(const LoadSection& l) {
  json::object o{{"mode", l.imported    ? "imported"
                          : l.replay    ? "replay"
                          : l.open_loop ? "open"
                                        : "closed"},
                 {"concurrency", or_null(l.concurrency)},
                 {"rate_per_s", number_or_null(l.rate_per_s)},
                 {"arrival", or_null(l.arrival)},
                 {"burstiness", number_or_null(l.burstiness)},
                 {"seed", l.imported ? json::value(nullptr) : json::value(l.seed)},
                 {"requests", or_null(l.requests)},
                 {"duration_s", number_or_null(l.duration_s)},
                 {"timeouts_s", l.timeouts_s}};
  if (l.client_threads) o["client_threads"] = *l.client_threads;
  if (l.error_budget) o["error_budget"] = *l.error_budget;
  if (l.unreachable_after_s) o["unreachable_after_s"] = *l.unreachable_after_s;
  if (l.replay) {
    o["replay"] = json::object{{"time_scale", l.replay->time_scale},
                               {"from_ms", l.replay->from_ms},
                               {"to_ms", number_or_null(l.replay->to_ms)}};
  }
  return o;
}

json::object engine_to_json(const Manifest& m) {
  json::object engine = m.engine;
  if (m.engine_exit) {
    const EngineExit& e = *m.engine_exit;
    engine["exit"] = json::object{{"description", e.description},
                                  {"code", or_null(e.code)},
                                  {"signal", or_null(e.signal)},
                                  {"at_ns", e.at_ns},
                                  {"log_tail", e.log_tail},
                                  {"log_tail_probe_lines_skipped", e.log_tail_probe_lines_skipped}};
  }
  return engine;
}

json::object measurement_to_json(const ClockMeasurement& m) {
  return json::object{{"offset_ns", m.offset_ns}, {"uncertainty_ns", m.uncertainty_ns},
                      {"rtt_ns", m.rtt_ns},       {"samples", m.samples},
                      {"probes", m.probes},       {"at_unix_ns", m.at_unix_ns}};
}

json::object reference_to_json(const ClockReference& r) {
  json::object o{{"address", r.address}, {"id", r.id}};
  for (auto& kv : measurement_to_json(r.before)) o[kv.key()] = kv.value();
  o["after"] = r.after ? json::value(measurement_to_json(*r.after)) : json::value(nullptr);
  o["after_error"] = or_null(r.after_error);
  o["drift_ns"] = or_null(r.drift_ns());
  return o;
}

json::object clock_to_json(const ClockSection& c) {
  json::object clock{{"source", "steady_clock (CLOCK_MONOTONIC)"},
                     {"t0_steady_ns", or_null(c.t0_steady_ns)},
                     {"measured_start_ns", or_null(c.measured_start_ns)}};
  if (c.event_stamps) {
    clock["event_stamps"] = json::object{{"engine", c.event_stamps->engine},
                                         {"receive", c.event_stamps->receive},
                                         {"rejected", c.event_stamps->rejected}};
  }
  if (c.t0_unix_ns) clock["t0_unix_ns"] = *c.t0_unix_ns;
  if (c.t0_unix_uncertainty_ns) clock["t0_unix_uncertainty_ns"] = *c.t0_unix_uncertainty_ns;
  if (c.boot_id) clock["boot_id"] = *c.boot_id;
  if (c.reference) clock["reference"] = reference_to_json(*c.reference);
  return clock;
}

json::object shard_to_json(const ShardSection& s) {
  return json::object{{"k", s.k}, {"n", s.n}, {"start_at", or_null(s.start_at)}};
}

json::object merged_from_to_json(const MergedFrom& m) {
  json::array shards;
  for (const MergedShard& s : m.shards) {
    json::object shard{{"run_id", s.run_id}, {"k", s.k}, {"offset_ns", s.offset_ns}};
    if (s.clock_offset_ns) {
      shard["clock_offset_ns"] = *s.clock_offset_ns;
      shard["clock_uncertainty_ns"] = or_null(s.clock_uncertainty_ns);
      shard["clock_drift_ns"] = or_null(s.clock_drift_ns);
    }
    shards.push_back(std::move(shard));
  }
  json::object o{{"clock_method", m.clock_method},
                 {"uncertainty_ns", m.uncertainty_ns},
                 {"start_spread_ns", m.start_spread_ns},
                 {"shards", std::move(shards)}};
  if (m.clock_reference_id) o["clock_reference_id"] = *m.clock_reference_id;
  if (m.unmeasured_reason) o["unmeasured_reason"] = *m.unmeasured_reason;
  if (m.clock_bound_exceeded) o["clock_bound_exceeded"] = *m.clock_bound_exceeded;
  return o;
}

EngineExit engine_exit_from(const Reader& r) {
  EngineExit e;
  e.description = r.string("description");
  if (const auto code = r.opt_int("code")) e.code = static_cast<int>(*code);
  if (const auto signal = r.opt_int("signal")) e.signal = static_cast<int>(*signal);
  e.at_ns = r.opt_int("at_ns").value_or(0);
  e.log_tail = r.string("log_tail");
  e.log_tail_probe_lines_skipped = r.opt_int("log_tail_probe_lines_skipped").value_or(0);
  return e;
}

WorkloadSection workload_from(const Reader& r) {
  WorkloadSection w;
  w.protocol = protocol_from_json(r.object("protocol").raw());
  w.api = r.string("api");
  const Reader s = r.object("request_stream");
  w.request_stream.source = s.string("source");
  w.request_stream.sha256 = s.opt_string("sha256").value_or("");
  w.request_stream.count = s.opt_uint("count").value_or(0);  // null: an import that does not say
  w.request_stream.cycle = s.raw().contains("cycle") && s.boolean("cycle");  // older records
  w.sampling = r.object_value("sampling");
  (void)sampling_section_from_json(w.sampling);  // checked here: its errors name the key
  w.warmup_requests = r.opt_uint("warmup_requests").value_or(0);  // null: an import's
  if (r.raw().contains("extra_body")) w.extra_body = r.object_value("extra_body");
  w.extra_body_override =
      r.raw().contains("extra_body_override") && r.boolean("extra_body_override");
  return w;
}

LoadSection load_from(const Reader& r) {
  LoadSection l;
  const std::string mode = r.string("mode");
  if (mode != "open" && mode != "closed" && mode != "imported" && mode != "replay") {
    malformed(r.name("mode"), "is not open, closed, replay or imported");
  }
  l.open_loop = mode == "open" || mode == "replay";
  if (mode == "replay") {
    const Reader rp = r.object("replay");
    l.replay = ReplaySection{rp.opt_number("time_scale").value_or(1.0),
                             rp.opt_number("from_ms").value_or(0.0), rp.opt_number("to_ms")};
  }
  l.imported = mode == "imported";
  l.concurrency = r.opt_uint("concurrency");
  l.rate_per_s = r.opt_number("rate_per_s");
  l.arrival = r.opt_string("arrival");
  l.burstiness = r.opt_number("burstiness");
  l.seed = l.imported ? r.opt_uint("seed").value_or(0) : r.uint("seed");
  l.requests = r.opt_uint("requests");
  l.duration_s = r.opt_number("duration_s");
  l.timeouts_s = r.object_value("timeouts_s");
  if (const auto n = r.opt_uint("client_threads")) l.client_threads = static_cast<unsigned>(*n);
  l.error_budget = r.opt_number("error_budget");
  l.unreachable_after_s = r.opt_number("unreachable_after_s");
  return l;
}

ClockMeasurement measurement_from(const Reader& r) {
  const auto need = [&](const char* key) {
    const auto v = r.opt_int(key);
    if (!v) malformed(r.name(key), "is missing");
    return *v;
  };
  return ClockMeasurement{need("offset_ns"), need("uncertainty_ns"), need("rtt_ns"),
                          r.uint("samples"), r.uint("probes"),       need("at_unix_ns")};
}

ClockReference reference_from(const Reader& r) {
  ClockReference c;
  c.address = r.string("address");
  c.id = r.string("id");
  c.before = measurement_from(r);
  if (r.has("after") && !r.raw().at("after").is_null())
    c.after = measurement_from(r.object("after"));
  c.after_error = r.opt_string("after_error");
  return c;
}

ClockSection clock_from(const Reader& r) {
  ClockSection c;
  c.t0_steady_ns = r.opt_int("t0_steady_ns");
  c.measured_start_ns = r.opt_int("measured_start_ns");
  if (r.raw().contains("event_stamps")) {
    const Reader s = r.object("event_stamps");
    c.event_stamps = EventStamps{s.uint("engine"), s.uint("receive"), s.uint("rejected")};
  }
  c.t0_unix_ns = r.opt_int("t0_unix_ns");
  c.t0_unix_uncertainty_ns = r.opt_int("t0_unix_uncertainty_ns");
  c.boot_id = r.opt_string("boot_id");
  if (r.has("reference")) c.reference = reference_from(r.object("reference"));
  return c;
}

ShardSection shard_from(const Reader& r) {
  return ShardSection{r.uint("k"), r.uint("n"), r.opt_string("start_at")};
}

MergedFrom merged_from_from(const Reader& r) {
  MergedFrom m;
  m.clock_method = r.string("clock_method");
  m.uncertainty_ns = r.opt_int("uncertainty_ns").value_or(0);
  m.start_spread_ns = r.opt_int("start_spread_ns").value_or(0);
  for (const json::value& v : r.array("shards")) {
    if (!v.is_object()) malformed("merged_from.shards[]", "is not an object");
    const Reader sr(v.as_object(), "merged_from.shards[]", "manifest.json");
    m.shards.push_back({sr.string("run_id"), sr.uint("k"), sr.opt_int("offset_ns").value_or(0),
                        sr.opt_int("clock_offset_ns"), sr.opt_int("clock_uncertainty_ns"),
                        sr.opt_int("clock_drift_ns")});
  }
  m.clock_reference_id = r.opt_string("clock_reference_id");
  m.unmeasured_reason = r.opt_string("unmeasured_reason");
  m.clock_bound_exceeded = r.opt_string("clock_bound_exceeded");
  return m;
}

json::object derived_from_to_json(const DerivedFrom& d) {
  return json::object{{"kind", d.kind},
                      {"run_id", d.run_id},
                      {"summary_sha256", d.summary_sha256},
                      {"sha256sums_sha256", d.sha256sums_sha256},
                      {"scorer", d.scorer},
                      {"created_at", d.created_at},
                      {"harness", harness_to_json(d.harness)}};
}

json::object source_to_json(const ImportSource& s) {
  json::object o{{"tool", s.tool},          {"tool_version", or_null(s.tool_version)},
                 {"file", s.file},          {"sha256", s.sha256},
                 {"format", s.format},      {"imported_at", s.imported_at},
                 {"timing", s.timing},      {"file_fields", s.file_fields},
                 {"part", or_null(s.part)}, {"evidence_redacted", s.evidence_redacted}};
  if (s.harness_sha256) o["harness_sha256"] = *s.harness_sha256;
  return o;
}

ImportSource source_from(const Reader& r) {
  ImportSource s;
  s.tool = r.string("tool");
  s.tool_version = r.opt_string("tool_version");
  s.file = r.string("file");
  s.sha256 = r.string("sha256");
  s.format = r.string("format");
  s.imported_at = r.string("imported_at");
  s.timing = r.string("timing");
  s.file_fields = r.object_value("file_fields");
  s.part = r.opt_string("part");
  s.evidence_redacted = r.has("evidence_redacted") && r.boolean("evidence_redacted");
  s.harness_sha256 = r.opt_string("harness_sha256");
  return s;
}

DerivedFrom derived_from_from(const Reader& r) {
  DerivedFrom d;
  d.kind = r.string("kind");
  d.run_id = r.string("run_id");
  d.summary_sha256 = r.string("summary_sha256");
  d.sha256sums_sha256 = r.string("sha256sums_sha256");
  d.scorer = r.at("scorer");
  d.created_at = r.string("created_at");
  d.harness = harness_from_json(r.object("harness").raw(), r.name("harness"));
  return d;
}

}  // namespace

json::object manifest_to_json(const Manifest& m) {
  json::array warnings;
  for (const auto& w : m.warnings) warnings.push_back(warning_to_json(w));
  json::array scrubbed;
  for (const auto& f : m.scrubbed_fields) scrubbed.push_back(json::string(f));
  json::array evidence;
  for (const auto& e : m.evidence) {
    evidence.push_back(json::object{{"path", e.path}, {"sha256", e.sha256}});
  }
  json::object o{
      {"schema_version", kSchemaVersion}, {"run_id", m.run_id}, {"label", or_null(m.label)},
      {"campaign", or_null(m.campaign)},  {"status", m.status}, {"started_at", m.started_at},
      {"ended_at", or_null(m.ended_at)}};
  if (m.derived_from) o["derived_from"] = derived_from_to_json(*m.derived_from);
  if (m.source) o["source"] = source_to_json(*m.source);
  if (m.merged_from) o["merged_from"] = merged_from_to_json(*m.merged_from);
  o["harness"] = harness_to_json(m.harness);
  o["engine"] = engine_to_json(m);
  o["model"] = model_to_json(m.model);
  o["hardware"] = hardware_to_json(m.hardware);
  o["workload"] = workload_to_json(m.workload, m.source.has_value());
  o["load"] = load_to_json(m.load);
  if (m.shard) o["shard"] = shard_to_json(*m.shard);
  o["slo"] = json::object{{"ttft_s", number_or_null(m.slo.ttft_s)},
                          {"tpot_s", number_or_null(m.slo.tpot_s)},
                          {"e2e_s", number_or_null(m.slo.e2e_s)}};
  o["warnings"] = std::move(warnings);
  o["scrubbed_fields"] = std::move(scrubbed);
  o["evidence"] = std::move(evidence);
  if (m.telemetry) o["telemetry"] = *m.telemetry;
  if (m.clock) o["clock"] = clock_to_json(*m.clock);
  return o;
}

Manifest manifest_from_json(const json::object& object) {
  const Reader r(object, "", "manifest.json");
  Manifest m;
  m.run_id = r.string("run_id");
  m.label = r.opt_string("label");
  m.campaign = r.opt_string("campaign");
  m.status = r.string("status");
  m.started_at = r.string("started_at");
  m.ended_at = r.opt_string("ended_at");
  if (object.contains("derived_from")) m.derived_from = derived_from_from(r.object("derived_from"));
  if (object.contains("source")) m.source = source_from(r.object("source"));
  if (object.contains("merged_from")) m.merged_from = merged_from_from(r.object("merged_from"));
  if (object.contains("shard")) m.shard = shard_from(r.object("shard"));
  m.harness = harness_from_json(r.object("harness").raw());
  m.engine = r.object_value("engine");
  if (const json::value* exit = m.engine.if_contains("exit"); exit != nullptr) {
    if (!exit->is_object()) malformed("engine.exit", "is not an object");
    m.engine_exit = engine_exit_from(Reader(exit->as_object(), "engine.exit", "manifest.json"));
    m.engine.erase("exit");
  }
  (void)engine_section_from_json(m.engine);
  m.model = model_from_json(r.object("model").raw());
  m.hardware = hardware_from_json(r.object("hardware").raw());
  m.workload = workload_from(r.object("workload"));
  m.load = load_from(r.object("load"));
  const Reader slo = r.object("slo");
  m.slo.ttft_s = slo.opt_number("ttft_s");
  m.slo.tpot_s = slo.opt_number("tpot_s");
  m.slo.e2e_s = slo.opt_number("e2e_s");
  for (const json::value& w : r.array("warnings")) {
    if (!w.is_object()) malformed("warnings[]", "is not an object");
    const Reader wr(w.as_object(), "warnings[]", "manifest.json");
    const std::string name = wr.string("code");
    const std::optional<metrics::WarningCode> code = metrics::warning_code_from(name);
    if (!code) malformed("warnings[].code", "is '" + name + "', not a warning this dyno knows");
    m.warnings.push_back({*code, wr.string("message"), wr.string("hint")});
  }
  m.scrubbed_fields = r.strings("scrubbed_fields");
  for (const json::value& e : r.array("evidence")) {
    if (!e.is_object()) malformed("evidence[]", "is not an object");
    const Reader er(e.as_object(), "evidence[]", "manifest.json");
    m.evidence.push_back({er.string("path"), er.string("sha256")});
  }
  if (object.contains("telemetry")) {
    m.telemetry = r.object_value("telemetry");
    (void)telemetry_section_from_json(*m.telemetry);
  }
  if (object.contains("clock")) m.clock = clock_from(r.object("clock"));
  return m;
}

}  // namespace dyno::record
