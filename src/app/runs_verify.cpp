#include "app/runs_verify.h"

#include <fnmatch.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <memory>
#include <system_error>

#include "app/console.h"
#include "app/exit_codes.h"
#include "digest/digest.h"
#include "digest/signing.h"
#include "protocol/campaign_check.h"
#include "record/campaign_file.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_record.h"
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
  o["notes"] = std::move(notes);
  o["signed_by"] = rep.signed_by.empty() ? json::value(nullptr) : json::value(rep.signed_by);
  return o;
}

void print_report(const Target& t, const record::VerifyReport& rep, std::ostream& out) {
  const std::string what = (t.campaign ? "campaign " : "") + terminal_text(t.name, true);
  if (rep.ok()) {
    out << "ok      " << what << " (" << rep.files_checked
        << (t.campaign ? " files of its runs match their SHA256SUMS" : " files match SHA256SUMS")
        << (rep.signed_by.empty() ? "" : "; signed by key " + rep.signed_by) << ")\n";
  } else {
    out << "FAILED  " << what << "\n";
    for (const auto& p : rep.problems) {
      out << "        " << p.check << ": "
          << terminal_text((p.path.empty() ? "" : p.path + ": ") + p.message, true) << "\n";
    }
  }
  for (const auto& n : rep.notes) out << "        note: " << terminal_text(n, true) << "\n";
}

/// The run index as the witness of the records it indexed: a record whose SHA256SUMS is no
/// longer the one the index remembers was changed (and re-checksummed) after dyno wrote it.
/// Opened only when there is one (--index, DYNO_INDEX_URL, or <runs-root>/index.sqlite), for
/// runs under the runs root; it never fails a record for being unable to answer (a note).
class IndexWitness {
 public:
  IndexWitness(const RunsOptions& o, std::ostream& err)
      : root_(o.runs_root), url_(resolve_index_url(o.index)), err_(err) {}

  void check(const Target& t, record::VerifyReport& rep) {
    std::error_code ec;
    if (!fs::equivalent(t.path.parent_path(), root_, ec)) return;  // a record outside the store
    if (!open(rep)) return;
    std::optional<store::RunRow> row;
    try {
      row = index_->find(t.name);
    } catch (const std::exception& e) {
      rep.notes.push_back("the run index could not be read: " + std::string(e.what()));
      return;
    }
    if (!row) {
      rep.notes.push_back("the run index (" + index_->name() +
                          ") does not hold this run: no remembered digest to compare");
      return;
    }
    if (!row->record_sha256) {
      rep.notes.push_back("the run index (" + index_->name() +
                          ") remembers no digest of this record (indexed before dyno "
                          "remembered digests): a change re-checksummed since cannot be seen");
      return;
    }
    std::string now;
    try {
      now = digest::sha256_hex_file(t.path / "SHA256SUMS");
    } catch (const digest::FileError&) {
      return;  // no SHA256SUMS: verify_run_dir has said so
    }
    if (now != *row->record_sha256) {
      rep.problems.push_back(
          {"index", "SHA256SUMS",
           "sha256 " + now + " is not " + *row->record_sha256 + ", the digest the run index (" +
               index_->name() +
               ") remembers from when dyno indexed the record: the record changed after it "
               "was written"});
    }
  }

 private:
  bool open(record::VerifyReport& rep) {
    if (tried_) return index_ != nullptr;
    tried_ = true;
    std::error_code ec;
    if (url_.empty() && !fs::is_regular_file(root_ / store::kIndexFileName, ec)) return false;
    try {
      index_ = std::make_unique<store::RunIndex>(root_, err_, url_);
    } catch (const std::exception& e) {
      rep.notes.push_back("the run index could not be opened: " + std::string(e.what()));
    }
    return index_ != nullptr;
  }

  fs::path root_;
  std::string url_;
  std::ostream& err_;
  bool tried_ = false;
  std::unique_ptr<store::RunIndex> index_;
};

/// A campaign whose files and records verify: its headline, session telemetry and energy flags
/// recomputed from the records it pins (protocol/campaign_check.h), each member that differs a
/// problem naming the campaign, the member and both values. A file whose own digest was
/// recomputed after a figure was forged fails here.
void recompute_rollups(const Target& t, record::VerifyReport& rep) {
  if (!rep.ok()) return;  // the records it pins are not the ones it was made from
  try {
    const json::object doc = record::read_record_json(t.path);
    const fs::path root = t.path.parent_path().parent_path();
    std::map<std::string, record::RunRecord> records;
    for (const auto& c : doc.at("cells").as_array()) {
      for (const auto& r : c.at("runs").as_array()) {
        const std::string id(r.at("run_id").as_string());
        records.emplace(id, record::read_run(root / id, {.requests = true, .integrity = false}));
      }
    }
    std::size_t shown = 0, more = 0;
    for (const auto& m : protocol::check_rollups(doc, records)) {
      if (++shown > 12) {
        ++more;
        continue;
      }
      rep.problems.push_back({"recompute", "",
                              "campaign " + t.name + ": " + m.member + " is " + m.in_file +
                                  " in the file, " + m.recomputed +
                                  " recomputed from the records it pins"});
    }
    if (more > 0) {
      rep.problems.push_back({"recompute", "", std::to_string(more) + " more member(s) differ"});
    }
  } catch (const std::exception& e) {
    rep.problems.push_back(
        {"recompute", "",
         "campaign " + t.name +
             ": its roll-ups could not be recomputed from its records: " + e.what()});
  }
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
  // The signer required: the fingerprint of --verify-key's public key ("" = any or none).
  const std::string signer =
      o.verify_key
          ? digest::key_fingerprint(about(
                "--verify-key", [&] { return digest::public_key_from_pem_file(*o.verify_key); }))
          : std::string();
  const std::vector<Target> all = targets(o);
  IndexWitness index(o, err);
  std::size_t failed = 0, runs = 0, campaigns = 0, campaigns_failed = 0;
  json::array reports;
  for (const auto& t : all) {
    record::VerifyReport rep = t.campaign ? record::verify_campaign_file(t.path, true, signer)
                                          : record::verify_run_dir(t.path, true, signer);
    if (t.campaign) {
      recompute_rollups(t, rep);
    } else {
      index.check(t, rep);
    }
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
