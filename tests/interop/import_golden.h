// Golden records of `dyno import`: the records a file's results become (manifest, summary and
// every requests.jsonl line), written at a fixed time by a fixed harness, each verified, then
// compared as one JSON document with tests/record/golden/import/<name>.json (the random part
// of the run id replaced by RUN). Regenerate with DYNO_UPDATE_GOLDEN=1 and review the diff.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "golden.h"
#include "interop/result_import.h"
#include "json/json_text.h"
#include "record/record_reader.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "temp_dir.h"

namespace dyno::testing {

inline interop::ImportWriteOptions fixed_import_options(const std::filesystem::path& root) {
  interop::ImportWriteOptions o;
  o.runs_root = root;
  o.harness = record::harness_from_json(boost::json::object{{"name", "dyno"},
                                                            {"version", "0.0.0-test"},
                                                            {"git_commit", "unknown"},
                                                            {"git_dirty", false},
                                                            {"build_type", "test"},
                                                            {"executable_sha256", nullptr}});
  o.now = std::chrono::system_clock::time_point(std::chrono::seconds(1767323045));  // 2026-01-02
  return o;
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

/// Writes every result (read from `file_name`, whose bytes are `bytes`), checks each record
/// verifies, and compares them with the golden file `golden_name`. `api`: as --api gives it.
inline void expect_import_golden(const std::string& golden_name,
                                 const std::vector<interop::ImportedResult>& results,
                                 const std::string& file_name, const std::string& bytes,
                                 const std::optional<std::string>& api = std::nullopt) {
  TempDir root;
  boost::json::array records;
  for (const interop::ImportedResult& r : results) {
    interop::ImportWriteOptions options = fixed_import_options(root.path());
    options.api = api;
    const interop::ImportOutcome out = interop::write_imported_run(r, file_name, bytes, options);
    const record::VerifyReport report = record::verify_run_dir(out.dir, true);
    for (const auto& p : report.problems)
      ADD_FAILURE() << out.run_id << ": " << p.path << ": " << p.message;
    boost::json::object doc{
        {"manifest", boost::json::parse(record::read_file(out.dir / "manifest.json"))},
        {"summary", boost::json::parse(record::read_file(out.dir / "summary.json"))}};
    boost::json::array lines;
    if (std::filesystem::exists(out.dir / "requests.jsonl")) {
      std::istringstream in(record::read_file(out.dir / "requests.jsonl"));
      for (std::string line; std::getline(in, line);) lines.push_back(boost::json::parse(line));
    }
    doc["requests"] = std::move(lines);
    std::string text = json_text::pretty(doc);
    records.push_back(boost::json::parse(replace_all(text, out.run_id, "RUN")));
  }
  expect_golden("tests/record/golden/import/" + golden_name + ".json",
                json_text::pretty(records) + "\n");
}

}  // namespace dyno::testing
