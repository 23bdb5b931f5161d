// The run record's manifest.json as a typed value (docs/record.md, docs/schema/
// manifest.schema.json). The record module owns the schema, so it owns this form: `run_cell`
// fills a Manifest and RunWriter writes `manifest_to_json(m)`; nothing else assembles manifest
// JSON by hand. The identity sections (harness, model, hardware) and the workload's protocol
// are typed in manifest_sections.h; those whose shape belongs to another module (engine,
// telemetry, the workload's sampling) are kept as their owners make them and read typed through
// owner_sections.h, checked when manifest.json is read.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metrics/summary.h"
#include "record/manifest_sections.h"

namespace dyno::record {

/// workload.request_stream: which requests were sent.
struct RequestStreamRef {
  std::string source;  ///< a file, an import, a synthetic generator
  /// The canonical hash of the stream as given (workload/request_stream.h); empty (written
  /// null) only in an imported record, whose file does not keep the requests.
  std::string sha256;
  std::uint64_t count = 0;
  bool cycle = false;  ///< the load may send the stream again from its start (--cycle)
};

struct WorkloadSection {
  ProtocolRef protocol;      ///< name, version, params, cell… (docs/protocols.md)
  std::string api = "chat";  ///< chat | completions
  RequestStreamRef request_stream;
  boost::json::object sampling;  ///< what the flags set (the stream's own values win)
  std::uint64_t warmup_requests = 0;
  /// --extra-body: the fields merged into every request body (absent without the flag).
  std::optional<boost::json::object> extra_body;
  bool extra_body_override = false;  ///< --extra-body-override (written only when true)
};

/// load.replay: sent at the stream's timestamps (mode "replay", docs/protocols.md).
struct ReplaySection {
  double time_scale = 1.0;
  double from_ms = 0.0;
  std::optional<double> to_ms;
};

struct LoadSection {
  bool open_loop = false;
  std::optional<ReplaySection> replay;  ///< mode "replay" (open loop on the stream's at_ms)
  /// An imported record (manifest `source`): mode "imported", the load as the other tool
  /// states it (a concurrency cap and a rate may both be set), seed null.
  bool imported = false;
  std::optional<std::uint64_t> concurrency;  ///< closed loop only
  std::optional<double> rate_per_s;          ///< open loop only
  std::optional<std::string> arrival;        ///< poisson | constant | gamma (open loop)
  std::optional<double> burstiness;          ///< open loop
  std::uint64_t seed = 0;
  std::optional<std::uint64_t> requests;
  std::optional<double> duration_s;
  /// connect, first_token, idle, total: a number of seconds, "derived" or null (off).
  boost::json::object timeouts_s;
  /// --client-threads, --error-budget, --unreachable-after as the cell ran them (absent in
  /// imported records and records written before dyno wrote them).
  std::optional<unsigned> client_threads;
  std::optional<double> error_budget;
  std::optional<double> unreachable_after_s;
};

/// engine.exit: a launched engine that ended during the run.
struct EngineExit {
  std::string description;
  std::optional<int> code;
  std::optional<int> signal;
  std::int64_t at_ns = 0;  ///< from the run's t0
  std::string log_tail;
  std::int64_t log_tail_probe_lines_skipped = 0;
};

struct EvidenceFile {
  std::string path;  ///< relative to the run directory, under evidence/
  std::string sha256;
};

/// clock.event_stamps: which clock stamped an in-process engine's events (docs/plugins.md).
struct EventStamps {
  std::uint64_t engine = 0;
  std::uint64_t receive = 0;
  std::uint64_t rejected = 0;
};

/// One burst of probes against a clock reference (`dyno clock serve`; docs/scale.md).
struct ClockMeasurement {
  std::int64_t offset_ns = 0;       ///< this host's wall clock minus the reference's
  std::int64_t uncertainty_ns = 0;  ///< half the best probe's round trip
  std::int64_t rtt_ns = 0;          ///< the best probe's round trip
  std::uint64_t samples = 0;        ///< valid replies
  std::uint64_t probes = 0;         ///< probes sent
  std::int64_t at_unix_ns = 0;      ///< this host's wall clock at the best probe
};

/// clock.reference: this host's wall clock measured against a reference before the load and
/// after it (`dyno run --clock-ref`).
struct ClockReference {
  std::string address;  ///< --clock-ref HOST:PORT
  std::string id;       ///< the reference's id, made when it started
  ClockMeasurement before;
  std::optional<ClockMeasurement> after;  ///< null when the second burst failed
  std::optional<std::string> after_error;
  /// after.offset_ns - before.offset_ns; nullopt without `after`.
  std::optional<std::int64_t> drift_ns() const {
    return after ? std::optional(after->offset_ns - before.offset_ns) : std::nullopt;
  }
};

struct ClockSection {
  /// null in a record closed by a second interrupt that exited at once.
  std::optional<std::int64_t> t0_steady_ns;
  std::optional<std::int64_t> measured_start_ns;
  std::optional<EventStamps> event_stamps;
  /// t0 on the wall clock (CLOCK_REALTIME, ns since the Unix epoch), read beside the steady
  /// clock; ± t0_unix_uncertainty_ns (half the time the pair of readings took).
  std::optional<std::int64_t> t0_unix_ns;
  std::optional<std::int64_t> t0_unix_uncertainty_ns;
  /// The host's boot id (/proc/sys/kernel/random/boot_id): records with the same one share
  /// the steady clock.
  std::optional<std::string> boot_id;
  std::optional<ClockReference> reference;  ///< only with --clock-ref
};

/// shard: this record is shard k (0-based) of n of one run's load (`dyno run --shard`).
struct ShardSection {
  std::uint64_t k = 0;
  std::uint64_t n = 1;
  std::optional<std::string> start_at;  ///< --start-at, ISO 8601 UTC
};

/// merged_from: a record merged from shard records (`dyno runs merge`; docs/scale.md).
struct MergedShard {
  std::string run_id;
  std::uint64_t k = 0;
  std::int64_t offset_ns = 0;  ///< added to the shard's trace times to put them on this t0
  /// measured_offset only: the shard's clock.reference figures the offset used.
  std::optional<std::int64_t> clock_offset_ns;
  std::optional<std::int64_t> clock_uncertainty_ns;
  std::optional<std::int64_t> clock_drift_ns;
};
struct MergedFrom {
  /// "steady_clock" (one host), "measured_offset" (wall clocks corrected by offsets measured
  /// against one reference) | "wall_clock" (wall clocks as they were)
  std::string clock_method;
  std::int64_t uncertainty_ns = 0;   ///< of the offsets as dyno can state it
  std::int64_t start_spread_ns = 0;  ///< spread of the shards' measured starts on this t0
  std::vector<MergedShard> shards;
  std::optional<std::string> clock_reference_id;  ///< measured_offset only
  /// wall_clock only: why the offsets between the hosts' clocks are not measured.
  std::optional<std::string> unmeasured_reason;
  /// Set when a shard's clock uncertainty or drift exceeded the bound and the merge was told to
  /// go on (--accept-clock-uncertainty): which shards and figures.
  std::optional<std::string> clock_bound_exceeded;
};

/// derived_from: a record made from another record, not measured (`dyno rescore`;
/// docs/record.md "Derived records").
struct DerivedFrom {
  std::string kind = "rescore";
  std::string run_id;             ///< the source record
  std::string summary_sha256;     ///< of the source's summary.json
  std::string sha256sums_sha256;  ///< of the source's SHA256SUMS (so: of every file it holds)
  boost::json::value scorer;      ///< what --scorer gave (name or object); null: the requests' own
  std::string created_at;         ///< ISO 8601 UTC
  HarnessIdentity harness;        ///< the dyno that derived it
};

/// source: where an imported record came from (`dyno import`; docs/interop.md).
struct ImportSource {
  std::string tool;                         ///< e.g. "vllm bench serve"
  std::optional<std::string> tool_version;  ///< null when the file does not say
  std::string file;                         ///< the file's name (not its path)
  std::string sha256;                       ///< of the file's bytes
  std::string format;                       ///< the `dyno import` format, e.g. "vllm-bench"
  std::string imported_at;                  ///< ISO 8601 UTC
  /// What the record's timing rests on: "shared_clock" (per-request send times on one clock),
  /// "per_request" (each request's times from its own send: no shared time axis) or
  /// "summary_only" (no per-request data).
  std::string timing;
  boost::json::object file_fields;  ///< the file's own settings kept verbatim (e.g. its date)
  /// Which result of the file this record is, when the file holds several (a JSONL line
  /// "line 3", a JSON path "$.benchmarks[1]", a table row "row 2"); nullopt: the whole file.
  std::optional<std::string> part;
  /// The evidence copy had secrets redacted (scrub_secrets): its bytes, and so its digest,
  /// differ from the file's.
  bool evidence_redacted = false;
  /// SHA-256 of the harness that measured, as the file states it (a ledger's harness hash,
  /// `dyno import table --map …=harness.sha256`): what a board's harness check compares for
  /// an imported record. nullopt: the file does not say.
  std::optional<std::string> harness_sha256;
};

struct Manifest {
  std::string run_id;
  std::optional<std::string> label;
  std::optional<std::string> campaign;
  std::string status =
      "running";           ///< running | ok | partial | interrupted | failed | engine_crashed
  std::string started_at;  ///< ISO 8601 UTC
  std::optional<std::string> ended_at;
  std::optional<DerivedFrom> derived_from;  ///< only in a derived record
  std::optional<ImportSource> source;       ///< only in an imported record
  std::optional<MergedFrom> merged_from;    ///< only in a merged record
  std::optional<ShardSection> shard;        ///< only in a shard's record
  HarnessIdentity harness;
  boost::json::object engine;
  std::optional<EngineExit> engine_exit;  ///< written as engine.exit
  ModelIdentity model;
  HardwareIdentity hardware;
  WorkloadSection workload;
  LoadSection load;
  metrics::Slo slo;
  std::vector<metrics::Warning> warnings;
  std::vector<std::string> scrubbed_fields;
  std::vector<EvidenceFile> evidence;
  std::optional<boost::json::object> telemetry;  ///< written once the run has ended
  std::optional<ClockSection> clock;             ///< written once the run has ended
};

/// The JSON of manifest.json, keys in the schema's order (the file people read).
boost::json::object manifest_to_json(const Manifest& manifest);

/// Reads manifest.json's object back (the inverse of manifest_to_json). Throws
/// std::runtime_error naming the key on a malformed object. To read a run directory, use
/// read_record_json (record_reader.h) first: it checks the record's schema_version.
Manifest manifest_from_json(const boost::json::object& object);

}  // namespace dyno::record
