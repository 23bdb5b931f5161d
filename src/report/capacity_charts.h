// The charts of a capacity search (docs/charts.md "Capacity charts"; issue 35, `dyno
// capacity`): one per objective of the SLO, drawn from the `capacity` member of a capacity
// campaign file with the chart library (chart/chart.h), each as an SVG and a PNG from one
// drawing code, handed to the writers as report::Figure values. Nothing here computes a
// figure or a verdict: every value plotted and every verdict is one the section holds.
#pragma once

#include <boost/json/object.hpp>
#include <vector>

#include "chart/chart.h"
#include "report/figure.h"

namespace dyno::report {

/// One capacity chart before it is drawn: its stem, title and caption as the Figure will
/// carry them, and the chart.
struct CapacityChart {
  std::string stem;     ///< "capacity-<objective>", the objective's name as [a-z0-9-]+
  std::string title;    ///< "TTFT p90 against concurrency — SLO 500 ms, capacity 24 users (…)"
  std::string caption;  ///< what is plotted, in a sentence
  chart::LineChart chart;
};

/// The charts of `capacity` (a capacity campaign file's `capacity` member), one per objective
/// in the SLO's order: the objective's value at each probe against load (x: the level, in the
/// section's `unit`), the SLO limit as a horizontal line, each probe a marker coloured by its
/// verdict for this objective (holds, fails, unclear) with its confidence bounds as an error
/// bar, the capacity as a vertical line with its spread over repetitions as a shaded band, and
/// the predicted capacity, when present, as a dashed vertical line. Seconds are shown in ms
/// (in s from a limit of 10 s), fractions in %. The SVG's <desc> lists every probe's level,
/// value, bounds and verdicts. A probe without a value for the objective is listed there and
/// counted in the note, not drawn.
/// Throws std::invalid_argument naming the member (e.g. "capacity.probes[2].verdict") when
/// the section is malformed: a member missing or of the wrong type, a verdict, status, `by` or
/// decided_by outside its words, a probe naming an objective the SLO does not have.
std::vector<CapacityChart> capacity_chart_specs(const boost::json::object& capacity);

/// capacity_charts' specs drawn as SVG and PNG at chart::default_size (960 × 600), in the
/// latency section; stems "capacity-<objective>" (e.g. capacity-ttft-p90).
std::vector<Figure> capacity_charts(const boost::json::object& capacity);

}  // namespace dyno::report
