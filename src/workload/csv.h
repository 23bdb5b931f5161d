// RFC 4180 CSV text as records of fields, shared by the table readers: `dyno stream import
// table` (workload/import.cpp) and `dyno import table` (record/import_table.cpp). Each caller
// names its own file in errors and throws its own error type.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dyno::workload {

/// One record: the 1-based line its first field starts on, and its fields.
using CsvRecord = std::pair<std::size_t, std::vector<std::string>>;

/// Called when the text is not CSV, with the 1-based line and what is wrong; it must throw
/// (the caller's error, naming its file).
using CsvFail = std::function<void(std::size_t line, const std::string& what)>;

/// The records of `text`: a header row is the caller's first record. Quoted fields with ""
/// escapes, embedded commas and newlines, CRLF or LF, an optional UTF-8 byte order mark. A
/// line with nothing on it is skipped (a record with one empty field is written `""`).
/// Records may have different field counts: the caller checks them against its header.
std::vector<CsvRecord> parse_csv(std::string_view text, const CsvFail& fail);

}  // namespace dyno::workload
