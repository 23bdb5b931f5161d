#include "record/campaign_file.h"

#include <algorithm>
#include <boost/json.hpp>
#include <set>
#include <system_error>

#include "digest/digest.h"
#include "json/json_text.h"
#include "record/record_reader.h"
#include "record/record_schema.h"
#include "record/run_writer.h"
#include "record/signature.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::string text_at(const json::object& o, std::initializer_list<std::string_view> keys) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (std::string_view k : keys) {
    if (cur == nullptr || (v = cur->if_contains(k)) == nullptr) return "";
    cur = v->if_object();
  }
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

/// A run id as a campaign file may name it: a plain directory name, never a path.
bool plain_name(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos &&
         id.find('\\') == std::string::npos && id.front() != '.';
}

class CampaignChecker {
 public:
  CampaignChecker(const fs::path& file, bool schema, std::string required_signer)
      : file_(file), schema_(schema), required_signer_(std::move(required_signer)) {
    report_.dir = file;
  }

  VerifyReport run() {
    json::object doc;
    try {
      doc = read_record_json(file_);
    } catch (const RecordReadError& e) {
      add("campaign", "", e.what());
      return report_;
    }
    if (schema_) {
      // A published campaign's scrubbed values ("<scrubbed:port>") are not held to the schema.
      std::vector<std::string> scrubbed;
      if (const auto* f = doc.if_contains("scrubbed_fields"); f != nullptr && f->is_array()) {
        for (const auto& e : f->as_array()) {
          if (e.is_string()) scrubbed.emplace_back(e.as_string());
        }
      }
      for (const auto& p : validate_campaign_file(file_)) {
        if (excused_by_scrubbing(scrubbed, p.file + "#" + p.pointer)) continue;
        add("schema", p.file, (p.pointer.empty() ? std::string() : p.pointer + ": ") + p.message);
      }
    }
    check_digest(doc);
    check_signature_sidecar();
    check_runs(doc);
    return report_;
  }

 private:
  void add(std::string check, std::string path, std::string message) {
    report_.problems.push_back({std::move(check), std::move(path), std::move(message)});
  }

  void check_digest(const json::object& doc) {
    if (doc.if_contains(kCampaignDigestKey) == nullptr) {
      report_.notes.push_back(
          "no sha256: written before dyno signed campaign files, so a change to it cannot be "
          "detected");
      return;
    }
    std::string text;
    try {
      text = read_file(file_);
    } catch (const std::exception& e) {
      add("campaign", file_.filename().string(), e.what());
      return;
    }
    const auto d = campaign_digests(text);
    if (!d) {
      add("campaign", file_.filename().string(),
          "its sha256 is not the last member as dyno writes it: the file was re-formatted or "
          "changed after it was written");
    } else if (d->recorded != d->computed) {
      add("campaign", file_.filename().string(),
          "sha256 does not match the file's content (recomputed " + d->computed +
              "): the campaign file was changed after it was written");
    }
  }

  void check_signature_sidecar() {
    const fs::path sidecar = campaign_signature_path(file_);
    const auto check = check_signature(sidecar, file_);
    if (check && schema_) {
      for (const auto& p : validate_signature_file(sidecar)) {
        add("schema", p.file, (p.pointer.empty() ? std::string() : p.pointer + ": ") + p.message);
      }
    }
    add_signature_check(report_, check, sidecar.filename().string(), required_signer_);
  }

  void check_runs(const json::object& doc) {
    const fs::path root = file_.parent_path().parent_path();
    const json::value* cells = doc.if_contains("cells");
    if (cells == nullptr || !cells->is_array()) return;  // the schema names it
    std::size_t unpinned = 0;
    std::set<std::string> seen;
    for (const auto& cv : cells->as_array()) {
      const json::value* runs = cv.is_object() ? cv.as_object().if_contains("runs") : nullptr;
      if (runs == nullptr || !runs->is_array()) continue;
      const std::string cell = text_at(cv.as_object(), {"cell"});
      for (const auto& rv : runs->as_array()) {
        if (!rv.is_object()) continue;
        const std::string id = text_at(rv.as_object(), {"run_id"});
        if (!plain_name(id) || !seen.insert(id).second) {
          add("campaign", "",
              "cell " + cell + " lists run '" + id + "', which is " +
                  (plain_name(id) ? "listed twice" : "not a run id"));
          continue;
        }
        check_run(root, cell, id, text_at(rv.as_object(), {"record_sha256"}), unpinned);
      }
    }
    if (unpinned > 0) {
      report_.notes.push_back(std::to_string(unpinned) +
                              " run(s) without record_sha256 (written before dyno pinned "
                              "campaign runs): their records were verified but not pinned");
    }
  }

  void check_run(const fs::path& root, const std::string& cell, const std::string& id,
                 const std::string& pinned, std::size_t& unpinned) {
    const fs::path dir = root / id;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      add("runs", id, "cell " + cell + ": the record is not in " + root.string());
      return;
    }
    if (pinned.empty()) {
      ++unpinned;
    } else {
      std::string have;
      try {
        have = digest::sha256_hex_file(dir / "SHA256SUMS");
      } catch (const std::exception&) {
        have.clear();
      }
      if (have != pinned) {
        add("runs", id + "/SHA256SUMS",
            "cell " + cell + ": " +
                (have.empty() ? "missing" : "sha256 " + have + " is not " + pinned) +
                ", the digest the campaign recorded: the record changed after the campaign");
      }
    }
    const VerifyReport run = verify_run_dir(dir, schema_, required_signer_);
    report_.files_checked += run.files_checked;
    for (const auto& p : run.problems)
      add(p.check, id + (p.path.empty() ? "" : "/" + p.path), p.message);
  }

  fs::path file_;
  bool schema_;
  std::string required_signer_;
  VerifyReport report_;
};

}  // namespace

namespace {

constexpr std::string_view kClose = "\n}\n";  // how json_text::pretty ends an object

std::string digest_member(const std::string& hex) {
  return std::string(",\n  \"") + kCampaignDigestKey + "\": \"" + hex + "\"";
}

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string signed_campaign_text(json::object doc) {
  doc.erase(kCampaignDigestKey);
  const std::string text = json_text::pretty(doc);
  if (doc.empty() || !text.ends_with(kClose)) return text;  // never: a campaign has members
  const std::string body = text.substr(0, text.size() - kClose.size());
  return body + digest_member(digest::sha256_hex(text)) + std::string(kClose);
}

std::optional<CampaignDigests> campaign_digests(const std::string& text) {
  const std::size_t len = digest_member(std::string(64, '0')).size() + kClose.size();
  if (text.size() < len || !text.ends_with(kClose)) return std::nullopt;
  const std::string tail = text.substr(text.size() - len);
  const std::string hex = tail.substr(tail.size() - kClose.size() - 1 - 64, 64);
  if (!is_hex64(hex) || tail != digest_member(hex) + std::string(kClose)) return std::nullopt;
  const std::string unsigned_text = text.substr(0, text.size() - len) + std::string(kClose);
  return CampaignDigests{hex, digest::sha256_hex(unsigned_text)};
}

fs::path campaigns_dir(const fs::path& runs_root) { return runs_root / "campaigns"; }

std::optional<fs::path> find_campaign_file(const fs::path& runs_root, const std::string& arg) {
  std::error_code ec;
  const fs::path p(arg);
  if (p.extension() == ".json" && fs::is_regular_file(p, ec)) return p;
  if (arg.find('/') != std::string::npos) return std::nullopt;
  const fs::path file = campaigns_dir(runs_root) / (arg + ".json");
  if (fs::is_regular_file(file, ec)) return file;
  return std::nullopt;
}

std::vector<std::string> campaign_ids(const fs::path& runs_root) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (fs::directory_iterator it(campaigns_dir(runs_root), ec), end; !ec && it != end;
       it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != ".json" || p.filename().string().front() == '.') continue;
    if (!it->is_regular_file(ec)) continue;
    ids.push_back(p.stem().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

CampaignRow read_campaign_row(const fs::path& file) {
  CampaignRow row;
  row.campaign_id = file.stem().string();
  json::object doc;
  try {
    doc = read_record_json(file);
  } catch (const RecordReadError& e) {
    row.status = "unreadable";
    row.problem = e.what();
    return row;
  }
  row.name = text_at(doc, {"name"});
  row.started_at = text_at(doc, {"started_at"});
  row.status = text_at(doc, {"status"});
  row.user_status = text_at(doc, {"user_status"});
  row.protocol = text_at(doc, {"protocol", "name"});
  row.engine = text_at(doc, {"engine", "name"});
  row.model = text_at(doc, {"model"});
  if (const auto* cells = doc.if_contains("cells"); cells != nullptr && cells->is_array()) {
    row.cells = cells->as_array().size();
    for (const auto& c : cells->as_array()) {
      const json::value* runs = c.is_object() ? c.as_object().if_contains("runs") : nullptr;
      if (runs != nullptr && runs->is_array()) row.runs += runs->as_array().size();
    }
  }
  return row;
}

json::object campaign_row_to_json(const CampaignRow& row) {
  const auto or_null = [](const std::string& s) {
    return s.empty() ? json::value(nullptr) : json::value(s);
  };
  return json::object{{"campaign_id", row.campaign_id},
                      {"name", or_null(row.name)},
                      {"started_at", row.started_at},
                      {"status", row.status},
                      {"user_status", or_null(row.user_status)},
                      {"protocol", row.protocol},
                      {"engine", row.engine},
                      {"model", row.model},
                      {"cells", row.cells},
                      {"runs", row.runs},
                      {"problem", row.problem ? json::value(*row.problem) : json::value(nullptr)}};
}

VerifyReport verify_campaign_file(const fs::path& file, bool schema,
                                  const std::string& required_signer) {
  return CampaignChecker(file, schema, required_signer).run();
}

}  // namespace dyno::record
