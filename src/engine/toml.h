// The TOML reader of engine spec files: TOML 1.0 as toml++ reads it (Debian's
// libtomlplusplus; only toml.cpp includes its headers).
//
// Refused, each a TomlError naming its line: dates and times and arrays of tables ([[x]]), which
// no spec key takes; text that is not UTF-8; keys and values nested over 256 levels deep.
// The document is returned as Boost.JSON values (TOML's types map one to one: integer →
// int64, float → double, table → object, in the order of the file) with the line of every key,
// so later validation can name it.
#pragma once

#include <boost/json/value.hpp>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "error/error.h"

namespace dyno::engine {

/// A syntax error: `what()` is "<source>:<line>: <message>".
class TomlError : public Error {
 public:
  explicit TomlError(const std::string& message) : Error(ErrorKind::input, message) {}
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
