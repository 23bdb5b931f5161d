// The text form of JSON values that dyno writes: records, streams, summaries.
// Numbers use the shortest text that reads back to the same double (0.7, not 7E-1), so the
// files are pleasant to read and byte-stable; a double with an integral value keeps a ".0"
// (24.0) so it reads back as a double; non-finite doubles are written as null. Every string
// (keys included) is written as well-formed UTF-8: ill-formed bytes become U+FFFD (utf8.h),
// so whatever a server or a file handed dyno, the text always parses back.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <string>

namespace dyno::json_text {

/// What writing a value had to change.
struct WriteStats {
  std::size_t invalid_utf8_bytes = 0;  ///< ill-formed UTF-8 bytes replaced by U+FFFD
};

/// Compact form (no whitespace), e.g. one requests.jsonl line. Adds to `*stats` when given.
std::string compact(const boost::json::value& value, WriteStats* stats = nullptr);

/// Two-space indented form with a trailing newline; arrays of scalars stay on one line.
std::string pretty(const boost::json::value& value, WriteStats* stats = nullptr);

}  // namespace dyno::json_text
