// Incremental Server-Sent Events parser (WHATWG HTML "event stream interpretation").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dyno::transport {

/// One dispatched event. Views are valid only during the callback.
struct SseEvent {
  std::string_view type;   ///< the `event:` field, "" when absent ("message")
  std::string_view data;   ///< `data:` lines joined by '\n' (the whole line when `unframed`)
  std::string_view id;     ///< last `id:` seen
  std::string_view error;  ///< `error:` lines joined by '\n' (llama.cpp's in-stream error)
  /// A line that is no SSE field but a JSON object (it starts with `{`): Ollama writes its
  /// in-stream error as such a bare line. Dispatched at once, on its own; `data` is the line.
  bool unframed = false;
};

/// Feed bytes in any split (a CRLF, a field name or a UTF-8 sequence may be cut anywhere);
/// events are dispatched on a blank line. Lines: LF, CR or CRLF terminated. `:` lines are
/// comments. A leading UTF-8 BOM is skipped. Unknown fields are ignored (per spec); `retry:`
/// is parsed and ignored. An event without any `data:` field is not dispatched (per spec); a
/// `data:` line with an empty value does dispatch an event whose data is "".
///
/// Two departures from the spec, because servers say they failed that way and a client that
/// follows the spec would miss it: an `error:` field (llama.cpp's server writes
/// `error: {json}` and a blank line) is kept like `data:` and an event that has one is
/// dispatched even without data; and a line that starts with `{` (a JSON object written
/// without any field name, as Ollama writes an error mid-stream) is dispatched at once as an
/// `unframed` event. Both are bounded like data.
///
/// Memory is bounded: a line (comments included) or an event's data longer than
/// `max_event_bytes` (so at most twice that is held) makes the parser drop what it holds,
/// ignore every further byte until reset(), and report overflowed(); the caller ends the
/// response as an error (an event that large is no OpenAI-compatible chunk). Where the
/// bytes are split does not change when that happens.
class SseParser {
 public:
  using Callback = std::function<void(const SseEvent&)>;
  /// 4 MiB: a streamed chunk is a few hundred bytes, a few KiB with logprobs.
  static constexpr std::size_t kDefaultMaxEventBytes = std::size_t{4} << 20;
  explicit SseParser(Callback on_event, std::size_t max_event_bytes = kDefaultMaxEventBytes);

  void feed(std::string_view bytes);
  /// An event or line exceeded max_event_bytes; the stream's later bytes were ignored.
  bool overflowed() const { return overflowed_; }
  /// End of stream: an unterminated final event is discarded (per spec).
  /// Returns true when bytes of an incomplete line/event were pending (a truncated stream).
  bool finish();
  void reset();

  std::uint64_t events_dispatched() const { return events_; }

 private:
  void feed_lines(const char* p, const char* end);
  /// `stable`: the line lies in the bytes being fed (valid until feed() returns), not in line_.
  void process_line(std::string_view line, bool stable);
  std::size_t data_size() const { return data_in_view_ ? data_view_.size() : data_.size(); }
  void add_error_line(std::string_view value);
  void keep_data();  // copies a data value still viewed in the caller's bytes into data_
  void dispatch();
  void overflow();

  Callback on_event_;
  std::size_t max_event_bytes_;
  std::string line_;  // partial line carried across feeds
  std::string data_;  // data buffer of the event being built
  // An event's first data value, while it is still in the bytes being fed: the usual event
  // (one `data:` line, in one read) is dispatched from there without a copy or a buffer.
  std::string_view data_view_;
  bool data_in_view_ = false;
  std::string type_;
  std::string id_;
  std::string error_;  // `error:` lines of the event being built
  bool have_data_ = false;
  bool have_error_ = false;
  bool pending_cr_ = false;  // last byte was CR: a following LF belongs to it
  bool bom_checked_ = false;
  bool event_started_ = false;
  bool overflowed_ = false;
  std::uint64_t events_ = 0;
};

}  // namespace dyno::transport
