#include "interop/import_table_map.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <type_traits>
#include <utility>

#include "interop/import_json.h"
#include "metrics/registry.h"

namespace dyno::interop::table {

namespace json = boost::json;

namespace {

/// Where summary.json keeps the engine's per-response timing figures, and the source a
/// ledger's statement of them is written with (docs/schema/summary.schema.json).
constexpr std::string_view kTimingsSection = "server.timings.";
constexpr const char* kStatedTimings = "stated by the imported file";

/// The statistics of a distribution, as summary.json names them.
const std::vector<std::string>& stats() {
  static const std::vector<std::string> s{"mean", "stddev", "min",   "p50", "p90",
                                          "p95",  "p99",    "p99_9", "max"};
  return s;
}

/// The kind of number a figure of the metric registry is, as a --map target checks it.
Kind kind_of(metrics::Quantity q) {
  switch (q) {
    case metrics::Quantity::kCount:
      return Kind::count;
    case metrics::Quantity::kTimeMs:
      return Kind::time_ms;
    case metrics::Quantity::kTimeS:
      return Kind::time_s;
    case metrics::Quantity::kRate:
      return Kind::rate;
    case metrics::Quantity::kFraction:
      return Kind::fraction;
    case metrics::Quantity::kNumber:
    case metrics::Quantity::kPhysical:
      return Kind::number;
  }
  return Kind::number;
}

/// The distributions a ledger may state (the registry's importable ones), in summary.json's
/// order.
std::vector<const metrics::Figure*> dists() {
  std::vector<const metrics::Figure*> out;
  for (const metrics::Figure& f : metrics::figures()) {
    if (f.importable && f.distribution && f.dist != nullptr) out.push_back(&f);
  }
  return out;
}

/// The figures that are not distributions, in summary.json's order.
const std::vector<std::pair<std::string, Kind>>& scalars() {
  static const std::vector<std::pair<std::string, Kind>> s = [] {
    std::vector<std::pair<std::string, Kind>> out;
    for (const metrics::Figure& f : metrics::figures()) {
      if (f.importable && !f.distribution) out.emplace_back(f.path, kind_of(f.quantity));
    }
    return out;
  }();
  return s;
}

const std::vector<std::pair<std::string, Kind>>& identities() {
  static const std::vector<std::pair<std::string, Kind>> s{
      {"model", Kind::text},
      {"engine", Kind::text},
      {"engine.version", Kind::text},
      {"engine.commit", Kind::text},
      {"model.revision", Kind::text},
      {"gpu", Kind::text},
      {"gpu.uuid", Kind::text},
      {"gpu.driver", Kind::text},
      {"request_stream.sha256", Kind::text},
      {"harness.sha256", Kind::text},
      {"label", Kind::text},
      {"concurrency", Kind::positive},
      {"rate", Kind::load_rate},
      {"requests", Kind::positive},
      {"api", Kind::text},
      {"protocol", Kind::text},
      {"cell", Kind::text},
      {"tool", Kind::text},
      {"tool_version", Kind::text},
  };
  return s;
}

std::optional<Kind> kind_of(const std::string& target) {
  for (const auto& [t, k] : scalars()) {
    if (t == target) return k;
  }
  for (const auto& [t, k] : identities()) {
    if (t == target) return k;
  }
  for (const metrics::Figure* d : dists()) {
    for (const std::string& s : stats()) {
      if (target == d->path + "." + s) return kind_of(d->quantity);
    }
  }
  return std::nullopt;
}

/// A unit: its name, and what a cell in it is multiplied and divided by (a divisor, not a
/// factor like 1e-3, so 2500 us is exactly 2.5 ms).
struct Unit {
  const char* name;
  double multiply;
  double divide;
};

/// The units of a kind, the default first.
std::vector<Unit> units_of(Kind k) {
  switch (k) {
    case Kind::time_ms:
      return {{"ms", 1, 1}, {"s", 1e3, 1}, {"us", 1, 1e3}, {"ns", 1, 1e6}};
    case Kind::time_s:
      return {{"s", 1, 1}, {"ms", 1, 1e3}, {"us", 1, 1e6}, {"ns", 1, 1e9}};
    case Kind::rate:
      return {{"per_s", 1, 1}, {"per_min", 1, 60}, {"per_h", 1, 3600}};
    case Kind::fraction:
      return {{"fraction", 1, 1}, {"percent", 1, 100}};
    default:
      return {};
  }
}

/// The allowed targets, compactly: the scalars, each distribution's statistics as a pattern,
/// and the identities.
std::string allowed_targets() {
  std::string out = "figures: ";
  for (const auto& [t, k] : scalars()) out += t + ", ";
  std::string names;
  for (const metrics::Figure* d : dists()) names += (names.empty() ? "" : "|") + d->path;
  std::string st;
  for (const std::string& s : stats()) st += (st.empty() ? "" : "|") + s;
  out += "{" + names + "}.{" + st + "}; identity: ";
  for (const auto& [t, k] : identities()) out += t + (t == identities().back().first ? "" : ", ");
  return out + "; and PATH=rows (JSON: where the rows are)";
}

[[noreturn]] void bad_map(const std::string& given, const std::string& what) {
  throw ImportFileError("dyno import table: --map '" + given + "': " + what);
}

std::optional<double> get(const RowValues& v, const std::string& target) {
  const auto it = v.numbers.find(target);
  return it == v.numbers.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<std::string> text(const RowValues& v, const std::string& target) {
  const auto it = v.texts.find(target);
  return it == v.texts.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<std::uint64_t> count(const RowValues& v, const std::string& target) {
  const auto d = get(v, target);
  return d ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*d)) : std::nullopt;
}

/// requests.total, ok and failed: any two give the third; all three must agree. Sets the
/// error rate, errors_by_category and the result's status; a count the row does not give is
/// null in summary.json.
void fill_requests(ImportedResult& r, const RowValues& v, const RowFail& fail) {
  std::optional<std::uint64_t> total = count(v, "requests.total");
  std::optional<std::uint64_t> ok = count(v, "requests.ok");
  std::optional<std::uint64_t> failed = count(v, "requests.failed");
  if (total && ok && failed && *ok + *failed != *total) {
    fail("requests.ok (" + std::to_string(*ok) + ") + requests.failed (" + std::to_string(*failed) +
         ") is not requests.total (" + std::to_string(*total) + ")");
  }
  if (total && ok && !failed) {
    if (*ok > *total) fail("requests.ok is more than requests.total");
    failed = *total - *ok;
  } else if (total && failed && !ok) {
    if (*failed > *total) fail("requests.failed is more than requests.total");
    ok = *total - *failed;
  } else if (ok && failed && !total) {
    total = *ok + *failed;
  }
  metrics::Summary& s = r.summary;
  s.requests_total = total.value_or(0);
  s.requests_ok = ok.value_or(0);
  s.requests_failed = failed.value_or(0);
  if (!total) r.absent_counts.push_back("requests.total");
  if (!ok) r.absent_counts.push_back("requests.ok");
  if (!failed) r.absent_counts.push_back("requests.failed");
  if (total && failed && *total > 0) {
    s.error_rate = static_cast<double>(*failed) / static_cast<double>(*total);
  }
  if (failed && *failed > 0) s.errors_by_category["imported"] = *failed;
  r.status = ok && *ok == 0 ? "failed" : failed && *failed > 0 ? "partial" : "ok";
  // The requests the tool sent: the ledger's own count, else those that ended.
  const std::optional<std::uint64_t> sent = count(v, "requests");
  r.requests = sent.value_or(total.value_or(0));
  if (r.requests > 0) r.load.requests = r.requests;
}

void fill_figures(ImportedResult& r, const RowValues& v, const RowFail& fail) {
  metrics::Summary& s = r.summary;
  const auto given_count = [&](const char* target, auto& field) {
    if (const auto c = count(v, target)) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(*c);
    } else {
      r.absent_counts.push_back(target);
    }
  };
  given_count("tokens.input_total", s.input_tokens_total);
  given_count("tokens.output_total", s.output_tokens_total);
  // Every other figure the typed summary holds, where the registry says it lives; the engine's
  // own figures a ledger states go to summary.json's server.timings.
  json::object timings{{"source", kStatedTimings}};
  for (const metrics::Figure& f : metrics::figures()) {
    if (!f.importable) continue;
    if (f.value != nullptr) s.*(f.value) = get(v, f.path);
    if (f.count != nullptr) s.*(f.count) = count(v, f.path);
    if (f.source == metrics::Source::kEngine && f.path.starts_with(kTimingsSection)) {
      if (const auto x = get(v, f.path)) timings[f.path.substr(kTimingsSection.size())] = *x;
    }
  }
  if (timings.size() > 1) r.engine_timings = std::move(timings);
  if (s.scored_requests && s.correct_requests) {
    if (*s.correct_requests > *s.scored_requests) {
      fail("quality.correct is more than quality.scored");
    }
    if (!s.accuracy && *s.scored_requests > 0) {
      s.accuracy =
          static_cast<double>(*s.correct_requests) / static_cast<double>(*s.scored_requests);
    }
  }
  const bool ok_known =
      v.numbers.count("requests.ok") > 0 ||
      (v.numbers.count("requests.total") > 0 && v.numbers.count("requests.failed") > 0);
  for (const metrics::Figure* d : dists()) {
    metrics::Distribution& out = s.*(d->dist);
    const std::string& p = d->path;
    out.mean = get(v, p + ".mean");
    out.stddev = get(v, p + ".stddev");
    out.min = get(v, p + ".min");
    out.p50 = get(v, p + ".p50");
    out.p90 = get(v, p + ".p90");
    out.p95 = get(v, p + ".p95");
    out.p99 = get(v, p + ".p99");
    out.p999 = get(v, p + ".p99_9");
    out.max = get(v, p + ".max");
    if (out.p50 && out.p95) out.jitter = *out.p95 - *out.p50;
    const bool any = out.mean || out.stddev || out.min || out.p50 || out.p90 || out.p95 ||
                     out.p99 || out.p999 || out.max;
    if (!any) continue;
    if (d->over_completed && ok_known) {
      out.count = s.requests_ok;
    } else {
      r.absent_counts.push_back(p + ".count");
    }
  }
}

/// The items of a list cell ("GPU-a, GPU-b" or "GPU-a GPU-b"): split at commas and white
/// space, empty items dropped.
std::vector<std::string> split_list(const std::string& cell) {
  std::vector<std::string> out;
  std::string item;
  for (const char c : cell + ",") {
    if (c == ',' || c == ' ' || c == '\t' || c == ';') {
      if (!item.empty()) out.push_back(std::move(item));
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

/// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  }
  return out;
}

}  // namespace

std::vector<std::string> figure_targets() {
  std::vector<std::string> out;
  for (const auto& [t, k] : scalars()) out.push_back(t);
  for (const metrics::Figure* d : dists()) {
    for (const std::string& s : stats()) out.push_back(d->path + "." + s);
  }
  return out;
}

const std::vector<std::string>& identity_targets() {
  static const std::vector<std::string> out = [] {
    std::vector<std::string> o;
    for (const auto& [t, k] : identities()) o.push_back(t);
    return o;
  }();
  return out;
}

Mapping parse_map(const std::vector<std::string>& map) {
  if (map.empty()) {
    throw ImportFileError(
        "dyno import table: no --map; give SOURCE=TARGET for each column to import, e.g. "
        "--map model=model --map 'TTFT p50 (s)=latency_ms.ttft.p50:s' (docs/interop.md, "
        "table)");
  }
  Mapping m;
  std::set<std::string> targets;
  for (const std::string& given : map) {
    const std::size_t eq = given.rfind('=');
    if (eq == std::string::npos) bad_map(given, "expected SOURCE=TARGET");
    MapEntry e;
    e.given = given;
    e.source = given.substr(0, eq);
    std::string rhs = given.substr(eq + 1);
    if (e.source.empty()) bad_map(given, "the SOURCE (a column, a JSON key or path) is empty");
    if (m.verbatim.contains(e.source)) bad_map(given, "'" + e.source + "' is mapped twice");
    m.verbatim[e.source] = rhs;
    if (rhs == "rows") {
      if (m.rows) bad_map(given, "rows are mapped twice");
      m.rows = e.source;
      continue;
    }
    const std::size_t colon = rhs.find(':');
    e.target = rhs.substr(0, colon);
    if (colon != std::string::npos) e.unit = rhs.substr(colon + 1);
    const std::optional<Kind> kind = kind_of(e.target);
    if (!kind) bad_map(given, "unknown target '" + e.target + "'; allowed: " + allowed_targets());
    e.kind = *kind;
    if (!targets.insert(e.target).second) bad_map(given, "'" + e.target + "' is mapped twice");
    if (colon != std::string::npos) {
      const auto units = units_of(e.kind);
      const auto it =
          std::find_if(units.begin(), units.end(), [&](const Unit& u) { return u.name == e.unit; });
      if (it == units.end()) {
        std::string known;
        for (const Unit& u : units) known += (known.empty() ? "" : ", ") + std::string(u.name);
        bad_map(given, "unknown unit '" + e.unit + "' for " + e.target +
                           (known.empty() ? "; it takes none" : "; use " + known));
      }
      e.multiply = it->multiply;
      e.divide = it->divide;
    }
    m.entries.push_back(std::move(e));
  }
  if (m.entries.empty()) bad_map(map.front(), "maps no column to a figure or an identity");
  return m;
}

ImportedResult result_of(const RowValues& v, const RowFail& fail) {
  ImportedResult r;
  r.source.tool = text(v, "tool").value_or(kTableTool);
  r.source.tool_version = text(v, "tool_version");
  r.source.format = "table";
  r.source.timing = "summary_only";
  r.model_id = text(v, "model");
  r.engine_name = text(v, "engine");
  r.engine_version = text(v, "engine.version");
  r.engine_commit = text(v, "engine.commit");
  r.model_revision = text(v, "model.revision");
  r.request_stream_sha256 = text(v, "request_stream.sha256");
  r.source.harness_sha256 = text(v, "harness.sha256");
  r.label = text(v, "label");
  if (const auto api = text(v, "api")) r.api = *api;
  r.pairs_as = text(v, "protocol");
  r.cell = text(v, "cell");
  r.load.imported = true;
  if (const auto c = count(v, "concurrency")) r.load.concurrency = *c;
  r.load.rate_per_s = get(v, "rate");
  const std::optional<std::string> gpu = text(v, "gpu");
  const std::vector<std::string> uuids = split_list(text(v, "gpu.uuid").value_or(""));
  const std::optional<std::string> driver = text(v, "gpu.driver");
  // The ledger's GPU column names a model (and, written "8x H100", how many); its UUID column
  // names each GPU (a list: as many as the GPU column counts), its driver column every GPU's.
  std::uint64_t n = uuids.empty() ? 1 : uuids.size();
  std::optional<std::string> name;
  if (gpu) {
    n = 1;
    name = *gpu;
    const std::size_t x = name->find_first_of("xX");
    if (x != std::string::npos && x > 0 &&
        std::all_of(name->begin(), name->begin() + static_cast<long>(x),
                    [](char c) { return c >= '0' && c <= '9'; }) &&
        x <= 3) {
      const std::string rest = name->substr(x + 1);
      const std::size_t start = rest.find_first_not_of(' ');
      if (start != std::string::npos) {
        n = std::stoull(name->substr(0, x));
        name = rest.substr(start);
      }
    }
    if (n == 0 || n > 512) fail("gpu '" + *gpu + "': expected 1 to 512 GPUs");
    if (!uuids.empty() && uuids.size() != n) {
      fail("gpu.uuid names " + std::to_string(uuids.size()) + " GPU" +
           (uuids.size() == 1 ? "" : "s") + " but gpu '" + *gpu + "' " + std::to_string(n));
    }
  }
  if (driver && !gpu && uuids.empty()) {
    fail("gpu.driver '" + *driver + "' but no gpu or gpu.uuid says how many GPUs it drives");
  }
  if (gpu || !uuids.empty()) {
    if (uuids.size() > 512) fail("gpu.uuid: expected 1 to 512 GPUs");
    r.gpus.emplace();
    for (std::uint64_t i = 0; i < n; ++i) {
      json::object g = named_gpu(std::nullopt, i, name.value_or(""));
      if (!name) g["name"] = nullptr;
      if (!uuids.empty()) g["uuid"] = uuids[i];
      if (driver) g["driver"] = *driver;
      r.gpus->push_back(std::move(g));
    }
    std::vector<std::string> stated;
    if (name) stated.push_back("model");
    if (!uuids.empty()) stated.push_back("UUID");
    if (driver) stated.push_back("driver");
    std::vector<std::string> rest;
    if (!name) rest.push_back("model");
    rest.push_back("vendor");
    if (uuids.empty()) rest.push_back("uuid");
    rest.push_back("PCI bus id");
    if (!driver) rest.push_back("driver");
    rest.push_back("memory");
    rest.push_back("power limit");
    r.gpus_unknown = "the file names the GPU " + and_list(stated) + " only: " + and_list(rest) +
                     " are not in the imported file";
  }
  fill_requests(r, v, fail);
  fill_figures(r, v, fail);
  return r;
}

}  // namespace dyno::interop::table
