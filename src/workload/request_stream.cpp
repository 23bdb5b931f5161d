#include "workload/request_stream.h"

#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "digest/digest.h"
#include "error/registry.h"
#include "json/json_text.h"
#include "workload/message_json.h"
#include "workload/scorer_spec.h"
#include "workload/scoring.h"
#include "workload/sessions.h"
#include "workload/stream_json.h"

namespace dyno::workload {

namespace json = boost::json;
using stream_json::as_int;
using stream_json::as_number;
using stream_json::as_string;
using stream_json::fail;
using stream_json::got;

namespace {

struct DataUrl {
  std::string mime;
  std::string_view payload;  ///< the base64 text
};

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// Splits "data:<mime>;base64,<payload>"; nullopt when `url` does not have that shape.
std::optional<DataUrl> split_data_url(std::string_view url) {
  if (!starts_with(url, "data:")) return std::nullopt;
  const std::size_t marker = url.find(";base64,");
  if (marker == std::string_view::npos) return std::nullopt;
  return DataUrl{std::string(url.substr(5, marker - 5)), url.substr(marker + 8)};
}

/// The JSON object of to_json_line / canonical_line; `canonical` writes data URL images by hash.
json::object request_object(const Request& request, bool canonical) {
  json::object obj;
  obj["id"] = request.id;
  if (request.turn) {
    const Turn& t = *request.turn;
    obj["session"] = t.session;
    obj["turn"] = t.index;
    if (t.think_ms) obj["think_ms"] = *t.think_ms;
    if (!t.tool_calls.empty()) obj["tool_calls"] = parse_kept_json(t.tool_calls);
    if (!t.tools.empty()) obj["tools"] = parse_kept_json(t.tools);
  }
  if (request.at_ms) obj["at_ms"] = *request.at_ms;
  if (request.prompt) {
    obj["prompt"] = *request.prompt;
  } else {
    obj["messages"] = messages_to_json(request.messages, canonical, request.id);
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
  if (request.expected) {
    obj["expected"] = request.expected->answer;
    obj["scorer"] = scorer_to_json(*request.expected);
  }
  if (!request.extra_body.empty()) obj["extra_body"] = parse_kept_json(request.extra_body);
  return obj;
}

}  // namespace

std::string image_mime_type(std::string_view b) {
  if (starts_with(b, "\x89PNG\r\n\x1a\n")) return "image/png";
  if (starts_with(b, "\xff\xd8\xff")) return "image/jpeg";
  if (starts_with(b, "GIF87a") || starts_with(b, "GIF89a")) return "image/gif";
  if (b.size() >= 12 && starts_with(b, "RIFF") && b.substr(8, 4) == "WEBP") return "image/webp";
  return "";
}

ContentPart image_part_from_file(const std::filesystem::path& file, const std::string& where,
                                 const std::string& key) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    fail(where, key, file.string() + " is a directory, not an image file; name the image in it");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    fail(where, key, "cannot open image file " + file.string() + " (" + std::strerror(errno) + ")");
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(where, key, "read error on image file " + file.string());
  if (bytes.empty()) fail(where, key, "image file " + file.string() + " is empty");
  const std::string mime = image_mime_type(bytes);
  if (mime.empty()) {
    fail(where, key,
         "image file " + file.string() +
             " is not PNG, JPEG, GIF or WEBP (unrecognised magic bytes)");
  }
  ContentPart part;
  part.kind = ContentPart::Kind::kImage;
  part.image_url = "data:" + mime + ";base64," + digest::base64_encode(bytes);
  part.image_sha256 = digest::sha256_hex(bytes);
  return part;
}

ContentPart image_part_from_url(const std::string& url, const std::string& where,
                                const std::string& key) {
  ContentPart part;
  part.kind = ContentPart::Kind::kImage;
  part.image_url = url;
  if (starts_with(url, "http://") || starts_with(url, "https://")) return part;
  const std::optional<DataUrl> data = split_data_url(url);
  if (!data) {
    fail(where, key,
         "image URL must be a data URL \"data:image/<type>;base64,...\" or an http(s) URL");
  }
  if (!starts_with(data->mime, "image/") || data->mime.size() == 6) {
    fail(where, key, "data URL MIME type \"" + data->mime + "\" is not image/<type>");
  }
  // Strict RFC 4648 (digest.h), and not empty: an image has bytes.
  const std::optional<std::string> bytes =
      data->payload.empty() ? std::nullopt : digest::base64_decode(data->payload);
  if (!bytes) {
    fail(where, key,
         "invalid base64 in the data URL (strict RFC 4648: standard alphabet, '=' padding, no "
         "whitespace, not empty)");
  }
  part.image_sha256 = digest::sha256_hex(*bytes);
  return part;
}

void parse_scorer(const json::value& v, const std::string& where, Expectation& e) {
  if (v.is_string()) {
    e.scorer = std::string(v.get_string());
    return;
  }
  if (!v.is_object())
    fail(where, "scorer", "must be a scorer name or an object {kind, ...}" + got(v));
  bool has_kind = false;
  for (const auto& kv : v.get_object()) {
    const std::string k(kv.key());
    if (k == "kind") {
      e.scorer = as_string(kv.value(), where, "scorer.kind");
      has_kind = true;
    } else if (k == "pattern") {
      e.pattern = as_string(kv.value(), where, "scorer.pattern");
    } else if (k == "choices") {
      if (!kv.value().is_array()) {
        fail(where, "scorer.choices", "must be an array of strings" + got(kv.value()));
      }
      const json::array& arr = kv.value().get_array();
      for (std::size_t i = 0; i < arr.size(); ++i) {
        e.choices.push_back(as_string(arr[i], where, "scorer.choices[" + std::to_string(i) + "]"));
      }
    } else {
      fail(where, "scorer." + k, "unknown key; a scorer object has `kind`, `pattern`, `choices`");
    }
  }
  if (!has_kind) fail(where, "scorer.kind", "missing; name the scorer, e.g. \"regex\"");
}

void validate_expectation(const Expectation& e, const std::string& where, const std::string& key) {
  if (!is_known_scorer(e.scorer)) {
    fail(where, key,
         "unknown scorer \"" + e.scorer + "\"; use " + registry::name_list(scorers(), " or "));
  }
  if (e.scorer == "regex") {
    if (const std::string problem = regex_scorer_problem(e.pattern); !problem.empty()) {
      fail(where, key, problem);
    }
  } else if (!e.pattern.empty()) {
    fail(where, key, "`pattern` is only for scorer regex");
  }
  if (e.scorer == "choice") {
    if (e.choices.empty()) fail(where, key, "scorer choice needs non-empty `choices`");
    std::set<std::string> seen;
    for (const std::string& c : e.choices) {
      if (c.empty()) fail(where, key, "choices must be non-empty strings");
      if (!seen.insert(c).second) fail(where, key, "choice \"" + c + "\" is given twice");
    }
    if (seen.count(e.answer) == 0) {
      fail(where, key, "the expected answer \"" + e.answer + "\" is not one of the choices");
    }
  } else if (!e.choices.empty()) {
    fail(where, key, "`choices` is only for scorer choice");
  }
}

Request parse_request_line(const std::string& line, const std::string& where,
                           const std::filesystem::path& base_dir) {
  boost::system::error_code ec;
  json::value root = stream_json::parse(line, ec);
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
  bool has_expected = false;
  bool has_scorer = false;
  Expectation expectation;
  TurnKeys turn;
  for (const auto& kv : obj) {
    const std::string key(kv.key());
    const json::value& v = kv.value();
    if (key == "id") {
      r.id = as_string(v, where, key);
      if (r.id.empty()) fail(where, key, "is empty; every request needs a unique non-empty id");
      has_id = true;
    } else if (key == "messages") {
      r.messages = parse_messages(v, where, base_dir);
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
    } else if (key == "session" || key == "turn" || key == "think_ms" || key == "tool_calls" ||
               key == "tools") {
      read_turn_key(key, v, where, turn);
    } else if (key == "at_ms") {
      const double at = as_number(v, where, key);
      if (!(at >= 0.0) || !std::isfinite(at)) fail(where, key, "must be a finite number >= 0");
      if (at > kMaxAtMs) {
        fail(where, key,
             "is " + stream_json::number_text(at) +
                 " ms, more than the largest send time a stream may give (1e13 ms)");
      }
      r.at_ms = at;
    } else if (key == "expected") {
      expectation.answer = as_string(v, where, key);
      has_expected = true;
    } else if (key == "scorer") {
      parse_scorer(v, where, expectation);
      has_scorer = true;
    } else if (key == "extra_body") {
      if (!v.is_object()) {
        fail(where, key, "must be a JSON object of request fields" + stream_json::got(v));
      }
      if (!v.get_object().empty()) r.extra_body = json_text::compact(v);
    } else {
      fail(where, key,
           "unknown key; allowed: id, session, turn, think_ms, tool_calls, tools, at_ms, messages, "
           "prompt, max_tokens, temperature, top_p, seed, stop, ignore_eos, min_tokens, tags, "
           "expected, scorer, extra_body");
    }
  }
  if (has_scorer && !has_expected) {
    fail(where, "scorer", "given without `expected`; a scorer needs the expected answer");
  }
  if (has_expected) {
    validate_expectation(expectation, where, "scorer");
    r.expected = std::move(expectation);
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
  if (turn.given) r.turn = finish_turn(turn, r, where);
  check_tool_answers(
      r.turn ? r.turn->tool_calls : std::string(), r.messages, where, "tool_calls",
      [](std::size_t i) { return "messages[" + std::to_string(i) + "]"; },
      r.turn ? "turn" : "request");
  return r;
}

std::string to_json_line(const Request& request) {
  return json_text::compact(request_object(request, false));
}

std::string canonical_line(const Request& request) {
  return json_text::compact(request_object(request, true));
}

RequestStream parse_stream_text(std::string_view text, const std::string& source,
                                const std::filesystem::path& base_dir) {
  RequestStream stream;
  stream.source = source;
  std::map<std::string, std::size_t> first_line_of_id;
  std::vector<std::size_t> lines;  // the line of each request
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string line(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    Request r = parse_request_line(line, where, base_dir);
    const auto [it, inserted] = first_line_of_id.emplace(r.id, line_no);
    if (!inserted) {
      fail(where, "id",
           "duplicate id \"" + r.id + "\" (first at line " + std::to_string(it->second) +
               "); ids must be unique within a stream");
    }
    stream.requests.push_back(std::move(r));
    lines.push_back(line_no);
  }
  if (stream.requests.empty()) {
    throw StreamError(source + ": no requests; the file must hold one JSON object per line");
  }
  check_sessions(stream.requests, source, lines);
  stream.sha256 = stream_sha256(stream.requests);
  return stream;
}

RequestStream read_stream_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {  // it opens, then every read fails
    throw StreamError(name +
                      " is a directory, not a request stream; give the .jsonl file in it "
                      "(one request per line)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw StreamError(name + ": cannot open (" + std::strerror(errno) +
                      "); check the path given as the request stream");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw StreamError(name + ": read error (" + std::strerror(errno) + ")");
  return parse_stream_text(text, name, path.parent_path());
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
  digest::Sha256 hash;
  for (const Request& r : requests) {
    std::string line = canonical_line(r);
    line.push_back('\n');
    hash.update(line);
  }
  return hash.hex_final();
}

}  // namespace dyno::workload
