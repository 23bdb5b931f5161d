#include "app/runs_verify.h"

#include <fnmatch.h>

#include <algorithm>
#include <boost/json.hpp>
#include <system_error>

#include "app/console.h"
#include "app/exit_codes.h"
#include "record/campaign_file.h"
#include "record/record_json.h"
#include "record/run_verify.h"

namespace dyno::app {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// What `runs verify` checks: a run directory or a campaign file.
struct Target {
  fs::path path;
  std::string name;  ///< run id or campaign id
  bool campaign = false;
};

/// A campaign named on the command line: the path of a campaign file (a name ending in
/// .json), or the exact id of one under the runs root.
std::optional<Target> as_campaign(const fs::path& root, const std::string& arg) {
  const std::optional<fs::path> file = record::find_campaign_file(root, arg);
  if (!file) return std::nullopt;
  return Target{*file, file->stem().string(), true};
}

std::vector<Target> targets(const RunsOptions& o) {
  std::vector<Target> out;
  if (o.all) {
    if (!o.ids.empty()) throw UsageError("runs verify: give run ids or --all, not both");
    const fs::path root = existing_root(o.runs_root);
    for (const auto& name : store::run_directory_names(root)) out.push_back({root / name, name});
    for (const auto& id : record::campaign_ids(root)) {
      out.push_back({record::campaigns_dir(root) / (id + ".json"), id, true});
    }
    return out;
  }
  if (o.ids.empty()) throw UsageError("runs verify: name the runs to verify, or --all");
  for (const auto& id : o.ids) {
    if (auto c = as_campaign(o.runs_root, id)) {
      out.push_back(*c);
      continue;
    }
    const fs::path dir = resolve_run(o.runs_root, id);
    out.push_back({dir, dir.filename().string()});
  }
  return out;
}

json::object report_json(const Target& t, const record::VerifyReport& rep) {
  json::array problems, notes;
  for (const auto& p : rep.problems) {
    problems.push_back(json::object{{"check", p.check}, {"path", p.path}, {"message", p.message}});
  }
  for (const auto& n : rep.notes) notes.push_back(json::value(n));
  json::object o{{t.campaign ? "campaign_id" : "run_id", t.name},
                 {t.campaign ? "file" : "dir", t.path.string()},
                 {"ok", rep.ok()},
                 {"files_checked", rep.files_checked},
                 {"problems", std::move(problems)}};
  if (t.campaign) o["notes"] = std::move(notes);
  return o;
}

void print_report(const Target& t, const record::VerifyReport& rep, std::ostream& out) {
  const std::string what = (t.campaign ? "campaign " : "") + terminal_text(t.name, true);
  if (rep.ok()) {
    out << "ok      " << what << " (" << rep.files_checked
        << (t.campaign ? " files of its runs match their SHA256SUMS)\n"
                       : " files match SHA256SUMS)\n");
  } else {
    out << "FAILED  " << what << "\n";
    for (const auto& p : rep.problems) {
      out << "        " << p.check << ": "
          << terminal_text((p.path.empty() ? "" : p.path + ": ") + p.message, true) << "\n";
    }
  }
  for (const auto& n : rep.notes) out << "        note: " << terminal_text(n, true) << "\n";
}

bool glob_matches(const std::optional<std::string>& pattern, const std::string& value) {
  return !pattern || ::fnmatch(pattern->c_str(), value.c_str(), 0) == 0;
}

/// started_at against --since/--until at the precision given (both inclusive).
bool in_dates(const store::RunFilter& f, const std::string& started) {
  if (f.since && started.compare(0, f.since->size(), *f.since) < 0) return false;
  if (f.until && started.compare(0, f.until->size(), *f.until) > 0) return false;
  return true;
}

}  // namespace

int cmd_verify(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  const std::vector<Target> all = targets(o);
  std::size_t failed = 0, runs = 0, campaigns = 0, campaigns_failed = 0;
  json::array reports;
  for (const auto& t : all) {
    const record::VerifyReport rep =
        t.campaign ? record::verify_campaign_file(t.path) : record::verify_run_dir(t.path);
    (t.campaign ? campaigns : runs) += 1;
    if (!rep.ok()) (t.campaign ? campaigns_failed : failed) += 1;
    if (o.json) {
      reports.push_back(report_json(t, rep));
    } else {
      print_report(t, rep, out);
    }
  }
  if (o.json) {
    out << record::pretty_json(reports);
  } else if (all.size() > 1) {
    if (runs > 0) out << runs - failed << " of " << runs << " runs verify\n";
    if (campaigns > 0) {
      out << campaigns - campaigns_failed << " of " << campaigns << " campaigns verify\n";
    }
  }
  if (failed + campaigns_failed > 0) {
    err << "dyno: ";
    if (failed > 0) err << failed << (failed == 1 ? " run fails" : " runs fail");
    if (failed > 0 && campaigns_failed > 0) err << " and ";
    if (campaigns_failed > 0) {
      err << campaigns_failed << (campaigns_failed == 1 ? " campaign fails" : " campaigns fail");
    }
    err << " verification\n";
    return kExitRunFailed;
  }
  return kExitOk;
}

int cmd_list_campaigns(const RunsOptions& o, std::ostream& out, std::ostream& err) {
  const store::RunFilter& f = o.filter;
  for (const auto* d : {&f.since, &f.until}) {
    if (*d && !std::regex_match(**d, date_pattern())) {
      throw UsageError(std::string(d == &f.since ? "--since" : "--until") + ": '" + **d +
                       "' is not a date; use YYYY-MM-DD, optionally with THH:MM:SS (UTC)");
    }
  }
  if (f.label) throw UsageError("--label: campaigns have no label; list their runs with --label");
  if (f.sort != "started") {
    throw UsageError("--sort " + f.sort + ": campaigns are listed by start time only");
  }
  const fs::path root = existing_root(o.runs_root);
  std::vector<record::CampaignRow> rows;
  for (const auto& id : record::campaign_ids(root)) {
    record::CampaignRow r = record::read_campaign_row(record::campaigns_dir(root) / (id + ".json"));
    if (!(glob_matches(f.campaign, r.campaign_id) || glob_matches(f.campaign, r.name)) ||
        !glob_matches(f.protocol, r.protocol) || !glob_matches(f.status, r.status) ||
        !glob_matches(f.engine, r.engine) || !glob_matches(f.model, r.model) ||
        !in_dates(f, r.started_at)) {
      continue;
    }
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return f.descending ? a.started_at > b.started_at : a.started_at < b.started_at;
  });
  if (o.limit && rows.size() > *o.limit) rows.resize(*o.limit);
  if (o.json) {
    json::array a;
    for (const auto& r : rows) a.push_back(record::campaign_row_to_json(r));
    out << record::pretty_json(a);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> table{
      {"CAMPAIGN", "NAME", "STARTED", "STATUS", "PROTOCOL", "ENGINE", "MODEL", "CELLS", "RUNS"}};
  for (const auto& r : rows) {
    table.push_back({r.campaign_id, r.name.empty() ? "-" : r.name, r.started_at.substr(0, 19),
                     r.status, r.protocol, r.engine, r.model, std::to_string(r.cells),
                     std::to_string(r.runs)});
  }
  out << render_table(table, "");
  out << rows.size() << (rows.size() == 1 ? " campaign" : " campaigns") << "\n";
  for (const auto& r : rows) {
    if (!r.problem) continue;
    err << "dyno: warning: campaign " << terminal_text(r.campaign_id, true) << ": "
        << terminal_text(*r.problem, true) << " (dyno runs verify "
        << terminal_text(r.campaign_id, true) << " says more)\n";
  }
  return kExitOk;
}

}  // namespace dyno::app
