#include "record/run_verify.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "digest/digest.h"
#include "record/record_json.h"
#include "record/record_schema.h"
#include "record/run_writer.h"
#include "record/signature.h"

namespace dyno::record {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

/// A relative path that stays inside the directory.
bool is_safe_relative(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  for (const auto& part : fs::path(name)) {
    if (part == "..") return false;
  }
  return true;
}

class Checker {
 public:
  Checker(const fs::path& dir, bool schema, bool sums_only = false,
          std::string required_signer = "")
      : schema_(schema), sums_only_(sums_only), required_signer_(std::move(required_signer)) {
    report_.dir = dir;
  }

  VerifyReport run() {
    std::error_code ec;
    if (!fs::is_directory(report_.dir, ec)) {
      add("files", "", "not a directory");
      return report_;
    }
    check_sums();
    if (sums_only_) return report_;
    add_signature_check(report_,
                        check_signature(report_.dir / kSignatureFile, report_.dir / "SHA256SUMS"),
                        kSignatureFile, required_signer_);
    check_manifest_and_summary();
    if (!summary_only_) check_requests();
    if (schema_) check_schema();
    return report_;
  }

 private:
  /// docs/schema/. Values scrubbing replaced (manifest.scrubbed_fields, e.g. a port that is now
  /// "<scrubbed:port>") are not held to their schema: a problem at such a pointer, or at an
  /// object or array holding one (anyOf reports there), is not a problem of the record.
  void check_schema() {
    std::vector<std::string> scrubbed;
    if (const auto manifest = parse_object_quiet("manifest.json")) {
      if (const auto* f = manifest->if_contains("scrubbed_fields"); f != nullptr && f->is_array()) {
        for (const auto& e : f->as_array()) {
          if (e.is_string()) scrubbed.emplace_back(e.as_string());
        }
      }
    }
    for (const auto& p : validate_run_dir(report_.dir)) {
      const std::string file = p.file.substr(0, p.file.find(':'));
      const std::string at = file + "#" + p.pointer;
      if (!excused_by_scrubbing(scrubbed, at)) {
        add("schema", p.file, (p.pointer.empty() ? std::string() : p.pointer + ": ") + p.message);
      }
    }
  }

  std::optional<json::object> parse_object_quiet(const std::string& name) {
    std::ifstream in(report_.dir / name);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::value v = json::parse(ss.str(), ec);
    if (ec || !v.is_object()) return std::nullopt;
    return v.as_object();
  }

  void add(std::string check, std::string path, std::string message) {
    report_.problems.push_back({std::move(check), std::move(path), std::move(message)});
  }

  std::optional<json::object> parse_object(const std::string& name) {
    std::string text;
    try {
      text = read_file(report_.dir / name);
    } catch (const RecordError&) {
      add(fs::path(name).stem().string(), name, "missing or unreadable");
      return std::nullopt;
    }
    std::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) {
      add(fs::path(name).stem().string(), name,
          ec ? "not valid JSON: " + ec.message() : "not a JSON object");
      return std::nullopt;
    }
    return std::move(v.as_object());
  }

  void check_sums() {
    const fs::path sums_path = report_.dir / "SHA256SUMS";
    std::string text;
    try {
      text = read_file(sums_path);
    } catch (const RecordError&) {
      add("sha256sums", "SHA256SUMS",
          "missing: the run did not finish writing its record (killed?)");
      return;
    }
    std::set<std::string> listed;
    std::istringstream in(text);
    std::string line;
    std::size_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty()) continue;
      const std::string where = "SHA256SUMS line " + std::to_string(line_no);
      // sha256sum's format: "<64 hex><space><space or *><path>".
      if (line.size() < 67 || !is_hex64(line.substr(0, 64)) || line[64] != ' ' ||
          (line[65] != ' ' && line[65] != '*')) {
        add("sha256sums", "SHA256SUMS", where + " is not \"<sha256>  <path>\"");
        continue;
      }
      const std::string digest = line.substr(0, 64);
      const std::string name = line.substr(66);
      if (!is_safe_relative(name)) {
        add("sha256sums", name, where + " names a path outside the run directory");
        continue;
      }
      if (!listed.insert(name).second) {
        add("sha256sums", name, where + " lists the file a second time");
        continue;
      }
      std::error_code ec;
      if (!fs::is_regular_file(fs::symlink_status(report_.dir / name, ec))) {
        add("sha256sums", name, "listed in SHA256SUMS but missing");
        continue;
      }
      try {
        ++report_.files_checked;
        if (digest::sha256_hex_file(report_.dir / name) != digest) {
          add("sha256sums", name, "content differs from its SHA256SUMS digest (modified)");
        }
      } catch (const digest::FileError& e) {
        add("sha256sums", name, e.what());
      }
    }
    std::error_code ec;
    for (fs::recursive_directory_iterator it(report_.dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string rel = fs::relative(it->path(), report_.dir).generic_string();
      const fs::file_status st = it->symlink_status();
      if (fs::is_directory(st)) continue;
      if (!fs::is_regular_file(st)) {
        add("files", rel, "not a regular file (a record holds only files and directories)");
        continue;
      }
      if (rel == "SHA256SUMS" || rel == kSignatureFile || listed.count(rel) != 0) continue;
      add("files", rel, "not listed in SHA256SUMS (added after the record was finished)");
    }
  }

  void check_schema_version(const json::object& o, const std::string& name) {
    const json::value* v = o.if_contains("schema_version");
    if (v == nullptr || !v->is_int64()) {
      add(fs::path(name).stem().string(), name, "no integer schema_version");
    } else if (v->get_int64() != kSchemaVersion) {
      add(fs::path(name).stem().string(), name,
          "schema_version " + std::to_string(v->get_int64()) + " is not one this dyno reads (" +
              std::to_string(kSchemaVersion) + ")");
    }
  }

  static std::optional<std::string> str(const json::object& o, const char* key) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
  }

  void check_manifest_and_summary() {
    const std::string dir_name = report_.dir.filename().string();
    const std::optional<json::object> manifest = parse_object("manifest.json");
    const std::optional<json::object> summary = parse_object("summary.json");
    if (manifest) {
      check_schema_version(*manifest, "manifest.json");
      const auto id = str(*manifest, "run_id");
      if (id != dir_name) {
        add("manifest", "manifest.json",
            "run_id '" + id.value_or("") + "' differs from the directory name '" + dir_name + "'");
      }
      const auto status = str(*manifest, "status");
      if (!status) {
        add("manifest", "manifest.json", "no status");
      } else if (*status == "running") {
        add("manifest", "manifest.json", "status is still 'running': the run did not finish");
      }
      const json::value* scrubbed = manifest->if_contains("scrubbed_fields");
      bool strings = scrubbed != nullptr && scrubbed->is_array();
      if (strings) {
        for (const auto& e : scrubbed->get_array()) strings = strings && e.is_string();
      }
      if (!strings) add("manifest", "manifest.json", "scrubbed_fields is not a list of strings");
      check_evidence(*manifest);
    }
    if (summary) {
      check_schema_version(*summary, "summary.json");
      if (manifest && str(*summary, "run_id") != str(*manifest, "run_id")) {
        add("summary", "summary.json", "run_id differs from the manifest's");
      }
      if (manifest && str(*summary, "status") != str(*manifest, "status")) {
        add("summary", "summary.json", "status differs from the manifest's");
      }
      // An imported record whose file had no per-request data (docs/record.md, Imported
      // records) has no requests.jsonl; only an imported record may say so.
      const json::value* imp = summary->if_contains("import");
      const json::value* only = imp != nullptr && imp->is_object()
                                    ? imp->as_object().if_contains("summary_only")
                                    : nullptr;
      summary_only_ = only != nullptr && only->is_bool() && only->as_bool();
      if (summary_only_ && (!manifest || !manifest->contains("source"))) {
        add("summary", "summary.json", "says summary_only but the manifest has no import source");
        summary_only_ = false;
      }
    }
  }

  void check_evidence(const json::object& manifest) {
    const json::value* ev = manifest.if_contains("evidence");
    if (ev == nullptr || !ev->is_array()) {
      add("evidence", "manifest.json", "evidence is not a list");
      return;
    }
    for (const auto& e : ev->get_array()) {
      const json::object* o = e.if_object();
      const auto path = o != nullptr ? str(*o, "path") : std::nullopt;
      const auto digest = o != nullptr ? str(*o, "sha256") : std::nullopt;
      if (!path || !digest || !is_safe_relative(*path)) {
        add("evidence", "manifest.json", "an evidence entry is not {path, sha256} inside the run");
        continue;
      }
      try {
        if (digest::sha256_hex_file(report_.dir / *path) != *digest) {
          add("evidence", *path, "content differs from the manifest's evidence digest");
        }
      } catch (const digest::FileError&) {
        add("evidence", *path, "listed as evidence in the manifest but missing");
      }
    }
  }

  void check_requests() {
    std::string text;
    try {
      text = read_file(report_.dir / "requests.jsonl");
    } catch (const RecordError&) {
      add("requests", "requests.jsonl", "missing or unreadable");
      return;
    }
    std::istringstream in(text);
    std::string line;
    std::size_t line_no = 0;
    std::size_t bad = 0;
    std::size_t first_bad = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty()) continue;
      std::error_code ec;
      const json::value v = json::parse(line, ec);
      if (ec || !v.is_object()) {
        if (bad++ == 0) first_bad = line_no;
      }
    }
    if (bad > 0) {
      add("requests", "requests.jsonl",
          std::to_string(bad) + " line(s) are not JSON objects (first: line " +
              std::to_string(first_bad) + ")");
    }
  }

  bool schema_ = true;
  bool sums_only_ = false;  // verify_run_sums: the SHA256SUMS check alone
  bool summary_only_ = false;
  std::string required_signer_;
  VerifyReport report_;
};

}  // namespace

bool excused_by_scrubbing(const std::vector<std::string>& scrubbed_fields, const std::string& at) {
  return std::any_of(scrubbed_fields.begin(), scrubbed_fields.end(),
                     [&](const std::string& s) { return s == at || s.rfind(at + "/", 0) == 0; });
}

VerifyReport verify_run_dir(const fs::path& dir, bool schema, const std::string& required_signer) {
  return Checker(dir, schema, false, required_signer).run();
}

VerifyReport verify_run_sums(const fs::path& dir) { return Checker(dir, false, true).run(); }

}  // namespace dyno::record
