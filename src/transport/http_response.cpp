#include "transport/http_response.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace dyno::transport {

namespace {

char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower_ascii(c);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

/// Whether the comma-separated token list `value` holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

/// A header value as it may be quoted in a message: printable ASCII only, at most 200 bytes.
std::string printable(std::string_view v) {
  std::string out;
  for (const char c : v.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  return out;
}

}  // namespace

void HttpResponseReader::reset() {
  phase_ = Phase::kHeader;
  head_ = ResponseHead{};
  remaining_ = 0;
  header_.clear();
  line_.clear();
  error_kind_ = ErrorKind::kNone;
  error_.clear();
}

HttpResponseReader::State HttpResponseReader::fail(ErrorKind kind, std::string message) {
  error_kind_ = kind;
  error_ = std::move(message);
  return State::kError;
}

HttpResponseReader::State HttpResponseReader::feed(const char* data, std::size_t n,
                                                   Handler& handler, std::size_t* consumed) {
  const char* p = data;
  const char* const end = data + n;
  const auto done = [&](State s) {
    if (consumed != nullptr) *consumed = static_cast<std::size_t>(p - data);
    return s;
  };
  if (error_kind_ != ErrorKind::kNone) return done(State::kError);
  while (p < end && phase_ != Phase::kComplete) {
    switch (phase_) {
      case Phase::kHeader: {
        // Only the head's bytes are copied (a read may hold much of the body after it).
        const std::size_t old_size = header_.size();
        const std::size_t room = kMaxHeaderBytes + 4 - std::min(old_size, kMaxHeaderBytes + 4);
        const std::size_t avail = std::min(room, static_cast<std::size_t>(end - p));
        const std::size_t from = old_size >= 3 ? old_size - 3 : 0;
        // A terminator may straddle two reads: the last 3 bytes held and the first 3 new ones.
        std::array<char, 6> edge_bytes{};
        const std::size_t held = old_size - from;
        const std::size_t fresh = std::min<std::size_t>(avail, 3);
        header_.copy(edge_bytes.data(), held, from);
        std::memcpy(edge_bytes.data() + held, p, fresh);
        const std::string_view edge(edge_bytes.data(), held + fresh);
        std::size_t take = avail;
        bool found = false;
        if (const auto f = edge.find("\r\n\r\n"); f != std::string_view::npos) {
          take = f + 4 - held;
          found = true;
        } else if (const void* m = ::memmem(p, avail, "\r\n\r\n", 4); m != nullptr) {
          take = static_cast<std::size_t>(static_cast<const char*>(m) - p) + 4;
          found = true;
        }
        header_.append(p, take);
        p += take;
        if (!found) {
          if (header_.size() > kMaxHeaderBytes) {
            return done(fail(ErrorKind::kTooLarge, "the response header is larger than " +
                                                       std::to_string(kMaxHeaderBytes / 1024) +
                                                       " KiB"));
          }
          break;
        }
        const State s = parse_head();
        std::string().swap(header_);  // parsed into head_: its memory is not kept per stream
        if (s == State::kError) return done(s);
        if (head_.status < 200) break;  // interim 1xx: the real head follows
        if (!handler.on_head(head_)) return done(State::kStopped);
        break;
      }
      case Phase::kBodyLength:
      case Phase::kChunkData: {
        const auto take = static_cast<std::size_t>(
            std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(end - p)));
        const std::string_view bytes(p, take);
        p += take;
        remaining_ -= take;
        if (remaining_ == 0) {
          phase_ = phase_ == Phase::kBodyLength ? Phase::kComplete : Phase::kChunkDataEnd;
        }
        if (!handler.on_body(bytes)) return done(State::kStopped);
        break;
      }
      case Phase::kBodyUntilClose: {
        const std::string_view bytes(p, static_cast<std::size_t>(end - p));
        p = end;
        if (!handler.on_body(bytes)) return done(State::kStopped);
        break;
      }
      case Phase::kChunkSize:
      case Phase::kChunkDataEnd:
      case Phase::kTrailers: {
        const auto* lf =
            static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        const char* stop = lf == nullptr ? end : lf;
        line_.append(p, std::min(static_cast<std::size_t>(stop - p), kMaxChunkLine + 1));
        p = lf == nullptr ? end : lf + 1;
        if (line_.size() > kMaxChunkLine) {
          return done(fail(ErrorKind::kMalformed,
                           "malformed chunked encoding (a line of more "
                           "than 1 KiB where a chunk size was expected)"));
        }
        if (lf == nullptr) break;
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        const State s = on_line();
        line_.clear();
        if (s == State::kError) return done(s);
        break;
      }
      case Phase::kComplete:
        break;
    }
  }
  return done(phase_ == Phase::kComplete ? State::kComplete : State::kNeedMore);
}

HttpResponseReader::State HttpResponseReader::on_line() {
  if (phase_ == Phase::kChunkSize) {
    std::uint64_t size = 0;
    const char* first = line_.data();
    const char* last = first + line_.size();
    const auto [stop, ec] = std::from_chars(first, last, size, 16);
    if (ec != std::errc() || (stop != last && *stop != ';' && *stop != ' ' && *stop != '\t')) {
      return fail(ErrorKind::kMalformed,
                  "malformed chunked encoding (chunk size '" + printable(line_) + "')");
    }
    phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
    remaining_ = size;
  } else if (phase_ == Phase::kChunkDataEnd) {
    if (!line_.empty()) {
      return fail(ErrorKind::kMalformed,
                  "malformed chunked encoding (chunk data longer than its size)");
    }
    phase_ = Phase::kChunkSize;
  } else if (line_.empty()) {
    phase_ = Phase::kComplete;  // end of trailers
  }
  return State::kNeedMore;
}

HttpResponseReader::State HttpResponseReader::parse_head() {
  // Status line: HTTP/1.x SP 3DIGIT [SP reason] CRLF
  const std::string_view head = header_;
  const auto line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." ||
      (status_line[7] != '0' && status_line[7] != '1') || status_line[8] != ' ' ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return fail(ErrorKind::kMalformed, "malformed HTTP status line '" + printable(status_line) +
                                           "' (not an HTTP/1.x server?)");
  }
  int status = 0;
  const auto [stop, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc() || stop != status_line.data() + 12 || status < 100 || status > 599) {
    return fail(ErrorKind::kMalformed,
                "malformed HTTP status line '" + printable(status_line) + "'");
  }
  ResponseHead h;
  h.status = status;
  h.http10 = status_line[7] == '0';
  h.keep_alive = !h.http10;
  std::string transfer_codings;
  std::size_t pos = line_end + 2;
  while (pos < head.size()) {
    const auto eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || line.front() == ' ' ||
        line.front() == '\t') {
      return fail(ErrorKind::kMalformed, "malformed HTTP header line '" + printable(line) + "'");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::uint64_t length = 0;
      const auto [end, length_ec] =
          std::from_chars(value.data(), value.data() + value.size(), length);
      if (length_ec != std::errc() || end != value.data() + value.size() || value.empty() ||
          (h.content_length && *h.content_length != length)) {
        return fail(ErrorKind::kMalformed, "malformed Content-Length '" + printable(value) + "'");
      }
      h.content_length = length;
    } else if (iequals(name, "transfer-encoding")) {
      transfer_codings += (transfer_codings.empty() ? "" : ",") + lower(value);
    } else if (iequals(name, "connection")) {
      if (has_token(value, "close")) h.keep_alive = false;
      if (has_token(value, "keep-alive") && h.http10) h.keep_alive = true;
    } else if (iequals(name, "content-type")) {
      h.content_type = lower(trim(value.substr(0, value.find(';'))));
    } else if (iequals(name, "content-encoding")) {
      h.content_encoding = lower(value);
    } else if (iequals(name, "location")) {
      h.location = printable(value);
    }
  }
  header_.clear();
  if (status < 200) return State::kNeedMore;  // interim 1xx: the real head follows
  if (!transfer_codings.empty()) {
    // The last transfer coding must be chunked for the length to be known; any other coding
    // (gzip, ...) is an encoding dyno did not ask for, reported like a content encoding.
    std::string_view codings = transfer_codings;
    const auto last_comma = codings.rfind(',');
    const std::string_view last =
        trim(codings.substr(last_comma == codings.npos ? 0 : last_comma + 1));
    h.chunked = last == "chunked";
    std::string others;
    while (!codings.empty()) {
      const auto comma = codings.find(',');
      const std::string_view c = trim(codings.substr(0, comma));
      if (!c.empty() && c != "chunked" && c != "identity")
        others += (others.empty() ? "" : ", ") + std::string(c);
      if (comma == std::string_view::npos) break;
      codings.remove_prefix(comma + 1);
    }
    if (!others.empty() && h.content_encoding.empty()) h.content_encoding = others;
  }
  head_ = std::move(h);
  if (head_.status == 204 || head_.status == 304) {
    // No body follows, whatever Content-Length or Transfer-Encoding said: the head says so too.
    if (head_.content_length) head_.content_length = 0;
    head_.chunked = false;
    phase_ = Phase::kComplete;
  } else if (head_.chunked) {
    phase_ = Phase::kChunkSize;
  } else if (head_.content_length) {
    remaining_ = *head_.content_length;
    phase_ = remaining_ == 0 ? Phase::kComplete : Phase::kBodyLength;
  } else {
    phase_ = Phase::kBodyUntilClose;
    head_.keep_alive = false;
  }
  return State::kNeedMore;
}

}  // namespace dyno::transport
