// A TOML reader for engine spec files: the subset of TOML 1.0 a configuration file needs.
//
// Supported: comments; bare, quoted and dotted keys; [tables] and [dotted.tables]; basic,
// literal and multi-line strings (with TOML's escapes); integers (decimal with `_`, 0x/0o/0b);
// floats (with exponent, inf, nan); booleans; arrays (across lines, trailing comma); inline
// tables. Not supported, each a clear error: dates and times, arrays of tables ([[x]]).
// The document is returned as Boost.JSON values (TOML's types map one to one: integer →
// int64, float → double) with the line of every key, so later validation can name it.
#pragma once

#include <boost/json/value.hpp>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dyno::engine {

/// A syntax error: `what()` is "<source>:<line>: <message>".
class TomlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TomlDocument {
  boost::json::object root;
  /// Dotted key path ("ready.http_path", "args") → the line (1-based) that defined it.
  std::map<std::string, int> lines;
  /// The line of `path`, or of its closest defined parent; 0 when unknown.
  int line_of(const std::string& path) const;
};

/// Parses `text`; `source` names it in errors (a file path). Throws TomlError.
TomlDocument parse_toml(std::string_view text, const std::string& source);

}  // namespace dyno::engine
