// The agent-trajectory reader (workload/import_sessions.h parse_agent_text): any bytes give a
// session stream or a StreamError naming "<source>:<line>" or the source; a stream's turns are
// 0, 1, … per session with tool calls only after turn 0 and tools only on it, every line reads
// back equal from its own JSON, and the whole stream passes the stream reader's checks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "workload/import_sessions.h"
#include "workload/request_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  dyno::workload::RequestStream stream;
  try {
    stream = dyno::workload::parse_agent_text(text, "fuzz.jsonl", {});
  } catch (const dyno::workload::StreamError& error) {
    FUZZ_CHECK(std::string_view(error.what()).rfind("fuzz.jsonl", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(!stream.requests.empty());
  std::string lines;
  for (const auto& r : stream.requests) {
    FUZZ_CHECK(r.turn.has_value() && r.is_chat() && !r.messages.empty());
    FUZZ_CHECK(r.turn->index > 0 || r.turn->tool_calls.empty());
    FUZZ_CHECK(r.turn->index == 0 || (r.turn->tools.empty() && r.messages[0].role != "system"));
    FUZZ_CHECK(r.id == r.turn->session + "-" + std::to_string(r.turn->index));
    const std::string line = dyno::workload::to_json_line(r);
    FUZZ_CHECK(dyno::workload::parse_request_line(line, "round trip") == r);
    lines += line + "\n";
  }
  const auto back = dyno::workload::parse_stream_text(lines, "written.jsonl");
  FUZZ_CHECK(back.requests == stream.requests);
  FUZZ_CHECK(back.sha256 == stream.sha256);
  return 0;
}
