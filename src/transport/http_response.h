// An incremental HTTP/1.1 response reader: status line, headers and body framing
// (Content-Length, chunked, close-delimited), interim 1xx responses skipped. It owns no socket:
// bytes go in as they arrive, in any split, and the body comes out in place (no copy, no
// accumulation), so the SSE parser sees body bytes straight from the read buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dyno::transport {

/// The parts of a response head dyno acts on.
struct ResponseHead {
  int status = 0;
  bool http10 = false;
  bool keep_alive = true;  ///< HTTP/1.1 without `Connection: close` (or 1.0 with keep-alive)
  /// The length of the body that follows: Content-Length, except 0 for a 204 or 304 (they have
  /// no body whatever their headers say, RFC 9110 §8.6).
  std::optional<std::uint64_t> content_length;
  bool chunked = false;          ///< the body is chunked (never for a 204 or 304)
  std::string content_type;      ///< lower-cased media type without parameters, "" when absent
  std::string content_encoding;  ///< lower-cased, "" when absent
  std::string location;          ///< `Location` of a redirect, "" when absent
};

class HttpResponseReader {
 public:
  /// Receives the response as it is read. Return false from either call to stop reading at
  /// once (feed() then returns kStopped and the rest of the bytes is not looked at).
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual bool on_head(const ResponseHead& head) = 0;
    virtual bool on_body(std::string_view bytes) = 0;
  };

  enum class State {
    kNeedMore,  ///< every byte was used; the response goes on
    kComplete,  ///< the response ended; `consumed` bytes of this feed belong to it
    kStopped,   ///< a handler asked to stop
    kError,     ///< malformed or over a bound; error() says which and why
  };
  enum class ErrorKind { kNone, kMalformed, kTooLarge };

  static constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
  static constexpr std::size_t kMaxChunkLine = 1024;

  /// Forgets the response read so far (a new request on the same connection).
  void reset();
  /// Feeds the next bytes of the connection. `consumed` (may be null) receives how many bytes
  /// of this call were used; fewer than n only with kComplete (bytes after the response),
  /// kStopped or kError.
  State feed(const char* data, std::size_t n, Handler& handler, std::size_t* consumed = nullptr);
  /// The connection ended (EOF). True when that completes the response: a body delimited by
  /// the close (no Content-Length, not chunked) ends there.
  bool eof_completes() const { return phase_ == Phase::kBodyUntilClose; }
  /// True once a response head (the final one, not a 1xx) has been read.
  bool head_done() const { return head_.status >= 200; }
  const ResponseHead& head() const { return head_; }
  ErrorKind error_kind() const { return error_kind_; }
  const std::string& error() const { return error_; }

 private:
  enum class Phase {
    kHeader,
    kBodyLength,
    kBodyUntilClose,
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailers,
    kComplete
  };
  State fail(ErrorKind kind, std::string message);
  /// Parses header_ (a complete head); returns kNeedMore to go on, or kError.
  State parse_head();
  /// The chunk-size / chunk-end / trailer line in line_ is complete: act on it.
  State on_line();

  Phase phase_ = Phase::kHeader;
  ResponseHead head_;
  std::uint64_t remaining_ = 0;
  std::string header_;
  std::string line_;
  ErrorKind error_kind_ = ErrorKind::kNone;
  std::string error_;
};

}  // namespace dyno::transport
