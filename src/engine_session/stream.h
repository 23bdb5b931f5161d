// The request stream of a command as the flags give it: a --stream file (checked against
// --api) or the seeded synthetic stream, and the sampling defaults the flags fill.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/request.h"
#include "workload/request_stream.h"
#include "workload/stream_options.h"

namespace dyno::engine_session {

/// Σ prompt tokens of a synthetic stream (about 6 bytes each, held in memory twice).
inline constexpr std::uint64_t kMaxSyntheticTokens = 100'000'000;

/// The request stream as given: --stream FILE (checked against `api`), else the synthetic
/// stream of `synthetic_count` requests seeded by `seed` (at most kMaxSyntheticTokens prompt
/// tokens), with --extra-body merged into every request (add_extra_body). `sha256` is the
/// canonical hash of these requests. Throws UsageError (or the
/// stream's error with "--stream" in front) naming the flag.
workload::RequestStream stream_as_given(const workload::StreamOptions& options, workload::Api api,
                                        std::uint64_t seed, std::uint64_t synthetic_count);

/// --extra-body merged into every request of `stream` (a request's own extra_body fields win)
/// and `stream.sha256` taken again: the fields are part of what is sent, so of the stream's
/// identity (the same hash as a stream file whose every line carries them). Nothing without
/// the flag; UsageError naming --extra-body when it is not a JSON object.
void add_extra_body(workload::RequestStream& stream, const workload::StreamOptions& options);

/// Flags fill what requests leave unset (--max-tokens, --temperature); a request's own values
/// win.
void fill_sampling_defaults(std::vector<workload::Request>& requests,
                            const workload::StreamOptions& options);

/// stream_as_given, then fill_sampling_defaults. `sha256` stays the hash of the requests as
/// given (what `stream make` / `stream import` print; the manifest's request_stream.sha256).
workload::RequestStream build_stream(const workload::StreamOptions& options, workload::Api api,
                                     std::uint64_t seed, std::uint64_t synthetic_count);

}  // namespace dyno::engine_session
