// Helpers shared by the stream importers (internal to workload/: import.cpp,
// import_sessions.cpp, trace_import.cpp): reading a whole file, parsing JSON with the file in
// errors, a seeded shuffle, word counts, unique ids, and the stream's source and hash.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
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

}  // namespace dyno::workload::import_util
