// The diagnosis of one run record (diagnose/diagnose.h), one piece though long: every finding
// reads the same views of the record — the server section and its gauge dialects, the
// completed requests with their neighbours in flight — built once here, and the queue finding
// falls back from the gauges to the traces the others read too.
#include "diagnose/diagnose.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <string_view>

#include "json/json_text.h"
#include "metrics/stats.h"
#include "metrics/summary.h"
#include "record/owner_sections.h"
#include "record/server_section.h"

namespace dyno::diagnose {

namespace json = boost::json;

namespace {

constexpr double kNsPerMs = 1e6;

/// A number for a sentence: at most `decimals` decimals, trailing zeros dropped.
std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

/// A ratio as a percentage for a sentence ("42 %").
std::string pct(double ratio) { return num(ratio * 100.0, 1) + " %"; }

/// A computed figure for the evidence, rounded (the record keeps the full precision).
double rounded(double v, int decimals = 3);

/// e[key] = v rounded, when there is a v (one place, so the optional is read once: GCC's
/// -Wmaybe-uninitialized misreads an optional built by a conditional expression and read inline).
void put_rounded(boost::json::object& e, const char* key, const std::optional<double>& v) {
  if (v.has_value()) e[key] = rounded(v.value());
}

double rounded(double v, int decimals) {
  const double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}

std::string plural(double n, const char* one, const char* many) {
  return num(n, 2) + " " + (n == 1.0 ? one : many);
}

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return metrics::percentile_sorted(v, 50.0);
}

Finding finding(const char* name, const char* verdict, std::string summary) {
  return Finding{name, verdict, std::move(summary), {}};
}

Finding unknown(const char* name, std::string summary, std::string missing) {
  Finding f = finding(name, "unknown", std::move(summary));
  f.evidence["missing"] = std::move(missing);
  return f;
}

// ---- what the record holds -------------------------------------------------------------------

/// The summary's `server` section read typed, or why there is none.
struct ServerView {
  std::optional<record::ServerSection> section;
  std::string missing;  ///< why there is no section with figures
};

ServerView server_of(const record::RunRecord& run) {
  ServerView v;
  if (!run.summary) {
    v.missing = "the record has no summary.json";
    return v;
  }
  if (!run.summary->server) {
    v.missing = "summary.json has no server section";
    return v;
  }
  try {
    v.section = record::server_section_of(run.summary->server);
  } catch (const std::exception& e) {
    v.missing = std::string("summary.json's server section does not read: ") + e.what();
    return v;
  }
  if (v.section && !v.section->counted()) {
    v.missing = v.section->reason  ? "no server figures: " + *v.section->reason
                : v.section->error ? "the engine's /metrics did not parse: " + *v.section->error
                                   : "no server figures";
  }
  return v;
}

/// The engine's name as the manifest states it (nullopt when it does not).
std::optional<std::string> engine_name(const record::RunRecord& run) {
  try {
    return record::engine_section_from_json(run.manifest.engine).name;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The gauge names of the engines dyno knows (docs/metrics.md "Diagnosis").
struct GaugeDialect {
  std::string_view dialect;  ///< as server.dialect names it
  std::string_view engine;
  std::vector<std::string_view> running, waiting, kv_usage;
};

const std::vector<GaugeDialect>& gauge_dialects() {
  static const std::vector<GaugeDialect> d = {
      {"vllm",
       "vLLM",
       {"vllm:num_requests_running"},
       {"vllm:num_requests_waiting"},
       {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
      {"sglang",
       "SGLang",
       {"sglang:num_running_reqs"},
       {"sglang:num_queue_reqs"},
       {"sglang:token_usage"}},
      {"llamacpp",
       "llama.cpp",
       {"llamacpp:requests_processing"},
       {"llamacpp:requests_deferred"},
       {"llamacpp:kv_cache_usage_ratio"}},
  };
  return d;
}

/// The dialects, the record's own first.
std::vector<const GaugeDialect*> dialects_for(const record::ServerSection& s) {
  std::vector<const GaugeDialect*> out;
  for (const auto& d : gauge_dialects()) {
    if (s.dialect && *s.dialect == d.dialect)
      out.insert(out.begin(), &d);
    else
      out.push_back(&d);
  }
  return out;
}

/// A gauge series found by its name: the busiest of its label sets, and how many there were.
struct FoundSeries {
  std::string key;
  const record::ServerGaugeSeries* series = nullptr;
  std::size_t label_sets = 0;
  double max() const { return series->samples.max.value_or(0); }
};

std::optional<FoundSeries> find_series(const record::ServerGauges& gauges,
                                       const std::vector<std::string_view>& names) {
  for (const std::string_view name : names) {
    FoundSeries found;
    for (const auto& [key, s] : gauges.series) {
      const bool match = key == name || (key.size() > name.size() && key.starts_with(name) &&
                                         key[name.size()] == '{');
      if (!match || s.samples.count == 0 || !s.samples.max) continue;
      ++found.label_sets;
      if (found.series == nullptr || *s.samples.max > found.max()) {
        found.key = key;
        found.series = &s;
      }
    }
    if (found.series != nullptr) return found;
  }
  return std::nullopt;
}

/// The measured traces' figures the client-side rules share.
struct Req {
  std::int64_t sent = 0, first = 0, done = 0;
  double ttft_ms = 0;
  std::optional<double> tpot_ms;
  std::int64_t in_flight = 0;  ///< requests in flight when it was sent, itself included
  std::int64_t served_ahead = 0;
};

bool ended(const metrics::Trace& t) { return t.sent_ns && t.done_ns && *t.done_ns >= *t.sent_ns; }

/// Completed measured requests with their send, first-token and end times.
std::vector<Req> completed_requests(const record::RunRecord& run) {
  std::vector<Req> out;
  for (const auto& t : run.traces) {
    if (!t.measured() || !t.ok() || !ended(t) || !t.first_token_ns) continue;
    Req r;
    r.sent = *t.sent_ns;
    r.first = *t.first_token_ns;
    r.done = *t.done_ns;
    r.ttft_ms = static_cast<double>(r.first - r.sent) / kNsPerMs;
    if (t.output_tokens && *t.output_tokens >= 2 && t.last_token_ns && *t.last_token_ns > r.first) {
      r.tpot_ms = static_cast<double>(*t.last_token_ns - r.first) / kNsPerMs /
                  static_cast<double>(*t.output_tokens - 1);
    }
    out.push_back(r);
  }
  return out;
}

/// Fills in_flight (every ended trace counts, warm-up included: it occupied the server too) and
/// served_ahead (other requests whose whole answer, first token to end, came while it waited
/// for its first token).
void count_neighbours(const record::RunRecord& run, std::vector<Req>& reqs) {
  std::vector<std::int64_t> sends, ends;
  std::vector<std::pair<std::int64_t, std::int64_t>> answers;  // (first token, done)
  for (const auto& t : run.traces) {
    if (!ended(t)) continue;
    sends.push_back(*t.sent_ns);
    ends.push_back(*t.done_ns);
    if (t.first_token_ns) answers.emplace_back(*t.first_token_ns, *t.done_ns);
  }
  std::sort(sends.begin(), sends.end());
  std::sort(ends.begin(), ends.end());
  std::sort(answers.begin(), answers.end());
  for (Req& r : reqs) {
    // Sent at or before r.sent and not yet done then: #(sent <= t) − #(done <= t).
    const auto sent_by = std::upper_bound(sends.begin(), sends.end(), r.sent) - sends.begin();
    const auto done_by = std::upper_bound(ends.begin(), ends.end(), r.sent) - ends.begin();
    r.in_flight = std::max<std::int64_t>(1, sent_by - done_by);
    auto it = std::lower_bound(answers.begin(), answers.end(), std::make_pair(r.sent, INT64_MIN));
    for (; it != answers.end() && it->first < r.first; ++it) {
      if (it->second <= r.first) ++r.served_ahead;
    }
  }
}

bool has_warning(const record::RunRecord& run, metrics::WarningCode code,
                 const metrics::Warning** found = nullptr) {
  const std::vector<metrics::Warning>& warnings =
      run.summary ? run.summary->figures.warnings : run.manifest.warnings;
  for (const auto& w : warnings) {
    if (w.code == code) {
      if (found != nullptr) *found = &w;
      return true;
    }
  }
  return false;
}

// ---- queue ----------------------------------------------------------------------------------

std::optional<Finding> queue_from_gauges(const record::RunRecord& run,
                                         const record::ServerSection& s) {
  if (!s.gauges) return std::nullopt;
  for (const GaugeDialect* d : dialects_for(s)) {
    const auto running = find_series(*s.gauges, d->running);
    const auto waiting = find_series(*s.gauges, d->waiting);
    if (!running || !waiting) continue;
    const std::string engine = engine_name(run).value_or(std::string(d->engine));
    const metrics::Distribution& w = waiting->series->samples;
    const metrics::Distribution& r = running->series->samples;
    const double w_median = w.p50.value_or(0);
    const double w_max = w.max.value_or(0);
    const double r_max = r.max.value_or(0);
    const bool queued = w_median >= kQueueWaitingMedian;
    Finding f = finding("queue", queued ? "yes" : "no", "");
    const std::string samples = std::to_string(w.count) + " samples";
    if (queued) {
      f.summary = "requests queued in the server: it ran at most " +
                  plural(r_max, "request", "requests") + " at once while up to " + num(w_max, 2) +
                  " waited (a median of " + num(w_median, 2) + " waiting over " + samples + "; " +
                  engine +
                  (r_max == 1.0 ? ", one request at a time, as a server with one slot" : "") + ")";
    } else {
      f.summary = "requests did not queue in the server: a median of " + num(w_median, 2) +
                  " waiting over " + samples + " (at most " + num(w_max, 2) + ") while up to " +
                  num(r_max, 2) + " ran at once (" + engine + ")";
    }
    json::object& e = f.evidence;
    e["source"] = "server gauges: " + running->key + ", " + waiting->key;
    e["engine"] = engine;
    e["running_max_requests"] = r_max;
    if (r.mean) e["running_mean_requests"] = rounded(*r.mean);
    e["waiting_max_requests"] = w_max;
    e["waiting_median_requests"] = w_median;
    if (w.mean) e["waiting_mean_requests"] = rounded(*w.mean);
    e["gauge_samples_count"] = w.count;
    e["gauge_period_ms"] = s.gauges->period_ms;
    if (running->label_sets > 1 || waiting->label_sets > 1) {
      e["label_sets_count"] = std::max(running->label_sets, waiting->label_sets);
      e["note"] = "several label sets (engines) report these gauges: the busiest of each is shown";
    }
    if (run.manifest.load.concurrency) {
      e["load_concurrency_requests"] = *run.manifest.load.concurrency;
    }
    return f;
  }
  return std::nullopt;
}

Finding queue_from_client(const record::RunRecord& run, const std::string& no_gauges) {
  const std::string source_prefix = "client traces (" + no_gauges + ")";
  if (run.traces.empty()) {
    return unknown("queue",
                   "neither the server's running/waiting gauges nor per-request traces are in "
                   "the record",
                   no_gauges + "; no requests.jsonl traces");
  }
  std::vector<Req> reqs = completed_requests(run);
  count_neighbours(run, reqs);
  std::int64_t in_flight_max = 0;
  for (const Req& r : reqs) in_flight_max = std::max(in_flight_max, r.in_flight);
  if (!reqs.empty() && in_flight_max <= 1) {
    Finding f = finding("queue", "no",
                        "one request was in flight at a time: none waited behind another of this "
                        "client's (the server's gauges are not in the record)");
    f.evidence["source"] = source_prefix;
    f.evidence["in_flight_max_requests"] = in_flight_max;
    f.evidence["requests_count"] = reqs.size();
    return f;
  }
  if (reqs.size() < kMinRequests) {
    return unknown("queue",
                   "too few completed requests to read queueing from the client's side (" +
                       std::to_string(reqs.size()) + ", at least " + std::to_string(kMinRequests) +
                       " needed), and no server gauges",
                   no_gauges + "; too few completed measured requests");
  }
  std::vector<double> served;
  for (const Req& r : reqs) served.push_back(static_cast<double>(r.served_ahead));
  const double served_median = median_of(served).value_or(0);
  // Thirds by the number in flight at send (then send order).
  std::vector<Req> by_n = reqs;
  std::stable_sort(by_n.begin(), by_n.end(),
                   [](const Req& a, const Req& b) { return a.in_flight < b.in_flight; });
  const std::size_t k = by_n.size() / 3;
  const auto third = [&](bool upper) {
    struct Third {
      double in_flight_mean = 0;
      std::optional<double> ttft, tpot;
    } t;
    std::vector<double> ttft, tpot;
    double n = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const Req& r = by_n[upper ? by_n.size() - k + i : i];
      n += static_cast<double>(r.in_flight);
      ttft.push_back(r.ttft_ms);
      if (r.tpot_ms) tpot.push_back(*r.tpot_ms);
    }
    t.in_flight_mean = n / static_cast<double>(k);
    t.ttft = median_of(ttft);
    t.tpot = median_of(tpot);
    return t;
  };
  const auto low = third(false);
  const auto high = third(true);
  const double spread = high.in_flight_mean - low.in_flight_mean;
  const std::optional<double> growth =
      low.ttft && *low.ttft > 0 && high.ttft ? std::optional(*high.ttft / *low.ttft) : std::nullopt;
  const std::optional<double> tpot_ratio =
      low.tpot && *low.tpot > 0 && high.tpot ? std::optional(*high.tpot / *low.tpot) : std::nullopt;
  const bool grows = spread >= kInFlightSpread && growth && *growth >= kTtftGrowthRatio &&
                     tpot_ratio && *tpot_ratio <= kTpotFlatRatio;
  const bool served_ahead = served_median >= 1.0;
  const metrics::Warning* far = nullptr;
  const bool far_above = has_warning(run, metrics::WarningCode::kTtftFarAboveServerPrefill, &far);

  Finding f = finding("queue", "unknown", "");
  json::object& e = f.evidence;
  std::string used;
  if (grows) {
    f.verdict = "yes";
    f.summary = "TTFT grew with the number in flight (median " + num(*low.ttft) + " ms at " +
                num(low.in_flight_mean) + " in flight, " + num(*high.ttft) + " ms at " +
                num(high.in_flight_mean) + ") while decode stayed flat (TPOT " + num(*low.tpot, 2) +
                " → " + num(*high.tpot, 2) + " ms): requests queued before the server took them";
    used = "TTFT against requests in flight";
  } else if (served_ahead) {
    f.verdict = "yes";
    f.summary =
        "requests queued in the server: half of them or more waited for their first token "
        "while another request was served whole, first token to end (median " +
        num(served_median) + "); up to " + std::to_string(in_flight_max) + " were in flight";
    used = "requests served whole while another waited";
  } else if (far_above) {
    f.verdict = "yes";
    f.summary =
        "requests waited outside the engine's prefill (the engine's own timings): " + far->message;
    used = "the engine's per-response timings (warning ttft_far_above_server_prefill)";
  } else if (spread >= kInFlightSpread && growth && *growth < kTtftFlatRatio) {
    f.verdict = "no";
    f.summary = "TTFT did not grow with the number in flight (median " + num(*low.ttft) +
                " ms at " + num(low.in_flight_mean) + " in flight, " + num(*high.ttft) + " ms at " +
                num(high.in_flight_mean) + ") and no request waited while another was served whole";
    used = "TTFT against requests in flight";
  } else {
    f.summary =
        "the client's traces do not tell whether requests queued (TTFT against requests "
        "in flight: " +
        (growth ? num(*growth, 2) + "×" : std::string("n/a")) + " over a spread of " + num(spread) +
        " in flight), and the record has no server gauges";
    e["missing"] = no_gauges;
    used = "TTFT against requests in flight (inconclusive)";
  }
  e["source"] = source_prefix + ": " + used;
  e["requests_count"] = reqs.size();
  e["in_flight_max_requests"] = in_flight_max;
  e["in_flight_low_third_mean_requests"] = rounded(low.in_flight_mean);
  e["in_flight_high_third_mean_requests"] = rounded(high.in_flight_mean);
  if (low.ttft) e["ttft_low_third_median_ms"] = rounded(*low.ttft);
  if (high.ttft) e["ttft_high_third_median_ms"] = rounded(*high.ttft);
  put_rounded(e, "ttft_growth_ratio", growth);
  if (low.tpot) e["tpot_low_third_median_ms"] = rounded(*low.tpot);
  if (high.tpot) e["tpot_high_third_median_ms"] = rounded(*high.tpot);
  put_rounded(e, "tpot_ratio", tpot_ratio);
  e["served_whole_while_waiting_median_requests"] = served_median;
  if (far_above) e["warning_ttft_far_above_server_prefill"] = far->message;
  return f;
}

Finding queue_finding(const record::RunRecord& run, const ServerView& server) {
  if (server.section) {
    if (auto f = queue_from_gauges(run, *server.section)) {
      if (f->verdict == "yes") return *f;
      // Gauges sampled every period miss waits shorter than it, and an engine may count as
      // waiting only what it deferred (llama.cpp): the client's traces can still show the
      // queue. They decide only a yes; the gauges' figures stay in the evidence.
      Finding c = queue_from_client(run, "the server's gauges showed no queue");
      if (c.verdict != "yes") return *f;
      c.summary += "; the server's gauges showed none (" + f->summary +
                   "): their samples miss waits shorter than their period";
      for (const auto& [key, value] : f->evidence) {
        c.evidence["gauges_" + std::string(key)] = value;
      }
      return c;
    }
  }
  const std::string no_gauges =
      !server.section              ? server.missing
      : server.section->gauges     ? "the engine exposes no running/waiting gauge dyno knows"
      : !server.section->counted() ? server.missing
                                   : "the engine's gauges were not sampled (--telemetry off)";
  return queue_from_client(run, no_gauges);
}

// ---- kv_cache -------------------------------------------------------------------------------

Finding kv_finding(const ServerView& server) {
  if (!server.section) {
    return unknown("kv_cache", "the record has none of the engine's figures: " + server.missing,
                   server.missing);
  }
  const record::ServerSection& s = *server.section;
  std::optional<FoundSeries> usage;
  if (s.gauges) {
    for (const GaugeDialect* d : dialects_for(s)) {
      if ((usage = find_series(*s.gauges, d->kv_usage))) break;
    }
  }
  // Two plain values rather than an optional: GCC's -Wmaybe-uninitialized misreads one here.
  const bool has_preemptions = s.counted() && s.preemptions.has_value();
  const double preemption_count = has_preemptions ? *s.preemptions : 0.0;
  if (!usage && !has_preemptions) {
    const std::string no_usage = s.gauges ? "no KV-cache usage gauge dyno knows"
                                          : "no gauges sampled (--telemetry off, or no /metrics)";
    const std::string no_counter =
        s.counted() ? "no preemption counter" : "no /metrics counters (" + server.missing + ")";
    return unknown("kv_cache",
                   "the engine reported neither a KV-cache usage gauge nor a preemption counter",
                   no_usage + "; " + no_counter);
  }
  const double usage_max = usage ? usage->max() : 0;
  const bool full = usage && usage_max >= kKvFullRatio;
  const bool preempted = has_preemptions && preemption_count > 0;
  Finding f = finding("kv_cache", full || preempted ? "yes" : "no", "");
  std::string usage_text = usage ? "KV-cache use peaked at " + pct(usage_max) + " (median " +
                                       pct(usage->series->samples.p50.value_or(0)) + ")"
                                 : "no KV-cache usage gauge";
  std::string preempt_text =
      has_preemptions ? num(preemption_count, 0) + " preemptions" : "no preemption counter";
  if (full && preempted) {
    f.summary = "the KV cache was full: " + usage_text + ", and the engine preempted (" +
                preempt_text + ")";
  } else if (full) {
    f.summary = "the KV cache was full: " + usage_text + "; " + preempt_text;
  } else if (preempted) {
    f.summary = "the engine preempted requests (" + preempt_text + "); " + usage_text;
  } else {
    f.summary = "the KV cache had room: " + usage_text + "; " + preempt_text;
  }
  json::object& e = f.evidence;
  std::string source = "server";
  if (usage) source += " gauge " + usage->key;
  if (has_preemptions) source += std::string(usage ? " and" : "") + " counter delta preemptions";
  e["source"] = source;
  if (usage) {
    e["kv_usage_max_percent"] = rounded(usage_max * 100.0, 2);
    if (usage->series->samples.p50) {
      e["kv_usage_median_percent"] = rounded(*usage->series->samples.p50 * 100.0, 2);
    }
    e["gauge_samples_count"] = usage->series->samples.count;
  }
  if (has_preemptions) e["preemptions_count"] = preemption_count;
  return f;
}

// ---- prefill_interrupts_decode --------------------------------------------------------------

Finding prefill_finding(const record::RunRecord& run) {
  const char* name = "prefill_interrupts_decode";
  if (run.traces.empty()) {
    return unknown(name, "the record keeps no per-request traces", "no requests.jsonl traces");
  }
  std::vector<std::int64_t> firsts;  // every request's first token: the end of its prefill
  for (const auto& t : run.traces) {
    if (t.first_token_ns) firsts.push_back(*t.first_token_ns);
  }
  std::sort(firsts.begin(), firsts.end());
  struct Gap {
    std::int64_t from, to;
  };
  std::vector<Gap> gaps;
  for (const auto& t : run.traces) {
    if (!t.measured() || !t.ok() || t.event_times_ns.size() < 2) continue;
    std::int64_t prev = 0;
    bool first = true;
    for (const std::int64_t at : t.event_times_ns) {
      if (!first) gaps.push_back({prev, at});
      prev = at;
      first = false;
    }
  }
  if (gaps.empty()) {
    return unknown(
        name, "no completed request streamed two token events (not streamed, or one token each)",
        "inter-token gaps (streamed requests with two token events or more)");
  }
  std::vector<double> lengths;
  lengths.reserve(gaps.size());
  for (const Gap& g : gaps) lengths.push_back(static_cast<double>(g.to - g.from) / kNsPerMs);
  const double median_gap = median_of(lengths).value_or(0);
  const double threshold = kLongGapFactor * median_gap;
  // A gap holds an arrival when another request's first token came inside it, (from, to].
  const auto holds_arrival = [&firsts](const Gap& g) {
    const auto it = std::upper_bound(firsts.begin(), firsts.end(), g.from);
    return it != firsts.end() && *it <= g.to;
  };
  std::size_t long_gaps = 0, long_aligned = 0, ordinary = 0, ordinary_aligned = 0;
  std::vector<double> long_lengths;
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    const bool aligned = holds_arrival(gaps[i]);
    if (lengths[i] > threshold) {
      ++long_gaps;
      long_aligned += aligned ? 1 : 0;
      long_lengths.push_back(lengths[i]);
    } else {
      ++ordinary;
      ordinary_aligned += aligned ? 1 : 0;
    }
  }
  const std::size_t any_aligned = long_aligned + ordinary_aligned;
  const double long_share =
      long_gaps > 0 ? static_cast<double>(long_aligned) / static_cast<double>(long_gaps) : 0;
  const double ordinary_share =
      ordinary > 0 ? static_cast<double>(ordinary_aligned) / static_cast<double>(ordinary) : 0;
  Finding f = finding(name, "no", "");
  if (any_aligned == 0) {
    f.summary =
        "no request's first token came while another was decoding: prefill could not "
        "interrupt decode";
  } else if (long_gaps == 0) {
    f.summary = "no inter-token gap was longer than " + num(kLongGapFactor, 0) +
                "× the median gap (" + num(median_gap, 2) + " ms)";
  } else if (long_aligned >= kMinAlignedGaps && long_share >= kAlignedShare &&
             long_share >= kAlignedOverOrdinary * ordinary_share) {
    f.verdict = "yes";
    f.summary = "decode stalled when other requests were prefilled: " + pct(long_share) +
                " of the " + std::to_string(long_gaps) + " inter-token gaps above " +
                num(threshold, 2) + " ms (" + num(kLongGapFactor, 0) +
                "× the median) held another request's first token, against " + pct(ordinary_share) +
                " of the ordinary gaps";
  } else if (long_aligned < kMinAlignedGaps && long_share >= kAlignedShare) {
    f.verdict = "unknown";
    f.summary = "too few long inter-token gaps to tell: " + std::to_string(long_aligned) + " of " +
                std::to_string(long_gaps) + " held another request's first token";
    f.evidence["missing"] =
        "at least " + std::to_string(kMinAlignedGaps) + " long gaps holding an arrival";
  } else {
    f.summary = "long inter-token gaps did not line up with arrivals: " + pct(long_share) +
                " of the " + std::to_string(long_gaps) + " gaps above " + num(threshold, 2) +
                " ms held another request's first token, against " + pct(ordinary_share) +
                " of the ordinary gaps";
  }
  json::object& e = f.evidence;
  e["source"] = "client traces: inter-token gaps and other requests' first tokens";
  e["gaps_count"] = gaps.size();
  e["median_gap_ms"] = rounded(median_gap);
  e["long_gap_threshold_ms"] = rounded(threshold);
  e["long_gaps_count"] = long_gaps;
  if (!long_lengths.empty()) e["long_gap_median_ms"] = rounded(*median_of(long_lengths));
  e["long_gaps_at_arrival_count"] = long_aligned;
  e["long_gaps_at_arrival_ratio"] = rounded(long_share, 4);
  e["ordinary_gaps_at_arrival_ratio"] = rounded(ordinary_share, 4);
  return f;
}

// ---- client_saturated -----------------------------------------------------------------------

Finding client_finding(const record::RunRecord& run) {
  const char* name = "client_saturated";
  if (!run.summary) {
    return unknown(name, "the record has no summary.json, where dyno keeps its self-check",
                   "summary.json (client cost, loop lag, warnings)");
  }
  const metrics::Summary& s = run.summary->figures;
  const metrics::Warning* warning = nullptr;
  const bool warned = has_warning(run, metrics::WarningCode::kClientSaturated, &warning);
  std::optional<double> busy;
  if (s.client_loop_cpu_s && s.service_window_s && *s.service_window_s > 0) {
    busy = *s.client_loop_cpu_s /
           (*s.service_window_s * static_cast<double>(std::max(1u, s.client_threads)));
  }
  const bool lag_known = s.client_loop_lag_ms.count > 0;
  if (!warned && !busy && !lag_known) {
    return unknown(
        name, "the record keeps none of dyno's self-check (an import, or a record closed at once)",
        "client.loop_lag_ms, client.loop_cpu_s");
  }
  const bool busy_out = busy && *busy >= kLoopBusyShare;
  Finding f = finding(name, warned || busy_out ? "yes" : "no", "");
  const std::string lag_text =
      lag_known ? "event-loop lag p99 " + num(s.client_loop_lag_ms.p99.value_or(0), 2) +
                      " ms (the warning's bound " + num(metrics::kLoopLagP99WarnS * 1e3, 0) + " ms)"
                : "no loop-lag samples";
  const std::string busy_text =
      busy ? "event loop busy " + pct(*busy) + " of the service window" : "event-loop CPU not kept";
  if (warned) {
    f.summary = "dyno's own self-check says the client limited the run: " + warning->message;
  } else if (busy_out) {
    f.summary = "the client's event loop was busy " + pct(*busy) +
                " of the service window: the client, not the engine, may have set the pace (" +
                lag_text + ")";
  } else {
    f.summary = "the client kept up: " + lag_text + ", " + busy_text;
  }
  json::object& e = f.evidence;
  e["source"] = "summary.json client (dyno's self-check) and warnings";
  if (lag_known) {
    if (s.client_loop_lag_ms.p99) e["loop_lag_p99_ms"] = rounded(*s.client_loop_lag_ms.p99);
    if (s.client_loop_lag_ms.max) e["loop_lag_max_ms"] = rounded(*s.client_loop_lag_ms.max);
  }
  if (s.client_loop_cpu_s) e["loop_cpu_s"] = rounded(*s.client_loop_cpu_s);
  if (s.client_cpu_s) e["client_cpu_s"] = rounded(*s.client_cpu_s);
  if (s.service_window_s) e["service_window_s"] = rounded(*s.service_window_s);
  if (busy) e["loop_busy_ratio"] = rounded(*busy, 4);
  e["client_threads_count"] = s.client_threads;
  if (s.queue_delay_ms.p99) e["queue_delay_p99_ms"] = rounded(*s.queue_delay_ms.p99);
  if (warned) e["warning_client_saturated"] = warning->message;
  return f;
}

// ---- network --------------------------------------------------------------------------------

Finding network_finding(const record::RunRecord& run) {
  const char* name = "network";
  if (run.traces.empty()) {
    return unknown(name, "the record keeps no per-request traces", "no requests.jsonl traces");
  }
  std::size_t ended_n = 0, net_failed = 0;
  std::map<std::string, std::size_t> by_category;
  std::vector<double> first_byte, ttft, header_to_token;
  for (const auto& t : run.traces) {
    if (!t.measured() || t.status == metrics::RequestStatus::kCancelled) continue;
    ++ended_n;
    if (!t.ok() && (t.error_category == "connect" || t.error_category == "tls" ||
                    t.error_category == "send")) {
      ++net_failed;
      ++by_category[t.error_category];
    }
    if (t.ok() && t.sent_ns && t.first_byte_ns && t.first_token_ns) {
      first_byte.push_back(static_cast<double>(*t.first_byte_ns - *t.sent_ns) / kNsPerMs);
      ttft.push_back(static_cast<double>(*t.first_token_ns - *t.sent_ns) / kNsPerMs);
      header_to_token.push_back(static_cast<double>(*t.first_token_ns - *t.first_byte_ns) /
                                kNsPerMs);
    }
  }
  const double fail_share =
      ended_n > 0 ? static_cast<double>(net_failed) / static_cast<double>(ended_n) : 0;
  Finding f = finding(name, "unknown", "");
  json::object& e = f.evidence;
  e["source"] = "client traces: sent → first byte, and failures at connect, TLS or send";
  e["requests_count"] = ended_n;
  e["network_failures_count"] = net_failed;
  for (const auto& [category, n] : by_category) e["failures_" + category + "_count"] = n;
  if (run.summary && run.summary->client.connections_opened) {
    e["connections_opened_count"] = *run.summary->client.connections_opened;
  }
  std::optional<double> fb_min, fb_median, ttft_median, header_gap;
  if (!first_byte.empty()) {
    fb_min = *std::min_element(first_byte.begin(), first_byte.end());
    fb_median = median_of(first_byte);
    ttft_median = median_of(ttft);
    header_gap = median_of(header_to_token);
    e["first_byte_min_ms"] = rounded(*fb_min);
    e["first_byte_median_ms"] = rounded(*fb_median);
    e["ttft_median_ms"] = rounded(*ttft_median);
    e["first_byte_to_first_token_median_ms"] = rounded(*header_gap);
  }
  if (net_failed > 0 && fail_share >= kNetworkFailureShare) {
    f.verdict = "yes";
    f.summary = std::to_string(net_failed) + " of " + std::to_string(ended_n) +
                " requests failed at connect, TLS or send (" + pct(fail_share) + ")";
    return f;
  }
  if (!fb_min) {
    e["missing"] = "first-byte times (an in-process engine or an import keeps none)";
    f.summary = "the traces keep no first-byte time: the network cannot be told apart";
    return f;
  }
  const double share = *ttft_median > 0 ? *fb_min / *ttft_median : 1.0;
  e["first_byte_min_of_ttft_ratio"] = rounded(share, 4);
  const std::string rtt = "the fastest first byte came " + num(*fb_min, 2) +
                          " ms after sending (at most one round trip and the server's headers), " +
                          pct(share) + " of the median TTFT (" + num(*ttft_median) + " ms)";
  if (share <= kNetworkSmallShare) {
    f.verdict = "no";
    f.summary = "the network's part was small: " + rtt;
  } else if (*header_gap < 1.0) {
    e["missing"] =
        "a round trip apart from the server's time (the headers came with the first "
        "token)";
    f.summary =
        "the server sent its headers with the first token, so the round trip cannot be "
        "told apart: " +
        rtt;
  } else if (share >= kNetworkSlowShare) {
    f.verdict = "yes";
    f.summary = "the network weighed on latency: " + rtt;
  } else {
    f.verdict = "no";
    f.summary = "the network added to latency but did not dominate it: " + rtt;
  }
  return f;
}

}  // namespace

Diagnosis diagnose_run(const record::RunRecord& run) {
  const ServerView server = server_of(run);
  Diagnosis d;
  d.findings.push_back(queue_finding(run, server));
  d.findings.push_back(kv_finding(server));
  d.findings.push_back(prefill_finding(run));
  d.findings.push_back(client_finding(run));
  d.findings.push_back(network_finding(run));
  return d;
}

json::object to_json(const Diagnosis& d) {
  json::array findings;
  for (const Finding& f : d.findings) {
    findings.push_back(json::object{{"name", f.name},
                                    {"verdict", f.verdict},
                                    {"summary", f.summary},
                                    {"evidence", f.evidence}});
  }
  return json::object{{"findings", std::move(findings)}};
}

std::string plain_text(const Diagnosis& d) {
  std::string out;
  for (const Finding& f : d.findings) {
    out += f.name + ": " + f.verdict + " — " + f.summary + "\n";
    std::string line;
    for (const auto& [key, value] : f.evidence) {
      line += line.empty() ? "    " : " · ";
      line += std::string(key) + " " +
              (value.is_string() ? std::string(value.get_string()) : json_text::compact(value));
    }
    if (!line.empty()) out += line + "\n";
  }
  return out;
}

}  // namespace dyno::diagnose
