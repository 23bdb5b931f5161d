// Helpers shared by the transport tests.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace dyno::transport::testing {

inline std::string read_data_file(const std::string& name) {
  const std::string path = std::string(DYNO_SOURCE_DIR) + "/tests/transport/data/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace dyno::transport::testing
