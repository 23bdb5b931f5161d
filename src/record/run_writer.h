// The run directory: atomic file writes, the requests.jsonl appender, SHA256SUMS.
#pragma once

#include <boost/json/value.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "error/error.h"
#include "metrics/summary.h"
#include "metrics/trace.h"

namespace dyno::record {

/// A record that cannot be written; the message names the path and the cause.
class RecordError : public Error {
 public:
  explicit RecordError(const std::string& message) : Error(ErrorKind::io, message) {}
};

/// Writes `bytes` to `path` through a temporary file in the same directory, fsync, rename:
/// a reader sees the old file or the new one, never a torn one. Holds record_write_lock().
/// Throws RecordError.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

/// write_file_atomic for a file written in pieces (never all in memory): append() collects up to
/// 256 KiB before each write to the temporary file; commit() flushes, fsyncs and renames. A writer
/// destroyed without commit() removes the temporary file. Holds record_write_lock() from
/// construction to commit or destruction. Throws RecordError.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void append(std::string_view bytes);
  void commit();

 private:
  void flush();
  void abandon() noexcept;
  std::unique_lock<std::recursive_timed_mutex> gate_;
  std::filesystem::path path_;
  std::filesystem::path tmp_;
  int fd_ = -1;
  std::string pending_;
};

/// Held by every write_file_atomic() of this process. A second interrupt that exits at once
/// (record/close_at_once.h) takes it and keeps it until the process exits: no other thread then
/// changes a record while that thread closes it with its own (recursive) writes.
std::recursive_timed_mutex& record_write_lock();

/// The run directories of the RunWriters alive in this process: the records it may still have
/// open (record/close_at_once.h closes them when a second interrupt exits at once).
std::vector<std::filesystem::path> open_run_dirs();

/// The whole contents of a file; throws RecordError naming the path when unreadable.
std::string read_file(const std::filesystem::path& path);

/// Writes <dir>/SHA256SUMS ("<hex>  <path>" lines, sorted by path) over every regular file of
/// the directory tree except SHA256SUMS itself, the SIGNATURE that signs it (record/signature.h)
/// and temporary "*.tmp" files. `known`: digests
/// the caller has just written (relative path -> hex), taken as they are instead of reading
/// the file again (an import's evidence, the same bytes in every record of its file).
/// Throws digest::FileError when a file cannot be read, RecordError when SHA256SUMS cannot
/// be written.
void write_sha256sums(const std::filesystem::path& dir,
                      const std::map<std::string, std::string>& known = {});

/// While one lives, the atomic writes of this thread (write_file_atomic, AtomicFileWriter)
/// skip their fsync: for files written into a staging directory that the caller syncs once
/// (syncfs) before it moves them into place, so thousands of small files cost one sync, not
/// one each. Nothing else changes: every file is still written to a temporary name and renamed.
class DeferredSync {
 public:
  DeferredSync();
  ~DeferredSync();
  DeferredSync(const DeferredSync&) = delete;
  DeferredSync& operator=(const DeferredSync&) = delete;

 private:
  bool before_;
};

/// True when a dyno process is writing the run directory now: its RunWriter holds an flock on
/// the directory for as long as it lives (released by the kernel when that process dies, so
/// a record left `running` by a killed dyno is not in progress).
bool run_in_progress(const std::filesystem::path& run_dir);

/// Owns <runs_root>/<run_id>/. Thread-safety: append_request() may be called from any thread
/// (it only enqueues; a background thread serializes and appends, so the event loop never
/// waits on the disk); the other members from one thread.
///
/// Whatever it is handed, what it writes is valid UTF-8 and free of the secrets it was told:
/// every JSON file and requests.jsonl line goes through json_text (ill-formed UTF-8 becomes
/// U+FFFD, counted), and every file and line through redact_literals (set_secrets()).
class RunWriter {
 public:
  /// Creates the directory (and runs_root) and takes the directory's in-progress lock. Throws
  /// RecordError if it exists or can't be made; what it created is removed again.
  RunWriter(const std::filesystem::path& runs_root, const std::string& run_id,
            bool keep_event_times);
  ~RunWriter();  ///< stops the appender (lines already queued are written)
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  /// Strings that never reach the disk (the API key dyno sends): every occurrence in every
  /// file and line written after this call becomes "<scrubbed:secret>". Call it first.
  void set_secrets(std::vector<std::string> secrets);

  /// Atomically writes <dir>/<name> as pretty JSON, secrets redacted (redact_secrets() and
  /// set_secrets()). For manifest.json and summary.json, a `warnings` array gains the
  /// invalid_utf8_replaced warning when anything of the record had ill-formed UTF-8.
  void write_json(const std::string& name, const boost::json::value& value);
  /// Atomically writes <dir>/<name> (e.g. "evidence/x.txt"; parent dirs are created), with
  /// the secrets of set_secrets() redacted. Its bytes are otherwise kept as they are. Returns
  /// the SHA-256 (hex) of the bytes written: a digest of what is on disk, secrets redacted.
  std::string write_text(const std::string& name, std::string_view text);
  /// The secrets of set_secrets() (normalize_secrets()'s order).
  std::vector<std::string> secrets() const;

  /// Queues one request for requests.jsonl; it is appended (and flushed to the kernel) soon,
  /// so an interrupted or killed run keeps every finished request.
  void append_request(metrics::Trace trace);
  /// Blocks until every queued request is on disk.
  void flush_requests();

  /// Replaces requests.jsonl by the given traces in index order (atomically), then writes
  /// SHA256SUMS over every file of the directory. Call once, last.
  void finalize(const std::vector<metrics::Trace>& traces);

  /// Ill-formed UTF-8 bytes replaced so far: in requests.jsonl lines and the JSON files as
  /// last written.
  std::size_t invalid_utf8_bytes();
  /// The invalid_utf8_replaced warning (with the totals per file and a hint), or nullopt when
  /// nothing had to be replaced. Waits for the queued requests first.
  std::optional<metrics::Warning> invalid_utf8_warning();

 private:
  void appender_main();
  /// One requests.jsonl line (with its newline): secrets redacted, valid UTF-8, and
  /// `invalid_utf8_bytes` when bytes were replaced (added to *replaced).
  std::string request_line(const metrics::Trace& trace, std::size_t& replaced,
                           const std::vector<std::string>& secrets) const;
  /// Writes a file; when that fails before the manifest exists, removes the run directory
  /// (no orphan directory of a run that recorded nothing) and says so in the error.
  void write_or_abandon(const std::filesystem::path& path, std::string_view bytes);
  void remove_created() noexcept;

  std::filesystem::path dir_;
  std::filesystem::path created_root_;  ///< the topmost directory of runs_root it created
  bool dir_created_ = false;
  bool keep_event_times_;
  int requests_fd_ = -1;
  int lock_fd_ = -1;  ///< the directory, flock'ed while this writer lives

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable drained_cv_;
  std::deque<metrics::Trace> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::string write_error_;
  std::vector<std::string> secrets_;            ///< guarded by mu_ (the appender reads them)
  std::size_t requests_invalid_utf8_ = 0;       ///< guarded by mu_
  std::size_t requests_with_invalid_utf8_ = 0;  ///< guarded by mu_
  std::map<std::string, std::size_t> file_invalid_utf8_;  ///< file -> bytes (last write)
  std::thread appender_;
};

}  // namespace dyno::record
