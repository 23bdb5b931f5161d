#include "app/import_command.h"

#include <boost/json.hpp>
#include <iostream>
#include <sstream>
#include <utility>

#include "app/run_command.h"
#include "json/json_text.h"
#include "session/engine_session.h"
#include "workload/import_sessions.h"
#include "workload/request_stream.h"
#include "workload/trace_import.h"

namespace dyno::app {

namespace {

/// "prompt=question,id=qid,tags=lang;topic" → mapping fields; unknown names are errors.
workload::TableMapping parse_columns(const std::string& text, workload::TableMapping m) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw UsageError("--columns: '" + item + "' is not FIELD=COLUMN (e.g. prompt=question)");
    }
    const std::string field = item.substr(0, eq);
    const std::string column = item.substr(eq + 1);
    if (field == "prompt") {
      m.prompt = column;
    } else if (field == "id") {
      m.id = column;
    } else if (field == "system") {
      m.system = column;
    } else if (field == "expected") {
      m.expected = column;
    } else if (field == "max_tokens") {
      m.max_tokens_column = column;
    } else if (field == "image") {
      m.image = column;
    } else if (field == "tags") {
      std::stringstream ts(column);
      std::string tag;
      while (std::getline(ts, tag, ';')) {
        if (!tag.empty()) m.tags.push_back(tag);
      }
    } else {
      throw UsageError("--columns: unknown field '" + field +
                       "'; use prompt, id, system, expected, max_tokens, image or tags");
    }
  }
  return m;
}

/// Flags that only some kinds take.
void check_kind_flags(const ImportOptions& o) {
  const bool trace = workload::is_trace_kind(o.kind);
  if (!trace) {
    for (const auto& [given, flag] : {std::pair{o.url.has_value(), "--url"},
                                      {o.model.has_value(), "--model"},
                                      {o.block_tokens != 512, "--block-tokens"},
                                      {o.seed != 0, "--seed"}}) {
      if (given) {
        throw UsageError(std::string(flag) +
                         ": only the trace imports (mooncake, azure, burstgpt) count tokens");
      }
    }
  }
  if (o.multi_turn && o.kind != "sharegpt") throw UsageError("--multi-turn: sharegpt only");
}

}  // namespace

int import_command(const ImportOptions& o) {
  check_kind_flags(o);
  if (workload::is_trace_kind(o.kind)) return trace_import_command(o);
  const workload::Api api = session::parse_api(o.api.value_or("chat"));
  workload::RequestStream stream;
  {
    // An import's errors name the file and line; "stream import: " says which command read it.
    if (o.kind == "sharegpt") {
      workload::ShareGptOptions so;
      so.api = api;
      if (o.max_tokens) so.max_tokens = *o.max_tokens;
      so.limit = o.limit;
      so.shuffle = o.shuffle_seed.has_value();
      so.seed = o.shuffle_seed.value_or(0);
      so.output_from_reference = o.output_from_reference;
      so.min_prompt_chars = o.min_prompt_chars;
      stream = about("stream import", [&] {
        return o.multi_turn ? workload::import_sharegpt_sessions(o.input, so)
                            : workload::import_sharegpt(o.input, so);
      });
    } else if (o.kind == "agent") {
      if (api != workload::Api::kChat) throw UsageError("--api: agent sessions need the chat API");
      workload::AgentOptions ao;
      ao.max_tokens = o.max_tokens;
      ao.limit = o.limit;
      stream = about("stream import", [&] { return workload::import_agent(o.input, ao); });
    } else if (o.kind == "table") {
      workload::TableMapping m;
      m.api = api;
      m.format = o.format;
      m.max_tokens = o.max_tokens;
      m = parse_columns(o.columns, m);
      if (!o.scorer.empty()) m.scorer = o.scorer;
      stream = about("stream import", [&] { return workload::import_table(o.input, m); });
      if (o.limit && stream.requests.size() > *o.limit) {
        stream.requests.resize(*o.limit);
        stream.sha256 = workload::stream_sha256(stream.requests);
      }
    } else if (o.kind == "image-qa") {
      if (api != workload::Api::kChat) {
        throw UsageError("--api: image questions need the chat API");
      }
      workload::ImageQaOptions io;
      io.format = o.format;
      io.instruction = o.instruction;
      io.image_dir = o.image_dir;
      if (!o.scorer.empty()) io.scorer = o.scorer;
      io.max_tokens = o.max_tokens;
      io.limit = o.limit;
      stream = about("stream import", [&] { return workload::import_image_qa(o.input, io); });
    } else {
      throw UsageError("stream import: unknown kind '" + o.kind +
                       "'; use sharegpt, table, image-qa, agent, mooncake, azure or burstgpt");
    }
  }
  about("-o", [&] { workload::write_stream_file(o.output, stream); });
  if (o.json) {
    std::cout << json_text::pretty(boost::json::object{{"output", o.output},
                                                       {"source", stream.source},
                                                       {"requests", stream.requests.size()},
                                                       {"canonical_sha256", stream.sha256}});
  } else {
    std::cout << "wrote " << stream.requests.size() << " requests to " << o.output << " (from "
              << stream.source << ")\ncanonical sha256 " << stream.sha256 << "\n";
  }
  return kExitOk;
}

}  // namespace dyno::app
