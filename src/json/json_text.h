// The text form of JSON values that dyno writes: records, streams, summaries.
// Numbers use the shortest text that reads back to the same double (0.7, not 7E-1), so the
// files are pleasant to read and byte-stable; a double with an integral value keeps a ".0"
// (24.0) so it reads back as a double; non-finite doubles are written as null.
#pragma once

#include <boost/json/value.hpp>
#include <string>

namespace dyno::json_text {

/// Compact form (no whitespace), e.g. one requests.jsonl line.
std::string compact(const boost::json::value& value);

/// Two-space indented form with a trailing newline; arrays of scalars stay on one line.
std::string pretty(const boost::json::value& value);

}  // namespace dyno::json_text
