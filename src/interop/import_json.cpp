#include "interop/import_json.h"

#include <algorithm>
#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>
#include <cmath>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dyno::interop {

namespace json = boost::json;

namespace {

std::string where(const std::string& file, std::size_t line) {
  return line > 0 ? file + ":" + std::to_string(line) : file;
}

}  // namespace

std::int64_t seconds_to_ns(double seconds) { return std::llround(seconds * 1e9); }

json::object named_gpu(std::optional<std::string> vendor, std::uint64_t index,
                       const std::string& name) {
  return json::object{{"vendor", vendor ? json::value(*vendor) : json::value(nullptr)},
                      {"kind", "gpu"},
                      {"index", index},
                      {"name", name},
                      {"uuid", nullptr},
                      {"pci_bus_id", nullptr},
                      {"driver", nullptr},
                      {"memory_total_bytes", nullptr},
                      {"power_limit_w", nullptr},
                      {"capabilities", json::array{}}};
}

namespace {

/// Boost.JSON's own DOM handler (detail/handler.hpp), which also remembers the keys of every
/// object it is inside: the first key an object names twice stops the parse (`duplicate`
/// says where). Boost.JSON 1.81 keeps the last of two equal keys and has no option to refuse.
struct UniqueKeyHandler {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  struct Frame {
    bool object = false;
    std::unordered_set<std::string> keys;
    std::string key;        // the member being read (object)
    std::size_t index = 0;  // the element being read (array)
  };

  json::value_stack st;
  std::vector<Frame> frames;
  std::string key_part;
  std::string duplicate;  // "$.a[2]: the key 'x'…" once found

  std::string path() const {
    std::string p = "$";
    for (const Frame& f : frames) {
      if (f.object) {
        p += "." + f.key;
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p;
  }
  void value_done() {
    if (!frames.empty() && !frames.back().object) ++frames.back().index;
  }
  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    frames.push_back({true, {}, {}, 0});
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code&) {
    st.push_object(n);
    frames.pop_back();
    value_done();
    return true;
  }
  bool on_array_begin(json::error_code&) {
    frames.push_back({false, {}, {}, 0});
    return true;
  }
  bool on_array_end(std::size_t n, json::error_code&) {
    st.push_array(n);
    frames.pop_back();
    value_done();
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    key_part.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    st.push_key(s);
    key_part.append(s.data(), s.size());
    Frame& f = frames.back();
    if (!f.keys.insert(key_part).second) {
      frames.back().key.clear();
      std::string where = path();
      where.pop_back();  // the "." of the empty member
      duplicate = where + ": the key '" + key_part +
                  "' appears twice in this object; dyno does not pick one of the two values";
      ec = json::error::syntax;
      return false;
    }
    f.key = std::move(key_part);
    key_part.clear();
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    st.push_string(s);
    value_done();
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    st.push_int64(i);
    value_done();
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    st.push_uint64(u);
    value_done();
    return true;
  }
  bool on_double(double d, json::string_view, json::error_code&) {
    st.push_double(d);
    value_done();
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    st.push_bool(b);
    value_done();
    return true;
  }
  bool on_null(json::error_code&) {
    st.push_null();
    value_done();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

}  // namespace

json::value parse_one_json(const std::string& bytes, const std::string& file,
                           const std::string& what, std::size_t line) {
  json::basic_parser<UniqueKeyHandler> p(json::parse_options{});
  p.handler().st.reset(json::storage_ptr());
  boost::system::error_code ec;
  const std::size_t used = p.write_some(false, bytes.data(), bytes.size(), ec);
  const auto line_at = [&](std::size_t at) {
    if (line > 0) return line;
    at = std::min(at, bytes.size());
    return static_cast<std::size_t>(
        1 + std::count(bytes.begin(), bytes.begin() + static_cast<long>(at), '\n'));
  };
  if (!p.handler().duplicate.empty()) {
    // The parser does not say where in the text a key stood: the JSON path does.
    throw ImportFileError(where(file, line) + ": " + p.handler().duplicate);
  }
  if (ec == json::error::extra_data ||
      (!ec && used < bytes.size() &&
       bytes.find_first_not_of(" \t\r\n", used) != std::string::npos)) {
    throw ImportFileError(file + ":" + std::to_string(line_at(used)) +
                          ": more than one JSON value; expected " + what);
  }
  if (ec) {
    throw ImportFileError(file + ":" + std::to_string(line_at(used)) + ": not JSON (" +
                          ec.message() + "); expected " + what);
  }
  return p.handler().st.release();
}

ImportDoc::ImportDoc(const json::object& o, std::string file, std::string path, std::string tool,
                     std::size_t line)
    : o_(o), file_(std::move(file)), path_(std::move(path)), tool_(std::move(tool)), line_(line) {}

void ImportDoc::fail(const std::string& path, const std::string& what) const {
  throw ImportFileError(where(file_, line_) + ": " + path + ": " + what);
}

const json::value* ImportDoc::find(const char* key) const {
  const json::value* v = o_.if_contains(key);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

const json::value& ImportDoc::need(const char* key) const {
  const json::value* v = o_.if_contains(key);
  if (v == nullptr) fail(at(key), "missing (" + tool_ + " has it)");
  return *v;
}

std::string ImportDoc::string(const char* key) const {
  const json::value& v = need(key);
  if (!v.is_string()) fail(at(key), "expected a string");
  return std::string(v.get_string());
}

std::optional<std::string> ImportDoc::opt_string(const char* key) const {
  const json::value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) fail(at(key), "expected a string or null");
  return std::string(v->get_string());
}

std::optional<double> ImportDoc::opt_number(const char* key) const {
  const json::value* v = find(key);
  if (v == nullptr) return std::nullopt;
  return number(*v, at(key));
}

double ImportDoc::number(const char* key) const { return number(need(key), at(key)); }

double ImportDoc::number(const json::value& v, const std::string& path) const {
  if (!v.is_number()) fail(path, "expected a number");
  const double d = v.to_number<double>();
  if (!std::isfinite(d)) fail(path, "expected a finite number");
  return d;
}

double ImportDoc::seconds(const json::value& v, const std::string& path, double max) const {
  const double s = number(v, path);
  if (s < 0 || s > max) {
    fail(path, "expected seconds from 0 to " + std::to_string(static_cast<long long>(max)));
  }
  return s;
}

std::int64_t ImportDoc::count(const json::value& v, const std::string& path) const {
  if (v.is_int64() && v.get_int64() >= 0) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(v.get_uint64());
  }
  fail(path, "expected a non-negative integer");
}

std::int64_t ImportDoc::count(const char* key) const { return count(need(key), at(key)); }

std::int64_t ImportDoc::tokens(const json::value& v, const std::string& path) const {
  const std::int64_t n = count(v, path);
  if (n > kMaxImportedTokens) {
    fail(path, std::to_string(n) + " is not a plausible token count of one request (0 to " +
                   std::to_string(kMaxImportedTokens) + ")");
  }
  return n;
}

std::int64_t ImportDoc::token_total(const char* key, std::int64_t requests) const {
  const std::int64_t n = count(key);
  std::int64_t most = 0;
  if (__builtin_mul_overflow(std::max<std::int64_t>(requests, 1), kMaxImportedTokens, &most)) {
    most = std::numeric_limits<std::int64_t>::max();
  }
  if (n > most) {
    fail(at(key), std::to_string(n) + " is not a plausible token total of " +
                      std::to_string(requests) + " requests (at most " +
                      std::to_string(kMaxImportedTokens) + " a request)");
  }
  return n;
}

std::int64_t ImportDoc::add(std::int64_t a, std::int64_t b, const std::string& path) const {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) fail(path, "the counts add up past 2^63 - 1 (overflow)");
  return sum;
}

std::int64_t ImportDoc::mul(std::int64_t a, std::int64_t b, const std::string& path) const {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    fail(path, std::to_string(a) + " × " + std::to_string(b) + " is past 2^63 - 1 (overflow)");
  }
  return product;
}

std::optional<std::int64_t> ImportDoc::opt_count(const char* key) const {
  const json::value* v = find(key);
  if (v == nullptr) return std::nullopt;
  return count(*v, at(key));
}

const json::array* ImportDoc::opt_array(const char* key) const {
  const json::value* v = find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) fail(at(key), "expected an array");
  return &v->get_array();
}

const json::object* ImportDoc::opt_object(const char* key) const {
  const json::value* v = find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) fail(at(key), "expected an object");
  return &v->get_object();
}

ImportDoc ImportDoc::child(const char* key) const {
  const json::value& v = need(key);
  if (!v.is_object()) fail(at(key), "expected an object");
  return ImportDoc(v.get_object(), file_, at(key), tool_, line_);
}

ImportDoc ImportDoc::element(const json::array& a, std::size_t i, const std::string& path) const {
  const std::string p = path + "[" + std::to_string(i) + "]";
  if (i >= a.size() || !a[i].is_object()) fail(p, "expected an object");
  return ImportDoc(a[i].get_object(), file_, p, tool_, line_);
}

}  // namespace dyno::interop
