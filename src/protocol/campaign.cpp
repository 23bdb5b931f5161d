#include "protocol/campaign.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>

#include "error/error.h"
#include "metrics/registry.h"
#include "protocol/campaign_summary.h"
#include "record/owner_sections.h"
#include "record/record_json.h"
#include "record/run_id.h"

namespace dyno::protocol {

namespace json = boost::json;

namespace {

std::string metric_list() {
  std::string out;
  for (const metrics::SelectionMetric& m : metrics::selection_metrics()) {
    out += (out.empty() ? "" : ", ") + std::string(m.name);
  }
  return out;
}

json::value num(std::optional<double> v) { return record::number_or_null(v); }

}  // namespace

json::object figure_spread(std::vector<double> values, const json::value& selected) {
  std::erase_if(values, [](double x) { return !std::isfinite(x); });
  json::object out{{"min", nullptr}, {"median", nullptr}, {"max", nullptr}};
  if (!values.empty()) {
    std::sort(values.begin(), values.end());
    out["min"] = values.front();
    out["median"] = values[(values.size() - 1) / 2];  // an even count: the lower middle value
    out["max"] = values.back();
  }
  out["selected"] = selected.is_number() && std::isfinite(selected.to_number<double>())
                        ? selected
                        : json::value(nullptr);
  return out;
}

namespace {

/// Energy figures of a cell from its summary (absent without a power source): energy_j, mean
/// power over the window, the peak of the summed power of the devices in scope (summary
/// energy.power_peak_w: one instant's sum, not the sum of each device's peak), output tokens
/// per J.
void add_energy_figures(const engine_session::CellOutcome& c, json::object& figures) {
  const std::optional<record::EnergySection> e = c.summary_file.energy_section();
  if (!e || !e->energy_j) return;
  const record::EnergySection& en = *e;
  figures["energy_j"] = *en.energy_j;
  figures["power_mean_w"] = num(metrics::mean_power_w(en.energy_j, en.window_s.value_or(0)));
  figures["power_peak_w"] = num(en.power_peak_w);
  figures["tok_per_j"] = num(en.output_tokens_per_j);
}

}  // namespace

ProtocolCampaign::ProtocolCampaign(const ProtocolPlan& plan, std::string label,
                                   CampaignDeclared declared)
    : plan_(plan),
      label_(label.empty() ? plan.name : std::move(label)),
      declared_(std::move(declared)),
      metric_(plan.rep.select.empty() ? plan.primary : plan.rep.select),
      user_selected_(!plan.rep.select.empty()),
      started_(std::chrono::system_clock::now()),
      id_(record::make_run_id(started_, plan.name)) {
  const auto& known = metrics::selection_metrics();
  if (std::none_of(known.begin(), known.end(),
                   [&](const metrics::SelectionMetric& m) { return m.name == metric_; })) {
    throw UsageError("--select: unknown metric '" + metric_ + "'; use one of " + metric_list());
  }
}

void ProtocolCampaign::run(const CellRunner& run,
                           const std::function<void(const std::string&)>& say) {
  for (const CellPlan& cell : plan_.cells) {
    if (stopped_) break;
    run_cell(cell, run, say);
  }
}

ProtocolCampaign::ProtocolCampaign(const ProtocolPlan& plan, std::string label,
                                   CampaignDeclared declared, const Resumed& resumed)
    : ProtocolCampaign(plan, std::move(label), std::move(declared)) {
  id_ = resumed.id;
  started_ = resumed.started;
}

void ProtocolCampaign::run_cell(const CellPlan& cell, const CellRunner& run,
                                const std::function<void(const std::string&)>& say) {
  CellResult& result = result_of(cell);
  for (std::uint32_t r = 0; r < plan_.rep.repeat && !stopped_; ++r) {
    engine_session::CellOutcome out = run_one(cell, r, result.metric, run, say);
    result.reps.push_back(std::move(out));
  }
}

void ProtocolCampaign::run_repetition(const CellPlan& cell, const CellRunner& run,
                                      const std::function<void(const std::string&)>& say) {
  if (stopped_) return;
  CellResult& result = result_of(cell);
  const auto r = static_cast<std::uint32_t>(result.reps.size());
  engine_session::CellOutcome out = run_one(cell, r, result.metric, run, say);
  result.reps.push_back(std::move(out));
}

void ProtocolCampaign::adopt(const CellPlan& cell, engine_session::CellOutcome outcome) {
  result_of(cell).reps.push_back(std::move(outcome));
}

std::vector<std::pair<std::string, const std::vector<engine_session::CellOutcome>*>>
ProtocolCampaign::results() const {
  std::vector<std::pair<std::string, const std::vector<engine_session::CellOutcome>*>> out;
  for (const CellResult& c : cells_) out.emplace_back(c.name, &c.reps);
  return out;
}

ProtocolCampaign::CellResult& ProtocolCampaign::result_of(const CellPlan& cell) {
  for (CellResult& c : cells_) {
    if (c.name == cell.name) return c;
  }
  CellResult result;
  result.name = cell.name;
  result.key = cell.key.empty() ? std::vector<std::string>{cell.name} : cell.key;
  result.params = cell.params;
  result.metric = !cell.metric.empty() && !user_selected_ ? cell.metric : metric_;
  cells_.push_back(std::move(result));
  return cells_.back();
}

engine_session::CellOutcome ProtocolCampaign::run_one(
    const CellPlan& cell, std::uint32_t r, const std::string& metric, const CellRunner& run,
    const std::function<void(const std::string&)>& say) {
  const std::uint32_t repeat = plan_.rep.repeat;
  engine_session::CellSpec spec = cell.spec_for(r);
  spec.campaign = id_;
  spec.label = label_;
  spec.protocol.name = plan_.name;
  spec.protocol.version = plan_.version;
  spec.protocol.params = plan_.params;
  spec.protocol.cell = cell.name;
  spec.protocol.cell_params = cell.params;
  spec.protocol.repetition = r + 1;
  spec.protocol.repetitions = repeat;
  spec.protocol.selection = record::ProtocolSelection{"median", metric, repeat, {}};
  std::string line = "dyno " + plan_.name + ": cell " + cell.name;
  if (plan_.search && r > 0) {
    line += " (repetition " + std::to_string(r + 1) + ")";
  } else if (!plan_.search && repeat > 1) {
    line += " (repetition " + std::to_string(r + 1) + " of " + std::to_string(repeat) + ")";
  }
  say(line);
  engine_session::CellOutcome out = run(spec);
  if (out.interrupted) stopped_ = true;
  if (out.engine_crashed) {
    stopped_ = true;  // the engine is gone: no later cell can be measured
    crashed_ = true;
  }
  if (out.status == "target_unreachable") {
    stopped_ = true;  // the server is gone: later cells would each wait to find it so
    unreachable_ = true;
  }
  // A failed cell: its engine crashed or could not be reached, or (not interrupted) no
  // request succeeded or more failed than the error budget allows.
  if (out.crash || unreachable_ ||
      (!plan_.search && !out.interrupted && (out.status == "failed" || out.over_error_budget))) {
    failed_ = true;
  }
  return out;
}

json::object ProtocolCampaign::cell_json(const CellResult& c, json::object& headline) const {
  return cell_document(plan_.figures, c.name, c.key, c.params, c.metric, selection_json(c.metric),
                       c.reps, headline);
}

json::object cell_document(const Figures& figures, const std::string& name,
                           const std::vector<std::string>& key, const json::object& params,
                           const std::string& metric, const json::object& selection,
                           const std::vector<engine_session::CellOutcome>& reps,
                           json::object& headline) {
  std::vector<std::pair<double, std::size_t>> ranked;
  json::array runs;
  // Every figure, in the protocol's order, with the values it took over the repetitions.
  std::vector<std::pair<std::string, std::vector<double>>> values;
  std::vector<json::object> rep_figures;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    const engine_session::CellOutcome& rep = reps[i];
    json::object figs = figures(rep);
    add_energy_figures(rep, figs);  // every protocol's cells, when energy was measured
    rep_figures.push_back(figs);
    for (const auto& kv : figs) {
      auto it = std::find_if(values.begin(), values.end(),
                             [&](const auto& v) { return v.first == kv.key(); });
      if (it == values.end()) it = values.insert(values.end(), {std::string(kv.key()), {}});
      if (kv.value().is_number()) it->second.push_back(kv.value().to_number<double>());
    }
    const auto m = metrics::selection_value(rep.summary, metric);
    if (m && std::isfinite(*m)) ranked.emplace_back(*m, i);
    runs.push_back(json::object{{"run_id", rep.run_id},
                                {"status", rep.status},
                                {"record_sha256", rep.record_sha256},
                                {metric, num(m)},
                                {"figures", figs}});
  }
  json::value selected = nullptr;
  const json::object* selected_figures = nullptr;
  if (!ranked.empty()) {
    // The median repetition by the declared metric (the lower middle one for an even count).
    std::sort(ranked.begin(), ranked.end());
    const std::size_t pick = ranked[(ranked.size() - 1) / 2].second;
    selected = reps[pick].run_id;
    selected_figures = &rep_figures[pick];
  }
  json::object spreads;
  for (auto& [k, v] : values) {
    const json::value* mine =
        selected_figures != nullptr ? selected_figures->if_contains(k) : nullptr;
    spreads[k] = figure_spread(v, mine != nullptr ? *mine : json::value(nullptr));
  }
  put_headline(headline, key,
               selected_figures != nullptr ? json::value(*selected_figures) : json::value(nullptr));
  return json::object{{"cell", name},
                      {"params", params},
                      {"selection", selection},
                      {"runs", std::move(runs)},
                      {"selected_run", selected},
                      {"figures", std::move(spreads)}};
}

std::string ProtocolCampaign::status() const {
  return crashed_       ? "engine_crashed"
         : unreachable_ ? "target_unreachable"
         : stopped_     ? "interrupted"
         : failed_      ? "partial"
                        : "ok";
}

namespace {

/// How long the engine took to be ready (a launched engine's launch record), or why there is no
/// such figure.
json::object readiness(const json::object& engine_json) {
  const record::EngineSection engine = record::engine_section_from_json(engine_json);
  if (const std::optional<record::EngineLaunchRef>& l = engine.launch) {
    return json::object{{"ready_s", l->ready_s},
                        {"probe_ready_s", l->probe_ready_s},
                        {"first_request_s", l->first_request_s ? json::value(*l->first_request_s)
                                                               : json::value(nullptr)},
                        {"launched_at", l->launched_at}};
  }
  const std::string& kind = engine.reached.kind;
  return json::object{
      {"ready_s", nullptr},
      {"reason", kind == "embedded-sim" ? "the embedded simulated engine is ready at once"
                 : kind == "plugin"     ? "an in-process plugin engine: nothing was launched"
                                        : "reached at --url: dyno did not launch the engine"}};
}

}  // namespace

json::object ProtocolCampaign::document(const json::object& engine, const std::string& model,
                                        const json::value& vram_after_load,
                                        const std::string& hardware_detected) const {
  json::array cells;
  json::object headline;
  std::vector<CellRep> reps;
  for (const CellResult& c : cells_) {
    cells.push_back(cell_json(c, headline));
    for (const auto& rep : c.reps) reps.push_back({c.name, &rep});
  }
  const auto text_or_null = [](const std::optional<std::string>& v) {
    return v ? json::value(*v) : json::value(nullptr);
  };
  const auto strings = [](const std::vector<std::string>& v) {
    json::array a;
    for (const std::string& s : v) a.push_back(json::value(s));
    return a;
  };
  return json::object{
      {"schema_version", record::kSchemaVersion},
      {"campaign_id", id_},
      {"name", text_or_null(declared_.name)},
      {"status", status()},
      {"user_status", text_or_null(declared_.status)},
      {"notes", strings(declared_.notes)},
      {"started_at", record::iso8601_utc(started_)},
      {"ended_at", record::iso8601_utc(std::chrono::system_clock::now())},
      {"protocol",
       json::object{{"name", plan_.name}, {"version", plan_.version}, {"params", plan_.params}}},
      {"selection", selection_json(metric_)},
      {"engine", engine},
      {"readiness", readiness(engine)},
      {"model", model},
      {"hardware",
       json::object{{"label", text_or_null(declared_.hardware_label)},
                    {"detected", hardware_detected.empty() ? json::value(nullptr)
                                                           : json::value(hardware_detected)}}},
      {"evidence", strings(declared_.evidence)},
      {"vram_after_load", vram_after_load},
      {"headline", std::move(headline)},
      {"session_telemetry", engine_session_telemetry(reps)},
      {"energy_flags", energy_flags(reps)},
      {"warnings", cell_warnings(reps)},
      {"caveats", cell_caveats(reps)},
      {"cells", std::move(cells)}};
}

json::object ProtocolCampaign::selection_json(const std::string& metric) const {
  return json::object{{"rule", "median"}, {"metric", metric}, {"repetitions", plan_.rep.repeat}};
}

std::vector<std::string> ProtocolCampaign::columns() const {
  std::vector<std::string> columns;  // the protocol's figure order
  for (const CellResult& c : cells_) {
    if (c.reps.empty()) continue;
    json::object first = plan_.figures(c.reps.front());
    add_energy_figures(c.reps.front(), first);
    for (const auto& kv : first) {
      const std::string key(kv.key());
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    }
  }
  return columns;
}

}  // namespace dyno::protocol
