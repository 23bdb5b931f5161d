#include "compare/figures.h"

#include <algorithm>
#include <cmath>

#include "metrics/cost.h"
#include "metrics/registry.h"
#include "metrics/stats.h"
#include "metrics/summary.h"
#include "record/llamacpp_timings.h"
#include "record/server_section.h"

namespace dyno::compare {

namespace json = boost::json;

namespace {

// numpy's _lerp, as metrics::percentile_sorted uses it.
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

bool ended(const metrics::Trace& t) {
  return t.measured() && t.status != metrics::RequestStatus::kCancelled;
}

std::optional<double> e2e_s(const metrics::Trace& t) {
  if (!t.sent_ns || !t.done_ns) return std::nullopt;
  return static_cast<double>(*t.done_ns - *t.sent_ns) * 1e-9;
}

/// W as summarize_run computes it: earliest sent to latest done of the ended traces.
std::optional<double> service_window_s(const std::vector<metrics::Trace>& traces) {
  std::optional<std::int64_t> lo, hi;
  for (const auto& t : traces) {
    if (!ended(t)) continue;
    if (t.sent_ns) lo = std::min(lo.value_or(*t.sent_ns), *t.sent_ns);
    if (t.done_ns) hi = std::max(hi.value_or(*t.done_ns), *t.done_ns);
  }
  if (!lo || !hi || *hi <= *lo) return std::nullopt;
  return static_cast<double>(*hi - *lo) * 1e-9;
}

/// Sum (or the largest) of a figure over the energy section's devices in its scope (gpu, else
/// cpu packages).
std::optional<double> device_figure(const RunRecord& run,
                                    std::optional<double> record::EnergyDevice::*figure,
                                    bool take_max) {
  const std::optional<record::EnergySection> e =
      run.summary ? run.summary->energy_section() : std::nullopt;
  if (!e) return std::nullopt;
  std::optional<double> out;
  for (const record::EnergyDevice& d : e->devices) {
    const std::optional<double> v = d.*figure;
    if (!e->in_scope(d) || !v) continue;
    out = take_max ? std::max(out.value_or(*v), *v) : out.value_or(0) + *v;
  }
  return out;
}

}  // namespace

const std::vector<MetricDef>& metric_catalog() {
  static const std::vector<MetricDef> catalog = [] {
    std::vector<std::pair<int, MetricDef>> views;
    for (const metrics::Figure& f : metrics::figures()) {
      for (const metrics::BoardView& v : f.board) {
        MetricDef m;
        m.key = v.key;
        m.label = v.label;
        m.unit = f.unit;
        m.direction = f.direction;
        m.delta_kind = f.delta_kind;
        m.section = v.section;
        m.headline = v.headline;
        m.resample = v.resample;
        m.percentile = v.percentile;
        m.decimals = v.decimals;
        m.source = !f.formula.empty() ? f.formula : v.stat.empty() ? f.path : f.path + "." + v.stat;
        m.engine_source = f.engine_source;
        m.figure = &f;
        m.stat = v.stat;
        views.emplace_back(v.order, std::move(m));
      }
    }
    std::stable_sort(views.begin(), views.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<MetricDef> out;
    for (auto& [order, m] : views) out.push_back(std::move(m));
    return out;
  }();
  return catalog;
}

std::string prefill_figure(const std::vector<const RunRecord*>& runs) {
  const MetricDef* engine = find_metric(kEnginePrefillKey);
  const bool all_engine = engine != nullptr && !runs.empty() &&
                          std::all_of(runs.begin(), runs.end(), [engine](const RunRecord* r) {
                            return read_figure(*engine, *r).has_value();
                          });
  return all_engine ? kEnginePrefillKey : kClientPrefillKey;
}

bool measures(const MetricDef& m, const std::string& level_kind) {
  const bool ladder = level_kind == "decode_tokens" || level_kind == "prefill_tokens";
  return !ladder || (m.resample != Resample::kServiceRate && m.resample != Resample::kDecodeRate);
}

std::vector<std::string> own_figures(const std::string& level_kind, const std::string& prefill) {
  if (level_kind == "decode_tokens") return {"decode_rate_per_user_p50"};
  if (level_kind == "prefill_tokens") return {prefill};
  std::vector<std::string> out;
  for (const MetricDef& m : metric_catalog()) {
    if (m.headline) out.push_back(m.key);
  }
  out.push_back(prefill);
  return out;
}

bool shown(const MetricDef& m, bool engine_figures) {
  return m.section != Section::kEngine || engine_figures;
}

const MetricDef* find_metric(const std::string& key) {
  for (const auto& m : metric_catalog()) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

std::optional<double> read_figure(const MetricDef& m, const RunRecord& run) {
  if (!run.has_summary()) return std::nullopt;
  if (m.key == "power_mean_w" || m.key == "power_peak_w") {
    const std::optional<record::EnergySection> e = run.summary->energy_section();
    if (!e) return std::nullopt;
    return m.key == "power_mean_w" ? e->mean_power_w() : e->peak_power_w();
  }
  if (m.key == "joules_per_mtok_output") {
    const std::optional<record::EnergySection> e = run.summary->energy_section();
    if (!e || !run.summary->knows("tokens.output_total")) return std::nullopt;
    return metrics::joules_per_mtok(e->energy_j,
                                    static_cast<double>(run.summary->figures.output_tokens_total));
  }
  if (m.key == "power_p95_w") return device_figure(run, &record::EnergyDevice::power_p95_w, false);
  if (m.key == "temperature_p95_c") {
    return device_figure(run, &record::EnergyDevice::temperature_p95_c, true);
  }
  // A figure the typed summary holds is read from it, the engine's from the typed `server`
  // section, the telemetry's from the typed `energy` section.
  if (m.figure == nullptr || !m.figure->formula.empty()) return std::nullopt;
  if (metrics::typed(*m.figure)) return metrics::value_of(run.summary->figures, *m.figure, m.stat);
  if (m.figure->path.starts_with("server.")) {
    const std::optional<record::ServerSection> server =
        record::server_section_of(run.summary->server);
    return server ? record::server_figure(*server, m.figure->path, m.stat) : std::nullopt;
  }
  if (m.figure->path.starts_with("energy.") && m.stat.empty()) {
    const std::optional<record::EnergySection> e = run.summary->energy_section();
    return e ? record::energy_figure(*e, m.figure->path) : std::nullopt;
  }
  return std::nullopt;
}

bool power_disagreement(const RunRecord& run) {
  const std::optional<record::EnergySection> e =
      run.summary ? run.summary->energy_section() : std::nullopt;
  return e && e->power_sources_disagree();
}
bool has_engine_figure(const RunRecord& run) {
  for (const auto& m : metric_catalog()) {
    if (!m.engine_source.empty() && read_figure(m, run)) return true;
  }
  return false;
}

std::optional<double> delta_of(const MetricDef& m, std::optional<double> a,
                               std::optional<double> b) {
  if (!a || !b || m.direction == Direction::kNone) return std::nullopt;
  if (m.delta_kind == DeltaKind::kPoints) {
    const double d = (*a - *b) * 100.0;
    return m.direction == Direction::kHigher ? d : -d;
  }
  // A percentage change is defined between two positive figures only (a net energy per token
  // can come out negative when the idle baseline is noisy).
  if (!(*a > 0) || !(*b > 0)) return std::nullopt;
  return m.direction == Direction::kHigher ? (*a / *b - 1.0) * 100.0 : (*b / *a - 1.0) * 100.0;
}

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Lemire's multiply-shift (ACM TOMACS 2019): the high word of x · n is uniform in [0, n)
  // once the low words below 2^64 mod n are rejected; the division is needed only then.
  __extension__ using u128 = unsigned __int128;
  u128 m = static_cast<u128>(next()) * n;
  auto low = static_cast<std::uint64_t>(m);
  if (low < n) {
    const std::uint64_t reject_below = (0 - n) % n;
    while (low < reject_below) {
      m = static_cast<u128>(next()) * n;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

Sample Sample::values(Resample kind, double percentile, std::vector<double> values) {
  Sample s;
  s.kind_ = kind;
  s.percentile_ = percentile;
  std::sort(values.begin(), values.end());
  s.values_ = std::move(values);
  return s;
}

Sample Sample::ratio(Resample kind, std::vector<double> num, std::vector<double> den,
                     double window) {
  Sample s;
  s.kind_ = kind;
  s.num_ = std::move(num);
  s.den_ = std::move(den);
  double total = 0;
  for (double d : s.den_) total += d;
  s.scale_ = window > 0 ? total / window : 0;
  return s;
}

bool Sample::is_ratio() const {
  return kind_ == Resample::kServiceRate || kind_ == Resample::kDecodeRate ||
         kind_ == Resample::kEnginePrefill;
}

std::size_t Sample::size() const { return is_ratio() ? num_.size() : values_.size(); }

std::optional<double> Sample::point() const {
  if (size() == 0) return std::nullopt;
  if (is_ratio()) {
    double n = 0, d = 0;
    for (std::size_t i = 0; i < num_.size(); ++i) {
      n += num_[i];
      d += den_[i];
    }
    if (!(d > 0) || !(scale_ > 0)) return std::nullopt;
    return n / d * scale_;
  }
  switch (kind_) {
    case Resample::kPercentile:
      return metrics::percentile_sorted(values_, percentile_);
    case Resample::kJitter:
      return *metrics::percentile_sorted(values_, 95) - *metrics::percentile_sorted(values_, 50);
    case Resample::kMean: {
      double sum = 0;
      for (double v : values_) sum += v;
      return sum / static_cast<double>(values_.size());
    }
    default:
      return std::nullopt;
  }
}

namespace {

/// The k-th smallest (0-based) of a resample of `sorted`, given how often each was drawn.
double order_statistic(const std::vector<double>& sorted, const std::vector<std::uint32_t>& counts,
                       std::size_t k) {
  std::size_t cumulative = 0;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    cumulative += counts[j];
    if (cumulative > k) return sorted[j];
  }
  return sorted.back();
}

/// Type 7 percentile of the resample (metrics::percentile_sorted of its sorted values).
double resample_percentile(const std::vector<double>& sorted,
                           const std::vector<std::uint32_t>& counts, double q) {
  const std::size_t n = sorted.size();
  const double h = static_cast<double>(n - 1) * (q / 100.0);
  const double lo_d = std::floor(h);
  const auto lo = static_cast<std::size_t>(lo_d);
  const double a = order_statistic(sorted, counts, lo);
  if (lo + 1 >= n) return a;
  return lerp(a, order_statistic(sorted, counts, lo + 1), h - lo_d);
}

}  // namespace

std::optional<double> Sample::resampled(Rng& rng, std::vector<std::uint32_t>& counts) const {
  const std::size_t n = size();
  if (n == 0) return std::nullopt;
  if (is_ratio()) {
    double sn = 0, sd = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto j = static_cast<std::size_t>(rng.below(n));
      sn += num_[j];
      sd += den_[j];
    }
    if (!(sd > 0) || !(scale_ > 0)) return std::nullopt;
    return sn / sd * scale_;
  }
  if (kind_ == Resample::kMean) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += values_[static_cast<std::size_t>(rng.below(n))];
    return sum / static_cast<double>(n);
  }
  // A resample of the sorted values is known by how often each was drawn; its order
  // statistics follow from the cumulative counts, without sorting.
  counts.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) ++counts[static_cast<std::size_t>(rng.below(n))];
  if (kind_ == Resample::kJitter) {
    return resample_percentile(values_, counts, 95) - resample_percentile(values_, counts, 50);
  }
  return resample_percentile(values_, counts, percentile_);
}

std::optional<Sample> Sample::of(const MetricDef& m, const RunRecord& run) {
  const auto& traces = run.traces;
  switch (m.resample) {
    case Resample::kNone:
      return std::nullopt;
    case Resample::kServiceRate: {
      const auto w = service_window_s(traces);
      if (!w) return std::nullopt;
      const metrics::Slo& slo = run.manifest.slo;
      if (m.key == "goodput_requests_per_s" && !slo.any()) return std::nullopt;
      std::vector<double> num, den;
      bool any = false;
      for (const auto& t : traces) {
        if (!ended(t)) continue;
        double x = 0;
        if (t.ok()) {
          if (m.key == "output_tokens_per_s") {
            if (t.output_tokens) any = true;
            x = static_cast<double>(t.output_tokens.value_or(0));
          } else if (m.key == "input_tokens_per_s") {
            if (t.input_tokens) any = true;
            x = static_cast<double>(t.input_tokens.value_or(0));
          } else if (m.key == "requests_per_s") {
            any = true;
            x = 1;
          } else if (m.key == "goodput_requests_per_s") {
            any = true;
            x = metrics::meets_slo(metrics::request_figures(t), slo) ? 1 : 0;
          }
        }
        num.push_back(x);
        den.push_back(e2e_s(t).value_or(0));
      }
      if (!any) return std::nullopt;
      return Sample::ratio(m.resample, std::move(num), std::move(den), *w);
    }
    case Resample::kDecodeRate: {
      std::vector<double> num, den;
      std::vector<std::pair<std::int64_t, std::int64_t>> spans;
      for (const auto& t : traces) {
        if (!ended(t) || !t.ok() || !t.output_tokens || *t.output_tokens < 2) continue;
        if (!t.first_token_ns || !t.last_token_ns || *t.last_token_ns <= *t.first_token_ns) {
          continue;
        }
        num.push_back(static_cast<double>(*t.output_tokens - 1));
        den.push_back(static_cast<double>(*t.last_token_ns - *t.first_token_ns) * 1e-9);
        spans.emplace_back(*t.first_token_ns, *t.last_token_ns);
      }
      if (num.empty()) return std::nullopt;
      const double window = metrics::union_length(std::move(spans)) * 1e-9;
      return Sample::ratio(m.resample, std::move(num), std::move(den), window);
    }
    case Resample::kEnginePrefill: {
      // As engine::server_timing_figures sums them: the prompt tokens each completed measured
      // request's engine computed over its prompt time; the window is their sum, so the
      // ratio is Σ tokens / Σ time.
      std::vector<double> num, den;
      double total = 0;
      for (const auto& t : traces) {
        if (!t.measured() || !t.ok() || t.server_timings_json.empty()) continue;
        const auto x = record::parse_llamacpp_timings(t.server_timings_json);
        if (!x || !x->prompt_n || *x->prompt_n < 1 || !x->prompt_ms || !(*x->prompt_ms > 0)) {
          continue;
        }
        num.push_back(static_cast<double>(*x->prompt_n));
        den.push_back(*x->prompt_ms * 1e-3);
        total += den.back();
      }
      if (num.empty()) return std::nullopt;
      return Sample::ratio(m.resample, std::move(num), std::move(den), total);
    }
    case Resample::kPercentile:
    case Resample::kJitter:
    case Resample::kMean: {
      std::vector<double> v;
      for (const auto& t : traces) {
        if (!ended(t)) continue;
        if (m.key == "accuracy") {
          if (t.correct) v.push_back(t.ok() && *t.correct ? 1.0 : 0.0);
          continue;
        }
        if (!t.ok()) continue;
        const metrics::RequestFigures f = metrics::request_figures(t);
        std::optional<double> x;
        if (m.key == "decode_rate_per_user_p50") x = f.decode_rate;
        if (m.key == "prefill_rate_client_p50") x = f.prefill_rate_client;
        if (m.key.rfind("ttft_", 0) == 0 && f.ttft_s) x = *f.ttft_s * 1e3;
        if (m.key.rfind("tpot_", 0) == 0 && f.tpot_s) x = *f.tpot_s * 1e3;
        if (m.key.rfind("e2e_", 0) == 0 && f.e2e_s) x = *f.e2e_s * 1e3;
        if (x && std::isfinite(*x)) v.push_back(*x);
      }
      if (v.empty()) return std::nullopt;
      return Sample::values(m.resample, m.percentile, std::move(v));
    }
  }
  return std::nullopt;
}

}  // namespace dyno::compare
