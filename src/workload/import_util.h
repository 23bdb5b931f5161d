// Helpers shared by the stream importers (internal to workload/: import.cpp,
// import_sessions.cpp, trace_import.cpp): reading a whole file, parsing JSON with the file in
// errors, a seeded shuffle, word counts, unique ids, and the stream's source and hash.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workload/request.h"
#include "workload/seeded_text.h"

namespace dyno::workload::import_util {

/// The bytes of `path`; StreamError naming the file when it is a directory or unreadable.
std::string read_all(const std::filesystem::path& path, const char* what);

/// `text` as JSON; StreamError("<where>: invalid JSON (...)") otherwise.
boost::json::value parse_json(const std::string& text, const std::string& where);

/// Fisher–Yates from the back: for i = n-1 .. 1, swap(v[i], v[below(i + 1)]).
template <typename T>
void seeded_shuffle(std::vector<T>& v, std::uint64_t seed) {
  SplitMix64 rng(seed);
  for (std::size_t i = v.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(v[i - 1], v[j]);
  }
}

/// Whitespace-separated words of `s`.
std::size_t count_words(const std::string& s);

/// max_tokens approximating a reference reply: round(words × 1.3), at least 1.
std::int64_t reply_max_tokens(const std::string& reply);

/// Sets `source` ("<kind>:<path>") and `sha256`; StreamError when no request was imported.
void finish(RequestStream& stream, const std::string& kind, const std::filesystem::path& path);

/// Appends `r`; StreamError naming both places when its id was seen (seen: id → where).
void add_unique(RequestStream& stream, std::map<std::string, std::string>& seen, Request r,
                const std::string& where);

/// Calls `visit(line, line_no)` for each non-blank line of `text` (LF-separated, a CR before
/// the LF dropped; line numbers count blank lines too) until it returns false.
template <typename Visit>
void for_each_line(std::string_view text, Visit visit) {
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (!visit(line, line_no)) return;
  }
}

/// One element of a ShareGPT `conversations` array: who spoke and what.
struct ShareGptTurn {
  enum class Role { kUser, kReply, kSystem };
  Role role = Role::kUser;
  std::string text;
};

/// Reads conversations[t]: `from` (human/user; gpt/assistant/chatgpt/bard/bing; system) and
/// `value`. StreamError("<where>: key `conversations[t]…`: …") when either is missing, not a
/// string, or the role is unknown.
ShareGptTurn read_sharegpt_turn(const boost::json::array& turns, std::size_t t,
                                const std::string& where);

}  // namespace dyno::workload::import_util
