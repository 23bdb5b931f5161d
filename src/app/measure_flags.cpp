#include "app/measure_flags.h"

#include <CLI/CLI.hpp>

#include "app/flag_values.h"
#include "app/sign_key_flag.h"
#include "app/signals.h"
#include "engine_session/cell_plan.h"
#include "record/signature.h"
#include "store/index_url.h"

namespace dyno::app {

void add_telemetry_flags(CLI::App& cmd, telemetry::TelemetryOptions& t) {
  cmd.add_option("--telemetry", t.mode, "auto (every available source) or off")
      ->capture_default_str();
  cmd.add_option("--telemetry-period-ms", t.period_ms, "sampler period (20-1000 ms)")
      ->transform(flags::number(20, 1000))
      ->capture_default_str();
  cmd.add_option("--idle-baseline", t.idle_baseline_s,
                 "seconds of idle power measured before the first request (0: none)")
      ->transform(flags::seconds(true))
      ->capture_default_str();
  cmd.add_option("--nvml-library", t.nvml_library,
                 "path of libnvidia-ml.so.1 (default: the system's; env DYNO_NVML_LIBRARY)");
  cmd.add_option("--sysfs-root", t.sysfs_root, "where sysfs is mounted (amdgpu, RAPL)")
      ->capture_default_str();
  cmd.add_option("--proc-root", t.proc_root, "where procfs is mounted (host CPU, RSS)")
      ->capture_default_str();
}

void add_common_flags(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--url", o.target.url,
                 "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default: start the "
                 "simulated engine in-process)");
  cmd.add_option("--engine", o.target.engine_spec,
                 "engine spec file (TOML, docs/engines.md): dyno launches the engine, waits until "
                 "it is ready, runs every cell against it and stops it");
  cmd.add_option("--model", o.target.model, "model name to request (required with --url)");
  cmd.add_option("--plugin", o.target.plugin,
                 "an in-process engine plugin (.so, docs/plugins.md) instead of --url; a bare "
                 "file name is also looked up next to the dyno binary");
  cmd.add_option("--plugin-config", o.target.plugin_config,
                 "the plugin's configuration string, e.g. profile=small-gpu for "
                 "libdyno_sim_plugin.so");
  cmd.add_option("--api", o.target.api, "endpoint: chat (/chat/completions) or completions")
      ->capture_default_str();
  cmd.add_option("--profile", o.target.profile,
                 "embedded simulated engine profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd.add_option("--warmup", o.load.warmup,
                 "requests sent first and discarded (recorded as warmup)")
      ->transform(flags::integer(0, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--max-tokens", o.stream.max_tokens,
                 "max_tokens for stream requests that set none")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--temperature", o.stream.temperature, "temperature for requests that set none")
      ->transform(flags::number(0, 100))
      ->capture_default_str();
  cmd.add_option("--seed", o.load.seed, "seed of the synthetic stream and the arrival schedule")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--stream", o.stream.file, "request stream file (JSONL, see docs/record.md)");
  cmd.add_option("--input-tokens", o.stream.input_tokens,
                 "synthetic stream: approximate prompt length in tokens")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_option("--output-tokens", o.stream.output_tokens,
                 "synthetic stream: output tokens per request (max_tokens with ignore_eos)")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_option("--extra-body", o.stream.extra_body,
                 "a JSON object of request fields merged into every request body, e.g. "
                 "'{\"cache_prompt\":false}' (recorded; part of the request stream's hash)");
  cmd.add_flag("--extra-body-override", o.stream.extra_body_override,
               "let --extra-body (and a stream line's extra_body) replace fields dyno sets "
               "itself (model, messages, prompt, stream, stream_options, max_tokens…)");
  cmd.add_option("--slo", o.load.slo, "goodput objectives, e.g. ttft=500ms,tpot=50ms,e2e=10s");
  cmd.add_option("--arrival", o.load.arrival, "open-loop arrivals: poisson, constant or gamma")
      ->capture_default_str();
  cmd.add_option("--burstiness", o.load.burstiness,
                 "gamma shape k: 1 = Poisson, < 1 burstier, > 1 smoother (0.01 to 1000)")
      ->transform(flags::number(flags::kMinBurstiness, 1000))
      ->capture_default_str();
  cmd.add_option("--runs-root", o.record.runs_root, "directory that receives run records")
      ->capture_default_str();
  cmd.add_option("--index", o.record.index,
                 "index finished runs in this PostgreSQL index: postgresql://[user@]host[:port]/db "
                 "(default: $DYNO_INDEX_URL, else <runs-root>/index.sqlite; docs/store.md)")
      ->check(CLI::Validator(
          [](std::string& url) -> std::string {
            try {
              store::check_index_url(url);
              return {};
            } catch (const Error& e) {
              return e.what();
            }
          },
          "URL"));
  cmd.add_option("--label", o.record.label, "a label added to the run id and the manifest");
  add_sign_key_flag(cmd, o.record.sign_key, "each record and the campaign file");
  cmd.add_flag("--json", o.console.json, "print the summary as JSON on stdout");
  cmd.add_flag("--no-stream", o.target.no_stream, "ask for whole (non-streamed) responses");
  cmd.add_flag("--keep-outputs", o.record.keep_outputs, "keep every output text in requests.jsonl");
  cmd.add_flag("--no-chunk-times", o.record.no_chunk_times,
               "do not write per-event times (chunk_times_ns) to requests.jsonl");
  cmd.add_option("--connect-timeout", o.target.connect_timeout_s, "connect timeout in seconds")
      ->transform(flags::seconds())
      ->capture_default_str();
  cmd.add_option("--first-token-timeout", o.target.first_token_timeout_s,
                 "fail a request with no token this many seconds after it was sent (0: never; "
                 "default: 60 s + 1 s per 4000 prompt bytes)")
      ->transform(flags::seconds(true));
  cmd.add_option("--timeout", o.target.timeout_s,
                 "fail a request not done this many seconds after sent (0: never; default: the "
                 "first-token limit + 60 s + 0.25 s per max_tokens)")
      ->transform(flags::seconds(true));
  cmd.add_option("--idle-timeout", o.target.idle_timeout_s,
                 "fail a request whose stream sends no token for this many seconds (0: never)")
      ->transform(flags::seconds(true))
      ->capture_default_str();
  cmd.add_option("--client-threads", o.load.client_threads,
                 "event loops (threads) the client's connections are shared out over (HTTP "
                 "engines; default: half the machine's hardware threads, 1 to 8)")
      ->transform(flags::integer(1, 64));
  cmd.add_option("--error-budget", o.load.error_budget,
                 "exit 3 when the error rate exceeds this fraction")
      ->transform(flags::number(0, 1))
      ->capture_default_str();
  cmd.add_option("--unreachable-after", o.load.unreachable_after_s,
                 "stop the run (status target_unreachable, exit 3) when every request for this "
                 "many seconds failed to connect and none was answered meanwhile (0: never)")
      ->transform(flags::seconds(true))
      ->capture_default_str();
  cmd.add_flag("--insecure", o.target.insecure, "https: do not verify the server's certificate");
  cmd.add_option("--ca-file", o.target.ca_file,
                 "https: PEM file of CA certificates to trust besides the system's");
  cmd.add_option("--model-file", o.target.model_file,
                 "the weights the engine serves (GGUF file, safetensors file or directory): "
                 "their fingerprint goes into the record");
  cmd.add_option("--model-revision", o.target.model_revision,
                 "the revision of the weights (e.g. a Hugging Face commit)");
  add_telemetry_flags(cmd, o.telemetry);
  cmd.add_flag("-q,--quiet", o.console.quiet, "no progress bar");
  cmd.add_option("--color", o.console.color, "auto, always or never (NO_COLOR is honoured)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

void add_load_flags(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("-c,--concurrency", o.load.concurrency,
                 "closed loop: keep C requests in flight (default 8)")
      ->transform(flags::integer(1, flags::kMaxConcurrency));
  cmd.add_option("--rate", o.load.rate, "open loop: mean arrival rate in requests/s")
      ->transform(flags::number(flags::kMinRate, flags::kMaxRate));
  cmd.add_option("-n,--requests", o.load.requests,
                 "measured requests to send (default: 100; with --stream, the stream's length; "
                 "none with --duration)")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("-d,--duration", o.load.duration_s, "stop sending after S seconds")
      ->transform(flags::seconds());
  cmd.add_option("--schedule", o.load.schedule,
                 "timestamps: replay the --stream, each request (or session) at its at_ms")
      ->check(CLI::IsMember({"timestamps"}));
  cmd.add_option("--time-scale", o.load.time_scale,
                 "replay: multiply the trace's times by X (2: half as fast; 0.5: twice as fast)")
      ->transform(flags::number(0, 1e6, true))
      ->capture_default_str();
  cmd.add_option("--time-window", o.load.time_window,
                 "replay: only the trace's requests at times in [FROM, TO), e.g. 600,1200 or "
                 "10m,20m (seconds unless ms, s, m or h; TO may be left out)");
  cmd.add_flag("--cycle", o.stream.cycle,
               "send the --stream again from its start when -n (plus --warmup) asks for more "
               "requests than it holds (named in the record)");
}

void add_run_options(CLI::App& cmd, RunOptions& o) {
  add_common_flags(cmd, o);
  add_load_flags(cmd, o);
  cmd.add_option("--shard", o.load.shard,
                 "send shard K (0-based) of N of this run's load, e.g. 0/4: one client host of "
                 "N (docs/scale.md); `slurm`: K and N from SLURM_PROCID and SLURM_NTASKS (one "
                 "srun step); merge the records with dyno runs merge");
  cmd.add_option("--clock-ref", o.load.clock_ref,
                 "HOST:PORT of a clock reference (dyno clock serve): this host's clock is "
                 "measured against it before and after the load and recorded, so that dyno "
                 "runs merge can align the shards' clocks; with --shard");
  cmd.add_option("--start-at", o.load.start_at,
                 "send nothing before this wall-clock time: RFC 3339 UTC "
                 "(2026-12-03T14:30:00Z) or now+5s; with --shard");
}

RunOptions start_measuring(RunOptions o) {
  install_stop_signals();
  o.stream = engine_session::with_engine_extra_body(o.target, std::move(o.stream));
  o.record.signing_key = record::load_sign_key(o.record.sign_key);
  return o;
}

}  // namespace dyno::app
