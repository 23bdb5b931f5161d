// Answer scoring (workload/scoring.h) of a server's output: the input is "<scorer>\n<answer>\n
// <pattern, or choices separated by |>\n<output>". An expectation that a request stream would
// reject is skipped; any other scores any output without a crash, and an empty extraction is
// never correct for regex and choice.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "workload/request_stream.h"
#include "workload/scoring.h"

namespace {

std::string_view next_line(std::string_view& input) {
  const std::size_t eol = input.find('\n');
  const std::string_view line = input.substr(0, eol);
  input.remove_prefix(eol == std::string_view::npos ? input.size() : eol + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  dyno::workload::Expectation e;
  e.scorer = std::string(next_line(input));
  e.answer = std::string(next_line(input));
  const std::string_view params = next_line(input);
  if (e.scorer == "regex") {
    e.pattern = std::string(params);
  } else if (e.scorer == "choice") {
    std::string_view rest = params;
    while (!rest.empty()) {
      const std::size_t bar = rest.find('|');
      e.choices.emplace_back(rest.substr(0, bar));
      rest.remove_prefix(bar == std::string_view::npos ? rest.size() : bar + 1);
    }
  }
  try {
    dyno::workload::validate_expectation(e, "fuzz", "expected");
  } catch (const dyno::workload::StreamError&) {
    return 0;
  }
  const dyno::workload::Score s = dyno::workload::score_answer(e, input);
  FUZZ_CHECK(s.scorer == e.scorer);
  if (e.scorer == "choice" && s.correct) {
    FUZZ_CHECK(std::find(e.choices.begin(), e.choices.end(), s.extracted) != e.choices.end());
  }
  return 0;
}
