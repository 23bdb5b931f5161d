// Import-cost benchmark: time and disk per result of `dyno import` on one large file.
//
// Two files are generated, as issue 32 measured them: a GuideLLM report of 2,000 benchmarks
// (each a copy of tests/record/data/guidellm/report.json's first benchmark, padded to about
// 11 KB: 22 MB in all) and a ledger CSV of 20,000 rows (`model,ttft`: about 250 KB), imported
// with `dyno import guidellm` and `dyno import table`. For each: the import's wall time, the
// disk the runs root then takes (allocated blocks, each inode counted once, as `du` counts
// hard links) and its apparent size, both per result, and whether `dyno runs verify` passes
// on every record (its time too).
//
// Usage: import_cost [DYNO_BINARY [BENCHMARKS [ROWS]]]   (default 2000 and 20000)
// Prints a Markdown table (docs/performance.md holds the figures and this command).
#include <stdlib.h>  // mkdtemp
#include <sys/stat.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "integration/process.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

namespace {

struct Disk {
  std::uintmax_t allocated = 0;  // st_blocks × 512, each inode once
  std::uintmax_t apparent = 0;   // file sizes, each path
};

Disk disk_of(const fs::path& root) {
  Disk d;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0) continue;
    if (S_ISREG(st.st_mode)) d.apparent += static_cast<std::uintmax_t>(st.st_size);
    if (seen.insert({st.st_dev, st.st_ino}).second) {
      d.allocated += static_cast<std::uintmax_t>(st.st_blocks) * 512;
    }
  }
  return d;
}

struct Result {
  double import_s = 0;
  double verify_s = 0;
  int import_rc = -1;
  int verify_rc = -1;
  Disk disk;
  std::size_t records = 0;
};

double run(const std::vector<std::string>& argv, const fs::path& dir, int& rc) {
  const auto t0 = std::chrono::steady_clock::now();
  Child c(argv, (dir / "out.txt").string(), (dir / "err.txt").string());
  rc = c.wait(std::chrono::seconds(3600));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) std::cerr << argv[1] << " " << argv[2] << ": exit " << rc << "\n" << c.err();
  return s;
}

Result measure(const std::string& dyno, const fs::path& dir, std::vector<std::string> args) {
  const fs::path runs = dir / "runs";
  Result r;
  std::vector<std::string> argv{dyno, "import"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--runs-root", runs.string()});
  r.import_s = run(argv, dir, r.import_rc);
  for (const auto& e : fs::directory_iterator(runs)) r.records += e.is_directory() ? 1 : 0;
  r.disk = disk_of(runs);
  r.verify_s =
      run({dyno, "runs", "verify", "--all", "--runs-root", runs.string()}, dir, r.verify_rc);
  return r;
}

void row(const std::string& what, std::size_t bytes, const Result& r) {
  const double n = static_cast<double>(r.records);
  std::printf(
      "| %s | %.1f MB | %zu | %.1f s | %.2f ms | %.1f KB | %.1f KB | %.1f MB | %s (%.1f s) |\n",
      what.c_str(), static_cast<double>(bytes) / 1e6, r.records, r.import_s,
      1000.0 * r.import_s / n, static_cast<double>(r.disk.allocated) / n / 1e3,
      static_cast<double>(r.disk.apparent) / n / 1e3, static_cast<double>(r.disk.allocated) / 1e6,
      r.import_rc == 0 && r.verify_rc == 0 ? "exit 0, all verify" : "FAILED", r.verify_s);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : DYNO_BINARY;
  const std::size_t benchmarks = argc > 2 ? std::stoul(argv[2]) : 2000;
  const std::size_t rows = argc > 3 ? std::stoul(argv[3]) : 20000;
  std::string templ = (fs::temp_directory_path() / "dyno-importbench-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) return 1;
  const fs::path dir = templ;

  // The GuideLLM report.
  std::ifstream in(fs::path(DYNO_SOURCE_DIR) / "tests/record/data/guidellm/report.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const json::object first = json::parse(text).at("benchmarks").at(0).as_object();
  json::array list;
  for (std::size_t i = 0; i < benchmarks; ++i) {
    json::object b = first;
    b["id_"] = "bench-" + std::to_string(i);
    b["extras"] = json::object{{"pad", std::string(2000, 'x')}};
    list.push_back(std::move(b));
  }
  const std::string report = json::serialize(json::object{{"benchmarks", std::move(list)}});
  fs::create_directories(dir / "g");
  std::ofstream(dir / "g/report.json") << report;
  // The ledger.
  std::string csv = "model,ttft\n";
  for (std::size_t i = 0; i < rows; ++i) csv += "m,0.0" + std::to_string(100 + i % 900) + "\n";
  fs::create_directories(dir / "t");
  std::ofstream(dir / "t/ledger.csv") << csv;

  std::printf(
      "| file | size | records | import | per record | disk per record | "
      "apparent per record | disk in all | check (verify time) |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  row("GuideLLM report, " + std::to_string(benchmarks) + " benchmarks", report.size(),
      measure(dyno, dir / "g", {"guidellm", (dir / "g/report.json").string()}));
  row("ledger CSV, " + std::to_string(rows) + " rows", csv.size(),
      measure(dyno, dir / "t",
              {"table", (dir / "t/ledger.csv").string(), "--api", "chat", "--map", "model=model",
               "--map", "ttft=latency_ms.ttft.p50:s"}));
  fs::remove_all(dir);
  return 0;
}
