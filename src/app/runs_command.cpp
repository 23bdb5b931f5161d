// `dyno runs`: the table of its subcommands and their flags, one piece though long — each
// subcommand is a few lines over the store and record libraries; verify and the campaign list
// (runs_verify.cpp) and merge (runs_merge.cpp) are their own files.
#include "app/runs_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <system_error>

#include "app/console.h"
#include "app/flag_values.h"
#include "app/index_flag.h"
#include "app/run_command.h"
#include "app/runs_verify.h"
#include "app/sign_key_flag.h"
#include "diagnose/diagnose.h"
#include "json/json_text.h"
#include "record/campaign_file.h"
#include "record/publish.h"
#include "record/record_json.h"
#include "record/run_record.h"
#include "record/run_writer.h"
#include "record/signature.h"
#include "scrub/scrub.h"

namespace dyno::app {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

json::object read_object(const fs::path& path) {
  const std::string text = record::read_file(path);
  std::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    throw UsageError(path.string() + " is not a JSON object" + (ec ? ": " + ec.message() : ""));
  }
  return std::move(v.as_object());
}

/// True when a RUN argument is a path (it holds a '/') to a symbolic link.
bool is_link_arg(const std::string& arg) {
  if (arg.find('/') == std::string::npos) return false;
  const fs::path p(arg);
  std::error_code ec;
  return fs::is_symlink(p.has_filename() ? p : p.parent_path(), ec);
}

bool is_run_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "manifest.json", ec);
}

/// A value for a table cell: strings bare, null as "null", everything else as compact JSON.
std::string cell_text(const std::optional<json::value>& v) {
  if (!v) return "(absent)";
  if (v->is_string()) return std::string(v->get_string());
  return json_text::compact(*v);
}

std::string opt_text(const std::optional<std::string>& v) { return v.value_or("-"); }

std::string pad(const std::string& s, std::size_t width) {
  // Widths count bytes: the values dyno prints here are ASCII except '…', kept out of tables.
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string render_table(std::vector<std::vector<std::string>> rows, const std::string& indent) {
  for (auto& r : rows) {
    for (auto& cell : r) cell = terminal_text(cell, true);
  }
  std::vector<std::size_t> widths;
  for (const auto& r : rows) {
    if (widths.size() < r.size()) widths.resize(r.size(), 0);
    for (std::size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += i + 1 == r.size() ? r[i] : pad(r[i], widths[i]) + "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

namespace {

void flatten(const json::value& v, const std::string& name,
             std::vector<std::pair<std::string, json::value>>& out) {
  if (const auto* o = v.if_object(); o != nullptr && !o->empty()) {
    for (const auto& kv : *o) flatten(kv.value(), name + "." + std::string(kv.key()), out);
    return;
  }
  if (const auto* a = v.if_array()) {
    const bool scalars = std::all_of(
        a->begin(), a->end(), [](const json::value& e) { return !e.is_object() && !e.is_array(); });
    if (!scalars) {
      for (std::size_t i = 0; i < a->size(); ++i) {
        flatten((*a)[i], name + "[" + std::to_string(i) + "]", out);
      }
      return;
    }
  }
  out.emplace_back(name, v);
}

const json::value* at(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (std::string_view k : keys) {
    if (cur == nullptr || (v = cur->if_contains(k)) == nullptr) return nullptr;
    cur = v->if_object();
  }
  return v;
}

std::string str_at(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::value* v = at(o, keys);
  if (v == nullptr || v->is_null()) return "-";
  return v->is_string() ? std::string(v->get_string()) : json_text::compact(*v);
}

}  // namespace

const std::regex& date_pattern() {
  static const std::regex re(R"(^\d{4}(-\d{2}(-\d{2}(T\d{2}(:\d{2}(:\d{2})?)?)?)?)?$)");
  return re;
}

fs::path existing_root(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw UsageError("--runs-root: " + root +
                     " does not exist (no run has been recorded there yet)");
  }
  return root;
}

namespace {

/// The index of a runs root, brought up to date; where index.sqlite cannot be written (a
/// read-only copy), one built in memory, with a warning. A PostgreSQL index that cannot be
/// reached is an error: the user asked for that index.
std::unique_ptr<store::RunIndex> synced_index(const fs::path& root, const RunsOptions& o,
                                              std::ostream& err) {
  const std::string url = resolve_index_url(o.index);
  std::unique_ptr<store::RunIndex> index;
  try {
    index = std::make_unique<store::RunIndex>(root, err, url);
  } catch (const store::IndexError& e) {
    if (!url.empty()) throw;
    err << "dyno: warning: " << e.what() << "; listing from the run directories instead\n";
    return store::RunIndex::in_memory(root);
  }
  index->sync();
  return index;
}

int cmd_list(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  store::RunFilter f = o.filter;
  f.limit = o.limit;
  if (std::find(store::sort_keys().begin(), store::sort_keys().end(), f.sort) ==
      store::sort_keys().end()) {
    std::string keys;
    for (const auto& k : store::sort_keys()) keys += (keys.empty() ? "" : ", ") + k;
    throw UsageError("--sort: unknown key '" + f.sort + "'; use one of " + keys);
  }
  for (const auto* d : {&f.since, &f.until}) {
    if (*d && !std::regex_match(**d, date_pattern())) {
      throw UsageError(std::string(d == &f.since ? "--since" : "--until") + ": '" + **d +
                       "' is not a date; use YYYY-MM-DD, optionally with THH:MM:SS (UTC)");
    }
  }
  const std::vector<store::RunRow> rows = synced_index(existing_root(o.runs_root), o, err)->list(f);
  if (o.json) {
    json::array a;
    for (const auto& r : rows) a.push_back(store::row_to_json(r));
    out << record::pretty_json(a);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> table{{"RUN", "STARTED", "STATUS", "PROTOCOL", "ENGINE",
                                               "MODEL", "TOK/S", "TTFT P50 MS", "DUPLICATE OF"}};
  for (const auto& r : rows) {
    std::string proto = opt_text(r.protocol);
    if (r.source) proto += " (" + *r.source + ")";  // an imported record: its file's format
    if (r.cell) proto += " " + *r.cell;
    std::string engine = opt_text(r.engine_name);
    if (r.engine_version) engine += " " + *r.engine_version;
    table.push_back({r.run_id, r.started_at.substr(0, 19), r.status, proto, engine,
                     opt_text(r.model_id), fmt(r.output_tokens_per_s, 1), fmt(r.ttft_p50_ms, 1),
                     opt_text(r.duplicate_of)});
  }
  out << render_table(table, "");
  out << rows.size() << (rows.size() == 1 ? " run" : " runs") << "\n";
  // A record that cannot be read fully is listed without the figures it lacks, and named.
  for (const auto& r : rows) {
    if (!r.problem) continue;
    err << "dyno: warning: run " << terminal_text(r.run_id, true) << ": "
        << terminal_text(*r.problem, true) << " (in "
        << terminal_text((fs::path(o.runs_root) / r.run_id).string(), true) << "; dyno runs verify "
        << terminal_text(r.run_id, true) << " says more)\n";
  }
  return kExitOk;
}

int cmd_show(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  const fs::path dir = resolve_run(o.runs_root, o.ids.at(0));
  const json::object manifest = read_object(dir / "manifest.json");
  // The index's row when the run is in the store (it knows duplicates), else read directly.
  std::optional<store::RunRow> row;
  std::error_code ec;
  if (fs::equivalent(dir.parent_path(), o.runs_root, ec)) {
    row = synced_index(o.runs_root, o, err)->find(dir.filename().string());
  }
  if (!row) row = store::read_run_row(dir);
  if (o.json) {
    out << record::pretty_json(json::object{
        {"run_dir", dir.string()}, {"headline", store::row_to_json(*row)}, {"manifest", manifest}});
    return kExitOk;
  }
  const auto& r = *row;
  std::vector<std::vector<std::string>> t;
  t.push_back({"run", r.run_id});
  t.push_back(
      {"directory", dir.string() + (is_link_arg(o.ids.at(0)) ? " (" + o.ids.at(0) + " links to it)"
                                                             : std::string())});
  t.push_back({"status", r.status + (r.problem ? " (" + *r.problem + ")" : "")});
  t.push_back({"started", r.started_at + "  ended " + r.ended_at.value_or("-")});
  t.push_back({"label", opt_text(r.label) + "  campaign " + opt_text(r.campaign)});
  t.push_back({"protocol", str_at(manifest, {"workload", "protocol", "name"}) + "  cell " +
                               str_at(manifest, {"workload", "protocol", "cell"})});
  if (manifest.contains("source")) {  // an imported record (docs/interop.md)
    t.push_back({"source", str_at(manifest, {"source", "tool"}) + " " +
                               str_at(manifest, {"source", "tool_version"}) + " · " +
                               str_at(manifest, {"source", "file"}) + " (sha256 " +
                               str_at(manifest, {"source", "sha256"}) + ") · " +
                               str_at(manifest, {"source", "format"}) + ", timing " +
                               str_at(manifest, {"source", "timing"})});
  }
  t.push_back({"engine", str_at(manifest, {"engine", "name"}) + " " +
                             str_at(manifest, {"engine", "version"}) + " (" +
                             str_at(manifest, {"engine", "reached", "kind"}) + ")  args " +
                             str_at(manifest, {"engine", "engine_args"})});
  t.push_back({"model", str_at(manifest, {"model", "id"}) + "  revision " +
                            str_at(manifest, {"model", "revision"}) + "  fingerprint " +
                            str_at(manifest, {"model", "fingerprint"})});
  t.push_back({"hardware", str_at(manifest, {"hardware", "host"}) + " · " +
                               str_at(manifest, {"hardware", "cpu_model"}) + " · " +
                               str_at(manifest, {"hardware", "cpu_cores"}) + " cores · GPUs " +
                               (r.gpus.empty() ? "none" : r.gpus)});
  t.push_back({"harness",
               str_at(manifest, {"harness", "name"}) + " " +
                   str_at(manifest, {"harness", "version"}) + " (" +
                   str_at(manifest, {"harness", "git_commit"}) +
                   (str_at(manifest, {"harness", "git_dirty"}) == "true" ? ", dirty" : "") + ")"});
  t.push_back({"workload", str_at(manifest, {"workload", "api"}) + " · stream " +
                               str_at(manifest, {"workload", "request_stream", "sha256"}) + " (" +
                               str_at(manifest, {"workload", "request_stream", "count"}) +
                               " requests) · sampling " +
                               str_at(manifest, {"workload", "sampling"})});
  t.push_back({"load", str_at(manifest, {"load", "mode"}) + " · concurrency " +
                           str_at(manifest, {"load", "concurrency"}) + " · rate " +
                           str_at(manifest, {"load", "rate_per_s"}) + "/s · requests " +
                           str_at(manifest, {"load", "requests"}) + " · duration " +
                           str_at(manifest, {"load", "duration_s"}) + " s"});
  t.push_back({"requests", (r.requests_ok ? std::to_string(*r.requests_ok) : "n/a") + " ok · " +
                               (r.requests_failed ? std::to_string(*r.requests_failed) : "n/a") +
                               " failed · error rate " + fmt(r.error_rate, 3)});
  t.push_back({"throughput", fmt(r.output_tokens_per_s, 1) + " output tok/s · " +
                                 fmt(r.requests_per_s, 2) + " req/s"});
  t.push_back({"latency p50", "TTFT " + fmt(r.ttft_p50_ms, 1) + " ms · TPOT " +
                                  fmt(r.tpot_p50_ms, 2) + " ms · E2E " + fmt(r.e2e_p50_ms, 1) +
                                  " ms"});
  if (r.accuracy) t.push_back({"accuracy", fmt(r.accuracy, 3)});
  t.push_back({"duplicate of", opt_text(r.duplicate_of)});
  const json::value* scrubbed = manifest.if_contains("scrubbed_fields");
  const std::size_t n_scrubbed =
      scrubbed != nullptr && scrubbed->is_array() ? scrubbed->get_array().size() : 0;
  t.push_back({"scrubbed", n_scrubbed == 0 ? "no" : std::to_string(n_scrubbed) + " fields"});
  out << render_table(t, "");
  return kExitOk;
}

/// `dyno runs diagnose RUN`: why the limit is where it is (docs/metrics.md "Diagnosis").
int cmd_diagnose(const RunsOptions& o, std::ostream& out) {
  const fs::path dir = resolve_run(o.runs_root, o.ids.at(0));
  const std::string id = dir.filename().string();
  if (record::still_running(dir)) {
    throw UsageError("runs diagnose: run " + id + " is still running; diagnose a finished run");
  }
  const record::RunRecord run = record::read_run(dir, {.requests = true, .integrity = false});
  const diagnose::Diagnosis d = diagnose::diagnose_run(run);
  if (o.json) {
    json::object j = diagnose::to_json(d);
    j.emplace("run_dir", dir.string());
    j.emplace("run_id", run.run_id);
    out << record::pretty_json(j);
    return kExitOk;
  }
  out << terminal_text("run " + run.run_id + " (" + dir.string() + ")", true) << "\n";
  // Every line as a terminal shows it: the evidence quotes the record's own text.
  std::istringstream lines(diagnose::plain_text(d));
  for (std::string line; std::getline(lines, line);) out << terminal_text(line, true) << "\n";
  return kExitOk;
}

int cmd_diff(const RunsOptions& o, std::ostream& out) {
  if (o.ids.size() != 2) throw UsageError("runs diff takes two runs: dyno runs diff A B");
  const fs::path a = resolve_run(o.runs_root, o.ids[0]);
  const fs::path b = resolve_run(o.runs_root, o.ids[1]);
  const json::object ma = read_object(a / "manifest.json");
  const json::object mb = read_object(b / "manifest.json");
  const std::vector<DiffSection> sections = diff_manifests(ma, mb);
  if (!o.json) {
    out << render_diff(a.filename().string(), b.filename().string(), sections);
    return kExitOk;
  }
  json::array secs;
  std::size_t same = 0, differ = 0;
  for (const auto& s : sections) {
    json::array fields;
    for (const auto& f : s.differ) {
      json::object e{{"field", f.field}};
      if (f.a) e["a"] = *f.a;
      if (f.b) e["b"] = *f.b;
      fields.push_back(std::move(e));
    }
    same += s.same;
    differ += s.differ.size();
    secs.push_back(json::object{{"name", s.name}, {"same", s.same}, {"differ", std::move(fields)}});
  }
  out << record::pretty_json(
      json::object{{"a", json::object{{"run_id", a.filename().string()}, {"dir", a.string()}}},
                   {"b", json::object{{"run_id", b.filename().string()}, {"dir", b.string()}}},
                   {"same", same},
                   {"differ", differ},
                   {"sections", std::move(secs)}});
  return kExitOk;
}

int cmd_rm(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  if (o.ids.empty()) throw UsageError("runs rm: name the runs to remove");
  const fs::path root = existing_root(o.runs_root);
  std::vector<fs::path> dirs;
  for (const auto& id : o.ids) {
    const fs::path dir = resolve_run(root, id);
    std::error_code ec;
    if (is_link_arg(id)) {
      throw UsageError("runs rm: " + id + " is a symbolic link to " + dir.string() +
                       "; name the run itself (its id) to remove it, or remove the link");
    }
    if (!fs::equivalent(dir.parent_path(), root, ec)) {
      throw UsageError("runs rm: " + id + " is not a run under --runs-root " + root.string());
    }
    // A run whose writer is alive is refused; a `running` record whose dyno was killed (no
    // writer holds it) has ended and is removed like any other (docs/store.md).
    if (record::run_in_progress(dir)) {
      throw UsageError("runs rm: " + dir.filename().string() +
                       " is in progress (a dyno process is writing it); let it finish or stop "
                       "that dyno (Ctrl-C), then remove it");
    }
    dirs.push_back(dir);
  }
  store::RunIndex index(root, err, resolve_index_url(o.index));
  std::random_device rd;
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    // Renamed first, so no listing ever sees a half-removed run.
    const fs::path doomed = root / ("." + name + ".removing-" + std::to_string(rd()));
    std::error_code ec;
    fs::rename(dir, doomed, ec);
    if (ec) throw record::RecordError("cannot remove " + dir.string() + ": " + ec.message());
    fs::remove_all(doomed, ec);
    if (ec) throw record::RecordError("cannot remove " + doomed.string() + ": " + ec.message());
    index.remove(name);
    out << "removed " << name << "\n";
  }
  return kExitOk;
}

int cmd_reindex(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  const std::string url = resolve_index_url(o.index);
  store::RunIndex index(existing_root(o.runs_root), err, url);
  const std::size_t n = index.rebuilt() ? index.ids().size() : index.rebuild();
  out << "indexed " << n << (n == 1 ? " run" : " runs") << " in "
      << terminal_text(url.empty() ? (fs::path(o.runs_root) / store::kIndexFileName).string()
                                   : index.name())
      << "\n";
  return kExitOk;
}

scrub::ScrubPolicy build_policy(const RunsOptions& o) {
  scrub::ScrubPolicy p;
  if (o.policy_file) {
    p = about("--policy", [&] { return scrub::read_scrub_policy(*o.policy_file); });
  }
  if (!o.keep.empty()) about("--keep", [&] { scrub::keep_categories(p, o.keep); });
  if (o.hash_gpu_uuids) {
    if (p.gpu_uuids == scrub::UuidRule::kKeep) {
      throw UsageError("--hash-gpu-uuids: GPU UUIDs are kept (--keep gpu-uuids or the policy)");
    }
    p.gpu_uuids = scrub::UuidRule::kHash;
  }
  if (o.scrub_prompt_hashes) p.prompt_hashes = true;
  for (const auto& s : o.scrub_strings) {
    if (s.empty()) throw UsageError("--scrub-string: an empty string");
    p.strings.push_back(s);
  }
  return p;
}

int cmd_publish(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  if (o.ids.empty()) throw UsageError("runs publish: name the runs to publish");
  if (o.in_place == o.out.has_value()) {
    throw UsageError("runs publish: give --out DIR (a scrubbed copy) or --in-place");
  }
  if (o.dry_run && !o.in_place && !o.out) throw UsageError("--dry-run needs --out or --in-place");
  const scrub::ScrubPolicy policy = build_policy(o);
  const auto key = record::load_sign_key(o.sign_key);
  const std::string index_url = o.in_place && !o.dry_run ? resolve_index_url(o.index) : "";
  std::vector<fs::path> dirs, campaigns;
  for (const auto& id : o.ids) {
    if (auto file = record::find_campaign_file(o.runs_root, id)) {
      if (o.in_place || o.dry_run) {
        throw UsageError("runs publish " + id +
                         ": a campaign is published as a copy, with "
                         "--out DIR (its runs are re-pinned there), not --in-place or --dry-run");
      }
      campaigns.push_back(*file);
    } else {
      dirs.push_back(resolve_run(o.runs_root, id));
    }
  }
  json::array results;
  int code = kExitOk;
  for (const auto& file : campaigns) {
    const std::string name = file.stem().string();
    record::CampaignPublishOutcome res;
    try {
      res = record::publish_campaign(file, *o.out, policy);
    } catch (const Error& e) {  // this campaign is not published; the others still are
      err << "error: " << terminal_text(e.what()) << "\n";
      code = kExitRunFailed;
      continue;
    }
    if (o.json) {
      json::array changed, runs;
      for (const auto& c : res.changed) changed.push_back(json::value(c));
      for (const auto& [run, r] : res.runs) {
        runs.push_back(json::object{{"run_id", run}, {"changed", r.changed.size()}});
      }
      results.push_back(json::object{{"campaign_id", name},
                                     {"file", res.file.string()},
                                     {"policy", scrub::policy_to_json(policy)},
                                     {"changed", std::move(changed)},
                                     {"runs", std::move(runs)}});
      continue;
    }
    out << "published campaign " << terminal_text(name, true) << " -> " << res.file.string() << ": "
        << res.changed.size() << (res.changed.size() == 1 ? " place" : " places") << " changed, "
        << res.runs.size() << (res.runs.size() == 1 ? " run" : " runs") << " re-pinned\n";
    for (const auto& c : res.changed) out << "  " << terminal_text(c, true) << "\n";
    for (const auto& [run, r] : res.runs) {
      out << "  published " << run << ": " << r.changed.size()
          << (r.changed.size() == 1 ? " place" : " places") << " changed\n";
    }
  }
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    record::ScrubOutcome res;
    fs::path dest = dir;
    try {
      if (o.in_place || o.dry_run) {
        res = record::scrub_run_dir(dir, policy, o.dry_run, key.get());
      } else {
        dest = fs::path(*o.out) / name;
        res = record::publish_run(dir, *o.out, policy, key.get());
      }
    } catch (const Error& e) {  // this run is not published; the others still are
      err << "error: " << terminal_text(e.what()) << "\n";
      code = kExitRunFailed;
      continue;
    }
    std::error_code ec;
    if (o.in_place && !o.dry_run && fs::equivalent(dir.parent_path(), o.runs_root, ec)) {
      store::index_finished_run(o.runs_root, dir, err, index_url);
    }
    if (o.json) {
      json::array changed;
      for (const auto& c : res.changed) changed.push_back(json::value(c));
      json::array skipped;
      for (const auto& c : res.files_skipped) skipped.push_back(json::value(c));
      results.push_back(json::object{{"run_id", name},
                                     {"dir", dest.string()},
                                     {"dry_run", o.dry_run},
                                     {"policy", scrub::policy_to_json(policy)},
                                     {"changed", std::move(changed)},
                                     {"files_skipped", std::move(skipped)},
                                     {"signature", res.signed_again        ? "signed"
                                                   : res.signature_dropped ? "dropped"
                                                                           : "unchanged"}});
      continue;
    }
    out << (o.dry_run ? "would scrub " : o.in_place ? "scrubbed " : "published ") << name;
    if (!o.in_place && !o.dry_run) out << " -> " << dest.string();
    out << ": " << res.changed.size() << (res.changed.size() == 1 ? " place" : " places")
        << " changed\n";
    for (const auto& c : res.changed) out << "  " << terminal_text(c, true) << "\n";
    for (const auto& s : res.files_skipped) {
      out << "  (binary file left as is: " << terminal_text(s, true) << ")\n";
    }
    if (res.signature_dropped) {
      out << "  (its SIGNATURE was removed: it signed the SHA256SUMS before scrubbing; sign the "
             "scrubbed record with --sign-key)\n";
    }
    if (res.signed_again) out << "  (signed with --sign-key)\n";
  }
  if (o.json) out << record::pretty_json(results);
  return code;
}

void add_root(CLI::App& cmd, RunsOptions& o) {
  cmd.add_option("--runs-root", o.runs_root, "directory holding the run records")
      ->capture_default_str();
}

/// --index on the subcommands that read or write the index.
void add_index(CLI::App& cmd, RunsOptions& o) {
  add_index_flag(cmd, o.index, "the run index in PostgreSQL", "<runs-root>/index.sqlite");
}

}  // namespace

// ---- public functions ------------------------------------------------------------------------

fs::path resolve_run(const fs::path& runs_root, const std::string& arg) {
  if (arg.empty()) throw UsageError("an empty run id");
  const fs::path as_path(arg);
  if (arg.find('/') != std::string::npos || arg == "." || arg == "..") {
    if (!is_run_dir(as_path)) {
      throw UsageError(arg + " is not a run directory (no manifest.json in it)");
    }
    // A symbolic link to a run is followed: the record is its directory, whose name is the
    // run id (a link's own name would not match the manifest's run_id).
    const fs::path link = as_path.has_filename() ? as_path : as_path.parent_path();
    std::error_code ec;
    if (fs::is_symlink(link, ec)) {
      const fs::path target = fs::canonical(link, ec);
      if (!ec) return target;
    }
    return fs::absolute(as_path).lexically_normal();
  }
  if (is_run_dir(runs_root / arg)) return runs_root / arg;
  std::vector<std::string> matches;
  for (const auto& name : store::run_directory_names(runs_root)) {
    if (name.starts_with(arg)) matches.push_back(name);
  }
  if (matches.size() == 1) return runs_root / matches.front();
  if (matches.empty()) {
    throw UsageError("no run '" + arg + "' under " + runs_root.string() +
                     " (dyno runs list shows them; --runs-root picks another store)");
  }
  std::string some;
  for (std::size_t i = 0; i < matches.size() && i < 3; ++i) some += (i ? ", " : "") + matches[i];
  if (matches.size() > 3) some += ", …";
  throw UsageError("'" + arg + "' matches " + std::to_string(matches.size()) + " runs (" + some +
                   "); give more of the id");
}

std::vector<DiffSection> diff_manifests(const json::object& a, const json::object& b) {
  struct Part {
    const char* section;
    std::vector<std::string> keys;
  };
  // What identifies a run and configures it; not what it measured or when.
  const std::vector<Part> parts = {{"harness", {"harness"}},
                                   {"engine", {"engine"}},
                                   {"model", {"model"}},
                                   {"hardware", {"hardware"}},
                                   {"workload", {"workload"}},
                                   {"load", {"load"}},
                                   {"slo", {"slo"}},
                                   {"telemetry", {"telemetry", "mode"}},
                                   {"telemetry", {"telemetry", "period_ms", "requested"}}};
  std::vector<DiffSection> out;
  for (const auto& part : parts) {
    if (out.empty() || out.back().name != part.section) out.push_back({part.section, 0, {}});
    DiffSection& s = out.back();
    std::string name;
    for (const auto& k : part.keys) name += (name.empty() ? "" : ".") + k;
    std::vector<std::pair<std::string, json::value>> fa, fb;
    const auto lookup = [&part](const json::object& o) -> const json::value* {
      const json::object* cur = &o;
      const json::value* v = nullptr;
      for (const auto& k : part.keys) {
        if (cur == nullptr || (v = cur->if_contains(k)) == nullptr) return nullptr;
        cur = v->if_object();
      }
      return v;
    };
    const json::value* va = lookup(a);
    const json::value* vb = lookup(b);
    if (va != nullptr) flatten(*va, name, fa);
    if (vb != nullptr) flatten(*vb, name, fb);
    // Fields in A's order, then those only B has.
    std::vector<std::string> names;
    for (const auto& [n, v] : fa) names.push_back(n);
    for (const auto& [n, v] : fb) {
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
    const auto find = [](const auto& fields, const std::string& n) -> std::optional<json::value> {
      for (const auto& [k, v] : fields) {
        if (k == n) return v;
      }
      return std::nullopt;
    };
    for (const auto& n : names) {
      std::optional<json::value> x = find(fa, n);
      std::optional<json::value> y = find(fb, n);
      if (x && y && *x == *y) {
        ++s.same;
      } else {
        s.differ.push_back({n, std::move(x), std::move(y)});
      }
    }
  }
  return out;
}

std::string render_diff(const std::string& a_id, const std::string& b_id,
                        const std::vector<DiffSection>& sections) {
  std::string out = "A  " + a_id + "\nB  " + b_id + "\n";
  std::size_t same = 0, differ = 0;
  for (const auto& s : sections) {
    same += s.same;
    differ += s.differ.size();
    if (s.differ.empty()) {
      out += "\n" + s.name + ": same (" + std::to_string(s.same) +
             (s.same == 1 ? " field)\n" : " fields)\n");
      continue;
    }
    out += "\n" + s.name + ": " + std::to_string(s.differ.size()) + " differ, " +
           std::to_string(s.same) + " same\n";
    std::vector<std::vector<std::string>> rows{{"field", "A", "B"}};
    for (const auto& f : s.differ) rows.push_back({f.field, cell_text(f.a), cell_text(f.b)});
    out += render_table(rows, "  ");
  }
  out += "\n" + std::to_string(differ) + (differ == 1 ? " field differs, " : " fields differ, ") +
         std::to_string(same) + " the same\n";
  return out;
}

RunsCli::RunsCli(CLI::App& runs) : runs_(&runs) {
  runs_->require_subcommand(1);

  list_ = runs_->add_subcommand("list", "list runs (the index is brought up to date first)");
  add_root(*list_, o_);
  add_index(*list_, o_);
  list_->add_option("--campaign", o_.filter.campaign, "campaign id (glob: * ? [..])");
  list_->add_option("--engine", o_.filter.engine, "engine name (glob)");
  list_->add_option("--model", o_.filter.model, "model id (glob)");
  list_->add_option("--protocol", o_.filter.protocol, "protocol: run, sweep, ladder, … (glob)");
  list_->add_option("--status", o_.filter.status, "ok, partial, interrupted, failed, … (glob)");
  list_->add_option("--label", o_.filter.label, "label (glob)");
  list_->add_option("--since", o_.filter.since, "started on or after (UTC), e.g. 2026-11-29");
  list_->add_option("--until", o_.filter.until, "started on or before (UTC), e.g. 2026-11-30T12");
  list_
      ->add_option("--sort", o_.filter.sort,
                   "started, id, status, tok_s, req_s, ttft, tpot, e2e, error_rate, accuracy")
      ->capture_default_str();
  list_->add_flag("--desc", o_.filter.descending, "sort in descending order");
  list_->add_option("--limit", o_.limit, "at most N runs")
      ->transform(flags::integer(1, flags::kMaxU64));
  list_->add_flag("--campaigns", o_.campaigns,
                  "list campaign files instead of runs (filters: --campaign, --protocol, --status, "
                  "--engine, --model, --since, --until)");
  list_->add_flag("--json", o_.json, "print the index rows as JSON");

  show_ = runs_->add_subcommand("show", "a run's identity, configuration and headline figures");
  add_root(*show_, o_);
  add_index(*show_, o_);
  show_->add_option("run", o_.ids, "run id, unique prefix, or run directory")
      ->required()
      ->expected(1);
  show_->add_flag("--json", o_.json, "print the manifest and the index row as JSON");

  diff_ = runs_->add_subcommand(
      "diff", "what differs in identity and configuration between two runs (fairness view)");
  add_root(*diff_, o_);
  diff_->add_option("runs", o_.ids, "two runs: ids, unique prefixes or run directories")
      ->required()
      ->expected(2);
  diff_->add_flag("--json", o_.json, "print the differences as JSON");

  diagnose_ = runs_->add_subcommand(
      "diagnose",
      "why the limit is where it is: queueing, KV cache, prefill interrupting decode, the "
      "client, the network — each with its evidence from the record");
  add_root(*diagnose_, o_);
  diagnose_->add_option("run", o_.ids, "run id, unique prefix, or run directory")
      ->required()
      ->expected(1);
  diagnose_->add_flag("--json", o_.json, "print the findings as JSON");

  verify_ = runs_->add_subcommand("verify",
                                  "check runs (SHA256SUMS, manifest, summary) and campaign files "
                                  "(their digest and their runs) (exit 3 on a failure)");
  add_root(*verify_, o_);
  verify_->add_option("runs", o_.ids,
                      "run ids, unique prefixes, run directories, campaign ids or campaign files");
  verify_->add_flag("--all", o_.all, "every run and every campaign under --runs-root");
  add_index(*verify_, o_);  // the record digests it remembers
  verify_->add_option("--verify-key", o_.verify_key,
                      "require every run and campaign to be signed by this Ed25519 public key "
                      "(PEM); without it a signature is checked against the key it names, which "
                      "says nothing of who signed (docs/store.md)");
  verify_->add_flag("--json", o_.json, "print the reports as JSON");

  rm_ = runs_->add_subcommand("rm", "remove runs (their directories and index rows)");
  add_root(*rm_, o_);
  add_index(*rm_, o_);
  rm_->add_option("runs", o_.ids, "run ids or unique prefixes")->required();

  reindex_ = runs_->add_subcommand(
      "reindex", "rebuild the index (index.sqlite or --index) from the run directories");
  add_root(*reindex_, o_);
  add_index(*reindex_, o_);

  publish_ = runs_->add_subcommand(
      "publish", "scrub runs for publishing: a copy (--out DIR) or the record itself (--in-place)");
  add_root(*publish_, o_);
  add_index(*publish_, o_);
  publish_
      ->add_option("runs", o_.ids,
                   "run ids, unique prefixes, run directories, campaign ids or campaign files")
      ->required();
  publish_->add_option("--out", o_.out, "write scrubbed copies to DIR/<run_id>/");
  publish_->add_flag("--in-place", o_.in_place, "scrub the records themselves");
  publish_->add_flag("--dry-run", o_.dry_run, "list what would change; write nothing");
  add_sign_key_flag(*publish_, o_.sign_key,
                    "each scrubbed record (without it a signature over the old SHA256SUMS is "
                    "removed)");
  publish_->add_option("--keep", o_.keep,
                       "categories left as they are: hosts, ports, paths, containers, volumes, "
                       "gpu-uuids (comma-separated)");
  publish_->add_flag("--hash-gpu-uuids", o_.hash_gpu_uuids,
                     "replace GPU UUIDs by sha256:<hex> instead of dropping them");
  publish_->add_flag("--scrub-prompt-hashes", o_.scrub_prompt_hashes,
                     "also scrub the request stream's sha256");
  publish_
      ->add_option("--scrub-string", o_.scrub_strings,
                   "a literal string to scrub wherever it occurs (repeatable)")
      ->allow_extra_args(false);  // one string per --scrub-string: run ids may follow
  publish_->add_option("--policy", o_.policy_file,
                       "a JSON policy file: {keep, gpu_uuids, prompt_hashes, strings}; flags "
                       "given as well apply on top");
  publish_->add_flag("--json", o_.json, "print what changed as JSON");
}

bool RunsCli::parsed() const { return runs_->parsed(); }

int RunsCli::execute(std::ostream& out, std::ostream& err) {
  if (list_->parsed())
    return o_.campaigns ? cmd_list_campaigns(o_, out, err) : cmd_list(o_, out, err);
  if (show_->parsed()) return cmd_show(o_, out, err);
  if (diff_->parsed()) return cmd_diff(o_, out);
  if (diagnose_->parsed()) return cmd_diagnose(o_, out);
  if (verify_->parsed()) return cmd_verify(o_, out, err);
  if (rm_->parsed()) return cmd_rm(o_, out, err);
  if (reindex_->parsed()) return cmd_reindex(o_, out, err);
  if (publish_->parsed()) return cmd_publish(o_, out, err);
  throw UsageError("dyno runs: choose list, show, diff, diagnose, verify, rm, reindex or publish");
}

}  // namespace dyno::app
