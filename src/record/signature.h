// Signed records and campaign files (docs/record.md "Signatures"): a sidecar holding the Ed25519
// signature (digest/signing.h) of the file that pins everything else — a record's SHA256SUMS
// (so every file it lists), a campaign file's whole text (its own sha256, the records' digests).
// The sidecar names the key by its fingerprint and carries the public key, so a signature can
// be checked by anyone; that it is the signer's key, only a key the reader trusts can say.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "record/run_verify.h"

namespace dyno::digest {
class SigningKey;
}

namespace dyno::record {

/// The private key a --sign-key flag names, read (digest::SigningKey::from_pem_file); null for
/// "". Throws an error of kind usage naming `flag` and the file (never the key's bytes) when it
/// is missing, not PEM, a public key, or not Ed25519.
std::shared_ptr<const digest::SigningKey> load_sign_key(const std::string& path,
                                                        const char* flag = "--sign-key");

/// A record's sidecar: <run dir>/SIGNATURE, written after SHA256SUMS and not listed in it.
inline constexpr const char* kSignatureFile = "SIGNATURE";

/// A campaign file's sidecar: <runs-root>/campaigns/<campaign_id>.json.sig.
std::filesystem::path campaign_signature_path(const std::filesystem::path& campaign_file);

/// The sidecar's JSON text (docs/schema/signature.schema.json): `key`'s signature of `bytes`,
/// the content of the file named `signed_file`.
std::string signature_text(const std::string& signed_file, const std::string& bytes,
                           const digest::SigningKey& key);

/// Writes <dir>/SIGNATURE over <dir>/SHA256SUMS as it is now (call after write_sha256sums).
void sign_record(const std::filesystem::path& dir, const digest::SigningKey& key);

/// Writes campaign_signature_path(file) over the campaign file as it is now.
void sign_campaign_file(const std::filesystem::path& file, const digest::SigningKey& key);

/// What a sidecar says and whether it holds. `fingerprint` is the key it names ("" when it could
/// not be read); `problem` is set when it is not a valid signature of the signed file by that
/// key (unreadable, another file named, a fingerprint that is not its public key's, a signature
/// that does not verify).
struct SignatureCheck {
  std::string fingerprint;
  std::optional<std::string> problem;
};

/// The sidecar `sidecar` checked against the file `signed_file`; nullopt when there is no
/// sidecar (unsigned). Never throws for a bad sidecar.
std::optional<SignatureCheck> check_signature(const std::filesystem::path& sidecar,
                                              const std::filesystem::path& signed_file);

/// A record's signature as a board shows it: the key's fingerprint when SIGNATURE verifies,
/// "unsigned" without one, "invalid" when it does not verify.
std::string record_signer(const std::filesystem::path& dir);

/// Adds a signature check to a verification report (check "signature", path `sidecar_name`):
/// an invalid signature is a problem; a valid one sets report.signed_by. With `required_signer`
/// (a fingerprint), a missing signature or one by another key is a problem naming both keys.
void add_signature_check(VerifyReport& report, const std::optional<SignatureCheck>& check,
                         const std::string& sidecar_name, const std::string& required_signer);

}  // namespace dyno::record
