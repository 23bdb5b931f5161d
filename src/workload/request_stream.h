// Reading, writing and hashing request streams (JSONL, one request per line).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "workload/request.h"

namespace dyno::workload {

/// A malformed stream file; the message names file:line and the offending key.
class StreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses one JSONL line into a Request. Throws StreamError("<where>: ...") on unknown keys,
/// wrong types or missing content. `where` is prefixed to messages (e.g. "file.jsonl:12").
Request parse_request_line(const std::string& line, const std::string& where);

/// Serializes a request as one canonical JSON object (no newline); keys in a fixed order,
/// unset fields omitted. parse_request_line(to_json_line(r)) == r.
/// Key order: id, messages|prompt, max_tokens, temperature, top_p, seed, stop (always an
/// array), ignore_eos, min_tokens, tags (sorted). Integers are written as integers, doubles in
/// the shortest form that reads back to the same value (json/json_text.h: 0.7, 1e-05).
std::string to_json_line(const Request& request);

/// Reads a JSONL stream file. Blank lines are skipped (line numbers still count them).
/// Sets `source` to the path and `sha256` to stream_sha256. Throws StreamError when the file
/// cannot be read, a line is malformed, two requests share an id, or there is no request.
/// Line format: `id` (string, required); `messages` (array of {role, content} strings) XOR
/// `prompt` (string); optional `max_tokens` (int >= 1), `temperature` (number >= 0), `top_p`
/// (number in (0, 1]), `seed` (int), `stop` (string or array of strings), `ignore_eos`
/// (bool), `min_tokens` (int >= 0), `tags` (object of strings). Nothing else.
RequestStream read_stream_file(const std::filesystem::path& path);

/// Writes a stream as JSONL (canonical lines, each followed by '\n'). Throws StreamError when
/// the file cannot be written.
void write_stream_file(const std::filesystem::path& path, const RequestStream& stream);

/// Canonical SHA-256 (lowercase hex) of a request list: hash of the canonical lines, each
/// followed by '\n' (the bytes write_stream_file writes). Independent of the source file's
/// formatting.
std::string stream_sha256(const std::vector<Request>& requests);

}  // namespace dyno::workload
