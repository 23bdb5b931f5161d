#include "workload/extra_body.h"

#include <boost/json.hpp>

#include "error/error.h"
#include "json/json_text.h"
#include "workload/stream_json.h"

namespace dyno::workload {

namespace json = boost::json;

json::object parse_extra_body(std::string_view text) {
  boost::system::error_code ec;
  json::value v = stream_json::parse(text, ec);
  if (ec) {
    throw UsageError("'" + std::string(text.substr(0, 80)) + (text.size() > 80 ? "…" : "") +
                     "' is not JSON (" + ec.message() +
                     "); give a JSON object, e.g. '{\"cache_prompt\":false}'");
  }
  if (!v.is_object()) {
    throw UsageError("expected a JSON object of request fields" + stream_json::got(v) +
                     ", e.g. '{\"cache_prompt\":false}'");
  }
  return std::move(v.get_object());
}

json::object extra_body_object(const Request& request) {
  if (request.extra_body.empty()) return {};
  boost::system::error_code ec;
  json::value v = stream_json::parse(request.extra_body, ec);
  if (ec || !v.is_object()) return {};  // written by json_text::compact from an object
  return std::move(v.get_object());
}

std::vector<std::string> extra_body_keys(const Request& request) {
  std::vector<std::string> keys;
  for (const auto& kv : extra_body_object(request)) keys.emplace_back(kv.key());
  return keys;
}

void merge_extra_body(std::vector<Request>& requests, const json::object& fields) {
  if (fields.empty()) return;
  const std::string flag_text = json_text::compact(fields);
  for (Request& r : requests) {
    if (r.extra_body.empty()) {
      r.extra_body = flag_text;
      continue;
    }
    json::object own = extra_body_object(r);
    json::object merged = fields;
    for (const auto& kv : own) merged[kv.key()] = kv.value();  // the request's own win
    r.extra_body = json_text::compact(merged);
  }
}

}  // namespace dyno::workload
