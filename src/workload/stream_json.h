// Reading the JSON values of a stream line with errors that name the line and key (internal to
// workload/: request_stream.cpp, message_json.cpp).
#pragma once

#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace dyno::workload::stream_json {

/// `text` as one JSON value (boost::json::parse's grammar and limits), with every non-integer
/// number read correctly rounded (std::from_chars). Boost.JSON 1.81 rounds some numbers to a
/// neighbouring double (e.g. 4.0222222222222222e50), so a double written in its shortest form
/// would not read back equal. `ec` is set when the text is not JSON.
boost::json::value parse(std::string_view text, boost::system::error_code& ec);

/// Throws StreamError("<where>: key `<key>`: <what>").
[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& what);
/// " (got a string)" and the like, for messages.
std::string got(const boost::json::value& v);
std::string as_string(const boost::json::value& v, const std::string& where,
                      const std::string& key);
/// An integer that fits int64 (JSON integers only; 5.0 is rejected to keep types exact).
std::int64_t as_int(const boost::json::value& v, const std::string& where, const std::string& key);
double as_number(const boost::json::value& v, const std::string& where, const std::string& key);
/// A number as messages print it: its shortest form ("1e+300", "90000000", "0.5").
std::string number_text(double v);

}  // namespace dyno::workload::stream_json
