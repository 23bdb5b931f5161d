// A scorer on its own, as `dyno rescore --scorer` takes it and as a record keeps it: the
// stream's `scorer` forms (docs/record.md, "Expected answers and scorers").
#pragma once

#include <boost/json/value.hpp>
#include <string>

#include "workload/request.h"

namespace dyno::workload {

/// An expectation's scorer as a stream writes it (the `scorer` key of to_json_line): its name
/// for exact | normalized | relaxed_numeric, else {"kind":"regex","pattern":...} or
/// {"kind":"choice","choices":[...]}.
boost::json::value scorer_to_json(const Expectation& expectation);

/// A scorer given on its own (`dyno rescore --scorer`): a name, or the JSON object a stream's
/// `scorer` takes (text starting with `{`). Returns an Expectation with an empty answer.
/// `regex` and `choice` may come without their pattern or choices (a re-score then takes each
/// request's own); when given, they are checked as a stream's are (a usable pattern; non-empty,
/// distinct choices), and each only with its own scorer. Throws StreamError("<where>: ...") for
/// text that is not JSON, an unknown scorer (naming it and listing the known ones), or a bad
/// pattern or choice.
Expectation parse_scorer_spec(const std::string& text, const std::string& where);

}  // namespace dyno::workload
