// `dyno stream make --sessions`: a session stream with exact turn lengths, re-counted turn by
// turn, and its report (requested vs achieved per turn).
#include <boost/json.hpp>
#include <iomanip>
#include <map>
#include <utility>
#include <vector>

#include "app/flag_values.h"
#include "app/run_command.h"
#include "app/stream_command.h"
#include "app/target_counter.h"
#include "workload/request_stream.h"
#include "workload/session_make.h"

namespace dyno::app {

namespace {

namespace json = boost::json;

void validate_sessions(const StreamMakeOptions& o) {
  if (o.api != "chat") throw UsageError("--sessions: sessions are chat conversations (--api chat)");
  if (o.turns == 0) throw UsageError("--turns is required with --sessions");
  if (o.turn_input_tokens == 0) throw UsageError("--turn-input-tokens is required with --sessions");
  for (const auto& [given, flag] : {std::pair{o.count != 0, "--count"},
                                    {o.input_tokens != 0, "--input-tokens"},
                                    {o.shared_prefix != 0, "--shared-prefix"}}) {
    if (given) {
      throw UsageError(std::string(flag) +
                       " does not apply with --sessions (N sessions × --turns turns of "
                       "--turn-input-tokens each)");
    }
  }
  if (o.sessions * static_cast<std::uint64_t>(o.turns) > flags::kMaxRequests) {
    throw UsageError("--sessions × --turns is " + std::to_string(o.sessions) + " × " +
                     std::to_string(o.turns) + "; at most " + std::to_string(flags::kMaxRequests) +
                     " turns in all");
  }
  if (!o.system.empty() && o.system_tokens > 0) {
    throw UsageError("--system and --system-tokens: give a literal system message or its length");
  }
  if (!o.shared_system && o.system_tokens == 0) {
    throw UsageError("--no-shared-system needs --system-tokens (each session's own system text)");
  }
  if (o.output.empty()) throw UsageError("-o FILE is required");
}

}  // namespace

int stream_sessions_command(const StreamMakeOptions& o, std::ostream& out) {
  validate_sessions(o);
  TargetFlags flags{o.url, o.model, o.api, o.profile, o.timeout_s, o.insecure, o.ca_file};
  TargetCounter count(flags, o.seed);
  const workload::PromptTokenCounter counter = [&count](const workload::Request& r) {
    return count(r);
  };

  workload::SessionMakeOptions so;
  so.sessions = o.sessions;
  so.turns = o.turns;
  so.turn_input_tokens = o.turn_input_tokens;
  so.system_tokens = o.system_tokens;
  so.system_text = o.system;
  so.shared_system = o.shared_system;
  so.think_ms = o.think_ms;
  so.output_tokens = o.output_tokens;
  so.seed = o.seed;
  std::vector<workload::TurnLengthReport> report;
  const workload::RequestStream stream = workload::make_session_stream(so, counter, &report);

  // Re-count every turn as written: the achieved figures are measured, not assumed.
  std::map<std::string, std::vector<const workload::Request*>> sessions;
  std::int64_t hit = 0;
  std::int64_t calls = 0;
  for (std::size_t i = 0; i < stream.requests.size(); ++i) {
    const workload::Request& r = stream.requests[i];
    auto& turns = sessions[r.turn->session];
    turns.push_back(&r);
    workload::TurnLengthReport& row = report[i];
    row.achieved = workload::turn_tokens(turns, turns.size() - 1, counter);
    row.calls += turns.size() == 1 ? 1 : 2;
    if (row.achieved == row.requested) ++hit;
    calls += row.calls;
  }
  workload::write_stream_file(o.output, stream);
  const bool ok = hit == static_cast<std::int64_t>(report.size());

  if (o.json) {
    json::array rows;
    for (const workload::TurnLengthReport& r : report) {
      json::object row{{"id", r.id},
                       {"session", r.session},
                       {"turn", r.turn},
                       {"measure", r.turn == 0 ? "prompt" : "delta"},
                       {"requested", r.requested},
                       {"achieved", r.achieved},
                       {"calls", r.calls}};
      if (r.turn == 0 && r.system_achieved > 0) {
        row["system_requested"] = r.system_requested;
        row["system_achieved"] = r.system_achieved;
      }
      rows.push_back(std::move(row));
    }
    json::object doc{{"file", o.output},
                     {"canonical_sha256", stream.sha256},
                     {"source", stream.source},
                     {"engine", count.engine()},
                     {"embedded_sim", count.embedded()},
                     {"model", count.model()},
                     {"tokenizer", count.flavor()},
                     {"measured_with_answer", workload::kStandInAnswer},
                     {"turns", std::move(rows)}};
    doc["totals"] = json::object{{"sessions", o.sessions},
                                 {"turns", report.size()},
                                 {"hit", hit},
                                 {"missed", static_cast<std::int64_t>(report.size()) - hit},
                                 {"tokenize_calls", calls}};
    doc["ok"] = ok;
    out << json::serialize(doc) << "\n";
    return ok ? kExitOk : kExitRunFailed;
  }
  out << count.describe(o.api);
  out << "turn 0: the whole prompt (system + user, template included); turn k >= 1: the tokens "
         "its user message adds to the conversation (earlier answers as \""
      << workload::kStandInAnswer << "\")\n";
  if (!report.empty() && report.front().system_achieved > 0) {
    out << "system message: " << report.front().system_achieved << " tokens alone"
        << (o.system_tokens > 0 ? " (requested " + std::to_string(o.system_tokens) + ")" : "")
        << (o.shared_system ? ", shared by every session" : ", one per session") << "\n";
  }
  std::size_t id_width = 5;
  for (const auto& r : report) id_width = std::max(id_width, r.id.size());
  const int w = static_cast<int>(id_width);
  out << std::left << std::setw(w) << "id" << std::right << std::setw(6) << "turn" << std::setw(8)
      << "measure" << std::setw(11) << "requested" << std::setw(10) << "achieved" << std::setw(7)
      << "calls\n";
  for (const auto& r : report) {
    out << std::left << std::setw(w) << r.id << std::right << std::setw(6) << r.turn << std::setw(8)
        << (r.turn == 0 ? "prompt" : "delta") << std::setw(11) << r.requested << std::setw(10)
        << r.achieved << std::setw(7) << r.calls << (r.achieved == r.requested ? "" : "  MISS")
        << "\n";
  }
  out << hit << "/" << report.size() << " turns hit their target exactly (" << calls
      << " tokenize calls)\n";
  out << "wrote " << o.output << " (" << o.sessions << " sessions, " << report.size()
      << " turns, canonical sha256 " << stream.sha256 << ")\n";
  return ok ? kExitOk : kExitRunFailed;
}

}  // namespace dyno::app
