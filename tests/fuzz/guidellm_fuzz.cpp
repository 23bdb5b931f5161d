// `dyno import guidellm` reading a report (interop/import_guidellm.h): any bytes give its
// benchmarks or an ImportFileError naming the file, never another exception or a crash; a
// benchmark's traces lie on the record's time axis in order, with no invented event times.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "interop/import_guidellm.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    for (const dyno::interop::ImportedResult& r :
         dyno::interop::read_guidellm(bytes, "fuzz.json")) {
      FUZZ_CHECK(r.status == "ok" || r.status == "partial" || r.status == "failed");
      FUZZ_CHECK(r.api == "chat" || r.api == "completions");
      FUZZ_CHECK(r.traces.empty() == (r.source.timing == "summary_only"));
      for (const auto& t : r.traces) {
        FUZZ_CHECK(t.sent_ns && *t.sent_ns >= 0);
        FUZZ_CHECK(t.event_times_ns.empty());
        if (t.ok()) {
          FUZZ_CHECK(*t.first_token_ns >= *t.sent_ns);
          FUZZ_CHECK(*t.last_token_ns >= *t.first_token_ns);
          FUZZ_CHECK(*t.done_ns >= *t.last_token_ns);
        }
      }
    }
  } catch (const dyno::interop::ImportFileError& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.json", 0) == 0);
  }
  return 0;
}
