// dyno: a dynamometer for LLM inference engines. The only place that prints `error:` and
// picks an exit code (P9).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "app/run_command.h"
#include "app/sim_command.h"
#include "dyno/build_info.h"
#include "record/run_writer.h"

namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 ok; 1 dyno could not work (I/O, internal error); 2 usage error (bad flag or "
    "input file); 3 the run failed or exceeded its error budget; 130 interrupted.";

void add_run_flags(CLI::App& cmd, dyno::app::RunOptions& o) {
  cmd.add_option("--url", o.url,
                 "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default: start the "
                 "simulated engine in-process)");
  cmd.add_option("--model", o.model, "model name to request (required with --url)");
  cmd.add_option("--api", o.api, "endpoint: chat (/chat/completions) or completions")
      ->capture_default_str();
  cmd.add_option("--profile", o.profile,
                 "embedded simulated engine profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd.add_option("-c,--concurrency", o.concurrency,
                 "closed loop: keep C requests in flight (default 8)");
  cmd.add_option("--rate", o.rate, "open loop: mean arrival rate in requests/s");
  cmd.add_option("--arrival", o.arrival, "open-loop arrivals: poisson, constant or gamma")
      ->capture_default_str();
  cmd.add_option("--burstiness", o.burstiness,
                 "gamma shape k: 1 = Poisson, < 1 burstier, > 1 smoother")
      ->capture_default_str();
  cmd.add_option("-n,--requests", o.requests,
                 "measured requests to send (default 100 when --duration is not given)");
  cmd.add_option("-d,--duration", o.duration_s, "stop sending after S seconds");
  cmd.add_option("--warmup", o.warmup, "requests sent first and discarded (recorded as warmup)")
      ->capture_default_str();
  cmd.add_option("--max-tokens", o.max_tokens, "max_tokens for stream requests that set none");
  cmd.add_option("--temperature", o.temperature, "temperature for requests that set none")
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, "seed of the synthetic stream and the arrival schedule")
      ->capture_default_str();
  cmd.add_option("--stream", o.stream_file, "request stream file (JSONL, see docs/record.md)");
  cmd.add_option("--input-tokens", o.input_tokens,
                 "synthetic stream: approximate prompt length in tokens")
      ->capture_default_str();
  cmd.add_option("--output-tokens", o.output_tokens,
                 "synthetic stream: output tokens per request (max_tokens with ignore_eos)")
      ->capture_default_str();
  cmd.add_option("--slo", o.slo, "goodput objectives, e.g. ttft=500ms,tpot=50ms,e2e=10s");
  cmd.add_option("--runs-root", o.runs_root, "directory that receives run records")
      ->capture_default_str();
  cmd.add_option("--label", o.label, "a label added to the run id and the manifest");
  cmd.add_flag("--json", o.json, "print the summary as JSON on stdout");
  cmd.add_flag("--no-stream", o.no_stream, "ask for whole (non-streamed) responses");
  cmd.add_flag("--keep-outputs", o.keep_outputs, "keep every output text in requests.jsonl");
  cmd.add_flag("--no-chunk-times", o.no_chunk_times,
               "do not write per-event times (chunk_times_ns) to requests.jsonl");
  cmd.add_option("--connect-timeout", o.connect_timeout_s, "connect timeout in seconds")
      ->capture_default_str();
  cmd.add_option("--first-token-timeout", o.first_token_timeout_s,
                 "fail a request with no token this many seconds after it was sent");
  cmd.add_option("--timeout", o.timeout_s, "fail a request not done this many seconds after sent");
  cmd.add_option("--error-budget", o.error_budget,
                 "exit 3 when the error rate exceeds this fraction")
      ->capture_default_str();
  cmd.add_flag("--insecure", o.insecure, "https: do not verify the server's certificate");
  cmd.add_option("--ca-file", o.ca_file,
                 "https: PEM file of CA certificates to trust besides the system's");
  cmd.add_flag("-q,--quiet", o.quiet, "no progress bar");
  cmd.add_option("--color", o.color, "auto, always or never (NO_COLOR is honoured)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

void add_sim_flags(CLI::App& cmd, dyno::app::SimOptions& o) {
  cmd.add_option("--host", o.host, "address to listen on")->capture_default_str();
  cmd.add_option("-p,--port", o.port, "port to listen on (0: pick a free one and print it)")
      ->capture_default_str();
  cmd.add_option("--profile", o.profile, "a built-in profile name or a JSON profile file")
      ->capture_default_str();
  cmd.add_option("--model", o.model, "served model name (default: the profile's)");
  cmd.add_option("--seed", o.seed, "seed of generated text and speculative acceptance")
      ->capture_default_str();
  cmd.add_option("--truth", o.truth, "write per-request emission times (JSONL) to FILE");
  cmd.add_option("--exit-after", o.exit_after, "stop after N completion requests (crash test)");
  cmd.add_option("--fault-500", o.fault_500, "answer every Nth request with HTTP 500");
  cmd.add_option("--fault-429", o.fault_429, "answer every Nth request with HTTP 429");
  cmd.add_option("--fault-malformed", o.fault_malformed,
                 "send a malformed SSE line in every Nth stream");
  cmd.add_option("--fault-cut", o.fault_cut, "cut every Nth stream mid-way");
  cmd.add_option("--fault-stall", o.fault_stall, "stall every Nth stream mid-way");
  cmd.add_option("--fault-after-tokens", o.fault_after_tokens,
                 "token events sent before a malformed/cut/stall fault")
      ->capture_default_str();
  cmd.add_flag("--show-profile", o.show_profile, "print the resolved profile as JSON and exit");
}

/// One connection per in-flight stream: thousands of streams need thousands of descriptors,
/// more than the usual soft limit of 1024. Raise the soft limit to the hard one.
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace

int main(int argc, char** argv) {
  raise_fd_limit();
  CLI::App app{"dyno — a dynamometer for LLM inference engines.\n" + std::string(kExitCodes)};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("dyno ") + dyno::build_info::kVersion + " (" +
                                        dyno::build_info::kGitCommit + ")");
  dyno::app::RunOptions run_options;
  CLI::App* run = app.add_subcommand(
      "run",
      "benchmark an OpenAI-compatible engine (default: the embedded simulated engine) and write "
      "a run record");
  add_run_flags(*run, run_options);
  dyno::app::SimOptions sim_options;
  CLI::App* sim = app.add_subcommand("sim", "serve the simulated OpenAI-compatible engine");
  add_sim_flags(*sim, sim_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n(see dyno --help)\n";
    return dyno::app::kExitUsage;
  }

  try {
    if (run->parsed()) return dyno::app::run_command(run_options);
    if (sim->parsed()) return dyno::app::sim_command(sim_options);
  } catch (const dyno::app::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return dyno::app::kExitUsage;
  } catch (const dyno::record::RecordError& e) {
    std::cerr << "error: run record: " << e.what() << "\n";
    return dyno::app::kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return dyno::app::kExitFailure;
  }
  return dyno::app::kExitUsage;
}
