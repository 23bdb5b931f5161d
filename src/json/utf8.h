// UTF-8 well-formedness (Unicode 15, §3.9, Table 3-7): what every string dyno writes must be.
// A server can send any bytes (streamed text, error bodies, identity answers), and so can a
// flag or a file; the JSON text form (json_text.h) passes every string through
// make_valid_utf8, so a record dyno writes always parses as JSON and always verifies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dyno::utf8 {

/// U+FFFD REPLACEMENT CHARACTER, as UTF-8.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// True when `text` is well-formed UTF-8: no truncated sequence, no overlong form, no
/// surrogate (U+D800..U+DFFF), nothing above U+10FFFF, no 5- or 6-byte form, no stray
/// continuation byte. NUL and other control characters are well-formed.
bool is_valid(std::string_view text);

/// `text` with every ill-formed sequence replaced by U+FFFD, one per *maximal subpart*
/// (the W3C/WHATWG and Unicode-recommended practice: a truncated sequence is one
/// replacement; each byte that cannot start a sequence is one). Adds the number of bytes
/// replaced to `*replaced_bytes` when given. Well-formed text is returned unchanged.
std::string make_valid(std::string_view text, std::size_t* replaced_bytes = nullptr);

/// In place; returns the number of bytes replaced (0: the text was well-formed).
std::size_t make_valid_in_place(std::string& text);

/// The length of the well-formed sequence that starts at `text[0]` (1 to 4), or 0 when the
/// bytes there are ill-formed; `*bad_length` (when given) is then the length of the maximal
/// subpart to replace (at least 1). `text` must not be empty.
std::size_t sequence_length(std::string_view text, std::size_t* bad_length = nullptr);

/// The code point of a well-formed sequence of `length` bytes (from sequence_length).
std::uint32_t decode(std::string_view text, std::size_t length);

}  // namespace dyno::utf8
