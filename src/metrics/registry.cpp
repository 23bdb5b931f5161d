#include "metrics/registry.h"

#include <cmath>

namespace dyno::metrics {

namespace {

// The sections of docs/metrics.md that define the figures (GitHub anchors of their headings;
// tests/metrics/registry_test.cpp checks each against the page).
constexpr const char* kRunFigures =
    "run-figures-measured-phase-only-warm-up-and-cancelled-requests-excluded";
constexpr const char* kPerRequest = "per-request-figures-requestsjsonl-keeps-their-inputs";
constexpr const char* kTokens = "tokens";
constexpr const char* kQuality = "quality-answer-scoring";
constexpr const char* kOutcomes = "request-outcomes-and-error-categories";
constexpr const char* kServer = "server-side-figures-summaryjson--server";
constexpr const char* kTimings = "per-response-server-timings-summaryjson--servertimings";
constexpr const char* kEnergy =
    "energy-and-power-summaryjson--energy-how-it-is-measured-docstelemetrymd";
constexpr const char* kBoards = "comparison-boards-dyno-compare-dyno-report-docscomparemd";
constexpr const char* kPerMtok = "cost-and-energy-per-million-tokens";

using D = Direction;
using Q = Quantity;
using R = Resample;
using S = Section;

Figure fig(std::string path, std::string unit, Q q, D d, Source src, const char* anchor) {
  Figure f;
  f.path = std::move(path);
  f.unit = std::move(unit);
  f.quantity = q;
  f.direction = d;
  f.source = src;
  f.anchor = anchor;
  return f;
}

/// A figure of the typed summary held as an optional number.
Figure value(std::string path, std::string unit, Q q, D d, const char* anchor,
             std::optional<double> Summary::*member) {
  Figure f = fig(std::move(path), std::move(unit), q, d, Source::kClient, anchor);
  f.value = member;
  return f;
}

/// A distribution of the typed summary.
Figure dist(std::string path, std::string unit, Q q, D d, const char* anchor,
            Distribution Summary::*member, bool over_completed) {
  Figure f = fig(std::move(path), std::move(unit), q, d, Source::kClient, anchor);
  f.distribution = true;
  f.dist = member;
  f.over_completed = over_completed;
  f.importable = true;
  return f;
}

Figure importable(Figure f) {
  f.importable = true;
  return f;
}

Figure engine(Figure f, std::string who) {
  f.source = Source::kEngine;
  f.engine_source = std::move(who);
  return f;
}

Figure derived(Figure f, std::string formula) {
  f.formula = std::move(formula);
  return f;
}

Figure points(Figure f) {
  f.delta_kind = DeltaKind::kPoints;
  return f;
}

/// Adds a board view: `stat` of a distribution ("" for a scalar).
Figure on_board(Figure f, int order, std::string key, std::string label, S section, R resample,
                int decimals, bool headline = false, std::string stat = "",
                double percentile = 50) {
  BoardView v;
  v.key = std::move(key);
  v.label = std::move(label);
  v.stat = std::move(stat);
  v.section = section;
  v.resample = resample;
  v.percentile = percentile;
  v.decimals = decimals;
  v.headline = headline;
  v.order = order;
  f.board.push_back(std::move(v));
  return f;
}

std::vector<Figure> make_figures() {
  using Sm = Summary;
  const Source client = Source::kClient;
  const Source telemetry = Source::kTelemetry;
  std::vector<Figure> f;
  // requests
  f.push_back(importable(fig("requests.total", "", Q::kCount, D::kNone, client, kOutcomes)));
  f.push_back(importable(fig("requests.ok", "", Q::kCount, D::kNone, client, kOutcomes)));
  f.push_back(importable(fig("requests.failed", "", Q::kCount, D::kNone, client, kOutcomes)));
  f.push_back(fig("requests.cancelled", "", Q::kCount, D::kNone, client, kOutcomes));
  f.push_back(
      value("requests.error_rate", "", Q::kFraction, D::kLower, kRunFigures, &Sm::error_rate));
  // tokens
  f.push_back(
      importable(fig("tokens.input_total", "tokens", Q::kCount, D::kNone, client, kTokens)));
  f.push_back(
      importable(fig("tokens.output_total", "tokens", Q::kCount, D::kNone, client, kTokens)));
  f.push_back(on_board(importable(value("tokens.tokens_per_event", "", Q::kNumber, D::kNone,
                                        kTokens, &Sm::tokens_per_event)),
                       22, "tokens_per_event", "Tokens per event (client)", S::kEngine, R::kNone,
                       2));
  // throughput
  f.push_back(importable(value("throughput.service_window_s", "s", Q::kTimeS, D::kNone, kRunFigures,
                               &Sm::service_window_s)));
  f.push_back(on_board(importable(value("throughput.output_tokens_per_s", "tok/s", Q::kRate,
                                        D::kHigher, kRunFigures, &Sm::output_tokens_per_s)),
                       0, "output_tokens_per_s", "Output tok/s", S::kThroughput, R::kServiceRate, 1,
                       true));
  f.push_back(on_board(importable(value("throughput.input_tokens_per_s", "tok/s", Q::kRate,
                                        D::kHigher, kRunFigures, &Sm::input_tokens_per_s)),
                       6, "input_tokens_per_s", "Input tok/s (aggregate)", S::kPrefill,
                       R::kServiceRate, 1));
  f.push_back(on_board(importable(value("throughput.requests_per_s", "req/s", Q::kRate, D::kHigher,
                                        kRunFigures, &Sm::requests_per_s)),
                       1, "requests_per_s", "Req/s", S::kThroughput, R::kServiceRate, 2, true));
  f.push_back(on_board(importable(value("throughput.decode_tokens_per_s", "tok/s", Q::kRate,
                                        D::kHigher, kRunFigures, &Sm::decode_tokens_per_s)),
                       2, "decode_tokens_per_s", "Decode tok/s", S::kThroughput, R::kDecodeRate, 1,
                       true));
  f.push_back(on_board(importable(value("throughput.achieved_concurrency", "", Q::kNumber, D::kNone,
                                        kRunFigures, &Sm::achieved_concurrency)),
                       5, "achieved_concurrency", "Achieved concurrency", S::kThroughput, R::kNone,
                       2));
  f.push_back(on_board(importable(value("throughput.goodput_requests_per_s", "req/s", Q::kRate,
                                        D::kHigher, kRunFigures, &Sm::goodput_requests_per_s)),
                       4, "goodput_requests_per_s", "Goodput req/s", S::kThroughput,
                       R::kServiceRate, 2));
  {
    Figure g = importable(
        fig("throughput.goodput_requests", "", Q::kCount, D::kNone, client, kRunFigures));
    g.count = &Sm::goodput_requests;
    f.push_back(std::move(g));
  }
  // quality
  {
    Figure s = importable(fig("quality.scored", "", Q::kCount, D::kNone, client, kQuality));
    s.count = &Sm::scored_requests;
    f.push_back(std::move(s));
    Figure c = importable(fig("quality.correct", "", Q::kCount, D::kNone, client, kQuality));
    c.count = &Sm::correct_requests;
    f.push_back(std::move(c));
  }
  f.push_back(on_board(points(importable(value("quality.accuracy", "", Q::kFraction, D::kHigher,
                                               kQuality, &Sm::accuracy))),
                       23, "accuracy", "Accuracy", S::kQuality, R::kMean, 3));
  // latency_ms
  f.push_back(dist("latency_ms.queue_delay", "ms", Q::kTimeMs, D::kLower, kPerRequest,
                   &Sm::queue_delay_ms, true));
  {
    Figure t =
        dist("latency_ms.ttft", "ms", Q::kTimeMs, D::kLower, kPerRequest, &Sm::ttft_ms, true);
    t = on_board(std::move(t), 8, "ttft_p50_ms", "TTFT p50", S::kLatency, R::kPercentile, 1, false,
                 "p50", 50);
    t = on_board(std::move(t), 9, "ttft_p99_ms", "TTFT p99", S::kLatency, R::kPercentile, 1, false,
                 "p99", 99);
    f.push_back(std::move(t));
  }
  f.push_back(dist("latency_ms.ttft_from_schedule", "ms", Q::kTimeMs, D::kLower, kPerRequest,
                   &Sm::ttft_from_schedule_ms, true));
  {
    Figure e = dist("latency_ms.e2e", "ms", Q::kTimeMs, D::kLower, kPerRequest, &Sm::e2e_ms, true);
    e = on_board(std::move(e), 11, "e2e_p50_ms", "E2E p50", S::kLatency, R::kPercentile, 1, false,
                 "p50", 50);
    e = on_board(std::move(e), 12, "e2e_p95_ms", "E2E p95", S::kLatency, R::kPercentile, 1, false,
                 "p95", 95);
    e = on_board(std::move(e), 13, "e2e_p99_ms", "E2E p99", S::kLatency, R::kPercentile, 1, false,
                 "p99", 99);
    e = on_board(std::move(e), 14, "e2e_jitter_ms", "E2E jitter (p95 − p50)", S::kLatency,
                 R::kJitter, 1, false, "jitter_p95_minus_p50");
    f.push_back(std::move(e));
  }
  f.push_back(on_board(
      dist("latency_ms.tpot", "ms", Q::kTimeMs, D::kLower, kPerRequest, &Sm::tpot_ms, false), 10,
      "tpot_p50_ms", "TPOT p50", S::kLatency, R::kPercentile, 2, false, "p50", 50));
  f.push_back(dist("latency_ms.event_gap", "ms", Q::kTimeMs, D::kLower, kPerRequest,
                   &Sm::event_gap_ms, false));
  // rates_tok_s
  f.push_back(on_board(dist("rates_tok_s.decode_rate_per_user", "tok/s", Q::kRate, D::kHigher,
                            kRunFigures, &Sm::decode_rate_per_user, false),
                       3, "decode_rate_per_user_p50", "Decode tok/s per user p50", S::kThroughput,
                       R::kPercentile, 1, false, "p50", 50));
  f.push_back(on_board(dist("rates_tok_s.prefill_rate_client", "tok/s", Q::kRate, D::kHigher,
                            kPerRequest, &Sm::prefill_rate_client, false),
                       7, "prefill_rate_client_p50", "Prefill tok/s per user p50", S::kPrefill,
                       R::kPercentile, 1, false, "p50", 50));
  // lengths_tokens
  f.push_back(dist("lengths_tokens.input", "tokens", Q::kNumber, D::kNone, kTokens,
                   &Sm::input_tokens, false));
  f.push_back(on_board(dist("lengths_tokens.output", "tokens", Q::kNumber, D::kNone, kTokens,
                            &Sm::output_tokens, false),
                       24, "output_tokens_mean", "Mean output tokens", S::kQuality, R::kNone, 1,
                       false, "mean"));
  // the engine's own figures (server): shown on a board only when some run has one; rates
  // compared, never headline
  {
    Figure p =
        engine(fig("server.timings.prefill_rate", "tok/s", Q::kRate, D::kHigher, client, kTimings),
               "response timings");
    p.distribution = true;
    f.push_back(on_board(std::move(p), 15, "server_prefill_tok_s",
                         "Prefill tok/s per request p50 (engine)", S::kEngine, R::kNone, 1, false,
                         "p50", 50));
    f.push_back(on_board(importable(engine(fig("server.timings.prefill_tokens_per_s", "tok/s",
                                               Q::kRate, D::kHigher, client, kTimings),
                                           "response timings")),
                         16, "server_prefill_tokens_per_s", "Prefill tok/s (engine-timed)",
                         S::kEngine, R::kEnginePrefill, 1));
    Figure d = engine(
        fig("server.timings.decode_rate_per_user", "tok/s", Q::kRate, D::kHigher, client, kTimings),
        "response timings");
    d.distribution = true;
    f.push_back(on_board(std::move(d), 17, "server_decode_tok_s",
                         "Decode tok/s per user p50 (engine)", S::kEngine, R::kNone, 1, false,
                         "p50", 50));
  }
  f.push_back(on_board(engine(fig("server.timings.prompt_tokens_computed", "tokens", Q::kCount,
                                  D::kNone, client, kTimings),
                              "response timings"),
                       18, "server_prompt_tokens_computed", "Prompt tokens computed (engine)",
                       S::kEngine, R::kNone, 0));
  f.push_back(on_board(engine(fig("server.timings.prompt_tokens_cached", "tokens", Q::kCount,
                                  D::kNone, client, kTimings),
                              "response timings"),
                       19, "server_prompt_tokens_cached", "Prompt tokens cached (engine)",
                       S::kEngine, R::kNone, 0));
  f.push_back(on_board(engine(fig("server.timings.spec_decode_acceptance_rate", "", Q::kFraction,
                                  D::kNone, client, kTimings),
                              "response timings"),
                       20, "draft_acceptance_timings",
                       "Draft acceptance (engine, response timings)", S::kEngine, R::kNone, 3));
  f.push_back(on_board(
      engine(fig("server.spec_decode_acceptance_rate", "", Q::kFraction, D::kNone, client, kServer),
             "/metrics"),
      21, "draft_acceptance_metrics", "Draft acceptance (engine, /metrics)", S::kEngine, R::kNone,
      3));
  // energy (the telemetry's)
  f.push_back(
      on_board(fig("energy.vram_peak_bytes", "bytes", Q::kPhysical, D::kNone, telemetry, kEnergy),
               25, "vram_peak_bytes", "Peak VRAM", S::kGpu, R::kNone, 0));
  f.push_back(on_board(derived(fig("power_mean_w", "W", Q::kPhysical, D::kNone, telemetry, kBoards),
                               "energy.energy_j / energy.window_s"),
                       26, "power_mean_w", "Power mean (energy counter)", S::kGpu, R::kNone, 1));
  f.push_back(on_board(derived(fig("power_peak_w", "W", Q::kPhysical, D::kNone, telemetry, kBoards),
                               "energy.power_peak_w, else Σ energy.devices[in scope].power_peak_w"),
                       27, "power_peak_w", "Power peak (power samples)", S::kGpu, R::kNone, 1));
  f.push_back(on_board(derived(fig("power_p95_w", "W", Q::kPhysical, D::kNone, telemetry, kBoards),
                               "Σ energy.devices[in scope].power_p95_w"),
                       28, "power_p95_w", "Power p95 (power samples)", S::kGpu, R::kNone, 1));
  f.push_back(
      on_board(derived(fig("temperature_p95_c", "°C", Q::kPhysical, D::kNone, telemetry, kBoards),
                       "max energy.devices[gpu].temperature_p95_c"),
               29, "temperature_p95_c", "Temperature p95", S::kGpu, R::kNone, 0));
  f.push_back(on_board(fig("energy.energy_j", "J", Q::kPhysical, D::kNone, telemetry, kEnergy), 30,
                       "energy_j", "Energy", S::kEnergy, R::kNone, 1));
  f.push_back(on_board(
      fig("energy.joules_per_output_token", "J/tok", Q::kPhysical, D::kLower, telemetry, kEnergy),
      31, "joules_per_output_token", "Energy per output token, gross", S::kEnergy, R::kNone, 4));
  f.push_back(on_board(fig("energy.idle_subtracted_joules_per_output_token", "J/tok", Q::kPhysical,
                           D::kLower, telemetry, kEnergy),
                       32, "idle_subtracted_joules_per_output_token",
                       "Energy per output token, net of idle", S::kEnergy, R::kNone, 4));
  f.push_back(on_board(
      fig("energy.output_tokens_per_j", "tok/J", Q::kPhysical, D::kHigher, telemetry, kEnergy), 33,
      "output_tokens_per_j", "Output tokens per joule", S::kEnergy, R::kNone, 3));
  // J/Mtok: energy_j / output_total × 10⁶, computed once in metrics/cost.h (joules_per_mtok).
  f.push_back(on_board(
      derived(fig("joules_per_mtok_output", "J/Mtok", Q::kPhysical, D::kLower, telemetry, kPerMtok),
              "energy.energy_j / tokens.output_total × 10⁶ (metrics::joules_per_mtok)"),
      34, "joules_per_mtok_output", "Energy per million output tokens", S::kEnergy, R::kNone, 0));
  return f;
}

bool in_section(const Figure& f, std::string_view section) {
  return f.formula.empty() && f.path.size() > section.size() &&
         std::string_view(f.path).starts_with(section) && f.path[section.size()] == '.';
}

}  // namespace

const std::vector<Figure>& figures() {
  static const std::vector<Figure> all = make_figures();
  return all;
}

const Figure* find_figure(std::string_view path) {
  for (const Figure& f : figures()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<const Figure*> figures_in(std::string_view section) {
  std::vector<const Figure*> out;
  for (const Figure& f : figures()) {
    if (in_section(f, section)) out.push_back(&f);
  }
  return out;
}

std::string_view leaf(const Figure& f) {
  const std::string_view p = f.path;
  const std::size_t dot = p.rfind('.');
  return dot == std::string_view::npos ? p : p.substr(dot + 1);
}

std::optional<double> mean_power_w(std::optional<double> energy_j, double window_s) {
  if (!energy_j || !(window_s > 0)) return std::nullopt;
  return *energy_j / window_s;
}

bool power_sources_disagree(std::optional<double> mean_w, std::optional<double> peak_w) {
  return mean_w && peak_w && *mean_w > *peak_w * (1.0 + kPowerDisagreementMargin);
}

bool typed(const Figure& f) {
  return f.value != nullptr || f.count != nullptr || f.dist != nullptr;
}

std::optional<double> statistic(const Distribution& d, std::string_view stat) {
  if (stat == "count") return static_cast<double>(d.count);
  if (stat == "mean") return d.mean;
  if (stat == "stddev") return d.stddev;
  if (stat == "min") return d.min;
  if (stat == "p50") return d.p50;
  if (stat == "p90") return d.p90;
  if (stat == "p95") return d.p95;
  if (stat == "p99") return d.p99;
  if (stat == "p99_9") return d.p999;
  if (stat == "max") return d.max;
  if (stat == "jitter_p95_minus_p50") return d.jitter;
  return std::nullopt;
}

std::optional<double> value_of(const Summary& s, const Figure& f, std::string_view stat) {
  std::optional<double> v;
  if (f.dist != nullptr) {
    v = statistic(s.*(f.dist), stat);
  } else if (f.value != nullptr) {
    v = s.*(f.value);
  } else if (f.count != nullptr) {
    if (const auto& n = s.*(f.count)) v = static_cast<double>(*n);
  }
  if (v && !std::isfinite(*v)) v.reset();  // a record writes them null
  return v;
}

const char* to_string(Direction d) {
  switch (d) {
    case Direction::kHigher:
      return "higher_is_better";
    case Direction::kLower:
      return "lower_is_better";
    case Direction::kNone:
      return "none";
  }
  return "none";
}

const char* to_string(Section s) {
  switch (s) {
    case Section::kThroughput:
      return "throughput";
    case Section::kFrontier:
      return "frontier";
    case Section::kPrefill:
      return "prefill";
    case Section::kLatency:
      return "latency";
    case Section::kEngine:
      return "engine";
    case Section::kQuality:
      return "quality";
    case Section::kGpu:
      return "gpu";
    case Section::kEnergy:
      return "energy";
  }
  return "throughput";
}

const char* to_string(Source s) {
  switch (s) {
    case Source::kClient:
      return "client";
    case Source::kEngine:
      return "engine";
    case Source::kTelemetry:
      return "telemetry";
  }
  return "client";
}

const std::vector<SelectionMetric>& selection_metrics() {
  static const std::vector<SelectionMetric> metrics = {
      {"output_tokens_per_s", "throughput.output_tokens_per_s", ""},
      {"requests_per_s", "throughput.requests_per_s", ""},
      {"input_tokens_per_s", "throughput.input_tokens_per_s", ""},
      {"decode_tokens_per_s", "throughput.decode_tokens_per_s", ""},
      {"goodput_requests_per_s", "throughput.goodput_requests_per_s", ""},
      {"ttft_p50_ms", "latency_ms.ttft", "p50"},
      {"tpot_p50_ms", "latency_ms.tpot", "p50"},
      {"e2e_p50_ms", "latency_ms.e2e", "p50"},
      {"decode_rate_p50", "rates_tok_s.decode_rate_per_user", "p50"},
      {"prefill_rate_p50", "rates_tok_s.prefill_rate_client", "p50"}};
  return metrics;
}

std::optional<double> selection_value(const Summary& s, std::string_view name) {
  for (const SelectionMetric& m : selection_metrics()) {
    if (m.name != name) continue;
    const Figure* f = find_figure(m.path);
    return f != nullptr ? value_of(s, *f, m.stat) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace dyno::metrics
