#include "workload/scoring.h"

#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <regex>
#include <stdexcept>
#include <vector>

#include "error/registry.h"
#include "workload/regex_limits.h"

namespace dyno::workload {

namespace {

constexpr std::string_view kOpenTag = "<think>";
constexpr std::string_view kCloseTag = "</think>";
/// relaxed_numeric: the largest relative error that is still correct (ChartQA), plus a little
/// slack so that 5.25 vs 5 is not lost to binary rounding.
constexpr double kRelaxedTolerance = 0.05;
constexpr double kRoundingSlack = 1e-9;
/// std::regex (libstdc++) matches by recursion as deep as the text it consumes is long (a few
/// hundred bytes of stack per character): a 30 KB one-line output against /(.*)/ overflowed
/// the 8 MiB main stack. So the regex and choice scorers read at most the last
/// kMaxRegexTextBytes of the output, on a thread of their own whose stack (reserved, touched
/// only as deep as it goes) holds that with room to spare, sanitizers included.
constexpr std::size_t kMaxRegexTextBytes = std::size_t{256} << 10;
constexpr std::size_t kRegexStackBytes = std::size_t{512} << 20;

/// Runs fn() on a thread with a kRegexStackBytes stack and waits for it; rethrows what it threw.
template <typename Fn>
void on_large_stack(Fn& fn) {
  struct Call {
    Fn* fn;
    std::exception_ptr error;
  };
  Call call{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kRegexStackBytes);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void* arg) -> void* {
        auto* c = static_cast<Call*>(arg);
        try {
          (*c->fn)();
        } catch (...) {
          c->error = std::current_exception();
        }
        return nullptr;
      },
      &call);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    throw std::runtime_error(std::string("scoring: cannot start a thread: ") + std::strerror(rc));
  }
  pthread_join(thread, nullptr);
  if (call.error) std::rethrow_exception(call.error);
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_edge_punct(char c) {
  return std::string_view(".,;:!?\"'`()[]{}*").find(c) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return to_lower(x) == to_lower(y);
         });
}

struct NumberMatch {
  double value = 0.0;
  std::size_t end = 0;  ///< one past the last character read
};

/// Reads a number that starts exactly at s[i] (grammar in scoring.h, parse_number).
std::optional<NumberMatch> read_number(std::string_view s, std::size_t i) {
  const std::size_t n = s.size();
  std::size_t j = i;
  bool negative = false;
  bool signed_ = false;
  const auto read_sign = [&] {
    if (j < n && (s[j] == '-' || s[j] == '+')) {
      negative = s[j] == '-';
      signed_ = true;
      ++j;
    }
  };
  read_sign();
  if (j < n && s[j] == '$') {
    ++j;
    if (!signed_) read_sign();  // "$-5" as well as "-$5"
  }
  std::string digits;
  const std::size_t int_begin = j;
  while (j < n && is_digit(s[j])) digits += s[j++];
  const std::size_t int_len = j - int_begin;
  if (int_len >= 1 && int_len <= 3) {
    // Thousands groups: ",ddd" not followed by another digit.
    while (j + 3 < n && s[j] == ',' && is_digit(s[j + 1]) && is_digit(s[j + 2]) &&
           is_digit(s[j + 3]) && (j + 4 == n || !is_digit(s[j + 4]))) {
      digits.append(s.substr(j + 1, 3));
      j += 4;
    }
  }
  std::string fraction;
  if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {
    ++j;
    while (j < n && is_digit(s[j])) fraction += s[j++];
  }
  if (digits.empty() && fraction.empty()) return std::nullopt;
  if (j < n && s[j] == '%') ++j;
  std::string clean = (digits.empty() ? "0" : digits);
  if (!fraction.empty()) clean += "." + fraction;
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), value);
  if (ec != std::errc() || ptr != clean.data() + clean.size()) return std::nullopt;
  return NumberMatch{negative ? -value : value, j};
}

/// The first number in `s` (see docs/metrics.md): a start that is not glued to a preceding
/// letter, digit or '.'. Returns the number and its text.
std::optional<std::pair<double, std::string>> first_number(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool can_start = is_digit(c) || c == '$' || c == '-' || c == '+' ||
                           (c == '.' && i + 1 < s.size() && is_digit(s[i + 1]));
    if (!can_start) continue;
    if (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '.')) continue;
    if (const auto m = read_number(s, i)) {
      return std::make_pair(m->value, std::string(s.substr(i, m->end - i)));
    }
  }
  return std::nullopt;
}

bool relaxed_equal(double prediction, double target) {
  if (target == 0.0) return prediction == 0.0;
  return std::fabs(prediction - target) / std::fabs(target) <= kRelaxedTolerance + kRoundingSlack;
}

std::regex compile(const std::string& pattern, std::regex::flag_type flags) {
  try {
    return std::regex(pattern, flags);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("regex pattern '" + pattern + "' does not compile: " + e.what());
  }
}

std::string escape_regex(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

/// `choice`: which label of `labels` the output chose, "" when none.
std::string find_choice(const std::vector<std::string>& labels, const std::string& text) {
  std::vector<std::string> sorted = labels;  // longest first, so "AB" wins over "A"
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string alt;
  for (const auto& l : sorted) {
    if (!l.empty()) alt += (alt.empty() ? "" : "|") + escape_regex(l);
  }
  if (alt.empty()) return {};
  const std::string label = "(" + alt + ")(?![A-Za-z0-9])";
  const auto flags = std::regex::ECMAScript | std::regex::icase;

  // The label as spelled in `labels` when the match is acceptable, else "". A match that
  // differs in case from its label ("b" for "B") counts only when what follows it is the end
  // or, after optional whitespace, a character that is not a letter or digit: this keeps the
  // article in "the answer is a bit unclear" from reading as "A".
  const auto accept = [&](const std::smatch& m) -> std::string {
    const std::string got = m[1].str();
    for (const auto& l : labels) {
      if (l == got) return l;
    }
    std::size_t k = static_cast<std::size_t>(m.position(1) + m.length(1));
    while (k < text.size() && is_space(text[k])) ++k;
    if (k < text.size() && is_alnum(text[k])) return {};
    for (const auto& l : labels) {
      if (iequals(l, got)) return l;
    }
    return {};
  };

  // 1. An explicit statement: the last "answer is X" / "answer: X" / "answer is (X)".
  {
    const std::regex re = compile(
        R"(\banswer\b(?:\s+is)?\s*:?\s*(?:option\s+|choice\s+)?[(\[*"']*\s*)" + label, flags);
    std::string last;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it) {
      if (std::string l = accept(*it); !l.empty()) last = std::move(l);
    }
    if (!last.empty()) return last;
  }
  // 2. The whole output is a label ("B", "(B)", "**B**", "B.").
  // 3. The first bracketed label: "(B)", "[B]".
  // 4. A label that opens the output followed by ")", "." or ":" ("B) ...", "B. ...").
  for (const std::string& pattern :
       {R"(^[\s(\[*"']*)" + label + R"([\s)\]*."']*$)", R"([(\[])" + label + R"([)\]])",
        R"(^[\s*]*)" + label + R"(\s*[).:])"}) {
    const std::regex re = compile(pattern, flags);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it) {
      if (std::string l = accept(*it); !l.empty()) return l;
    }
  }
  return {};
}

}  // namespace

std::string strip_reasoning(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::string_view rest = text.substr(i);
    if (rest.starts_with(kOpenTag)) {
      const std::size_t close = text.find(kCloseTag, i + kOpenTag.size());
      if (close == std::string_view::npos) break;  // unterminated: drop the rest
      i = close + kCloseTag.size();
    } else if (rest.starts_with(kCloseTag)) {
      out.clear();  // stray close tag: everything before it was reasoning
      i += kCloseTag.size();
    } else {
      out += text[i++];
    }
  }
  return std::string(trim(out));
}

std::string normalize_answer(std::string_view text) {
  std::size_t b = 0;
  std::size_t e = text.size();
  while (b < e && (is_space(text[b]) || is_edge_punct(text[b]))) ++b;
  while (e > b && (is_space(text[e - 1]) || is_edge_punct(text[e - 1]))) --e;
  std::string out;
  std::size_t i = b;
  while (i < e) {
    while (i < e && is_space(text[i])) ++i;
    std::string word;
    while (i < e && !is_space(text[i])) word += to_lower(text[i++]);
    if (word.empty() || word == "a" || word == "an" || word == "the") continue;
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

std::optional<double> parse_number(std::string_view text) {
  const std::string_view t = trim(text);
  const auto m = read_number(t, 0);
  if (!m || m->end != t.size()) return std::nullopt;
  return m->value;
}

std::string regex_scorer_problem(const std::string& pattern) {
  if (pattern.empty()) return "scorer regex needs a non-empty `pattern`";
  if (std::string problem = regex_pattern_problem(pattern); !problem.empty()) {
    return "regex pattern: " + problem;
  }
  try {
    const std::regex compiled(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return "regex pattern does not compile (" + std::string(e.what()) + ")";
  }
  return {};
}

namespace {

void score_exact(const Expectation&, const std::string& text, std::string_view answer, Score& s) {
  s.extracted = text;
  s.correct = text == answer;
}

void score_normalized(const Expectation&, const std::string& text, std::string_view answer,
                      Score& s) {
  s.extracted = text;
  s.correct = normalize_answer(text) == normalize_answer(answer);
}

void score_relaxed_numeric(const Expectation&, const std::string& text, std::string_view answer,
                           Score& s) {
  const std::optional<double> target = parse_number(answer);
  std::optional<std::pair<double, std::string>> prediction;
  if (const auto whole = parse_number(text)) {
    prediction = std::make_pair(*whole, text);
  } else {
    prediction = first_number(text);
  }
  if (target && prediction) {
    s.extracted = prediction->second;
    s.correct = relaxed_equal(prediction->first, *target);
  } else {
    score_normalized({}, text, answer, s);
  }
}

/// The last kMaxRegexTextBytes of the output: where regex and choice look.
std::string tail_of(const std::string& text) {
  return text.size() > kMaxRegexTextBytes ? text.substr(text.size() - kMaxRegexTextBytes) : text;
}

void score_regex(const Expectation& expected, const std::string& text, std::string_view answer,
                 Score& s) {
  const std::string tail = tail_of(text);
  auto search = [&] {
    const std::regex re = compile(expected.pattern, std::regex::ECMAScript);
    std::smatch m;
    if (std::regex_search(tail, m, re)) {
      s.extracted = (m.size() > 1 && m[1].matched) ? m[1].str() : m[0].str();
      s.correct = normalize_answer(s.extracted) == normalize_answer(answer);
    }
  };
  on_large_stack(search);
}

void score_choice(const Expectation& expected, const std::string& text, std::string_view answer,
                  Score& s) {
  const std::string tail = tail_of(text);
  auto search = [&] {
    s.extracted = find_choice(expected.choices, tail);
    s.correct = !s.extracted.empty() && iequals(s.extracted, answer);
  };
  on_large_stack(search);
}

const Scorer kScorers[] = {
    {.name = "exact",
     .describe = "the output and the answer are byte-equal",
     .parameter = nullptr,
     .score = score_exact},
    {.name = "normalized",
     .describe = "equal after lower case, punctuation and articles dropped",
     .parameter = nullptr,
     .score = score_normalized},
    {.name = "relaxed_numeric",
     .describe = "ChartQA relaxed accuracy: the output's number within 5 % of the answer's",
     .parameter = nullptr,
     .score = score_relaxed_numeric},
    {.name = "regex",
     .describe = "the pattern's group 1 (else its match), normalized, equals the answer's",
     .parameter = "pattern",
     .score = score_regex},
    {.name = "choice",
     .describe = "the label of `choices` the output chose equals the answer, any case",
     .parameter = "choices",
     .score = score_choice},
};

}  // namespace

std::span<const Scorer> scorers() { return kScorers; }

bool is_known_scorer(std::string_view scorer) {
  return registry::find(scorers(), scorer) != nullptr;
}

Score score_answer(const Expectation& expected, std::string_view output) {
  const Scorer* scorer = registry::find(scorers(), expected.scorer);
  if (scorer == nullptr) {
    throw std::invalid_argument(registry::unknown_message(scorers(), "scorer", expected.scorer));
  }
  if (expected.scorer == "regex") {
    if (const std::string problem = regex_scorer_problem(expected.pattern); !problem.empty()) {
      throw std::invalid_argument(problem);
    }
  }
  const std::string text = strip_reasoning(output);
  Score s;
  s.scorer = expected.scorer;
  scorer->score(expected, text, trim(expected.answer), s);
  return s;
}

}  // namespace dyno::workload
