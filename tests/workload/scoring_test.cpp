#include "workload/scoring.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace dyno::workload {
namespace {

struct Case {
  std::string output;
  std::string answer;
  bool correct;
  std::string extracted;
};

Expectation expect(std::string scorer, std::string answer) {
  Expectation e;
  e.scorer = std::move(scorer);
  e.answer = std::move(answer);
  return e;
}

void check_table(const Expectation& base, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    Expectation e = base;
    e.answer = c.answer;
    const Score s = score_answer(e, c.output);
    EXPECT_EQ(s.correct, c.correct) << base.scorer << ": output '" << c.output << "' vs answer '"
                                    << c.answer << "' (extracted '" << s.extracted << "')";
    EXPECT_EQ(s.extracted, c.extracted) << base.scorer << ": output '" << c.output << "'";
    EXPECT_EQ(s.scorer, base.scorer);
  }
}

TEST(StripReasoning, RemovesBlocksStrayCloseTagsAndUnterminatedBlocks) {
  EXPECT_EQ(strip_reasoning("<think>a</think>b"), "b");
  EXPECT_EQ(strip_reasoning("x<think>a</think> y <think>b</think>z"), "x y z");
  EXPECT_EQ(strip_reasoning("<think>still thinking when cut off"), "");
  EXPECT_EQ(strip_reasoning("answer <think>cut off"), "answer");
  EXPECT_EQ(strip_reasoning("the template opened the block\n</think>\n\n42 "), "42");
  EXPECT_EQ(strip_reasoning("a</think>b</think>c"), "c");
  EXPECT_EQ(strip_reasoning("  plain \n"), "plain");
  EXPECT_EQ(strip_reasoning(""), "");
  EXPECT_EQ(strip_reasoning("<think></think>"), "");
  EXPECT_EQ(strip_reasoning("<THINK>x</THINK>y"), "<THINK>x</THINK>y");  // tags are lower case
}

TEST(Scoring, Exact) {
  check_table(expect("exact", ""), {
                                       {"Paris", "Paris", true, "Paris"},
                                       {"  Paris\n", "Paris", true, "Paris"},
                                       {"Paris", " Paris ", true, "Paris"},
                                       {"paris", "Paris", false, "paris"},
                                       {"Paris.", "Paris", false, "Paris."},
                                       {"<think>Lyon?</think>\nParis", "Paris", true, "Paris"},
                                       {"hmm</think>Paris", "Paris", true, "Paris"},
                                       {"", "Paris", false, ""},
                                       {"42", "42.0", false, "42"},
                                   });
}

TEST(Scoring, Normalized) {
  check_table(expect("normalized", ""),
              {
                  {"The Eiffel Tower.", "eiffel tower", true, "The Eiffel Tower."},
                  {"  PARIS  ", "paris", true, "PARIS"},
                  {"an apple", "Apple", true, "an apple"},
                  {"**Paris**", "Paris", true, "**Paris**"},
                  {"New   York\ncity", "new york city", true, "New   York\ncity"},
                  {"the theater", "Theater", true, "the theater"},
                  {"(b)", "B", true, "(b)"},
                  {"Paris!", "paris", true, "Paris!"},
                  {"Paris, France", "Paris", false, "Paris, France"},
                  {"Lyon", "Paris", false, "Lyon"},
                  {"-5", "5", false, "-5"},  // a sign is not edge punctuation
              });
  EXPECT_EQ(normalize_answer("  \"The  Eiffel\tTower.\"  "), "eiffel tower");
  EXPECT_EQ(normalize_answer("A"), "");
  EXPECT_EQ(normalize_answer("U.S.A."), "u.s.a");
}

TEST(Scoring, RelaxedNumeric) {
  check_table(expect("relaxed_numeric", ""),
              {
                  {"The answer is 42.", "42.0", true, "42"},
                  {"4.9", "5", true, "4.9"},    // 2 %
                  {"5.3", "5", false, "5.3"},   // 6 %
                  {"5.25", "5", true, "5.25"},  // exactly 5 %
                  {"5.26", "5", false, "5.26"},
                  {"12%", "12", true, "12%"},
                  {"1,234", "1234", true, "1,234"},
                  {"1234", "1,234", true, "1234"},
                  {"$1,200", "1200", true, "$1,200"},
                  {"-3.5", "-3.5", true, "-3.5"},
                  {"-3.5", "3.5", false, "-3.5"},
                  {"The change was -20 points", "-20", true, "-20"},
                  {"0", "0", true, "0"},
                  {"0.01", "0", false, "0.01"},
                  {"<think>7</think>8", "8", true, "8"},
                  {"<think>7</think>8", "7", false, "8"},
                  {"about 100 apples", "95", false, "100"},  // 5.3 %
                  {"about 100 apples", "96", true, "100"},   // 4.2 %
                  {"v1.2 gives 3", "3", true, "3"},          // "v1.2" is not a number
                  {"Yes", "yes", true, "Yes"},               // non-numeric: normalized
                  {"No", "yes", false, "No"},
                  {"I don't know", "42", false, "I don't know"},
              });
}

TEST(Scoring, ParseNumber) {
  EXPECT_EQ(parse_number("1,234.5"), 1234.5);
  EXPECT_EQ(parse_number("-$5"), -5.0);
  EXPECT_EQ(parse_number("$-5"), -5.0);
  EXPECT_EQ(parse_number(" 12% "), 12.0);
  EXPECT_EQ(parse_number(".5"), 0.5);
  EXPECT_EQ(parse_number("+3"), 3.0);
  EXPECT_EQ(parse_number("1,234,567"), 1234567.0);
  EXPECT_FALSE(parse_number("1,23"));
  EXPECT_FALSE(parse_number("1234,567"));
  EXPECT_FALSE(parse_number("12 apples"));
  EXPECT_FALSE(parse_number(""));
  EXPECT_FALSE(parse_number("$"));
  EXPECT_FALSE(parse_number("1e5"));
}

TEST(Scoring, Regex) {
  Expectation group = expect("regex", "");
  group.pattern = R"(answer: (\w+))";
  check_table(group, {
                         {"The answer: Paris", "paris", true, "Paris"},
                         {"answer: Lyon", "Paris", false, "Lyon"},
                         {"no answer here", "Paris", false, ""},
                         {"<think>answer: Lyon</think>answer: Paris", "Paris", true, "Paris"},
                         {"answer: A, then answer: B", "B", false, "A"},  // first match
                         {"Answer: Paris", "Paris", false, ""},  // the pattern is case-sensitive
                     });
  Expectation whole = expect("regex", "");
  whole.pattern = "[0-9]+";
  check_table(whole, {
                         {"I count 17 sheep", "17", true, "17"},
                         {"none", "17", false, ""},
                     });
  Expectation optional_group = expect("regex", "");
  optional_group.pattern = "(x)?[0-9]+";
  check_table(optional_group, {{"17", "17", true, "17"}, {"x17", "x", true, "x"}});
  Expectation boxed = expect("regex", "");
  boxed.pattern = R"(\\boxed\{([^}]*)\})";
  check_table(boxed, {{R"(so \boxed{The Answer}.)", "answer", true, "The Answer"}});
}

TEST(Scoring, Choice) {
  Expectation e = expect("choice", "");
  e.choices = {"A", "B", "C", "D"};
  check_table(e, {
                     {"I think (C) is right", "C", true, "C"},
                     {"Answer: b", "B", true, "B"},
                     {"B", "B", true, "B"},
                     {"b", "B", true, "B"},
                     {"**D**", "d", true, "D"},
                     {"The answer is (A).", "A", true, "A"},
                     {"A) Paris", "A", true, "A"},
                     {"C. because the others are wrong", "B", false, "C"},
                     {"The answer is a bit unclear, but (B)", "B", true, "B"},
                     {"Option (A) is wrong; the answer is D", "D", true, "D"},
                     {"The answer is A. No, the final answer: C", "C", true, "C"},
                     {"<think>Answer: A</think>Answer: B", "B", true, "B"},
                     {"The correct answer is option C", "C", true, "C"},
                     {"I have no idea", "A", false, ""},
                     {"The answer is E", "A", false, ""},
                 });
  Expectation numbered = expect("choice", "2");
  numbered.choices = {"1", "2", "3"};
  EXPECT_EQ(score_answer(numbered, "Answer: 2"), (Score{true, "2", "choice"}));
  EXPECT_EQ(score_answer(numbered, "Answer: 23"), (Score{false, "", "choice"}));
}

TEST(Scoring, LongOutputsAreScoredOnTheirLastQuarterMebibyte) {
  // std::regex recurses once per character it consumes: a 30 KB one-line output against
  // /(.*)/ overflowed the main stack (SIGSEGV at the end of `dyno run`).
  Expectation whole_line = expect("regex", "");
  whole_line.pattern = "answer: (.*)";
  const std::string line(200000, 'x');
  EXPECT_EQ(score_answer(whole_line, "answer: " + line).extracted, line);
  // Only the last 256 KiB are read: here they start inside the line.
  EXPECT_EQ(score_answer(whole_line, "answer: " + line + line).extracted, "");
  whole_line.answer = "42";
  EXPECT_EQ(score_answer(whole_line, std::string(1 << 20, '.') + "\nanswer: 42"),
            (Score{true, "42", "regex"}));
  Expectation choice = expect("choice", "B");
  choice.choices = {"A", "B"};
  EXPECT_EQ(score_answer(choice, std::string(1 << 20, '*')), (Score{false, "", "choice"}));
  EXPECT_EQ(score_answer(choice, std::string(1 << 20, ' ') + "The answer is (B)"),
            (Score{true, "B", "choice"}));
  // An answer only before the last 256 KiB is not read.
  EXPECT_EQ(score_answer(choice, "The answer is (B)" + std::string(300000, '.')),
            (Score{false, "", "choice"}));
}

TEST(Scoring, InvalidExpectations) {
  EXPECT_TRUE(is_known_scorer("relaxed_numeric"));
  EXPECT_FALSE(is_known_scorer("fuzzy"));
  EXPECT_THROW(score_answer(expect("fuzzy", "x"), "x"), std::invalid_argument);
  Expectation bad_regex = expect("regex", "x");
  EXPECT_THROW(score_answer(bad_regex, "x"), std::invalid_argument);  // empty pattern
  bad_regex.pattern = "(";
  EXPECT_THROW(score_answer(bad_regex, "x"), std::invalid_argument);
  // A choice expectation that cannot be met is scored, never correct.
  Expectation choice = expect("choice", "E");
  EXPECT_EQ(score_answer(choice, "E"), (Score{false, "", "choice"}));  // no choices
  choice.choices = {"A", "B", ""};
  EXPECT_EQ(score_answer(choice, "Answer: B"), (Score{false, "B", "choice"}));
}

}  // namespace
}  // namespace dyno::workload
