// The record schemas (docs/schema/*.schema.json, embedded in the binary at build time) and the
// checks of a run directory and of a campaign file against them (docs/record.md, "Schema").
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "record/json_schema.h"

namespace dyno::record {

/// The embedded schema of one kind of record file: "manifest", "summary", "request" (one line
/// of requests.jsonl), "telemetry" (one line of telemetry.jsonl), "campaign" or "signature" (a
/// record's SIGNATURE, a campaign file's sidecar). Compiled on
/// first use. Throws std::invalid_argument for another name, SchemaError for a broken schema.
const JsonSchema& record_schema(std::string_view kind);

/// Checks a run directory against the schemas: manifest.json, summary.json (which may be
/// missing only while the manifest says "running": a run killed outright), every line of
/// requests.jsonl, every line of telemetry.jsonl when there is one, and SIGNATURE when there is
/// one. A manifest without a
/// usable schema_version, or with a newer one than this dyno reads, gives that one problem and
/// nothing else is checked. Each problem's `file` is relative to the directory
/// ("requests.jsonl:3"). Empty: the record conforms. A bad record never throws.
std::vector<SchemaProblem> validate_run_dir(const std::filesystem::path& run_dir);

/// Checks a campaign file (<runs-root>/campaigns/<campaign_id>.json) against its schema; the
/// problems' `file` is the file's name.
std::vector<SchemaProblem> validate_campaign_file(const std::filesystem::path& path);

/// Checks a signature sidecar (record/signature.h) against its schema; the problems' `file` is
/// the file's name.
std::vector<SchemaProblem> validate_signature_file(const std::filesystem::path& path);

}  // namespace dyno::record
