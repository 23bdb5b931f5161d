// The OpenAI-compatible decoder: a response body to observer calls and a verdict. Moved out of
// http_connection.cpp (issue 33) unchanged in what it decides and says.
#include "transport/openai_decoder.h"

#include <string>
#include <utility>

#include "transport/server_message.h"

namespace dyno::transport {

OpenAiDecoder::OpenAiDecoder()
    : sse_([this](const SseEvent& event) { on_sse_event(event); }, kMaxEventBytes) {}

void OpenAiDecoder::begin(StreamObserver& observer, bool expects_tokens) {
  observer_ = &observer;
  expects_tokens_ = expects_tokens;
  stream_ = false;
  progress_ = DecodeProgress{};
  token_events_ = 0;
  text_bytes_ = 0;
  pending_error_.reset();
  usage_.reset();
  done_info_ = DoneInfo{};
  body_.clear();
  body_head_.clear();
  sse_.reset();
}

std::string OpenAiDecoder::accept(const ResponseFacts& head, bool stream_requested) {
  const std::string_view type = head.content_type;
  const bool json_type =
      type == "application/json" || (type.size() > 5 && type.substr(type.size() - 5) == "+json");
  if (type == "text/event-stream") {
    stream_ = true;
  } else if (json_type) {
    stream_ = false;  // a server that ignores "stream": true answers with one document
  } else if (type.empty() || type == "text/plain") {
    stream_ = stream_requested;
  } else {
    return "HTTP " + std::to_string(head.status) + " with Content-Type " + std::string(type) +
           ": not an event stream or JSON (a login page or a proxy in the way? check --url)";
  }
  return {};
}

bool OpenAiDecoder::feed(std::int64_t t_ns, std::string_view bytes) {
  read_ns_ = t_ns;
  if (stream_) {
    // What no_tokens says the server sent: kept only while no token came (then it is never
    // said, and a stream holds no copy of its first bytes while it runs).
    if (!progress_.first_token && body_head_.size() <= kServerTextBytes) {
      body_head_.append(bytes.substr(0, kServerTextBytes + 1 - body_head_.size()));
    }
    sse_.feed(bytes);
    if (progress_.first_token && !body_head_.empty()) std::string().swap(body_head_);
    if (pending_error_) return false;
    if (sse_.overflowed()) {
      pending_error_ = ErrorCategory::kTooLarge;
      pending_message_ =
          "an SSE line or event longer than " + std::to_string(kMaxEventBytes / 1024) + " KiB";
      return false;
    }
    return true;
  }
  if (body_.size() + bytes.size() > kMaxTextBytes) {
    pending_error_ = ErrorCategory::kTooLarge;
    pending_message_ =
        "a response body larger than " + std::to_string(kMaxTextBytes / (1024 * 1024)) + " MiB";
    return false;
  }
  body_.append(bytes);
  return true;
}

Verdict OpenAiDecoder::take_error() {
  Verdict verdict;
  verdict.error = pending_error_;
  verdict.message = std::move(pending_message_);
  verdict.keep_connection = false;
  return verdict;
}

void OpenAiDecoder::on_error_event(const SseEvent& event) {
  std::string said;
  if (event.unframed) {
    // A bare JSON line (no SSE field): an error object is Ollama's in-stream error; any other
    // line is ignored, as every line that is no SSE field is.
    if (!is_error_object(event.data)) return;
    said = error_payload_message(event.data);
  } else {
    said = error_payload_message(event.error.empty() ? event.data : event.error);
  }
  pending_error_ = ErrorCategory::kServerError;
  pending_message_ = said.empty() ? std::string("an error event without a message") : said;
}

bool OpenAiDecoder::take_usage(const Usage& usage) {
  std::string why = implausible_usage(usage);
  if (!why.empty()) [[unlikely]] {
    pending_error_ = ErrorCategory::kImplausibleUsage;
    pending_message_ = std::move(why);
    return false;
  }
  usage_ = usage;
  return true;
}

void OpenAiDecoder::on_sse_event(const SseEvent& event) {
  if (progress_.done || pending_error_ || observer_ == nullptr) return;
  if (event.unframed || !event.error.empty() || event.type == "error") [[unlikely]] {
    on_error_event(event);
    return;
  }
  if (!chunks_.decode(event.data, chunk_, scratch_error_)) {
    pending_error_ = ErrorCategory::kParse;
    pending_message_ = "invalid SSE data payload: " + scratch_error_;
    return;
  }
  if (chunk_.is_done_marker) {
    progress_.done = true;  // the connection waits a grace period for the end of the body
    progress_.done_ns = read_ns_;
    return;
  }
  if (!chunk_.error_message.empty()) {
    // The server's own word inside the answer (vLLM, SGLang, TGI): its message, bounded, in
    // the form every in-stream error takes ("type: message").
    pending_error_ = ErrorCategory::kServerError;
    pending_message_ = error_payload_message(event.data);
    return;
  }
  if (!chunk_.content.empty() || !chunk_.reasoning.empty()) {
    ++token_events_;
    text_bytes_ += chunk_.content.size() + chunk_.reasoning.size();
    if (token_events_ > kMaxTokenEvents || text_bytes_ > kMaxTextBytes) {
      pending_error_ = ErrorCategory::kTooLarge;
      pending_message_ = token_events_ > kMaxTokenEvents
                             ? "more than " + std::to_string(kMaxTokenEvents) + " token events"
                             : "more than " + std::to_string(kMaxTextBytes / (1024 * 1024)) +
                                   " MiB of generated text";
      return;
    }
    progress_.last_token_ns = read_ns_;
    progress_.first_token = true;  // the connection moves from the first-token deadline to idle
    observer_->on_token_event(read_ns_, chunk_.content, chunk_.reasoning);
  }
  if (chunk_.usage && !take_usage(*chunk_.usage)) return;
  if (!chunk_.finish_reason.empty()) done_info_.finish_reason = chunk_.finish_reason;
  if (!chunk_.timings_json.empty()) done_info_.server_timings_json = std::move(chunk_.timings_json);
}

Verdict OpenAiDecoder::end_of_body(std::int64_t t_ns, const ResponseFacts& facts) {
  Verdict verdict;
  if (stream_) {
    // A body that ended cleanly without [DONE] is a complete response (some servers omit it);
    // an unterminated last event is discarded.
    sse_.finish();
    if (pending_error_) verdict = take_error();
    return verdict;
  }
  if (!decode_full_response(body_, chunk_, scratch_error_)) {
    verdict.error = ErrorCategory::kParse;
    verdict.message = "invalid response body: " + scratch_error_ + " (" + describe(facts) + ")";
    return verdict;
  }
  if (!chunk_.error_message.empty()) {
    verdict.error = ErrorCategory::kServerError;
    verdict.message = error_payload_message(body_);
    return verdict;
  }
  if (!chunk_.content.empty() || !chunk_.reasoning.empty()) {
    progress_.first_token = true;
    ++token_events_;
    if (observer_ != nullptr) observer_->on_token_event(t_ns, chunk_.content, chunk_.reasoning);
  }
  if (chunk_.usage && !take_usage(*chunk_.usage)) {
    verdict.error = pending_error_;
    verdict.message = std::move(pending_message_);
    return verdict;
  }
  done_info_.finish_reason = chunk_.finish_reason;
  done_info_.server_timings_json = std::move(chunk_.timings_json);
  return verdict;
}

Verdict OpenAiDecoder::verdict(const ResponseFacts& facts) {
  Verdict verdict;
  const std::string& reason = done_info_.finish_reason;
  if (!progress_.first_token && expects_tokens_ && reason != "tool_calls") {
    verdict.error = ErrorCategory::kNoTokens;
    verdict.message =
        "the response ended without any token (" + describe(facts) + ")" + what_was_said();
    return verdict;
  }
  if (reason.empty()) {
    // The OpenAI APIs end every answer with a finish reason: without one, it was cut short.
    verdict.error = ErrorCategory::kUnfinished;
    verdict.message = std::string("the answer ended ") +
                      (!stream_         ? "without a finish reason"
                       : progress_.done ? "with [DONE] but without a finish reason"
                                        : "with the end of the body but without a finish reason") +
                      ", after " + std::to_string(token_events_) + " token events (" +
                      describe(facts) + ")";
    return verdict;
  }
  if (reason == "error" || reason == "abort") {
    verdict.error = ErrorCategory::kServerError;
    verdict.message = "the server ended the answer with finish_reason \"" + reason + "\" after " +
                      std::to_string(token_events_) + " token events";
  }
  return verdict;
}

void OpenAiDecoder::take_answer(std::optional<Usage>& usage, DoneInfo& info) {
  usage = std::move(usage_);
  info = std::move(done_info_);
}

std::string OpenAiDecoder::describe(const ResponseFacts& facts) const {
  std::string out = describe_transport(facts);
  if (stream_) out += ", " + std::to_string(sse_.events_dispatched()) + " SSE events";
  if (!done_info_.finish_reason.empty()) out += ", finish_reason " + done_info_.finish_reason;
  return out;
}

std::string OpenAiDecoder::what_was_said() const {
  const std::string& body = stream_ ? body_head_ : body_;
  if (body.empty()) return {};
  return "; the server sent: " + bounded_excerpt(body, 200);
}

}  // namespace dyno::transport
