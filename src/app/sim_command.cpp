#include "app/sim_command.h"

#include <chrono>
#include <iostream>
#include <thread>

#include "app/run_command.h"
#include "app/signals.h"
#include "sim/profile.h"
#include "sim/server.h"

namespace dyno::app {

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
