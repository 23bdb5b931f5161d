// `dyno sim fit` and `dyno sim predict` (docs/sim.md "Calibration"): the simulated engine's
// performance model fitted to measured records of one engine and model, and its predictions of
// cells, hypothetical or recorded. `dyno sim` with neither subcommand serves (sim_command.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace dyno::app {

struct SimFitOptions {
  std::vector<std::string> runs;  ///< run ids, unique prefixes or run directories
  std::string output;             ///< -o: the profile file to write
  std::string runs_root = "runs";
  std::optional<std::string> base;  ///< --base: a built-in profile name or a profile file
  int max_evaluations = 600;
  std::string attention = "per-sequence";  ///< --attention: per-sequence, shared-cache or auto
  bool json = false;
};

struct SimPredictOptions {
  std::string profile;            ///< --profile: a built-in name or a profile file
  std::vector<std::string> runs;  ///< recorded cells to predict (instead of -c/--rate)
  std::string runs_root = "runs";
  std::optional<std::uint32_t> concurrency;
  std::optional<double> rate;
  std::string arrival = "poisson";
  double burstiness = 1.0;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> input_tokens;
  std::optional<std::int64_t> output_tokens;
  std::uint64_t requests = 100;
  bool json = false;
};

/// Fits a profile to the runs, writes it to -o and prints the parameters and the in-sample
/// error per cell. Throws UsageError / interop::ExportError (exit 2) for runs that cannot be
/// fitted together: named twice, of different engines or models, failing verification, still
/// running, imported without a shared clock (summary-only or per-request timing), or without a
/// usable completed request; dyno::Error io (exit 1) when -o cannot be written.
int sim_fit_command(const SimFitOptions& options, std::ostream& out);

/// Predicts a hypothetical cell (-c or --rate with --input-tokens and --output-tokens), or each
/// recorded cell named (measured vs predicted, and the median error over them).
int sim_predict_command(const SimPredictOptions& options, std::ostream& out);

/// The `fit` and `predict` subcommands of `dyno sim` (which keeps serving without them).
class SimTools {
 public:
  explicit SimTools(CLI::App& sim);
  bool parsed() const { return fit_->parsed() || predict_->parsed(); }
  int execute(std::ostream& out);

 private:
  SimFitOptions fit_options_;
  SimPredictOptions predict_options_;
  CLI::App* fit_ = nullptr;
  CLI::App* predict_ = nullptr;
};

}  // namespace dyno::app
