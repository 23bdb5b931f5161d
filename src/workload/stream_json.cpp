#include "workload/stream_json.h"

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

}  // namespace

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

}  // namespace dyno::workload::stream_json
