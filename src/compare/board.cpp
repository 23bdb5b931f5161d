// Building a board, one piece though long: one Builder walks the cells in order — pairing,
// selection, the run's own findings, the pair checks, the deltas, the audit and the status —
// and each step reads what the one before left on the cell; the figures themselves
// (figures.cpp), deltas (delta.cpp), checks (fairness.cpp) and tallies (tallies.cpp) are their
// own files.
#include "compare/board.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "compare/cell_keys.h"
#include "compare/delta.h"
#include "compare/frontier.h"
#include "compare/tallies.h"
#include "metrics/stats.h"

namespace dyno::compare {

namespace json = boost::json;

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kWin:
      return "win";
    case Verdict::kTie:
      return "tie";
    case Verdict::kLoss:
      return "loss";
    case Verdict::kNoInterval:
      return "no_interval";
    case Verdict::kNotApplicable:
      return "n/a";
  }
  return "n/a";
}

const char* to_string(ComparisonStatus s) {
  return s == ComparisonStatus::kCompared ? "compared" : "failed_checks";
}

const Check* Comparison::check(const std::string& name) const {
  for (const auto& c : checks) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool Cell::judged_by(const std::string& metric) const {
  const auto own = own_figures(level_kind, prefill_figure);
  return std::find(own.begin(), own.end(), metric) != own.end();
}

const ArmCell* Cell::arm(const std::string& arm_name) const {
  for (const auto& a : arms) {
    if (a.arm == arm_name) return &a;
  }
  return nullptr;
}

std::vector<std::pair<const Cell*, const Comparison*>> Board::comparisons() const {
  std::vector<std::pair<const Cell*, const Comparison*>> out;
  for (const auto& c : cells) {
    for (const auto& cmp : c.comparisons) out.emplace_back(&c, &cmp);
  }
  return out;
}

std::vector<RunPtr> Board::runs() const {
  std::map<std::string, RunPtr> by_id;
  for (const auto& c : cells) {
    for (const auto& a : c.arms) {
      for (const auto& r : a.runs) by_id.emplace(r->run_id, r);
    }
  }
  std::vector<RunPtr> out;
  for (auto& kv : by_id) out.push_back(kv.second);
  return out;
}

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

class Builder {
 public:
  Builder(const BoardInput& in, const BoardOptions& o) : in_(in), o_(o) {}

  Board build() {
    validate_arms();
    b_.title = in_.title.empty() ? default_title() : in_.title;
    b_.policy = o_.policy;
    b_.quality = o_.quality;
    b_.bootstrap = o_.bootstrap;
    b_.allow_unresolved = o_.allow_unresolved;
    b_.generator = o_.generator;
    b_.spec_file_sha256 = o_.spec_file_sha256;
    b_.expect = o_.expect;
    explicit_cells();
    auto_cells();
    sort_cells();
    validate_accuracy_marks();
    for (const auto& run : b_.runs())
      b_.engine_figures = b_.engine_figures || has_engine_figure(*run);
    for (const auto& a : in_.arms) {
      if (a.gpu_hour_cost) b_.gpu_hour_cost[a.name] = *a.gpu_hour_cost;
    }
    for (Cell& c : b_.cells) finish_cell(c);
    mark_frontier(b_.cells);
    expectations();
    if (!unresolved_.empty() && !o_.allow_unresolved) throw UnresolvedError(unresolved_message());
    board_findings();
    tallies();
    status();
    return std::move(b_);
  }

 private:
  void validate_arms() {
    for (const auto& a : in_.arms) {
      if (a.gpu_hour_cost && (!std::isfinite(*a.gpu_hour_cost) || *a.gpu_hour_cost < 0)) {
        throw CompareError("arm '" + a.name + "': gpu_hour_cost must be a finite number >= 0");
      }
    }
    if (in_.arms.size() < 2) {
      throw CompareError("a board needs at least two arms (--arm NAME=SELECTOR, twice or more)");
    }
    std::set<std::string> names;
    for (const auto& a : in_.arms) {
      if (a.name.empty()) throw CompareError("an arm needs a name (--arm NAME=SELECTOR)");
      if (!names.insert(a.name).second) {
        throw CompareError("arm '" + a.name + "' is declared twice; give each arm one name");
      }
      b_.arms.push_back(a.name);
      b_.selectors[a.name] = a.selectors;
    }
    b_.baseline = in_.baseline.empty() ? in_.arms.back().name : in_.baseline;
    if (names.count(b_.baseline) == 0) {
      throw CompareError("the baseline '" + b_.baseline +
                         "' is not an arm (arms: " + join(b_.arms, ", ") + ")");
    }
  }

  std::string default_title() const {
    std::vector<std::string> others;
    for (const auto& a : b_.arms) {
      if (a != b_.baseline) others.push_back(a);
    }
    std::string lead;
    for (std::size_t i = 0; i < others.size(); ++i) {
      if (i > 0) lead += i + 1 == others.size() ? " and " : ", ";
      lead += others[i];
    }
    return lead + " vs " + b_.baseline;
  }

  /// A run a board can use: it finished and has its figures.
  bool usable(const std::string& arm, const RunPtr& r) {
    std::string reason;
    const std::string& status = r->manifest.status;
    if (!r->has_summary()) {
      reason = "no summary.json (status " + (status.empty() ? "unknown" : status) + ")";
    } else if (status == "running") {
      reason = "the run has not finished (status running)";
    }
    if (reason.empty()) return true;
    b_.unpaired.push_back({arm, r->run_id, "", reason});
    return false;
  }

  /// Orders a cell's runs of one arm by repetition; several runs must be repetitions of one
  /// campaign cell.
  std::vector<RunPtr> repetitions(const std::string& arm, const std::string& cell,
                                  std::vector<RunPtr> runs) {
    if (runs.size() > 1) {
      std::set<std::string> campaigns;
      std::set<std::int64_t> reps;
      for (const auto& r : runs) {
        campaigns.insert(r->manifest.campaign.value_or("(none)"));
        reps.insert(repetition_of(*r));
      }
      if (campaigns.size() > 1 || campaigns.count("(none)") != 0 || reps.size() != runs.size()) {
        std::vector<std::string> ids;
        for (const auto& r : runs) ids.push_back(r->run_id);
        throw CompareError("arm '" + arm + "' has " + std::to_string(runs.size()) +
                           " runs of cell " + cell + " that are not repetitions of one campaign (" +
                           join(ids, ", ") +
                           "); narrow its selector (e.g. campaign=ID) or map the cell in a "
                           "board spec file");
      }
    }
    std::stable_sort(runs.begin(), runs.end(), [](const RunPtr& x, const RunPtr& y) {
      return repetition_of(*x) < repetition_of(*y);
    });
    return runs;
  }

  void explicit_cells() {
    for (const auto& ec : in_.cells) {
      Cell c;
      c.name = ec.name;
      c.id = ec.name;
      for (const auto& arm : b_.arms) {
        const auto it = ec.runs.find(arm);
        if (it == ec.runs.end()) continue;
        std::vector<RunPtr> runs;
        for (const auto& r : it->second) {
          explicit_ids_.insert(r->run_id);
          if (usable(arm, r)) runs.push_back(r);
        }
        if (runs.empty()) continue;
        ArmCell ac;
        ac.arm = arm;
        ac.runs = repetitions(arm, c.id, std::move(runs));
        c.arms.push_back(std::move(ac));
      }
      if (c.arms.empty())
        throw CompareError("board spec: cell '" + ec.name + "' has no usable run");
      const RunRecord& first = c.arms.front().run();
      c.model = ec.model.empty() ? model_of(first, in_.model_aliases) : ec.model;
      c.protocol = protocol_of(first);
      level_of(first, c.level_kind, c.level);
      place(std::move(c), true);
    }
  }

  void auto_cells() {
    std::map<CellKey, std::map<std::string, std::vector<RunPtr>>> groups;
    std::set<std::string> taken;
    for (const auto& arm : in_.arms) {
      for (const auto& r : arm.runs) {
        if (explicit_ids_.count(r->run_id) != 0) continue;
        if (!usable(arm.name, r)) continue;
        groups[{model_of(*r, in_.model_aliases), protocol_of(*r), cell_of(*r)}][arm.name].push_back(
            r);
      }
    }
    for (auto& [key, by_arm] : groups) {
      Cell c;
      c.model = key.model;
      c.protocol = key.protocol;
      c.name = key.cell;
      c.id = key.model + "/" + key.protocol + "/" + key.cell;
      for (const auto& arm : b_.arms) {
        const auto it = by_arm.find(arm);
        if (it == by_arm.end()) continue;
        ArmCell ac;
        ac.arm = arm;
        ac.runs = repetitions(arm, c.id, it->second);
        c.arms.push_back(std::move(ac));
      }
      level_of(c.arms.front().run(), c.level_kind, c.level);
      place(std::move(c), false);
    }
  }

  /// Keeps a cell when the baseline and another arm have runs in it; else lists its runs.
  void place(Cell c, bool is_explicit) {
    const bool has_base = c.arm(b_.baseline) != nullptr;
    const bool has_other = c.arms.size() > (has_base ? 1u : 0u);
    if (has_base && has_other) {
      (is_explicit ? explicit_ : auto_).push_back(std::move(c));
      return;
    }
    const std::string reason = !has_base
                                   ? "the baseline (" + b_.baseline + ") has no run in this cell"
                                   : "no other arm has a run in this cell";
    for (const auto& a : c.arms) {
      for (const auto& r : a.runs) {
        if (!is_explicit && replaced(a.arm, *r)) continue;
        b_.unpaired.push_back({a.arm, r->run_id, c.id, reason});
      }
    }
  }

  /// Whether a spec cell put another run of `arm` in the place of `r`, which is then listed as
  /// replaced by it (not unpaired): a derived record of it (dyno rescore: derived_from), else a
  /// run of the same arm in r's model, protocol and cell (a rerun of that cell).
  bool replaced(const std::string& arm, const RunRecord& r) {
    const CellKey key{model_of(r, in_.model_aliases), protocol_of(r), cell_of(r)};
    std::optional<ReplacedRun> rerun;
    for (const Cell& ec : explicit_) {
      const ArmCell* ac = ec.arm(arm);
      if (ac == nullptr) continue;
      for (const auto& x : ac->runs) {
        const record::Manifest& m = x->manifest;
        if (m.derived_from && m.derived_from->run_id == r.run_id) {
          b_.replaced.push_back({arm, r.run_id, ec.id, x->run_id, "derived"});
          announce(b_.replaced.back());
          return true;
        }
        const CellKey xk{model_of(*x, in_.model_aliases), protocol_of(*x), cell_of(*x)};
        if (!rerun && !(xk < key) && !(key < xk)) {
          rerun = ReplacedRun{arm, r.run_id, ec.id, x->run_id, "rerun"};
        }
      }
    }
    if (!rerun) return false;
    b_.replaced.push_back(*rerun);
    announce(b_.replaced.back());
    return true;
  }

  void announce(const ReplacedRun& x) {
    add(x.cell, x.arm, "run_replaced",
        "run " + x.run_id + " of " + x.arm + " is replaced by " + x.replaced_by +
            (x.how == "derived" ? " (a derived record of it, dyno rescore)"
                                : " (a rerun of its cell)") +
            " by the board spec",
        json::object{{"run_id", x.run_id}, {"replaced_by", x.replaced_by}, {"how", x.how}});
  }

  void sort_cells() {
    std::stable_sort(auto_.begin(), auto_.end(), [](const Cell& x, const Cell& y) {
      if (x.model != y.model) return x.model < y.model;
      if (x.protocol != y.protocol) return x.protocol < y.protocol;
      if (x.level_kind != y.level_kind) return x.level_kind < y.level_kind;
      if (x.level.has_value() != y.level.has_value()) return x.level.has_value();
      if (x.level && *x.level != *y.level) return *x.level < *y.level;
      return x.name < y.name;
    });
    for (auto& c : explicit_) b_.cells.push_back(std::move(c));
    for (auto& c : auto_) b_.cells.push_back(std::move(c));
    std::set<std::string> ids;
    for (const auto& c : b_.cells) {
      if (!ids.insert(c.id).second) {
        throw CompareError("two cells are named '" + c.id + "'; name board spec cells uniquely");
      }
    }
    std::stable_sort(b_.unpaired.begin(), b_.unpaired.end(),
                     [](const UnpairedRun& x, const UnpairedRun& y) {
                       return std::tie(x.arm, x.run_id) < std::tie(y.arm, y.run_id);
                     });
    std::stable_sort(b_.replaced.begin(), b_.replaced.end(),
                     [](const ReplacedRun& x, const ReplacedRun& y) {
                       return std::tie(x.arm, x.run_id) < std::tie(y.arm, y.run_id);
                     });
  }

  void select(Cell& cell, ArmCell& ac) {
    for (const auto& r : ac.runs) {
      Figures f;
      for (const auto& m : metric_catalog()) f[m.key] = read_figure(m, *r);
      ac.figures.push_back(std::move(f));
    }
    if (ac.runs.size() == 1) return;
    const RunRecord& first = *ac.runs.front();
    const std::optional<record::ProtocolSelection>& declared_selection =
        first.manifest.workload.protocol.selection;
    const std::string rule = declared_selection ? declared_selection->rule : "median";
    const std::string metric =
        declared_selection ? declared_selection->metric : "output_tokens_per_s";
    std::vector<std::optional<double>> values;
    for (const auto& r : ac.runs) values.push_back(selection_metric(*r, metric));
    const auto pick = median_repetition(values);
    ac.selected = pick.value_or(0);
    ac.selection = rule + " of " + std::to_string(ac.runs.size()) + " by " + metric;
    if (rule != "median") {
      add(cell.id, ac.arm, "selection_rule",
          "the records declare selection rule '" + rule + "', which this version does not know; " +
              "the median was used",
          json::object{{"rule", rule}});
    }
    // The campaign file names the repetition it selected: it must agree.
    const std::optional<std::string>& campaign = first.manifest.campaign;
    const std::optional<std::string>& cell_name = first.manifest.workload.protocol.cell;
    if (campaign && cell_name) {
      const auto it = in_.campaigns.find(*campaign);
      if (it != in_.campaigns.end()) {
        const json::value* cells = it->second.if_contains("cells");
        if (cells != nullptr && cells->is_array()) {
          for (const auto& cv : cells->get_array()) {
            if (!cv.is_object() || string_at(cv.get_object(), "cell") != cell_name) continue;
            const auto named = string_at(cv.get_object(), "selected_run");
            // A derived record (dyno rescore) stands for the measured run it was made from.
            const record::Manifest& m = ac.run().manifest;
            const std::string measured = m.derived_from ? m.derived_from->run_id : ac.run().run_id;
            if (named && *named != measured) {
              add(cell.id, ac.arm, "selection_mismatch",
                  "campaign " + *campaign + " selected " + *named + " but the declared rule (" +
                      ac.selection + ") picks " + ac.run().run_id,
                  json::object{{"campaign", *campaign},
                               {"campaign_selected", *named},
                               {"recomputed", ac.run().run_id}});
            }
          }
        }
      }
    }
    const std::optional<std::uint64_t>& repetitions = first.manifest.workload.protocol.repetitions;
    const std::optional<double> declared =
        repetitions ? std::optional<double>(static_cast<double>(*repetitions)) : std::nullopt;
    if (declared && static_cast<std::size_t>(*declared) > ac.runs.size()) {
      add(cell.id, ac.arm, "missing_repetitions",
          std::to_string(ac.runs.size()) + " of " + fixed_text(*declared, 0) +
              " declared repetitions are on the board",
          json::object{{"declared", *declared}, {"present", ac.runs.size()}});
    }
  }

  void run_findings(const Cell& cell, const ArmCell& ac) {
    for (const auto& r : ac.runs) {
      if (!r->integrity_problems.empty()) {
        json::array problems;
        for (const auto& p : r->integrity_problems) problems.push_back(json::value(p));
        add(cell.id, ac.arm, "record_integrity",
            "run " + r->run_id + ": " + join(r->integrity_problems, "; "),
            json::object{{"run_id", r->run_id}, {"problems", std::move(problems)}});
      }
    }
    const RunRecord& r = ac.run();
    if (r.imported()) {
      const std::string& timing = r.manifest.source->timing;
      add(cell.id, ac.arm, "imported_run",
          "run " + r.run_id + " is " + r.import_origin() +
              ": measured by another harness (timing " + timing +
              (timing == "summary_only" ? ": the tool's figures only, no interval" : "") + ")",
          json::object{
              {"run_id", r.run_id}, {"tool", r.manifest.source->tool}, {"timing", timing}});
    }
    const std::string& status = r.manifest.status;
    if (status != "ok") {
      add(cell.id, ac.arm, "run_status",
          "run " + r.run_id + " ended with status " + status +
              (status == "partial" ? " (some requests failed)" : ""),
          json::object{{"run_id", r.run_id}, {"status", status}});
    }
    if (r.summary) {
      for (const metrics::Warning& w : r.summary->figures.warnings) {
        const std::string code = metrics::to_string(w.code);
        const std::string& message = w.message;
        const std::string type =
            code == "concurrency_underfilled" || code == "energy_sources_disagree"
                ? code
                : "record_warning";
        add(cell.id, ac.arm, type, "run " + r.run_id + ": " + message,
            json::object{
                {"run_id", r.run_id}, {"code", code}, {"message", message}, {"hint", w.hint}});
      }
    }
    if (power_disagreement(r)) {
      const std::optional<double> mean = read_figure(*find_metric("power_mean_w"), r);
      const std::optional<double> peak = read_figure(*find_metric("power_peak_w"), r);
      add(cell.id, ac.arm, "power_disagreement",
          "run " + r.run_id + ": the mean power, " + fixed_text(mean.value_or(0), 1) +
              " W (the energy counter over the window), exceeds the peak of the power samples, " +
              fixed_text(peak.value_or(0), 1) + " W: the two sources disagree",
          json::object{{"run_id", r.run_id},
                       {"power_mean_w", mean.value_or(0)},
                       {"power_peak_w", peak.value_or(0)}});
    }
    // The record's figures must be what its requests give (the bootstrap resamples those).
    for (const auto& m : metric_catalog()) {
      const auto s = Sample::of(m, r);
      const auto have = ac.selected_figures().at(m.key);
      if (!s) continue;
      const auto point = s->point();
      if (!point || !have) continue;
      const double tol = 1e-9 * std::max({1.0, std::fabs(*point), std::fabs(*have)});
      if (std::fabs(*point - *have) > tol) {
        add(cell.id, ac.arm, "summary_mismatch",
            "run " + r.run_id + ": summary.json gives " + m.key + " = " + fixed_text(*have, 6) +
                " but its requests.jsonl gives " + fixed_text(*point, 6),
            json::object{
                {"run_id", r.run_id}, {"metric", m.key}, {"summary", *have}, {"requests", *point}});
      }
    }
  }

  /// Every accuracy mark names a cell of the board (or of an unpaired run) and, if any, an arm.
  void validate_accuracy_marks() const {
    std::set<std::string> cells;
    for (const auto& c : b_.cells) cells.insert(c.id);
    for (const auto& u : b_.unpaired) cells.insert(u.cell);
    for (const auto& m : o_.accuracy_marks) {
      if (cells.count(m.cell) == 0) {
        std::string known;
        for (const auto& c : b_.cells) known += (known.empty() ? "" : ", ") + c.id;
        throw CompareError(m.key + ": no cell '" + m.cell +
                           "' on this board (cells: " + (known.empty() ? "none" : known) + ")");
      }
      if (!m.arm.empty() && std::find(b_.arms.begin(), b_.arms.end(), m.arm) == b_.arms.end()) {
        throw CompareError(m.key + ": '" + m.arm + "' is not an arm of this board");
      }
    }
  }

  /// The reason accuracy is not comparable for `arm` against the baseline in `cell`; "" when
  /// no mark covers the pair.
  std::string accuracy_mark(const Cell& cell, const std::string& arm) const {
    for (const auto& m : o_.accuracy_marks) {
      if (m.cell == cell.id && (m.arm.empty() || m.arm == arm || m.arm == b_.baseline)) {
        return m.reason;
      }
    }
    return "";
  }

  /// Checks the pinned expectations: a failure refuses the board (a pinned spec SHA-256 always,
  /// the rest unless the policy is to report them).
  void expectations() {
    if (!o_.expect.any()) return;
    b_.expectations = check_expectations(b_, o_.expect);
    bool failed = false;
    for (const auto& r : b_.expectations) {
      if (r.pass) continue;
      failed = true;
      if (r.kind == "spec_sha256") throw ExpectationError(expectation_refusal(b_.expectations));
    }
    if (failed && o_.expect.policy == ExpectPolicy::kRefuse) {
      throw ExpectationError(expectation_refusal(b_.expectations));
    }
  }

  void finish_cell(Cell& cell) {
    for (auto& ac : cell.arms) {
      select(cell, ac);
      run_findings(cell, ac);
      const auto price = b_.gpu_hour_cost.find(ac.arm);
      ac.point = operating_point(
          cell, ac, price == b_.gpu_hour_cost.end() ? std::nullopt : std::optional(price->second));
    }
    std::vector<const RunRecord*> every_run;
    for (const auto& ac : cell.arms) {
      for (const auto& r : ac.runs) every_run.push_back(r.get());
    }
    cell.prefill_figure = prefill_figure(every_run);
    const ArmCell* base = cell.arm(b_.baseline);
    for (const auto& ac : cell.arms) {
      if (ac.arm == b_.baseline) continue;
      Comparison cmp;
      cmp.arm = ac.arm;
      cmp.baseline = b_.baseline;
      const auto runs_of = [](const ArmCell& x) {
        std::vector<const RunRecord*> v;
        for (const auto& r : x.runs) v.push_back(r.get());
        return v;
      };
      cmp.checks = run_checks(runs_of(ac), runs_of(*base), o_.policy);
      judge_checks(cell, ac, cmp);
      if (cmp.status == ComparisonStatus::kCompared) compare_pair(cell, ac, *base, cmp);
      cell.comparisons.push_back(std::move(cmp));
    }
  }

  /// A failed check is a finding (a required one stops the comparison); an unresolved
  /// required one is counted for the refusal (or the allowed board's findings).
  void judge_checks(const Cell& cell, const ArmCell& ac, Comparison& cmp) {
    for (const auto& ch : cmp.checks) {
      if (ch.level == CheckLevel::kIgnored) continue;
      const CheckDef& def = check_def(ch.name);
      if (ch.outcome == CheckOutcome::kFail) {
        const bool required = ch.level == CheckLevel::kRequired;
        if (required) cmp.status = ComparisonStatus::kFailedChecks;
        const bool dirty = ch.name == "dirty_sources" || ch.name == "engine_dirty_sources";
        const std::string what =
            dirty ? std::string(ch.name == "dirty_sources" ? "the harness" : "the engine") +
                        " was built from a modified source tree: " + ac.arm + " " +
                        dirty_text(ch.arm_value) + ", " + b_.baseline + " " +
                        dirty_text(ch.baseline_value)
                  : def.label + " differs: " + ac.arm + " " + short_value(ch.arm_value) + ", " +
                        b_.baseline + " " + short_value(ch.baseline_value);
        add(cell.id, ac.arm, required ? "check_failed" : "check_differs",
            what + (required ? " (required: the cell is not compared)" : " (reported)"),
            json::object{{"check", ch.name},
                         {"level", to_string(ch.level)},
                         {"arm_value", ch.arm_value},
                         {"baseline_value", ch.baseline_value}});
      } else if (ch.outcome == CheckOutcome::kUnresolved && ch.level == CheckLevel::kRequired) {
        cmp.unresolved = true;
        auto& u = unresolved_[ch.name];
        u.cells += 1;
        if (u.note.empty()) u.note = ch.note;
      }
    }
  }

  /// The deltas of a pair that passed its required checks, and its quality audit.
  void compare_pair(const Cell& cell, const ArmCell& ac, const ArmCell& base, Comparison& cmp) {
    const std::string not_comparable = accuracy_mark(cell, ac.arm);
    if (!not_comparable.empty()) {
      add(cell.id, ac.arm, "accuracy_not_comparable",
          "accuracy of " + ac.arm + " vs " + b_.baseline +
              " is not compared (the board spec marks it not comparable): " + not_comparable,
          json::object{{"reason", not_comparable}});
    }
    for (const auto& m : metric_catalog()) {
      if (m.direction == Direction::kNone || !shown(m, b_.engine_figures)) continue;
      if (!measures(m, cell.level_kind)) continue;
      if (m.key == "accuracy" && !not_comparable.empty()) continue;
      Delta d = compare_metric(m, cell, ac, base, o_.bootstrap);
      // A summary-only pair has point deltas and no verdict to report: its "no interval" is
      // the pair's kind (its imported_run finding names it), tallied on its own line.
      if (cell.judged_by(m.key) && d.verdict != Verdict::kWin && !d.summary_only) {
        std::string text = m.label + ": " + ac.arm + " vs " + b_.baseline + " ";
        if (d.value) text += signed_pct(*d.value);
        if (d.low && d.high) text += " [" + signed_pct(*d.low) + ", " + signed_pct(*d.high) + "]";
        text += " — " + std::string(to_string(d.verdict));
        if (!d.no_interval.empty()) text += " (" + d.no_interval + ")";
        json::object data{{"metric", m.key}, {"verdict", to_string(d.verdict)}};
        data["delta"] = d.value ? json::value(*d.value) : json::value(nullptr);
        data["low"] = d.low ? json::value(*d.low) : json::value(nullptr);
        data["high"] = d.high ? json::value(*d.high) : json::value(nullptr);
        add(cell.id, ac.arm, "nonwin", text, std::move(data));
      }
      cmp.deltas[m.key] = std::move(d);
    }
    cmp.quality = audit(ac.run(), base.run(), o_.quality, not_comparable);
    if (cmp.quality.warning) {
      json::object data;
      data["accuracy_delta_pp"] = cmp.quality.accuracy_delta_pp
                                      ? json::value(*cmp.quality.accuracy_delta_pp)
                                      : json::value(nullptr);
      data["output_mean_gap_pct"] = cmp.quality.output_mean_gap_pct
                                        ? json::value(*cmp.quality.output_mean_gap_pct)
                                        : json::value(nullptr);
      add(cell.id, ac.arm, "quality_warning",
          ac.arm + " vs " + b_.baseline + ": " + join(cmp.quality.reasons, "; "), std::move(data));
    }
  }

  static std::string signed_pct(double v) { return (v >= 0 ? "+" : "") + fixed_text(v, 1) + " %"; }

  static std::string dirty_text(const json::value& v) {
    return v.is_bool() ? (v.get_bool() ? "modified" : "clean") : "unknown";
  }

  static std::string short_value(const json::value& v) {
    if (v.is_null()) return "(missing)";
    std::string t = v.is_string() ? std::string(v.get_string()) : canonical_text(v);
    if (v.is_string() && t.size() == 64) t = t.substr(0, 12);  // a hash
    if (t.size() > 80) t = t.substr(0, 77) + "...";
    return t;
  }

  std::string unresolved_message() const {
    std::string list;
    for (const auto& [name, u] : unresolved_) {
      list += "\n  " + name + " (" + std::to_string(u.cells) + " cell" + (u.cells == 1 ? "" : "s") +
              "): " + u.note;
    }
    return "refusing to render a board with unresolved identities:" + list +
           "\nrecord them (e.g. --model-file and --model-revision when running, GPU telemetry "
           "for driver and GPU model), relax the policy (--report-only CHECK), or render anyway "
           "with --allow-unresolved (the board then says so at the top)";
  }

  void board_findings() {
    std::vector<Finding> head;
    for (const auto& [name, u] : unresolved_) {
      b_.unresolved_checks.push_back(name);
      head.push_back({"check_unresolved", "", "",
                      check_def(name).label + " is unresolved in " + std::to_string(u.cells) +
                          " compared cell" + (u.cells == 1 ? "" : "s") + ": " + u.note +
                          " (rendered with --allow-unresolved)",
                      json::object{{"check", name}, {"cells", u.cells}, {"note", u.note}}});
    }
    for (const auto& r : b_.expectations) {
      if (r.pass) continue;
      head.push_back(
          {"expectation_failed", r.cell, r.arm,
           (r.run_id.empty() ? "" : "run " + r.run_id + ": ") + r.text,
           json::object{{"kind", r.kind},
                        {"run_id", r.run_id.empty() ? json::value(nullptr) : json::value(r.run_id)},
                        {"expected", r.expected},
                        {"found", r.found}}});
    }
    if (!b_.unpaired.empty()) {
      head.push_back({"unpaired_runs", "", "",
                      std::to_string(b_.unpaired.size()) + " run" +
                          (b_.unpaired.size() == 1 ? " is" : "s are") +
                          " in no comparison (listed under Unpaired runs)",
                      json::object{{"count", b_.unpaired.size()}}});
    }
    head.insert(head.end(), findings_.begin(), findings_.end());
    b_.findings = std::move(head);
  }

  void tallies() {
    b_.tallies = win_tallies(b_);
    b_.check_tallies = check_tallies(b_);
  }

  void status() {
    bool failed = false;
    for (const auto& [cell, cmp] : b_.comparisons()) {
      if (cmp->status == ComparisonStatus::kFailedChecks) failed = true;
    }
    const bool unexpected = std::any_of(b_.expectations.begin(), b_.expectations.end(),
                                        [](const ExpectationResult& r) { return !r.pass; });
    if (unexpected) {
      b_.status = "expectations_failed";
    } else if (failed) {
      b_.status = "checks_failed";
    } else if (!b_.unresolved_checks.empty()) {
      b_.status = "unresolved_allowed";
    } else if (!b_.unpaired.empty()) {
      b_.status = "incomplete";
    } else {
      b_.status = "complete";
    }
  }

  void add(const std::string& cell, const std::string& arm, const std::string& type,
           const std::string& message, json::object data) {
    findings_.push_back({type, cell, arm, message, std::move(data)});
  }

  struct Unresolved {
    std::size_t cells = 0;
    std::string note;
  };

  const BoardInput& in_;
  const BoardOptions& o_;
  Board b_;
  std::vector<Cell> explicit_, auto_;
  std::set<std::string> explicit_ids_;
  std::vector<Finding> findings_;
  std::map<std::string, Unresolved> unresolved_;
};

}  // namespace

Board build_board(const BoardInput& input, const BoardOptions& options) {
  return Builder(input, options).build();
}

}  // namespace dyno::compare
