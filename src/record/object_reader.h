// Reading one object of a record file back into typed values (record/ internal: the manifest
// and summary readers). Every error names the file and the key's path, e.g.
// "summary.json: latency_ms.ttft_ms.p50 is not a number", and is a std::runtime_error the
// record's reader turns into its RecordReadError with the file's path.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "metrics/stats.h"
#include "scrub/scrub_text.h"

namespace dyno::record {

class ObjectReader {
 public:
  /// `path`: the object's own key path ("" for the file's root); `file`: the file's name.
  ObjectReader(const boost::json::object& o, std::string path, std::string file)
      : o_(o), path_(std::move(path)), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key_path, const std::string& what) const {
    throw std::runtime_error(file_ + ": " + key_path + " " + what);
  }
  const boost::json::value& at(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    if (v == nullptr) fail(name(key), "is missing");
    return *v;
  }
  ObjectReader object(const char* key) const {
    const boost::json::value& v = at(key);
    if (!v.is_object()) fail(name(key), "is not an object");
    return ObjectReader(v.as_object(), name(key), file_);
  }
  /// The object at an element of an array read with array(key).
  ObjectReader element(const boost::json::value& v, const char* key) const {
    if (!v.is_object()) fail(name(key) + "[]", "is not an object");
    return ObjectReader(v.as_object(), name(key) + "[]", file_);
  }
  boost::json::object object_value(const char* key) const { return object(key).o_; }
  std::string string(const char* key) const {
    const boost::json::value& v = at(key);
    if (!v.is_string()) fail(name(key), "is not a string");
    return std::string(v.as_string());
  }
  std::optional<std::string> opt_string(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return string(key);
  }
  bool has(const char* key) const { return o_.contains(key); }
  /// A string that begins "<scrubbed:": the value a published record holds in place of a
  /// scrubbed one (docs/store.md), whatever the field's own type.
  bool scrubbed(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    return v != nullptr && v->is_string() && scrub::text::is_marker(v->get_string());
  }
  /// Present and null.
  bool is_null(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    return v != nullptr && v->is_null();
  }
  bool boolean(const char* key) const {
    const boost::json::value& v = at(key);
    if (!v.is_bool()) fail(name(key), "is not a boolean");
    return v.as_bool();
  }
  std::optional<double> opt_number(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_number()) fail(name(key), "is not a number");
    return v->to_number<double>();
  }
  std::optional<bool> opt_bool(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return boolean(key);
  }
  /// A number the schema requires: present and not null.
  double number(const char* key) const {
    (void)at(key);
    const std::optional<double> v = opt_number(key);
    if (!v) fail(name(key), "is null");
    return *v;
  }
  /// An array of strings.
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    for (const boost::json::value& v : array(key)) {
      if (!v.is_string()) fail(name(key) + "[]", "is not a string");
      out.emplace_back(v.get_string());
    }
    return out;
  }
  std::optional<std::int64_t> opt_int(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (v->is_int64()) return v->as_int64();
    if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
      return static_cast<std::int64_t>(v->as_uint64());
    }
    fail(name(key), "is not an integer");
  }
  std::int64_t integer(const char* key) const {
    (void)at(key);
    const std::optional<std::int64_t> v = opt_int(key);
    if (!v) fail(name(key), "is null");
    return *v;
  }
  std::optional<std::uint64_t> opt_uint(const char* key) const {
    const boost::json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (v->is_uint64()) return v->as_uint64();
    if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
    fail(name(key), "is not a non-negative integer");
  }
  std::uint64_t uint(const char* key) const {
    (void)at(key);
    const std::optional<std::uint64_t> v = opt_uint(key);
    if (!v) fail(name(key), "is null");
    return *v;
  }
  const boost::json::array& array(const char* key) const {
    const boost::json::value& v = at(key);
    if (!v.is_array()) fail(name(key), "is not an array");
    return v.as_array();
  }
  /// This object read as a distribution (summary.json's $defs distribution). A count written
  /// null (unknown) reads 0, its path noted in `unknown` when given.
  metrics::Distribution distribution(std::vector<std::string>* unknown = nullptr) const {
    metrics::Distribution d;
    if (is_null("count")) {
      if (unknown != nullptr) unknown->push_back(name("count"));
    } else {
      d.count = uint("count");
    }
    d.mean = opt_number("mean");
    d.stddev = opt_number("stddev");
    d.min = opt_number("min");
    d.p50 = opt_number("p50");
    d.p90 = opt_number("p90");
    d.p95 = opt_number("p95");
    d.p99 = opt_number("p99");
    d.p999 = opt_number("p99_9");
    d.max = opt_number("max");
    d.jitter = opt_number("jitter_p95_minus_p50");
    return d;
  }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  const boost::json::object& raw() const { return o_; }

 private:
  const boost::json::object& o_;
  std::string path_;
  std::string file_;
};

struct TextMap;
/// An object of texts (`unknown`, `details`) read in the order written (manifest_sections.cpp).
TextMap text_map_from(const ObjectReader& r);

}  // namespace dyno::record
