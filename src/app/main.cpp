// dyno: a dynamometer for LLM inference engines. The only place that prints `error:` and
// picks an exit code (P9).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "app/campaign_command.h"
#include "app/clock_command.h"
#include "app/console.h"
#include "app/export_command.h"
#include "app/flag_values.h"
#include "app/import_command.h"
#include "app/protocols.h"
#include "app/report_command.h"
#include "app/rescore_command.h"
#include "app/results_import_command.h"
#include "app/run_command.h"
#include "app/runs_command.h"
#include "app/runs_merge.h"
#include "app/signals.h"
#include "app/sim_command.h"
#include "app/sim_tools.h"
#include "app/stream_command.h"
#include "dyno/build_info.h"
#include "interop/import_formats.h"
#include "record/run_writer.h"
#include "session/cell_plan.h"
#include "store/index_url.h"
#include "telemetry/energy_report.h"

namespace {

namespace flags = dyno::app::flags;

constexpr const char* kExitCodes =
    "Exit codes: 0 ok; 1 dyno could not work (I/O, internal error); 2 usage error (bad flag or "
    "input file); 3 the run failed or exceeded its error budget; 130 interrupted.";

/// Telemetry: which sources, how often, the idle baseline; roots for tests and containers.
void add_telemetry_flags(CLI::App& cmd, dyno::telemetry::TelemetryOptions& t) {
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

/// Flags every measuring command shares: the engine, the workload, the output.
void add_common_flags(CLI::App& cmd, dyno::app::RunOptions& o) {
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
              dyno::store::check_index_url(url);
              return {};
            } catch (const dyno::Error& e) {
              return e.what();
            }
          },
          "URL"));
  cmd.add_option("--label", o.record.label, "a label added to the run id and the manifest");
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

/// `dyno run`'s load: closed loop (--concurrency) or open loop (--rate), and its limits.
void add_load_flags(CLI::App& cmd, dyno::app::RunOptions& o) {
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

void add_repeat_flags(CLI::App& cmd, dyno::app::RepeatOptions& r) {
  cmd.add_option("--repeat", r.repeat, "run every cell K times (all kept; one selected)")
      ->transform(flags::integer(1, flags::kMaxRepeat))
      ->capture_default_str();
  cmd.add_option("--select", r.select,
                 "the metric whose median repetition is selected (default: the protocol's)");
}

void add_sweep_flags(CLI::App& cmd, dyno::app::SweepOptions& o) {
  cmd.add_option("--concurrencies", o.concurrencies, "closed-loop cells, e.g. 1,2,4,8")
      ->capture_default_str();
  cmd.add_option("--rates", o.rates, "open-loop cells instead, in req/s, e.g. 2,4,8");
  cmd.add_option("--min-requests", o.min_requests,
                 "each cell sends max(min-requests, per-slot x C) requests")
      ->transform(flags::integer(0, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--per-slot", o.per_slot, "requests per concurrency slot (k)")
      ->transform(flags::integer(1, flags::kMaxRequests))
      ->capture_default_str();
  cmd.add_option("--rate-duration", o.rate_duration_s, "open-loop cells: seconds each cell sends")
      ->transform(flags::seconds())
      ->capture_default_str();
  add_repeat_flags(cmd, o.rep);
}

void add_ladder_flags(CLI::App& cmd, dyno::app::LadderOptions& o) {
  cmd.add_option("--depths", o.depths, "decode cells: context depths in tokens")
      ->capture_default_str();
  cmd.add_option("--prefill-sizes", o.prefill_sizes,
                 "prefill-only cells: prompt sizes in tokens ('' for none)")
      ->capture_default_str();
  cmd.add_option("--decode-tokens", o.decode_tokens, "output tokens of a decode cell")
      ->transform(flags::integer(2, flags::kMaxTokens))
      ->capture_default_str();
  add_repeat_flags(cmd, o.rep);
}

void add_speed_flags(CLI::App& cmd, dyno::app::SpeedOptions& o) {
  cmd.add_option("--passes", o.passes,
                 "named passes, e.g. fr,en,fr2 (prompts tagged pass=<name> in --stream)")
      ->capture_default_str();
  cmd.add_option("--burst", o.concurrency, "requests of the aggregate burst")
      ->transform(flags::integer(1, flags::kMaxConcurrency))
      ->capture_default_str();
  add_repeat_flags(cmd, o.rep);
}

void add_sim_flags(CLI::App& cmd, dyno::app::SimOptions& o) {
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

void add_import_flags(CLI::App& cmd, dyno::app::ImportOptions& o) {
  cmd.add_option("kind", o.kind,
                 "sharegpt, table, image-qa, agent (JSONL trajectories), or a trace: mooncake, "
                 "azure, burstgpt")
      ->required()
      ->check(CLI::IsMember(
          {"sharegpt", "table", "image-qa", "agent", "mooncake", "azure", "burstgpt"}));
  cmd.add_option("input", o.input, "the data file (image-qa: or its directory)")->required();
  cmd.add_option("-o,--output", o.output, "stream file to write (JSONL)")->required();
  cmd.add_option("--api", o.api, "chat or completions (default: chat; traces: completions)")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd.add_option("--max-tokens", o.max_tokens, "max_tokens of every request (not for traces)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--limit", o.limit,
                 "keep at most this many requests (sharegpt --multi-turn, agent: sessions)")
      ->transform(flags::integer(1, flags::kMaxU64));
  cmd.add_option("--shuffle-seed", o.shuffle_seed, "sharegpt: shuffle (seeded) before --limit")
      ->transform(flags::integer(0, flags::kMaxU64));
  cmd.add_flag("--output-from-reference", o.output_from_reference,
               "sharegpt: max_tokens approximated from the reference reply");
  cmd.add_option("--min-prompt-chars", o.min_prompt_chars, "sharegpt: skip shorter prompts")
      ->transform(flags::integer(0, flags::kMaxU64));
  cmd.add_flag("--multi-turn", o.multi_turn,
               "sharegpt: every human turn; each conversation becomes a session");
  cmd.add_option("--columns", o.columns,
                 "table: FIELD=COLUMN list, e.g. prompt=question,id=qid,expected=answer,"
                 "tags=lang;topic (fields: prompt id system expected max_tokens image tags)");
  cmd.add_option("--format", o.format,
                 "table / image-qa: csv, jsonl or json (default: by extension)");
  cmd.add_option("--scorer", o.scorer,
                 "table / image-qa: scorer of every row (exact, normalized, relaxed_numeric)");
  cmd.add_option("--instruction", o.instruction, "image-qa: text appended to each question");
  cmd.add_option("--image-dir", o.image_dir,
                 "image-qa: image directory, relative to the data file");
  cmd.add_option("--url", o.url,
                 "traces: base URL whose /tokenize counts prompts (default: the embedded "
                 "simulated engine)");
  cmd.add_option("--model", o.model, "traces: model name (required with --url)");
  cmd.add_option("--profile", o.profile, "traces: embedded simulated engine profile (no --url)")
      ->capture_default_str();
  cmd.add_option("--block-tokens", o.block_tokens, "mooncake: tokens per hash id")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_flag("--skip-short", o.skip_short,
               "traces: skip (and count) rows shorter than a prompt's fixed cost (template, "
               "BOS), instead of an error");
  cmd.add_option("--seed", o.seed, "traces: seed of the block texts")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--timeout", o.timeout_s, "traces: seconds per tokenize call")
      ->transform(flags::seconds())
      ->capture_default_str();
  cmd.add_flag("--insecure", o.insecure, "traces, https: do not verify the server's certificate");
  cmd.add_option("--ca-file", o.ca_file, "traces, https: PEM file of extra CA certificates");
  cmd.add_flag("--json", o.json, "print the result as JSON");
}

void add_stream_make_flags(CLI::App& cmd, dyno::app::StreamMakeOptions& o) {
  cmd.add_option("--url", o.url,
                 "base URL whose /tokenize measures lengths (default: the embedded simulated "
                 "engine)");
  cmd.add_option("--model", o.model, "model name (required with --url)");
  cmd.add_option("--api", o.api, "chat or completions")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  cmd.add_option("--profile", o.profile, "embedded simulated engine profile (no --url)")
      ->capture_default_str();
  cmd.add_option("--count", o.count, "requests to generate (required without --sessions)")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("--input-tokens", o.input_tokens,
                 "exact prompt tokens per request (chat: with the chat template; required "
                 "without --sessions)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--output-tokens", o.output_tokens,
                 "output tokens per request (max_tokens = min_tokens, ignore_eos)")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->required();
  cmd.add_option("--seed", o.seed, "seed of the generated text")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--shared-prefix", o.shared_prefix,
                 "every prompt starts with the same text of exactly P tokens")
      ->transform(flags::integer(0, flags::kMaxTokens));
  cmd.add_option("--system", o.system, "chat: a system message; completions: leading text");
  cmd.add_option("--sessions", o.sessions,
                 "a session stream of N multi-turn sessions (chat; with --turns and "
                 "--turn-input-tokens)")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("--turns", o.turns, "sessions: turns per session")
      ->transform(flags::integer(1, flags::kMaxRequests));
  cmd.add_option("--turn-input-tokens", o.turn_input_tokens,
                 "sessions: tokens each new user message adds to the conversation (turn 0: "
                 "with --system-tokens, the whole prompt)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--system-tokens", o.system_tokens,
                 "sessions: a system message of exactly S tokens (alone, template included)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_flag("--shared-system,!--no-shared-system", o.shared_system,
               "sessions: one system text for every session (default), or one per session");
  cmd.add_option("--think-ms", o.think_ms,
                 "sessions: the user's pause before each turn >= 1, in ms")
      ->transform(flags::number(0, 86'400'000));
  cmd.add_option("-o,--output", o.output, "stream file to write (JSONL)")->required();
  cmd.add_flag("--json", o.json, "print the length report as JSON on stdout");
  cmd.add_option("--timeout", o.timeout_s, "seconds per tokenize call")
      ->transform(flags::seconds())
      ->capture_default_str();
  cmd.add_flag("--insecure", o.insecure, "https: do not verify the server's certificate");
  cmd.add_option("--ca-file", o.ca_file, "https: PEM file of extra CA certificates");
}

void add_rescore_flags(CLI::App& cmd, dyno::app::RescoreCommandOptions& o) {
  cmd.add_option("run", o.run, "run id, unique prefix, or run directory")->required();
  cmd.add_option("--scorer", o.scorer,
                 "judge every scored request with this scorer: exact, normalized, "
                 "relaxed_numeric, regex, choice, or a scorer object such as "
                 "'{\"kind\":\"regex\",\"pattern\":\"answer: (\\\\d+)\"}' (default: each "
                 "request's own scorer, as this dyno implements it)");
  cmd.add_option("--runs-root", o.runs_root, "directory of run records (the new one goes here)")
      ->capture_default_str();
  cmd.add_option("--label", o.label,
                 "the derived record's label (default: the run's label + \"-rescore\")");
  cmd.add_flag("--json", o.json, "print the before/after as JSON on stdout");
}

void add_results_import_flags(CLI::App& cmd, dyno::app::ResultsImportOptions& o) {
  std::string formats;
  for (const auto& f : dyno::interop::import_formats()) {
    formats += "\n  " + f.name + ": " + f.describe;
  }
  cmd.add_option("format", o.format, "the files' format (docs/interop.md):" + formats)
      ->required()
      ->check(CLI::IsMember(dyno::interop::import_format_names()));
  cmd.add_option("files", o.files, "saved result files, one record per result they hold")
      ->required();
  cmd.add_option("--map", o.read.map,
                 "table: SOURCE=TARGET[:UNIT], repeated: SOURCE a column, or a key or path "
                 "$.a.b[0] of JSON rows; TARGET a figure of summary.json "
                 "(latency_ms.ttft.p50:s) or an identity (model, engine, concurrency…); "
                 "PATH=rows: where JSON rows are (docs/interop.md)");
  cmd.add_option("--runs-root", o.runs_root, "directory of run records (the new ones go here)")
      ->capture_default_str();
  cmd.add_option("--label", o.label, "the records' label (default: the file's label, or FORMAT)");
  cmd.add_option("--model", o.model, "the model id, when the file names none or names it wrong");
  cmd.add_option("--engine", o.engine, "the engine's name (the files rarely say it)");
  cmd.add_option("--api", o.api,
                 "chat or completions: the endpoint measured, for files that do not say it "
                 "(an AIPerf per-record export, a ledger without an api column)")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd.add_flag("--json", o.json, "print what was imported as JSON on stdout");
}

void add_export_flags(CLI::App& cmd, dyno::app::ExportCommandOptions& o) {
  cmd.add_option("format", o.format,
                 "vllm-bench: the JSON object `vllm bench serve --save-result --save-detailed` "
                 "writes, one per run; csv: one row per run, every summary figure a column "
                 "(docs/interop.md \"Export\")")
      ->required()
      ->check(CLI::IsMember(dyno::app::export_format_names()));
  cmd.add_option("runs", o.runs, "run ids, unique prefixes or run directories")->required();
  cmd.add_option("-o,--output", o.output,
                 "the file to write; vllm-bench with several runs: a directory (made when "
                 "absent) that receives <run_id>.json for each")
      ->required();
  cmd.add_option("--runs-root", o.runs_root, "directory of run records")->capture_default_str();
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

/// The commands that make records from records or files, and files from records: rescore,
/// import (other tools' results) and export.
class StoreTools {
 public:
  explicit StoreTools(CLI::App& app) {
    rescore_ = app.add_subcommand(
        "rescore",
        "judge a finished run's kept outputs again (a scorer given, or the requests' own) into "
        "a new derived record; the run itself is not changed");
    add_rescore_flags(*rescore_, rescore_options_);
    import_ = app.add_subcommand(
        "import",
        "bring other tools' saved results (vLLM, SGLang, AIPerf, llama-bench, GuideLLM, "
        "ledgers) into the run store as records, labelled with their source; not `dyno stream "
        "import`, which makes request streams");
    add_results_import_flags(*import_, import_options_);
    export_ = app.add_subcommand(
        "export",
        "write finished runs in another tool's format: vllm-bench (vLLM's result JSON, so "
        "vLLM's tooling plots them) or csv (one row per run); the records are not changed");
    add_export_flags(*export_, export_options_);
  }
  bool parsed() const { return rescore_->parsed() || import_->parsed() || export_->parsed(); }
  int execute() {
    if (rescore_->parsed()) {
      return dyno::app::rescore_command(rescore_options_, std::cout, std::cerr);
    }
    if (import_->parsed()) {
      return dyno::app::results_import_command(import_options_, std::cout, std::cerr);
    }
    return dyno::app::export_command(export_options_, std::cout);
  }

 private:
  dyno::app::RescoreCommandOptions rescore_options_;
  dyno::app::ResultsImportOptions import_options_;
  dyno::app::ExportCommandOptions export_options_;
  CLI::App* rescore_ = nullptr;
  CLI::App* import_ = nullptr;
  CLI::App* export_ = nullptr;
};

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
  add_common_flags(*run, run_options);
  add_load_flags(*run, run_options);
  run->add_option("--shard", run_options.load.shard,
                  "send shard K (0-based) of N of this run's load, e.g. 0/4: one client host of "
                  "N (docs/scale.md); `slurm`: K and N from SLURM_PROCID and SLURM_NTASKS (one "
                  "srun step); merge the records with dyno runs merge");
  run->add_option("--clock-ref", run_options.load.clock_ref,
                  "HOST:PORT of a clock reference (dyno clock serve): this host's clock is "
                  "measured against it before and after the load and recorded, so that dyno "
                  "runs merge can align the shards' clocks; with --shard");
  run->add_option("--start-at", run_options.load.start_at,
                  "send nothing before this wall-clock time: RFC 3339 UTC "
                  "(2026-12-03T14:30:00Z) or now+5s; with --shard");

  // Protocols: many cells, one record each, grouped by a campaign (docs/protocols.md).
  dyno::app::RunOptions sweep_common;
  dyno::app::SweepOptions sweep_options;
  CLI::App* sweep = app.add_subcommand(
      "sweep", "protocol: one cell per concurrency (or rate), each held long enough");
  add_common_flags(*sweep, sweep_common);
  add_sweep_flags(*sweep, sweep_options);

  dyno::app::RunOptions ladder_common;
  dyno::app::LadderOptions ladder_options;
  CLI::App* ladder = app.add_subcommand(
      "ladder", "protocol: decode speed at context depths and prefill speed at prompt sizes");
  add_common_flags(*ladder, ladder_common);
  add_ladder_flags(*ladder, ladder_options);

  dyno::app::RunOptions speed_common;
  dyno::app::SpeedOptions speed_options;
  CLI::App* speed = app.add_subcommand(
      "speed", "protocol: a solo streamed request and a burst, for each named pass of prompts");
  add_common_flags(*speed, speed_common);
  add_speed_flags(*speed, speed_options);

  dyno::app::RunOptions real_common;
  dyno::app::RealOptions real_options;
  CLI::App* real = app.add_subcommand(
      "real", "protocol: real prompts with long outputs, per-case figures (needs --stream)");
  add_common_flags(*real, real_common);
  add_repeat_flags(*real, real_options.rep);
  dyno::telemetry::TelemetryOptions doctor_options;
  CLI::App* doctor = app.add_subcommand(
      "doctor", "show what telemetry this host offers, and why a source is missing");
  add_telemetry_flags(*doctor, doctor_options);
  dyno::app::SimOptions sim_options;
  CLI::App* sim = app.add_subcommand("sim", "serve the simulated OpenAI-compatible engine");
  add_sim_flags(*sim, sim_options);
  dyno::app::SimTools sim_tools(*sim);  // dyno sim fit | predict
  dyno::app::StreamMakeOptions stream_make_options;
  CLI::App* stream = app.add_subcommand("stream", "request stream tools");
  stream->require_subcommand(1);
  CLI::App* stream_make = stream->add_subcommand(
      "make",
      "write a stream whose prompts have exact token lengths (measured by the target's "
      "/tokenize)");
  add_stream_make_flags(*stream_make, stream_make_options);
  dyno::app::ImportOptions import_options;
  CLI::App* stream_import = stream->add_subcommand(
      "import",
      "turn a data set (ShareGPT, a CSV/JSONL table, image questions, agent trajectories) or a "
      "trace (Mooncake, Azure, BurstGPT) into a stream");
  add_import_flags(*stream_import, import_options);
  StoreTools store_tools(app);              // dyno rescore | import | export
  dyno::app::RunsCli runs_cli(app);         // dyno runs list|show|diff|verify|rm|reindex|publish
  dyno::app::RunsMergeCli runs_merge(app);  // dyno runs merge
  dyno::app::ReportCommands report_commands(app);
  dyno::app::CampaignCli campaign_cli(app);  // dyno plan check | campaign submit|status|...
  dyno::app::ClockCli clock_cli(app);        // dyno clock serve

  dyno::app::ignore_sigpipe();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << dyno::app::terminal_text(e.what()) << "\n(see dyno --help)\n";
    return dyno::app::kExitUsage;
  }

  try {
    // Measuring commands answer SIGINT/SIGTERM from the start: a signal during preparation
    // (building a large stream, launching an engine) stops the run before its first request.
    if (run->parsed() || sweep->parsed() || ladder->parsed() || speed->parsed() || real->parsed()) {
      dyno::app::install_stop_signals();
    }
    // An --engine spec's [extra_body] joins --extra-body's fields (the flag's win).
    const auto measuring = [](dyno::app::RunOptions o) {
      o.stream = dyno::session::with_engine_extra_body(o.target, std::move(o.stream));
      return o;
    };
    if (run->parsed()) return dyno::app::run_command(measuring(run_options));
    if (sweep->parsed()) return dyno::app::sweep_command(measuring(sweep_common), sweep_options);
    if (ladder->parsed()) {
      return dyno::app::ladder_command(measuring(ladder_common), ladder_options);
    }
    if (speed->parsed()) return dyno::app::speed_command(measuring(speed_common), speed_options);
    if (real->parsed()) return dyno::app::real_command(measuring(real_common), real_options);
    if (sim_tools.parsed()) return sim_tools.execute(std::cout);
    if (sim->parsed()) return dyno::app::sim_command(sim_options);
    if (doctor->parsed()) return dyno::app::doctor_command(doctor_options);
    if (stream_import->parsed()) return dyno::app::import_command(import_options);
    if (store_tools.parsed()) return store_tools.execute();
    if (clock_cli.parsed()) return clock_cli.execute(std::cout);
    if (runs_merge.parsed()) return runs_merge.execute(std::cout, std::cerr);
    if (runs_cli.parsed()) return runs_cli.execute(std::cout, std::cerr);
    if (report_commands.parsed()) return report_commands.run();
    if (campaign_cli.parsed()) {
      // A local campaign runs cells here: an interrupt lets the running cell close its record
      // and starts no further cell.
      static const std::atomic<bool> never{false};
      const std::atomic<bool>& stop =
          campaign_cli.runs_cells() ? dyno::app::install_stop_signals() : never;
      return campaign_cli.execute(std::cout, std::cerr, stop);
    }
    if (stream_make->parsed()) {
      return dyno::app::stream_make_command(stream_make_options, std::cout);
    }
  } catch (const dyno::Error& e) {  // messages may quote a server or a file
    const bool record = dynamic_cast<const dyno::record::RecordError*>(&e) != nullptr;
    std::cerr << "error: " << (record ? "run record: " : "") << dyno::app::terminal_text(e.what())
              << "\n";
    return dyno::app::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "error: " << dyno::app::terminal_text(e.what()) << "\n";
    return dyno::app::kExitFailure;
  }
  return dyno::app::kExitUsage;
}
