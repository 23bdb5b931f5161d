// Redacting known secret strings (the API key dyno sends) from what the record layer writes.
// Scrubbing (scrub.h) finds secrets by their shape and key; this finds the literal values dyno
// knows, wherever a server put them: an echoed Authorization header in a 401 body, the key
// inside streamed text, a log line.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dyno::scrub {

/// The marker a redacted secret becomes: "<scrubbed:secret>" (scrub_marker("secret")).
std::string_view secret_marker();

/// Secret strings to redact, in the order redaction tries them: empty ones dropped,
/// duplicates removed, longest first (so a key that contains another is redacted whole).
std::vector<std::string> normalize_secrets(std::vector<std::string> secrets);

/// Replaces every occurrence of each secret in `text` by secret_marker(), in one pass from
/// the left (a marker is never searched again); returns the number of occurrences replaced.
/// `secrets` as normalize_secrets() returns them. A secret of any length is redacted, even one
/// character long: the promise is that the key never reaches the disk, whatever it costs the
/// text around it.
std::size_t redact_literals(std::string& text, const std::vector<std::string>& secrets);

/// What a server said (an error message, an excerpt of a body), made fit for the record: the
/// secrets found by their shape scrubbed (scrub_text: bearer tokens, keys, Authorization
/// headers), then every one of `secrets` redacted. The text is already bounded by whoever kept
/// it (transport/server_message.h cuts without leaving a fragment of a secret); applying this
/// twice changes nothing more.
void redact_server_text(std::string& text, const std::vector<std::string>& secrets);

/// The same in every string and object key of a JSON value.
std::size_t redact_literals(boost::json::value& doc, const std::vector<std::string>& secrets);
std::size_t redact_literals(boost::json::object& doc, const std::vector<std::string>& secrets);

}  // namespace dyno::scrub
