#include "report/board_engine.h"

#include <string>
#include <vector>

#include "report/board_cells.h"
#include "report/document_blocks.h"

namespace dyno::report {

using blocks::b;
using blocks::cell_text;
using blocks::paragraph;
using blocks::t;
using blocks::table_block;
using compare::Board;
using compare::MetricDef;

namespace {

/// The section's figures, in catalog order.
std::vector<const MetricDef*> engine_metrics() {
  std::vector<const MetricDef*> out;
  for (const auto& m : compare::metric_catalog()) {
    if (m.section == compare::Section::kEngine) out.push_back(&m);
  }
  return out;
}

/// One row per cell and arm: every figure of the section.
Table figures_table(const Board& bd, const std::vector<const MetricDef*>& metrics) {
  Table tb;
  tb.header = {"Model", "Cell", "Arm"};
  tb.numeric = {false, false, false};
  for (const auto* m : metrics) {
    tb.header.push_back(m->label);  // the unit is in the label
    tb.numeric.push_back(true);
  }
  for (const auto& cl : bd.cells) {
    for (const auto& a : cl.arms) {
      std::vector<TableCell> row{cell_text(cl.model), cell_text(cl.name, cl.level),
                                 cell_text(a.arm)};
      for (const auto* m : metrics) row.push_back(cells::value_cell(&a, m->key));
      tb.rows.push_back(std::move(row));
    }
  }
  return tb;
}

}  // namespace

std::optional<Section> engine_section(const Board& bd) {
  if (!bd.engine_figures) return std::nullopt;
  Section s{"Engine-timed figures", 2, {}};
  s.blocks.push_back(paragraph(
      {t("What the engine itself reported, beside the client's figures above and never instead "
         "of them; every label says whose figure it is. "),
       b("(engine, response timings)"), t(": the engine's own clock, from the llama.cpp "),
       blocks::c("timings"),
       t(" object of each response (summary.json server.timings): its prefill rate per request "
         "(the prompt tokens it "
         "computed over its prompt time, cached tokens excluded) and its per-user decode rate, "
         "medians; the prompt tokens it computed and those it served from its prompt cache; "
         "its draft acceptance (accepted / drafted tokens). "),
       b("(engine, /metrics)"),
       t(": the draft acceptance of the engine's counters over the whole run. "), b("(client)"),
       t(": tokens per token-bearing event as the client received them (above 1 when an event "
         "carries several tokens). The engine's timers start and stop where it starts and ends "
         "its work, not where the client sends and receives: compare these with each other, "
         "not with TTFT or TPOT.")}));
  const auto metrics = engine_metrics();
  s.blocks.push_back(table_block(figures_table(bd, metrics)));
  // Deltas of the engine's two rates, per compared arm.
  std::vector<const MetricDef*> compared;
  for (const auto* m : metrics) {
    if (m->direction != compare::Direction::kNone) compared.push_back(m);
  }
  for (const auto& arm : bd.arms) {
    if (arm == bd.baseline) continue;
    Table tb;
    tb.header = {"Model", "Cell"};
    tb.numeric = {false, false};
    for (const auto* m : compared) {
      tb.header.push_back(m->label + " Δ");
      tb.numeric.push_back(true);
    }
    for (const auto& [cl, cmp] : bd.comparisons()) {
      if (cmp->arm != arm) continue;
      std::vector<TableCell> row{cell_text(cl->model), cell_text(cl->name, cl->level)};
      for (const auto* m : compared) row.push_back(cells::delta_cell(*cl, *cmp, m->key));
      tb.rows.push_back(std::move(row));
    }
    if (tb.rows.empty()) continue;
    s.blocks.push_back(paragraph(
        {b(arm), t(" vs " + bd.baseline +
                   ", the engine's own rates (a delta only where both arms' engines reported "
                   "the rate; the engine-timed prefill rate has an interval over the requests, "
                   "from each response's timings; the per-request medians only over at least " +
                   std::to_string(bd.bootstrap.min_repetitions) +
                   " repetitions per arm, since the board keeps the engine's medians, not its "
                   "per-response rates):")}));
    s.blocks.push_back(table_block(std::move(tb)));
  }
  return s;
}

}  // namespace dyno::report
