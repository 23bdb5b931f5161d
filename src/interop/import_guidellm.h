// Format `guidellm`: the benchmarks report GuideLLM writes (`guidellm benchmark …
// --output-path report.json`; guidellm/benchmark/output.py GenerativeBenchmarksReport), in
// the layouts of GuideLLM 0.2/0.3 and of 0.4 and later (report schema 1: 0.5, 0.6; 2: 0.7+):
// one result per benchmark (one strategy of the sweep), its requests as traces on one clock.
// Every key and what it becomes: docs/interop.md.
#pragma once

#include <string>
#include <vector>

#include "interop/result_import.h"

namespace dyno::interop {

inline constexpr const char* kGuideLlmTool = "guidellm";

/// Reads every benchmark of the report. Throws ImportFileError naming the file, the JSON path
/// ($.benchmarks[0].requests.successful[3].first_token_time) and what was expected; a report
/// of a schema version this reader does not know ($.metadata.version 3…) is refused, naming it.
std::vector<ImportedResult> read_guidellm(const std::string& bytes, const std::string& file_name);

}  // namespace dyno::interop
