#include "compare/inputs.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>

#include "compare/select.h"
#include "digest/digest.h"
#include "record/run_writer.h"

namespace dyno::compare {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw CompareError(file_ + ": key `" + key + "`: " + what);
  }

  std::string str(const json::value& v, const std::string& key) const {
    if (!v.is_string()) fail(key, "expected a string");
    return std::string(v.get_string());
  }

  double number(const json::value& v, const std::string& key) const {
    if (v.is_double()) return v.get_double();
    if (v.is_int64()) return static_cast<double>(v.get_int64());
    if (v.is_uint64()) return static_cast<double>(v.get_uint64());
    fail(key, "expected a number");
  }

  /// A selector list: one string or an array of strings.
  std::vector<std::string> selectors(const json::value& v, const std::string& key) const {
    std::vector<std::string> out;
    if (v.is_string()) {
      out.push_back(std::string(v.get_string()));
    } else if (v.is_array()) {
      for (std::size_t i = 0; i < v.get_array().size(); ++i) {
        out.push_back(str(v.get_array()[i], key + "[" + std::to_string(i) + "]"));
      }
    } else {
      fail(key, "expected a selector (string) or an array of selectors");
    }
    for (const auto& s : out) {
      if (s.empty()) fail(key, "an empty selector");
    }
    return out;
  }

  /// A whole number >= 0.
  std::uint64_t count(const json::value& v, const std::string& key) const {
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
    fail(key, "expected a whole number >= 0");
  }

  /// "<file>: key `KEY`", for errors raised elsewhere about a key of this file.
  std::string where(const std::string& key) const { return file_ + ": key `" + key + "`"; }

  std::vector<std::string> names(const json::value& v, const std::string& key) const {
    if (!v.is_array()) fail(key, "expected an array of check names");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.get_array().size(); ++i) {
      out.push_back(str(v.get_array()[i], key + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  void only(const json::object& o, const std::string& where,
            std::initializer_list<const char*> keys) const {
    for (const auto& kv : o) {
      const std::string k(kv.key());
      if (std::none_of(keys.begin(), keys.end(), [&k](const char* x) { return k == x; })) {
        std::string known;
        for (const char* x : keys) known += std::string(known.empty() ? "" : ", ") + x;
        fail(where.empty() ? k : where + "." + k, "unknown key (known: " + known + ")");
      }
    }
  }

 private:
  std::string file_;
};

}  // namespace

namespace {

void read_arms(const SpecReader& r, const json::value& a, BoardSpec& spec) {
  if (!a.is_array()) r.fail("arms", "expected an array of {name, runs}");
  for (std::size_t i = 0; i < a.get_array().size(); ++i) {
    const std::string key = "arms[" + std::to_string(i) + "]";
    const auto& av = a.get_array()[i];
    if (!av.is_object()) r.fail(key, "expected an object {name, runs}");
    r.only(av.get_object(), key, {"name", "runs", "gpu_hour_cost"});
    ArmSpec arm;
    const auto* n = av.get_object().if_contains("name");
    if (n == nullptr) r.fail(key + ".name", "missing");
    arm.name = r.str(*n, key + ".name");
    if (!valid_name(arm.name)) r.fail(key + ".name", "use letters, digits, '.', '_' or '-'");
    if (const auto* runs = av.get_object().if_contains("runs")) {
      arm.selectors = r.selectors(*runs, key + ".runs");
    }
    if (const auto* cost = av.get_object().if_contains("gpu_hour_cost")) {
      const double v = r.number(*cost, key + ".gpu_hour_cost");
      if (!std::isfinite(v) || v < 0) {
        r.fail(key + ".gpu_hour_cost", "expected a finite number >= 0 (USD per GPU-hour)");
      }
      arm.gpu_hour_cost = v;
    }
    spec.arms.push_back(std::move(arm));
  }
}

void read_cells(const SpecReader& r, const json::value& c, BoardSpec& spec) {
  if (!c.is_array()) r.fail("cells", "expected an array of {name, model, runs}");
  for (std::size_t i = 0; i < c.get_array().size(); ++i) {
    const std::string key = "cells[" + std::to_string(i) + "]";
    const auto& cv = c.get_array()[i];
    if (!cv.is_object()) r.fail(key, "expected an object {name, model, runs}");
    const json::object& co = cv.get_object();
    r.only(co, key, {"name", "model", "runs", "accuracy_comparable", "reason"});
    CellSpec cell;
    const auto* n = co.if_contains("name");
    if (n == nullptr) r.fail(key + ".name", "missing");
    cell.name = r.str(*n, key + ".name");
    if (cell.name.empty()) r.fail(key + ".name", "empty");
    if (const auto* m = co.if_contains("model")) cell.model = r.str(*m, key + ".model");
    const auto* runs = co.if_contains("runs");
    if (runs == nullptr || !runs->is_object()) {
      r.fail(key + ".runs", "expected an object {arm: selector(s)}");
    }
    for (const auto& kv : runs->get_object()) {
      const std::string arm(kv.key());
      cell.selectors[arm] = r.selectors(kv.value(), key + ".runs." + arm);
    }
    const auto* comparable = co.if_contains("accuracy_comparable");
    const auto* reason = co.if_contains("reason");
    if (comparable != nullptr && !comparable->is_bool()) {
      r.fail(key + ".accuracy_comparable", "expected true or false");
    }
    const bool marked = comparable != nullptr && !comparable->get_bool();
    if (reason != nullptr && !marked) {
      r.fail(key + ".reason",
             "says why accuracy is not comparable: give it with "
             "\"accuracy_comparable\": false");
    }
    if (marked) {
      if (reason == nullptr) r.fail(key + ".reason", "missing: say why accuracy is not comparable");
      cell.accuracy_not_comparable = r.str(*reason, key + ".reason");
      if (cell.accuracy_not_comparable.empty()) r.fail(key + ".reason", "empty");
      spec.accuracy_marks.push_back({cell.name, "", cell.accuracy_not_comparable, key});
    }
    spec.cells.push_back(std::move(cell));
  }
}

void read_accuracy_marks(const SpecReader& r, const json::value& v, BoardSpec& spec) {
  if (!v.is_array()) r.fail("accuracy_not_comparable", "expected an array of {cell, arm, reason}");
  for (std::size_t i = 0; i < v.get_array().size(); ++i) {
    const std::string key = "accuracy_not_comparable[" + std::to_string(i) + "]";
    const auto& mv = v.get_array()[i];
    if (!mv.is_object()) r.fail(key, "expected an object {cell, arm, reason}");
    const json::object& mo = mv.get_object();
    r.only(mo, key, {"cell", "arm", "reason"});
    AccuracyMark m;
    m.key = key;
    for (auto [field, out] : {std::pair{"cell", &m.cell}, std::pair{"reason", &m.reason}}) {
      const auto* x = mo.if_contains(field);
      if (x == nullptr) r.fail(key + "." + field, "missing");
      *out = r.str(*x, key + "." + field);
      if (out->empty()) r.fail(key + "." + field, "empty");
    }
    if (const auto* a = mo.if_contains("arm")) m.arm = r.str(*a, key + ".arm");
    spec.accuracy_marks.push_back(std::move(m));
  }
}

/// A pinned commit: 7 to 64 hex digits, kept in lower case.
std::string commit_text(const SpecReader& r, const json::value& v, const std::string& key) {
  std::string c = r.str(v, key);
  const bool hex = std::all_of(c.begin(), c.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
  });
  if (!hex || c.size() < 7 || c.size() > 64) {
    r.fail(key,
           "expected a commit: 7 to 64 hex digits (an abbreviated commit matches every "
           "commit it starts)");
  }
  std::transform(c.begin(), c.end(), c.begin(),
                 [](char ch) { return static_cast<char>(std::tolower(ch)); });
  return c;
}

const json::object& object_at(const SpecReader& r, const json::value& v, const std::string& key,
                              const std::string& shape) {
  if (!v.is_object()) r.fail(key, "expected an object " + shape);
  return v.get_object();
}

void read_expect(const SpecReader& r, const json::value& v, Expectations& e) {
  const json::object& o = object_at(r, v, "expect", "(docs/compare.md \"Expectations\")");
  r.only(o, "expect",
         {"policy", "engine_commits", "requests", "cell_requests", "cells_per_arm",
          "cells_per_engine_commit"});
  if (const auto* p = o.if_contains("policy")) {
    e.policy = parse_expect_policy(r.str(*p, "expect.policy"), r.where("expect.policy"));
  }
  if (const auto* c = o.if_contains("engine_commits")) {
    for (const auto& kv : object_at(r, *c, "expect.engine_commits", "{arm: commit(s)}")) {
      const std::string key = "expect.engine_commits." + std::string(kv.key());
      auto& list = e.engine_commits[std::string(kv.key())];
      if (kv.value().is_array()) {
        for (std::size_t i = 0; i < kv.value().get_array().size(); ++i) {
          list.push_back(
              commit_text(r, kv.value().get_array()[i], key + "[" + std::to_string(i) + "]"));
        }
        if (list.empty()) r.fail(key, "an empty list: give at least one commit");
      } else {
        list.push_back(commit_text(r, kv.value(), key));
      }
    }
  }
  if (const auto* n = o.if_contains("requests")) e.requests = r.count(*n, "expect.requests");
  if (const auto* c = o.if_contains("cell_requests")) {
    for (const auto& kv : object_at(r, *c, "expect.cell_requests", "{cell id: requests}")) {
      e.cell_requests[std::string(kv.key())] =
          r.count(kv.value(), "expect.cell_requests." + std::string(kv.key()));
    }
  }
  if (const auto* c = o.if_contains("cells_per_arm")) {
    for (const auto& kv : object_at(r, *c, "expect.cells_per_arm", "{arm: cells}")) {
      e.cells_per_arm[std::string(kv.key())] =
          r.count(kv.value(), "expect.cells_per_arm." + std::string(kv.key()));
    }
  }
  if (const auto* c = o.if_contains("cells_per_engine_commit")) {
    for (const auto& kv :
         object_at(r, *c, "expect.cells_per_engine_commit", "{arm: {commit: cells}}")) {
      const std::string key = "expect.cells_per_engine_commit." + std::string(kv.key());
      auto& by_commit = e.cells_per_engine_commit[std::string(kv.key())];
      for (const auto& ck : object_at(r, kv.value(), key, "{commit: cells}")) {
        const std::string ckey = key + "." + std::string(ck.key());
        by_commit[commit_text(r, json::value(ck.key()), ckey)] = r.count(ck.value(), ckey);
      }
      if (by_commit.empty()) r.fail(key, "empty: give {commit: cells}");
    }
  }
}

void read_policy_and_quality(const SpecReader& r, const json::object& o, BoardSpec& spec) {
  if (const auto* p = o.if_contains("policy")) {
    if (!p->is_object()) r.fail("policy", "expected an object {required, reported, ignored}");
    r.only(p->get_object(), "policy", {"required", "reported", "ignored"});
    if (const auto* x = p->get_object().if_contains("required"))
      spec.required = r.names(*x, "policy.required");
    if (const auto* x = p->get_object().if_contains("reported"))
      spec.reported = r.names(*x, "policy.reported");
    if (const auto* x = p->get_object().if_contains("ignored"))
      spec.ignored = r.names(*x, "policy.ignored");
  }
  if (const auto* q = o.if_contains("quality")) {
    if (!q->is_object()) r.fail("quality", "expected an object {accuracy_pp, output_gap_pct}");
    r.only(q->get_object(), "quality", {"accuracy_pp", "output_gap_pct"});
    if (const auto* x = q->get_object().if_contains("accuracy_pp")) {
      spec.accuracy_pp = r.number(*x, "quality.accuracy_pp");
    }
    if (const auto* x = q->get_object().if_contains("output_gap_pct")) {
      spec.output_gap_pct = r.number(*x, "quality.output_gap_pct");
    }
  }
}

}  // namespace

BoardSpec read_board_spec(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompareError("--spec: " + path.string() + " cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  boost::system::error_code ec;
  json::value v = json::parse(bytes, ec);
  if (ec || !v.is_object()) {
    throw CompareError(path.string() + ": not a JSON object" +
                       (ec ? " (" + ec.message() + ")" : std::string()));
  }
  const SpecReader r(path.string());
  const json::object& o = v.get_object();
  r.only(o, "",
         {"title", "baseline", "arms", "cells", "model_aliases", "policy", "quality",
          "allow_unresolved", "expect", "accuracy_not_comparable"});
  BoardSpec spec;
  spec.sha256 = digest::sha256_hex(bytes);
  if (const auto* t = o.if_contains("title")) spec.title = r.str(*t, "title");
  if (const auto* b = o.if_contains("baseline")) spec.baseline = r.str(*b, "baseline");
  if (const auto* a = o.if_contains("arms")) read_arms(r, *a, spec);
  if (const auto* c = o.if_contains("cells")) read_cells(r, *c, spec);
  if (const auto* m = o.if_contains("model_aliases")) {
    if (!m->is_object()) r.fail("model_aliases", "expected an object {model id: name}");
    for (const auto& kv : m->get_object()) {
      spec.model_aliases[std::string(kv.key())] =
          r.str(kv.value(), "model_aliases." + std::string(kv.key()));
    }
  }
  read_policy_and_quality(r, o, spec);
  if (const auto* a = o.if_contains("allow_unresolved")) {
    if (!a->is_bool()) r.fail("allow_unresolved", "expected true or false");
    spec.allow_unresolved = a->get_bool();
  }
  if (const auto* e = o.if_contains("expect")) read_expect(r, *e, spec.expect);
  if (const auto* m = o.if_contains("accuracy_not_comparable")) read_accuracy_marks(r, *m, spec);
  // Explicit cells may only name declared arms; so may expectations and accuracy marks, when
  // the file declares its arms (else the board checks them against --arm).
  for (const auto& cell : spec.cells) {
    for (const auto& kv : cell.selectors) {
      if (std::none_of(spec.arms.begin(), spec.arms.end(),
                       [&kv](const ArmSpec& a) { return a.name == kv.first; })) {
        r.fail("cells." + cell.name + ".runs." + kv.first, "not an arm declared under `arms`");
      }
    }
  }
  if (!spec.arms.empty()) {
    const auto declared = [&spec, &r](const std::string& arm, const std::string& key) {
      if (std::none_of(spec.arms.begin(), spec.arms.end(),
                       [&arm](const ArmSpec& a) { return a.name == arm; })) {
        r.fail(key, "not an arm declared under `arms`");
      }
    };
    for (const auto& kv : spec.expect.engine_commits) {
      declared(kv.first, "expect.engine_commits." + kv.first);
    }
    for (const auto& kv : spec.expect.cells_per_arm) {
      declared(kv.first, "expect.cells_per_arm." + kv.first);
    }
    for (const auto& kv : spec.expect.cells_per_engine_commit) {
      declared(kv.first, "expect.cells_per_engine_commit." + kv.first);
    }
    for (const auto& m : spec.accuracy_marks) {
      if (!m.arm.empty()) declared(m.arm, m.key + ".arm");
    }
  }
  for (auto& m : spec.accuracy_marks) m.key = r.where(m.key);
  return spec;
}

ExpectPolicy parse_expect_policy(const std::string& text, const std::string& key) {
  if (text == "refuse") return ExpectPolicy::kRefuse;
  if (text == "report") return ExpectPolicy::kReport;
  throw CompareError(key + ": '" + text +
                     "' is not a policy: refuse (no board when an expectation fails) or "
                     "report (the board's status and findings say which)");
}

std::string parse_sha256(const std::string& text, const std::string& key) {
  std::string out = text;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char ch) { return static_cast<char>(std::tolower(ch)); });
  const bool hex = std::all_of(out.begin(), out.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
  });
  if (!hex || out.size() != 64) {
    throw CompareError(key + ": '" + text + "' is not a SHA-256 (64 hex digits)");
  }
  return out;
}

ArmSpec parse_arm(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw CompareError("--arm '" + text +
                       "': write NAME=SELECTOR, e.g. --arm fast=label=fast or --arm "
                       "vllm=20261130T001634Z-0739e8-sweep");
  }
  ArmSpec arm;
  arm.name = text.substr(0, eq);
  if (!valid_name(arm.name)) {
    throw CompareError("--arm '" + text + "': the name '" + arm.name +
                       "' may hold letters, digits, '.', '_' and '-' only");
  }
  arm.selectors.push_back(text.substr(eq + 1));
  return arm;
}

std::vector<ArmSpec> merge_arms(const std::vector<ArmSpec>& arms) {
  std::vector<ArmSpec> out;
  for (const auto& a : arms) {
    auto it =
        std::find_if(out.begin(), out.end(), [&a](const ArmSpec& x) { return x.name == a.name; });
    if (it == out.end()) {
      out.push_back(a);
    } else {
      it->selectors.insert(it->selectors.end(), a.selectors.begin(), a.selectors.end());
      if (!it->gpu_hour_cost) it->gpu_hour_cost = a.gpu_hour_cost;
    }
  }
  return out;
}

BoardInput load_board_input(const fs::path& runs_root, const std::vector<ArmSpec>& arms,
                            const std::vector<CellSpec>& cells, IndexSelection* index) {
  // The runs root is read unless every selector is the path of a run directory.
  const auto is_run_dir = [](const std::string& s) {
    return s.find('=') == std::string::npos && fs::is_directory(s) &&
           fs::exists(fs::path(s) / "manifest.json");
  };
  bool need_root = false;
  for (const auto& a : arms) {
    for (const auto& s : a.selectors) need_root = need_root || !is_run_dir(s);
  }
  for (const auto& c : cells) {
    for (const auto& [arm, sels] : c.selectors) {
      for (const auto& s : sels) need_root = need_root || !is_run_dir(s);
    }
  }
  BoardInput in;
  std::vector<ManifestEntry> manifests;
  if (need_root && index == nullptr) manifests = scan_manifests(runs_root, &in.skipped);
  std::map<fs::path, RunPtr> loaded;
  const auto resolve = [&](const std::string& selector) {
    std::vector<RunPtr> runs;
    std::set<std::string> ids;
    const std::vector<fs::path> dirs = index != nullptr
                                           ? index->resolve(selector)
                                           : resolve_selector(selector, runs_root, manifests);
    for (const auto& dir : dirs) {
      const fs::path key = fs::weakly_canonical(dir);
      auto it = loaded.find(key);
      if (it == loaded.end()) {
        it = loaded.emplace(key, std::make_shared<const RunRecord>(read_run(dir))).first;
      }
      if (ids.insert(it->second->run_id).second) runs.push_back(it->second);
    }
    return runs;
  };
  for (const auto& a : arms) {
    ArmInput arm;
    arm.name = a.name;
    arm.selectors = a.selectors;
    arm.gpu_hour_cost = a.gpu_hour_cost;
    std::set<std::string> ids;
    for (const auto& sel : a.selectors) {
      for (auto& r : resolve(sel)) {
        if (ids.insert(r->run_id).second) arm.runs.push_back(r);
      }
    }
    std::sort(arm.runs.begin(), arm.runs.end(),
              [](const RunPtr& x, const RunPtr& y) { return x->run_id < y->run_id; });
    in.arms.push_back(std::move(arm));
  }
  for (const auto& c : cells) {
    ExplicitCell cell;
    cell.name = c.name;
    cell.model = c.model;
    for (const auto& [arm, sels] : c.selectors) {
      std::vector<RunPtr>& runs = cell.runs[arm];
      for (const auto& sel : sels) {
        for (auto& r : resolve(sel)) runs.push_back(r);
      }
    }
    in.cells.push_back(std::move(cell));
  }
  std::set<std::string> campaigns;
  for (const auto& kv : loaded) {
    if (const std::optional<std::string>& c = kv.second->manifest.campaign) {
      campaigns.insert(*c);
      if (index == nullptr || in.campaigns.count(*c) != 0) continue;
      if (auto doc = index->campaign_of(kv.first, *c)) in.campaigns[*c] = std::move(*doc);
    }
  }
  if (index != nullptr) {
    in.skipped.insert(in.skipped.end(), index->skipped().begin(), index->skipped().end());
    return in;
  }
  for (const auto& id : campaigns) {
    if (auto doc = read_campaign(runs_root, id)) in.campaigns[id] = std::move(*doc);
  }
  return in;
}

}  // namespace dyno::compare
