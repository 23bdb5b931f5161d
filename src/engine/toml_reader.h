// Typed reading of a TomlDocument (toml.h) whose every error names the file, the line and the
// key: "<source>:<line>: <key>: <message>". Engine spec files (spec.cpp) and campaign plans
// (cluster/plan.cpp) read through it; `ErrorT` is the error they throw (constructed from that
// text).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "engine/toml.h"

namespace dyno::engine {

template <typename ErrorT>
class TomlReader {
 public:
  TomlReader(const TomlDocument& doc, std::string source) : doc_(doc), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    const int line = doc_.line_of(key);
    throw ErrorT(source_ + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " +
                 (key.empty() ? "" : key + ": ") + message);
  }

  std::optional<std::string> str(const boost::json::object& o, const std::string& key,
                                 const std::string& path) const {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail(path, "expected a string (in quotes)");
    return std::string(v->as_string());
  }

  std::optional<double> num(const boost::json::object& o, const std::string& key,
                            const std::string& path) const {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    if (v->is_int64()) return static_cast<double>(v->as_int64());
    if (v->is_double()) return v->as_double();
    fail(path, "expected a number");
  }

  std::optional<std::int64_t> integer(const boost::json::object& o, const std::string& key,
                                      const std::string& path) const {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_int64()) fail(path, "expected an integer");
    return v->as_int64();
  }

  /// An integer in [lo, hi].
  std::optional<std::int64_t> integer(const boost::json::object& o, const std::string& key,
                                      const std::string& path, std::int64_t lo,
                                      std::int64_t hi) const {
    const std::optional<std::int64_t> n = integer(o, key, path);
    if (n && (*n < lo || *n > hi)) {
      fail(path, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    return n;
  }

  std::optional<bool> boolean(const boost::json::object& o, const std::string& key,
                              const std::string& path) const {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_bool()) fail(path, "expected true or false");
    return v->as_bool();
  }

  const boost::json::object* table(const boost::json::object& o, const std::string& key,
                                   const std::string& path) const {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) fail(path, "expected a table ([" + path + "] or { ... })");
    return &v->as_object();
  }

  /// Fails on the first key of `o` not in `allowed`, listing the allowed ones.
  void only_keys(const boost::json::object& o, const std::set<std::string>& allowed,
                 const std::string& prefix) const {
    for (const auto& kv : o) {
      const std::string key(kv.key());
      if (allowed.count(key) != 0) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(prefix.empty() ? key : prefix + "." + key, "unknown key; the keys here are: " + list);
    }
  }

 private:
  const TomlDocument& doc_;
  std::string source_;
};

}  // namespace dyno::engine
