#include "workload/trace_import.h"

#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "error/registry.h"
#include "workload/csv.h"
#include "workload/import_util.h"
#include "workload/request_stream.h"
#include "workload/stream_json.h"

namespace dyno::workload {

namespace json = boost::json;
using stream_json::fail;
using stream_json::got;

namespace {

/// The longest input or output a trace row may ask for (as dyno's --max-tokens flags).
constexpr std::int64_t kMaxLength = 10'000'000;

/// Digits only, as int64; nullopt otherwise (empty, sign, overflow).
std::optional<std::int64_t> parse_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

/// "123", "123.", "123.456" (up to 9 fractional digits) seconds as ns; nullopt otherwise.
std::optional<std::int64_t> parse_seconds_ns(std::string_view s) {
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::optional<std::int64_t> sec = parse_digits(whole);
  if (!sec || *sec > 9'000'000'000) return std::nullopt;  // ns of 285 years fit an int64
  std::int64_t frac = 0;
  if (dot != std::string_view::npos) {
    const std::string_view f = s.substr(dot + 1);
    if (f.size() > 9) return std::nullopt;
    for (std::size_t i = 0; i < 9; ++i) {
      const char c = i < f.size() ? f[i] : '0';
      if (c < '0' || c > '9') return std::nullopt;
      frac = frac * 10 + (c - '0');
    }
  }
  return *sec * 1'000'000'000 + frac;
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the era-based civil calendar count).
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

/// The kept-record bookkeeping every reader shares: skips, time order, the limit.
class TraceCollector {
 public:
  TraceCollector(TraceFile& file, std::optional<std::size_t> limit) : file_(file), limit_(limit) {}
  bool full() const { return limit_ && file_.records.size() >= *limit_; }
  /// Adds `r` unless a length is 0; `time_key` names the time field in an order error.
  void add(TraceRecord r, const std::string& where, const std::string& time_key, bool csv_column) {
    ++file_.rows;
    if (last_ns_ && r.time_ns < *last_ns_) {
      const std::string what = "goes back in time (" + std::to_string(r.time_ns) +
                               " ns < the previous row's " + std::to_string(*last_ns_) +
                               " ns on the trace's clock); a trace is in time order";
      if (csv_column) throw StreamError(where + ": column `" + time_key + "`: " + what);
      fail(where, time_key, what);
    }
    last_ns_ = r.time_ns;
    if (r.output_tokens == 0) {
      ++file_.skipped_no_output;
      return;
    }
    if (r.input_tokens == 0) {
      ++file_.skipped_no_input;
      return;
    }
    file_.records.push_back(std::move(r));
  }

 private:
  TraceFile& file_;
  std::optional<std::size_t> limit_;
  std::optional<std::int64_t> last_ns_;
};

namespace {

std::int64_t json_length(const json::value& v, const std::string& where, const std::string& key) {
  const std::int64_t n = stream_json::as_int(v, where, key);
  if (n < 0) fail(where, key, "must be >= 0 (got " + std::to_string(n) + ")");
  if (n > kMaxLength) {
    fail(where, key, "is " + std::to_string(n) + " tokens; at most " + std::to_string(kMaxLength));
  }
  return n;
}

void parse_mooncake(std::string_view text, TraceCollector& out, const std::string& source) {
  import_util::for_each_line(text, [&](const std::string& line, std::size_t line_no) {
    if (out.full()) return false;
    const std::string where = source + ":" + std::to_string(line_no);
    const json::value v = import_util::parse_json(line, where);
    if (!v.is_object()) throw StreamError(where + ": expected a JSON object" + got(v));
    TraceRecord r;
    r.line = line_no;
    bool has_time = false;
    bool has_input = false;
    bool has_output = false;
    for (const auto& kv : v.get_object()) {
      const std::string key(kv.key());
      if (key == "timestamp") {
        const double ms = stream_json::as_number(kv.value(), where, key);
        if (!(ms >= 0.0) || !std::isfinite(ms) || ms > 9.0e12) {
          fail(where, key, "must be a number of ms >= 0 (and below 9e12)");
        }
        r.time_ns = kv.value().is_double()
                        ? static_cast<std::int64_t>(std::llround(ms * 1e6))
                        : stream_json::as_int(kv.value(), where, key) * 1'000'000;
        has_time = true;
      } else if (key == "input_length") {
        r.input_tokens = json_length(kv.value(), where, key);
        has_input = true;
      } else if (key == "output_length") {
        r.output_tokens = json_length(kv.value(), where, key);
        has_output = true;
      } else if (key == "hash_ids") {
        if (!kv.value().is_array())
          fail(where, key, "must be an array of integers" + got(kv.value()));
        const json::array& ids = kv.value().get_array();
        for (std::size_t i = 0; i < ids.size(); ++i) {
          const std::string k = "hash_ids[" + std::to_string(i) + "]";
          if (ids[i].is_uint64()) {
            r.hash_ids.push_back(ids[i].get_uint64());
          } else if (ids[i].is_int64() && ids[i].get_int64() >= 0) {
            r.hash_ids.push_back(static_cast<std::uint64_t>(ids[i].get_int64()));
          } else {
            fail(where, k, "must be an integer >= 0" + got(ids[i]));
          }
        }
      } else {
        fail(where, key,
             "unknown key; a Mooncake trace line has timestamp, input_length, output_length "
             "and hash_ids");
      }
    }
    if (!has_time) fail(where, "timestamp", "missing (the arrival time in ms)");
    if (!has_input) fail(where, "input_length", "missing (the prompt's tokens)");
    if (!has_output) fail(where, "output_length", "missing (the answer's tokens)");
    out.add(std::move(r), where, "timestamp", false);
    return true;
  });
}

/// The CSV readers: the header's columns by name, then one record per data row.
struct CsvTable {
  std::vector<CsvRecord> records;
  std::map<std::string, std::size_t> columns;

  std::size_t column(const std::string& name, const std::string& source) const {
    const auto it = columns.find(name);
    if (it == columns.end()) {
      std::string have;
      for (const auto& [k, i] : columns) have += (have.empty() ? "" : ", ") + k;
      throw StreamError(source + ":" + std::to_string(records.front().first) + ": column `" + name +
                        "` not found in the header (have: " + have + ")");
    }
    return it->second;
  }
};

CsvTable load_csv(std::string_view text, const std::string& source) {
  CsvTable t;
  t.records = parse_csv(text, [&](std::size_t line, const std::string& what) {
    throw StreamError(source + ":" + std::to_string(line) + ": " + what);
  });
  if (t.records.empty()) throw StreamError(source + ": empty CSV; the first row must be a header");
  for (std::size_t i = 0; i < t.records.front().second.size(); ++i) {
    t.columns.emplace(t.records.front().second[i], i);
  }
  return t;
}

std::int64_t csv_length(const std::string& cell, const std::string& where,
                        const std::string& column) {
  const std::optional<std::int64_t> n = parse_digits(cell);
  if (!n) {
    throw StreamError(where + ": column `" + column + "`: \"" + cell + "\" is not an integer >= 0");
  }
  if (*n > kMaxLength) {
    throw StreamError(where + ": column `" + column + "`: " + cell + " tokens; at most " +
                      std::to_string(kMaxLength));
  }
  return *n;
}

/// Each data row of a CSV trace as a TraceRecord: its time (`parse_time`, named by
/// `time_column` and described by `time_form` in errors) and its input and output lengths;
/// `fill` adds what else the format keeps. Rows past the collector's limit are not read.
template <typename ParseTime, typename Fill>
void collect_csv_rows(const CsvTable& t, TraceCollector& out, const std::string& source,
                      const char* time_column, const char* time_form, const char* input_column,
                      const char* output_column, ParseTime parse_time, Fill fill) {
  const std::size_t time = t.column(time_column, source);
  const std::size_t input = t.column(input_column, source);
  const std::size_t output = t.column(output_column, source);
  const std::size_t fields = t.records.front().second.size();
  for (std::size_t i = 1; i < t.records.size() && !out.full(); ++i) {
    const auto& [line, row] = t.records[i];
    const std::string where = source + ":" + std::to_string(line);
    if (row.size() != fields) {
      throw StreamError(where + ": " + std::to_string(row.size()) + " fields, but the header has " +
                        std::to_string(fields));
    }
    TraceRecord r;
    r.line = line;
    const std::optional<std::int64_t> ns = parse_time(row[time]);
    if (!ns) {
      throw StreamError(where + ": column `" + time_column + "`: \"" + row[time] + "\" is not " +
                        time_form);
    }
    r.time_ns = *ns;
    r.input_tokens = csv_length(row[input], where, input_column);
    r.output_tokens = csv_length(row[output], where, output_column);
    fill(row, r);
    out.add(std::move(r), where, time_column, true);
  }
}

void parse_azure(std::string_view text, TraceCollector& out, const std::string& source) {
  collect_csv_rows(load_csv(text, source), out, source, "TIMESTAMP",
                   "a date and time \"YYYY-MM-DD HH:MM:SS.fffffff\"", "ContextTokens",
                   "GeneratedTokens", parse_datetime_ns,
                   [](const std::vector<std::string>&, TraceRecord&) {});
}

void parse_burstgpt(std::string_view text, TraceCollector& out, const std::string& source) {
  const CsvTable t = load_csv(text, source);
  const std::size_t model = t.column("Model", source);
  const std::size_t log_type = t.column("Log Type", source);
  collect_csv_rows(t, out, source, "Timestamp",
                   "a number of seconds from 0 to 9e9 (up to 9 decimals)", "Request tokens",
                   "Response tokens", parse_seconds_ns,
                   [&](const std::vector<std::string>& row, TraceRecord& r) {
                     r.tags["model"] = row[model];
                     r.tags["log_type"] = row[log_type];
                   });
}

}  // namespace

std::span<const TraceFormat> trace_formats() {
  static constexpr TraceFormat kFormats[] = {
      {.name = "mooncake",
       .describe = "Mooncake's JSONL trace: timestamp (ms), input_length, output_length, hash_ids",
       .parse = parse_mooncake},
      {.name = "azure",
       .describe = "the Azure LLM inference trace, CSV: TIMESTAMP, ContextTokens, GeneratedTokens",
       .parse = parse_azure},
      {.name = "burstgpt",
       .describe =
           "BurstGPT's CSV: Timestamp (s), Model, Request tokens, Response tokens, Log Type",
       .parse = parse_burstgpt},
  };
  return kFormats;
}

bool is_trace_kind(std::string_view kind) {
  return registry::find(trace_formats(), kind) != nullptr;
}

std::optional<std::int64_t> parse_datetime_ns(std::string_view s) {
  // YYYY-MM-DD HH:MM:SS[.f…]
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  const auto y = parse_digits(s.substr(0, 4));
  const auto mo = parse_digits(s.substr(5, 2));
  const auto d = parse_digits(s.substr(8, 2));
  const auto h = parse_digits(s.substr(11, 2));
  const auto mi = parse_digits(s.substr(14, 2));
  std::optional<std::int64_t> sec_ns;
  if (s.size() == 19 || s[19] == '.') sec_ns = parse_seconds_ns(s.substr(17));
  // From 1970 to 2200: the ns since 1970 fit an int64 (up to 2262).
  if (!y || !mo || !d || !h || !mi || !sec_ns || *y < 1970 || *y > 2200) return std::nullopt;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*mo < 1 || *mo > 12 || *d < 1) return std::nullopt;
  const std::int64_t month_days = kDays[*mo - 1] + (*mo == 2 && leap(*y) ? 1 : 0);
  if (*d > month_days || *h > 23 || *mi > 59 || *sec_ns >= 60'000'000'000) return std::nullopt;
  const std::int64_t days = days_from_civil(*y, *mo, *d);
  return ((days * 24 + *h) * 60 + *mi) * 60'000'000'000 + *sec_ns;
}

TraceFile parse_trace_text(std::string_view kind, std::string_view text, const std::string& source,
                           std::optional<std::size_t> limit) {
  TraceFile file;
  file.kind = std::string(kind);
  file.source = source;
  const TraceFormat* format = registry::find(trace_formats(), kind);
  if (format == nullptr) {
    throw StreamError(source + ": unknown trace kind \"" + std::string(kind) + "\"; use " +
                      registry::name_list(trace_formats(), " or "));
  }
  TraceCollector out(file, limit);
  format->parse(text, out, source);
  if (file.records.empty()) {
    throw StreamError(source + ": no requests (" + std::to_string(file.rows) + " rows read, " +
                      std::to_string(file.skipped_no_output) + " without output, " +
                      std::to_string(file.skipped_no_input) + " without input)");
  }
  return file;
}

TraceFile read_trace_file(std::string_view kind, const std::filesystem::path& path,
                          std::optional<std::size_t> limit) {
  const std::string text = import_util::read_all(path, "trace file");
  return parse_trace_text(kind, text, path.string(), limit);
}

}  // namespace dyno::workload
