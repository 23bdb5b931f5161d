#include "interop/result_import.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>
#include <utility>

#include "digest/digest.h"
#include "json/utf8.h"
#include "metrics/registry.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "record/signature.h"
#include "record/summary_file.h"
#include "scrub/scrub.h"
#include "scrub/scrub_text.h"
#include "workload/user_file.h"

namespace dyno::interop {

using digest::sha256_hex;
using record::ImportSource;
using record::iso8601_utc;
using record::kSchemaVersion;
using record::make_run_id;
using record::Manifest;
using record::manifest_to_json;
using record::RunWriter;
using record::summary_to_json;
using record::write_sha256sums;

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

record::ModelIdentity model_identity(const ImportedResult& r, const ImportWriteOptions& o,
                                     const std::string& file_name) {
  const std::optional<std::string> id = o.model ? o.model : r.model_id;
  if (!id || id->empty()) {
    throw ImportFileError(file_name +
                          ": the file names no model; give it with --model (a record's "
                          "model.id is required)");
  }
  record::ModelIdentity m;
  m.id = *id;
  m.revision = r.model_revision;
  m.unknown = r.model_revision
                  ? record::TextMap{{{"fingerprint", kNotInFile}}}
                  : record::TextMap{{{"revision", kNotInFile}, {"fingerprint", kNotInFile}}};
  return m;
}

record::HardwareIdentity hardware_identity(const ImportedResult& r) {
  record::TextMap unknown{{{"host", kNotInFile}}};
  if (!r.cpu_model) unknown.set("cpu_model", kNotInFile);
  unknown.set("cpu_cores", kNotInFile);
  unknown.set("ram_bytes", kNotInFile);
  // No GPUs in the file, or GPUs it names only in part (a ledger's GPU model: no vendor).
  if (!r.gpus) unknown.set("gpus", r.gpus_unknown.empty() ? kNotInFile : r.gpus_unknown);
  if (r.gpus && !r.gpus_unknown.empty()) unknown.set("gpus", r.gpus_unknown);
  record::HardwareIdentity h;
  h.cpu_model = r.cpu_model;
  if (r.gpus) {
    // The file's readers name its GPUs as JSON (import_json.h named_gpu): typed here.
    for (const json::value& g : *r.gpus) {
      h.gpus.push_back(record::device_from_json(g.as_object(), "hardware.gpus[]"));
    }
  }
  h.unknown = std::move(unknown);
  return h;
}

/// summary.json: the figures, and what an imported record cannot have (client cost, energy,
/// the server's /metrics) null with the reason.
record::SummaryFile summary_file(const std::string& run_id, const std::string& status,
                                 const metrics::Summary& s, const ImportSource& source,
                                 const std::optional<json::object>& engine_timings,
                                 const std::vector<std::string>& absent_counts) {
  record::SummaryFile f;
  f.run_id = run_id;
  f.status = status;
  f.figures = s;
  f.unknown_counts = absent_counts;
  if (source.timing == "summary_only") {
    // A distribution the file gives no figure of: over how many requests is not known either,
    // so its count is null, never a 0 that would read as "no request had one".
    for (const metrics::Figure& fig : metrics::figures()) {
      if (fig.dist == nullptr) continue;
      const metrics::Distribution& d = s.*(fig.dist);
      if (d.count == 0 && !d.mean && !d.stddev && !d.min && !d.p50 && !d.p90 && !d.p95 && !d.p99 &&
          !d.p999 && !d.max && !d.jitter) {
        f.unknown_counts.push_back(fig.path + ".count");
      }
    }
  }
  f.client.states_connections = true;  // null: not measured
  f.client.note = "imported record: dyno did not measure, so the client's cost is unknown";
  f.energy = json::object{{"energy_j", nullptr}, {"reason", kNotInFile}};
  f.server = json::object{{"source", nullptr}, {"reason", kNotInFile}};
  if (engine_timings) {
    const json::value* from = engine_timings->if_contains("source");
    const bool in_process = from != nullptr && *from == "in-process benchmark";
    f.server = json::object{
        {"source", nullptr},
        {"reason", in_process ? "an in-process benchmark: no server, no /metrics" : kNotInFile},
        {"timings", *engine_timings}};
  }
  f.import = record::ImportSection{source.format, source.timing};
  return f;
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

std::string read_import_file(const std::string& path, std::uint64_t max_bytes) {
  return workload::read_regular_file(path, max_bytes, [&](const workload::FileRefusal& r) {
    using Kind = workload::FileRefusal::Kind;
    const char* hint = r.kind == Kind::kDirectory ? "; give the result file in it"
                       : r.kind == Kind::kNotRegular
                           ? "; dyno import reads regular files only (save the result to a file "
                             "first)"
                           : "";
    throw ImportFileError(path + ": " + r.what + hint);
  });
}

std::string safe_evidence_name(const std::string& file_name) {
  std::string name;
  for (std::size_t i = 0; i < file_name.size();) {
    std::size_t bad = 0;
    const std::size_t n = utf8::sequence_length(std::string_view(file_name).substr(i), &bad);
    if (n == 0) {  // not UTF-8: the manifest's JSON would name another file
      name.append(bad, '_');
      i += bad;
      continue;
    }
    const auto c = static_cast<unsigned char>(file_name[i]);
    name += n == 1 && (c < 0x20 || c == 0x7f || c == '\\' || c == '/') ? std::string("_")
                                                                       : file_name.substr(i, n);
    i += n;
  }
  if (name.empty() || name == "." || name == "..") return "imported-file";
  if (name.ends_with(".tmp")) name += "_";  // SHA256SUMS leaves a writer's *.tmp out
  return name;
}

void scrub_imported_text(std::string& text) {
  scrub::text::scrub_secrets(text);
  scrub::text::scrub_urls(text, scrub::text::TextRules{});  // user:password@ only
}

ImportEvidence import_evidence(const std::string& file_name, const std::string& bytes) {
  ImportEvidence e;
  e.file = file_name;
  e.sha256 = sha256_hex(bytes);
  // The file as evidence, with any secret it holds (an API key in a tool's saved settings, an
  // Authorization header, a URL's password) redacted: its digest then differs from the
  // original's (source.sha256).
  e.kept = bytes;
  scrub_imported_text(e.kept);
  e.redacted = e.kept != bytes;
  e.kept_sha256 = e.redacted ? sha256_hex(e.kept) : e.sha256;
  return e;
}

namespace {

/// A run id neither runs_root nor the staging directory holds (ids are random; 20,000 records
/// made in one second would otherwise meet one).
std::string fresh_run_id(const ImportWriteOptions& o, const std::string& label) {
  std::string id;
  for (int attempt = 0; attempt < 64; ++attempt) {
    id = make_run_id(o.now, label);
    std::error_code ec;
    if (fs::exists(o.runs_root / id, ec)) continue;
    if (!o.stage_root.empty() && fs::exists(o.stage_root / id, ec)) continue;
    return id;
  }
  return id;  // RunWriter names the clash
}

}  // namespace

ImportOutcome write_imported_record(const ImportedResult& r, const ImportEvidence& ev,
                                    const ImportWriteOptions& o, fs::path& shared) {
  const std::string& file_name = ev.file;
  Manifest m;
  const std::string label = o.label.value_or(r.label.value_or(r.source.format));
  m.run_id = fresh_run_id(o, label);
  m.label = label;
  m.status = r.status;
  m.started_at = iso8601_utc(o.now);
  m.source = r.source;
  m.source->file = file_name;
  m.source->sha256 = ev.sha256;
  m.source->imported_at = m.started_at;
  m.harness = o.harness;
  m.engine = engine_json(r, o);
  m.model = model_identity(r, o, file_name);
  m.hardware = hardware_identity(r);
  m.workload.protocol.name = "import";
  m.workload.protocol.version = 1;
  m.workload.protocol.pairs_as = r.pairs_as;
  m.workload.protocol.cell = r.cell;
  m.workload.api = import_api(r, o.api, file_name);
  m.workload.request_stream.source = "import:" + r.source.format + ":" + file_name;
  m.workload.request_stream.count = r.requests;
  m.workload.request_stream.sha256 = r.request_stream_sha256.value_or("");
  m.load = r.load;
  m.load.imported = true;
  const std::string evidence = "evidence/" + file_name;
  m.source->evidence_redacted = ev.redacted;
  m.evidence.push_back({evidence, ev.kept_sha256});

  metrics::Summary summary = r.summary;
  if (r.source.timing != "summary_only") {
    summary = metrics::summarize_run(r.traces, {});
    if (r.source.timing == "per_request") drop_window_figures(summary);
  }

  RunWriter writer(o.stage_root.empty() ? o.runs_root : o.stage_root, m.run_id, true);
  try {
    const fs::path copy = writer.dir() / evidence;
    bool linked = false;
    if (!shared.empty()) {
      std::error_code ec;
      fs::create_directories(copy.parent_path(), ec);
      // One copy of the file for all its records: a hard link (EXDEV, EPERM, EMLINK: a copy).
      linked = !ec && ::link(shared.c_str(), copy.c_str()) == 0;
    }
    if (!linked) {
      writer.write_text(evidence, ev.kept);
      if (shared.empty()) shared = copy;
    }
    if (r.source.timing != "summary_only") {
      // requests.jsonl the way every record writes it (the writer's appender, trace_line).
      for (metrics::Trace t : r.traces) {
        // A tool keeps what the server sent, a secret it echoed included: never into a record.
        scrub_imported_text(t.output_text);
        scrub_imported_text(t.error_message);
        scrub_imported_text(t.request_id);
        writer.append_request(std::move(t));
      }
    }
    writer.flush_requests();
    const std::vector<std::string> absent =
        r.source.timing == "summary_only" ? r.absent_counts : std::vector<std::string>{};
    writer.write_json("summary.json",
                      record::summary_file_to_json(summary_file(
                          m.run_id, m.status, summary, *m.source, r.engine_timings, absent)));
    writer.write_json("manifest.json", manifest_to_json(m));
    if (r.source.timing == "summary_only") {
      fs::remove(writer.dir() / "requests.jsonl");  // the writer opens it; nothing is in it
    }
    // The evidence's digest is known: no need to read it again (22 MB × 2,000 records).
    write_sha256sums(writer.dir(), {{evidence, ev.kept_sha256}});
    if (o.signing_key) record::sign_record(writer.dir(), *o.signing_key);
  } catch (...) {
    std::error_code ec;
    if (shared.string().starts_with(writer.dir().string() + "/")) shared.clear();
    fs::remove_all(writer.dir(), ec);  // nothing half-imported
    throw;
  }
  return {m.run_id, writer.dir(), file_name, ev.sha256, r.source.timing, r.source.part};
}

ImportOutcome write_imported_run(const ImportedResult& r, const std::string& file_name,
                                 const std::string& bytes, const ImportWriteOptions& o) {
  fs::path shared;
  return write_imported_record(r, import_evidence(file_name, bytes), o, shared);
}

}  // namespace dyno::interop
