#include "transport/request_body.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>

#include "workload/extra_body.h"

namespace dyno::transport {

namespace {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

void append_double(std::string& out, double value) {
  // Shortest round-trip form ("0.7", "1"), unlike Boost.JSON's "7E-1".
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  out.append(buf.data(), end);
}

}  // namespace

const std::string& completions_prompt(const workload::Request& request) {
  if (!request.prompt) {
    for (const auto& message : request.messages) {
      for (const auto& part : message.parts) {
        if (part.kind == workload::ContentPart::Kind::kImage) {
          throw std::invalid_argument("request '" + request.id +
                                      "' has image parts; the completions API takes text "
                                      "only (use --api chat)");
        }
      }
    }
    throw std::invalid_argument("request '" + request.id +
                                "' has chat messages but no prompt for the completions API");
  }
  return *request.prompt;
}

std::string build_messages_json(const workload::Request& request) {
  std::string out = "[";
  if (request.is_chat()) {
    bool first = true;
    for (const auto& message : request.messages) {
      if (!first) out.push_back(',');
      first = false;
      out += "{\"role\":";
      append_json_string(out, message.role);
      out += ",\"content\":";
      if (message.parts.empty()) {
        append_json_string(out, message.content);
      } else {
        // OpenAI content-part array: text parts and image_url parts (data or http(s) URL).
        out.push_back('[');
        for (std::size_t i = 0; i < message.parts.size(); ++i) {
          const auto& part = message.parts[i];
          if (i != 0) out.push_back(',');
          if (part.kind == workload::ContentPart::Kind::kText) {
            out += "{\"type\":\"text\",\"text\":";
            append_json_string(out, part.text);
            out.push_back('}');
          } else {
            out += "{\"type\":\"image_url\",\"image_url\":{\"url\":";
            append_json_string(out, part.image_url);
            out += "}}";
          }
        }
        out.push_back(']');
      }
      if (!message.tool_calls.empty()) {
        out += ",\"tool_calls\":";
        out += message.tool_calls;  // compact JSON the stream reader validated
      }
      if (!message.tool_call_id.empty()) {
        out += ",\"tool_call_id\":";
        append_json_string(out, message.tool_call_id);
      }
      out.push_back('}');
    }
  } else {
    // A prompt sent to the chat endpoint becomes a single user message.
    out += "{\"role\":\"user\",\"content\":";
    append_json_string(out, *request.prompt);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

std::vector<std::string> body_fields(const workload::Request& request, workload::Api api,
                                     bool stream) {
  std::vector<std::string> f = {"model"};
  if (api == workload::Api::kChat) {
    f.emplace_back("messages");
    if (request.turn && !request.turn->tools.empty()) f.emplace_back("tools");
  } else {
    f.emplace_back("prompt");
  }
  const auto& s = request.sampling;
  if (s.max_tokens) f.emplace_back("max_tokens");
  if (s.temperature) f.emplace_back("temperature");
  if (s.top_p) f.emplace_back("top_p");
  if (s.seed) f.emplace_back("seed");
  if (!s.stop.empty()) f.emplace_back("stop");
  if (s.ignore_eos) f.emplace_back("ignore_eos");
  if (s.min_tokens) f.emplace_back("min_tokens");
  f.emplace_back("stream");
  if (stream) f.emplace_back("stream_options");
  return f;
}

std::string build_request_body(const workload::Request& request, const std::string& model,
                               workload::Api api, bool stream) {
  // extra_body is compact JSON text of an object: its members are appended as written.
  const std::vector<std::string> replaced =
      request.extra_body.empty() ? std::vector<std::string>{} : workload::extra_body_keys(request);
  std::string out = "{";
  bool first = true;
  // Starts field `name` unless extra_body gives it; false: leave dyno's value out.
  const auto field = [&](std::string_view name) {
    if (!replaced.empty() && std::find(replaced.begin(), replaced.end(), name) != replaced.end()) {
      return false;
    }
    if (!first) out.push_back(',');
    first = false;
    out.push_back('"');
    out += name;
    out += "\":";
    return true;
  };
  if (field("model")) append_json_string(out, model);
  if (api == workload::Api::kChat) {
    if (field("messages")) out += build_messages_json(request);
    if (request.turn && !request.turn->tools.empty() && field("tools")) out += request.turn->tools;
  } else {
    const std::string& prompt = completions_prompt(request);
    if (field("prompt")) append_json_string(out, prompt);
  }
  const auto& s = request.sampling;
  if (s.max_tokens && field("max_tokens")) out += std::to_string(*s.max_tokens);
  if (s.temperature && field("temperature")) append_double(out, *s.temperature);
  if (s.top_p && field("top_p")) append_double(out, *s.top_p);
  if (s.seed && field("seed")) out += std::to_string(*s.seed);
  if (!s.stop.empty() && field("stop")) {
    out.push_back('[');
    for (std::size_t i = 0; i < s.stop.size(); ++i) {
      if (i != 0) out.push_back(',');
      append_json_string(out, s.stop[i]);
    }
    out.push_back(']');
  }
  if (s.ignore_eos && field("ignore_eos")) out += *s.ignore_eos ? "true" : "false";
  if (s.min_tokens && field("min_tokens")) out += std::to_string(*s.min_tokens);
  if (field("stream")) out += stream ? "true" : "false";
  if (stream && field("stream_options")) out += "{\"include_usage\":true}";
  if (request.extra_body.size() > 2) {  // "{…}" with members
    if (!first) out.push_back(',');
    out.append(request.extra_body, 1, request.extra_body.size() - 2);
  }
  out.push_back('}');
  return out;
}

}  // namespace dyno::transport
