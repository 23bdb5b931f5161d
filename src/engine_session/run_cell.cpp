// One cell → one run record, in steps: make the target, open the record (its manifest says
// `running`), measure, close the record (figures, evidence, the final manifest).
#include "engine_session/run_cell.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>

#include "digest/digest.h"
#include "engine/launch.h"
#include "engine/server_gauges.h"
#include "engine/server_metrics.h"
#include "engine/server_timings.h"
#include "engine_session/cell_plan.h"
#include "engine_session/clock_reference.h"
#include "engine_session/host_identity.h"
#include "record/manifest.h"
#include "record/model_identity.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_writer.h"
#include "record/signature.h"
#include "record/summary_file.h"
#include "scrub/redact.h"
#include "sim/server.h"
#include "store/run_index.h"
#include "telemetry/energy_report.h"
#include "transport/event_loop.h"
#include "transport/sharded_target.h"
#include "transport/timeouts.h"
#include "workload/request_stream.h"
#include "workload/scoring.h"

namespace dyno::engine_session {

namespace json = boost::json;

namespace {

/// Scores every ended request whose stream request has an expected answer (after the run, off
/// the hot path). A failed request is scored incorrect.
void score_traces(const std::vector<workload::Request>& requests,
                  std::vector<metrics::Trace>& traces) {
  for (auto& t : traces) {
    const workload::Request& r = requests[t.index % requests.size()];
    if (!r.expected || t.status == metrics::RequestStatus::kCancelled) continue;
    t.expected_answer = r.expected->answer;
    t.scorer_pattern = r.expected->pattern;
    t.scorer_choices = r.expected->choices;
    if (t.ok()) {
      const workload::Score score = workload::score_answer(*r.expected, t.output_text);
      t.correct = score.correct;
      t.extracted_answer = score.extracted;
      t.scorer = score.scorer;
    } else {
      t.correct = false;
      t.extracted_answer.clear();
      t.scorer = r.expected->scorer;
    }
  }
}

/// manifest load.timeouts_s: what the user set; a limit left unset is derived per request.
json::object timeouts_json(const TargetOptions& o) {
  json::object t{{"connect", o.connect_timeout_s},
                 {"first_token", record::number_or_null(o.first_token_timeout_s)},
                 {"total", record::number_or_null(o.timeout_s)},
                 {"idle", o.idle_timeout_s}};
  if (!o.first_token_timeout_s || !o.timeout_s) t["derived_rule"] = transport::kDerivedTimeoutRule;
  return t;
}

/// The requests of a cell whose launched engine exited, as it happened to each:
/// - refused at connect, never written to a socket, after the engine last answered anything
///   (the port closed as the process began to exit, before it was reaped): cancelled, "not
///   sent: the engine had exited";
/// - written to the engine's socket and still unanswered when dyno gave up on them (the exit's
///   grace period cancelled them): failures — `stream_truncated` when the response had begun,
///   else `connect` (the connection ended before a response started).
/// A request that was written and then refused on its retry (a stale keep-alive connection)
/// stays the `connect` failure it is. Not for an interrupted cell (its cancels are the user's).
void settle_after_engine_exit(std::vector<metrics::Trace>& traces) {
  std::int64_t last_answer = std::numeric_limits<std::int64_t>::min();
  for (const auto& t : traces) {
    if (t.first_byte_ns) last_answer = std::max(last_answer, *t.first_byte_ns);
  }
  const std::string connect = transport::to_string(transport::ErrorCategory::kConnect);
  for (auto& t : traces) {
    if (t.status == metrics::RequestStatus::kCancelled && t.sent_ns) {
      t.status = metrics::RequestStatus::kError;
      t.error_category = t.first_byte_ns
                             ? transport::to_string(transport::ErrorCategory::kStreamTruncated)
                             : connect;
      t.error_message = t.first_byte_ns
                            ? "the engine exited during the response, which never ended"
                            : "the engine exited after the request was written, before any "
                              "response";
      continue;
    }
    if (t.status != metrics::RequestStatus::kError || t.error_category != connect || t.sent_ns ||
        t.done_ns.value_or(last_answer) < last_answer) {
      continue;
    }
    t.status = metrics::RequestStatus::kCancelled;
    t.error_category = "cancelled";
    t.error_message = "not sent: the engine had exited (" + t.error_message + ")";
  }
}

/// The requests still connecting when the target was found gone (LoadResult::unreachable):
/// cancelled by dyno, never sent.
void mark_unsent_unreachable(std::vector<metrics::Trace>& traces) {
  for (auto& t : traces) {
    if (t.status != metrics::RequestStatus::kCancelled || t.first_byte_ns) continue;
    t.error_message = "not sent: the target was unreachable";
  }
}

const char* final_status(const metrics::Summary& s, bool interrupted) {
  if (interrupted) return "interrupted";
  if (s.requests_ok == 0) return "failed";
  if (s.requests_failed > 0) return "partial";
  return "ok";
}

/// The engine's target for one cell: HTTP (a server or the embedded sim) or the in-process
/// plugin, on the cell's own event loop.
class CellTarget {
 public:
  CellTarget(EngineSession& engine, const std::string& run_id, const load::LoadConfig& load)
      : config_(engine.target_config()) {
    config_.request_id_prefix = run_id + "-";
    config_.keep_output_text = load.keep_output_text;
    // Never hold more idle connections than the load can use (a closed loop needs C at most).
    if (!load.open_loop) config_.max_idle_connections = load.concurrency;
    if (engine.plugin() != nullptr) {
      transport::PluginTargetConfig pc;
      pc.model = engine.model();
      pc.api = config_.api;
      pc.stream = config_.stream;
      pc.request_id_prefix = config_.request_id_prefix;
      pc.first_token_timeout = config_.first_token_timeout;
      pc.total_timeout = config_.total_timeout;
      plugin_ = std::make_unique<transport::PluginTarget>(loop_, *engine.plugin(), pc);
    } else if (load.client_threads > 1) {
      sharded_ = std::make_unique<transport::ShardedTarget>(loop_, config_, load.client_threads);
    } else {
      http_ = std::make_unique<transport::HttpTarget>(loop_, config_);
    }
  }
  ~CellTarget() {
    if (sharded_) sharded_->cancel_all();  // nothing in flight may outlive the observers
  }
  transport::EventLoop& loop() { return loop_; }
  transport::Target& target() {
    if (plugin_) return *plugin_;
    if (sharded_) return *sharded_;
    return *http_;
  }
  /// Closes the HTTP connections kept alive for reuse once the load is over (nothing is in
  /// flight then), so the memory they hold serves the record's last writes instead of adding
  /// to them (docs/performance.md "Memory").
  void close_connections() {
    if (http_) http_->cancel_all();
    if (sharded_) sharded_->cancel_all();
  }
  /// Event loops doing the I/O: 1, or the shards of --client-threads.
  unsigned loops() const { return sharded_ ? sharded_->shards() : 1; }
  /// CPU seconds of the shards' threads so far (0 without shards).
  double shards_cpu_s() const { return sharded_ ? sharded_->shards_cpu_s() : 0.0; }
  const transport::HttpTargetConfig& config() const { return config_; }
  const transport::PluginTarget* plugin() const { return plugin_.get(); }
  std::uint64_t connections_opened() const {
    if (sharded_) return sharded_->connections_opened();
    return http_ ? http_->connections_opened() : 0;
  }

 private:
  transport::HttpTargetConfig config_;
  transport::EventLoop loop_;
  std::unique_ptr<transport::HttpTarget> http_;
  std::unique_ptr<transport::ShardedTarget> sharded_;
  std::unique_ptr<transport::PluginTarget> plugin_;
};

/// The manifest as the run starts (status running; no telemetry or clock yet).
record::Manifest open_manifest(EngineSession& engine, const CellSpec& cell,
                               const std::string& run_id,
                               std::chrono::system_clock::time_point started, bool stream) {
  record::Manifest m;
  m.run_id = run_id;
  if (!cell.label.empty()) m.label = cell.label;
  m.campaign = cell.campaign;
  m.started_at = record::iso8601_utc(started);
  m.harness = harness_identity();
  m.engine = engine.engine_json(engine.begin_cell());
  m.model = engine.model_identity();
  m.hardware = hardware_identity(engine.monitor());
  m.workload.protocol = cell.protocol;
  m.workload.api = engine.api() == workload::Api::kChat ? "chat" : "completions";
  m.workload.request_stream = {
      cell.stream_source,
      cell.stream_sha256.empty() ? workload::stream_sha256(cell.requests) : cell.stream_sha256,
      cell.requests.size(), cell.stream_cycles};
  m.workload.sampling = cell.sampling;
  m.workload.sampling["stream"] = stream;
  m.workload.warmup_requests = cell.load.warmup;
  if (!cell.extra_body.empty()) m.workload.extra_body = cell.extra_body;
  m.workload.extra_body_override = cell.extra_body_override;
  record::LoadSection& l = m.load;
  l.open_loop = cell.load.open_loop;
  if (!cell.load.open_loop) l.concurrency = cell.load.concurrency;
  if (const auto& sched = cell.load.schedule) {
    l.rate_per_s = sched->rate_per_s;
    l.arrival = load::to_string(sched->arrival);
    l.burstiness = sched->burstiness;
  }
  if (const auto& replay = cell.load.replay) {
    l.replay = record::ReplaySection{replay->time_scale, replay->from_ms, replay->to_ms};
  }
  l.seed = cell.seed;
  l.requests = cell.load.requests;
  l.duration_s = cell.load.duration_s;
  l.timeouts_s = timeouts_json(engine.options());
  l.client_threads = cell.load.client_threads;
  l.error_budget = cell.error_budget;
  l.unreachable_after_s = cell.load.unreachable_after_s;
  m.slo = cell.slo;
  if (const auto& shard = cell.load.shard) {
    m.shard = record::ShardSection{shard->k, shard->n, std::nullopt};
    if (const auto at = cell.load.start_at_unix_ns) {
      m.shard->start_at = record::iso8601_utc(std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::nanoseconds(*at))));
    }
  }
  return m;
}

/// What the load left, and what was observed beside it.
struct Measured {
  load::LoadResult result;
  double client_cpu_s = 0;       ///< this process minus an embedded engine, or the loop thread
  std::string client_cpu_scope;  ///< metrics::ClientCost::cpu_scope
  double loop_cpu_s = 0;         ///< the event-loop thread(s)
  unsigned client_threads = 1;   ///< event loops doing the I/O
  std::optional<std::string> metrics_before;
  std::unique_ptr<engine::GaugeSampler> gauges;
  std::uint64_t log_begin = 0;
};

Measured measure(EngineSession& engine, CellTarget& target, const CellSpec& cell,
                 const load::LoadConfig& load_config, record::RunWriter& writer,
                 const CellHooks& cell_hooks, const std::atomic<bool>& stop) {
  const telemetry::TelemetryOptions& o = engine.telemetry_options();
  Measured m;
  // Server-side counters: a /metrics snapshot before and after the cell (evidence/).
  m.metrics_before = engine.scrape_metrics();
  // ...and its gauges (running, waiting, KV-cache use) sampled on the telemetry period.
  if (m.metrics_before && !o.off()) {
    const transport::HttpTargetConfig& tc = target.config();
    m.gauges = std::make_unique<engine::GaugeSampler>(tc.url, tc.api_key, tc.tls_verify, tc.ca_file,
                                                      static_cast<std::int64_t>(o.period_ms * 1e6));
    m.gauges->start();
  }
  std::int64_t measured_start_abs = 0;
  load::RunHooks hooks;
  hooks.on_finished = [&writer](const metrics::Trace& t) { writer.append_request(t); };
  if (cell_hooks.on_progress) {
    hooks.on_progress = [&cell_hooks, &measured_start_abs](const load::Progress& p) {
      if (measured_start_abs == 0 && !p.warmup) measured_start_abs = transport::steady_now_ns();
      const double elapsed =
          measured_start_abs == 0
              ? 0.0
              : static_cast<double>(transport::steady_now_ns() - measured_start_abs) * 1e-9;
      cell_hooks.on_progress(p, elapsed);
    };
  }
  hooks.stop_requested = &stop;
  engine::LaunchedEngine* launched = engine.launched();
  m.log_begin = launched != nullptr ? launched->log_size() : 0;
  if (launched != nullptr) hooks.engine_exited = &launched->exited_flag();

  const double sim_cpu_before = engine.embedded() ? engine.embedded()->cpu_seconds() : 0.0;
  const double cpu_before = cpu_seconds_self();
  const double loop_cpu_before = cpu_seconds_this_thread() + target.shards_cpu_s();
  m.result = load::run_load(target.loop(), target.target(), cell.requests, load_config, hooks);
  const double cpu_after = cpu_seconds_self();
  if (m.gauges) m.gauges->stop();
  const double loop_cpu = cpu_seconds_this_thread() + target.shards_cpu_s() - loop_cpu_before;
  const double sim_cpu =
      engine.embedded() ? engine.embedded()->cpu_seconds() - sim_cpu_before : 0.0;
  if (cell_hooks.on_load_done) cell_hooks.on_load_done();
  // The embedded engine runs on a thread of this process: its CPU is not the client's. An
  // in-process plugin's threads are not the client's either, and their CPU time is not known
  // apart: the client is the event-loop thread (this one).
  m.client_cpu_s =
      target.plugin() != nullptr ? loop_cpu : std::max(0.0, cpu_after - cpu_before - sim_cpu);
  m.client_cpu_scope = target.plugin() != nullptr ? "event_loops"
                       : engine.embedded()        ? "process_minus_engine"
                                                  : "process";
  m.loop_cpu_s = loop_cpu;
  m.client_threads = target.loops();
  return m;
}

/// A launched engine that ended during the cell, once requests that raced its exit are settled.
std::optional<engine::ExitStatus> engine_exit(EngineSession& engine,
                                              std::vector<metrics::Trace>& traces,
                                              bool interrupted) {
  engine::LaunchedEngine* launched = engine.launched();
  if (launched == nullptr) return std::nullopt;
  // Requests that found the engine's port closed may have raced its exit: give a process that
  // is shutting down a moment to be reaped before calling the cell's status.
  const bool lost_engine = std::any_of(traces.begin(), traces.end(), [](const metrics::Trace& t) {
    return t.error_category == "connect" || t.error_category == "stream_truncated";
  });
  if (lost_engine) launched->wait_for_exit(std::chrono::milliseconds(3000));
  std::optional<engine::ExitStatus> crash = launched->unexpected_exit();
  // Requests that could not even connect because the engine had exited were never sent: they
  // are not failures of the engine's serving, so they leave the figures (cancelled); those it
  // had been given are its failures.
  if (crash && !interrupted) settle_after_engine_exit(traces);
  return crash;
}

/// summary.json's energy section over the service window W (earliest sent to latest done of
/// the measured requests); writes telemetry.jsonl when there is telemetry.
json::object energy_and_telemetry(EngineSession& engine, const load::LoadResult& result,
                                  std::int64_t cell_end, record::RunWriter& writer,
                                  std::vector<metrics::Warning>& warnings) {
  std::optional<std::int64_t> w_begin, w_end;
  std::int64_t output_tokens = 0;
  for (const auto& t : result.traces) {
    if (!t.measured() || t.status == metrics::RequestStatus::kCancelled) continue;
    if (t.sent_ns) w_begin = std::min(w_begin.value_or(*t.sent_ns), *t.sent_ns);
    if (t.done_ns) w_end = std::max(w_end.value_or(*t.done_ns), *t.done_ns);
    if (t.ok()) output_tokens += t.output_tokens.value_or(0);
  }
  const std::int64_t t0 = result.t0_steady_ns;
  const telemetry::Monitor* monitor = engine.monitor();
  if (monitor != nullptr && monitor->active() && w_begin && w_end) {
    json::object energy =
        telemetry::energy_section(*monitor, engine.idle(), t0 + *w_begin, t0 + *w_end,
                                  output_tokens, engine.vram_after_load(), warnings);
    writer.write_text("telemetry.jsonl", telemetry::telemetry_jsonl(*monitor, t0, cell_end, t0));
    return energy;
  }
  return json::object{
      {"energy_j", nullptr},
      {"reason", monitor == nullptr   ? "telemetry off (--telemetry off)"
                 : !monitor->active() ? "no telemetry source is available on this host (see "
                                        "dyno doctor)"
                                      : "no measured request"}};
}

/// Writes an evidence file and names it in the manifest.
void add_evidence(record::RunWriter& writer, record::Manifest& manifest, const std::string& path,
                  const std::string& text) {
  // The digest of what was written (a secret the engine echoed is redacted on disk).
  manifest.evidence.push_back({path, writer.write_text(path, text)});
}

/// summary.json's server section: the /metrics deltas and gauges (evidence/ files), the
/// engine's per-response timings.
json::object server_and_evidence(EngineSession& engine, Measured& m, bool crashed,
                                 const engine::ServerTimingFigures& timings,
                                 record::RunWriter& writer, record::Manifest& manifest) {
  json::object server;
  if (m.metrics_before) {
    if (const std::optional<std::string> metrics_after = engine.scrape_metrics()) {
      add_evidence(writer, manifest, "evidence/metrics_before.txt", *m.metrics_before);
      add_evidence(writer, manifest, "evidence/metrics_after.txt", *metrics_after);
      server = engine::server_section(*m.metrics_before, *metrics_after);
    }
  }
  if (m.gauges && m.gauges->scrapes() > 0) {
    add_evidence(writer, manifest, "evidence/metrics_gauges.jsonl",
                 m.gauges->evidence_jsonl(m.result.t0_steady_ns));
    if (!server.empty()) server["gauges"] = m.gauges->summary_json();
  }
  if (server.empty()) {
    server = json::object{
        {"source", nullptr},
        {"reason", !m.metrics_before ? "the engine exposes no /metrics"
                   : crashed         ? "no /metrics snapshot after the cell: the engine had exited"
                                     : "the /metrics snapshot after the cell failed"}};
  }
  if (engine::LaunchedEngine* launched = engine.launched()) {
    add_evidence(writer, manifest, "evidence/engine.log",
                 launched->cell_log(m.log_begin, launched->log_size()));
  }
  // The engine's per-response timings (llama.cpp), beside the /metrics figures above.
  server["timings"] = engine::server_timings_json(timings);
  return server;
}

}  // namespace

namespace {

/// The figures of the cell (docs/metrics.md), its status and its warnings.
void summarize_cell(const CellSpec& cell, const Measured& m, CellOutcome& out) {
  const load::LoadResult& result = m.result;
  metrics::SummaryOptions so;
  // Closed-loop sessions keep C sessions, not C requests, in flight: a session thinking
  // between its turns is not an underfilled slot.
  const bool sessions = !cell.requests.empty() && cell.requests.front().turn.has_value();
  if (!cell.load.open_loop && !sessions) {
    // A shard keeps its share of C in flight (load::shard_share); the manifest keeps the run's C.
    so.declared_concurrency = cell.load.shard
                                  ? load::shard_concurrency(cell.load.concurrency, *cell.load.shard)
                                  : cell.load.concurrency;
  }
  so.open_loop = cell.load.open_loop;
  so.slo = cell.slo;
  so.client.cpu_s = m.client_cpu_s;
  so.client.cpu_scope = m.client_cpu_scope;
  so.client.loop_cpu_s = m.loop_cpu_s;
  so.client.threads = m.client_threads;
  so.client.peak_rss_bytes = peak_rss_bytes();
  so.client.loop_lag_s = result.loop_lag_s;
  so.replay = cell.load.replay.has_value();
  if (cell.requested_input_tokens) {
    so.requested_input_tokens = static_cast<double>(*cell.requested_input_tokens);
  }
  out.summary = metrics::summarize_run(result.traces, so);
  out.server_timings = engine::server_timing_figures(result.traces);
  if (auto w = engine::prefill_gap_warning(out.server_timings)) {
    out.summary.warnings.push_back(std::move(*w));
  }
  out.interrupted = result.interrupted;
  out.engine_crashed = out.crash.has_value() && !result.interrupted;
  out.status = out.engine_crashed ? "engine_crashed"
               : result.unreachable && !result.interrupted
                   ? "target_unreachable"
                   : final_status(out.summary, result.interrupted);
  out.over_error_budget = out.summary.error_rate && *out.summary.error_rate > cell.error_budget;
}

/// summary.json: the figures, the client's cost, energy and the server's side.
record::SummaryFile summary_document(EngineSession& engine, CellTarget& target, Measured& m,
                                     json::object energy, record::RunWriter& writer,
                                     record::Manifest& manifest, const CellOutcome& out) {
  record::SummaryFile f;
  f.run_id = out.run_id;
  f.status = out.status;
  f.figures = out.summary;
  f.client.states_connections = true;
  f.client.connections_opened = target.connections_opened();
  f.energy = std::move(energy);
  f.server =
      server_and_evidence(engine, m, out.crash.has_value(), out.server_timings, writer, manifest);
  if (!f.figures.prefix_cache)
    f.engine_prefix_cache = engine::prefix_cache_from_counters(*f.server);
  // What a reader must know to read the figures right (docs/metrics.md "Timing caveats").
  f.caveats =
      engine::timing_caveats(m.result.traces, out.server_timings, out.summary.tokens_per_event);
  if (target.plugin() != nullptr) {
    f.client.note =
        "the engine ran in this process (--plugin): cpu_s is the event-loop thread's CPU time "
        "only; peak_rss_bytes is of the whole process";
  }
  if (engine.embedded()) {
    f.client.note =
        "the simulated engine ran in this process on its own thread: cpu_s excludes that "
        "thread's CPU time; peak_rss_bytes is of the whole process";
  }
  return f;
}

/// clock.t0_unix_ns: the wall clock at t0, from the two clocks' offset read now (one wall
/// reading between two steady ones), and the host's boot id (docs/scale.md, clock offsets).
void anchor_wall_clock(record::ClockSection& clock, std::int64_t t0) {
  const std::int64_t before = transport::steady_now_ns();
  const std::int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  const std::int64_t after = transport::steady_now_ns();
  clock.t0_unix_ns = t0 + wall - (before + (after - before) / 2);
  clock.t0_unix_uncertainty_ns = (after - before + 1) / 2;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (in && std::getline(in, id) && !id.empty()) clock.boot_id = id;
}

/// The final manifest: status, warnings, end, clock, the engine's exit.
void close_manifest(EngineSession& engine, const CellTarget& target, const Measured& m,
                    const CellOutcome& out, record::Manifest& manifest) {
  const load::LoadResult& result = m.result;
  if (out.crash) {
    const engine::LaunchedEngine::LogTail tail = engine.launched()->log_tail(40);
    const engine::ExitStatus& crash = *out.crash;
    manifest.engine_exit =
        record::EngineExit{crash.describe(), crash.code,
                           crash.signal,     crash.at_ns - result.t0_steady_ns,
                           tail.text,        static_cast<std::int64_t>(tail.probe_lines_skipped)};
  }
  manifest.warnings = out.summary.warnings;
  manifest.status = out.status;
  manifest.ended_at = record::iso8601_utc(std::chrono::system_clock::now());
  manifest.clock = record::ClockSection{};
  manifest.clock->t0_steady_ns = result.t0_steady_ns;
  manifest.clock->measured_start_ns = result.measured_start_ns;
  anchor_wall_clock(*manifest.clock, result.t0_steady_ns);
  if (const transport::PluginTarget* plugin = target.plugin()) {
    // Which clock stamped the token events and request ends (docs/plugins.md).
    const transport::PluginStampCounts stamps = plugin->stamps();
    manifest.clock->event_stamps =
        record::EventStamps{stamps.engine, stamps.receive, stamps.rejected};
  }
}

}  // namespace

CellOutcome run_cell(EngineSession& engine, const CellSpec& cell,
                     const std::filesystem::path& runs_root, const std::string& index_url,
                     const std::atomic<bool>& stop, const CellHooks& hooks) {
  CellOutcome out;
  const auto started = std::chrono::system_clock::now();
  out.run_id = record::make_run_id(started, cell.label);
  // Answers that will be scored are kept, with or without --keep-outputs (an audit re-scores
  // them from the record).
  load::LoadConfig load_config = cell.load;
  load_config.cycle = cell.stream_cycles;  // a session runs again only when the stream cycles
  const bool scored =
      std::any_of(cell.requests.begin(), cell.requests.end(),
                  [](const workload::Request& r) { return r.expected.has_value(); });
  if (scored) load_config.keep_output_text = true;

  // 1. The target and the record, whose manifest says `running` until the cell ends.
  CellTarget target(engine, out.run_id, load_config);
  out.streamed = target.config().stream;
  // What the user asked to send is what is sent: fields of dyno's own are replaced only when
  // told so, and an engine without a request body cannot take extra fields.
  if (std::any_of(cell.requests.begin(), cell.requests.end(),
                  [](const workload::Request& r) { return !r.extra_body.empty(); })) {
    if (engine.options().plugin) {
      throw UsageError(
          "--extra-body / extra_body: an in-process --plugin engine takes no JSON request body, "
          "so these fields cannot be sent; drop them or measure the engine over HTTP (--url)");
    }
    check_extra_body(cell.requests, engine.api(), out.streamed, cell.extra_body_override);
  }
  record::RunWriter writer(runs_root, out.run_id, load_config.keep_event_times);
  if (target.config().api_key) writer.set_secrets({*target.config().api_key});  // never on disk
  out.dir = writer.dir();
  record::Manifest manifest = open_manifest(engine, cell, out.run_id, started, out.streamed);
  writer.write_json("manifest.json", record::manifest_to_json(manifest));

  // 2. The load, with the server's counters and gauges beside it.
  Measured m = measure(engine, target, cell, load_config, writer, hooks, stop);
  target.close_connections();
  load::LoadResult& result = m.result;
  // An engine that ended while dyno itself was told to stop got the same signal (one sent to
  // the whole job or process group: Slurm's scancel and time limit, `timeout`, systemd): the
  // cell was interrupted, and the record still says how the engine ended.
  out.crash = engine_exit(engine, result.traces, result.interrupted || stop.load());
  if (out.crash && stop.load()) result.interrupted = true;
  if (result.unreachable && !result.interrupted) mark_unsent_unreachable(result.traces);
  out.unreachable = result.unreachable;
  // What servers said, as the record will keep it (scrubbed, the key redacted): the summary
  // counts the same messages requests.jsonl holds.
  for (auto& trace : result.traces) {
    if (!trace.error_message.empty()) {
      scrub::redact_server_text(trace.error_message, writer.secrets());
    }
  }
  if (scored) score_traces(cell.requests, result.traces);
  engine::cached_tokens_from_timings(result.traces);

  // 3. The figures (docs/metrics.md), energy and telemetry over the cell.
  summarize_cell(cell, m, out);
  const std::int64_t cell_end = transport::steady_now_ns();
  json::object energy =
      energy_and_telemetry(engine, result, cell_end, writer, out.summary.warnings);
  const telemetry::TelemetryOptions& t = engine.telemetry_options();
  manifest.telemetry = telemetry::telemetry_manifest(engine.monitor(), t.mode, t.period_ms,
                                                     engine.idle(), result.t0_steady_ns, cell_end);
  out.telemetry = record::telemetry_section_of(manifest.telemetry);

  // 4. The record closed: summary.json, evidence, the final manifest, SHA256SUMS, its
  // signature (--sign-key), the index.
  json::object summary_json = record::summary_file_to_json(
      summary_document(engine, target, m, std::move(energy), writer, manifest, out));
  writer.write_json("summary.json", summary_json);
  close_manifest(engine, target, m, out, manifest);
  if (cell.clock_reference) {
    manifest.clock->reference = cell.clock_reference;
    clock_reference_after(*manifest.clock->reference);
  }
  writer.write_json("manifest.json", record::manifest_to_json(manifest));
  writer.finalize(result.traces);
  if (cell.signing_key) record::sign_record(writer.dir(), *cell.signing_key);
  out.record_sha256 = digest::sha256_hex_file(writer.dir() / "SHA256SUMS");
  if (auto w = writer.invalid_utf8_warning()) out.summary.warnings.push_back(std::move(*w));
  store::index_finished_run(runs_root, writer.dir(), std::cerr,
                            index_url);  // a warning if it fails
  out.traces = std::move(result.traces);
  out.summary_file = record::summary_file_from_json(summary_json);
  return out;
}

}  // namespace dyno::engine_session
