#include "compare/fairness.h"

#include <algorithm>

#include "json/json_text.h"
#include "record/owner_sections.h"

namespace dyno::compare {

namespace json = boost::json;

const char* to_string(CheckLevel level) {
  switch (level) {
    case CheckLevel::kRequired:
      return "required";
    case CheckLevel::kReported:
      return "reported";
    case CheckLevel::kIgnored:
      return "ignored";
  }
  return "required";
}

const char* to_string(CheckOutcome outcome) {
  switch (outcome) {
    case CheckOutcome::kPass:
      return "pass";
    case CheckOutcome::kFail:
      return "fail";
    case CheckOutcome::kUnresolved:
      return "unresolved";
  }
  return "pass";
}

const std::vector<CheckDef>& check_catalog() {
  using L = CheckLevel;
  static const std::vector<CheckDef> catalog = {
      {"request_stream", "request stream",
       "the canonical SHA-256 of the request stream (manifest workload.request_stream.sha256)",
       L::kRequired},
      {"request_count", "request count", "measured requests that ended (summary requests.total)",
       L::kRequired},
      {"input_tokens", "input tokens",
       "Σ input tokens of the completed requests (summary tokens.input_total)", L::kRequired},
      {"sampling", "sampling", "the sampling parameters (manifest workload.sampling)",
       L::kRequired},
      {"api", "API", "chat or completions (manifest workload.api)", L::kRequired},
      {"load", "load", "schedule, concurrency or rate, seed and limits (manifest load)",
       L::kRequired},
      {"warmup", "warm-up", "warm-up requests (manifest workload.warmup_requests)", L::kRequired},
      {"model_revision", "model revision", "manifest model.revision", L::kRequired},
      {"model_fingerprint", "model fingerprint",
       "SHA-256 of the weights' header and metadata (manifest model.fingerprint)", L::kRequired},
      {"driver", "driver", "the GPU driver of every GPU (manifest hardware.gpus[].driver)",
       L::kRequired},
      {"gpu_model", "GPU model",
       "name and memory of every GPU (manifest hardware.gpus[].name, memory_total_bytes)",
       L::kRequired},
      {"gpu_uuid", "GPU UUID", "the UUID of every GPU (manifest hardware.gpus[].uuid)",
       L::kReported},
      {"harness", "harness", "SHA-256 of the dyno executable (manifest harness.executable_sha256)",
       L::kRequired},
      {"dirty_sources", "clean sources",
       "neither harness was built from a modified source tree (manifest harness.git_dirty)",
       L::kReported},
      {"engine_dirty_sources", "engine clean sources",
       "neither engine was built from a modified source tree (manifest engine.source.dirty)",
       L::kReported},
      {"engine_commit", "engine commit",
       "the commit of the engine's source checkout (manifest engine.source.commit)", L::kIgnored},
  };
  return catalog;
}

Policy::Policy() {
  for (const auto& c : check_catalog()) levels_[c.name] = c.default_level;
}

CheckLevel Policy::level(const std::string& check) const {
  const auto it = levels_.find(check);
  return it == levels_.end() ? CheckLevel::kIgnored : it->second;
}

void Policy::set(const std::string& check, CheckLevel level) {
  if (levels_.find(check) == levels_.end()) {
    std::string known;
    for (const auto& c : check_catalog()) known += (known.empty() ? "" : ", ") + c.name;
    throw CompareError("unknown check '" + check + "'; the checks are " + known);
  }
  levels_[check] = level;
}

void Policy::set_list(const std::string& names, CheckLevel level, const std::string& flag) {
  std::size_t start = 0;
  while (start <= names.size()) {
    const auto comma = names.find(',', start);
    const std::string name =
        names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty()) {
      about(flag, [&] { set(name, level); });
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

std::string canonical_text(const json::value& v) {
  if (v.is_object()) {
    std::vector<std::pair<std::string, const json::value*>> items;
    for (const auto& kv : v.get_object()) items.emplace_back(std::string(kv.key()), &kv.value());
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ",";
      out +=
          json_text::compact(json::value(items[i].first)) + ":" + canonical_text(*items[i].second);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    const auto& a = v.get_array();
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (i > 0) out += ",";
      out += canonical_text(a[i]);
    }
    return out + "]";
  }
  return json_text::compact(v);
}

namespace {

json::value at(const json::object& root, const std::string& path) {
  const json::value* v = find_path(root, path);
  return v == nullptr ? json::value(nullptr) : *v;
}

template <typename T>
json::value or_null(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

/// Whether the record states that its host has no GPU: `hardware.gpus` is empty and either
/// dyno's telemetry looked (it was not off: the GPU sources found none), or the imported file
/// said so (an empty list without a reason in hardware.unknown.gpus). An empty list left by
/// telemetry off, or by a file that does not say, is no identity.
bool states_no_gpu(const RunRecord& r) {
  const record::HardwareIdentity& hw = r.manifest.hardware;
  if (!hw.gpus.empty()) return false;
  if (r.imported()) return !hw.unknown_reason("gpus").has_value();
  const std::optional<record::TelemetrySection> t =
      record::telemetry_section_of(r.manifest.telemetry);
  return t && t->mode != "off";
}

/// A list of one field over hardware.gpus: empty when the record states there is no GPU
/// (an identity: two hosts without a GPU have equal ones); null when the record does not know
/// its GPUs or a GPU lacks the field.
json::value gpu_list(const RunRecord& r, const char* check) {
  if (states_no_gpu(r)) return json::array();
  const std::vector<record::DeviceEntry>& gpus = r.manifest.hardware.gpus;
  if (gpus.empty()) return nullptr;
  json::array out;
  for (const record::DeviceEntry& g : gpus) {
    const std::string c = check;
    if (c == "gpu_model") {
      if (!g.name) return nullptr;
      out.push_back(
          json::object{{"name", *g.name}, {"memory_total_bytes", or_null(g.memory_total_bytes)}});
    } else {
      const std::optional<std::string>& v = c == "driver" ? g.driver : g.uuid;
      if (!v || v->empty()) return nullptr;
      out.push_back(json::value(*v));
    }
  }
  return out;
}

std::string gpu_note(const RunRecord& r) {
  const std::optional<record::TelemetrySection> t =
      record::telemetry_section_of(r.manifest.telemetry);
  if (t && t->mode == "off") return "no GPU in the record: telemetry was off (--telemetry off)";
  return "no GPU identity in the record (no GPU telemetry source saw one; see dyno doctor)";
}

/// Why a record has no engine commit or dirty flag: the reason it gives, else that no engine
/// source was recorded (only an engine launched from a spec with a `checkout` has one).
std::string engine_source_note(const RunRecord& r) {
  const std::optional<record::EngineSourceRef> source =
      record::engine_section_from_json(r.manifest.engine).source;
  if (!source) {
    return "no engine source in the record (only an engine launched from an engine spec with "
           "a checkout records one)";
  }
  for (const char* key : {"dirty", "commit"}) {
    if (const auto why = source->unknown.get(key)) return "engine source: " + *why;
  }
  return "engine source: not in the record";
}

/// The checks an imported record cannot answer: its file does not keep the sampling or the
/// warm-up, states its load without dyno's schedule (seed, arrival, limits), and was measured
/// by another harness (the record's `harness` is the dyno that imported), whose source tree
/// it does not describe. The request stream's hash and the measuring harness's hash are
/// answered when the file states them (a ledger's columns: workload.request_stream.sha256,
/// source.harness_sha256).
bool unanswered_by_import(const std::string& check) {
  return check == "sampling" || check == "load" || check == "warmup" || check == "dirty_sources";
}

/// What an embedded simulated engine's model is, for its revision and fingerprint: no weights,
/// nothing to load; it is dyno's own code, which the harness check compares.
constexpr const char* kSimulatedModel = "simulated by dyno (embedded dyno-sim: no weights)";

/// A record of `dyno run`'s embedded simulated engine (engine.reached.kind embedded-sim).
bool embedded_sim(const RunRecord& r) {
  return record::engine_section_from_json(r.manifest.engine).reached.kind == "embedded-sim";
}

bool missing(const json::value& v);

json::value value_of(const RunRecord& r, const std::string& check) {
  if (r.imported() && unanswered_by_import(check)) return nullptr;
  const record::Manifest& m = r.manifest;
  if (check == "request_stream") {
    const std::string& sha = m.workload.request_stream.sha256;  // "": null, an import's
    return sha.empty() ? json::value(nullptr) : json::value(sha);
  }
  // A count the record states as unknown (a summary-only import) is null: unresolved.
  const bool typed = r.summary.has_value();
  if (check == "request_count") {
    if (!typed || !r.summary->knows("requests.total")) return nullptr;
    return json::value(r.summary->figures.requests_total);
  }
  if (check == "input_tokens") {
    // Written null when some request had no count (or a ledger gave none): unknown, not 0.
    if (!typed || !r.summary->knows("tokens.input_total") ||
        !r.summary->figures.input_tokens_complete) {
      return nullptr;
    }
    return json::value(r.summary->figures.input_tokens_total);
  }
  if (check == "sampling") return m.workload.sampling;
  if (check == "api") return json::value(m.workload.api);
  if (check == "warmup") return json::value(m.workload.warmup_requests);
  if (check == "load") return at(r.manifest_json, "load");
  if (check == "model_revision" || check == "model_fingerprint") {
    json::value v = or_null(check == "model_revision" ? m.model.revision : m.model.fingerprint);
    if (missing(v) && embedded_sim(r)) return json::value(kSimulatedModel);
    return v;
  }
  if (check == "driver" || check == "gpu_model" || check == "gpu_uuid") {
    return gpu_list(r, check.c_str());
  }
  if (check == "harness") {
    return r.imported() ? or_null(m.source->harness_sha256) : or_null(m.harness.executable_sha256);
  }
  if (check == "dirty_sources") return json::value(m.harness.git_dirty);
  if (check == "engine_dirty_sources" || check == "engine_commit") {
    const std::optional<record::EngineSourceRef> s =
        record::engine_section_from_json(m.engine).source;
    if (!s) return nullptr;
    return check == "engine_commit" ? or_null(s->commit) : or_null(s->dirty);
  }
  return nullptr;
}

/// model.unknown.revision or .fingerprint: why the record has none.
std::optional<std::string> model_unknown(const RunRecord& r, const std::string& check) {
  const std::optional<record::TextMap>& unknown = r.manifest.model.unknown;
  if (!unknown) return std::nullopt;
  return unknown->get(check == "model_revision" ? "revision" : "fingerprint");
}

std::string note_of(const RunRecord& r, const std::string& check) {
  if (r.imported()) {
    const std::string origin = r.import_origin();
    if (check == "harness") {
      return origin + ": measured by another harness, whose SHA-256 the file does not state";
    }
    if (check == "dirty_sources") {
      return origin + ": measured by another harness, not by a dyno executable";
    }
    if (check == "load") return origin + ": the file states its load, not dyno's schedule";
    if (unanswered_by_import(check)) return origin + ": not in the imported file";
    if (check == "driver" || check == "gpu_model" || check == "gpu_uuid") {
      return origin + ": " + r.manifest.hardware.unknown_reason("gpus").value_or("no GPU identity");
    }
    if (check == "engine_dirty_sources" || check == "engine_commit") {
      return origin + ": " +
             record::engine_section_from_json(r.manifest.engine)
                 .unknown.get("source")
                 .value_or("not in the imported file");
    }
    if (check == "model_revision" || check == "model_fingerprint") {
      return origin + ": " + model_unknown(r, check).value_or("not in the imported file");
    }
    return origin + ": not in the imported file";
  }
  if (check == "model_revision" || check == "model_fingerprint") {
    const auto why = model_unknown(r, check);
    return why ? *why : "not in the record";
  }
  if (check == "driver" || check == "gpu_model" || check == "gpu_uuid") return gpu_note(r);
  if (check == "engine_dirty_sources" || check == "engine_commit") return engine_source_note(r);
  if (check == "dirty_sources") return "harness.git_dirty is not in the record";
  if (check == "input_tokens") {
    return "summary tokens.input_total is null (some request has no input token count)";
  }
  return "not in the record";
}

bool missing(const json::value& v) {
  if (v.is_null()) return true;
  if (v.is_string() && v.get_string().empty()) return true;
  return false;
}

}  // namespace

namespace {

/// One side's value: shared by its runs, else their list; null when any run lacks it.
json::value side_value(const std::vector<const RunRecord*>& runs, const std::string& check,
                       const RunRecord*& lacking) {
  json::array values;
  bool same = true;
  for (const RunRecord* r : runs) {
    json::value v = value_of(*r, check);
    if (missing(v)) {
      lacking = r;
      return nullptr;
    }
    if (!values.empty() && canonical_text(v) != canonical_text(values.front())) same = false;
    values.push_back(std::move(v));
  }
  if (values.empty()) return nullptr;
  if (same) return values.front();
  return values;
}

}  // namespace

namespace {

/// Why a check is unresolved, naming the side(s) whose record lacks the value.
std::string unresolved_note(const RunRecord* lacking_a, const RunRecord* lacking_b,
                            const std::string& check) {
  const std::string na = lacking_a != nullptr ? note_of(*lacking_a, check) : "";
  const std::string nb = lacking_b != nullptr ? note_of(*lacking_b, check) : "";
  if (lacking_a != nullptr && lacking_b != nullptr && na == nb) return "both runs: " + na;
  std::string note;
  if (lacking_a != nullptr) note = "the arm's run: " + na;
  if (lacking_b != nullptr)
    note += (note.empty() ? "" : "; ") + std::string("the baseline's run: ") + nb;
  return note;
}

/// Whether a dirty flag (or any of a list of them, one per repetition) is true.
bool any_dirty(const json::value& v) {
  if (v.is_bool()) return v.get_bool();
  if (!v.is_array()) return false;
  for (const auto& x : v.get_array()) {
    if (x.is_bool() && x.get_bool()) return true;
  }
  return false;
}

}  // namespace

std::vector<Check> run_checks(const std::vector<const RunRecord*>& a,
                              const std::vector<const RunRecord*>& b, const Policy& policy) {
  std::vector<Check> out;
  for (const auto& def : check_catalog()) {
    Check c;
    c.name = def.name;
    c.level = policy.level(def.name);
    const RunRecord* lacking_a = nullptr;
    const RunRecord* lacking_b = nullptr;
    c.arm_value = side_value(a, def.name, lacking_a);
    c.baseline_value = side_value(b, def.name, lacking_b);
    const bool lacking = lacking_a != nullptr || lacking_b != nullptr;
    if ((def.name == "dirty_sources" || def.name == "engine_dirty_sources") &&
        (any_dirty(c.arm_value) || any_dirty(c.baseline_value))) {
      // One modified tree fails it, whatever the others say.
      c.outcome = CheckOutcome::kFail;
    } else if (lacking) {
      c.outcome = CheckOutcome::kUnresolved;
      c.note = unresolved_note(lacking_a, lacking_b, def.name);
    } else {
      c.outcome = canonical_text(c.arm_value) == canonical_text(c.baseline_value)
                      ? CheckOutcome::kPass
                      : CheckOutcome::kFail;
      const auto none = [](const json::value& v) { return v.is_array() && v.get_array().empty(); };
      if ((def.name == "driver" || def.name == "gpu_model" || def.name == "gpu_uuid") &&
          (none(c.arm_value) || none(c.baseline_value))) {
        c.note = none(c.arm_value) && none(c.baseline_value)
                     ? "no GPU on either side: each record states its host has none"
                     : std::string(none(c.arm_value) ? "the arm's" : "the baseline's") +
                           " record states its host has no GPU";
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

const CheckDef& check_def(const std::string& name) {
  for (const auto& c : check_catalog()) {
    if (c.name == name) return c;
  }
  return check_catalog().front();
}

}  // namespace dyno::compare
