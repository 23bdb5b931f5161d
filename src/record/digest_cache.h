// The SHA-256 of a large file that rarely changes (dyno's own executable: with debug
// information it is ~200 MB, 0.2 CPU-seconds to hash), remembered across runs in a small
// cache keyed by the file's identity, so a run does not pay for it every time.
#pragma once

#include <filesystem>
#include <string>

namespace dyno::record {

/// $XDG_CACHE_HOME/dyno, else $HOME/.cache/dyno; empty when neither variable is set.
std::filesystem::path default_cache_dir();

/// digest::sha256_hex_file(path), remembered in `cache_dir`/file-sha256 under the identity of the
/// file `path` names (device, inode, size, modification and status-change times, nanoseconds): any
/// write, rename over or `touch` of the file changes its status-change time and so misses the
/// cache. A file changed while it is hashed is not remembered. The cache holds the 16 files hashed
/// last and is replaced atomically; a cache that cannot be read, parsed or written is ignored (the
/// hash is computed). `cache_dir` empty: no cache. Throws digest::FileError when `path` cannot be
/// read.
std::string cached_sha256_hex_file(const std::filesystem::path& path,
                                   const std::filesystem::path& cache_dir);

}  // namespace dyno::record
