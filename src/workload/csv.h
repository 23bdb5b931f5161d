// RFC 4180 CSV text as records of fields, the reader of every CSV input: `dyno stream import
// table`, the Azure and BurstGPT traces, `dyno import table` and llama-bench's CSV. Each caller
// names its own file in errors and throws its own error type.
//
// And the one CSV writer of dyno, shared by every table it writes (`dyno export csv`,
// interop/export_csv.cpp; board.csv of `dyno report`, report/board_files.cpp): cells made as
// text or as numbers, rows joined with CRLF. A text cell beginning with = + - @, a tab or a
// carriage return gets a leading ' so that no spreadsheet reads it as a formula; a number is
// never guarded (-3.5 stays a number).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
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

/// One field of a CSV row, already in its written form: only these constructors make one.
class CsvCell {
 public:
  /// An empty field (null, absent).
  CsvCell() = default;
  /// Text: a formula-like start (= + - @, tab, CR) guarded with a leading ', then quoted per
  /// RFC 4180 when it holds a comma, a quote, a line break or a leading or trailing space.
  static CsvCell text(std::string_view text);
  /// A number in the shortest text that reads back to the same double; empty when not finite.
  static CsvCell number(double value);
  static CsvCell number(std::optional<double> value);
  static CsvCell integer(std::int64_t value);
  static CsvCell integer(std::uint64_t value);

  const std::string& field() const { return field_; }

 private:
  explicit CsvCell(std::string field) : field_(std::move(field)) {}
  std::string field_;
};

/// One row: the cells' fields joined by commas, ended by CRLF.
std::string csv_row(const std::vector<CsvCell>& cells);

}  // namespace dyno::workload
