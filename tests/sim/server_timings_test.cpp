// The simulated engine's llama.cpp-shaped `timings` on every completed response, checked against
// the request's usage, the model's own step durations and the truth log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "sim/model.h"
#include "sim/server.h"
#include "sim/sim_client.h"
#include "temp_dir.h"

namespace dyno::sim {
namespace {

namespace json = boost::json;
using testing::chat_body;
using testing::Client;
using testing::read_truth;
using testing::Reply;
using testing::sse_data;

// Every JSON `data:` chunk of a streamed body, in order ([DONE] excluded but required last).
std::vector<json::object> chunks_of(const std::string& body) {
  std::vector<json::object> out;
  const std::vector<std::string> events = sse_data(body);
  EXPECT_TRUE(!events.empty() && events.back() == "[DONE]");
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_NE(events[i], "[DONE]") << "data after [DONE]";
    if (events[i] != "[DONE]") out.push_back(json::parse(events[i]).as_object());
  }
  return out;
}

// The one chunk that carries `timings`; it must be the last before [DONE].
json::object timings_of(const std::vector<json::object>& chunks) {
  std::optional<json::object> found;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (const auto* t = chunks[i].if_contains("timings")) {
      EXPECT_EQ(i + 1, chunks.size()) << "timings before the last chunk";
      found = t->as_object();
    }
  }
  EXPECT_TRUE(found) << "no chunk carries timings";
  return found.value_or(json::object{});
}

std::filesystem::path temp_path(const std::string& name) {
  return dyno::testing::process_temp_dir() / ("sim_timings_" + name + ".jsonl");
}

std::int64_t n(const json::value& v) { return v.to_number<std::int64_t>(); }
double d(const json::value& v) { return v.to_number<double>(); }

// The derived fields follow llama.cpp's formulas from the measured ones.
void expect_derived_fields(const json::object& t) {
  const double prompt_ms = d(t.at("prompt_ms"));
  const double predicted_ms = d(t.at("predicted_ms"));
  EXPECT_DOUBLE_EQ(d(t.at("prompt_per_token_ms")), prompt_ms / d(t.at("prompt_n")));
  EXPECT_DOUBLE_EQ(d(t.at("predicted_per_token_ms")), predicted_ms / d(t.at("predicted_n")));
  if (prompt_ms > 0) {
    EXPECT_NEAR(d(t.at("prompt_per_second")), 1e3 / prompt_ms * d(t.at("prompt_n")), 1e-6);
  } else {
    EXPECT_TRUE(t.at("prompt_per_second").is_null());
  }
  if (predicted_ms > 0) {
    EXPECT_NEAR(d(t.at("predicted_per_second")), 1e3 / predicted_ms * d(t.at("predicted_n")), 1e-6);
  } else {
    EXPECT_TRUE(t.at("predicted_per_second").is_null());
  }
}

TEST(ServerTimings, StreamedChatCarriesTimingsConsistentWithTheTruth) {
  const auto truth = temp_path("stream");
  ServerOptions o;
  o.profile = builtin_profile("small-gpu");
  o.truth_path = truth;
  json::object usage;
  json::object timings;
  json::object plain_timings;
  {
    Server server(o);
    Client c(server.start());
    const Reply reply = c.post("/v1/chat/completions", chat_body(30, true, true));
    ASSERT_EQ(reply.status, 200);
    const auto chunks = chunks_of(reply.body);
    ASSERT_FALSE(chunks.empty());
    usage = chunks.back().at("usage").as_object();  // timings ride on the usage chunk
    timings = timings_of(chunks);
    // Without include_usage they ride on the finish_reason chunk.
    const auto plain = chunks_of(c.post("/v1/chat/completions", chat_body(5, true, false)).body);
    plain_timings = timings_of(plain);
    EXPECT_EQ(plain.back().at("choices").at(0).at("finish_reason").as_string(), "length");
    EXPECT_EQ(n(plain_timings.at("predicted_n")), 5);
    server.stop();
  }
  EXPECT_EQ(n(timings.at("cache_n")), 0);
  EXPECT_EQ(n(timings.at("prompt_n")), n(usage.at("prompt_tokens")));
  EXPECT_EQ(n(timings.at("predicted_n")), n(usage.at("completion_tokens")));
  EXPECT_EQ(n(timings.at("predicted_n")), 30);
  EXPECT_FALSE(timings.contains("draft_n"));  // no speculative decoding in this profile
  expect_derived_fields(timings);

  // The engine's own step durations: the prompt in one step, then 29 decode steps that cannot
  // be faster than the model says (one sequence, its context one token longer each step).
  const Model model(o.profile);
  const std::int64_t prompt = n(timings.at("prompt_n"));
  const double prefill_s = model.step_duration(0, 0, prompt);
  double decode_s = 0.0;
  for (std::int64_t ctx = prompt + 1; ctx < prompt + 30; ++ctx) {
    decode_s += model.step_duration(1, ctx, 0);
  }
  const double prompt_ms = d(timings.at("prompt_ms"));
  const double predicted_ms = d(timings.at("predicted_ms"));
  EXPECT_NEAR(prompt_ms, prefill_s * 1e3, 0.0005 + 1e-9);  // one step, start to end
  EXPECT_GE(predicted_ms, decode_s * 1e3 - 0.0005 - 1e-9);

  // The truth log carries the same object and the engine's prefill start; the engine's times
  // come before the writes that carried their tokens.
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 2u);
  const json::object& l = lines[0];
  EXPECT_EQ(l.at("timings").as_object(), timings);
  EXPECT_EQ(lines[1].at("timings").as_object(), plain_timings);
  const std::int64_t prefill_start = n(l.at("prefill_start_ns"));
  constexpr std::int64_t kSlackNs = 2000;  // times in whole µs, double rounding
  EXPECT_GE(prefill_start, n(l.at("received_ns")) - kSlackNs);
  const auto first_token_engine = prefill_start + static_cast<std::int64_t>(prompt_ms * 1e6);
  EXPECT_LE(first_token_engine, n(l.at("first_token_ns")) + kSlackNs);
  const auto last_token_engine = first_token_engine + static_cast<std::int64_t>(predicted_ms * 1e6);
  const auto& times = l.at("event_times_ns").as_array();
  EXPECT_LE(last_token_engine, n(times.back()) + kSlackNs);
  EXPECT_LE(predicted_ms * 1e6, static_cast<double>(n(l.at("done_ns")) - prefill_start));
  std::filesystem::remove(truth);
}

TEST(ServerTimings, NonStreamedAndCompletionsResponsesCarryTimings) {
  ServerOptions o;
  o.profile = builtin_profile("small-gpu");
  o.profile.step_base_s = 0.001;
  Server server(o);
  Client c(server.start());
  const json::value v =
      json::parse(c.post("/v1/chat/completions", chat_body(12, false, false)).body);
  const json::object& t = v.at("timings").as_object();
  EXPECT_EQ(n(t.at("prompt_n")), n(v.at("usage").at("prompt_tokens")));
  EXPECT_EQ(n(t.at("predicted_n")), n(v.at("usage").at("completion_tokens")));
  EXPECT_EQ(n(t.at("predicted_n")), 12);
  EXPECT_GT(d(t.at("predicted_ms")), 0.0);
  expect_derived_fields(t);

  json::object body{{"model", "dyno-sim"},
                    {"prompt", "Once upon a time"},
                    {"max_tokens", 7},
                    {"stream", true},
                    {"stream_options", json::object{{"include_usage", true}}}};
  const auto chunks = chunks_of(c.post("/v1/completions", body).body);
  const json::object ct = timings_of(chunks);
  EXPECT_EQ(n(ct.at("predicted_n")), 7);
  EXPECT_EQ(n(ct.at("prompt_n")), n(chunks.back().at("usage").at("prompt_tokens")));
  body["stream"] = false;
  const json::value cv = json::parse(c.post("/v1/completions", body).body);
  EXPECT_EQ(n(cv.at("timings").at("predicted_n")), 7);
}

TEST(ServerTimings, SpeculativeDraftCountsMatchTheEvents) {
  const auto truth = temp_path("spec");
  ServerOptions o;
  o.profile = builtin_profile("spec");
  o.profile.step_base_s = 0.001;
  o.truth_path = truth;
  std::vector<json::object> timings;
  {
    Server server(o);
    Client c(server.start());
    for (int i = 0; i < 4; ++i) {
      timings.push_back(
          timings_of(chunks_of(c.post("/v1/chat/completions", chat_body(200, true, true)).body)));
    }
    server.stop();
  }
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 4u);
  std::int64_t drafted = 0, accepted = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json::object& t = timings[i];
    EXPECT_EQ(lines[i].at("timings").as_object(), t);
    // One event per engine step: the first (prefill) event drafts nothing; each decode event
    // drafted spec_tokens and accepted all of its tokens but the first.
    const std::int64_t events =
        static_cast<std::int64_t>(lines[i].at("event_tokens").as_array().size());
    EXPECT_EQ(n(t.at("predicted_n")), 200);
    EXPECT_EQ(n(t.at("draft_n")), 3 * (events - 1));
    EXPECT_EQ(n(t.at("draft_n_accepted")), 200 - events);
    drafted += n(t.at("draft_n"));
    accepted += n(t.at("draft_n_accepted"));
  }
  // Leading drafts accepted with p = 0.7 each, stopping at the first rejection: per step
  // (0.7 + 0.7² + 0.7³) / 3 = 0.511 of the drafts are accepted (a little less near the end,
  // where the output cap cuts a step short).
  const double rate = static_cast<double>(accepted) / static_cast<double>(drafted);
  EXPECT_NEAR(rate, 0.511, 0.08);
  std::filesystem::remove(truth);
}

TEST(ServerTimings, ZeroDelayPromptRateIsNullAndFaultsHaveNone) {
  const auto truth = temp_path("faults");
  ServerOptions o;
  o.profile = builtin_profile("firehose");
  o.truth_path = truth;
  o.faults.cut_every = 2;  // the second request is cut after 2 events
  {
    Server server(o);
    Client c(server.start());
    const json::object t =
        timings_of(chunks_of(c.post("/v1/chat/completions", chat_body(20, true, true)).body));
    EXPECT_EQ(d(t.at("prompt_ms")), 0.0);  // a zero-duration prefill step
    EXPECT_TRUE(t.at("prompt_per_second").is_null());
    expect_derived_fields(t);
    Client c2(server.port());
    const Reply cut = c2.post("/v1/chat/completions", chat_body(20, true, true));
    EXPECT_EQ(cut.body.find("\"timings\""), std::string::npos);
    server.stop();
  }
  const auto lines = read_truth(truth);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0].at("timings").is_object());
  EXPECT_EQ(lines[1].at("fault").as_string(), "cut");
  EXPECT_TRUE(lines[1].at("timings").is_null());
  EXPECT_TRUE(lines[1].at("prefill_start_ns").is_null());
  std::filesystem::remove(truth);
}

}  // namespace
}  // namespace dyno::sim
