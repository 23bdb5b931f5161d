#include "compare/delta.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "metrics/stats.h"

namespace dyno::compare {

namespace json = boost::json;

namespace {

std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// The bootstrap seed of one figure of one arm in one cell: independent of board order.
std::uint64_t stream_seed(std::uint64_t seed, const std::string& cell, const std::string& metric,
                          const std::string& arm) {
  Rng mix(fnv1a(cell + '\n' + metric + '\n' + arm) ^ seed);
  return mix.next();
}

struct IntervalResult {
  std::optional<double> low, high;
  std::string reason;
};

IntervalResult percentile_interval(std::vector<double> deltas, std::uint32_t resamples,
                                   double confidence) {
  IntervalResult r;
  if (deltas.size() < static_cast<std::size_t>(0.9 * resamples)) {
    r.reason = "the delta is undefined in more than 10 % of the resamples";
    return r;
  }
  std::sort(deltas.begin(), deltas.end());
  const double tail = (1.0 - confidence) / 2.0 * 100.0;
  r.low = metrics::percentile_sorted(deltas, tail);
  r.high = metrics::percentile_sorted(deltas, 100.0 - tail);
  return r;
}

/// Bootstrap over requests: each arm's requests resampled with replacement, independently.
IntervalResult request_interval(const MetricDef& m, const Sample& a, const Sample& b,
                                std::uint64_t seed_a, std::uint64_t seed_b,
                                const BootstrapOptions& o) {
  Rng ra(seed_a), rb(seed_b);
  std::vector<std::uint32_t> buf;
  std::vector<double> deltas;
  deltas.reserve(o.resamples);
  for (std::uint32_t i = 0; i < o.resamples; ++i) {
    const auto va = a.resampled(ra, buf);
    const auto vb = b.resampled(rb, buf);
    const auto d = delta_of(m, va, vb);
    if (d && std::isfinite(*d)) deltas.push_back(*d);
  }
  return percentile_interval(std::move(deltas), o.resamples, o.confidence);
}

/// Bootstrap over repetitions: each arm's repetition figures resampled, the median compared.
IntervalResult repetition_interval(const MetricDef& m, const std::vector<double>& a,
                                   const std::vector<double>& b, std::uint64_t seed_a,
                                   std::uint64_t seed_b, const BootstrapOptions& o) {
  return request_interval(m, Sample::values(Resample::kPercentile, 50, a),
                          Sample::values(Resample::kPercentile, 50, b), seed_a, seed_b, o);
}

std::vector<double> finite_values(const ArmCell& a, const std::string& key) {
  std::vector<double> out;
  for (const auto& f : a.figures) {
    const auto it = f.find(key);
    if (it != f.end() && it->second && std::isfinite(*it->second)) out.push_back(*it->second);
  }
  return out;
}

}  // namespace

std::string fixed_text(double v, int decimals) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(decimals);
  s << v;
  return s.str();
}

Delta compare_metric(const MetricDef& m, const Cell& cell, const ArmCell& a, const ArmCell& b,
                     const BootstrapOptions& o) {
  Delta d;
  d.value = delta_of(m, a.selected_figures().at(m.key), b.selected_figures().at(m.key));
  // The other tool's figures without requests behind them: a point delta at most.
  const bool summary_only = a.run().summary_only() || b.run().summary_only();
  const bool repetitions = a.runs.size() >= o.min_repetitions && b.runs.size() >= o.min_repetitions;
  d.summary_only = summary_only && !repetitions;
  if (!d.value) {
    d.verdict = Verdict::kNotApplicable;
    return d;
  }
  const std::uint64_t seed_a = stream_seed(o.seed, cell.id, m.key, a.arm);
  const std::uint64_t seed_b = stream_seed(o.seed, cell.id, m.key, b.arm);
  IntervalResult ir;
  if (repetitions) {
    const auto va = finite_values(a, m.key);
    const auto vb = finite_values(b, m.key);
    d.n_arm = va.size();
    d.n_baseline = vb.size();
    if (va.size() >= o.min_repetitions && vb.size() >= o.min_repetitions) {
      d.method = "bootstrap_repetitions";
      ir = repetition_interval(m, va, vb, seed_a, seed_b, o);
    } else {
      ir.reason = "fewer than " + std::to_string(o.min_repetitions) +
                  " repetitions with this figure in an arm";
    }
  } else if (d.summary_only) {
    ir.reason = "summary only";
  } else {
    const auto sa = Sample::of(m, a.run());
    const auto sb = Sample::of(m, b.run());
    if (!sa || !sb) {
      ir.reason = m.resample == Resample::kNone
                      ? "no per-request form; intervals need " + std::to_string(o.min_repetitions) +
                            " repetitions per arm"
                      : "no request contributes to this figure in an arm";
    } else {
      d.n_arm = sa->size();
      d.n_baseline = sb->size();
      if (sa->size() < o.min_requests || sb->size() < o.min_requests) {
        ir.reason = "fewer than " + std::to_string(o.min_requests) + " requests in an arm";
      } else {
        d.method = "bootstrap_requests";
        ir = request_interval(m, *sa, *sb, seed_a, seed_b, o);
      }
    }
  }
  d.low = ir.low;
  d.high = ir.high;
  d.no_interval = ir.reason;
  if (!d.low || !d.high) {
    d.verdict = Verdict::kNoInterval;
    if (d.no_interval.empty()) d.no_interval = "no interval";
  } else if (*d.low > 0) {
    d.verdict = Verdict::kWin;
  } else if (*d.high < 0) {
    d.verdict = Verdict::kLoss;
  } else {
    d.verdict = Verdict::kTie;
  }
  return d;
}

QualityAudit audit(const RunRecord& a, const RunRecord& b, const QualityThresholds& t,
                   const std::string& accuracy_not_comparable) {
  QualityAudit q;
  static const metrics::Summary kNone;
  const metrics::Summary& fa = a.summary ? a.summary->figures : kNone;
  const metrics::Summary& fb = b.summary ? b.summary->figures : kNone;
  q.accuracy_arm = fa.accuracy;
  q.accuracy_baseline = fb.accuracy;
  q.scored_arm = fa.scored_requests;
  q.scored_baseline = fb.scored_requests;
  q.correct_arm = fa.correct_requests;
  q.correct_baseline = fb.correct_requests;
  q.output_mean_arm = fa.output_tokens.mean;
  q.output_mean_baseline = fb.output_tokens.mean;
  q.accuracy_comparable = accuracy_not_comparable.empty();
  q.accuracy_reason = accuracy_not_comparable;
  if (q.accuracy_arm && q.accuracy_baseline && q.accuracy_comparable) {
    q.accuracy_delta_pp = (*q.accuracy_arm - *q.accuracy_baseline) * 100.0;
    if (std::fabs(*q.accuracy_delta_pp) >= t.accuracy_pp) {
      q.warning = true;
      q.reasons.push_back("accuracy differs by " + fixed_text(*q.accuracy_delta_pp, 2) +
                          " pp (threshold " + fixed_text(t.accuracy_pp, 1) + " pp)");
    }
  }
  if (q.output_mean_arm && q.output_mean_baseline) {
    q.output_mean_gap_pct = std::fabs(*q.output_mean_arm - *q.output_mean_baseline) /
                            std::max({*q.output_mean_arm, *q.output_mean_baseline, 1.0}) * 100.0;
    if (*q.output_mean_gap_pct >= t.output_gap_pct) {
      q.warning = true;
      q.reasons.push_back("mean output length differs by " + fixed_text(*q.output_mean_gap_pct, 1) +
                          " % (threshold " + fixed_text(t.output_gap_pct, 1) + " %)");
    }
  }
  if (!q.accuracy_comparable) return q;
  // Requests scored differently, joined by request id (and occurrence, for streams walked
  // more than once).
  std::map<std::string, const metrics::Trace*> base;
  std::map<std::string, int> seen;
  for (const auto& tr : b.traces) {
    if (!tr.measured() || !tr.correct || tr.status == metrics::RequestStatus::kCancelled) continue;
    base[tr.request_id + "#" + std::to_string(seen[tr.request_id]++)] = &tr;
  }
  seen.clear();
  for (const auto& tr : a.traces) {
    if (!tr.measured() || !tr.correct || tr.status == metrics::RequestStatus::kCancelled) continue;
    const auto it = base.find(tr.request_id + "#" + std::to_string(seen[tr.request_id]++));
    if (it == base.end()) continue;
    const bool ca = tr.ok() && *tr.correct;
    const bool cb = it->second->ok() && *it->second->correct;
    if (ca != cb) {
      q.disagreements.push_back(
          {tr.request_id, ca, cb, tr.extracted_answer, it->second->extracted_answer});
    }
  }
  return q;
}

}  // namespace dyno::compare
