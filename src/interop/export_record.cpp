#include "interop/export_record.h"

#include <stdexcept>

#include "record/record_reader.h"
#include "record/run_verify.h"
#include "record/run_writer.h"

namespace dyno::interop {

using record::manifest_from_json;
using record::read_record_json;
using record::read_requests;
using record::RecordReadError;
using record::run_in_progress;
using record::verify_run_dir;
using record::VerifyProblem;
using record::VerifyReport;

namespace fs = std::filesystem;

ExportRecord read_export_record(const fs::path& dir) {
  ExportRecord r;
  r.dir = dir;
  r.run_id = dir.filename().string();
  r.manifest_json = read_record_json(dir / "manifest.json");
  const boost::json::value* status = r.manifest_json.if_contains("status");
  if ((status != nullptr && status->is_string() && status->get_string() == "running") ||
      run_in_progress(dir)) {
    throw ExportError("run " + r.run_id +
                      " is still running (manifest status `running`): only a finished record "
                      "can be exported");
  }
  const VerifyReport report = verify_run_dir(dir, true);
  if (!report.ok()) {
    const VerifyProblem& p = report.problems.front();
    throw ExportError("run " + r.run_id + " fails `dyno runs verify` (" +
                      std::to_string(report.problems.size()) + " problem" +
                      (report.problems.size() == 1 ? "" : "s") +
                      "; the first: " + (p.path.empty() ? "" : p.path + ": ") + p.message +
                      "): only a record that verifies is exported");
  }
  try {
    r.manifest = manifest_from_json(r.manifest_json);
  } catch (const std::runtime_error& e) {
    throw RecordReadError((dir / "manifest.json").string() + ": " + e.what());
  }
  r.summary = read_record_json(dir / "summary.json");
  r.has_requests = fs::exists(dir / "requests.jsonl");
  if (r.has_requests) r.traces = read_requests(dir);
  return r;
}

}  // namespace dyno::interop
