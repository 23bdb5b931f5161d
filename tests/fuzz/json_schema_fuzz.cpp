// The JSON-schema compiler and validator (record/json_schema.h) on arbitrary schemas: the input
// is "<schema JSON>\n---\n<instance JSON>" (without the separator the schema is its own
// instance). Any schema compiles or throws SchemaError; a compiled schema validates any value.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "record/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSeparator = "\n---\n";
  const std::size_t split = input.find(kSeparator);
  const std::string_view schema_text = input.substr(0, split);
  const std::string_view instance_text =
      split == std::string_view::npos ? input : input.substr(split + kSeparator.size());
  boost::json::error_code ec;
  const boost::json::value instance = boost::json::parse(instance_text, ec);
  if (ec) return 0;
  try {
    const auto schema = dyno::record::JsonSchema::parse(schema_text, "fuzz.schema.json");
    for (const auto& problem : schema.validate(instance)) {
      FUZZ_CHECK(!problem.message.empty());
      FUZZ_CHECK(instance.find_pointer(problem.pointer, ec) != nullptr);
    }
  } catch (const dyno::record::SchemaError&) {
  }
  return 0;
}
