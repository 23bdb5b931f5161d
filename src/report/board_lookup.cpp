#include "report/board_lookup.h"

#include <algorithm>
#include <set>

#include "report/chart_text.h"

namespace dyno::report::board_lookup {

using chart_text::defuse;
using chart_text::ladder_kind;
using chart_text::level_label;
using compare::Board;

namespace {

/// Run ids listed in a caption; more are counted instead (board.json lists them all).
constexpr std::size_t kMaxListedRuns = 6;

}  // namespace

std::size_t arm_style(const Board& b, const std::string& arm) {
  const auto it = std::find(b.arms.begin(), b.arms.end(), arm);
  return static_cast<std::size_t>(it - b.arms.begin());
}

std::string arm_name(const Board& b, const std::string& arm) {
  return arm == b.baseline ? arm + " (baseline)" : arm;
}

std::vector<std::string> models_of(const Board& b) {
  std::vector<std::string> out;
  for (const auto& c : b.cells) {
    if (std::find(out.begin(), out.end(), c.model) == out.end()) out.push_back(c.model);
  }
  return out;
}

std::size_t protocol_count(const Board& b) {
  std::set<std::string> p;
  for (const auto& c : b.cells) p.insert(c.protocol);
  return p.size();
}

std::string cell_label(const Board& b, const compare::Cell& c) {
  std::string l =
      c.level && !ladder_kind(c.level_kind) ? level_label(c.level_kind, *c.level) : c.name;
  if (protocol_count(b) > 1) l = c.protocol + " " + l;
  return defuse(l);
}

std::string runs_phrase(const Board& b, const std::vector<const compare::Cell*>& cells) {
  std::vector<std::string> ids;
  std::vector<std::string> arms;
  for (const compare::Cell* c : cells) {
    for (const auto& a : c->arms) {
      if (std::find(ids.begin(), ids.end(), a.run().run_id) == ids.end()) {
        ids.push_back(a.run().run_id);
      }
      if (std::find(arms.begin(), arms.end(), a.arm) == arms.end()) arms.push_back(a.arm);
    }
  }
  if (ids.empty()) return "";
  if (ids.size() <= kMaxListedRuns) {
    std::string s = "Runs: ";
    for (std::size_t i = 0; i < ids.size(); ++i) s += (i == 0 ? "" : ", ") + ids[i];
    return s + ".";
  }
  std::string sel;
  for (const auto& arm : b.arms) {
    if (std::find(arms.begin(), arms.end(), arm) == arms.end()) continue;
    sel += (sel.empty() ? "" : "; ") + arm;
    const auto it = b.selectors.find(arm);
    if (it != b.selectors.end()) {
      for (std::size_t i = 0; i < it->second.size(); ++i) {
        sel += (i == 0 ? ": " : ", ") + defuse(it->second[i]);
      }
    }
  }
  return "From " + std::to_string(ids.size()) + " runs, each arm's selected run per cell (" + sel +
         "); board.json lists them by cell.";
}

std::vector<const compare::Cell*> cells_where(const Board& b,
                                              const std::function<bool(const compare::Cell&)>& f) {
  std::vector<const compare::Cell*> out;
  for (const auto& c : b.cells) {
    if (f(c)) out.push_back(&c);
  }
  return out;
}

}  // namespace dyno::report::board_lookup
