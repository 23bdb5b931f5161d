// The schema validator (src/record/json_schema.h): every keyword passes and fails, problems
// name the JSON pointer, and a schema it cannot honour is rejected when compiled.
#include "record/json_schema.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace json = boost::json;
using dyno::record::JsonSchema;
using dyno::record::SchemaError;
using dyno::record::SchemaProblem;

namespace {

JsonSchema schema(const std::string& text) { return JsonSchema::parse(text, "test.schema.json"); }

std::vector<SchemaProblem> check(const std::string& schema_text, const std::string& value) {
  return schema(schema_text).validate(json::parse(value));
}

/// Passes when `value` conforms.
void expect_ok(const std::string& schema_text, const std::string& value) {
  const auto problems = check(schema_text, value);
  std::string all;
  for (const auto& p : problems) all += p.to_string() + "\n";
  EXPECT_TRUE(problems.empty()) << value << " against " << schema_text << ":\n" << all;
}

/// Passes when `value` has exactly one problem, at `pointer`, whose message contains `needle`.
void expect_problem(const std::string& schema_text, const std::string& value,
                    const std::string& pointer, const std::string& needle) {
  const auto problems = check(schema_text, value);
  ASSERT_EQ(problems.size(), 1u) << value << " against " << schema_text;
  EXPECT_EQ(problems[0].pointer, pointer) << problems[0].to_string();
  EXPECT_NE(problems[0].message.find(needle), std::string::npos) << problems[0].to_string();
}

void expect_bad_schema(const std::string& schema_text, const std::string& needle) {
  try {
    schema(schema_text);
    ADD_FAILURE() << "accepted: " << schema_text;
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test.schema.json"), std::string::npos) << e.what();
  }
}

TEST(JsonSchema, TypeNamesOneOrSeveral) {
  expect_ok(R"({"type":"string"})", R"("a")");
  expect_problem(R"({"type":"string"})", "3", "", "expected string, found integer 3");
  expect_ok(R"({"type":["number","null"]})", "null");
  expect_ok(R"({"type":["number","null"]})", "2.5");
  expect_problem(R"({"type":["number","null"]})", "true", "", "expected number or null");
  expect_ok(R"({"type":"boolean"})", "false");
  expect_ok(R"({"type":"object"})", "{}");
  expect_problem(R"({"type":"array"})", "{}", "", "expected array, found an object");
}

TEST(JsonSchema, IntegerIsANumberWithoutAFraction) {
  expect_ok(R"({"type":"integer"})", "3");
  expect_ok(R"({"type":"integer"})", "-3");
  expect_ok(R"({"type":"integer"})", "18446744073709551615");  // a uint64
  expect_ok(R"({"type":"integer"})", "2.0");
  expect_problem(R"({"type":"integer"})", "2.5", "", "expected integer, found number 2.5");
  expect_ok(R"({"type":"number"})", "3");  // every integer is a number
}

TEST(JsonSchema, PropertiesAndRequiredNameThePath) {
  const std::string s =
      R"({"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer"}},)"
      R"("required":["b"]}},"required":["a"]})";
  expect_ok(s, R"({"a":{"b":1}})");
  expect_problem(s, R"({"a":{"b":"x"}})", "/a/b", "expected integer");
  expect_problem(s, R"({"a":{}})", "/a", "missing required key `b`");
  expect_problem(s, R"({})", "", "missing required key `a`");
}

TEST(JsonSchema, AdditionalPropertiesFalseNamesTheUnexpectedKey) {
  const std::string s =
      R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false})";
  expect_ok(s, R"({"a":1})");
  expect_ok(s, R"({})");
  expect_problem(s, R"({"a":1,"zz":2})", "/zz", "unexpected key `zz`");
}

TEST(JsonSchema, AdditionalPropertiesSchemaChecksTheOtherKeys) {
  const std::string s = R"({"type":"object","properties":{"n":{"type":"string"}},)"
                        R"("additionalProperties":{"type":"integer","minimum":1}})";
  expect_ok(s, R"({"n":"x","http_status":3,"timeout":1})");
  expect_problem(s, R"({"n":"x","timeout":0})", "/timeout", ">= 1");
}

TEST(JsonSchema, PatternPropertiesMatchKeysByRegex) {
  const std::string s = R"({"type":"object","patternProperties":{"^x_":{"type":"number"}},)"
                        R"("additionalProperties":false})";
  expect_ok(s, R"({"x_a":1,"x_b":2.5})");
  expect_problem(s, R"({"x_a":"1"})", "/x_a", "expected number");
  expect_problem(s, R"({"y":1})", "/y", "unexpected key `y`");
}

TEST(JsonSchema, PointerTokensAreEscaped) {
  const std::string s = R"({"type":"object","additionalProperties":{"type":"number"}})";
  expect_problem(s, R"({"a/b~c":"x"})", "/a~1b~0c", "expected number");
}

TEST(JsonSchema, ItemsAndPrefixItems) {
  const std::string s = R"({"type":"array","items":{"type":"integer"}})";
  expect_ok(s, "[1,2,3]");
  expect_problem(s, "[1,2.5,3]", "/1", "expected integer");
  const std::string p =
      R"({"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}],"items":{"type":"integer"}})";
  expect_ok(p, R"(["a",true,1,2])");
  expect_problem(p, R"(["a",1])", "/1", "expected boolean");
  expect_problem(p, R"(["a",true,"x"])", "/2", "expected integer");
}

TEST(JsonSchema, EnumAndConstCompareNumbersByValue) {
  const std::string e = R"({"enum":["ok","partial",null,1]})";
  expect_ok(e, R"("ok")");
  expect_ok(e, "null");
  expect_ok(e, "1.0");
  expect_problem(e, R"("weird")", "",
                 R"(expected one of "ok", "partial", null, 1; found string "weird")");
  expect_ok(R"({"const":1})", "1");
  expect_ok(R"({"const":{"a":[1,2]}})", R"({"a":[1,2.0]})");
  expect_problem(R"({"const":1})", "2", "", "expected 1, found integer 2");
  expect_problem(R"({"const":"dyno"})", R"("ondy")", "", R"(expected "dyno")");
}

TEST(JsonSchema, NumericBounds) {
  expect_ok(R"({"minimum":0,"maximum":1})", "0");
  expect_ok(R"({"minimum":0,"maximum":1})", "1");
  expect_problem(R"({"minimum":0})", "-1", "", "expected a number >= 0, found integer -1");
  expect_problem(R"({"maximum":1})", "1.5", "", "expected a number <= 1");
  expect_ok(R"({"exclusiveMinimum":0})", "0.001");
  expect_problem(R"({"exclusiveMinimum":0})", "0", "", "expected a number > 0");
  expect_ok(R"({"minimum":5})", R"("text")");  // bounds apply to numbers only
}

TEST(JsonSchema, StringLengthAndPattern) {
  expect_ok(R"({"minLength":2})", R"("ab")");
  expect_ok(R"({"minLength":2})", "\"\xc3\xa9\xc3\xa9\"");  // two characters, four bytes
  expect_problem(R"({"minLength":2})", "\"\xc3\xa9\"", "", "at least 2 characters");
  const std::string hex = R"({"type":"string","pattern":"^[0-9a-f]{4}$"})";
  expect_ok(hex, R"("0a1f")");
  expect_problem(hex, R"("0A1F")", "", "matching /^[0-9a-f]{4}$/");
  expect_ok(R"({"pattern":"b"})", R"("abc")");  // unanchored, as JSON Schema says
}

TEST(JsonSchema, LongStringsAndKeysAreAProblemNotACrash) {
  // std::regex matches by recursion: a 100 000-byte string against /^[a-z]*$/ overflowed the
  // stack (SIGSEGV in `dyno runs verify` on such a record). Past 4096 bytes it is a problem.
  const std::string long_text(100000, 'a');
  expect_problem(R"({"pattern":"^[a-z]*$"})", "\"" + long_text + "\"", "",
                 "a string of 100000 bytes");
  expect_ok(R"({"pattern":"^[a-z]*$"})", "\"" + std::string(4096, 'a') + "\"");
  expect_problem(R"({"patternProperties":{"^[a-z]*$":{"type":"integer"}}})",
                 "{\"" + long_text + "\":1}", "/" + long_text, "a key of 100000 bytes");
}

TEST(JsonSchema, MinItems) {
  expect_ok(R"({"minItems":1})", "[0]");
  expect_problem(R"({"minItems":1})", "[]", "", "at least 1 items, found 0");
}

TEST(JsonSchema, RefToDefs) {
  const std::string s =
      R"({"type":"object","properties":{"a":{"$ref":"#/$defs/count"},"b":{"$ref":"#/$defs/count"}},)"
      R"("$defs":{"count":{"type":"integer","minimum":0}}})";
  expect_ok(s, R"({"a":1,"b":0})");
  expect_problem(s, R"({"a":1,"b":-1})", "/b", ">= 0");
  // Keywords beside a $ref apply too.
  expect_problem(R"({"$ref":"#/$defs/n","maximum":3,"$defs":{"n":{"type":"number"}}})", "4", "",
                 "<= 3");
}

TEST(JsonSchema, RecursiveRefs) {
  const std::string tree =
      R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":)"
      R"({"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"additionalProperties":false}}})";
  expect_ok(tree, R"({"kids":[{"kids":[]},{}]})");
  expect_problem(tree, R"({"kids":[{"kids":[{"x":1}]}]})", "/kids/0/kids/0/x", "unexpected key");
}

TEST(JsonSchema, AnyOfPassesOnOneAlternativeAndExplainsEachOnFailure) {
  const std::string s = R"({"anyOf":[{"type":"null"},{"type":"string","minLength":1}]})";
  expect_ok(s, "null");
  expect_ok(s, R"("x")");
  const auto problems = check(s, "3");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("matches none of the allowed forms"), std::string::npos);
  EXPECT_NE(problems[0].message.find("(1) expected null"), std::string::npos)
      << problems[0].message;
  EXPECT_NE(problems[0].message.find("(2) expected string"), std::string::npos)
      << problems[0].message;
}

TEST(JsonSchema, AnyOfDoesNotRepeatAProblemAlreadyReported) {
  // A cross-key rule (status ok <=> no error) beside the keys' own schemas: a bad status is
  // one problem, not also "matches none of the forms".
  const std::string s =
      R"({"type":"object","properties":{"status":{"enum":["ok","error"]},"error":{}},)"
      R"("anyOf":[{"properties":{"status":{"const":"ok"},"error":{"type":"null"}}},)"
      R"({"properties":{"status":{"const":"error"},"error":{"type":"object"}}}]})";
  expect_ok(s, R"({"status":"ok","error":null})");
  expect_problem(s, R"({"status":"done","error":null})", "/status", "expected one of");
  // The rule itself still speaks when only it is broken.
  expect_problem(s, R"({"status":"ok","error":{}})", "", "matches none of the allowed forms");
}

TEST(JsonSchema, OneOfNeedsExactlyOne) {
  const std::string s = R"({"oneOf":[{"type":"integer"},{"minimum":0}]})";
  expect_ok(s, "-1");   // integer only
  expect_ok(s, "0.5");  // minimum only
  expect_problem(s, "3", "", "matches 2 of the forms of oneOf");
  expect_problem(s, "-0.5", "", "matches none");
}

TEST(JsonSchema, AllOfCollectsEveryProblem) {
  const std::string s = R"({"allOf":[{"type":"integer"},{"minimum":10}]})";
  expect_ok(s, "12");
  expect_problem(s, "5", "", ">= 10");
  EXPECT_EQ(check(s, "5.5").size(), 2u);
}

TEST(JsonSchema, BooleanSchemas) {
  expect_ok("true", R"({"anything":[1]})");
  expect_problem("false", "1", "", "no value is allowed here");
  expect_problem(R"({"properties":{"gone":false}})", R"({"gone":1})", "/gone", "no value");
}

TEST(JsonSchema, ManyProblemsAreAllReported) {
  const std::string s =
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":true},)"
      R"("required":["c"],"additionalProperties":false})";
  const auto problems = check(s, R"({"a":"1","b":2,"d":3})");
  ASSERT_EQ(problems.size(), 4u);
  std::vector<std::string> pointers;
  for (const auto& p : problems) pointers.push_back(p.pointer);
  EXPECT_EQ(pointers, (std::vector<std::string>{"", "/a", "/b", "/d"}));
}

TEST(JsonSchema, ProblemText) {
  SchemaProblem p{"requests.jsonl:3", "/error/category", "expected one of ..."};
  EXPECT_EQ(p.to_string(), "requests.jsonl:3: /error/category: expected one of ...");
  p.file.clear();
  p.pointer.clear();
  EXPECT_EQ(p.to_string(), "(root): expected one of ...");
}

TEST(JsonSchema, AnnotationsAndIdAreKept) {
  const JsonSchema s = schema(
      R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:x","title":"t",)"
      R"("description":"d","$comment":"c","type":"null"})");
  EXPECT_EQ(s.id(), "urn:x");
  EXPECT_EQ(s.name(), "test.schema.json");
}

TEST(JsonSchema, BadSchemasAreRejectedWhenCompiled) {
  expect_bad_schema(R"({"type":"object","propertyNames":{"pattern":"^a"}})",
                    "unknown keyword `propertyNames`");
  expect_bad_schema(R"({"properties":{"a":{"maxLength":3}}})", "/properties/a/maxLength");
  expect_bad_schema(R"({"type":"float"})", "unknown type \"float\"");
  expect_bad_schema(R"({"type":["string","string"]})", "listed twice");
  expect_bad_schema(R"({"required":"a"})", "expected an array of key names");
  expect_bad_schema(R"({"required":["a","a"]})", "required twice");
  expect_bad_schema(R"({"enum":[]})", "non-empty array");
  expect_bad_schema(R"({"minimum":"0"})", "expected a number");
  expect_bad_schema(R"({"minLength":-1})", "non-negative integer");
  expect_bad_schema(R"({"minItems":1.5})", "non-negative integer");
  expect_bad_schema(R"({"pattern":"(unclosed"})", "does not compile");
  expect_bad_schema(R"({"patternProperties":{"[":true}})", "does not compile");
  // libstdc++ reads a backreference's number without an overflow check (UB); none is needed.
  expect_bad_schema(R"({"pattern":"(a)\\5555555555555555555"})", "backreference");
  expect_bad_schema(R"({"pattern":")" + std::string(2000, 'a') + "\"}", "at most 1024");
  expect_bad_schema(R"({"anyOf":[]})", "non-empty array of schemas");
  expect_bad_schema(R"({"items":3})", "a schema is an object or a boolean");
  expect_bad_schema(R"({"$ref":"#/$defs/missing","$defs":{}})", "names no entry of $defs");
  expect_bad_schema(R"({"$ref":"other.json#/x"})", "only \"#/$defs/<name>\"");
  expect_bad_schema(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}})",
                    "refers to itself");
  expect_bad_schema(R"({"properties":{"a":{"$defs":{}}}})", "only supported at the root");
  expect_bad_schema(R"({"$schema":"http://json-schema.org/draft-07/schema#"})", "2020-12");
  expect_bad_schema(
      R"({"properties":{"a":true},"required":["a","b"],"additionalProperties":false})",
      "key `b` is required but can never be present");
  expect_bad_schema("{not json", "not valid JSON");
}

}  // namespace
