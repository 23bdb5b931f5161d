// Closing a record when a second interrupt exits at once (record/close_at_once.h): from what a
// killed run leaves on disk, the record is closed as `interrupted` and verifies.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/run_command.h"
#include "record/close_at_once.h"
#include "record/record_json.h"
#include "record/run_verify.h"
#include "record/run_writer.h"

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::string problems(const fs::path& dir) {
  std::string out;
  for (const auto& p : dyno::record::verify_run_dir(dir).problems) {
    out += p.check + " " + p.path + ": " + p.message + "\n";
  }
  return out;
}

json::object read_json(const fs::path& path) {
  return json::parse(dyno::record::read_file(path)).as_object();
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::vector<std::string> out;
  std::istringstream in(dyno::record::read_file(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

class InterruptClose : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "dyno-close-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    // A real record: the embedded simulated engine, in this process.
    dyno::app::RunOptions o;
    o.load.requests = 6;
    o.load.concurrency = 2;
    o.stream.input_tokens = 16;
    o.stream.output_tokens = 4;
    o.telemetry.mode = "off";
    o.console.quiet = true;
    o.console.json = true;
    o.record.runs_root = (root_ / "runs").string();
    testing::internal::CaptureStdout();
    ASSERT_EQ(dyno::app::run_command(o), 0);
    testing::internal::GetCapturedStdout();
    for (const auto& e : fs::directory_iterator(root_ / "runs")) {
      if (e.is_directory()) run_ = e.path();
    }
    ASSERT_FALSE(run_.empty());
    ASSERT_EQ(problems(run_), "");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  /// The record as a run killed mid-way leaves it: manifest `running`, no summary, no
  /// SHA256SUMS, request lines in completion order with a torn last one.
  void kill_mid_run() {
    json::object m = read_json(run_ / "manifest.json");
    m["status"] = "running";
    m["ended_at"] = nullptr;
    m.erase("clock");
    m.erase("telemetry");
    m["warnings"] = json::array();
    dyno::record::write_file_atomic(run_ / "manifest.json", dyno::record::pretty_json(m));
    fs::remove(run_ / "summary.json");
    fs::remove(run_ / "SHA256SUMS");
    std::vector<std::string> lines = lines_of(run_ / "requests.jsonl");
    std::reverse(lines.begin(), lines.end());
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    text += R"({"index":99,"phase":"meas)";
    dyno::record::write_file_atomic(run_ / "requests.jsonl", text);
  }

  fs::path root_;
  fs::path run_;
};

TEST_F(InterruptClose, ARunningRecordIsClosedAsInterruptedAndVerifies) {
  const json::object before = read_json(run_ / "summary.json");
  const std::size_t requests = lines_of(run_ / "requests.jsonl").size();
  kill_mid_run();
  ASSERT_NE(problems(run_), "");  // what the second interrupt used to leave

  dyno::record::close_record_at_once(run_, {"off", 100.0});
  EXPECT_EQ(problems(run_), "");
  const json::object m = read_json(run_ / "manifest.json");
  EXPECT_EQ(m.at("status"), "interrupted");
  EXPECT_TRUE(m.at("clock").at("t0_steady_ns").is_null());
  EXPECT_EQ(m.at("telemetry").at("mode"), "off");
  EXPECT_EQ(m.at("warnings").as_array().back().at("code"), "exited_at_once");
  const json::object s = read_json(run_ / "summary.json");
  EXPECT_EQ(s.at("status"), "interrupted");
  EXPECT_EQ(s.at("requests"), before.at("requests"));
  EXPECT_EQ(s.at("tokens"), before.at("tokens"));
  EXPECT_TRUE(s.at("client").at("connections_opened").is_null());
  // Every complete line kept, in index order; the torn one dropped.
  const auto lines = lines_of(run_ / "requests.jsonl");
  ASSERT_EQ(lines.size(), requests);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(json::parse(lines[i]).at("index").to_number<std::size_t>(), i);
  }
}

TEST_F(InterruptClose, AFinishedRecordIsLeftAsItIs) {
  const std::string manifest = dyno::record::read_file(run_ / "manifest.json");
  const std::string sums = dyno::record::read_file(run_ / "SHA256SUMS");
  dyno::record::close_record_at_once(run_, {});
  EXPECT_EQ(dyno::record::read_file(run_ / "manifest.json"), manifest);
  EXPECT_EQ(dyno::record::read_file(run_ / "SHA256SUMS"), sums);
}

TEST_F(InterruptClose, ARecordThatWroteItsManifestOnlyGetsItsChecksums) {
  // The run had written summary and manifest; the interrupt came before SHA256SUMS.
  const std::string manifest = dyno::record::read_file(run_ / "manifest.json");
  fs::remove(run_ / "SHA256SUMS");
  dyno::record::close_record_at_once(run_, {});
  EXPECT_EQ(dyno::record::read_file(run_ / "manifest.json"), manifest);
  EXPECT_EQ(problems(run_), "");
}

TEST(OpenRunDirs, ListsTheWritersAlive) {
  std::string tmpl = (fs::temp_directory_path() / "dyno-open-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path root = tmpl;
  {
    dyno::record::RunWriter writer(root, "20260101T000000Z-abcdef", false);
    const auto dirs = dyno::record::open_run_dirs();
    EXPECT_NE(std::find(dirs.begin(), dirs.end(), writer.dir()), dirs.end());
  }
  const auto dirs = dyno::record::open_run_dirs();
  EXPECT_EQ(std::find(dirs.begin(), dirs.end(), root / "20260101T000000Z-abcdef"), dirs.end());
  fs::remove_all(root);
}

}  // namespace
