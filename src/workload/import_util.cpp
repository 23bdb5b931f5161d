#include "workload/import_util.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "workload/request_stream.h"
#include "workload/stream_json.h"
#include "workload/user_file.h"

namespace dyno::workload::import_util {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path, const char* what) {
  const std::string name = path.string();
  constexpr std::uint64_t kMaxBytes = std::uint64_t{4} << 30;  // 4 GiB: a data set, not a stream
  return read_regular_file(name, kMaxBytes, [&](const FileRefusal& r) {
    using Kind = FileRefusal::Kind;
    switch (r.kind) {
      case Kind::kDirectory:
        throw StreamError(name + " is a directory, not a " + what + "; give the file in it");
      case Kind::kNotRegular:
        throw StreamError(name + " " + r.what + ", not a regular file; a " + what +
                          " is read from a regular file only");
      case Kind::kTooLarge:
        throw StreamError(name + " " + r.what + " as a " + what);
      case Kind::kUnreadable:
        break;
    }
    throw StreamError(name + ": the " + std::string(what) + " " + r.what);
  });
}

boost::json::value parse_json(const std::string& text, const std::string& where) {
  boost::system::error_code ec;
  boost::json::value v = stream_json::parse(text, ec);
  if (ec) throw StreamError(where + ": invalid JSON (" + ec.message() + ")");
  return v;
}

std::size_t count_words(const std::string& s) {
  std::size_t n = 0;
  bool in_word = false;
  for (const char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

std::int64_t reply_max_tokens(const std::string& reply) {
  const double approx = std::round(static_cast<double>(count_words(reply)) * 1.3);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(approx));
}

void finish(RequestStream& stream, const std::string& kind, const fs::path& path) {
  if (stream.requests.empty()) {
    throw StreamError(path.string() + ": no requests imported (empty, or all records filtered)");
  }
  stream.source = kind + ":" + path.string();
  stream.sha256 = stream_sha256(stream.requests);
}

void add_unique(RequestStream& stream, std::map<std::string, std::string>& seen, Request r,
                const std::string& where) {
  const auto [it, inserted] = seen.emplace(r.id, where);
  if (!inserted) {
    throw StreamError(where + ": duplicate id \"" + r.id + "\" (first at " + it->second +
                      "); ids must be unique within a stream");
  }
  stream.requests.push_back(std::move(r));
}

ShareGptTurn read_sharegpt_turn(const boost::json::array& turns, std::size_t t,
                                const std::string& where) {
  const std::string key = "conversations[" + std::to_string(t) + "]";
  if (!turns[t].is_object()) throw StreamError(where + ": key `" + key + "` is not an object");
  const boost::json::object& turn = turns[t].get_object();
  const boost::json::value* from = turn.if_contains("from");
  const boost::json::value* value = turn.if_contains("value");
  if (from == nullptr || !from->is_string()) {
    throw StreamError(where + ": key `" + key + ".from` missing or not a string");
  }
  if (value == nullptr || !value->is_string()) {
    throw StreamError(where + ": key `" + key + ".value` missing or not a string");
  }
  const std::string role(from->get_string());
  ShareGptTurn out;
  out.text = std::string(value->get_string());
  if (role == "human" || role == "user") {
    out.role = ShareGptTurn::Role::kUser;
  } else if (role == "gpt" || role == "assistant" || role == "chatgpt" || role == "bard" ||
             role == "bing") {
    out.role = ShareGptTurn::Role::kReply;
  } else if (role == "system") {
    out.role = ShareGptTurn::Role::kSystem;
  } else {
    throw StreamError(where + ": key `" + key + ".from`: unknown role \"" + role +
                      "\"; expected human, gpt or system");
  }
  return out;
}

}  // namespace dyno::workload::import_util
