// Campaign plan files: cells, resources, the flags a cell's command gets, the batch script,
// and errors that name the file, the line and the key.
#include "cluster/plan.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cluster/campaign.h"
#include "cluster/command.h"
#include "temp_dir.h"

namespace dyno::cluster {
namespace {

namespace fs = std::filesystem;

class PlanTest : public ::testing::Test {
 protected:
  PlanTest() {
    write("engine.toml", "name = \"sim-a\"\npreset = \"sim\"\nmodel = \"m\"\n");
    write("engine-b.toml", "name = \"sim-b\"\npreset = \"sim\"\nmodel = \"m\"\n");
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.path() / name) << text;
    return dir_.path() / name;
  }
  /// The PlanError's message, or "" when the plan loads.
  std::string error_of(const std::string& text) {
    const fs::path p = write("plan.toml", text);
    try {
      load_plan_file(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      return e.what();
    }
    return "";
  }
  testing::TempDir dir_{"dyno-plan"};
};

constexpr const char* kPlan = R"(name = "pair"
repetitions = 2

[resources]
gpus = 1
gpu_type = "h100"
time_limit = "00:30:00"
partition = "gpu"

[arms.a]
engine = "engine.toml"

[arms.b]
engine = "engine-b.toml"
resources = { gpus = 2, constraint = "nvlink" }

[models.small]
model = "dyno-sim"

[protocols.smoke]
kind = "run"
args = { requests = 4, concurrency = 2, keep_outputs = true }

[protocols.sweep]
args = { concurrencies = [1, 4], per_slot = 2 }
resources = { time_limit = "2:00:00" }
)";

TEST_F(PlanTest, CellsAreArmsTimesModelsTimesProtocolsWithMergedResources) {
  const PlanFile plan = load_plan_file(write("plan.toml", kPlan));
  const auto cells = plan.cells();
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].id, "c01");
  EXPECT_EQ(cells[0].name, "a/small/smoke");
  EXPECT_EQ(cells[3].name, "b/small/sweep");
  EXPECT_EQ(cells[0].arm->engine, dir_.path() / "engine.toml");
  EXPECT_EQ(cells[0].arm->engine_name, "sim-a");
  EXPECT_EQ(resources_text(cells[0].resources), "gpus=1:h100 time=00:30:00 partition=gpu");
  EXPECT_EQ(resources_text(cells[3].resources),
            "gpus=2:h100 constraint=nvlink time=2:00:00 partition=gpu");
  EXPECT_EQ(cells[1].protocol->kind, "sweep");  // the table's name
}

TEST_F(PlanTest, CommandsAndScriptCarryTheCellsFlags) {
  const PlanFile plan = load_plan_file(write("plan.toml", kPlan));
  const auto cells = plan.cells();
  CampaignState state;
  state.campaign_id = "20261203T130000Z-abcdef-pair";
  state.runs_root = "/shared/runs";
  state.dir = "/shared/runs/cluster/20261203T130000Z-abcdef-pair";
  // run: one command per repetition; a protocol: one, with --repeat.
  const auto run = cell_commands(plan, cells[0], state, "L1", "/bin/dyno");
  ASSERT_EQ(run.size(), 2u);
  EXPECT_EQ(shell_line(run[0]),
            "/bin/dyno run --engine " + (dir_.path() / "engine.toml").string() +
                " --model dyno-sim --runs-root /shared/runs --label L1 --quiet --requests 4 "
                "--concurrency 2 --keep-outputs");
  const auto sweep = cell_commands(plan, cells[1], state, "L2", "/bin/dyno");
  ASSERT_EQ(sweep.size(), 1u);
  EXPECT_NE(shell_line(sweep[0]).find("sweep --engine"), std::string::npos);
  EXPECT_NE(shell_line(sweep[0]).find("--repeat 2 --concurrencies 1,4 --per-slot 2"),
            std::string::npos);
  CellState cs;
  cs.label = "L2";
  const std::string script = batch_script(plan, cells[3], state, cs, "/bin/dyno");
  for (const char* line :
       {"#SBATCH --gres=gpu:h100:2\n", "#SBATCH --constraint=nvlink\n", "#SBATCH --time=2:00:00\n",
        "#SBATCH --partition=gpu\n",
        "#SBATCH --output=/shared/runs/cluster/20261203T130000Z-abcdef-pair/logs/c04-%j.out\n",
        "\nexec /bin/dyno sweep "}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << " in\n" << script;
  }
  const std::string run_script = batch_script(plan, cells[0], state, cs, "/bin/dyno");
  EXPECT_EQ(run_script.find("exec "), std::string::npos);  // two commands, each checked
  EXPECT_NE(run_script.find("--keep-outputs || exit $?\n"), std::string::npos);
}

TEST_F(PlanTest, ScriptValuesAreQuotedAndControlCharactersRefused) {
  const PlanFile plan = load_plan_file(write("plan.toml", kPlan));
  const auto cells = plan.cells();
  CampaignState state;
  state.campaign_id = "20261203T130000Z-abcdef-pair";
  state.runs_root = "/shared/my runs";
  state.dir = "/shared/my runs/cluster/20261203T130000Z-abcdef-pair";
  CellState cs;
  cs.label = "L";
  const std::string script = batch_script(plan, cells[0], state, cs, "/bin/dyno");
  EXPECT_NE(script.find("#SBATCH --output='/shared/my runs/cluster/20261203T130000Z-abcdef-pair/"
                        "logs/c01-%j.out'\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("--runs-root '/shared/my runs' "), std::string::npos) << script;
  // A '%' of the path is not a Slurm pattern.
  state.dir = "/shared/100%/cluster/x";
  EXPECT_NE(batch_script(plan, cells[0], state, cs, "/bin/dyno")
                .find("#SBATCH --output=/shared/100%%/cluster/x/logs/c01-%j.out\n"),
            std::string::npos);
  // A line break anywhere: refused, naming the value.
  state.runs_root = "/shared/runs\ntouch /tmp/x";
  try {
    batch_script(plan, cells[0], state, cs, "/bin/dyno");
    ADD_FAILURE() << "accepted";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("/shared/runs\\ntouch /tmp/x"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(check_script_values(plan, "/shared/r\runs", "/bin/dyno"), PlanError);
  EXPECT_THROW(check_script_values(plan, "/shared/runs", "/bin/dy\x7fno"), PlanError);
  EXPECT_NO_THROW(check_script_values(plan, "/shared/my 'runs' $(x)", "/bin/dyno"));
  // A plan's string with a control character: refused where it is read.
  std::string bad = kPlan;
  bad.replace(bad.find("name = \"pair\""), 13, "name = \"pair\"\nruns_root = \"a\\tb\"");
  EXPECT_NE(error_of(bad).find("runs_root: a control character"), std::string::npos)
      << error_of(bad);
}

TEST_F(PlanTest, ACapacitySearchIsOneCellThatResumesItsOwnSearch) {
  const PlanFile plan = load_plan_file(write("plan.toml", R"(name = "cap"
repetitions = 3

[arms.a]
engine = "engine.toml"

[models.small]
model = "dyno-sim"

[protocols.slo]
kind = "capacity"
args = { slo = "ttft_p90=500ms,errors=1%", by = "rate", max = 32, gpu_hour_cost = 2.5 }
)"));
  const auto cells = plan.cells();
  ASSERT_EQ(cells.size(), 1u);
  CampaignState state;
  state.campaign_id = "20261207T130000Z-abcdef-cap";
  state.runs_root = "/shared/runs";
  state.dir = "/shared/runs/cluster/20261207T130000Z-abcdef-cap";
  const auto cmds = cell_commands(plan, cells[0], state, "L1", "/bin/dyno");
  ASSERT_EQ(cmds.size(), 1u);
  const std::string line = shell_line(cmds[0]);
  // The plan's repetitions repeat the boundary; a resubmitted job takes up the search its
  // killed job left (--resume auto, by its label).
  EXPECT_EQ(line.rfind("/bin/dyno capacity --engine ", 0), 0u) << line;
  for (const char* part : {" --label L1 --quiet ", " --repeat-boundary 3 --resume auto ",
                           " --slo ttft_p90=500ms,errors=1%", " --by rate", " --max 32",
                           " --gpu-hour-cost 2.5"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
  }
  EXPECT_EQ(line.find(" --repeat 3"), std::string::npos) << line;
  // The campaign sets --resume and --repeat-boundary itself.
  const std::string file = (dir_.path() / "plan.toml").string();
  for (const char* reserved : {"resume = \"x\"", "repeat_boundary = 2"}) {
    std::ofstream(file) << "name = \"cap\"\n[arms.a]\nengine = \"engine.toml\"\n"
                        << "[models.small]\nmodel = \"dyno-sim\"\n[protocols.slo]\n"
                        << "kind = \"capacity\"\nargs = { " << reserved << " }\n";
    try {
      load_plan_file(file);
      ADD_FAILURE() << reserved << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("set by the campaign"), std::string::npos) << e.what();
    }
  }
}

TEST_F(PlanTest, ErrorsNameTheFileLineAndKey) {
  const std::string file = (dir_.path() / "plan.toml").string();
  std::string plan = kPlan;
  // A flag a protocol does not have.
  std::string bad = plan;
  bad.replace(bad.find("per_slot = 2"), 12, "per_slots = 2");
  EXPECT_EQ(error_of(bad).rfind(file + ":25: protocols.sweep.args.per_slots: not a flag", 0), 0u)
      << error_of(bad);
  // A flag the campaign sets itself.
  bad = plan;
  bad.replace(bad.find("requests = 4"), 12, "runs_root = \"x\"");
  EXPECT_NE(error_of(bad).find(":22: protocols.smoke.args.runs_root: set by the campaign"),
            std::string::npos)
      << error_of(bad);
  // A missing engine spec file.
  bad = plan;
  bad.replace(bad.find("engine-b.toml"), 13, "nope.toml");
  EXPECT_NE(error_of(bad).find(":14: arms.b.engine: no such engine spec file"), std::string::npos)
      << error_of(bad);
  // A bad time limit, an unknown key, a bad name, a bad kind, an #SBATCH-unsafe value.
  bad = plan;
  bad.replace(bad.find("00:30:00"), 8, "half an hour");
  EXPECT_NE(error_of(bad).find(":7: resources.time_limit: 'half an hour'"), std::string::npos)
      << error_of(bad);
  bad = plan;
  bad.replace(bad.find("partition ="), 9, "partitoin");
  EXPECT_NE(error_of(bad).find(":8: resources.partitoin: unknown key"), std::string::npos)
      << error_of(bad);
  bad = plan;
  bad.replace(bad.find("[models.small]"), 14, "[models.\"a b\"]");
  EXPECT_NE(error_of(bad).find("models.a b: names are"), std::string::npos) << error_of(bad);
  bad = plan;
  bad.replace(bad.find("kind = \"run\""), 12, "kind = \"walk\"");
  EXPECT_NE(error_of(bad).find(":21: protocols.smoke.kind: unknown protocol 'walk'"),
            std::string::npos)
      << error_of(bad);
  bad = plan;
  bad.replace(bad.find("\"gpu\""), 5, "\"gpu\\n#SBATCH --x\"");
  EXPECT_NE(error_of(bad).find(":8: resources.partition:"), std::string::npos) << error_of(bad);
  bad = plan;
  bad.replace(bad.find("gpus = 1\n"), 9, "");  // arm b still has gpus, arm a none
  EXPECT_NE(error_of(bad).find("cell a/small/smoke has a gpu_type (h100) but no gpus"),
            std::string::npos)
      << error_of(bad);
  EXPECT_NE(error_of("name = \"x\"\n").find("arms: the plan needs at least one"),
            std::string::npos);
  EXPECT_NE(error_of("name = \"x\"\n[[arms]]\n").find(file + ":2:"), std::string::npos);
  // A broken engine spec is named by its own file.
  write("engine-b.toml", "name = \"sim-b\"\npreset = \"simm\"\n");
  EXPECT_NE(error_of(plan).find("engine-b.toml:2:"), std::string::npos) << error_of(plan);
}

}  // namespace
}  // namespace dyno::cluster
