#include "chart/scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dyno::chart {

namespace {

constexpr const char* kMinus = "\xE2\x88\x92";  // U+2212 MINUS SIGN

// Drops trailing zeros after a decimal point, and the point itself when nothing follows.
std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

bool is_zero_text(const std::string& s) { return s.find_first_not_of("0.") == std::string::npos; }

struct Suffix {
  double divisor = 1.0;
  const char* text = "";
};

// k from 10^4 on, so four-digit values such as a concurrency of 1024 keep all their digits.
Suffix suffix_for(double max_abs) {
  if (max_abs >= 1e9) return {1e9, "G"};
  if (max_abs >= 1e6) return {1e6, "M"};
  if (max_abs >= 1e4) return {1e3, "k"};
  return {};
}

// Multiples of step from ceil(lo/step) to floor(hi/step), computed as k * step (no drift) and
// with values within rounding noise of 0 set to exactly 0.
std::vector<double> multiples(double lo, double hi, double step) {
  std::vector<double> out;
  const double first = std::ceil(lo / step - 1e-9);
  const double last = std::floor(hi / step + 1e-9);
  for (double k = first; k <= last && out.size() < 1000; k += 1.0) {
    const double v = k * step;
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

}  // namespace

double nice_step(double raw) {
  if (!(raw > 0.0) || !std::isfinite(raw)) return 1.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  // 1.0000001 × 10^k reads as 10^k (rounding in log10); only clearly larger fractions step up.
  double nice = 10.0;
  if (fraction <= 1.0 + 1e-9) {
    nice = 1.0;
  } else if (fraction <= 2.0 + 1e-9) {
    nice = 2.0;
  } else if (fraction <= 5.0 + 1e-9) {
    nice = 5.0;
  }
  return nice * magnitude;
}

namespace {

// Of the 1-2-5 step at or above span/target and the one below it, the step whose number of
// intervals is closer to target (120..9800 in five intervals: 2000, not 5000).
double choose_step(double span, int target) {
  const double above = nice_step(span / target);
  const double mantissa = above / std::pow(10.0, std::floor(std::log10(above) + 1e-9));
  const double below = above * (mantissa < 3.0 ? 0.5 : 0.4);  // 1 → 0.5, 2 → 1, 5 → 2
  const double n_above = span / above;
  const double n_below = span / below;
  return std::abs(n_below - target) < std::abs(n_above - target) ? below : above;
}

}  // namespace

Ticks linear_ticks(double lo, double hi, int target, std::optional<double> fixed_lo,
                   std::optional<double> fixed_hi) {
  target = std::max(target, 2);
  if (fixed_lo && !std::isfinite(*fixed_lo)) fixed_lo.reset();
  if (fixed_hi && !std::isfinite(*fixed_hi)) fixed_hi.reset();
  bool pad = true;
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 0.0;
    hi = 1.0;
    pad = false;
  }
  if (lo > hi) std::swap(lo, hi);
  if (fixed_lo) lo = *fixed_lo;
  if (fixed_hi) hi = *fixed_hi;
  if (lo > hi) std::swap(lo, hi);

  const double scale = std::max(std::abs(lo), std::abs(hi));
  if (hi - lo <= scale * 1e-12) {
    // One value (or all equal): a range around it, [0, 1] for zero.
    const double half = lo == 0.0 ? 0.5 : std::abs(lo) * 0.1;
    if (lo == 0.0) {
      if (!fixed_lo) lo = 0.0;
      if (!fixed_hi) hi = 1.0;
      if (fixed_hi && !fixed_lo) lo = hi - 1.0;
    } else {
      if (!fixed_lo) lo -= half;
      if (!fixed_hi) hi += half;
      if (fixed_lo && fixed_hi) hi = lo + half;
    }
    pad = false;
  }
  if (pad) {
    // Pad so markers sit inside the frame, without crossing 0 for one-signed data.
    const double p = (hi - lo) * 0.04;
    if (!fixed_lo) lo = (lo >= 0.0 && lo - p < 0.0) ? 0.0 : lo - p;
    if (!fixed_hi) hi = (hi <= 0.0 && hi + p > 0.0) ? 0.0 : hi + p;
  }
  if (!std::isfinite(hi - lo) || !(hi > lo)) {
    lo = 0.0;
    hi = 1.0;
  }

  Ticks t;
  const double span = hi - lo;
  t.step = choose_step(span, target);
  // Ends move out to the next tick when that costs little (<= 10% of the span), so axes
  // usually start and end on a labelled value without wasting room.
  t.lo = lo;
  t.hi = hi;
  const double lo_tick = std::floor(lo / t.step + 1e-9) * t.step;
  const double hi_tick = std::ceil(hi / t.step - 1e-9) * t.step;
  if (!fixed_lo && lo - lo_tick <= 0.1 * span) t.lo = lo_tick;
  if (!fixed_hi && hi_tick - hi <= 0.1 * span) t.hi = hi_tick;
  t.values = multiples(t.lo, t.hi, t.step);
  return t;
}

Ticks log_ticks(double lo, double hi, int base, int max_ticks, std::optional<double> fixed_lo,
                std::optional<double> fixed_hi) {
  const double b = base == 2 ? 2.0 : 10.0;
  max_ticks = std::max(max_ticks, 2);
  if (fixed_lo && !(*fixed_lo > 0.0 && std::isfinite(*fixed_lo))) fixed_lo.reset();
  if (fixed_hi && !(*fixed_hi > 0.0 && std::isfinite(*fixed_hi))) fixed_hi.reset();
  if (!(lo > 0.0) || !(hi > 0.0) || !std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 1.0;
    hi = b;
  }
  if (lo > hi) std::swap(lo, hi);
  const auto logb = [b](double v) { return std::log(v) / std::log(b); };
  double l = fixed_lo ? logb(*fixed_lo) : logb(lo);
  double h = fixed_hi ? logb(*fixed_hi) : logb(hi);
  if (l > h) std::swap(l, h);
  const double span = h - l;
  // Padding in log units: a quarter octave, or a tenth of a decade, at least.
  const double pad = std::max(base == 2 ? 0.25 : 0.1, span * 0.04);
  if (span < 1e-9) {
    if (!fixed_lo) l -= base == 2 ? 1.0 : 0.5;
    if (!fixed_hi) h += base == 2 ? 1.0 : 0.5;
    if (fixed_lo && fixed_hi) h = l + 1.0;
  } else {
    if (!fixed_lo) l -= pad;
    if (!fixed_hi) h += pad;
  }

  Ticks t;
  t.lo = std::pow(b, l);
  t.hi = std::pow(b, h);
  t.step = 0.0;
  const double first = std::ceil(l - 1e-9);
  const double last = std::floor(h + 1e-9);
  const auto count = static_cast<int>(std::max(0.0, last - first + 1.0));
  const int stride = std::max(1, (count + max_ticks - 1) / max_ticks);
  for (double k = first; k <= last; k += 1.0) {
    const auto ki = static_cast<long long>(k);
    if (ki % stride == 0) t.values.push_back(std::pow(b, k));
  }
  if (base == 10 && span < 4.0) {
    // Few decades: 2× and 5× ticks too (1, 2, 5, 10, 20, 50, …) when they fit.
    std::vector<double> more;
    for (double k = first - 1.0; k <= last; k += 1.0) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, k);
        if (v >= t.lo * (1.0 - 1e-9) && v <= t.hi * (1.0 + 1e-9)) more.push_back(v);
      }
    }
    if (static_cast<int>(more.size()) <= max_ticks) t.values = more;
  }
  if (t.values.size() < 2) {
    // The range sits between two powers: linear 1-2-5 ticks that are positive.
    const Ticks lin = linear_ticks(t.lo, t.hi, 4, t.lo, t.hi);
    t.values.clear();
    for (double v : lin.values) {
      if (v > 0.0) t.values.push_back(v);
    }
  }
  return t;
}

Ticks ordinal_ticks(const std::vector<double>& categories) {
  Ticks t;
  const double n = static_cast<double>(categories.size());
  const double pad = categories.size() >= 2 ? 1.0 / 3.0 : 0.5;
  t.lo = -pad;
  t.hi = std::max(n - 1.0, 0.0) + pad;
  t.step = 0.0;
  t.values = categories;
  return t;
}

double ordinal_position(const std::vector<double>& categories, double v) {
  const std::size_t n = categories.size();
  if (n < 2 || !std::isfinite(v)) return 0.0;
  // The pair [i, i + 1] around v (the first or last pair beyond the ends).
  const auto it = std::upper_bound(categories.begin(), categories.end(), v);
  std::size_t i =
      it == categories.begin() ? 0 : static_cast<std::size_t>(it - categories.begin()) - 1;
  i = std::min(i, n - 2);
  const double a = categories[i];
  const double b = categories[i + 1];
  return static_cast<double>(i) + (v - a) / (b - a);
}

namespace {

// The fewest decimals (at most six) that write v exactly.
int exact_decimals(double v) {
  int d = 0;
  for (double scaled = v; d < 6; ++d, scaled *= 10.0) {
    if (std::abs(scaled - std::round(scaled)) <= 1e-9 * std::max(1.0, std::abs(scaled))) break;
  }
  return d;
}

}  // namespace

std::vector<std::string> category_labels(const std::vector<double>& values) {
  double max_abs = 0.0;
  for (double v : values) {
    if (std::isfinite(v)) max_abs = std::max(max_abs, std::abs(v));
  }
  const Suffix suffix = suffix_for(max_abs);
  bool tenths = suffix.divisor > 1.0;
  for (double v : values) {
    tenths = tenths && std::isfinite(v) && exact_decimals(v / suffix.divisor) <= 1;
  }
  std::vector<std::string> out;
  out.reserve(values.size());
  for (double v : values) {
    if (tenths) {
      const std::string s = trim_zeros(format_fixed(v / suffix.divisor, 1));
      out.push_back(s == "0" ? s : s + suffix.text);
    } else {
      out.push_back(trim_zeros(format_fixed(v, exact_decimals(v))));
    }
  }
  return out;
}

std::string format_fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  decimals = std::clamp(decimals, 0, 12);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s(buf);
  if (!s.empty() && s.front() == '-') {
    s.erase(0, 1);
    if (!is_zero_text(s)) s = kMinus + s;
  }
  return s;
}

std::vector<std::string> format_ticks(const std::vector<double>& values, double step) {
  double max_abs = 0.0;
  for (double v : values) max_abs = std::max(max_abs, std::abs(v));
  const Suffix suffix = suffix_for(max_abs);
  std::vector<std::string> out;
  out.reserve(values.size());
  if (!(step > 0.0)) {
    for (double v : values) out.push_back(format_compact(v));
    return out;
  }
  // As many decimals as the step has (2.5k steps need one), at most nine.
  const double scaled_step = step / suffix.divisor;
  int decimals = 0;
  for (double scaled = scaled_step; decimals < 9; ++decimals, scaled *= 10.0) {
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
  }
  for (double v : values) {
    std::string s = trim_zeros(format_fixed(v / suffix.divisor, decimals));
    if (s != "0") s += suffix.text;
    out.push_back(std::move(s));
  }
  return out;
}

std::string format_compact(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0.0) return "0";
  const double a = std::abs(v);
  const Suffix suffix = suffix_for(a);
  const double n = a / suffix.divisor;
  int decimals = 0;
  if (n < 1.0) {
    decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(n))) + 2, 0, 9);
  } else if (n < 10.0) {
    decimals = 2;
  } else if (n < 100.0) {
    decimals = 1;
  }
  std::string s = trim_zeros(format_fixed(v / suffix.divisor, decimals));
  if (s != "0") s += suffix.text;
  return s;
}

std::string format_value(double v, const ValueFormat& format) {
  std::string s = format_fixed(v, format.decimals);
  if (!std::isfinite(v)) return s;
  if (format.sign && v > 0.0 && !is_zero_text(s)) s = "+" + s;
  return s + format.suffix;
}

std::string axis_label(const Axis& axis) {
  if (axis.unit.empty()) return axis.title;
  if (axis.title.empty()) return axis.unit;
  return axis.title + " (" + axis.unit + ")";
}

}  // namespace dyno::chart
