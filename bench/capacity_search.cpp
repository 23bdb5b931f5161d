// How many cells `dyno capacity` needs against an exhaustive sweep of every load level, and
// whether both find the same boundary (docs/performance.md "Capacity search", issue 35).
// Against the embedded simulated engine with a fixed profile (a request's TPOT is about
// 4 + 3·B ms with B requests decoding), the objectives tpot_p90 <= LIMIT and errors <= 5 %:
//   1. `dyno capacity --max MAX --repeat-boundary 3`: its answer, runs and distinct levels;
//   2. `dyno sweep --concurrencies 1,…,MAX`, every cell judged by the same code
//      (protocol::judge; an unclear cell by its point estimates): the largest level below the
//      first failing one.
// Usage: capacity_search [dyno] [limit_ms=40] [max=48]
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "integration/process.h"
#include "protocol/capacity.h"
#include "record/run_record.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : "./build/dyno";
  const std::string limit_ms = argc > 2 ? argv[2] : "40";
  const int max = argc > 3 ? std::atoi(argv[3]) : 48;
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("dyno-capbench-" + std::to_string(rd()));
  fs::create_directories(dir);
  const fs::path profile = dir / "profile.json";
  std::ofstream(profile) << R"({"base": "small-gpu", "step_base_s": 0.004, "decode_seq_s": 0.003,)"
                         << R"( "prefill_tokens_per_s": 10000000, "decode_ctx_token_s": 0,)"
                         << R"( "max_running_seqs": 256})";
  const std::string slo = "tpot_p90=" + limit_ms + "ms,errors=5%";
  const std::vector<std::string> flags = {"--profile",       profile.string(),
                                          "--input-tokens",  "16",
                                          "--output-tokens", "16",
                                          "--min-requests",  "30",
                                          "--per-slot",      "2"};

  std::vector<std::string> search = {dyno,
                                     "capacity",
                                     "--json",
                                     "-q",
                                     "--runs-root",
                                     (dir / "search").string(),
                                     "--slo",
                                     slo,
                                     "--max",
                                     std::to_string(max),
                                     "--repeat-boundary",
                                     "3"};
  search.insert(search.end(), flags.begin(), flags.end());
  auto t0 = std::chrono::steady_clock::now();
  Child s(search, (dir / "s.out").string(), (dir / "s.err").string());
  if (s.wait() != 0) {
    std::cerr << "capacity failed: " << s.err() << "\n";
    return 1;
  }
  const double search_s = seconds_since(t0);
  const json::object cap = json::parse(s.out()).as_object().at("capacity").as_object();
  std::size_t runs = 0;
  for (const auto& p : cap.at("probes").as_array()) runs += p.at("repetitions").as_array().size();

  std::string levels;
  for (int c = 1; c <= max; ++c) levels += (c > 1 ? "," : "") + std::to_string(c);
  std::vector<std::string> sweep = {
      dyno,  "sweep", "--json", "-q", "--runs-root", (dir / "sweep").string(), "--concurrencies",
      levels};
  sweep.insert(sweep.end(), flags.begin(), flags.end());
  t0 = std::chrono::steady_clock::now();
  Child w(sweep, (dir / "w.out").string(), (dir / "w.err").string());
  if (w.wait() != 0) {
    std::cerr << "sweep failed: " << w.err() << "\n";
    return 1;
  }
  const double sweep_s = seconds_since(t0);
  const auto objectives = dyno::protocol::parse_capacity_slo(slo, 0.95);
  double exhaustive = 0;
  bool failed = false;
  std::string verdicts;
  const json::value swept = json::parse(w.out());  // kept: the loop reads into it
  for (const auto& cell : swept.as_object().at("cells").as_array()) {
    const std::string id(cell.at("runs").as_array()[0].at("run_id").as_string());
    const auto rec = dyno::record::read_run(dir / "sweep" / id);
    std::vector<const dyno::metrics::Trace*> ptrs;
    for (const auto& t : rec.traces) ptrs.push_back(&t);
    const bool holds = dyno::protocol::judge(objectives, ptrs).holds();
    verdicts += holds ? "+" : "-";
    if (!holds) failed = true;
    if (!failed) exhaustive = cell.at("params").at("concurrency").to_number<double>();
  }
  std::cout << "objectives " << slo << ", levels 1.." << max << "\n"
            << "capacity search: " << cap.at("answer").at("sentence").as_string() << "\n"
            << "  " << runs << " runs over " << cap.at("probes").as_array().size() << " levels, "
            << search_s << " s\n"
            << "exhaustive sweep: capacity " << exhaustive << " (" << max << " cells, " << sweep_s
            << " s; verdicts by level " << verdicts << ")\n"
            << "search / exhaustive cells: " << static_cast<double>(runs) / max << "\n";
  fs::remove_all(dir);
  return 0;
}
