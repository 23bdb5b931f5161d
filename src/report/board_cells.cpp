#include "report/board_cells.h"

#include "report/document_blocks.h"
#include "report/format.h"

namespace dyno::report::cells {

using blocks::cell_text;
using compare::ArmCell;
using compare::Comparison;
using compare::ComparisonStatus;
using compare::Delta;
using compare::MetricDef;
using compare::Verdict;

const MetricDef& metric(const std::string& key) { return *compare::find_metric(key); }

std::optional<double> fig(const ArmCell* a, const std::string& key) {
  if (a == nullptr) return std::nullopt;
  const auto& f = a->selected_figures();
  const auto it = f.find(key);
  return it == f.end() ? std::nullopt : it->second;
}

std::string value_text(const MetricDef& m, std::optional<double> v) {
  if (m.unit == "bytes") return gib(v);
  if (m.key == "accuracy" || m.key.rfind("draft_acceptance", 0) == 0) {
    return v ? number(*v * 100.0, 1) + " %" : "n/a";
  }
  return number(v, m.decimals);
}

std::string delta_text(const MetricDef& m, const Delta& d) {
  const bool points = m.delta_kind == compare::DeltaKind::kPoints;
  std::string s = points ? signed_pp(d.value) : signed_pct(d.value);
  if (d.low && d.high) {
    const int dec = points ? 2 : 1;
    s += " [" + signed_number(d.low, dec) + ", " + signed_number(d.high, dec) + "]";
  }
  switch (d.verdict) {
    case Verdict::kWin:
      s += " win";
      break;
    case Verdict::kTie:
      s += " tie";
      break;
    case Verdict::kLoss:
      s += " loss";
      break;
    case Verdict::kNoInterval:
      s += d.summary_only ? " (no interval: summary only)" : " (no interval)";
      break;
    case Verdict::kNotApplicable:
      break;
  }
  return s;
}

TableCell delta_cell(const compare::Cell& cell, const Comparison& cmp, const std::string& key) {
  if (cmp.status != ComparisonStatus::kCompared) return cell_text("not compared");
  if (!compare::measures(metric(key), cell.level_kind)) return cell_text("one request");
  if (key == "accuracy" && !cmp.quality.accuracy_comparable) {
    return cell_text("not comparable: " + cmp.quality.accuracy_reason);
  }
  const auto it = cmp.deltas.find(key);
  if (it == cmp.deltas.end() || !it->second.value) return cell_text("n/a");
  const Delta& d = it->second;
  TableCell tc;
  tc.content = {
      Span{delta_text(metric(key), d), d.verdict == Verdict::kWin && cell.judged_by(key), false}};
  tc.sort_key = d.value;
  return tc;
}

TableCell value_cell(const ArmCell* a, const std::string& key) {
  const auto v = fig(a, key);
  return cell_text(value_text(metric(key), v), v);
}

}  // namespace dyno::report::cells
