#include "app/runs_merge.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <map>

#include "app/flag_values.h"
#include "app/merge_clock.h"
#include "app/runs_command.h"
#include "app/sign_key_flag.h"
#include "engine/server_timings.h"
#include "error/error.h"
#include "metrics/summary.h"
#include "record/manifest.h"
#include "record/record_json.h"
#include "record/run_id.h"
#include "record/run_record.h"
#include "record/run_verify.h"
#include "record/run_writer.h"
#include "record/signature.h"
#include "store/run_index.h"

namespace dyno::app {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// One shard's record, read and checked.
struct ShardRecord {
  fs::path dir;
  std::string id;
  record::RunRecord run;  ///< manifest and summary (verified; its requests read at the merge)
  std::int64_t t0_steady_ns = 0;
  std::int64_t t0_unix_ns = 0;
  std::int64_t uncertainty_ns = 0;
  std::int64_t measured_start_ns = 0;
};

ShardRecord read_shard(const fs::path& dir) {
  ShardRecord s;
  s.dir = dir;
  s.id = dir.filename().string();
  if (record::still_running(dir)) {
    throw UsageError("runs merge: run " + s.id + " is still running; merge finished shards");
  }
  const record::VerifyReport report = record::verify_run_dir(dir, true);
  if (!report.ok()) {
    const record::VerifyProblem& p = report.problems.front();
    throw UsageError("runs merge: run " + s.id + " fails `dyno runs verify` (" +
                     (p.path.empty() ? "" : p.path + ": ") + p.message + ")");
  }
  // Verified above; the requests are read once the shards are known to be one run.
  s.run = record::read_run(dir, {.requests = false, .integrity = false});
  const record::Manifest& m = s.run.manifest;
  if (!m.shard) {
    throw UsageError("runs merge: run " + s.id +
                     " is not a shard's record (its manifest has no `shard`: it was not run "
                     "with dyno run --shard K/N)");
  }
  if (!s.run.summary) {
    throw UsageError("runs merge: run " + s.id + " has no summary.json");
  }
  const auto& c = m.clock;
  if (!c || !c->t0_steady_ns || !c->measured_start_ns || !c->t0_unix_ns) {
    throw UsageError("runs merge: run " + s.id +
                     " has no clock anchors (manifest clock.t0_steady_ns, measured_start_ns, "
                     "t0_unix_ns): it cannot be put on a common time base");
  }
  s.t0_steady_ns = *c->t0_steady_ns;
  s.t0_unix_ns = *c->t0_unix_ns;
  s.uncertainty_ns = c->t0_unix_uncertainty_ns.value_or(0);
  s.measured_start_ns = *c->measured_start_ns;
  return s;
}

/// The first key of `a` and `b` whose values differ ("" when none).
std::string first_difference(const json::object& a, const json::object& b) {
  for (const auto& kv : a) {
    const json::value* other = b.if_contains(kv.key());
    if (other == nullptr || *other != kv.value()) return std::string(kv.key());
  }
  for (const auto& kv : b) {
    if (!a.contains(kv.key())) return std::string(kv.key());
  }
  return "";
}

/// The shards are one run: every run parameter the same, shards 0..N-1 each once. Returns them
/// ordered by shard.
std::vector<ShardRecord> check_shards(std::vector<ShardRecord> shards) {
  const ShardRecord& first = shards.front();
  const std::uint64_t n = first.run.manifest.shard->n;
  std::map<std::uint64_t, std::string> seen;
  for (const ShardRecord& s : shards) {
    for (const char* section : {"workload", "load", "slo", "model"}) {
      const json::value* a = first.run.manifest_json.if_contains(section);
      const json::value* b = s.run.manifest_json.if_contains(section);
      if (a == nullptr || b == nullptr || *a == *b) continue;
      const std::string key =
          a->is_object() && b->is_object() ? first_difference(a->as_object(), b->as_object()) : "";
      throw UsageError("runs merge: runs " + first.id + " and " + s.id + " differ in " + section +
                       (key.empty() ? "" : "." + key) +
                       ": the shards of one run share every run parameter but --shard");
    }
    const record::ShardSection& sh = *s.run.manifest.shard;
    if (sh.n != n) {
      throw UsageError("runs merge: run " + s.id + " is shard " + std::to_string(sh.k) + "/" +
                       std::to_string(sh.n) + ", run " + first.id + " one of " + std::to_string(n) +
                       " shards");
    }
    if (sh.start_at != first.run.manifest.shard->start_at) {
      throw UsageError("runs merge: runs " + first.id + " and " + s.id +
                       " differ in shard.start_at (--start-at): they were not started together");
    }
    if (const auto [it, fresh] = seen.emplace(sh.k, s.id); !fresh) {
      throw UsageError("runs merge: shard " + std::to_string(sh.k) + " is given twice (runs " +
                       it->second + " and " + s.id + ")");
    }
  }
  for (std::uint64_t k = 0; k < n; ++k) {
    if (!seen.contains(k)) {
      throw UsageError("runs merge: shard " + std::to_string(k) + " of " + std::to_string(n) +
                       " is missing; give the record of every shard");
    }
  }
  std::sort(shards.begin(), shards.end(), [](const ShardRecord& a, const ShardRecord& b) {
    return a.run.manifest.shard->k < b.run.manifest.shard->k;
  });
  return shards;
}

std::vector<ShardClock> shard_clocks(const std::vector<ShardRecord>& shards) {
  std::vector<ShardClock> clocks;
  for (const ShardRecord& s : shards) {
    clocks.push_back({s.id, s.run.manifest.shard->k, *s.run.manifest.clock});
  }
  return clocks;
}

/// Refuses (exit 2) shards whose measured clock uncertainty or drift exceeds the bound, or,
/// told to accept it, marks the merged record.
void check_clock_bound(const MergeOptions& o, record::MergedFrom& from) {
  const auto bound = static_cast<std::int64_t>(std::llround(o.max_clock_uncertainty_ms * 1e6));
  const std::string excess = clock_bound_excess(from, bound);
  if (excess.empty()) return;
  if (!o.accept_clock_uncertainty) {
    throw UsageError(
        "runs merge: the shards' measured clock offsets exceed "
        "--max-clock-uncertainty-ms: " +
        excess +
        "; measure against a nearer reference, or give --accept-clock-uncertainty "
        "to merge anyway (the merged record is marked)");
  }
  from.clock_bound_exceeded = excess;
}

void shift(std::optional<std::int64_t>& t, std::int64_t by) {
  if (t) *t += by;
}

/// Every shard's traces on the merged t0, in scheduled (then sent) order, renumbered.
std::vector<metrics::Trace> merged_traces(const std::vector<ShardRecord>& shards,
                                          const record::MergedFrom& m) {
  std::vector<metrics::Trace> all;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::int64_t by = m.shards[i].offset_ns;
    for (metrics::Trace& t : record::read_requests(shards[i].dir)) {
      for (auto* field : {&t.scheduled_ns, &t.sent_ns, &t.first_byte_ns, &t.first_token_ns,
                          &t.first_content_ns, &t.last_token_ns, &t.done_ns}) {
        shift(*field, by);
      }
      t.event_times_ns.shift(by);
      all.push_back(std::move(t));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const metrics::Trace& a, const metrics::Trace& b) {
    const auto key = [](const metrics::Trace& t) {
      return std::pair(t.phase != "warmup", t.scheduled_ns.value_or(t.sent_ns.value_or(0)));
    };
    return key(a) < key(b);
  });
  for (std::size_t i = 0; i < all.size(); ++i) all[i].index = i;
  return all;
}

/// A figure of the shards' client cost (sum or max); nullopt when any shard lacks it.
template <class Get>
std::optional<double> client_total(const std::vector<ShardRecord>& shards, Get get, bool sum) {
  double total = 0;
  for (const ShardRecord& s : shards) {
    const std::optional<double> v = get(*s.run.summary);
    if (!v) return std::nullopt;
    total = sum ? total + *v : std::max(total, *v);
  }
  return total;
}

const char* merged_status(const metrics::Summary& s, bool interrupted) {
  if (interrupted) return "interrupted";
  if (s.requests_ok == 0) return "failed";
  if (s.requests_failed > 0) return "partial";
  return "ok";
}

/// The summary options a run of the whole load would have used (engine_session/run_cell.cpp
/// summarize_cell), the client cost the shards' together.
metrics::SummaryOptions summary_options(const std::vector<ShardRecord>& shards) {
  const record::Manifest& first = shards.front().run.manifest;
  metrics::SummaryOptions so;
  if (!first.load.open_loop && first.load.concurrency) {
    so.declared_concurrency = static_cast<double>(*first.load.concurrency);
  }
  so.open_loop = first.load.open_loop;
  so.slo = first.slo;
  so.replay = first.load.replay.has_value();
  so.client.threads = 0;
  for (const ShardRecord& s : shards) so.client.threads += s.run.summary->figures.client_threads;
  so.client.cpu_s = client_total(
      shards, [](const record::SummaryFile& f) { return f.figures.client_cpu_s; }, true);
  so.client.peak_rss_bytes = client_total(
      shards, [](const record::SummaryFile& f) { return f.figures.client_peak_rss_bytes; }, false);
  so.client.cpu_scope = "process";
  return so;
}

/// The merged record's manifest: shard 0's, with a new id and label, the shards' span of time,
/// the merged clock and merged_from.
record::Manifest merged_manifest(const MergeOptions& o, const std::vector<ShardRecord>& shards,
                                 const record::MergedFrom& from, const std::string& status,
                                 const metrics::Summary& summary) {
  const record::Manifest& first = shards.front().run.manifest;
  record::Manifest m = first;
  const std::string label =
      o.label.value_or(first.label && !first.label->empty() ? *first.label + "-merged" : "merged");
  m.run_id = record::make_run_id(std::chrono::system_clock::now(), label);
  m.label = label;
  m.status = status;
  m.shard.reset();
  m.evidence.clear();
  m.engine_exit.reset();
  std::int64_t measured_start = INT64_MAX;
  std::size_t first_t0 = 0;  // the shard whose t0 is the merged record's (offset 0)
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const record::Manifest& s = shards[i].run.manifest;
    m.started_at = std::min(m.started_at, s.started_at);
    if (s.ended_at) m.ended_at = std::max(m.ended_at.value_or(""), *s.ended_at);
    measured_start =
        std::min(measured_start, shards[i].measured_start_ns + from.shards[i].offset_ns);
    if (from.shards[i].offset_ns < from.shards[first_t0].offset_ns) first_t0 = i;
  }
  const ShardRecord& earliest = shards[first_t0];
  record::ClockSection clock;
  clock.t0_steady_ns = earliest.t0_steady_ns;
  clock.measured_start_ns = measured_start;
  clock.t0_unix_ns = earliest.t0_unix_ns;
  clock.t0_unix_uncertainty_ns = earliest.uncertainty_ns;
  if (from.clock_method == "steady_clock") clock.boot_id = earliest.run.manifest.clock->boot_id;
  m.clock = clock;
  m.merged_from = from;
  m.warnings = summary.warnings;
  return m;
}

/// summary.json of the merged record: the figures, the shards' client cost, no energy or
/// server counters (each shard's record keeps its own).
record::SummaryFile merged_summary(const std::vector<ShardRecord>& shards,
                                   const std::string& run_id, const std::string& status,
                                   const metrics::Summary& summary,
                                   const std::vector<metrics::Trace>& traces) {
  record::SummaryFile f;
  f.run_id = run_id;
  f.status = status;
  f.figures = summary;
  f.client.states_connections = true;
  if (const auto connections = client_total(
          shards,
          [](const record::SummaryFile& s) {
            return s.client.connections_opened
                       ? std::optional(static_cast<double>(*s.client.connections_opened))
                       : std::nullopt;
          },
          true)) {
    f.client.connections_opened = static_cast<std::uint64_t>(*connections);
  }
  f.client.note =
      "a merged record: cpu_s is the sum of the shards' processes, peak_rss_bytes the largest "
      "of them; each shard's record has its own";
  f.energy =
      json::object{{"energy_j", nullptr},
                   {"reason", "a merged record: energy and telemetry are in each shard's record"}};
  f.server =
      json::object{{"source", nullptr},
                   {"reason", "a merged record: the server's counters are in each shard's record"}};
  const engine::ServerTimingFigures timings = engine::server_timing_figures(traces);
  f.caveats = engine::timing_caveats(traces, timings, summary.tokens_per_event);
  return f;
}

}  // namespace

int merge_command(const MergeOptions& o, std::ostream& out, std::ostream& err) {
  if (!(o.max_clock_offset_ms >= 0) || !std::isfinite(o.max_clock_offset_ms)) {
    throw UsageError("--max-clock-offset-ms must be a number >= 0");
  }
  if (!(o.max_clock_uncertainty_ms >= 0) || !std::isfinite(o.max_clock_uncertainty_ms) ||
      o.max_clock_uncertainty_ms > 1e6) {
    throw UsageError("--max-clock-uncertainty-ms must be a number from 0 to 1000000");
  }
  const auto key = record::load_sign_key(o.sign_key);
  const fs::path root = existing_root(o.runs_root);
  std::vector<ShardRecord> shards;
  for (const std::string& arg : o.runs) shards.push_back(read_shard(resolve_run(root, arg)));
  shards = check_shards(std::move(shards));
  record::MergedFrom from = align_shard_clocks(shard_clocks(shards), o.clock_method);
  check_clock_bound(o, from);
  const double spread_ms = static_cast<double>(from.start_spread_ns) / 1e6;
  if (spread_ms > o.max_clock_offset_ms) {
    throw UsageError("runs merge: the shards' measured starts are " +
                     flags::number_text(spread_ms) + " ms apart on the common time base (" +
                     from.clock_method + "), more than --max-clock-offset-ms " +
                     flags::number_text(o.max_clock_offset_ms) +
                     ": start them together (--start-at), or check the hosts' clocks");
  }
  const std::vector<metrics::Trace> traces = merged_traces(shards, from);
  metrics::Summary summary = metrics::summarize_run(traces, summary_options(shards));
  if (from.clock_bound_exceeded) {
    // In summary.json and the manifest, so a board pairing this record flags it too.
    summary.warnings.push_back(
        {metrics::WarningCode::kClockUncertain,
         "merged with the shards' clock offsets over --max-clock-uncertainty-ms "
         "(--accept-clock-uncertainty): " +
             *from.clock_bound_exceeded,
         "time differences between requests of different shards are uncertain by that much; "
         "measure against a nearer clock reference (--clock-ref)"});
  }
  const bool interrupted = std::any_of(shards.begin(), shards.end(), [](const ShardRecord& s) {
    return s.run.manifest.status == "interrupted";
  });
  const std::string status = merged_status(summary, interrupted);
  const record::Manifest m = merged_manifest(o, shards, from, status, summary);

  const std::string index_url = resolve_index_url(o.index);
  record::RunWriter writer(root, m.run_id, true);
  writer.write_json("summary.json", record::summary_file_to_json(
                                        merged_summary(shards, m.run_id, status, summary, traces)));
  const json::object manifest_json = record::manifest_to_json(m);
  writer.write_json("manifest.json", manifest_json);
  writer.finalize(traces);
  if (key) record::sign_record(writer.dir(), *key);
  store::index_finished_run(root, writer.dir(), err, index_url);
  if (o.json) {
    out << json::serialize(json::object{{"run_id", m.run_id},
                                        {"dir", writer.dir().string()},
                                        {"merged_from", manifest_json.at("merged_from")}})
        << "\n";
  } else {
    out << m.run_id << "\n";
    out << "merged " << shards.size() << " shards (" << from.clock_method << ", measured starts "
        << flags::number_text(spread_ms) << " ms apart): " << summary.requests_total
        << " measured requests\n";
    if (from.clock_method == "measured_offset") {
      out << "clock offsets measured against reference " << *from.clock_reference_id
          << ": uncertainty " << flags::number_text(static_cast<double>(from.uncertainty_ns) / 1e6)
          << " ms between shards\n";
    }
    if (from.unmeasured_reason)
      out << "clock offsets not measured: " << *from.unmeasured_reason << "\n";
  }
  if (from.clock_bound_exceeded) {
    err << "warning: merged with clocks over the bound (--accept-clock-uncertainty): "
        << *from.clock_bound_exceeded << "; merged_from.clock_bound_exceeded says so\n";
  }
  return 0;
}

RunsMergeCli::RunsMergeCli(CLI::App& runs) {
  merge_ = runs.add_subcommand(
      "merge", "merge the records of the shards of one run (dyno run --shard K/N) into one record");
  merge_->add_option("runs", o_.runs, "the shards' run ids, unique prefixes or run directories")
      ->required();
  merge_->add_option("--runs-root", o_.runs_root, "directory holding the run records")
      ->capture_default_str();
  merge_->add_option("--label", o_.label,
                     "the merged record's label (default: the shards' label + \"-merged\")");
  merge_
      ->add_option("--max-clock-offset-ms", o_.max_clock_offset_ms,
                   "refuse shards whose measured starts lie further apart than this on the "
                   "common time base")
      ->capture_default_str();
  merge_
      ->add_option("--max-clock-uncertainty-ms", o_.max_clock_uncertainty_ms,
                   "with offsets measured (dyno run --clock-ref): refuse shards whose measured "
                   "uncertainty or drift over the run exceeds this")
      ->capture_default_str();
  merge_
      ->add_option("--clock-method", o_.clock_method,
                   "how the shards' times are aligned: auto (steady_clock on one host, else "
                   "measured_offset when every shard measured against one reference, else "
                   "wall_clock); measured_offset or wall_clock force that method, e.g. to check a "
                   "measurement against one host's exact steady clock")
      ->capture_default_str();
  merge_->add_flag("--accept-clock-uncertainty", o_.accept_clock_uncertainty,
                   "merge even when --max-clock-uncertainty-ms is exceeded; the merged record "
                   "says so (merged_from.clock_bound_exceeded)");
  merge_->add_option("--index", o_.index,
                     "the run index in PostgreSQL (default: $DYNO_INDEX_URL, else "
                     "<runs-root>/index.sqlite)");
  merge_->add_flag("--json", o_.json, "print {run_id, dir, merged_from} as JSON");
  add_sign_key_flag(*merge_, o_.sign_key, "the merged record");
}

bool RunsMergeCli::parsed() const { return merge_->parsed(); }

}  // namespace dyno::app
