// Where a run belongs on a board (docs/compare.md "Pairing"): its model (after aliases),
// protocol, protocol cell, level and repetition, read from its manifest. Internal to
// dyno_compare (board.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "compare/run_record.h"

namespace dyno::compare {

/// The pairing key of a run: model, protocol and protocol cell.
struct CellKey {
  std::string model, protocol, cell;
  bool operator<(const CellKey& o) const {
    return std::tie(model, protocol, cell) < std::tie(o.model, o.protocol, o.cell);
  }
};

/// model.id, or the name an alias gives it.
std::string model_of(const RunRecord& r, const std::map<std::string, std::string>& aliases);

/// workload.protocol.name; "run" for `dyno run`; for an imported record the protocol it pairs
/// as (workload.protocol.pairs_as, else "run").
std::string protocol_of(const RunRecord& r);

/// The protocol's cell name; for a plain run, c<C> (closed loop) or r<rate> (open loop).
std::string cell_of(const RunRecord& r);

/// The cell's level (the x of charts) and its kind: concurrency, rate, or a ladder's
/// decode_tokens / prefill_tokens; both left as they are when the record names none.
void level_of(const RunRecord& r, std::string& kind, std::optional<double>& level);

/// workload.protocol.repetition (1 when absent).
std::int64_t repetition_of(const RunRecord& r);

}  // namespace dyno::compare
