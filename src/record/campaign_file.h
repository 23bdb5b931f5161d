// Campaign files in the run store: <runs-root>/campaigns/<campaign_id>.json, one per protocol
// run (docs/protocols.md). Their digest, listing (`dyno runs list --campaigns`) and
// verification (`dyno runs verify`): a campaign file pins each of its runs' records by the
// sha256 of their SHA256SUMS, and itself by the sha256 of its own content.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "record/run_verify.h"

namespace dyno::record {

/// The member of a campaign file that holds its digest: its last member.
inline constexpr const char* kCampaignDigestKey = "sha256";

/// The campaign file's text, signed: the document pretty-printed without a `sha256` member,
/// then that member added last, holding the sha256 of the text without it. The digest is over
/// bytes, not over a re-serialisation of parsed numbers (a parser may round a double).
std::string signed_campaign_text(boost::json::object doc);

/// The digest a campaign file's text carries and the digest of its text without that last
/// member; nullopt when the text does not end in a `"sha256": "<hex>"` member as the writer
/// puts it (an unsigned file, or one re-formatted since).
struct CampaignDigests {
  std::string recorded;
  std::string computed;
};
std::optional<CampaignDigests> campaign_digests(const std::string& text);

/// <runs-root>/campaigns.
std::filesystem::path campaigns_dir(const std::filesystem::path& runs_root);

/// The campaign file a command-line argument names: the path of a campaign file (a name ending
/// in .json that is a file), or the exact id of one under `runs_root`; nullopt otherwise.
std::optional<std::filesystem::path> find_campaign_file(const std::filesystem::path& runs_root,
                                                        const std::string& arg);

/// The campaign ids under a runs root (campaigns/<id>.json), sorted; empty without any.
std::vector<std::string> campaign_ids(const std::filesystem::path& runs_root);

/// One campaign as `runs list --campaigns` shows it. Never throws for a bad file: `problem`
/// says what was wrong, the rest is what could be read.
struct CampaignRow {
  std::string campaign_id;
  std::string name;  ///< the campaign's own name (--campaign-name), "" when none was given
  std::string started_at;
  std::string status;
  std::string user_status;  ///< the status the user gave (--campaign-status), "" when none
  std::string protocol;
  std::string engine;  ///< engine.name
  std::string model;
  std::size_t cells = 0;
  std::size_t runs = 0;  ///< every repetition of every cell
  std::optional<std::string> problem;
};

CampaignRow read_campaign_row(const std::filesystem::path& file);

boost::json::object campaign_row_to_json(const CampaignRow& row);

/// Checks a campaign file: a JSON object of a known schema_version, its schema (with
/// `schema`), its digest, and every run it lists: the record exists under the runs root the
/// file is in (<root>/campaigns/<id>.json), its SHA256SUMS has the digest the campaign
/// recorded, and it verifies itself (verify_run_dir; problems named "<run_id>/<file>").
/// A file written before campaign files were signed (no digest, or runs without
/// `record_sha256`) is not failed for it: a note says what could not be checked. A signature
/// sidecar (<id>.json.sig, record/signature.h), when there is one, must verify (check
/// "signature"); report.signed_by is the campaign file's signer. `required_signer` (a key
/// fingerprint, `runs verify --verify-key`): the campaign file and every record it pins must
/// carry a valid signature by that key.
VerifyReport verify_campaign_file(const std::filesystem::path& file, bool schema = true,
                                  const std::string& required_signer = "");

}  // namespace dyno::record
