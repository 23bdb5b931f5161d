#include "workload/csv.h"

#include <boost/json/value.hpp>
#include <cmath>
#include <stdexcept>

#include "json/json_text.h"

namespace dyno::workload {

namespace {

[[noreturn]] void refuse(const CsvFail& fail, std::size_t line, const std::string& what) {
  fail(line, what);
  throw std::logic_error("parse_csv: the caller's fail() returned: " + what);
}

}  // namespace

std::vector<CsvRecord> parse_csv(std::string_view text, const CsvFail& fail) {
  if (text.substr(0, 3) == "\xef\xbb\xbf") text.remove_prefix(3);
  std::vector<CsvRecord> records;
  std::vector<std::string> fields;
  std::string field;
  std::size_t line = 1;
  std::size_t record_line = 1;
  std::size_t i = 0;
  bool record_open = false;  // something (even an empty field) was read for this record
  const auto end_record = [&] {
    fields.push_back(std::move(field));
    field.clear();
    // A line with nothing on it is skipped, not a record with one empty field.
    if (!(fields.size() == 1 && fields[0].empty() && !record_open)) {
      records.emplace_back(record_line, std::move(fields));
    }
    fields.clear();
    record_open = false;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      if (!field.empty()) {
        refuse(fail, line,
               "stray '\"' inside an unquoted field; quote the whole field and double inner "
               "quotes");
      }
      const std::size_t open_line = line;
      ++i;
      record_open = true;
      for (;;) {
        if (i >= text.size()) {
          refuse(fail, open_line, "quoted field is not closed before the end of the file");
        }
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (text[i] == '\n') ++line;
        field.push_back(text[i++]);
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
        refuse(fail, line,
               "text after a closing quote; a quoted field must end at ',' or the end of the "
               "line");
      }
      continue;
    }
    if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      record_open = true;
      ++i;
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++i;
      end_record();
      ++line;
      record_line = line;
    } else {
      field.push_back(c);
      ++i;
    }
  }
  if (!field.empty() || !fields.empty() || record_open) end_record();
  return records;
}

CsvCell CsvCell::text(std::string_view text) {
  std::string t;
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) {
    t += '\'';
  }
  t += text;
  const bool quote = t.find_first_of(",\"\r\n") != std::string::npos ||
                     (!t.empty() && (t.front() == ' ' || t.back() == ' '));
  if (!quote) return CsvCell(std::move(t));
  std::string out = "\"";
  for (const char c : t) {
    if (c == '"') out += '"';
    out += c;
  }
  return CsvCell(out + "\"");
}

CsvCell CsvCell::number(double value) {
  if (!std::isfinite(value)) return CsvCell();
  return CsvCell(json_text::compact(boost::json::value(value)));
}

CsvCell CsvCell::number(std::optional<double> value) { return value ? number(*value) : CsvCell(); }

CsvCell CsvCell::integer(std::int64_t value) { return CsvCell(std::to_string(value)); }

CsvCell CsvCell::integer(std::uint64_t value) { return CsvCell(std::to_string(value)); }

std::string csv_row(const std::vector<CsvCell>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out += ',';
    out += cells[i].field();
  }
  return out + "\r\n";
}

}  // namespace dyno::workload
