#include "app/stream_import_command.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <iostream>
#include <sstream>
#include <utility>

#include "app/flag_values.h"
#include "app/run_command.h"
#include "engine_session/engine_session.h"
#include "error/registry.h"
#include "json/json_text.h"
#include "workload/import_sessions.h"
#include "workload/request_stream.h"
#include "workload/scoring.h"
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
void check_kind_flags(const StreamImportOptions& o) {
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

/// A data set's stream written to -o, its size and hash printed.
int write_stream(const StreamImportOptions& o, const workload::RequestStream& stream) {
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

workload::Api data_set_api(const StreamImportOptions& o) {
  return engine_session::parse_api(o.api.value_or("chat"));
}

// An import's errors name the file and line; "stream import: " says which command read it.

int stream_import_sharegpt(const StreamImportOptions& o) {
  workload::ShareGptOptions so;
  so.api = data_set_api(o);
  if (o.max_tokens) so.max_tokens = *o.max_tokens;
  so.limit = o.limit;
  so.shuffle = o.shuffle_seed.has_value();
  so.seed = o.shuffle_seed.value_or(0);
  so.output_from_reference = o.output_from_reference;
  so.min_prompt_chars = o.min_prompt_chars;
  return write_stream(o, about("stream import", [&] {
                        return o.multi_turn ? workload::stream_from_sharegpt_sessions(o.input, so)
                                            : workload::stream_from_sharegpt(o.input, so);
                      }));
}

int stream_import_agent(const StreamImportOptions& o) {
  if (data_set_api(o) != workload::Api::kChat) {
    throw UsageError("--api: agent sessions need the chat API");
  }
  workload::AgentOptions ao;
  ao.max_tokens = o.max_tokens;
  ao.limit = o.limit;
  return write_stream(
      o, about("stream import", [&] { return workload::stream_from_agent(o.input, ao); }));
}

int stream_import_table(const StreamImportOptions& o) {
  workload::TableMapping m;
  m.api = data_set_api(o);
  m.format = o.format;
  m.max_tokens = o.max_tokens;
  m = parse_columns(o.columns, m);
  if (!o.scorer.empty()) m.scorer = o.scorer;
  workload::RequestStream stream =
      about("stream import", [&] { return workload::stream_from_table(o.input, m); });
  if (o.limit && stream.requests.size() > *o.limit) {
    stream.requests.resize(*o.limit);
    stream.sha256 = workload::stream_sha256(stream.requests);
  }
  return write_stream(o, stream);
}

int stream_import_image_qa(const StreamImportOptions& o) {
  if (data_set_api(o) != workload::Api::kChat) {
    throw UsageError("--api: image questions need the chat API");
  }
  workload::ImageQaOptions io;
  io.format = o.format;
  io.instruction = o.instruction;
  io.image_dir = o.image_dir;
  if (!o.scorer.empty()) io.scorer = o.scorer;
  io.max_tokens = o.max_tokens;
  io.limit = o.limit;
  return write_stream(
      o, about("stream import", [&] { return workload::stream_from_image_qa(o.input, io); }));
}

}  // namespace

std::span<const StreamImport> stream_imports() {
  static constexpr StreamImport kImports[] = {
      {.name = "sharegpt",
       .describe = "ShareGPT conversations (JSON): each one's first human turn a request, or with "
                   "--multi-turn every human turn, a session per conversation",
       .run = stream_import_sharegpt},
      {.name = "table",
       .describe = "a CSV, JSONL or JSON table, a request a row; --columns names the fields",
       .run = stream_import_table},
      {.name = "image-qa",
       .describe = "image questions (a table of questions, answers and image files, or its "
                   "directory): chat requests with the image inlined",
       .run = stream_import_image_qa},
      {.name = "agent",
       .describe = "agent trajectories (JSONL): each a chat session of turns, tool calls and "
                   "their results",
       .run = stream_import_agent},
      {.name = "mooncake",
       .describe = "Mooncake's JSONL trace (timestamp, lengths, hash_ids): exact block prompts, "
                   "counted by the target's /tokenize, sent at their times",
       .run = trace_import_command},
      {.name = "azure",
       .describe = "the Azure LLM inference trace (CSV: TIMESTAMP, ContextTokens, "
                   "GeneratedTokens): exact prompts, sent at their times",
       .run = trace_import_command},
      {.name = "burstgpt",
       .describe = "BurstGPT's CSV (Timestamp, Request tokens, Response tokens, Model, Log "
                   "Type): exact prompts, sent at their times",
       .run = trace_import_command},
  };
  return kImports;
}

void add_stream_import_options(CLI::App& cmd, StreamImportOptions& o) {
  cmd.add_option("kind", o.kind,
                 "sharegpt, table, image-qa, agent (JSONL trajectories), or a trace: mooncake, "
                 "azure, burstgpt")
      ->required()
      ->check(CLI::IsMember(registry::names(stream_imports())));
  cmd.add_option("input", o.input, "the data file (image-qa: or its directory)")->required();
  cmd.add_option("-o,--output", o.output, "stream file to write (JSONL)")->required();
  cmd.add_option("--api", o.api, "chat or completions (default: chat; traces: completions)")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd.add_option("--max-tokens", o.max_tokens, "max_tokens of every request (not for traces)")
      ->transform(flags::integer(1, flags::kMaxTokens));
  cmd.add_option("--limit", o.limit,
                 "keep at most this many requests (sharegpt --multi-turn, agent: sessions)")
      ->transform(flags::integer(1, flags::kMaxU64));
  cmd.add_option("--shuffle-seed", o.shuffle_seed, "sharegpt: shuffle (seeded) before --limit")
      ->transform(flags::integer(0, flags::kMaxU64));
  cmd.add_flag("--output-from-reference", o.output_from_reference,
               "sharegpt: max_tokens approximated from the reference reply");
  cmd.add_option("--min-prompt-chars", o.min_prompt_chars, "sharegpt: skip shorter prompts")
      ->transform(flags::integer(0, flags::kMaxU64));
  cmd.add_flag("--multi-turn", o.multi_turn,
               "sharegpt: every human turn; each conversation becomes a session");
  cmd.add_option("--columns", o.columns,
                 "table: FIELD=COLUMN list, e.g. prompt=question,id=qid,expected=answer,"
                 "tags=lang;topic (fields: prompt id system expected max_tokens image tags)");
  cmd.add_option("--format", o.format,
                 "table / image-qa: csv, jsonl or json (default: by extension)");
  std::string plain;  // the scorers a row's answer alone serves (no pattern, no choices)
  for (const workload::Scorer& s : workload::scorers()) {
    if (s.parameter == nullptr) plain += (plain.empty() ? "" : ", ") + std::string(s.name);
  }
  cmd.add_option("--scorer", o.scorer, "table / image-qa: scorer of every row (" + plain + ")");
  cmd.add_option("--instruction", o.instruction, "image-qa: text appended to each question");
  cmd.add_option("--image-dir", o.image_dir,
                 "image-qa: image directory, relative to the data file");
  cmd.add_option("--url", o.url,
                 "traces: base URL whose /tokenize counts prompts (default: the embedded "
                 "simulated engine)");
  cmd.add_option("--model", o.model, "traces: model name (required with --url)");
  cmd.add_option("--profile", o.profile, "traces: embedded simulated engine profile (no --url)")
      ->capture_default_str();
  cmd.add_option("--block-tokens", o.block_tokens, "mooncake: tokens per hash id")
      ->transform(flags::integer(1, flags::kMaxTokens))
      ->capture_default_str();
  cmd.add_flag("--skip-short", o.skip_short,
               "traces: skip (and count) rows shorter than a prompt's fixed cost (template, "
               "BOS), instead of an error");
  cmd.add_option("--seed", o.seed, "traces: seed of the block texts")
      ->transform(flags::integer(0, flags::kMaxU64))
      ->capture_default_str();
  cmd.add_option("--timeout", o.timeout_s, "traces: seconds per tokenize call")
      ->transform(flags::seconds())
      ->capture_default_str();
  cmd.add_flag("--insecure", o.insecure, "traces, https: do not verify the server's certificate");
  cmd.add_option("--ca-file", o.ca_file, "traces, https: PEM file of extra CA certificates");
  cmd.add_flag("--json", o.json, "print the result as JSON");
}

int stream_import_command(const StreamImportOptions& o) {
  const StreamImport& kind = registry::lookup(stream_imports(), o.kind, "stream import kind");
  check_kind_flags(o);
  return kind.run(o);
}

}  // namespace dyno::app
