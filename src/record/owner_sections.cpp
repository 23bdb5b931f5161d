#include "record/owner_sections.h"

#include "record/object_reader.h"

namespace dyno::record {

namespace {

constexpr const char* kFile = "manifest.json";

EngineReached reached_from(const ObjectReader& r) {
  EngineReached e;
  e.kind = r.string("kind");
  e.scheme = r.opt_string("scheme");
  e.path = r.opt_string("path");
  e.file = r.opt_string("file");
  e.sha256 = r.opt_string("sha256");
  e.abi_version = r.opt_int("abi_version");
  return e;
}

PluginIdentityRef identity_from(const ObjectReader& r) {
  PluginIdentityRef id;
  id.engine_name = r.string("engine_name");
  id.engine_version = r.opt_string("engine_version");
  id.model_id = r.opt_string("model_id");
  id.model_fingerprint = r.opt_string("model_fingerprint");
  if (r.has("args")) id.args = r.at("args");
  return id;
}

EngineReported reported_from(const ObjectReader& r) {
  EngineReported rep;
  rep.name = r.opt_string("name");
  rep.version = r.opt_string("version");
  rep.model_id = r.opt_string("model_id");
  rep.model_revision = r.opt_string("model_revision");
  if (r.has("sources")) rep.sources = r.object_value("sources");
  if (r.has("unavailable")) rep.unavailable = text_map_from(r.object("unavailable"));
  rep.reason = r.opt_string("reason");
  return rep;
}

EngineLaunchRef launch_from(const ObjectReader& r) {
  EngineLaunchRef l;
  l.launch_id = r.string("launch_id");
  l.spec_file = r.string("spec_file");
  l.spec_sha256 = r.string("spec_sha256");
  l.preset = r.opt_string("preset");
  l.argv = r.strings("argv");
  l.env = text_map_from(r.object("env"));
  l.workdir = r.opt_string("workdir");
  l.container_image = r.opt_string("container_image");
  // A published record's port is a scrub marker: unknown.
  if (!r.scrubbed("port")) l.port = r.integer("port");
  l.launched_at = r.string("launched_at");
  l.ready_s = r.number("ready_s");
  l.probe_ready_s = r.number("probe_ready_s");
  l.first_request_s = r.opt_number("first_request_s");
  const ObjectReader ready = r.object("ready");
  l.ready.http_path = ready.opt_string("http_path");
  l.ready.http_status = ready.integer("http_status");
  l.ready.log_line = ready.opt_string("log_line");
  l.ready.timeout_s = ready.number("timeout_s");
  l.ready.first_request = ready.boolean("first_request");
  const ObjectReader stop = r.object("stop");
  l.stop.signal = stop.string("signal");
  l.stop.grace_s = stop.number("grace_s");
  l.cell_index = r.uint("cell_index");
  l.shared_by_cells = r.boolean("shared_by_cells");
  l.log = r.string("log");
  return l;
}

EngineSourceRef source_from(const ObjectReader& r) {
  EngineSourceRef s;
  s.checkout = r.opt_string("checkout");
  (void)r.at("commit");
  (void)r.at("dirty");
  s.commit = r.opt_string("commit");
  s.dirty = r.opt_bool("dirty");
  if (r.has("unknown")) s.unknown = text_map_from(r.object("unknown"));
  return s;
}

}  // namespace

std::optional<std::string> EngineSection::sim_profile_name() const {
  if (!sim_profile) return std::nullopt;
  const boost::json::value* n = sim_profile->if_contains("name");
  if (n == nullptr || !n->is_string()) return std::nullopt;
  return std::string(n->get_string());
}

EngineSection engine_section_from_json(const boost::json::object& engine, const std::string& path) {
  const ObjectReader r(engine, path, kFile);
  EngineSection e;
  (void)r.at("name");
  (void)r.at("version");
  e.name = r.opt_string("name");
  e.version = r.opt_string("version");
  e.reached = reached_from(r.object("reached"));
  if (r.has("identity")) e.identity = identity_from(r.object("identity"));
  if (r.has("sim_profile")) e.sim_profile = r.object_value("sim_profile");
  e.engine_args = r.object_value("engine_args");
  (void)r.at("api_key_used");
  e.api_key_used = r.opt_bool("api_key_used");
  if (r.has("unknown")) e.unknown = text_map_from(r.object("unknown"));
  if (r.has("reported")) e.reported = reported_from(r.object("reported"));
  if (r.has("launch")) e.launch = launch_from(r.object("launch"));
  if (r.has("topology")) e.topology = r.object_value("topology");
  if (r.has("source")) e.source = source_from(r.object("source"));
  return e;
}

TelemetrySection telemetry_section_from_json(const boost::json::object& telemetry,
                                             const std::string& path) {
  const ObjectReader r(telemetry, path, kFile);
  TelemetrySection t;
  t.mode = r.string("mode");
  const ObjectReader period = r.object("period_ms");
  t.period_ms.requested = period.number("requested");
  t.period_ms.achieved_mean = period.opt_number("achieved_mean");
  t.period_ms.achieved_p99 = period.opt_number("achieved_p99");
  t.read_errors = r.opt_uint("read_errors");
  for (const boost::json::value& v : r.array("backends")) {
    const ObjectReader b = r.element(v, "backends");
    TelemetryBackend backend;
    backend.source = b.string("source");
    backend.available = b.boolean("available");
    (void)b.at("reason");
    backend.reason = b.opt_string("reason");
    backend.details = text_map_from(b.object("details"));
    for (const boost::json::value& d : b.array("devices")) {
      backend.devices.push_back(
          device_from_json(b.element(d, "devices").raw(), b.name("devices") + "[]"));
    }
    t.backends.push_back(std::move(backend));
  }
  (void)r.at("idle_baseline");
  if (!r.is_null("idle_baseline")) {
    const ObjectReader idle = r.object("idle_baseline");
    IdleBaseline baseline;
    baseline.duration_s = idle.number("duration_s");
    for (const boost::json::value& v : idle.array("devices")) {
      const ObjectReader d = idle.element(v, "devices");
      baseline.devices.push_back({d.string("source"), d.integer("device"), d.number("power_w")});
    }
    t.idle_baseline = std::move(baseline);
  }
  return t;
}

SamplingSection sampling_section_from_json(const boost::json::object& sampling,
                                           const std::string& path) {
  const ObjectReader r(sampling, path, kFile);
  SamplingSection s;
  s.temperature = r.opt_number("temperature");
  if (r.has("max_tokens")) s.max_tokens = r.opt_uint("max_tokens");
  s.ignore_eos = r.opt_bool("ignore_eos");
  s.stream = r.opt_bool("stream");
  return s;
}

std::optional<TelemetrySection> telemetry_section_of(
    const std::optional<boost::json::object>& telemetry) {
  if (!telemetry) return std::nullopt;
  return telemetry_section_from_json(*telemetry);
}

}  // namespace dyno::record
