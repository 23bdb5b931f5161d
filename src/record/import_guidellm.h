// Format `guidellm`: the benchmarks report GuideLLM writes (`guidellm benchmark …
// --output-path report.json`; guidellm/benchmark/output.py GenerativeBenchmarksReport), in
// the layout of GuideLLM 0.2 and 0.3: one result per benchmark (one strategy of the sweep),
// its requests as traces on one clock. Every key and what it becomes: docs/interop.md.
#pragma once

#include <string>
#include <vector>

#include "record/result_import.h"

namespace dyno::record {

inline constexpr const char* kGuideLlmTool = "guidellm";

/// Reads every benchmark of the report. Throws ImportFileError naming the file, the JSON path
/// ($.benchmarks[0].requests.successful[3].first_token_time) and what was expected; a report
/// in a layout this reader does not know (GuideLLM ≥ 0.4: `metadata`, a benchmark's `config`)
/// is refused, naming it.
std::vector<ImportedResult> read_guidellm(const std::string& bytes, const std::string& file_name);

}  // namespace dyno::record
