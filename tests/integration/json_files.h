// Reading the JSON files of a record in integration tests and benchmarks.
#pragma once

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "integration/process.h"

namespace dyno::testing {

/// A JSON object file (manifest.json, summary.json, a campaign file).
inline boost::json::object read_json(const std::filesystem::path& path) {
  return boost::json::parse(Child::slurp(path.string())).as_object();
}

/// A JSON-lines file (requests.jsonl, a truth log): one object per non-empty line.
inline std::vector<boost::json::object> read_jsonl(const std::filesystem::path& path) {
  std::vector<boost::json::object> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(boost::json::parse(line).as_object());
  }
  return out;
}

}  // namespace dyno::testing
