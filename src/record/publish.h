// Scrubbing a finished run record in place, or publishing a scrubbed copy of it: the record's
// files rewritten by a scrub::Scrubber, its manifest's scrubbed_fields and evidence digests
// updated, SHA256SUMS rewritten. What is scrubbed is the policy's (scrub/scrub.h).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "scrub/scrub.h"

namespace dyno::digest {
class SigningKey;
}

namespace dyno::record {

/// What scrubbing a run directory changed.
struct ScrubOutcome {
  /// Every changed place: "<file>#<JSON pointer>" for JSON files (for a JSONL file the
  /// pointer inside its lines, e.g. "requests.jsonl#/error/message"), "<file>" for text.
  std::vector<std::string> changed;
  std::vector<std::string> files_rewritten;  ///< relative paths
  std::vector<std::string> files_skipped;    ///< binary files left as they are
  /// The record's SIGNATURE (record/signature.h) was removed: SHA256SUMS changed, so it no
  /// longer held, and no key was given to sign again.
  bool signature_dropped = false;
  bool signed_again = false;  ///< signed with the key given, after the rewrite
};

/// Scrubs a finished run directory in place: rewrites each changed file atomically, adds the
/// changes to manifest.scrubbed_fields (kept from earlier scrubs), updates the manifest's
/// evidence digests and rewrites SHA256SUMS. A SIGNATURE is removed when SHA256SUMS changed
/// (it signed the old one) and, with `key` (--sign-key), the record is signed again with it
/// (also when nothing changed); an unchanged record keeps its signature. With `dry_run` nothing
/// is written. Throws ScrubError when the record does not verify (a record that was modified
/// after it was finished is not re-signed) or cannot be read.
ScrubOutcome scrub_run_dir(const std::filesystem::path& dir, const scrub::ScrubPolicy& policy,
                           bool dry_run = false, const digest::SigningKey* key = nullptr);

/// Copies a run directory to <out_root>/<run name> and scrubs the copy; the copy appears
/// under its name only when complete; its SIGNATURE as scrub_run_dir leaves it. Throws
/// ScrubError when the run does not verify or the destination exists.
ScrubOutcome publish_run(const std::filesystem::path& run_dir,
                         const std::filesystem::path& out_root, const scrub::ScrubPolicy& policy,
                         const digest::SigningKey* key = nullptr);

/// What publishing a campaign did.
struct CampaignPublishOutcome {
  std::filesystem::path file;  ///< the published campaign file, <out_root>/campaigns/<id>.json
  std::vector<std::string> changed;  ///< the campaign file's changes: "<id>.json#<JSON pointer>"
  /// Each run the campaign lists, in its order: its id and what publishing it changed.
  std::vector<std::pair<std::string, ScrubOutcome>> runs;
};

/// Publishes a campaign (docs/store.md, "Publishing a campaign"): every run its file lists is
/// published into `out_root` as publish_run does, then the campaign file is scrubbed like a
/// record's JSON (with every listed run's host name and GPU UUIDs), its changes listed in its
/// `scrubbed_fields`, each run re-pinned to its published record (`record_sha256`: the sha256 of
/// the published SHA256SUMS) and the file signed again, so `dyno runs verify` of the campaign
/// under `out_root` passes. The campaign file is written last: a publish that fails part way
/// leaves no campaign file. Throws ScrubError when the campaign does not verify, lists no run,
/// or a destination exists.
CampaignPublishOutcome publish_campaign(const std::filesystem::path& campaign_file,
                                        const std::filesystem::path& out_root,
                                        const scrub::ScrubPolicy& policy);

}  // namespace dyno::record
