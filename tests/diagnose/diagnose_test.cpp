// The diagnosis of a run record (diagnose/diagnose.h, docs/metrics.md "Diagnosis"), on records
// built in memory: each finding says yes, no or unknown by the record's own evidence — the
// server's gauges and counters, the client's traces and self-check — and names what is
// missing when it cannot tell.
#include "diagnose/diagnose.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "metrics/stats.h"
#include "record/record_json.h"

namespace {

namespace json = boost::json;
using dyno::diagnose::diagnose_run;
using dyno::diagnose::Diagnosis;
using dyno::diagnose::Finding;
using dyno::metrics::Trace;
using dyno::record::RunRecord;

constexpr std::int64_t kMs = 1'000'000;

/// A gauge series as summary.json's server.gauges.series keeps it.
json::object series(const std::vector<double>& samples) {
  json::object s = dyno::record::distribution_to_json(dyno::metrics::summarize(samples));
  s["last"] = samples.back();
  return s;
}

/// A server section read from /metrics (dialect vllm), with `gauges` (name → samples) and a
/// preemption count.
json::object server(const std::vector<std::pair<std::string, std::vector<double>>>& gauges,
                    std::optional<double> preemptions = 0.0, const char* dialect = "vllm") {
  json::object per;
  for (const auto& [name, samples] : gauges) per[name] = series(samples);
  json::object s{{"source", "/metrics"},
                 {"dialect", dialect},
                 {"prompt_tokens", 100.0},
                 {"generation_tokens", 100.0},
                 {"preemptions", preemptions ? json::value(*preemptions) : json::value(nullptr)},
                 {"counter_reset", false},
                 {"counters", json::object{}}};
  if (!gauges.empty()) {
    s["gauges"] = json::object{{"period_ms", 100.0},
                               {"scrapes", gauges.front().second.size()},
                               {"failed_scrapes", 0},
                               {"series", std::move(per)}};
  }
  return s;
}

RunRecord with_server(json::object server_section) {
  RunRecord run;
  run.run_id = "r";
  run.summary.emplace();
  run.summary->server = std::move(server_section);
  return run;
}

Finding find(const Diagnosis& d, const std::string& name) {
  for (const auto& f : d.findings) {
    if (f.name == name) return f;
  }
  throw std::logic_error("no finding " + name);
}

double num(const Finding& f, const char* key) { return f.evidence.at(key).to_number<double>(); }
std::string str(const Finding& f, const char* key) {
  return std::string(f.evidence.at(key).as_string());
}

/// A completed measured request: sent, first byte 0.2 ms later, first token, then one token
/// every `gap` ms (n tokens in all), done at the last.
Trace request(std::int64_t sent, std::int64_t first, int n, std::int64_t gap) {
  Trace t;
  t.sent_ns = sent;
  t.first_byte_ns = sent + kMs / 5;
  t.first_token_ns = first;
  for (int i = 0; i < n; ++i) t.event_times_ns.push_back(first + i * gap);
  t.last_token_ns = first + (n - 1) * gap;
  t.done_ns = *t.last_token_ns;
  t.output_tokens = n;
  return t;
}

/// A server that runs one request at a time (FIFO), under a closed loop of concurrency c:
/// each request takes 20 ms of prefill and 10 tokens 5 ms apart once it is served.
std::vector<Trace> one_slot(int c, int requests) {
  std::vector<Trace> out;
  std::vector<std::int64_t> free_at(c, 0);  // when each client slot sends its next request
  std::int64_t server_free = 0;
  for (int i = 0; i < requests; ++i) {
    const int slot = i % c;
    const std::int64_t sent = free_at[slot] + i;  // distinct send times
    const std::int64_t start = std::max(sent, server_free);
    const std::int64_t first = start + 20 * kMs;
    Trace t = request(sent, first, 10, 5 * kMs);
    server_free = *t.done_ns;
    free_at[slot] = *t.done_ns;
    out.push_back(std::move(t));
  }
  return out;
}

/// A batching server: request i sent every 10 ms, first token about 5 ms later, 20 tokens 5 ms
/// apart: up to ten in flight, none waiting.
std::vector<Trace> batched(int requests) {
  std::vector<Trace> out;
  for (int i = 0; i < requests; ++i) {
    const std::int64_t sent = i * 10 * kMs;
    out.push_back(request(sent, sent + 5 * kMs - (i % 3) * kMs / 10, 20, 5 * kMs));
  }
  return out;
}

// ---- queue ----------------------------------------------------------------------------------

TEST(Diagnose, QueueFromGaugesSaysHowManyRanAndWaited) {
  RunRecord run = with_server(
      server({{"vllm:num_requests_running{model_name=\"m\"}", {0, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
              {"vllm:num_requests_waiting{model_name=\"m\"}", {0, 7, 7, 6, 7, 7, 5, 3, 1, 0}}}));
  run.manifest.load.concurrency = 8;
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "yes");
  EXPECT_NE(q.summary.find("at most 1 request at once while up to 7 waited"), std::string::npos)
      << q.summary;
  EXPECT_NE(q.summary.find("one slot"), std::string::npos) << q.summary;
  EXPECT_EQ(num(q, "running_max_requests"), 1.0);
  EXPECT_EQ(num(q, "waiting_max_requests"), 7.0);
  EXPECT_EQ(num(q, "waiting_median_requests"), 5.5);
  EXPECT_EQ(num(q, "gauge_samples_count"), 10.0);
  EXPECT_EQ(num(q, "load_concurrency_requests"), 8.0);
  EXPECT_NE(str(q, "source").find("server gauges"), std::string::npos);
  EXPECT_NE(str(q, "source").find("vllm:num_requests_waiting"), std::string::npos);
}

TEST(Diagnose, QueueFromGaugesSaysNoWhenFewSamplesSawAWait) {
  RunRecord run = with_server(server({{"llamacpp:requests_processing", {0, 4, 4, 4, 4, 4, 3, 0}},
                                      {"llamacpp:requests_deferred", {0, 0, 1, 0, 0, 0, 0, 0}}},
                                     std::nullopt, "llamacpp"));
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "no");
  EXPECT_EQ(num(q, "running_max_requests"), 4.0);
  EXPECT_EQ(num(q, "waiting_max_requests"), 1.0);
  EXPECT_NE(str(q, "source").find("llamacpp:requests_deferred"), std::string::npos);
  // The manifest does not name the engine: the gauges' engine is named instead.
  EXPECT_EQ(str(q, "engine"), "llama.cpp");
}

TEST(Diagnose, TracesShowAQueueTheGaugesMissed) {
  // llama.cpp -np 1 under 4 users with short answers: its deferred gauge, sampled every
  // 100 ms, saw almost nothing waiting; the traces show each request waiting while others
  // were served whole. The finding is the traces', the gauges' figures kept beside them.
  RunRecord run = with_server(server({{"llamacpp:requests_processing", {1, 1, 1, 1, 1}},
                                      {"llamacpp:requests_deferred", {0, 1, 0, 0, 0}}},
                                     std::nullopt, "llamacpp"));
  run.traces = one_slot(4, 24);
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "yes") << q.summary;
  EXPECT_NE(q.summary.find("the server's gauges showed none"), std::string::npos) << q.summary;
  EXPECT_NE(str(q, "source").find("client traces"), std::string::npos);
  EXPECT_EQ(num(q, "gauges_running_max_requests"), 1.0);
  EXPECT_EQ(num(q, "gauges_waiting_median_requests"), 0.0);
  // A batching server's traces do not overturn the gauges' no.
  run.traces = batched(30);
  EXPECT_EQ(find(diagnose_run(run), "queue").verdict, "no");
}

TEST(Diagnose, SGLangGaugesAreRead) {
  RunRecord run = with_server(server(
      {{"sglang:num_running_reqs{engine=\"0\"}", {2, 2, 2}}, {"sglang:num_queue_reqs", {3, 3, 2}}},
      std::nullopt, "sglang"));
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "yes");
  EXPECT_EQ(num(q, "running_max_requests"), 2.0);
}

TEST(Diagnose, QueueFromTheClientWhenThereAreNoGauges) {
  RunRecord run = with_server(server({}));
  run.traces = one_slot(4, 24);
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "yes") << q.summary;
  EXPECT_NE(str(q, "source").find("client traces"), std::string::npos) << str(q, "source");
  EXPECT_NE(str(q, "source").find("not sampled"), std::string::npos) << str(q, "source");
  EXPECT_EQ(num(q, "in_flight_max_requests"), 4.0);
  EXPECT_GE(num(q, "served_whole_while_waiting_median_requests"), 1.0);
  // Decode paced alike in every request: 5 ms a token.
  EXPECT_DOUBLE_EQ(num(q, "tpot_high_third_median_ms"), 5.0);
}

TEST(Diagnose, TtftGrowingWithInFlightWhileDecodeStaysFlatIsQueueing) {
  // Fifteen requests alone (TTFT 10 ms), then fifteen in a burst 1 ms apart (TTFT 50 ms):
  // decode is 5 ms a token in both.
  RunRecord run;
  for (int i = 0; i < 15; ++i) {
    const std::int64_t sent = i * 100 * kMs;
    run.traces.push_back(request(sent, sent + 10 * kMs, 2, 5 * kMs));
  }
  for (int i = 0; i < 15; ++i) {
    const std::int64_t sent = 2000 * kMs + i * kMs;
    run.traces.push_back(request(sent, sent + 50 * kMs, 2, 5 * kMs));
  }
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "yes") << q.summary;
  EXPECT_NE(str(q, "source").find("TTFT against requests in flight"), std::string::npos);
  EXPECT_EQ(num(q, "ttft_growth_ratio"), 5.0);
  EXPECT_EQ(num(q, "tpot_ratio"), 1.0);
  EXPECT_EQ(num(q, "in_flight_low_third_mean_requests"), 1.0);
  EXPECT_EQ(num(q, "in_flight_max_requests"), 15.0);
  // No summary.json: the source says why the gauges were not used.
  EXPECT_NE(str(q, "source").find("no summary.json"), std::string::npos);
}

TEST(Diagnose, ABatchingServerDoesNotQueue) {
  RunRecord run = with_server(server({}));
  run.traces = batched(30);
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "no") << q.summary;
  EXPECT_EQ(num(q, "in_flight_max_requests"), 10.0);
  EXPECT_EQ(num(q, "served_whole_while_waiting_median_requests"), 0.0);
}

TEST(Diagnose, OneRequestAtATimeIsNoQueue) {
  RunRecord run = with_server(server({}));
  run.traces = one_slot(1, 8);
  const Finding q = find(diagnose_run(run), "queue");
  EXPECT_EQ(q.verdict, "no") << q.summary;
  EXPECT_EQ(num(q, "in_flight_max_requests"), 1.0);
}

TEST(Diagnose, NothingToGoOnIsUnknownSayingWhatIsMissing) {
  const RunRecord run;  // no summary, no traces
  const Diagnosis d = diagnose_run(run);
  ASSERT_EQ(d.findings.size(), 5u);
  for (std::size_t i = 0; i < d.findings.size(); ++i) {
    EXPECT_EQ(d.findings[i].name, dyno::diagnose::kFindingNames[i]);
    EXPECT_EQ(d.findings[i].verdict, "unknown") << d.findings[i].name;
    EXPECT_FALSE(str(d.findings[i], "missing").empty()) << d.findings[i].name;
    EXPECT_FALSE(d.findings[i].summary.empty());
  }
}

// ---- kv_cache -------------------------------------------------------------------------------

TEST(Diagnose, KvCacheFullOrPreempted) {
  {
    const RunRecord run = with_server(
        server({{"vllm:kv_cache_usage_perc{model_name=\"m\"}", {0.2, 0.9, 0.97, 0.5}}}));
    const Finding k = find(diagnose_run(run), "kv_cache");
    EXPECT_EQ(k.verdict, "yes") << k.summary;
    EXPECT_EQ(num(k, "kv_usage_max_percent"), 97.0);
    EXPECT_EQ(num(k, "preemptions_count"), 0.0);
  }
  {
    const RunRecord run =
        with_server(server({{"vllm:kv_cache_usage_perc{model_name=\"m\"}", {0.2, 0.5, 0.6}}}, 3.0));
    const Finding k = find(diagnose_run(run), "kv_cache");
    EXPECT_EQ(k.verdict, "yes") << k.summary;
    EXPECT_EQ(num(k, "preemptions_count"), 3.0);
    EXPECT_NE(k.summary.find("3 preemptions"), std::string::npos) << k.summary;
  }
  {
    const RunRecord run =
        with_server(server({{"vllm:kv_cache_usage_perc{model_name=\"m\"}", {0.2, 0.5, 0.6}}}, 0.0));
    const Finding k = find(diagnose_run(run), "kv_cache");
    EXPECT_EQ(k.verdict, "no") << k.summary;
    EXPECT_EQ(num(k, "kv_usage_max_percent"), 60.0);
  }
  {
    // No gauge and no preemption counter: unknown, naming both.
    const RunRecord run = with_server(server({}, std::nullopt));
    const Finding k = find(diagnose_run(run), "kv_cache");
    EXPECT_EQ(k.verdict, "unknown");
    EXPECT_NE(str(k, "missing").find("preemption"), std::string::npos);
  }
  {
    const RunRecord run = with_server(
        json::object{{"source", nullptr}, {"reason", "the engine exposes no /metrics"}});
    const Finding k = find(diagnose_run(run), "kv_cache");
    EXPECT_EQ(k.verdict, "unknown");
    EXPECT_NE(str(k, "missing").find("no /metrics"), std::string::npos) << str(k, "missing");
  }
}

// ---- prefill_interrupts_decode --------------------------------------------------------------

/// A continuous-batching engine's steps: 10 ms each, but a step that prefills a new request
/// lasts `prefill_ms`; requests arrive every 8 steps and decode 30 tokens.
std::vector<Trace> stepped(std::int64_t prefill_ms) {
  struct Live {
    Trace t;
    int left = 0;
  };
  std::vector<Trace> out;
  std::vector<Live> live;
  std::int64_t now = 0;
  for (int step = 0; step < 200; ++step) {
    const bool arrival = step % 8 == 0 && step < 120;
    now += (arrival ? prefill_ms : 10) * kMs;
    for (auto& l : live) {
      l.t.event_times_ns.push_back(now);
      --l.left;
    }
    if (arrival) {
      Live l;
      l.t.sent_ns = now - prefill_ms * kMs;
      l.t.first_byte_ns = *l.t.sent_ns + kMs / 5;
      l.t.first_token_ns = now;
      l.t.event_times_ns.push_back(now);
      l.left = 29;
      l.t.output_tokens = 30;
      live.push_back(std::move(l));
    }
    for (auto it = live.begin(); it != live.end();) {
      if (it->left == 0) {
        it->t.last_token_ns = now;
        it->t.done_ns = now;
        out.push_back(std::move(it->t));
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out;
}

TEST(Diagnose, PrefillInterruptsDecodeWhenLongGapsHoldArrivals) {
  RunRecord run;
  run.traces = stepped(60);
  const Finding p = find(diagnose_run(run), "prefill_interrupts_decode");
  EXPECT_EQ(p.verdict, "yes") << p.summary;
  EXPECT_DOUBLE_EQ(num(p, "median_gap_ms"), 10.0);
  EXPECT_DOUBLE_EQ(num(p, "long_gap_threshold_ms"), 30.0);
  EXPECT_EQ(num(p, "long_gaps_at_arrival_ratio"), 1.0);
  EXPECT_EQ(num(p, "ordinary_gaps_at_arrival_ratio"), 0.0);
  EXPECT_GE(num(p, "long_gaps_at_arrival_count"), 3.0);
}

TEST(Diagnose, ShortPrefillsDoNotInterruptDecode) {
  RunRecord run;
  run.traces = stepped(12);  // a prefill step barely longer than a decode step
  const Finding p = find(diagnose_run(run), "prefill_interrupts_decode");
  EXPECT_EQ(p.verdict, "no") << p.summary;
  EXPECT_EQ(num(p, "long_gaps_count"), 0.0);
}

TEST(Diagnose, NoArrivalDuringDecodeIsNoInterruption) {
  // One request at a time: no request arrives while another decodes.
  RunRecord run;
  run.traces = one_slot(1, 6);
  const Finding p = find(diagnose_run(run), "prefill_interrupts_decode");
  EXPECT_EQ(p.verdict, "no") << p.summary;
  EXPECT_NE(p.summary.find("could not interrupt"), std::string::npos) << p.summary;
}

// ---- client_saturated -----------------------------------------------------------------------

TEST(Diagnose, ClientSaturatedFromTheSelfCheck) {
  RunRecord run;
  run.summary.emplace();
  dyno::metrics::Summary& s = run.summary->figures;
  s.client_loop_lag_ms = dyno::metrics::summarize({0.1, 0.2, 0.3, 12.0});
  s.client_loop_cpu_s = 0.5;
  s.service_window_s = 10.0;
  {
    const Finding c = find(diagnose_run(run), "client_saturated");
    EXPECT_EQ(c.verdict, "no") << c.summary;
    EXPECT_EQ(num(c, "loop_busy_ratio"), 0.05);
  }
  s.warnings.push_back({dyno::metrics::WarningCode::kClientSaturated,
                        "event-loop lag p99 11.6 ms > 5 ms", "use --client-threads"});
  {
    const Finding c = find(diagnose_run(run), "client_saturated");
    EXPECT_EQ(c.verdict, "yes");
    EXPECT_NE(c.summary.find("lag p99 11.6 ms"), std::string::npos) << c.summary;
  }
  s.warnings.clear();
  s.client_loop_cpu_s = 9.5;  // the loop busy 95 % of the window
  EXPECT_EQ(find(diagnose_run(run), "client_saturated").verdict, "yes");
  // An import keeps no self-check.
  RunRecord imported;
  imported.summary.emplace();
  EXPECT_EQ(find(diagnose_run(imported), "client_saturated").verdict, "unknown");
}

// ---- network --------------------------------------------------------------------------------

TEST(Diagnose, NetworkFromFirstBytesAndFailures) {
  RunRecord run;
  run.traces = batched(20);  // first byte 0.2 ms after sending, TTFT ~5 ms
  {
    const Finding n = find(diagnose_run(run), "network");
    EXPECT_EQ(n.verdict, "no") << n.summary;
    EXPECT_DOUBLE_EQ(num(n, "first_byte_min_ms"), 0.2);
  }
  for (int i = 0; i < 3; ++i) {
    Trace t;
    t.sent_ns = 0;
    t.done_ns = kMs;
    t.status = dyno::metrics::RequestStatus::kError;
    t.error_category = "connect";
    run.traces.push_back(t);
  }
  {
    const Finding n = find(diagnose_run(run), "network");
    EXPECT_EQ(n.verdict, "yes") << n.summary;
    EXPECT_EQ(num(n, "failures_connect_count"), 3.0);
  }
  // Headers with the first token and a large share: cannot tell.
  RunRecord late;
  late.traces = batched(20);
  for (auto& t : late.traces) t.first_byte_ns = t.first_token_ns;
  EXPECT_EQ(find(diagnose_run(late), "network").verdict, "unknown");
  // No first byte at all (an in-process engine).
  for (auto& t : late.traces) t.first_byte_ns.reset();
  const Finding n = find(diagnose_run(late), "network");
  EXPECT_EQ(n.verdict, "unknown");
  EXPECT_NE(str(n, "missing").find("first-byte"), std::string::npos);
}

// ---- a record on disk ------------------------------------------------------------------------

TEST(Diagnose, ARecordReadBackIsDiagnosedFromWhatItKeeps) {
  // A run of dyno against the embedded sim (tests/compare/data): /metrics counted before and
  // after, no gauges kept, the client's self-check and every request's trace.
  const RunRecord run =
      dyno::record::read_run(std::filesystem::path(DYNO_SOURCE_DIR) / "tests/compare/data/runs" /
                             "20261130T004322Z-dd1bd8-fast");
  const Diagnosis d = diagnose_run(run);
  const Finding q = find(d, "queue");
  EXPECT_NE(str(q, "source").find("client traces (the engine's gauges were not sampled"),
            std::string::npos)
      << str(q, "source");
  const Finding k = find(d, "kv_cache");
  EXPECT_EQ(k.verdict, "no") << k.summary;  // the preemption counter's delta: 0
  EXPECT_EQ(num(k, "preemptions_count"), 0.0);
  EXPECT_FALSE(k.evidence.contains("kv_usage_max_percent"));
  const Finding c = find(d, "client_saturated");
  EXPECT_EQ(c.verdict, "no") << c.summary;
  EXPECT_DOUBLE_EQ(num(c, "loop_lag_p99_ms"), 2.88);
  const Finding n = find(d, "network");
  EXPECT_EQ(n.verdict, "no") << n.summary;
  EXPECT_EQ(num(n, "requests_count"), static_cast<double>(run.summary->figures.requests_total));
}

// ---- the forms ------------------------------------------------------------------------------

TEST(Diagnose, JsonAndTextKeepTheFixedOrder) {
  RunRecord run = with_server(server({}));
  run.traces = one_slot(4, 12);
  const Diagnosis d = diagnose_run(run);
  const json::object j = dyno::diagnose::to_json(d);
  const json::array& findings = j.at("findings").as_array();
  ASSERT_EQ(findings.size(), 5u);
  std::size_t at = 0;
  const std::string text = dyno::diagnose::plain_text(d);
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const json::object& f = findings[i].as_object();
    EXPECT_EQ(f.at("name").as_string(), dyno::diagnose::kFindingNames[i]);
    EXPECT_EQ(f.at("verdict"), json::value(d.findings[i].verdict));
    EXPECT_TRUE(f.at("evidence").is_object());
    const std::string head = d.findings[i].name + ": " + d.findings[i].verdict + " — ";
    const std::size_t found = text.find(head, at);
    ASSERT_NE(found, std::string::npos) << head << "\n" << text;
    at = found;
  }
  EXPECT_NE(text.find("    source "), std::string::npos) << text;
}

}  // namespace
