// The run directory: atomic file writes, the requests.jsonl appender, SHA256SUMS.
#pragma once

#include <boost/json/value.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "metrics/trace.h"

namespace dyno::record {

/// A record that cannot be written; the message names the path and the cause.
class RecordError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `bytes` to `path` through a temporary file in the same directory, fsync, rename:
/// a reader sees the old file or the new one, never a torn one. Holds record_write_lock().
/// Throws RecordError.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

/// Held by every write_file_atomic() of this process. A second interrupt that exits at once
/// (app/interrupt_close.h) takes it and keeps it until the process exits: no other thread then
/// changes a record while that thread closes it with its own (recursive) writes.
std::recursive_timed_mutex& record_write_lock();

/// The run directories of the RunWriters alive in this process: the records it may still have
/// open (app/interrupt_close.h closes them when a second interrupt exits at once).
std::vector<std::filesystem::path> open_run_dirs();

/// The whole contents of a file; throws RecordError naming the path when unreadable.
std::string read_file(const std::filesystem::path& path);

std::string sha256_hex(std::string_view bytes);
/// SHA-256 of a file's contents; throws RecordError when unreadable.
std::string sha256_hex_file(const std::filesystem::path& path);

/// Writes <dir>/SHA256SUMS ("<hex>  <path>" lines, sorted by path) over every regular file of
/// the directory tree except SHA256SUMS itself and temporary "*.tmp" files.
void write_sha256sums(const std::filesystem::path& dir);

/// Owns <runs_root>/<run_id>/. Thread-safety: append_request() may be called from any thread
/// (it only enqueues; a background thread serializes and appends, so the event loop never
/// waits on the disk); the other members from one thread.
class RunWriter {
 public:
  /// Creates the directory (and runs_root). Throws RecordError if it exists or can't be made.
  RunWriter(const std::filesystem::path& runs_root, const std::string& run_id,
            bool keep_event_times);
  ~RunWriter();  ///< stops the appender (lines already queued are written)
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  /// Atomically writes <dir>/<name> as pretty JSON, secrets redacted (redact_secrets()).
  void write_json(const std::string& name, const boost::json::value& value);
  /// Atomically writes <dir>/<name> (e.g. "evidence/x.txt"; parent dirs are created).
  void write_text(const std::string& name, std::string_view text);

  /// Queues one request for requests.jsonl; it is appended (and flushed to the kernel) soon,
  /// so an interrupted or killed run keeps every finished request.
  void append_request(metrics::Trace trace);
  /// Blocks until every queued request is on disk.
  void flush_requests();

  /// Replaces requests.jsonl by the given traces in index order (atomically), then writes
  /// SHA256SUMS over every file of the directory. Call once, last.
  void finalize(const std::vector<metrics::Trace>& traces);

 private:
  void appender_main();

  std::filesystem::path dir_;
  bool keep_event_times_;
  int requests_fd_ = -1;

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable drained_cv_;
  std::deque<metrics::Trace> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::string write_error_;
  std::thread appender_;
};

}  // namespace dyno::record
