// A validator for the part of JSON Schema (draft 2020-12) that the record schemas use
// (docs/schema/*.schema.json). Keywords: type, properties, required, additionalProperties,
// patternProperties, items, prefixItems, enum, const, minimum, maximum, exclusiveMinimum,
// minLength, minItems, pattern, $ref (to "#/$defs/<name>"), anyOf, oneOf, allOf, $defs, and the
// annotations $schema, $id, $comment, title, description. Any other keyword makes the schema
// an error when it is compiled, so a schema can never silently leave something unchecked.
// Patterns are bounded (std::regex recurses as deep as its input is long): a pattern of more
// than 1024 bytes or with a backreference does not compile, and a string or key of more than
// 4096 bytes that a pattern would check is a problem of its own.
#pragma once

#include <boost/json/value.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "error/error.h"

namespace dyno::record {

/// One way a JSON value departs from a schema.
struct SchemaProblem {
  std::string file;     ///< e.g. "manifest.json", "requests.jsonl:3"; "" for a value alone
  std::string pointer;  ///< JSON pointer of the value, e.g. "/latency_ms/ttft/p50"; "" = root
  std::string message;  ///< what was expected, and what was found
  /// "file: pointer: message", leaving out the empty parts ("(root)" for the root pointer).
  std::string to_string() const;
};

/// A schema that cannot be used: an unknown keyword, a keyword of the wrong type, a $ref that
/// does not resolve, a pattern that does not compile. The message names the schema and the
/// JSON pointer of the fault inside it.
class SchemaError : public Error {
 public:
  explicit SchemaError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// A compiled schema. Copies share the compiled form; validation is const and thread-safe.
class JsonSchema {
 public:
  /// Compiles `schema`; `name` names it in errors (e.g. "manifest.schema.json").
  /// Throws SchemaError.
  static JsonSchema compile(const boost::json::value& schema, const std::string& name);
  /// Parses the JSON text, then compiles it. Throws SchemaError (also for invalid JSON).
  static JsonSchema parse(std::string_view text, const std::string& name);

  /// Every problem of `value` (empty: it conforms). Each problem's `file` is left empty.
  std::vector<SchemaProblem> validate(const boost::json::value& value) const;

  const std::string& name() const;
  const std::string& id() const;  ///< the root's $id ("" when it has none)

  struct Impl;

 private:
  explicit JsonSchema(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace dyno::record
