// `dyno runs list|show|diff|diagnose|verify|rm|reindex|publish`: the run store (docs/store.md).
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "app/index_flag.h"  // resolve_index_url
#include "store/run_index.h"

namespace CLI {
class App;
}

namespace dyno::app {

/// Every `dyno runs …` flag, as parsed.
struct RunsOptions {
  std::string runs_root = "runs";
  std::optional<std::string> index;  ///< --index URL (PostgreSQL); else DYNO_INDEX_URL
  bool json = false;
  std::vector<std::string> ids;  ///< run ids, unique id prefixes or run directory paths
  // list
  store::RunFilter filter;
  std::optional<std::size_t> limit;
  bool campaigns = false;  ///< list campaign files instead of runs
  // verify
  bool all = false;
  std::optional<std::string> verify_key;  ///< --verify-key PUB.pem: the signer required
  // publish
  std::optional<std::string> out;
  bool in_place = false;
  bool dry_run = false;
  std::string keep;
  bool hash_gpu_uuids = false;
  bool scrub_prompt_hashes = false;
  std::vector<std::string> scrub_strings;
  std::optional<std::string> policy_file;
  std::string sign_key;  ///< --sign-key: re-sign what publishing rewrote
};

/// Registers the subcommands of `dyno runs` on `runs` (the command table made it), and runs
/// the one the user chose. Lives as long as the parse (CLI11 writes into its options).
class RunsCli {
 public:
  explicit RunsCli(CLI::App& runs);
  RunsCli(const RunsCli&) = delete;
  RunsCli& operator=(const RunsCli&) = delete;

  /// True when the command line chose `dyno runs …`.
  bool parsed() const;
  /// Runs the chosen subcommand; returns the exit code. Throws UsageError for bad ids or flags.
  int execute(std::ostream& out, std::ostream& err);

 private:
  RunsOptions o_;
  CLI::App* runs_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* diff_ = nullptr;
  CLI::App* diagnose_ = nullptr;
  CLI::App* verify_ = nullptr;
  CLI::App* rm_ = nullptr;
  CLI::App* reindex_ = nullptr;
  CLI::App* publish_ = nullptr;
};

/// A run named on the command line: an exact run id, a unique prefix of one, or the path of a
/// run directory (a symbolic link to one is followed to the directory it names). Throws
/// UsageError naming the argument when none or several runs match.
std::filesystem::path resolve_run(const std::filesystem::path& runs_root, const std::string& arg);

/// The runs root named by --runs-root; throws UsageError when it does not exist.
std::filesystem::path existing_root(const std::string& root);

/// What --since and --until accept: YYYY[-MM[-DD[THH[:MM[:SS]]]]].
const std::regex& date_pattern();

/// Rows of text as aligned columns (two spaces between), each line indented by `indent`.
/// Cells come from records: control characters are escaped (terminal_text).
std::string render_table(std::vector<std::vector<std::string>> rows, const std::string& indent);

/// The fairness view of two runs: every identity and configuration field of their manifests
/// (harness, engine, model, hardware, workload, load, slo, telemetry settings), per section,
/// with the fields that differ and how many are the same.
struct DiffField {
  std::string field;                    ///< e.g. "engine.version", "hardware.gpus[0].uuid"
  std::optional<boost::json::value> a;  ///< nullopt: absent in A
  std::optional<boost::json::value> b;
};
struct DiffSection {
  std::string name;
  std::size_t same = 0;
  std::vector<DiffField> differ;
};
std::vector<DiffSection> diff_manifests(const boost::json::object& a, const boost::json::object& b);

/// The human table of a diff (what `dyno runs diff` prints).
std::string render_diff(const std::string& a_id, const std::string& b_id,
                        const std::vector<DiffSection>& sections);

}  // namespace dyno::app
