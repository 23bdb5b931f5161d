// The flags every cell shares, as a cell: the load the shared flags give (load::plan,
// load/plan.h) with the record and request-field flags, the one path by which `dyno run`, every
// protocol and so every campaign cell turn their flags into a cell, so each flag means the same
// in all of them (docs/protocols.md).
#pragma once

#include <boost/json/object.hpp>
#include <vector>

#include "engine_session/options.h"
#include "engine_session/run_cell.h"
#include "load/plan.h"
#include "record/options.h"
#include "workload/request.h"
#include "workload/stream_options.h"

namespace dyno::engine_session {

/// A cell without its requests: `load` (load::plan: the shape, counts, --seed, --error-budget,
/// --slo, the console's load line, whether the stream cycles) with the record's keeps
/// (--keep-outputs, --no-chunk-times), --label, --extra-body and --extra-body-override
/// (recorded in the manifest; UsageError naming the flag), and the sampling --temperature sets.
CellSpec cell_from_flags(const load::LoadPlan& load, const workload::StreamOptions& stream,
                         const record::RecordOptions& record);

/// The request fields a run sends of the user's own: the --engine spec's [extra_body], with
/// --extra-body's fields over them (a stream line's own win over both, when merged). `stream`
/// unchanged without a spec or without [extra_body]; SpecError/UsageError naming the spec or the
/// flag.
workload::StreamOptions with_engine_extra_body(const TargetOptions& target,
                                               workload::StreamOptions stream);

/// --extra-body checked before anything runs: a JSON object (UsageError naming the flag
/// otherwise) none of whose fields is one dyno writes in every body — model, messages (chat) or
/// prompt (completions), stream, stream_options (streamed) — unless --extra-body-override.
/// Empty without the flag.
boost::json::object checked_extra_body(const workload::StreamOptions& stream, workload::Api api,
                                       bool streamed);

/// Every request's extra_body against the fields dyno sets on that request
/// (transport::body_fields: also the sampling fields it carries, e.g. max_tokens from
/// --max-tokens or the stream line): UsageError naming the request and the field unless
/// `allow_override`.
void check_extra_body(const std::vector<workload::Request>& requests, workload::Api api,
                      bool streamed, bool allow_override);

}  // namespace dyno::engine_session
