// What dyno shows a person: the progress bar (stderr) and the summary table (stdout).
// Results go to stdout, progress and warnings to stderr (P11).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/server_timings.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "scrub/terminal_text.h"

namespace dyno::app {

struct ConsoleStyle {
  bool color = false;     ///< ANSI colour on stdout/stderr
  bool progress = false;  ///< live progress bar on stderr
};

/// color: "auto" | "always" | "never". auto = colour when the stream is a TTY and NO_COLOR is
/// unset (https://no-color.org). The progress bar needs stderr to be a TTY and !quiet.
ConsoleStyle detect_style(const std::string& color, bool quiet);

/// Redraws one status line on stderr, at most every 100 ms.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void update(const load::Progress& progress, double elapsed_s);
  /// Clears the line.
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
};

/// Headline facts printed above the figures, and what the engine said about itself.
struct RunHeadline {
  std::string run_id;
  std::string engine;  ///< e.g. "dyno-sim (profile small-gpu)" or "http://host:port/v1"
  std::string model;
  std::string api;
  std::string load;  ///< e.g. "closed loop, concurrency 8"
  std::string status;
  std::string record_dir;
  std::string slo_text;  ///< "" when no SLO
  std::string energy;    ///< "" when no energy was measured
  /// Server-side figures from the responses' `timings`: printed beside the client's rows when
  /// at least one response had timings.
  std::optional<engine::ServerTimingFigures> server_timings;
  std::optional<double> metrics_acceptance_rate;  ///< /metrics spec-decode acceptance rate
};

/// The human summary table (stdout).
std::string render_summary(const RunHeadline& head, const metrics::Summary& s, bool color);

/// "warning[code]: message\n  hint: hint\n" lines (stderr).
std::string render_warnings(const std::vector<metrics::Warning>& warnings, bool color);

using scrub::terminal_text;  // text from a server, record or file, safe for a terminal

/// A number with a fixed number of decimals, or "n/a" when absent.
std::string fmt(std::optional<double> v, int decimals);

}  // namespace dyno::app
