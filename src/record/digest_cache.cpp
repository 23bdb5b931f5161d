#include "record/digest_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <vector>

#include "digest/digest.h"
#include "record/run_writer.h"

namespace dyno::record {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxEntries = 16;
constexpr const char* kCacheFile = "file-sha256";
constexpr const char* kVersion = "dyno-file-sha256-v1";

/// The identity of the file `path` names, as one line of text; empty when it cannot be read.
std::string identity(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  std::ostringstream key;
  key << st.st_dev << ' ' << st.st_ino << ' ' << st.st_size << ' ' << st.st_mtim.tv_sec << '.'
      << st.st_mtim.tv_nsec << ' ' << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec;
  return key.str();
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

struct Entry {
  std::string key;
  std::string sha256;
};

/// The cache's entries, oldest first; none when it is missing or not a cache of this version.
std::vector<Entry> read_cache(const fs::path& file) {
  std::vector<Entry> entries;
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line != kVersion) return entries;
  while (std::getline(in, line)) {
    const auto tab = line.rfind('\t');
    if (tab == std::string::npos) return {};
    Entry e{line.substr(0, tab), line.substr(tab + 1)};
    if (e.key.empty() || !is_sha256_hex(e.sha256)) return {};
    entries.push_back(std::move(e));
  }
  return entries;
}

void write_cache(const fs::path& dir, std::vector<Entry> entries) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return;
  if (entries.size() > kMaxEntries) {
    entries.erase(entries.begin(),
                  entries.begin() + static_cast<std::ptrdiff_t>(entries.size() - kMaxEntries));
  }
  std::random_device rd;
  const fs::path tmp = dir / (std::string(kCacheFile) + ".tmp-" + std::to_string(::getpid()) + "-" +
                              std::to_string(rd()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kVersion << '\n';
    for (const Entry& e : entries) out << e.key << '\t' << e.sha256 << '\n';
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, dir / kCacheFile, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return fs::path(xdg) / "dyno";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return fs::path(home) / ".cache" / "dyno";
  }
  return {};
}

std::string cached_sha256_hex_file(const fs::path& path, const fs::path& cache_dir) {
  const std::string before = identity(path);
  if (cache_dir.empty() || before.empty()) return digest::sha256_hex_file(path);
  std::vector<Entry> entries = read_cache(cache_dir / kCacheFile);
  for (const Entry& e : entries) {
    if (e.key == before) return e.sha256;
  }
  std::string sha256 = digest::sha256_hex_file(path);
  if (identity(path) != before) return sha256;  // changed while it was read: not remembered
  std::erase_if(entries, [&](const Entry& e) { return e.key == before; });
  entries.push_back({before, sha256});
  write_cache(cache_dir, std::move(entries));
  return sha256;
}

}  // namespace dyno::record
