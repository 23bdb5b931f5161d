// summary.json's `server` section read typed (record/server_section.h): each form the schema
// allows — no /metrics, /metrics unreadable, /metrics counted, with every form of `timings` and
// with gauges — reads into the typed section; a section set wrong throws naming the key, on
// its own and when the summary is read; a figure looked up by its registry path is the number
// the JSON holds there; every summary.json this repository keeps reads.
#include "record/server_section.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "metrics/registry.h"
#include "record/record_schema.h"
#include "record/run_writer.h"
#include "record/summary_file.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::record::server_figure;
using dyno::record::server_section_from_json;
using dyno::record::server_section_of;
using dyno::record::ServerSection;

fs::path source_root() { return fs::path(DYNO_SOURCE_DIR); }

json::object parse_file(const fs::path& p) {
  return json::parse(dyno::record::read_file(p)).as_object();
}

/// A distribution as summary.json writes one, `count` null when `count` < 0.
json::object distribution(std::int64_t count, double p50) {
  return json::object{{"count", count < 0 ? json::value(nullptr) : json::value(count)},
                      {"mean", p50 + 1},
                      {"stddev", 2.5},
                      {"min", p50 - 10},
                      {"p50", p50},
                      {"p90", p50 + 5},
                      {"p95", p50 + 6},
                      {"p99", p50 + 7},
                      {"p99_9", p50 + 8},
                      {"max", p50 + 9},
                      {"jitter_p95_minus_p50", 6.0}};
}

json::object response_timings() {
  return json::object{{"source", "response timings"},
                      {"requests_with_timings", 40},
                      {"requests_without_timings", 2},
                      {"prompt_tokens_computed", 5120},
                      {"prompt_tokens_cached", 1024},
                      {"prompt_cached_fraction", 0.1666},
                      {"predicted_tokens", 2560},
                      {"prompt_ms", distribution(40, 31.5)},
                      {"ttft_minus_prompt_ms", distribution(40, 4.25)},
                      {"prefill_rate", distribution(40, 4100.0)},
                      {"prefill_tokens_per_s", 4012.75},
                      {"decode_rate_per_user", distribution(40, 88.5)},
                      {"draft_tokens", 900},
                      {"draft_tokens_accepted", 630},
                      {"spec_decode_acceptance_rate", 0.7}};
}

json::object gauges() {
  json::object series = distribution(12, 3.0);
  series["last"] = 4.0;
  json::object idle = distribution(12, 0.0);
  idle["last"] = nullptr;
  return json::object{
      {"period_ms", 250.0},
      {"scrapes", 12},
      {"failed_scrapes", 1},
      {"series", json::object{{"vllm:num_requests_running{model_name=\"m\"}", series},
                              {"vllm:num_requests_waiting{model_name=\"m\"}", idle}}}};
}

/// /metrics counted, with timings and gauges.
json::object counted() {
  return json::object{
      {"source", "/metrics"},
      {"dialect", "vllm"},
      {"prompt_tokens", 6144.0},
      {"generation_tokens", 2560.0},
      {"preemptions", 0.0},
      {"prefix_cache_hit_rate", 0.75},
      {"prefix_cache_queries", 1000.0},
      {"prefix_cache_hits", 750.0},
      {"spec_decode_acceptance_rate", 0.68},
      {"counter_reset", false},
      {"counters", json::object{{"vllm:prompt_tokens_total{model_name=\"m\"}", 6144.0},
                                {"vllm:num_preemptions_total{model_name=\"m\"}", nullptr}}},
      {"timings", response_timings()},
      {"gauges", gauges()}};
}

/// Every form of the section the schema allows, by name.
std::vector<std::pair<std::string, json::object>> every_form() {
  json::object unreadable{{"source", "/metrics"},
                          {"error", "line 3: a sample without a value"},
                          {"timings", json::object{{"source", "response timings"},
                                                   {"requests_with_timings", 0},
                                                   {"requests_without_timings", 8},
                                                   {"reason", "no response carried timings"}}},
                          {"gauges", gauges()}};
  json::object bench{{"source", nullptr},
                     {"reason", "an in-process benchmark: no server, no /metrics"},
                     {"timings", json::object{{"source", "in-process benchmark"},
                                              {"test", "pp512"},
                                              {"repetitions", nullptr},
                                              {"prefill_rate", distribution(-1, 5000.0)},
                                              {"decode_rate_per_user", distribution(0, 0.0)}}}};
  json::object stated{{"source", nullptr},
                      {"reason", "not in the imported file"},
                      {"timings", json::object{{"source", "stated by the imported file"},
                                               {"prefill_tokens_per_s", 1234.5}}}};
  return {{"absent", json::object{{"source", nullptr}, {"reason", "no --url, no /metrics"}}},
          {"unreadable", unreadable},
          {"counted", counted()},
          {"in-process benchmark", bench},
          {"stated", stated}};
}

/// A measured run's summary.json with `server` replaced.
json::object summary_with(const json::object& server) {
  json::object doc = parse_file(source_root() / "tests/compare/data/runs" /
                                "20261130T004322Z-dd1bd8-fast/summary.json");
  doc["server"] = server;
  return doc;
}

/// The value at a dotted path; nullptr when a step is missing.
const json::value* at_path(const json::object& root, const std::string& path) {
  const json::object* o = &root;
  std::size_t from = 0;
  for (;;) {
    const std::size_t dot = path.find('.', from);
    const json::value* v = o->if_contains(path.substr(from, dot - from));
    if (v == nullptr || dot == std::string::npos) return v;
    if (!v->is_object()) return nullptr;
    o = &v->as_object();
    from = dot + 1;
  }
}

std::string what_reading_throws(const json::object& server) {
  try {
    (void)server_section_from_json(server);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ServerSection, EveryFormTheSchemaAllowsReads) {
  for (const auto& [name, server] : every_form()) {
    SCOPED_TRACE(name);
    const json::object doc = summary_with(server);
    const auto problems = dyno::record::record_schema("summary").validate(doc);
    ASSERT_TRUE(problems.empty()) << problems.front().pointer << ": " << problems.front().message;
    const dyno::record::SummaryFile f = dyno::record::summary_file_from_json(doc);
    const std::optional<ServerSection> s = server_section_of(f.server);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->source.has_value(), !server.at("source").is_null());
    EXPECT_EQ(s->reason.has_value(), server.contains("reason"));
    EXPECT_EQ(s->error.has_value(), server.contains("error"));
    EXPECT_EQ(s->counted(), server.contains("counters"));
    EXPECT_EQ(s->timings.has_value(), server.contains("timings"));
    EXPECT_EQ(s->gauges.has_value(), server.contains("gauges"));
    if (s->timings) {
      EXPECT_EQ(s->timings->source, server.at("timings").at("source").as_string());
    }
    // What was read writes back to the same bytes: the section is kept as written.
    EXPECT_EQ(json::serialize(dyno::record::summary_file_to_json(f).at("server")),
              json::serialize(server));
  }
}

TEST(ServerSection, TheCountedFormReadsEveryKey) {
  const ServerSection s = server_section_from_json(counted());
  EXPECT_EQ(s.source, "/metrics");
  EXPECT_EQ(s.dialect, "vllm");
  EXPECT_EQ(s.prompt_tokens, 6144.0);
  EXPECT_EQ(s.generation_tokens, 2560.0);
  EXPECT_EQ(s.preemptions, 0.0);
  EXPECT_EQ(s.prefix_cache_hit_rate, 0.75);
  EXPECT_EQ(s.prefix_cache_queries, 1000.0);
  EXPECT_EQ(s.prefix_cache_hits, 750.0);
  EXPECT_EQ(s.spec_decode_acceptance_rate, 0.68);
  EXPECT_FALSE(s.counter_reset);
  ASSERT_EQ(s.counters.size(), 2u);
  EXPECT_EQ(s.counters.at("vllm:prompt_tokens_total{model_name=\"m\"}"), 6144.0);
  EXPECT_FALSE(s.counters.at("vllm:num_preemptions_total{model_name=\"m\"}"));

  ASSERT_TRUE(s.timings);
  const dyno::record::ServerTimingsSection& t = *s.timings;
  EXPECT_EQ(t.source, "response timings");
  EXPECT_EQ(t.requests_with_timings, 40u);
  EXPECT_EQ(t.requests_without_timings, 2u);
  EXPECT_EQ(t.prompt_tokens_computed, 5120u);
  EXPECT_EQ(t.prompt_tokens_cached, 1024u);
  EXPECT_EQ(t.prompt_cached_fraction, 0.1666);
  EXPECT_EQ(t.predicted_tokens, 2560u);
  ASSERT_TRUE(t.prompt_ms && t.ttft_minus_prompt_ms && t.prefill_rate && t.decode_rate_per_user);
  EXPECT_EQ(t.prompt_ms->p50, 31.5);
  EXPECT_EQ(t.ttft_minus_prompt_ms->p50, 4.25);
  EXPECT_EQ(t.prefill_rate->count, 40u);
  EXPECT_EQ(t.prefill_rate->p999, 4108.0);
  EXPECT_EQ(t.prefill_rate->jitter, 6.0);
  EXPECT_EQ(t.prefill_tokens_per_s, 4012.75);
  EXPECT_EQ(t.decode_rate_per_user->p50, 88.5);
  EXPECT_EQ(t.draft_tokens, 900u);
  EXPECT_EQ(t.draft_tokens_accepted, 630u);
  EXPECT_EQ(t.spec_decode_acceptance_rate, 0.7);
  EXPECT_FALSE(t.reason);
  EXPECT_FALSE(t.test);
  EXPECT_TRUE(t.unknown_counts.empty());

  ASSERT_TRUE(s.gauges);
  EXPECT_EQ(s.gauges->period_ms, 250.0);
  EXPECT_EQ(s.gauges->scrapes, 12u);
  EXPECT_EQ(s.gauges->failed_scrapes, 1u);
  ASSERT_EQ(s.gauges->series.size(), 2u);
  const dyno::record::ServerGaugeSeries& running =
      s.gauges->series.at("vllm:num_requests_running{model_name=\"m\"}");
  EXPECT_EQ(running.samples.count, 12u);
  EXPECT_EQ(running.samples.p50, 3.0);
  EXPECT_EQ(running.last, 4.0);
  EXPECT_FALSE(s.gauges->series.at("vllm:num_requests_waiting{model_name=\"m\"}").last);
}

TEST(ServerSection, AnImportedMeanOverUncountedRepetitionsKeepsItsCountUnknown) {
  const ServerSection s = server_section_from_json(every_form()[3].second);
  ASSERT_TRUE(s.timings);
  EXPECT_FALSE(s.source);
  EXPECT_EQ(s.timings->test, "pp512");
  EXPECT_FALSE(s.timings->repetitions);
  ASSERT_TRUE(s.timings->prefill_rate);
  EXPECT_EQ(s.timings->prefill_rate->count, 0u);
  EXPECT_EQ(s.timings->unknown_counts,
            std::vector<std::string>{"server.timings.prefill_rate.count"});
  EXPECT_EQ(server_figure(s, "server.timings.prefill_rate", "p50"), 5000.0);
  EXPECT_FALSE(server_figure(s, "server.timings.prefill_rate", "count"));
  EXPECT_EQ(server_figure(s, "server.timings.decode_rate_per_user", "count"), 0.0);
}

TEST(ServerSection, AMalformedSectionIsNamedWithItsPath) {
  json::object s = counted();
  s["counter_reset"] = 1;
  EXPECT_EQ(what_reading_throws(s), "summary.json: server.counter_reset is not a boolean");
  s = counted();
  s["spec_decode_acceptance_rate"] = "high";
  EXPECT_EQ(what_reading_throws(s),
            "summary.json: server.spec_decode_acceptance_rate is not a number");
  s = counted();
  s["counters"].as_object()["vllm:x"] = "7";
  EXPECT_EQ(what_reading_throws(s), "summary.json: server.counters.vllm:x is not a number");
  s = counted();
  s["timings"].as_object()["prefill_rate"].as_object()["p50"] = "fast";
  EXPECT_EQ(what_reading_throws(s),
            "summary.json: server.timings.prefill_rate.p50 is not a number");
  s = counted();
  s["timings"].as_object()["prompt_ms"] = 31.5;
  EXPECT_EQ(what_reading_throws(s), "summary.json: server.timings.prompt_ms is not an object");
  s = counted();
  s["timings"].as_object()["draft_tokens"] = -3;
  EXPECT_EQ(what_reading_throws(s),
            "summary.json: server.timings.draft_tokens is not a non-negative integer");
  s = counted();
  s["gauges"].as_object()["series"].as_object()["g"] = json::object{{"count", 1}, {"last", "x"}};
  EXPECT_EQ(what_reading_throws(s), "summary.json: server.gauges.series.g.last is not a number");
  s = counted();
  s.erase("counter_reset");
  EXPECT_EQ(what_reading_throws(s), "summary.json: server.counter_reset is missing");
  EXPECT_EQ(what_reading_throws(json::object{{"source", nullptr}}),
            "summary.json: server.reason is missing (source is null)");
  EXPECT_EQ(what_reading_throws(json::object{{"reason", "none"}}),
            "summary.json: server.source is missing");

  // Reading the summary checks the section, and says where.
  s = counted();
  s["timings"].as_object()["source"] = 3;
  try {
    (void)dyno::record::summary_file_from_json(summary_with(s));
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "summary.json: server.timings.source is not a string");
  }
}

TEST(ServerSection, AFigureByItsRegistryPathIsTheNumberTheJsonHolds) {
  std::size_t compared = 0, present = 0;
  for (const auto& [name, server] : every_form()) {
    SCOPED_TRACE(name);
    const ServerSection s = server_section_from_json(server);
    const json::object doc{{"server", server}};
    for (const dyno::metrics::Figure& f : dyno::metrics::figures()) {
      if (!f.path.starts_with("server.")) continue;
      std::vector<std::string> stats;
      for (const auto& v : f.board) stats.push_back(v.stat);
      if (stats.empty()) stats.emplace_back();
      for (const std::string& stat : stats) {
        SCOPED_TRACE(f.path + " " + stat);
        const json::value* v = at_path(doc, stat.empty() ? f.path : f.path + "." + stat);
        const std::optional<double> want =
            v != nullptr && v->is_number() ? std::optional(v->to_number<double>()) : std::nullopt;
        EXPECT_EQ(server_figure(s, f.path, stat), want);
        ++compared;
        if (want) ++present;
      }
    }
  }
  EXPECT_GE(compared, 7u * 5u);
  EXPECT_GE(present, 8u);

  // Each number and statistic of the section, not only those a board shows.
  const ServerSection s = server_section_from_json(counted());
  const json::object doc{{"server", counted()}};
  for (const char* path :
       {"server.prompt_tokens", "server.generation_tokens", "server.preemptions",
        "server.prefix_cache_hit_rate", "server.prefix_cache_queries", "server.prefix_cache_hits",
        "server.spec_decode_acceptance_rate", "server.timings.requests_with_timings",
        "server.timings.requests_without_timings", "server.timings.prompt_tokens_computed",
        "server.timings.prompt_tokens_cached", "server.timings.prompt_cached_fraction",
        "server.timings.predicted_tokens", "server.timings.prefill_tokens_per_s",
        "server.timings.draft_tokens", "server.timings.draft_tokens_accepted",
        "server.timings.spec_decode_acceptance_rate"}) {
    SCOPED_TRACE(path);
    const json::value* v = at_path(doc, path);
    ASSERT_TRUE(v != nullptr && v->is_number());
    EXPECT_EQ(server_figure(s, path), v->to_number<double>());
  }
  for (const char* path : {"server.timings.prompt_ms", "server.timings.ttft_minus_prompt_ms",
                           "server.timings.prefill_rate", "server.timings.decode_rate_per_user"}) {
    for (const char* stat : {"count", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "p99_9",
                             "max", "jitter_p95_minus_p50"}) {
      SCOPED_TRACE(std::string(path) + " " + stat);
      EXPECT_EQ(server_figure(s, path, stat),
                at_path(doc, std::string(path) + "." + stat)->to_number<double>());
    }
    EXPECT_FALSE(server_figure(s, path));  // a distribution is no number
  }
  EXPECT_FALSE(server_figure(s, "server.counter_reset"));
  EXPECT_FALSE(server_figure(s, "server.prompt_tokens", "p50"));
  EXPECT_FALSE(server_figure(s, "energy.energy_j"));
}

TEST(ServerSection, ASummaryWithoutOneHasNone) {
  json::object doc = summary_with(json::object{});
  doc.erase("server");
  EXPECT_FALSE(server_section_of(dyno::record::summary_file_from_json(doc).server));
}

TEST(ServerSection, EverySummaryTheRepositoryKeepsReads) {
  std::size_t read = 0;
  for (const auto& e : fs::recursive_directory_iterator(source_root() / "tests")) {
    if (e.path().extension() != ".json") continue;
    json::value doc;
    try {
      doc = json::parse(dyno::record::read_file(e.path()));
    } catch (const std::exception&) {
      continue;  // a fixture that is meant not to parse
    }
    std::vector<const json::object*> summaries;
    if (doc.is_object()) summaries.push_back(&doc.as_object());
    if (doc.is_array()) {
      for (const json::value& v : doc.as_array()) {
        if (!v.is_object()) continue;
        if (const json::value* s = v.as_object().if_contains("summary"); s && s->is_object()) {
          summaries.push_back(&s->as_object());
        }
      }
    }
    for (const json::object* s : summaries) {
      const json::value* server = s->if_contains("server");
      if (!s->contains("schema_version") || server == nullptr || !server->is_object()) continue;
      SCOPED_TRACE(e.path().string());
      EXPECT_NO_THROW((void)server_section_from_json(server->as_object()));
      ++read;
    }
  }
  EXPECT_GE(read, 20u);
}

}  // namespace
