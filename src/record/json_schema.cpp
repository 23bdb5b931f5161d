#include "record/json_schema.h"

#include <boost/json/parse.hpp>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <regex>
#include <utility>

#include "json/json_text.h"
#include "workload/regex_limits.h"

namespace dyno::record {

namespace json = boost::json;

namespace {

constexpr const char* kDialect = "https://json-schema.org/draft/2020-12/schema";

// std::regex (libstdc++) compiles and matches by recursion whose depth grows with the length
// of the pattern and of the text: a long one overflows the stack (a 30 000-byte string against
// /^[a-z]*$/ does). So patterns, and the strings and keys matched against them, are bounded;
// the record schemas' patterns all describe short identifiers.
constexpr std::size_t kMaxPatternBytes = 1024;
constexpr std::size_t kMaxMatchedBytes = 4096;

enum TypeBit : unsigned {
  kNull = 1u << 0,
  kBoolean = 1u << 1,
  kObject = 1u << 2,
  kArray = 1u << 3,
  kNumber = 1u << 4,
  kInteger = 1u << 5,
  kString = 1u << 6,
};

// In the order messages list them ("integer or null").
constexpr std::pair<const char*, unsigned> kTypeNames[] = {
    {"string", kString}, {"integer", kInteger}, {"number", kNumber}, {"boolean", kBoolean},
    {"object", kObject}, {"array", kArray},     {"null", kNull}};

double as_double(const json::value& v) {
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  return static_cast<double>(v.get_uint64());
}

/// "integer" is a number with no fractional part (JSON Schema's rule): 2 and 2.0 both are.
bool is_integral(const json::value& v) {
  if (v.is_int64() || v.is_uint64()) return true;
  if (!v.is_double()) return false;
  const double d = v.get_double();
  return std::isfinite(d) && std::floor(d) == d;
}

bool type_matches(unsigned types, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return (types & kNull) != 0;
    case json::kind::bool_:
      return (types & kBoolean) != 0;
    case json::kind::object:
      return (types & kObject) != 0;
    case json::kind::array:
      return (types & kArray) != 0;
    case json::kind::string:
      return (types & kString) != 0;
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return (types & kNumber) != 0 || ((types & kInteger) != 0 && is_integral(v));
  }
  return false;
}

std::string type_list(unsigned types) {
  std::vector<std::string> names;
  for (const auto& [name, bit] : kTypeNames) {
    if ((types & bit) != 0) names.emplace_back(name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

std::string short_text(const json::value& v) {
  std::string s = json_text::compact(v);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

/// "string \"abc\"", "integer 3", "object", ... for messages.
std::string describe(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return std::string("boolean ") + (v.get_bool() ? "true" : "false");
    case json::kind::object:
      return "an object";
    case json::kind::array:
      return "an array of " + std::to_string(v.get_array().size());
    case json::kind::string:
      return "string " + short_text(v);
    case json::kind::int64:
    case json::kind::uint64:
      return "integer " + short_text(v);
    case json::kind::double_:
      return (is_integral(v) ? "integer " : "number ") + short_text(v);
  }
  return "a value";
}

/// JSON equality with numbers compared by value (1, 1.0 and 1u are the same number).
bool same(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_double() || b.is_double()) return as_double(a) == as_double(b);
    if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
    if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
    const std::int64_t i = a.is_int64() ? a.get_int64() : b.get_int64();
    const std::uint64_t u = a.is_uint64() ? a.get_uint64() : b.get_uint64();
    return i >= 0 && static_cast<std::uint64_t>(i) == u;
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const auto& oa = a.get_object();
    const auto& ob = b.get_object();
    if (oa.size() != ob.size()) return false;
    for (const auto& kv : oa) {
      const json::value* other = ob.if_contains(kv.key());
      if (other == nullptr || !same(kv.value(), *other)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const auto& aa = a.get_array();
    const auto& ab = b.get_array();
    if (aa.size() != ab.size()) return false;
    for (std::size_t i = 0; i < aa.size(); ++i) {
      if (!same(aa[i], ab[i])) return false;
    }
    return true;
  }
  return a == b;
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0u) != 0x80u ? 1u : 0u;
  return n;
}

/// Appends a JSON pointer token (RFC 6901: "~" → "~0", "/" → "~1").
void append_token(std::string& pointer, std::string_view token) {
  pointer += '/';
  for (char c : token) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

std::string unescape_token(std::string_view token) {
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

}  // namespace

struct JsonSchema::Impl {
  struct Pattern {
    std::string source;
    std::regex re;
  };

  struct Node {
    std::optional<bool> always;  ///< a boolean schema
    unsigned types = 0;          ///< 0: any type
    std::vector<std::pair<std::string, const Node*>> properties;
    std::vector<std::string> required;
    const Node* additional = nullptr;
    std::vector<std::pair<Pattern, const Node*>> pattern_properties;
    const Node* items = nullptr;
    std::vector<const Node*> prefix_items;
    std::optional<json::array> enum_values;
    std::optional<json::value> const_value;
    std::optional<double> minimum, maximum, exclusive_minimum;
    std::optional<std::uint64_t> min_length, min_items;
    std::optional<Pattern> pattern;
    std::string ref;
    const Node* ref_target = nullptr;
    std::vector<const Node*> any_of, one_of, all_of;

    const Node* property(std::string_view key) const {
      for (const auto& [k, n] : properties) {
        if (k == key) return n;
      }
      return nullptr;
    }
  };

  std::string name;
  std::string id;
  std::deque<Node> nodes;  // stable addresses
  std::map<std::string, const Node*> defs;
  const Node* root = nullptr;
};

namespace {

using Node = JsonSchema::Impl::Node;
using Pattern = JsonSchema::Impl::Pattern;

class Compiler {
 public:
  explicit Compiler(JsonSchema::Impl& impl) : impl_(impl) {}

  void compile_root(const json::value& schema) {
    impl_.root = compile(schema, "", true);
    for (auto& [node, where] : refs_) {
      const std::string prefix = "#/$defs/";
      if (node->ref.rfind(prefix, 0) != 0) {
        fail(where, "$ref '" + node->ref + "' is not supported: only \"#/$defs/<name>\" is");
      }
      const std::string def = unescape_token(std::string_view(node->ref).substr(prefix.size()));
      const auto it = impl_.defs.find(def);
      if (it == impl_.defs.end()) fail(where, "$ref '" + node->ref + "' names no entry of $defs");
      node->ref_target = it->second;
    }
    // A chain of $refs that comes back to itself would never check anything.
    for (const auto& [node, where] : refs_) {
      const Node* n = node;
      for (std::size_t steps = 0; n != nullptr; ++steps) {
        if (steps > refs_.size()) fail(where, "$ref '" + node->ref + "' refers to itself");
        n = n->ref_target;
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw SchemaError(impl_.name + ": " + (where.empty() ? std::string("(root)") : where) + ": " +
                      what);
  }

  Pattern regex(const json::value& v, const std::string& where) const {
    if (!v.is_string()) fail(where, "expected a regular expression (a string)");
    Pattern p;
    p.source = std::string(v.get_string());
    const std::string problem = workload::regex_pattern_problem(
        p.source, {.max_bytes = kMaxPatternBytes, .backreferences = false});
    if (!problem.empty()) fail(where, "the pattern /" + p.source + "/: " + problem);
    try {
      p.re = std::regex(p.source, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail(where, "the pattern /" + p.source + "/ does not compile: " + e.what());
    }
    return p;
  }

  std::uint64_t count(const json::value& v, const std::string& where) const {
    if (!v.is_number() || !is_integral(v) || as_double(v) < 0) {
      fail(where, "expected a non-negative integer, found " + describe(v));
    }
    return static_cast<std::uint64_t>(as_double(v));
  }

  double number(const json::value& v, const std::string& where) const {
    if (!v.is_number()) fail(where, "expected a number, found " + describe(v));
    return as_double(v);
  }

  std::vector<const Node*> schema_list(const json::value& v, const std::string& where) {
    if (!v.is_array() || v.get_array().empty()) {
      fail(where, "expected a non-empty array of schemas, found " + describe(v));
    }
    std::vector<const Node*> out;
    std::size_t i = 0;
    for (const auto& s : v.get_array()) {
      out.push_back(compile(s, where + "/" + std::to_string(i++), false));
    }
    return out;
  }

  unsigned type_bits(const json::value& v, const std::string& where) const {
    const auto one = [&](const json::value& t) -> unsigned {
      if (t.is_string()) {
        for (const auto& [name, bit] : kTypeNames) {
          if (t.get_string() == name) return bit;
        }
      }
      fail(where, "unknown type " + short_text(t) +
                      "; use null, boolean, object, array, number, integer or string");
    };
    if (v.is_string()) return one(v);
    if (!v.is_array() || v.get_array().empty()) {
      fail(where, "expected a type name or a non-empty array of them, found " + describe(v));
    }
    unsigned bits = 0;
    for (const auto& t : v.get_array()) {
      const unsigned b = one(t);
      if ((bits & b) != 0) fail(where, "type " + short_text(t) + " is listed twice");
      bits |= b;
    }
    return bits;
  }

  const Node* compile(const json::value& schema, const std::string& where, bool is_root) {
    Node& node = impl_.nodes.emplace_back();
    if (schema.is_bool()) {
      node.always = schema.get_bool();
      return &node;
    }
    if (!schema.is_object()) {
      fail(where, "a schema is an object or a boolean, found " + describe(schema));
    }
    for (const auto& kv : schema.get_object()) {
      const std::string key(kv.key());
      const json::value& v = kv.value();
      std::string at = where;
      append_token(at, key);
      if (key == "title" || key == "description" || key == "$comment") {
        if (!v.is_string()) fail(at, "expected a string, found " + describe(v));
      } else if (key == "$schema" || key == "$id" || key == "$defs") {
        if (!is_root) fail(at, key + " is only supported at the root of a schema");
        if (key == "$schema" && !(v.is_string() && v.get_string() == kDialect)) {
          fail(at,
               std::string("expected \"") + kDialect + "\" (draft 2020-12), found " + describe(v));
        }
        if (key == "$id") {
          if (!v.is_string()) fail(at, "expected a string, found " + describe(v));
          impl_.id = std::string(v.get_string());
        }
        if (key == "$defs") {
          if (!v.is_object()) fail(at, "expected an object of schemas, found " + describe(v));
          for (const auto& d : v.get_object()) {
            std::string def_at = at;
            append_token(def_at, d.key());
            impl_.defs[std::string(d.key())] = compile(d.value(), def_at, false);
          }
        }
      } else if (key == "type") {
        node.types = type_bits(v, at);
      } else if (key == "properties") {
        if (!v.is_object()) fail(at, "expected an object of schemas, found " + describe(v));
        for (const auto& p : v.get_object()) {
          std::string prop_at = at;
          append_token(prop_at, p.key());
          node.properties.emplace_back(std::string(p.key()), compile(p.value(), prop_at, false));
        }
      } else if (key == "required") {
        if (!v.is_array()) fail(at, "expected an array of key names, found " + describe(v));
        for (const auto& r : v.get_array()) {
          if (!r.is_string()) fail(at, "expected key names (strings), found " + describe(r));
          const std::string name(r.get_string());
          for (const auto& seen : node.required) {
            if (seen == name) fail(at, "key `" + name + "` is required twice");
          }
          node.required.push_back(name);
        }
      } else if (key == "additionalProperties") {
        node.additional = compile(v, at, false);
      } else if (key == "patternProperties") {
        if (!v.is_object()) fail(at, "expected an object of schemas, found " + describe(v));
        for (const auto& p : v.get_object()) {
          std::string prop_at = at;
          append_token(prop_at, p.key());
          node.pattern_properties.emplace_back(regex(json::value(p.key()), prop_at),
                                               compile(p.value(), prop_at, false));
        }
      } else if (key == "items") {
        node.items = compile(v, at, false);
      } else if (key == "prefixItems") {
        node.prefix_items = schema_list(v, at);
      } else if (key == "enum") {
        if (!v.is_array() || v.get_array().empty()) {
          fail(at, "expected a non-empty array of values, found " + describe(v));
        }
        node.enum_values = v.get_array();
      } else if (key == "const") {
        node.const_value = v;
      } else if (key == "minimum") {
        node.minimum = number(v, at);
      } else if (key == "maximum") {
        node.maximum = number(v, at);
      } else if (key == "exclusiveMinimum") {
        node.exclusive_minimum = number(v, at);
      } else if (key == "minLength") {
        node.min_length = count(v, at);
      } else if (key == "minItems") {
        node.min_items = count(v, at);
      } else if (key == "pattern") {
        node.pattern = regex(v, at);
      } else if (key == "$ref") {
        if (!v.is_string()) fail(at, "expected a string, found " + describe(v));
        node.ref = std::string(v.get_string());
        refs_.emplace_back(&node, at);
      } else if (key == "anyOf") {
        node.any_of = schema_list(v, at);
      } else if (key == "oneOf") {
        node.one_of = schema_list(v, at);
      } else if (key == "allOf") {
        node.all_of = schema_list(v, at);
      } else {
        fail(at, "unknown keyword `" + key +
                     "`: this validator does not check it (docs/record.md, \"Schema\")");
      }
    }
    // A required key that the schema itself forbids is a mistake in the schema.
    const bool closed = node.additional != nullptr && node.additional->always == false;
    for (const auto& r : node.required) {
      if (!closed || node.property(r) != nullptr) continue;
      bool matched = false;
      for (const auto& [p, n] : node.pattern_properties) {
        matched |= r.size() <= kMaxMatchedBytes && std::regex_search(r, p.re);
      }
      if (!matched) {
        fail(where, "key `" + r +
                        "` is required but can never be present (additionalProperties is false "
                        "and it is not in properties)");
      }
    }
    return &node;
  }

  JsonSchema::Impl& impl_;
  std::vector<std::pair<Node*, std::string>> refs_;
};

class Validator {
 public:
  explicit Validator(std::vector<SchemaProblem>& out, const Validator* parent = nullptr)
      : out_(out), parent_(parent) {}

  void check(const Node& n, const json::value& v) {
    if (n.always) {
      if (!*n.always) problem("no value is allowed here, found " + describe(v));
      return;
    }
    if (n.ref_target != nullptr) check(*n.ref_target, v);
    if (n.types != 0 && !type_matches(n.types, v)) {
      problem("expected " + type_list(n.types) + ", found " + describe(v));
      return;  // the other keywords would only repeat the mismatch
    }
    if (n.enum_values) {
      bool found = false;
      for (const auto& e : *n.enum_values) found = found || same(e, v);
      if (!found) {
        std::string list;
        for (const auto& e : *n.enum_values) list += (list.empty() ? "" : ", ") + short_text(e);
        problem("expected one of " + list + "; found " + describe(v));
      }
    }
    if (n.const_value && !same(*n.const_value, v)) {
      problem("expected " + short_text(*n.const_value) + ", found " + describe(v));
    }
    if (v.is_number()) check_number(n, v);
    if (v.is_string()) check_string(n, v.get_string());
    if (v.is_array()) check_array(n, v.get_array());
    if (v.is_object()) check_object(n, v.get_object());
    check_combinators(n, v);
  }

 private:
  void problem(std::string message) { out_.push_back({"", pointer_, std::move(message)}); }

  void check_number(const Node& n, const json::value& v) {
    const double d = as_double(v);
    const auto bound = [](double b) {
      return std::floor(b) == b && std::abs(b) < 1e15 ? std::to_string(static_cast<std::int64_t>(b))
                                                      : short_text(json::value(b));
    };
    if (n.minimum && !(d >= *n.minimum)) {
      problem("expected a number >= " + bound(*n.minimum) + ", found " + describe(v));
    }
    if (n.maximum && !(d <= *n.maximum)) {
      problem("expected a number <= " + bound(*n.maximum) + ", found " + describe(v));
    }
    if (n.exclusive_minimum && !(d > *n.exclusive_minimum)) {
      problem("expected a number > " + bound(*n.exclusive_minimum) + ", found " + describe(v));
    }
  }

  void check_string(const Node& n, std::string_view s) {
    if (n.min_length && code_points(s) < *n.min_length) {
      problem("expected a string of at least " + std::to_string(*n.min_length) +
              " characters, found " + describe(json::value(s)));
    }
    if (n.pattern && s.size() > kMaxMatchedBytes) {
      problem("expected a string matching /" + n.pattern->source + "/, found a string of " +
              std::to_string(s.size()) + " bytes (patterns are checked on at most " +
              std::to_string(kMaxMatchedBytes) + ")");
    } else if (n.pattern && !std::regex_search(s.begin(), s.end(), n.pattern->re)) {
      problem("expected a string matching /" + n.pattern->source + "/, found " +
              describe(json::value(s)));
    }
  }

  void check_array(const Node& n, const json::array& a) {
    if (n.min_items && a.size() < *n.min_items) {
      problem("expected at least " + std::to_string(*n.min_items) + " items, found " +
              std::to_string(a.size()));
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      const Node* item = i < n.prefix_items.size() ? n.prefix_items[i] : n.items;
      if (item == nullptr) continue;
      const std::size_t mark = pointer_.size();
      pointer_ += "/" + std::to_string(i);
      check(*item, a[i]);
      pointer_.resize(mark);
    }
  }

  void check_object(const Node& n, const json::object& o) {
    for (const auto& r : n.required) {
      if (!o.contains(r)) problem("missing required key `" + r + "`");
    }
    for (const auto& kv : o) {
      const std::size_t mark = pointer_.size();
      append_token(pointer_, kv.key());
      bool matched = false;
      if (const Node* p = n.property(kv.key())) {
        matched = true;
        check(*p, kv.value());
      }
      for (const auto& [pat, schema] : n.pattern_properties) {
        const std::string_view key = kv.key();
        if (key.size() > kMaxMatchedBytes) {
          matched = true;
          problem("a key of " + std::to_string(key.size()) + " bytes, too long to match against /" +
                  pat.source + "/ (at most " + std::to_string(kMaxMatchedBytes) + ")");
        } else if (std::regex_search(key.begin(), key.end(), pat.re)) {
          matched = true;
          check(*schema, kv.value());
        }
      }
      if (!matched && n.additional != nullptr) {
        if (n.additional->always == false) {
          problem("unexpected key `" + std::string(kv.key()) + "` (the schema does not allow it)");
        } else {
          check(*n.additional, kv.value());
        }
      }
      pointer_.resize(mark);
    }
  }

  /// Each alternative's problems, in the short form used inside one message.
  std::string alternatives_text(const std::vector<std::vector<SchemaProblem>>& results) const {
    std::string text;
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (results[i].empty()) continue;
      const SchemaProblem& first = results[i].front();
      text += (text.empty() ? "" : "; ") + std::string("(") + std::to_string(i + 1) + ") " +
              (first.pointer == pointer_ ? first.message : first.to_string());
      if (results[i].size() > 1) text += " (+" + std::to_string(results[i].size() - 1) + " more)";
    }
    return text;
  }

  /// True when a problem was already reported (by this validator or the one whose
  /// alternatives it checks) at `pointer` or above it, but not above the value being checked.
  bool reported(const std::string& pointer) const {
    for (const Validator* v = this; v != nullptr; v = v->parent_) {
      for (const auto& p : v->out_) {
        if (within(pointer, p.pointer) && within(p.pointer, pointer_)) return true;
      }
    }
    return false;
  }

  /// True when `inner` is `outer` or a pointer beneath it.
  static bool within(const std::string& inner, const std::string& outer) {
    return inner.rfind(outer, 0) == 0 &&
           (inner.size() == outer.size() || inner[outer.size()] == '/');
  }

  /// True when some alternative fails only where a problem is already reported: fixing that
  /// problem may well make it match, so "matches none" would only repeat it.
  bool explained(const std::vector<std::vector<SchemaProblem>>& results) const {
    for (const auto& r : results) {
      bool all = !r.empty();
      for (const auto& p : r) all = all && reported(p.pointer);
      if (all) return true;
    }
    return false;
  }

  std::vector<std::vector<SchemaProblem>> try_each(const std::vector<const Node*>& nodes,
                                                   const json::value& v) {
    std::vector<std::vector<SchemaProblem>> results(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Validator sub(results[i], this);
      sub.pointer_ = pointer_;
      sub.check(*nodes[i], v);
    }
    return results;
  }

  void check_combinators(const Node& n, const json::value& v) {
    for (const Node* s : n.all_of) check(*s, v);
    if (!n.any_of.empty()) {
      const auto results = try_each(n.any_of, v);
      bool any = false;
      for (const auto& r : results) any = any || r.empty();
      if (!any && !explained(results)) {
        problem("matches none of the allowed forms: " + alternatives_text(results));
      }
    }
    if (!n.one_of.empty()) {
      const auto results = try_each(n.one_of, v);
      std::size_t passed = 0;
      for (const auto& r : results) passed += r.empty() ? 1u : 0u;
      if (passed == 0 && !explained(results)) {
        problem("matches none of the allowed forms: " + alternatives_text(results));
      } else if (passed > 1) {
        problem("matches " + std::to_string(passed) + " of the forms of oneOf; exactly one must");
      }
    }
  }

  std::vector<SchemaProblem>& out_;
  const Validator* parent_;
  std::string pointer_;
};

}  // namespace

std::string SchemaProblem::to_string() const {
  std::string s;
  if (!file.empty()) s = file + ": ";
  s += pointer.empty() ? std::string("(root)") : pointer;
  s += ": " + message;
  return s;
}

JsonSchema JsonSchema::compile(const json::value& schema, const std::string& name) {
  auto impl = std::make_shared<Impl>();
  impl->name = name;
  Compiler(*impl).compile_root(schema);
  return JsonSchema(std::move(impl));
}

JsonSchema JsonSchema::parse(std::string_view text, const std::string& name) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec) throw SchemaError(name + ": not valid JSON: " + ec.message());
  return compile(v, name);
}

std::vector<SchemaProblem> JsonSchema::validate(const json::value& value) const {
  std::vector<SchemaProblem> out;
  Validator(out).check(*impl_->root, value);
  return out;
}

const std::string& JsonSchema::name() const { return impl_->name; }
const std::string& JsonSchema::id() const { return impl_->id; }

}  // namespace dyno::record
