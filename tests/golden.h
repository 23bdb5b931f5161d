// Golden-file comparison. Regenerate every golden file with DYNO_UPDATE_GOLDEN=1 (then review
// the diff with git before committing it).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dyno::testing {

inline void expect_golden(const std::string& relative_path, const std::string& actual) {
  const std::filesystem::path path = std::filesystem::path(DYNO_SOURCE_DIR) / relative_path;
  const char* update = std::getenv("DYNO_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden file " << path
                         << " (run the test with DYNO_UPDATE_GOLDEN=1 to create it)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), actual) << "output differs from " << path
                              << " (DYNO_UPDATE_GOLDEN=1 regenerates it)";
}

}  // namespace dyno::testing
