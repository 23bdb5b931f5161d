#include "workload/regex_limits.h"

namespace dyno::workload {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The digits at pattern[i...]: their count, and their value capped at limit + 1.
struct DigitRun {
  std::size_t length = 0;
  unsigned long value = 0;
};

DigitRun digits_at(std::string_view pattern, std::size_t i, unsigned long limit) {
  DigitRun run;
  while (i + run.length < pattern.size() && is_digit(pattern[i + run.length])) {
    const auto digit = static_cast<unsigned long>(pattern[i + run.length] - '0');
    run.value = run.value > limit ? limit + 1 : run.value * 10 + digit;
    ++run.length;
  }
  return run;
}

}  // namespace

std::string regex_pattern_problem(std::string_view pattern, const RegexLimits& limits) {
  if (pattern.size() > limits.max_bytes) {
    return "a pattern of " + std::to_string(pattern.size()) + " bytes; at most " +
           std::to_string(limits.max_bytes) + " are supported";
  }
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      if (pattern[i + 1] >= '1' && pattern[i + 1] <= '9') {
        if (!limits.backreferences) {
          return "the pattern has a backreference (\\1-\\9), not supported here";
        }
        const DigitRun run = digits_at(pattern, i + 1, 99);
        if (run.value > 99) return "a backreference numbered over 99";
        i += run.length;
      } else {
        ++i;  // the escaped character
      }
      continue;
    }
    if (pattern[i] != '{') continue;
    // {n}, {n,} or {n,m}: each count at most kMaxRegexRepeat. A '{' that starts no count is a
    // literal; counts in a bracket expression are checked too (never wrongly let through).
    std::size_t j = i + 1;
    for (int part = 0; part < 2 && j < pattern.size() && is_digit(pattern[j]); ++part) {
      const DigitRun run = digits_at(pattern, j, kMaxRegexRepeat);
      if (run.value > kMaxRegexRepeat) {
        return "a repetition count over " + std::to_string(kMaxRegexRepeat);
      }
      j += run.length;
      if (j < pattern.size() && pattern[j] == ',') ++j;
    }
  }
  return {};
}

}  // namespace dyno::workload
