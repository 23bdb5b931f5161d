// `dyno import llama-bench` reading a file (interop/import_llama_bench.h): any bytes give the
// file's tests or an ImportFileError naming the file, never another exception or a crash; a
// test's engine-timed rates are positive and only one of prefill and decode is set.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "interop/import_llama_bench.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    for (const dyno::interop::ImportedResult& r :
         dyno::interop::read_llama_bench(bytes, "fuzz.json")) {
      FUZZ_CHECK(r.source.timing == "summary_only" && r.traces.empty());
      FUZZ_CHECK(r.api == "in_process");
      FUZZ_CHECK(r.cell && !r.cell->empty());
      FUZZ_CHECK(r.engine_timings.has_value());
      const auto& t = *r.engine_timings;
      const bool prefill = !t.at("prefill_rate").at("mean").is_null();
      const bool decode = !t.at("decode_rate_per_user").at("mean").is_null();
      FUZZ_CHECK(!(prefill && decode));
      FUZZ_CHECK(r.summary.requests_total == r.requests);
    }
  } catch (const dyno::interop::ImportFileError& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.json", 0) == 0);
  }
  return 0;
}
