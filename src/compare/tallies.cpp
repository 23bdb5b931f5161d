#include "compare/tallies.h"

#include <algorithm>
#include <optional>
#include <string>

#include "compare/fairness.h"
#include "compare/figures.h"

namespace dyno::compare {

namespace {

/// One tally of `m` for `arm` over the compared cells whose pairs are summary-only
/// (`summary_only`) or not: summary-only pairs have point deltas only and a line of their
/// own, never counted as interval wins. nullopt when no cell of that kind is compared.
std::optional<Tally> tally(const Board& board, const std::string& arm, const MetricDef& m,
                           bool summary_only) {
  Tally t;
  t.arm = arm;
  t.metric = m.key;
  t.basis = summary_only ? "summary_only" : "intervals";
  std::vector<double> deltas;
  for (const auto& [cell, cmp] : board.comparisons()) {
    if (cmp->arm != arm || cmp->status != ComparisonStatus::kCompared) continue;
    if (!cell->judged_by(m.key)) continue;
    const auto it = cmp->deltas.find(m.key);
    if (it == cmp->deltas.end() || it->second.summary_only != summary_only) continue;
    const Delta& d = it->second;
    ++t.compared;
    if (d.value) {
      deltas.push_back(*d.value);
      ++(*d.value > 0 ? t.point_wins : *d.value < 0 ? t.point_losses : t.point_ties);
    }
    switch (d.verdict) {
      case Verdict::kWin:
        ++t.wins;
        break;
      case Verdict::kTie:
        ++t.ties;
        break;
      case Verdict::kLoss:
        ++t.losses;
        break;
      default:
        ++t.no_interval;
        break;
    }
  }
  if (summary_only && t.compared == 0) return std::nullopt;
  if (!deltas.empty()) {
    std::sort(deltas.begin(), deltas.end());
    const std::size_t n = deltas.size();
    t.delta_min = deltas.front();
    t.delta_max = deltas.back();
    t.delta_median = n % 2 == 1 ? deltas[n / 2] : (deltas[n / 2 - 1] + deltas[n / 2]) / 2.0;
  }
  return t;
}

}  // namespace

std::vector<Tally> win_tallies(const Board& board) {
  std::vector<Tally> out;
  for (const auto& arm : board.arms) {
    if (arm == board.baseline) continue;
    for (const auto& m : metric_catalog()) {
      // A headline figure of some cell on the board: the aggregate rates, a ladder's rates.
      const bool any = std::any_of(board.cells.begin(), board.cells.end(),
                                   [&](const Cell& c) { return c.judged_by(m.key); });
      if (!any) continue;
      const std::optional<Tally> intervals = tally(board, arm, m, false);
      const std::optional<Tally> points = tally(board, arm, m, true);
      // The interval line stays when it is the only one (a board of nothing compared).
      if (intervals && (intervals->compared > 0 || !points)) out.push_back(*intervals);
      if (points) out.push_back(*points);
    }
  }
  return out;
}

std::vector<CheckTally> check_tallies(const Board& board) {
  std::vector<CheckTally> out;
  const auto pairs = board.comparisons();
  if (pairs.empty()) return out;
  for (const auto& def : check_catalog()) {
    if (board.policy.level(def.name) == CheckLevel::kIgnored) continue;
    CheckTally ct{def.name, 0, 0, 0, pairs.size()};
    for (const auto& [cell, cmp] : pairs) {
      const auto* ch = cmp->check(def.name);
      if (ch == nullptr) continue;
      if (ch->outcome == CheckOutcome::kPass) ++ct.pass;
      if (ch->outcome == CheckOutcome::kFail) ++ct.fail;
      if (ch->outcome == CheckOutcome::kUnresolved) ++ct.unresolved;
    }
    out.push_back(ct);
  }
  return out;
}

}  // namespace dyno::compare
