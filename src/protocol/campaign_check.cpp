#include "protocol/campaign_check.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <stdexcept>

#include "engine/server_timings.h"
#include "json/json_text.h"
#include "protocol/campaign.h"
#include "protocol/campaign_summary.h"
#include "protocol/capacity.h"
#include "protocol/plan.h"
#include "record/owner_sections.h"

namespace dyno::protocol {

namespace json = boost::json;

namespace {

std::string text_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

}  // namespace

engine_session::CellOutcome outcome_of(const record::RunRecord& r) {
  engine_session::CellOutcome out;
  out.run_id = r.run_id;
  out.dir = r.dir;
  out.status = r.manifest.status;
  if (r.summary) {
    out.summary_file = *r.summary;
    out.summary = r.summary->figures;
  }
  out.traces = r.traces;
  out.server_timings = engine::server_timing_figures(out.traces);
  out.record_sha256 = r.sums_sha256;
  out.telemetry = record::telemetry_section_of(r.manifest.telemetry);
  return out;
}

namespace {

/// Every leaf where `a` (the file) and `b` (recomputed) differ, under `path`.
void diff(const std::string& path, const json::value* a, const json::value* b,
          std::vector<RollupMismatch>& out) {
  const auto text = [](const json::value* v) {
    return v == nullptr ? std::string("absent") : json_text::compact(*v);
  };
  if (a != nullptr && b != nullptr && a->is_object() && b->is_object()) {
    for (const auto& kv : a->get_object()) {
      diff(path + "." + std::string(kv.key()), &kv.value(), b->get_object().if_contains(kv.key()),
           out);
    }
    for (const auto& kv : b->get_object()) {
      if (!a->get_object().contains(kv.key())) {
        diff(path + "." + std::string(kv.key()), nullptr, &kv.value(), out);
      }
    }
    return;
  }
  if (a != nullptr && b != nullptr && a->is_array() && b->is_array() &&
      a->get_array().size() == b->get_array().size()) {
    for (std::size_t i = 0; i < a->get_array().size(); ++i) {
      diff(path + "[" + std::to_string(i) + "]", &a->get_array()[i], &b->get_array()[i], out);
    }
    return;
  }
  if (a != nullptr && b != nullptr && a->is_number() && b->is_number()) {
    // The records keep a figure's inputs as written (times, energies), so a figure computed
    // again from them may differ from the one computed in memory in its last bits.
    const double x = a->to_number<double>(), y = b->to_number<double>();
    if (std::fabs(x - y) <= kRelativeTolerance * std::max(std::fabs(x), std::fabs(y))) return;
  }
  if (a == nullptr || b == nullptr || *a != *b) out.push_back({path, text(a), text(b)});
}

}  // namespace

std::vector<RollupMismatch> check_rollups(const json::object& doc,
                                          const std::map<std::string, record::RunRecord>& records) {
  const json::value* pv = doc.if_contains("protocol");
  const std::string protocol =
      pv != nullptr && pv->is_object() ? text_of(pv->get_object(), "name") : std::string();
  const Figures figures = protocol_figures(protocol);
  if (!figures) throw std::invalid_argument("no protocol named '" + protocol + "'");
  json::object headline;
  std::vector<std::vector<engine_session::CellOutcome>> cells;  // kept: `reps` points into it
  const json::value* cv = doc.if_contains("cells");
  if (cv != nullptr && cv->is_array()) cells.reserve(cv->get_array().size());
  std::vector<CellRep> reps;
  std::vector<std::string> names;
  for (const json::value& c : cv != nullptr && cv->is_array() ? cv->get_array() : json::array{}) {
    if (!c.is_object()) continue;
    const json::object& cell = c.get_object();
    const std::string name = text_of(cell, "cell");
    const json::value* sel = cell.if_contains("selection");
    const json::object selection =
        sel != nullptr && sel->is_object() ? sel->get_object() : json::object{};
    const json::value* params = cell.if_contains("params");
    std::vector<engine_session::CellOutcome> outcomes;
    if (const json::value* runs = cell.if_contains("runs"); runs != nullptr && runs->is_array()) {
      for (const json::value& r : runs->get_array()) {
        const std::string id = r.is_object() ? text_of(r.get_object(), "run_id") : "";
        const auto it = records.find(id);
        if (it == records.end()) throw std::invalid_argument("no record of run '" + id + "'");
        outcomes.push_back(outcome_of(it->second));
      }
    }
    cell_document(figures, name, headline_key(protocol, name),
                  params != nullptr && params->is_object() ? params->get_object() : json::object{},
                  text_of(selection, "metric"), selection, outcomes, headline);
    cells.push_back(std::move(outcomes));
    names.push_back(name);
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    for (const auto& rep : cells[i]) reps.push_back({names[i], &rep});
  }
  std::vector<RollupMismatch> out;
  const json::value recomputed_headline(std::move(headline));
  diff("headline", doc.if_contains("headline"), &recomputed_headline, out);
  const json::value telemetry(engine_session_telemetry(reps));
  diff("session_telemetry", doc.if_contains("session_telemetry"), &telemetry, out);
  const json::value flags(energy_flags(reps));
  diff("energy_flags", doc.if_contains("energy_flags"), &flags, out);
  if (protocol == "capacity") {
    // The search's verdicts and answer, judged again over the records' requests.
    const json::value* params = pv->get_object().if_contains("params");
    json::value recomputed;
    try {
      const CapacityParams p = params_from_json(
          params != nullptr && params->is_object() ? params->get_object() : json::object{});
      std::vector<Probe> probes;
      const json::array& listed = cv->get_array();
      for (std::size_t i = 0, k = 0; i < listed.size() && k < cells.size(); ++i) {
        if (!listed[i].is_object()) continue;
        const json::value* cp = listed[i].get_object().if_contains("params");
        const std::optional<double> level =
            cp != nullptr && cp->is_object() ? level_of(cp->get_object()) : std::nullopt;
        if (!level) throw std::invalid_argument("cell " + names[k] + " names no level");
        probes.push_back(probe_of(names[k], *level, cells[k]));
        ++k;
      }
      // The boundary's diagnosis, from the same records read back (what the command wrote).
      const DiagnoseRun diagnose = [&records](const engine_session::CellOutcome& o) {
        const auto it = records.find(o.run_id);
        if (it == records.end()) throw std::invalid_argument("no record of run '" + o.run_id + "'");
        return boundary_findings(it->second);
      };
      recomputed = capacity_json(p, probes, diagnose);
    } catch (const std::invalid_argument& e) {
      recomputed = json::string("cannot be recomputed: " + std::string(e.what()));
    }
    diff("capacity", doc.if_contains("capacity"), &recomputed, out);
  }
  return out;
}

}  // namespace dyno::protocol
