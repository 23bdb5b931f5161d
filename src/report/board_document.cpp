// The board as one document model (README.md, report.html and console text render it): one
// Builder method per section, all reading the same board and placing the same figures. The
// methodology section, which reads nothing but the board, is its own file
// (board_methodology.cpp).
#include "report/board_document.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "compare/chart_data.h"
#include "compare/select.h"
#include "report/board_cells.h"
#include "report/board_engine.h"
#include "report/board_methodology.h"
#include "report/document_blocks.h"
#include "report/format.h"

namespace dyno::report {

using compare::ArmCell;
using compare::Board;
using compare::Cell;
using compare::CheckLevel;
using compare::CheckOutcome;
using compare::Comparison;
using compare::ComparisonStatus;
using compare::Delta;
using compare::MetricDef;
using Part = compare::Section;
using compare::Verdict;

using blocks::b;
using blocks::bullets;
using blocks::c;
using blocks::cell_text;
using blocks::join;
using blocks::paragraph;
using blocks::t;
using blocks::table_block;
using cells::delta_cell;
using cells::delta_text;
using cells::fig;
using cells::metric;
using cells::value_cell;

namespace {

std::string verdict_phrase(const compare::Tally& tl) {
  std::string s = std::to_string(tl.wins) + " win" + (tl.wins == 1 ? "" : "s") + ", " +
                  std::to_string(tl.ties) + " tie" + (tl.ties == 1 ? "" : "s") + ", " +
                  std::to_string(tl.losses) + " loss" + (tl.losses == 1 ? "" : "es");
  if (tl.no_interval > 0) s += ", " + std::to_string(tl.no_interval) + " without an interval";
  return s;
}

/// "2 ahead, 0 level, 1 behind": the signs of the point deltas.
std::string point_phrase(const compare::Tally& tl) {
  std::string s = std::to_string(tl.point_wins) + " ahead, " + std::to_string(tl.point_ties) +
                  " level, " + std::to_string(tl.point_losses) + " behind";
  const std::size_t absent = tl.compared - tl.point_wins - tl.point_ties - tl.point_losses;
  if (absent > 0) s += ", " + std::to_string(absent) + " without the figure in a run";
  return s;
}

std::string cell_label(const Cell& cl) { return cl.model + " " + cl.name; }

/// The comparisons of one arm, in cell order.
std::vector<std::pair<const Cell*, const Comparison*>> of_arm(const Board& bd,
                                                              const std::string& arm) {
  std::vector<std::pair<const Cell*, const Comparison*>> out;
  for (const auto& [cl, cmp] : bd.comparisons()) {
    if (cmp->arm == arm) out.emplace_back(cl, cmp);
  }
  return out;
}

std::vector<std::string> compared_arms(const Board& bd) {
  std::vector<std::string> out;
  for (const auto& a : bd.arms) {
    if (a != bd.baseline) out.push_back(a);
  }
  return out;
}

class Builder {
 public:
  Builder(const Board& bd, const std::vector<Figure>& figures, DocumentKind kind)
      : bd_(bd), figures_(figures), kind_(kind) {}

  Document build() {
    doc_.title = bd_.title;
    status();
    glance();
    throughput();
    // The console shows the frontier and cost when it was asked a price (--gpu-hour-cost).
    if (kind_ == DocumentKind::kFull || !bd_.gpu_hour_cost.empty()) frontier();
    if (kind_ == DocumentKind::kFull) {
      prefill();
      latency();
      if (auto engine = engine_section(bd_)) doc_.sections.push_back(std::move(*engine));
      quality();
      gpu();
      energy();
      repetitions();
      methodology();
    }
    findings();
    unpaired();
    replaced();
    if (kind_ == DocumentKind::kFull) files();
    return std::move(doc_);
  }

 private:
  Section& section(std::string title, int level = 2) {
    doc_.sections.push_back({std::move(title), level, {}});
    return doc_.sections.back();
  }

  void place_figures(Section& s, Part which) {
    for (std::size_t i = 0; i < figures_.size(); ++i) {
      if (figures_[i].section != which) continue;
      Block bl;
      bl.kind = Block::Kind::kFigure;
      bl.figure = i;
      s.blocks.push_back(bl);
    }
  }

  /// One table per compared arm; a subsection per arm when there are several.
  template <typename RowFn>
  void per_arm_tables(Part which, const std::string& title, const Inline& intro,
                      std::vector<std::string> header, std::vector<bool> numeric, RowFn row) {
    Section& s = section(title);
    if (!intro.empty()) s.blocks.push_back(paragraph(intro));
    place_figures(s, which);
    const auto arms = compared_arms(bd_);
    for (const auto& arm : arms) {
      Table tb;
      for (const auto& h : header) tb.header.push_back(substitute(h, arm));
      tb.numeric = numeric;
      for (const auto& [cl, cmp] : of_arm(bd_, arm)) tb.rows.push_back(row(*cl, *cmp));
      Block bl = tb.rows.empty()
                     ? paragraph({t("No cell pairs " + arm + " with " + bd_.baseline + ".")})
                     : table_block(std::move(tb));
      if (arms.size() > 1) {
        section(arm + " vs " + bd_.baseline, 3).blocks.push_back(std::move(bl));
      } else {
        doc_.sections.back().blocks.push_back(std::move(bl));
      }
    }
  }

  std::string substitute(const std::string& h, const std::string& arm) const {
    std::string out = h;
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"{A}", arm},
                                   std::pair<std::string, std::string>{"{B}", bd_.baseline}}) {
      for (auto pos = out.find(from); pos != std::string::npos; pos = out.find(from)) {
        out.replace(pos, from.size(), to);
      }
    }
    return out;
  }

  // ---- status and at a glance ----------------------------------------------------------

  void status() {
    std::size_t compared = 0, failed = 0;
    for (const auto& [cl, cmp] : bd_.comparisons()) {
      (cmp->status == ComparisonStatus::kCompared ? compared : failed) += 1;
    }
    Inline line{b("Status:"), t(" "), c(bd_.status), t(".")};
    line.push_back(
        t(" " + std::to_string(bd_.cells.size()) + " cell" + (bd_.cells.size() == 1 ? "" : "s") +
          " paired, " + std::to_string(compared) + " comparison" + (compared == 1 ? "" : "s") +
          " made, " + std::to_string(failed) + " not made (a required check failed), " +
          std::to_string(bd_.unpaired.size()) + " unpaired run" +
          (bd_.unpaired.size() == 1 ? "" : "s") +
          (bd_.replaced.empty()
               ? std::string()
               : ", " + std::to_string(bd_.replaced.size()) + " run" +
                     (bd_.replaced.size() == 1 ? "" : "s") + " replaced by the board spec") +
          "."));
    if (!bd_.unresolved_checks.empty()) {
      std::vector<std::string> labels;
      for (const auto& n : bd_.unresolved_checks) labels.push_back(compare::check_def(n).label);
      line.push_back(b(" Unresolved identities (rendered with --allow-unresolved): " +
                       join(labels, ", ") + "."));
      line.push_back(t(" Pairs are compared although these checks could not be made."));
    }
    std::size_t unexpected = 0;
    for (const auto& r : bd_.expectations) unexpected += r.pass ? 0 : 1;
    if (unexpected > 0) {
      line.push_back(
          b(" Expectations failed (rendered by policy report): " + std::to_string(unexpected) +
            " of " + std::to_string(bd_.expectations.size()) +
            " pinned expectations do not hold; each is an expectation_failed "
            "finding."));
    }
    Block st;
    st.kind = Block::Kind::kStatus;
    st.text = std::move(line);
    doc_.intro.push_back(std::move(st));

    std::set<std::string> models, protocols;
    for (const auto& cl : bd_.cells) {
      models.insert(cl.model);
      protocols.insert(cl.protocol);
    }
    const auto arms = compared_arms(bd_);
    std::string lead;
    for (std::size_t i = 0; i < arms.size(); ++i) {
      if (i > 0) lead += i + 1 == arms.size() ? " and " : ", ";
      lead += arms[i];
    }
    Inline d{t(lead + " against the baseline " + bd_.baseline + " over " +
               std::to_string(models.size()) + " model" + (models.size() == 1 ? "" : "s") +
               " and the protocol" + (protocols.size() == 1 ? " " : "s ") +
               join(std::vector<std::string>(protocols.begin(), protocols.end()), ", ") +
               ". A delta is signed so that positive means the arm is better than " + bd_.baseline +
               "; it counts as a win or a loss only when its " +
               number(bd_.bootstrap.confidence * 100.0, 0) +
               " % interval excludes 0, otherwise it is a tie.")};
    doc_.intro.push_back(paragraph(std::move(d)));
  }

  void glance() {
    Section& s = section("At a glance");
    std::vector<Inline> items;
    for (const auto& tl : bd_.tallies) {
      const MetricDef& m = metric(tl.metric);
      const bool points_only = tl.basis == "summary_only";
      std::vector<std::string> nonwins;
      for (const auto& [cl, cmp] : of_arm(bd_, tl.arm)) {
        if (cmp->status != ComparisonStatus::kCompared) continue;
        if (!cl->judged_by(tl.metric)) continue;  // what the tally counts
        const auto it = cmp->deltas.find(tl.metric);
        if (it == cmp->deltas.end() || it->second.summary_only != points_only) continue;
        const bool ahead = points_only ? it->second.value && *it->second.value > 0
                                       : it->second.verdict == Verdict::kWin;
        if (!ahead) {
          nonwins.push_back(cell_label(*cl) + " " + delta_text(m, it->second));
        }
      }
      Inline item =
          points_only ? Inline{b(tl.arm),
                               t(" vs " + bd_.baseline + ", " + m.label +
                                 ", summary-only pairs (no interval: summary only): "),
                               b(std::to_string(tl.point_wins) + "/" + std::to_string(tl.compared)),
                               t(" cells ahead by point estimate (" + point_phrase(tl) +
                                 "; never counted as wins)")}
                      : Inline{b(tl.arm), t(" vs " + bd_.baseline + ", " + m.label + ": "),
                               b(std::to_string(tl.wins) + "/" + std::to_string(tl.compared)),
                               t(" cells won (" + verdict_phrase(tl) +
                                 "; point estimates: " + point_phrase(tl) + ")")};
      if (tl.delta_min) {
        item.push_back(t("; deltas " + signed_pct(tl.delta_min) + " to " +
                         signed_pct(tl.delta_max) + ", median " + signed_pct(tl.delta_median)));
      }
      if (!nonwins.empty() && nonwins.size() < tl.compared) {
        item.push_back(t((points_only ? ". Not ahead: " : ". Not a win: ") + join(nonwins, "; ")));
      }
      item.push_back(t("."));
      items.push_back(std::move(item));
    }
    // Check tallies over the pairs.
    const auto pairs = bd_.comparisons();
    if (!bd_.check_tallies.empty()) {
      std::vector<std::string> parts;
      std::vector<std::string> unresolved;
      for (const auto& ct : bd_.check_tallies) {
        const std::string& label = compare::check_def(ct.check).label;
        std::string p = label + " " + std::to_string(ct.pass) + "/" + std::to_string(ct.pairs);
        if (ct.fail > 0) p += " (" + std::to_string(ct.fail) + " differ)";
        if (bd_.policy.level(ct.check) == CheckLevel::kReported) p += " (reported)";
        parts.push_back(p);
        if (ct.unresolved > 0) unresolved.push_back(label + " " + std::to_string(ct.unresolved));
      }
      std::string text = "Pair checks passed: " + join(parts, ", ") + ".";
      if (!unresolved.empty()) text += " Unresolved: " + join(unresolved, ", ") + ".";
      items.push_back({t(text)});
    }
    std::size_t warnings = 0, audited = 0, not_comparable = 0;
    for (const auto& [cl, cmp] : pairs) {
      if (cmp->status != ComparisonStatus::kCompared) continue;
      ++audited;
      if (cmp->quality.warning) ++warnings;
      if (!cmp->quality.accuracy_comparable) ++not_comparable;
    }
    std::string quality_line = std::to_string(warnings) + " of " + std::to_string(audited) +
                               " compared pairs cross the quality warning thresholds (" +
                               number(bd_.quality.accuracy_pp, 1) + " accuracy points or " +
                               number(bd_.quality.output_gap_pct, 1) + " % mean output length)";
    if (not_comparable > 0) {
      quality_line += "; in " + std::to_string(not_comparable) + " pair" +
                      (not_comparable == 1 ? "" : "s") +
                      " accuracy is not comparable (the board spec says why) and is not compared";
    }
    items.push_back({t(quality_line + ".")});
    if (!bd_.expectations.empty()) {
      std::size_t held = 0;
      for (const auto& r : bd_.expectations) held += r.pass ? 1 : 0;
      items.push_back({t("Pinned expectations (board spec): " + std::to_string(held) + " of " +
                         std::to_string(bd_.expectations.size()) + " hold.")});
    }
    std::map<std::string, std::size_t> by_type;
    for (const auto& f : bd_.findings) by_type[f.type] += 1;
    if (!by_type.empty()) {
      std::vector<std::string> parts;
      for (const auto& [type, n] : by_type) parts.push_back(type + " " + std::to_string(n));
      items.push_back({t(std::to_string(bd_.findings.size()) + " finding" +
                         (bd_.findings.size() == 1 ? "" : "s") + " (" + join(parts, ", ") +
                         "), listed under Findings.")});
    }
    if (items.empty()) items.push_back({t("No cell pairs the arms.")});
    s.blocks.push_back(bullets(std::move(items)));
  }

  // ---- sections -------------------------------------------------------------------------

  void throughput() {
    bool goodput = false;
    for (const auto& [cl, cmp] : bd_.comparisons()) {
      const auto it = cmp->deltas.find("goodput_requests_per_s");
      if (it != cmp->deltas.end() && it->second.value) goodput = true;
    }
    std::vector<std::string> header{
        "Model",          "Cell",    "{A} output tok/s", "{B} output tok/s",
        "Output tok/s Δ", "Req/s Δ", "Decode tok/s Δ",   "Decode tok/s per user p50 Δ"};
    std::vector<bool> numeric{false, false, true, true, true, true, true, true};
    if (goodput) {
      header.push_back("Goodput req/s Δ");
      numeric.push_back(true);
    }
    header.push_back("Achieved concurrency {A} / {B}");
    numeric.push_back(true);
    per_arm_tables(
        Part::kThroughput, "Service throughput",
        {t("Output tok/s is Σ output tokens of the completed requests over the service window; "
           "req/s the completed requests over the same window; decode tok/s the tokens after "
           "each first token over the union of decode intervals (docs/metrics.md). Each Δ "
           "shows the delta, its interval in brackets and the verdict, in bold when it is a win "
           "in a figure the cell is judged by (a ladder cell, one request, by its own rate; "
           "docs/compare.md).")},
        header, numeric, [this, goodput](const Cell& cl, const Comparison& cmp) {
          const ArmCell* a = cl.arm(cmp.arm);
          const ArmCell* bs = cl.arm(bd_.baseline);
          std::vector<TableCell> row{cell_text(cl.model),
                                     cell_text(cl.name, cl.level),
                                     value_cell(a, "output_tokens_per_s"),
                                     value_cell(bs, "output_tokens_per_s"),
                                     delta_cell(cl, cmp, "output_tokens_per_s"),
                                     delta_cell(cl, cmp, "requests_per_s"),
                                     delta_cell(cl, cmp, "decode_tokens_per_s"),
                                     delta_cell(cl, cmp, "decode_rate_per_user_p50")};
          if (goodput) row.push_back(delta_cell(cl, cmp, "goodput_requests_per_s"));
          row.push_back(cell_text(number(fig(a, "achieved_concurrency"), 2) + " / " +
                                  number(fig(bs, "achieved_concurrency"), 2)));
          return row;
        });
  }

  /// Output per GPU against speed per user, the frontier and the cost: one row per load cell
  /// and arm, the same figures and flags as the frontier chart (compare/frontier.h).
  void frontier() {
    const auto points = compare::frontier_points(bd_);
    if (points.empty()) return;
    const bool priced = !bd_.gpu_hour_cost.empty();
    const bool assumed = std::any_of(points.begin(), points.end(),
                                     [](const auto& p) { return p.point.gpus_in_record == 0; });
    Section& s = section("Frontier and cost");
    std::string intro =
        "Each arm's selected run in each load cell is an operating point: its output tok/s per "
        "GPU (aggregate output tok/s over the record's GPU count) against its per-user decode "
        "tok/s (p50). A point is on the frontier when no other point of its model, of any arm "
        "or cell, is at least as high in both and higher in one; the others are dominated. "
        "Ladder cells, one request each, are not operating points.";
    if (assumed) intro += " Per GPU: 1 on a host without GPUs (a record that counts none).";
    if (priced) {
      std::vector<std::string> prices;
      for (const auto& arm : bd_.arms) {
        const auto it = bd_.gpu_hour_cost.find(arm);
        prices.push_back(arm + " " +
                         (it == bd_.gpu_hour_cost.end() ? std::string("no price")
                                                        : usd(it->second) + " per GPU-hour"));
      }
      intro +=
          " Cost per million tokens = price per GPU-hour × GPUs / 3600 / tok/s × 10⁶: over "
          "output tok/s ($/Mtok output) and over input + output tok/s ($/Mtok total); lower is "
          "better. Prices: " +
          join(prices, ", ") + ".";
    }
    s.blocks.push_back(paragraph({t(intro)}));
    place_figures(s, Part::kFrontier);
    Table tb;
    tb.header = {
        "Model",   "Cell", "Arm", "GPUs", "Output tok/s per GPU", "Decode tok/s per user p50",
        "Frontier"};
    tb.numeric = {false, false, false, true, true, true, false};
    if (priced) {
      for (const char* h : {"$/GPU-hour", "$/Mtok output", "$/Mtok total"}) {
        tb.header.push_back(h);
        tb.numeric.push_back(true);
      }
    }
    for (const auto& p : points) {
      const compare::OperatingPoint& o = p.point;
      std::vector<TableCell> row{
          cell_text(p.cell->model),
          cell_text(p.cell->name, p.cell->level),
          cell_text(p.arm),
          cell_text(number(o.gpus, 0) + (o.gpus_in_record == 0 ? " (none counted)" : ""), o.gpus),
          cell_text(number(o.output_tok_s_per_gpu, 1), o.output_tok_s_per_gpu),
          cell_text(number(o.per_user_tok_s, 1), o.per_user_tok_s),
          cell_text(*o.on_frontier ? "on the frontier" : "dominated")};
      if (priced) {
        row.push_back(cell_text(usd(o.gpu_hour_cost), o.gpu_hour_cost));
        row.push_back(cell_text(usd(o.usd_per_mtok_output), o.usd_per_mtok_output));
        row.push_back(cell_text(usd(o.usd_per_mtok_total), o.usd_per_mtok_total));
      }
      tb.rows.push_back(std::move(row));
    }
    s.blocks.push_back(table_block(std::move(tb)));
  }

  void prefill() {
    per_arm_tables(
        Part::kPrefill, "Prefill",
        {t("A cell's prefill figure is the engine's own prefill rate where every run of the cell "
           "has it (the prompt tokens the engine computed over its prompt time, from each "
           "response's timings; summary.json server.timings.prefill_tokens_per_s), else the "
           "client's per-request prefill rate, input tokens over the time to first token "
           "(median; it includes queueing and the network; rates_tok_s.prefill_rate_client). "
           "Its source is named in each row. Input tok/s (aggregate) is Σ input tokens of the "
           "completed requests over the service window: a rate of requests, not of prefill "
           "(on one request stream its Δ is the req/s Δ).")},
        {"Model", "Cell", "Prefill figure", "{A} prefill tok/s", "{B} prefill tok/s", "Prefill Δ",
         "{A} input tok/s (aggregate)", "{B} input tok/s (aggregate)", "Input tok/s Δ"},
        {false, false, false, true, true, true, true, true, true},
        [this](const Cell& cl, const Comparison& cmp) {
          const ArmCell* a = cl.arm(cmp.arm);
          const ArmCell* bs = cl.arm(bd_.baseline);
          const std::string& key = cl.prefill_figure;
          return std::vector<TableCell>{
              cell_text(cl.model),
              cell_text(cl.name, cl.level),
              cell_text(key == compare::kEnginePrefillKey ? "engine-timed"
                                                          : "client, per request p50"),
              value_cell(a, key),
              value_cell(bs, key),
              delta_cell(cl, cmp, key),
              value_cell(a, "input_tokens_per_s"),
              value_cell(bs, "input_tokens_per_s"),
              delta_cell(cl, cmp, "input_tokens_per_s")};
        });
  }

  static std::string triple(const ArmCell* a, std::initializer_list<const char*> keys) {
    std::vector<std::string> parts;
    for (const char* k : keys) parts.push_back(number(fig(a, k), 1));
    return join(parts, " / ");
  }

  void latency() {
    per_arm_tables(
        Part::kLatency, "Latency and jitter",
        {t("Client-observed milliseconds over the completed requests: time to first token, "
           "end-to-end latency (sent to done) and its jitter p95 − p50. For latencies a "
           "positive Δ means the arm is faster.")},
        {"Model", "Cell", "{A} TTFT p50 / p99", "{B} TTFT p50 / p99", "{A} E2E p50 / p95 / p99",
         "{B} E2E p50 / p95 / p99", "{A} jitter", "{B} jitter", "TTFT p50 Δ", "TPOT p50 Δ",
         "E2E p50 Δ", "E2E p99 Δ", "Jitter Δ"},
        {false, false, true, true, true, true, true, true, true, true, true, true, true},
        [this](const Cell& cl, const Comparison& cmp) {
          const ArmCell* a = cl.arm(cmp.arm);
          const ArmCell* bs = cl.arm(bd_.baseline);
          return std::vector<TableCell>{
              cell_text(cl.model),
              cell_text(cl.name, cl.level),
              cell_text(triple(a, {"ttft_p50_ms", "ttft_p99_ms"}), fig(a, "ttft_p50_ms")),
              cell_text(triple(bs, {"ttft_p50_ms", "ttft_p99_ms"}), fig(bs, "ttft_p50_ms")),
              cell_text(triple(a, {"e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms"}),
                        fig(a, "e2e_p50_ms")),
              cell_text(triple(bs, {"e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms"}),
                        fig(bs, "e2e_p50_ms")),
              value_cell(a, "e2e_jitter_ms"),
              value_cell(bs, "e2e_jitter_ms"),
              delta_cell(cl, cmp, "ttft_p50_ms"),
              delta_cell(cl, cmp, "tpot_p50_ms"),
              delta_cell(cl, cmp, "e2e_p50_ms"),
              delta_cell(cl, cmp, "e2e_p99_ms"),
              delta_cell(cl, cmp, "e2e_jitter_ms")};
        });
  }

  static std::string correct_text(std::optional<std::uint64_t> correct,
                                  std::optional<std::uint64_t> scored) {
    if (!scored) return "not scored";
    return std::to_string(correct.value_or(0)) + "/" + std::to_string(*scored);
  }

  void quality() {
    per_arm_tables(
        Part::kQuality, "Quality audit",
        {t("Accuracy and output length are measured outcomes of each arm. A warning means an "
           "accuracy gap of at least " +
           number(bd_.quality.accuracy_pp, 1) + " points or a mean output length gap of at least " +
           number(bd_.quality.output_gap_pct, 1) +
           " %; warning cells are reported, never "
           "normalized away.")},
        {"Model", "Cell", "{A} correct", "{B} correct", "Accuracy Δ",
         "Mean output tokens {A} / {B}", "Output length gap", "Assessment"},
        {false, false, true, true, true, true, true, false},
        [this](const Cell& cl, const Comparison& cmp) {
          const auto& q = cmp.quality;
          std::string assessment;
          if (cmp.status != ComparisonStatus::kCompared) {
            assessment = "not compared";
          } else if (q.warning) {
            assessment = "warning: " + join(q.reasons, "; ");
          } else {
            assessment = "within thresholds";
          }
          if (cmp.status == ComparisonStatus::kCompared && !q.accuracy_comparable) {
            assessment = "accuracy not comparable: " + q.accuracy_reason + "; " +
                         (q.warning ? assessment : "output length within its threshold");
          }
          return std::vector<TableCell>{
              cell_text(cl.model),
              cell_text(cl.name, cl.level),
              cell_text(correct_text(q.correct_arm, q.scored_arm), q.accuracy_arm),
              cell_text(correct_text(q.correct_baseline, q.scored_baseline), q.accuracy_baseline),
              delta_cell(cl, cmp, "accuracy"),
              cell_text(number(q.output_mean_arm, 1) + " / " + number(q.output_mean_baseline, 1)),
              cell_text(q.output_mean_gap_pct ? number(q.output_mean_gap_pct, 1) + " %" : "n/a",
                        q.output_mean_gap_pct),
              TableCell{{Span{assessment, q.warning, false}}, std::nullopt}};
        });
    // Requests the arms scored differently (model-derived text: escaped by every renderer).
    Table tb;
    tb.header = {"Cell", "Arm", "Request", "Arm's answer", "Baseline's answer"};
    tb.numeric = {false, false, false, false, false};
    std::size_t total = 0;
    for (const auto& [cl, cmp] : bd_.comparisons()) {
      std::size_t n = 0;
      for (const auto& d : cmp->quality.disagreements) {
        ++total;
        if (n++ >= 5) continue;
        const auto answer = [](bool ok, const std::string& text) {
          return std::string(ok ? "correct: " : "wrong: ") + (text.empty() ? "(none)" : text);
        };
        tb.rows.push_back({cell_text(cell_label(*cl)), cell_text(cmp->arm), cell_text(d.request_id),
                           cell_text(answer(d.arm_correct, d.arm_extracted)),
                           cell_text(answer(d.baseline_correct, d.baseline_extracted))});
      }
    }
    if (total > 0) {
      Section& s = section("Requests scored differently", 3);
      s.blocks.push_back(paragraph(
          {t(std::to_string(total) + " request" + (total == 1 ? " was" : "s were") +
             " scored correct in one arm and wrong in the other (the first 5 per pair below; "
             "all in board.json).")}));
      s.blocks.push_back(table_block(std::move(tb)));
    }
  }

  /// Rows per (cell, arm) of figures in `keys`; a paragraph when no run has any of them.
  void arm_rows(Section& s, const std::vector<std::string>& keys, const std::string& none) {
    Table tb;
    tb.header = {"Model", "Cell", "Arm"};
    tb.numeric = {false, false, false};
    for (const auto& k : keys) {
      const MetricDef& m = metric(k);
      tb.header.push_back(m.label +
                          (m.unit.empty() || m.unit == "bytes" ? "" : " (" + m.unit + ")"));
      tb.numeric.push_back(true);
    }
    bool any = false;
    for (const auto& cl : bd_.cells) {
      for (const auto& a : cl.arms) {
        std::vector<TableCell> row{cell_text(cl.model), cell_text(cl.name, cl.level),
                                   cell_text(a.arm)};
        for (const auto& k : keys) {
          if (fig(&a, k)) any = true;
          TableCell cell = value_cell(&a, k);
          if (k == "power_mean_w" && compare::power_disagreement(a.run())) {
            cell.content.push_back(Span{" above the peak: the sources disagree", true, false});
          }
          row.push_back(std::move(cell));
        }
        tb.rows.push_back(std::move(row));
      }
    }
    if (!any) {
      s.blocks.push_back(paragraph({t(none)}));
      return;
    }
    s.blocks.push_back(table_block(std::move(tb)));
  }

  std::string no_energy_reason() const {
    std::set<std::string> reasons;
    for (const auto& cl : bd_.cells) {
      for (const auto& a : cl.arms) {
        if (const auto r = compare::string_at(a.run().summary_json, "energy.reason"))
          reasons.insert(*r);
      }
    }
    return reasons.empty()
               ? ""
               : " (" + join(std::vector<std::string>(reasons.begin(), reasons.end()), "; ") + ")";
  }

  void gpu() {
    Section& s = section("GPU operating figures");
    s.blocks.push_back(paragraph(
        {t("Over each run's service window, from its telemetry: peak VRAM summed over the "
           "GPUs; power of the devices in the energy scope: the mean from the energy counter "
           "(energy over the window), the peak and the p95 from the power samples (the peak "
           "of their sum at one instant, the sum of each device's p95); the hottest GPU's p95 "
           "temperature. A mean above the peak means the two sources disagree: it is marked "
           "and is a finding. Shown, not compared.")}));
    place_figures(s, Part::kGpu);
    arm_rows(
        s, {"vram_peak_bytes", "power_mean_w", "power_peak_w", "power_p95_w", "temperature_p95_c"},
        "No run of this board recorded GPU operating figures" + no_energy_reason() + ".");
  }

  void energy() {
    Section& s = section("Energy");
    s.blocks.push_back(paragraph(
        {t("Energy over the service window (GPUs when a GPU reports it, else CPU packages), "
           "per output token gross and net of the idle baseline, output tokens per joule, and "
           "energy per million output tokens (J/Mtok: energy over output tokens × 10⁶). "
           "Energy has no per-request form: its deltas get an interval only over repetitions.")}));
    place_figures(s, Part::kEnergy);
    const std::size_t before = s.blocks.size();
    arm_rows(s,
             {"energy_j", "joules_per_output_token", "idle_subtracted_joules_per_output_token",
              "output_tokens_per_j", "joules_per_mtok_output"},
             "No run of this board measured energy" + no_energy_reason() + ".");
    if (s.blocks.size() == before + 1 && s.blocks.back().kind == Block::Kind::kTable) {
      for (const auto& arm : compared_arms(bd_)) {
        Table tb;
        tb.header = {"Model",
                     "Cell",
                     "Energy per output token Δ, gross",
                     "Energy per output token Δ, net of idle",
                     "Output tokens per joule Δ",
                     "Energy per million output tokens Δ"};
        tb.numeric = {false, false, true, true, true, true};
        for (const auto& [cl, cmp] : of_arm(bd_, arm)) {
          tb.rows.push_back({cell_text(cl->model), cell_text(cl->name, cl->level),
                             delta_cell(*cl, *cmp, "joules_per_output_token"),
                             delta_cell(*cl, *cmp, "idle_subtracted_joules_per_output_token"),
                             delta_cell(*cl, *cmp, "output_tokens_per_j"),
                             delta_cell(*cl, *cmp, "joules_per_mtok_output")});
        }
        if (tb.rows.empty()) continue;
        doc_.sections.back().blocks.push_back(
            paragraph({b(arm), t(" vs " + bd_.baseline + " (positive: " + arm +
                                 " spends less "
                                 "energy per token):")}));
        doc_.sections.back().blocks.push_back(table_block(std::move(tb)));
      }
    }
  }

  void repetitions() {
    Table tb;
    tb.header = {"Model", "Cell", "Arm", "Selection", "Selected run", "Repetitions"};
    tb.numeric = {false, false, false, false, false, false};
    for (const auto& cl : bd_.cells) {
      for (const auto& a : cl.arms) {
        if (a.runs.size() < 2) continue;
        const std::string metric_name = a.selection.substr(a.selection.rfind(' ') + 1);
        std::vector<std::string> reps;
        for (const auto& r : a.runs) {
          reps.push_back(r->run_id + " " + number(compare::selection_metric(*r, metric_name), 2));
        }
        tb.rows.push_back({cell_text(cl.model), cell_text(cl.name, cl.level), cell_text(a.arm),
                           cell_text(a.selection), TableCell{{c(a.run().run_id)}, std::nullopt},
                           cell_text(join(reps, "; "))});
      }
    }
    if (tb.rows.empty()) return;
    Section& s = section("Repetitions");
    s.blocks.push_back(paragraph(
        {t("Cells run more than once show the repetition the records' declared rule selects "
           "(the median by the named figure, not the best); every repetition's figures are in "
           "board.json. With at least " +
           std::to_string(bd_.bootstrap.min_repetitions) +
           " repetitions per arm, intervals are over repetitions.")}));
    s.blocks.push_back(table_block(std::move(tb)));
  }

  // ---- methodology (board_methodology.cpp) ----------------------------------------------

  void methodology() { doc_.sections.push_back(methodology_section(bd_)); }

  // ---- findings, unpaired, files --------------------------------------------------------

  void findings() {
    Section& s = section("Findings");
    if (bd_.findings.empty()) {
      s.blocks.push_back(paragraph({t("None.")}));
      return;
    }
    std::vector<Inline> items;
    const std::size_t limit = kind_ == DocumentKind::kConsole ? 20 : bd_.findings.size();
    for (std::size_t i = 0; i < bd_.findings.size() && i < limit; ++i) {
      const auto& f = bd_.findings[i];
      Inline item{c(f.type)};
      std::string where;
      if (!f.cell.empty()) where += f.cell;
      if (!f.arm.empty()) where += (where.empty() ? "" : ", ") + std::string("arm ") + f.arm;
      if (!where.empty()) item.push_back(t(" (" + where + ")"));
      item.push_back(t(": " + f.message));
      items.push_back(std::move(item));
    }
    s.blocks.push_back(bullets(std::move(items), true));
    if (bd_.findings.size() > limit) {
      s.blocks.push_back(paragraph({t(std::to_string(bd_.findings.size() - limit) +
                                      " more in the board (dyno report, or --json).")}));
    }
  }

  void unpaired() {
    if (bd_.unpaired.empty()) return;
    Section& s = section("Unpaired runs");
    s.blocks.push_back(paragraph({t("Runs selected for an arm that are part of no comparison:")}));
    Table tb;
    tb.header = {"Arm", "Run", "Cell", "Reason"};
    tb.numeric = {false, false, false, false};
    for (const auto& u : bd_.unpaired) {
      tb.rows.push_back({cell_text(u.arm), TableCell{{c(u.run_id)}, std::nullopt},
                         cell_text(u.cell), cell_text(u.reason)});
    }
    s.blocks.push_back(table_block(std::move(tb)));
  }

  void replaced() {
    if (bd_.replaced.empty()) return;
    Section& s = section("Replaced runs");
    s.blocks.push_back(paragraph(
        {t("Runs selected for an arm that a board spec cell puts another run in place of:")}));
    Table tb;
    tb.header = {"Arm", "Run", "Replaced by", "Cell", "How"};
    tb.numeric = {false, false, false, false, false};
    for (const auto& x : bd_.replaced) {
      tb.rows.push_back({cell_text(x.arm), TableCell{{c(x.run_id)}, std::nullopt},
                         TableCell{{c(x.replaced_by)}, std::nullopt}, cell_text(x.cell),
                         cell_text(x.how == "derived" ? "a derived record of it (dyno rescore)"
                                                      : "a rerun of its cell")});
    }
    s.blocks.push_back(table_block(std::move(tb)));
  }

  void files() {
    Section& s = section("Files");
    std::vector<Inline> items{
        {c("README.md"), t(": this report.")},
        {c("report.html"), t(": the same report in one self-contained file, sortable tables.")},
        {c("board.json"), t(": the ledger: provenance, every cell with both arms' figures and "
                            "repetitions, checks with both values, deltas with intervals, "
                            "findings.")},
        {c("board.csv"), t(": one row per comparison, cell and figure, for spreadsheets.")}};
    for (const auto& f : figures_) {
      items.push_back({c(f.stem + ".svg"), t(", "), c(f.stem + ".png"), t(": " + f.title + ".")});
    }
    items.push_back({c("SHA256SUMS"), t(": SHA-256 of every file above.")});
    s.blocks.push_back(bullets(std::move(items)));
  }

  const Board& bd_;
  const std::vector<Figure>& figures_;
  DocumentKind kind_;
  Document doc_;
};

}  // namespace

Document board_document(const Board& board, const std::vector<Figure>& figures, DocumentKind kind) {
  return Builder(board, figures, kind).build();
}

}  // namespace dyno::report
