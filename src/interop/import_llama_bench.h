// Format `llama-bench`: what llama.cpp's `llama-bench -o json|jsonl|csv` writes (tools/
// llama-bench/llama-bench.cpp; earlier examples/llama-bench): one result per test — a prompt
// test (pp), a generation test (tg) or both (pp+tg), optionally at a depth — timed inside the
// process. Every key and what it becomes: docs/interop.md.
#pragma once

#include <string>
#include <vector>

#include "interop/result_import.h"

namespace dyno::interop {

inline constexpr const char* kLlamaBenchTool = "llama-bench";

/// The test's name as llama-bench prints it: "pp512", "tg128", "pp512+tg128", with " @ d4096"
/// when it ran at a depth.
std::string llama_bench_test_name(std::int64_t n_prompt, std::int64_t n_gen, std::int64_t n_depth);

/// Reads every test of the file (JSON array, JSONL or CSV, told apart by the content). Throws
/// ImportFileError naming the file and the JSON path ($[2].n_gen), the line (JSONL, CSV), or
/// the CSV column, and what was expected.
std::vector<ImportedResult> read_llama_bench(const std::string& bytes,
                                             const std::string& file_name);

}  // namespace dyno::interop
