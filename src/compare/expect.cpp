#include "compare/expect.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "compare/board.h"
#include "compare/fairness.h"
#include "record/owner_sections.h"

namespace dyno::compare {

namespace json = boost::json;

const char* to_string(ExpectPolicy p) { return p == ExpectPolicy::kRefuse ? "refuse" : "report"; }

bool Expectations::any() const {
  return !engine_commits.empty() || requests.has_value() || !cell_requests.empty() ||
         !cells_per_arm.empty() || !cells_per_engine_commit.empty() || !spec_sha256.empty();
}

bool commit_matches(const std::string& commit, const std::string& pinned) {
  if (pinned.empty() || commit.size() < pinned.size()) return false;
  for (std::size_t i = 0; i < pinned.size(); ++i) {
    const auto a = static_cast<unsigned char>(commit[i]);
    const auto b = static_cast<unsigned char>(pinned[i]);
    if (std::tolower(a) != std::tolower(b)) return false;
  }
  return true;
}

namespace {

std::string text_of(const json::value& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return std::string(v.get_string());
  return canonical_text(v);
}

json::value commit_of(const RunRecord& r) {
  const std::optional<record::EngineSourceRef> s =
      record::engine_section_from_json(r.manifest.engine).source;
  return s && s->commit && !s->commit->empty() ? json::value(*s->commit) : json::value(nullptr);
}

json::value list_value(const std::vector<std::string>& v) {
  if (v.size() == 1) return json::value(v.front());
  json::array a;
  for (const auto& s : v) a.push_back(json::value(s));
  return a;
}

std::string where(const std::string& arm, const std::string& cell, const std::string& run) {
  std::string out;
  if (!arm.empty()) out = "arm " + arm;
  if (!cell.empty()) out += (out.empty() ? "" : ", ") + std::string("cell ") + cell;
  if (!run.empty()) out += (out.empty() ? "" : ", ") + std::string("run ") + run;
  return out;
}

class Checker {
 public:
  Checker(const Board& b, const Expectations& e) : b_(b), e_(e) {}

  std::vector<ExpectationResult> run() {
    for (const auto& [arm, commits] : e_.engine_commits) known_arm(arm, "expect.engine_commits");
    for (const auto& [arm, n] : e_.cells_per_arm) known_arm(arm, "expect.cells_per_arm");
    for (const auto& [arm, by_commit] : e_.cells_per_engine_commit) {
      known_arm(arm, "expect.cells_per_engine_commit");
    }
    spec_sha256();
    engine_commits();
    requests();
    cells_per_arm();
    cells_per_engine_commit();
    return std::move(out_);
  }

 private:
  void known_arm(const std::string& arm, const std::string& key) const {
    if (std::find(b_.arms.begin(), b_.arms.end(), arm) == b_.arms.end()) {
      throw CompareError(key + "." + arm + ": not an arm of this board (arms: " + [this] {
        std::string s;
        for (const auto& a : b_.arms) s += (s.empty() ? "" : ", ") + a;
        return s;
      }() + ")");
    }
  }

  void add(std::string kind, const std::string& arm, const std::string& cell,
           const std::string& run, json::value expected, json::value found, bool pass,
           const std::string& what) {
    ExpectationResult r;
    r.kind = std::move(kind);
    r.arm = arm;
    r.cell = cell;
    r.run_id = run;
    const std::string at = where(arm, cell, run);
    r.text = what + " expected " + text_of(expected) + ", found " + text_of(found);
    r.message = (at.empty() ? "" : at + ": ") + r.text;
    r.expected = std::move(expected);
    r.found = std::move(found);
    r.pass = pass;
    out_.push_back(std::move(r));
  }

  void spec_sha256() {
    if (e_.spec_sha256.empty()) return;
    const json::value found =
        b_.spec_file_sha256.empty() ? json::value(nullptr) : json::value(b_.spec_file_sha256);
    const bool pass = !b_.spec_file_sha256.empty() &&
                      commit_matches(b_.spec_file_sha256, e_.spec_sha256) &&
                      b_.spec_file_sha256.size() == e_.spec_sha256.size();
    add("spec_sha256", "", "", "", json::value(e_.spec_sha256), found, pass,
        "the board spec file's SHA-256");
  }

  void engine_commits() {
    for (const auto& [arm, pinned] : e_.engine_commits) {
      for (const auto& cell : b_.cells) {
        const ArmCell* ac = cell.arm(arm);
        if (ac == nullptr) continue;
        for (const auto& r : ac->runs) {
          const json::value found = commit_of(*r);
          const bool pass =
              found.is_string() && std::any_of(pinned.begin(), pinned.end(), [&](const auto& p) {
                return commit_matches(std::string(found.get_string()), p);
              });
          add("engine_commit", arm, cell.id, r->run_id, list_value(pinned), found, pass,
              "engine commit (manifest engine.source.commit)");
        }
      }
    }
  }

  void requests() {
    if (!e_.requests && e_.cell_requests.empty()) return;
    std::set<std::string> seen;
    for (const auto& cell : b_.cells) {
      seen.insert(cell.id);
      const auto it = e_.cell_requests.find(cell.id);
      const std::optional<std::uint64_t> want =
          it != e_.cell_requests.end() ? std::optional<std::uint64_t>(it->second) : e_.requests;
      if (!want) continue;
      for (const auto& ac : cell.arms) {
        for (const auto& r : ac.runs) {
          // A count the record states as unknown (a summary-only import) is not found.
          const bool known = r->summary && r->summary->knows("requests.total");
          const std::uint64_t total = known ? r->summary->figures.requests_total : 0;
          const json::value found = known ? json::value(total) : json::value(nullptr);
          const bool pass = known && total == *want;
          add("requests", ac.arm, cell.id, r->run_id, json::value(*want), found, pass,
              "measured requests (summary requests.total)");
        }
      }
    }
    for (const auto& [cell, want] : e_.cell_requests) {
      if (seen.count(cell) != 0) continue;
      add("requests", "", cell, "", json::value(want), json::value("not on the board"), false,
          "a cell with measured requests");
    }
  }

  std::uint64_t cells_of(const std::string& arm) const {
    std::uint64_t n = 0;
    for (const auto& cell : b_.cells) n += cell.arm(arm) != nullptr ? 1 : 0;
    return n;
  }

  void cells_per_arm() {
    for (const auto& [arm, want] : e_.cells_per_arm) {
      const std::uint64_t found = cells_of(arm);
      add("cells_per_arm", arm, "", "", json::value(want), json::value(found), found == want,
          "cells on the board");
    }
  }

  void cells_per_engine_commit() {
    for (const auto& [arm, pinned] : e_.cells_per_engine_commit) {
      std::map<std::string, std::uint64_t> found;  // pinned commit -> cells
      std::map<std::string, std::uint64_t> other;  // a commit no pin matches -> cells
      for (const auto& cell : b_.cells) {
        const ArmCell* ac = cell.arm(arm);
        if (ac == nullptr) continue;
        std::set<std::string> hit, miss;
        for (const auto& r : ac->runs) {
          const json::value c = commit_of(*r);
          const std::string commit = c.is_string() ? std::string(c.get_string()) : "";
          bool matched = false;
          for (const auto& [p, n] : pinned) {
            if (!commit.empty() && commit_matches(commit, p)) {
              hit.insert(p);
              matched = true;
            }
          }
          if (!matched) miss.insert(commit.empty() ? "none" : commit);
        }
        for (const auto& p : hit) found[p] += 1;
        for (const auto& m : miss) other[m] += 1;
      }
      for (const auto& [p, want] : pinned) {
        const std::uint64_t n = found.count(p) != 0 ? found.at(p) : 0;
        add("cells_per_engine_commit", arm, "", "", json::value(want), json::value(n), n == want,
            "cells with a run of engine commit " + p);
      }
      for (const auto& [commit, n] : other) {
        add("cells_per_engine_commit", arm, "", "", json::value(0), json::value(n), false,
            "cells with a run of engine commit " + commit + " (no pinned commit matches it)");
      }
    }
  }

  const Board& b_;
  const Expectations& e_;
  std::vector<ExpectationResult> out_;
};

}  // namespace

std::vector<ExpectationResult> check_expectations(const Board& board, const Expectations& expect) {
  return Checker(board, expect).run();
}

std::string expectation_refusal(const std::vector<ExpectationResult>& results) {
  std::string list;
  for (const auto& r : results) {
    if (!r.pass) list += "\n  " + r.message;
  }
  return "refusing to render: the board's runs do not match the spec's expectations:" + list +
         "\nnarrow or fix the selectors, correct the spec's `expect`, or render the board with "
         "the mismatches in its status (\"expect\": {\"policy\": \"report\"}, or "
         "--expect-policy report)";
}

}  // namespace dyno::compare
