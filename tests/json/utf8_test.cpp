#include "json/utf8.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "json/json_text.h"

namespace {

using dyno::utf8::is_valid;
using dyno::utf8::make_valid;

constexpr const char* R = "\xEF\xBF\xBD";  // U+FFFD

/// make_valid's text and the number of bytes it replaced.
std::pair<std::string, std::size_t> fixed(const std::string& in) {
  std::size_t n = 0;
  std::string out = make_valid(in, &n);
  return {out, n};
}

TEST(Utf8, WellFormedTextIsKeptAsItIs) {
  for (const std::string& s : {std::string(""), std::string("plain ASCII"),
                               std::string("caf\xC3\xA9"),             // 2 bytes
                               std::string("\xE2\x82\xAC 20"),         // 3 bytes (euro)
                               std::string("\xF0\x9F\x98\x80 smile"),  // 4 bytes (U+1F600)
                               std::string("\xF4\x8F\xBF\xBF"),        // U+10FFFF, the last
                               std::string("\xED\x9F\xBF"),            // U+D7FF, below surrogates
                               std::string("\xEE\x80\x80"),            // U+E000, above them
                               std::string("nul\0byte", 8), std::string("\x1b[31m")}) {
    EXPECT_TRUE(is_valid(s)) << s;
    EXPECT_EQ(fixed(s), std::make_pair(s, std::size_t{0})) << s;
  }
}

TEST(Utf8, ATruncatedSequenceIsOneReplacement) {
  EXPECT_EQ(fixed("ab\xC3"), std::make_pair(std::string("ab") + R, std::size_t{1}));
  EXPECT_EQ(fixed("\xE2\x82x"), std::make_pair(std::string(R) + "x", std::size_t{2}));
  EXPECT_EQ(fixed("\xF0\x9F\x98"), std::make_pair(std::string(R), std::size_t{3}));
  // A 4-byte sequence cut by the end of a token event and followed by the next one.
  EXPECT_EQ(fixed("\xF0\x9F\x98 \xF0\x9F\x98\x80"),
            std::make_pair(std::string(R) + " \xF0\x9F\x98\x80", std::size_t{3}));
  EXPECT_FALSE(is_valid("\xE2\x82"));
}

TEST(Utf8, StrayContinuationBytesAreEachReplaced) {
  EXPECT_EQ(fixed("\x80\xBF"), std::make_pair(std::string(R) + R, std::size_t{2}));
  EXPECT_EQ(fixed("a\x80"
                  "b"),
            std::make_pair(std::string("a") + R + "b", std::size_t{1}));
}

TEST(Utf8, OverlongFormsAreRejected) {
  // "/" as 2, 3 and 4 bytes; NUL as C0 80 (modified UTF-8).
  for (const char* raw : {"\xC0\xAF", "\xE0\x80\xAF", "\xF0\x80\x80\xAF", "\xC1\xBF", "\xC0\x80"}) {
    const std::string s = raw;
    EXPECT_FALSE(is_valid(s)) << s.size();
    const auto [out, n] = fixed(s);
    EXPECT_EQ(n, s.size());
    EXPECT_EQ(out.find('/'), std::string::npos);
    EXPECT_TRUE(is_valid(out));
  }
  // C0 and C1 can start nothing: each byte is its own replacement (two for C0 AF).
  EXPECT_EQ(fixed("\xC0\xAF").first, std::string(R) + R);
  // E0 80: the second byte is out of E0's range, so E0 alone is the maximal subpart.
  EXPECT_EQ(fixed("\xE0\x80\xAF").first, std::string(R) + R + R);
}

TEST(Utf8, SurrogatesAreRejected) {
  // U+D800, U+DBFF, U+DC00, U+DFFF in the CESU/WTF-8 form; a pair as two 3-byte halves.
  for (const char* raw : {"\xED\xA0\x80", "\xED\xAF\xBF", "\xED\xB0\x80", "\xED\xBF\xBF",
                          "\xED\xA0\xBD\xED\xB8\x80"}) {
    const std::string s = raw;
    EXPECT_FALSE(is_valid(s));
    const auto [out, n] = fixed(s);
    EXPECT_EQ(n, s.size());
    EXPECT_TRUE(is_valid(out));
  }
  EXPECT_EQ(fixed("\xED\xA0\x80").first, std::string(R) + R + R);  // ED, then two strays
}

TEST(Utf8, FiveAndSixByteFormsAndBytesBeyondU10FFFFAreRejected) {
  // The 5- and 6-byte forms of the original UTF-8 (F8.., FC..), FE/FF, and F4 90 (U+110000).
  for (const char* raw : {"\xF8\x88\x80\x80\x80", "\xFC\x84\x80\x80\x80\x80", "\xFE", "\xFF",
                          "\xF4\x90\x80\x80", "\xF5\x80\x80\x80"}) {
    const std::string s = raw;
    EXPECT_FALSE(is_valid(s));
    const auto [out, n] = fixed(s);
    EXPECT_EQ(n, s.size());
    EXPECT_TRUE(is_valid(out));
    EXPECT_EQ(out.size() % 3, 0u);  // only replacement characters are left
  }
}

TEST(Utf8, InPlaceCountsAndRepairs) {
  std::string s = "ok \xFF\xFE then \xC3\xA9";
  EXPECT_EQ(dyno::utf8::make_valid_in_place(s), 2u);
  EXPECT_EQ(s, std::string("ok ") + R + R + " then \xC3\xA9");
  EXPECT_EQ(dyno::utf8::make_valid_in_place(s), 0u);
}

TEST(Utf8, TheJsonTextFormWritesOnlyValidUtf8AndCountsWhatItReplaced) {
  namespace json = boost::json;
  json::object o;
  o["text"] = json::string(std::string("bad \xC3 and \xFF"));
  o[std::string("key\xFE")] = "fine";
  o["list"] = json::array{json::string(std::string("\xED\xA0\x80"))};
  dyno::json_text::WriteStats stats;
  const std::string compact = dyno::json_text::compact(o, &stats);
  EXPECT_EQ(stats.invalid_utf8_bytes, 1u + 1u + 1u + 3u);
  EXPECT_TRUE(is_valid(compact));
  boost::system::error_code ec;
  const json::value back = json::parse(compact, ec);  // Boost.JSON rejects invalid UTF-8
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(back.at("text").as_string(), std::string("bad ") + R + " and " + R);
  dyno::json_text::WriteStats pretty_stats;
  EXPECT_TRUE(is_valid(dyno::json_text::pretty(o, &pretty_stats)));
  EXPECT_EQ(pretty_stats.invalid_utf8_bytes, stats.invalid_utf8_bytes);
  EXPECT_EQ(dyno::json_text::compact(o), compact);  // no stats asked: the same text
}

}  // namespace
