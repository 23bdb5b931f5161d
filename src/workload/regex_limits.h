#pragma once
// What dyno lets libstdc++'s std::regex compile. Its compiler reads a backreference's number
// and a repetition count ({n,m}) into a long without an overflow check (undefined behaviour,
// found by fuzzing), builds one state per repetition, and recurses as deep as the pattern is
// nested, so a pattern from a request stream or a schema is checked first.
#include <cstddef>
#include <string>
#include <string_view>

namespace dyno::workload {

struct RegexLimits {
  std::size_t max_bytes = 1024;
  bool backreferences = true;  ///< \1..\99 allowed (never a larger number)
};

/// At most this many repetitions in {n}, {n,} or {n,m}.
inline constexpr unsigned long kMaxRegexRepeat = 1000;

/// Why `pattern` may not be compiled ("" when it may): too long, a backreference (when not
/// allowed) or one numbered over 99, a repetition count over kMaxRegexRepeat.
std::string regex_pattern_problem(std::string_view pattern, const RegexLimits& limits = {});

}  // namespace dyno::workload
