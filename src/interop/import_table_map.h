// `dyno import table` (interop/import_table.h), inside: the --map targets, their units, and a
// row's values made into an ImportedResult. Reading the file's rows is import_table.cpp's.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "interop/result_import.h"

namespace dyno::interop::table {

/// source.tool when no `tool` column names the harness that wrote the ledger.
inline constexpr const char* kTableTool = "table";

/// What a target takes, and so how a cell is read for it.
enum class Kind {
  count,      ///< a whole number ≥ 0 (requests.ok, tokens.input_total…)
  time_ms,    ///< ≥ 0, in ms (latency_ms.*): units ms, s, us, ns
  time_s,     ///< ≥ 0, in s (throughput.service_window_s): units s, ms, us, ns
  rate,       ///< ≥ 0, per second: units per_s, per_min, per_h
  fraction,   ///< 0 to 1: units fraction, percent
  number,     ///< ≥ 0, no unit (tokens per event, achieved concurrency, lengths)
  text,       ///< identity: the cell's text (model, engine, gpu, label…)
  positive,   ///< identity: a whole number ≥ 1 (concurrency, requests)
  load_rate,  ///< identity: a number > 0, or "inf" (no schedule: absent)
};

struct MapEntry {
  std::string given;    ///< as written: "TTFT (s)=latency_ms.ttft.p50:s"
  std::string source;   ///< a column, a JSON key, or a JSON path
  std::string target;   ///< "latency_ms.ttft.p50", "model"…
  std::string unit;     ///< as written after ':' ("" none)
  double multiply = 1;  ///< the cell × multiply ÷ divide is the figure in summary.json's unit
  double divide = 1;
  Kind kind = Kind::text;
};

struct Mapping {
  std::vector<MapEntry> entries;
  std::optional<std::string> rows;  ///< "PATH=rows": where a JSON object keeps its rows
  boost::json::object verbatim;     ///< SOURCE → what --map gave after '=' (source.file_fields)
};

/// Parses --map. Throws ImportFileError ("dyno import table: --map '…': …"): none given, no
/// '=', an empty SOURCE, an unknown TARGET (listing the allowed ones) or unit, a TARGET or a
/// SOURCE mapped twice.
Mapping parse_map(const std::vector<std::string>& map);

/// One row's mapped values: figures in summary.json's units and numeric identities
/// (concurrency, rate, requests) by target; texts by target. A target absent: its cell was
/// empty, null, or missing from the row.
struct RowValues {
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> texts;
};

/// Throws ImportFileError naming the row and what is wrong.
using RowFail = std::function<void(const std::string& what)>;

/// The summary-only result of one row: figures into `summary` (requests.total/ok/failed made
/// consistent, error rate, status, distribution counts), identities into the manifest's
/// fields. `fail` is called (and throws) when the row's counts disagree.
ImportedResult result_of(const RowValues& v, const RowFail& fail);

/// The summary.json paths of every figure target, in its order.
std::vector<std::string> figure_targets();
const std::vector<std::string>& identity_targets();

}  // namespace dyno::interop::table
