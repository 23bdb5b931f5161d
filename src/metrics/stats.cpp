#include "metrics/stats.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace dyno::metrics {

namespace detail {

// numpy's _lerp: interpolate from the nearer end so that t = 1 returns b exactly and the
// result is monotone in t (numpy >= 1.22, function_base.py).
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

}  // namespace detail

// Hyndman & Fan type 7 (numpy.percentile method="linear", the default): the virtual index is
// h = (n - 1) * q / 100, and the result interpolates linearly between the order statistics at
// floor(h) and floor(h) + 1.
std::optional<double> percentile_sorted(std::span<const double> sorted, double q) {
  if (!(q >= 0.0 && q <= 100.0)) {
    throw std::invalid_argument("percentile: q must be in [0, 100]");
  }
  if (sorted.empty()) return std::nullopt;
  const std::size_t n = sorted.size();
  const double h = static_cast<double>(n - 1) * (q / 100.0);
  const double lo_d = std::floor(h);
  const auto lo = static_cast<std::size_t>(lo_d);
  if (lo + 1 >= n) return sorted[n - 1];
  return detail::lerp(sorted[lo], sorted[lo + 1], h - lo_d);
}

// Non-finite values (NaN, ±inf) are dropped before anything is computed: they can only come
// from a broken input (a division by a zero interval upstream) and would poison every
// statistic. `count` is the number of finite values kept.
Distribution summarize(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  std::sort(values.begin(), values.end());
  return summarize_sorted(values);
}

Distribution summarize_sorted(std::span<const double> values) {
  return summarize_sorted_by(values.size(), [values](std::size_t i) { return values[i]; });
}

namespace {

constexpr std::uint64_t kSign = std::uint64_t{1} << 63;

// The value's bits with the sign flipped: as unsigned numbers, the signed order.
std::uint64_t key(std::int64_t v) { return static_cast<std::uint64_t>(v) ^ kSign; }

void insertion_sort(std::int64_t* a, std::size_t n) {
  for (std::size_t i = 1; i < n; ++i) {
    const std::int64_t v = a[i];
    std::size_t j = i;
    for (; j > 0 && a[j - 1] > v; --j) a[j] = a[j - 1];
    a[j] = v;
  }
}

// Sorts a[0, n) whose keys agree above bit shift + 8: by the byte at `shift`, in place
// (American flag sort: each value swapped straight into its bucket), then each bucket by the
// next byte down.
void msd_sort(std::int64_t* a, std::size_t n, int shift) {
  if (n <= 32) {
    insertion_sort(a, n);
    return;
  }
  std::array<std::size_t, 257> start{};
  for (std::size_t i = 0; i < n; ++i) ++start[((key(a[i]) >> shift) & 0xFF) + 1];
  for (std::size_t b = 0; b < 256; ++b) start[b + 1] += start[b];
  std::array<std::size_t, 256> next{};
  for (std::size_t b = 0; b < 256; ++b) next[b] = start[b];
  for (std::size_t b = 0; b < 256; ++b) {
    while (next[b] < start[b + 1]) {
      std::int64_t v = a[next[b]];
      std::size_t d = (key(v) >> shift) & 0xFF;
      while (d != b) {  // carry v to its bucket, taking what was there
        std::swap(v, a[next[d]++]);
        d = (key(v) >> shift) & 0xFF;
      }
      a[next[b]++] = v;
    }
  }
  if (shift == 0) return;
  for (std::size_t b = 0; b < 256; ++b) {
    const std::size_t size = start[b + 1] - start[b];
    if (size > 1) msd_sort(a + start[b], size, shift - 8);
  }
}

}  // namespace

void radix_sort(std::vector<std::int64_t>& values) {
  if (values.size() <= 32) {
    insertion_sort(values.data(), values.size());
    return;
  }
  std::uint64_t all_and = ~std::uint64_t{0};
  std::uint64_t all_or = 0;
  for (const std::int64_t v : values) {
    all_and &= key(v);
    all_or |= key(v);
  }
  const std::uint64_t varying = all_and ^ all_or;  // the bits that differ somewhere
  if (varying == 0) return;                        // every value the same
  const int top = 63 - std::countl_zero(varying);  // the highest of them
  msd_sort(values.data(), values.size(), top / 8 * 8);
}

}  // namespace dyno::metrics
