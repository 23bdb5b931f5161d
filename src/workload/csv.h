// RFC 4180 CSV records (header row, quoted fields with "" escapes, embedded commas and line
// breaks), shared by `dyno stream import table` (workload/import.cpp) and the CSV formats of
// `dyno import` (record/import_llama_bench.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dyno::workload {

/// One record: the 1-based line its first field starts on, and its fields.
using CsvRecord = std::pair<std::size_t, std::vector<std::string>>;

/// The records of `text` (a leading UTF-8 BOM skipped; a line with nothing on it is no
/// record). Throws StreamError ("<name>:<line>: …") on a stray quote inside an unquoted field,
/// text after a closing quote, or a quoted field not closed before the end.
std::vector<CsvRecord> parse_csv_records(std::string_view text, const std::string& name);

}  // namespace dyno::workload
