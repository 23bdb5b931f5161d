#include "sim/tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dyno::sim {
namespace {

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (const Token& t : tokenize(text)) out.push_back(t.piece);
  return out;
}

std::string join(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) out += t.piece;
  return out;
}

TEST(Tokenizer, Rules) {
  EXPECT_EQ(pieces("Hello world"), (std::vector<std::string>{"Hello", " world"}));
  EXPECT_EQ(pieces("internationalization"),
            (std::vector<std::string>{"intern", "ationa", "lizati", "on"}));
  EXPECT_EQ(pieces(" abcdefgh"), (std::vector<std::string>{" abcdef", "gh"}));
  EXPECT_EQ(pieces("x=42;"), (std::vector<std::string>{"x", "=", "4", "2", ";"}));
  EXPECT_EQ(pieces("a  b"), (std::vector<std::string>{"a", " ", " b"}));
  EXPECT_EQ(pieces("a\n\nb"), (std::vector<std::string>{"a", "\n\n", "b"}));
  EXPECT_EQ(pieces("a \n b"), (std::vector<std::string>{"a", " \n", " b"}));
  EXPECT_EQ(pieces("end. "), (std::vector<std::string>{"end", ".", " "}));
  EXPECT_EQ(pieces(" 7"), (std::vector<std::string>{" ", "7"}));
  EXPECT_TRUE(tokenize("").empty());
}

TEST(Tokenizer, Utf8) {
  // é (2 bytes), € (3 bytes), 😀 (4 bytes): one token each; letters around them split off.
  EXPECT_EQ(pieces("caf\xC3\xA9 \xE2\x82\xAC\xF0\x9F\x98\x80"),
            (std::vector<std::string>{"caf", "\xC3\xA9", " ", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}));
  // Invalid: a lone continuation byte, a truncated sequence, an overlong encoding.
  EXPECT_EQ(pieces("\x80"
                   "a\xE2\x82"),
            (std::vector<std::string>{"\x80", "a", "\xE2", "\x82"}));
  EXPECT_EQ(pieces("\xC0\xAF"), (std::vector<std::string>{"\xC0", "\xAF"}));
}

TEST(Tokenizer, RoundTripAndCount) {
  const std::vector<std::string> texts = {
      "The quick brown fox jumps over the lazy dog, 1234 times!\n\n\tIndented  text.",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E mixed with English and \xFF bytes",
      "    leading spaces and trailing   ", "supercalifragilisticexpialidocious"};
  for (const std::string& text : texts) {
    const auto tokens = tokenize(text);
    EXPECT_EQ(join(tokens), text);
    EXPECT_EQ(count_tokens(text), tokens.size());
    for (const Token& t : tokens) {
      EXPECT_EQ(t.id, token_id(t.piece));
      EXPECT_GE(t.id, 0);
      EXPECT_LT(t.id, kVocabularyIds);
    }
  }
}

TEST(Tokenizer, StableIds) {
  // FNV-1a 64 of "hello" is 0xA430D84680AABD0B; mod 50000.
  EXPECT_EQ(token_id("hello"), static_cast<std::int32_t>(0xA430D84680AABD0Bull % 50000));
  EXPECT_EQ(tokenize(" world")[0].id, token_id(" world"));
}

TEST(Tokenizer, OutputPiecesTokenizeBackExactly) {
  for (std::uint64_t seed : {0ull, 1ull, 42ull, 0xFFFFFFFFFFFFull}) {
    std::string text;
    std::vector<std::string> expected;
    for (std::uint64_t i = 0; i < 2000; ++i) {
      const std::string piece = output_piece(seed, i);
      ASSERT_GE(piece.size(), 2u);
      ASSERT_LE(piece.size(), 7u);
      ASSERT_EQ(piece[0], ' ');
      expected.push_back(piece);
      text += piece;
    }
    EXPECT_EQ(pieces(text), expected);
    EXPECT_EQ(count_tokens(text), expected.size());
    std::string appended;
    append_output_pieces(appended, seed, 0, 2000);
    EXPECT_EQ(appended, text);
  }
  EXPECT_EQ(output_piece(7, 3), output_piece(7, 3));
  // Different seeds give different texts.
  std::string a, b;
  append_output_pieces(a, 1, 0, 50);
  append_output_pieces(b, 2, 0, 50);
  EXPECT_NE(a, b);
}

TEST(Tokenizer, ChatTemplate) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi there"}};
  const std::string text = apply_chat_template(messages);
  EXPECT_EQ(text, "<|system|>\nBe brief.<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\n");
  // Markup: 12 tokens per message, 7 for the generation prompt.
  const std::size_t content = count_tokens("Be brief.") + count_tokens("Hi there");
  EXPECT_EQ(count_tokens(text), content + 2 * 12 + 7);
  EXPECT_EQ(count_tokens(apply_chat_template(messages, false)), content + 2 * 12);
  EXPECT_EQ(count_tokens(apply_chat_template(messages, true, 5)), content + 2 * 17 + 7);
}

}  // namespace
}  // namespace dyno::sim
