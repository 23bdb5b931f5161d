#include "record/record_schema.h"

#include <boost/json/parse.hpp>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "record/embedded_schemas.h"
#include "record/record_reader.h"
#include "record/signature.h"

namespace dyno::record {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

/// Compiles every embedded schema once (a broken one throws SchemaError at first use).
const std::map<std::string, JsonSchema, std::less<>>& schemas() {
  static const std::map<std::string, JsonSchema, std::less<>> all = [] {
    std::map<std::string, JsonSchema, std::less<>> m;
    for (const auto& s : embedded::kSchemas) {
      std::string kind(s.file);
      kind = kind.substr(0, kind.find('.'));  // "manifest.schema.json" -> "manifest"
      m.emplace(kind, JsonSchema::parse(s.text, std::string(s.file)));
    }
    return m;
  }();
  return all;
}

bool read_text(const fs::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

void add(std::vector<SchemaProblem>& out, const std::string& file,
         std::vector<SchemaProblem> found) {
  for (auto& p : found) {
    p.file = file;
    out.push_back(std::move(p));
  }
}

/// Parses and validates one JSON file; returns the document (null when unreadable).
json::value check_file(const fs::path& path, const std::string& file, std::string_view kind,
                       std::vector<SchemaProblem>& out) {
  std::string text;
  if (!read_text(path, text)) {
    out.push_back({file, "", "cannot read the file"});
    return nullptr;
  }
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) {
    out.push_back({file, "", "not valid JSON: " + ec.message()});
    return nullptr;
  }
  add(out, file, record_schema(kind).validate(doc));
  return doc;
}

/// Validates every line of a JSONL file; `file:<line>` names each problem.
void check_lines(const fs::path& path, const std::string& file, std::string_view kind,
                 std::vector<SchemaProblem>& out) {
  std::string text;
  if (!read_text(path, text)) {
    out.push_back({file, "", "cannot read the file"});
    return;
  }
  if (!text.empty() && text.back() != '\n') {
    out.push_back({file, "", "the last line is not terminated by a newline (a torn write?)"});
  }
  const JsonSchema& schema = record_schema(kind);
  std::istringstream in(text);
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    const std::string where = file + ":" + std::to_string(n);
    if (line.empty()) {
      out.push_back({where, "", "empty line (the writer never writes one)"});
      continue;
    }
    boost::system::error_code ec;
    const json::value v = json::parse(line, ec);
    if (ec) {
      out.push_back({where, "", "not valid JSON: " + ec.message()});
      continue;
    }
    add(out, where, schema.validate(v));
  }
}

}  // namespace

const JsonSchema& record_schema(std::string_view kind) {
  const auto& all = schemas();
  const auto it = all.find(kind);
  if (it == all.end()) {
    throw std::invalid_argument("no record schema named '" + std::string(kind) + "'");
  }
  return it->second;
}

std::vector<SchemaProblem> validate_run_dir(const fs::path& run_dir) {
  std::vector<SchemaProblem> out;
  if (!fs::is_directory(run_dir)) {
    out.push_back({run_dir.string(), "", "not a directory"});
    return out;
  }
  std::string status;
  if (!fs::exists(run_dir / "manifest.json")) {
    out.push_back({"manifest.json", "", "missing"});
  } else {
    // The version first: a newer record is not judged by this dyno's schemas.
    try {
      read_record_json(run_dir / "manifest.json");
    } catch (const RecordReadError& e) {
      std::string message = e.what();
      const std::string prefix = (run_dir / "manifest.json").string() + ": ";
      if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
      out.push_back({"manifest.json", "", message});
      return out;
    }
    const json::value manifest =
        check_file(run_dir / "manifest.json", "manifest.json", "manifest", out);
    if (const auto* s =
            manifest.is_object() ? manifest.get_object().if_contains("status") : nullptr;
        s != nullptr && s->is_string()) {
      status = std::string(s->get_string());
    }
  }
  bool summary_only = false;  // an imported record without per-request data (docs/interop.md)
  if (fs::exists(run_dir / "summary.json")) {
    const json::value summary =
        check_file(run_dir / "summary.json", "summary.json", "summary", out);
    const json::value* imp =
        summary.is_object() ? summary.get_object().if_contains("import") : nullptr;
    const json::value* only = imp != nullptr && imp->is_object()
                                  ? imp->get_object().if_contains("summary_only")
                                  : nullptr;
    summary_only = only != nullptr && only->is_bool() && only->get_bool();
  } else if (status != "running") {
    out.push_back({"summary.json", "", "missing (the manifest says the run ended)"});
  }
  if (fs::exists(run_dir / "requests.jsonl")) {
    check_lines(run_dir / "requests.jsonl", "requests.jsonl", "request", out);
  } else if (!summary_only) {
    out.push_back({"requests.jsonl", "", "missing"});
  }
  if (fs::exists(run_dir / "telemetry.jsonl")) {
    check_lines(run_dir / "telemetry.jsonl", "telemetry.jsonl", "telemetry", out);
  }
  if (fs::exists(run_dir / kSignatureFile)) {
    check_file(run_dir / kSignatureFile, kSignatureFile, "signature", out);
  }
  return out;
}

std::vector<SchemaProblem> validate_campaign_file(const fs::path& path) {
  std::vector<SchemaProblem> out;
  const std::string file = path.filename().string();
  try {
    read_record_json(path);
  } catch (const RecordReadError& e) {
    std::string message = e.what();
    const std::string prefix = path.string() + ": ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    out.push_back({file, "", message});
    return out;
  }
  check_file(path, file, "campaign", out);
  return out;
}

std::vector<SchemaProblem> validate_signature_file(const fs::path& path) {
  std::vector<SchemaProblem> out;
  check_file(path, path.filename().string(), "signature", out);
  return out;
}

}  // namespace dyno::record
