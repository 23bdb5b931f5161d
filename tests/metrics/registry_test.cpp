// The metric registry (metrics/registry.h) against docs/metrics.md: every figure's anchor is a
// heading of the page, and the section under it names the figure; every board key is in the
// page's board table; the registry's typed members, paths and board keys are each unique; every
// figure summary.json holds is a place of docs/schema/summary.schema.json.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace dyno::metrics {
namespace {

/// GitHub's anchor of a heading: lower case; letters, digits, '-', '_' and spaces kept, the
/// rest dropped; spaces become '-'.
std::string slug(const std::string& heading) {
  std::string out;
  for (const unsigned char c : heading) {
    if (std::isalnum(c) != 0) {
      out += static_cast<char>(std::tolower(c));
    } else if (c == '-' || c == '_') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '-';
    } else if (c >= 0x80) {
      continue;  // a non-ASCII character (→, —) is dropped
    }
  }
  return out;
}

/// docs/metrics.md: each heading's anchor → the text of its section (up to the next heading of
/// the same or a higher level).
std::map<std::string, std::string> sections() {
  std::ifstream in(std::string(DYNO_SOURCE_DIR) + "/docs/metrics.md");
  EXPECT_TRUE(in.good());
  std::map<std::string, std::string> out;
  std::vector<std::pair<int, std::string>> open;  // level, anchor
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      const std::size_t level = line.find_first_not_of('#');
      const std::string anchor = slug(line.substr(level + 1));
      while (!open.empty() && open.back().first >= static_cast<int>(level)) open.pop_back();
      open.emplace_back(static_cast<int>(level), anchor);
      out[anchor];
      continue;
    }
    for (const auto& [lvl, a] : open) out[a] += line + "\n";
  }
  return out;
}

TEST(RegistryTest, EveryFigureIsDefinedWhereItsAnchorPoints) {
  const auto page = sections();
  for (const Figure& f : figures()) {
    SCOPED_TRACE(f.path);
    const auto it = page.find(f.anchor);
    ASSERT_NE(it, page.end()) << "no heading of docs/metrics.md has the anchor #" << f.anchor;
    const std::string name = f.formula.empty() ? std::string(leaf(f)) : f.path;
    EXPECT_NE(it->second.find("`" + name + "`"), std::string::npos)
        << "docs/metrics.md #" << f.anchor << " does not name `" << name << "`";
  }
}

TEST(RegistryTest, EveryBoardKeyIsInTheBoardTable) {
  const auto page = sections();
  const auto boards = page.find("comparison-boards-dyno-compare-dyno-report-docscomparemd");
  ASSERT_NE(boards, page.end());
  for (const Figure& f : figures()) {
    for (const BoardView& v : f.board) {
      EXPECT_NE(boards->second.find("`" + v.key + "`"), std::string::npos)
          << "docs/metrics.md \"Comparison boards\" does not list `" << v.key << "`";
    }
  }
}

TEST(RegistryTest, PathsKeysAndMembersAreEachDefinedOnce) {
  std::set<std::string> paths, keys;
  std::set<int> orders;
  std::set<const void*> members;
  for (const Figure& f : figures()) {
    EXPECT_TRUE(paths.insert(f.path).second) << f.path << " twice";
    EXPECT_LE((f.value != nullptr) + (f.count != nullptr) + (f.dist != nullptr), 1) << f.path;
    EXPECT_EQ(f.dist != nullptr && !f.distribution, false) << f.path;
    EXPECT_EQ(f.formula.empty() || f.board.size() == 1, true) << f.path;
    for (const BoardView& v : f.board) {
      EXPECT_TRUE(keys.insert(v.key).second) << v.key << " twice";
      EXPECT_TRUE(orders.insert(v.order).second) << v.key << ": order " << v.order << " twice";
      EXPECT_EQ(v.stat.empty(), !f.distribution) << v.key;
    }
    // A figure the engine measured says whose it is; only the client's are in the typed
    // summary's own members.
    EXPECT_EQ(f.source == Source::kEngine, !f.engine_source.empty()) << f.path;
    if (f.value != nullptr || f.count != nullptr || f.dist != nullptr) {
      EXPECT_EQ(f.source, Source::kClient) << f.path;
    }
  }
}

TEST(RegistryTest, SectionsListTheTypedFiguresInOrder) {
  std::vector<std::string> throughput;
  for (const Figure* f : figures_in("throughput")) throughput.emplace_back(leaf(*f));
  EXPECT_EQ(throughput, (std::vector<std::string>{"service_window_s", "output_tokens_per_s",
                                                  "input_tokens_per_s", "requests_per_s",
                                                  "decode_tokens_per_s", "achieved_concurrency",
                                                  "goodput_requests_per_s", "goodput_requests"}));
  EXPECT_EQ(find_figure("latency_ms.ttft")->dist, &Summary::ttft_ms);
  EXPECT_EQ(find_figure("no.such.figure"), nullptr);
}

/// Whether the schema node `n` (of `root`) lets an object hold `path` ("server.timings.x"): its
/// first key among `properties` — of the node, a `$ref`'d definition, or a branch of
/// anyOf/oneOf/allOf —, then the rest of the path below that key.
bool schema_has(const boost::json::object& root, const boost::json::value& n,
                std::string_view path) {
  if (!n.is_object()) return false;
  const boost::json::object& o = n.get_object();
  if (const auto* ref = o.if_contains("$ref"); ref && ref->is_string()) {
    const std::string_view r = ref->get_string();
    const std::string_view prefix = "#/$defs/";
    if (!r.starts_with(prefix)) return false;
    if (schema_has(root, root.at("$defs").at(r.substr(prefix.size())), path)) return true;
  }
  for (const char* any : {"anyOf", "oneOf", "allOf"}) {
    if (const auto* branches = o.if_contains(any); branches && branches->is_array()) {
      for (const auto& b : branches->get_array()) {
        if (schema_has(root, b, path)) return true;
      }
    }
  }
  if (path.empty()) return true;
  const std::size_t dot = path.find('.');
  const std::string_view key = path.substr(0, dot);
  const auto* props = o.if_contains("properties");
  if (props == nullptr || !props->is_object()) return false;
  const auto* child = props->get_object().if_contains(key);
  return child != nullptr &&
         schema_has(root, *child, dot == std::string_view::npos ? "" : path.substr(dot + 1));
}

TEST(RegistryTest, EveryFigureOfSummaryJsonIsInItsSchema) {
  std::ifstream in(std::string(DYNO_SOURCE_DIR) + "/docs/schema/summary.schema.json");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const boost::json::object schema = boost::json::parse(text.str()).as_object();
  ASSERT_FALSE(schema_has(schema, schema, "no_such.figure"));
  for (const Figure& f : figures()) {
    if (!f.formula.empty()) continue;  // derived by boards, not in summary.json
    EXPECT_TRUE(schema_has(schema, schema, f.path))
        << f.path << " is not in docs/schema/summary.schema.json";
  }
}

}  // namespace
TEST(RegistryTest, EverySelectionMetricIsATypedFigureAndReadsItsValue) {
  Summary s;
  s.output_tokens_per_s = 812.5;
  s.ttft_ms.p50 = 41.0;
  s.decode_rate_per_user.p50 = 55.5;
  std::set<std::string_view> names;
  for (const SelectionMetric& m : selection_metrics()) {
    SCOPED_TRACE(std::string(m.name));
    EXPECT_TRUE(names.insert(m.name).second) << "named twice";
    const Figure* f = find_figure(m.path);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(typed(*f));
    EXPECT_EQ(f->distribution, !m.stat.empty());
    if (f->distribution) {
      // The statistic is one a distribution has: it reads what statistic() reads.
      Distribution d;
      d.p50 = 1.0;
      EXPECT_EQ(statistic(d, m.stat), 1.0);
    }
  }
  EXPECT_EQ(selection_value(s, "output_tokens_per_s"), 812.5);
  EXPECT_EQ(selection_value(s, "ttft_p50_ms"), 41.0);
  EXPECT_EQ(selection_value(s, "decode_rate_p50"), 55.5);
  EXPECT_FALSE(selection_value(s, "tpot_p50_ms"));      // absent in this summary
  EXPECT_FALSE(selection_value(s, "latency_ms.ttft"));  // not a selection name

  // The campaign file's schema and docs/protocols.md list the same names, in the same order.
  std::ifstream in(std::string(DYNO_SOURCE_DIR) + "/docs/schema/campaign.schema.json");
  std::stringstream text;
  text << in.rdbuf();
  const boost::json::value schema = boost::json::parse(text.str());
  const boost::json::array& listed = schema.at("$defs").at("metric").at("enum").as_array();
  std::ifstream docs(std::string(DYNO_SOURCE_DIR) + "/docs/protocols.md");
  std::stringstream doc_text;
  doc_text << docs.rdbuf();
  const std::string protocols = doc_text.str();
  const std::size_t select = protocols.find("`--select METRIC`");
  ASSERT_NE(select, std::string::npos);
  std::size_t at = select;
  ASSERT_EQ(listed.size(), selection_metrics().size());
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const std::string_view name = selection_metrics()[i].name;
    EXPECT_EQ(listed[i].as_string(), name);
    at = protocols.find("`" + std::string(name) + "`", at);
    EXPECT_NE(at, std::string::npos) << name << " is not listed under --select, in order";
  }
}

TEST(RegistryTest, EveryBoardFigureHasATypedReader) {
  // compare::read_figure reads a board figure from the typed summary, its typed `server`
  // section (record/server_section.h) or its typed `energy` section (record/energy_section.h),
  // or derives it by its formula; a figure on a board in none of these would read as absent.
  for (const Figure& f : figures()) {
    if (f.board.empty()) continue;
    SCOPED_TRACE(f.path);
    const bool engine = f.path.starts_with("server.");
    const bool energy = f.path.starts_with("energy.") && !f.distribution;
    EXPECT_TRUE(typed(f) || engine || energy || !f.formula.empty());
  }
}

}  // namespace dyno::metrics

namespace dyno::metrics {
namespace {

// A mean power above the peak of the samples: the energy counter and the power samples
// disagree; within the counter's window edges (1 %) they do not.
TEST(PowerSources, AMeanAboveThePeakBeyondTheMarginDisagrees) {
  EXPECT_FALSE(power_sources_disagree(600.3, 600.0));  // a constant draw read at sample times
  EXPECT_TRUE(power_sources_disagree(800.0, 600.0));
  EXPECT_TRUE(power_sources_disagree(320.0, 298.0));
  EXPECT_FALSE(power_sources_disagree(280.0, 298.0));
  EXPECT_FALSE(power_sources_disagree(std::nullopt, 298.0));
  EXPECT_FALSE(power_sources_disagree(320.0, std::nullopt));
}

}  // namespace
}  // namespace dyno::metrics
