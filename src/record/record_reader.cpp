#include "record/record_reader.h"

#include <boost/json/parse.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "json/json_text.h"
#include "record/record_json.h"

namespace dyno::record {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RecordReadError(path.string() + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void check_schema_version(const json::value& doc, const std::string& where) {
  if (!doc.is_object()) throw RecordReadError(where + ": not a dyno record (not a JSON object)");
  const json::value* v = doc.get_object().if_contains("schema_version");
  if (v == nullptr) {
    throw RecordReadError(where + ": no schema_version: not a dyno record, or a damaged one");
  }
  const bool integral = v->is_int64() || v->is_uint64() ||
                        (v->is_double() && std::isfinite(v->get_double()) &&
                         std::floor(v->get_double()) == v->get_double());
  if (!integral) {
    throw RecordReadError(where + ": schema_version must be an integer, found " +
                          json_text::compact(*v));
  }
  const double version = v->is_double()  ? v->get_double()
                         : v->is_int64() ? static_cast<double>(v->get_int64())
                                         : static_cast<double>(v->get_uint64());
  if (version > kSchemaVersion) {
    throw RecordReadError(where + ": schema_version " + json_text::compact(*v) +
                          " is newer than this dyno reads (" + std::to_string(kSchemaVersion) +
                          "); upgrade dyno");
  }
  if (version < 1) {
    throw RecordReadError(where + ": schema_version " + json_text::compact(*v) +
                          " is not a dyno schema version (the first is 1)");
  }
}

json::object read_record_json(const fs::path& path) {
  const std::string text = read_text(path);
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) throw RecordReadError(path.string() + ": not valid JSON: " + ec.message());
  check_schema_version(doc, path.string());
  return std::move(doc.get_object());
}

void check_run_dir_version(const fs::path& run_dir) {
  const fs::path manifest = run_dir / "manifest.json";
  if (!fs::exists(manifest)) {
    throw RecordReadError(run_dir.string() + ": no manifest.json: not a dyno run directory");
  }
  read_record_json(manifest);
}

std::vector<metrics::Trace> read_requests(const fs::path& run_dir) {
  check_run_dir_version(run_dir);
  const fs::path path = run_dir / "requests.jsonl";
  std::istringstream in(read_text(path));
  std::vector<metrics::Trace> traces;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const std::string where = path.string() + ":" + std::to_string(n);
    boost::system::error_code ec;
    const json::value v = json::parse(line, ec);
    if (ec) throw RecordReadError(where + ": not valid JSON: " + ec.message());
    if (!v.is_object()) throw RecordReadError(where + ": expected a JSON object");
    try {
      traces.push_back(trace_from_json(v.get_object()));
    } catch (const std::runtime_error& e) {
      throw RecordReadError(where + ": " + e.what());
    }
  }
  return traces;
}

}  // namespace dyno::record
