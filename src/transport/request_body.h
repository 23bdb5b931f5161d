// The JSON bodies dyno sends to OpenAI-compatible endpoints (chat and completions).
#pragma once

#include <string>
#include <vector>

#include "workload/request.h"

namespace dyno::transport {

/// Builds the JSON body for a request (the same bytes HttpTarget sends): text-only messages
/// as strings, messages with parts as the OpenAI array (text and image_url parts), then the
/// request's extra_body fields as given; a field of dyno's own that extra_body also names is
/// left out (the user's replaces it: body_fields checks beforehand that this was allowed).
/// Throws std::invalid_argument for image parts on the completions API.
std::string build_request_body(const workload::Request& request, const std::string& model,
                               workload::Api api, bool stream);
/// The fields build_request_body writes of its own for `request` (model, messages or prompt,
/// tools, the sampling fields the request sets, stream, stream_options), in that order.
std::vector<std::string> body_fields(const workload::Request& request, workload::Api api,
                                     bool stream);
/// The `messages` array build_request_body sends for the chat API, as JSON text (a request that
/// has a prompt instead becomes one user message).
std::string build_messages_json(const workload::Request& request);
/// The prompt of a request for the completions API; throws std::invalid_argument (naming the
/// request) when it has chat messages instead.
const std::string& completions_prompt(const workload::Request& request);

}  // namespace dyno::transport
