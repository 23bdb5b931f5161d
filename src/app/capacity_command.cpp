#include "app/capacity_command.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "app/cell_report.h"
#include "app/console.h"
#include "app/exit_codes.h"
#include "app/flag_values.h"
#include "app/protocols.h"
#include "app/runs_command.h"
#include "app/signals.h"
#include "engine_session/host_identity.h"
#include "engine_session/run_limits.h"
#include "engine_session/stream.h"
#include "load/plan.h"
#include "load/schedule.h"
#include "metrics/cost.h"
#include "protocol/campaign.h"
#include "protocol/campaign_check.h"
#include "protocol/capacity.h"
#include "record/campaign_file.h"
#include "record/record_json.h"
#include "record/run_record.h"
#include "record/run_verify.h"
#include "report/capacity_charts.h"
#include "scrub/terminal_text.h"
#include "sim/profile.h"
#include "sim/replay.h"

namespace dyno::app {

namespace json = boost::json;

namespace {

using flags::number_text;

/// The per-request bounds the probes' records count as goodput (`--slo` of each cell), in the
/// goodput grammar (load::parse_slo): the objectives' limits.
std::string goodput_text(const protocol::CapacitySlo& slo) {
  const metrics::Slo g = protocol::goodput_slo(slo);
  std::string out;
  const auto add = [&](const char* key, const std::optional<double>& v) {
    if (!v) return;
    out += (out.empty() ? "" : ",") + std::string(key) + "=" + number_text(*v * 1000.0) + "ms";
  };
  add("ttft", g.ttft_s);
  add("tpot", g.tpot_s);
  add("e2e", g.e2e_s);
  return out;
}

/// The search's bounds from the flags, checked (exit 2 naming the flag).
protocol::SearchOptions search_options(const CapacityOptions& c) {
  protocol::SearchOptions s;
  const bool rate = c.by == "rate";
  s.integer = !rate;
  s.min = c.min.value_or(rate ? 0.5 : 1.0);
  s.max = c.max.value_or(rate ? 64.0 : 256.0);
  s.repeat_boundary = c.repeat_boundary;
  if (!rate) {
    for (const auto& [flag, v] : {std::pair{"--min", s.min}, std::pair{"--max", s.max}}) {
      if (v != std::floor(v) || v < 1 || v > flags::kMaxConcurrency) {
        throw UsageError(std::string(flag) + " " + number_text(v) +
                         ": a concurrency is a whole number from 1 to " +
                         std::to_string(flags::kMaxConcurrency));
      }
    }
  } else {
    for (const auto& [flag, v] : {std::pair{"--min", s.min}, std::pair{"--max", s.max}}) {
      if (!(v >= flags::kMinRate && v <= flags::kMaxRate)) {
        throw UsageError(std::string(flag) + " " + number_text(v) + ": a rate is from " +
                         number_text(flags::kMinRate) + " to " + number_text(flags::kMaxRate) +
                         " req/s");
      }
    }
  }
  if (s.min > s.max) {
    throw UsageError("--min " + number_text(s.min) + " is above --max " + number_text(s.max));
  }
  if (c.resolution) {
    std::string text = *c.resolution;
    s.relative = !text.empty() && text.back() == '%';
    if (s.relative) text.pop_back();
    try {
      s.resolution = flags::parse_number(text, 0, s.relative ? 100.0 : flags::kMaxRate, true);
    } catch (const flags::FlagValueError& e) {
      throw UsageError("--resolution " + *c.resolution + ": " + e.what() +
                       "; give a number in the unit (2) or a share of the capacity (10%)");
    }
    if (s.relative) s.resolution /= 100.0;
  } else {
    s.relative = rate;
    s.resolution = rate ? 0.1 : 1.0;
  }
  if (!(c.confidence > 0.5 && c.confidence < 1.0)) {
    throw UsageError("--confidence " + number_text(c.confidence) +
                     ": give a level between 0.5 and 1, e.g. 0.95");
  }
  return s;
}

/// The capacity the profile predicts: the same search over cells played through the model
/// (sim/replay.h) with the synthetic stream's lengths, judged by the same objectives.
double predicted_capacity(const sim::Profile& profile, const protocol::CapacityParams& p,
                          const CapacityOptions& c, const RunOptions& o) {
  protocol::SearchOptions s = p.search;
  s.repeat_boundary = 1;  // the model is deterministic
  s.start.reset();
  std::map<double, protocol::LevelState> levels;
  for (std::size_t guard = 0; guard < 200; ++guard) {
    const protocol::Step step = protocol::search_step(s, levels);
    if (!step.next) break;
    const double level = *step.next;
    sim::CellSpec cell;
    std::uint64_t n = 0;
    if (p.by == "rate") {
      n = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(level * c.rate_duration_s));
      load::ScheduleSpec spec;
      spec.arrival = load::parse_arrival(o.load.arrival);
      spec.rate_per_s = level;
      spec.burstiness = o.load.burstiness;
      spec.seed = o.load.seed;
      for (const std::int64_t ns : load::make_schedule(spec, n, std::nullopt)) {
        cell.arrivals_s.push_back(static_cast<double>(ns) * 1e-9);
      }
    } else {
      cell.concurrency = static_cast<std::uint32_t>(level);
      n = std::max<std::uint64_t>(c.min_requests, c.per_slot * static_cast<std::uint64_t>(level));
    }
    cell.requests.assign(n, sim::CellRequest{o.stream.input_tokens, 0, o.stream.output_tokens});
    const std::vector<metrics::Trace> traces = sim::replay_cell(profile, cell);
    std::vector<const metrics::Trace*> ptrs;
    for (const auto& t : traces) ptrs.push_back(&t);
    const protocol::Judgement j = protocol::judge(p.slo, ptrs);
    levels[level] = protocol::level_state({j}, j, 1);
  }
  const protocol::Answer a = protocol::search_step(s, levels).answer;
  return a.capacity.value_or(0.0);
}

/// The campaign a --resume names, read and verified: its document and the records it pins.
struct Resumed {
  json::object doc;
  std::map<std::string, record::RunRecord> records;
};

/// `--resume auto`: the newest capacity campaign under the runs root that has not finished
/// and whose runs carry this command's label (what a batch script resubmitted by `dyno
/// campaign resume` gives); nullopt when there is none.
std::optional<std::string> unfinished_campaign(const RunOptions& o) {
  const std::filesystem::path root(o.record.runs_root);
  const std::string label = o.record.label.empty() ? "capacity" : o.record.label;
  std::optional<std::string> found;
  for (const std::string& id : record::campaign_ids(root)) {  // sorted: the newest last
    try {
      std::ifstream in(record::campaigns_dir(root) / (id + ".json"), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      const json::object doc = json::parse(text).as_object();
      if (doc.at("protocol").at("name") != "capacity" || doc.at("status") == "ok") continue;
      bool mine = false;
      for (const auto& cell : doc.at("cells").as_array()) {
        for (const auto& run : cell.at("runs").as_array()) {
          const std::string run_id(run.at("run_id").as_string());
          mine = mine || (run_id.size() > label.size() &&
                          run_id.compare(run_id.size() - label.size() - 1, std::string::npos,
                                         "-" + label) == 0);
        }
      }
      if (mine) found = id;
    } catch (const std::exception&) {
      continue;  // not a campaign this command can take up
    }
  }
  return found;
}

Resumed read_resumed(const RunOptions& o, const std::string& id) {
  const std::filesystem::path root(o.record.runs_root);
  const auto file = record::find_campaign_file(root, id);
  if (!file) {
    throw UsageError("--resume " + terminal_text(id, true) + ": no campaign of that id under " +
                     root.string() + "/campaigns");
  }
  const record::VerifyReport report = record::verify_campaign_file(*file);
  if (!report.ok()) {
    throw UsageError("--resume " + terminal_text(id, true) + ": " + file->string() +
                     " does not verify (dyno runs verify " + id + " says why)");
  }
  Resumed r;
  std::string text;
  {
    std::ifstream in(*file, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  r.doc = json::parse(text).as_object();
  for (const auto& cell : r.doc.at("cells").as_array()) {
    for (const auto& run : cell.at("runs").as_array()) {
      const std::string run_id(run.at("run_id").as_string());
      r.records.emplace(run_id, record::read_run(root / run_id));
    }
  }
  return r;
}

/// The probes of the campaign so far, in the order their cells first ran.
std::vector<protocol::Probe> probes_of(const protocol::ProtocolCampaign& campaign,
                                       const std::map<std::string, double>& level_of_cell) {
  std::vector<protocol::Probe> probes;
  for (const auto& [name, reps] : campaign.results()) {
    probes.push_back(protocol::probe_of(name, level_of_cell.at(name), *reps));
  }
  return probes;
}

/// The boundary's findings in words: each one that says yes, else (none did) each unknown
/// one with what its record lacks, else that none of the causes looked for showed.
std::vector<std::string> why_lines(const json::object& capacity) {
  const json::value* d = capacity.if_contains("diagnosis");
  if (d == nullptr || !d->is_object()) return {};
  const json::value* findings = d->get_object().if_contains("findings");
  if (findings == nullptr || !findings->is_array()) return {};
  std::vector<std::string> yes, unknown;
  for (const json::value& f : findings->get_array()) {
    if (!f.is_object()) continue;
    const json::object& o = f.get_object();
    const std::string line =
        std::string(o.at("name").as_string()) + ": " + std::string(o.at("summary").as_string());
    if (o.at("verdict") == "yes") yes.push_back(line);
    if (o.at("verdict") == "unknown") unknown.push_back("unknown — " + line);
  }
  if (!yes.empty()) return yes;
  if (!unknown.empty()) return unknown;
  return {
      "none of the causes looked for (queue, KV cache, prefill interrupting decode, the "
      "client, the network) shows in the record"};
}

/// The capacity charts (report/capacity_charts.h) as <stem>.svg and <stem>.png in
/// <campaign file's stem>-charts/ beside the campaign file; returns that directory.
std::filesystem::path write_charts(const json::object& capacity,
                                   const std::filesystem::path& file) {
  const std::filesystem::path dir = file.parent_path() / (file.stem().string() + "-charts");
  std::filesystem::create_directories(dir);
  for (const report::Figure& f : report::capacity_charts(capacity)) {
    for (const auto& [ext, bytes] : {std::pair{".svg", &f.svg}, std::pair{".png", &f.png}}) {
      const std::filesystem::path path = dir / (f.stem + ext);
      std::ofstream out(path, std::ios::binary);
      out << *bytes;
      if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
    }
  }
  return dir;
}

void print_probes(const json::object& capacity, const std::filesystem::path& file) {
  const std::string unit(capacity.at("unit").as_string());
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {unit == "users" ? "users" : "req/s", "runs", "verdict"};
  for (const auto& ob : capacity.at("slo").at("objectives").as_array()) {
    header.push_back(std::string(ob.at("name").as_string()));
  }
  rows.push_back(header);
  json::array probes = capacity.at("probes").as_array();
  std::sort(probes.begin(), probes.end(), [](const json::value& a, const json::value& b) {
    return a.at("level").to_number<double>() < b.at("level").to_number<double>();
  });
  for (const auto& pv : probes) {
    const json::object& probe = pv.as_object();
    std::vector<std::string> row = {number_text(probe.at("level").to_number<double>()),
                                    std::to_string(probe.at("repetitions").as_array().size())};
    std::string verdict(probe.at("verdict").as_string());
    if (probe.at("decided_by") == "point estimate") {
      verdict = std::string(probe.at("holds").as_bool() ? "holds" : "fails") + " (point estimate)";
    }
    row.push_back(verdict);
    for (const auto& cv : probe.at("objectives").as_array()) {
      const json::object& ch = cv.as_object();
      const bool fraction = ch.at("name") == "errors";
      const auto text = [&](const char* key) -> std::string {
        const json::value& v = ch.at(key);
        if (v.is_null()) return "n/a";
        return fraction ? fmt(v.to_number<double>() * 100.0, 1) + "%"
                        : fmt(v.to_number<double>() * 1000.0, 1);
      };
      row.push_back(text("value") + " [" + text("low") + ", " + text("high") + "]" +
                    (ch.at("verdict") == "holds"   ? ""
                     : ch.at("verdict") == "fails" ? " ✗"
                                                   : " ?"));
    }
    rows.push_back(row);
  }
  std::cout << render_table(rows, "  ");
  std::cout << "  (latencies in ms: the pooled percentile [its "
            << number_text(capacity.at("slo").at("confidence").to_number<double>() * 100)
            << " % bounds]; ✗ fails, ? unclear)\n";
  std::cout << "campaign file " << file.string() << "\n";
}

}  // namespace

int capacity_command(const RunOptions& options, const CapacityOptions& c, CapacityResult* result) {
  if (c.by != "concurrency" && c.by != "rate") {
    throw UsageError("--by " + terminal_text(c.by, true) + ": use concurrency or rate");
  }
  if (!options.load.slo) {
    throw UsageError("capacity needs --slo, e.g. --slo ttft_p90=500ms,tpot_p90=50ms,errors=1%");
  }
  protocol::CapacityParams p;
  p.by = c.by;
  p.slo = protocol::parse_capacity_slo(*options.load.slo, c.confidence);
  p.search = search_options(c);
  p.gpu_hour_cost = c.gpu_hour_cost;
  if (c.gpu_hour_cost && !(std::isfinite(*c.gpu_hour_cost) && *c.gpu_hour_cost >= 0)) {
    throw UsageError("--gpu-hour-cost: give dollars per GPU-hour, a number >= 0");
  }
  RunOptions o = options;
  o.load.slo = goodput_text(p.slo);  // each probe's record counts its goodput by the same limits
  if (o.load.rate || o.load.concurrency) {
    throw UsageError(c.by == "rate" ? "--rate: the search sets each probe's rate (give --min/--max)"
                                    : "-c/--concurrency: the search sets each probe's concurrency "
                                      "(give --min/--max)");
  }
  const protocol::Shared shared = shared_flags(o, c.declared);
  std::optional<sim::Profile> profile;
  if (c.predict_with) {
    if (o.stream.file) {
      throw UsageError(
          "--predict-with: the prediction plays the synthetic stream's lengths "
          "(--input-tokens, --output-tokens); give no --stream with it");
    }
    profile = about("--predict-with", [&] { return sim::resolve_profile(*c.predict_with); });
  }
  protocol::SweepOptions sweep;
  sweep.min_requests = c.min_requests;
  sweep.per_slot = c.per_slot;
  sweep.rate_duration_s = c.rate_duration_s;
  if (c.by == "rate") sweep.rates = "capacity";
  // Every level the search may probe is planned within the flags' limits before anything runs.
  (void)load::plan(o.load, protocol::sweep_cell_load(sweep, p.search.max));
  if (c.by == "rate") {
    engine_session::warn_open_loop_descriptors(p.search.max, o.target);
  } else {
    engine_session::check_descriptors(static_cast<std::uint64_t>(p.search.max),
                                      "--max " + number_text(p.search.max), o.target);
  }
  const workload::RequestStream stream =
      engine_session::build_stream(o.stream, shared.api, o.load.seed,
                                   o.load.warmup + protocol::sweep_requests(sweep, {p.search.max}));

  std::optional<Resumed> resumed;
  std::optional<std::string> resume = c.resume;
  if (resume && *resume == "auto") {
    resume = unfinished_campaign(o);
    if (!resume)
      std::cerr << "dyno capacity: no unfinished capacity campaign to resume; starting one\n";
  }
  if (resume) resumed = read_resumed(o, *resume);

  engine_session::EngineSession engine = make_engine(o, shared.api);
  p.gpus =
      metrics::normalising_gpus(engine_session::hardware_identity(engine.monitor()).gpus.size());
  if (profile) {
    p.predicted = predicted_capacity(*profile, p, c, o);
    p.predicted_with = *c.predict_with;
    if (*p.predicted > 0) p.search.start = std::clamp(*p.predicted, p.search.min, p.search.max);
  }

  protocol::ProtocolPlan plan;
  plan.name = "capacity";
  plan.version = 1;
  plan.search = true;
  plan.rep.repeat = p.search.repeat_boundary;
  plan.primary = "output_tokens_per_s";
  plan.figures = protocol::protocol_figures("capacity");
  plan.params = protocol::params_json(p);
  plan.params["min_requests"] = c.min_requests;
  plan.params["per_slot"] = c.per_slot;
  plan.params["rate_duration_s"] = c.rate_duration_s;
  plan.params["warmup"] = o.load.warmup;
  plan.params["request_stream_sha256"] = stream.sha256;

  std::map<std::string, double> level_of_cell;
  std::map<double, protocol::CellPlan> cell_plans;
  const auto cell_at = [&](double level) -> const protocol::CellPlan& {
    auto it = cell_plans.find(level);
    if (it == cell_plans.end()) {
      protocol::ProtocolPlan one = protocol::plan_sweep(sweep, {level}, shared, stream);
      it = cell_plans.emplace(level, std::move(one.cells.front())).first;
      level_of_cell[it->second.name] = level;
    }
    return it->second;
  };

  std::optional<protocol::ProtocolCampaign> campaign;
  if (resumed) {
    // The same search or none: every parameter as the campaign file says.
    const json::object& was = resumed->doc.at("protocol").at("params").as_object();
    json::object now = plan.params;
    for (const char* key : {"predicted", "predicted_with"})
      now[key] = was.contains(key) ? was.at(key) : nullptr;
    if (resumed->doc.at("protocol").at("name") != "capacity") {
      throw UsageError("--resume " + *resume + ": not a capacity campaign");
    }
    for (const auto& kv : now) {
      const json::value* before = was.if_contains(kv.key());
      if (kv.key() == "search") {  // a prediction's start is the campaign's own
        json::object a = kv.value().as_object(), b = before != nullptr && before->is_object()
                                                         ? before->as_object()
                                                         : json::object{};
        a["start"] = b.contains("start") ? b["start"] : json::value(nullptr);
        if (a != b) {
          throw UsageError("--resume " + *resume +
                           ": the campaign searched with other --min/--max/--resolution/"
                           "--repeat-boundary; give the same flags");
        }
        continue;
      }
      if (before == nullptr || *before != kv.value()) {
        throw UsageError("--resume " + *resume + ": the campaign's " + std::string(kv.key()) +
                         " differs from this command's; give the flags it ran with");
      }
    }
    plan.params = was;
    p = protocol::params_from_json(was);
    std::tm tm{};
    const std::string started(resumed->doc.at("started_at").as_string());
    std::istringstream in(started);
    in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
    campaign.emplace(
        plan, o.record.label, c.declared,
        protocol::ProtocolCampaign::Resumed{std::string(resumed->doc.at("campaign_id").as_string()),
                                            std::chrono::system_clock::from_time_t(timegm(&tm))});
    std::size_t adopted = 0;
    for (const auto& cv : resumed->doc.at("cells").as_array()) {
      const auto level = protocol::level_of(cv.at("params").as_object());
      if (!level) continue;
      const protocol::CellPlan& cell = cell_at(*level);
      for (const auto& run : cv.at("runs").as_array()) {
        engine_session::CellOutcome out =
            protocol::outcome_of(resumed->records.at(std::string(run.at("run_id").as_string())));
        if (out.status == "interrupted") continue;  // run again
        campaign->adopt(cell, std::move(out));
        ++adopted;
      }
    }
    std::cerr << "dyno capacity: resuming campaign " << campaign->id() << " with " << adopted
              << " finished probe run(s)\n";
  } else {
    campaign.emplace(plan, o.record.label, c.declared);
  }

  const std::atomic<bool>& stop = install_stop_signals();
  std::set<metrics::WarningCode> shown;
  const auto runner = [&](const engine_session::CellSpec& spec) {
    return run_and_show(engine, spec, o, stop, /*print_summary=*/false, &shown);
  };
  const auto say = [](const std::string& line) { std::cerr << line << "\n"; };
  // The boundary diagnosed from its record as written (what `runs verify` reads again), each
  // run read once: the boundary often stays on one run while the search goes on.
  std::map<std::string, json::value> diagnosed;
  const protocol::DiagnoseRun diagnose = [&diagnosed](const engine_session::CellOutcome& out) {
    auto it = diagnosed.find(out.run_id);
    if (it == diagnosed.end()) {
      it = diagnosed
               .emplace(out.run_id, protocol::boundary_findings(record::read_run(
                                        out.dir, {.requests = true, .integrity = false})))
               .first;
    }
    return it->second;
  };
  const auto document = [&](bool running) {
    json::object doc = campaign_document(*campaign, engine);
    doc["capacity"] = protocol::capacity_json(p, probes_of(*campaign, level_of_cell), diagnose);
    if (running) doc["status"] = "running";
    return doc;
  };
  std::filesystem::path file;
  while (!campaign->stopped()) {
    const protocol::Step step = protocol::next_step(p, probes_of(*campaign, level_of_cell));
    if (!step.next) break;
    campaign->run_repetition(cell_at(*step.next), runner, say);
    // After every run: a killed command leaves a campaign file --resume takes up.
    json::object progress = document(!campaign->stopped());
    file = write_campaign_file(progress, o, engine, campaign->id());
  }
  json::object doc = document(false);
  file = write_campaign_file(doc, o, engine, campaign->id());
  const json::object& capacity = doc.at("capacity").as_object();
  const std::string sentence(capacity.at("answer").at("sentence").as_string());
  const std::vector<std::string> why = why_lines(capacity);
  const std::filesystem::path charts = write_charts(capacity, file);
  if (!c.print) {
    // dyno quick answers in its own words.
  } else if (o.console.json) {
    doc["campaign_file"] = file.string();
    doc["charts_dir"] = charts.string();
    std::cout << record::pretty_json(doc);
  } else {
    std::cout << "dyno capacity · campaign " << campaign->id() << " · "
              << std::string(doc.at("status").as_string()) << " · by " << c.by << " · "
              << p.slo.text << "\n";
    print_probes(capacity, file);
    std::cout << "charts " << charts.string() << "\n";
    std::cout << sentence << "\n";
    if (!why.empty()) {
      const json::object& d = capacity.at("diagnosis").as_object();
      std::cout << "why, from " << std::string(d.at("cell").as_string()) << " (run "
                << std::string(d.at("run_id").as_string())
                << "; dyno runs diagnose shows the evidence):\n";
      for (const std::string& line : why) std::cout << "  " << terminal_text(line) << "\n";
    }
  }
  if (result != nullptr) {
    result->campaign_file = file;
    result->status = std::string(doc.at("status").as_string());
    result->answer_status = std::string(capacity.at("answer").at("status").as_string());
    const json::value& cap = capacity.at("answer").at("capacity");
    if (cap.is_number()) result->capacity = cap.to_number<double>();
    result->unit = std::string(capacity.at("unit").as_string());
    result->sentence = sentence;
    result->why = why;
    result->charts_dir = charts;
  }
  return campaign_exit_code(campaign->status());
}

}  // namespace dyno::app
