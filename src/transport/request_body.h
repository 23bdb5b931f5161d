// The JSON bodies dyno sends to OpenAI-compatible endpoints (chat and completions).
#pragma once

#include <string>

#include "workload/request.h"

namespace dyno::transport {

/// Builds the JSON body for a request (the same bytes HttpTarget sends): text-only messages
/// as strings, messages with parts as the OpenAI array (text and image_url parts). Throws
/// std::invalid_argument for image parts on the completions API.
std::string build_request_body(const workload::Request& request, const std::string& model,
                               workload::Api api, bool stream);
/// The `messages` array build_request_body sends for the chat API, as JSON text (a request that
/// has a prompt instead becomes one user message).
std::string build_messages_json(const workload::Request& request);
/// The prompt of a request for the completions API; throws std::invalid_argument (naming the
/// request) when it has chat messages instead.
const std::string& completions_prompt(const workload::Request& request);

}  // namespace dyno::transport
