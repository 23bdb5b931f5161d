#include "sim/fit_regression.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace dyno::sim {
namespace {

constexpr std::size_t kColumns = 7;  // 1, B, Σctx, P, A, (B + P)·K, F
using Row = std::array<double, kColumns>;

struct Sample {
  Row x{};
  double y = 0.0;
  double w = 1.0;
};

// Tokens a request had emitted after `events` of its events (events carry one token each
// unless the counts disagree; then tokens are spread over the events evenly).
std::int64_t tokens_after(const ObservedTimes& r, std::size_t events) {
  const auto n = r.events_s.size();
  if (static_cast<std::int64_t>(n) == r.output_tokens) return static_cast<std::int64_t>(events);
  return static_cast<std::int64_t>(std::llround(
      static_cast<double>(r.output_tokens) * static_cast<double>(events) / static_cast<double>(n)));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// The requests decoding at time t (first token before t, last event after) and their context.
std::pair<std::int64_t, std::int64_t> decoding_at(const std::vector<ObservedTimes>& rs, double t) {
  std::int64_t count = 0;
  std::int64_t context = 0;
  for (const ObservedTimes& q : rs) {
    if (!(q.first() < t && q.last() > t)) continue;
    ++count;
    const auto emitted = static_cast<std::size_t>(
        std::upper_bound(q.events_s.begin(), q.events_s.end(), t) - q.events_s.begin());
    context += q.prompt_tokens + tokens_after(q, emitted);
  }
  return {count, context};
}

// K at time t, with `taken` slots just taken by requests being prefilled: the requests between
// first and last token (their prompt and the tokens emitted by t), and in the other slots what
// the requests that ended last left (prompt + output): least-recently-used reuse keeps those.
// `by_last`: the cell's requests in order of their last event.
double shared_cells_at(const std::vector<ObservedTimes>& by_last, double t, std::size_t slots,
                       std::size_t taken) {
  double cells = 0.0;
  std::size_t held = taken;
  for (const ObservedTimes& q : by_last) {
    if (!(q.first() <= t && q.last() > t)) continue;
    const auto emitted = static_cast<std::size_t>(
        std::upper_bound(q.events_s.begin(), q.events_s.end(), t) - q.events_s.begin());
    cells += static_cast<double>(q.input_tokens + tokens_after(q, emitted));
    ++held;
  }
  auto it = std::upper_bound(by_last.begin(), by_last.end(), t,
                             [](double v, const ObservedTimes& q) { return v < q.last(); });
  while (held < slots && it != by_last.begin()) {
    --it;
    cells += static_cast<double>(it->input_tokens + it->output_tokens);
    ++held;
  }
  return cells;
}

// The most requests of one cell between their first and last token at once.
std::size_t most_decoding(const std::vector<ObservedTimes>& rs) {
  std::vector<std::pair<double, int>> edges;
  for (const ObservedTimes& r : rs) {
    edges.emplace_back(r.first(), 1);
    edges.emplace_back(r.last(), -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0;
  int most = 0;
  for (const auto& [t, d] : edges) most = std::max(most, now += d);
  return static_cast<std::size_t>(most);
}

// Solves the weighted least squares restricted to `mask`'s columns; false when singular.
bool solve_subset(const std::vector<Sample>& s, unsigned mask, const Row& scale, Row& coef,
                  double& sse) {
  std::array<std::size_t, kColumns> cols{};
  std::size_t k = 0;
  for (std::size_t c = 0; c < kColumns; ++c) {
    if ((mask >> c) & 1U) cols[k++] = c;
  }
  std::array<std::array<double, kColumns + 1>, kColumns> a{};
  for (const Sample& e : s) {
    for (std::size_t i = 0; i < k; ++i) {
      const double xi = e.x[cols[i]] / scale[cols[i]];
      for (std::size_t j = 0; j < k; ++j) a[i][j] += e.w * xi * e.x[cols[j]] / scale[cols[j]];
      a[i][k] += e.w * xi * e.y;
    }
  }
  for (std::size_t i = 0; i < k; ++i) {  // Gaussian elimination, partial pivoting
    std::size_t p = i;
    for (std::size_t r = i + 1; r < k; ++r) {
      if (std::abs(a[r][i]) > std::abs(a[p][i])) p = r;
    }
    std::swap(a[i], a[p]);
    if (std::abs(a[i][i]) < 1e-10) return false;
    for (std::size_t r = 0; r < k; ++r) {
      if (r == i) continue;
      const double f = a[r][i] / a[i][i];
      for (std::size_t c = i; c <= k; ++c) a[r][c] -= f * a[i][c];
    }
  }
  coef.fill(0.0);
  for (std::size_t i = 0; i < k; ++i) coef[cols[i]] = a[i][k] / a[i][i] / scale[cols[i]];
  sse = 0.0;
  for (const Sample& e : s) {
    double fit = 0.0;
    for (std::size_t c = 0; c < kColumns; ++c) fit += coef[c] * e.x[c];
    sse += e.w * (e.y - fit) * (e.y - fit);
  }
  return true;
}

// Non-negative least squares by enumeration of the column subsets (7 columns: 127 subsets):
// the best fit whose coefficients are all >= 0. Columns that are zero throughout are left out
// (their coefficient stays unknown).
std::optional<Row> nnls(const std::vector<Sample>& s, unsigned allowed) {
  Row scale{};
  for (const Sample& e : s) {
    for (std::size_t c = 0; c < kColumns; ++c) scale[c] += e.w * e.x[c] * e.x[c];
  }
  for (std::size_t c = 0; c < kColumns; ++c) {
    if (scale[c] <= 0.0) allowed &= ~(1U << c);
    scale[c] = scale[c] > 0.0 ? std::sqrt(scale[c]) : 1.0;
  }
  std::optional<Row> best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < (1U << kColumns); ++mask) {
    if ((mask & ~allowed) != 0) continue;
    Row coef{};
    double sse = 0.0;
    if (!solve_subset(s, mask, scale, coef, sse)) continue;
    if (std::any_of(coef.begin(), coef.end(), [](double v) { return v < 0.0; })) continue;
    if (sse < best_sse * (1.0 - 1e-12)) {
      best_sse = sse;
      best = coef;
    }
  }
  return best;
}

struct CellRows {
  std::vector<ObservedTimes> by_last;  ///< the cell's requests in order of their last event
  std::vector<double> lasts;           ///< their last events, ascending
  double tol = 50e-6;                  ///< events closer than this came from one step
  std::size_t slots = 1;               ///< for shared_cells_at
  std::vector<Sample> samples;
  std::uint32_t max_decoding = 0;
  std::uint32_t max_in_flight = 0;
};

std::uint32_t max_in_flight(const std::vector<ObservedTimes>& rs) {
  std::vector<std::pair<double, int>> edges;
  for (const ObservedTimes& r : rs) {
    edges.emplace_back(r.sent_s, 1);
    edges.emplace_back(r.last(), -1);
  }
  std::sort(edges.begin(), edges.end());  // at equal times, ends (-1) first
  int now = 0;
  int most = 0;
  for (const auto& [t, d] : edges) most = std::max(most, now += d);
  return static_cast<std::uint32_t>(most);
}

// Requests whose last event came within tol of t (they finished in the step that ended at t),
// leaving out one that ended at `own` (the row's own request).
double finished_at(const CellRows& rows, double t, double own) {
  const auto lo = std::lower_bound(rows.lasts.begin(), rows.lasts.end(), t - rows.tol);
  const auto hi = std::upper_bound(rows.lasts.begin(), rows.lasts.end(), t + rows.tol);
  const double n = static_cast<double>(hi - lo);
  return std::abs(own - t) <= rows.tol ? n - 1.0 : n;
}

// Decode rows: each inter-event gap of each request whose step had no first token in it.
void decode_rows(const std::vector<ObservedTimes>& rs, const std::vector<double>& firsts,
                 CellRows& out) {
  constexpr std::size_t kMaxGapsPerRequest = 256;  // a stride keeps long outputs cheap
  for (const ObservedTimes& r : rs) {
    const std::size_t n = r.events_s.size();
    const std::size_t stride = std::max<std::size_t>(1, n / kMaxGapsPerRequest);
    for (std::size_t k = 1; k < n; k += stride) {
      const double a = r.events_s[k - 1];
      const double b = r.events_s[k];
      const double gap = b - a;
      if (!(gap > 0.0)) continue;
      const double mid = 0.5 * (a + b);
      const auto [count, context] = decoding_at(rs, mid);
      out.max_decoding = std::max(out.max_decoding, static_cast<std::uint32_t>(count));
      if (count < 1) continue;
      const auto hit = std::upper_bound(firsts.begin(), firsts.end(), mid);
      if (hit != firsts.end() && *hit <= b + 0.5 * gap) continue;  // a prefill in the step
      Sample s;
      const double cells =
          shared_cells_at(out.by_last, mid, out.slots, 0) + static_cast<double>(count);
      s.x = {1.0, static_cast<double>(count),         static_cast<double>(context), 0.0,
             0.0, static_cast<double>(count) * cells, finished_at(out, a, r.last())};
      s.y = gap;
      s.w = static_cast<double>(stride) / static_cast<double>(count);  // each step once
      out.samples.push_back(s);
    }
  }
}

// First-token rows: the step that ended with each request's first token.
void prefill_rows(const std::vector<ObservedTimes>& rs, std::int64_t budget, CellRows& out) {
  const double tol = out.tol;
  std::vector<double> events;
  for (const ObservedTimes& r : rs)
    events.insert(events.end(), r.events_s.begin(), r.events_s.end());
  std::sort(events.begin(), events.end());
  for (const ObservedTimes& r : rs) {
    const double ft = r.first();
    const auto before = std::lower_bound(events.begin(), events.end(), ft - tol);
    const double prev = before == events.begin() ? r.sent_s : *(before - 1);
    const double duration = ft - std::max(r.sent_s, prev);
    if (!(duration > 0.0)) continue;
    std::int64_t prompt = 0;
    std::int64_t input = 0;
    double attention = 0.0;  // each prompt prefilled from position 0 in this one step
    std::int64_t group = 0;
    for (const ObservedTimes& q : rs) {
      if (std::abs(q.first() - ft) > tol) continue;
      prompt += q.prompt_tokens;
      input += q.input_tokens;
      attention +=
          0.5 * static_cast<double>(q.prompt_tokens) * static_cast<double>(q.prompt_tokens + 1);
      ++group;
    }
    if (prompt > budget) continue;
    const auto [count, context] = decoding_at(rs, ft - tol);
    const double cells =
        shared_cells_at(out.by_last, ft - tol, out.slots, static_cast<std::size_t>(group)) +
        static_cast<double>(input + count);
    Sample s;
    s.x = {1.0, static_cast<double>(count), static_cast<double>(context),
           static_cast<double>(prompt), attention, static_cast<double>(prompt + count) * cells,
           // F stays 0: whether the request was already waiting when the step before ended (its
           // wait hides part of the finish work) is not known well enough from the record.
           0.0};
    s.y = duration;
    s.w = 1.0 / static_cast<double>(group);
    out.samples.push_back(s);
  }
}

int levels(const std::vector<Sample>& s, std::size_t column) {
  std::map<double, int> seen;
  for (const Sample& e : s) ++seen[e.x[column]];
  int n = 0;
  for (const auto& [value, count] : seen) n += count >= 3 ? 1 : 0;
  return n;
}

}  // namespace

std::vector<ObservedTimes> observed_times(const std::vector<metrics::Trace>& traces) {
  std::vector<ObservedTimes> out;
  double origin = std::numeric_limits<double>::infinity();
  for (const metrics::Trace& t : traces) {
    if (!t.measured() || !t.ok() || !t.sent_ns || !t.first_token_ns || !t.input_tokens ||
        !t.output_tokens || *t.output_tokens < 1 || *t.first_token_ns < *t.sent_ns) {
      continue;
    }
    ObservedTimes r;
    r.sent_s = static_cast<double>(*t.sent_ns) * 1e-9;
    for (const std::int64_t e : t.event_times_ns) {
      if (e >= *t.first_token_ns) r.events_s.push_back(static_cast<double>(e) * 1e-9);
    }
    if (r.events_s.empty()) {
      // No per-event times (--no-chunk-times): the first and last token only.
      r.events_s.push_back(static_cast<double>(*t.first_token_ns) * 1e-9);
      if (t.last_token_ns && *t.last_token_ns > *t.first_token_ns) {
        r.events_s.push_back(static_cast<double>(*t.last_token_ns) * 1e-9);
      }
    }
    std::sort(r.events_s.begin(), r.events_s.end());
    r.prompt_tokens = std::max<std::int64_t>(
        1, *t.input_tokens - std::max<std::int64_t>(0, t.cached_input_tokens.value_or(0)));
    r.input_tokens = std::max<std::int64_t>(1, *t.input_tokens);
    r.output_tokens = *t.output_tokens;
    origin = std::min(origin, r.sent_s);
    out.push_back(std::move(r));
  }
  for (ObservedTimes& r : out) {
    r.sent_s -= origin;
    for (double& e : r.events_s) e -= origin;
  }
  return out;
}

const char* attention_name(Attention a) {
  return a == Attention::kSharedCache ? "shared-cache" : "per-sequence";
}

StepRegression regress_steps(const std::vector<std::vector<ObservedTimes>>& cells,
                             std::int64_t step_token_budget, Attention attention) {
  StepRegression out;
  std::vector<Sample> decode;
  std::vector<Sample> prefill;
  std::size_t slots = 1;
  for (const std::vector<ObservedTimes>& rs : cells) slots = std::max(slots, most_decoding(rs));
  for (const std::vector<ObservedTimes>& rs : cells) {
    if (rs.empty()) continue;
    std::vector<double> firsts;
    std::vector<double> gaps;
    for (const ObservedTimes& r : rs) {
      firsts.push_back(r.first());
      for (std::size_t k = 1; k < r.events_s.size(); ++k) {
        gaps.push_back(r.events_s[k] - r.events_s[k - 1]);
      }
    }
    std::sort(firsts.begin(), firsts.end());
    CellRows rows;
    rows.by_last = rs;
    std::stable_sort(rows.by_last.begin(), rows.by_last.end(),
                     [](const auto& a, const auto& b) { return a.last() < b.last(); });
    rows.slots = slots;
    for (const ObservedTimes& r : rows.by_last) rows.lasts.push_back(r.last());
    // Events of one step reach the client within a fraction of a step of each other.
    rows.tol = std::max(50e-6, 0.25 * median(gaps));
    decode_rows(rs, firsts, rows);
    decode.insert(decode.end(), rows.samples.begin(), rows.samples.end());
    rows.samples.clear();
    prefill_rows(rs, step_token_budget, rows);
    prefill.insert(prefill.end(), rows.samples.begin(), rows.samples.end());
    out.max_decoding = std::max(out.max_decoding, rows.max_decoding);
    out.max_in_flight = std::max(out.max_in_flight, max_in_flight(rs));
  }
  out.decode_rows = static_cast<std::int64_t>(decode.size());
  out.prefill_rows = static_cast<std::int64_t>(prefill.size());
  out.batch_levels = levels(decode, 1);
  out.prefill_levels = levels(prefill, 3);
  std::vector<Sample> all = decode;
  all.insert(all.end(), prefill.begin(), prefill.end());
  if (all.empty()) return out;
  // B only helps when it varies; otherwise step_base_s and decode_seq_s are one number.
  // Likewise A only when the prompt sizes vary.
  unsigned allowed = 0b1001101;
  if (out.batch_levels >= 2) allowed |= 0b000010;
  if (attention == Attention::kSharedCache) {
    allowed |= 0b0100000;
  } else if (out.prefill_levels >= 2) {
    allowed |= 0b0010000;
  }
  if (const auto coef = nnls(all, allowed)) {
    out.step_base_s = (*coef)[0];
    if (allowed & 0b0000010) out.decode_seq_s = (*coef)[1];
    if (allowed & 0b0000100) out.decode_ctx_token_s = (*coef)[2];
    if (!prefill.empty() && (*coef)[3] > 0.0) out.prefill_s_per_token = (*coef)[3];
    if (allowed & 0b0010000) out.prefill_ctx_token_s = (*coef)[4];
    if ((allowed & 0b0100000) && (*coef)[5] > 0.0) out.shared_kv_token_s = (*coef)[5];
    // Under a microsecond per finished request no figure a record resolves would change.
    if ((*coef)[6] > 1e-6) out.finish_s = (*coef)[6];
  }
  return out;
}

}  // namespace dyno::sim
