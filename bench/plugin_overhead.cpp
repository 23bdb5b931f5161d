// HTTP overhead: the same simulated engine measured in-process (libdyno_sim_plugin.so through
// `dyno run --plugin`) and over loopback HTTP (the embedded sim: `dyno run` with no --url, the
// same model and tokenizer behind an OpenAI-compatible server on its own thread), with the same
// workload. The engine's own time is the same in both, so the differences are what HTTP adds:
//   per-request overhead = TTFT p50 (HTTP) − TTFT p50 (plugin)
//   per-token overhead   = TPOT p50 (HTTP) − TPOT p50 (plugin)
// each taken per pair of runs (HTTP and plugin back to back, the order alternating), then the
// median over the pairs; [min–max] over the pairs shows the spread. docs/performance.md holds the
// figures and this command.
//
// Usage: plugin_overhead [DYNO_BINARY] [PLUGIN] [PAIRS]
//   (defaults: build/src/app/dyno, libdyno_sim_plugin.so next to it, 5 pairs)
#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "integration/process.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

struct Figures {
  double ttft_ms = 0;
  double tpot_ms = 0;
  double e2e_ms = 0;
  double gap_ms = 0;
  double cpu_us_per_token = 0;  // the run's client.cpu_s over its output tokens
};

struct Cell {
  std::string profile;
  int concurrency = 1;
  int requests = 1;
  int output_tokens = 1;
};

class Bench {
 public:
  Bench(std::string dyno, std::string plugin) : dyno_(std::move(dyno)), plugin_(std::move(plugin)) {
    dir_ = fs::temp_directory_path() / ("dyno-bench-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  ~Bench() { fs::remove_all(dir_); }

  Figures run(const Cell& cell, bool in_process) {
    fs::remove_all(dir_ / "runs");
    std::vector<std::string> argv = {dyno_,
                                     "run",
                                     "--json",
                                     "-q",
                                     "--runs-root",
                                     (dir_ / "runs").string(),
                                     "--telemetry",
                                     "off",
                                     "--warmup",
                                     "2",
                                     "--seed",
                                     "1",
                                     "-c",
                                     std::to_string(cell.concurrency),
                                     "-n",
                                     std::to_string(cell.requests),
                                     "--input-tokens",
                                     "64",
                                     "--output-tokens",
                                     std::to_string(cell.output_tokens)};
    if (in_process) {
      argv.insert(argv.end(), {"--plugin", plugin_, "--plugin-config", "profile=" + cell.profile});
    } else {
      argv.insert(argv.end(), {"--profile", cell.profile});
    }
    Child c(argv, (dir_ / "run.out").string(), (dir_ / "run.err").string());
    const int rc = c.wait(std::chrono::seconds(600));
    if (rc != 0) {
      std::cerr << "dyno run exited " << rc << ": " << c.err() << "\n";
      std::exit(1);
    }
    const json::object s = json::parse(c.out()).as_object();
    const auto p50 = [&s](const char* name) {
      return s.at("latency_ms").at(name).at("p50").to_number<double>();
    };
    Figures f;
    f.ttft_ms = p50("ttft");
    f.tpot_ms = p50("tpot");
    f.e2e_ms = p50("e2e");
    f.gap_ms = p50("event_gap");
    f.cpu_us_per_token = s.at("client").at("cpu_s").to_number<double>() * 1e6 /
                         s.at("tokens").at("output_total").to_number<double>();
    return f;
  }

 private:
  std::string dyno_;
  std::string plugin_;
  fs::path dir_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : "build/src/app/dyno";
  const std::string plugin =
      argc > 2 ? argv[2] : (fs::path(dyno).parent_path() / "libdyno_sim_plugin.so").string();
  const int pairs = argc > 3 ? std::stoi(argv[3]) : 5;
  Bench bench(dyno, plugin);
  const std::vector<Cell> cells = {
      {"firehose", 1, 40, 256},
      {"small-gpu", 1, 12, 64},
      {"small-gpu", 16, 64, 64},
  };
  std::printf(
      "| profile | streams | tokens | TTFT p50 ms HTTP / plugin | per-request overhead µs "
      "[min–max] | TPOT p50 µs HTTP / plugin | per-token overhead µs [min–max] | e2e p50 ms "
      "HTTP / plugin | client CPU µs/token HTTP / plugin |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Cell& cell : cells) {
    std::vector<Figures> http;
    std::vector<Figures> in_process;
    std::vector<double> d_ttft_us;
    std::vector<double> d_tpot_us;
    for (int i = 0; i < pairs; ++i) {
      // Alternate which goes first, so drift on a shared machine does not favour one side.
      const bool plugin_first = i % 2 == 1;
      Figures h;
      Figures p;
      if (plugin_first) p = bench.run(cell, true);
      h = bench.run(cell, false);
      if (!plugin_first) p = bench.run(cell, true);
      http.push_back(h);
      in_process.push_back(p);
      d_ttft_us.push_back((h.ttft_ms - p.ttft_ms) * 1e3);
      d_tpot_us.push_back((h.tpot_ms - p.tpot_ms) * 1e3);
    }
    const auto med = [](const std::vector<Figures>& v, double Figures::*field) {
      std::vector<double> x;
      for (const Figures& f : v) x.push_back(f.*field);
      return median(x);
    };
    const auto [ttft_lo, ttft_hi] = std::minmax_element(d_ttft_us.begin(), d_ttft_us.end());
    const auto [tpot_lo, tpot_hi] = std::minmax_element(d_tpot_us.begin(), d_tpot_us.end());
    std::printf(
        "| %s | %d | %d | %.3f / %.3f | %.1f [%.1f–%.1f] | %.2f / %.2f | %.2f [%.2f–%.2f] | "
        "%.2f / %.2f | %.2f / %.2f |\n",
        cell.profile.c_str(), cell.concurrency, cell.output_tokens, med(http, &Figures::ttft_ms),
        med(in_process, &Figures::ttft_ms), median(d_ttft_us), *ttft_lo, *ttft_hi,
        med(http, &Figures::tpot_ms) * 1e3, med(in_process, &Figures::tpot_ms) * 1e3,
        median(d_tpot_us), *tpot_lo, *tpot_hi, med(http, &Figures::e2e_ms),
        med(in_process, &Figures::e2e_ms), med(http, &Figures::cpu_us_per_token),
        med(in_process, &Figures::cpu_us_per_token));
    std::fflush(stdout);
  }
  return 0;
}
