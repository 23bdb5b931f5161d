// The manifest's identity sections typed (docs/record.md, docs/schema/manifest.schema.json):
// the dyno that measured (`harness`, also `derived_from.harness`), the model (`model`), the
// machine (`hardware`, its `gpus[]` entries) and the protocol that ran the record
// (`workload.protocol`). Each is written in the order its producers write it —
// engine_session/host_identity.cpp, engine_session/engine_session.cpp, telemetry/energy_report.cpp,
// interop/result_import.cpp, app/run_command.cpp, protocol/campaign.cpp — and a key the schema
// leaves optional is written only when set, so a record read and written again gives the same
// bytes. A key this dyno does not know (the schema allows none) is kept in `extra`, written
// after the others.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dyno::record {

/// Keys and their texts in the order written: an `unknown` object (why each field left null is
/// not known) or a device's `details`.
struct TextMap {
  std::vector<std::pair<std::string, std::string>> entries;

  /// The text at `key`; nullptr when absent.
  const std::string* find(std::string_view key) const;
  std::optional<std::string> get(std::string_view key) const {
    const std::string* v = find(key);
    return v != nullptr ? std::optional<std::string>(*v) : std::nullopt;
  }
  /// Replaces the text at `key`, or appends the key.
  void set(std::string_view key, std::string text);
  bool empty() const { return entries.empty(); }
  bool operator==(const TextMap&) const = default;
};

/// `harness`: a dyno build, baked in at build time (schema $defs/harness).
struct HarnessIdentity {
  std::string name = "dyno";
  std::string version;
  std::string git_commit;  ///< the source's commit, or "unknown" outside a git checkout
  bool git_dirty = false;
  std::string build_type;
  std::optional<std::string> executable_sha256;  ///< null when the binary could not be read
  /// Why git_commit is unknown or executable_sha256 null (written only when set).
  std::optional<TextMap> unknown;
  boost::json::object extra;
};

/// `model`: the model's identity (schema $defs/model). Without --model-file only id, revision,
/// fingerprint (null) and unknown; a GGUF file adds format, architecture, parameter_count,
/// quantization, context_length, tokenizer_model and fingerprint_method; safetensors shards
/// add format, parameter_count, dtypes, shards and fingerprint_method.
struct ModelIdentity {
  std::string id;  ///< as requested
  std::optional<std::string> revision;
  std::optional<std::string> fingerprint;
  std::optional<std::string> format;  ///< gguf | safetensors
  std::optional<std::string> architecture;
  std::optional<std::uint64_t> parameter_count;
  std::optional<std::string> quantization;
  /// Absent (no GGUF file), null (the GGUF file does not say) or the length.
  std::optional<std::optional<std::uint64_t>> context_length;
  std::optional<std::string> tokenizer_model;
  /// safetensors dtype -> tensor count, in the order written.
  std::optional<std::vector<std::pair<std::string, std::uint64_t>>> dtypes;
  std::optional<std::uint64_t> shards;
  std::optional<std::string> fingerprint_method;
  /// Why revision or fingerprint is null (written only when set).
  std::optional<TextMap> unknown;
  boost::json::object extra;
};

/// A device as a record names it (schema $defs/device_identity): an entry of `hardware.gpus`
/// (a GPU a telemetry source found, or one an imported file names) and of the telemetry
/// section's devices; unknown fields are null.
struct DeviceEntry {
  std::optional<std::string> vendor;  ///< null only in an import naming the GPU model only
  std::string kind = "gpu";           ///< gpu | cpu-package | host
  std::uint64_t index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> pci_bus_id;
  std::optional<std::string> driver;
  std::optional<std::int64_t> memory_total_bytes;
  std::optional<double> power_limit_w;
  std::vector<std::string> capabilities;
  std::optional<TextMap> details;  ///< anything else worth recording (written only when set)
  boost::json::object extra;
};

/// `hardware`: the host that measured (schema properties.hardware).
struct HardwareIdentity {
  std::optional<std::string> host;
  std::optional<std::string> cpu_model;
  std::optional<std::uint64_t> cpu_cores;  ///< null only in an imported record
  std::optional<std::int64_t> ram_bytes;
  std::vector<DeviceEntry> gpus;  ///< empty with --telemetry off or no GPU source
  /// Why each field left null (and an empty gpus) is unknown; written when set.
  std::optional<TextMap> unknown;
  /// A short line naming the hardware (absent in imports and in records written before dyno
  /// wrote it).
  std::optional<std::string> label;
  boost::json::object extra;

  /// hardware.unknown.<key>, when the record gives that reason.
  std::optional<std::string> unknown_reason(std::string_view key) const {
    return unknown ? unknown->get(key) : std::nullopt;
  }
};

/// workload.protocol.selection: how a campaign picks one repetition of a cell.
struct ProtocolSelection {
  std::string rule = "median";
  std::string metric;  ///< the figure the rule ranks by, e.g. output_tokens_per_s
  std::uint64_t repetitions = 1;
  boost::json::object extra;
};

/// `workload.protocol` (schema $defs/protocol; docs/protocols.md): `dyno run`'s {name "run",
/// version}; an import's {name "import", version, pairs_as?, cell?}; one repetition of a
/// campaign cell {name, version, params, cell, cell_params, repetition, repetitions,
/// selection}. Written in that order, each optional key only when set.
struct ProtocolRef {
  std::string name = "run";
  std::int64_t version = 1;
  std::optional<boost::json::object> params;  ///< the protocol's parameters (each its own)
  /// An import: the protocol a board pairs it with, when the file states one (else "run").
  std::optional<std::string> pairs_as;
  std::optional<std::string> cell;
  std::optional<boost::json::object> cell_params;  ///< the cell's parameters (each its own)
  std::optional<std::uint64_t> repetition;         ///< 1-based
  std::optional<std::uint64_t> repetitions;
  std::optional<ProtocolSelection> selection;
  boost::json::object extra;
};

boost::json::object harness_to_json(const HarnessIdentity& harness);
boost::json::object model_to_json(const ModelIdentity& model);
boost::json::object device_to_json(const DeviceEntry& gpu);
boost::json::object hardware_to_json(const HardwareIdentity& hardware);
boost::json::object protocol_to_json(const ProtocolRef& protocol);

/// The inverses of the writers above. `path` is the section's key path in manifest.json (as
/// errors name it): "harness", "derived_from.harness", "model", "hardware",
/// "hardware.gpus[]", "workload.protocol". A malformed section throws std::runtime_error naming the
/// file and the key, e.g. "manifest.json: hardware.cpu_cores is not a non-negative integer".
HarnessIdentity harness_from_json(const boost::json::object& o,
                                  const std::string& path = "harness");
ModelIdentity model_from_json(const boost::json::object& o, const std::string& path = "model");
DeviceEntry device_from_json(const boost::json::object& o,
                             const std::string& path = "hardware.gpus[]");
HardwareIdentity hardware_from_json(const boost::json::object& o,
                                    const std::string& path = "hardware");
ProtocolRef protocol_from_json(const boost::json::object& o,
                               const std::string& path = "workload.protocol");

}  // namespace dyno::record
