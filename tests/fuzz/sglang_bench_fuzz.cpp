// `dyno import sglang-bench` reading a file (interop/import_sglang.h): any bytes give results or
// an ImportFileError naming the file, never another exception or a crash; a result's traces
// agree with its counts and lie on the record's time axis.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "interop/import_formats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    for (const dyno::interop::ImportedResult& r :
         dyno::interop::read_import("sglang-bench", bytes, "fuzz.jsonl", {})) {
      FUZZ_CHECK(r.requests >= 1 || r.source.timing == "summary_only");  // 0: not in the file
      FUZZ_CHECK(r.status == "ok" || r.status == "partial" || r.status == "failed");
      FUZZ_CHECK(r.api == "chat" || r.api == "completions" || r.api == "generate");
      FUZZ_CHECK(r.traces.empty() == (r.source.timing == "summary_only"));
      for (const auto& t : r.traces) {
        FUZZ_CHECK(t.sent_ns && *t.sent_ns >= 0);
        FUZZ_CHECK(!t.done_ns);
        if (t.first_token_ns) {
          FUZZ_CHECK(*t.first_token_ns >= *t.sent_ns);
          FUZZ_CHECK(t.last_token_ns && *t.last_token_ns >= *t.first_token_ns);
        }
        if (!t.event_times_ns.empty()) {
          FUZZ_CHECK(t.event_times_ns.front() == *t.first_token_ns);
          FUZZ_CHECK(t.event_times_ns.back() == *t.last_token_ns);
        }
      }
    }
  } catch (const dyno::interop::ImportFileError& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.jsonl", 0) == 0);
  }
  return 0;
}
