#include "app/console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "transport/server_message.h"

namespace dyno::app {

namespace {

const char* kBold = "\x1b[1m";
const char* kDim = "\x1b[2m";
const char* kYellow = "\x1b[33m";
const char* kReset = "\x1b[0m";

std::string paint(const std::string& text, const char* code, bool color) {
  return color ? std::string(code) + text + kReset : text;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

void dist_row(std::ostringstream& out, const std::string& name, const metrics::Distribution& d,
              int decimals) {
  out << "  " << pad_right(name, 22) << pad_left(std::to_string(d.count), 7);
  for (const auto& v : {d.mean, d.p50, d.p90, d.p99, d.max, d.jitter}) {
    out << pad_left(fmt(v, decimals), 11);
  }
  out << "\n";
}

std::string bytes_text(std::optional<double> b) {
  if (!b) return "n/a";
  return fmt(*b / (1024.0 * 1024.0), 1) + " MiB";
}

}  // namespace

std::string fmt(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, *v);
  return buf;
}

ConsoleStyle detect_style(const std::string& color, bool quiet) {
  ConsoleStyle style;
  const bool no_color_env =
      std::getenv("NO_COLOR") != nullptr && std::getenv("NO_COLOR")[0] != '\0';
  if (color == "always") {
    style.color = true;
  } else if (color == "auto") {
    style.color = !no_color_env && ::isatty(STDOUT_FILENO) != 0;
  }
  style.progress = !quiet && ::isatty(STDERR_FILENO) != 0;
  return style;
}

void ProgressBar::update(const load::Progress& p, double elapsed_s) {
  if (!enabled_) return;
  std::ostringstream line;
  if (p.warmup) {
    line << "warm-up · " << p.in_flight << " in flight";
  } else {
    constexpr int kWidth = 24;
    if (p.total && *p.total > 0) {
      const double frac =
          std::min(1.0, static_cast<double>(p.done + p.failed) / static_cast<double>(*p.total));
      const int filled = static_cast<int>(frac * kWidth);
      line << "[" << std::string(static_cast<std::size_t>(filled), '#')
           << std::string(static_cast<std::size_t>(kWidth - filled), '.') << "] "
           << (p.done + p.failed) << "/" << *p.total;
    } else {
      line << (p.done + p.failed) << " done";
    }
    line << " · " << p.failed << " errors · " << p.in_flight << " in flight";
    if (elapsed_s > 0) {
      line << " · " << fmt(static_cast<double>(p.output_tokens) / elapsed_s, 0) << " tok/s";
    }
  }
  std::string text = line.str();
  std::fprintf(stderr, "\r\x1b[2K%s", text.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\x1b[2K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

std::string percent_text(std::optional<double> fraction) {
  return fmt(fraction ? std::optional<double>(*fraction * 100.0) : std::nullopt, 1) + " %";
}

std::string sessions_text(const metrics::Summary& s) {
  std::ostringstream out;
  if (const auto& f = s.sessions) {
    out << "sessions    " << f->sessions << " · " << f->completed << " completed · " << f->failed
        << " failed · " << f->cut << " cut · turns p50 " << fmt(f->turns.p50, 1)
        << " · duration p50 " << fmt(f->duration_s.p50, 2) << " s\n";
    // Turn by turn: how TTFT and the cache follow the conversation's growth (at most 8 shown).
    const std::size_t shown = std::min<std::size_t>(f->per_turn.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) {
      const metrics::TurnFigures& t = f->per_turn[i];
      out << "  turn " << t.turn << "      " << t.requests << " req · ttft p50 "
          << fmt(t.ttft_ms.p50, 2) << " ms · prompt p50 " << fmt(t.input_tokens.p50, 0)
          << " tok · cached " << (t.cache ? percent_text(t.cache->hit_rate) : "n/a") << "\n";
    }
    if (shown < f->per_turn.size()) {
      out << "  (" << f->per_turn.size() - shown << " more turns in summary.json)\n";
    }
  }
  if (const auto& c = s.prefix_cache) {
    out << "prefix cache " << c->totals.cached_tokens << " of " << c->totals.prompt_tokens
        << " prompt tokens cached (" << percent_text(c->totals.hit_rate) << ", from " << c->source
        << ")";
    if (const auto slope = c->ttft_ms_per_1k_uncached) {
      out << " · ttft " << fmt(c->ttft_intercept_ms, 2) << " ms " << (*slope < 0 ? "− " : "+ ")
          << fmt(std::optional<double>(std::abs(*slope)), 2) << " ms per 1k uncached";
    }
    out << "\n";
  }
  return out.str();
}

std::string render_summary(const RunHeadline& h, const metrics::Summary& s, bool color) {
  std::ostringstream out;
  out << paint("dyno run " + h.run_id, kBold, color) << " · " << h.status << "\n";
  out << "engine    " << terminal_text(h.engine, true) << " · model "
      << terminal_text(h.model, true) << " · " << h.api << "\n";
  out << "load      " << h.load << "\n";
  out << "requests  " << s.requests_ok << " ok · " << s.requests_failed << " failed";
  if (s.requests_cancelled > 0) out << " · " << s.requests_cancelled << " cancelled";
  out << " · " << s.warmup_requests << " warm-up discarded · window " << fmt(s.service_window_s, 2)
      << " s\n";
  if (!s.errors_by_category.empty()) {
    out << "errors   ";
    for (const auto& [cat, n] : s.errors_by_category) out << " " << cat << "=" << n;
    out << "\n";
    // What was said, counted: the most frequent messages (all of them in summary.json).
    constexpr std::size_t kShown = 5;
    const std::size_t shown = std::min(kShown, s.errors_by_message.size());
    std::uint64_t rest = s.errors_other_messages;
    for (std::size_t i = 0; i < s.errors_by_message.size(); ++i) {
      const metrics::ErrorMessageCount& m = s.errors_by_message[i];
      if (i >= shown) {
        rest += m.count;
        continue;
      }
      // The category once: a server's own type that names it already ("server_error: …")
      // is not preceded by it again.
      const bool named = m.message.rfind(m.category + ": ", 0) == 0;
      out << "  " << pad_left(std::to_string(m.count) + "\u00d7", 7) << " "
          << (named ? std::string() : m.category + ": ")
          << terminal_text(transport::bounded_excerpt(m.message, 160), true) << "\n";
    }
    if (rest > 0) out << "  " << rest << " more with other messages (summary.json)\n";
  }
  out << "\n";
  out << paint(pad_right("latency (ms)", 24) + pad_left("n", 7) + pad_left("mean", 11) +
                   pad_left("p50", 11) + pad_left("p90", 11) + pad_left("p99", 11) +
                   pad_left("max", 11) + pad_left("p95-p50", 11),
               kDim, color)
      << "\n";
  // Server-side rows (the engine's own timings) sit under the client's, never in their place.
  const engine::ServerTimingFigures* server =
      h.server_timings && h.server_timings->with_timings > 0 ? &*h.server_timings : nullptr;
  dist_row(out, "ttft", s.ttft_ms, 2);
  if (server) dist_row(out, "prefill time (server)", server->prompt_ms, 2);
  dist_row(out, "ttft from schedule", s.ttft_from_schedule_ms, 2);
  dist_row(out, "tpot", s.tpot_ms, 2);
  dist_row(out, "event gap (itl)", s.event_gap_ms, 2);
  dist_row(out, "e2e", s.e2e_ms, 1);
  dist_row(out, "queue delay", s.queue_delay_ms, 3);
  out << paint("rates (tok/s)", kDim, color) << "\n";
  dist_row(out, "decode per user", s.decode_rate_per_user, 1);
  if (server) dist_row(out, "decode/user (server)", server->decode_rate_per_user, 1);
  dist_row(out, "prefill (client)", s.prefill_rate_client, 0);
  if (server) dist_row(out, "prefill (server)", server->prefill_rate, 0);
  out << "\n";
  out << "throughput  output " << fmt(s.output_tokens_per_s, 1) << " tok/s · input "
      << fmt(s.input_tokens_per_s, 1) << " tok/s · " << fmt(s.requests_per_s, 2)
      << " req/s · decode " << fmt(s.decode_tokens_per_s, 1) << " tok/s\n";
  out << "concurrency achieved " << fmt(s.achieved_concurrency, 2) << "\n";
  if (s.goodput_requests_per_s || s.goodput_requests) {
    out << "goodput     " << fmt(s.goodput_requests_per_s, 2) << " req/s ("
        << (s.goodput_requests ? std::to_string(*s.goodput_requests) : "n/a") << " of "
        << s.requests_total << " met " << h.slo_text << ")\n";
  }
  if (s.scored_requests) {
    out << "quality     accuracy "
        << fmt(s.accuracy ? std::optional<double>(*s.accuracy * 100.0) : std::nullopt, 1) << " % ("
        << s.correct_requests.value_or(0) << " of " << *s.scored_requests << " correct)\n";
  }
  // Counts of requests that ended ok; with none counted, they are unknown, not 0.
  const bool counted = !s.token_count_sources.empty();
  out << "tokens      in "
      << (counted && s.input_tokens_complete ? std::to_string(s.input_tokens_total)
                                             : std::string("n/a"))
      << " · out " << (counted ? std::to_string(s.output_tokens_total) : std::string("n/a"))
      << " · tokens/event " << fmt(s.tokens_per_event, 2) << " · counted from";
  for (const auto& [src, n] : s.token_count_sources) out << " " << src << "=" << n;
  if (!counted) out << " no request";
  out << "\n";
  if (server) {
    out << "server      timings in " << server->with_timings << " of "
        << server->with_timings + server->without_timings << " responses · prompt tokens "
        << server->prompt_tokens_computed << " computed, "
        << (server->prompt_tokens_cached ? std::to_string(*server->prompt_tokens_cached) : "n/a")
        << " cached\n";
  }
  const bool timings_rate = server != nullptr && server->acceptance_rate.has_value();
  if ((server && server->draft_tokens) || timings_rate || h.metrics_acceptance_rate) {
    const auto percent = [](std::optional<double> v) {
      return fmt(v ? std::optional<double>(*v * 100.0) : std::nullopt, 1) + " %";
    };
    out << "speculative";
    const char* sep = " ";
    if (server && server->draft_tokens) {
      out << sep << "drafts " << *server->draft_tokens << ", "
          << server->draft_tokens_accepted.value_or(0) << " accepted";
      sep = " · ";
    }
    if (timings_rate || h.metrics_acceptance_rate) {
      out << sep << "acceptance";
      if (timings_rate) out << " " << percent(server->acceptance_rate) << " (timings)";
      if (timings_rate && h.metrics_acceptance_rate) out << " ·";
      if (h.metrics_acceptance_rate) {
        out << " " << percent(h.metrics_acceptance_rate) << " (/metrics)";
      }
    }
    out << "\n";
  }
  out << sessions_text(s);
  if (!h.energy.empty()) out << "energy      " << h.energy << "\n";
  out << "client      cpu " << fmt(s.client_cpu_s, 2) << " s";
  if (!s.client_cpu_scope.empty()) {
    out << " (" << s.client_cpu_scope << "; event loop " << fmt(s.client_loop_cpu_s, 2) << " s)";
  }
  out << " · peak rss " << bytes_text(s.client_peak_rss_bytes) << " · loop lag p99 "
      << fmt(s.client_loop_lag_ms.p99, 2) << " ms\n";
  out << "definitions " << s.definition_set << " (percentiles: linear interpolation)\n";
  out << "record      " << terminal_text(h.record_dir, true) << "\n";
  return out.str();
}

std::string render_warnings(const std::vector<metrics::Warning>& warnings, bool color) {
  std::string out;
  for (const auto& w : warnings) {
    out +=
        paint("warning[" + terminal_text(metrics::to_string(w.code), true) + "]", kYellow, color) +
        ": " + terminal_text(w.message) + "\n";
    out += "  hint: " + terminal_text(w.hint) + "\n";
  }
  return out;
}

}  // namespace dyno::app
