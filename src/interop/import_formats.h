// The formats `dyno import` reads (docs/interop.md): each a reader from a file's bytes to the
// results it holds. One file may hold several results (a JSONL file a line each, a report of
// several benchmarks, a table a row each); each becomes a record of its own, its
// `source.part` saying which.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "interop/result_import.h"

namespace dyno::interop {

/// What a reader may need beyond the bytes (flags of `dyno import`).
struct ImportReadOptions {
  /// `table`: COLUMN=FIGURE pairs (a column name, or a JSON path for JSON rows).
  std::vector<std::string> map;
};

/// An entry of the result-import registry (error/registry.h): a format `dyno import` reads.
struct ImportFormat {
  std::string_view name;      ///< as `dyno import` takes it: "vllm-bench"
  std::string_view describe;  ///< one line for --help: what the tool writes
  /// The results the file holds (none: the caller refuses the file).
  std::vector<ImportedResult> (*read)(const std::string& bytes, const std::string& file_name,
                                      const ImportReadOptions& options);
};

/// Every format, in the order --help lists them.
std::span<const ImportFormat> import_formats();

/// Reads `bytes` (the file named `file_name` in errors) in `format`. Throws ImportFileError
/// (exit 2) naming the file and where, UsageError (exit 2) listing the formats for an unknown
/// one; at least one result on success.
std::vector<ImportedResult> read_import(const std::string& format, const std::string& bytes,
                                        const std::string& file_name,
                                        const ImportReadOptions& options);

}  // namespace dyno::interop
