#include "app/rescore_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "app/console.h"
#include "app/exit_codes.h"
#include "app/runs_command.h"
#include "app/sign_key_flag.h"
#include "engine_session/host_identity.h"
#include "engine_session/run_cell.h"
#include "error/registry.h"
#include "json/json_text.h"
#include "record/signature.h"
#include "store/index_url.h"
#include "store/run_index.h"
#include "workload/scorer_spec.h"
#include "workload/scoring.h"

namespace dyno::app {

void add_rescore_options(CLI::App& cmd, RescoreCommandOptions& o) {
  cmd.add_option("run", o.run, "run id, unique prefix, or run directory")->required();
  cmd.add_option(
      "--scorer", o.scorer,
      "judge every scored request with this scorer: " + registry::name_list(workload::scorers()) +
          ", or a scorer object such as "
          "'{\"kind\":\"regex\",\"pattern\":\"answer: (\\\\d+)\"}' (default: each "
          "request's own scorer, as this dyno implements it)");
  cmd.add_option("--runs-root", o.runs_root, "directory of run records (the new one goes here)")
      ->capture_default_str();
  cmd.add_option("--label", o.label,
                 "the derived record's label (default: the run's label + \"-rescore\")");
  cmd.add_flag("--json", o.json, "print the before/after as JSON on stdout");
  add_sign_key_flag(cmd, o.sign_key, "the derived record");
}

namespace json = boost::json;

namespace {

std::string count_text(const json::object& quality, const char* key) {
  const json::value* v = quality.if_contains(key);
  if (v == nullptr || !v->is_number()) return "n/a";
  return std::to_string(v->to_number<std::uint64_t>());
}

std::string accuracy_text(const json::object& quality) {
  const json::value* v = quality.if_contains("accuracy");
  if (v == nullptr || !v->is_number()) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", v->to_number<double>() * 100.0);
  return buf;
}

std::string scorer_text(const json::value& scorer) {
  if (scorer.is_null()) return "each request's own scorer";
  if (scorer.is_string()) return "scorer " + std::string(scorer.get_string());
  return "scorer " + json_text::compact(scorer);
}

}  // namespace

std::string render_rescore(const record::RescoreOutcome& r) {
  std::ostringstream out;
  const json::value* scorer = r.derived_from.if_contains("scorer");
  out << "rescored " << r.source_run_id << " with "
      << terminal_text(scorer_text(scorer != nullptr ? *scorer : json::value(nullptr))) << "\n";
  const auto row = [&](const char* name, const json::object& q) {
    out << "  " << std::left << std::setw(10) << name << std::right << std::setw(8)
        << count_text(q, "scored") << std::setw(9) << count_text(q, "correct") << std::setw(11)
        << accuracy_text(q) << "\n";
  };
  out << "  " << std::left << std::setw(10) << "" << std::right << std::setw(8) << "scored"
      << std::setw(9) << "correct" << std::setw(11) << "accuracy"
      << "\n";
  row("original", r.before);
  row("rescored", r.after);
  out << "verdicts changed: " << r.changed << " of " << r.scored
      << " (every scored request, warm-up included)\n";
  out << "new run " << r.run_id << " (derived from " << r.source_run_id << ") in "
      << terminal_text(r.dir.string()) << "\n";
  return out.str();
}

json::object rescore_to_json(const record::RescoreOutcome& r) {
  return json::object{{"run_id", r.run_id},
                      {"record_dir", r.dir.string()},
                      {"source_run_id", r.source_run_id},
                      {"derived_from", r.derived_from},
                      {"before", r.before},
                      {"after", r.after},
                      {"scored", r.scored},
                      {"changed", r.changed}};
}

int rescore_command(const RescoreCommandOptions& o, std::ostream& out, std::ostream& err) {
  const auto key = record::load_sign_key(o.sign_key);
  record::RescoreOptions ro;
  if (o.scorer) {
    ro.scorer = workload::parse_scorer_spec(*o.scorer, "--scorer");
  }
  ro.source = resolve_run(o.runs_root, o.run);
  ro.runs_root = o.runs_root;
  ro.label = o.label;
  ro.harness = engine_session::harness_identity();
  const record::RescoreOutcome outcome = record::rescore_run(ro);
  if (key) record::sign_record(outcome.dir, *key);
  store::index_finished_run(o.runs_root, outcome.dir, err, store::index_url_from_env());
  if (o.json) {
    out << json_text::pretty(rescore_to_json(outcome));
  } else {
    out << render_rescore(outcome);
  }
  return kExitOk;
}

}  // namespace dyno::app
