// `dyno export csv`: runs as one table, one row per run — identity columns first, then every
// scalar of summary.json under its flattened path (throughput.output_tokens_per_s,
// latency_ms.ttft.p50 …), the union of the runs' columns (docs/interop.md "Export").
// RFC 4180 text written by workload/csv.h (board.csv shares it): CRLF line ends, a field quoted
// when it holds a comma, a quote, a line break or a leading or trailing space. Numbers in the
// shortest text that reads back to the same double; null or absent: an empty field. A text
// field beginning with = + - @, a tab or a carriage return gets a leading ' so that no
// spreadsheet reads it as a formula.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <utility>
#include <vector>

#include "interop/export_record.h"
#include "workload/csv.h"

namespace dyno::interop {

/// The identity columns, in order, and where each comes from in manifest.json.
inline constexpr std::pair<const char*, const char*> kCsvIdentityColumns[] = {
    {"run_id", "run_id"},
    {"label", "label"},
    {"status", "status"},
    {"started_at", "started_at"},
    {"model", "model.id"},
    {"engine", "engine.name"},
    {"engine_version", "engine.version"},
    {"protocol", "workload.protocol.name"},
    {"cell", "workload.protocol.cell"},
    {"concurrency", "load.concurrency"},
    {"rate_per_s", "load.rate_per_s"},
    {"source_tool", "source.tool"},
    {"source_format", "source.format"}};

/// summary.json's scalars as (flattened path, value), in the file's order. Arrays (warnings,
/// caveats, per-device lists) are not figures and are left out, as are the keys the identity
/// columns hold or that name the file (schema_version, run_id, status).
std::vector<std::pair<std::string, boost::json::value>> flatten_summary(
    const boost::json::object& summary);

/// One CSV cell (workload/csv.h, the writer every CSV of dyno shares): empty for null,
/// true/false, the shortest round-trip number, or the text (a formula-like start guarded with a
/// leading '), quoted per RFC 4180 when needed.
workload::CsvCell csv_cell(const boost::json::value& v);

/// csv_cell's written field.
std::string csv_field(const boost::json::value& v);

/// The table of the records, header first.
std::string export_csv(const std::vector<ExportRecord>& records);

}  // namespace dyno::interop
