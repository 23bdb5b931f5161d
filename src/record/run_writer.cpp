#include "record/run_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "digest/digest.h"
#include "json/json_text.h"
#include "record/record_json.h"
#include "record/signature.h"
#include "scrub/redact.h"
#include "scrub/scrub.h"

namespace dyno::record {

using scrub::normalize_secrets;
using scrub::redact_literals;
using scrub::redact_secrets;

namespace fs = std::filesystem;

namespace {

/// strerror, and for a full disk or file-size limit what to do about it.
std::string errno_text() {
  const int e = errno;
  std::string text = std::strerror(e);
  if (e == ENOSPC || e == EDQUOT || e == EFBIG) {
    text += " (free space there, or write the records elsewhere with --runs-root)";
  }
  return text;
}

void write_all(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RecordError("cannot write " + path.string() + ": " + errno_text());
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::mutex g_open_dirs_mu;
std::vector<fs::path>& open_dirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

}  // namespace

std::recursive_timed_mutex& record_write_lock() {
  static std::recursive_timed_mutex lock;
  return lock;
}

std::vector<fs::path> open_run_dirs() {
  std::lock_guard lock(g_open_dirs_mu);
  return open_dirs();
}

namespace {
thread_local bool t_defer_sync = false;
}  // namespace

DeferredSync::DeferredSync() : before_(t_defer_sync) { t_defer_sync = true; }
DeferredSync::~DeferredSync() { t_defer_sync = before_; }

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  AtomicFileWriter out(path);
  out.append(bytes);
  out.commit();
}

namespace {
constexpr std::size_t kAtomicWriteChunk = 256 * 1024;
}  // namespace

AtomicFileWriter::AtomicFileWriter(fs::path path)
    : gate_(record_write_lock()), path_(std::move(path)), tmp_(path_.string() + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw RecordError("cannot create " + tmp_.string() + ": " + errno_text());
}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

// A failure leaves neither a partial file nor the temporary one behind.
void AtomicFileWriter::abandon() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
}

void AtomicFileWriter::flush() {
  if (pending_.empty()) return;
  try {
    write_all(fd_, pending_, tmp_);
  } catch (...) {
    abandon();
    throw;
  }
  pending_.clear();
}

void AtomicFileWriter::append(std::string_view bytes) {
  if (fd_ < 0) throw RecordError("cannot write " + tmp_.string() + ": already closed");
  if (pending_.size() + bytes.size() > kAtomicWriteChunk) {
    flush();
    if (bytes.size() >= kAtomicWriteChunk) {
      try {
        write_all(fd_, bytes, tmp_);
      } catch (...) {
        abandon();
        throw;
      }
      return;
    }
  }
  pending_.append(bytes);
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw RecordError("cannot write " + tmp_.string() + ": already closed");
  flush();
  const auto fail = [&](const std::string& what) {
    const std::string cause = errno_text();
    abandon();
    throw RecordError(what + ": " + cause);
  };
  if (!t_defer_sync && ::fsync(fd_) != 0) fail("cannot write " + tmp_.string());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const std::string cause = errno_text();
    ::unlink(tmp_.c_str());
    throw RecordError("cannot write " + tmp_.string() + ": " + cause);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string cause = errno_text();
    ::unlink(tmp_.c_str());
    throw RecordError("cannot rename " + tmp_.string() + " to " + path_.string() + ": " + cause);
  }
  gate_.unlock();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordError("cannot read " + path.string() + ": " + errno_text());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw RecordError("cannot read " + path.string() + ": " + errno_text());
  return text;
}

bool run_in_progress(const fs::path& run_dir) {
  const int fd = ::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the lock if this took it
  return held;
}

RunWriter::RunWriter(const fs::path& runs_root, const std::string& run_id, bool keep_event_times)
    : dir_(runs_root / run_id), keep_event_times_(keep_event_times) {
  std::error_code ec;
  // The topmost directory this writer creates, so a failure removes what it made and no more.
  for (fs::path p = fs::absolute(runs_root, ec).lexically_normal();
       !p.empty() && !fs::exists(p, ec) && p != p.parent_path(); p = p.parent_path()) {
    created_root_ = p;
  }
  fs::create_directories(runs_root, ec);
  if (ec) {
    const std::string cause = ec.message();
    remove_created();
    throw RecordError("cannot create runs root " + runs_root.string() + ": " + cause);
  }
  if (!fs::create_directory(dir_, ec)) {
    const std::string cause = ec ? ec.message() : std::string("it already exists");
    remove_created();  // not the directory: it is not this writer's
    throw RecordError("cannot create run directory " + dir_.string() + ": " + cause);
  }
  dir_created_ = true;
  // `dyno runs rm` refuses a run whose writer is alive (run_in_progress).
  lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX | LOCK_NB);
  const fs::path requests = dir_ / "requests.jsonl";
  requests_fd_ = ::open(requests.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (requests_fd_ < 0) {
    const std::string cause = errno_text();
    if (lock_fd_ >= 0) ::close(lock_fd_);
    remove_created();
    throw RecordError("cannot create " + requests.string() + ": " + cause);
  }
  appender_ = std::thread([this] { appender_main(); });
  std::lock_guard lock(g_open_dirs_mu);
  open_dirs().push_back(dir_);
}

RunWriter::~RunWriter() {
  {
    std::lock_guard lock(g_open_dirs_mu);
    std::erase(open_dirs(), dir_);
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (appender_.joinable()) appender_.join();
  if (requests_fd_ >= 0) ::close(requests_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void RunWriter::remove_created() noexcept {
  std::error_code ec;
  if (dir_created_) fs::remove_all(dir_, ec);
  if (created_root_.empty()) return;
  // Upwards from the runs root, each directory this writer created, while empty.
  const fs::path top = created_root_;
  for (fs::path p = fs::absolute(dir_.parent_path(), ec).lexically_normal(); !p.empty();
       p = p.parent_path()) {
    if (!fs::remove(p, ec) || p == top || p == p.parent_path()) break;
  }
}

void RunWriter::write_or_abandon(const fs::path& path, std::string_view bytes) {
  try {
    write_file_atomic(path, bytes);
  } catch (const RecordError& e) {
    std::error_code ec;
    if (fs::exists(dir_ / "manifest.json", ec)) throw;
    // Nothing of the run is on disk yet: leave no orphan directory behind.
    remove_created();
    throw RecordError(std::string(e.what()) + "; nothing of the run was recorded, so " +
                      dir_.string() + " was removed");
  }
}

void RunWriter::set_secrets(std::vector<std::string> secrets) {
  std::lock_guard lock(mu_);
  secrets_ = normalize_secrets(std::move(secrets));
}

void RunWriter::write_json(const std::string& name, const boost::json::value& value) {
  boost::json::value safe = value;
  redact_secrets(safe);  // a safety net: no writer should hand a secret to the record
  std::vector<std::string> secrets;
  {
    std::lock_guard lock(mu_);
    secrets = secrets_;
  }
  redact_literals(safe, secrets);
  json_text::WriteStats stats;
  std::string text = json_text::pretty(safe, &stats);
  file_invalid_utf8_[name] = stats.invalid_utf8_bytes;
  boost::json::array* warnings = nullptr;
  if ((name == "manifest.json" || name == "summary.json") && safe.is_object()) {
    if (auto* w = safe.as_object().if_contains("warnings")) warnings = w->if_array();
  }
  if (warnings != nullptr) {
    const auto ours = [](const boost::json::value& w) {
      const auto* o = w.if_object();
      const auto* code = o != nullptr ? o->if_contains("code") : nullptr;
      return code != nullptr && code->is_string() &&
             code->get_string() == metrics::to_string(metrics::WarningCode::kInvalidUtf8Replaced);
    };
    const bool had = std::any_of(warnings->begin(), warnings->end(), ours);
    warnings->erase(std::remove_if(warnings->begin(), warnings->end(), ours), warnings->end());
    const std::optional<metrics::Warning> w = invalid_utf8_warning();
    if (w) {
      warnings->push_back(warning_to_json(*w));
    }
    if (w || had) text = json_text::pretty(safe);
  }
  write_or_abandon(dir_ / name, text);
}

std::vector<std::string> RunWriter::secrets() const {
  std::lock_guard lock(mu_);
  return secrets_;
}

std::string RunWriter::write_text(const std::string& name, std::string_view text) {
  const fs::path path = dir_ / name;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw RecordError("cannot create " + path.parent_path().string() + ": " + ec.message());
  const std::vector<std::string> secrets = this->secrets();
  if (secrets.empty()) {
    write_or_abandon(path, text);
    return digest::sha256_hex(text);
  }
  std::string redacted(text);
  redact_literals(redacted, secrets);
  write_or_abandon(path, redacted);
  return digest::sha256_hex(redacted);
}

void RunWriter::append_request(metrics::Trace trace) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(trace));
  }
  cv_.notify_one();
}

void RunWriter::flush_requests() {
  std::unique_lock lock(mu_);
  drained_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (!write_error_.empty()) throw RecordError(write_error_);
}

std::string RunWriter::request_line(const metrics::Trace& trace, std::size_t& replaced,
                                    const std::vector<std::string>& secrets) const {
  // Secrets are redacted in the joined text: a key split across two events is found.
  std::string line = trace_line(trace, keep_event_times_, secrets, &replaced);
  line += '\n';
  return line;
}

void RunWriter::appender_main() {
  std::string lines;
  for (;;) {
    std::deque<metrics::Trace> batch;
    std::vector<std::string> secrets;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) return;
      batch.swap(queue_);
      secrets = secrets_;
      busy_ = true;
    }
    // One write() per batch: lines reach the kernel (and survive a kill of dyno) at once.
    lines.clear();
    std::size_t replaced = 0;
    std::size_t lines_replaced = 0;
    for (const auto& t : batch) {
      std::size_t n = 0;
      lines += request_line(t, n, secrets);
      replaced += n;
      lines_replaced += n > 0 ? 1 : 0;
    }
    std::string error;
    try {
      write_all(requests_fd_, lines, dir_ / "requests.jsonl");
    } catch (const RecordError& e) {
      error = e.what();
    }
    {
      std::lock_guard lock(mu_);
      busy_ = false;
      requests_invalid_utf8_ += replaced;
      requests_with_invalid_utf8_ += lines_replaced;
      if (!error.empty() && write_error_.empty()) write_error_ = error;
    }
    drained_cv_.notify_all();
  }
}

void RunWriter::finalize(const std::vector<metrics::Trace>& traces) {
  flush_requests();
  std::vector<const metrics::Trace*> ordered;
  ordered.reserve(traces.size());
  for (const auto& t : traces) ordered.push_back(&t);
  std::sort(ordered.begin(), ordered.end(),
            [](const metrics::Trace* a, const metrics::Trace* b) { return a->index < b->index; });
  std::vector<std::string> secrets;
  {
    std::lock_guard lock(mu_);
    secrets = secrets_;
  }
  // Streamed through the temporary file: the whole file is never in memory.
  AtomicFileWriter out(dir_ / "requests.jsonl");
  std::size_t replaced = 0;
  std::size_t lines_replaced = 0;
  for (const auto* t : ordered) {
    std::size_t n = 0;
    out.append(request_line(*t, n, secrets));
    replaced += n;
    lines_replaced += n > 0 ? 1 : 0;
  }
  {
    std::lock_guard lock(mu_);
    requests_invalid_utf8_ = replaced;
    requests_with_invalid_utf8_ = lines_replaced;
  }
  out.commit();
  write_sha256sums(dir_);
}

std::size_t RunWriter::invalid_utf8_bytes() {
  flush_requests();
  std::size_t total = 0;
  {
    std::lock_guard lock(mu_);
    total = requests_invalid_utf8_;
  }
  for (const auto& [name, n] : file_invalid_utf8_) total += n;
  return total;
}

std::optional<metrics::Warning> RunWriter::invalid_utf8_warning() {
  const std::size_t total = invalid_utf8_bytes();
  if (total == 0) return std::nullopt;
  std::string where;
  {
    std::lock_guard lock(mu_);
    if (requests_invalid_utf8_ > 0) {
      where = "requests.jsonl " + std::to_string(requests_invalid_utf8_) + " in " +
              std::to_string(requests_with_invalid_utf8_) +
              (requests_with_invalid_utf8_ == 1 ? " request" : " requests");
    }
  }
  for (const auto& [name, n] : file_invalid_utf8_) {
    if (n > 0) where += (where.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  return metrics::Warning{
      metrics::WarningCode::kInvalidUtf8Replaced,
      std::to_string(total) + (total == 1 ? " byte" : " bytes") +
          " of text that was not valid UTF-8 became U+FFFD in the record (" + where + ")",
      "the engine sent (or a flag or file held) bytes that are not UTF-8: a detokenizer that "
      "splits multi-byte characters, an error page in another encoding, a bad --model; each "
      "request line counts its own in invalid_utf8_bytes"};
}

void write_sha256sums(const fs::path& dir, const std::map<std::string, std::string>& known) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), dir).generic_string();
    if (rel == "SHA256SUMS" || rel == kSignatureFile || rel.ends_with(".tmp")) continue;
    names.push_back(rel);
  }
  std::sort(names.begin(), names.end());
  std::string sums;
  for (const auto& name : names) {
    const auto k = known.find(name);
    sums +=
        (k != known.end() ? k->second : digest::sha256_hex_file(dir / name)) + "  " + name + "\n";
  }
  write_file_atomic(dir / "SHA256SUMS", sums);
}

}  // namespace dyno::record
