// Fairness: for every checked field, a pair that differs in it fails the check (required:
// the cell is not compared; reported: compared, with a finding); a missing value is
// unresolved and blocks the board unless allowed.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "compare/board.h"
#include "test_records.h"

namespace dyno::compare {
namespace {

namespace json = boost::json;
using testing::copy_run;
using testing::fixed_options;
using testing::fixture_input;
using testing::set_manifest;
using testing::set_path;

/// The fixture's c1 pair, fast against slow.
BoardInput c1_input() { return fixture_input("label=fast,cell=c1", "label=slow,cell=c1"); }

/// One change of a run per check: what makes the pair differ in that field.
const std::map<std::string, std::function<void(RunRecord&)>>& mutations() {
  static const std::map<std::string, std::function<void(RunRecord&)>> m = {
      {"request_stream",
       [](RunRecord& r) {
         set_manifest(r, "workload.request_stream.sha256", std::string(64, '0'));
       }},
      {"request_count",
       [](RunRecord& r) {
         set_path(r.summary_json, "requests.total",
                  r.summary_json.at("requests").at("total").to_number<std::int64_t>() + 1);
         dyno::testing::retype(r);
       }},
      {"input_tokens",
       [](RunRecord& r) {
         set_path(r.summary_json, "tokens.input_total",
                  r.summary_json.at("tokens").at("input_total").to_number<std::int64_t>() + 7);
         dyno::testing::retype(r);
       }},
      {"sampling", [](RunRecord& r) { set_manifest(r, "workload.sampling.temperature", 0.7); }},
      {"api", [](RunRecord& r) { set_manifest(r, "workload.api", "completions"); }},
      {"load", [](RunRecord& r) { set_manifest(r, "load.seed", 42); }},
      {"warmup", [](RunRecord& r) { set_manifest(r, "workload.warmup_requests", 5); }},
      {"model_revision", [](RunRecord& r) { set_manifest(r, "model.revision", "other"); }},
      {"model_fingerprint",
       [](RunRecord& r) { set_manifest(r, "model.fingerprint", std::string(64, 'f')); }},
      {"driver", [](RunRecord& r) { set_manifest(r, "hardware.gpus.0.driver", "1.2.3"); }},
      {"gpu_model", [](RunRecord& r) { set_manifest(r, "hardware.gpus.0.name", "Another GPU"); }},
      {"gpu_uuid", [](RunRecord& r) { set_manifest(r, "hardware.gpus.0.uuid", "GPU-other"); }},
      {"harness",
       [](RunRecord& r) { set_manifest(r, "harness.executable_sha256", std::string(64, 'e')); }},
      {"engine_commit",
       [](RunRecord& r) { set_manifest(r, "engine.source.commit", std::string(40, 'b')); }},
  };
  return m;
}

/// The input with the baseline's run changed by `change` (and both dirty flags cleared, and an
/// engine source checkout given to both, so the dirty checks pass unless a test sets one).
BoardInput changed(const std::function<void(RunRecord&)>& change) {
  BoardInput in = c1_input();
  for (auto& arm : in.arms) {
    for (auto& run : arm.runs) {
      auto copy = copy_run(run);
      set_manifest(*copy, "harness.git_dirty", false);
      set_manifest(
          *copy, "engine.source",
          json::object{{"checkout", "engine"}, {"commit", std::string(40, 'a')}, {"dirty", false}});
      if (arm.name == "slow") change(*copy);
      run = copy;
    }
  }
  return in;
}

TEST(Fairness, TheFixturePairPassesEveryCheck) {
  const Board b = build_board(changed([](RunRecord&) {}), fixed_options());
  ASSERT_EQ(b.cells.size(), 1u);
  const Comparison& c = b.cells[0].comparisons.at(0);
  EXPECT_EQ(c.status, ComparisonStatus::kCompared);
  for (const auto& ch : c.checks) EXPECT_EQ(ch.outcome, CheckOutcome::kPass) << ch.name;
  EXPECT_EQ(c.checks.size(), check_catalog().size());
  EXPECT_EQ(b.status, "complete");
}

TEST(Fairness, EveryCheckHasADifferingPairTest) {
  for (const auto& def : check_catalog()) {
    if (def.name == "dirty_sources" || def.name == "engine_dirty_sources") continue;  // below
    EXPECT_EQ(mutations().count(def.name), 1u) << "no fairness test for check " << def.name;
  }
}

TEST(Fairness, APairThatDiffersInAFieldFailsThatCheck) {
  const Policy defaults;
  for (const auto& [name, change] : mutations()) {
    SCOPED_TRACE(name);
    const Board b = build_board(changed(change), fixed_options());
    ASSERT_EQ(b.cells.size(), 1u);
    const Comparison& c = b.cells[0].comparisons.at(0);
    const Check* ch = c.check(name);
    ASSERT_NE(ch, nullptr);
    EXPECT_EQ(ch->outcome, CheckOutcome::kFail);
    EXPECT_NE(canonical_text(ch->arm_value), canonical_text(ch->baseline_value));
    // Only the changed field fails.
    for (const auto& other : c.checks) {
      if (other.name != name) {
        EXPECT_EQ(other.outcome, CheckOutcome::kPass) << other.name;
      }
    }
    const bool required = defaults.level(name) == CheckLevel::kRequired;
    const bool ignored = defaults.level(name) == CheckLevel::kIgnored;
    bool found = false;
    for (const auto& f : b.findings) {
      if (f.type == (required ? "check_failed" : "check_differs") &&
          f.data.at("check").as_string() == name) {
        found = true;
      }
    }
    EXPECT_EQ(found, !ignored);  // an ignored check is not judged
    if (required) {
      EXPECT_EQ(c.status, ComparisonStatus::kFailedChecks);
      EXPECT_TRUE(c.deltas.empty());
      EXPECT_EQ(b.status, "checks_failed");
      for (const auto& t : b.tallies) EXPECT_EQ(t.compared, 0u);
    } else {
      EXPECT_EQ(c.status, ComparisonStatus::kCompared);
      EXPECT_FALSE(c.deltas.empty());
      EXPECT_EQ(b.status, "complete");
    }
  }
}

TEST(Fairness, PolicyDecidesWhatAFailureMeans) {
  // gpu_uuid reported by default: required, a difference stops the comparison.
  BoardOptions o = fixed_options();
  o.policy.set("gpu_uuid", CheckLevel::kRequired);
  Board b = build_board(changed(mutations().at("gpu_uuid")), o);
  EXPECT_EQ(b.cells[0].comparisons[0].status, ComparisonStatus::kFailedChecks);
  // driver required by default: reported only, the cell is compared.
  o = fixed_options();
  o.policy.set("driver", CheckLevel::kReported);
  b = build_board(changed(mutations().at("driver")), o);
  EXPECT_EQ(b.cells[0].comparisons[0].status, ComparisonStatus::kCompared);
  // Ignored: not judged at all.
  o = fixed_options();
  o.policy.set("harness", CheckLevel::kIgnored);
  b = build_board(changed(mutations().at("harness")), o);
  EXPECT_EQ(b.cells[0].comparisons[0].status, ComparisonStatus::kCompared);
  for (const auto& f : b.findings) EXPECT_NE(f.type, "check_failed");
  EXPECT_THROW(o.policy.set("no_such_check", CheckLevel::kRequired), CompareError);
  EXPECT_THROW(o.policy.set_list("request_stream,bogus", CheckLevel::kIgnored, "--ignore"),
               CompareError);
}

TEST(Fairness, DirtySourcesFailsWhenEitherTreeWasModified) {
  const Board clean = build_board(changed([](RunRecord&) {}), fixed_options());
  EXPECT_EQ(clean.cells[0].comparisons[0].check("dirty_sources")->outcome, CheckOutcome::kPass);
  const Board dirty = build_board(
      changed([](RunRecord& r) { set_manifest(r, "harness.git_dirty", true); }), fixed_options());
  const Comparison& c = dirty.cells[0].comparisons[0];
  EXPECT_EQ(c.check("dirty_sources")->outcome, CheckOutcome::kFail);
  EXPECT_EQ(c.status, ComparisonStatus::kCompared);  // reported by default
}

TEST(Fairness, EngineDirtySourcesIsReportedLikeTheHarnessFlag) {
  EXPECT_EQ(Policy().level("engine_dirty_sources"), CheckLevel::kReported);
  const Board dirty = build_board(
      changed([](RunRecord& r) { set_manifest(r, "engine.source.dirty", true); }), fixed_options());
  const Comparison& c = dirty.cells[0].comparisons[0];
  const Check* ch = c.check("engine_dirty_sources");
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(ch->outcome, CheckOutcome::kFail);
  EXPECT_EQ(ch->arm_value, json::value(false));
  EXPECT_EQ(ch->baseline_value, json::value(true));
  EXPECT_EQ(c.status, ComparisonStatus::kCompared);  // reported by default
  bool finding = false;
  for (const auto& f : dirty.findings) {
    if (f.type == "check_differs" && f.data.at("check").as_string() == "engine_dirty_sources") {
      finding = true;
      EXPECT_NE(f.message.find("the engine was built from a modified source tree: fast clean, "
                               "slow modified"),
                std::string::npos)
          << f.message;
    }
  }
  EXPECT_TRUE(finding);
  // Required, a modified engine tree stops the comparison.
  BoardOptions o = fixed_options();
  o.policy.set("engine_dirty_sources", CheckLevel::kRequired);
  const Board strict =
      build_board(changed([](RunRecord& r) { set_manifest(r, "engine.source.dirty", true); }), o);
  EXPECT_EQ(strict.cells[0].comparisons[0].status, ComparisonStatus::kFailedChecks);
}

TEST(Fairness, AnEngineWithoutASourceLeavesItsChecksUnresolved) {
  // The fixture's embedded simulated engine records no engine source: unresolved, shown only.
  const Board b = build_board(c1_input(), fixed_options());
  const Check* ch = b.cells[0].comparisons[0].check("engine_dirty_sources");
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(ch->outcome, CheckOutcome::kUnresolved);
  EXPECT_NE(ch->note.find("no engine source in the record"), std::string::npos) << ch->note;
  EXPECT_EQ(b.cells[0].comparisons[0].check("engine_commit")->level, CheckLevel::kIgnored);
  EXPECT_TRUE(b.unresolved_checks.empty());  // neither is required by default
  // A launched engine whose spec names no checkout gives its reason; required, it blocks.
  const auto no_checkout = [](RunRecord& r) {
    set_manifest(
        r, "engine.source",
        json::object{{"commit", nullptr},
                     {"dirty", nullptr},
                     {"unknown", json::object{{"commit", "the engine spec names no checkout"}}}});
  };
  const Board u = build_board(changed(no_checkout), fixed_options());
  const Check* uc = u.cells[0].comparisons[0].check("engine_dirty_sources");
  EXPECT_EQ(uc->outcome, CheckOutcome::kUnresolved);
  EXPECT_NE(uc->note.find("the engine spec names no checkout"), std::string::npos) << uc->note;
  BoardOptions o = fixed_options();
  o.policy.set("engine_commit", CheckLevel::kRequired);
  try {
    build_board(changed(no_checkout), o);
    FAIL() << "expected UnresolvedError";
  } catch (const UnresolvedError& e) {
    EXPECT_NE(std::string(e.what()).find("engine_commit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("names no checkout"), std::string::npos) << e.what();
  }
  // Required and resolved: two engine builds of one engine are not compared.
  const Board diff = build_board(changed(mutations().at("engine_commit")), o);
  EXPECT_EQ(diff.cells[0].comparisons[0].status, ComparisonStatus::kFailedChecks);
}

TEST(Fairness, MissingIdentitiesBlockTheBoardUnlessAllowed) {
  // A server at --url (not the embedded sim, whose model dyno knows) without --model-file.
  const auto no_fingerprint = [](RunRecord& r) {
    set_manifest(r, "engine.reached.kind", "http");
    set_manifest(r, "model.fingerprint", nullptr);
    set_manifest(r, "model.unknown.fingerprint", "no weights file given (--model-file)");
  };
  try {
    build_board(changed(no_fingerprint), fixed_options());
    FAIL() << "expected UnresolvedError";
  } catch (const UnresolvedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model_fingerprint"), std::string::npos) << what;
    EXPECT_NE(what.find("--model-file"), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-unresolved"), std::string::npos) << what;
  }
  BoardOptions o = fixed_options();
  o.allow_unresolved = true;
  const Board b = build_board(changed(no_fingerprint), o);
  EXPECT_EQ(b.status, "unresolved_allowed");
  ASSERT_EQ(b.unresolved_checks, std::vector<std::string>{"model_fingerprint"});
  const Comparison& c = b.cells[0].comparisons[0];
  EXPECT_TRUE(c.unresolved);
  EXPECT_EQ(c.status, ComparisonStatus::kCompared);
  EXPECT_EQ(c.check("model_fingerprint")->outcome, CheckOutcome::kUnresolved);
  EXPECT_EQ(b.findings.at(0).type, "check_unresolved");
  // A GPU-less record of telemetry off leaves driver and GPU model unresolved, with the reason.
  const Board g = build_board(changed([](RunRecord& r) {
                                set_manifest(r, "hardware.gpus", json::array{});
                                set_manifest(r, "telemetry.mode", "off");
                              }),
                              o);
  EXPECT_EQ(g.cells[0].comparisons[0].check("driver")->outcome, CheckOutcome::kUnresolved);
  EXPECT_NE(g.cells[0].comparisons[0].check("driver")->note.find("telemetry was off"),
            std::string::npos);
  // One whose telemetry ran and found no GPU states "no GPU": against GPUs, a difference.
  const Board none = build_board(
      changed([](RunRecord& r) { set_manifest(r, "hardware.gpus", json::array{}); }), o);
  const Check* driver = none.cells[0].comparisons[0].check("driver");
  EXPECT_EQ(driver->outcome, CheckOutcome::kFail);
  EXPECT_EQ(driver->baseline_value, json::value(json::array{}));
  EXPECT_NE(driver->note.find("the baseline's record states its host has no GPU"),
            std::string::npos)
      << driver->note;
  // Not required: unresolved is only shown.
  BoardOptions r = fixed_options();
  r.policy.set("model_fingerprint", CheckLevel::kReported);
  EXPECT_NO_THROW(build_board(changed(no_fingerprint), r));
}

TEST(Fairness, NoGpuOnBothSidesIsAnEqualIdentity) {
  // Two records whose telemetry ran and found no GPU: driver, GPU model and UUID pass.
  BoardInput in = changed([](RunRecord&) {});
  for (auto& arm : in.arms) {
    for (auto& run : arm.runs) {
      auto copy = copy_run(run);
      set_manifest(*copy, "hardware.gpus", json::array{});
      run = copy;
    }
  }
  const Board b = build_board(in, fixed_options());
  for (const char* name : {"driver", "gpu_model", "gpu_uuid"}) {
    const Check* c = b.cells[0].comparisons[0].check(name);
    EXPECT_EQ(c->outcome, CheckOutcome::kPass) << name;
    EXPECT_NE(c->note.find("no GPU on either side"), std::string::npos) << c->note;
  }
  EXPECT_TRUE(b.unresolved_checks.empty());
}

TEST(Fairness, TheEmbeddedSimsModelIsKnownToDyno) {
  // Runs of the embedded simulated engine without --model-file or --model-revision: their
  // model is dyno's code, equal on both sides.
  BoardInput in = changed([](RunRecord&) {});
  for (auto& arm : in.arms) {
    for (auto& run : arm.runs) {
      auto copy = copy_run(run);
      set_manifest(*copy, "engine.reached.kind", "embedded-sim");
      set_manifest(*copy, "model.revision", json::value(nullptr));
      set_manifest(*copy, "model.fingerprint", json::value(nullptr));
      run = copy;
    }
  }
  const Board b = build_board(in, fixed_options());
  for (const char* name : {"model_revision", "model_fingerprint"}) {
    const Check* c = b.cells[0].comparisons[0].check(name);
    EXPECT_EQ(c->outcome, CheckOutcome::kPass) << name;
    EXPECT_EQ(c->arm_value, json::value("simulated by dyno (embedded dyno-sim: no weights)"));
  }
}

}  // namespace
}  // namespace dyno::compare
