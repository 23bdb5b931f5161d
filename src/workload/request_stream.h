// Reading, writing and hashing request streams (JSONL, one request per line).
#pragma once

#include <boost/json/value.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "error/error.h"
#include "workload/request.h"

namespace dyno::workload {

/// A malformed stream file; the message names file:line and the offending key.
class StreamError : public Error {
 public:
  explicit StreamError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// Parses one JSONL line into a Request. Throws StreamError("<where>: ...") on unknown keys,
/// wrong types or missing content. `where` is prefixed to messages (e.g. "file.jsonl:12").
/// `base_dir` resolves relative `{"type":"image","path":...}` parts (empty: the current
/// directory); such a part is read at parse time and becomes a data URL image part.
Request parse_request_line(const std::string& line, const std::string& where,
                           const std::filesystem::path& base_dir = {});

/// Serializes a request as one JSON object (no newline), self-contained: image parts carry
/// their full URL (data URLs included). Keys in a fixed order, unset fields omitted.
/// parse_request_line(to_json_line(r)) == r for every request parse_request_line returns.
/// Key order: id, messages|prompt, max_tokens, temperature, top_p, seed, stop (always an
/// array), ignore_eos, min_tokens, tags (sorted), expected, scorer. A message's `content` is a
/// string when it has no parts, else an array of {"type":"text","text":...} and
/// {"type":"image_url","image_url":{"url":...}}. `scorer` is written whenever `expected` is: a
/// string for exact|normalized|relaxed_numeric, an object {"kind":"regex","pattern":...} or
/// {"kind":"choice","choices":[...]} otherwise. Integers are written as integers, doubles in
/// the shortest form that reads back to the same value (json/json_text.h: 0.7, 1e-05).
std::string to_json_line(const Request& request);

/// The form hashed by stream_sha256: to_json_line, except that an image part with a data URL
/// is written as {"type":"image","sha256":"<hex of the decoded bytes>"} (so the same bytes
/// hash the same whether given by path or data URL, and the declared MIME type does not
/// count); http(s) image URLs stay as URLs. Uses `image_sha256` when set, else decodes the
/// data URL (StreamError when it is not valid base64). Equal to to_json_line for requests
/// without data URL images. Not meant to be parsed back.
std::string canonical_line(const Request& request);

/// Reads a JSONL stream file. Blank lines are skipped (line numbers still count them).
/// Sets `source` to the path and `sha256` to stream_sha256. Throws StreamError when the file
/// cannot be read, a line is malformed, two requests share an id, or there is no request.
/// Line format: `id` (string, required); `messages` (array of {role, content}; content a
/// string or a non-empty array of parts) XOR `prompt` (string); optional `max_tokens` (int >=
/// 1), `temperature` (number >= 0), `top_p` (number in (0, 1]), `seed` (int), `stop` (string
/// or array of strings), `ignore_eos` (bool), `min_tokens` (int >= 0), `tags` (object of
/// strings), `expected` (string), `scorer` (name or object; needs `expected`). Nothing else.
/// Parts: {"type":"text","text":s}; {"type":"image_url","image_url":{"url":u}} where u is a
/// data URL "data:image/<subtype>;base64,<strict base64>" or an http(s) URL; and
/// {"type":"image","path":p}, p relative to the stream file's directory, read and turned into a
/// data URL (PNG, JPEG, GIF or WEBP, recognised by magic bytes).
RequestStream read_stream_file(const std::filesystem::path& path);

/// read_stream_file on the file's bytes: `source` names the stream in messages (as
/// "<source>:<line>") and becomes RequestStream::source; relative image paths are resolved
/// against `base_dir`. Lines end in LF (a CR before it is dropped). Throws StreamError.
RequestStream parse_stream_text(std::string_view text, const std::string& source,
                                const std::filesystem::path& base_dir = {});

/// Writes a stream as JSONL (to_json_line, each followed by '\n'). Throws StreamError when
/// the file cannot be written.
void write_stream_file(const std::filesystem::path& path, const RequestStream& stream);

/// Canonical SHA-256 (lowercase hex) of a request list: hash of the canonical lines
/// (canonical_line), each followed by '\n'. Independent of the source file's formatting and of
/// how images were given; for streams without data URL images it is the hash of the bytes
/// write_stream_file writes.
std::string stream_sha256(const std::vector<Request>& requests);

/// The MIME type of image bytes by their magic number: "image/png", "image/jpeg",
/// "image/gif", "image/webp"; "" when none matches.
std::string image_mime_type(std::string_view bytes);

/// Reads an image file into a kImage part (data URL with the sniffed MIME type, image_sha256
/// set). Throws StreamError("<where>: key `<key>`: ...") naming the file when it cannot be
/// read, is empty or is not PNG/JPEG/GIF/WEBP.
ContentPart image_part_from_file(const std::filesystem::path& file, const std::string& where,
                                 const std::string& key);

/// A kImage part for `url`: a data URL (strictly decoded; image_sha256 set) or an http(s) URL
/// (image_sha256 empty). Throws StreamError("<where>: key `<key>`: ...") otherwise.
ContentPart image_part_from_url(const std::string& url, const std::string& where,
                                const std::string& key);

/// Checks an expectation: a known scorer; `regex` needs a `pattern` that compiles
/// (std::regex ECMAScript), `choice` needs non-empty, distinct, non-empty `choices`; pattern
/// and choices only with their scorer. Throws StreamError("<where>: key `<key>`: ...").
void validate_expectation(const Expectation& expectation, const std::string& where,
                          const std::string& key);

/// Reads a stream line's `scorer` value into `e` (scorer, pattern, choices): a name, or an
/// object {kind, pattern?, choices?}. Checks shapes only (validate_expectation checks the
/// rest). Throws StreamError("<where>: key `scorer…`: ...").
void parse_scorer(const boost::json::value& v, const std::string& where, Expectation& e);

}  // namespace dyno::workload
