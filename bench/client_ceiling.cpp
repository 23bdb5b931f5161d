// Client-ceiling benchmark: how much can one dyno client drive, and how exactly does it time?
//
// Part A (throughput): `dyno sim --profile firehose` (zero delay: tokens as fast as sockets
// take them) in one process, `dyno run` against it in another, with its default record (event
// times kept); token events per CPU-second of the whole dyno process (the kernel's rusage of
// the child, all threads, start to exit: record writing, telemetry and the index included),
// beside the run's own client.cpu_s (the load window; summary client.cpu_scope says what it
// covers) and client.loop_cpu_s (the event-loop thread alone).
// Part B (timing error): a paced sim (one token per stream every 20 ms) with --truth; for every
// token event, client timestamp − sim emission timestamp (both CLOCK_MONOTONIC): the event-side
// error; and for every request, the kernel's arrival time of its bytes at the sim (truth
// arrived_ns) − dyno's sent_ns: the request-side error (how long after dyno's "sent" stamp the
// request reached the engine's host), the other half of a TTFT.
//
// Usage: client_ceiling [DYNO_BINARY] [streams...]   (default streams: 1 64 1024 4096)
// DYNO_BENCH_RUN_ARGS="FLAGS" adds flags to every `dyno run` (e.g. "--client-threads 2").
// DYNO_BENCH_SIM=BINARY runs the sim from another dyno binary (to compare two clients against
// one engine: an older client's own sim may lack what this bench reads).
// Prints a Markdown table (docs/performance.md holds the figures and this command).
#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "integration/json_files.h"
#include "integration/process.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::testing::Child;
using dyno::testing::read_jsonl;

namespace {

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

class Bench {
 public:
  explicit Bench(std::string dyno, std::string sim)
      : dyno_(std::move(dyno)), sim_binary_(std::move(sim)) {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("dyno-bench-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  ~Bench() { fs::remove_all(dir_); }

  std::string start_sim(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {sim_binary_, "sim", "--port", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    sim_ = std::make_unique<Child>(argv, (dir_ / "sim.out").string(), (dir_ / "sim.err").string());
    const std::string out = sim_->wait_for_output("/v1");
    std::smatch m;
    std::regex_search(out, m, std::regex("(http://[0-9.]+:[0-9]+/v1)"));
    return m[1];
  }
  void stop_sim() {
    sim_->signal(SIGTERM);
    sim_->wait(std::chrono::seconds(30));
    sim_.reset();
  }

  json::object run(const std::vector<std::string>& args, double* process_cpu_s = nullptr) {
    fs::remove_all(dir_ / "runs");
    std::vector<std::string> argv = {
        dyno_, "run", "--json", "-q", "--runs-root", (dir_ / "runs").string(), "--error-budget",
        "1"};
    argv.insert(argv.end(), args.begin(), args.end());
    // DYNO_BENCH_RUN_ARGS: extra flags for every `dyno run`, e.g. "--client-threads 2".
    if (const char* extra = std::getenv("DYNO_BENCH_RUN_ARGS")) {
      std::istringstream words(extra);
      for (std::string w; words >> w;) argv.push_back(w);
    }
    Child c(argv, (dir_ / "run.out").string(), (dir_ / "run.err").string());
    const int rc = c.wait(std::chrono::seconds(600));
    // 3: a warning's exit (the firehose saturates the client on purpose).
    if (rc != 0 && rc != 3) {
      std::cerr << "dyno run exited " << rc << ": " << c.err() << "\n";
      std::exit(1);
    }
    if (process_cpu_s != nullptr) *process_cpu_s = c.cpu_seconds();
    return json::parse(c.out()).as_object();
  }

  const fs::path& dir() const { return dir_; }

 private:
  std::string dyno_;
  std::string sim_binary_;
  fs::path dir_;
  std::unique_ptr<Child> sim_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string dyno = argc > 1 ? argv[1] : "build/src/app/dyno";
  std::vector<int> streams;
  for (int i = 2; i < argc; ++i) streams.push_back(std::stoi(argv[i]));
  if (streams.empty()) streams = {1, 64, 1024, 4096};
  const char* sim = std::getenv("DYNO_BENCH_SIM");
  Bench bench(dyno, sim != nullptr && *sim != '\0' ? sim : dyno);

  std::printf(
      "| streams | requests | token events | whole-process CPU s | events / whole-process CPU-s "
      "| client.cpu_s | events / client.cpu_s | event-loop CPU s | events / event-loop CPU-s | "
      "wall events/s | error p50 µs | error p99 µs | error max µs | "
      "request error p50 µs | request error p99 µs | request error max µs |\n");
  std::printf(
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const int c : streams) {
    // Part A: firehose throughput. About 2 M token events per cell.
    const int requests = std::max(4, 2 * c);
    const int tokens = std::max(64, 2'000'000 / requests);
    std::string url = bench.start_sim({"--profile", "firehose"});
    double process_cpu = 0.0;
    json::object a = bench.run({"--url", url, "--model", "dyno-sim", "-c", std::to_string(c), "-n",
                                std::to_string(requests), "--output-tokens", std::to_string(tokens),
                                "--input-tokens", "16"},
                               &process_cpu);
    bench.stop_sim();
    const double cpu = a.at("client").at("cpu_s").to_number<double>();
    const json::value* loop_v = a.at("client").as_object().if_contains("loop_cpu_s");
    const double loop_cpu =
        loop_v != nullptr && loop_v->is_number() ? loop_v->to_number<double>() : 0.0;
    const double out_tokens = a.at("tokens").at("output_total").to_number<double>();
    const double tpe = a.at("tokens").at("tokens_per_event").to_number<double>();
    const double events = out_tokens / tpe;
    const double ok = a.at("requests").at("ok").to_number<double>();
    const double window = a.at("throughput").at("service_window_s").to_number<double>();

    // Part B: timing error on a paced stream (20 ms per token step).
    const fs::path profile = bench.dir() / "paced.json";
    std::ofstream(profile) << R"({"base":"firehose","zero_delay":false,"step_base_s":0.02,)"
                           << R"("decode_seq_s":0,"decode_ctx_token_s":0,)"
                           << R"("prefill_tokens_per_s":1e9})";
    const fs::path truth = bench.dir() / "truth.jsonl";
    fs::remove(truth);
    url = bench.start_sim({"--profile", profile.string(), "--truth", truth.string()});
    json::object b =
        bench.run({"--url", url, "--model", "dyno-sim", "-c", std::to_string(c), "-n",
                   std::to_string(c), "--output-tokens", "50", "--input-tokens", "16"});
    bench.stop_sim();
    const std::string record_dir(b.at("record_dir").as_string());
    const json::object manifest =
        json::parse(Child::slurp(record_dir + "/manifest.json")).as_object();
    const std::string run_id(manifest.at("run_id").as_string());
    const std::int64_t t0 = manifest.at("clock").at("t0_steady_ns").as_int64();
    std::map<std::string, json::object> truth_by_id;
    for (auto& t : read_jsonl(truth)) truth_by_id[std::string(t.at("request_id").as_string())] = t;
    std::vector<double> errors_us;
    std::vector<double> request_errors_us;
    for (const auto& r : read_jsonl(fs::path(record_dir) / "requests.jsonl")) {
      const std::string id = run_id + "-" + std::to_string(r.at("index").as_int64());
      auto it = truth_by_id.find(id);
      if (it == truth_by_id.end() || !r.contains("chunk_times_ns")) continue;
      request_errors_us.push_back(
          static_cast<double>(it->second.at("arrived_ns").to_number<std::int64_t>() -
                              (t0 + r.at("sent_ns").to_number<std::int64_t>())) /
          1e3);
      const auto& truth_times = it->second.at("event_times_ns").as_array();
      std::int64_t acc = 0;
      const auto& deltas = r.at("chunk_times_ns").as_array();
      for (std::size_t i = 0; i < deltas.size() && i < truth_times.size(); ++i) {
        acc += deltas[i].as_int64();
        errors_us.push_back(
            static_cast<double>(t0 + acc - truth_times[i].to_number<std::int64_t>()) / 1e3);
      }
    }
    std::printf(
        "| %d | %.0f | %.0f | %.3f | %.0f | %.3f | %.0f | %.3f | %.0f | %.0f | %.1f | %.1f | %.1f "
        "| "
        "%.1f | %.1f | %.1f |\n",
        c, ok, events, process_cpu, events / process_cpu, cpu, events / cpu, loop_cpu,
        loop_cpu > 0 ? events / loop_cpu : 0.0, events / window, pct(errors_us, 50),
        pct(errors_us, 99), pct(errors_us, 100), pct(request_errors_us, 50),
        pct(request_errors_us, 99), pct(request_errors_us, 100));
    std::fflush(stdout);
  }
  return 0;
}
