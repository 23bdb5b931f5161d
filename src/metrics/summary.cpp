#include "metrics/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace dyno::metrics {

namespace {

constexpr double kNsPerS = 1e9;

double ns_to_s(std::int64_t ns) { return static_cast<double>(ns) / kNsPerS; }

/// b − a in seconds when both stamps exist.
std::optional<double> interval_s(const std::optional<std::int64_t>& a,
                                 const std::optional<std::int64_t>& b) {
  if (!a || !b) return std::nullopt;
  return ns_to_s(*b - *a);
}

/// Formats a number for a warning message (3 significant digits is enough to act on).
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string percent(double fraction) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %%", fraction * 100.0);
  return buf;
}

std::optional<double> per_window(double amount, const std::optional<double>& window_s) {
  if (!window_s || !(*window_s > 0.0)) return std::nullopt;
  return amount / *window_s;
}

double mean_of(std::span<const double> v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace

const char* to_string(WarningCode code) {
  switch (code) {
    case WarningCode::kConcurrencyUnderfilled:
      return "concurrency_underfilled";
    case WarningCode::kHighErrorRate:
      return "high_error_rate";
    case WarningCode::kClientSaturated:
      return "client_saturated";
    case WarningCode::kNoCompletedRequests:
      return "no_completed_requests";
    case WarningCode::kTtftFarAboveServerPrefill:
      return "ttft_far_above_server_prefill";
    case WarningCode::kExitedAtOnce:
      return "exited_at_once";
    case WarningCode::kInvalidUtf8Replaced:
      return "invalid_utf8_replaced";
    case WarningCode::kEnergySourcesDisagree:
      return "energy_sources_disagree";
    case WarningCode::kWindowTooShort:
      return "window_too_short";
    case WarningCode::kReplayBehind:
      return "replay_behind";
    case WarningCode::kClockUncertain:
      return "clock_uncertain";
    case WarningCode::kInputLengthDiffers:
      return "input_length_differs";
  }
  return "unknown";
}

std::optional<WarningCode> warning_code_from(std::string_view name) {
  for (const WarningCode c : kWarningCodes) {
    if (name == to_string(c)) return c;
  }
  return std::nullopt;
}

RequestFigures request_figures(const Trace& t) {
  RequestFigures f;
  f.queue_delay_s = interval_s(t.scheduled_ns, t.sent_ns);
  f.ttft_s = interval_s(t.sent_ns, t.first_token_ns);
  f.ttft_from_schedule_s = interval_s(t.scheduled_ns, t.first_token_ns);
  f.e2e_s = interval_s(t.sent_ns, t.done_ns);
  // tpot and decode_rate need a positive decode interval: with one output token there is no
  // decode step, and a zero interval (a non-streamed response, every token at once) says
  // nothing about decode speed.
  if (t.output_tokens && *t.output_tokens >= 2 && t.first_token_ns && t.last_token_ns &&
      *t.last_token_ns > *t.first_token_ns) {
    const double decode_s = ns_to_s(*t.last_token_ns - *t.first_token_ns);
    const auto steps = static_cast<double>(*t.output_tokens - 1);
    f.tpot_s = decode_s / steps;
    f.decode_rate = steps / decode_s;
  }
  if (t.input_tokens && f.ttft_s && *f.ttft_s > 0.0) {
    f.prefill_rate_client = static_cast<double>(*t.input_tokens) / *f.ttft_s;
  }
  if (t.output_tokens && !t.event_times_ns.empty()) {
    f.tokens_per_event =
        static_cast<double>(*t.output_tokens) / static_cast<double>(t.event_times_ns.size());
  }
  return f;
}

namespace {

/// Appends f(gap in ns) for every gap between consecutive events of `trace`.
template <typename F>
void append_event_gaps(const Trace& trace, std::vector<double>& out, F f) {
  const auto& ev = trace.event_times_ns;
  if (ev.size() < 2) return;
  auto it = ev.begin();
  std::int64_t prev = *it;
  for (++it; it != ev.end(); ++it) {
    out.push_back(f(*it - prev));
    prev = *it;
  }
}

/// The event gaps of every trace in ns, ascending (radix_sort, linear). Their figures in ms
/// (as event_gaps_s(trace) × 1e3) read them through ns → ms, which is monotone: the order
/// std::sort gives the ms values, and the same figures, without an array of doubles.
std::vector<std::int64_t> sorted_event_gaps_ns(std::span<const Trace* const> traces,
                                               std::size_t gaps) {
  std::vector<std::int64_t> ns;
  ns.reserve(gaps);
  for (const Trace* t : traces) {
    const auto& ev = t->event_times_ns;
    if (ev.size() < 2) continue;
    auto it = ev.begin();
    std::int64_t prev = *it;
    for (++it; it != ev.end(); ++it) {
      ns.push_back(*it - prev);
      prev = *it;
    }
  }
  radix_sort(ns);
  return ns;
}

}  // namespace

std::vector<double> event_gaps_s(const Trace& trace) {
  std::vector<double> gaps;
  gaps.reserve(std::max<std::size_t>(trace.event_times_ns.size(), 1) - 1);
  append_event_gaps(trace, gaps, [](std::int64_t d) { return ns_to_s(d); });
  return gaps;
}

bool meets_slo(const RequestFigures& figures, const Slo& slo) {
  const auto holds = [](const std::optional<double>& bound, const std::optional<double>& value) {
    return !bound || !value || *value <= *bound;
  };
  return holds(slo.ttft_s, figures.ttft_s) && holds(slo.tpot_s, figures.tpot_s) &&
         holds(slo.e2e_s, figures.e2e_s);
}

double union_length(std::vector<std::pair<std::int64_t, std::int64_t>> intervals) {
  std::erase_if(intervals, [](const auto& iv) { return iv.second < iv.first; });
  if (intervals.empty()) return 0.0;
  std::sort(intervals.begin(), intervals.end());
  std::int64_t total = 0;
  std::int64_t cur_begin = intervals.front().first;
  std::int64_t cur_end = intervals.front().second;
  for (std::size_t i = 1; i < intervals.size(); ++i) {
    const auto& [a, b] = intervals[i];
    if (a <= cur_end) {
      cur_end = std::max(cur_end, b);
    } else {
      total += cur_end - cur_begin;
      cur_begin = a;
      cur_end = b;
    }
  }
  total += cur_end - cur_begin;
  return static_cast<double>(total);
}

namespace {

/// The measured requests that ended, and those of them that completed.
struct Outcomes {
  std::vector<const Trace*> ok;
  std::vector<const Trace*> ended;  // measured ok + failed
};

using MessageCounts = std::map<std::pair<std::string, std::string>, std::uint64_t>;

/// errors_by_message: the kMaxErrorMessages most frequent pairs; the rest counted together.
void keep_most_frequent(const MessageCounts& messages, Summary& s) {
  std::vector<ErrorMessageCount> all;
  all.reserve(messages.size());
  for (const auto& [key, n] : messages) all.push_back({key.first, key.second, n});
  // The map's order breaks ties (category, then message): the same traces, the same list.
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i < kMaxErrorMessages) {
      s.errors_by_message.push_back(std::move(all[i]));
    } else {
      s.errors_other_messages += all[i].count;
    }
  }
}

/// Counts every trace by outcome (warm-up, cancelled, ok, failed) into `s`.
Outcomes tally_outcomes(std::span<const Trace> traces, Summary& s) {
  Outcomes o;
  MessageCounts messages;
  for (const Trace& t : traces) {
    if (!t.measured()) {
      ++s.warmup_requests;
      continue;
    }
    switch (t.status) {
      case RequestStatus::kCancelled:
        ++s.requests_cancelled;
        continue;
      case RequestStatus::kOk:
        ++s.requests_ok;
        o.ok.push_back(&t);
        break;
      case RequestStatus::kError:
        ++s.requests_failed;
        ++s.errors_by_category[t.error_category.empty() ? "unknown" : t.error_category];
        ++messages[{t.error_category.empty() ? "unknown" : t.error_category, t.error_message}];
        break;
    }
    o.ended.push_back(&t);
  }
  keep_most_frequent(messages, s);
  s.requests_total = s.requests_ok + s.requests_failed;
  if (s.requests_total > 0) {
    s.error_rate = static_cast<double>(s.requests_failed) / static_cast<double>(s.requests_total);
  }
  return o;
}

/// Service window W and Little's-law concurrency over every ended request.
void service_window(std::span<const Trace* const> ended, Summary& s) {
  std::optional<std::int64_t> first_sent;
  std::optional<std::int64_t> last_done;
  double e2e_sum_s = 0.0;
  for (const Trace* t : ended) {
    if (t->sent_ns) first_sent = first_sent ? std::min(*first_sent, *t->sent_ns) : *t->sent_ns;
    if (t->done_ns) last_done = last_done ? std::max(*last_done, *t->done_ns) : *t->done_ns;
    if (t->sent_ns && t->done_ns) e2e_sum_s += ns_to_s(*t->done_ns - *t->sent_ns);
  }
  if (first_sent && last_done && *last_done >= *first_sent) {
    s.service_window_s = ns_to_s(*last_done - *first_sent);
  }
  const std::optional<double>& window = s.service_window_s;
  s.requests_per_s = per_window(static_cast<double>(s.requests_ok), window);
  s.achieved_concurrency = per_window(e2e_sum_s, window);
}

/// Per-request figures of completed requests: token totals and rates, the latency
/// distributions and goodput.
void completed_figures(std::span<const Trace* const> ok, const SummaryOptions& options,
                       Summary& s) {
  const std::optional<double>& window = s.service_window_s;
  bool any_input = false;
  bool any_output = false;
  std::int64_t decode_steps = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> decode_intervals;
  std::int64_t event_tokens = 0;
  std::int64_t events = 0;
  std::uint64_t good = 0;
  std::vector<double> queue_delay_ms, ttft_ms, ttft_sched_ms, e2e_ms, tpot_ms;
  std::vector<double> decode_rate, prefill_rate, input_tokens, output_tokens;
  std::size_t gaps = 0;  // every event gap of every request, in one vector sized once
  for (const Trace* t : ok) gaps += std::max<std::size_t>(t->event_times_ns.size(), 1) - 1;
  for (const Trace* t : ok) {
    const RequestFigures f = request_figures(*t);
    ++s.token_count_sources[to_string(t->token_count_source)];
    if (t->input_tokens) {
      any_input = true;
      s.input_tokens_total += *t->input_tokens;
      input_tokens.push_back(static_cast<double>(*t->input_tokens));
    } else {
      s.input_tokens_complete = false;
    }
    if (t->output_tokens) {
      any_output = true;
      s.output_tokens_total += *t->output_tokens;
      output_tokens.push_back(static_cast<double>(*t->output_tokens));
      if (!t->event_times_ns.empty()) {
        event_tokens += *t->output_tokens;
        events += static_cast<std::int64_t>(t->event_times_ns.size());
      }
    }
    if (f.decode_rate) {  // output_tokens >= 2 and last_token > first_token
      decode_steps += *t->output_tokens - 1;
      decode_intervals.emplace_back(*t->first_token_ns, *t->last_token_ns);
      decode_rate.push_back(*f.decode_rate);
    }
    if (f.queue_delay_s) queue_delay_ms.push_back(*f.queue_delay_s * 1e3);
    if (f.ttft_s) ttft_ms.push_back(*f.ttft_s * 1e3);
    if (f.ttft_from_schedule_s) ttft_sched_ms.push_back(*f.ttft_from_schedule_s * 1e3);
    if (f.e2e_s) e2e_ms.push_back(*f.e2e_s * 1e3);
    if (f.tpot_s) tpot_ms.push_back(*f.tpot_s * 1e3);
    if (f.prefill_rate_client) prefill_rate.push_back(*f.prefill_rate_client);
    if (options.slo.any() && meets_slo(f, options.slo)) ++good;
  }
  if (any_output) {
    s.output_tokens_per_s = per_window(static_cast<double>(s.output_tokens_total), window);
  }
  if (any_input && s.input_tokens_complete) {
    s.input_tokens_per_s = per_window(static_cast<double>(s.input_tokens_total), window);
  }
  if (!decode_intervals.empty()) {
    const double union_s = union_length(std::move(decode_intervals)) / kNsPerS;
    if (union_s > 0.0) s.decode_tokens_per_s = static_cast<double>(decode_steps) / union_s;
  }
  if (events > 0) {
    s.tokens_per_event = static_cast<double>(event_tokens) / static_cast<double>(events);
  }
  if (options.slo.any()) {
    s.goodput_requests = good;
    s.goodput_requests_per_s = per_window(static_cast<double>(good), window);
  }
  s.queue_delay_ms = summarize(std::move(queue_delay_ms));
  s.ttft_ms = summarize(std::move(ttft_ms));
  s.ttft_from_schedule_ms = summarize(std::move(ttft_sched_ms));
  s.e2e_ms = summarize(std::move(e2e_ms));
  s.tpot_ms = summarize(std::move(tpot_ms));
  const std::vector<std::int64_t> gaps_ns = sorted_event_gaps_ns(ok, gaps);
  s.event_gap_ms = summarize_sorted_by(
      gaps_ns.size(), [&gaps_ns](std::size_t i) { return ns_to_s(gaps_ns[i]) * 1e3; });
  s.decode_rate_per_user = summarize(std::move(decode_rate));
  s.prefill_rate_client = summarize(std::move(prefill_rate));
  s.input_tokens = summarize(std::move(input_tokens));
  s.output_tokens = summarize(std::move(output_tokens));
}

/// Answer quality: a failed request that had an expected answer counts as incorrect.
void answer_quality(std::span<const Trace* const> ended, Summary& s) {
  std::uint64_t scored = 0;
  std::uint64_t correct = 0;
  for (const Trace* t : ended) {
    if (!t->correct) continue;
    ++scored;
    if (t->ok() && *t->correct) ++correct;
  }
  if (scored > 0) {
    s.scored_requests = scored;
    s.correct_requests = correct;
    s.accuracy = static_cast<double>(correct) / static_cast<double>(scored);
  }
}

/// The client's own CPU time, memory and event-loop lag.
void client_figures(const SummaryOptions& options, Summary& s) {
  s.client_cpu_s = options.client.cpu_s;
  s.client_cpu_scope = options.client.cpu_scope;
  s.client_loop_cpu_s = options.client.loop_cpu_s;
  s.client_threads = options.client.threads;
  s.client_peak_rss_bytes = options.client.peak_rss_bytes;
  std::vector<double> lag_ms;
  lag_ms.reserve(options.client.loop_lag_s.size());
  for (double v : options.client.loop_lag_s) lag_ms.push_back(v * 1e3);
  s.client_loop_lag_ms = summarize(std::move(lag_ms));
}

/// Warnings on the run's outcome: nothing completed, too many errors, concurrency underfilled.
void warn_outcome(const SummaryOptions& options, Summary& s) {
  if (s.requests_ok == 0) {
    s.warnings.push_back({WarningCode::kNoCompletedRequests,
                          "no measured request completed (" + std::to_string(s.requests_failed) +
                              " failed, " + std::to_string(s.requests_cancelled) +
                              " cancelled); no latency or rate figures",
                          "check the URL, model name and API key, and that the engine is up; see "
                          "errors_by_category"});
  }
  if (s.error_rate && *s.error_rate > options.high_error_rate) {
    std::string categories;
    for (const auto& [category, n] : s.errors_by_category) {
      categories += (categories.empty() ? "" : ", ") + category + ": " + std::to_string(n);
    }
    s.warnings.push_back(
        {WarningCode::kHighErrorRate,
         "error rate " + percent(*s.error_rate) + " (" + std::to_string(s.requests_failed) +
             " of " + std::to_string(s.requests_total) + " requests failed; " + categories +
             ") is above " + percent(options.high_error_rate),
         "look at errors_by_category; check the URL, model and API key, or lower the load"});
  }
  if (options.declared_concurrency && s.achieved_concurrency &&
      *s.achieved_concurrency < kUnderfillRatio * *options.declared_concurrency) {
    s.warnings.push_back(
        {WarningCode::kConcurrencyUnderfilled,
         "achieved concurrency " + num(*s.achieved_concurrency) + " is below " +
             num(kUnderfillRatio) + " x the declared " + num(*options.declared_concurrency),
         "raise --requests or --duration so that ramp-up and drain are a small part of the "
         "window, or check the engine's limit on running sequences"});
  }
}

/// Open loop: why the queue delay says the client fell behind its schedule (its p99, its
/// growth from the first quarter of the run to the last), appended to `reasons`.
void queue_delay_reasons(std::span<const Trace* const> ended, std::vector<std::string>& reasons) {
  // Queue delay of every ended request, in sent order (a failed request waited too).
  std::vector<std::pair<std::int64_t, double>> delays;  // (sent_ns, delay_ms)
  for (const Trace* t : ended) {
    if (t->sent_ns && t->scheduled_ns) {
      delays.emplace_back(*t->sent_ns, ns_to_s(*t->sent_ns - *t->scheduled_ns) * 1e3);
    }
  }
  std::stable_sort(delays.begin(), delays.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> sorted_ms;
  sorted_ms.reserve(delays.size());
  for (const auto& d : delays) sorted_ms.push_back(d.second);
  std::vector<double> in_order = sorted_ms;
  std::sort(sorted_ms.begin(), sorted_ms.end());
  const auto p99 = percentile_sorted(sorted_ms, 99.0);
  if (p99 && *p99 > kQueueDelayP99WarnS * 1e3) {
    reasons.push_back("queue delay p99 " + num(*p99) + " ms > " + num(kQueueDelayP99WarnS * 1e3) +
                      " ms");
  }
  const std::size_t quarter = in_order.size() / 4;
  if (quarter >= 1) {
    const double first = mean_of(std::span(in_order).first(quarter));
    const double last = mean_of(std::span(in_order).last(quarter));
    if (last - first > kQueueDelayGrowthWarnS * 1e3) {
      reasons.push_back("mean queue delay grew from " + num(first) + " ms (first quarter) to " +
                        num(last) + " ms (last quarter)");
    }
  }
}

/// The warning that the client itself may have distorted the timing (loop lag, queue delay).
void warn_client_saturated(std::span<const Trace* const> ended, const SummaryOptions& options,
                           Summary& s) {
  std::vector<std::string> reasons;
  if (s.client_loop_lag_ms.p99 && *s.client_loop_lag_ms.p99 > kLoopLagP99WarnS * 1e3) {
    reasons.push_back("event-loop lag p99 " + num(*s.client_loop_lag_ms.p99) + " ms > " +
                      num(kLoopLagP99WarnS * 1e3) + " ms");
  }
  if (options.open_loop) queue_delay_reasons(ended, reasons);
  if (!reasons.empty()) {
    std::string message = "the client may have distorted the timing: ";
    for (std::size_t i = 0; i < reasons.size(); ++i) message += (i ? "; " : "") + reasons[i];
    s.warnings.push_back(
        {WarningCode::kClientSaturated, message,
         "lower the rate or concurrency, or run the client on a faster machine; dyno's own CPU "
         "use is in client_cpu_s"});
  }
}

/// A replay that fell behind its timestamps says so, with the lag (sent − scheduled).
void warn_replay_behind(std::span<const Trace* const> ended, Summary& s) {
  std::vector<double> lag_ms;
  std::uint64_t late = 0;
  for (const Trace* t : ended) {
    if (!t->sent_ns || !t->scheduled_ns) continue;
    const double lag = static_cast<double>(*t->sent_ns - *t->scheduled_ns) * 1e-6;
    lag_ms.push_back(lag);
    if (lag > kReplayLagP99WarnS * 1e3) ++late;
  }
  const Distribution d = summarize(lag_ms);
  if (!d.p99 || *d.p99 <= kReplayLagP99WarnS * 1e3) return;
  s.warnings.push_back(
      {WarningCode::kReplayBehind,
       "the replay fell behind its timestamps: " + std::to_string(late) + " of " +
           std::to_string(d.count) + " requests were sent more than " +
           num(kReplayLagP99WarnS * 1e3) + " ms late (send lag p50 " + num(*d.p50) + " ms, p99 " +
           num(*d.p99) + " ms, max " + num(*d.max) + " ms)",
       "the load these requests met was not the trace's: slow the replay (a larger "
       "--time-scale), replay a shorter --time-window, or give the client a faster machine"});
}

/// Synthetic prompts of about --input-tokens words: the engine's count of them may differ.
void warn_input_length(double requested, Summary& s) {
  const auto& achieved = s.input_tokens.mean;
  if (!achieved || !(requested > 0)) return;
  if (std::fabs(*achieved - requested) / requested <= kInputLengthTolerance) return;
  char text[256];
  std::snprintf(text, sizeof text,
                "the prompts were made to be %.0f tokens each but the engine counted %.1f on "
                "average (%+.1f %%)",
                requested, *achieved, (*achieved - requested) / requested * 100.0);
  s.warnings.push_back(
      {WarningCode::kInputLengthDiffers,
       std::string(text) +
           ": synthetic prompts made without a tokenizer are about one token per word, and a "
           "chat template adds its own",
       "for prompts of exact lengths (chat template included), write a stream with `dyno "
       "stream make --count C --input-tokens N --output-tokens M -o FILE` (counted by the "
       "engine's own /tokenize; --url U --model M for a server) and give it as --stream"});
}

}  // namespace

Summary summarize_run(std::span<const Trace> traces, const SummaryOptions& options) {
  Summary s;
  const Outcomes outcomes = tally_outcomes(traces, s);
  service_window(outcomes.ended, s);
  completed_figures(outcomes.ok, options, s);
  answer_quality(outcomes.ended, s);
  client_figures(options, s);
  warn_outcome(options, s);
  warn_client_saturated(outcomes.ended, options, s);
  if (options.replay) warn_replay_behind(outcomes.ended, s);
  if (options.requested_input_tokens) warn_input_length(*options.requested_input_tokens, s);
  s.sessions = session_figures(traces);
  s.prefix_cache = prefix_cache_figures(traces);
  return s;
}

}  // namespace dyno::metrics
