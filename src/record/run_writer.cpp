#include "record/run_writer.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "json/json_text.h"
#include "record/record_json.h"
#include "record/scrub.h"

namespace dyno::record {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

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

std::string to_hex(const unsigned char* digest, unsigned len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2u);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

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

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  std::lock_guard gate(record_write_lock());
  const fs::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RecordError("cannot create " + tmp.string() + ": " + errno_text());
  try {
    write_all(fd, bytes, tmp);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    throw RecordError("cannot write " + tmp.string() + ": " + errno_text());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw RecordError("cannot rename " + tmp.string() + " to " + path.string() + ": " +
                      errno_text());
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordError("cannot read " + path.string() + ": " + errno_text());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw RecordError("cannot read " + path.string() + ": " + errno_text());
  return text;
}

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest.data(), &len, EVP_sha256(), nullptr);
  return to_hex(digest.data(), len);
}

std::string sha256_hex_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordError("cannot read " + path.string());
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::array<char, 1 << 16> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    const auto n = in.gcount();
    if (n > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(n));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest.data(), &len);
  return to_hex(digest.data(), len);
}

RunWriter::RunWriter(const fs::path& runs_root, const std::string& run_id, bool keep_event_times)
    : dir_(runs_root / run_id), keep_event_times_(keep_event_times) {
  std::error_code ec;
  fs::create_directories(runs_root, ec);
  if (ec) throw RecordError("cannot create runs root " + runs_root.string() + ": " + ec.message());
  if (!fs::create_directory(dir_, ec)) {
    throw RecordError("cannot create run directory " + dir_.string() + ": " +
                      (ec ? ec.message() : std::string("it already exists")));
  }
  const fs::path requests = dir_ / "requests.jsonl";
  requests_fd_ = ::open(requests.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (requests_fd_ < 0)
    throw RecordError("cannot create " + requests.string() + ": " + errno_text());
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
}

void RunWriter::write_json(const std::string& name, const boost::json::value& value) {
  boost::json::value safe = value;
  redact_secrets(safe);  // a safety net: no writer should hand a secret to the record
  write_text(name, pretty_json(safe));
}

void RunWriter::write_text(const std::string& name, std::string_view text) {
  const fs::path path = dir_ / name;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw RecordError("cannot create " + path.parent_path().string() + ": " + ec.message());
  write_file_atomic(path, text);
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

void RunWriter::appender_main() {
  std::string line;
  for (;;) {
    std::deque<metrics::Trace> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) return;
      batch.swap(queue_);
      busy_ = true;
    }
    // One write() per batch: lines reach the kernel (and survive a kill of dyno) at once.
    line.clear();
    for (const auto& t : batch) {
      line += json_text::compact(trace_to_json(t, keep_event_times_));
      line += '\n';
    }
    std::string error;
    try {
      write_all(requests_fd_, line, dir_ / "requests.jsonl");
    } catch (const RecordError& e) {
      error = e.what();
    }
    {
      std::lock_guard lock(mu_);
      busy_ = false;
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
  std::string body;
  for (const auto* t : ordered) {
    body += json_text::compact(trace_to_json(*t, keep_event_times_));
    body += '\n';
  }
  write_file_atomic(dir_ / "requests.jsonl", body);
  write_sha256sums(dir_);
}

void write_sha256sums(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), dir).generic_string();
    if (rel == "SHA256SUMS" || rel.ends_with(".tmp")) continue;
    names.push_back(rel);
  }
  std::sort(names.begin(), names.end());
  std::string sums;
  for (const auto& name : names) sums += sha256_hex_file(dir / name) + "  " + name + "\n";
  write_file_atomic(dir / "SHA256SUMS", sums);
}

}  // namespace dyno::record
