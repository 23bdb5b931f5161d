// GET /metrics of the simulated engine: the vLLM and llama.cpp dialects against the usage the
// same server reported on its streams.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/server.h"
#include "sim/sim_client.h"

namespace dyno::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

using testing::Client;
using testing::fast_profile;
using testing::Reply;

// The exposition, scanned line by line: samples by "name{labels}" (or "name"), and the names
// that have # HELP and # TYPE lines.
struct Metrics {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::set<std::string> helps;

  bool has(const std::string& key) const { return samples.count(key) != 0; }
  double at(const std::string& key) const {
    const auto it = samples.find(key);
    EXPECT_NE(it, samples.end()) << "no sample " << key;
    return it == samples.end() ? -1.0 : it->second;
  }
};

Metrics parse_metrics(const std::string& text) {
  Metrics m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string rest = line.substr(7);
      m.helps.insert(rest.substr(0, rest.find(' ')));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string rest = line.substr(7);
      const std::size_t sp = rest.find(' ');
      m.types[rest.substr(0, sp)] = rest.substr(sp + 1);
      continue;
    }
    EXPECT_NE(line[0], '#') << line;
    const std::size_t sp = line.rfind(' ');
    EXPECT_NE(sp, std::string::npos) << line;
    if (sp == std::string::npos) continue;
    m.samples[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  // Every sample belongs to a family with HELP and TYPE lines.
  for (const auto& [key, value] : m.samples) {
    const std::string name = key.substr(0, key.find('{'));
    EXPECT_TRUE(m.helps.count(name)) << "no # HELP for " << name;
    EXPECT_TRUE(m.types.count(name)) << "no # TYPE for " << name;
  }
  return m;
}

Metrics get_metrics(Client& c) {
  const Reply r = c.request(http::verb::get, "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(std::string(r.headers[http::field::content_type]), "text/plain; version=0.0.4");
  return parse_metrics(r.body);
}

const std::string kLabel = "{model_name=\"dyno-sim\"}";
std::string vllm(const std::string& name) { return "vllm:" + name + kLabel; }
std::string success(const std::string& reason) {
  return "vllm:request_success_total{model_name=\"dyno-sim\",finished_reason=\"" + reason + "\"}";
}

// What one streamed chat response reported.
struct Outcome {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t token_events = 0;  // chunks carrying content
  std::string finish_reason;
};

std::string chat_body(std::int64_t max_tokens, bool ignore_eos) {
  json::object o = testing::chat_body(max_tokens);
  o["ignore_eos"] = ignore_eos;
  return json::serialize(o);
}

Outcome stream_chat(Client& c, std::int64_t max_tokens, bool ignore_eos) {
  const Reply r =
      c.request(http::verb::post, "/v1/chat/completions", chat_body(max_tokens, ignore_eos));
  EXPECT_EQ(r.status, 200);
  Outcome out;
  for (const std::string& data : testing::sse_data(r.body)) {
    if (data == "[DONE]") continue;
    const json::object o = json::parse(data).as_object();
    const json::array& choices = o.at("choices").as_array();
    if (choices.empty()) {
      const json::object& usage = o.at("usage").as_object();
      out.prompt_tokens = usage.at("prompt_tokens").to_number<std::int64_t>();
      out.completion_tokens = usage.at("completion_tokens").to_number<std::int64_t>();
      continue;
    }
    const json::object& choice = choices[0].as_object();
    if (const auto* fr = choice.if_contains("finish_reason"); fr && fr->is_string()) {
      out.finish_reason = std::string(fr->get_string());
    }
    const json::object& delta = choice.at("delta").as_object();
    if (const auto* t = delta.if_contains("content"); t && !t->as_string().empty()) {
      ++out.token_events;
    }
  }
  EXPECT_GT(out.completion_tokens, 0);
  return out;
}

TEST(ServerMetrics, CountersMatchUsageAndGaugesIdle) {
  ServerOptions o;
  o.profile = fast_profile("small-gpu");
  o.profile.eos_probability = 0.1;  // so that a long request ends with "stop"
  Server server(o);
  Client c(server.start());

  const Metrics before = get_metrics(c);
  for (const char* name :
       {"prompt_tokens_total", "generation_tokens_total", "num_preemptions_total",
        "num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"}) {
    EXPECT_EQ(before.at(vllm(name)), 0.0) << name;
  }
  EXPECT_EQ(before.at(success("length")), 0.0);
  EXPECT_EQ(before.at(success("stop")), 0.0);
  for (const char* name : {"llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total",
                           "llamacpp:requests_processing", "llamacpp:requests_deferred",
                           "llamacpp:kv_cache_usage_ratio"}) {
    EXPECT_EQ(before.at(name), 0.0) << name;
  }
  EXPECT_EQ(before.types.at("vllm:generation_tokens_total"), "counter");
  EXPECT_EQ(before.types.at("vllm:num_requests_running"), "gauge");
  EXPECT_EQ(before.types.at("llamacpp:tokens_predicted_total"), "counter");
  EXPECT_EQ(before.types.at("llamacpp:kv_cache_usage_ratio"), "gauge");
  EXPECT_FALSE(before.has(vllm("spec_decode_num_draft_tokens_total")));  // no speculation

  const std::vector<Outcome> outcomes = {stream_chat(c, 30, true), stream_chat(c, 200, false),
                                         stream_chat(c, 50, false)};
  std::int64_t prompt = 0;
  std::int64_t completion = 0;
  std::map<std::string, double> finished;
  for (const Outcome& out : outcomes) {
    prompt += out.prompt_tokens;
    completion += out.completion_tokens;
    finished[out.finish_reason] += 1.0;
  }
  EXPECT_EQ(outcomes[0].finish_reason, "length");
  EXPECT_EQ(outcomes[0].completion_tokens, 30);
  EXPECT_EQ(outcomes[1].finish_reason, "stop");  // P(no EOS in 200 draws at 0.1) ~ 7e-10
  EXPECT_LT(outcomes[1].completion_tokens, 200);

  const Metrics after = get_metrics(c);
  EXPECT_EQ(after.at(vllm("prompt_tokens_total")), static_cast<double>(prompt));
  EXPECT_EQ(after.at(vllm("generation_tokens_total")), static_cast<double>(completion));
  EXPECT_EQ(after.at("llamacpp:prompt_tokens_total"), static_cast<double>(prompt));
  EXPECT_EQ(after.at("llamacpp:tokens_predicted_total"), static_cast<double>(completion));
  EXPECT_EQ(after.at(success("length")), finished["length"]);
  EXPECT_EQ(after.at(success("stop")), finished["stop"]);
  EXPECT_EQ(after.at(vllm("num_preemptions_total")), 0.0);
  for (const char* name : {"num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"}) {
    EXPECT_EQ(after.at(vllm(name)), 0.0) << name;
  }
  for (const char* name : {"llamacpp:requests_processing", "llamacpp:requests_deferred",
                           "llamacpp:kv_cache_usage_ratio"}) {
    EXPECT_EQ(after.at(name), 0.0) << name;
  }
}

TEST(ServerMetrics, GaugesShowARequestInFlight) {
  ServerOptions o;
  o.profile = fast_profile("small-gpu");
  o.profile.kv_capacity_tokens = 100000;
  Server server(o);
  Client c(server.start());
  Client busy(server.port());
  busy.send(http::verb::post, "/v1/chat/completions", chat_body(20000, true));  // never read

  Metrics m;
  for (int i = 0; i < 500; ++i) {
    m = get_metrics(c);
    if (m.at(vllm("num_requests_running")) == 1.0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(m.at(vllm("num_requests_running")), 1.0);
  EXPECT_EQ(m.at(vllm("num_requests_waiting")), 0.0);
  EXPECT_EQ(m.at("llamacpp:requests_processing"), 1.0);
  // The reservation is prompt + max_tokens: a little over 20000 of 100000.
  const double kv = m.at(vllm("kv_cache_usage_perc"));
  EXPECT_GT(kv, 0.2);
  EXPECT_LT(kv, 0.21);
  EXPECT_EQ(m.at("llamacpp:kv_cache_usage_ratio"), kv);

  busy.close();  // the sequence is dropped at its next write
  for (int i = 0; i < 500; ++i) {
    m = get_metrics(c);
    if (m.at(vllm("num_requests_running")) == 0.0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(m.at(vllm("num_requests_running")), 0.0);
  EXPECT_EQ(m.at(vllm("kv_cache_usage_perc")), 0.0);
}

TEST(ServerMetrics, SpecDecodeCounters) {
  ServerOptions o;
  o.profile = fast_profile("spec");
  Server server(o);
  Client c(server.start());

  const Metrics before = get_metrics(c);
  EXPECT_EQ(before.at(vllm("spec_decode_num_draft_tokens_total")), 0.0);
  EXPECT_EQ(before.at(vllm("spec_decode_num_accepted_tokens_total")), 0.0);

  std::int64_t completion = 0;
  std::int64_t decode_events = 0;  // every content chunk but each stream's first (prefill)
  for (const std::int64_t max_tokens : {100, 150, 200}) {
    const Outcome out = stream_chat(c, max_tokens, true);
    EXPECT_EQ(out.completion_tokens, max_tokens);
    completion += out.completion_tokens;
    decode_events += out.token_events - 1;
  }
  const Metrics after = get_metrics(c);
  const double drafts = after.at(vllm("spec_decode_num_draft_tokens_total"));
  const double accepted = after.at(vllm("spec_decode_num_accepted_tokens_total"));
  EXPECT_GT(drafts, 0.0);
  EXPECT_GT(accepted, 0.0);
  EXPECT_LE(accepted, drafts);
  EXPECT_EQ(drafts, static_cast<double>(o.profile.spec_tokens * decode_events));
  // Each decode event emits one verified token plus its accepted drafts.
  EXPECT_EQ(accepted, static_cast<double>(completion - 3 - decode_events));
  EXPECT_EQ(after.at(vllm("generation_tokens_total")), static_cast<double>(completion));
  EXPECT_EQ(after.at(success("length")), 3.0);
}

}  // namespace
}  // namespace dyno::sim
