// The capacity search's charts: the `capacity` section read typed (every member checked, each
// error naming its path), then one line chart per objective.
#include "report/capacity_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "report/chart_text.h"

namespace dyno::report {

namespace {

namespace json = boost::json;

// ---- The section, read typed -------------------------------------------------------------

/// One object of the section; every error names the member's path from "capacity".
class Reader {
 public:
  Reader(const json::object& o, std::string path) : o_(o), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& member, const std::string& what) const {
    throw std::invalid_argument(name(member) + " " + what);
  }
  std::string name(const std::string& member) const { return path_ + "." + member; }

  const json::value& at(const char* key) const {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr) fail(key, "is missing");
    return *v;
  }
  Reader object(const char* key) const {
    const json::value& v = at(key);
    if (!v.is_object()) fail(key, "is not an object");
    return Reader(v.get_object(), name(key));
  }
  /// Absent or null: nullopt.
  std::optional<Reader> opt_object(const char* key) const {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return object(key);
  }
  const json::array& array(const char* key) const {
    const json::value& v = at(key);
    if (!v.is_array()) fail(key, "is not an array");
    return v.get_array();
  }
  /// Element `i` of array `key`, which must be an object.
  Reader element(const char* key, std::size_t i) const {
    const json::value& v = array(key)[i];
    const std::string member = std::string(key) + "[" + std::to_string(i) + "]";
    if (!v.is_object()) fail(member, "is not an object");
    return Reader(v.get_object(), name(member));
  }
  std::string string(const char* key) const {
    const json::value& v = at(key);
    if (!v.is_string()) fail(key, "is not a string");
    return std::string(v.get_string());
  }
  /// One of `words`.
  std::string word(const char* key, std::initializer_list<const char*> words) const {
    const std::string s = string(key);
    std::string list;
    for (const char* w : words) {
      if (s == w) return s;
      list += (list.empty() ? "" : ", ") + std::string(w);
    }
    fail(key, "is \"" + s + "\", not one of " + list);
  }
  /// Absent, null or a string.
  std::optional<std::string> opt_string(const char* key) const {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return string(key);
  }
  /// Present; a number or null.
  std::optional<double> nullable_number(const char* key) const {
    const json::value& v = at(key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) fail(key, "is not a number");
    return v.to_number<double>();
  }
  /// Absent, null or a number.
  std::optional<double> opt_number(const char* key) const {
    if (!o_.contains(key)) return std::nullopt;
    return nullable_number(key);
  }
  double number(const char* key) const {
    const std::optional<double> v = nullable_number(key);
    if (!v) fail(key, "is null");
    return *v;
  }
  std::uint64_t count(const char* key) const {
    const json::value& v = at(key);
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
    fail(key, "is not a non-negative integer");
  }
  /// Absent, null or a count.
  std::optional<std::uint64_t> opt_count(const char* key) const {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return count(key);
  }

 private:
  const json::object& o_;
  std::string path_;
};

const std::initializer_list<const char*> kVerdicts = {"holds", "fails", "unclear"};

struct Objective {
  std::string name;
  std::string figure;
  std::optional<double> quantile;
  double limit = 0.0;
  std::string unit;
};

struct Judged {  // one objective at one probe
  std::optional<double> value;
  std::optional<double> low;
  std::optional<double> high;
  std::optional<std::uint64_t> requests;
  std::string verdict;
};

struct Probe {
  double level = 0.0;
  std::string verdict;
  std::string decided_by;
  std::vector<std::pair<std::string, Judged>> objectives;  // by objective name
  std::size_t repetitions = 0;

  const Judged* find(const std::string& objective) const {
    for (const auto& [name, j] : objectives) {
      if (name == objective) return &j;
    }
    return nullptr;
  }
};

struct Spread {
  double min = 0.0;
  double max = 0.0;
  std::uint64_t repetitions = 0;
};

struct Section {
  std::string by;
  std::string unit;
  double confidence = 0.0;
  std::vector<Objective> objectives;
  std::vector<Probe> probes;
  std::string status;
  std::optional<double> capacity;
  std::optional<double> first_failing;
  std::optional<Spread> spread;
  std::optional<double> predicted;
  std::string predicted_profile;
};

Section read_section(const json::object& o) {
  const Reader r(o, "capacity");
  Section s;
  s.by = r.word("by", {"concurrency", "rate"});
  s.unit = chart_text::defuse(r.string("unit"));

  const Reader slo = r.object("slo");
  s.confidence = slo.number("confidence");
  if (!(s.confidence > 0.0 && s.confidence < 1.0)) slo.fail("confidence", "is not in (0, 1)");
  const std::size_t n_objectives = slo.array("objectives").size();
  if (n_objectives == 0) slo.fail("objectives", "is empty");
  std::set<std::string> stems;
  for (std::size_t i = 0; i < n_objectives; ++i) {
    const Reader e = slo.element("objectives", i);
    Objective obj;
    obj.name = e.string("name");
    obj.figure = e.string("figure");
    obj.quantile = e.nullable_number("quantile");
    if (obj.quantile && !(*obj.quantile > 0.0 && *obj.quantile < 1.0)) {
      e.fail("quantile", "is not in (0, 1)");
    }
    obj.limit = e.number("limit");
    obj.unit = e.string("unit");
    if (obj.name.empty()) e.fail("name", "is empty");
    if (!stems.insert(chart_text::slug(obj.name)).second) {
      e.fail("name", "\"" + obj.name + "\" repeats an objective (as a file name)");
    }
    s.objectives.push_back(std::move(obj));
  }

  const std::size_t n_probes = r.array("probes").size();
  for (std::size_t i = 0; i < n_probes; ++i) {
    const Reader p = r.element("probes", i);
    Probe probe;
    probe.level = p.number("level");
    (void)p.string("cell");
    probe.verdict = p.word("verdict", kVerdicts);
    probe.decided_by = p.word("decided_by", {"bound", "point estimate", "pending"});
    const std::size_t n_judged = p.array("objectives").size();
    for (std::size_t k = 0; k < n_judged; ++k) {
      const Reader e = p.element("objectives", k);
      const std::string name = e.string("name");
      const bool known =
          std::any_of(s.objectives.begin(), s.objectives.end(),
                      [&name](const Objective& known_one) { return known_one.name == name; });
      if (!known) e.fail("name", "\"" + name + "\" is not an objective of capacity.slo");
      if (probe.find(name) != nullptr) e.fail("name", "\"" + name + "\" is judged twice");
      Judged j;
      j.value = e.nullable_number("value");
      j.low = e.opt_number("low");
      j.high = e.opt_number("high");
      (void)e.opt_number("limit");
      j.requests = e.opt_count("requests");
      j.verdict = e.word("verdict", kVerdicts);
      probe.objectives.emplace_back(name, std::move(j));
    }
    const std::size_t n_reps = p.array("repetitions").size();
    for (std::size_t k = 0; k < n_reps; ++k) {
      (void)p.element("repetitions", k).word("verdict", kVerdicts);
    }
    probe.repetitions = n_reps;
    s.probes.push_back(std::move(probe));
  }
  std::stable_sort(s.probes.begin(), s.probes.end(),
                   [](const Probe& a, const Probe& b) { return a.level < b.level; });

  const Reader a = r.object("answer");
  s.status = a.word("status", {"found", "at_least_max", "below_min", "unresolved", "incomplete"});
  s.capacity = a.opt_number("capacity");
  s.first_failing = a.opt_number("first_failing");
  if (const std::optional<Reader> sp = a.opt_object("spread")) {
    const std::optional<double> lo = sp->nullable_number("min");
    const std::optional<double> hi = sp->nullable_number("max");
    if (lo && hi) s.spread = Spread{*lo, *hi, sp->count("repetitions")};
  }
  if (s.status == "found" && !s.capacity) a.fail("capacity", "is null for status \"found\"");

  if (const std::optional<Reader> pr = r.opt_object("prediction")) {
    s.predicted = pr->opt_number("capacity");
    s.predicted_profile = chart_text::defuse(pr->opt_string("profile").value_or(""));
  }
  return s;
}

// ---- Words and units -----------------------------------------------------------------------

/// About three significant digits, never an exponent: 312, 31.2, 0.05, 1235.
std::string short_number(double v) {
  if (v == 0.0 || !std::isfinite(v)) return chart_text::num(v);
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(v))));
  const int decimals = std::clamp(2 - magnitude, 0, 6);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

/// How an objective's values are shown: seconds as ms (as s from a limit of 10 s on),
/// fractions as %, anything else as given.
struct Shown {
  double factor = 1.0;
  std::string unit;
  std::string text(double v) const {
    const std::string n = short_number(v * factor);
    return unit.empty() ? n : n + " " + unit;
  }
};

Shown shown(const Objective& o) {
  if (o.unit == "s") return o.limit >= 10.0 ? Shown{1.0, "s"} : Shown{1000.0, "ms"};
  if (o.unit == "fraction") return {100.0, "%"};
  return {1.0, chart_text::defuse(o.unit)};
}

/// "TTFT p90", "E2E latency p99", "Failed requests".
std::string objective_words(const Objective& o) {
  std::string figure = o.figure;
  if (figure == "ttft" || figure == "tpot" || figure == "itl") {
    std::transform(figure.begin(), figure.end(), figure.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  } else if (figure == "e2e") {
    figure = "E2E latency";
  } else if (figure == "errors") {
    figure = "Failed requests";
  } else {
    figure = chart_text::defuse(figure);
  }
  if (!o.quantile) return figure;
  return figure + " p" + chart_text::num(std::round(*o.quantile * 1000.0) / 10.0);
}

/// "24 users", "1 user", "2.5 req/s".
std::string load(const Section& s, double level) {
  const std::string unit = s.unit == "users" && level == 1.0 ? "user" : s.unit;
  return chart_text::num(level) + (unit.empty() ? "" : " " + unit);
}

std::string lowest_probed(const Section& s) {
  if (s.first_failing) return load(s, *s.first_failing);
  if (!s.probes.empty()) return load(s, s.probes.front().level);
  return "the least load";
}

/// What the search answered, in words: "capacity 24 users (22–26 over 3 repetitions)".
std::string answer_words(const Section& s) {
  if (s.status == "found") {
    std::string w = "capacity " + load(s, *s.capacity);
    if (s.spread && s.spread->repetitions > 1) {
      const std::string reps = std::to_string(s.spread->repetitions);
      w += s.spread->min == s.spread->max
               ? " (the same over " + reps + " repetitions)"
               : " (" + chart_text::num(s.spread->min) + "\u2013" + chart_text::num(s.spread->max) +
                     " over " + reps + " repetitions)";
    }
    return w;
  }
  if (s.status == "at_least_max") {
    return "capacity at least " +
           (s.capacity ? load(s, *s.capacity) : std::string("the most load")) + ", the most probed";
  }
  if (s.status == "below_min") return "capacity below " + lowest_probed(s) + ", the least probed";
  return std::string(s.status == "incomplete" ? "search stopped before it finished"
                                              : "capacity unresolved") +
         (s.capacity ? " (held up to " + load(s, *s.capacity) + ")" : std::string());
}

// Styles of the chart library's palette (docs/charts.md "Palette and markers"), one per
// verdict so that colour and marker both tell them apart: holds a filled bluish-green
// triangle (2), fails a hollow vermillion cross (13: colour 5, second round of markers),
// unclear a hollow orange square (1).
std::size_t verdict_style(const std::string& verdict) {
  if (verdict == "holds") return 2;
  if (verdict == "fails") return 13;
  return 1;
}

CapacityChart chart_of(const Section& s, const Objective& o) {
  const Shown sh = shown(o);
  const std::string what = objective_words(o);
  const std::string level_word = s.by == "concurrency" ? "concurrency" : "request rate";
  const std::string slo = "SLO " + sh.text(o.limit);
  const std::string answer = answer_words(s);
  const std::string conf = chart_text::percent(s.confidence);

  CapacityChart c;
  c.stem = "capacity-" + chart_text::slug(o.name);
  chart::LineChart& ch = c.chart;
  ch.title = what + " against " + level_word;
  ch.subtitle = slo + ", " + answer;
  if (s.predicted) ch.subtitle += "; predicted " + load(s, *s.predicted);
  c.title = ch.title + " \u2014 " + ch.subtitle;
  ch.x =
      chart::Axis{.title = s.by == "concurrency" ? "Concurrency" : "Request rate", .unit = s.unit};
  ch.y = chart::Axis{.title = what, .unit = sh.unit, .include_zero = true};
  ch.legend_always = true;

  chart::Panel panel;
  // One series per verdict, in a fixed order, markers only: a probe's level is not a
  // trend to join, and the colour says which side of the limit it was judged on.
  std::vector<std::string> listed;
  std::vector<std::string> missing;
  std::size_t by_point_estimate = 0;
  for (const char* verdict : kVerdicts) {
    chart::Series series{
        .name = verdict, .points = {}, .style = verdict_style(verdict), .joined = false};
    for (const Probe& p : s.probes) {
      const Judged* j = p.find(o.name);
      if (j == nullptr || j->verdict != verdict || !j->value) continue;
      chart::Point pt{.x = p.level, .y = *j->value * sh.factor};
      if (j->low) pt.low = *j->low * sh.factor;
      if (j->high) pt.high = *j->high * sh.factor;
      series.points.push_back(std::move(pt));
    }
    if (!series.points.empty()) panel.series.push_back(std::move(series));
  }
  for (const Probe& p : s.probes) {
    const Judged* j = p.find(o.name);
    std::string item = load(s, p.level) + ": ";
    if (j == nullptr) {
      item += "not judged";
      missing.push_back(chart_text::num(p.level));
    } else {
      item += j->value ? sh.text(*j->value) : std::string("no value");
      if (!j->value) missing.push_back(chart_text::num(p.level));
      if (j->low || j->high) {
        item += " [" + (j->low ? sh.text(*j->low) : std::string("?")) + " to " +
                (j->high ? sh.text(*j->high) : std::string("?")) + "]";
      }
      if (j->requests) item += ", " + std::to_string(*j->requests) + " requests";
      item += ", " + j->verdict;
    }
    item += "; the probe " + p.verdict;
    if (p.decided_by == "point estimate") {
      item += " by its point estimate";
      ++by_point_estimate;
    }
    if (p.repetitions > 1) item += " over " + std::to_string(p.repetitions) + " repetitions";
    listed.push_back(item);
  }
  panel.y_rules.push_back({o.limit * sh.factor, slo, false});
  if (s.capacity && s.status != "below_min") {
    const std::string label = s.status == "at_least_max" ? "capacity \u2265 " + load(s, *s.capacity)
                              : s.status == "unresolved" || s.status == "incomplete"
                                  ? "held up to " + load(s, *s.capacity)
                                                         : "capacity " + load(s, *s.capacity);
    panel.x_rules.push_back({*s.capacity, label, false});
  }
  if (s.predicted)
    panel.x_rules.push_back({*s.predicted, "predicted " + load(s, *s.predicted), true});
  const bool band = s.spread && s.spread->repetitions > 1 && s.spread->max > s.spread->min;
  if (band) panel.windows.push_back({s.spread->min, s.spread->max, ""});
  ch.panels.push_back(std::move(panel));

  // The footnote: one line, what the bars and the shading are, and what is not drawn.
  std::string note = "Bars: " + conf + " confidence bounds over each probe's requests";
  if (band)
    note += "; shaded: the capacity's spread over " + std::to_string(s.spread->repetitions) +
            " repetitions";
  note += ".";
  if (!missing.empty()) {
    note += " No value at " + std::to_string(missing.size()) +
            (missing.size() == 1 ? " probe." : " probes.");
  }
  ch.note = note;

  std::string desc = "Probes (level: value [bounds], verdict of " + o.name + "): ";
  for (std::size_t i = 0; i < listed.size(); ++i) desc += (i == 0 ? "" : "; ") + listed[i];
  if (listed.empty()) desc += "none";
  desc += ".";
  ch.description = chart_text::defuse(desc);

  c.caption = "Each probe of the capacity search at its load (" + s.unit + "): its " + what +
              " pooled over its repetitions, coloured by its verdict on this objective (a probe "
              "fails when any objective fails), with its " +
              conf + " confidence bounds as a bar. The horizontal line is the " + slo +
              "; the vertical line the search's answer, " + answer;
  if (s.predicted) {
    c.caption += "; dashed, the capacity predicted" +
                 (s.predicted_profile.empty() ? std::string()
                                              : " by the fitted profile " + s.predicted_profile) +
                 ", " + load(s, *s.predicted);
  }
  if (by_point_estimate > 0) {
    c.caption += "; " + std::to_string(by_point_estimate) +
                 (by_point_estimate == 1 ? " probe was" : " probes were") +
                 " judged by the point estimate (too few requests for the bound)";
  }
  c.caption += ".";
  return c;
}

}  // namespace

std::vector<CapacityChart> capacity_chart_specs(const boost::json::object& capacity) {
  const Section s = read_section(capacity);
  std::vector<CapacityChart> out;
  for (const Objective& o : s.objectives) out.push_back(chart_of(s, o));
  return out;
}

std::vector<Figure> capacity_charts(const boost::json::object& capacity) {
  std::vector<Figure> out;
  for (const CapacityChart& c : capacity_chart_specs(capacity)) {
    Figure f;
    f.title = c.title;
    f.stem = c.stem;
    f.section = compare::Section::kLatency;
    f.caption = c.caption;
    f.svg = chart::render(c.chart, chart::Format::kSvg);
    f.png = chart::render(c.chart, chart::Format::kPng);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace dyno::report
