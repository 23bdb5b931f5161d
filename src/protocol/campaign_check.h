// A campaign file's roll-ups recomputed from the records it pins (`dyno runs verify
// CAMPAIGN`, docs/store.md): the headline, the telemetry over the session and the energy flags,
// each by the code that computed them when the campaign ran (plan.h's protocol_figures,
// campaign.h's cell_document, campaign_summary.h), compared with what the file says. Pure: the
// caller reads the records.
#pragma once

#include <boost/json/object.hpp>
#include <map>
#include <string>
#include <vector>

#include "engine_session/run_cell.h"
#include "record/run_record.h"

namespace dyno::protocol {

/// How far apart (relative to the larger) two numbers may be and still agree.
inline constexpr double kRelativeTolerance = 1e-9;

/// One roll-up the file and the records disagree on: where (`headline.fr.solo.tok_s`) and
/// both values as JSON text ("absent" when one side has no such member).
struct RollupMismatch {
  std::string member;
  std::string in_file;
  std::string recomputed;
};

/// A cell's repetition as the campaign saw it, read back from its record (its summary, traces,
/// server timings, telemetry section, pinned digest): what the check recomputes from and what
/// `dyno capacity --resume` takes up.
engine_session::CellOutcome outcome_of(const record::RunRecord& r);

/// What the records give against what `doc` (a campaign file) says: the headline (each cell's
/// selected repetition by its selection metric), `session_telemetry` and `energy_flags`.
/// `records` holds every run the cells list, by run id (read with their requests). Numbers
/// agree within kRelativeTolerance: a figure computed again from what the records keep (trace
/// times, energies as written) may differ in its last bits from the one computed in memory.
/// Throws std::invalid_argument for a protocol it does not know or a run missing from
/// `records` (the caller checks the campaign's runs first).
std::vector<RollupMismatch> check_rollups(const boost::json::object& doc,
                                          const std::map<std::string, record::RunRecord>& records);

}  // namespace dyno::protocol
