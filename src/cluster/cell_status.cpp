// A cell's status: its records in the run store first (they are the truth), then what the
// scheduler says of its last job.
#include <boost/json.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "cluster/campaign.h"
#include "record/campaign_file.h"
#include "record/run_verify.h"

namespace dyno::cluster {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::optional<json::object> read_object(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(ss.str(), ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

std::string string_at(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

/// What the run store holds of a cell: done when enough of its records verify with status ok;
/// otherwise `problem` says what there is.
struct Found {
  bool done = false;
  std::vector<std::string> records;
  std::string problem;
};

std::string first_problem(const record::VerifyReport& rep) {
  if (rep.problems.empty()) return "";
  const auto& p = rep.problems.front();
  return p.check + (p.path.empty() ? "" : " " + p.path) + ": " + p.message;
}

/// `dyno run` cells: run directories whose id ends with the cell's label.
Found find_run_records(const CampaignState& state, const CellState& cell) {
  Found f;
  std::size_t ok = 0;
  std::vector<std::string> bad;
  std::error_code ec;
  for (fs::directory_iterator it(state.runs_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!ends_with(name, "-" + cell.label) || !fs::is_directory(it->path())) continue;
    const auto manifest = read_object(it->path() / "manifest.json");
    const std::string status = manifest ? string_at(*manifest, "status") : "";
    const record::VerifyReport rep = record::verify_run_dir(it->path());
    if (rep.ok() && status == "ok") {
      ++ok;
      f.records.push_back(name);
    } else if (!rep.ok()) {
      bad.push_back(name + " (status " + (status.empty() ? "unreadable" : status) +
                    ", does not verify: " + first_problem(rep) + ")");
    } else {
      bad.push_back(name + " (status " + status + ")");
    }
  }
  f.done = ok >= cell.records_needed;
  if (!f.done) {
    f.problem = std::to_string(ok) + " of " + std::to_string(cell.records_needed) +
                " records verified with status ok";
    for (const auto& b : bad) f.problem += "; " + b;
  }
  return f;
}

/// Protocol cells: the protocol's campaign file whose runs carry the cell's label.
Found find_campaign_file(const CampaignState& state, const CellState& cell) {
  Found f;
  std::vector<std::string> bad;
  const fs::path dir = record::campaigns_dir(state.runs_root);
  for (const std::string& id : record::campaign_ids(state.runs_root)) {
    const fs::path file = dir / (id + ".json");
    const auto doc = read_object(file);
    if (!doc || !doc->contains("cells") || !doc->at("cells").is_array()) continue;
    bool mine = false;
    for (const auto& c : doc->at("cells").as_array()) {
      if (!c.is_object() || !c.as_object().contains("runs")) continue;
      for (const auto& r : c.as_object().at("runs").as_array()) {
        if (r.is_object() && ends_with(string_at(r.as_object(), "run_id"), "-" + cell.label)) {
          mine = true;
        }
      }
    }
    if (!mine) continue;
    const std::string status = string_at(*doc, "status");
    const record::VerifyReport rep = record::verify_campaign_file(file);
    if (rep.ok() && status == "ok") {
      f.done = true;
      f.records.push_back("campaigns/" + id + ".json");
    } else {
      bad.push_back("campaigns/" + id + ".json (status " + status +
                    (rep.ok() ? "" : ", does not verify: " + first_problem(rep)) + ")");
    }
  }
  if (!f.done) {
    // A killed protocol leaves run records but no campaign file.
    std::size_t runs = 0;
    std::error_code ec;
    for (fs::directory_iterator it(state.runs_root, ec), end; !ec && it != end; it.increment(ec)) {
      runs += ends_with(it->path().filename().string(), "-" + cell.label) ? 1 : 0;
    }
    f.problem = bad.empty() ? "no campaign file of the protocol (" + std::to_string(runs) +
                                  " run records with the cell's label)"
                            : "";
    for (const auto& b : bad) f.problem += (f.problem.empty() ? "" : "; ") + b;
  }
  return f;
}

std::vector<std::string> tail_lines(const fs::path& log, std::size_t n) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 16384 ? size - 16384 : 0;
  in.seekg(from);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (from > 0 && !lines.empty()) lines.erase(lines.begin());  // a partial first line
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

/// Slurm's job states that end a job (squeue -l lists them).
const std::set<std::string>& failed_states() {
  static const std::set<std::string> s = {"FAILED",        "TIMEOUT",  "NODE_FAIL", "BOOT_FAIL",
                                          "OUT_OF_MEMORY", "DEADLINE", "PREEMPTED", "COMPLETED",
                                          "SPECIAL_EXIT",  "REVOKED"};
  return s;
}

}  // namespace

CellStatus cell_status(const CampaignState& state, const CellState& cell) {
  CellStatus st;
  const Found found =
      cell.kind == "run" ? find_run_records(state, cell) : find_campaign_file(state, cell);
  st.records = found.records;
  if (!cell.attempts.empty()) {
    st.job_id = cell.attempts.back().job_id;
    st.log = cell.attempts.back().log;
  }
  if (found.done) {
    st.state = "done";
    return st;
  }
  if (cell.attempts.empty()) {
    st.state = "missing";
    st.reason = "never submitted";
    return st;
  }
  const Attempt& last = cell.attempts.back();
  const std::string records = "; records: " + found.problem;
  if (state.scheduler == "local") {
    if (!last.exit_code) {
      st.state = "failed";
      st.reason = "the local run did not finish (dyno campaign was stopped)" + records;
    } else {
      st.state = "failed";
      st.reason = "exit code " + std::to_string(*last.exit_code) + records;
    }
  } else {
    const std::optional<JobInfo> job = query_slurm_job(last.job_id);
    if (!job) {
      st.state = "failed";
      st.reason = "Slurm no longer knows job " + last.job_id + records;
    } else if (job->state == "PENDING" || job->state == "CONFIGURING" || job->state == "REQUEUED" ||
               job->state == "SUSPENDED") {
      st.state = "pending";
      st.reason = job->state + (job->reason.empty() ? "" : " (" + job->reason + ")");
      return st;
    } else if (job->state == "RUNNING" || job->state == "COMPLETING" || job->state == "STAGE_OUT" ||
               job->state == "RESIZING") {
      st.state = "running";
      st.reason = job->state;
      return st;
    } else if (job->state == "CANCELLED") {
      st.state = "cancelled";
      st.reason = "job " + last.job_id + " cancelled" + records;
    } else {
      st.state = "failed";
      st.reason = "job " + last.job_id + " " + job->state +
                  (job->exit_code.empty() ? "" : " (exit " + job->exit_code + ")") +
                  (job->reason.empty() || job->reason == "None" ? "" : " reason " + job->reason) +
                  (failed_states().count(job->state) == 0 ? " (a state dyno does not know)" : "") +
                  records;
    }
  }
  st.log_tail = tail_lines(last.log, 8);
  return st;
}

bool needs_submit(const CellStatus& status) {
  return status.state == "failed" || status.state == "cancelled" || status.state == "missing";
}

}  // namespace dyno::cluster
