#include "transport/sse_parser.h"

#include <cstring>
#include <utility>

namespace dyno::transport {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// First CR or LF in [p, end), or nullptr. Two memchr scans (LF first, then CR only up to the
// LF) instead of a per-byte loop: glibc's vectorised memchr beats a hand-written SSE2 loop here.
const char* find_line_end(const char* p, const char* const end) {
  const auto* lf =
      static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
  const char* limit = lf != nullptr ? lf : end;
  const auto* cr =
      static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(limit - p)));
  return cr != nullptr ? cr : lf;
}

}  // namespace

SseParser::SseParser(Callback on_event, std::size_t max_event_bytes)
    : on_event_(std::move(on_event)), max_event_bytes_(max_event_bytes) {}

void SseParser::overflow() {
  overflowed_ = true;
  // Gives the memory back, not just the size.
  std::string().swap(line_);
  std::string().swap(data_);
  data_view_ = {};
  data_in_view_ = false;
  type_.clear();
  std::string().swap(error_);
  have_data_ = false;
  have_error_ = false;
  event_started_ = false;
}

void SseParser::feed(std::string_view bytes) {
  if (overflowed_) return;
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  if (!bom_checked_) {
    // The BOM may itself be split across feeds; its bytes wait in line_ (they hold no line
    // terminator, so if they turn out not to be a BOM they are simply the start of a line).
    while (p < end && line_.size() < kBom.size() && *p == kBom[line_.size()]) line_.push_back(*p++);
    if (line_.size() == kBom.size()) {
      line_.clear();
      bom_checked_ = true;
    } else if (p < end) {
      bom_checked_ = true;  // a mismatch: no BOM; line_ keeps the bytes read so far
    } else {
      return;  // still a possible BOM prefix
    }
  }
  if (pending_cr_ && p < end) {
    pending_cr_ = false;
    if (*p == '\n') ++p;  // the LF of a CRLF split across feeds
  }
  feed_lines(p, end);
  keep_data();  // the fed bytes are the caller's: nothing may point into them after this
}

void SseParser::keep_data() {
  if (!data_in_view_) return;
  data_.assign(data_view_);
  data_view_ = {};
  data_in_view_ = false;
}

void SseParser::feed_lines(const char* p, const char* const end) {
  while (p < end) {
    // The usual event, whole in the bytes being fed and nothing of another pending:
    // `data: PAYLOAD` LF LF. Dispatched from the bytes at once, as the general path would
    // dispatch it (same data, id, counts), without its per-line field parsing.
    if (!event_started_ && line_.empty() && end - p > 6 && std::memcmp(p, "data:", 5) == 0)
        [[likely]] {
      const char* const value = p[5] == ' ' ? p + 6 : p + 5;
      const char* const eol = find_line_end(value, end);
      if (eol != nullptr && *eol == '\n' && end - eol >= 2 && eol[1] == '\n' &&
          static_cast<std::size_t>(eol - p) <= max_event_bytes_) {
        ++events_;
        on_event_(SseEvent{
            {}, std::string_view(value, static_cast<std::size_t>(eol - value)), id_, {}, false});
        p = eol + 2;
        continue;
      }
    }
    const char* eol = find_line_end(p, end);
    if (eol == nullptr) {
      if (line_.size() + static_cast<std::size_t>(end - p) > max_event_bytes_) {
        overflow();
        return;
      }
      line_.append(p, end);
      return;
    }
    if (line_.empty()) {
      process_line(std::string_view(p, static_cast<std::size_t>(eol - p)), true);
    } else {
      line_.append(p, eol);
      process_line(line_, false);
      line_.clear();
    }
    if (overflowed_) return;
    if (*eol == '\r') {
      if (eol + 1 == end) {
        pending_cr_ = true;
      } else if (eol[1] == '\n') {
        ++eol;
      }
    }
    p = eol + 1;
  }
}

void SseParser::process_line(std::string_view line, bool stable) {
  if (line.empty()) {
    dispatch();
    return;
  }
  if (line.size() > max_event_bytes_) {
    overflow();
    return;
  }
  if (line.front() == ':') return;  // comment
  if (line.front() == '{') [[unlikely]] {
    // A JSON object with no field name (Ollama's error mid-stream): handed over on its own.
    ++events_;
    SseEvent bare{};
    bare.data = line;
    bare.id = id_;
    bare.unframed = true;
    on_event_(bare);
    return;
  }
  std::string_view field = line;
  std::string_view value;
  if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (data_size() + (have_data_ ? 1 : 0) + value.size() > max_event_bytes_) {
      overflow();
      return;
    }
    // Spec: append value + LF, drop the final LF at dispatch. Equivalently: join with LF.
    if (!have_data_ && stable) {
      data_view_ = value;
      data_in_view_ = true;
    } else {
      keep_data();
      if (have_data_) data_.push_back('\n');
      data_.append(value);
    }
    have_data_ = true;
    event_started_ = true;
  } else if (field == "event") {
    type_.assign(value);
    event_started_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
    event_started_ = true;
  } else if (field == "retry") {
    // The reconnection delay: dyno never reconnects a stream, so the value is not used.
    event_started_ = true;
  } else if (field == "error") [[unlikely]] {
    add_error_line(value);
  }
  // Other fields are ignored (per spec).
}

void SseParser::add_error_line(std::string_view value) {
  if (error_.size() + (have_error_ ? 1 : 0) + value.size() > max_event_bytes_) {
    overflow();
    return;
  }
  if (have_error_) error_.push_back('\n');
  error_.append(value);
  have_error_ = true;
  event_started_ = true;
}

void SseParser::dispatch() {
  event_started_ = false;
  if (!have_data_ && !have_error_) {
    // No data field: nothing to dispatch; the event type buffer is reset (per spec).
    type_.clear();
    return;
  }
  ++events_;
  SseEvent event{type_, data_in_view_ ? data_view_ : std::string_view(data_), id_, {}, false};
  if (have_error_) [[unlikely]] {
    event.error = error_;
  }
  on_event_(event);
  data_.clear();
  data_view_ = {};
  data_in_view_ = false;
  type_.clear();
  have_data_ = false;
  if (have_error_) [[unlikely]] {
    error_.clear();
    have_error_ = false;
  }
}

bool SseParser::finish() {
  const bool pending = !line_.empty() || event_started_;
  // The unterminated event is discarded; the parser is ready for a new stream.
  line_.clear();
  data_.clear();
  data_view_ = {};
  data_in_view_ = false;
  type_.clear();
  error_.clear();
  have_data_ = false;
  have_error_ = false;
  event_started_ = false;
  pending_cr_ = false;
  return pending;
}

void SseParser::reset() {
  line_.clear();
  data_.clear();
  data_view_ = {};
  data_in_view_ = false;
  type_.clear();
  id_.clear();
  error_.clear();
  have_data_ = false;
  have_error_ = false;
  pending_cr_ = false;
  bom_checked_ = false;
  event_started_ = false;
  overflowed_ = false;
  events_ = 0;
}

}  // namespace dyno::transport
