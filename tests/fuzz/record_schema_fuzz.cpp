// The JSON-schema validator (record/json_schema.h) on the embedded record schemas
// (record/record_schema.h): any JSON value, checked against the manifest, summary, request,
// telemetry and campaign schemas, gives a list of problems, each naming where it is.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "record/record_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::json::error_code ec;
  const boost::json::value value = boost::json::parse(text, ec);
  if (ec) return 0;
  for (const char* kind : {"manifest", "summary", "request", "telemetry", "campaign"}) {
    for (const auto& problem : dyno::record::record_schema(kind).validate(value)) {
      FUZZ_CHECK(!problem.message.empty());
      FUZZ_CHECK(problem.pointer.empty() || problem.pointer[0] == '/');
      FUZZ_CHECK(value.find_pointer(problem.pointer, ec) != nullptr);
      FUZZ_CHECK(!problem.to_string().empty());
    }
  }
  return 0;
}
