// The one check of records that integration tests run: every record a test's dyno wrote
// conforms to the schemas of docs/schema/. Link dyno_record to use it.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "record/record_schema.h"

namespace dyno::testing {

/// Every record under `runs_root` (each run directory, each campaign file under campaigns/ and
/// its signature sidecar)
/// conforms to the schemas (record::validate_run_dir, record::validate_campaign_file); each
/// problem is a test failure naming the directory, file, line and JSON pointer.
inline void expect_records_conform(const std::filesystem::path& runs_root) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(runs_root)) return;
  for (const auto& e : fs::directory_iterator(runs_root)) {
    if (!e.is_directory()) continue;  // e.g. the run index (index.sqlite)
    std::vector<record::SchemaProblem> problems;
    if (e.path().filename() == "campaigns") {
      for (const auto& c : fs::directory_iterator(e.path())) {
        if (c.is_directory()) continue;  // a capacity search's charts, <id>-charts/
        for (auto& p : c.path().extension() == ".sig" ? record::validate_signature_file(c.path())
                                                      : record::validate_campaign_file(c.path())) {
          problems.push_back(p);
        }
      }
    } else {
      problems = record::validate_run_dir(e.path());
    }
    for (const auto& p : problems) ADD_FAILURE() << e.path().string() << ": " << p.to_string();
  }
}

}  // namespace dyno::testing
