// Fields of the user's own in every request body (`--extra-body JSON`, a stream line's
// `extra_body`): e.g. llama.cpp's `cache_prompt: false`, `chat_template_kwargs`. They belong to
// the request (workload::Request::extra_body), so they enter the stream's canonical hash.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "workload/request.h"

namespace dyno::workload {

/// `text` as a JSON object of request fields, numbers read exactly. Throws UsageError when it is
/// not JSON or not an object (the caller puts the flag in front: about("--extra-body", …)).
boost::json::object parse_extra_body(std::string_view text);

/// A request's extra_body as an object (empty when it has none).
boost::json::object extra_body_object(const Request& request);

/// The field names of a request's extra_body, in its order (none when it has none).
std::vector<std::string> extra_body_keys(const Request& request);

/// Adds `fields` to every request's extra_body; a field the request's own extra_body sets wins
/// (as a request's own sampling values win over the flags').
void merge_extra_body(std::vector<Request>& requests, const boost::json::object& fields);

}  // namespace dyno::workload
