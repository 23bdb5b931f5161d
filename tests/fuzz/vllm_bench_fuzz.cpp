// `dyno import vllm-bench` reading a file (interop/import_vllm.h): any bytes give an
// ImportedResult or an ImportFileError naming the file, never another exception or a crash;
// a result's traces agree with its counts and lie on the record's time axis.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "interop/import_vllm.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const dyno::interop::ImportedResult r = dyno::interop::read_vllm_bench(bytes, "fuzz.json");
    FUZZ_CHECK(r.requests >= 1);
    FUZZ_CHECK(r.status == "ok" || r.status == "partial" || r.status == "failed");
    FUZZ_CHECK(r.traces.empty() == (r.source.timing == "summary_only"));
    for (const auto& t : r.traces) {
      FUZZ_CHECK(t.sent_ns && *t.sent_ns >= 0);
      FUZZ_CHECK(!t.scheduled_ns || *t.scheduled_ns >= 0);
      if (t.ok()) {
        FUZZ_CHECK(!t.event_times_ns.empty());
        FUZZ_CHECK(*t.first_token_ns >= *t.sent_ns);
        FUZZ_CHECK(*t.last_token_ns >= *t.first_token_ns);
        FUZZ_CHECK(!t.done_ns || *t.done_ns >= *t.last_token_ns);
      }
    }
  } catch (const dyno::interop::ImportFileError& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.json", 0) == 0);
  }
  return 0;
}
