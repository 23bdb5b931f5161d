#include "workload/stream_json.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>
#include <charconv>
#include <limits>

#include "workload/request_stream.h"

namespace dyno::workload::stream_json {

namespace json = boost::json;

namespace {

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

/// Boost.JSON's own DOM handler (detail/handler.hpp), except that doubles are read again from
/// their text.
struct PreciseHandler {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value_stack st;
  std::string number;  // the parts of a number split across writes

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return true; }
  bool on_object_end(std::size_t n, json::error_code&) {
    st.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    st.push_key(s);
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    number.clear();
    st.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    number.clear();
    st.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view s, json::error_code&) {
    number.append(s.data(), s.size());
    double exact = 0;
    const auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), exact);
    if (err == std::errc() && end == number.data() + number.size()) d = exact;
    number.clear();
    st.push_double(d);
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

}  // namespace

json::value parse(std::string_view text, boost::system::error_code& ec) {
  json::basic_parser<PreciseHandler> p(json::parse_options{});
  p.handler().st.reset(json::storage_ptr());
  const std::size_t n = p.write_some(false, text.data(), text.size(), ec);
  if (ec) return nullptr;
  if (n < text.size()) {
    ec = json::error::extra_data;
    return nullptr;
  }
  return p.handler().st.release();
}

void fail(const std::string& where, const std::string& key, const std::string& what) {
  throw StreamError(where + ": key `" + key + "`: " + what);
}

std::string got(const json::value& v) { return std::string(" (got ") + kind_name(v.kind()) + ")"; }

std::string as_string(const json::value& v, const std::string& where, const std::string& key) {
  if (!v.is_string()) fail(where, key, "must be a string" + got(v));
  return std::string(v.get_string());
}

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

std::string number_text(double v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

}  // namespace dyno::workload::stream_json
