#include "workload/scorer_spec.h"

#include <boost/json.hpp>
#include <set>

#include "error/registry.h"
#include "workload/request_stream.h"
#include "workload/scoring.h"

namespace dyno::workload {

namespace json = boost::json;

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& what) {
  throw StreamError(where + ": key `" + key + "`: " + what);
}

}  // namespace

json::value scorer_to_json(const Expectation& e) {
  if (e.pattern.empty() && e.choices.empty() && e.scorer != "regex" && e.scorer != "choice") {
    return json::value(e.scorer);
  }
  json::object so;
  so["kind"] = e.scorer;
  if (!e.pattern.empty() || e.scorer == "regex") so["pattern"] = e.pattern;
  if (!e.choices.empty() || e.scorer == "choice") {
    json::array choices;
    for (const std::string& c : e.choices) choices.emplace_back(c);
    so["choices"] = std::move(choices);
  }
  return so;
}

Expectation parse_scorer_spec(const std::string& text, const std::string& where) {
  Expectation e;
  if (!text.empty() && text.front() == '{') {
    boost::system::error_code ec;
    const json::value v = json::parse(text, ec);
    if (ec) {
      throw StreamError(where + ": '" + text + "' is not valid JSON (" + ec.message() +
                        "); give a scorer name or an object such as " +
                        R"j({"kind":"regex","pattern":"answer: (\\d+)"})j");
    }
    parse_scorer(v, where, e);
  } else {
    e.scorer = text;
  }
  if (!is_known_scorer(e.scorer)) {
    throw StreamError(where + ": unknown scorer \"" + e.scorer + "\"; the known scorers are " +
                      registry::name_list(scorers(), " and "));
  }
  if (!e.pattern.empty() && e.scorer != "regex") {
    fail(where, "scorer.pattern", "is only for scorer regex");
  }
  if (!e.choices.empty() && e.scorer != "choice") {
    fail(where, "scorer.choices", "is only for scorer choice");
  }
  if (e.scorer == "regex" && !e.pattern.empty()) {
    if (const std::string problem = regex_scorer_problem(e.pattern); !problem.empty()) {
      fail(where, "scorer.pattern", problem);
    }
  }
  std::set<std::string> seen;
  for (const std::string& c : e.choices) {
    if (c.empty()) fail(where, "scorer.choices", "choices must be non-empty strings");
    if (!seen.insert(c).second) {
      fail(where, "scorer.choices", "choice \"" + c + "\" is given twice");
    }
  }
  return e;
}

}  // namespace dyno::workload
