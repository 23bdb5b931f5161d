// summary.json as a typed value (docs/record.md, docs/schema/summary.schema.json): the figures
// (metrics::Summary, each defined once in metrics/registry.h), the identity keys, what the
// client's cost, the engine and the telemetry add, the timing caveats and an import's origin.
// One writer (summary_file_to_json) for every way a record is made — a measured run, an
// import, a merge of shards, a record closed at once — and one reader (summary_file_from_json)
// that gives the same value back: writing what was read gives the same bytes.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/summary.h"
#include "record/energy_section.h"

namespace dyno::record {

using metrics::Caveat;

/// summary.json `import`: how an imported record's figures were made (docs/interop.md).
struct ImportSection {
  std::string format;  ///< the `dyno import` format
  std::string timing;  ///< shared_clock | per_request | summary_only
};

/// summary.json `client`, beyond what metrics::Summary holds (ClientCost).
struct ClientExtra {
  /// Whether the record states connections_opened (records before dyno wrote it do not).
  bool states_connections = false;
  /// Connections the client opened; nullopt (written null) when not measured.
  std::optional<std::uint64_t> connections_opened;
  std::optional<std::string> note;  ///< whose cost cpu_s is, when it is not the whole process
};

struct SummaryFile {
  std::string run_id;
  std::string status;  ///< as the manifest's, once the run ended
  metrics::Summary figures;
  /// Counts the record states as unknown (null): a summary-only import's file did not give
  /// them, e.g. "requests.total" or "latency_ms.ttft_ms.count". The typed figure reads 0.
  std::vector<std::string> unknown_counts;
  ClientExtra client;
  /// `energy` and `server` as their owners write them, absent in a file that lacks them; read
  /// typed by energy_section() and record::server_section_of(server) (server_section.h).
  std::optional<boost::json::object> energy;
  std::optional<boost::json::object> server;
  /// `prefix_cache` read from the engine's /metrics counters (source "metrics") when no
  /// request carried a cached count; figures.prefix_cache holds the per-request form.
  std::optional<boost::json::object> engine_prefix_cache;
  std::optional<std::vector<Caveat>> caveats;  ///< absent in records before dyno wrote them
  std::optional<ImportSection> import;         ///< only in an imported record

  /// Whether the count at `path` (e.g. "requests.total") is stated, not unknown.
  bool knows(const std::string& path) const;
  /// `energy` read typed (energy_section.h); nullopt without one. summary_file_from_json has
  /// checked it; a section a writer set wrong throws std::runtime_error naming the key.
  std::optional<EnergySection> energy_section() const;
};

/// The JSON of summary.json, keys in the schema's order.
boost::json::object summary_file_to_json(const SummaryFile& file);

/// Reads summary.json's object back (the inverse of summary_file_to_json). Throws
/// std::runtime_error naming the key on a malformed object. To read a run directory, use
/// read_run (run_record.h): it checks the schema_version and names the file.
SummaryFile summary_file_from_json(const boost::json::object& object);

/// The typed figures of summary.json's figure sections alone (requests … warnings).
metrics::Summary summary_from_json(const boost::json::object& object);

}  // namespace dyno::record
