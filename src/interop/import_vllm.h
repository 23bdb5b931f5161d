// Format `vllm-bench`: the JSON that `vllm bench serve --save-result` (vllm/benchmarks/
// serve.py; earlier benchmarks/benchmark_serving.py) writes, with the per-request arrays
// when it was saved with --save-detailed. Every key and what it becomes: docs/interop.md.
#pragma once

#include <string>

#include "interop/result_import.h"

namespace dyno::interop {

inline constexpr const char* kVllmBenchTool = "vllm bench serve";

/// Reads one saved result. `file_name` names the file in errors. Throws ImportFileError
/// naming the file, the line (for text that is not JSON) or the JSON path ($.ttfts[3]) and
/// what was expected: not one JSON object, a required key missing or of the wrong type,
/// per-request arrays of different lengths or disagreeing with `completed`, a backend whose
/// endpoint is neither chat nor completions.
ImportedResult read_vllm_bench(const std::string& bytes, const std::string& file_name);

}  // namespace dyno::interop
