#include "record/import_json.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <utility>

namespace dyno::record {

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

json::value parse_one_json(const std::string& bytes, const std::string& file,
                           const std::string& what, std::size_t line) {
  json::parser p;
  boost::system::error_code ec;
  const std::size_t used = p.write_some(bytes.data(), bytes.size(), ec);
  const auto line_at = [&](std::size_t at) {
    if (line > 0) return line;
    at = std::min(at, bytes.size());
    return static_cast<std::size_t>(
        1 + std::count(bytes.begin(), bytes.begin() + static_cast<long>(at), '\n'));
  };
  if (ec) {
    throw ImportFileError(file + ":" + std::to_string(line_at(used)) + ": not JSON (" +
                          ec.message() + "); expected " + what);
  }
  if (used < bytes.size() && bytes.find_first_not_of(" \t\r\n", used) != std::string::npos) {
    throw ImportFileError(file + ":" + std::to_string(line_at(used)) +
                          ": more than one JSON value; expected " + what);
  }
  return p.release();
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

}  // namespace dyno::record
