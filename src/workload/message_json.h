// Chat messages in a stream line: reading them (text and image parts, tool calls, tool
// results) and writing them back (internal to workload/: request_stream.cpp).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "workload/request.h"

namespace dyno::workload {

/// A stream line's `messages` array. Each message has `role` and `content` (a string, or a
/// non-empty array of parts; an assistant message with `tool_calls` may have content null or
/// omitted), an assistant message may carry `tool_calls`, a `tool` message must carry
/// `tool_call_id`. Throws StreamError naming `where` and the key.
std::vector<Message> parse_messages(const boost::json::value& v, const std::string& where,
                                    const std::filesystem::path& base_dir);

/// An OpenAI `tool_calls` array: non-empty; each element {id, type: "function", function:
/// {name, arguments}} with non-empty id and name and `arguments` a string (the JSON text the
/// model wrote). Returns its compact JSON text. Throws StreamError naming `where` and `key`.
std::string parse_tool_calls(const boost::json::value& v, const std::string& where,
                             const std::string& key);

/// A `tools` specification: a non-empty array of objects with a string `type` (e.g.
/// {"type":"function","function":{"name":…,"parameters":{…}}}). Returns its compact JSON text.
std::string parse_tools(const boost::json::value& v, const std::string& where,
                        const std::string& key);

/// The messages as the stream line writes them; `canonical` writes data URL images by their
/// hash (request_stream.h canonical_line). `request_id` names the request in errors.
boost::json::array messages_to_json(const std::vector<Message>& messages, bool canonical,
                                    const std::string& request_id);

/// A JSON text dyno validated (tool_calls, tools) read back as a value.
boost::json::value parse_kept_json(const std::string& text);

}  // namespace dyno::workload
