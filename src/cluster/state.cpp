#include "cluster/state.h"

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "json/json_text.h"
#include "record/run_writer.h"

namespace dyno::cluster {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kStateSchema = "dyno-cluster-campaign/1";

json::object attempt_json(const Attempt& a) {
  json::object o{{"job_id", a.job_id}, {"submitted_at", a.submitted_at}, {"log", a.log.string()}};
  o["exit_code"] = a.exit_code ? json::value(*a.exit_code) : json::value(nullptr);
  return o;
}

std::string text(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) {
    throw std::runtime_error(std::string("missing string '") + key + "'");
  }
  return std::string(v->as_string());
}

CellState cell_from(const json::object& o) {
  CellState c;
  c.id = text(o, "id");
  c.name = text(o, "name");
  c.kind = text(o, "kind");
  c.label = text(o, "label");
  c.script = text(o, "script");
  c.records_needed = static_cast<std::uint32_t>(o.at("records_needed").to_number<std::int64_t>());
  for (const auto& av : o.at("attempts").as_array()) {
    const json::object& a = av.as_object();
    Attempt at;
    at.job_id = text(a, "job_id");
    at.submitted_at = text(a, "submitted_at");
    at.log = text(a, "log");
    if (const auto* e = a.if_contains("exit_code"); e != nullptr && !e->is_null()) {
      at.exit_code = static_cast<int>(e->to_number<std::int64_t>());
    }
    c.attempts.push_back(std::move(at));
  }
  return c;
}

}  // namespace

fs::path cluster_dir(const fs::path& runs_root) { return runs_root / "cluster"; }

void save_state(const CampaignState& s) {
  json::array cells;
  for (const CellState& c : s.cells) {
    json::array attempts;
    for (const Attempt& a : c.attempts) attempts.push_back(attempt_json(a));
    cells.push_back(json::object{{"id", c.id},
                                 {"name", c.name},
                                 {"kind", c.kind},
                                 {"label", c.label},
                                 {"records_needed", c.records_needed},
                                 {"script", c.script.string()},
                                 {"attempts", std::move(attempts)}});
  }
  const json::object doc{{"schema", kStateSchema},
                         {"campaign_id", s.campaign_id},
                         {"plan_name", s.plan_name},
                         {"plan_file", s.plan_file.string()},
                         {"plan_sha256", s.plan_sha256},
                         {"scheduler", s.scheduler},
                         {"runs_root", s.runs_root.string()},
                         {"created_at", s.created_at},
                         {"cells", std::move(cells)}};
  record::write_file_atomic(s.dir / "state.json", json_text::pretty(doc));
}

CampaignState load_state(const fs::path& runs_root, const std::string& id) {
  fs::path dir = cluster_dir(runs_root) / id;
  std::error_code ec;
  if (id.find('/') != std::string::npos || !fs::is_directory(dir, ec)) {
    if (fs::is_regular_file(fs::path(id) / "state.json", ec)) dir = id;
  }
  const fs::path file = dir / "state.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw PlanError(id + ": no such campaign (no " + file.string() +
                    "; give --runs-root where it was submitted, or its directory)");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    const json::object doc = json::parse(ss.str()).as_object();
    if (text(doc, "schema") != kStateSchema) {
      throw std::runtime_error("schema is not " + std::string(kStateSchema));
    }
    CampaignState s;
    s.campaign_id = text(doc, "campaign_id");
    s.plan_name = text(doc, "plan_name");
    s.plan_file = text(doc, "plan_file");
    s.plan_sha256 = text(doc, "plan_sha256");
    s.scheduler = text(doc, "scheduler");
    s.runs_root = text(doc, "runs_root");
    s.created_at = text(doc, "created_at");
    s.dir = fs::absolute(dir).lexically_normal();
    for (const auto& cv : doc.at("cells").as_array()) s.cells.push_back(cell_from(cv.as_object()));
    return s;
  } catch (const std::exception& e) {
    throw PlanError(file.string() + ": not a campaign state file dyno can read: " + e.what());
  }
}

}  // namespace dyno::cluster
