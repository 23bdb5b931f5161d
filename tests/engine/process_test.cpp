// The engine's process: start, log capture, exit status, stop with grace, the whole group.
#include "engine/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "temp_dir.h"

namespace fs = std::filesystem;
using dyno::engine::EngineProcess;
using dyno::engine::ProcessError;
using dyno::engine::ProcessOptions;

namespace {

class Process : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-proc"); }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessOptions sh(const std::string& script) {
    ProcessOptions o;
    o.argv = {"sh", "-c", script};
    o.log_path = (dir_ / "engine.log").string();
    return o;
  }
  std::string log() const {
    std::ifstream in(dir_ / "engine.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  /// Alive and not a zombie.
  static bool alive(int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string s;
    if (!std::getline(stat, s)) return false;
    const auto close = s.rfind(')');
    return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
  }
  static bool wait_dead(int pid) {
    for (int i = 0; i < 500 && alive(pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !alive(pid);
  }
  int read_pid(const std::string& name) {
    for (int i = 0; i < 500; ++i) {
      std::ifstream in(dir_ / name);
      int pid = 0;
      if (in >> pid && pid > 0) return pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

  fs::path dir_;
};

}  // namespace

TEST_F(Process, CapturesOutputAndTheExitStatus) {
  auto o = sh("echo to-stdout; echo to-stderr >&2; echo \"$DYNO_TEST_VAR\"; exit 3");
  o.env["DYNO_TEST_VAR"] = "from-the-spec";
  EngineProcess p(o);
  ASSERT_TRUE(p.wait_for(std::chrono::seconds(20)));
  ASSERT_TRUE(p.exit_status().has_value());
  EXPECT_EQ(p.exit_status()->code.value_or(-1), 3);
  EXPECT_EQ(p.exit_status()->describe(), "exited with code 3");
  const std::string text = log();
  EXPECT_NE(text.find("to-stdout"), std::string::npos);
  EXPECT_NE(text.find("to-stderr"), std::string::npos);
  EXPECT_NE(text.find("from-the-spec"), std::string::npos);
  EXPECT_EQ(p.program(), "/usr/bin/sh");  // found on PATH, recorded as an absolute path
}

TEST_F(Process, UnexpectedExitIsReportedOnceAndStopIsNotUnexpected) {
  std::atomic<int> calls{0};
  {
    EngineProcess p(sh("exit 0"));
    p.on_unexpected_exit([&calls](const dyno::engine::ExitStatus&) { ++calls; });
    ASSERT_TRUE(p.wait_for(std::chrono::seconds(20)));
    for (int i = 0; i < 200 && calls.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  EXPECT_EQ(calls.load(), 1);
  std::atomic<int> stopped_calls{0};
  EngineProcess q(sh("sleep 30"));
  q.on_unexpected_exit([&stopped_calls](const dyno::engine::ExitStatus&) { ++stopped_calls; });
  const auto r = q.stop(SIGTERM, 10);
  EXPECT_TRUE(r.graceful);
  EXPECT_EQ(r.status.signal.value_or(0), SIGTERM);
  EXPECT_EQ(stopped_calls.load(), 0);
}

TEST_F(Process, StopEscalatesToSigkillAfterTheGraceAndKillsTheWholeGroup) {
  // The leader ignores SIGINT; its child (a worker, as vLLM starts) sleeps.
  EngineProcess p(sh("trap '' INT; sleep 60 & echo $! > " + (dir_ / "worker.pid").string() +
                     "; echo $$ > " + (dir_ / "leader.pid").string() + "; wait"));
  const int worker = read_pid("worker.pid");
  const int leader = read_pid("leader.pid");
  ASSERT_GT(worker, 0);
  ASSERT_EQ(leader, p.pid());
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = p.stop(SIGINT, 0.3);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.graceful);
  EXPECT_EQ(r.status.signal.value_or(0), SIGKILL);
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 20.0);
  EXPECT_TRUE(wait_dead(worker)) << "the worker outlived its engine";
  // Idempotent.
  EXPECT_EQ(p.stop(SIGINT, 5).status.signal.value_or(0), SIGKILL);
}

TEST_F(Process, DestructorLeavesNoProcessBehind) {
  int worker = 0;
  {
    EngineProcess p(sh("sleep 60 & echo $! > " + (dir_ / "worker.pid").string() + "; wait"));
    worker = read_pid("worker.pid");
    ASSERT_GT(worker, 0);
  }
  EXPECT_TRUE(wait_dead(worker));
}

TEST_F(Process, MissingProgramsAndWorkdirsAreClearErrors) {
  ProcessOptions o;
  o.log_path = (dir_ / "engine.log").string();
  o.argv = {"no-such-engine-binary-xyz", "serve"};
  try {
    EngineProcess p(o);
    ADD_FAILURE() << "started a missing program";
  } catch (const ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-engine-binary-xyz' was not found on PATH"),
              std::string::npos)
        << e.what();
  }
  o.argv = {"/nonexistent/dir/engine"};
  EXPECT_THROW(EngineProcess{o}, ProcessError);
  o = sh("true");
  o.workdir = (dir_ / "missing").string();
  try {
    EngineProcess p(o);
    ADD_FAILURE() << "started in a missing workdir";
  } catch (const ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a directory"), std::string::npos);
  }
}

TEST_F(Process, RunsInItsWorkdir) {
  auto o = sh("pwd");
  o.workdir = dir_.string();
  EngineProcess p(o);
  ASSERT_TRUE(p.wait_for(std::chrono::seconds(20)));
  EXPECT_NE(log().find(dir_.string()), std::string::npos);
}
