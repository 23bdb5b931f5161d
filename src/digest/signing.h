// Ed25519 signatures for all of dyno, over OpenSSL's libcrypto (EVP_PKEY_ED25519, one-shot
// EVP_DigestSign/EVP_DigestVerify with no digest: Ed25519 hashes the message itself). A record's
// SIGNATURE and a campaign file's sidecar (record/signature.h) are made and checked here only.
//
// Keys come from PEM files (`openssl genpkey -algorithm ed25519`; the public half with
// `openssl pkey -pubout`). A public key travels as its DER SubjectPublicKeyInfo, and its
// fingerprint is the sha256 (hex) of those bytes. A private key's bytes never leave this file:
// no message of a KeyError quotes the file's content or OpenSSL's words about it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "error/error.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY; its header stays in signing.cpp

namespace dyno::digest {

/// A key file that cannot be used (kind usage: the caller names its flag with about()): missing,
/// unreadable, not PEM, a key of another algorithm, a private key where a public one is wanted
/// or the other way round, a key protected by a passphrase.
class KeyError : public Error {
 public:
  explicit KeyError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

/// The algorithm's name as records write it.
inline constexpr const char* kSignatureAlgorithm = "ed25519";

/// sha256 (hex) of a public key's DER SubjectPublicKeyInfo.
std::string key_fingerprint(std::string_view public_der);

/// An Ed25519 private key read from a PEM file. Copies share the key.
class SigningKey {
 public:
  /// Reads `file` (a regular file of at most 64 KiB): an unencrypted Ed25519 private key in
  /// PEM ("PRIVATE KEY"). Throws KeyError naming the file and what is wrong.
  static SigningKey from_pem_file(const std::filesystem::path& file);

  /// The public half, DER SubjectPublicKeyInfo.
  const std::string& public_der() const { return public_der_; }
  /// key_fingerprint(public_der()).
  const std::string& fingerprint() const { return fingerprint_; }
  /// The 64-byte Ed25519 signature of `message`.
  std::string sign(std::string_view message) const;

 private:
  std::shared_ptr<evp_pkey_st> key_;
  std::string public_der_;
  std::string fingerprint_;
};

/// The DER SubjectPublicKeyInfo of the Ed25519 public key in PEM file `file` ("PUBLIC KEY",
/// at most 64 KiB). Throws KeyError naming the file and what is wrong.
std::string public_key_from_pem_file(const std::filesystem::path& file);

/// Whether `signature` is the Ed25519 signature of `message` by the key `public_der` (DER
/// SubjectPublicKeyInfo). False for anything malformed: a key that does not parse or is not
/// Ed25519, a signature of the wrong length.
bool verify_signature(std::string_view public_der, std::string_view message,
                      std::string_view signature);

}  // namespace dyno::digest
