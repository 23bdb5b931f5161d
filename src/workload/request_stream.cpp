#include "workload/request_stream.h"

#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>

#include "json/json_text.h"

namespace dyno::workload {

namespace json = boost::json;

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& what) {
  throw StreamError(where + ": key `" + key + "`: " + what);
}

const char* kind_name(json::kind k) {
  switch (k) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "an integer";
    case json::kind::double_:
      return "a non-integer number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

std::string got(const json::value& v) { return std::string(" (got ") + kind_name(v.kind()) + ")"; }

std::string as_string(const json::value& v, const std::string& where, const std::string& key) {
  if (!v.is_string()) fail(where, key, "must be a string" + got(v));
  return std::string(v.get_string());
}

/// An integer that fits int64 (JSON integers only; 5.0 is rejected to keep types exact).
std::int64_t as_int(const json::value& v, const std::string& where, const std::string& key) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(where, key, "is too large; use an integer below 2^63");
    }
    return static_cast<std::int64_t>(v.get_uint64());
  }
  fail(where, key, "must be an integer" + got(v));
}

double as_number(const json::value& v, const std::string& where, const std::string& key) {
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  fail(where, key, "must be a number" + got(v));
}

std::vector<Message> parse_messages(const json::value& v, const std::string& where) {
  if (!v.is_array()) fail(where, "messages", "must be an array of {role, content}" + got(v));
  const json::array& arr = v.get_array();
  if (arr.empty()) fail(where, "messages", "is empty; give at least one message");
  std::vector<Message> out;
  out.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string prefix = "messages[" + std::to_string(i) + "]";
    if (!arr[i].is_object()) fail(where, prefix, "must be an object {role, content}" + got(arr[i]));
    const json::object& obj = arr[i].get_object();
    Message m;
    bool has_role = false;
    bool has_content = false;
    for (const auto& kv : obj) {
      const std::string k(kv.key());
      if (k == "role") {
        m.role = as_string(kv.value(), where, prefix + ".role");
        if (m.role.empty()) fail(where, prefix + ".role", "is empty; use e.g. \"user\"");
        has_role = true;
      } else if (k == "content") {
        m.content = as_string(kv.value(), where, prefix + ".content");
        has_content = true;
      } else {
        fail(where, prefix + "." + k, "unknown key; a message has only `role` and `content`");
      }
    }
    if (!has_role) fail(where, prefix + ".role", "missing; every message needs a role");
    if (!has_content) fail(where, prefix + ".content", "missing; every message needs content");
    out.push_back(std::move(m));
  }
  return out;
}

std::string to_hex(const unsigned char* data, unsigned int n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * static_cast<std::size_t>(n));
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 0x0f]);
  }
  return out;
}

}  // namespace

Request parse_request_line(const std::string& line, const std::string& where) {
  boost::system::error_code ec;
  json::value root = json::parse(line, ec);
  if (ec) {
    throw StreamError(where + ": invalid JSON (" + ec.message() +
                      "); each line must be one complete JSON object");
  }
  if (!root.is_object()) {
    throw StreamError(where + ": expected a JSON object" + got(root) +
                      "; each line must be one request object");
  }
  const json::object& obj = root.get_object();
  Request r;
  bool has_id = false;
  bool has_messages = false;
  for (const auto& kv : obj) {
    const std::string key(kv.key());
    const json::value& v = kv.value();
    if (key == "id") {
      r.id = as_string(v, where, key);
      if (r.id.empty()) fail(where, key, "is empty; every request needs a unique non-empty id");
      has_id = true;
    } else if (key == "messages") {
      r.messages = parse_messages(v, where);
      has_messages = true;
    } else if (key == "prompt") {
      r.prompt = as_string(v, where, key);
    } else if (key == "max_tokens") {
      const std::int64_t n = as_int(v, where, key);
      if (n < 1) fail(where, key, "must be >= 1 (got " + std::to_string(n) + ")");
      r.sampling.max_tokens = n;
    } else if (key == "temperature") {
      const double t = as_number(v, where, key);
      if (!(t >= 0.0) || !std::isfinite(t)) fail(where, key, "must be a finite number >= 0");
      r.sampling.temperature = t;
    } else if (key == "top_p") {
      const double p = as_number(v, where, key);
      if (!(p > 0.0 && p <= 1.0)) fail(where, key, "must be in (0, 1]");
      r.sampling.top_p = p;
    } else if (key == "seed") {
      r.sampling.seed = as_int(v, where, key);
    } else if (key == "stop") {
      if (v.is_string()) {
        r.sampling.stop = {std::string(v.get_string())};
      } else if (v.is_array()) {
        const json::array& arr = v.get_array();
        for (std::size_t i = 0; i < arr.size(); ++i) {
          r.sampling.stop.push_back(as_string(arr[i], where, "stop[" + std::to_string(i) + "]"));
        }
      } else {
        fail(where, key, "must be a string or an array of strings" + got(v));
      }
    } else if (key == "ignore_eos") {
      if (!v.is_bool()) fail(where, key, "must be true or false" + got(v));
      r.sampling.ignore_eos = v.get_bool();
    } else if (key == "min_tokens") {
      const std::int64_t n = as_int(v, where, key);
      if (n < 0) fail(where, key, "must be >= 0 (got " + std::to_string(n) + ")");
      r.sampling.min_tokens = n;
    } else if (key == "tags") {
      if (!v.is_object()) fail(where, key, "must be an object of string values" + got(v));
      for (const auto& tag : v.get_object()) {
        const std::string tag_key(tag.key());
        r.tags[tag_key] = as_string(tag.value(), where, "tags." + tag_key);
      }
    } else {
      fail(where, key,
           "unknown key; allowed: id, messages, prompt, max_tokens, temperature, top_p, seed, "
           "stop, ignore_eos, min_tokens, tags");
    }
  }
  if (!has_id) fail(where, "id", "missing; every request needs a unique string id");
  if (has_messages && r.prompt) {
    fail(where, "prompt",
         "given together with `messages`; use `messages` (chat) or `prompt` (completions), not "
         "both");
  }
  if (!has_messages && !r.prompt) {
    fail(where, "messages", "missing; give `messages` (chat) or `prompt` (completions)");
  }
  return r;
}

std::string to_json_line(const Request& request) {
  json::object obj;
  obj["id"] = request.id;
  if (request.prompt) {
    obj["prompt"] = *request.prompt;
  } else {
    json::array messages;
    for (const Message& m : request.messages) {
      json::object mo;
      mo["role"] = m.role;
      mo["content"] = m.content;
      messages.emplace_back(std::move(mo));
    }
    obj["messages"] = std::move(messages);
  }
  const Sampling& s = request.sampling;
  if (s.max_tokens) obj["max_tokens"] = *s.max_tokens;
  if (s.temperature) obj["temperature"] = *s.temperature;
  if (s.top_p) obj["top_p"] = *s.top_p;
  if (s.seed) obj["seed"] = *s.seed;
  if (!s.stop.empty()) {
    json::array stop;
    for (const std::string& x : s.stop) stop.emplace_back(x);
    obj["stop"] = std::move(stop);
  }
  if (s.ignore_eos) obj["ignore_eos"] = *s.ignore_eos;
  if (s.min_tokens) obj["min_tokens"] = *s.min_tokens;
  if (!request.tags.empty()) {
    json::object tags;
    for (const auto& [k, v] : request.tags) tags[k] = v;  // std::map: sorted keys
    obj["tags"] = std::move(tags);
  }
  return json_text::compact(obj);
}

RequestStream read_stream_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw StreamError(name + ": cannot open (" + std::strerror(errno) +
                      "); check the path given as the request stream");
  }
  RequestStream stream;
  stream.source = name;
  std::map<std::string, std::size_t> first_line_of_id;
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = name + ":" + std::to_string(line_no);
    Request r = parse_request_line(line, where);
    const auto [it, inserted] = first_line_of_id.emplace(r.id, line_no);
    if (!inserted) {
      fail(where, "id",
           "duplicate id \"" + r.id + "\" (first at line " + std::to_string(it->second) +
               "); ids must be unique within a stream");
    }
    stream.requests.push_back(std::move(r));
  }
  if (in.bad()) throw StreamError(name + ": read error");
  if (stream.requests.empty()) {
    throw StreamError(name + ": no requests; the file must hold one JSON object per line");
  }
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

void write_stream_file(const std::filesystem::path& path, const RequestStream& stream) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw StreamError(path.string() + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
  for (const Request& r : stream.requests) out << to_json_line(r) << '\n';
  out.flush();
  if (!out) throw StreamError(path.string() + ": write failed");
}

std::string stream_sha256(const std::vector<Request>& requests) {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                    &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256: OpenSSL EVP initialisation failed");
  }
  for (const Request& r : requests) {
    std::string line = to_json_line(r);
    line.push_back('\n');
    if (EVP_DigestUpdate(ctx.get(), line.data(), line.size()) != 1) {
      throw std::runtime_error("sha256: OpenSSL EVP update failed");
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &n) != 1) {
    throw std::runtime_error("sha256: OpenSSL EVP final failed");
  }
  return to_hex(digest, n);
}

}  // namespace dyno::workload
