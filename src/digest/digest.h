// SHA-256 and base64 for all of dyno, over OpenSSL's libcrypto: every hash a record, a stream,
// a board or the simulated engine writes, and every base64 text dyno reads or writes, goes
// through these functions, so one hash is one computation and one base64 is one rule.
//
// SHA-256 is OpenSSL's (EVP_sha256), written as 64 lowercase hex digits.
//
// Base64 is RFC 4648 section 4 (the standard alphabet "A-Z a-z 0-9 + /", '=' padding, no line
// breaks). Encoding is OpenSSL's EVP_EncodeBlock, whose output is canonical. Decoding is
// strict, and the strictness is dyno's: EVP_DecodeBlock alone trims whitespace, decodes a '='
// anywhere as zero bits and ignores the bits after the last byte, so base64_decode first checks
// that the text is canonical base64 and only then lets EVP_DecodeBlock turn it into bytes.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "error/error.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX; its header stays in digest.cpp

namespace dyno::digest {

/// A file sha256_hex_file could not open or read (kind io). The message names the file and
/// the system's reason: "cannot read <file>: <reason>".
class FileError : public Error {
 public:
  FileError(const std::filesystem::path& file, const std::string& reason)
      : Error(ErrorKind::io, "cannot read " + file.string() + ": " + reason), file_(file) {}

  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  std::filesystem::path file_;
};

/// SHA-256 of `bytes`, 64 lowercase hex digits. A failure inside OpenSSL (it cannot allocate
/// its context) throws dyno::Error of kind internal, as every function here does.
std::string sha256_hex(std::string_view bytes);

/// SHA-256 of the contents of `file`, read in pieces (a file of any size, never held whole).
/// Throws FileError when the file cannot be opened or a read fails (a directory included).
std::string sha256_hex_file(const std::filesystem::path& file);

/// SHA-256 of bytes given in pieces: update(a); update(b); hex_final() equals
/// sha256_hex(a + b). hex_final() starts the hasher over, so it can hash another input.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  /// The SHA-256 of every byte given since construction (or the last hex_final()), 64
  /// lowercase hex digits; the hasher is then empty again.
  std::string hex_final();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

/// `bytes` as base64: the standard alphabet, '=' padding to a multiple of 4, no line breaks
/// (empty for empty input). Canonical: base64_decode gives `bytes` back.
std::string base64_encode(std::string_view bytes);

/// The bytes of canonical base64 `text`; nullopt when `text` is anything else:
/// - a character outside the standard alphabet (whitespace, line breaks, the URL-safe '-' and
///   '_', a '=' before the end);
/// - a length that is not a multiple of 4, or padding that is not what the last group needs
///   (one '=' after 3 characters, two after 2; never three);
/// - bits after the last byte that are not zero ("QR==": a second encoding of "QQ==").
/// The empty text is the empty string. `padding_optional`: the last group may also leave its
/// '=' off ("QQ" as "QQ=="); padding that is there must still be whole ("QQ=" is refused), and
/// a last group of one character never encodes a byte, so it is refused either way.
std::optional<std::string> base64_decode(std::string_view text, bool padding_optional = false);

}  // namespace dyno::digest
