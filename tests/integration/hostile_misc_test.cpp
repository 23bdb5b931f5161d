// Hostile values through the `dyno` binary (docs/reliability.md "Round three: scripts, CSV,
// database, pairing"): a line break in a value that goes into a campaign's batch script
// (refused, exit 2, nothing run), shell characters in one (quoted: the cell runs, nothing else
// does); a formula-like text in board.csv and in `dyno export csv` (guarded by the one CSV
// writer); a PostgreSQL password in every form an index location may take (never printed); two
// plain `dyno run`s on a host without GPUs (paired: "no GPU" on both sides is an identity).
// Each test has its own temporary directory; the database tests use a free port nothing
// listens on (no server: the messages of a failed connection are what is checked).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "free_port.h"
#include "integration/process.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

class HostileMisc : public ::testing::Test {
 protected:
  Result dyno(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), DYNO_BINARY);
    env.emplace("DYNO_INDEX_URL", "");
    const std::string n = std::to_string(calls_++);
    Child c(args, (dir_.path() / ("out" + n)).string(), (dir_.path() / ("err" + n)).string(), env);
    Result r;
    r.code = c.wait();
    r.out = c.out();
    r.err = c.err();
    fs::remove(dir_.path() / ("out" + n));
    fs::remove(dir_.path() / ("err" + n));
    return r;
  }

  /// A `dyno run` against the embedded sim, small and quick; no GPU source can answer.
  Result plain_run(const fs::path& runs, const std::string& label,
                   std::vector<std::string> extra = {}) {
    fs::create_directories(dir_.path() / "no-sysfs");
    std::vector<std::string> args = {"run",
                                     "-n",
                                     "8",
                                     "-c",
                                     "2",
                                     "--input-tokens",
                                     "16",
                                     "--output-tokens",
                                     "8",
                                     "-q",
                                     "--idle-baseline",
                                     "0",
                                     "--nvml-library",
                                     "/nonexistent/libnvidia-ml.so.1",
                                     "--sysfs-root",
                                     (dir_.path() / "no-sysfs").string(),
                                     "--label",
                                     label,
                                     "--runs-root",
                                     runs.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return dyno(args);
  }

  /// An engine spec of the sim preset (this dyno's `dyno sim`) and a plan of one `run` cell.
  fs::path campaign_plan(const std::string& name, const std::string& extra_top = "") {
    std::ofstream(dir_.path() / "sim.toml")
        << "name = \"sim\"\npreset = \"sim\"\nmodel = \"dyno-sim\"\n"
        << "[engine_args]\nprofile = \"small-gpu\"\n[ready]\ntimeout_s = 60\n";
    const fs::path p = dir_.path() / (name + ".toml");
    std::ofstream(p) << "name = \"" << name << "\"\n"
                     << extra_top
                     << "[arms.a]\nengine = \"sim.toml\"\n[models.sim]\nmodel = \"dyno-sim\"\n"
                     << "[protocols.quick]\nkind = \"run\"\n"
                     << "args = { requests = 4, concurrency = 2, input_tokens = 16, "
                        "output_tokens = 8, telemetry = \"off\" }\n";
    return p;
  }

  dyno::testing::TempDir dir_{"dyno-hostile-misc"};
  int calls_ = 0;
};

// --- (1) campaign batch scripts ---------------------------------------------------------------

TEST_F(HostileMisc, ALineBreakInTheRunsRootIsRefusedAndRunsNothing) {
  const fs::path plan = campaign_plan("inject");
  const fs::path marker = dir_.path() / "INJECTED";
  const std::string root = (dir_.path() / "runs").string() + "\ntouch " + marker.string() + "\n#";
  for (const char* scheduler : {"local", "slurm"}) {
    const Result r = dyno({"campaign", "submit", plan.string(), "--scheduler", scheduler,
                           "--runs-root", root, "--dry-run"});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "the runs root '")) << r.err;
    EXPECT_TRUE(contains(r.err, "runs\\ntouch ")) << r.err;  // the value, its line break shown
    EXPECT_TRUE(contains(r.err, "control character")) << r.err;
  }
  const Result run = dyno({"campaign", "submit", plan.string(), "--runs-root", root});
  EXPECT_EQ(run.code, 2) << run.out << run.err;
  const Result check = dyno({"plan", "check", plan.string(), "--runs-root", root});
  EXPECT_EQ(check.code, 2) << check.out << check.err;
  EXPECT_TRUE(contains(check.err, "the runs root '")) << check.err;
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(fs::exists(root)) << "nothing is written for a refused campaign";
}

TEST_F(HostileMisc, ALineBreakInThePlansRunsRootOrPathIsRefused) {
  const fs::path marker = dir_.path() / "INJECTED";
  // The plan's own runs_root: refused where it is read, with the file, line and key.
  const fs::path plan =
      campaign_plan("inroot", "runs_root = \"runs\\ntouch " + marker.string() + "\\n#\"\n");
  Result r = dyno({"campaign", "submit", plan.string()});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, plan.string() + ":2: runs_root: a control character")) << r.err;
  // A protocol's string argument too.
  std::string text = slurp(campaign_plan("inarg"));
  text.replace(text.find("telemetry = \"off\""), 17, "telemetry = \"off\\nid\"");
  std::ofstream(dir_.path() / "inarg.toml") << text;
  r = dyno({"plan", "check", (dir_.path() / "inarg.toml").string()});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "protocols.quick.args.telemetry: a control character")) << r.err;
  // The plan file's path (it is named in the script and the script cds to its directory).
  const fs::path odd = dir_.path() / "plan\ntouch INJECTED\n#";
  fs::create_directories(odd);
  const fs::path moved = odd / "p.toml";
  fs::copy_file(campaign_plan("moved"), moved);
  fs::copy_file(dir_.path() / "sim.toml", odd / "sim.toml");
  r = dyno({"campaign", "submit", moved.string(), "--runs-root", (dir_.path() / "runs").string()});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "the plan file's path '")) << r.err;
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(fs::exists(dir_.path() / "INJECTED"));
  EXPECT_FALSE(fs::exists(dir_.path() / "runs" / "cluster"));
}

TEST_F(HostileMisc, ShellCharactersInTheRunsRootAreQuotedAndTheCellRuns) {
  const fs::path plan = campaign_plan("quoted");
  const fs::path marker = dir_.path() / "PWNED";
  // A space, a single quote, a command substitution, a '#' and a '%' (Slurm's filename pattern).
  const fs::path root = dir_.path() / ("runs 'q' $(touch " + marker.string() + ") #x 100%j");
  // The Slurm script: the #SBATCH --output value is quoted, its '%' of the path doubled.
  Result r = dyno({"campaign", "submit", plan.string(), "--scheduler", "slurm", "--runs-root",
                   root.string(), "--dry-run"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  fs::path script;
  for (const auto& e : fs::recursive_directory_iterator(root / "cluster")) {
    if (e.path().extension() == ".sbatch") script = e.path();
  }
  const std::string text = slurp(script);
  EXPECT_TRUE(
      contains(text, "#SBATCH --output='" + dir_.path().string() + "/runs '\\''q'\\'' $(touch "))
      << text;
  EXPECT_TRUE(contains(text, " #x 100%%j/cluster/")) << text;
  EXPECT_TRUE(contains(text, "/logs/c01-%j.out'\n")) << text;
  // Here (bash runs the script): the cell runs and is done; nothing else ran.
  r = dyno({"campaign", "submit", plan.string(), "--runs-root", root.string()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "done")) << r.out;
  EXPECT_FALSE(fs::exists(marker));
}

// --- (12) one CSV writer -------------------------------------------------------------------------

TEST_F(HostileMisc, AFormulaLikeModelIsGuardedInBoardCsvAndExportCsv) {
  // The embedded sim serves the model its profile names: a profile whose model is a formula.
  const fs::path probe = dir_.path() / "probe";
  ASSERT_EQ(plain_run(probe, "probe").code, 0);
  fs::path probe_run;
  for (const auto& e : fs::directory_iterator(probe)) {
    if (e.is_directory()) probe_run = e.path();
  }
  json::object profile = json::parse(slurp(probe_run / "manifest.json"))
                             .as_object()
                             .at("engine")
                             .at("sim_profile")
                             .as_object();
  const std::string formula = "=HYPERLINK(\"http://x\",\"y\")";
  profile["model_name"] = formula;
  profile["name"] = "formula";
  const fs::path profile_file = dir_.path() / "formula.json";
  std::ofstream(profile_file) << json::serialize(profile);
  const fs::path runs = dir_.path() / "runs";
  std::vector<std::string> ids;
  for (const char* label : {"a", "b"}) {
    const Result r = plain_run(runs, label, {"--profile", profile_file.string()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  for (const auto& e : fs::directory_iterator(runs)) {
    if (e.is_directory() && fs::exists(e.path() / "manifest.json")) {
      ids.push_back(e.path().filename().string());
    }
  }
  ASSERT_EQ(ids.size(), 2u);
  const std::string guarded = ",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",";
  const fs::path board = dir_.path() / "board";
  const Result rep = dyno({"report", "--arm", "a=label=a", "--arm", "b=label=b", "--runs-root",
                           runs.string(), "--allow-unresolved", "--out", board.string()});
  ASSERT_EQ(rep.code, 0) << rep.out << rep.err;
  const std::string csv = slurp(board / "board.csv");
  EXPECT_TRUE(contains(csv, guarded)) << csv;
  EXPECT_FALSE(contains(csv, ",\"=")) << csv;
  EXPECT_FALSE(contains(csv, ",=")) << csv;
  EXPECT_FALSE(contains(csv, ",'-")) << csv;  // a number is never guarded
  const fs::path out = dir_.path() / "runs.csv";
  const Result exp =
      dyno({"export", "csv", ids[0], ids[1], "--runs-root", runs.string(), "-o", out.string()});
  ASSERT_EQ(exp.code, 0) << exp.out << exp.err;
  const std::string table = slurp(out);
  EXPECT_TRUE(contains(table, guarded)) << table;
  EXPECT_FALSE(contains(table, ",\"=")) << table;
  EXPECT_FALSE(contains(table, ",=")) << table;
}

// --- (13) the PostgreSQL password ----------------------------------------------------------------

TEST_F(HostileMisc, ThePasswordIsNeverPrintedWhateverFormTheIndexLocationTakes) {
  const std::string port = std::to_string(dyno::testing::free_loopback_port());
  const std::string pw = "Hid?den-Pw-42";  // a '?' inside: libpq reads it as the password
  const std::vector<std::string> forms = {
      // a mistyped scheme
      "postgresql:/dyno:" + pw + "@127.0.0.1:" + port + "/db",
      "postgres//dyno:" + pw + "@127.0.0.1:" + port + "/db",
      "postgresq://dyno:" + pw + "@127.0.0.1:" + port + "/db",
      "postgresql:dyno:" + pw + "@127.0.0.1:" + port + "/db",
      // a libpq keyword/value string, plain and quoted
      "host=127.0.0.1 port=" + port + " user=dyno password=" + pw + " dbname=db",
      "host=127.0.0.1 port=" + port + " password = '" + pw + " x\\'y' dbname=db",
      // a URL whose password holds a '?' (it connects, and the connection fails)
      "postgresql://dyno:" + pw + "@127.0.0.1:" + port + "/db",
      "postgresql://dyno@127.0.0.1:" + port + "/db?connect_timeout=2&password=" + pw,
  };
  const fs::path runs = dir_.path() / "runs";
  fs::create_directories(runs);
  for (const std::string& form : forms) {
    std::vector<Result> results;
    results.push_back(dyno({"runs", "list", "--runs-root", runs.string(), "--index", form}));
    results.push_back(
        dyno({"compare", "--arm", "a=label=a", "--arm", "b=label=b", "--runs-root", runs.string()},
             {{"DYNO_INDEX_URL", form}}));
    // A run whose index cannot be reached is still a record (a warning, exit 0).
    results.push_back(dyno({"run", "-n", "1", "-q", "--telemetry", "off", "--index", form,
                            "--runs-root", runs.string()}));
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      if (i < 2) {
        EXPECT_NE(r.code, 0) << form;
      }
      const std::string all = r.out + r.err;
      EXPECT_TRUE(contains(all, "index") || contains(all, "URL")) << form << ": " << all;
      for (const std::string& part : {pw, std::string("Hid?den"), std::string("den-Pw-42")}) {
        EXPECT_FALSE(contains(all, part)) << form << " printed:\n" << all;
      }
    }
  }
}

// --- (B5) two plain runs on a host without GPUs pair
// -----------------------------------------------

const json::object* check_of(const json::object& board, const std::string& name) {
  for (const auto& cell : board.at("cells").as_array()) {
    for (const auto& cmp : cell.at("comparisons").as_array()) {
      for (const auto& c : cmp.at("checks").as_array()) {
        if (c.at("name").as_string() == name) return &c.as_object();
      }
    }
  }
  return nullptr;
}

TEST_F(HostileMisc, TwoPlainRunsOnAHostWithoutGpusPairWithoutFlags) {
  const fs::path runs = dir_.path() / "runs";
  for (const char* label : {"a", "b"}) {
    const Result r = plain_run(runs, label);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const Result r = dyno({"compare", "--json", "--arm", "a=label=a", "--arm", "b=label=b",
                         "--runs-root", runs.string()});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json::object board = json::parse(r.out).as_object();
  for (const char* name : {"driver", "gpu_model", "gpu_uuid"}) {
    const json::object* c = check_of(board, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->at("outcome").as_string(), "pass") << name << ": " << json::serialize(*c);
    EXPECT_TRUE(c->at("arm_value").is_array() && c->at("arm_value").as_array().empty());
    EXPECT_TRUE(contains(std::string(c->at("note").as_string()), "no GPU on either side"));
  }
  EXPECT_TRUE(board.at("status_detail").at("unresolved_checks").as_array().empty()) << r.out;
}

TEST_F(HostileMisc, TelemetryOffLeavesTheGpuIdentityUnresolved) {
  const fs::path runs = dir_.path() / "runs";
  ASSERT_EQ(plain_run(runs, "a").code, 0);
  ASSERT_EQ(plain_run(runs, "b", {"--telemetry", "off"}).code, 0);
  const Result r =
      dyno({"compare", "--arm", "a=label=a", "--arm", "b=label=b", "--runs-root", runs.string()});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "gpu_model")) << r.err;
  EXPECT_TRUE(contains(r.err, "telemetry was off")) << r.err;
}

}  // namespace
