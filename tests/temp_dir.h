// Private temporary directories for tests. Every test that needs a path on disk takes it from
// here: the directory is made by mkdtemp (a fresh, unguessable name, mode 0700, created
// atomically), so parallel test processes, repeated runs and other users never share one. A
// name built from a counter, a pid, a time seed or random_device can collide; this cannot.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace dyno::testing {

/// Makes a new private directory `<TMPDIR>/<prefix>-XXXXXX` and returns its path. Throws
/// std::runtime_error naming the template when it cannot.
inline std::filesystem::path make_temp_dir(std::string_view prefix = "dyno-test") {
  std::string templ =
      (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + templ + ": " + std::strerror(errno));
  }
  return templ;
}

/// A private temporary directory (make_temp_dir), removed with everything in it at the end of
/// its scope; kept when the test failed, so the files can be looked at (its path is printed).
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "dyno-test") : path_(make_temp_dir(prefix)) {}
  ~TempDir() {
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "kept %s for a look (the test failed)\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  /// path() / rel
  std::filesystem::path operator/(const std::filesystem::path& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

/// One private directory for the whole test process (make_temp_dir on first use, removed at
/// exit), for helpers that are free functions: `process_temp_dir() / "truth-framing.jsonl"`.
/// Names inside it need only differ between the tests of one process.
inline const std::filesystem::path& process_temp_dir() {
  struct Holder {
    std::filesystem::path path = make_temp_dir("dyno-test-process");
    ~Holder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Holder holder;
  return holder.path;
}

}  // namespace dyno::testing
