// What the engine says about itself over a run: /metrics snapshots before and after a cell
// (kept as evidence) and the counter deltas between them (summary.json → server), reported
// next to — never instead of — dyno's own client-side figures.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>

namespace dyno::engine {

/// summary.json's `server` section from two /metrics texts: every counter's delta, and the
/// figures dyno knows how to read in the vLLM, SGLang and llama.cpp dialects (prompt and
/// generation tokens, preemptions, prefix-cache hit rate, speculative acceptance rate).
/// A text that does not parse gives a section with `error` naming the line.
boost::json::object server_section(const std::string& before, const std::string& after);

/// summary.json's prefix_cache (from server_section's JSON, read typed: record/server_section.h)
/// when no request counted its cached tokens but the engine's /metrics counters did (vLLM's
/// prefix_cache_hits/queries_total deltas, in tokens): source "metrics", no per-request figures.
/// nullopt when the counters are absent or inconsistent; a section server_section could not
/// have written throws std::runtime_error naming the key.
std::optional<boost::json::object> prefix_cache_from_counters(const boost::json::object& server);

}  // namespace dyno::engine
