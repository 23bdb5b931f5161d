// Client-memory benchmark: resident memory per concurrent stream.
//
// A paced `dyno sim` (one token per stream every 20 ms, room for every stream at once) in one
// process; `dyno run --url … -c STREAMS -n STREAMS` against it in another. The client's peak RSS
// (the kernel's ru_maxrss of the whole process, all threads, start to exit: the final rewrite of
// requests.jsonl, SHA256SUMS and the index included) minus that of an idle run (one stream of
// the same length), divided by the streams, is the memory one concurrent stream costs. Every
// record must verify (`dyno runs verify`).
//
// Usage: client_memory [DYNO_BINARY] [streams...]   (default streams: 1000 10000; output
// lengths 64 and 256 tokens). The system's open-file limit must allow STREAMS sockets per
// process (the sim and the client each hold one per stream).
// Prints a Markdown table (docs/performance.md holds the figures and this command).
#include <sys/resource.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "integration/process.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;

namespace {

struct Outcome {
  double peak_rss_kib = 0;  // ru_maxrss of the whole client process
  double cpu_s = 0;         // user + system of the whole client process
  json::object summary;
  bool verified = false;
};

class Bench {
 public:
  explicit Bench(std::string dyno) : dyno_(std::move(dyno)) {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("dyno-membench-" + std::to_string(rd()));
    fs::create_directories(dir_);
    const fs::path profile = dir_ / "paced.json";
    std::ofstream(profile) << R"({"base":"firehose","zero_delay":false,"step_base_s":0.02,)"
                           << R"("decode_seq_s":0,"decode_ctx_token_s":0,)"
                           << R"("prefill_tokens_per_s":1e9,"max_running_seqs":100000,)"
                           << R"("kv_capacity_tokens":1000000000,"step_token_budget":1000000})";
    sim_ = std::make_unique<Child>(
        std::vector<std::string>{dyno_, "sim", "--port", "0", "--profile", profile.string()},
        (dir_ / "sim.out").string(), (dir_ / "sim.err").string());
    const std::string out = sim_->wait_for_output("/v1");
    std::smatch m;
    std::regex_search(out, m, std::regex("(http://[0-9.]+:[0-9]+/v1)"));
    url_ = m[1];
  }
  ~Bench() {
    sim_->signal(SIGTERM);
    sim_->wait(std::chrono::seconds(30));
    fs::remove_all(dir_);
  }

  Outcome run(int streams, int tokens) {
    const fs::path runs = dir_ / "runs";
    fs::remove_all(runs);
    Child c({dyno_, "run", "--json", "-q", "--runs-root", runs.string(), "--url", url_, "--model",
             "dyno-sim", "-c", std::to_string(streams), "-n", std::to_string(streams),
             "--output-tokens", std::to_string(tokens), "--input-tokens", "16"},
            (dir_ / "run.out").string(), (dir_ / "run.err").string());
    const int rc = c.wait(std::chrono::seconds(900));
    // 3: a warning's exit (the client saturates on purpose at thousands of streams).
    if (rc != 0 && rc != 3) {
      std::cerr << "dyno run exited " << rc << ": " << c.err() << "\n";
      std::exit(1);
    }
    Outcome o;
    o.peak_rss_kib = static_cast<double>(c.usage().ru_maxrss);
    o.cpu_s = c.cpu_seconds();
    const json::value doc = json::parse(c.out());
    o.summary = doc.as_object();
    const std::string run_dir(o.summary.at("record_dir").as_string());
    Child v({dyno_, "runs", "verify", "--runs-root", runs.string(),
             fs::path(run_dir).filename().string()},
            (dir_ / "verify.out").string(), (dir_ / "verify.err").string());
    o.verified = v.wait(std::chrono::seconds(300)) == 0;
    return o;
  }

 private:
  std::string dyno_;
  fs::path dir_;
  std::unique_ptr<Child> sim_;
  std::string url_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : "build/src/app/dyno";
  std::vector<int> streams;
  for (int i = 2; i < argc; ++i) streams.push_back(std::stoi(argv[i]));
  if (streams.empty()) streams = {1000, 10000};
  rlimit files{};  // the children inherit the raised soft limit
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  Bench bench(dyno);
  std::printf(
      "| streams | output tokens | peak RSS MiB | idle run MiB | KiB per stream | whole-process "
      "CPU s | event-loop CPU s | record verifies |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|:---|\n");
  for (const int tokens : {64, 256}) {
    const Outcome idle = bench.run(1, tokens);
    for (const int n : streams) {
      const Outcome o = bench.run(n, tokens);
      const json::object& client = o.summary.at("client").as_object();
      const double loop = client.contains("loop_cpu_s") && client.at("loop_cpu_s").is_number()
                              ? client.at("loop_cpu_s").to_number<double>()
                              : 0.0;
      std::printf("| %d | %d | %.1f | %.1f | %.2f | %.2f | %.2f | %s |\n", n, tokens,
                  o.peak_rss_kib / 1024.0, idle.peak_rss_kib / 1024.0,
                  (o.peak_rss_kib - idle.peak_rss_kib) / n, o.cpu_s, loop,
                  o.verified && idle.verified ? "yes" : "NO");
      std::fflush(stdout);
    }
  }
  return 0;
}
