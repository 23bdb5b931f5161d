#include "engine_session/stream.h"

#include <algorithm>
#include <string>

#include "error/error.h"
#include "workload/extra_body.h"
#include "workload/synthetic.h"

namespace dyno::engine_session {

void fill_sampling_defaults(std::vector<workload::Request>& requests,
                            const workload::StreamOptions& o) {
  for (auto& r : requests) {
    if (!r.sampling.max_tokens && o.max_tokens) r.sampling.max_tokens = o.max_tokens;
    if (!r.sampling.temperature) r.sampling.temperature = o.temperature;
  }
}

workload::RequestStream stream_as_given(const workload::StreamOptions& o, workload::Api api,
                                        std::uint64_t seed, std::uint64_t synthetic_count) {
  workload::RequestStream stream;
  if (o.file) {
    stream = about("--stream", [&] { return workload::read_stream_file(*o.file); });
    if (stream.requests.empty()) {
      throw UsageError("--stream: " + *o.file + " holds no request");
    }
    for (const auto& r : stream.requests) {
      if ((api == workload::Api::kChat) != r.is_chat()) {
        throw UsageError("--stream: request '" + r.id + "' is a " +
                         (r.is_chat() ? "chat" : "completion") + " request but --api is " +
                         (api == workload::Api::kChat ? "chat" : "completions") + "; use --api " +
                         (r.is_chat() ? "chat" : "completions"));
      }
    }
  } else {
    workload::SyntheticOptions syn;
    syn.api = api;
    syn.input_tokens = o.input_tokens;
    syn.output_tokens = o.output_tokens;
    syn.seed = seed;
    syn.count = std::max<std::uint64_t>(1, synthetic_count);
    // Both factors are bounded by their flags; their product is the memory the prompts take.
    const std::uint64_t tokens = syn.count * static_cast<std::uint64_t>(o.input_tokens);
    if (tokens > kMaxSyntheticTokens) {
      throw UsageError("the synthetic stream would hold " + std::to_string(syn.count) +
                       " requests x --input-tokens " + std::to_string(o.input_tokens) + " = " +
                       std::to_string(tokens) + " prompt tokens, more than the limit of " +
                       std::to_string(kMaxSyntheticTokens) +
                       "; lower -n (or --warmup, --min-requests) or --input-tokens, or give a "
                       "--stream");
    }
    stream = workload::make_synthetic_stream(syn);
  }
  add_extra_body(stream, o);
  return stream;  // sha256: the canonical hash of the requests as given (--extra-body merged)
}

void add_extra_body(workload::RequestStream& stream, const workload::StreamOptions& o) {
  if (!o.extra_body) return;
  const boost::json::object fields =
      about("--extra-body", [&] { return workload::parse_extra_body(*o.extra_body); });
  if (fields.empty()) return;
  workload::merge_extra_body(stream.requests, fields);
  stream.sha256 = workload::stream_sha256(stream.requests);
}

workload::RequestStream build_stream(const workload::StreamOptions& o, workload::Api api,
                                     std::uint64_t seed, std::uint64_t synthetic_count) {
  workload::RequestStream stream = stream_as_given(o, api, seed, synthetic_count);
  // Flags fill what the stream leaves unset (the stream's own values win); `sha256` stays the
  // hash of the requests as given, the one `stream make` and `stream import` print. What the
  // flags set is the manifest's workload.sampling.
  fill_sampling_defaults(stream.requests, o);
  return stream;
}

}  // namespace dyno::engine_session
