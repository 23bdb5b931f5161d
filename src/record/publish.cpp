// Scrubbing run directories (in place, or published as a scrubbed copy): the record's files
// through a scrub::Scrubber, then its manifest and SHA256SUMS brought up to date.
#include "record/publish.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <random>
#include <set>
#include <system_error>

#include "digest/digest.h"
#include "json/json_text.h"
#include "record/campaign_file.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "record/signature.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;
using scrub::Scrubber;
using scrub::ScrubError;
using scrub::ScrubPolicy;

namespace {

struct Rewrite {
  std::string rel;
  std::string text;
};

/// The record's files but SHA256SUMS, SIGNATURE and manifest.json, relative to `dir`, sorted.
std::vector<std::string> files_to_scrub(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), dir).generic_string();
    if (rel == "SHA256SUMS" || rel == kSignatureFile || rel == "manifest.json") continue;
    files.push_back(rel);
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// A JSON Lines file, line by line; a line that is not JSON is scrubbed as text.
bool scrub_jsonl(const Scrubber& scrubber, const std::string& rel, const std::string& text,
                 std::string& result, std::set<std::string>& changed) {
  bool did = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::error_code ec;
    json::value v = line.empty() ? json::value() : json::parse(line, ec);
    if (line.empty() || ec) {  // not JSON: scrub it as text
      std::string copy = line;
      if (scrubber.scrub_text(copy)) {
        changed.insert(rel);
        did = true;
      }
      result += copy + "\n";
      continue;
    }
    std::set<std::string> pointers;
    scrubber.scrub_json(v, pointers);
    if (pointers.empty()) {
      result += line + "\n";
    } else {
      did = true;
      for (const auto& p : pointers) changed.insert(rel + "#" + p);
      result += json_text::compact(v) + "\n";
    }
  }
  if (!text.empty() && text.back() != '\n' && !result.empty()) result.pop_back();
  return did;
}

/// One file's text scrubbed by its kind (.jsonl, .json, else text) into `result`; true when
/// anything changed (each change noted in `changed`).
bool scrub_file(const Scrubber& scrubber, const std::string& rel, const std::string& text,
                std::string& result, std::set<std::string>& changed) {
  const std::string ext = fs::path(rel).extension().string();
  bool did = false;
  if (ext == ".jsonl") {
    did = scrub_jsonl(scrubber, rel, text, result, changed);
  } else if (ext == ".json") {
    std::error_code ec;
    json::value v = json::parse(text, ec);
    if (!ec) {
      std::set<std::string> pointers;
      scrubber.scrub_json(v, pointers);
      did = !pointers.empty();
      for (const auto& p : pointers) changed.insert(rel + "#" + p);
      if (did) result = pretty_json(v);
    } else {
      result = text;
      did = scrubber.scrub_text(result);
      if (did) changed.insert(rel);
    }
  } else {
    result = text;
    did = scrubber.scrub_text(result);
    if (did) changed.insert(rel);
  }
  return did;
}

/// The scrubbed manifest's bookkeeping: evidence digests and the scrubbed fields' list.
void update_manifest(json::object& m, const std::set<std::string>& changed,
                     const std::vector<Rewrite>& rewrites) {
  // Evidence digests follow the scrubbed files.
  if (auto* ev = m.if_contains("evidence"); ev != nullptr && ev->is_array()) {
    for (auto& e : ev->get_array()) {
      auto* o = e.if_object();
      if (o == nullptr || !o->contains("path") || !o->at("path").is_string()) continue;
      const std::string path(o->at("path").get_string());
      for (const auto& r : rewrites) {
        if (r.rel == path) (*o)["sha256"] = digest::sha256_hex(r.text);
      }
    }
  }
  std::set<std::string> all(changed.begin(), changed.end());
  if (const auto* old = m.if_contains("scrubbed_fields"); old != nullptr && old->is_array()) {
    for (const auto& e : old->get_array()) {
      if (e.is_string()) all.insert(std::string(e.get_string()));
    }
  }
  json::array list;
  for (const auto& c : all) list.push_back(json::value(c));
  m["scrubbed_fields"] = std::move(list);
}

/// After a scrub: a SIGNATURE over an SHA256SUMS that changed is removed; with a key the record
/// is signed (again).
void resign(const fs::path& dir, const digest::SigningKey* key, bool sums_changed,
            ScrubOutcome& out) {
  std::error_code ec;
  if (sums_changed && fs::exists(dir / kSignatureFile, ec) && key == nullptr) {
    fs::remove(dir / kSignatureFile, ec);
    if (ec) {
      throw ScrubError("cannot remove " + (dir / kSignatureFile).string() +
                       ", which signed SHA256SUMS before it was rewritten: " + ec.message());
    }
    out.signature_dropped = true;
  }
  if (key != nullptr) {
    sign_record(dir, *key);
    out.signed_again = true;
  }
}

ScrubOutcome scrub_dir(const fs::path& dir, const ScrubPolicy& policy, bool dry_run,
                       const digest::SigningKey* key) {
  ScrubOutcome out;
  // The record verified (require_verified): its manifest is an object of a known version.
  const json::object manifest = read_record_json(dir / "manifest.json");
  const Scrubber scrubber(policy, manifest);
  std::set<std::string> changed;
  std::vector<Rewrite> rewrites;

  for (const std::string& rel : files_to_scrub(dir)) {
    const std::string text = read_file(dir / rel);
    if (text.find('\0') != std::string::npos) {
      out.files_skipped.push_back(rel);
      continue;
    }
    std::string result;
    if (scrub_file(scrubber, rel, text, result, changed)) {
      rewrites.push_back({rel, std::move(result)});
    }
  }

  json::value mv = manifest;
  std::set<std::string> pointers;
  scrubber.scrub_json(mv, pointers);
  for (const auto& p : pointers) changed.insert("manifest.json#" + p);
  out.changed.assign(changed.begin(), changed.end());
  if (changed.empty()) {
    if (!dry_run) resign(dir, key, false, out);
    return out;
  }

  update_manifest(mv.as_object(), changed, rewrites);
  rewrites.push_back({"manifest.json", pretty_json(mv)});

  for (const auto& r : rewrites) out.files_rewritten.push_back(r.rel);
  if (dry_run) return out;
  try {
    for (const auto& r : rewrites) write_file_atomic(dir / r.rel, r.text);
    write_sha256sums(dir);
    resign(dir, key, true, out);
  } catch (const RecordError& e) {
    throw ScrubError(std::string(e.what()) + " (the record is half scrubbed: scrub it again)");
  } catch (const digest::FileError& e) {  // a file SHA256SUMS covers could not be read
    throw ScrubError(std::string(e.what()) + " (the record is half scrubbed: scrub it again)");
  }
  return out;
}

void require_verified(const fs::path& dir) {
  const VerifyReport report = verify_run_dir(dir, /*schema=*/false);  // integrity
  if (report.ok()) return;
  const VerifyProblem& p = report.problems.front();
  throw ScrubError("run " + dir.filename().string() + " does not verify (" +
                   (p.path.empty() ? "" : p.path + ": ") + p.message +
                   (report.problems.size() > 1
                        ? "; and " + std::to_string(report.problems.size() - 1) + " more"
                        : "") +
                   "); a scrubbed copy would re-sign it, so it is left alone. "
                   "`dyno runs verify` lists every problem");
}

}  // namespace

ScrubOutcome scrub_run_dir(const fs::path& dir, const ScrubPolicy& policy, bool dry_run,
                           const digest::SigningKey* key) {
  require_verified(dir);
  return scrub_dir(dir, policy, dry_run, key);
}

ScrubOutcome publish_run(const fs::path& run_dir, const fs::path& out_root,
                         const ScrubPolicy& policy, const digest::SigningKey* key) {
  require_verified(run_dir);
  const std::string name = run_dir.filename().string();
  const fs::path dest = out_root / name;
  std::error_code ec;
  if (fs::exists(dest, ec)) {
    throw ScrubError(dest.string() + " already exists; remove it or publish to another --out");
  }
  // A copy into the record itself would copy itself (and the copy would be part of the record).
  const fs::path run_abs = fs::weakly_canonical(run_dir, ec);
  const fs::path out_abs = fs::weakly_canonical(out_root, ec);
  const auto [r, o] = std::mismatch(run_abs.begin(), run_abs.end(), out_abs.begin(), out_abs.end());
  if (!ec && r == run_abs.end()) {
    throw ScrubError("--out " + out_root.string() + " is inside the run directory " +
                     run_dir.string() + "; publish to a directory outside it (e.g. public/)");
  }
  fs::create_directories(out_root, ec);
  if (ec) throw ScrubError("cannot create " + out_root.string() + ": " + ec.message());
  std::random_device rd;
  const fs::path tmp = out_root / ("." + name + ".publishing-" + std::to_string(rd()));
  fs::copy(run_dir, tmp, fs::copy_options::recursive, ec);
  if (ec) {
    const std::string cause = ec.message();  // before remove_all() reuses ec
    fs::remove_all(tmp, ec);
    throw ScrubError("cannot copy " + run_dir.string() + " into " + out_root.string() + ": " +
                     cause + "; check that " + out_root.string() +
                     " is writable and has room, or publish to another --out");
  }
  ScrubOutcome out;
  try {
    out = scrub_dir(tmp, policy, false, key);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, dest, ec);
  if (ec) {
    const std::string cause = ec.message();
    fs::remove_all(tmp, ec);
    throw ScrubError("cannot move the scrubbed copy to " + dest.string() + ": " + cause);
  }
  return out;
}

namespace {

/// Every run a verified campaign file lists, in its order (cells[].runs[].run_id).
std::vector<std::string> campaign_runs(const json::object& doc) {
  std::vector<std::string> ids;
  const json::value* cells = doc.if_contains("cells");
  if (cells == nullptr || !cells->is_array()) return ids;
  for (const auto& c : cells->get_array()) {
    const json::value* runs = c.is_object() ? c.get_object().if_contains("runs") : nullptr;
    if (runs == nullptr || !runs->is_array()) continue;
    for (const auto& r : runs->get_array()) {
      const json::value* id = r.is_object() ? r.get_object().if_contains("run_id") : nullptr;
      if (id != nullptr && id->is_string()) ids.emplace_back(id->get_string());
    }
  }
  return ids;
}

/// Each run of the campaign pinned to its published record.
void repin(json::object& doc, const fs::path& out_root) {
  for (auto& c : doc["cells"].as_array()) {
    for (auto& r : c.as_object()["runs"].as_array()) {
      json::object& run = r.as_object();
      const std::string id(run.at("run_id").as_string());
      run["record_sha256"] = digest::sha256_hex_file(out_root / id / "SHA256SUMS");
    }
  }
}

}  // namespace

CampaignPublishOutcome publish_campaign(const fs::path& campaign_file, const fs::path& out_root,
                                        const ScrubPolicy& policy) {
  const std::string id = campaign_file.stem().string();
  // Only a campaign that verifies is published: its pins are re-made for the scrubbed copies,
  // and a campaign changed after it was written would otherwise be signed again.
  const VerifyReport report = verify_campaign_file(campaign_file, /*schema=*/false);
  if (!report.ok()) {
    const VerifyProblem& p = report.problems.front();
    throw ScrubError("campaign " + id + " does not verify (" +
                     (p.path.empty() ? "" : p.path + ": ") + p.message +
                     (report.problems.size() > 1
                          ? "; and " + std::to_string(report.problems.size() - 1) + " more"
                          : "") +
                     "), so it is not published. `dyno runs verify " + id +
                     "` lists every problem");
  }
  json::object doc = read_record_json(campaign_file);
  const std::vector<std::string> runs = campaign_runs(doc);
  if (runs.empty()) throw ScrubError("campaign " + id + " lists no run: nothing to publish");
  CampaignPublishOutcome out;
  out.file = campaigns_dir(out_root) / (id + ".json");
  // Every destination free before anything is written.
  std::error_code ec;
  if (fs::exists(out.file, ec)) {
    throw ScrubError(out.file.string() + " already exists; remove it or publish to another --out");
  }
  for (const auto& run : runs) {
    if (fs::exists(out_root / run, ec)) {
      throw ScrubError((out_root / run).string() + " (a run of campaign " + id +
                       ") already exists; remove it or publish to another --out");
    }
  }
  const fs::path root = campaign_file.parent_path().parent_path();
  for (const auto& run : runs)
    out.runs.emplace_back(run, publish_run(root / run, out_root, policy));

  // The file scrubbed as a record's JSON is, with what every run's manifest names (its host
  // name, its GPU UUIDs); its bookkeeping — scrubbed_fields, the pins, the digest — after.
  doc.erase(kCampaignDigestKey);
  json::value v = doc;
  std::set<std::string> pointers;
  for (const auto& run : runs) {
    Scrubber(policy, read_record_json(root / run / "manifest.json")).scrub_json(v, pointers);
  }
  json::object& scrubbed = v.as_object();
  repin(scrubbed, out_root);
  std::set<std::string> all;
  for (const auto& p : pointers) all.insert(id + ".json#" + p);
  out.changed.assign(all.begin(), all.end());
  if (const auto* old = scrubbed.if_contains("scrubbed_fields");
      old != nullptr && old->is_array()) {
    for (const auto& e : old->get_array()) {
      if (e.is_string()) all.insert(std::string(e.get_string()));
    }
  }
  json::array list;
  for (const auto& c : all) list.push_back(json::value(c));
  scrubbed.erase("scrubbed_fields");
  scrubbed["scrubbed_fields"] = std::move(list);
  fs::create_directories(campaigns_dir(out_root), ec);
  if (ec)
    throw ScrubError("cannot create " + campaigns_dir(out_root).string() + ": " + ec.message());
  write_file_atomic(out.file, signed_campaign_text(std::move(scrubbed)));
  return out;
}

}  // namespace dyno::record
