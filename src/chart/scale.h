// Axis ranges, tick values and number labels: pure functions, no drawing.
#pragma once

#include <string>
#include <vector>

#include "chart/chart.h"

namespace dyno::chart {

/// The smallest 1-2-5 step (1, 2, 5 × 10^k) that is >= raw (raw > 0 and finite).
double nice_step(double raw);

/// An axis' range and ticks. `step` is the linear tick step (0 on log axes).
struct Ticks {
  double lo = 0.0;
  double hi = 1.0;
  double step = 0.0;
  std::vector<double> values;
};

/// Linear ticks for data spanning [lo, hi] with about `target` intervals. The range is padded
/// a little and widened to whole steps so data never touches the frame; a degenerate span
/// (lo == hi) becomes a small range around the value ([0, 1] for 0). `fixed_lo`/`fixed_hi`
/// (when set) are kept exactly.
Ticks linear_ticks(double lo, double hi, int target, std::optional<double> fixed_lo = {},
                   std::optional<double> fixed_hi = {});

/// Ticks at powers of `base` (2 or 10; 10 adds 2× and 5× when they fit within max_ticks)
/// for positive data in [lo, hi], thinned to at most `max_ticks`; the range is padded in log
/// space. Fixed ends are kept when positive.
Ticks log_ticks(double lo, double hi, int base, int max_ticks, std::optional<double> fixed_lo = {},
                std::optional<double> fixed_hi = {});

/// kLog2 or kLog10: values <= 0 cannot be shown.
inline bool is_log(Scale s) { return s == Scale::kLog2 || s == Scale::kLog10; }

/// An ordinal axis over `categories` (distinct, ascending): positions are in slots, category
/// i at i; the range reaches a third of a slot beyond the first and the last (half a slot
/// around a single one) and `values` are the categories themselves (step 0).
Ticks ordinal_ticks(const std::vector<double>& categories);

/// Where `v` sits on an ordinal axis, in slots: i for categories[i], linearly interpolated
/// between two neighbours, extrapolated from the end pair beyond them; 0 with fewer than two
/// categories.
double ordinal_position(const std::vector<double>& categories, double v);

/// Exact labels for category values: k/M/G from 10^4 on when every value is a whole tenth of
/// the unit (0, 8k, 16k, 32k; 12.5k), else all digits (512, 2048, 16384), decimals only as many
/// as a value has (0.25, at most six).
std::vector<std::string> category_labels(const std::vector<double>& values);

/// `v` with `decimals` decimals, a real minus sign (U+2212), never "-0".
std::string format_fixed(double v, int decimals);

/// Labels for linear ticks with step `step`: k/M/G suffixes when the largest tick reaches 10^4
/// (10^6, 10^9), as many decimals as the step needs, trailing zeros dropped ("0", "2.5k", "5k").
std::vector<std::string> format_ticks(const std::vector<double>& values, double step);

/// One value on its own with about three significant digits: 1024 → "1024", 12500 → "12.5k",
/// 0.25 → "0.25", 2.5e6 → "2.5M".
std::string format_compact(double v);

/// A heatmap value per `format` ("+12.3%", "−4.0%", "0.0%").
std::string format_value(double v, const ValueFormat& format);

/// "title (unit)", or whichever of the two is not empty.
std::string axis_label(const Axis& axis);

}  // namespace dyno::chart
