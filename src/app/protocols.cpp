#include "app/protocols.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "app/console.h"
#include "app/session.h"
#include "app/signals.h"
#include "record/record_json.h"
#include "record/redact.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "workload/exact_prompt.h"
#include "workload/request_stream.h"
#include "workload/synthetic.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

using Figures = std::function<json::object(const CellOutcome&)>;

std::vector<double> parse_list(const std::string& text, const std::string& flag) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    std::size_t pos = 0;
    double v = 0;
    try {
      v = std::stod(item, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != item.size() || !std::isfinite(v) || v < 0) {
      throw UsageError(flag + ": '" + item + "' is not a non-negative number; write e.g. " + flag +
                       " 1,2,4,8");
    }
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(flag + ": give at least one value, e.g. " + flag + " 1,2,4");
  return out;
}

std::vector<std::string> parse_names(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      throw UsageError(flag + ": '" + item + "' is named twice");
    }
    out.push_back(item);
  }
  if (out.empty()) throw UsageError(flag + ": give at least one name");
  return out;
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

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

/// min / median / max of the finite values (median of an even count: the mean of the two
/// middle values).
json::object spread(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  if (v.empty()) return json::object{{"min", nullptr}, {"median", nullptr}, {"max", nullptr}};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  return json::object{{"min", v.front()}, {"median", median}, {"max", v.back()}};
}

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

/// Runs cells, keeps every repetition, writes the campaign file and the console table.
class Campaign {
 public:
  Campaign(const RunOptions& o, std::string protocol, int version, json::object params,
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
    if (repeat_ == 0) throw UsageError("--repeat must be at least 1");
    if (std::find(kMetrics.begin(), kMetrics.end(), metric_) == kMetrics.end()) {
      throw UsageError("--select: unknown metric '" + metric_ + "'; use one of " + metric_list());
    }
  }

  const std::string& id() const { return id_; }
  bool stopped() const { return stopped_; }

  /// Runs `base` repeat_ times as cell `cell`. `cell_metric` replaces the protocol's primary
  /// metric for this cell (e.g. prefill cells have no decode rate) unless --select was given.
  void run(EngineSession& engine, const CellSpec& base, const std::string& cell,
           json::object cell_params, const std::atomic<bool>& stop,
           const std::string& cell_metric = "") {
    run(
        engine, [&base](std::uint32_t) { return base; }, cell, std::move(cell_params), stop,
        cell_metric);
  }

  /// As above, with the spec of each repetition (0-based) from `spec_for`.
  void run(EngineSession& engine, const std::function<CellSpec(std::uint32_t)>& spec_for,
           const std::string& cell, json::object cell_params, const std::atomic<bool>& stop,
           const std::string& cell_metric = "") {
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

  /// Writes <runs-root>/campaigns/<id>.json, prints the table; returns the exit code.
  int finish(const EngineSession& engine) {
    json::array cells;
    for (const CellResult& c : cells_) {
      std::vector<std::pair<double, std::size_t>> ranked;
      json::array runs;
      // Every figure, in the protocol's order, with the values it took over the repetitions.
      std::vector<std::pair<std::string, std::vector<double>>> values;
      for (std::size_t i = 0; i < c.reps.size(); ++i) {
        const CellOutcome& rep = c.reps[i];
        json::object figs = figures_(rep);
        add_energy_figures(rep, figs);  // every protocol's cells, when energy was measured
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
      if (!ranked.empty()) {
        // The median repetition by the declared metric (the lower middle one for an even count).
        std::sort(ranked.begin(), ranked.end());
        selected = c.reps[ranked[(ranked.size() - 1) / 2].second].run_id;
      }
      json::object spreads;
      for (auto& [k, v] : values) spreads[k] = spread(v);
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

 private:
  struct CellResult {
    std::string name;
    json::object params;
    std::string metric;  // the selection metric of this cell
    std::vector<CellOutcome> reps;
  };

  json::object selection_json(const std::string& metric) const {
    return json::object{{"rule", "median"}, {"metric", metric}, {"repetitions", repeat_}};
  }

  /// One row per cell, one column per figure (the median over repetitions; [min–max] of the
  /// selection metric's figure when repeated).
  void print_table(const json::object& doc, const std::filesystem::path& file) const {
    std::cout << "dyno " << protocol_ << " · campaign " << id_ << " · "
              << std::string(doc.at("status").as_string()) << " · selection: median of " << repeat_
              << " by " << metric_ << "\n";
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
          const auto& med = sp->as_object().at("median");
          if (!med.is_null()) text = fmt(med.to_number<double>(), 2);
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

  const RunOptions& o_;
  std::string protocol_;
  int version_;
  json::object params_;
  std::uint32_t repeat_;
  std::string metric_;
  bool user_selected_;
  Figures figures_;
  std::chrono::system_clock::time_point started_;
  std::string id_;
  std::vector<CellResult> cells_;
  bool stopped_ = false;
  bool crashed_ = false;
  bool failed_ = false;
};

/// A closed-loop cell spec over `requests`.
CellSpec closed_cell(std::vector<workload::Request> requests, std::string source,
                     std::uint32_t concurrency, std::uint64_t count, const RunOptions& o) {
  CellSpec spec;
  spec.requests = std::move(requests);
  spec.stream_source = std::move(source);
  spec.load.concurrency = concurrency;
  spec.load.requests = count;
  spec.load.keep_event_times = !o.no_chunk_times;
  spec.load.keep_output_text = o.keep_outputs;
  spec.load_text = "closed loop, concurrency " + std::to_string(concurrency) + ", " +
                   std::to_string(count) + " requests";
  spec.sampling = json::object{{"temperature", o.temperature}};
  if (o.slo) {
    spec.slo = parse_slo(*o.slo);
    spec.slo_text = *o.slo;
  }
  return spec;
}

/// `count` synthetic requests of about `tokens` prompt tokens each, distinct per `salt`.
workload::RequestStream synthetic(const RunOptions& o, workload::Api api, std::uint64_t count,
                                  std::int64_t tokens, std::int64_t output_tokens,
                                  std::uint64_t salt) {
  workload::SyntheticOptions syn;
  syn.api = api;
  syn.count = count;
  syn.input_tokens = std::max<std::int64_t>(1, tokens);
  syn.output_tokens = output_tokens;
  syn.seed = o.seed * 1'000'003ull + salt;
  workload::RequestStream s = workload::make_synthetic_stream(syn);
  for (auto& r : s.requests) r.sampling.temperature = o.temperature;
  return s;
}

std::uint64_t salt_of(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

int sweep_command(const RunOptions& o, const SweepOptions& s) {
  validate_common(o);
  const workload::Api api = parse_api(o.api);
  if (s.per_slot == 0) throw UsageError("--per-slot must be at least 1");
  const bool open = s.rates.has_value();
  const std::vector<double> levels =
      open ? parse_list(*s.rates, "--rates") : parse_list(s.concurrencies, "--concurrencies");
  std::uint64_t most = s.min_requests;
  for (double c : levels) most = std::max(most, static_cast<std::uint64_t>(c) * s.per_slot);
  const workload::RequestStream stream = build_stream(o, api, o.warmup + most);
  EngineSession engine(o, api);
  json::object params{{"levels", open ? "rates" : "concurrencies"},
                      {"min_requests", s.min_requests},
                      {"per_slot", s.per_slot},
                      {"warmup", o.warmup},
                      {"request_stream_sha256", stream.sha256}};
  json::array lv;
  for (double c : levels) lv.push_back(c);
  params["values"] = std::move(lv);
  if (open) params["rate_duration_s"] = s.rate_duration_s;
  Campaign campaign(o, "sweep", 1, params, s.rep, "output_tokens_per_s", [](const CellOutcome& c) {
    const auto& m = c.summary;
    return json::object{{"requests_ok", m.requests_ok},
                        {"achieved_concurrency", num(m.achieved_concurrency)},
                        {"output_tokens_per_s", num(m.output_tokens_per_s)},
                        {"requests_per_s", num(m.requests_per_s)},
                        {"ttft_p50_ms", num(m.ttft_ms.p50)},
                        {"ttft_p99_ms", num(m.ttft_ms.p99)},
                        {"tpot_p50_ms", num(m.tpot_ms.p50)},
                        {"e2e_p50_ms", num(m.e2e_ms.p50)},
                        {"error_rate", num(m.error_rate)}};
  });
  const auto& stop = install_stop_signals();
  for (double level : levels) {
    if (open) {
      if (!(level > 0)) throw UsageError("--rates: every rate must be > 0");
      CellSpec spec = closed_cell(stream.requests, stream.source, 1, 1, o);
      load::ScheduleSpec sched;
      sched.arrival = load::parse_arrival(o.arrival);
      sched.rate_per_s = level;
      sched.burstiness = o.burstiness;
      sched.seed = o.seed;
      spec.load.open_loop = true;
      spec.load.schedule = sched;
      spec.load.requests.reset();
      spec.load.duration_s = s.rate_duration_s;
      spec.load.warmup = o.warmup;
      spec.load_text = "open loop, " + number_text(level) + " req/s, " + o.arrival + ", " +
                       fmt(s.rate_duration_s, 1) + " s";
      campaign.run(engine, spec, "r" + number_text(level), json::object{{"rate_per_s", level}},
                   stop);
    } else {
      const auto c = static_cast<std::uint32_t>(level);
      if (c < 1 || static_cast<double>(c) != level) {
        throw UsageError("--concurrencies: '" + number_text(level) +
                         "' is not a whole number >= 1");
      }
      // The declared concurrency is held only if every slot sends several requests.
      const std::uint64_t count = std::max<std::uint64_t>(s.min_requests, s.per_slot * c);
      CellSpec spec = closed_cell(stream.requests, stream.source, c, count, o);
      spec.load.warmup = o.warmup;
      campaign.run(engine, spec, "c" + std::to_string(c),
                   json::object{{"concurrency", c}, {"requests", count}}, stop);
    }
  }
  return campaign.finish(engine);
}

int ladder_command(const RunOptions& o, const LadderOptions& l) {
  validate_common(o);
  const workload::Api api = parse_api(o.api);
  if (l.decode_tokens < 2) throw UsageError("--decode-tokens must be at least 2");
  const std::vector<double> depths = parse_list(l.depths, "--depths");
  const std::vector<double> sizes = l.prefill_sizes.empty()
                                        ? std::vector<double>{}
                                        : parse_list(l.prefill_sizes, "--prefill-sizes");
  EngineSession engine(o, api);
  std::optional<PromptCounter> counter;
  try {
    counter.emplace(engine, o.timeout_s.value_or(30.0));
    workload::Request probe;
    probe.id = "probe";
    if (api == workload::Api::kChat) {
      probe.messages = {{"user", "hello", {}}};
    } else {
      probe.prompt = "hello";
    }
    (*counter)(probe);
  } catch (const std::exception& e) {
    std::cerr << "dyno ladder: prompt lengths are approximate (about one token per word): "
              << e.what() << "\n";
    counter.reset();
  }
  json::array d;
  for (double x : depths) d.push_back(x);
  json::array p;
  for (double x : sizes) p.push_back(x);
  json::object params{{"depths", d},
                      {"prefill_sizes", p},
                      {"decode_tokens", l.decode_tokens},
                      {"prompt_lengths", counter ? "exact" : "approximate"}};
  if (counter) params["tokenizer"] = counter->flavor();
  Campaign campaign(o, "ladder", 1, params, l.rep, "decode_rate_p50", [](const CellOutcome& c) {
    const auto& m = c.summary;
    // Computed prompt tokens: what the engine had to prefill, when it reports cache reuse.
    std::optional<double> computed;
    bool any_cached = false;
    double input = 0, cached = 0;
    for (const auto& t : c.traces) {
      if (!t.measured() || !t.ok()) continue;
      input += static_cast<double>(t.input_tokens.value_or(0));
      if (t.cached_input_tokens) {
        any_cached = true;
        cached += static_cast<double>(*t.cached_input_tokens);
      }
    }
    if (any_cached) computed = input - cached;
    return json::object{{"input_tokens", num(m.input_tokens.p50)},
                        {"computed_prompt_tokens", num(computed)},
                        {"ttft_ms", num(m.ttft_ms.p50)},
                        {"prefill_tok_s", num(m.prefill_rate_client.p50)},
                        {"decode_tok_s", num(m.decode_rate_per_user.p50)}};
  });
  const auto& stop = install_stop_signals();
  // A repetition sends a prompt no earlier request sent, so a prefix cache cannot answer it.
  // Prompt lengths are exact (through the engine's /tokenize) when the engine has one.
  std::uint64_t salt = 0;
  const auto cell_for = [&](std::int64_t tokens, std::int64_t max_tokens) {
    return [&o, &counter, api, tokens, max_tokens, &salt](std::uint32_t) {
      workload::RequestStream stream;
      ++salt;
      if (counter && tokens > 0) {
        workload::ExactOptions eo;
        eo.api = api;
        eo.count = 1;
        eo.input_tokens = tokens;
        eo.output_tokens = max_tokens;
        eo.seed = o.seed * 1'000'003ull + salt;
        stream = workload::make_exact_stream(
            eo, [&counter](const workload::Request& r) { return (*counter)(r); });
      } else {
        stream = synthetic(o, api, 1, tokens, max_tokens, salt);
      }
      for (auto& r : stream.requests) r.sampling.temperature = o.temperature;
      CellSpec spec = closed_cell(stream.requests, stream.source, 1, 1, o);
      spec.sampling["max_tokens"] = max_tokens;
      if (max_tokens > 1) spec.sampling["ignore_eos"] = true;
      return spec;
    };
  };
  for (double depth : depths) {
    const auto tokens = static_cast<std::int64_t>(depth);
    campaign.run(engine, cell_for(tokens, l.decode_tokens), "decode@" + std::to_string(tokens),
                 json::object{{"kind", "decode"}, {"target_tokens", tokens}}, stop);
  }
  for (double size : sizes) {
    const auto tokens = static_cast<std::int64_t>(size);
    campaign.run(engine, cell_for(tokens, 1), "prefill@" + std::to_string(tokens),
                 json::object{{"kind", "prefill"}, {"target_tokens", tokens}}, stop,
                 "prefill_rate_p50");
  }
  return campaign.finish(engine);
}

int speed_command(const RunOptions& o, const SpeedOptions& sp) {
  validate_common(o);
  const workload::Api api = parse_api(o.api);
  if (sp.concurrency < 1) throw UsageError("--burst must be at least 1");
  const std::vector<std::string> passes = parse_names(sp.passes, "--passes");
  // Prompts of each pass: stream requests tagged pass=<name>; a pass "fr2" with no requests of
  // its own repeats pass "fr" (the session's drift). Without --stream: synthetic prompts
  // seeded by the pass's base name.
  std::optional<workload::RequestStream> file;
  if (o.stream_file) file = build_stream(o, api, 0);
  const auto base_name = [](const std::string& pass) {
    std::string b = pass;
    while (!b.empty() && std::isdigit(static_cast<unsigned char>(b.back()))) b.pop_back();
    return b.empty() ? pass : b;
  };
  std::map<std::string, std::vector<workload::Request>> prompts;
  for (const auto& pass : passes) {
    std::vector<workload::Request> reqs;
    if (file) {
      for (const auto& r : file->requests) {
        const auto it = r.tags.find("pass");
        if (it != r.tags.end() && it->second == pass) reqs.push_back(r);
      }
      if (reqs.empty()) {
        for (const auto& r : file->requests) {
          const auto it = r.tags.find("pass");
          if (it != r.tags.end() && it->second == base_name(pass)) reqs.push_back(r);
        }
      }
      if (reqs.empty()) {
        throw UsageError("--passes: no request of " + *o.stream_file + " is tagged pass=" + pass +
                         " (or pass=" + base_name(pass) + ")");
      }
    } else {
      reqs = synthetic(o, api, sp.concurrency, o.input_tokens, o.output_tokens,
                       salt_of(base_name(pass)))
                 .requests;
    }
    prompts[pass] = std::move(reqs);
  }
  EngineSession engine(o, api);
  json::array pl;
  for (const auto& p : passes) pl.push_back(json::value(p));
  json::object params{{"passes", pl}, {"burst", sp.concurrency}, {"warmup_requests", 1}};
  Campaign campaign(o, "speed", 1, params, sp.rep, "output_tokens_per_s", [](const CellOutcome& c) {
    const auto& m = c.summary;
    if (m.requests_total <= 1) {  // solo: one streamed request
      std::optional<double> tok_s;
      if (m.e2e_ms.p50 && m.output_tokens.p50 && *m.e2e_ms.p50 > 0) {
        tok_s = *m.output_tokens.p50 / (*m.e2e_ms.p50 / 1000.0);
      }
      return json::object{
          {"ttft_ms", num(m.ttft_ms.p50)},
          {"tok_s", num(tok_s)},
          {"wall_s",
           num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0) : std::nullopt)},
          {"output_tokens", m.output_tokens_total},
          {"ok", m.requests_ok}};
    }
    return json::object{
        {"tok_s", num(m.output_tokens_per_s)},
        {"wall_s", num(m.service_window_s)},
        {"p50_latency_s",
         num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0) : std::nullopt)},
        {"output_tokens", m.output_tokens_total},
        {"ok", m.requests_ok}};
  });
  const auto& stop = install_stop_signals();
  bool first = true;
  for (const auto& pass : passes) {
    const auto& reqs = prompts[pass];
    // Solo: one streamed request; the session's one discarded warm-up goes before the first.
    std::vector<workload::Request> solo_reqs;
    std::uint64_t warmup = 0;
    if (first) {
      workload::Request w = reqs.front();
      w.id += "#warmup";
      w.sampling.max_tokens = 8;
      solo_reqs.push_back(std::move(w));
      warmup = 1;
    }
    solo_reqs.push_back(reqs.front());
    CellSpec solo = closed_cell(solo_reqs, "pass:" + pass, 1, 1, o);
    solo.load.warmup = warmup;
    campaign.run(engine, solo, pass + "/solo", json::object{{"pass", pass}, {"part", "solo"}},
                 stop);
    first = false;
    std::vector<workload::Request> burst;
    for (std::uint32_t i = 0; i < sp.concurrency; ++i) burst.push_back(reqs[i % reqs.size()]);
    CellSpec agg = closed_cell(burst, "pass:" + pass, sp.concurrency, sp.concurrency, o);
    campaign.run(
        engine, agg, pass + "/agg",
        json::object{{"pass", pass}, {"part", "aggregate"}, {"concurrency", sp.concurrency}}, stop);
  }
  return campaign.finish(engine);
}

int real_command(const RunOptions& o, const RealOptions& re) {
  validate_common(o);
  const workload::Api api = parse_api(o.api);
  if (!o.stream_file) {
    throw UsageError(
        "real needs --stream FILE: a prompt set whose requests are tagged case=<name>");
  }
  const workload::RequestStream stream = build_stream(o, api, 0);
  std::vector<std::string> order;
  std::map<std::string, std::vector<workload::Request>> cases;
  for (const auto& r : stream.requests) {
    const auto it = r.tags.find("case");
    const std::string name = it != r.tags.end() ? it->second : r.id;
    if (cases.find(name) == cases.end()) order.push_back(name);
    cases[name].push_back(r);
  }
  EngineSession engine(o, api);
  json::object params{{"cases", order.size()}, {"request_stream_sha256", stream.sha256}};
  Campaign campaign(o, "real", 1, params, re.rep, "decode_rate_p50", [](const CellOutcome& c) {
    const auto& m = c.summary;
    return json::object{{"input_tokens", num(m.input_tokens.p50)},
                        {"output_tokens", num(m.output_tokens.p50)},
                        {"ttft_ms", num(m.ttft_ms.p50)},
                        {"decode_tok_s", num(m.decode_rate_per_user.p50)},
                        {"e2e_s", num(m.e2e_ms.p50 ? std::optional<double>(*m.e2e_ms.p50 / 1000.0)
                                                   : std::nullopt)}};
  });
  const auto& stop = install_stop_signals();
  for (const auto& name : order) {
    const auto& reqs = cases[name];
    CellSpec spec = closed_cell(reqs, stream.source, 1, reqs.size(), o);
    campaign.run(engine, spec, name, json::object{{"case", name}, {"requests", reqs.size()}}, stop);
  }
  return campaign.finish(engine);
}

}  // namespace dyno::app
