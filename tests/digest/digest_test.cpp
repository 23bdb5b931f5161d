// digest/: SHA-256 against published vectors (FIPS 180-2 examples), files, base64 against
// RFC 4648's vectors, and every kind of base64 text that is not canonical refused.
#include "digest/digest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "temp_dir.h"

namespace dyno::digest {
namespace {

constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kTwoBlocks =
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
constexpr const char* kMillionA =
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

/// Bytes 0..255 repeated, then a simple generator: every byte value, deterministic.
std::string some_bytes(std::size_t n) {
  std::string out(n, '\0');
  std::uint32_t x = 2463534242u;
  for (std::size_t i = 0; i < n; ++i) {
    if (i < 256) {
      out[i] = static_cast<char>(i);
      continue;
    }
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    out[i] = static_cast<char>(x & 0xffu);
  }
  return out;
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

TEST(Digest, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), kEmpty);
  EXPECT_EQ(sha256_hex("abc"), kAbc);
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), kTwoBlocks);
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')), kMillionA);  // a 1 MB input
  EXPECT_EQ(sha256_hex(std::string_view("a\0b", 3)), sha256_hex(std::string("a\0b", 3)));
  EXPECT_NE(sha256_hex(std::string_view("a\0b", 3)), sha256_hex("a"));  // bytes, not C strings
}

TEST(Digest, IncrementalEqualsOneShot) {
  Sha256 empty;
  EXPECT_EQ(empty.hex_final(), kEmpty);

  Sha256 abc;
  abc.update("a");
  abc.update("");
  abc.update("bc");
  EXPECT_EQ(abc.hex_final(), kAbc);
  // hex_final starts over: the same hasher hashes the next input from nothing.
  abc.update("abc");
  EXPECT_EQ(abc.hex_final(), kAbc);

  Sha256 million;
  const std::string chunk(999, 'a');  // pieces that never line up with SHA-256's 64-byte blocks
  std::size_t given = 0;
  for (; given + chunk.size() <= 1'000'000; given += chunk.size()) million.update(chunk);
  million.update(std::string(1'000'000 - given, 'a'));
  EXPECT_EQ(million.hex_final(), kMillionA);

  const std::string bytes = some_bytes(100'003);
  for (const std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64},
                                std::size_t{65}, std::size_t{65'536}, bytes.size()}) {
    Sha256 h;
    h.update(std::string_view(bytes).substr(0, cut));
    h.update(std::string_view(bytes).substr(cut));
    EXPECT_EQ(h.hex_final(), sha256_hex(bytes)) << "cut at " << cut;
  }

  Sha256 moved_from;
  moved_from.update("ab");
  Sha256 moved = std::move(moved_from);
  moved.update("c");
  EXPECT_EQ(moved.hex_final(), kAbc);
}

TEST(Digest, FileHashEqualsTheHashOfItsBytes) {
  const dyno::testing::TempDir dir("dyno-digest-test");
  write_file(dir.path() / "empty", "");
  EXPECT_EQ(sha256_hex_file(dir.path() / "empty"), kEmpty);
  write_file(dir.path() / "abc", "abc");
  EXPECT_EQ(sha256_hex_file(dir.path() / "abc"), kAbc);
  // Larger than one read (64 KiB), not a multiple of it.
  const std::string bytes = some_bytes(3 * 65'536 + 17);
  write_file(dir.path() / "big.bin", bytes);
  EXPECT_EQ(sha256_hex_file(dir.path() / "big.bin"), sha256_hex(bytes));
  write_file(dir.path() / "million", std::string(1'000'000, 'a'));
  EXPECT_EQ(sha256_hex_file(dir.path() / "million"), kMillionA);
}

TEST(Digest, AFileThatCannotBeReadIsAFileError) {
  const dyno::testing::TempDir dir("dyno-digest-test");
  const std::filesystem::path missing = dir.path() / "missing.bin";
  try {
    sha256_hex_file(missing);
    FAIL() << "no FileError";
  } catch (const FileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(e.file(), missing);
    EXPECT_EQ(std::string(e.what()),
              "cannot read " + missing.string() + ": " +
                  std::error_code(ENOENT, std::generic_category()).message());
  }
  // A directory opens but cannot be read: an error, never the hash of nothing.
  EXPECT_THROW(sha256_hex_file(dir.path()), FileError);
  // FileError is a dyno::Error: main maps it to its exit code like any other io error.
  EXPECT_THROW(sha256_hex_file(missing), dyno::Error);
}

TEST(Digest, Base64Rfc4648Vectors) {
  const std::pair<const char*, const char*> kVectors[] = {{"", ""},
                                                          {"f", "Zg=="},
                                                          {"fo", "Zm8="},
                                                          {"foo", "Zm9v"},
                                                          {"foob", "Zm9vYg=="},
                                                          {"fooba", "Zm9vYmE="},
                                                          {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, text] : kVectors) {
    EXPECT_EQ(base64_encode(bytes), text) << bytes;
    EXPECT_EQ(base64_decode(text), std::optional<std::string>(bytes)) << text;
    EXPECT_EQ(base64_decode(text, /*padding_optional=*/true), std::optional<std::string>(bytes))
        << text;
  }
  EXPECT_EQ(base64_encode(std::string("\x00\xff\x10", 3)), "AP8Q");
  EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");  // the last two letters of the alphabet
  EXPECT_EQ(base64_decode("+/8="), std::optional<std::string>("\xfb\xff"));
}

TEST(Digest, Base64RoundTrips) {
  const std::string bytes = some_bytes(1000);
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    const std::string_view in = std::string_view(bytes).substr(0, n);
    const std::string text = base64_encode(in);
    ASSERT_EQ(text.size(), (n + 2) / 3 * 4);
    ASSERT_EQ(base64_decode(text), std::optional<std::string>(in)) << n;
    std::string unpadded = text;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
    ASSERT_EQ(base64_decode(unpadded, /*padding_optional=*/true), std::optional<std::string>(in))
        << n;
  }
  // Longer than OpenSSL's pieces (3 MiB of bytes, 4 Mi characters), not a whole number of them.
  const std::string big = some_bytes((std::size_t{7} << 20) + 1);
  const std::string text = base64_encode(big);
  EXPECT_EQ(text.size(), (big.size() + 2) / 3 * 4);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(base64_decode(text), std::optional<std::string>(big));
}

TEST(Digest, Base64RefusesEveryNonCanonicalText) {
  const char* const kBadCharacter[] = {
      "Zm9v YmFy", "Zm9vYmFy\n", " Zm9v", "Zm9v\r\n", "Zm9-", "Zm9_", "Zm9*", "Zm\xc3\xa9",
  };
  for (const char* t : kBadCharacter) {
    EXPECT_EQ(base64_decode(t), std::nullopt) << t;
    EXPECT_EQ(base64_decode(t, true), std::nullopt) << t;
  }
  EXPECT_EQ(base64_decode(std::string_view("Zm\0v", 4)), std::nullopt);  // a NUL

  const char* const kBadLength[] = {"Z", "Zm9vY", "Zm9vYmFyZ", "=", "=="};
  for (const char* t : kBadLength) {
    EXPECT_EQ(base64_decode(t), std::nullopt) << t;
    EXPECT_EQ(base64_decode(t, true), std::nullopt) << t;
  }
  // Without padding, only when it is optional.
  EXPECT_EQ(base64_decode("Zg"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm8"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9vYg"), std::nullopt);

  const char* const kBadPadding[] = {
      "Zg=",       // padding not whole
      "Zg===",     // three '='
      "Z===",      // three '=' after one character
      "Zm8==",     // two '=' after three characters
      "Zm9v====",  // a group of padding alone
      "====",
  };
  for (const char* t : kBadPadding) {
    EXPECT_EQ(base64_decode(t), std::nullopt) << t;
    EXPECT_EQ(base64_decode(t, true), std::nullopt) << t;
  }

  const char* const kPaddingInTheMiddle[] = {"Zg==Zg==", "Zm=v", "Zm8=Zm9v", "=Zm9", "Z=g="};
  for (const char* t : kPaddingInTheMiddle) {
    EXPECT_EQ(base64_decode(t), std::nullopt) << t;
    EXPECT_EQ(base64_decode(t, true), std::nullopt) << t;
  }

  // Non-zero bits after the last byte: "Zh==" and "Zm9=" would decode to "f" and "fo" too.
  const char* const kTrailingBits[] = {"Zh==", "Zv==", "Zm9=", "Zm+=", "Zm9vYh==", "QR=="};
  for (const char* t : kTrailingBits) {
    EXPECT_EQ(base64_decode(t), std::nullopt) << t;
    std::string unpadded = t;
    while (unpadded.back() == '=') unpadded.pop_back();
    EXPECT_EQ(base64_decode(unpadded, true), std::nullopt) << unpadded;
  }
  // Their canonical forms decode.
  EXPECT_EQ(base64_decode("Zg=="), std::optional<std::string>("f"));
  EXPECT_EQ(base64_decode("QQ=="), std::optional<std::string>("A"));
}

}  // namespace
}  // namespace dyno::digest
