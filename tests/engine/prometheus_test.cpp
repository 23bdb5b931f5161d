#include "engine/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace dyno::engine {
namespace {

std::string read_data(const std::string& name) {
  const std::string path = std::string(DYNO_SOURCE_DIR) + "/tests/engine/data/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const Family* family(const Exposition& exposition, std::string_view name) {
  for (const Family& f : exposition.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Delta* delta_of(const std::vector<Delta>& deltas, std::string_view name,
                      const std::map<std::string, std::string>& labels = {}) {
  for (const Delta& d : deltas) {
    bool match = d.name == name;
    for (const auto& [key, value] : labels) {
      const auto it = d.labels.find(key);
      match = match && it != d.labels.end() && it->second == value;
    }
    if (match) return &d;
  }
  return nullptr;
}

/// The PrometheusError of parsing `text`, or a failure when it parses.
PrometheusError error_of(std::string_view text) {
  try {
    parse_prometheus(text);
  } catch (const PrometheusError& error) {
    return error;
  }
  ADD_FAILURE() << "parsed without an error: " << text;
  return PrometheusError(0, "none");
}

const std::map<std::string, std::string> kVllmModel = {
    {"model_name", "meta-llama/Llama-3.1-8B-Instruct"}};

TEST(Prometheus, ParsesVllmExposition) {
  const Exposition e = parse_prometheus(read_data("vllm_before.txt"));
  ASSERT_EQ(e.families.size(), 19u);

  const Family* prompt = family(e, "vllm:prompt_tokens_total");
  ASSERT_NE(prompt, nullptr);
  EXPECT_EQ(prompt->type, MetricType::kCounter);
  EXPECT_EQ(prompt->help, "Number of prefill tokens processed.");
  ASSERT_EQ(prompt->samples.size(), 1u);
  EXPECT_EQ(prompt->samples[0].labels,
            (std::map<std::string, std::string>{
                {"engine", "0"}, {"model_name", "meta-llama/Llama-3.1-8B-Instruct"}}));
  EXPECT_EQ(prompt->samples[0].value, 48213.0);
  EXPECT_FALSE(prompt->samples[0].timestamp_ms);

  EXPECT_EQ(value_of(e, "vllm:generation_tokens_total", kVllmModel), 96540.0);
  EXPECT_EQ(value_of(e, "vllm:num_requests_running"), 0.0);
  EXPECT_EQ(value_of(e, "vllm:num_requests_waiting"), 0.0);
  EXPECT_EQ(value_of(e, "vllm:gpu_cache_usage_perc"), 0.0);
  EXPECT_EQ(value_of(e, "vllm:kv_cache_usage_perc"), 0.0);
  EXPECT_EQ(value_of(e, "vllm:num_preemptions_total"), 0.0);
  EXPECT_EQ(value_of(e, "vllm:prefix_cache_queries_total"), 52480.0);
  EXPECT_EQ(value_of(e, "vllm:prefix_cache_hits_total"), 4096.0);
  EXPECT_EQ(value_of(e, "vllm:spec_decode_num_draft_tokens_total"), 12000.0);
  EXPECT_EQ(value_of(e, "vllm:spec_decode_num_accepted_tokens_total"), 8124.0);
  EXPECT_EQ(family(e, "vllm:num_requests_running")->type, MetricType::kGauge);
  EXPECT_EQ(value_of(e, "process_virtual_memory_bytes"), 4.0536786944e10);
  EXPECT_EQ(value_of(e, "vllm:prompt_tokens_created"), 1.7371104331253e9);
  EXPECT_EQ(value_of(e, "vllm:request_success_total", {{"finished_reason", "length"}}), 20.0);
  EXPECT_EQ(value_of(e, "vllm:cache_config_info", {{"block_size", "16"}}), 1.0);

  const Family* ttft = family(e, "vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->type, MetricType::kHistogram);
  ASSERT_EQ(ttft->samples.size(), 25u);  // 23 buckets, _count, _sum
  EXPECT_EQ(ttft->samples[0].name, "vllm:time_to_first_token_seconds_bucket");
  EXPECT_EQ(ttft->samples[0].labels.at("le"), "0.001");
  EXPECT_EQ(ttft->samples[22].labels.at("le"), "+Inf");
  EXPECT_EQ(ttft->samples[22].value, 200.0);
  EXPECT_EQ(ttft->samples[23].name, "vllm:time_to_first_token_seconds_count");
  EXPECT_EQ(ttft->samples[24].name, "vllm:time_to_first_token_seconds_sum");
  EXPECT_EQ(ttft->samples[24].value, 21.873);
  EXPECT_EQ(value_of(e, "vllm:time_to_first_token_seconds_bucket", {{"le", "0.1"}}), 141.0);
  // The _created gauge prometheus_client writes after a histogram is a family of its own.
  EXPECT_EQ(family(e, "vllm:time_to_first_token_seconds_created")->type, MetricType::kGauge);
}

TEST(Prometheus, VllmCounterDeltasKeepHistogramBuckets) {
  const Exposition before = parse_prometheus(read_data("vllm_before.txt"));
  const Exposition after = parse_prometheus(read_data("vllm_after.txt"));
  const std::vector<Delta> deltas = counter_deltas(before, after);
  // 14 counter samples (python_gc ×3, preemptions, prefix queries/hits, prompt, generation,
  // request_success ×3, drafts, draft tokens, accepted tokens) and 25 histogram samples; no
  // gauges, no _created gauges, no info gauge.
  ASSERT_EQ(deltas.size(), 39u);
  EXPECT_EQ(delta_of(deltas, "vllm:num_requests_running"), nullptr);
  EXPECT_EQ(delta_of(deltas, "vllm:prompt_tokens_created"), nullptr);

  const Delta* prompt = delta_of(deltas, "vllm:prompt_tokens_total", kVllmModel);
  ASSERT_NE(prompt, nullptr);
  EXPECT_EQ(prompt->before, 48213.0);
  EXPECT_EQ(prompt->after, 96811.0);
  EXPECT_EQ(prompt->delta, 48598.0);
  EXPECT_FALSE(prompt->reset);
  EXPECT_EQ(delta_of(deltas, "vllm:generation_tokens_total")->delta, 97330.0);
  EXPECT_EQ(delta_of(deltas, "vllm:num_preemptions_total")->delta, 2.0);
  EXPECT_EQ(delta_of(deltas, "vllm:prefix_cache_hits_total")->delta, 4544.0);
  EXPECT_EQ(delta_of(deltas, "vllm:spec_decode_num_accepted_tokens_total")->delta, 8226.0);
  EXPECT_EQ(delta_of(deltas, "vllm:request_success_total", {{"finished_reason", "stop"}})->delta,
            181.0);
  EXPECT_EQ(delta_of(deltas, "python_gc_objects_collected_total", {{"generation", "2"}})->delta,
            0.0);

  const Delta* bucket =
      delta_of(deltas, "vllm:time_to_first_token_seconds_bucket", {{"le", "0.04"}});
  ASSERT_NE(bucket, nullptr);
  EXPECT_EQ(bucket->labels.at("le"), "0.04");
  EXPECT_EQ(bucket->delta, 38.0);
  EXPECT_EQ(delta_of(deltas, "vllm:time_to_first_token_seconds_bucket", {{"le", "+Inf"}})->delta,
            200.0);
  EXPECT_EQ(delta_of(deltas, "vllm:time_to_first_token_seconds_count")->delta, 200.0);
  EXPECT_NEAR(delta_of(deltas, "vllm:time_to_first_token_seconds_sum")->delta, 23.229, 1e-9);
  for (const Delta& d : deltas) EXPECT_FALSE(d.reset) << d.name;
}

TEST(Prometheus, ParsesSglangExposition) {
  const Exposition e = parse_prometheus(read_data("sglang.txt"));
  EXPECT_EQ(e.families.size(), 11u);
  EXPECT_EQ(value_of(e, "sglang:prompt_tokens_total", kVllmModel), 8128902.0);
  EXPECT_EQ(value_of(e, "sglang:num_running_reqs"), 28.0);
  EXPECT_EQ(value_of(e, "sglang:cache_hit_rate"), 0.007507552643049313);
  EXPECT_EQ(family(e, "sglang:cache_hit_rate")->type, MetricType::kGauge);
  const Family* ttft = family(e, "sglang:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->type, MetricType::kHistogram);
  ASSERT_EQ(ttft->samples.size(), 23u);  // _sum first, then 21 buckets, then _count
  EXPECT_EQ(ttft->samples[0].name, "sglang:time_to_first_token_seconds_sum");
  EXPECT_EQ(ttft->samples[0].value, 2.3518659257888794e6);
  EXPECT_EQ(value_of(e, "sglang:time_to_first_token_seconds_bucket", {{"le", "+Inf"}}), 82398.0);
  EXPECT_EQ(value_of(e, "sglang:e2e_request_latency_seconds_count"), 83992.0);
}

TEST(Prometheus, ParsesLlamaCppCaptureAndSeesAResetAcrossServerRestarts) {
  // Captured from llama-server b4748: complete (ends in a newline), counters without labels,
  // and n_busy_slots_per_decode typed as a counter although it is an average.
  const std::string text = read_data("llamacpp_b4748_metrics.txt");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const Exposition before = parse_prometheus(text);
  EXPECT_EQ(before.families.size(), 12u);
  const Family* prompt = family(before, "llamacpp:prompt_tokens_total");
  ASSERT_NE(prompt, nullptr);
  EXPECT_EQ(prompt->type, MetricType::kCounter);
  EXPECT_EQ(prompt->help, "Number of prompt tokens processed.");
  EXPECT_EQ(value_of(before, "llamacpp:prompt_tokens_total"), 21.0);
  EXPECT_EQ(value_of(before, "llamacpp:tokens_predicted_total"), 23.0);
  EXPECT_EQ(value_of(before, "llamacpp:kv_cache_usage_ratio"), 0.00134277);
  EXPECT_EQ(value_of(before, "llamacpp:requests_deferred"), 0.0);

  // Another server process (another model): its counters are lower, read as resets.
  const Exposition after = parse_prometheus(read_data("llamacpp_b4748_metrics_mid-q8.txt"));
  const std::vector<Delta> deltas = counter_deltas(before, after);
  ASSERT_EQ(deltas.size(), 6u);  // the six counters; gauges are left out
  const Delta* tokens = delta_of(deltas, "llamacpp:prompt_tokens_total");
  ASSERT_NE(tokens, nullptr);
  EXPECT_TRUE(tokens->reset);
  EXPECT_EQ(tokens->before, 21.0);
  EXPECT_EQ(tokens->after, 18.0);
  EXPECT_EQ(tokens->delta, 18.0);
  const Delta* seconds = delta_of(deltas, "llamacpp:prompt_seconds_total");
  EXPECT_FALSE(seconds->reset);
  EXPECT_NEAR(seconds->delta, 0.055, 1e-12);
  const Delta* busy = delta_of(deltas, "llamacpp:n_busy_slots_per_decode");
  EXPECT_FALSE(busy->reset);
  EXPECT_EQ(busy->delta, 0.0);
}

TEST(Prometheus, TruncatedLastLineNamesItsLine) {
  std::string text = read_data("llamacpp_b4748_metrics.txt");
  // A capture cut inside its last sample line ("llamacpp:requests_deferred 0\n" → name only).
  text.resize(text.size() - 3);
  const PrometheusError error = error_of(text);
  EXPECT_EQ(error.line(), 36u);
  EXPECT_STREQ(error.what(),
               "prometheus text line 36: missing value for 'llamacpp:requests_deferred'");
  // Cut inside a label value instead.
  const PrometheusError label = error_of("# TYPE x counter\nx{model=\"lla");
  EXPECT_EQ(label.line(), 2u);
}

TEST(Prometheus, HelpAndLabelEscapes) {
  const Exposition e = parse_prometheus(
      "# HELP m A \\\\ backslash,\\na newline and a \"quote\" kept as is.\n"
      "# TYPE m gauge\n"
      "m{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",lines=\"a\\nb\",empty=\"\"} 1\n");
  const Family& f = e.families.at(0);
  EXPECT_EQ(f.help, "A \\ backslash,\na newline and a \"quote\" kept as is.");
  const Sample& s = f.samples.at(0);
  EXPECT_EQ(s.labels.at("path"), "C:\\dir");
  EXPECT_EQ(s.labels.at("quote"), "say \"hi\"");
  EXPECT_EQ(s.labels.at("lines"), "a\nb");
  EXPECT_EQ(s.labels.at("empty"), "");
  // A label value may hold '}', ',', '=' and blanks.
  const Exposition odd = parse_prometheus("x{a=\"} , = {\"} 2\n");
  EXPECT_EQ(odd.families.at(0).samples.at(0).labels.at("a"), "} , = {");
}

TEST(Prometheus, SpecialValuesExponentsAndTimestamps) {
  const Exposition e = parse_prometheus(
      "a NaN\n"
      "b +Inf\n"
      "c -Inf\n"
      "d 1.5e+3 1712345678901\n"
      "e -2E-2\t-5\n"
      "f{l=\"v\"} 7 0\n"
      "g +3\n"
      "h 12345678901234567890\n");
  EXPECT_TRUE(std::isnan(*value_of(e, "a")));
  EXPECT_EQ(value_of(e, "b"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(value_of(e, "c"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(value_of(e, "d"), 1500.0);
  EXPECT_EQ(find(e, "d")->timestamp_ms, 1712345678901);
  EXPECT_EQ(value_of(e, "e"), -0.02);
  EXPECT_EQ(find(e, "e")->timestamp_ms, -5);
  EXPECT_EQ(find(e, "f")->timestamp_ms, 0);
  EXPECT_EQ(value_of(e, "g"), 3.0);
  EXPECT_EQ(value_of(e, "h"), 12345678901234567890.0);
  EXPECT_FALSE(find(e, "a")->timestamp_ms);
}

TEST(Prometheus, TrailingCommaBlanksAndEmptyLabelSets) {
  const Exposition e = parse_prometheus(
      "\n"
      "   \n"
      "x{a=\"1\",b=\"2\",} 1\n"
      "y { a = \"1\" , } 2\n"
      "z{} 3\n"
      "  w\t4  \n");
  EXPECT_EQ(find(e, "x")->labels, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(find(e, "y")->labels, (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_TRUE(find(e, "z")->labels.empty());
  EXPECT_EQ(value_of(e, "w"), 4.0);
}

TEST(Prometheus, UntypedSamplesAndCommentsAndOrder) {
  const Exposition e = parse_prometheus(
      "# a plain comment\n"
      "# type lowercase_is_a_comment counter\n"
      "# HELP\n"
      "loose{k=\"1\"} 1\n"
      "# TYPE typed gauge\n"
      "typed 2\n"
      "loose{k=\"2\"} 3\n"
      "# TYPE explicit untyped\n"
      "explicit 4\n");
  ASSERT_EQ(e.families.size(), 3u);
  EXPECT_EQ(e.families[0].name, "loose");
  EXPECT_EQ(e.families[0].type, MetricType::kUntyped);
  EXPECT_EQ(e.families[0].help, "");
  EXPECT_EQ(e.families[0].samples.size(), 2u);
  EXPECT_EQ(e.families[1].name, "typed");
  EXPECT_EQ(e.families[2].type, MetricType::kUntyped);
  EXPECT_EQ(metric_type_name(MetricType::kUntyped), "untyped");
  EXPECT_EQ(metric_type_name(MetricType::kHistogram), "histogram");
}

TEST(Prometheus, CrlfLineEndings) {
  const Exposition e = parse_prometheus(
      "# HELP vllm:num_requests_running Running.\r\n"
      "# TYPE vllm:num_requests_running gauge\r\n"
      "vllm:num_requests_running{model_name=\"m\"} 3\r\n"
      "\r\n"
      "vllm:other 1 1000\r\n");
  EXPECT_EQ(e.families.at(0).help, "Running.");
  EXPECT_EQ(e.families.at(0).type, MetricType::kGauge);
  EXPECT_EQ(value_of(e, "vllm:num_requests_running", {{"model_name", "m"}}), 3.0);
  EXPECT_EQ(find(e, "vllm:other")->timestamp_ms, 1000);
  const PrometheusError error = error_of("a 1\r\nb\r\n");
  EXPECT_STREQ(error.what(), "prometheus text line 2: missing value for 'b'");
}

TEST(Prometheus, OpenMetricsStyleCounterAndSummary) {
  const Exposition e = parse_prometheus(
      "# HELP requests Requests served.\n"
      "# TYPE requests counter\n"
      "requests_total{code=\"200\"} 10\n"
      "requests_total{code=\"500\"} 1\n"
      "# TYPE rpc_seconds summary\n"
      "rpc_seconds{quantile=\"0.5\"} 0.01\n"
      "rpc_seconds{quantile=\"0.99\"} 0.2\n"
      "rpc_seconds_sum 3.5\n"
      "rpc_seconds_count 120\n");
  ASSERT_EQ(e.families.size(), 2u);
  EXPECT_EQ(e.families[0].name, "requests");
  EXPECT_EQ(e.families[0].type, MetricType::kCounter);
  EXPECT_EQ(e.families[0].samples.size(), 2u);
  EXPECT_EQ(e.families[0].samples[1].name, "requests_total");
  EXPECT_EQ(e.families[1].type, MetricType::kSummary);
  EXPECT_EQ(e.families[1].samples.size(), 4u);

  const Exposition later = parse_prometheus(
      "# TYPE requests counter\n"
      "requests_total{code=\"200\"} 25\n"
      "requests_total{code=\"500\"} 1\n"
      "# TYPE rpc_seconds summary\n"
      "rpc_seconds{quantile=\"0.5\"} 0.02\n"
      "rpc_seconds{quantile=\"0.99\"} 0.1\n"
      "rpc_seconds_sum 4\n"
      "rpc_seconds_count 150\n");
  const std::vector<Delta> deltas = counter_deltas(e, later);
  ASSERT_EQ(deltas.size(), 4u);  // quantiles are not cumulative
  EXPECT_EQ(delta_of(deltas, "requests_total", {{"code", "200"}})->delta, 15.0);
  EXPECT_EQ(delta_of(deltas, "requests_total", {{"code", "500"}})->delta, 0.0);
  EXPECT_EQ(delta_of(deltas, "rpc_seconds_sum")->delta, 0.5);
  EXPECT_EQ(delta_of(deltas, "rpc_seconds_count")->delta, 30.0);
}

TEST(Prometheus, CounterDeltasResetsAndMissingSeries) {
  const Exposition before = parse_prometheus(
      "# TYPE vllm:prompt_tokens_total counter\n"
      "vllm:prompt_tokens_total{model_name=\"a\"} 1000\n"
      "vllm:prompt_tokens_total{model_name=\"b\"} 500\n"
      "vllm:prompt_tokens_total{model_name=\"gone\"} 7\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running 9\n"
      "# TYPE odd counter\n"
      "odd NaN\n");
  const Exposition after = parse_prometheus(
      "# TYPE vllm:prompt_tokens_total counter\n"
      "vllm:prompt_tokens_total{model_name=\"a\"} 1500\n"
      "vllm:prompt_tokens_total{model_name=\"b\"} 120\n"
      "vllm:prompt_tokens_total{model_name=\"new\"} 3\n"
      "vllm:prompt_tokens_total{model_name=\"a\",engine=\"1\"} 4\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running 1\n"
      "# TYPE odd counter\n"
      "odd 5\n");
  const std::vector<Delta> deltas = counter_deltas(before, after);
  ASSERT_EQ(deltas.size(), 3u);  // labels must match exactly; gauges are left out
  EXPECT_EQ(deltas[0].labels.at("model_name"), "a");
  EXPECT_EQ(deltas[0].delta, 500.0);
  EXPECT_FALSE(deltas[0].reset);
  EXPECT_EQ(deltas[1].labels.at("model_name"), "b");
  EXPECT_TRUE(deltas[1].reset);
  EXPECT_EQ(deltas[1].before, 500.0);
  EXPECT_EQ(deltas[1].after, 120.0);
  EXPECT_EQ(deltas[1].delta, 120.0);
  EXPECT_EQ(deltas[2].name, "odd");
  EXPECT_TRUE(std::isnan(deltas[2].delta));
  EXPECT_FALSE(deltas[2].reset);
}

TEST(Prometheus, FindAndValueOfMatchLabelSubsets) {
  const Exposition e = parse_prometheus(
      "# TYPE vllm:request_success_total counter\n"
      "vllm:request_success_total{finished_reason=\"stop\",model_name=\"a\"} 10\n"
      "vllm:request_success_total{finished_reason=\"length\",model_name=\"a\"} 2\n"
      "vllm:request_success_total{finished_reason=\"stop\",model_name=\"b\"} 30\n");
  EXPECT_EQ(value_of(e, "vllm:request_success_total"), 10.0);  // the first in text order
  EXPECT_EQ(value_of(e, "vllm:request_success_total", {{"model_name", "b"}}), 30.0);
  EXPECT_EQ(value_of(e, "vllm:request_success_total",
                     {{"model_name", "a"}, {"finished_reason", "length"}}),
            2.0);
  EXPECT_FALSE(value_of(e, "vllm:request_success_total", {{"model_name", "c"}}));
  EXPECT_FALSE(value_of(e, "vllm:request_success_total", {{"engine", "0"}}));
  EXPECT_FALSE(value_of(e, "vllm:request_success"));  // sample names, not prefixes
  EXPECT_EQ(find(e, "missing"), nullptr);
  const Sample* s = find(e, "vllm:request_success_total", {{"finished_reason", "length"}});
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->labels.at("model_name"), "a");
}

struct BadCase {
  const char* text;
  std::size_t line;
  const char* message;
};

TEST(Prometheus, MalformedLinesNameTheLineAndTheProblem) {
  const BadCase cases[] = {
      {"a 1\n\nb\n", 3, "missing value for 'b'"},
      {"x{a=\"1\"}\n", 1, "missing value for 'x'"},
      {"a 1\nx{a=\"1} 2\n", 2, "unterminated string in the value of label 'a'"},
      {"x{a=\"1\" 2\n", 1, "expected ',' or '}' after the value of label 'a'"},
      {"x{a=\"1\",b=\"2\"", 1, "unterminated label set of 'x'"},
      {"# TYPE x gauge\nx abc\n", 2, "bad value 'abc' for 'x'"},
      {"x 1.2.3\n", 1, "bad value '1.2.3' for 'x'"},
      {"x ++1\n", 1, "bad value '++1' for 'x'"},
      {"x 1 12.5\n", 1, "bad timestamp '12.5' for 'x'"},
      {"x 1 2 3\n", 1, "unexpected text '3' after the timestamp of 'x'"},
      {"x{a=1} 1\n", 1, "expected '\"' to open the value of label 'a'"},
      {"x{a=\"\\t\"} 1\n", 1, "unknown escape sequence '\\t' in the value of label 'a'"},
      {"x{a=\"1\",a=\"2\"} 1\n", 1, "duplicate label 'a' in 'x'"},
      {"x{,} 1\n", 1, "expected a label name or '}' in the labels of 'x'"},
      {"x{1a=\"1\"} 1\n", 1, "expected a label name or '}' in the labels of 'x'"},
      {"x{a \"1\"} 1\n", 1, "expected '=' after label 'a'"},
      {"x{a=\"1\"}2\n", 1, "expected a blank between the labels and the value of 'x'"},
      {"1x 1\n", 1, "expected a metric name, found '1x'"},
      {"x-y 1\n", 1, "unexpected character '-' in metric name 'x'"},
      {"# TYPE x gauges\n", 1, "unknown metric type 'gauges'"},
      {"# TYPE x\n", 1, "TYPE line for 'x' has no type"},
      {"# TYPE x gauge extra\n", 1, "unexpected text 'extra' after the TYPE of 'x'"},
      {"# TYPE x gauge\n# TYPE x counter\n", 2, "second TYPE line for 'x'"},
      {"# HELP x a\n# HELP x b\n", 2, "second HELP line for 'x'"},
      {"x 1\n# TYPE x counter\n", 2, "TYPE line for 'x' after its samples"},
      {"h_bucket{le=\"1\"} 1\n# TYPE h histogram\n", 2, "TYPE line for 'h' after its samples"},
      {"# TYPE 9x gauge\n", 1, "invalid metric name '9x' in a TYPE line"},
      {"# HELP x bad \\t escape\n", 1, "unknown escape sequence '\\t' in HELP text"},
      {"# TYPE h histogram\nh_bucket 1\n", 2, "'h_bucket' of histogram 'h' has no 'le' label"},
      {"# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", 2, "bad 'le' value 'x' for 'h_bucket'"},
      {"# TYPE h histogram\nh 1\n", 2,
       "sample 'h' of a histogram needs a _bucket, _sum or _count suffix"},
      {"# TYPE s summary\ns 1\n", 2, "'s' of summary 's' has no 'quantile' label"},
  };
  for (const BadCase& c : cases) {
    const PrometheusError error = error_of(c.text);
    EXPECT_EQ(error.line(), c.line) << c.text;
    EXPECT_EQ(std::string(error.what()),
              "prometheus text line " + std::to_string(c.line) + ": " + c.message)
        << c.text;
  }
}

TEST(Prometheus, EmptyInput) {
  EXPECT_TRUE(parse_prometheus("").families.empty());
  EXPECT_TRUE(parse_prometheus("\n\n# only comments\n").families.empty());
}

}  // namespace
}  // namespace dyno::engine
