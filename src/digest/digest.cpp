#include "digest/digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

namespace dyno::digest {

namespace {

[[noreturn]] void openssl_failed(const char* what) {
  throw Error(ErrorKind::internal, std::string("SHA-256: OpenSSL's ") + what + " failed");
}

std::string to_hex(const unsigned char* bytes, unsigned n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2u * n);
  for (unsigned i = 0; i < n; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0fu]);
  }
  return out;
}

// The value of a base64 character in the standard alphabet; -1 for any other character,
// '=' included (padding is recognised by its place, never by this table).
int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// EVP_EncodeBlock and EVP_DecodeBlock take an int length: longer inputs go in pieces of whole
// groups (3 bytes, 4 characters).
constexpr std::size_t kEncodePiece = std::size_t{3} << 20;  // bytes, a multiple of 3
constexpr std::size_t kDecodePiece = std::size_t{4} << 20;  // characters, a multiple of 4

// Decodes `text` (whole groups of 4 checked characters, padding only in its last group) into
// out[at...]; the number of bytes written, padding's zero bytes included.
std::size_t decode_groups(std::string_view text, std::string& out, std::size_t at) {
  std::size_t written = 0;
  for (std::size_t i = 0; i < text.size(); i += kDecodePiece) {
    const std::size_t n = std::min(kDecodePiece, text.size() - i);
    const int got = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data() + at + written),
                                    reinterpret_cast<const unsigned char*>(text.data() + i),
                                    static_cast<int>(n));
    if (got < 0 || static_cast<std::size_t>(got) != n / 4 * 3) {
      throw Error(ErrorKind::internal, "base64: OpenSSL's EVP_DecodeBlock refused checked text");
    }
    written += static_cast<std::size_t>(got);
  }
  return written;
}

}  // namespace

// --- SHA-256 ---------------------------------------------------------------------------

void Sha256::Free::operator()(evp_md_ctx_st* ctx) const noexcept { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) openssl_failed("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
    openssl_failed("EVP_DigestInit_ex");
  }
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::string_view bytes) {
  if (bytes.empty()) return;
  if (!ctx_) openssl_failed("EVP_DigestUpdate (of a moved-from hasher)");
  if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) {
    openssl_failed("EVP_DigestUpdate");
  }
}

std::string Sha256::hex_final() {
  if (!ctx_) openssl_failed("EVP_DigestFinal_ex (of a moved-from hasher)");
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned n = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), md.data(), &n) != 1) openssl_failed("EVP_DigestFinal_ex");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
    openssl_failed("EVP_DigestInit_ex");
  }
  return to_hex(md.data(), n);
}

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md.data(), &n, EVP_sha256(), nullptr) != 1) {
    openssl_failed("EVP_Digest");
  }
  return to_hex(md.data(), n);
}

std::string sha256_hex_file(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw FileError(file, std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } const closer{fd};
  Sha256 hash;
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError(file, std::strerror(errno));
    }
    hash.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  }
  return hash.hex_final();
}

// --- base64 ----------------------------------------------------------------------------

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.resize((bytes.size() + 2) / 3 * 4 + 1);  // EVP_EncodeBlock writes a NUL after the text
  std::size_t at = 0;
  for (std::size_t i = 0; i < bytes.size(); i += kEncodePiece) {
    const std::size_t n = std::min(kEncodePiece, bytes.size() - i);
    const int got = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + at),
                                    reinterpret_cast<const unsigned char*>(bytes.data() + i),
                                    static_cast<int>(n));
    at += static_cast<std::size_t>(got);
  }
  out.resize(at);
  return out;
}

std::optional<std::string> base64_decode(std::string_view text, bool padding_optional) {
  // The padding: the '=' at the end, at most two; any other '=' fails the alphabet below.
  std::size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  const std::string_view data = text.substr(0, text.size() - pad);
  const std::size_t tail = data.size() % 4;  // characters in the last, partial group
  if (tail == 1) return std::nullopt;        // 6 bits: not a byte
  if (pad > 0 ? text.size() % 4 != 0 : tail != 0 && !padding_optional) return std::nullopt;
  for (const char c : data) {
    if (base64_value(c) < 0) return std::nullopt;
  }
  // The bits after the last byte: 4 of the last character of 2, 2 of the last of 3.
  if (tail != 0 && (base64_value(data.back()) & (tail == 2 ? 0x0f : 0x03)) != 0) {
    return std::nullopt;
  }

  const std::string_view whole = data.substr(0, data.size() - tail);
  std::string out;
  out.resize(whole.size() / 4 * 3 + (tail != 0 ? 3 : 0));
  std::size_t n = decode_groups(whole, out, 0);
  if (tail != 0) {
    std::array<char, 4> group{'=', '=', '=', '='};
    data.substr(whole.size()).copy(group.data(), tail);
    decode_groups(std::string_view(group.data(), group.size()), out, n);
    n += tail - 1;  // 2 characters: 1 byte, 3: 2 bytes; the rest is padding's zeros
  }
  out.resize(n);
  return out;
}

}  // namespace dyno::digest
