// Ed25519 (and, to be refused, RSA) key pairs for the signing tests, written as PEM files with
// OpenSSL's API as `openssl genpkey` and `openssl pkey -pubout` would. Link OpenSSL::Crypto.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace dyno::testing {

/// A key pair written as PEM files (made with OpenSSL's API, as `openssl genpkey` would).
struct KeyFiles {
  std::filesystem::path priv;
  std::filesystem::path pub;
};

inline KeyFiles make_key(const std::filesystem::path& dir, const std::string& name,
                         const char* algorithm = "ED25519") {
  EVP_PKEY* key = std::string(algorithm) == "RSA"
                      ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024))
                      : EVP_PKEY_Q_keygen(nullptr, nullptr, algorithm);
  EXPECT_NE(key, nullptr);
  KeyFiles k{dir / (name + ".pem"), dir / (name + ".pub.pem")};
  FILE* f = std::fopen(k.priv.c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  f = std::fopen(k.pub.c_str(), "w");
  PEM_write_PUBKEY(f, key);
  std::fclose(f);
  EVP_PKEY_free(key);
  return k;
}

}  // namespace dyno::testing
