#include "report/board_files.h"

#include <boost/json.hpp>
#include <cmath>

#include "compare/frontier.h"
#include "digest/digest.h"
#include "json/json_text.h"
#include "record/run_writer.h"
#include "record/signature.h"
#include "report/board_document.h"
#include "workload/csv.h"

namespace dyno::report {

namespace json = boost::json;
using namespace compare;

namespace {

json::value num(std::optional<double> v) {
  return v && std::isfinite(*v) ? json::value(*v) : json::value(nullptr);
}

json::value count(std::optional<std::uint64_t> v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object figures_json(const Figures& f, bool engine_figures) {
  json::object o;
  for (const auto& m : metric_catalog()) {
    if (!shown(m, engine_figures)) continue;
    const auto it = f.find(m.key);
    o[m.key] = num(it == f.end() ? std::nullopt : it->second);
  }
  return o;
}

json::object delta_json(const Delta& d) {
  return json::object{
      {"value", num(d.value)},
      {"low", num(d.low)},
      {"high", num(d.high)},
      {"verdict", to_string(d.verdict)},
      {"method", d.method.empty() ? json::value(nullptr) : json::value(d.method)},
      {"no_interval", d.no_interval.empty() ? json::value(nullptr) : json::value(d.no_interval)},
      {"summary_only", d.summary_only},
      {"n_arm", d.n_arm},
      {"n_baseline", d.n_baseline}};
}

json::object quality_json(const QualityAudit& q) {
  json::array reasons;
  for (const auto& r : q.reasons) reasons.push_back(json::value(r));
  json::array dis;
  for (const auto& d : q.disagreements) {
    dis.push_back(json::object{{"request_id", d.request_id},
                               {"arm_correct", d.arm_correct},
                               {"baseline_correct", d.baseline_correct},
                               {"arm_extracted", d.arm_extracted},
                               {"baseline_extracted", d.baseline_extracted}});
  }
  return json::object{
      {"accuracy_arm", num(q.accuracy_arm)},
      {"accuracy_baseline", num(q.accuracy_baseline)},
      {"scored_arm", count(q.scored_arm)},
      {"scored_baseline", count(q.scored_baseline)},
      {"correct_arm", count(q.correct_arm)},
      {"correct_baseline", count(q.correct_baseline)},
      {"accuracy_delta_pp", num(q.accuracy_delta_pp)},
      {"output_mean_arm", num(q.output_mean_arm)},
      {"output_mean_baseline", num(q.output_mean_baseline)},
      {"output_mean_gap_pct", num(q.output_mean_gap_pct)},
      {"accuracy_comparable", q.accuracy_comparable},
      {"accuracy_not_comparable_reason",
       q.accuracy_comparable ? json::value(nullptr) : json::value(q.accuracy_reason)},
      {"warning", q.warning},
      {"reasons", std::move(reasons)},
      {"disagreements", std::move(dis)}};
}

json::object run_ref(const RunRecord& r) {
  const auto or_null = [](const std::optional<std::string>& v) {
    return v ? json::value(*v) : json::value(nullptr);
  };
  return json::object{
      {"run_id", r.run_id},
      {"status", r.manifest.status},
      {"campaign", or_null(r.manifest.campaign)},
      {"repetition",
       [&r] {
         const std::optional<std::uint64_t>& v = r.manifest.workload.protocol.repetition;
         return v ? json::value(*v) : json::value(nullptr);
       }()},
      {"sha256sums_sha256",
       r.sums_sha256.empty() ? json::value(nullptr) : json::value(r.sums_sha256)},
      {"intact", r.integrity_problems.empty()},
      {"signed_by", record::record_signer(r.dir)},  // a key fingerprint, "unsigned", "invalid"
      {"source", [&]() -> json::value {             // an imported run: which tool's file
         if (!r.imported()) return nullptr;
         const record::ImportSource& s = *r.manifest.source;
         return json::object{{"tool", s.tool},          {"tool_version", or_null(s.tool_version)},
                             {"format", s.format},      {"file", s.file},
                             {"part", or_null(s.part)}, {"timing", s.timing}};
       }()}};
}

/// The accuracy "delta" of a pair whose accuracy the board spec marks not comparable.
json::object not_comparable_json(const std::string& reason) {
  return json::object{{"value", nullptr},      {"low", nullptr},
                      {"high", nullptr},       {"verdict", "not_comparable"},
                      {"method", nullptr},     {"no_interval", nullptr},
                      {"summary_only", false}, {"n_arm", 0},
                      {"n_baseline", 0},       {"reason", reason}};
}

/// Where an arm's selected run stands on the frontier (compare/frontier.h), and, on a board
/// with a price, its cost per million tokens.
json::object point_json(const OperatingPoint& p, bool priced) {
  json::object o{
      {"gpus", p.gpus},
      {"gpus_in_record", p.gpus_in_record},
      {"output_tokens_per_s_per_gpu", num(p.output_tok_s_per_gpu)},
      {"decode_rate_per_user_p50", num(p.per_user_tok_s)},
      {"on_frontier", p.on_frontier ? json::value(*p.on_frontier) : json::value(nullptr)}};
  if (priced) {
    o["gpu_hour_cost"] = num(p.gpu_hour_cost);
    o["usd_per_mtok_output"] = num(p.usd_per_mtok_output);
    o["usd_per_mtok_total"] = num(p.usd_per_mtok_total);
  }
  return o;
}

json::object cell_json(const Cell& c, bool engine_figures, bool priced) {
  json::array arms;
  for (const auto& a : c.arms) {
    json::array reps;
    for (std::size_t i = 0; i < a.runs.size(); ++i) {
      json::object r = run_ref(*a.runs[i]);
      r["selected"] = i == a.selected;
      r["figures"] = figures_json(a.figures[i], engine_figures);
      reps.push_back(std::move(r));
    }
    arms.push_back(json::object{
        {"arm", a.arm},
        {"selected_run", a.run().run_id},
        {"selection", a.selection.empty() ? json::value(nullptr) : json::value(a.selection)},
        {"figures", figures_json(a.selected_figures(), engine_figures)},
        {"operating_point", point_json(a.point, priced)},
        {"repetitions", std::move(reps)}});
  }
  json::array comparisons;
  for (const auto& cmp : c.comparisons) {
    json::array checks;
    for (const auto& ch : cmp.checks) {
      checks.push_back(
          json::object{{"name", ch.name},
                       {"level", to_string(ch.level)},
                       {"outcome", to_string(ch.outcome)},
                       {"arm_value", ch.arm_value},
                       {"baseline_value", ch.baseline_value},
                       {"note", ch.note.empty() ? json::value(nullptr) : json::value(ch.note)}});
    }
    json::object deltas;
    for (const auto& m : metric_catalog()) {
      const auto it = cmp.deltas.find(m.key);
      if (it != cmp.deltas.end()) deltas[m.key] = delta_json(it->second);
      if (m.key == "accuracy" && cmp.status == ComparisonStatus::kCompared &&
          !cmp.quality.accuracy_comparable) {
        deltas[m.key] = not_comparable_json(cmp.quality.accuracy_reason);
      }
    }
    comparisons.push_back(json::object{{"arm", cmp.arm},
                                       {"baseline", cmp.baseline},
                                       {"status", to_string(cmp.status)},
                                       {"unresolved", cmp.unresolved},
                                       {"checks", std::move(checks)},
                                       {"deltas", std::move(deltas)},
                                       {"quality", quality_json(cmp.quality)}});
  }
  json::array judged_by;
  for (const auto& k : compare::own_figures(c.level_kind, c.prefill_figure))
    judged_by.push_back(json::value(k));
  return json::object{
      {"id", c.id},
      {"model", c.model},
      {"protocol", c.protocol},
      {"cell", c.name},
      {"level_kind", c.level_kind.empty() ? json::value(nullptr) : json::value(c.level_kind)},
      {"level", num(c.level)},
      {"prefill_figure", c.prefill_figure},
      {"judged_by", std::move(judged_by)},
      {"arms", std::move(arms)},
      {"comparisons", std::move(comparisons)}};
}

json::object definitions_json(const Board& b) {
  json::array metrics;
  for (const auto& m : metric_catalog()) {
    if (!shown(m, b.engine_figures)) continue;
    metrics.push_back(json::object{
        {"key", m.key},
        {"label", m.label},
        {"unit", m.unit},
        {"direction", to_string(m.direction)},
        {"delta", m.direction == Direction::kNone
                      ? json::value(nullptr)
                      : json::value(m.delta_kind == DeltaKind::kPoints ? "points" : "percent")},
        {"section", to_string(m.section)},
        {"headline", m.headline},
        {"source", m.source},
        {"engine_source",
         m.engine_source.empty() ? json::value(nullptr) : json::value(m.engine_source)}});
  }
  json::array checks;
  for (const auto& c : check_catalog()) {
    checks.push_back(json::object{{"name", c.name},
                                  {"label", c.label},
                                  {"level", to_string(b.policy.level(c.name))},
                                  {"compares", c.what}});
  }
  return json::object{
      {"figures", "dyno-metrics/v1 (docs/metrics.md)"},
      {"delta",
       "signed, positive = the arm is better than the baseline: rates (arm / baseline - 1) * "
       "100, latencies and energy per token (baseline / arm - 1) * 100, accuracy (arm - "
       "baseline) * 100 points"},
      {"interval", json::object{{"method", "percentile bootstrap"},
                                {"confidence", b.bootstrap.confidence},
                                {"resamples", b.bootstrap.resamples},
                                {"seed", b.bootstrap.seed},
                                {"min_requests", b.bootstrap.min_requests},
                                {"min_repetitions", b.bootstrap.min_repetitions}}},
      {"verdict",
       "win when the interval's low end is above 0, loss when its high end is below 0, else "
       "tie; no_interval when there is none"},
      {"quality_thresholds", json::object{{"accuracy_pp", b.quality.accuracy_pp},
                                          {"output_gap_pct", b.quality.output_gap_pct}}},
      {"metrics", std::move(metrics)},
      {"frontier",
       "per model, over every arm's selected run in every load cell (ladder cells are one "
       "request, no operating point): x decode_rate_per_user_p50, y output_tokens_per_s_per_gpu "
       "= output_tokens_per_s / gpus (the record's hardware.gpus, 1 on a host without GPUs); a "
       "point is on the frontier when no other point is at least as high in both and higher in "
       "one (equal points are both on it)"},
      {"cost", b.gpu_hour_cost.empty()
                   ? json::value(nullptr)
                   : json::value("usd_per_mtok_output = gpu_hour_cost * gpus / 3600 / "
                                 "output_tokens_per_s * 1e6; usd_per_mtok_total the same over "
                                 "input_tokens_per_s + output_tokens_per_s; lower is better")},
      {"checks", std::move(checks)}};
}

json::value expectations_json(const Board& b) {
  const Expectations& e = b.expect;
  if (!e.any()) return nullptr;
  json::object pinned;
  json::object commits;
  for (const auto& [arm, list] : e.engine_commits) {
    json::array a;
    for (const auto& c : list) a.push_back(json::value(c));
    commits[arm] = std::move(a);
  }
  pinned["engine_commits"] = std::move(commits);
  pinned["requests"] = e.requests ? json::value(*e.requests) : json::value(nullptr);
  json::object cell_requests;
  for (const auto& [cell, n] : e.cell_requests) cell_requests[cell] = n;
  pinned["cell_requests"] = std::move(cell_requests);
  json::object per_arm;
  for (const auto& [arm, n] : e.cells_per_arm) per_arm[arm] = n;
  pinned["cells_per_arm"] = std::move(per_arm);
  json::object per_commit;
  for (const auto& [arm, by_commit] : e.cells_per_engine_commit) {
    json::object o;
    for (const auto& [commit, n] : by_commit) o[commit] = n;
    per_commit[arm] = std::move(o);
  }
  pinned["cells_per_engine_commit"] = std::move(per_commit);
  pinned["spec_sha256"] = e.spec_sha256.empty() ? json::value(nullptr) : json::value(e.spec_sha256);
  json::array results;
  std::size_t failed = 0;
  for (const auto& r : b.expectations) {
    if (!r.pass) ++failed;
    results.push_back(
        json::object{{"kind", r.kind},
                     {"arm", r.arm.empty() ? json::value(nullptr) : json::value(r.arm)},
                     {"cell", r.cell.empty() ? json::value(nullptr) : json::value(r.cell)},
                     {"run_id", r.run_id.empty() ? json::value(nullptr) : json::value(r.run_id)},
                     {"expected", r.expected},
                     {"found", r.found},
                     {"outcome", r.pass ? "pass" : "fail"}});
  }
  return json::object{{"policy", to_string(e.policy)},
                      {"pinned", std::move(pinned)},
                      {"outcome", failed == 0 ? "pass" : "fail"},
                      {"checked", b.expectations.size()},
                      {"failed", failed},
                      {"results", std::move(results)}};
}

}  // namespace

std::string board_json(const Board& b, const std::vector<Figure>& figures) {
  std::size_t compared = 0, failed = 0;
  for (const auto& [cell, cmp] : b.comparisons()) {
    (cmp->status == ComparisonStatus::kCompared ? compared : failed) += 1;
  }
  json::array unresolved;
  for (const auto& u : b.unresolved_checks) unresolved.push_back(json::value(u));
  json::array arms;
  for (const auto& a : b.arms) {
    json::array sels;
    const auto it = b.selectors.find(a);
    if (it != b.selectors.end()) {
      for (const auto& s : it->second) sels.push_back(json::value(s));
    }
    json::object arm{{"name", a}, {"baseline", a == b.baseline}, {"selectors", sels}};
    if (!b.gpu_hour_cost.empty()) {  // a board with a price says each arm's
      const auto price = b.gpu_hour_cost.find(a);
      arm["gpu_hour_cost"] =
          price == b.gpu_hour_cost.end() ? json::value(nullptr) : json::value(price->second);
    }
    arms.push_back(std::move(arm));
  }
  json::array runs;
  for (const auto& r : b.runs()) runs.push_back(run_ref(*r));
  json::array tallies;
  for (const auto& t : b.tallies) {
    tallies.push_back(json::object{{"arm", t.arm},
                                   {"metric", t.metric},
                                   {"basis", t.basis},
                                   {"compared", t.compared},
                                   {"wins", t.wins},
                                   {"ties", t.ties},
                                   {"losses", t.losses},
                                   {"no_interval", t.no_interval},
                                   {"point_wins", t.point_wins},
                                   {"point_ties", t.point_ties},
                                   {"point_losses", t.point_losses},
                                   {"delta_min", num(t.delta_min)},
                                   {"delta_max", num(t.delta_max)},
                                   {"delta_median", num(t.delta_median)}});
  }
  json::array check_tallies;
  for (const auto& c : b.check_tallies) {
    check_tallies.push_back(json::object{{"check", c.check},
                                         {"level", to_string(b.policy.level(c.check))},
                                         {"pass", c.pass},
                                         {"fail", c.fail},
                                         {"unresolved", c.unresolved},
                                         {"pairs", c.pairs}});
  }
  json::array cells;
  for (const auto& c : b.cells) {
    cells.push_back(cell_json(c, b.engine_figures, !b.gpu_hour_cost.empty()));
  }
  std::size_t unexpected = 0;
  for (const auto& r : b.expectations) unexpected += r.pass ? 0 : 1;
  json::array unpaired;
  for (const auto& u : b.unpaired) {
    unpaired.push_back(
        json::object{{"arm", u.arm},
                     {"run_id", u.run_id},
                     {"cell", u.cell.empty() ? json::value(nullptr) : json::value(u.cell)},
                     {"reason", u.reason}});
  }
  json::array replaced;
  for (const auto& x : b.replaced) {
    replaced.push_back(json::object{{"arm", x.arm},
                                    {"run_id", x.run_id},
                                    {"cell", x.cell},
                                    {"replaced_by", x.replaced_by},
                                    {"how", x.how}});
  }
  json::array findings;
  for (const auto& f : b.findings) {
    findings.push_back(
        json::object{{"type", f.type},
                     {"cell", f.cell.empty() ? json::value(nullptr) : json::value(f.cell)},
                     {"arm", f.arm.empty() ? json::value(nullptr) : json::value(f.arm)},
                     {"message", f.message},
                     {"data", f.data}});
  }
  json::array figs;
  for (const auto& f : figures) {
    figs.push_back(json::object{{"stem", f.stem},
                                {"title", f.title},
                                {"section", to_string(f.section)},
                                {"svg_sha256", digest::sha256_hex(f.svg)},
                                {"png_sha256", digest::sha256_hex(f.png)}});
  }
  json::object doc{
      {"schema_version", b.schema_version},
      {"kind", "dyno-board"},
      {"title", b.title},
      {"status", b.status},
      {"status_detail", json::object{{"cells", b.cells.size()},
                                     {"comparisons_made", compared},
                                     {"comparisons_failed_checks", failed},
                                     {"unpaired_runs", b.unpaired.size()},
                                     {"unresolved_checks", std::move(unresolved)},
                                     {"allow_unresolved", b.allow_unresolved},
                                     {"expectations_failed", unexpected}}},
      {"baseline", b.baseline},
      {"arms", std::move(arms)},
      {"provenance",
       json::object{
           {"generator",
            json::object{{"name", b.generator.name},
                         {"version", b.generator.version},
                         {"git_commit", b.generator.git_commit},
                         {"executable_sha256", b.generator.executable_sha256.empty()
                                                   ? json::value(nullptr)
                                                   : json::value(b.generator.executable_sha256)}}},
           {"spec_file_sha256",
            b.spec_file_sha256.empty() ? json::value(nullptr) : json::value(b.spec_file_sha256)},
           {"runs", std::move(runs)},
           {"figures", std::move(figs)}}},
      {"expectations", expectations_json(b)},
      {"definitions", definitions_json(b)},
      {"tallies", std::move(tallies)},
      {"check_tallies", std::move(check_tallies)},
      {"cells", std::move(cells)},
      {"unpaired", std::move(unpaired)},
      {"replaced", std::move(replaced)},
      {"findings", std::move(findings)}};
  return json_text::pretty(doc);
}

std::string board_csv(const Board& b) {
  using workload::CsvCell;
  const auto text = [](const std::string& t) { return CsvCell::text(t); };
  std::string out;
  std::vector<CsvCell> header;
  for (const char* name :
       {"arm",        "baseline",        "cell",   "model",      "protocol", "cell_name",
        "level_kind", "level",           "status", "metric",     "unit",     "direction",
        "arm_value",  "baseline_value",  "delta",  "delta_unit", "low",      "high",
        "verdict",    "interval_method", "n_arm",  "n_baseline", "note"}) {
    header.push_back(CsvCell::text(name));
  }
  out += workload::csv_row(header);
  for (const auto& [cell, cmp] : b.comparisons()) {
    const ArmCell* a = cell->arm(cmp->arm);
    const ArmCell* base = cell->arm(cmp->baseline);
    // A row: the comparison and cell's columns, then the figure's.
    const auto row = [&](std::initializer_list<CsvCell> figure) {
      std::vector<CsvCell> cells{
          text(cmp->arm),         text(cmp->baseline),          text(cell->id),
          text(cell->model),      text(cell->protocol),         text(cell->name),
          text(cell->level_kind), CsvCell::number(cell->level), text(to_string(cmp->status))};
      cells.insert(cells.end(), figure);
      return workload::csv_row(cells);
    };
    for (const auto& m : metric_catalog()) {
      if (!shown(m, b.engine_figures)) continue;
      const auto va = a->selected_figures().at(m.key);
      const auto vb = base->selected_figures().at(m.key);
      const auto it = cmp->deltas.find(m.key);
      const Delta* d = it == cmp->deltas.end() ? nullptr : &it->second;
      const bool not_comparable = m.key == "accuracy" &&
                                  cmp->status == ComparisonStatus::kCompared &&
                                  !cmp->quality.accuracy_comparable;
      const auto count = [&](std::size_t n) {
        return d ? CsvCell::integer(static_cast<std::uint64_t>(n)) : CsvCell();
      };
      out += row({text(m.key), text(m.unit), text(to_string(m.direction)), CsvCell::number(va),
                  CsvCell::number(vb), d ? CsvCell::number(d->value) : CsvCell(),
                  text(m.direction == Direction::kNone      ? ""
                       : m.delta_kind == DeltaKind::kPoints ? "pp"
                                                            : "%"),
                  d ? CsvCell::number(d->low) : CsvCell(), d ? CsvCell::number(d->high) : CsvCell(),
                  text(not_comparable ? "not_comparable"
                       : d            ? to_string(d->verdict)
                                      : ""),
                  text(d ? d->method : ""), count(d ? d->n_arm : 0), count(d ? d->n_baseline : 0),
                  text(not_comparable ? "not comparable: " + cmp->quality.accuracy_reason
                       : d            ? d->no_interval
                                      : "")});
    }
    // The operating point and its cost (section Frontier and cost): shown, not compared.
    if (!on_frontier_chart(cell->level_kind)) continue;
    struct PointRow {
      const char* key;
      const char* unit;
      Direction direction;
      std::optional<double> OperatingPoint::*value;
    };
    std::vector<PointRow> point_rows{{"output_tokens_per_s_per_gpu", "tok/s", Direction::kHigher,
                                      &OperatingPoint::output_tok_s_per_gpu}};
    if (!b.gpu_hour_cost.empty()) {
      point_rows.push_back({"usd_per_mtok_output", "USD/Mtok", Direction::kLower,
                            &OperatingPoint::usd_per_mtok_output});
      point_rows.push_back({"usd_per_mtok_total", "USD/Mtok", Direction::kLower,
                            &OperatingPoint::usd_per_mtok_total});
    }
    for (const PointRow& r : point_rows) {
      out += row({text(r.key), text(r.unit), text(to_string(r.direction)),
                  CsvCell::number(a->point.*(r.value)), CsvCell::number(base->point.*(r.value)),
                  CsvCell(), text(""), CsvCell(), CsvCell(), text(""), text(""), CsvCell(),
                  CsvCell(), text("shown, not compared")});
    }
  }
  return out;
}

std::vector<std::string> write_board(const std::filesystem::path& dir, const Board& board,
                                     const std::vector<Figure>& figures) {
  validate_figures(figures);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw record::RecordError(dir.string() +
                              ": cannot create the board directory: " + ec.message());
  const Document doc = board_document(board, figures, DocumentKind::kFull);
  std::vector<std::pair<std::string, std::string>> files{{"README.md", to_markdown(doc, figures)},
                                                         {"report.html", to_html(doc, figures)},
                                                         {"board.json", board_json(board, figures)},
                                                         {"board.csv", board_csv(board)}};
  for (const auto& f : figures) {
    files.emplace_back(f.stem + ".svg", f.svg);
    files.emplace_back(f.stem + ".png", f.png);
  }
  std::string sums;
  std::vector<std::string> names;
  for (const auto& [name, bytes] : files) {
    record::write_file_atomic(dir / name, bytes);
    sums += digest::sha256_hex(bytes) + "  " + name + "\n";
    names.push_back(name);
  }
  record::write_file_atomic(dir / "SHA256SUMS", sums);
  names.push_back("SHA256SUMS");
  return names;
}

}  // namespace dyno::report
