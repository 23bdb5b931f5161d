// The capacity search's charts (report/capacity_charts.h) over constructed `capacity`
// sections: a found capacity with its spread and a prediction, at_least_max, below_min,
// unclear probes, null values and bounds, and malformed sections (each error names the
// member). Every chart draws at its default size with no text shortened; two are pinned as
// golden SVGs (tests/report/golden/, DYNO_UPDATE_GOLDEN=1 regenerates them; they hold for one
// build environment's cairo and fonts, docs/charts.md "Determinism").
#include "report/capacity_charts.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "chart/chart.h"
#include "golden.h"

namespace dyno::report {
namespace {

namespace json = boost::json;

/// A found capacity: 24 users (22–26 over 3 repetitions), the first failing level 26, a
/// probe at 28 unclear on TTFT, one judged by its point estimate, a fitted prediction of 20.
json::object found() {
  return json::parse(R"({
    "by": "concurrency", "unit": "users",
    "slo": {"text": "ttft_p90=500ms,tpot_p90=50ms,errors=1%", "confidence": 0.95,
            "objectives": [
              {"name": "ttft_p90", "figure": "ttft", "quantile": 0.9, "limit": 0.5, "unit": "s"},
              {"name": "tpot_p90", "figure": "tpot", "quantile": 0.9, "limit": 0.05, "unit": "s"},
              {"name": "errors", "figure": "errors", "quantile": null, "limit": 0.01,
               "unit": "fraction"}]},
    "probes": [
      {"level": 1, "cell": "c1", "verdict": "holds", "decided_by": "point estimate",
       "objectives": [
         {"name": "ttft_p90", "value": 0.095, "low": 0.09, "high": 0.11, "limit": 0.5,
          "requests": 32, "verdict": "holds"},
         {"name": "tpot_p90", "value": 0.012, "low": 0.011, "high": 0.013, "limit": 0.05,
          "requests": 32, "verdict": "holds"},
         {"name": "errors", "value": 0, "low": 0, "high": 0.09, "limit": 0.01,
          "requests": 32, "verdict": "holds"}],
       "repetitions": [{"run_id": "r1", "verdict": "holds"}]},
      {"level": 8, "cell": "c8", "verdict": "holds", "decided_by": "bound",
       "objectives": [
         {"name": "ttft_p90", "value": 0.14, "low": 0.13, "high": 0.16, "limit": 0.5,
          "requests": 64, "verdict": "holds"},
         {"name": "tpot_p90", "value": 0.018, "low": 0.017, "high": 0.02, "limit": 0.05,
          "requests": 64, "verdict": "holds"},
         {"name": "errors", "value": 0, "low": 0, "high": 0.046, "limit": 0.01,
          "requests": 64, "verdict": "holds"}],
       "repetitions": [{"run_id": "r8", "verdict": "holds"}]},
      {"level": 16, "cell": "c16", "verdict": "holds", "decided_by": "bound",
       "objectives": [
         {"name": "ttft_p90", "value": 0.25, "low": 0.23, "high": 0.28, "limit": 0.5,
          "requests": 128, "verdict": "holds"},
         {"name": "tpot_p90", "value": 0.027, "low": 0.025, "high": 0.03, "limit": 0.05,
          "requests": 128, "verdict": "holds"},
         {"name": "errors", "value": 0, "low": 0, "high": 0.023, "limit": 0.01,
          "requests": 128, "verdict": "holds"}],
       "repetitions": [{"run_id": "r16", "verdict": "holds"}]},
      {"level": 24, "cell": "c24", "verdict": "holds", "decided_by": "bound",
       "objectives": [
         {"name": "ttft_p90", "value": 0.41, "low": 0.38, "high": 0.46, "limit": 0.5,
          "requests": 576, "verdict": "holds"},
         {"name": "tpot_p90", "value": 0.036, "low": 0.034, "high": 0.039, "limit": 0.05,
          "requests": 576, "verdict": "holds"},
         {"name": "errors", "value": 0.0017, "low": 0.0003, "high": 0.0096, "limit": 0.01,
          "requests": 576, "verdict": "holds"}],
       "repetitions": [{"run_id": "r24a", "verdict": "holds"}, {"run_id": "r24b", "verdict": "holds"},
                       {"run_id": "r24c", "verdict": "holds"}]},
      {"level": 26, "cell": "c26", "verdict": "fails", "decided_by": "bound",
       "objectives": [
         {"name": "ttft_p90", "value": 0.55, "low": 0.52, "high": 0.6, "limit": 0.5,
          "requests": 624, "verdict": "fails"},
         {"name": "tpot_p90", "value": 0.041, "low": 0.039, "high": 0.044, "limit": 0.05,
          "requests": 624, "verdict": "holds"},
         {"name": "errors", "value": 0.0032, "low": 0.001, "high": 0.0093, "limit": 0.01,
          "requests": 624, "verdict": "holds"}],
       "repetitions": [{"run_id": "r26a", "verdict": "fails"}, {"run_id": "r26b", "verdict": "holds"},
                       {"run_id": "r26c", "verdict": "fails"}]},
      {"level": 28, "cell": "c28", "verdict": "fails", "decided_by": "bound",
       "objectives": [
         {"name": "ttft_p90", "value": 0.48, "low": 0.44, "high": 0.53, "limit": 0.5,
          "requests": 224, "verdict": "unclear"},
         {"name": "tpot_p90", "value": 0.052, "low": 0.051, "high": 0.055, "limit": 0.05,
          "requests": 224, "verdict": "fails"},
         {"name": "errors", "value": 0.0045, "low": 0.001, "high": 0.013, "limit": 0.01,
          "requests": 224, "verdict": "unclear"}],
       "repetitions": [{"run_id": "r28", "verdict": "fails"}]},
      {"level": 32, "cell": "c32", "verdict": "fails", "decided_by": "bound",
       "objectives": [
         {"name": "ttft_p90", "value": 0.72, "low": 0.66, "high": 0.81, "limit": 0.5,
          "requests": 256, "verdict": "fails"},
         {"name": "tpot_p90", "value": 0.061, "low": 0.058, "high": 0.066, "limit": 0.05,
          "requests": 256, "verdict": "fails"},
         {"name": "errors", "value": 0.012, "low": 0.004, "high": 0.034, "limit": 0.01,
          "requests": 256, "verdict": "unclear"}],
       "repetitions": [{"run_id": "r32", "verdict": "fails"}]}],
    "answer": {"status": "found", "capacity": 24, "first_failing": 26,
               "spread": {"min": 22, "max": 26, "repetitions": 3}},
    "prediction": {"capacity": 20, "profile": "fitted.json", "measured_over_predicted": 0.2}
  })")
      .as_object();
}

/// Everything held at the most load probed (64 users), by request rate's sibling: one
/// objective, no spread, no prediction.
json::object at_least_max() {
  return json::parse(R"({
    "by": "concurrency", "unit": "users",
    "slo": {"text": "e2e_p99=20s", "confidence": 0.9,
            "objectives": [{"name": "e2e_p99", "figure": "e2e", "quantile": 0.99, "limit": 20,
                            "unit": "s"}]},
    "probes": [
      {"level": 16, "cell": "c16", "verdict": "holds", "decided_by": "bound",
       "objectives": [{"name": "e2e_p99", "value": 6.2, "low": 5.9, "high": 6.8, "limit": 20,
                       "requests": 128, "verdict": "holds"}],
       "repetitions": [{"run_id": "a", "verdict": "holds"}]},
      {"level": 64, "cell": "c64", "verdict": "holds", "decided_by": "bound",
       "objectives": [{"name": "e2e_p99", "value": 14.5, "low": 13.1, "high": 16.9, "limit": 20,
                       "requests": 512, "verdict": "holds"}],
       "repetitions": [{"run_id": "b", "verdict": "holds"}]}],
    "answer": {"status": "at_least_max", "capacity": 64, "first_failing": null, "spread": null},
    "prediction": null
  })")
      .as_object();
}

/// Every probe failed, from the least load (1 req/s), by rate; a probe's value and bounds null
/// (no request answered), another's lower bound null.
json::object below_min() {
  return json::parse(R"({
    "by": "rate", "unit": "req/s",
    "slo": {"text": "ttft_p50=200ms", "confidence": 0.95,
            "objectives": [{"name": "ttft_p50", "figure": "ttft", "quantile": 0.5, "limit": 0.2,
                            "unit": "s"}]},
    "probes": [
      {"level": 1, "cell": "r1", "verdict": "fails", "decided_by": "bound",
       "objectives": [{"name": "ttft_p50", "value": 0.35, "low": null, "high": 0.41,
                       "limit": 0.2, "requests": 30, "verdict": "fails"}],
       "repetitions": [{"run_id": "x", "verdict": "fails"}]},
      {"level": 2, "cell": "r2", "verdict": "fails", "decided_by": "point estimate",
       "objectives": [{"name": "ttft_p50", "value": null, "low": null, "high": null,
                       "limit": 0.2, "requests": 0, "verdict": "fails"}],
       "repetitions": [{"run_id": "y", "verdict": "fails"}]}],
    "answer": {"status": "below_min", "capacity": null, "first_failing": 1, "spread": null},
    "prediction": null
  })")
      .as_object();
}

const chart::Series* series(const CapacityChart& c, const std::string& name) {
  for (const auto& s : c.chart.panels.at(0).series) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<double> xs(const chart::Series* s) {
  std::vector<double> out;
  if (s != nullptr) {
    for (const auto& p : s->points) out.push_back(p.x);
  }
  return out;
}

/// Every chart draws at its default size (960 × 600) with nothing shortened, its SVG naming
/// the title and every probe.
void expect_drawn_whole(const std::vector<CapacityChart>& charts) {
  for (const auto& c : charts) {
    SCOPED_TRACE(c.stem);
    const chart::Size size = chart::default_size(c.chart);
    EXPECT_EQ(size.width, 960);
    EXPECT_EQ(size.height, 600);
    EXPECT_EQ(chart::shortened_texts(c.chart, size.width, size.height), std::vector<std::string>{});
  }
}

std::string desc_of(const std::string& svg) {
  const auto a = svg.find("<desc>");
  const auto b = svg.find("</desc>");
  if (a == std::string::npos || b == std::string::npos) return "";
  return svg.substr(a + 6, b - a - 6);
}

TEST(CapacityCharts, FoundOneChartPerObjective) {
  const auto charts = capacity_chart_specs(found());
  ASSERT_EQ(charts.size(), 3u);
  EXPECT_EQ(charts[0].stem, "capacity-ttft-p90");
  EXPECT_EQ(charts[1].stem, "capacity-tpot-p90");
  EXPECT_EQ(charts[2].stem, "capacity-errors");
  const CapacityChart& ttft = charts[0];
  EXPECT_EQ(ttft.title,
            "TTFT p90 against concurrency \u2014 SLO 500 ms, capacity 24 users (22\u201326 over 3 "
            "repetitions); predicted 20 users");
  EXPECT_EQ(ttft.chart.x.title, "Concurrency");
  EXPECT_EQ(ttft.chart.x.unit, "users");
  EXPECT_EQ(ttft.chart.y.unit, "ms");
  const chart::Panel& p = ttft.chart.panels.at(0);
  // The limit as a horizontal rule, in ms; the capacity solid, the prediction dashed; the
  // spread as a band.
  ASSERT_EQ(p.y_rules.size(), 1u);
  EXPECT_DOUBLE_EQ(p.y_rules[0].at, 500.0);
  EXPECT_EQ(p.y_rules[0].label, "SLO 500 ms");
  ASSERT_EQ(p.x_rules.size(), 2u);
  EXPECT_DOUBLE_EQ(p.x_rules[0].at, 24.0);
  EXPECT_FALSE(p.x_rules[0].dashed);
  EXPECT_EQ(p.x_rules[0].label, "capacity 24 users");
  EXPECT_DOUBLE_EQ(p.x_rules[1].at, 20.0);
  EXPECT_TRUE(p.x_rules[1].dashed);
  EXPECT_EQ(p.x_rules[1].label, "predicted 20 users");
  ASSERT_EQ(p.windows.size(), 1u);
  EXPECT_DOUBLE_EQ(p.windows[0].start, 22.0);
  EXPECT_DOUBLE_EQ(p.windows[0].end, 26.0);
  // Probes coloured by their verdict on TTFT: 28 is unclear on TTFT though the probe fails
  // (on TPOT); markers only, each with its bounds in ms.
  EXPECT_EQ(xs(series(ttft, "holds")), (std::vector<double>{1, 8, 16, 24}));
  EXPECT_EQ(xs(series(ttft, "fails")), (std::vector<double>{26, 32}));
  EXPECT_EQ(xs(series(ttft, "unclear")), (std::vector<double>{28}));
  for (const auto& s : p.series) EXPECT_FALSE(s.joined) << s.name;
  const chart::Point& at24 = series(ttft, "holds")->points[3];
  EXPECT_DOUBLE_EQ(at24.y, 410.0);
  EXPECT_DOUBLE_EQ(*at24.low, 380.0);
  EXPECT_DOUBLE_EQ(*at24.high, 460.0);
  // Errors in %, TPOT's verdicts its own.
  EXPECT_EQ(charts[2].chart.y.unit, "%");
  EXPECT_EQ(charts[2].chart.panels[0].y_rules[0].label, "SLO 1 %");
  EXPECT_EQ(xs(series(charts[2], "unclear")), (std::vector<double>{28, 32}));
  EXPECT_EQ(xs(series(charts[1], "fails")), (std::vector<double>{28, 32}));
  EXPECT_EQ(charts[2].title.substr(0, 43), "Failed requests against concurrency \u2014 SLO");
  expect_drawn_whole(charts);
}

TEST(CapacityCharts, FiguresCarryEveryProbeInTheirDescription) {
  const auto figures = capacity_charts(found());
  ASSERT_EQ(figures.size(), 3u);
  for (const Figure& f : figures) {
    SCOPED_TRACE(f.stem);
    EXPECT_EQ(f.section, compare::Section::kLatency);
    EXPECT_FALSE(f.png.empty());
    EXPECT_NE(f.caption.find("predicted by the fitted profile fitted.json, 20 users"),
              std::string::npos);
    EXPECT_NE(f.caption.find("1 probe was judged by the point estimate"), std::string::npos);
  }
  EXPECT_NO_THROW(validate_figures(figures));
  const std::string desc = desc_of(figures[0].svg);
  for (const char* probe :
       {"1 user: 95 ms [90 ms to 110 ms], 32 requests, holds; the probe holds by its point "
        "estimate",
        "8 users: 140 ms [130 ms to 160 ms], 64 requests, holds; the probe holds;",
        "16 users: 250 ms",
        "24 users: 410 ms [380 ms to 460 ms], 576 requests, holds; the probe "
        "holds over 3 repetitions",
        "26 users: 550 ms [520 ms to 600 ms], 624 requests, fails; the probe fails over 3",
        "28 users: 480 ms [440 ms to 530 ms], 224 requests, unclear; the probe fails;",
        "32 users: 720 ms"}) {
    EXPECT_NE(desc.find(probe), std::string::npos) << probe << "\nin: " << desc;
  }
  EXPECT_NE(desc.find("Marked: SLO 500 ms, capacity 24 users, predicted 20 users."),
            std::string::npos)
      << desc;
  EXPECT_NE(desc_of(figures[2].svg).find("24 users: 0.17 % [0.03 % to 0.96 %]"), std::string::npos)
      << desc_of(figures[2].svg);
}

TEST(CapacityCharts, AtLeastMax) {
  const auto charts = capacity_chart_specs(at_least_max());
  ASSERT_EQ(charts.size(), 1u);
  const CapacityChart& c = charts[0];
  EXPECT_EQ(c.stem, "capacity-e2e-p99");
  // A limit of 20 s is shown in s.
  EXPECT_EQ(c.title,
            "E2E latency p99 against concurrency \u2014 SLO 20 s, capacity at least 64 users, the "
            "most probed");
  EXPECT_EQ(c.chart.y.unit, "s");
  const chart::Panel& p = c.chart.panels[0];
  ASSERT_EQ(p.x_rules.size(), 1u);
  EXPECT_EQ(p.x_rules[0].label, "capacity \u2265 64 users");
  EXPECT_TRUE(p.windows.empty());
  EXPECT_EQ(xs(series(c, "holds")), (std::vector<double>{16, 64}));
  EXPECT_EQ(series(c, "fails"), nullptr);
  EXPECT_TRUE(c.chart.legend_always);  // one verdict still says what its colour means
  EXPECT_EQ(c.chart.note, "Bars: 90 % confidence bounds over each probe's requests.");
  expect_drawn_whole(charts);
}

TEST(CapacityCharts, BelowMinWithNullValues) {
  const auto charts = capacity_chart_specs(below_min());
  ASSERT_EQ(charts.size(), 1u);
  const CapacityChart& c = charts[0];
  EXPECT_EQ(c.title,
            "TTFT p50 against request rate \u2014 SLO 200 ms, capacity below 1 req/s, the least "
            "probed");
  EXPECT_EQ(c.chart.x.title, "Request rate");
  EXPECT_EQ(c.chart.x.unit, "req/s");
  const chart::Panel& p = c.chart.panels[0];
  EXPECT_TRUE(p.x_rules.empty());  // no capacity to mark
  // The probe without a value is not drawn; the other's bar has no lower end.
  ASSERT_EQ(xs(series(c, "fails")), (std::vector<double>{1}));
  const chart::Point& pt = series(c, "fails")->points[0];
  EXPECT_FALSE(pt.low.has_value());
  EXPECT_DOUBLE_EQ(*pt.high, 410.0);
  EXPECT_NE(c.chart.note.find("No value at 1 probe."), std::string::npos);
  EXPECT_NE(c.chart.description.find("1 req/s: 350 ms [? to 410 ms], 30 requests, fails"),
            std::string::npos)
      << c.chart.description;
  EXPECT_NE(c.chart.description.find("2 req/s: no value, 0 requests, fails; the probe fails by "
                                     "its point estimate"),
            std::string::npos)
      << c.chart.description;
  expect_drawn_whole(charts);
  EXPECT_NO_THROW(capacity_charts(below_min()));
}

TEST(CapacityCharts, UnresolvedAndProbesMissingAnObjective) {
  json::object o = found();
  o["answer"] = json::parse(R"({"status": "unresolved", "capacity": 24, "first_failing": null,
                               "spread": null})");
  o["prediction"] = nullptr;
  // The probe at 32 users judged TTFT only.
  json::array& judged = o["probes"].as_array()[6].as_object()["objectives"].as_array();
  judged.erase(judged.begin() + 1, judged.end());
  const auto charts = capacity_chart_specs(o);
  EXPECT_EQ(charts[0].title,
            "TTFT p90 against concurrency \u2014 SLO 500 ms, capacity unresolved (held up to 24 "
            "users)");
  EXPECT_EQ(charts[0].chart.panels[0].x_rules.at(0).label, "held up to 24 users");
  EXPECT_TRUE(charts[0].chart.panels[0].windows.empty());
  EXPECT_EQ(xs(series(charts[1], "fails")), (std::vector<double>{28}));
  EXPECT_NE(charts[1].chart.description.find("32 users: not judged; the probe fails"),
            std::string::npos);
  EXPECT_NE(charts[1].chart.note.find("No value at 1 probe."), std::string::npos);
  // No probes at all: the SLO is still drawn, and the desc says so.
  o["probes"] = json::array();
  const auto empty = capacity_chart_specs(o);
  EXPECT_NE(empty[0].chart.description.find("none."), std::string::npos);
  expect_drawn_whole(empty);
  EXPECT_NO_THROW(capacity_charts(o));
}

// A malformed section names the member at fault.
TEST(CapacityCharts, MalformedSectionsNameTheMember) {
  struct Case {
    std::string expected;
    std::function<void(json::object&)> spoil;
  };
  const auto probe = [](json::object& o, std::size_t i) -> json::object& {
    return o["probes"].as_array()[i].as_object();
  };
  const std::vector<Case> cases = {
      {"capacity.by is missing", [](json::object& o) { o.erase("by"); }},
      {"capacity.by is \"tokens\", not one of concurrency, rate",
       [](json::object& o) { o["by"] = "tokens"; }},
      {"capacity.unit is not a string", [](json::object& o) { o["unit"] = 3; }},
      {"capacity.slo is not an object", [](json::object& o) { o["slo"] = "x"; }},
      {"capacity.slo.confidence is not in (0, 1)",
       [](json::object& o) { o["slo"].as_object()["confidence"] = 95; }},
      {"capacity.slo.objectives is empty",
       [](json::object& o) { o["slo"].as_object()["objectives"] = json::array(); }},
      {"capacity.slo.objectives[1].limit is null",
       [](json::object& o) {
         o["slo"].as_object()["objectives"].as_array()[1].as_object()["limit"] = nullptr;
       }},
      {"capacity.slo.objectives[2] is not an object",
       [](json::object& o) { o["slo"].as_object()["objectives"].as_array()[2] = 1; }},
      {"capacity.probes is not an array", [](json::object& o) { o["probes"] = json::object(); }},
      {"capacity.probes[2].level is not a number",
       [&](json::object& o) { probe(o, 2)["level"] = "16"; }},
      {"capacity.probes[1].verdict is \"maybe\", not one of holds, fails, unclear",
       [&](json::object& o) { probe(o, 1)["verdict"] = "maybe"; }},
      {"capacity.probes[0].decided_by is \"luck\"",
       [&](json::object& o) { probe(o, 0)["decided_by"] = "luck"; }},
      {"capacity.probes[3].objectives[0].value is not a number",
       [&](json::object& o) {
         probe(o, 3)["objectives"].as_array()[0].as_object()["value"] = "0.4";
       }},
      {"capacity.probes[3].objectives[0].value is missing",
       [&](json::object& o) {
         probe(o, 3)["objectives"].as_array()[0].as_object().erase("value");
       }},
      {"capacity.probes[3].objectives[1].high is not a number",
       [&](json::object& o) {
         probe(o, 3)["objectives"].as_array()[1].as_object()["high"] = json::array();
       }},
      {"capacity.probes[4].objectives[2].name \"ttft_p99\" is not an objective of capacity.slo",
       [&](json::object& o) {
         probe(o, 4)["objectives"].as_array()[2].as_object()["name"] = "ttft_p99";
       }},
      {"capacity.probes[4].objectives[1].name \"ttft_p90\" is judged twice",
       [&](json::object& o) {
         probe(o, 4)["objectives"].as_array()[1].as_object()["name"] = "ttft_p90";
       }},
      {"capacity.probes[5].objectives[0].requests is not a non-negative integer",
       [&](json::object& o) {
         probe(o, 5)["objectives"].as_array()[0].as_object()["requests"] = -1;
       }},
      {"capacity.probes[6].repetitions[0] is not an object",
       [&](json::object& o) { probe(o, 6)["repetitions"] = json::array{"r32"}; }},
      {"capacity.answer is missing", [](json::object& o) { o.erase("answer"); }},
      {"capacity.answer.status is \"done\"",
       [](json::object& o) { o["answer"].as_object()["status"] = "done"; }},
      {"capacity.answer.capacity is null for status \"found\"",
       [](json::object& o) { o["answer"].as_object()["capacity"] = nullptr; }},
      {"capacity.answer.spread.repetitions is not a non-negative integer",
       [](json::object& o) { o["answer"].as_object()["spread"].as_object()["repetitions"] = 2.5; }},
      {"capacity.prediction is not an object", [](json::object& o) { o["prediction"] = 20; }},
      {"capacity.prediction.capacity is not a number",
       [](json::object& o) { o["prediction"].as_object()["capacity"] = "20"; }},
  };
  for (const Case& c : cases) {
    json::object o = found();
    c.spoil(o);
    try {
      (void)capacity_charts(o);
      ADD_FAILURE() << "accepted: " << c.expected << "\n" << json::serialize(o);
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(c.expected, 0), 0u)
          << "expected: " << c.expected << "\ngot:      " << e.what();
    }
  }
}

// The drawn charts, pinned: a found capacity with a prediction, and a failure from the least
// load with a null value (docs/charts.md "Capacity charts" shows what they look like).
TEST(CapacityCharts, GoldenSvgs) {
  const auto found_figures = capacity_charts(found());
  testing::expect_golden("tests/report/golden/capacity-ttft-p90.svg", found_figures[0].svg);
  testing::expect_golden("tests/report/golden/capacity-errors.svg", found_figures[2].svg);
  testing::expect_golden("tests/report/golden/capacity-below-min.svg",
                         capacity_charts(below_min())[0].svg);
  // Rendering is deterministic.
  EXPECT_EQ(capacity_charts(found())[0].svg, found_figures[0].svg);
  EXPECT_EQ(capacity_charts(found())[0].png, found_figures[0].png);
}

}  // namespace
}  // namespace dyno::report
