#include "workload/message_json.h"

#include <boost/json.hpp>
#include <stdexcept>

#include "json/json_text.h"
#include "workload/request_stream.h"
#include "workload/stream_json.h"

namespace dyno::workload {

namespace json = boost::json;
using stream_json::as_string;
using stream_json::fail;
using stream_json::got;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

const json::object& object_at(const json::value& v, const std::string& where,
                              const std::string& key, const char* shape) {
  if (!v.is_object()) fail(where, key, std::string("must be an object ") + shape + got(v));
  return v.get_object();
}

std::string non_empty_string(const json::object& o, const char* name, const std::string& where,
                             const std::string& key) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr) fail(where, key + "." + name, "missing");
  std::string s = as_string(*v, where, key + "." + name);
  if (s.empty()) fail(where, key + "." + name, "is empty");
  return s;
}

std::vector<ContentPart> parse_parts(const json::array& arr, const std::string& where,
                                     const std::string& prefix,
                                     const std::filesystem::path& base_dir) {
  if (arr.empty()) fail(where, prefix, "is an empty array; give a string or at least one part");
  std::vector<ContentPart> parts;
  parts.reserve(arr.size());
  for (std::size_t j = 0; j < arr.size(); ++j) {
    const std::string key = prefix + "[" + std::to_string(j) + "]";
    if (!arr[j].is_object()) fail(where, key, "must be an object {type, ...}" + got(arr[j]));
    const json::object& obj = arr[j].get_object();
    const json::value* type_value = obj.if_contains("type");
    if (type_value == nullptr) {
      fail(where, key + ".type", "missing; a part is of type text, image_url or image");
    }
    const std::string type = as_string(*type_value, where, key + ".type");
    const auto only_keys = [&](std::initializer_list<std::string_view> allowed,
                               const std::string& what) {
      for (const auto& kv : obj) {
        if (kv.key() == "type") continue;
        bool known = false;
        for (std::string_view a : allowed) known = known || kv.key() == a;
        if (!known) {
          fail(where, key + "." + std::string(kv.key()), "unknown key; " + what);
        }
      }
    };
    const auto required = [&](const char* name) -> const json::value& {
      const json::value* v = obj.if_contains(name);
      if (v == nullptr) fail(where, key + "." + name, "missing in a " + type + " part");
      return *v;
    };
    if (type == "text") {
      only_keys({"text"}, "a text part has only `type` and `text`");
      ContentPart part;
      part.kind = ContentPart::Kind::kText;
      part.text = as_string(required("text"), where, key + ".text");
      parts.push_back(std::move(part));
    } else if (type == "image_url") {
      only_keys({"image_url"}, "an image_url part has only `type` and `image_url`");
      const json::value& iu = required("image_url");
      if (!iu.is_object()) fail(where, key + ".image_url", "must be an object {url}" + got(iu));
      for (const auto& kv : iu.get_object()) {
        if (kv.key() != "url") {
          fail(where, key + ".image_url." + std::string(kv.key()),
               "unknown key; image_url has only `url`");
        }
      }
      const json::value* url = iu.get_object().if_contains("url");
      if (url == nullptr) fail(where, key + ".image_url.url", "missing; give the image URL");
      parts.push_back(
          image_part_from_url(as_string(*url, where, key + ".image_url.url"), where, key));
    } else if (type == "image") {
      if (obj.contains("sha256")) {
        fail(where, key + ".sha256",
             "an image given only by hash cannot be sent (that is the canonical hash form); give "
             "`path` or an image_url part");
      }
      only_keys({"path"}, "an image part has only `type` and `path`");
      const std::string rel = as_string(required("path"), where, key + ".path");
      if (rel.empty()) fail(where, key + ".path", "is empty; give the image file's path");
      std::filesystem::path file(rel);
      if (file.is_relative() && !base_dir.empty()) file = base_dir / file;
      parts.push_back(image_part_from_file(file, where, key + ".path"));
    } else {
      fail(where, key + ".type",
           "unknown part type \"" + type + "\"; use text, image_url or image");
    }
  }
  return parts;
}

}  // namespace

std::string parse_tool_calls(const json::value& v, const std::string& where,
                             const std::string& key) {
  if (!v.is_array() || v.get_array().empty()) {
    fail(where, key, "must be a non-empty array of {id, type, function}" + got(v));
  }
  const json::array& arr = v.get_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string k = key + "[" + std::to_string(i) + "]";
    const json::object& call = object_at(arr[i], where, k, "{id, type, function}");
    for (const auto& kv : call) {
      if (kv.key() != "id" && kv.key() != "type" && kv.key() != "function") {
        fail(where, k + "." + std::string(kv.key()),
             "unknown key; a tool call has `id`, `type` and `function`");
      }
    }
    non_empty_string(call, "id", where, k);
    if (non_empty_string(call, "type", where, k) != "function") {
      fail(where, k + ".type", "must be \"function\"");
    }
    const json::value* fn = call.if_contains("function");
    if (fn == nullptr) fail(where, k + ".function", "missing; give {name, arguments}");
    const json::object& f = object_at(*fn, where, k + ".function", "{name, arguments}");
    for (const auto& kv : f) {
      if (kv.key() != "name" && kv.key() != "arguments") {
        fail(where, k + ".function." + std::string(kv.key()),
             "unknown key; a function call has `name` and `arguments`");
      }
    }
    non_empty_string(f, "name", where, k + ".function");
    const json::value* args = f.if_contains("arguments");
    if (args == nullptr) fail(where, k + ".function.arguments", "missing (the JSON text)");
    as_string(*args, where, k + ".function.arguments");
  }
  return json_text::compact(v);
}

std::string parse_tools(const json::value& v, const std::string& where, const std::string& key) {
  if (!v.is_array() || v.get_array().empty()) {
    fail(where, key, "must be a non-empty array of tool objects" + got(v));
  }
  const json::array& arr = v.get_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string k = key + "[" + std::to_string(i) + "]";
    non_empty_string(object_at(arr[i], where, k, "{type, function}"), "type", where, k);
  }
  return json_text::compact(v);
}

json::value parse_kept_json(const std::string& text) {
  boost::system::error_code ec;
  json::value v = stream_json::parse(text, ec);  // the numbers as they were read
  if (ec) throw std::logic_error("parse_kept_json: not JSON: " + ec.message());
  return v;
}

std::vector<Message> parse_messages(const json::value& v, const std::string& where,
                                    const std::filesystem::path& base_dir) {
  if (!v.is_array()) fail(where, "messages", "must be an array of {role, content}" + got(v));
  const json::array& arr = v.get_array();
  if (arr.empty()) fail(where, "messages", "is empty; give at least one message");
  std::vector<Message> out;
  out.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string prefix = "messages[" + std::to_string(i) + "]";
    if (!arr[i].is_object())
      fail(where, prefix, "must be an object {role, content, …}" + got(arr[i]));
    const json::object& obj = arr[i].get_object();
    Message m;
    bool has_role = false;
    bool has_content = false;
    bool has_null_content = false;
    for (const auto& kv : obj) {
      const std::string k(kv.key());
      if (k == "role") {
        m.role = as_string(kv.value(), where, prefix + ".role");
        if (m.role.empty()) fail(where, prefix + ".role", "is empty; use e.g. \"user\"");
        has_role = true;
      } else if (k == "content") {
        if (kv.value().is_null()) {
          has_null_content = true;
        } else if (kv.value().is_array()) {
          m.parts = parse_parts(kv.value().get_array(), where, prefix + ".content", base_dir);
        } else if (kv.value().is_string()) {
          m.content = std::string(kv.value().get_string());
        } else {
          fail(where, prefix + ".content",
               "must be a string or an array of parts" + got(kv.value()));
        }
        has_content = true;
      } else if (k == "tool_calls") {
        m.tool_calls = parse_tool_calls(kv.value(), where, prefix + ".tool_calls");
      } else if (k == "tool_call_id") {
        m.tool_call_id = as_string(kv.value(), where, prefix + ".tool_call_id");
        if (m.tool_call_id.empty()) fail(where, prefix + ".tool_call_id", "is empty");
      } else {
        fail(where, prefix + "." + k,
             "unknown key; a message has `role`, `content`, and `tool_calls` (assistant) or "
             "`tool_call_id` (tool)");
      }
    }
    if (!has_role) fail(where, prefix + ".role", "missing; every message needs a role");
    if (!m.tool_calls.empty() && m.role != "assistant") {
      fail(where, prefix + ".tool_calls", "only an assistant message carries tool calls");
    }
    if (m.role == "tool" && m.tool_call_id.empty()) {
      fail(where, prefix + ".tool_call_id", "missing; a tool message names the call it answers");
    }
    if (m.role != "tool" && !m.tool_call_id.empty()) {
      fail(where, prefix + ".tool_call_id", "only a tool message answers a tool call");
    }
    const bool content_optional = !m.tool_calls.empty();
    if (has_null_content && !content_optional) {
      fail(where, prefix + ".content",
           "is null; only an assistant message with tool_calls may "
           "have no content");
    }
    if (!has_content && !has_null_content && !content_optional) {
      fail(where, prefix + ".content", "missing; every message needs content");
    }
    out.push_back(std::move(m));
  }
  return out;
}

json::array messages_to_json(const std::vector<Message>& in, bool canonical,
                             const std::string& request_id) {
  json::array messages;
  for (const Message& m : in) {
    json::object mo;
    mo["role"] = m.role;
    if (m.parts.empty()) {
      mo["content"] = m.content;
    } else {
      json::array parts;
      for (const ContentPart& p : m.parts) {
        json::object po;
        if (p.kind == ContentPart::Kind::kText) {
          po["type"] = "text";
          po["text"] = p.text;
        } else if (canonical && starts_with(p.image_url, "data:")) {
          std::string sha = p.image_sha256;
          if (sha.empty())
            sha = image_part_from_url(p.image_url, request_id, "image_url").image_sha256;
          po["type"] = "image";
          po["sha256"] = sha;
        } else {
          po["type"] = "image_url";
          json::object url;
          url["url"] = p.image_url;
          po["image_url"] = std::move(url);
        }
        parts.emplace_back(std::move(po));
      }
      mo["content"] = std::move(parts);
    }
    if (!m.tool_calls.empty()) mo["tool_calls"] = parse_kept_json(m.tool_calls);
    if (!m.tool_call_id.empty()) mo["tool_call_id"] = m.tool_call_id;
    messages.emplace_back(std::move(mo));
  }
  return messages;
}

}  // namespace dyno::workload
