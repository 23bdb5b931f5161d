// Reading a file a user names for dyno to read whole (a stream to import, another tool's
// result): a regular file only and bounded. A FIFO, a device such as /dev/zero, a directory or a
// socket is refused before anything is read, so dyno never waits on a writer or reads without
// end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace dyno::workload {

/// Why a file is not read: its kind, and a phrase that follows the file's name ("is a FIFO
/// (named pipe)", "is 5 bytes, more than the 4 bytes read", "cannot be read (No such file or
/// directory)"). The caller names the file and adds what its reader expects.
struct FileRefusal {
  enum class Kind { kUnreadable, kDirectory, kNotRegular, kTooLarge };
  Kind kind = Kind::kUnreadable;
  std::string what;
};

/// The bytes of `path`, at most `max_bytes`. Calls `refuse` — which must throw the caller's own
/// error — for a file that cannot be opened or read, a directory, anything not a regular file,
/// or one larger than `max_bytes` (or that grows past it while read).
std::string read_regular_file(const std::string& path, std::uint64_t max_bytes,
                              const std::function<void(const FileRefusal&)>& refuse);

}  // namespace dyno::workload
