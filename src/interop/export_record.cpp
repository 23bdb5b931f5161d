#include "interop/export_record.h"

#include <stdexcept>

#include "record/run_verify.h"

namespace dyno::interop {

using record::verify_run_dir;
using record::VerifyProblem;
using record::VerifyReport;

namespace fs = std::filesystem;

ExportRecord read_export_record(const fs::path& dir) {
  const std::string run_id = dir.filename().string();
  if (record::still_running(dir)) {
    throw ExportError("run " + run_id +
                      " is still running (manifest status `running`): only a finished record "
                      "can be exported");
  }
  const VerifyReport report = verify_run_dir(dir, true);
  if (!report.ok()) {
    const VerifyProblem& p = report.problems.front();
    throw ExportError("run " + run_id + " fails `dyno runs verify` (" +
                      std::to_string(report.problems.size()) + " problem" +
                      (report.problems.size() == 1 ? "" : "s") +
                      "; the first: " + (p.path.empty() ? "" : p.path + ": ") + p.message +
                      "): only a record that verifies is exported");
  }
  // Verified above: the checksums need not be read twice.
  ExportRecord read = record::read_run(dir, {.requests = true, .integrity = false});
  read.run_id = run_id;  // the directory's name, as the messages above say
  return read;
}

}  // namespace dyno::interop
