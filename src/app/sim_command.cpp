#include "app/sim_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <thread>

#include "app/flag_values.h"
#include "app/run_command.h"
#include "app/signals.h"
#include "sim/profile.h"
#include "sim/server.h"

namespace dyno::app {

void add_sim_options(CLI::App& cmd, SimOptions& o) {
  cmd.add_option("--host", o.host, "address to listen on")->capture_default_str();
  cmd.add_option("-p,--port", o.port, "port to listen on (0: pick a free one and print it)")
      ->transform(flags::integer(0, 65535))
      ->capture_default_str();
  cmd.add_option("--profile", o.profile, "a built-in profile name or a JSON profile file")
      ->capture_default_str();
  cmd.add_option("--model", o.model, "served model name (default: the profile's)");
  cmd.add_option("--seed", o.seed, "seed of generated text and speculative acceptance")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--truth", o.truth, "write per-request emission times (JSONL) to FILE");
  cmd.add_option("--exit-after", o.exit_after, "stop after N completion requests (crash test)")
      ->transform(flags::integer(1, flags::kMaxU64));
  const auto every = flags::integer(0, UINT32_MAX);  // 0: never
  cmd.add_option("--fault-500", o.fault_500, "answer every Nth request with HTTP 500")
      ->transform(every);
  cmd.add_option("--fault-429", o.fault_429, "answer every Nth request with HTTP 429")
      ->transform(every);
  cmd.add_option("--fault-malformed", o.fault_malformed,
                 "send a malformed SSE line in every Nth stream")
      ->transform(every);
  cmd.add_option("--fault-cut", o.fault_cut, "cut every Nth stream mid-way")->transform(every);
  cmd.add_option("--fault-stall", o.fault_stall, "stall every Nth stream mid-way")
      ->transform(every);
  cmd.add_option("--fault-error", o.fault_error,
                 "end every Nth answer mid-way with the server's in-stream error")
      ->transform(every);
  cmd.add_option("--fault-error-form", o.fault_error_form,
                 "how the in-stream error is written: data (vLLM, SGLang), field (llama.cpp's "
                 "error: field), event (event: error), bare (Ollama's unframed JSON line)")
      ->check(CLI::IsMember({"data", "field", "event", "bare"}))
      ->capture_default_str();
  cmd.add_option("--fault-unfinished", o.fault_unfinished,
                 "end every Nth answer mid-way without a finish reason")
      ->transform(every);
  cmd.add_option("--fault-unfinished-end", o.fault_unfinished_end,
                 "how an unfinished answer ends: done (data: [DONE]) or eof (the body ends)")
      ->check(CLI::IsMember({"done", "eof"}))
      ->capture_default_str();
  cmd.add_option("--fault-after-tokens", o.fault_after_tokens,
                 "token events sent before a mid-stream fault (malformed, cut, stall, error, "
                 "unfinished)")
      ->transform(flags::integer(0, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_flag("--show-profile", o.show_profile, "print the resolved profile as JSON and exit");
}

int sim_command(const SimOptions& o) {
  sim::ServerOptions so;
  so.profile = about("--profile", [&] { return sim::resolve_profile(o.profile); });
  if (o.model) so.profile.model_name = *o.model;
  if (o.show_profile) {
    std::cout << sim::profile_to_json(so.profile) << "\n";
    return kExitOk;
  }
  so.host = o.host;
  so.port = o.port;
  so.seed = o.seed;
  if (o.truth) so.truth_path = *o.truth;
  so.exit_after_requests = o.exit_after;
  so.faults.http_500_every = o.fault_500;
  so.faults.http_429_every = o.fault_429;
  so.faults.malformed_every = o.fault_malformed;
  so.faults.cut_every = o.fault_cut;
  so.faults.stall_every = o.fault_stall;
  so.faults.error_every = o.fault_error;
  so.faults.error_form = sim::parse_error_form(o.fault_error_form);
  so.faults.unfinished_every = o.fault_unfinished;
  so.faults.unfinished_eof = o.fault_unfinished_end == "eof";
  so.faults.after_tokens = o.fault_after_tokens;

  const std::atomic<bool>& stop = install_stop_signals();
  sim::Server server(so);
  const std::uint16_t port = server.start();
  // The one line tests and scripts wait for: the bound address.
  std::cout << "dyno sim listening on http://" << o.host << ":" << port << "/v1 (profile "
            << so.profile.name << ", model " << so.profile.model_name << ")" << std::endl;
  std::thread waiter([&server] { server.wait(); });
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!stop.load() && !finished.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stop.load()) server.stop();
  });
  waiter.join();
  finished = true;
  watcher.join();
  server.stop();
  return kExitOk;
}

}  // namespace dyno::app
