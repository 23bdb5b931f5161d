#include "sim/tokenizer.h"

#include <array>

namespace dyno::sim {
namespace {

constexpr std::size_t kMaxLetterChunk = 6;

// Common English words of at most 6 letters: the output vocabulary. Order is part of the
// determinism contract (changing it changes every generated text).
constexpr std::array<std::string_view, 312> kWords = {
    "the",    "of",     "and",    "to",     "in",     "is",     "you",    "that",   "it",
    "he",     "was",    "for",    "on",     "are",    "as",     "with",   "his",    "they",
    "at",     "be",     "this",   "have",   "from",   "or",     "one",    "had",    "by",
    "word",   "but",    "not",    "what",   "all",    "were",   "we",     "when",   "your",
    "can",    "said",   "there",  "use",    "an",     "each",   "which",  "she",    "do",
    "how",    "their",  "if",     "will",   "up",     "other",  "about",  "out",    "many",
    "then",   "them",   "these",  "so",     "some",   "her",    "would",  "make",   "like",
    "him",    "into",   "time",   "has",    "look",   "two",    "more",   "write",  "go",
    "see",    "number", "no",     "way",    "could",  "people", "my",     "than",   "first",
    "water",  "been",   "call",   "who",    "oil",    "its",    "now",    "find",   "long",
    "down",   "day",    "did",    "get",    "come",   "made",   "may",    "part",   "over",
    "new",    "sound",  "take",   "only",   "little", "work",   "know",   "place",  "year",
    "live",   "me",     "back",   "give",   "most",   "very",   "after",  "thing",  "our",
    "just",   "name",   "good",   "man",    "think",  "say",    "great",  "where",  "help",
    "line",   "differ", "turn",   "cause",  "much",   "mean",   "before", "move",   "right",
    "boy",    "old",    "too",    "same",   "tell",   "does",   "set",    "three",  "want",
    "air",    "well",   "also",   "play",   "small",  "end",    "put",    "home",   "read",
    "hand",   "port",   "large",  "spell",  "add",    "even",   "land",   "here",   "must",
    "big",    "high",   "such",   "follow", "act",    "why",    "ask",    "men",    "change",
    "went",   "light",  "kind",   "off",    "need",   "house",  "try",    "us",     "again",
    "animal", "point",  "mother", "world",  "near",   "build",  "self",   "earth",  "father",
    "head",   "stand",  "own",    "page",   "should", "found",  "answer", "school", "grow",
    "study",  "still",  "learn",  "plant",  "cover",  "food",   "sun",    "four",   "state",
    "keep",   "eye",    "never",  "last",   "let",    "though", "tree",   "cross",  "farm",
    "hard",   "start",  "might",  "story",  "saw",    "far",    "sea",    "draw",   "left",
    "late",   "run",    "while",  "press",  "close",  "night",  "real",   "life",   "few",
    "north",  "open",   "seem",   "next",   "white",  "begin",  "got",    "walk",   "ease",
    "paper",  "group",  "always", "music",  "those",  "both",   "mark",   "often",  "letter",
    "until",  "mile",   "river",  "car",    "feet",   "care",   "second", "book",   "carry",
    "took",   "rain",   "eat",    "room",   "friend", "began",  "idea",   "fish",   "once",
    "base",   "hear",   "horse",  "cut",    "sure",   "watch",  "color",  "face",   "wood",
    "main",   "enough", "plain",  "girl",   "usual",  "young",  "ready",  "above",  "ever",
    "red",    "list",   "feel",   "talk",   "bird",   "soon",   "body",   "dog",    "family",
    "direct", "pose",   "leave",  "song",   "fast",   "model",  "token",  "engine", "batch",
    "cache",  "stream", "queue",  "signal", "vector", "matrix",
};

bool is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Length of the UTF-8 code point starting at text[i] (i < text.size(), text[i] >= 0x80), or 1
// when the bytes there are not a valid (shortest-form) UTF-8 sequence.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  std::size_t len = 0;
  std::uint32_t min_cp = 0;
  std::uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1Fu;
    min_cp = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0Fu;
    min_cp = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07u;
    min_cp = 0x10000;
  } else {
    return 1;
  }
  if (i + len > text.size()) return 1;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0u) != 0x80u) return 1;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 1;
  return len;
}

// Calls emit(begin, length) for each piece of `text`, in order.
template <typename Emit>
void split(std::string_view text, Emit&& emit) {
  const std::size_t n = text.size();
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  while (i < n) {
    const unsigned char c = at(i);
    const bool space_then_letter = c == ' ' && i + 1 < n && is_letter(at(i + 1));
    if (is_letter(c) || space_then_letter) {
      std::size_t j = space_then_letter ? i + 1 : i;
      std::size_t start = i;
      while (j < n && is_letter(at(j))) {
        std::size_t chunk_end = j;
        while (chunk_end < n && chunk_end - j < kMaxLetterChunk && is_letter(at(chunk_end))) {
          ++chunk_end;
        }
        emit(start, chunk_end - start);
        start = chunk_end;
        j = chunk_end;
      }
      i = j;
    } else if (is_space(c)) {
      std::size_t j = i;
      while (j < n && is_space(at(j))) ++j;
      // A final single space before letters belongs to the letter run.
      if (j < n && is_letter(at(j)) && at(j - 1) == ' ' && j - 1 > i) --j;
      emit(i, j - i);
      i = j;
    } else if (c < 0x80) {
      emit(i, 1);  // digit, punctuation or control character
      ++i;
    } else {
      const std::size_t len = utf8_length(text, i);
      emit(i, len);
      i += len;
    }
  }
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string_view output_word(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t h = splitmix64(splitmix64(seed) ^ (i * 0xD1B54A32D192ED03ull));
  return kWords[h % kWords.size()];
}

void append_role(std::string& out, std::string_view role) {
  out += "<|";
  out += role;
  out += "|>\n";
}

}  // namespace

std::int32_t token_id(std::string_view piece) {
  std::uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a 64
  for (const char ch : piece) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001B3ull;
  }
  return static_cast<std::int32_t>(h % static_cast<std::uint64_t>(kVocabularyIds));
}

std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  split(text, [&](std::size_t begin, std::size_t length) {
    const std::string_view piece = text.substr(begin, length);
    tokens.push_back(Token{token_id(piece), std::string(piece)});
  });
  return tokens;
}

std::size_t count_tokens(std::string_view text) {
  std::size_t count = 0;
  split(text, [&](std::size_t, std::size_t) { ++count; });
  return count;
}

std::string output_piece(std::uint64_t seed, std::uint64_t i) {
  std::string out;
  append_output_piece(out, seed, i);
  return out;
}

void append_output_piece(std::string& out, std::uint64_t seed, std::uint64_t i) {
  out += ' ';
  out += output_word(seed, i);
}

void append_output_pieces(std::string& out, std::uint64_t seed, std::uint64_t first,
                          std::uint64_t count) {
  for (std::uint64_t i = first; i < first + count; ++i) append_output_piece(out, seed, i);
}

std::string apply_chat_template(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, std::int64_t extra_tokens_per_message) {
  std::string out;
  for (const ChatMessage& message : messages) {
    append_role(out, message.role);
    if (extra_tokens_per_message > 0) {
      out.append(static_cast<std::size_t>(extra_tokens_per_message), '~');
    }
    out += message.content;
    out += "<|end|>\n";
  }
  if (add_generation_prompt) append_role(out, "assistant");
  return out;
}

}  // namespace dyno::sim
