// `dyno plan check` and `dyno campaign …` end to end: here (--scheduler local) and on a real
// Slurm (Debian's slurm-wlm 22.05 and munge) that the test starts in a temporary directory:
// munged on its own socket, slurmctld and slurmd on free loopback ports, one node with this
// machine's CPUs, no accounting database (statuses come from squeue, scontrol and the records).
// The daemons run as the user who runs the test (root in CI, or not); the Slurm tests are
// skipped only when the Slurm or munge binaries are absent (scripts/deps installs them).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "integration/process.h"
#include "record/run_verify.h"
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

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The program on PATH or in /usr/sbin; "" when absent.
std::string find_program(const std::string& name) {
  std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/usr/bin:/sbin";
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    const fs::path p = fs::path(dir) / name;
    if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

/// The user the daemons run as and the jobs run for: whoever runs the test (root in CI;
/// slurmd runs a job as its submitter, which needs no privilege when they are the same).
std::string user() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw != nullptr ? pw->pw_name : "root";
}

std::string short_hostname() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::string h = host;
  return h.substr(0, h.find('.'));
}

/// Polls `ok` every 200 ms until it holds or `limit` passes; returns whether it held.
bool eventually(const std::function<bool()>& ok, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return ok();
}

class CampaignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The sim preset launches this dyno's `dyno sim`: runs anywhere, ready in a moment.
    for (const char* arm : {"sim-a", "sim-b"}) {
      std::ofstream(dir_.path() / (std::string(arm) + ".toml"))
          << "name = \"" << arm << "\"\npreset = \"sim\"\nmodel = \"dyno-sim\"\n"
          << "[engine_args]\nprofile = \"small-gpu\"\n[ready]\ntimeout_s = 60\n";
    }
  }

  Result dyno(std::vector<std::string> args) {
    args.insert(args.begin(), DYNO_BINARY);
    Child c(args, dir_.path() / "cmd.out", dir_.path() / "cmd.err", env_);
    Result r;
    r.code = c.wait();
    r.out = c.out();
    r.err = c.err();
    return r;
  }

  fs::path plan(const std::string& name, const std::string& body) {
    const fs::path p = dir_.path() / (name + ".toml");
    std::ofstream(p) << "name = \"" << name << "\"\n" << body;
    return p;
  }

  std::string runs() const { return (dir_.path() / "runs").string(); }

  /// The campaign id from submit's first line, "campaign <id> · …".
  static std::string campaign_id(const std::string& out) {
    const std::size_t start = out.find("campaign ");
    if (start == std::string::npos) return "";
    const std::size_t from = start + 9;
    return out.substr(from, out.find(' ', from) - from);
  }

  json::object status(const std::string& id) {
    const Result r = dyno({"campaign", "status", id, "--runs-root", runs(), "--json"});
    try {
      return json::parse(r.out).as_object();
    } catch (const std::exception&) {
      ADD_FAILURE() << "status: " << r.out << r.err;
      return {};
    }
  }

  static std::string state_of(const json::object& st, std::size_t cell) {
    if (!st.contains("cells") || st.at("cells").as_array().size() <= cell) return "";
    return std::string(st.at("cells").as_array()[cell].at("state").as_string());
  }

  /// Every record of the runs root that verifies and says ok, with its manifest.
  std::vector<json::object> ok_records(const std::string& label_part) {
    std::vector<json::object> out;
    for (const auto& e : fs::directory_iterator(runs())) {
      const std::string name = e.path().filename().string();
      if (name.find(label_part) == std::string::npos) continue;
      if (!fs::exists(e.path() / "manifest.json")) continue;
      const json::object m = json::parse(read_file(e.path() / "manifest.json")).as_object();
      if (m.at("status").as_string() == "ok" && dyno::record::verify_run_dir(e.path()).ok()) {
        out.push_back(m);
      }
    }
    return out;
  }

  dyno::testing::TempDir dir_{"dyno-campaign"};
  std::map<std::string, std::string> env_;
};

constexpr const char* kArms =
    "[arms.a]\nengine = \"sim-a.toml\"\n[arms.b]\nengine = \"sim-b.toml\"\n"
    "[models.sim]\nmodel = \"dyno-sim\"\n";
constexpr const char* kQuick =
    "[protocols.quick]\nkind = \"run\"\n"
    "args = { requests = 4, concurrency = 2, input_tokens = 16, output_tokens = 8 }\n";

TEST_F(CampaignTest, PlanCheckPrintsTheCellsAndNamesErrors) {
  const fs::path p = plan("pair", std::string(kArms) + kQuick);
  const Result ok = dyno({"plan", "check", p.string()});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("2 arm(s) x 1 model(s) x 1 protocol(s) = 2 cell(s)"), std::string::npos)
      << ok.out;
  EXPECT_NE(ok.out.find("c02  b/sim/quick"), std::string::npos) << ok.out;
  const fs::path bad = plan("bad", "repetitions = 0\n" + std::string(kArms) + kQuick);
  const Result err = dyno({"plan", "check", bad.string()});
  EXPECT_EQ(err.code, 2);
  EXPECT_NE(err.err.find(bad.string() + ":"), std::string::npos) << err.err;
  EXPECT_NE(err.err.find("repetitions: expected an integer from 1 to 100"), std::string::npos)
      << err.err;
}

TEST_F(CampaignTest, LocalRunsTheCellsHereAndResumeRerunsOnlyTheFailedOne) {
  // c01 makes two records (repetitions); c02 cannot run (a bad flag value: exit 2).
  const fs::path p = plan("local",
                          "repetitions = 2\n[arms.a]\nengine = \"sim-a.toml\"\n"
                          "[models.sim]\nmodel = \"dyno-sim\"\n" +
                              std::string(kQuick) +
                              "[protocols.broken]\nkind = \"run\"\nargs = { concurrency = 0 }\n");
  const Result r = dyno({"campaign", "submit", p.string(), "--runs-root", runs()});
  EXPECT_EQ(r.code, 3) << r.out << r.err;  // a cell failed
  const std::string id = campaign_id(r.out);
  json::object st = status(id);
  EXPECT_EQ(state_of(st, 0), "done");
  EXPECT_EQ(st.at("cells").as_array()[0].at("records").as_array().size(), 2u);
  EXPECT_EQ(state_of(st, 1), "failed");
  EXPECT_NE(std::string(st.at("cells").as_array()[1].at("reason").as_string()).find("exit code 2"),
            std::string::npos)
      << st;
  EXPECT_FALSE(st.at("cells").as_array()[1].at("log_tail").as_array().empty());
  // Resume runs c02 again (it fails again) and leaves c01 alone.
  const Result again = dyno({"campaign", "resume", id, "--runs-root", runs()});
  EXPECT_NE(again.out.find("1 of 2 cell(s) to run"), std::string::npos) << again.out;
  st = status(id);
  EXPECT_EQ(st.at("cells").as_array()[0].at("attempts").as_int64(), 1);
  EXPECT_EQ(st.at("cells").as_array()[1].at("attempts").as_int64(), 2);
}

TEST_F(CampaignTest, AProtocolCellIsDoneOnlyWhileItsCampaignFileVerifies) {
  const fs::path p = plan("sweep",
                          "repetitions = 2\n[arms.a]\nengine = \"sim-a.toml\"\n"
                          "[models.sim]\nmodel = \"dyno-sim\"\n[protocols.sweep]\n"
                          "args = { concurrencies = [1, 2], per_slot = 1, min_requests = 2, "
                          "input_tokens = 16, output_tokens = 8 }\n");
  const Result r = dyno({"campaign", "submit", p.string(), "--runs-root", runs()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const std::string id = campaign_id(r.out);
  json::object st = status(id);
  ASSERT_EQ(state_of(st, 0), "done") << st;
  const auto& records = st.at("cells").as_array()[0].at("records").as_array();
  ASSERT_EQ(records.size(), 1u);
  const fs::path file = fs::path(runs()) / std::string(records[0].as_string());
  const json::object doc = json::parse(read_file(file)).as_object();
  EXPECT_EQ(doc.at("cells").as_array().size(), 2u);
  EXPECT_EQ(doc.at("cells").as_array()[0].at("runs").as_array().size(), 2u);  // --repeat 2
  // One byte changed in the campaign file: the cell is no longer done.
  std::string text = read_file(file);
  text.replace(text.find("\"ok\""), 4, "\"oK\"");
  std::ofstream(file) << text;
  st = status(id);
  EXPECT_EQ(state_of(st, 0), "failed");
  EXPECT_NE(
      std::string(st.at("cells").as_array()[0].at("reason").as_string()).find("does not verify"),
      std::string::npos)
      << st;
}

TEST_F(CampaignTest, ACapacityCellIsOneSearchWhoseCampaignFileIsItsRecord) {
  // Every level up to --max 2 holds a generous SLO: two probes, the boundary (2) repeated.
  const fs::path p =
      plan("cap",
           "repetitions = 2\n[arms.a]\nengine = \"sim-a.toml\"\n"
           "[models.sim]\nmodel = \"dyno-sim\"\n[protocols.slo]\n"
           "kind = \"capacity\"\nargs = { slo = \"e2e_p90=60s,errors=50%\", max = 2, "
           "per_slot = 1, min_requests = 2, input_tokens = 16, output_tokens = 8, "
           "gpu_hour_cost = 2 }\n");
  const Result r = dyno({"campaign", "submit", p.string(), "--runs-root", runs()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const json::object st = status(campaign_id(r.out));
  ASSERT_EQ(state_of(st, 0), "done") << st;
  const auto& records = st.at("cells").as_array()[0].at("records").as_array();
  ASSERT_EQ(records.size(), 1u);
  const json::object doc =
      json::parse(read_file(fs::path(runs()) / std::string(records[0].as_string()))).as_object();
  EXPECT_EQ(doc.at("protocol").at("name").as_string(), "capacity");
  const json::object& cap = doc.at("capacity").as_object();
  EXPECT_EQ(cap.at("answer").at("status").as_string(), "at_least_max") << cap;
  EXPECT_EQ(cap.at("answer").at("capacity").to_number<double>(), 2.0);
  EXPECT_EQ(cap.at("search").at("repeat_boundary").to_number<double>(), 2.0);  // repetitions
  EXPECT_EQ(cap.at("gpu_hour_cost").to_number<double>(), 2.0);
}

TEST_F(CampaignTest, DryRunWritesScriptsAndSubmitsNothing) {
  const fs::path p =
      plan("dry", std::string(kArms) + kQuick + "[resources]\ngpus = 1\ntime_limit = \"10\"\n");
  const Result r = dyno({"campaign", "submit", p.string(), "--scheduler", "slurm", "--dry-run",
                         "--runs-root", runs()});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string id = campaign_id(r.out);
  const fs::path dir = fs::path(runs()) / "cluster" / id;
  EXPECT_NE(r.out.find("would run: sbatch --parsable " + (dir / "cells" / "c01.sbatch").string()),
            std::string::npos)
      << r.out;
  const std::string script = read_file(dir / "cells" / "c02.sbatch");
  EXPECT_NE(script.find("#SBATCH --gres=gpu:1\n#SBATCH --time=10\n"), std::string::npos) << script;
  EXPECT_NE(script.find(" run --engine " + (dir_.path() / "sim-b.toml").string()),
            std::string::npos);
  const json::object st = status(id);
  EXPECT_EQ(state_of(st, 0), "missing");
  EXPECT_EQ(state_of(st, 1), "missing");
}

/// A Slurm of the test's own: munged, slurmctld and slurmd in a temporary directory.
class SlurmTest : public CampaignTest {
 protected:
  void SetUp() override {
    for (const char* p :
         {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"}) {
      if (find_program(p).empty()) GTEST_SKIP() << p << " not installed (scripts/deps)";
    }
    CampaignTest::SetUp();
    const fs::path t = slurm_.path();
    {
      std::ofstream key(t / "munge.key", std::ios::binary);
      std::ifstream rnd("/dev/urandom", std::ios::binary);
      std::vector<char> bytes(1024);
      rnd.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      key.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    fs::permissions(t / "munge.key", fs::perms::owner_read | fs::perms::owner_write);
    daemons_.push_back(std::make_unique<Child>(
        std::vector<std::string>{
            find_program("munged"), "-F", "-f", "--socket=" + (t / "munge.sock").string(),
            "--key-file=" + (t / "munge.key").string(), "--pid-file=" + (t / "munged.pid").string(),
            "--log-file=" + (t / "munged.log").string(),
            "--seed-file=" + (t / "munged.seed").string()},
        t / "munged.out", t / "munged.err"));
    ASSERT_TRUE(eventually([&] { return fs::exists(t / "munge.sock"); }, std::chrono::seconds(20)))
        << read_file(t / "munged.err");
    fs::create_directories(t / "state");
    fs::create_directories(t / "spool");
    const std::string conf = (t / "slurm.conf").string();
    std::ofstream(conf) << "ClusterName=dynotest\nSlurmctldHost=localhost\n"
                        << "SlurmctldPort=" << dyno::testing::free_loopback_port()
                        << "\nSlurmdPort=" << dyno::testing::free_loopback_port()
                        << "\nSlurmUser=" << user() << "\nSlurmdUser=" << user()
                        << "\nAuthType=auth/munge\n"
                        << "AuthInfo=socket=" << (t / "munge.sock").string()
                        << "\nCredType=cred/munge\n"
                        << "StateSaveLocation=" << (t / "state").string() << "\n"
                        << "SlurmdSpoolDir=" << (t / "spool").string() << "\n"
                        << "SlurmctldPidFile=" << (t / "slurmctld.pid").string() << "\n"
                        << "SlurmdPidFile=" << (t / "slurmd.pid").string() << "\n"
                        << "SlurmctldLogFile=" << (t / "slurmctld.log").string() << "\n"
                        << "SlurmdLogFile=" << (t / "slurmd.log").string() << "\n"
                        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                        << "JobAcctGatherType=jobacct_gather/none\n"
                        << "AccountingStorageType=accounting_storage/none\n"
                        << "JobCompType=jobcomp/none\nSelectType=select/cons_tres\n"
                        << "SelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n"
                        << "KillWait=10\nMinJobAge=600\nSchedulerType=sched/builtin\n"
                        << "NodeName=" << short_hostname()
                        << " NodeAddr=127.0.0.1 CPUs=" << std::thread::hardware_concurrency()
                        << " State=UNKNOWN\n"
                        << "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
    env_["SLURM_CONF"] = conf;
    daemons_.push_back(std::make_unique<Child>(
        std::vector<std::string>{find_program("slurmctld"), "-D", "-f", conf}, t / "ctld.out",
        t / "ctld.err", env_));
    daemons_.push_back(
        std::make_unique<Child>(std::vector<std::string>{find_program("slurmd"), "-D", "-f", conf},
                                t / "slurmd.out", t / "slurmd.err", env_));
    ASSERT_TRUE(eventually(
        [&] {
          Child c({find_program("sinfo"), "-h", "-o", "%t"}, t / "sinfo.out", t / "sinfo.err",
                  env_);
          return c.wait() == 0 && c.out().find("idle") != std::string::npos;
        },
        std::chrono::seconds(45)))
        << read_file(t / "slurmctld.log") << read_file(t / "slurmd.log");
  }

  void TearDown() override {
    if (daemons_.size() == 3) {
      // Jobs a failed test left behind end first (this cluster's only: SLURM_CONF is ours).
      const fs::path t = slurm_.path();
      Child(std::vector<std::string>{find_program("scancel"), "--full", "--user=" + user()},
            t / "scancel.out", t / "scancel.err", env_)
          .wait();
      eventually(
          [&] {
            Child q({find_program("squeue"), "-h"}, t / "squeue.out", t / "squeue.err", env_);
            return q.wait() == 0 && q.out().empty();
          },
          std::chrono::seconds(30));
    }
    // slurmd, slurmctld, munged: each stopped in turn, then waited for.
    for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
      (*it)->signal(SIGTERM);
      (*it)->wait(std::chrono::seconds(20));
    }
  }

  /// The pid of the `dyno run` carrying `label` (found in /proc), or -1.
  static pid_t dyno_pid_with(const std::string& label) {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string cmd = read_file(e.path() / "cmdline");
      if (cmd.find(std::string("\0run\0", 5)) != std::string::npos &&
          cmd.find(std::string("--label\0", 8) + label) != std::string::npos) {
        return static_cast<pid_t>(std::stol(name));
      }
    }
    return -1;
  }

  std::string label_of(const std::string& id, const std::string& cell) {
    const json::object s =
        json::parse(read_file(fs::path(runs()) / "cluster" / id / "state.json")).as_object();
    for (const auto& c : s.at("cells").as_array()) {
      if (c.at("id").as_string() == cell) return std::string(c.at("label").as_string());
    }
    return "";
  }

  dyno::testing::TempDir slurm_{"dyno-slurm"};
  std::vector<std::unique_ptr<Child>> daemons_;
};

TEST_F(SlurmTest, TwoArmsRunOnTheNodeAndAreDone) {
  // Each cell asks for every CPU of the node: one runs while the other waits for it.
  const fs::path p =
      plan("pair", "[resources]\ncpus = " + std::to_string(std::thread::hardware_concurrency()) +
                       "\ntime_limit = \"5\"\n" + kArms + kQuick);
  const Result r =
      dyno({"campaign", "submit", p.string(), "--scheduler", "slurm", "--runs-root", runs()});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string id = campaign_id(r.out);
  EXPECT_NE(r.out.find("c01  a/sim/quick  submitted: job "), std::string::npos) << r.out;
  json::object st;
  ASSERT_TRUE(eventually(
      [&] {
        st = status(id);
        const std::string a = state_of(st, 0);
        const std::string b = state_of(st, 1);
        return (a == "running" && b == "pending") || (a == "pending" && b == "running");
      },
      std::chrono::seconds(60)))
      << st;
  const std::size_t waiting = state_of(st, 0) == "pending" ? 0 : 1;
  EXPECT_EQ(std::string(st.at("cells").as_array()[waiting].at("reason").as_string())
                .rfind("PENDING (", 0),
            0u)
      << st;
  ASSERT_TRUE(eventually(
      [&] {
        st = status(id);
        return state_of(st, 0) == "done" && state_of(st, 1) == "done";
      },
      std::chrono::seconds(60)))
      << st << read_file(slurm_.path() / "slurmd.log");
  // One verified record per cell, measured (and identified) on the node.
  for (const std::string cell : {"c01", "c02"}) {
    const auto records = ok_records(label_of(id, cell));
    ASSERT_EQ(records.size(), 1u) << cell;
    const std::string host(records[0].at("hardware").at("host").as_string());
    EXPECT_EQ(host.substr(0, host.find('.')), short_hostname());  // the node that measured
    EXPECT_EQ(records[0].at("engine").at("name").as_string(), cell == "c01" ? "sim-a" : "sim-b");
  }
  const Result text = dyno({"campaign", "status", id, "--runs-root", runs()});
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("2 done"), std::string::npos) << text.out;
}

TEST_F(SlurmTest, ARunsRootWithShellCharactersIsQuotedForSbatchAndBash) {
  // sbatch reads the quoted #SBATCH --output value (a space, a quote, '%' of the path), bash
  // the quoted command line; the command substitution in the name runs nowhere.
  const fs::path marker = dir_.path() / "PWNED";
  const std::string root =
      (dir_.path() / ("my runs 'q' 100%j $(touch " + marker.string() + ")")).string();
  const fs::path p = plan("odd", std::string("[resources]\ntime_limit = \"5\"\n") +
                                     "[arms.a]\nengine = \"sim-a.toml\"\n"
                                     "[models.sim]\nmodel = \"dyno-sim\"\n" +
                                     kQuick);
  const Result r =
      dyno({"campaign", "submit", p.string(), "--scheduler", "slurm", "--runs-root", root});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string id = campaign_id(r.out);
  json::object st;
  ASSERT_TRUE(eventually(
      [&] {
        const Result s = dyno({"campaign", "status", id, "--runs-root", root, "--json"});
        try {
          st = json::parse(s.out).as_object();
        } catch (const std::exception&) {
          return false;
        }
        return state_of(st, 0) == "done";
      },
      std::chrono::seconds(60)))
      << st << read_file(slurm_.path() / "slurmd.log");
  // The job's log is where the script said, the path's '%' kept.
  const fs::path logs = fs::path(root) / "cluster" / id / "logs";
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(logs))
    n += e.path().filename().string().rfind("c01-", 0) == 0;
  EXPECT_EQ(n, 1u);
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(SlurmTest, AKilledCellFailsAndResumeRerunsOnlyIt) {
  // c01 is quick; c02 sends for 5 s and is killed (SIGKILL, as the OOM killer would) mid-cell.
  const fs::path p = plan("kill",
                          "[arms.a]\nengine = \"sim-a.toml\"\n"
                          "[models.sim]\nmodel = \"dyno-sim\"\n" +
                              std::string(kQuick) +
                              "[protocols.long]\nkind = \"run\"\n"
                              "args = { duration = 5, concurrency = 1, output_tokens = 8 "
                              "}\n");
  const Result r =
      dyno({"campaign", "submit", p.string(), "--scheduler", "slurm", "--runs-root", runs()});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string id = campaign_id(r.out);
  const std::string label = label_of(id, "c02");
  // Kill it once its record is open (the cell is measuring).
  pid_t pid = -1;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& e : fs::directory_iterator(runs())) {
          const std::string name = e.path().filename().string();
          if (name.size() > label.size() && name.ends_with("-" + label) &&
              fs::exists(e.path() / "manifest.json")) {
            pid = dyno_pid_with(label);
            return pid > 0;
          }
        }
        return false;
      },
      std::chrono::seconds(45)));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  json::object st;
  ASSERT_TRUE(eventually(
      [&] {
        st = status(id);
        return state_of(st, 0) == "done" && state_of(st, 1) == "failed";
      },
      std::chrono::seconds(60)))
      << st;
  EXPECT_TRUE(ok_records(label).empty());  // the killed record is not counted done
  const std::string reason(st.at("cells").as_array()[1].at("reason").as_string());
  EXPECT_NE(reason.find("FAILED"), std::string::npos) << reason;
  EXPECT_NE(reason.find("0 of 1 records verified"), std::string::npos) << reason;
  const std::string first_job(st.at("cells").as_array()[1].at("job_id").as_string());
  // Resume resubmits c02 only; it completes.
  const Result again = dyno({"campaign", "resume", id, "--runs-root", runs()});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("1 of 2 cell(s) to resubmit"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("c02  a/sim/long  submitted"), std::string::npos) << again.out;
  ASSERT_TRUE(eventually(
      [&] {
        st = status(id);
        return state_of(st, 1) == "done";
      },
      std::chrono::seconds(60)))
      << st;
  EXPECT_NE(std::string(st.at("cells").as_array()[1].at("job_id").as_string()), first_job);
  EXPECT_EQ(st.at("cells").as_array()[0].at("attempts").as_int64(), 1);
  EXPECT_EQ(ok_records(label).size(), 1u);
}

TEST_F(SlurmTest, ACancelledJobIsCancelledAndNotDone) {
  const fs::path p = plan("cancel",
                          "[arms.a]\nengine = \"sim-a.toml\"\n"
                          "[models.sim]\nmodel = \"dyno-sim\"\n"
                          "[protocols.long]\nkind = \"run\"\n"
                          "args = { duration = 60, concurrency = 1 }\n");
  const Result r =
      dyno({"campaign", "submit", p.string(), "--scheduler", "slurm", "--runs-root", runs()});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string id = campaign_id(r.out);
  const std::string label = label_of(id, "c01");
  // Cancelled once the cell measures (its record is open).
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& e : fs::directory_iterator(runs())) {
          if (e.path().filename().string().ends_with("-" + label) &&
              fs::exists(e.path() / "manifest.json")) {
            return true;
          }
        }
        return false;
      },
      std::chrono::seconds(45)));
  const Result c = dyno({"campaign", "cancel", id, "--runs-root", runs()});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("cancelled 1 job(s)"), std::string::npos) << c.out;
  json::object st;
  ASSERT_TRUE(eventually(
      [&] {
        st = status(id);
        return state_of(st, 0) == "cancelled";
      },
      std::chrono::seconds(60)))
      << st;
  EXPECT_TRUE(ok_records(label).empty());
  // dyno got Slurm's SIGTERM and closed its record as interrupted (it verifies, but is not ok).
  ASSERT_TRUE(eventually([&] { return dyno_pid_with(label) < 0; }, std::chrono::seconds(30)));
  std::size_t interrupted = 0;
  for (const auto& e : fs::directory_iterator(runs())) {
    if (!e.path().filename().string().ends_with("-" + label)) continue;
    const auto m = json::parse(read_file(e.path() / "manifest.json")).as_object();
    EXPECT_EQ(m.at("status").as_string(), "interrupted");
    interrupted += dyno::record::verify_run_dir(e.path()).ok() ? 1 : 0;
  }
  EXPECT_EQ(interrupted, 1u);
  const Result text = dyno({"campaign", "status", id, "--runs-root", runs()});
  EXPECT_EQ(text.code, 3);
}

/// The first match of `re`'s group 1 in the output of `child` once it printed `needle`.
std::string address_from(const Child& child, const std::string& needle, const std::string& re) {
  const std::string out = child.wait_for_output(needle);
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(re))) throw std::runtime_error("no address in: " + out);
  return m[1];
}

TEST_F(SlurmTest, OneSrunStepRunsTheShardsOfARunThatMerge) {
  if (find_program("srun").empty()) GTEST_SKIP() << "srun not installed (scripts/deps)";
  const fs::path d = dir_.path();
  Child sim({DYNO_BINARY, "sim", "--port", "0"}, d / "sim.out", d / "sim.err");
  const std::string url = address_from(sim, "/v1", "listening on (http://[0-9.]+:[0-9]+/v1)");
  Child ref({DYNO_BINARY, "clock", "serve", "--listen", "127.0.0.1:0"}, d / "ref.out",
            d / "ref.err");
  const std::string clock = address_from(ref, "reference id", "udp ([0-9.]+:[0-9]+),");
  // The recipe of docs/scale.md: one start time for every task, each task its shard from
  // SLURM_PROCID/SLURM_NTASKS (--overcommit: two tasks even on a one-CPU node).
  const std::time_t at_t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() +
                                                                std::chrono::seconds(4));
  std::tm tm{};
  gmtime_r(&at_t, &tm);
  char at[32];
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
  Child step({find_program("srun"),
              "-n",
              "2",
              "--overcommit",
              "--time=5",
              DYNO_BINARY,
              "run",
              "--url",
              url,
              "--model",
              "dyno-sim",
              "-n",
              "12",
              "-c",
              "2",
              "--output-tokens",
              "8",
              "--client-threads",
              "1",
              "--seed",
              "9",
              "--label",
              "srunpair",
              "--runs-root",
              runs(),
              "-q",
              "--shard",
              "slurm",
              "--start-at",
              at,
              "--clock-ref",
              clock},
             d / "srun.out", d / "srun.err", env_);
  ASSERT_EQ(step.wait(std::chrono::seconds(120)), 0)
      << step.out() << step.err() << read_file(slurm_.path() / "slurmd.log");
  std::vector<std::string> dirs;
  std::set<std::int64_t> ks;
  for (const auto& e : fs::directory_iterator(runs())) {
    if (e.path().filename().string().find("srunpair") == std::string::npos) continue;
    const json::object m = json::parse(read_file(e.path() / "manifest.json")).as_object();
    EXPECT_EQ(m.at("shard").at("n").as_int64(), 2);
    ks.insert(m.at("shard").at("k").as_int64());
    EXPECT_TRUE(m.at("clock").at("reference").at("after").is_object()) << m.at("clock");
    dirs.push_back(e.path().string());
  }
  EXPECT_EQ(ks, (std::set<std::int64_t>{0, 1}));  // one task each shard
  ASSERT_EQ(dirs.size(), 2u);
  const Result merged = dyno({"runs", "merge", "--runs-root", runs(), "--json",
                              "--max-clock-offset-ms", "100", dirs[0], dirs[1]});
  ASSERT_EQ(merged.code, 0) << merged.err;
  const fs::path out(std::string(json::parse(merged.out).at("dir").as_string()));
  EXPECT_TRUE(dyno::record::verify_run_dir(out).ok());
  std::ifstream lines(out / "requests.jsonl");
  std::set<std::string> ids;
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    ids.insert(std::string(json::parse(line).at("request_id").as_string()));
  }
  EXPECT_EQ(n, 12u);
  EXPECT_EQ(ids.size(), 12u);  // every request of the run once
  sim.signal(SIGTERM);
  ref.signal(SIGTERM);
  EXPECT_EQ(ref.wait(std::chrono::seconds(10)), 0);
  sim.wait(std::chrono::seconds(10));
}

}  // namespace
