#include "app/sim_tools.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "app/console.h"
#include "app/exit_codes.h"
#include "app/flag_values.h"
#include "app/runs_command.h"
#include "dyno/build_info.h"
#include "interop/export_record.h"
#include "json/json_text.h"
#include "load/schedule.h"
#include "record/owner_sections.h"
#include "record/run_writer.h"
#include "sim/fit.h"
#include "sim/replay.h"

namespace dyno::app {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// A recorded cell, read for the fitter.
struct LoadedCell {
  sim::ObservedCell cell;
  std::string load;      ///< "c=4", "rate=2/s", "open loop"
  std::string lengths;   ///< "in 100 out 64" (medians)
  std::string engine;    ///< "dyno-sim 0.1.0"
  std::string model;     ///< the model id
  std::string identity;  ///< engine and model, serialized, for the sameness check
  std::string key;       ///< label, load, lengths and requests: runs of the same cell share it
};

// Engine and model as the record names them: name, version, the sim's parameters (minus the
// profile's name, which is its file's stem), the model id and fingerprint.
std::string identity_of(const record::Manifest& manifest) {
  const record::EngineSection engine = record::engine_section_from_json(manifest.engine);
  json::object id;
  id["name"] = engine.name ? json::value(*engine.name) : json::value();
  id["version"] = engine.version ? json::value(*engine.version) : json::value();
  if (engine.sim_profile) {
    json::object profile = *engine.sim_profile;
    profile.erase("name");
    profile.erase("description");
    id["sim_profile"] = profile;
  }
  id["model_id"] = manifest.model.id;
  id["model_fingerprint"] =
      manifest.model.fingerprint ? json::value(*manifest.model.fingerprint) : json::value();
  return json::serialize(id);
}

std::string median_text(std::vector<std::int64_t> v) {
  if (v.empty()) return "?";
  std::sort(v.begin(), v.end());
  return std::to_string(v[v.size() / 2]);
}

LoadedCell load_cell(const fs::path& dir) {
  interop::ExportRecord r = interop::read_export_record(dir);
  const std::string run = "run " + r.run_id;
  const record::Manifest& m = r.manifest;
  if (m.source) {
    if (!r.has_requests || m.source->timing == "summary_only") {
      throw UsageError(run + ": an imported summary-only record (no per-request times to fit)");
    }
    if (m.source->timing != "shared_clock") {
      throw UsageError(run + ": an imported record without a shared clock (timing " +
                       m.source->timing + "): its requests cannot be placed in time together");
    }
  }
  if (!r.has_requests) throw UsageError(run + ": the record has no requests.jsonl");
  if (m.status != "ok" && m.status != "partial") {
    throw UsageError(run + ": status " + m.status + " (only ok and partial runs are fitted)");
  }
  LoadedCell out;
  out.cell.name = r.run_id;
  if (!m.load.open_loop && m.load.concurrency && !m.load.rate_per_s) {
    out.cell.concurrency = static_cast<std::uint32_t>(*m.load.concurrency);
    out.load = "c=" + std::to_string(*m.load.concurrency);
  } else if (m.load.rate_per_s) {
    out.load = "rate=" + flags::number_text(*m.load.rate_per_s) + "/s";
  } else {
    out.load = "open loop";
  }
  std::vector<std::int64_t> in;
  std::vector<std::int64_t> outs;
  for (const metrics::Trace& t : r.traces) {
    if (!t.measured() || !t.ok()) continue;
    if (t.input_tokens) in.push_back(*t.input_tokens);
    if (t.output_tokens) outs.push_back(*t.output_tokens);
  }
  out.lengths = "in " + median_text(in) + " out " + median_text(outs);
  out.key = m.label.value_or("") + '\n' + out.load + '\n' + out.lengths + '\n' +
            std::to_string(outs.size());
  out.cell.traces = std::move(r.traces);
  try {
    (void)sim::cell_spec(out.cell);
  } catch (const std::invalid_argument&) {
    throw UsageError(run + ": no completed measured request with its times and token counts");
  }
  const record::EngineSection engine = record::engine_section_from_json(m.engine);
  out.engine = engine.name.value_or("");
  if (out.engine.empty()) out.engine = "(unnamed engine)";
  if (engine.version && !engine.version->empty()) out.engine += " " + *engine.version;
  out.model = m.model.id;
  out.identity = identity_of(m);
  return out;
}

std::vector<LoadedCell> load_cells(const std::vector<std::string>& runs, const std::string& root) {
  if (runs.empty()) throw UsageError("name at least one run");
  std::vector<LoadedCell> cells;
  std::set<std::string> seen;
  for (const std::string& arg : runs) {
    const fs::path dir = resolve_run(root, arg);
    if (!seen.insert(fs::weakly_canonical(dir).string()).second) {
      throw UsageError("run " + arg + " is named twice");
    }
    cells.push_back(load_cell(dir));
  }
  return cells;
}

void check_same_engine(const std::vector<LoadedCell>& cells) {
  for (const LoadedCell& c : cells) {
    if (c.identity == cells.front().identity) continue;
    throw UsageError("runs " + cells.front().cell.name + " (" + cells.front().engine + ", model " +
                     cells.front().model + ") and " + c.cell.name + " (" + c.engine + ", model " +
                     c.model +
                     ") are of different engines, engine settings or models: a profile is "
                     "fitted to one engine serving one model");
  }
}

std::string fmt(std::optional<double> v, double scale, const char* unit) {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g%s", *v * scale, unit);
  return buf;
}

std::string pct(std::optional<double> e) {
  if (!e) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", *e * 100.0);
  return buf;
}

json::value num(std::optional<double> v) { return v ? json::value(*v) : json::value(nullptr); }

json::object figures_json(const sim::CellFigures& f) {
  return {{"ttft_p50_s", num(f.ttft_p50_s)},
          {"ttft_p90_s", num(f.ttft_p90_s)},
          {"tpot_p50_s", num(f.tpot_p50_s)},
          {"tpot_p90_s", num(f.tpot_p90_s)},
          {"e2e_p50_s", num(f.e2e_p50_s)},
          {"e2e_p90_s", num(f.e2e_p90_s)},
          {"output_tokens_per_s", num(f.output_tokens_per_s)},
          {"requests_per_s", num(f.requests_per_s)}};
}

constexpr std::pair<sim::Figure, const char*> kJudged[] = {
    {sim::Figure::kTtftP50, "ttft_p50"},
    {sim::Figure::kTpotP50, "tpot_p50"},
    {sim::Figure::kOutputTokensPerS, "output_tokens_per_s"},
    {sim::Figure::kE2eP50, "e2e_p50"},
};

json::object comparison_json(const sim::CellComparison& c, const LoadedCell& cell) {
  json::object errors;
  for (const auto& [figure, name] : kJudged) {
    errors[name] = num(sim::relative_error(sim::figure_of(c.measured, figure),
                                           sim::figure_of(c.predicted, figure)));
  }
  return {{"run_id", c.name},
          {"load", cell.load},
          {"lengths", cell.lengths},
          {"measured", figures_json(c.measured)},
          {"predicted", figures_json(c.predicted)},
          {"relative_error", errors}};
}

json::object medians_json(const std::vector<sim::CellComparison>& cs) {
  json::object o;
  for (const auto& [figure, name] : kJudged) o[name] = num(sim::median_abs_error(cs, figure));
  return o;
}

// The measured-vs-predicted table (TTFT p50, TPOT p50, output tok/s) and the median errors.
std::string comparison_text(const std::vector<sim::CellComparison>& cs,
                            const std::vector<LoadedCell>& cells) {
  std::vector<std::vector<std::string>> rows = {{"run", "load", "lengths", "ttft p50 meas", "pred",
                                                 "err", "tpot p50 meas", "pred", "err",
                                                 "out tok/s meas", "pred", "err"}};
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const sim::CellComparison& c = cs[i];
    std::vector<std::string> row = {c.name, cells[i].load, cells[i].lengths};
    for (const auto& [figure, name] : kJudged) {
      if (figure == sim::Figure::kE2eP50) continue;
      const bool rate = figure == sim::Figure::kOutputTokensPerS;
      const double scale = rate ? 1.0 : 1000.0;
      const char* unit = rate ? "" : " ms";
      const auto m = sim::figure_of(c.measured, figure);
      const auto p = sim::figure_of(c.predicted, figure);
      row.push_back(fmt(m, scale, unit));
      row.push_back(fmt(p, scale, unit));
      row.push_back(pct(sim::relative_error(m, p)));
    }
    rows.push_back(std::move(row));
  }
  std::string out = render_table(rows, "  ");
  out += "median |error|:";
  const char* sep = " ";
  for (const auto& [figure, name] : kJudged) {
    const auto e = sim::median_abs_error(cs, figure);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %s", sep, name, e ? (fmt(*e, 100.0, "%")).c_str() : "-");
    out += buf;
    sep = ", ";
  }
  return out + "\n";
}

std::string param_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string description(const std::vector<LoadedCell>& cells, const sim::FitResult& r) {
  std::string runs;
  for (const LoadedCell& c : cells) runs += (runs.empty() ? "" : ", ") + c.cell.name;
  std::string d = "Fitted by dyno sim fit (dyno " + std::string(build_info::kVersion) + ") to " +
                  std::to_string(cells.size()) + " run" + (cells.size() == 1 ? "" : "s") + " of " +
                  cells.front().engine + ", model " + cells.front().model + ": " + runs +
                  ". In-sample median |error|:";
  for (const auto& [figure, name] : kJudged) {
    if (figure == sim::Figure::kE2eP50) continue;
    d += std::string(" ") + name + " " + fmt(sim::median_abs_error(r.cells, figure), 100.0, "%");
  }
  return d + (r.max_running_identified ? "." : "; max_running_seqs not identified.");
}

void write_profile(const std::string& path, const std::string& text) {
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw UsageError("-o " + path + " is a directory");
  const fs::path parent = fs::absolute(target).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw UsageError("-o " + path + ": the directory " + parent.string() + " does not exist");
  }
  try {
    record::write_file_atomic(target, text + "\n");
  } catch (const record::RecordError& e) {
    throw Error(ErrorKind::io, "cannot write -o " + path + ": " + e.what());
  }
}

void print_fit(const sim::FitResult& r, const std::vector<LoadedCell>& cells,
               const std::string& output, std::ostream& out) {
  out << "fitted " << cells.size() << (cells.size() == 1 ? " run" : " runs") << " of "
      << terminal_text(cells.front().engine) << ", model " << terminal_text(cells.front().model)
      << " (" << r.regression_rows << " steps regressed, " << r.evaluations << " replays)\n";
  const sim::Profile& a = r.initial;
  const sim::Profile& b = r.profile;
  std::vector<std::vector<std::string>> rows = {
      {"parameter", "regression", "fitted"},
      {"prefill_tokens_per_s", param_text(a.prefill_tokens_per_s),
       param_text(b.prefill_tokens_per_s)},
      {"step_base_s", param_text(a.step_base_s), param_text(b.step_base_s)},
      {"decode_seq_s", param_text(a.decode_seq_s), param_text(b.decode_seq_s)},
      {"decode_ctx_token_s", param_text(a.decode_ctx_token_s), param_text(b.decode_ctx_token_s)},
      {"prefill_ctx_token_s", param_text(a.prefill_ctx_token_s), param_text(b.prefill_ctx_token_s)},
      {"shared_kv_token_s", param_text(a.shared_kv_token_s), param_text(b.shared_kv_token_s)},
      {"finish_s", param_text(a.finish_s), param_text(b.finish_s)},
      {"max_running_seqs", std::to_string(a.max_running_seqs),
       std::to_string(b.max_running_seqs) +
           (r.max_running_identified ? " (seen)" : " (not identified)")}};
  out << render_table(rows, "  ");
  out << "attention: " << sim::attention_name(r.attention);
  if (!r.attention_objectives.empty()) {
    out << " (objective Σ|log error|:";
    for (const auto& [structure, e] : r.attention_objectives) {
      out << " " << sim::attention_name(structure) << " " << param_text(e);
    }
    out << ")";
  }
  out << "\n";
  for (const std::string& n : r.notes) out << "note: " << n << "\n";
  out << "in-sample (each run replayed with the fitted profile):\n"
      << comparison_text(r.cells, cells) << "wrote " << terminal_text(output) << "\n";
}

}  // namespace

int sim_fit_command(const SimFitOptions& o, std::ostream& out) {
  if (o.output.empty()) throw UsageError("-o: name the profile file to write");
  const std::vector<LoadedCell> cells = load_cells(o.runs, o.runs_root);
  check_same_engine(cells);
  sim::FitOptions fo;
  if (o.base) fo.base = about("--base", [&] { return sim::resolve_profile(*o.base); });
  if (!cells.front().model.empty()) fo.base.model_name = cells.front().model;
  fo.max_evaluations = o.max_evaluations;
  if (o.attention != "auto") {
    fo.attention =
        o.attention == "shared-cache" ? sim::Attention::kSharedCache : sim::Attention::kPerSequence;
  }
  std::vector<sim::ObservedCell> observed;
  for (const LoadedCell& c : cells) observed.push_back(c.cell);
  sim::FitResult r = sim::fit_profile(observed, fo);
  r.profile.name = fs::path(o.output).stem().string();
  r.profile.description = description(cells, r);
  const std::string text = json_text::pretty(json::parse(sim::profile_to_json(r.profile)));
  write_profile(o.output, text);
  if (!o.json) {
    print_fit(r, cells, o.output, out);
    return kExitOk;
  }
  json::array cs;
  for (std::size_t i = 0; i < r.cells.size(); ++i)
    cs.push_back(comparison_json(r.cells[i], cells[i]));
  json::array notes;
  for (const std::string& n : r.notes) notes.push_back(json::string(n));
  json::object objectives;
  for (const auto& [a, e] : r.attention_objectives) objectives[sim::attention_name(a)] = e;
  const json::object doc = {{"output", o.output},
                            {"profile", json::parse(sim::profile_to_json(r.profile))},
                            {"initial", json::parse(sim::profile_to_json(r.initial))},
                            {"max_running_identified", r.max_running_identified},
                            {"max_decoding_seen", r.max_decoding_seen},
                            {"regression_rows", r.regression_rows},
                            {"evaluations", r.evaluations},
                            {"objective", r.objective},
                            {"attention", sim::attention_name(r.attention)},
                            {"attention_objectives", objectives},
                            {"notes", notes},
                            {"cells", cs},
                            {"median_abs_error", medians_json(r.cells)}};
  out << json_text::pretty(doc) << "\n";
  return kExitOk;
}

namespace {

sim::CellSpec hypothetical_cell(const SimPredictOptions& o, const sim::Profile& p) {
  if (o.concurrency.has_value() == o.rate.has_value()) {
    throw UsageError("give -c (closed loop) or --rate (open loop), or runs to predict");
  }
  if (!o.input_tokens || !o.output_tokens) {
    throw UsageError("--input-tokens and --output-tokens are required with -c or --rate");
  }
  if (*o.input_tokens + *o.output_tokens > p.max_model_len) {
    throw UsageError("--input-tokens + --output-tokens exceed the profile's max_model_len (" +
                     std::to_string(p.max_model_len) + ")");
  }
  sim::CellSpec cell;
  cell.concurrency = o.concurrency;
  cell.requests.assign(o.requests, sim::CellRequest{*o.input_tokens, 0, *o.output_tokens});
  if (o.rate) {
    load::ScheduleSpec spec;
    spec.arrival = about("--arrival", [&] { return load::parse_arrival(o.arrival); });
    spec.rate_per_s = *o.rate;
    spec.burstiness = o.burstiness;
    spec.seed = o.seed;
    for (const std::int64_t ns : load::make_schedule(spec, o.requests, std::nullopt)) {
      cell.arrivals_s.push_back(static_cast<double>(ns) * 1e-9);
    }
  }
  return cell;
}

int predict_hypothetical(const SimPredictOptions& o, const sim::Profile& p, std::ostream& out) {
  const sim::CellSpec cell = hypothetical_cell(o, p);
  const sim::CellFigures f = sim::cell_figures(sim::replay_cell(p, cell));
  const std::string load = o.concurrency
                               ? "c=" + std::to_string(*o.concurrency)
                               : "rate=" + flags::number_text(*o.rate) + "/s " + o.arrival;
  if (o.json) {
    const json::object doc = {{"profile", p.name},
                              {"load", load},
                              {"input_tokens", *o.input_tokens},
                              {"output_tokens", *o.output_tokens},
                              {"requests", o.requests},
                              {"predicted", figures_json(f)}};
    out << json_text::pretty(doc) << "\n";
    return kExitOk;
  }
  out << "predicted by profile " << terminal_text(p.name) << ": " << load << ", " << o.requests
      << " requests of " << *o.input_tokens << " in / " << *o.output_tokens << " out tokens\n";
  const std::vector<std::vector<std::string>> rows = {
      {"", "p50", "p90"},
      {"ttft", fmt(f.ttft_p50_s, 1000.0, " ms"), fmt(f.ttft_p90_s, 1000.0, " ms")},
      {"tpot", fmt(f.tpot_p50_s, 1000.0, " ms"), fmt(f.tpot_p90_s, 1000.0, " ms")},
      {"e2e", fmt(f.e2e_p50_s, 1000.0, " ms"), fmt(f.e2e_p90_s, 1000.0, " ms")}};
  out << render_table(rows, "  ") << "  output " << fmt(f.output_tokens_per_s, 1.0, " tok/s")
      << ", " << fmt(f.requests_per_s, 1.0, " req/s") << "\n";
  return kExitOk;
}

/// The cells measured more than once among `cells`, and how far their measurements differ.
struct Repeats {
  std::size_t cells = 0;                          ///< keys with two or more runs
  std::vector<std::optional<double>> difference;  ///< per kJudged figure
};

Repeats repeats_of(const std::vector<LoadedCell>& cells,
                   const std::vector<sim::CellComparison>& cs) {
  std::vector<sim::Measurement> ms;
  std::map<std::string, int> runs_per_key;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    ms.push_back({cells[i].key, cs[i].measured});
    ++runs_per_key[cells[i].key];
  }
  Repeats r;
  for (const auto& [key, n] : runs_per_key) r.cells += n > 1 ? 1 : 0;
  for (const auto& [figure, name] : kJudged) {
    r.difference.push_back(sim::median_repeat_difference(ms, figure));
  }
  return r;
}

std::string repeats_text(const Repeats& r) {
  if (r.cells == 0) return {};
  std::string t = "repeats: " + std::to_string(r.cells) + (r.cells == 1 ? " cell" : " cells") +
                  " measured more than once differ between runs by a median of";
  const char* sep = " ";
  for (std::size_t i = 0; i < r.difference.size(); ++i) {
    t += sep + std::string(kJudged[i].second) + " " + fmt(r.difference[i], 100.0, "%");
    sep = ", ";
  }
  return t +
         "\n  (runs with the same label, load and lengths: the engine's own repeat error, "
         "which no prediction can be judged closer than)\n";
}

}  // namespace

int sim_predict_command(const SimPredictOptions& o, std::ostream& out) {
  const sim::Profile p = about("--profile", [&] { return sim::resolve_profile(o.profile); });
  if (o.runs.empty()) return predict_hypothetical(o, p, out);
  if (o.concurrency || o.rate || o.input_tokens || o.output_tokens) {
    throw UsageError(
        "runs are predicted with their own load and lengths: drop -c, --rate, "
        "--input-tokens and --output-tokens");
  }
  const std::vector<LoadedCell> cells = load_cells(o.runs, o.runs_root);
  std::vector<sim::CellComparison> cs;
  for (const LoadedCell& c : cells) cs.push_back(sim::compare_cell(p, c.cell));
  const Repeats repeats = repeats_of(cells, cs);
  if (o.json) {
    json::array arr;
    for (std::size_t i = 0; i < cs.size(); ++i) arr.push_back(comparison_json(cs[i], cells[i]));
    json::object difference;
    for (std::size_t i = 0; i < repeats.difference.size(); ++i) {
      difference[kJudged[i].second] = num(repeats.difference[i]);
    }
    const json::object doc = {{"profile", p.name},
                              {"cells", arr},
                              {"median_abs_error", medians_json(cs)},
                              {"repeated_cells", repeats.cells},
                              {"median_repeat_difference", difference}};
    out << json_text::pretty(doc) << "\n";
    return kExitOk;
  }
  out << "profile " << terminal_text(p.name) << " against " << cells.size()
      << (cells.size() == 1 ? " run" : " runs") << " (each replayed with its load and lengths):\n"
      << comparison_text(cs, cells) << repeats_text(repeats);
  return kExitOk;
}

SimTools::SimTools(CLI::App& sim) {
  sim.require_subcommand(0, 1);
  fit_ = sim.add_subcommand(
      "fit",
      "fit the simulated engine's performance model to measured runs of one engine and model, "
      "and write it as a profile file (docs/sim.md \"Calibration\")");
  fit_->add_option("runs", fit_options_.runs, "run ids, unique prefixes or run directories")
      ->required();
  fit_->add_option("-o,--output", fit_options_.output, "the profile file to write (JSON)")
      ->required();
  fit_->add_option("--runs-root", fit_options_.runs_root, "directory of run records")
      ->capture_default_str();
  fit_->add_option("--base", fit_options_.base,
                   "built-in profile or profile file the unfitted parameters come from "
                   "(default: the defaults of a profile file)");
  fit_->add_option("--max-evaluations", fit_options_.max_evaluations,
                   "replays of every run the refinement may spend")
      ->transform(flags::integer(10, 100000))
      ->capture_default_str();
  fit_->add_option("--attention", fit_options_.attention,
                   "attention structure: per-sequence (each sequence's own context), "
                   "shared-cache (one KV cache for all sequences, as llama.cpp), or auto (both "
                   "fitted, the one with the lower in-sample error kept)")
      ->check(CLI::IsMember({"auto", "per-sequence", "shared-cache"}))
      ->capture_default_str();
  fit_->add_flag("--json", fit_options_.json, "print the fit as JSON on stdout");

  predict_ = sim.add_subcommand(
      "predict",
      "predict a cell with a profile (-c or --rate with --input-tokens and --output-tokens), or "
      "each recorded run named, measured vs predicted");
  predict_->add_option("runs", predict_options_.runs, "recorded runs to predict");
  predict_
      ->add_option("--profile", predict_options_.profile,
                   "a built-in profile name or a profile file (e.g. from dyno sim fit)")
      ->required();
  predict_->add_option("--runs-root", predict_options_.runs_root, "directory of run records")
      ->capture_default_str();
  predict_->add_option("-c,--concurrency", predict_options_.concurrency, "closed loop: C in flight")
      ->transform(flags::integer(1, flags::kMaxConcurrency));
  predict_->add_option("--rate", predict_options_.rate, "open loop: mean arrival rate, req/s")
      ->transform(flags::number(flags::kMinRate, flags::kMaxRate));
  predict_->add_option("--arrival", predict_options_.arrival, "poisson, constant or gamma")
      ->capture_default_str();
  predict_->add_option("--burstiness", predict_options_.burstiness, "gamma shape k")
      ->transform(flags::number(flags::kMinBurstiness, 1000))
      ->capture_default_str();
  predict_->add_option("--seed", predict_options_.seed, "seed of the arrival schedule")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  predict_->add_option("--input-tokens", predict_options_.input_tokens, "prompt tokens per request")
      ->transform(flags::integer(1, flags::kMaxTokens));
  predict_
      ->add_option("--output-tokens", predict_options_.output_tokens, "output tokens per request")
      ->transform(flags::integer(1, flags::kMaxTokens));
  predict_->add_option("-n,--requests", predict_options_.requests, "requests in the cell")
      ->transform(flags::integer(1, 1000000))
      ->capture_default_str();
  predict_->add_flag("--json", predict_options_.json, "print the prediction as JSON on stdout");
}

int SimTools::execute(std::ostream& out) {
  if (fit_->parsed()) return sim_fit_command(fit_options_, out);
  return sim_predict_command(predict_options_, out);
}

}  // namespace dyno::app
