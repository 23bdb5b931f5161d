// The capacity search (protocol/capacity.h), one piece though long: the objectives' verdicts
// (judge), the search's steps over load levels (search_step, answer_of) and the campaign file's
// `capacity` member (capacity_json, params_json and back) all read the same LevelState and
// Judgement, so that the search, the file and `runs verify`'s recompute cannot disagree. The
// percentile bounds are metrics/quantile_bound.h's, the cost metrics/cost.h's.
#include "protocol/capacity.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "diagnose/diagnose.h"
#include "error/error.h"
#include "load/flag_numbers.h"
#include "load/plan.h"
#include "metrics/cost.h"
#include "metrics/quantile_bound.h"
#include "record/record_json.h"

namespace dyno::protocol {

namespace json = boost::json;

namespace {

json::value num(std::optional<double> v) { return record::number_or_null(v); }

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

/// A latency objective's figure of one request, seconds; nullopt when the request has none.
std::optional<double> figure_of(const metrics::RequestFigures& f, const std::string& figure) {
  if (figure == "ttft") return f.ttft_s;
  if (figure == "tpot") return f.tpot_s;
  if (figure == "e2e") return f.e2e_s;
  return std::nullopt;
}

/// Three significant digits: the rate levels a search proposes stay readable (r2.38).
double three_digits(double v) {
  if (!(v > 0)) return v;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

}  // namespace

CapacitySlo parse_capacity_slo(const std::string& text, double confidence) {
  CapacitySlo slo;
  slo.text = text;
  slo.confidence = confidence;
  std::stringstream ss(text);
  std::string item;
  const std::string example = "; write e.g. --slo ttft_p90=500ms,tpot_p90=50ms,errors=1%";
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw UsageError("--slo: '" + item + "' has no '='" + example);
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (std::any_of(slo.objectives.begin(), slo.objectives.end(),
                    [&](const Objective& o) { return o.name == key; })) {
      throw UsageError("--slo: '" + key + "' is given twice");
    }
    Objective o;
    o.name = key;
    if (key == "errors") {
      o.figure = "errors";
      std::string number = value;
      double scale = 1.0;
      if (!number.empty() && number.back() == '%') {
        number.pop_back();
        scale = 0.01;
      }
      try {
        o.limit = load::parse_number(number, 0, scale == 1.0 ? 1.0 : 100.0, false, true) * scale;
      } catch (const load::FlagValueError& e) {
        throw UsageError("--slo: errors=" + value + ": " + e.what() +
                         "; write a percentage (errors=1%) or a fraction below 1 (errors=0.01)");
      }
    } else {
      const auto under = key.rfind("_p");
      const std::string figure = under == std::string::npos ? key : key.substr(0, under);
      if (under == std::string::npos || (figure != "ttft" && figure != "tpot" && figure != "e2e")) {
        throw UsageError("--slo: unknown objective '" + key +
                         "'; use ttft_pN, tpot_pN, e2e_pN (N a percentile, e.g. p90) or errors" +
                         example);
      }
      double q = 0;
      try {
        q = load::parse_number(key.substr(under + 2), 0, 100, true, true);
      } catch (const load::FlagValueError& e) {
        throw UsageError("--slo: '" + key + "': the percentile " + e.what() +
                         "; give one between 0 and 100, e.g. " + figure + "_p90");
      }
      o.figure = figure;
      o.quantile = q / 100.0;
      o.limit = load::slo_seconds(value, key);
    }
    slo.objectives.push_back(o);
  }
  if (std::none_of(slo.objectives.begin(), slo.objectives.end(),
                   [](const Objective& o) { return o.quantile.has_value(); })) {
    throw UsageError("--slo: give at least one latency objective (ttft_pN, tpot_pN or e2e_pN)" +
                     example);
  }
  return slo;
}

metrics::Slo goodput_slo(const CapacitySlo& slo) {
  metrics::Slo out;
  for (const Objective& o : slo.objectives) {
    std::optional<double>* bound = o.figure == "ttft"   ? &out.ttft_s
                                   : o.figure == "tpot" ? &out.tpot_s
                                   : o.figure == "e2e"  ? &out.e2e_s
                                                        : nullptr;
    if (bound != nullptr) *bound = bound->has_value() ? std::min(**bound, o.limit) : o.limit;
  }
  return out;
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::kHolds:
      return "holds";
    case Verdict::kFails:
      return "fails";
    case Verdict::kUnclear:
      break;
  }
  return "unclear";
}

Judgement judge(const CapacitySlo& slo, const std::vector<const metrics::Trace*>& traces) {
  Judgement j;
  std::vector<metrics::RequestFigures> ok;
  std::uint64_t failed = 0;
  for (const metrics::Trace* t : traces) {
    if (!t->measured() || t->status == metrics::RequestStatus::kCancelled) continue;
    if (t->ok()) {
      ok.push_back(metrics::request_figures(*t));
    } else {
      ++failed;
    }
  }
  bool all_hold = true, any_fails = false, points_hold = true;
  for (const Objective& o : slo.objectives) {
    ObjectiveCheck c;
    c.objective = o;
    if (o.quantile) {
      std::vector<double> values;
      for (const auto& f : ok) {
        if (const auto v = figure_of(f, o.figure)) values.push_back(*v);
      }
      const metrics::QuantileBound b = metrics::quantile_bound(values, *o.quantile, slo.confidence);
      c.requests = b.n;
      c.value = b.value;
      c.low = b.low;
      c.high = b.high;
      if (b.high && *b.high <= o.limit) {
        c.verdict = Verdict::kHolds;
      } else if (b.low && *b.low > o.limit) {
        c.verdict = Verdict::kFails;
      }
      if (!b.value || *b.value > o.limit) points_hold = false;
    } else {
      const std::uint64_t n = ok.size() + failed;
      c.requests = n;
      if (const auto b = metrics::proportion_bound(failed, n, slo.confidence)) {
        c.value = b->value;
        c.low = b->low;
        c.high = b->high;
        if (b->value <= o.limit) {
          c.verdict = Verdict::kHolds;
        } else if (b->low > o.limit) {
          c.verdict = Verdict::kFails;
        }
        if (b->value > o.limit) points_hold = false;
      } else {
        points_hold = false;
      }
    }
    if (c.verdict != Verdict::kHolds) all_hold = false;
    if (c.verdict == Verdict::kFails) any_fails = true;
    j.checks.push_back(std::move(c));
  }
  j.verdict = any_fails ? Verdict::kFails : all_hold ? Verdict::kHolds : Verdict::kUnclear;
  j.point_estimate_holds = points_hold;
  return j;
}

LevelState level_state(const std::vector<Judgement>& each, const Judgement& pooled,
                       std::uint32_t /*repeat_boundary*/) {
  LevelState s;
  for (const Judgement& j : each) {
    s.each_holds.push_back(j.holds());
  }
  s.pooled = pooled.verdict;
  s.pooled_point_holds = pooled.point_estimate_holds;
  return s;
}

namespace {

/// The search's decision of a level: the pooled verdict when it is clear, its point estimate
/// once the level has had its repetitions, else none yet (repeat it).
std::optional<bool> decided(const SearchOptions& o, const LevelState& s) {
  if (s.pooled == Verdict::kHolds) return true;
  if (s.pooled == Verdict::kFails) return false;
  if (s.each_holds.size() >= std::max<std::uint32_t>(o.repeat_boundary, 1)) {
    return s.pooled_point_holds;
  }
  return std::nullopt;
}

std::size_t runs_of(const std::map<double, LevelState>& levels, double level) {
  const auto it = levels.find(level);
  return it == levels.end() ? 0 : it->second.each_holds.size();
}

/// The capacity under one view of the levels (a level's decision): the largest holding level
/// below the smallest failing one; nullopt when the lowest level fails.
std::optional<double> capacity_under(const std::map<double, std::optional<bool>>& view) {
  std::optional<double> best;
  for (const auto& [level, holds] : view) {
    if (!holds) continue;
    if (!*holds) break;
    best = level;
  }
  return best;
}

}  // namespace

Step search_step(const SearchOptions& o, const std::map<double, LevelState>& levels) {
  Step step;
  Answer& a = step.answer;
  const double growth = o.start ? 1.25 : 2.0;
  const auto up = [&](double level) {
    double next = level * growth;
    if (o.integer) next = std::max(level + 1, std::round(next));
    if (!o.integer) next = three_digits(next);
    return std::min(next, o.max);
  };
  const auto down = [&](double level) {
    double next = level / growth;
    if (o.integer) next = std::min(level - 1, std::round(next));
    if (!o.integer) next = three_digits(next);
    return std::max(next, o.min);
  };
  std::size_t runs = 0;
  for (const auto& [level, s] : levels) runs += s.each_holds.size();
  const bool out_of_runs = runs >= o.max_probes;

  std::map<double, std::optional<bool>> view;  // the pooled decisions
  for (const auto& [level, s] : levels) view[level] = decided(o, s);
  std::optional<double> first_fail, lo;
  for (const auto& [level, d] : view) {
    if (d && !*d) {
      first_fail = level;
      break;
    }
  }
  for (const auto& [level, d] : view) {
    if (first_fail && level >= *first_fail) break;
    if (d && *d) lo = level;
  }
  std::optional<double> held_above;  // a level above the first failing one that held
  if (first_fail) {
    for (const auto& [level, d] : view) {
      if (level > *first_fail && d && *d) {
        held_above = level;
        break;
      }
    }
  }
  a.capacity = lo;
  a.first_failing = first_fail;
  a.non_monotone = held_above.has_value();

  // The spread: the capacity each repetition of the boundary gives on its own.
  std::uint32_t reps = 0;
  for (double b : {lo.value_or(-1), first_fail.value_or(-1)}) {
    if (b >= 0) {
      const auto n = static_cast<std::uint32_t>(runs_of(levels, b));
      reps = reps == 0 ? n : std::min(reps, n);
    }
  }
  a.spread_repetitions = reps;
  for (std::uint32_t r = 0; r < reps; ++r) {
    std::map<double, std::optional<bool>> mine = view;
    for (const auto& [level, s] : levels) {
      if (r < s.each_holds.size()) mine[level] = s.each_holds[r];
    }
    if (const auto c = capacity_under(mine)) {
      a.spread_min = a.spread_min ? std::min(*a.spread_min, *c) : *c;
      a.spread_max = a.spread_max ? std::max(*a.spread_max, *c) : *c;
    }
  }

  const auto finish = [&](const std::string& status) {
    a.status = status;
    step.next.reset();
    return step;
  };
  const auto go = [&](double level) {
    if (out_of_runs) return finish("unresolved");
    a.status = "incomplete";
    step.next = level;
    return step;
  };
  const std::uint32_t rb = std::max<std::uint32_t>(o.repeat_boundary, 1);

  // 1. A level not decided yet is run again.
  for (const auto& [level, d] : view) {
    if (!d) return go(level);
  }
  if (levels.empty()) return go(std::clamp(o.start.value_or(o.min), o.min, o.max));
  // 2. Noise: a level above the first failing one held. Both are repeated; then the pooled
  //    decisions stand and the first failing level bounds the answer (never a lucky run above).
  if (held_above) {
    if (runs_of(levels, *first_fail) < rb) return go(*first_fail);
    if (runs_of(levels, *held_above) < rb) return go(*held_above);
  }
  // 3. Bracket.
  if (!first_fail) {
    const double top = levels.rbegin()->first;
    if (top >= o.max) {
      if (runs_of(levels, top) < rb) return go(top);
      return finish("at_least_max");
    }
    return go(up(top));
  }
  if (!lo) {
    if (*first_fail <= o.min) {
      if (runs_of(levels, *first_fail) < rb) return go(*first_fail);
      return finish("below_min");
    }
    return go(down(*first_fail));
  }
  // 4. Bisect.
  const double gap = *first_fail - *lo;
  const bool close =
      o.relative ? gap <= o.resolution * *lo * (1 + 1e-9) : gap <= o.resolution * (1 + 1e-9);
  if (!close) {
    double mid = *lo + gap / 2;
    mid = o.integer ? std::floor(mid) : three_digits(mid);
    if (mid > *lo && mid < *first_fail && !levels.contains(mid)) return go(mid);
  }
  // 5. The boundary, repeated.
  if (runs_of(levels, *lo) < rb) return go(*lo);
  if (runs_of(levels, *first_fail) < rb) return go(*first_fail);
  return finish("found");
}

json::object params_json(const CapacityParams& p) {
  json::array objectives;
  for (const Objective& o : p.slo.objectives) {
    objectives.push_back(json::object{{"name", o.name},
                                      {"figure", o.figure},
                                      {"quantile", num(o.quantile)},
                                      {"limit", o.limit},
                                      {"unit", o.unit()}});
  }
  return json::object{
      {"by", p.by},
      {"slo", json::object{{"text", p.slo.text},
                           {"confidence", p.slo.confidence},
                           {"objectives", std::move(objectives)}}},
      {"search", json::object{{"min", p.search.min},
                              {"max", p.search.max},
                              {"resolution", p.search.resolution},
                              {"resolution_relative", p.search.relative},
                              {"repeat_boundary", p.search.repeat_boundary},
                              {"start", num(p.search.start)},
                              {"max_runs", p.search.max_probes}}},
      {"gpu_hour_cost", num(p.gpu_hour_cost)},
      {"gpus", p.gpus},
      {"predicted", num(p.predicted)},
      {"predicted_with", p.predicted_with ? json::value(*p.predicted_with) : json::value(nullptr)}};
}

namespace {

const json::value& member(const json::object& o, const char* key, const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) throw std::invalid_argument(path + "." + key + " is missing");
  return *v;
}

double number_member(const json::object& o, const char* key, const std::string& path) {
  const json::value& v = member(o, key, path);
  if (!v.is_number()) throw std::invalid_argument(path + "." + key + " is not a number");
  return v.to_number<double>();
}

std::optional<double> optional_number(const json::object& o, const char* key,
                                      const std::string& path) {
  const json::value& v = member(o, key, path);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) throw std::invalid_argument(path + "." + key + " is not a number");
  return v.to_number<double>();
}

const json::object& object_member(const json::object& o, const char* key, const std::string& path) {
  const json::value& v = member(o, key, path);
  if (!v.is_object()) throw std::invalid_argument(path + "." + key + " is not an object");
  return v.get_object();
}

std::string string_member(const json::object& o, const char* key, const std::string& path) {
  const json::value& v = member(o, key, path);
  if (!v.is_string()) throw std::invalid_argument(path + "." + key + " is not a string");
  return std::string(v.get_string());
}

}  // namespace

CapacityParams params_from_json(const json::object& params) {
  const std::string at = "protocol.params";
  CapacityParams p;
  p.by = string_member(params, "by", at);
  if (p.by != "concurrency" && p.by != "rate") {
    throw std::invalid_argument(at + ".by is neither concurrency nor rate");
  }
  const json::object& slo = object_member(params, "slo", at);
  const double confidence = number_member(slo, "confidence", at + ".slo");
  if (!(confidence > 0.5 && confidence < 1)) {
    throw std::invalid_argument(at + ".slo.confidence is not in (0.5, 1)");
  }
  try {
    p.slo = parse_capacity_slo(string_member(slo, "text", at + ".slo"), confidence);
  } catch (const UsageError& e) {
    throw std::invalid_argument(at + ".slo.text: " + e.what());
  }
  const json::object& s = object_member(params, "search", at);
  p.search.integer = p.by == "concurrency";
  p.search.min = number_member(s, "min", at + ".search");
  p.search.max = number_member(s, "max", at + ".search");
  p.search.resolution = number_member(s, "resolution", at + ".search");
  const json::value& rel = member(s, "resolution_relative", at + ".search");
  if (!rel.is_bool()) throw std::invalid_argument(at + ".search.resolution_relative is not a bool");
  p.search.relative = rel.get_bool();
  const double rb = number_member(s, "repeat_boundary", at + ".search");
  const double max_runs = number_member(s, "max_runs", at + ".search");
  if (!(rb >= 1 && rb <= 100) || !(max_runs >= 1 && max_runs <= 10000) || !(p.search.min > 0) ||
      !(p.search.max >= p.search.min) || !(p.search.resolution > 0)) {
    throw std::invalid_argument(at + ".search holds a value out of range");
  }
  p.search.repeat_boundary = static_cast<std::uint32_t>(rb);
  p.search.max_probes = static_cast<std::size_t>(max_runs);
  p.search.start = optional_number(s, "start", at + ".search");
  p.gpu_hour_cost = optional_number(params, "gpu_hour_cost", at);
  p.gpus = number_member(params, "gpus", at);
  p.predicted = optional_number(params, "predicted", at);
  const json::value& with = member(params, "predicted_with", at);
  if (with.is_string()) p.predicted_with = std::string(with.get_string());
  return p;
}

std::string cell_name(const std::string& by, double level) {
  return (by == "rate" ? "r" : "c") + number_text(level);
}

namespace {

std::vector<const metrics::Trace*> traces_of(
    const std::vector<const engine_session::CellOutcome*>& reps) {
  std::vector<const metrics::Trace*> out;
  for (const auto* r : reps) {
    for (const auto& t : r->traces) out.push_back(&t);
  }
  return out;
}

/// Each probe's judgements: one per repetition and the pooled one.
struct Judged {
  std::vector<Judgement> each;
  Judgement pooled;
};

Judged judged(const CapacityParams& p, const Probe& probe) {
  Judged out;
  for (const auto* r : probe.reps) out.each.push_back(judge(p.slo, traces_of({r})));
  out.pooled = judge(p.slo, traces_of(probe.reps));
  return out;
}

std::map<double, LevelState> states(const CapacityParams& p, const std::vector<Probe>& probes,
                                    std::vector<Judged>* keep = nullptr) {
  std::map<double, LevelState> levels;
  for (const Probe& probe : probes) {
    if (probe.reps.empty()) continue;
    Judged j = judged(p, probe);
    levels[probe.level] = level_state(j.each, j.pooled, p.search.repeat_boundary);
    if (keep != nullptr) keep->push_back(std::move(j));
  }
  return levels;
}

/// The repetition a cell's figures are read from: the median by output tok/s (the lower
/// middle of an even count), as every protocol cell's selection.
const engine_session::CellOutcome* selected(const Probe& probe) {
  std::vector<std::pair<double, const engine_session::CellOutcome*>> ranked;
  for (const auto* r : probe.reps) {
    if (r->summary.output_tokens_per_s) ranked.emplace_back(*r->summary.output_tokens_per_s, r);
  }
  if (ranked.empty()) return nullptr;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return ranked[(ranked.size() - 1) / 2].second;
}

}  // namespace

Answer answer_of(const CapacityParams& p, const std::vector<Probe>& probes) {
  return next_step(p, probes).answer;
}

Step next_step(const CapacityParams& p, const std::vector<Probe>& probes) {
  return search_step(p.search, states(p, probes));
}

Probe probe_of(const std::string& cell, double level,
               const std::vector<engine_session::CellOutcome>& reps) {
  Probe probe{level, cell, {}};
  for (const auto& r : reps) {
    if (!r.interrupted && r.status != "interrupted") probe.reps.push_back(&r);
  }
  return probe;
}

std::optional<double> level_of(const json::object& cell_params) {
  for (const char* key : {"concurrency", "rate_per_s"}) {
    if (const json::value* v = cell_params.if_contains(key); v != nullptr && v->is_number()) {
      return v->to_number<double>();
    }
  }
  return std::nullopt;
}

json::value boundary_findings(const record::RunRecord& run) {
  json::object d = diagnose::to_json(diagnose::diagnose_run(run));
  return d["findings"];
}

json::object capacity_json(const CapacityParams& p, const std::vector<Probe>& probes,
                           const DiagnoseRun& diagnose) {
  std::vector<Judged> judgements;
  const std::map<double, LevelState> levels = states(p, probes, &judgements);
  const Answer a = search_step(p.search, levels).answer;
  json::array probe_list;
  std::size_t ji = 0;
  std::vector<const Probe*> ordered;
  for (const Probe& probe : probes) {
    if (!probe.reps.empty()) ordered.push_back(&probe);
  }
  for (const Probe* probe : ordered) {
    const Judged& j = judgements[ji++];
    json::array objectives;
    for (const ObjectiveCheck& c : j.pooled.checks) {
      objectives.push_back(json::object{{"name", c.objective.name},
                                        {"value", num(c.value)},
                                        {"low", num(c.low)},
                                        {"high", num(c.high)},
                                        {"limit", c.objective.limit},
                                        {"requests", c.requests},
                                        {"verdict", to_string(c.verdict)}});
    }
    json::array reps;
    for (std::size_t r = 0; r < probe->reps.size(); ++r) {
      reps.push_back(json::object{{"run_id", probe->reps[r]->run_id},
                                  {"verdict", to_string(j.each[r].verdict)},
                                  {"holds", levels.at(probe->level).each_holds[r]}});
    }
    const LevelState& s = levels.at(probe->level);
    const std::optional<bool> d = decided(p.search, s);
    probe_list.push_back(json::object{{"level", probe->level},
                                      {"cell", probe->cell},
                                      {"verdict", to_string(j.pooled.verdict)},
                                      {"decided_by", j.pooled.verdict != Verdict::kUnclear ? "bound"
                                                     : d ? "point estimate"
                                                         : "pending"},
                                      {"holds", d ? json::value(*d) : json::value(nullptr)},
                                      {"objectives", std::move(objectives)},
                                      {"repetitions", std::move(reps)}});
  }
  json::object answer{{"status", a.status},
                      {"capacity", num(a.capacity)},
                      {"first_failing", num(a.first_failing)},
                      {"spread", json::object{{"min", num(a.spread_min)},
                                              {"max", num(a.spread_max)},
                                              {"repetitions", a.spread_repetitions}}},
                      {"non_monotone", a.non_monotone},
                      {"sentence", answer_sentence(p, a)}};
  json::value at_capacity = nullptr;
  if (a.capacity) {
    const Probe* cap = nullptr;
    for (const Probe* probe : ordered) {
      if (probe->level == *a.capacity) cap = probe;
    }
    if (const engine_session::CellOutcome* sel = cap != nullptr ? selected(*cap) : nullptr) {
      const metrics::Summary& s = sel->summary;
      std::optional<double> total_rate;
      if (s.output_tokens_per_s && s.input_tokens_per_s) {
        total_rate = *s.output_tokens_per_s + *s.input_tokens_per_s;
      }
      std::optional<double> energy;
      if (const auto e = sel->summary_file.energy_section()) energy = e->energy_j;
      at_capacity = json::object{
          {"cell", cap->cell},
          {"run_id", sel->run_id},
          {"output_tokens_per_s", num(s.output_tokens_per_s)},
          {"output_tokens_per_s_per_gpu",
           s.output_tokens_per_s ? json::value(*s.output_tokens_per_s / p.gpus) : nullptr},
          {"decode_rate_per_user_p50", num(s.decode_rate_per_user.p50)},
          {"usd_per_mtok_output",
           num(metrics::cost_per_mtok(p.gpu_hour_cost, p.gpus, s.output_tokens_per_s))},
          {"usd_per_mtok_total", num(metrics::cost_per_mtok(p.gpu_hour_cost, p.gpus, total_rate))},
          {"joules_per_mtok_output",
           num(metrics::joules_per_mtok(energy, static_cast<double>(s.output_tokens_total)))}};
    }
  }
  json::value predicted = nullptr;
  if (p.predicted) {
    std::optional<double> error;
    if (a.capacity && *p.predicted > 0) error = *a.capacity / *p.predicted - 1;
    predicted = json::object{
        {"capacity", *p.predicted},
        {"profile", p.predicted_with ? json::value(*p.predicted_with) : json::value(nullptr)},
        {"measured_over_predicted", num(error)}};
  }
  json::value diagnosis = nullptr;
  if (diagnose && a.first_failing) {
    for (const Probe* probe : ordered) {
      if (probe->level != *a.first_failing) continue;
      const engine_session::CellOutcome* sel = selected(*probe);
      if (sel == nullptr && !probe->reps.empty()) sel = probe->reps.front();  // nothing ran ok
      if (sel != nullptr) {
        diagnosis = json::object{{"cell", probe->cell},
                                 {"run_id", sel->run_id},
                                 {"level", probe->level},
                                 {"findings", diagnose(*sel)}};
      }
    }
  }
  json::object out = params_json(p);
  out["unit"] = p.by == "rate" ? "req/s" : "users";
  out["probes"] = std::move(probe_list);
  out["answer"] = std::move(answer);
  out["at_capacity"] = std::move(at_capacity);
  out["prediction"] = std::move(predicted);
  if (diagnose) out["diagnosis"] = std::move(diagnosis);
  return out;
}

namespace {

std::string limit_text(const Objective& o) {
  if (!o.quantile) return number_text(o.limit * 100) + " %";
  if (o.limit >= 1) return number_text(o.limit) + " s";
  return number_text(std::round(o.limit * 1e6) / 1e3) + " ms";
}

std::string objectives_text(const CapacitySlo& slo) {
  std::string out;
  for (std::size_t i = 0; i < slo.objectives.size(); ++i) {
    const Objective& o = slo.objectives[i];
    if (i > 0) out += i + 1 == slo.objectives.size() ? " and " : ", ";
    out += o.name + " <= " + limit_text(o);
  }
  return out;
}

}  // namespace

std::string answer_sentence(const CapacityParams& p, const Answer& a) {
  const auto level = [&](double v) {
    return number_text(v) + (p.by == "rate" ? " req/s" : v == 1 ? " user" : " users");
  };
  std::ostringstream s;
  const std::string what = objectives_text(p.slo);
  const std::string bounds = number_text(p.slo.confidence * 100) + " % bounds over requests";
  if (a.status == "found" || (a.status != "below_min" && a.capacity)) {
    s << "capacity " << (a.status == "at_least_max" ? "at least " : "") << level(*a.capacity)
      << ": " << what << " held at " << number_text(*a.capacity);
    if (a.first_failing) s << " and not at " << number_text(*a.first_failing);
    if (a.spread_min && a.spread_max && a.spread_repetitions > 1) {
      s << " (" << number_text(*a.spread_min);
      if (*a.spread_max != *a.spread_min) s << "–" << number_text(*a.spread_max);
      s << " over " << a.spread_repetitions << " repetitions; " << bounds << ")";
    } else {
      s << " (" << bounds << ")";
    }
    if (a.status == "at_least_max")
      s << "; every level probed held, up to the most the search may probe";
    if (a.status == "unresolved")
      s << "; the search stopped at its run limit before the boundary was settled";
    if (a.status == "incomplete") s << "; the search was stopped before it finished";
  } else if (a.status == "below_min") {
    s << "no capacity within the SLO: " << what << " failed already at " << level(p.search.min)
      << " (" << bounds << ")";
  } else {
    s << "capacity not found: the search ";
    s << (a.status == "incomplete" ? "was stopped before any level held"
                                   : "could not settle a level");
  }
  if (a.non_monotone)
    s << "; a higher level held once more (noise, repeated; the lower failing level stands)";
  return s.str();
}

}  // namespace dyno::protocol
