#include "report/board_methodology.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compare/fairness.h"
#include "compare/run_record.h"
#include "compare/select.h"
#include "record/owner_sections.h"
#include "record/record_json.h"
#include "record/signature.h"
#include "report/document_blocks.h"
#include "report/format.h"

namespace dyno::report {

namespace json = boost::json;
using blocks::b;
using blocks::join;
using blocks::t;
using compare::ArmCell;
using compare::Board;
using compare::CheckLevel;
using compare::RunRecord;

namespace {

/// Distinct descriptions of the runs per arm: "all arms: X" when they agree.
template <typename Describe>
Inline per_arm(const Board& bd, const std::string& what, Describe describe) {
  std::vector<std::pair<std::string, std::vector<std::string>>> values;
  for (const auto& arm : bd.arms) {
    std::vector<std::string> distinct;
    for (const auto& cl : bd.cells) {
      const ArmCell* a = cl.arm(arm);
      if (a == nullptr) continue;
      for (const auto& r : a->runs) {
        const std::string d = describe(*r);
        if (std::find(distinct.begin(), distinct.end(), d) == distinct.end()) {
          distinct.push_back(d);
        }
      }
    }
    if (!distinct.empty()) values.emplace_back(arm, distinct);
  }
  Inline out{b(what + ": ")};
  bool same = !values.empty();
  for (const auto& v : values) same = same && v.second == values.front().second;
  if (same) {
    out.push_back(t("all arms: " + join(values.front().second, "; ") + "."));
    return out;
  }
  std::vector<std::string> parts;
  for (const auto& [arm, ds] : values) parts.push_back(arm + ": " + join(ds, "; "));
  out.push_back(t(join(parts, " · ") + "."));
  return out;
}

// ---- what one run was, from its manifest and summary -----------------------------------
//
// An imported record (manifest `source`) holds what its file stated and nothing else: what
// the file did not state reads "not stated by <tool> file", never a value dyno would have
// used itself (0 warm-up, a closed loop, a clean tree).

/// "not stated by <tool> file" for an imported record; `fallback` for a dyno record.
std::string unstated(const RunRecord& r, const std::string& fallback = "unknown") {
  if (!r.imported()) return fallback;
  const std::string& tool = r.manifest.source->tool;
  return "not stated by " + (tool.empty() ? std::string("the imported") : tool) + " file";
}

std::string describe_engine(const RunRecord& r) {
  const record::EngineSection e = record::engine_section_from_json(r.manifest.engine);
  if (r.imported()) {
    std::string d = "engine " + e.name.value_or(unstated(r)) + ", version " +
                    e.version.value_or(unstated(r)) + " (imported)";
    d += ", engine args " +
         (e.engine_args.empty() ? unstated(r) : compare::canonical_text(e.engine_args));
    d += ", source commit " +
         (e.source && e.source->commit ? short_hash(*e.source->commit) : unstated(r));
    if (e.source && e.source->commit && e.source->dirty) {
      d += *e.source->dirty ? " (modified tree)" : " (clean tree)";
    } else if (e.source && e.source->commit) {
      d += " (tree state " + unstated(r) + ")";
    }
    return d;
  }
  std::string d = e.name.value_or("unidentified engine") + " " +
                  e.version.value_or("(version unknown)") + " (" + e.reached.kind + ")";
  if (const auto p = e.sim_profile_name()) d += ", profile " + *p;
  d += ", engine args " + compare::canonical_text(e.engine_args);
  if (e.source && e.source->commit) {
    d += ", source " + short_hash(*e.source->commit) +
         (e.source->dirty ? (*e.source->dirty ? " (modified tree)" : " (clean tree)") : "");
  }
  return d;
}

std::string describe_model(const RunRecord& r) {
  const record::ModelIdentity& m = r.manifest.model;
  return m.id + ", revision " + m.revision.value_or(unstated(r)) + ", fingerprint " +
         (m.fingerprint ? short_hash(*m.fingerprint) : unstated(r));
}

std::string describe_protocol(const RunRecord& r) {
  const record::ProtocolRef& protocol = r.manifest.workload.protocol;
  std::string d = protocol.name + " v" + std::to_string(protocol.version);
  if (protocol.params && !protocol.params->empty()) {
    std::vector<std::string> kv;
    for (const auto& p : *protocol.params) {
      const std::string v = p.value().is_object() || p.value().is_array()
                                ? compare::canonical_text(p.value())
                                : compare::scalar_text(p.value());
      kv.push_back(std::string(p.key()) + "=" + short_hash(v));
    }
    d += " (" + join(kv, ", ") + ")";
  }
  if (r.imported()) {
    d += ", paired as " + protocol.pairs_as.value_or("run") +
         (protocol.cell ? " cell " + *protocol.cell : std::string());
  }
  return d;
}

std::string describe_workload(const RunRecord& r) {
  const record::WorkloadSection& w = r.manifest.workload;
  const record::RequestStreamRef& s = w.request_stream;
  std::string d =
      w.api + " API, stream " + s.source + " (sha256 " +
      (s.sha256.empty() ? unstated(r) : short_hash(s.sha256)) + ", " +
      (s.count > 0 ? std::to_string(s.count) + " requests" : "requests " + unstated(r)) + ")";
  if (r.imported()) {
    // The file keeps neither dyno's sampling flags nor its warm-up.
    return d + ", sampling " +
           (w.sampling.empty() ? unstated(r) : compare::canonical_text(w.sampling)) + ", warm-up " +
           unstated(r);
  }
  return d + ", sampling " + compare::canonical_text(w.sampling) + ", " +
         std::to_string(w.warmup_requests) + " warm-up";
}

/// A figure of the load as the record states it ("unknown" when it does not).
template <typename T>
std::string stated(const std::optional<T>& v, const std::string& fallback = "unknown") {
  return v ? compare::scalar_text(json::value(*v)) : fallback;
}

std::string describe_load(const RunRecord& r) {
  const record::LoadSection& l = r.manifest.load;
  if (l.imported) {
    // The load as the file states it; dyno's schedule (arrival, seed, limits) it has not.
    std::vector<std::string> parts;
    if (l.concurrency) parts.push_back("concurrency " + stated(l.concurrency));
    if (l.rate_per_s) parts.push_back(stated(l.rate_per_s) + " req/s");
    if (l.requests) parts.push_back(stated(l.requests) + " requests");
    const std::string given = parts.empty() ? "load " + unstated(r) : join(parts, ", ");
    return given + " (open or closed loop, arrivals, seed and limits " + unstated(r) + ")";
  }
  if (l.replay) {
    return "replay of the stream's timestamps, time scale " +
           stated(std::optional(l.replay->time_scale)) + ", window from " +
           stated(std::optional(l.replay->from_ms)) + " ms to " +
           stated(l.replay->to_ms, "the end");
  }
  if (l.open_loop) {
    return "open loop, " + stated(l.rate_per_s) + " req/s, " + l.arrival.value_or("unknown") +
           " arrivals";
  }
  return "closed loop, concurrency " + stated(l.concurrency) + ", " + stated(l.requests) +
         " requests";
}

std::string describe_hardware(const RunRecord& r) {
  const record::HardwareIdentity& hw = r.manifest.hardware;
  std::string d =
      hw.cpu_model.value_or(r.imported() ? "CPU " + unstated(r) : "unknown") + " (" +
      (hw.cpu_cores ? std::to_string(*hw.cpu_cores) + " cores" : "cores " + unstated(r)) + ")";
  if (hw.gpus.empty()) {
    // An import states "no GPU" only with an empty list and no reason (fairness: no GPU).
    const bool unknown = r.imported() && hw.unknown_reason("gpus").has_value();
    return d + (unknown ? ", GPUs " + unstated(r) : ", no GPU recorded");
  }
  std::map<std::string, int> names;
  std::set<std::string> drivers;
  for (const record::DeviceEntry& g : hw.gpus) {
    names[g.name.value_or(r.imported() ? "GPU model " + unstated(r) : "unknown")] += 1;
    drivers.insert(g.driver.value_or(unstated(r)));
  }
  std::vector<std::string> parts;
  for (const auto& [n, k] : names) parts.push_back(std::to_string(k) + "× " + n);
  return d + ", " + join(parts, ", ") + ", driver " +
         join(std::vector<std::string>(drivers.begin(), drivers.end()), "/");
}

std::string describe_harness(const RunRecord& r) {
  const record::HarnessIdentity& h = r.manifest.harness;
  if (r.imported()) {
    // Another harness measured; the record's `harness` is the dyno that imported the file.
    const record::ImportSource& s = *r.manifest.source;
    return s.tool + " " + s.tool_version.value_or("(version " + unstated(r) + ")") + ", sha256 " +
           (s.harness_sha256 ? short_hash(*s.harness_sha256) : unstated(r)) + "; imported by " +
           h.name + " " + h.version;
  }
  return h.name + " " + h.version + " at " + short_hash(h.git_commit) +
         (h.git_dirty ? " (modified tree)" : " (clean tree)") + ", executable sha256 " +
         short_hash(h.executable_sha256.value_or("unknown"));
}

std::string describe_telemetry(const RunRecord& r) {
  const std::optional<record::EnergySection> e =
      r.summary ? r.summary->energy_section() : std::nullopt;
  const std::optional<record::TelemetrySection> tm =
      record::telemetry_section_of(r.manifest.telemetry);
  if (r.imported() && !tm && !(e && e->energy_j)) return unstated(r) + ", energy " + unstated(r);
  return (tm ? tm->mode : std::string("unknown")) + ", energy " +
         (e && e->energy_j ? "scope " + e->scope.value_or("?") : "not measured");
}

std::string describe_figures(const RunRecord& r) {
  if (r.summary_only()) {
    // The file's own figures, mapped onto dyno's definitions by the importer (or the user's
    // --map): how the file computed them it does not say.
    return "as stated by the " + r.manifest.source->tool + " file, read as " +
           r.summary->figures.definition_set + "; percentile method " + unstated(r);
  }
  // The method is the one summary.json's reader accepts (it is part of the definitions).
  return (r.summary ? r.summary->figures.definition_set : std::string("?")) +
         "; percentiles: " + record::kPercentileMethod;
}

// ---- how the board compares them -------------------------------------------------------

Inline arms_item(const Board& bd) {
  std::vector<std::string> parts;
  for (const auto& arm : bd.arms) {
    const auto it = bd.selectors.find(arm);
    std::string p = arm + (arm == bd.baseline ? " (baseline)" : "");
    if (it != bd.selectors.end() && !it->second.empty()) p += " = " + join(it->second, " + ");
    parts.push_back(p);
  }
  return {b("Arms: "), t(join(parts, "; ") +
                         ". Runs are paired by model, "
                         "protocol and protocol cell" +
                         (bd.spec_file_sha256.empty()
                              ? std::string(".")
                              : "; the board spec file (sha256 " + short_hash(bd.spec_file_sha256) +
                                    ") maps cells explicitly."))};
}

Inline intervals_item(const Board& bd) {
  const auto& bs = bd.bootstrap;
  return {b("Intervals: "),
          t(number(bs.confidence * 100.0, 0) + " % percentile bootstrap, " +
            std::to_string(bs.resamples) + " resamples, seed " + std::to_string(bs.seed) +
            ". Over requests: each arm's measured requests are resampled with replacement and "
            "the figure recomputed (rates as ratios of per-request sums over per-request "
            "occupancy, latencies as percentiles); at least " +
            std::to_string(bs.min_requests) +
            " requests per arm. Over repetitions when each arm "
            "has at least " +
            std::to_string(bs.min_repetitions) +
            ": the repetitions' figures are resampled and their medians compared.")};
}

Inline fairness_item(const Board& bd) {
  std::vector<std::string> req, rep, ign;
  for (const auto& d : compare::check_catalog()) {
    const auto l = bd.policy.level(d.name);
    (l == CheckLevel::kRequired ? req : l == CheckLevel::kReported ? rep : ign).push_back(d.label);
  }
  std::string p = "required (a failure means the cell is not compared): " + join(req, ", ");
  if (!rep.empty()) p += "; reported: " + join(rep, ", ");
  if (!ign.empty()) p += "; ignored: " + join(ign, ", ");
  return {b("Fairness policy: "), t(p + ".")};
}

/// What the board spec pins and how it came out.
Inline expectations_item(const Board& bd) {
  const compare::Expectations& e = bd.expect;
  std::vector<std::string> parts;
  for (const auto& [arm, commits] : e.engine_commits) {
    std::vector<std::string> shown;
    for (const auto& c : commits) shown.push_back(short_hash(c));
    parts.push_back("engine commit of " + arm + " " + join(shown, " or "));
  }
  if (e.requests) parts.push_back(std::to_string(*e.requests) + " measured requests per run");
  for (const auto& [cell, n] : e.cell_requests) {
    parts.push_back(std::to_string(n) + " measured requests per run in " + cell);
  }
  for (const auto& [arm, n] : e.cells_per_arm) {
    parts.push_back(std::to_string(n) + " cells of " + arm);
  }
  for (const auto& [arm, by_commit] : e.cells_per_engine_commit) {
    for (const auto& [commit, n] : by_commit) {
      parts.push_back(std::to_string(n) + " cells of " + arm + " from engine commit " +
                      short_hash(commit));
    }
  }
  if (!e.spec_sha256.empty()) parts.push_back("spec file sha256 " + short_hash(e.spec_sha256));
  std::size_t failed = 0;
  for (const auto& r : bd.expectations) failed += r.pass ? 0 : 1;
  return {b("Expectations: "),
          t("pinned by the board spec (policy " + std::string(compare::to_string(e.policy)) +
            "): " + join(parts, "; ") + ". " + std::to_string(bd.expectations.size()) +
            " checked, " + std::to_string(failed) + " failed.")};
}

/// Who signed the board's records (record/signature.h): each key by its fingerprint with its
/// count, the unsigned and the invalid.
Inline signatures_item(const Board& bd) {
  std::map<std::string, std::size_t> by;
  const std::vector<compare::RunPtr> runs = bd.runs();
  for (const auto& r : runs) ++by[record::record_signer(r->dir)];
  std::vector<std::string> parts;
  for (const auto& [signer, n] : by) {
    if (signer == "unsigned" || signer == "invalid") continue;
    parts.push_back(std::to_string(n) + " signed by key " + short_hash(signer));
  }
  if (by.count("unsigned") != 0) parts.push_back(std::to_string(by["unsigned"]) + " unsigned");
  if (by.count("invalid") != 0) {
    parts.push_back(std::to_string(by["invalid"]) + " with a signature that does not verify");
  }
  return {b("Signatures: "),
          t("of " + std::to_string(runs.size()) + " records, " + join(parts, ", ") +
            " (Ed25519 over each record's SHA256SUMS; board.json names each run's key). A "
            "signature shows a record unchanged since that key signed it; whose key it is, "),
          blocks::c("dyno runs verify --verify-key"), t(" checks.")};
}

}  // namespace

Section methodology_section(const Board& board) {
  Section s{"Methodology", 2, {}};
  std::vector<Inline> items;
  items.push_back(arms_item(board));
  items.push_back(per_arm(board, "Engine", describe_engine));
  items.push_back(per_arm(board, "Model", describe_model));
  items.push_back(per_arm(board, "Protocol", describe_protocol));
  items.push_back(per_arm(board, "Workload", describe_workload));
  items.push_back(per_arm(board, "Load", describe_load));
  items.push_back(per_arm(board, "Hardware", describe_hardware));
  items.push_back(per_arm(board, "Harness", describe_harness));
  items.push_back(per_arm(board, "Telemetry", describe_telemetry));
  items.push_back(per_arm(board, "Figures", describe_figures));
  items.push_back(intervals_item(board));
  items.push_back(
      {b("Verdicts: "), t("a delta is a win when its whole interval is above 0, a loss when below, "
                          "otherwise a tie; without an interval it is neither.")});
  items.push_back(fairness_item(board));
  if (board.expect.any()) items.push_back(expectations_item(board));
  items.push_back(signatures_item(board));
  s.blocks.push_back(blocks::bullets(std::move(items)));
  return s;
}

}  // namespace dyno::report
