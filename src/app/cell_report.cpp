// What a person sees of a cell: the progress bar while it runs, then its table (or JSON) on
// stdout, its warnings and the reason it failed on stderr; and its exit code.
#include "app/cell_report.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <iostream>

#include "app/console.h"
#include "app/exit_codes.h"
#include "engine/launch.h"
#include "record/record_json.h"
#include "record/server_section.h"
#include "scrub/terminal_text.h"
#include "store/index_url.h"
#include "transport/server_message.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

/// The console's headline of a finished cell.
RunHeadline headline(const engine_session::EngineSession& engine,
                     const engine_session::CellSpec& cell, const engine_session::CellOutcome& out) {
  const bool stream = out.streamed;
  RunHeadline head;
  head.run_id = out.run_id;
  head.engine = engine.display();
  head.model = engine.model();
  head.api = std::string(engine.api() == workload::Api::kChat ? "chat" : "completions") +
             (stream ? ", streamed" : ", not streamed");
  head.load = cell.load_text;
  head.status = out.status;
  head.record_dir = out.dir.string();
  head.slo_text = cell.slo_text;
  head.server_timings = out.server_timings;
  const record::SummaryFile& summary = out.summary_file;
  if (const std::optional<record::ServerSection> s = record::server_section_of(summary.server); s) {
    head.metrics_acceptance_rate = s->spec_decode_acceptance_rate;
  }
  if (const std::optional<record::EnergySection> e = summary.energy_section(); e && e->energy_j) {
    head.energy = fmt(e->energy_j, 1) + " J (" + e->scope.value_or("?") + ") · " +
                  fmt(e->output_tokens_per_j, 3) + " tok/J · " +
                  fmt(e->joules_per_output_token, 3) + " J/token gross, " +
                  fmt(e->idle_subtracted_joules_per_output_token, 3) + " net of idle";
  }
  return head;
}

/// The exit code of a cell, with the message that explains a failure on stderr.
int cell_exit_code(const engine_session::CellOutcome& out, const std::string& engine_name,
                   double error_budget) {
  if (out.engine_crashed) {
    std::cerr << "dyno: engine " << engine_name << " " << out.crash->describe()
              << " during the run; the record keeps every finished request and the log's tail\n";
    return kExitRunFailed;
  }
  if (out.interrupted && out.crash) {
    std::cerr << "dyno: engine " << engine_name << " " << out.crash->describe()
              << " on the same stop signal as dyno; the record says interrupted\n";
  }
  if (out.interrupted) return kExitInterrupted;
  if (out.unreachable && out.status == "target_unreachable") {
    const load::Unreachable& u = *out.unreachable;
    std::cerr << "dyno: target unreachable: " << u.failures
              << " requests in a row failed to connect over " << fmt(u.for_s, 1)
              << " s and none was answered (last: "
              << scrub::terminal_text(transport::bounded_excerpt(u.last_message, 160), true)
              << "); stopped sending after " << u.sent
              << " measured requests (--unreachable-after); the record keeps them\n";
    return kExitRunFailed;
  }
  if (out.status == "failed") return kExitRunFailed;
  if (out.over_error_budget) {
    std::cerr << "dyno: error rate " << fmt(*out.summary.error_rate * 100.0, 1)
              << " % exceeds the error budget of " << fmt(error_budget * 100.0, 1)
              << " % (--error-budget)\n";
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace

engine_session::CellOutcome run_and_show(engine_session::EngineSession& engine,
                                         const engine_session::CellSpec& cell, const RunOptions& o,
                                         const std::atomic<bool>& stop, bool print_summary,
                                         std::set<metrics::WarningCode>* shown) {
  const ConsoleStyle style = detect_style(o.console.color, o.console.quiet);
  ProgressBar bar(style.progress);
  engine_session::CellHooks hooks;
  hooks.on_progress = [&bar](const load::Progress& p, double measured_s) {
    bar.update(p, measured_s);
  };
  hooks.on_load_done = [&bar] { bar.finish(); };
  // --index, else DYNO_INDEX_URL (a malformed one is a warning when the run is indexed).
  const std::string index_url = o.record.index ? *o.record.index : store::index_url_from_env();
  engine_session::CellOutcome out =
      engine_session::run_cell(engine, cell, o.record.runs_root, index_url, stop, hooks);
  if (print_summary) {
    if (o.console.json) {
      json::object printed = record::summary_file_to_json(out.summary_file);
      printed["record_dir"] = out.dir.string();
      std::cout << record::pretty_json(printed);
    } else {
      std::cout << render_summary(headline(engine, cell, out), out.summary, style.color);
    }
    std::cout.flush();
  }
  std::vector<metrics::Warning> fresh;
  for (const metrics::Warning& w : out.summary.warnings) {
    if (shown == nullptr || shown->insert(w.code).second) fresh.push_back(w);
  }
  std::cerr << render_warnings(
      fresh, detect_style(o.console.color, true).color && ::isatty(STDERR_FILENO) != 0);
  out.exit_code = cell_exit_code(
      out, engine.launched() != nullptr ? engine.launched()->spec().name : "", cell.error_budget);
  return out;
}

}  // namespace dyno::app
