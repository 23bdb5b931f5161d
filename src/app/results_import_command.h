// `dyno import FORMAT FILE…`: other tools' saved results into the run store, one record per
// result a file holds (docs/interop.md, docs/record.md "Imported records"). Not `dyno stream
// import`, which turns a data set into a request stream.
#pragma once

#include <boost/json/array.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "interop/import_formats.h"
#include "interop/result_import.h"

namespace CLI {
class App;
}

namespace dyno::app {

struct ResultsImportOptions {
  std::string format;  ///< one of interop::import_formats()
  std::vector<std::string> files;
  std::string runs_root = "runs";
  std::optional<std::string> label;
  std::optional<std::string> model;
  std::optional<std::string> engine;
  std::optional<std::string> api;  ///< --api: chat | completions, when a file does not say
  bool json = false;
  interop::ImportReadOptions read;  ///< --map
  std::string sign_key;             ///< --sign-key: each record signed
};

/// Adds `dyno import`'s arguments and options to `cmd`; the format argument lists
/// interop::import_formats().
void add_results_import_options(CLI::App& cmd, ResultsImportOptions& options);

/// One imported file as the command reports it.
struct ImportedRun {
  interop::ImportOutcome outcome;
  std::optional<std::string> duplicate_of;  ///< the earlier run the index found it equal to
};

/// One line a file: "imported FILE (FORMAT, timing T) as run ID in DIR", and a duplicate
/// line when the index holds an earlier import of the same bytes.
std::string render_imports(const std::vector<ImportedRun>& runs, const std::string& format);

/// The same as JSON (`--json`): [{file, sha256, part, format, timing, run_id, record_dir,
/// duplicate_of}].
boost::json::array imports_to_json(const std::vector<ImportedRun>& runs, const std::string& format);

/// Reads every file first (a bad one: exit 2 naming the file and the line or JSON path, and
/// nothing is imported), then writes and indexes one record per result. Throws dyno::Error.
int results_import_command(const ResultsImportOptions& options, std::ostream& out,
                           std::ostream& err);

}  // namespace dyno::app
