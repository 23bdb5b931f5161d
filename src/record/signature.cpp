#include "record/signature.h"

#include <boost/json.hpp>
#include <system_error>

#include "digest/digest.h"
#include "digest/signing.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_writer.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

std::shared_ptr<const digest::SigningKey> load_sign_key(const std::string& path, const char* flag) {
  if (path.empty()) return nullptr;
  return about(flag, [&] {
    return std::make_shared<const digest::SigningKey>(digest::SigningKey::from_pem_file(path));
  });
}

fs::path campaign_signature_path(const fs::path& campaign_file) {
  return fs::path(campaign_file.string() + ".sig");
}

std::string signature_text(const std::string& signed_file, const std::string& bytes,
                           const digest::SigningKey& key) {
  return pretty_json(json::object{{"schema_version", kSchemaVersion},
                                  {"algorithm", digest::kSignatureAlgorithm},
                                  {"signed_file", signed_file},
                                  {"key_fingerprint", key.fingerprint()},
                                  {"public_key", digest::base64_encode(key.public_der())},
                                  {"signature", digest::base64_encode(key.sign(bytes))}});
}

void sign_record(const fs::path& dir, const digest::SigningKey& key) {
  write_file_atomic(dir / kSignatureFile,
                    signature_text("SHA256SUMS", read_file(dir / "SHA256SUMS"), key));
}

void sign_campaign_file(const fs::path& file, const digest::SigningKey& key) {
  write_file_atomic(campaign_signature_path(file),
                    signature_text(file.filename().string(), read_file(file), key));
}

std::optional<SignatureCheck> check_signature(const fs::path& sidecar,
                                              const fs::path& signed_file) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(sidecar, ec))) return std::nullopt;
  SignatureCheck out;
  json::object doc;
  try {
    doc = read_record_json(sidecar);
  } catch (const RecordReadError& e) {
    out.problem = e.what();
    return out;
  }
  const auto text = [&](const char* key) -> std::string {
    const json::value* v = doc.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  out.fingerprint = text("key_fingerprint");
  const std::optional<std::string> der = digest::base64_decode(text("public_key"));
  const std::optional<std::string> sig = digest::base64_decode(text("signature"));
  if (text("algorithm") != digest::kSignatureAlgorithm) {
    out.problem = "algorithm '" + text("algorithm") + "' is not " + digest::kSignatureAlgorithm;
  } else if (text("signed_file") != signed_file.filename().string()) {
    out.problem = "signs '" + text("signed_file") + "', not " + signed_file.filename().string();
  } else if (!der || !sig) {
    out.problem = "public_key or signature is not base64";
  } else if (digest::key_fingerprint(*der) != out.fingerprint) {
    out.problem = "key_fingerprint " + out.fingerprint +
                  " is not the fingerprint of its public_key (" + digest::key_fingerprint(*der) +
                  ")";
  } else {
    std::string bytes;
    try {
      bytes = read_file(signed_file);
    } catch (const RecordError& e) {
      out.problem = e.what();
      return out;
    }
    if (!digest::verify_signature(*der, bytes, *sig)) {
      out.problem = "the signature by key " + out.fingerprint +
                    " does not verify: " + signed_file.filename().string() +
                    " changed after it was signed, or the signature is not that key's";
    }
  }
  return out;
}

std::string record_signer(const fs::path& dir) {
  const auto check = check_signature(dir / kSignatureFile, dir / "SHA256SUMS");
  if (!check) return "unsigned";
  return check->problem ? "invalid" : check->fingerprint;
}

void add_signature_check(VerifyReport& report, const std::optional<SignatureCheck>& check,
                         const std::string& sidecar_name, const std::string& required_signer) {
  if (check && check->problem) {
    report.problems.push_back({"signature", sidecar_name, *check->problem});
  } else if (check) {
    report.signed_by = check->fingerprint;
  }
  if (required_signer.empty()) return;
  if (!check) {
    report.problems.push_back({"signature", sidecar_name,
                               "unsigned: a signature by key " + required_signer + " is required"});
  } else if (check->fingerprint != required_signer) {
    report.problems.push_back(
        {"signature", sidecar_name,
         "signed by key " + (check->fingerprint.empty() ? "(none named)" : check->fingerprint) +
             ", not by the required key " + required_signer});
  }
}

}  // namespace dyno::record
