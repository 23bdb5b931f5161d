// docs/architecture.md's module table is the truth about dependencies: every module's row
// names exactly the dyno modules its CMake libraries link, and every module folder has a row.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "record/run_writer.h"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = DYNO_SOURCE_DIR;

/// A file of the repository, whole (record::read_file: throws naming it when it cannot).
std::string read(const fs::path& p) { return dyno::record::read_file(p); }

/// The module folders under src/ (each with a CMakeLists.txt).
std::set<std::string> module_folders() {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(kSource / "src")) {
    if (e.is_directory() && fs::exists(e.path() / "CMakeLists.txt")) {
      out.insert(e.path().filename().string());
    }
  }
  return out;
}

/// The module a dyno library belongs to ("dyno_sim_engine" → "sim"); dyno_asio is named as
/// itself (transport's compiled Asio, linked by modules that do not use transport).
std::string module_of(const std::string& lib, const std::set<std::string>& modules) {
  if (lib == "dyno_asio") return lib;
  if (lib == "dyno_cli") return "app";
  std::string name = lib.substr(5);  // after "dyno_"
  while (!name.empty() && modules.count(name) == 0) {
    const auto cut = name.rfind('_');
    if (cut == std::string::npos) return {};
    name.erase(cut);
  }
  return name;
}

/// The dyno modules a module's libraries link (its own excluded), from its CMakeLists.txt.
std::set<std::string> linked(const std::string& module, const std::set<std::string>& modules) {
  const std::string text = read(kSource / "src" / module / "CMakeLists.txt");
  std::set<std::string> out;
  const std::regex call(R"(target_link_libraries\(([^)]*)\))");
  const std::regex lib(R"(\bdyno_[a-z_]+\b)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), call); it != std::sregex_iterator();
       ++it) {
    const std::string args = (*it)[1];
    bool first = true;  // the library being linked
    for (auto l = std::sregex_iterator(args.begin(), args.end(), lib); l != std::sregex_iterator();
         ++l) {
      const std::string name = (*l)[0];
      if (first) {
        first = false;
        continue;
      }
      if (name == "dyno_warnings" || name == "dyno_version_header") continue;
      const std::string m = module_of(name, modules);
      if (!m.empty() && m != module) out.insert(m);
    }
  }
  return out;
}

/// The table's rows: module → the modules its "depends on" column names.
std::map<std::string, std::set<std::string>> documented(const std::set<std::string>& modules) {
  std::map<std::string, std::set<std::string>> rows;
  std::istringstream in(read(kSource / "docs" / "architecture.md"));
  std::string line;
  const std::regex row(R"(^\| `([a-z_]+)/` \|.*\| ([^|]*) \|\s*$)");
  const std::regex word(R"(`?[a-z_]+`?)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    std::set<std::string>& deps = rows[m[1]];
    const std::string column = m[2];
    for (auto w = std::sregex_iterator(column.begin(), column.end(), word);
         w != std::sregex_iterator(); ++w) {
      std::string token = (*w)[0];
      std::erase(token, '`');
      if (modules.count(token) > 0 || token == "dyno_asio") deps.insert(token);
    }
  }
  return rows;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

TEST(Architecture, TheModuleTableEqualsTheLinkLines) {
  const std::set<std::string> modules = module_folders();
  const auto rows = documented(modules);
  for (const auto& module : modules) {
    const auto row = rows.find(module);
    ASSERT_NE(row, rows.end()) << "docs/architecture.md has no row for src/" << module << "/";
    if (module == "app") continue;  // "everything above"
    EXPECT_EQ(join(row->second), join(linked(module, modules)))
        << "src/" << module << "/: the table's 'depends on' differs from its link lines";
  }
}

}  // namespace
