// tests/integration/process.h: a test's child processes never outlive the test binary, and a
// program that cannot start is an error that names it.
#include "integration/process.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using dyno::testing::Child;

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

TEST(ChildProcess, DiesWithTheProcessThatStartedIt) {
  const fs::path dir = dyno::testing::make_temp_dir("dyno-child-it");
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  // A stand-in for a test binary that crashes: it starts a `dyno sim` and is killed.
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    ::close(report[0]);
    Child sim({DYNO_BINARY, "sim", "--port", "0"}, (dir / "sim.out").string(),
              (dir / "sim.err").string());
    sim.wait_for_output("/v1");
    const pid_t pid = sim.pid();
    (void)!::write(report[1], &pid, sizeof pid);
    ::raise(SIGKILL);  // no destructor runs
  }
  ::close(report[1]);
  pid_t sim_pid = -1;
  ASSERT_EQ(::read(report[0], &sim_pid, sizeof sim_pid), static_cast<ssize_t>(sizeof sim_pid));
  ::close(report[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(helper, &st, 0), helper);
  ASSERT_TRUE(WIFSIGNALED(st));
  // The sim got SIGKILL when its parent died, and init reaped it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (alive(sim_pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(alive(sim_pid)) << "dyno sim " << sim_pid << " outlived its parent";
  fs::remove_all(dir);
}

TEST(ChildProcess, AProgramThatCannotStartIsAnError) {
  const fs::path dir = dyno::testing::make_temp_dir("dyno-child-it");
  try {
    Child c({"/nonexistent/dyno-program"}, (dir / "out").string(), (dir / "err").string());
    FAIL() << "started a program that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dyno-program"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
