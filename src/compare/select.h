// Choosing run records: by run id (or a unique prefix), by the path of a run directory, by
// campaign id, or by a query over manifest fields (docs/compare.md "Selecting runs"). Queries
// read the manifests under the runs root; no index is needed (index_select.h resolves the same
// selectors through a run index instead).
#pragma once

#include <boost/json/object.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compare/run_record.h"

namespace dyno::compare {

/// One `key=value` term of a query. `path` is the manifest path the key names.
struct QueryTerm {
  std::string key;
  std::string path;
  std::string value;
};

/// The query keys and the manifest paths they stand for (campaign, label, engine, model, …).
const std::vector<std::pair<std::string, std::string>>& query_keys();

/// Parses `key=value[,key=value…]`; a key is one of query_keys() or a dotted manifest path
/// (e.g. engine.sim_profile.name). Throws CompareError naming the term.
std::vector<QueryTerm> parse_query(const std::string& text);

/// True when `v` is a scalar whose query text (scalar_text) is `want`, or when both read as the
/// same number.
bool scalar_matches(const boost::json::value& v, const std::string& want);

/// True when every term matches: the manifest value at the term's path, as text (strings as
/// they are, numbers in their shortest form, true/false, null), equals the term's value, or
/// both read as the same number.
bool query_matches(const boost::json::object& manifest, const std::vector<QueryTerm>& terms);

/// Resolves one selector to run directories, in run-id order:
/// - contains '=': a query over `manifests`;
/// - an existing directory holding manifest.json: that run;
/// - the id of a campaign file <runs_root>/campaigns/<id>.json: every run it lists;
/// - else a run id or a prefix of exactly one run id under the runs root.
/// Throws CompareError when nothing matches or a prefix is ambiguous (listing candidates).
std::vector<std::filesystem::path> resolve_selector(const std::string& selector,
                                                    const std::filesystem::path& runs_root,
                                                    const std::vector<ManifestEntry>& manifests);

/// <runs_root>/campaigns/<id>.json, when it exists; throws CompareError when it is malformed.
std::optional<boost::json::object> read_campaign(const std::filesystem::path& runs_root,
                                                 const std::string& campaign_id);

/// A JSON scalar as query text: strings as they are, integral numbers without a fraction,
/// other numbers in their shortest round-trip form, true/false, null.
std::string scalar_text(const boost::json::value& v);

}  // namespace dyno::compare
