#include "record/close_at_once.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "metrics/summary.h"
#include "record/manifest.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "record/summary_file.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr const char* kWhy = "a second interrupt ended dyno at once";

/// requests.jsonl as the appender left it: its complete lines, in index order. A line the
/// appender was still writing is dropped. Replacing the file (rename) also detaches it from
/// the appender's descriptor, so a late append cannot change what SHA256SUMS will say.
void settle_requests(const fs::path& dir) {
  const fs::path path = dir / "requests.jsonl";
  std::string text = fs::exists(path) ? read_file(path) : std::string();
  text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  std::vector<std::pair<std::int64_t, std::string>> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::error_code ec;
    const json::value v = json::parse(line, ec);
    const json::value* index = !ec && v.is_object() ? v.as_object().if_contains("index") : nullptr;
    if (index == nullptr || !index->is_int64()) continue;  // not a line dyno finished writing
    lines.emplace_back(index->as_int64(), std::move(line));
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string body;
  for (const auto& [index, l] : lines) body += l + "\n";
  write_file_atomic(path, body);
}

/// The summary of the requests on disk, with the load's declared shape from the manifest.
metrics::Summary summarize(const fs::path& dir, const Manifest& manifest) {
  std::vector<metrics::Trace> traces = read_requests(dir);
  std::sort(traces.begin(), traces.end(),
            [](const metrics::Trace& a, const metrics::Trace& b) { return a.index < b.index; });
  metrics::SummaryOptions so;
  so.open_loop = manifest.load.open_loop;
  if (!so.open_loop && manifest.load.concurrency) {
    so.declared_concurrency = static_cast<double>(*manifest.load.concurrency);
  }
  so.slo = manifest.slo;
  metrics::Summary summary = metrics::summarize_run(traces, so);
  summary.warnings.push_back(
      {metrics::WarningCode::kExitedAtOnce,
       std::string(kWhy) +
           ": this record was closed from the requests it had written (requests in flight and "
           "the client's cost, energy and /metrics figures are not in it)",
       "send one interrupt and let dyno finish the record; a second one is for when it hangs"});
  return summary;
}

}  // namespace

void close_record_at_once(const fs::path& dir, const CloseContext& context) {
  if (fs::exists(dir / "SHA256SUMS")) return;  // finished
  Manifest manifest = manifest_from_json(read_record_json(dir / "manifest.json"));
  settle_requests(dir);
  if (manifest.status != "running") {
    // The run had written its final manifest and summary: only the checksums were missing.
    write_sha256sums(dir);
    return;
  }
  const metrics::Summary summary = summarize(dir, manifest);
  SummaryFile summary_file;
  summary_file.run_id = manifest.run_id;
  summary_file.status = "interrupted";
  summary_file.figures = summary;
  summary_file.client.states_connections = true;  // null: not measured
  summary_file.client.note = std::string(kWhy) + ": the client's cost was not measured";
  summary_file.energy =
      json::object{{"energy_j", nullptr}, {"reason", std::string("not measured: ") + kWhy}};
  summary_file.server = json::object{
      {"source", nullptr}, {"reason", std::string("no /metrics snapshot after the run: ") + kWhy}};
  write_file_atomic(dir / "summary.json", pretty_json(summary_file_to_json(summary_file)));

  manifest.warnings = summary.warnings;
  manifest.status = "interrupted";
  manifest.ended_at = iso8601_utc(std::chrono::system_clock::now());
  manifest.clock = ClockSection{};  // the load's t0 is not known outside it
  manifest.telemetry =
      json::object{{"mode", context.telemetry_mode},
                   {"period_ms", json::object{{"requested", context.telemetry_period_ms}}},
                   {"backends", json::array()},
                   {"idle_baseline", nullptr}};
  write_file_atomic(dir / "manifest.json", pretty_json(manifest_to_json(manifest)));
  write_sha256sums(dir);
}

namespace {
std::mutex g_discard_mu;
fs::path g_discard;  // guarded by g_discard_mu
}  // namespace

void set_discard_at_once(const fs::path& dir) {
  std::lock_guard lock(g_discard_mu);
  g_discard = dir;
}

void close_open_records_at_once(const CloseContext& context, std::ostream& err) {
  try {
    // Held until the process exits: no record file changes under the closer's feet.
    const bool locked = record_write_lock().try_lock_for(std::chrono::seconds(1));
    fs::path discard;
    {
      std::lock_guard lock(g_discard_mu);
      discard = g_discard;
    }
    if (!discard.empty()) {  // an import's staging directory: nothing of it stays
      std::error_code ec;
      fs::remove_all(discard, ec);
      err << (ec ? "dyno: could not remove " + discard.string() + ": " + ec.message()
                 : std::string("dyno: nothing was imported"))
          << "\n";
    }
    if (!locked) {
      err << "dyno: a record write did not finish within 1 s; the run's record stays open "
             "(status running)\n";
      return;
    }
    for (const fs::path& dir : open_run_dirs()) {
      if (!discard.empty() &&
          dir.lexically_normal().string().starts_with(discard.lexically_normal().string())) {
        continue;
      }
      try {
        close_record_at_once(dir, context);
        err << "dyno: closed " << dir.string() << " as interrupted\n";
      } catch (const std::exception& e) {
        err << "dyno: could not close " << dir.string() << ": " << e.what() << "\n";
      }
    }
  } catch (...) {
    err << "dyno: could not close the run's record\n";
  }
}

}  // namespace dyno::record
