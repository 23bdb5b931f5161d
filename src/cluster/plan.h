// Campaign plan files (TOML, docs/scale.md "Campaigns on Slurm"): the arms (engine spec
// files), models and protocols of a campaign, its repetitions, and the resources each cell
// asks of a scheduler. Cells = arms × models × protocols, each one ordinary dyno command run
// on the node that measures. Read with the engine module's TOML reader, so every error names
// the file, the line and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "error/error.h"

namespace dyno::cluster {

/// A plan file that cannot be used: "<file>:<line>: <key>: <message>" (kind input, exit 2).
class PlanError : public Error {
 public:
  explicit PlanError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// What a cell asks of the scheduler; unset fields are the scheduler's defaults.
struct Resources {
  std::optional<std::int64_t> gpus;       ///< --gres=gpu[:type]:N
  std::optional<std::string> gpu_type;    ///< the gres type, e.g. "h100"
  std::optional<std::string> constraint;  ///< --constraint (node features)
  std::optional<std::string> time_limit;  ///< --time, Slurm's forms (MM, HH:MM:SS, D-HH, ...)
  std::optional<std::string> partition;   ///< --partition
  std::optional<std::int64_t> cpus;       ///< --cpus-per-task
  std::optional<std::string> mem;         ///< --mem, e.g. "64G"
  std::optional<std::string> account;     ///< --account
  std::optional<std::string> qos;         ///< --qos
  /// `over`'s fields replace this one's where set.
  Resources merged(const Resources& over) const;
};

struct Arm {
  std::string name;
  std::filesystem::path engine;  ///< the engine spec file (absolute)
  std::string engine_name;       ///< the spec's `name`
  Resources resources;
};

struct Model {
  std::string name;
  std::string model;  ///< --model (the table's name unless `model` says otherwise)
  std::optional<std::string> model_file;
  std::optional<std::string> model_revision;
  Resources resources;
};

struct Protocol {
  std::string name;
  std::string kind;  ///< run | sweep | ladder | speed | real (the dyno command)
  /// The protocol's flags, in the file's order: ("--concurrencies", "1,4,16"); a flag without
  /// a value (true booleans) has an empty second.
  std::vector<std::pair<std::string, std::optional<std::string>>> flags;
  Resources resources;
};

struct Cell {
  std::size_t index = 0;  ///< 1-based, in the order arms × models × protocols
  std::string id;         ///< "c01"
  std::string name;       ///< "<arm>/<model>/<protocol>"
  const Arm* arm = nullptr;
  const Model* model = nullptr;
  const Protocol* protocol = nullptr;
  Resources resources;  ///< plan, then arm, then model, then protocol
};

struct PlanFile {
  std::filesystem::path file;  ///< absolute
  std::string name;
  /// Repetitions of every cell: protocols' --repeat, or that many `dyno run` records; unset:
  /// each protocol's own default (run: one record).
  std::optional<std::uint32_t> repetitions;
  std::optional<std::string> dyno;       ///< the dyno binary on the nodes (default: this one)
  std::optional<std::string> runs_root;  ///< absolute; --runs-root overrides it
  Resources resources;
  std::vector<Arm> arms;
  std::vector<Model> models;
  std::vector<Protocol> protocols;

  /// Every cell, arms × models × protocols (pointers into this plan: keep it alive).
  std::vector<Cell> cells() const;
};

/// Reads and checks a plan file; engine spec files are read too (their own errors name them).
/// Throws PlanError (or the engine module's SpecError) for anything that cannot be used.
PlanFile load_plan_file(const std::filesystem::path& file);

/// The resources as a person reads them: "gpus=2:h100 time=01:00:00 partition=gpu"; "-" when
/// none is set.
std::string resources_text(const Resources& r);

/// The protocol kinds a plan may name.
const std::vector<std::string>& protocol_kinds();

/// The args a plan may give a protocol of `kind` (one of protocol_kinds()): its own and those
/// every kind takes, each a flag of `dyno <kind>` without its dashes ('_' for '-'); empty for
/// an unknown kind.
std::vector<std::string> plan_args(const std::string& kind);

}  // namespace dyno::cluster
