#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "workload/request_stream.h"
#include "workload/token_counters.h"
#include "workload/trace_import.h"
#include "workload/trace_prompts.h"

namespace dyno::workload {
namespace {

namespace fs = std::filesystem;
using test::sim_count;

const fs::path kTraces = fs::path(DYNO_SOURCE_DIR) / "tests/workload/data/traces";

std::string parse_error(const std::string& kind, const std::string& text) {
  try {
    parse_trace_text(kind, text, "t");
  } catch (const StreamError& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

const std::string& text_of(const Request& r) {
  return r.is_chat() ? r.messages.back().content : *r.prompt;
}

TracePromptOptions completions(std::int64_t block_tokens) {
  TracePromptOptions o;
  o.api = Api::kCompletions;
  o.block_tokens = block_tokens;
  o.seed = 1;
  return o;
}

TEST(TraceRead, MooncakeLinesAndTimes) {
  const TraceFile t = read_trace_file("mooncake", kTraces / "mooncake.jsonl");
  ASSERT_EQ(t.records.size(), 5u);
  EXPECT_EQ(t.rows, 5u);
  EXPECT_EQ(t.records[0].line, 1u);
  EXPECT_EQ(t.records[2].line, 4u);  // the blank line counts
  EXPECT_EQ(t.records[2].time_ns, 1'500'000'000);
  EXPECT_EQ(t.records[3].time_ns, 3'052'500'000);
  EXPECT_EQ(t.records[1].input_tokens, 35);
  EXPECT_EQ(t.records[1].output_tokens, 7);
  EXPECT_EQ(t.records[1].hash_ids, (std::vector<std::uint64_t>{0, 1, 3}));
  EXPECT_EQ(read_trace_file("mooncake", kTraces / "mooncake.jsonl", 2).records.size(), 2u);
}

TEST(TraceRead, AzureAndBurstGptRows) {
  const TraceFile a = read_trace_file("azure", kTraces / "azure.csv");
  ASSERT_EQ(a.records.size(), 3u);
  EXPECT_EQ(a.rows, 4u);
  EXPECT_EQ(a.skipped_no_output, 1u);
  EXPECT_EQ(a.records[1].time_ns - a.records[0].time_ns, 4'314'579'000);
  EXPECT_EQ(a.records[2].line, 5u);
  EXPECT_EQ(a.records[2].input_tokens, 1);
  const TraceFile b = read_trace_file("burstgpt", kTraces / "burstgpt.csv");
  ASSERT_EQ(b.records.size(), 2u);
  EXPECT_EQ(b.skipped_no_output, 1u);  // a failed request (Response tokens 0)
  EXPECT_EQ(b.records[1].time_ns, 17'250'000'000);
  EXPECT_EQ(b.records[1].tags.at("model"), "GPT-4");
  EXPECT_EQ(b.records[1].tags.at("log_type"), "API log");
  EXPECT_EQ(b.records[1].line, 4u);
}

TEST(TraceRead, Datetimes) {
  EXPECT_EQ(parse_datetime_ns("1970-01-01 00:00:00"), 0);
  EXPECT_EQ(parse_datetime_ns("1970-01-02T00:00:01.5"), 86'401'500'000'000);
  EXPECT_EQ(parse_datetime_ns("2024-02-29 00:00:00"), 1'709'164'800'000'000'000);
  EXPECT_EQ(parse_datetime_ns("2023-02-29 00:00:00"), std::nullopt);
  EXPECT_EQ(parse_datetime_ns("2023-13-01 00:00:00"), std::nullopt);
  EXPECT_EQ(parse_datetime_ns("2023-11-16 24:00:00"), std::nullopt);
  EXPECT_EQ(parse_datetime_ns("2023-11-16 18:15:46.1234567890"), std::nullopt);
  EXPECT_EQ(parse_datetime_ns("2023-11-16 18:15:46x"), std::nullopt);
  EXPECT_EQ(parse_datetime_ns("2023/11/16 18:15:46"), std::nullopt);
  EXPECT_EQ(parse_datetime_ns("2200-12-31 23:59:59.999999999"), 7'289'654'399'999'999'999);
  EXPECT_EQ(parse_datetime_ns("7052-11-16 18:15:46"), std::nullopt);  // beyond int64 ns
  EXPECT_EQ(parse_datetime_ns("1969-12-31 23:59:59"), std::nullopt);
}

TEST(TraceRead, MalformedRowsNameTheLineAndKey) {
  EXPECT_EQ(parse_error("mooncake", R"({"timestamp": 0, "input_length": 5})"),
            "t:1: key `output_length`: missing (the answer's tokens)");
  EXPECT_EQ(parse_error("mooncake", R"({"timestamp": 0, "input_length": -5, "output_length": 1})"),
            "t:1: key `input_length`: must be >= 0 (got -5)");
  EXPECT_EQ(
      parse_error("mooncake", R"({"timestamp": 0, "input_length": 5, "output_length": 1, "x": 1})"),
      "t:1: key `x`: unknown key; a Mooncake trace line has timestamp, input_length, "
      "output_length and hash_ids");
  EXPECT_EQ(parse_error(
                "mooncake",
                R"({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, -2]})"),
            "t:1: key `hash_ids[1]`: must be an integer >= 0 (got an integer)");
  EXPECT_EQ(parse_error("mooncake",
                        "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n"
                        "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1}"),
            "t:2: key `timestamp`: goes back in time (9000000 ns < the previous row's 10000000 ns "
            "on the trace's clock); a trace is in time order");
  EXPECT_EQ(parse_error("mooncake", "[1]"), "t:1: expected a JSON object (got an array)");
  EXPECT_EQ(parse_error("azure", "TIMESTAMP,Context,GeneratedTokens\n"),
            "t:1: column `ContextTokens` not found in the header (have: Context, "
            "GeneratedTokens, TIMESTAMP)");
  EXPECT_EQ(parse_error("azure",
                        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-16 18:15:46.68,12,x\n"),
            "t:2: column `GeneratedTokens`: \"x\" is not an integer >= 0");
  EXPECT_EQ(parse_error("azure",
                        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-31 18:15:46,12,3\n"),
            "t:2: column `TIMESTAMP`: \"2023-11-31 18:15:46\" is not a date and time "
            "\"YYYY-MM-DD HH:MM:SS.fffffff\"");
  EXPECT_EQ(parse_error("azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n1,2\n"),
            "t:2: 2 fields, but the header has 3");
  EXPECT_EQ(parse_error("burstgpt",
                        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                        "-1,ChatGPT,1,1,2,API log\n"),
            "t:2: column `Timestamp`: \"-1\" is not a number of seconds from 0 to 9e9 (up to 9 "
            "decimals)");
  EXPECT_EQ(parse_error("burstgpt",
                        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                        "9223372036.999999999,ChatGPT,1,1,2,API log\n"),
            "t:2: column `Timestamp`: \"9223372036.999999999\" is not a number of seconds from 0 "
            "to 9e9 (up to 9 decimals)");
  EXPECT_EQ(parse_error("burstgpt",
                        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                        "1,ChatGPT,0,1,1,API log\n"),
            "t: no requests (1 rows read, 0 without output, 1 without input)");
  EXPECT_EQ(parse_error("cloud", ""),
            "t: unknown trace kind \"cloud\"; use mooncake, azure or "
            "burstgpt");
}

TEST(TracePrompts, HashIdsShareByteIdenticalPrefixesAndEveryPromptIsExact) {
  const TraceFile t = read_trace_file("mooncake", kTraces / "mooncake.jsonl");
  TraceReport report;
  const RequestStream s = build_trace_stream(t, completions(16), sim_count, &report);
  ASSERT_EQ(s.requests.size(), 5u);
  for (std::size_t i = 0; i < s.requests.size(); ++i) {
    const Request& r = s.requests[i];
    EXPECT_EQ(sim_count(r), t.records[i].input_tokens) << r.id;
    EXPECT_EQ(r.sampling.max_tokens, t.records[i].output_tokens);
    EXPECT_EQ(r.sampling.min_tokens, t.records[i].output_tokens);
    EXPECT_EQ(r.sampling.ignore_eos, true);
    EXPECT_EQ(r.tags.at("source"), "mooncake");
  }
  EXPECT_EQ(s.requests[0].id, "mooncake-1");
  EXPECT_EQ(s.requests[2].id, "mooncake-4");
  EXPECT_EQ(s.requests[0].at_ms, 0.0);
  EXPECT_EQ(s.requests[2].at_ms, 1500.0);
  EXPECT_EQ(s.requests[3].at_ms, 3052.5);
  // The sim counts one token per word: blocks are 16 words.
  const auto w0 = words(text_of(s.requests[0]));
  const auto w1 = words(text_of(s.requests[1]));
  ASSERT_EQ(w0.size(), 40u);
  ASSERT_EQ(w1.size(), 35u);
  EXPECT_EQ(std::vector(w0.begin(), w0.begin() + 32), std::vector(w1.begin(), w1.begin() + 32));
  EXPECT_NE(std::vector(w0.begin() + 32, w0.begin() + 35), std::vector(w1.begin() + 32, w1.end()));
  // Byte-identical: hash id 0 alone is the start of the prompts that begin with it; the
  // partial last block 3 of line 2 is the start of the full block 3 of line 6.
  const std::string& full = text_of(s.requests[0]);
  EXPECT_EQ(full.rfind(text_of(s.requests[2]), 0), 0u);
  EXPECT_EQ(text_of(s.requests[4]).rfind(text_of(s.requests[1]), 0), 0u);
  EXPECT_EQ(report.requests, 5u);
  EXPECT_EQ(report.exact_first, 5u);
  EXPECT_TRUE(report.adjusted.empty());
  EXPECT_EQ(report.distinct_blocks, 6u);
  EXPECT_EQ(report.vocabulary, 64u);
  EXPECT_EQ(report.calibration_calls, 129);
  EXPECT_EQ(report.count_calls, 5);
  EXPECT_EQ(report.achieved_tokens, 40 + 35 + 16 + 20 + 48);
  EXPECT_EQ(s.source, "mooncake:" + (kTraces / "mooncake.jsonl").string());
  EXPECT_EQ(s.sha256, stream_sha256(s.requests));
}

TEST(TracePrompts, ChatCountsTheTemplateInTheFirstBlock) {
  TraceFile t = read_trace_file("mooncake", kTraces / "mooncake.jsonl");
  for (TraceRecord& r : t.records) r.input_tokens *= 4;  // blocks of 64: above the template
  TracePromptOptions o = completions(64);
  o.api = Api::kChat;
  const RequestStream s = build_trace_stream(t, o, sim_count);
  for (std::size_t i = 0; i < s.requests.size(); ++i) {
    EXPECT_EQ(sim_count(s.requests[i]), t.records[i].input_tokens) << s.requests[i].id;
    ASSERT_EQ(s.requests[i].messages.size(), 1u);
  }
  // Block 0 holds 64 tokens with the template: its first word alone counts 20 with the sim's
  // template (19 for one user message), so 64 - 20 + 1 words.
  EXPECT_EQ(words(text_of(s.requests[2])).size(), 45u);
  // Too short for the template: an error naming the line, or skipped and listed.
  const TraceFile a = read_trace_file("azure", kTraces / "azure.csv");
  try {
    build_trace_stream(a, o, sim_count);
    FAIL() << "no error";
  } catch (const StreamError& e) {
    EXPECT_EQ(std::string(e.what()),
              (kTraces / "azure.csv").string() +
                  ":5: 1 tokens cannot start a prompt: one word alone already counts 20+ tokens "
                  "with this API (template, BOS); --api completions has the least, --skip-short "
                  "skips such rows (and counts them)");
  }
  o.skip_short = true;
  TraceReport report;
  const RequestStream kept = build_trace_stream(a, o, sim_count, &report);
  ASSERT_EQ(kept.requests.size(), 2u);
  EXPECT_EQ(report.skipped_short, std::vector<std::size_t>{5});
  EXPECT_EQ(report.requests, 2u);
  EXPECT_EQ(sim_count(kept.requests[1]), 96);
}

TEST(TracePrompts, RecordsWithoutHashIdsGetTextsOfTheirOwn) {
  const TraceFile t = read_trace_file("azure", kTraces / "azure.csv");
  const RequestStream s = build_trace_stream(t, completions(512), sim_count);
  ASSERT_EQ(s.requests.size(), 3u);
  EXPECT_EQ(s.requests[0].id, "azure-2");
  EXPECT_EQ(s.requests[1].at_ms, 4314.579);
  EXPECT_EQ(s.requests[2].at_ms, 14319.41);
  std::set<std::string> starts;
  for (std::size_t i = 0; i < s.requests.size(); ++i) {
    EXPECT_EQ(sim_count(s.requests[i]), t.records[i].input_tokens);
    starts.insert(text_of(s.requests[i]).substr(0, 1));
  }
  const auto a = words(text_of(s.requests[0]));
  const auto b = words(text_of(s.requests[1]));
  EXPECT_NE(std::vector(a.begin(), a.begin() + 3), std::vector(b.begin(), b.begin() + 3));
  const TraceFile g = read_trace_file("burstgpt", kTraces / "burstgpt.csv");
  const RequestStream bs = build_trace_stream(g, completions(512), sim_count);
  EXPECT_EQ(bs.requests[1].at_ms, 14250.0);
  EXPECT_EQ(bs.requests[1].tags.at("model"), "GPT-4");
  EXPECT_EQ(bs.requests[1].tags.at("source"), "burstgpt");
}

TEST(TracePrompts, SeededAndDeterministic) {
  const TraceFile t = read_trace_file("mooncake", kTraces / "mooncake.jsonl");
  const RequestStream a = build_trace_stream(t, completions(16), sim_count);
  const RequestStream b = build_trace_stream(t, completions(16), sim_count);
  EXPECT_EQ(a.sha256, b.sha256);
  // Built and counted on three threads: the same stream.
  TraceReport report;
  const RequestStream c =
      build_trace_stream(t, completions(16), sim_count, &report, {sim_count, sim_count, sim_count});
  EXPECT_EQ(c.requests, a.requests);
  EXPECT_EQ(report.exact_first, 5u);
  TracePromptOptions o = completions(16);
  o.seed = 2;
  EXPECT_NE(build_trace_stream(t, o, sim_count).sha256, a.sha256);
}

TEST(TracePrompts, ATokenizerThatMergesAcrossWordsGetsItsTailsRefitted) {
  // " the" and the space after it are one token here: a count is not the sum of its words.
  const auto merging = [](const Request& r) {
    const std::string& text = r.is_chat() ? r.messages.back().content : *r.prompt;
    std::int64_t merges = 0;
    for (std::size_t at = text.find(" the "); at != std::string::npos;
         at = text.find(" the ", at + 1)) {
      ++merges;
    }
    return sim_count(r) - merges;
  };
  const TraceFile t = read_trace_file("azure", kTraces / "azure.csv");
  TraceReport report;
  const RequestStream s = build_trace_stream(t, completions(512), merging, &report);
  for (std::size_t i = 0; i < s.requests.size(); ++i) {
    EXPECT_EQ(merging(s.requests[i]), t.records[i].input_tokens) << s.requests[i].id;
  }
  EXPECT_FALSE(report.adjusted.empty());
  EXPECT_EQ(report.exact_first + report.adjusted.size(), 3u);
  EXPECT_GT(report.count_calls, 3);
}

TEST(TracePrompts, TooManyTokensInAllIsAnError) {
  TraceFile t = read_trace_file("azure", kTraces / "azure.csv");
  for (TraceRecord& r : t.records) r.input_tokens = 9'000'000;
  for (int i = 0; i < 120; ++i) t.records.push_back(t.records.back());
  try {
    build_trace_stream(t, completions(512), sim_count);
    FAIL() << "no error";
  } catch (const StreamError& e) {
    EXPECT_EQ(std::string(e.what()),
              (kTraces / "azure.csv").string() +
                  ": 123 requests ask for 1107000000 prompt tokens in all, more than 1000000000 "
                  "(about 5 GB of text); import part of the trace with --limit");
  }
}

TEST(TracePrompts, HashIdsThatDoNotFitAreErrors) {
  const auto error = [](const std::string& text, std::int64_t block_tokens) {
    try {
      build_trace_stream(parse_trace_text("mooncake", text, "m"), completions(block_tokens),
                         sim_count);
    } catch (const StreamError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      error(R"({"timestamp": 0, "input_length": 40, "output_length": 1, "hash_ids": [0, 1]})", 16),
      "m:1: key `hash_ids`: 2 blocks of 16 tokens hold 17..32 tokens, but input_length is "
      "40 (is --block-tokens the trace's block size?)");
  EXPECT_EQ(
      error("{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [0, 1]}\n"
            "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2]}",
            16),
      "m:2: key `hash_ids[0]`: hash id 1 starts this prompt but is inside the prompt of line "
      "1; a block that starts a prompt carries the template and BOS");
}

}  // namespace
}  // namespace dyno::workload
