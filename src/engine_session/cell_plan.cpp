#include "engine_session/cell_plan.h"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <string>

#include "engine/spec.h"
#include "error/error.h"
#include "transport/request_body.h"
#include "workload/extra_body.h"

namespace dyno::engine_session {

namespace json = boost::json;

CellSpec cell_from_flags(const load::LoadPlan& load, const workload::StreamOptions& stream,
                         const record::RecordOptions& record) {
  CellSpec spec;
  spec.load = load.config;
  spec.load.keep_event_times = !record.no_chunk_times;
  spec.load.keep_output_text = record.keep_outputs;
  spec.seed = load.seed;
  spec.error_budget = load.error_budget;
  if (load.slo) {
    spec.slo = *load.slo;
    spec.slo_text = load.slo_text.value_or("");
  }
  spec.load_text = load.text;
  spec.stream_cycles = load.cycles;
  spec.label = record.label;
  spec.signing_key = record.signing_key;
  spec.sampling = json::object{{"temperature", stream.temperature}};
  if (stream.extra_body) {
    spec.extra_body =
        about("--extra-body", [&] { return workload::parse_extra_body(*stream.extra_body); });
  }
  spec.extra_body_override = stream.extra_body_override;
  return spec;
}

workload::StreamOptions with_engine_extra_body(const TargetOptions& target,
                                               workload::StreamOptions stream) {
  if (!target.engine_spec) return stream;
  const engine::EngineSpec spec =
      about("--engine", [&] { return engine::load_spec(*target.engine_spec); });
  if (spec.extra_body.empty()) return stream;
  json::object fields = spec.extra_body;
  if (stream.extra_body) {
    const json::object flag =
        about("--extra-body", [&] { return workload::parse_extra_body(*stream.extra_body); });
    for (const auto& kv : flag) fields[kv.key()] = kv.value();
  }
  stream.extra_body = json::serialize(fields);
  return stream;
}

json::object checked_extra_body(const workload::StreamOptions& stream, workload::Api api,
                                bool streamed) {
  if (!stream.extra_body) return {};  // (the override may be for a stream line's extra_body)
  json::object fields =
      about("--extra-body", [&] { return workload::parse_extra_body(*stream.extra_body); });
  if (stream.extra_body_override) return fields;
  std::vector<std::string> own = {"model", api == workload::Api::kChat ? "messages" : "prompt",
                                  "stream"};
  if (streamed) own.emplace_back("stream_options");
  for (const auto& kv : fields) {
    const std::string key(kv.key());
    if (std::find(own.begin(), own.end(), key) != own.end()) {
      throw UsageError("--extra-body: `" + key +
                       "` is a field dyno sets itself in every request body; give "
                       "--extra-body-override to replace dyno's value with yours");
    }
  }
  return fields;
}

void check_extra_body(const std::vector<workload::Request>& requests, workload::Api api,
                      bool streamed, bool allow_override) {
  if (allow_override) return;
  std::string checked;  // the last extra_body found clean with the same dyno fields
  std::vector<std::string> checked_fields;
  for (const workload::Request& r : requests) {
    if (r.extra_body.empty()) continue;
    const std::vector<std::string> own = transport::body_fields(r, api, streamed);
    if (r.extra_body == checked && own == checked_fields) continue;
    for (const std::string& key : workload::extra_body_keys(r)) {
      if (std::find(own.begin(), own.end(), key) != own.end()) {
        throw UsageError("--extra-body / extra_body: `" + key + "` of request '" + r.id +
                         "' is a field dyno sets itself on that request (" +
                         (key == "max_tokens" || key == "temperature" || key == "ignore_eos" ||
                                  key == "min_tokens" || key == "top_p" || key == "seed" ||
                                  key == "stop"
                              ? "from the stream line or a flag such as --max-tokens, "
                                "--temperature, --output-tokens"
                              : "always") +
                         "); set it there, or give --extra-body-override to replace dyno's "
                         "value with yours");
      }
    }
    checked = r.extra_body;
    checked_fields = own;
  }
}

}  // namespace dyno::engine_session
