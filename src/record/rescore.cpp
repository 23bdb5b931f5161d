#include "record/rescore.h"

#include <boost/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "digest/digest.h"
#include "json/json_text.h"
#include "metrics/registry.h"
#include "metrics/summary.h"
#include "record/manifest.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_id.h"
#include "record/run_record.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "record/summary_file.h"
#include "scrub/scrub.h"
#include "workload/request_stream.h"
#include "workload/scorer_spec.h"
#include "workload/scoring.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// The files a derived record writes itself; every other file of the source is copied.
bool rewritten(const std::string& name) {
  return name == "manifest.json" || name == "summary.json" || name == "requests.jsonl" ||
         name == "SHA256SUMS";
}

/// derived_from.scorer: null for the requests' own scorers; the name when the scorer came
/// without pattern or choices; else the object a stream's `scorer` takes.
json::value scorer_given_json(const std::optional<workload::Expectation>& scorer) {
  if (!scorer) return nullptr;
  if (scorer->pattern.empty() && scorer->choices.empty()) return json::value(scorer->scorer);
  return workload::scorer_to_json(*scorer);
}

/// The source's lines, each a JSON object (the source verified, so each parses).
std::vector<json::object> read_lines(const fs::path& file) {
  std::istringstream in(read_file(file));
  std::vector<json::object> lines;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      throw RecordReadError(file.string() + ":" + std::to_string(n) + ": not a JSON object");
    }
    lines.push_back(std::move(v.get_object()));
  }
  return lines;
}

/// The paths SHA256SUMS lists ("<hex>  <path>" lines; the source verified).
std::vector<std::string> listed_files(const fs::path& dir) {
  std::istringstream in(read_file(dir / "SHA256SUMS"));
  std::vector<std::string> files;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 66) files.push_back(line.substr(66));
  }
  return files;
}

/// Refuses a source that is not a finished record that verifies.
void check_source(const fs::path& source, const json::object& manifest) {
  const std::string id = source.filename().string();
  const json::value* status = manifest.if_contains("status");
  if ((status != nullptr && status->is_string() && status->get_string() == "running") ||
      run_in_progress(source)) {
    throw RescoreError("run " + id +
                       " is still running (manifest status `running`): only a finished record "
                       "can be re-scored; let the run finish (a record left `running` by a "
                       "killed dyno never finishes)");
  }
  const VerifyReport report = verify_run_dir(source, true);
  if (!report.ok()) {
    const VerifyProblem& p = report.problems.front();
    throw RescoreError("run " + id + " fails `dyno runs verify` (" +
                       std::to_string(report.problems.size()) + " problem" +
                       (report.problems.size() == 1 ? "" : "s") +
                       "; the first: " + (p.path.empty() ? "" : p.path + ": ") + p.message +
                       "): only a record that verifies can be re-scored");
  }
}

std::string default_label(const std::optional<std::string>& source_label) {
  return source_label && !source_label->empty() ? *source_label + "-rescore" : "rescore";
}

}  // namespace

workload::Expectation effective_expectation(const workload::Expectation& own,
                                            const std::optional<workload::Expectation>& scorer,
                                            const std::string& where) {
  workload::Expectation e = own;
  if (scorer) {
    e.scorer = scorer->scorer;
    e.pattern = scorer->scorer != "regex"  ? std::string()
                : !scorer->pattern.empty() ? scorer->pattern
                : own.scorer == "regex"    ? own.pattern
                                           : std::string();
    e.choices = scorer->scorer != "choice" ? std::vector<std::string>()
                : !scorer->choices.empty() ? scorer->choices
                : own.scorer == "choice"   ? own.choices
                                           : std::vector<std::string>();
    if (e.scorer == "regex" && e.pattern.empty()) {
      throw RescoreError(
          where + ": --scorer regex needs a pattern, and this request's own scorer (" + own.scorer +
          ") has none; give it: --scorer '{\"kind\":\"regex\",\"pattern\":\"...\"}'");
    }
    if (e.scorer == "choice" && e.choices.empty()) {
      throw RescoreError(
          where + ": --scorer choice needs choices, and this request's own scorer (" + own.scorer +
          ") has none; give them: --scorer '{\"kind\":\"choice\",\"choices\":[...]}'");
    }
  }
  workload::validate_expectation(e, where, "score");
  return e;
}

RescoredRequests rescore_requests(std::vector<json::object> lines,
                                  const std::optional<workload::Expectation>& scorer,
                                  const std::string& run_id) {
  RescoredRequests out;
  out.traces.reserve(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    json::object& line = lines[i];
    metrics::Trace t;
    try {
      t = trace_from_json(line);
    } catch (const std::runtime_error& e) {
      throw RecordReadError(run_id + ": requests.jsonl line " + std::to_string(i + 1) + ": " +
                            e.what());
    }
    if (t.correct) {
      const std::string where = run_id + ": requests.jsonl line " + std::to_string(i + 1) +
                                " (request " + t.request_id + ")";
      if (!t.expected_answer) {
        throw RescoreError(where +
                           ": its score has no `expected` answer: the record was written by a "
                           "dyno that did not keep expected answers in requests.jsonl, so its "
                           "requests cannot be judged again; measure the stream again");
      }
      if (t.ok() && !line.contains("output_text")) {
        throw RescoreError(
            where +
            ": the request completed but its output text was not kept (no `output_text`): "
            "re-scoring reads the kept outputs; `--keep-outputs` keeps them (and dyno keeps the "
            "output of every request that carries an expected answer)");
      }
      const workload::Expectation own{*t.expected_answer, t.scorer, t.scorer_pattern,
                                      t.scorer_choices};
      const workload::Expectation e = effective_expectation(own, scorer, where);
      workload::Score s;
      s.scorer = e.scorer;
      if (t.ok()) s = workload::score_answer(e, t.output_text);  // a failure stays incorrect
      ++out.scored;
      if (*t.correct != s.correct) ++out.changed;
      t.correct = s.correct;
      t.extracted_answer = s.extracted;
      t.scorer = e.scorer;
      t.scorer_pattern = e.pattern;
      t.scorer_choices = e.choices;
      line["score"] = score_to_json(t);
    }
    out.traces.push_back(std::move(t));
  }
  if (out.scored == 0) {
    throw RescoreError("run " + run_id +
                       " has no scored request (none carried an expected answer): there is "
                       "nothing to re-score; a request stream gives answers with `expected` "
                       "(docs/record.md, Request streams)");
  }
  out.lines = std::move(lines);
  return out;
}

RescoreOutcome rescore_run(const RescoreOptions& o) {
  const fs::path source = o.source.has_filename() ? o.source : o.source.parent_path();  // "x/"
  check_source(source, read_record_json(source / "manifest.json"));
  const std::string source_id = source.filename().string();
  // Verified by check_source; its requests are re-read below as lines, kept byte for byte.
  RunRecord record = read_run(source, {.requests = false, .integrity = false});
  if (!record.summary) throw RecordReadError((source / "summary.json").string() + ": missing");
  SummaryFile& summary = *record.summary;
  RescoredRequests rescored =
      rescore_requests(read_lines(source / "requests.jsonl"), o.scorer, source_id);

  Manifest m = std::move(record.manifest);
  const std::string label = o.label.value_or(default_label(m.label));
  m.run_id = make_run_id(o.now, label);
  m.label = label;
  m.derived_from = DerivedFrom{"rescore",
                               source_id,
                               digest::sha256_hex_file(source / "summary.json"),
                               digest::sha256_hex_file(source / "SHA256SUMS"),
                               scorer_given_json(o.scorer),
                               iso8601_utc(o.now),
                               o.harness};

  RescoreOutcome out;
  out.source_run_id = source_id;
  out.run_id = m.run_id;
  out.scored = rescored.scored;
  out.changed = rescored.changed;
  out.before = quality_to_json(summary.figures);
  // Quality by the same definitions as a measured run's; every other figure is the source's.
  const metrics::Summary quality = metrics::summarize_run(rescored.traces, {});
  for (const metrics::Figure* f : metrics::figures_in("quality")) {
    if (f->value != nullptr) summary.figures.*(f->value) = quality.*(f->value);
    if (f->count != nullptr) summary.figures.*(f->count) = quality.*(f->count);
    if (f->dist != nullptr) summary.figures.*(f->dist) = quality.*(f->dist);
  }
  out.after = quality_to_json(summary.figures);
  summary.run_id = m.run_id;
  json::value manifest_json = manifest_to_json(m);
  out.derived_from = manifest_json.as_object().at("derived_from").as_object();

  // The source's bytes, read after it verified; nothing else enters the record (no secret can:
  // the source was written with them redacted). The safety net of every JSON file still runs.
  RunWriter writer(o.runs_root, m.run_id, false);
  for (const std::string& name : listed_files(source)) {
    if (!rewritten(name)) writer.write_text(name, read_file(source / name));
  }
  std::string requests;
  for (const json::object& line : rescored.lines) requests += json_text::compact(line) + "\n";
  writer.write_text("requests.jsonl", requests);
  json::value summary_json = summary_file_to_json(summary);
  scrub::redact_secrets(summary_json);
  writer.write_text("summary.json", json_text::pretty(summary_json));
  scrub::redact_secrets(manifest_json);
  writer.write_text("manifest.json", json_text::pretty(manifest_json));
  write_sha256sums(writer.dir());
  out.dir = writer.dir();
  return out;
}

}  // namespace dyno::record
