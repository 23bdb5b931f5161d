// The campaign file's roll-ups over its cells' records (docs/protocols.md, "The campaign
// summary"): the headline figures under stable keys, telemetry over the whole session, the
// energy flags, warnings and timing caveats of every cell with the cell named. Built from the
// outcomes alone: no file is read or written here.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "engine_session/run_cell.h"

namespace dyno::protocol {

/// One repetition of one cell, as the roll-ups see it.
struct CellRep {
  std::string cell;  ///< the cell's name
  const engine_session::CellOutcome* outcome = nullptr;
};

/// Puts `figures` at the nested `key` of `headline` ({"fr", "solo"} → headline.fr.solo); null
/// for a cell no repetition of which could be selected.
void put_headline(boost::json::object& headline, const std::vector<std::string>& key,
                  boost::json::value figures);

/// Telemetry over every measured window of the campaign (each repetition's service window:
/// warm-up, loading, idle and the time between cells excluded): the windows and the seconds
/// covered, energy summed, mean power (energy / covered seconds), the peak of the summed power
/// (the highest window's), output tokens per joule, the VRAM peak, and per device its energy,
/// peak power, temperature maxima and the range of its median clocks. `{windows: 0, reason}`
/// when no cell measured telemetry.
boost::json::object engine_session_telemetry(const std::vector<CellRep>& reps);

/// Every device flag of every repetition's energy section ({cell, run_id, device, flag}, e.g.
/// energy_sources_disagree on nvml:0 in fr/solo).
boost::json::array energy_flags(const std::vector<CellRep>& reps);

/// Every repetition's warnings ({cell, run_id, code, message}).
boost::json::array cell_warnings(const std::vector<CellRep>& reps);

/// The timing caveats of the campaign, one per code, with the cells it applies to: each cell's
/// run id and the caveat's text as that run's record gives it (with that run's numbers).
boost::json::array cell_caveats(const std::vector<CellRep>& reps);

}  // namespace dyno::protocol
