// Ed25519 through OpenSSL (digest/signing.h): keys read from PEM, signatures made and checked,
// and every unusable key file refused with a KeyError that names the file.
#include "digest/signing.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "digest/digest.h"
#include "temp_dir.h"

namespace dyno::digest {
namespace {

namespace fs = std::filesystem;

/// A key made with OpenSSL's API, written as `openssl genpkey` and `openssl pkey -pubout` would.
struct Pair {
  fs::path priv, pub;
  std::string der;  ///< the public key's DER SubjectPublicKeyInfo
};

Pair make_pair(const fs::path& dir, const std::string& name, bool rsa = false) {
  EVP_PKEY* key = rsa ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024))
                      : EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  EXPECT_NE(key, nullptr);
  Pair p{dir / (name + ".pem"), dir / (name + ".pub.pem"), ""};
  FILE* f = std::fopen(p.priv.c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  f = std::fopen(p.pub.c_str(), "w");
  PEM_write_PUBKEY(f, key);
  std::fclose(f);
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(key, &der);
  p.der.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
  OPENSSL_free(der);
  EVP_PKEY_free(key);
  return p;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const KeyError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  ADD_FAILURE() << "no KeyError";
  return "";
}

TEST(Signing, SignsAndVerifiesWithTheKeysFingerprint) {
  const dyno::testing::TempDir dir("dyno-signing-test");
  const Pair a = make_pair(dir.path(), "a");
  const Pair b = make_pair(dir.path(), "b");
  const SigningKey key = SigningKey::from_pem_file(a.priv);
  EXPECT_EQ(key.public_der(), a.der);
  EXPECT_EQ(key.public_der(), public_key_from_pem_file(a.pub));
  EXPECT_EQ(key.fingerprint(), sha256_hex(a.der));
  EXPECT_EQ(key.fingerprint(), key_fingerprint(a.der));
  const std::string sig = key.sign("abc  SHA256SUMS\n");
  EXPECT_EQ(sig.size(), 64u);
  EXPECT_EQ(sig, key.sign("abc  SHA256SUMS\n"));  // Ed25519 is deterministic
  EXPECT_TRUE(verify_signature(a.der, "abc  SHA256SUMS\n", sig));
  EXPECT_FALSE(verify_signature(a.der, "abd  SHA256SUMS\n", sig));  // another message
  EXPECT_FALSE(verify_signature(b.der, "abc  SHA256SUMS\n", sig));  // another key
  std::string flipped = sig;
  flipped[10] = static_cast<char>(flipped[10] ^ 1);
  EXPECT_FALSE(verify_signature(a.der, "abc  SHA256SUMS\n", flipped));
  EXPECT_FALSE(verify_signature(a.der, "abc  SHA256SUMS\n", sig.substr(0, 63)));
  EXPECT_FALSE(verify_signature("not DER", "abc  SHA256SUMS\n", sig));
  EXPECT_FALSE(verify_signature(a.der + "x", "abc  SHA256SUMS\n", sig));  // trailing bytes
}

TEST(Signing, RefusesUnusableKeyFilesNamingThemNeverQuotingThem) {
  const dyno::testing::TempDir dir("dyno-signing-test");
  const Pair ed = make_pair(dir.path(), "ed");
  const Pair rsa = make_pair(dir.path(), "rsa", true);
  std::ofstream(dir / "junk.pem")
      << "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  std::ofstream(dir / "text.pem") << "hello\n";
  std::ofstream(dir / "big.pem") << std::string(70 * 1024, 'A');
  const auto sign_key = [](const fs::path& p) {
    return refusal([&] { (void)SigningKey::from_pem_file(p); });
  };
  EXPECT_EQ(sign_key(dir / "none.pem"), (dir / "none.pem").string() + ": no such file");
  EXPECT_EQ(sign_key(dir.path()), dir.path().string() + ": not a regular file");
  EXPECT_EQ(sign_key(dir / "text.pem"), (dir / "text.pem").string() + ": not a PEM key file");
  EXPECT_NE(sign_key(dir / "big.pem").find("larger than 64 KiB"), std::string::npos);
  EXPECT_NE(sign_key(ed.pub).find(": a public key; signing needs the private key"),
            std::string::npos);
  EXPECT_NE(sign_key(rsa.priv).find(": the private key is RSA, not Ed25519"), std::string::npos);
  EXPECT_NE(sign_key(dir / "junk.pem").find("not a private key dyno can read"), std::string::npos);
  const auto pub_key = [](const fs::path& p) {
    return refusal([&] { (void)public_key_from_pem_file(p); });
  };
  EXPECT_NE(pub_key(ed.priv).find(": a private key; give its public half"), std::string::npos);
  EXPECT_NE(pub_key(rsa.pub).find(": the public key is RSA, not Ed25519"), std::string::npos);
  EXPECT_EQ(pub_key(dir / "text.pem"), (dir / "text.pem").string() + ": not a PEM key file");
}

}  // namespace
}  // namespace dyno::digest
