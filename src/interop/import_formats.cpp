#include "interop/import_formats.h"

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

const std::vector<ImportFormat>& import_formats() {
  static const std::vector<ImportFormat> formats{
      {"vllm-bench", "`vllm bench serve --save-result` JSON (per-request with --save-detailed)",
       vllm_bench},
      {"sglang-bench",
       "`python -m sglang.bench_serving --output-file` JSONL, a result a line (per-request with "
       "--output-details)",
       sglang_bench},
      {"aiperf",
       "AIPerf's profile_export.jsonl (per-request records) or profile_export_aiperf.json "
       "(aggregate)",
       aiperf},
      {"llama-bench", "llama.cpp's `llama-bench -o json|jsonl|csv` (one record per test)",
       llama_bench},
      {"guidellm",
       "GuideLLM's `guidellm benchmark --output-path x.json` report, 0.2 to 0.7+ (one "
       "record per benchmark)",
       guidellm},
      {"table",
       "a ledger: CSV, JSON rows or JSONL, one record a row; --map SOURCE=TARGET names the "
       "columns",
       table},
  };
  return formats;
}

std::vector<std::string> import_format_names() {
  std::vector<std::string> names;
  for (const ImportFormat& f : import_formats()) names.push_back(f.name);
  return names;
}

std::vector<ImportedResult> read_import(const std::string& format, const std::string& bytes,
                                        const std::string& file_name,
                                        const ImportReadOptions& options) {
  for (const ImportFormat& f : import_formats()) {
    if (f.name != format) continue;
    std::vector<ImportedResult> results = f.read(bytes, file_name, options);
    if (results.empty()) throw ImportFileError(file_name + ": holds no result to import");
    return results;
  }
  std::string known;
  for (const std::string& n : import_format_names()) known += (known.empty() ? "" : ", ") + n;
  throw ImportFileError("dyno import: unknown format '" + format + "'; known: " + known);
}

}  // namespace dyno::interop
