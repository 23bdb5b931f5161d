// ShareGPT with every turn (workload/import_sessions.h stream_from_sharegpt_sessions): any bytes,
// with and without reference lengths, give a session stream or a StreamError naming the file;
// a stream's turns are 0, 1, … per session, never carry a recorded answer, and read back equal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/memfd.h"
#include "workload/import_sessions.h"
#include "workload/request_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const dyno::fuzz::MemFile file(data, size);
  for (const bool reference : {false, true}) {
    dyno::workload::ShareGptOptions o;
    o.output_from_reference = reference;
    dyno::workload::RequestStream stream;
    try {
      stream = dyno::workload::stream_from_sharegpt_sessions(file.path(), o);
    } catch (const dyno::workload::StreamError& error) {
      FUZZ_CHECK(std::string_view(error.what()).rfind(file.path(), 0) == 0);
      continue;
    }
    std::string lines;
    for (const auto& r : stream.requests) {
      FUZZ_CHECK(r.turn.has_value() && r.sampling.max_tokens && *r.sampling.max_tokens >= 1);
      FUZZ_CHECK(r.messages.back().role == "user");
      for (const auto& m : r.messages) FUZZ_CHECK(m.role == "user" || m.role == "system");
      lines += dyno::workload::to_json_line(r) + "\n";
    }
    const auto back = dyno::workload::parse_stream_text(lines, "written.jsonl");
    FUZZ_CHECK(back.requests == stream.requests);
  }
  return 0;
}
