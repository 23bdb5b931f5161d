#include "compare/run_record.h"

namespace dyno::compare {

namespace json = boost::json;

const json::value* find_path(const json::object& root, const std::string& path) {
  const json::object* obj = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const json::value* v = obj->if_contains(key);
    if (v == nullptr) return nullptr;
    if (dot == std::string::npos) return v;
    if (!v->is_object()) return nullptr;
    obj = &v->get_object();
    start = dot + 1;
  }
}

std::optional<double> number_at(const json::object& root, const std::string& path) {
  const json::value* v = find_path(root, path);
  if (v == nullptr) return std::nullopt;
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return std::nullopt;
}

std::optional<std::string> string_at(const json::object& root, const std::string& path) {
  const json::value* v = find_path(root, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

}  // namespace dyno::compare
