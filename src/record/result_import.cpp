#include "record/result_import.h"

#include <boost/json.hpp>
#include <system_error>
#include <utility>

#include "json/json_text.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "record/scrub.h"
#include "record/scrub_text.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

json::object engine_json(const ImportedResult& r, const ImportWriteOptions& o) {
  const std::optional<std::string> name = o.engine ? o.engine : r.engine_name;
  json::object unknown;
  if (!r.engine_version) unknown["version"] = kNotInFile;
  unknown["api_key_used"] = kNotInFile;
  if (!name) unknown["name"] = std::string(kNotInFile) + " (--engine names it)";
  json::object e{{"name", name ? json::value(*name) : json::value(nullptr)},
                 {"version", r.engine_version ? json::value(*r.engine_version) : nullptr},
                 {"reached", json::object{{"kind", "import"}}},
                 {"engine_args", json::object{}},
                 {"api_key_used", nullptr},
                 {"unknown", std::move(unknown)}};
  // The build's commit, as a board reads an engine's commit (engine.source.commit); whether
  // the build had local changes the file does not say.
  if (r.engine_commit) {
    e["source"] = json::object{{"commit", *r.engine_commit},
                               {"dirty", nullptr},
                               {"unknown", json::object{{"dirty", kNotInFile}}}};
  }
  return e;
}

json::object model_json(const ImportedResult& r, const ImportWriteOptions& o,
                        const std::string& file_name) {
  const std::optional<std::string> id = o.model ? o.model : r.model_id;
  if (!id || id->empty()) {
    throw ImportFileError(file_name +
                          ": the file names no model; give it with --model (a record's "
                          "model.id is required)");
  }
  return json::object{
      {"id", *id},
      {"revision", nullptr},
      {"fingerprint", nullptr},
      {"unknown", json::object{{"revision", kNotInFile}, {"fingerprint", kNotInFile}}}};
}

json::object hardware_json(const ImportedResult& r) {
  json::object unknown{{"host", kNotInFile}};
  if (!r.cpu_model) unknown["cpu_model"] = kNotInFile;
  unknown["cpu_cores"] = kNotInFile;
  unknown["ram_bytes"] = kNotInFile;
  // No GPUs in the file, or GPUs it names only in part (a ledger's GPU model: no vendor).
  if (!r.gpus) unknown["gpus"] = r.gpus_unknown.empty() ? kNotInFile : r.gpus_unknown;
  if (r.gpus && !r.gpus_unknown.empty()) unknown["gpus"] = r.gpus_unknown;
  return json::object{{"host", nullptr},
                      {"cpu_model", r.cpu_model ? json::value(*r.cpu_model) : nullptr},
                      {"cpu_cores", nullptr},
                      {"ram_bytes", nullptr},
                      {"gpus", r.gpus ? *r.gpus : json::array{}},
                      {"unknown", std::move(unknown)}};
}

/// Sets the value at the dotted `path` of `doc` (every step but the last an object) to null.
void make_null(json::object& doc, const std::string& path) {
  json::object* at = &doc;
  std::size_t from = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', from)) {
    json::value* next = at->if_contains(path.substr(from, dot - from));
    if (next == nullptr || !next->is_object()) return;
    at = &next->get_object();
    from = dot + 1;
  }
  if (json::value* v = at->if_contains(path.substr(from))) *v = nullptr;
}

/// summary.json: the figures, and what an imported record cannot have (client cost, energy,
/// the server's /metrics) null with the reason.
json::object summary_json(const std::string& run_id, const std::string& status,
                          const metrics::Summary& s, const ImportSource& source,
                          const std::optional<json::object>& engine_timings,
                          const std::vector<std::string>& absent_counts) {
  json::object doc{{"schema_version", kSchemaVersion}, {"run_id", run_id}, {"status", status}};
  for (auto& kv : summary_to_json(s)) doc[kv.key()] = kv.value();
  for (const std::string& path : absent_counts) make_null(doc, path);
  json::object& client = doc["client"].as_object();
  client["connections_opened"] = nullptr;
  client["note"] = "imported record: dyno did not measure, so the client's cost is unknown";
  doc["energy"] = json::object{{"energy_j", nullptr}, {"reason", kNotInFile}};
  doc["server"] = json::object{{"source", nullptr}, {"reason", kNotInFile}};
  if (engine_timings) {
    doc["server"] = json::object{{"source", nullptr},
                                 {"reason", "an in-process benchmark: no server, no /metrics"},
                                 {"timings", *engine_timings}};
  }
  doc["import"] = json::object{{"format", source.format},
                               {"timing", source.timing},
                               {"summary_only", source.timing == "summary_only"}};
  return doc;
}

}  // namespace

std::string import_api(const ImportedResult& r, const std::optional<std::string>& flag,
                       const std::string& file_name) {
  const std::string where = file_name + (r.source.part ? " " + *r.source.part : "");
  if (r.api && flag && *r.api != *flag) {
    throw ImportFileError(where + ": the file says the endpoint was " + *r.api + ", --api says " +
                          *flag);
  }
  if (r.api) return *r.api;
  if (flag) return *flag;
  throw ImportFileError(where +
                        ": the file does not say whether the chat or the completions endpoint "
                        "was measured; give it with --api chat|completions");
}

void set_request_counts(metrics::Summary& s, std::uint64_t ok, std::uint64_t failed) {
  s.requests_ok = ok;
  s.requests_failed = failed;
  s.requests_total = ok + failed;
  if (s.requests_total > 0) {
    s.error_rate = static_cast<double>(failed) / static_cast<double>(s.requests_total);
  }
  if (failed > 0) s.errors_by_category["imported"] = failed;
}

void drop_window_figures(metrics::Summary& s) {
  s.service_window_s.reset();
  s.output_tokens_per_s.reset();
  s.input_tokens_per_s.reset();
  s.requests_per_s.reset();
  s.decode_tokens_per_s.reset();
  s.achieved_concurrency.reset();
  s.goodput_requests_per_s.reset();
  s.goodput_requests.reset();
}

ImportOutcome write_imported_run(const ImportedResult& r, const std::string& file_name,
                                 const std::string& bytes, const ImportWriteOptions& o) {
  Manifest m;
  const std::string label = o.label.value_or(r.label.value_or(r.source.format));
  m.run_id = make_run_id(o.now, label);
  m.label = label;
  m.status = r.status;
  m.started_at = iso8601_utc(o.now);
  m.source = r.source;
  m.source->file = file_name;
  m.source->sha256 = sha256_hex(bytes);
  m.source->imported_at = m.started_at;
  m.harness = o.harness;
  m.engine = engine_json(r, o);
  m.model = model_json(r, o, file_name);
  m.hardware = hardware_json(r);
  m.workload.protocol = json::object{{"name", "import"}, {"version", 1}};
  if (r.pairs_as) m.workload.protocol["pairs_as"] = *r.pairs_as;
  if (r.cell) m.workload.protocol["cell"] = *r.cell;
  m.workload.api = import_api(r, o.api, file_name);
  m.workload.request_stream.source = "import:" + r.source.format + ":" + file_name;
  m.workload.request_stream.count = r.requests;
  m.load = r.load;
  m.load.imported = true;
  const std::string evidence = "evidence/" + file_name;
  // The file as evidence, with any secret it holds (an API key in a tool's saved settings, an
  // Authorization header) redacted: its digest then differs from source.sha256, the original's.
  std::string kept = bytes;
  scrub_text::scrub_secrets(kept);
  m.source->evidence_redacted = kept != bytes;
  m.evidence.push_back({evidence, sha256_hex(kept)});

  metrics::Summary summary = r.summary;
  if (r.source.timing != "summary_only") {
    summary = metrics::summarize_run(r.traces, {});
    if (r.source.timing == "per_request") drop_window_figures(summary);
  }

  RunWriter writer(o.runs_root, m.run_id, true);
  try {
    writer.write_text(evidence, kept);
    if (r.source.timing != "summary_only") {
      std::string lines;
      for (metrics::Trace t : r.traces) {
        // A tool keeps what the server sent, a secret it echoed included: never into a record.
        scrub_text::scrub_secrets(t.output_text);
        scrub_text::scrub_secrets(t.error_message);
        lines += json_text::compact(trace_to_json(t, true)) + "\n";
      }
      writer.write_text("requests.jsonl", lines);
    }
    const std::vector<std::string> absent =
        r.source.timing == "summary_only" ? r.absent_counts : std::vector<std::string>{};
    writer.write_json("summary.json", summary_json(m.run_id, m.status, summary, *m.source,
                                                   r.engine_timings, absent));
    writer.write_json("manifest.json", manifest_to_json(m));
    if (r.source.timing == "summary_only") {
      writer.flush_requests();
      fs::remove(writer.dir() / "requests.jsonl");  // the writer opens it; nothing is in it
    }
    write_sha256sums(writer.dir());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(writer.dir(), ec);  // nothing half-imported
    throw;
  }
  return {m.run_id, writer.dir(), file_name, m.source->sha256, r.source.timing, r.source.part};
}

}  // namespace dyno::record
