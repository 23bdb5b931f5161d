// Deterministic built-in tokenizer of the simulated engine, its output vocabulary and its chat
// template. Everything here is a pure function of its arguments (no global state), so the
// client-side token counts of tests and the server's usage figures agree exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dyno::sim {

/// Size of the id space: Token::id is in [0, kVocabularyIds).
inline constexpr std::int32_t kVocabularyIds = 50000;

struct Token {
  std::int32_t id = 0;  ///< fnv1a64(piece) % kVocabularyIds (stable across platforms/runs)
  std::string piece;    ///< the exact bytes of the text this token covers
};

/// Splits `text` into pieces; concatenating the pieces gives back `text` exactly. Rules, applied
/// left to right:
///  (a) an optional single space followed by a run of ASCII letters is split into chunks of at
///      most 6 letters; the space belongs to the first chunk (" hello" is one token);
///  (b) each ASCII digit is a token of its own;
///  (c) each other printable ASCII character (punctuation) and each ASCII control character
///      that is not whitespace is a token of its own;
///  (d) a run of whitespace (space, \t, \n, \r, \v, \f) is one token, except that a final
///      single space directly before a letter run goes with that run (rule a);
///  (e) each non-ASCII UTF-8 code point is a token of its own; a byte that does not start a
///      valid UTF-8 sequence is a token of its own.
std::vector<Token> tokenize(std::string_view text);
/// tokenize(text).size(), without building the pieces.
std::size_t count_tokens(std::string_view text);
/// The id of one piece: fnv1a64(piece) % kVocabularyIds.
std::int32_t token_id(std::string_view piece);

/// The i-th generated output piece of a sequence with the given seed: " " + a word of 1..6
/// lowercase letters from a fixed vocabulary. Any concatenation of output pieces tokenizes
/// back into exactly those pieces (each is one rule-(a) token).
std::string output_piece(std::uint64_t seed, std::uint64_t i);
/// Appends output_piece(seed, i) to `out` without a temporary string.
void append_output_piece(std::string& out, std::uint64_t seed, std::uint64_t i);
/// Appends output pieces [first, first + count) of `seed` to `out`.
void append_output_pieces(std::string& out, std::uint64_t seed, std::uint64_t first,
                          std::uint64_t count);

struct ChatMessage {
  std::string role;
  std::string content;
};

/// The chat template: for each message "<|role|>\n" + extra_tokens_per_message × "~" +
/// content + "<|end|>\n", then, when add_generation_prompt, "<|assistant|>\n". The markup
/// itself costs 12 tokens per message plus 7 for the generation prompt ("assistant" is two letter
/// chunks) (for roles of at most 6 letters); `extra_tokens_per_message`
/// (Profile::chat_template_tokens) adds that many single-token filler characters per message to
/// model heavier templates. Chat prompt tokens are count_tokens(apply_chat_template(...)).
std::string apply_chat_template(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt = true,
                                std::int64_t extra_tokens_per_message = 0);

}  // namespace dyno::sim
