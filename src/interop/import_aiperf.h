// Format `aiperf`: NVIDIA AIPerf's profile exports (ai-dynamo/aiperf): the per-record JSONL
// `profile_export.jsonl` (one record per request: metadata with wall-clock ns timestamps,
// metrics as {value, unit}, error) or the aggregate `profile_export_aiperf.json` (per metric
// {unit, avg, min, max, p1…p99, std}, input_config, aiperf_version). Which one a file is, is
// told by its content. Every key and what it becomes: docs/interop.md.
#pragma once

#include <string>

#include "interop/result_import.h"

namespace dyno::interop {

inline constexpr const char* kAiperfTool = "aiperf";

/// Reads one AIPerf export: the per-record JSONL becomes traces on the records' shared
/// wall clock (timing shared_clock), the aggregate JSON a summary-only result. Throws
/// ImportFileError naming the file, the line (JSONL) and the JSON path and what was expected:
/// not JSON, a required key missing or of the wrong type, a unit other than AIPerf's, an
/// endpoint other than chat or completions, a schema_version this dyno does not read, or
/// genai-perf's export (not read: docs/interop.md).
ImportedResult read_aiperf(const std::string& bytes, const std::string& file_name);

}  // namespace dyno::interop
