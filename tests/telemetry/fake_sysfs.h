// FakeSysfs: a throw-away directory tree standing in for /sys or /proc in telemetry tests
// (telemetry-notes §7.2). Write a file, sample, rewrite it, sample again: that scripts a time
// series. The tree is removed when the helper goes out of scope.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace dyno::telemetry::testing {

class FakeSysfs {
 public:
  FakeSysfs() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dyno-fake-sysfs-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = templ;
  }
  ~FakeSysfs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path path(const std::string& rel) const { return root_ / rel; }

  /// Writes `content` (plus a newline, as sysfs does) to root/rel, creating parent dirs.
  void write(const std::string& rel, const std::string& content) const {
    const auto p = path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + p.string());
    out << content << '\n';
  }
  void write(const std::string& rel, long long value) const { write(rel, std::to_string(value)); }
  void mkdir(const std::string& rel) const { std::filesystem::create_directories(path(rel)); }
  void remove(const std::string& rel) const { std::filesystem::remove_all(path(rel)); }
  /// Creates root/rel as a symlink to `target` (taken as is: relative or absolute).
  void symlink(const std::string& target, const std::string& rel) const {
    const auto p = path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::filesystem::create_symlink(target, p);
  }
  void chmod(const std::string& rel, mode_t mode) const {
    if (::chmod(path(rel).c_str(), mode) != 0) throw std::runtime_error("chmod failed");
  }

 private:
  std::filesystem::path root_;
};

}  // namespace dyno::telemetry::testing
