// Run identifiers and wall-clock metadata.
#pragma once

#include <chrono>
#include <string>

namespace dyno::record {

/// Sortable, unique run id: "YYYYMMDDTHHMMSSZ-<6 random hex>" (UTC). With a label:
/// "<id>-<label>" where the label is reduced to [A-Za-z0-9._-].
std::string make_run_id(std::chrono::system_clock::time_point now, const std::string& label);

/// ISO-8601 UTC with milliseconds, e.g. "2026-11-29T21:48:15.212Z".
std::string iso8601_utc(std::chrono::system_clock::time_point t);

/// A label reduced to the characters allowed in a run id (others become '-'), at most 48.
std::string sanitize_label(const std::string& label);

}  // namespace dyno::record
