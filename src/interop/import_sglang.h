// Format `sglang-bench`: the JSONL that SGLang's `python -m sglang.bench_serving --output-file F`
// appends (python/sglang/bench_serving.py): one JSON object a line, one line per benchmark
// run, with the per-request arrays when it ran with --output-details. Every key and what it
// becomes: docs/interop.md.
#pragma once

#include <string>
#include <vector>

#include "interop/result_import.h"

namespace dyno::interop {

inline constexpr const char* kSglangBenchTool = "sglang.bench_serving";

/// Reads every result of the file, one per non-blank line (`source.part` "line N"). Python's
/// bare NaN, Infinity and -Infinity (json.dumps writes them for a rate of inf or the mean of
/// nothing) are read as such. Throws ImportFileError naming FILE:LINE and the JSON path
/// ($.ttfts[3]) and what was expected: a line that is not one JSON object, a required key
/// missing or of the wrong type, per-request arrays of different lengths, a backend whose
/// endpoint is neither OpenAI chat nor completions, a layout this reader does not know.
std::vector<ImportedResult> read_sglang_bench(const std::string& bytes,
                                              const std::string& file_name);

}  // namespace dyno::interop
