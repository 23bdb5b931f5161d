#include "interop/import_formats.h"

#include "error/registry.h"
#include "interop/import_aiperf.h"
#include "interop/import_guidellm.h"
#include "interop/import_llama_bench.h"
#include "interop/import_sglang.h"
#include "interop/import_table.h"
#include "interop/import_vllm.h"

namespace dyno::interop {

namespace {

std::vector<ImportedResult> vllm_bench(const std::string& bytes, const std::string& file,
                                       const ImportReadOptions&) {
  return {read_vllm_bench(bytes, file)};
}

std::vector<ImportedResult> sglang_bench(const std::string& bytes, const std::string& file,
                                         const ImportReadOptions&) {
  return read_sglang_bench(bytes, file);
}

std::vector<ImportedResult> aiperf(const std::string& bytes, const std::string& file,
                                   const ImportReadOptions&) {
  return {read_aiperf(bytes, file)};
}

std::vector<ImportedResult> llama_bench(const std::string& bytes, const std::string& file,
                                        const ImportReadOptions&) {
  return read_llama_bench(bytes, file);
}

std::vector<ImportedResult> guidellm(const std::string& bytes, const std::string& file,
                                     const ImportReadOptions&) {
  return read_guidellm(bytes, file);
}

std::vector<ImportedResult> table(const std::string& bytes, const std::string& file,
                                  const ImportReadOptions& options) {
  return read_table(bytes, file, options.map);
}

}  // namespace

std::span<const ImportFormat> import_formats() {
  static constexpr ImportFormat kFormats[] = {
      {.name = "vllm-bench",
       .describe = "`vllm bench serve --save-result` JSON (per-request with --save-detailed)",
       .read = vllm_bench},
      {.name = "sglang-bench",
       .describe = "`python -m sglang.bench_serving --output-file` JSONL, a result a line "
                   "(per-request with --output-details)",
       .read = sglang_bench},
      {.name = "aiperf",
       .describe = "AIPerf's profile_export.jsonl (per-request records) or "
                   "profile_export_aiperf.json (aggregate)",
       .read = aiperf},
      {.name = "llama-bench",
       .describe = "llama.cpp's `llama-bench -o json|jsonl|csv` (one record per test)",
       .read = llama_bench},
      {.name = "guidellm",
       .describe = "GuideLLM's `guidellm benchmark --output-path x.json` report, 0.2 to 0.7+ "
                   "(one record per benchmark)",
       .read = guidellm},
      {.name = "table",
       .describe = "a ledger: CSV, JSON rows or JSONL, one record a row; --map SOURCE=TARGET "
                   "names the columns",
       .read = table},
  };
  return kFormats;
}

std::vector<ImportedResult> read_import(const std::string& format, const std::string& bytes,
                                        const std::string& file_name,
                                        const ImportReadOptions& options) {
  const ImportFormat& f = registry::lookup(import_formats(), format, "import format");
  std::vector<ImportedResult> results = f.read(bytes, file_name, options);
  if (results.empty()) throw ImportFileError(file_name + ": holds no result to import");
  return results;
}

}  // namespace dyno::interop
