#include "digest/signing.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <iterator>
#include <system_error>

#include "digest/digest.h"

namespace dyno::digest {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kMaxKeyFile = 64 * 1024;

/// The bytes of a key file: a regular file, bounded (a device or a huge file is refused before
/// it is read).
std::string read_key_file(const fs::path& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (ec || !fs::exists(st)) throw KeyError(file.string() + ": no such file");
  if (!fs::is_regular_file(st)) throw KeyError(file.string() + ": not a regular file");
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec || size > kMaxKeyFile) {
    throw KeyError(file.string() + ": not a key file (larger than 64 KiB)");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw KeyError(file.string() + ": cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// OpenSSL's passphrase callback: never asks (a terminal prompt would hang a batch job).
int no_passphrase(char*, int, int, void*) { return -1; }

struct PkeyFree {
  void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct CtxFree {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

std::unique_ptr<BIO, BioFree> memory_bio(const std::string& bytes) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) throw Error(ErrorKind::internal, "Ed25519: OpenSSL's BIO_new_mem_buf failed");
  return bio;
}

/// The PEM label of the first block, e.g. "PRIVATE KEY"; "" without one.
std::string pem_label(const std::string& text) {
  constexpr std::string_view kBegin = "-----BEGIN ";
  const std::size_t at = text.find(kBegin);
  if (at == std::string::npos) return "";
  const std::size_t end = text.find("-----", at + kBegin.size());
  if (end == std::string::npos) return "";
  return text.substr(at + kBegin.size(), end - at - kBegin.size());
}

std::string der_of(EVP_PKEY* key) {
  unsigned char* buf = nullptr;
  const int n = i2d_PUBKEY(key, &buf);
  if (n <= 0) throw Error(ErrorKind::internal, "Ed25519: OpenSSL's i2d_PUBKEY failed");
  std::string der(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
  OPENSSL_free(buf);
  return der;
}

void require_ed25519(EVP_PKEY* key, const fs::path& file, const char* half) {
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
    const char* type = EVP_PKEY_get0_type_name(key);
    throw KeyError(file.string() + ": the " + half + " key is " +
                   (type != nullptr ? type : "of another algorithm") +
                   ", not Ed25519 (make one with: openssl genpkey -algorithm ed25519)");
  }
}

}  // namespace

std::string key_fingerprint(std::string_view public_der) { return sha256_hex(public_der); }

SigningKey SigningKey::from_pem_file(const fs::path& file) {
  const std::string text = read_key_file(file);
  const std::string label = pem_label(text);
  if (label.empty()) throw KeyError(file.string() + ": not a PEM key file");
  if (label == "PUBLIC KEY") {
    throw KeyError(file.string() +
                   ": a public key; signing needs the private key (openssl genpkey -algorithm "
                   "ed25519 -out KEY.pem)");
  }
  if (label == "ENCRYPTED PRIVATE KEY") {
    throw KeyError(file.string() +
                   ": the private key is protected by a passphrase; give an unencrypted one");
  }
  auto bio = memory_bio(text);
  EVP_PKEY* raw = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
  if (raw == nullptr) {
    throw KeyError(file.string() + ": not a private key dyno can read (PEM \"" + label + "\")");
  }
  SigningKey k;
  k.key_ = std::shared_ptr<evp_pkey_st>(raw, PkeyFree{});
  require_ed25519(raw, file, "private");
  k.public_der_ = der_of(raw);
  k.fingerprint_ = key_fingerprint(k.public_der_);
  return k;
}

std::string SigningKey::sign(std::string_view message) const {
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  std::string sig(64, '\0');
  std::size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    throw Error(ErrorKind::internal, "Ed25519: OpenSSL's EVP_DigestSign failed");
  }
  sig.resize(len);
  return sig;
}

std::string public_key_from_pem_file(const fs::path& file) {
  const std::string text = read_key_file(file);
  const std::string label = pem_label(text);
  if (label.empty()) throw KeyError(file.string() + ": not a PEM key file");
  if (label.find("PRIVATE KEY") != std::string::npos) {
    throw KeyError(file.string() +
                   ": a private key; give its public half (openssl pkey -in KEY.pem -pubout)");
  }
  auto bio = memory_bio(text);
  EVP_PKEY* raw = PEM_read_bio_PUBKEY(bio.get(), nullptr, no_passphrase, nullptr);
  if (raw == nullptr) {
    throw KeyError(file.string() + ": not a public key dyno can read (PEM \"" + label + "\")");
  }
  std::unique_ptr<EVP_PKEY, PkeyFree> key(raw);
  require_ed25519(raw, file, "public");
  return der_of(raw);
}

bool verify_signature(std::string_view public_der, std::string_view message,
                      std::string_view signature) {
  if (signature.size() != 64) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(public_der.data());
  EVP_PKEY* raw = d2i_PUBKEY(nullptr, &p, static_cast<long>(public_der.size()));
  if (raw == nullptr) return false;
  std::unique_ptr<EVP_PKEY, PkeyFree> key(raw);
  if (EVP_PKEY_get_id(raw) != EVP_PKEY_ED25519 ||
      p != reinterpret_cast<const unsigned char*>(public_der.data()) + public_der.size()) {
    return false;
  }
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, raw) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

}  // namespace dyno::digest
