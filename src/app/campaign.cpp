#include "app/campaign.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/console.h"
#include "record/record_json.h"
#include "record/redact.h"
#include "record/run_id.h"
#include "record/run_writer.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

/// The metrics a selection rule may name (all figures of docs/metrics.md).
const std::vector<std::string> kMetrics = {
    "output_tokens_per_s",    "requests_per_s",  "input_tokens_per_s", "decode_tokens_per_s",
    "goodput_requests_per_s", "ttft_p50_ms",     "tpot_p50_ms",        "e2e_p50_ms",
    "decode_rate_p50",        "prefill_rate_p50"};

std::optional<double> metric_of(const metrics::Summary& s, const std::string& name) {
  if (name == "output_tokens_per_s") return s.output_tokens_per_s;
  if (name == "requests_per_s") return s.requests_per_s;
  if (name == "input_tokens_per_s") return s.input_tokens_per_s;
  if (name == "decode_tokens_per_s") return s.decode_tokens_per_s;
  if (name == "goodput_requests_per_s") return s.goodput_requests_per_s;
  if (name == "ttft_p50_ms") return s.ttft_ms.p50;
  if (name == "tpot_p50_ms") return s.tpot_ms.p50;
  if (name == "e2e_p50_ms") return s.e2e_ms.p50;
  if (name == "decode_rate_p50") return s.decode_rate_per_user.p50;
  if (name == "prefill_rate_p50") return s.prefill_rate_client.p50;
  return std::nullopt;
}

std::string metric_list() {
  std::string out;
  for (const auto& m : kMetrics) out += (out.empty() ? "" : ", ") + m;
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
/// power over the window, peak power summed over the devices in scope, output tokens per J.
void add_energy_figures(const CellOutcome& c, json::object& figures) {
  const auto* e = c.summary_json.if_contains("energy");
  if (e == nullptr || !e->is_object() || e->at("energy_j").is_null()) return;
  const auto& en = e->as_object();
  const double energy = en.at("energy_j").to_number<double>();
  const double window = en.at("window_s").to_number<double>();
  std::optional<double> peak;
  const std::string scope(en.at("scope").as_string());
  for (const auto& d : en.at("devices").as_array()) {
    const auto& dev = d.as_object();
    const bool in_scope = (scope == "gpu") == (dev.at("kind").as_string() == "gpu");
    if (in_scope && dev.at("power_peak_w").is_number()) {
      peak = peak.value_or(0) + dev.at("power_peak_w").to_number<double>();
    }
  }
  figures["energy_j"] = energy;
  figures["power_mean_w"] = window > 0 ? json::value(energy / window) : json::value(nullptr);
  figures["power_peak_w"] = num(peak);
  figures["tok_per_j"] = en.at("output_tokens_per_j");
}

}  // namespace

Campaign::Campaign(const RunOptions& o, std::string protocol, int version, json::object params,
                   const RepeatOptions& rep, std::string primary, Figures figures)
    : o_(o),
      protocol_(std::move(protocol)),
      version_(version),
      params_(std::move(params)),
      repeat_(rep.repeat),
      metric_(rep.select.empty() ? std::move(primary) : rep.select),
      user_selected_(!rep.select.empty()),
      figures_(std::move(figures)),
      started_(std::chrono::system_clock::now()),
      id_(record::make_run_id(started_, protocol_)) {
  if (std::find(kMetrics.begin(), kMetrics.end(), metric_) == kMetrics.end()) {
    throw UsageError("--select: unknown metric '" + metric_ + "'; use one of " + metric_list());
  }
}

void Campaign::run(EngineSession& engine, const CellSpec& base, const std::string& cell,
                   json::object cell_params, const std::atomic<bool>& stop,
                   const std::string& cell_metric) {
  run(
      engine, [&base](std::uint32_t) { return base; }, cell, std::move(cell_params), stop,
      cell_metric);
}

void Campaign::run(EngineSession& engine, const std::function<CellSpec(std::uint32_t)>& spec_for,
                   const std::string& cell, json::object cell_params, const std::atomic<bool>& stop,
                   const std::string& cell_metric) {
  if (stopped_) return;
  CellResult result;
  result.name = cell;
  result.params = cell_params;
  result.metric = !cell_metric.empty() && !user_selected_ ? cell_metric : metric_;
  for (std::uint32_t r = 0; r < repeat_ && !stopped_; ++r) {
    CellSpec spec = spec_for(r);
    spec.campaign = id_;
    spec.label = o_.label.empty() ? protocol_ : o_.label;
    spec.print_summary = false;
    spec.protocol =
        json::object{{"name", protocol_},          {"version", version_},
                     {"params", params_},          {"cell", cell},
                     {"cell_params", cell_params}, {"repetition", r + 1},
                     {"repetitions", repeat_},     {"selection", selection_json(result.metric)}};
    std::cerr << "dyno " << protocol_ << ": cell " << cell;
    if (repeat_ > 1) std::cerr << " (repetition " << r + 1 << " of " << repeat_ << ")";
    std::cerr << "\n";
    CellOutcome out = run_cell(engine, spec, o_, stop);
    if (out.interrupted) stopped_ = true;
    if (out.engine_crashed) {
      stopped_ = true;  // the engine is gone: no later cell can be measured
      crashed_ = true;
    }
    if (out.exit_code != kExitOk && out.exit_code != kExitInterrupted) failed_ = true;
    result.reps.push_back(std::move(out));
  }
  cells_.push_back(std::move(result));
}

int Campaign::finish(const EngineSession& engine) {
  json::array cells;
  for (const CellResult& c : cells_) {
    std::vector<std::pair<double, std::size_t>> ranked;
    json::array runs;
    // Every figure, in the protocol's order, with the values it took over the repetitions.
    std::vector<std::pair<std::string, std::vector<double>>> values;
    std::vector<json::object> rep_figures;
    for (std::size_t i = 0; i < c.reps.size(); ++i) {
      const CellOutcome& rep = c.reps[i];
      json::object figs = figures_(rep);
      add_energy_figures(rep, figs);  // every protocol's cells, when energy was measured
      rep_figures.push_back(figs);
      for (const auto& kv : figs) {
        auto it = std::find_if(values.begin(), values.end(),
                               [&](const auto& v) { return v.first == kv.key(); });
        if (it == values.end()) it = values.insert(values.end(), {std::string(kv.key()), {}});
        if (kv.value().is_number()) it->second.push_back(kv.value().to_number<double>());
      }
      const auto m = metric_of(rep.summary, c.metric);
      if (m && std::isfinite(*m)) ranked.emplace_back(*m, i);
      runs.push_back(json::object{
          {"run_id", rep.run_id}, {"status", rep.status}, {c.metric, num(m)}, {"figures", figs}});
    }
    json::value selected = nullptr;
    const json::object* selected_figures = nullptr;
    if (!ranked.empty()) {
      // The median repetition by the declared metric (the lower middle one for an even count).
      std::sort(ranked.begin(), ranked.end());
      const std::size_t pick = ranked[(ranked.size() - 1) / 2].second;
      selected = c.reps[pick].run_id;
      selected_figures = &rep_figures[pick];
    }
    json::object spreads;
    for (auto& [k, v] : values) {
      const json::value* mine =
          selected_figures != nullptr ? selected_figures->if_contains(k) : nullptr;
      spreads[k] = figure_spread(v, mine != nullptr ? *mine : json::value(nullptr));
    }
    cells.push_back(json::object{{"cell", c.name},
                                 {"params", c.params},
                                 {"selection", selection_json(c.metric)},
                                 {"runs", std::move(runs)},
                                 {"selected_run", selected},
                                 {"figures", std::move(spreads)}});
  }
  const std::string status = crashed_   ? "engine_crashed"
                             : stopped_ ? "interrupted"
                             : failed_  ? "partial"
                                        : "ok";
  json::object doc{
      {"schema_version", record::kSchemaVersion},
      {"campaign_id", id_},
      {"status", status},
      {"started_at", record::iso8601_utc(started_)},
      {"ended_at", record::iso8601_utc(std::chrono::system_clock::now())},
      {"protocol", json::object{{"name", protocol_}, {"version", version_}, {"params", params_}}},
      {"selection", selection_json(metric_)},
      {"engine", engine.engine_json()},
      {"model", engine.model()},
      {"cells", cells}};
  const std::filesystem::path dir = std::filesystem::path(o_.runs_root) / "campaigns";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / (id_ + ".json");
  // engine.reported holds what the server answered: never the key, even if it echoed it.
  if (const auto& key = engine.target_config().api_key) record::redact_literals(doc, {*key});
  record::write_file_atomic(file, record::pretty_json(doc));
  if (o_.json) {
    doc["campaign_file"] = file.string();
    std::cout << record::pretty_json(doc);
  } else {
    print_table(doc, file);
  }
  if (crashed_) return kExitRunFailed;
  if (stopped_) return kExitInterrupted;
  return failed_ ? kExitRunFailed : kExitOk;
}

json::object Campaign::selection_json(const std::string& metric) const {
  return json::object{{"rule", "median"}, {"metric", metric}, {"repetitions", repeat_}};
}

void Campaign::print_table(const json::object& doc, const std::filesystem::path& file) const {
  std::cout << "dyno " << protocol_ << " · campaign " << id_ << " · "
            << std::string(doc.at("status").as_string()) << " · selection: median of " << repeat_
            << " by " << metric_;
  if (repeat_ > 1) std::cout << " (figures: the selected repetition's)";
  std::cout << "\n";
  std::vector<std::string> columns;  // the protocol's figure order
  for (const CellResult& c : cells_) {
    if (c.reps.empty()) continue;
    json::object first = figures_(c.reps.front());
    add_energy_figures(c.reps.front(), first);
    for (const auto& kv : first) {
      const std::string key(kv.key());
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    }
  }
  std::size_t name_width = 4;
  for (const CellResult& c : cells_) name_width = std::max(name_width, c.name.size());
  std::ostringstream line;
  line << "  " << std::string(name_width, ' ');
  for (const auto& col : columns)
    line << "  " << std::string(std::max<std::size_t>(col.size(), 9) - col.size(), ' ') << col;
  std::cout << line.str() << "\n";
  for (const auto& cv : doc.at("cells").as_array()) {
    const auto& c = cv.as_object();
    const std::string name(c.at("cell").as_string());
    std::ostringstream row;
    row << "  " << name << std::string(name_width - name.size(), ' ');
    const auto& figs = c.at("figures").as_object();
    for (const auto& col : columns) {
      std::string text = "n/a";
      if (const auto* sp = figs.if_contains(col); sp != nullptr) {
        const auto& value = sp->as_object().at("selected");
        if (!value.is_null()) text = fmt(value.to_number<double>(), 2);
      }
      row << "  "
          << std::string(std::max<std::size_t>(col.size(), 9) -
                             std::min(text.size(), std::max<std::size_t>(col.size(), 9)),
                         ' ')
          << text;
    }
    std::cout << row.str() << "\n";
  }
  std::cout << "campaign file " << file.string() << "\n";
}

}  // namespace dyno::app
