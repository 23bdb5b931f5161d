// Scrubbing a run record for publishing: host names, ports, absolute paths, container names,
// labels and volumes, GPU UUIDs (dropped or hashed), and on request the prompt hashes; secrets
// (API keys, Authorization/cookie headers, tokens in URLs and arguments) whatever the policy.
// docs/store.md lists every rule.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "error/error.h"
#include "scrub/scrub_text.h"

namespace dyno::scrub {

/// A policy file or category that is not valid, or a record that cannot be scrubbed; the
/// message names the file, key or run and what to do.
class ScrubError : public Error {
 public:
  explicit ScrubError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// What happens to GPU UUIDs: replaced by a marker, replaced by "sha256:<hex of the UUID>"
/// (the same GPU hashes the same in every record, without revealing its UUID), or kept.
enum class UuidRule { kDrop, kHash, kKeep };

/// What to scrub. The default scrubs every category except prompt hashes; secrets are always
/// scrubbed and cannot be kept.
struct ScrubPolicy {
  bool hosts = true;       ///< host names and IP addresses (loopback addresses are kept)
  bool ports = true;       ///< port numbers
  bool paths = true;       ///< absolute file paths (system locations such as /usr, /sys kept)
  bool containers = true;  ///< container names, ids and labels
  bool volumes = true;     ///< volumes and mounts
  UuidRule gpu_uuids = UuidRule::kDrop;
  bool prompt_hashes = false;  ///< the request stream's sha256 (breaks duplicate checks)
  /// Literal strings scrubbed wherever they occur as a whole word (not inside a longer name
  /// of letters, digits, '-' and '_').
  std::vector<std::string> strings;
};

/// The categories `--keep` and a policy file's "keep" accept: hosts, ports, paths,
/// containers, volumes, gpu-uuids.
const std::vector<std::string>& scrub_categories();

/// Keeps (does not scrub) the named categories, a comma-separated list. Throws ScrubError
/// naming an unknown category.
void keep_categories(ScrubPolicy& policy, const std::string& list);

/// Reads a policy file over the default policy: a JSON object with optional keys "keep"
/// (array of categories), "gpu_uuids" ("drop", "hash" or "keep"), "prompt_hashes" ("keep" or
/// "scrub") and "strings" (array of strings). Unknown keys and wrong types are errors naming
/// the file and the key.
ScrubPolicy read_scrub_policy(const std::filesystem::path& file);

/// The policy as JSON (the same keys as a policy file).
boost::json::object policy_to_json(const ScrubPolicy& policy);

/// Marker written in place of a scrubbed value, e.g. "<scrubbed:host>" (scrub_text.h).
using text::scrub_marker;

/// Scrubs documents and text of one record. What to look for comes from the policy and from
/// the record's manifest: the machine's host name (hardware.host) and every GPU UUID, which
/// are then scrubbed wherever they occur (logs, messages), not only in their own fields.
class Scrubber {
 public:
  Scrubber(ScrubPolicy policy, const boost::json::object& manifest);

  /// Rewrites sensitive values of a JSON document in place and adds the JSON Pointer of every
  /// changed value to `changed` (e.g. "/hardware/host"). The manifest's own scrubbed_fields is
  /// left alone.
  void scrub_json(boost::json::value& doc, std::set<std::string>& changed) const;

  /// Rewrites sensitive parts of free text (a log, an error message). True when it changed.
  bool scrub_text(std::string& text) const;

 private:
  void walk(boost::json::value& v, const std::string& pointer, const std::string& key,
            std::set<std::string>& changed) const;
  bool scrub_args(boost::json::array& args, const std::string& pointer,
                  std::set<std::string>& changed) const;
  bool scrub_text_with(std::string& text, bool paths) const;
  std::string uuid_replacement(const std::string& uuid) const;

  ScrubPolicy policy_;
  std::vector<std::string> hostnames_;
  std::vector<std::string> uuids_;
};

/// Removes secrets from a JSON document whatever the policy (values of secret keys, secret
/// flags' values in argument lists, credentials in headers, URLs and NAME=value text); returns
/// the JSON Pointers it changed. RunWriter applies it to every JSON file it writes, as a
/// safety net: nothing should carry a secret there in the first place.
std::vector<std::string> redact_secrets(boost::json::value& doc);

/// True when a key names a secret (api_key, authorization, cookie, token, password, …):
/// such values are scrubbed whatever the policy, and writers must never record them. Defined
/// with the text passes that share its spelling of a key (scrub_text.h).
using text::is_secret_key;

}  // namespace dyno::scrub
