#include "json/json_text.h"

#include <array>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <cmath>

#include "json/utf8.h"

namespace dyno::json_text {

namespace json = boost::json;

namespace {

void append_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  std::array<char, 32> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  std::string_view text(buf.data(), static_cast<std::size_t>(res.ptr - buf.data()));
  out += text;
  // A double stays a double when read back ("24.0", not "24"): typed readers can rely on it.
  if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

void append_string(std::string& out, std::string_view s, WriteStats* stats) {
  if (utf8::is_valid(s)) {
    out += json::serialize(json::string_view(s.data(), s.size()));
    return;
  }
  std::size_t replaced = 0;
  const std::string valid = utf8::make_valid(s, &replaced);
  if (stats != nullptr) stats->invalid_utf8_bytes += replaced;
  out += json::serialize(json::string_view(valid.data(), valid.size()));
}

void write(std::string& out, const json::value& v, int indent, bool is_pretty, WriteStats* stats) {
  const auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<std::size_t>(level) * 2, ' ');
  };
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      return;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      return;
    case json::kind::int64:
      out += std::to_string(v.get_int64());
      return;
    case json::kind::uint64:
      out += std::to_string(v.get_uint64());
      return;
    case json::kind::double_:
      append_double(out, v.get_double());
      return;
    case json::kind::string:
      append_string(out, v.get_string(), stats);
      return;
    case json::kind::array: {
      const auto& a = v.get_array();
      bool scalars = true;
      for (const auto& e : a) scalars = scalars && !e.is_object() && !e.is_array();
      const bool multiline = is_pretty && !scalars && !a.empty();
      out += '[';
      bool first = true;
      for (const auto& e : a) {
        if (!first) out += is_pretty && !multiline ? ", " : ",";
        first = false;
        if (multiline) newline(indent + 1);
        write(out, e, indent + 1, is_pretty, stats);
      }
      if (multiline) newline(indent);
      out += ']';
      return;
    }
    case json::kind::object: {
      const auto& o = v.get_object();
      out += '{';
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out += ',';
        first = false;
        if (is_pretty) newline(indent + 1);
        append_string(out, kv.key(), stats);
        out += is_pretty ? ": " : ":";
        write(out, kv.value(), indent + 1, is_pretty, stats);
      }
      if (is_pretty && !o.empty()) newline(indent);
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string compact(const json::value& value, WriteStats* stats) {
  std::string out;
  write(out, value, 0, false, stats);
  return out;
}

std::string pretty(const json::value& value, WriteStats* stats) {
  std::string out;
  write(out, value, 0, true, stats);
  out += '\n';
  return out;
}

}  // namespace dyno::json_text
