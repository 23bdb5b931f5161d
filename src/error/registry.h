// The one shape of dyno's extension points (docs/extending.md): each is a registry, a function
// returning a std::span of entries — structs whose named fields start with `name` (what a user
// writes: a flag value, a spec key, a command) and `describe` (one line for --help and errors),
// followed by what the entry does. Every registry is looked up here, so an unknown name is
// refused the same way everywhere: a usage error (exit 2) that lists the registered names.
#pragma once

#include <concepts>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "error/error.h"

namespace dyno::registry {

/// An entry of a registry: named and described.
template <class E>
concept Entry = requires(const E& e) {
  { std::string_view(e.name) } -> std::same_as<std::string_view>;
  { std::string_view(e.describe) } -> std::same_as<std::string_view>;
};

/// The entry called `name`, or nullptr.
template <Entry E>
const E* find(std::span<const E> entries, std::string_view name) {
  for (const E& e : entries) {
    if (std::string_view(e.name) == name) return &e;
  }
  return nullptr;
}

/// The entries' names, in the registry's order.
template <Entry E>
std::vector<std::string> names(std::span<const E> entries) {
  std::vector<std::string> out;
  out.reserve(entries.size());
  for (const E& e : entries) out.emplace_back(e.name);
  return out;
}

/// The names as a list for a message: "a, b, c", or with `last` = " or ": "a, b or c".
template <Entry E>
std::string name_list(std::span<const E> entries, std::string_view last = ", ") {
  std::string out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += i + 1 == entries.size() ? last : std::string_view(", ");
    out += std::string_view(entries[i].name);
  }
  return out;
}

/// "unknown WHAT 'NAME'; the WHATs are: a, b, c".
template <Entry E>
std::string unknown_message(std::span<const E> entries, std::string_view what,
                            std::string_view name) {
  return "unknown " + std::string(what) + " '" + std::string(name) + "'; the " + std::string(what) +
         "s are: " + name_list(entries);
}

/// The entry called `name`; else throws UsageError (exit 2) with unknown_message().
template <Entry E>
const E& lookup(std::span<const E> entries, std::string_view name, std::string_view what) {
  if (const E* e = find(entries, name)) return *e;
  throw UsageError(unknown_message(entries, what, name));
}

}  // namespace dyno::registry
