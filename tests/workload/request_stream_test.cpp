#include "workload/request_stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "error/error.h"
#include "temp_dir.h"
#include "workload/extra_body.h"
#include "workload/scorer_spec.h"

namespace dyno::workload {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() { path_ = dyno::testing::make_temp_dir("dyno-workload-test"); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Request full_chat_request() {
  Request r;
  r.id = "r-1";
  r.messages = {{"system", "Be brief."}, {"user", "Say \"hi\"\n\ttwice \xc3\xa9"}};
  r.sampling.max_tokens = 64;
  r.sampling.temperature = 0.7;
  r.sampling.top_p = 0.95;
  r.sampling.seed = -3;
  r.sampling.stop = {"\n\n", "END"};
  r.sampling.ignore_eos = false;
  r.sampling.min_tokens = 0;
  r.tags = {{"lang", "en"}, {"case", "7"}};
  return r;
}

Request completion_request() {
  Request r;
  r.id = "c-1";
  r.prompt = "Once upon a time";
  r.sampling.max_tokens = 16;
  r.sampling.temperature = 0.0;
  return r;
}

std::string error_of(const std::string& line, const std::string& where = "f.jsonl:3") {
  try {
    parse_request_line(line, where);
  } catch (const StreamError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string file_error(const TempDir& dir, const std::string& text) {
  const fs::path p = dir.write("bad.jsonl", text);
  try {
    read_stream_file(p);
  } catch (const StreamError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(RequestStream, CanonicalLineKeyOrder) {
  EXPECT_EQ(to_json_line(full_chat_request()),
            R"({"id":"r-1","messages":[{"role":"system","content":"Be brief."},)"
            R"({"role":"user","content":"Say \"hi\"\n\ttwice )"
            "\xc3\xa9"
            R"("}],"max_tokens":64,"temperature":0.7,"top_p":0.95,"seed":-3,)"
            R"("stop":["\n\n","END"],"ignore_eos":false,"min_tokens":0,)"
            R"("tags":{"case":"7","lang":"en"}})");
  EXPECT_EQ(to_json_line(completion_request()),
            R"({"id":"c-1","prompt":"Once upon a time","max_tokens":16,"temperature":0.0})");
}

TEST(RequestStream, LineRoundTrip) {
  for (const Request& r : {full_chat_request(), completion_request()}) {
    EXPECT_EQ(parse_request_line(to_json_line(r), "x"), r);
  }
  const Request single_stop = parse_request_line(R"({"id":"a","prompt":"p","stop":"###"})", "x");
  EXPECT_EQ(single_stop.sampling.stop, std::vector<std::string>{"###"});
  EXPECT_EQ(to_json_line(single_stop), R"({"id":"a","prompt":"p","stop":["###"]})");
  EXPECT_TRUE(
      parse_request_line(R"({"id":"a","messages":[{"role":"user","content":""}]})", "x").is_chat());
  EXPECT_FALSE(parse_request_line(R"({"id":"a","prompt":""})", "x").is_chat());
}

TEST(RequestStream, ExtraBodyIsTheRequestsAndEntersTheHash) {
  const std::string line =
      R"({"id":"a","prompt":"p","extra_body":{"cache_prompt":false,"n":{"x":[1,2.5]}}})";
  const Request r = parse_request_line(line, "x");
  EXPECT_EQ(r.extra_body, R"({"cache_prompt":false,"n":{"x":[1,2.5]}})");
  EXPECT_EQ(to_json_line(r), line);
  EXPECT_EQ(parse_request_line(to_json_line(r), "x"), r);
  Request plain = r;
  plain.extra_body.clear();
  EXPECT_EQ(to_json_line(plain), R"({"id":"a","prompt":"p"})");  // older hashes unchanged
  EXPECT_NE(stream_sha256({r}), stream_sha256({plain}));
  // An empty object is no field at all.
  EXPECT_EQ(parse_request_line(R"({"id":"a","prompt":"p","extra_body":{}})", "x"), plain);
  try {
    parse_request_line(R"({"id":"a","prompt":"p","extra_body":[1]})", "f.jsonl:2");
    ADD_FAILURE() << "an array was taken for extra_body";
  } catch (const StreamError& e) {
    EXPECT_EQ(std::string(e.what()),
              "f.jsonl:2: key `extra_body`: must be a JSON object of request fields (got an "
              "array)");
  }
}

TEST(ExtraBody, TheFlagsFieldsFillWhatARequestLeavesUnset) {
  EXPECT_THROW(parse_extra_body("[1]"), UsageError);
  EXPECT_THROW(parse_extra_body("{nope"), UsageError);
  EXPECT_THROW(parse_extra_body("\"text\""), UsageError);
  const boost::json::object flag = parse_extra_body(R"({"cache_prompt":false,"top_k":40})");
  std::vector<Request> rs(2);
  rs[0].id = "a";
  rs[0].prompt = "p";
  rs[1] = rs[0];
  rs[1].id = "b";
  rs[1].extra_body = R"({"top_k":1,"mirostat":2})";
  merge_extra_body(rs, flag);
  EXPECT_EQ(rs[0].extra_body, R"({"cache_prompt":false,"top_k":40})");
  EXPECT_EQ(rs[1].extra_body, R"({"cache_prompt":false,"top_k":1,"mirostat":2})");
  EXPECT_EQ(extra_body_keys(rs[1]),
            (std::vector<std::string>{"cache_prompt", "top_k", "mirostat"}));
}

TEST(RequestStream, NumbersAreReadCorrectlyRounded) {
  // Boost.JSON 1.81 alone reads these to a neighbouring double, so the shortest form written
  // back would not read back equal (found by the agent_trajectory fuzz target).
  for (const std::string number :
       {"402222222222222222222222222222222222222222222222222.222222222", "0.12345678901234567",
        "4.0222222222222222e50", "1e-300", "0.7"}) {
    const Request r =
        parse_request_line(R"({"id":"a","prompt":"p","temperature":)" + number + "}", "x");
    EXPECT_EQ(*r.sampling.temperature, std::stod(number)) << number;
    EXPECT_EQ(parse_request_line(to_json_line(r), "x"), r) << number;
    // Numbers inside kept JSON (a tool specification) too.
    const Request t =
        parse_request_line(R"({"id":"a","session":"s","turn":0,"tools":[{"type":"function","x":)" +
                               number + R"(}],"messages":[{"role":"user","content":"u"}]})",
                           "x");
    EXPECT_EQ(parse_request_line(to_json_line(t), "x"), t) << number;
  }
}

TEST(RequestStream, FileRoundTrip) {
  TempDir dir;
  RequestStream stream;
  stream.requests = {full_chat_request(), completion_request()};
  const fs::path p = dir.path() / "s.jsonl";
  write_stream_file(p, stream);
  const RequestStream back = read_stream_file(p);
  EXPECT_EQ(back.requests, stream.requests);
  EXPECT_EQ(back.source, p.string());
  EXPECT_EQ(back.sha256, stream_sha256(stream.requests));
  EXPECT_EQ(back.sha256.size(), 64u);

  std::ifstream in(p, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            to_json_line(stream.requests[0]) + "\n" + to_json_line(stream.requests[1]) + "\n");
}

TEST(RequestStream, TextParsesAsTheFileDoes) {
  // parse_stream_text is read_stream_file without the file: same requests, hash, line
  // numbers (blank and CRLF lines included) and messages, named by the given source.
  const std::string text =
      "\n" + to_json_line(full_chat_request()) + "\r\n  \n" + to_json_line(completion_request());
  TempDir dir;
  const fs::path p = dir.write("s.jsonl", text);
  const RequestStream from_file = read_stream_file(p);
  const RequestStream from_text = parse_stream_text(text, "mem");
  EXPECT_EQ(from_text.requests, from_file.requests);
  EXPECT_EQ(from_text.sha256, from_file.sha256);
  EXPECT_EQ(from_text.source, "mem");
  try {
    parse_stream_text("\n\r\n{\"id\":\"a\",\"prompt\":1}", "mem");
    ADD_FAILURE() << "no error";
  } catch (const StreamError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("mem:3: key `prompt`", 0), 0u) << e.what();
  }
  EXPECT_THROW(parse_stream_text(" \n\t\n", "mem"), StreamError);
}

TEST(RequestStream, HashOfKnownBytes) {
  // sha256 of `{"id":"a","prompt":"p"}\n` (computed with sha256sum).
  Request r;
  r.id = "a";
  r.prompt = "p";
  EXPECT_EQ(stream_sha256({r}), "f2e73b4105699cc704e5edfe027500126fe8c7278f8c56d22f4a7d4d860224da");
}

TEST(RequestStream, HashIgnoresFormatting) {
  TempDir dir;
  const fs::path a = dir.write(
      "a.jsonl",
      R"({"id":"x","prompt":"hello","max_tokens":5,"temperature":0.5,"tags":{"b":"2","a":"1"}})"
      "\n"
      R"({"id":"y","messages":[{"role":"user","content":"hi"}],"stop":"s"})"
      "\n");
  const fs::path b =
      dir.write("b.jsonl",
                "\n  "
                R"({ "tags" : { "a" : "1", "b" : "2" }, "temperature": 5e-1, "max_tokens": 5,)"
                R"( "prompt": "hello", "id": "x" })"
                "\r\n\n"
                R"({"stop":["s"],"messages":[{"content":"hi","role":"user"}],"id":"y"})");
  EXPECT_EQ(read_stream_file(a).sha256, read_stream_file(b).sha256);
}

TEST(RequestStream, HashChangesWithAnyByte) {
  const Request base = full_chat_request();
  const std::string h = stream_sha256({base});
  Request r = base;
  r.messages[1].content.back() = 'x';
  EXPECT_NE(stream_sha256({r}), h);
  r = base;
  r.id = "r-2";
  EXPECT_NE(stream_sha256({r}), h);
  r = base;
  r.sampling.max_tokens = 65;
  EXPECT_NE(stream_sha256({r}), h);
  r = base;
  r.sampling.temperature = 0.70000000000000018;  // next double
  EXPECT_NE(stream_sha256({r}), h);
  r = base;
  r.tags["case"] = "8";
  EXPECT_NE(stream_sha256({r}), h);
  // Order of requests matters too.
  EXPECT_NE(stream_sha256({base, completion_request()}),
            stream_sha256({completion_request(), base}));
}

TEST(RequestStream, LineErrorsNameWhereAndKey) {
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","colour":1})"),
            "f.jsonl:3: key `colour`: unknown key; allowed: id, session, turn, think_ms, "
            "tool_calls, tools, at_ms, messages, prompt, max_tokens, temperature, top_p, seed, "
            "stop, ignore_eos, min_tokens, tags, expected, scorer, extra_body");
  EXPECT_EQ(error_of(R"({"prompt":"p"})"),
            "f.jsonl:3: key `id`: missing; every request needs a unique string id");
  EXPECT_EQ(error_of(R"({"id":7,"prompt":"p"})"),
            "f.jsonl:3: key `id`: must be a string (got an integer)");
  EXPECT_EQ(error_of(R"({"id":"a"})"),
            "f.jsonl:3: key `messages`: missing; give `messages` (chat) or `prompt` "
            "(completions)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","messages":[{"role":"user","content":"c"}]})"),
            "f.jsonl:3: key `prompt`: given together with `messages`; use `messages` (chat) or "
            "`prompt` (completions), not both");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","max_tokens":0})"),
            "f.jsonl:3: key `max_tokens`: must be >= 1 (got 0)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","max_tokens":2.5})"),
            "f.jsonl:3: key `max_tokens`: must be an integer (got a non-integer number)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","temperature":"hot"})"),
            "f.jsonl:3: key `temperature`: must be a number (got a string)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","temperature":-0.1})"),
            "f.jsonl:3: key `temperature`: must be a finite number >= 0");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","top_p":0})"),
            "f.jsonl:3: key `top_p`: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","top_p":1.5})"),
            "f.jsonl:3: key `top_p`: must be in (0, 1]");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","seed":true})"),
            "f.jsonl:3: key `seed`: must be an integer (got a boolean)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","stop":["x",3]})"),
            "f.jsonl:3: key `stop[1]`: must be a string (got an integer)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","stop":5})"),
            "f.jsonl:3: key `stop`: must be a string or an array of strings (got an integer)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","ignore_eos":1})"),
            "f.jsonl:3: key `ignore_eos`: must be true or false (got an integer)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","min_tokens":-1})"),
            "f.jsonl:3: key `min_tokens`: must be >= 0 (got -1)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","tags":{"k":1}})"),
            "f.jsonl:3: key `tags.k`: must be a string (got an integer)");
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p","tags":[]})"),
            "f.jsonl:3: key `tags`: must be an object of string values (got an array)");
  EXPECT_EQ(error_of(R"({"id":"a","messages":[]})"),
            "f.jsonl:3: key `messages`: is empty; give at least one message");
  EXPECT_EQ(error_of(R"({"id":"a","messages":{"role":"user"}})"),
            "f.jsonl:3: key `messages`: must be an array of {role, content} (got an object)");
  EXPECT_EQ(error_of(R"({"id":"a","messages":[{"role":"user","content":"c","name":"n"}]})"),
            "f.jsonl:3: key `messages[0].name`: unknown key; a message has `role`, `content`, and "
            "`tool_calls` (assistant) or `tool_call_id` (tool)");
  EXPECT_EQ(error_of(R"({"id":"a","messages":[{"role":"user"}]})"),
            "f.jsonl:3: key `messages[0].content`: missing; every message needs content");
  EXPECT_EQ(error_of(R"({"id":"a","messages":[{"role":"u","content":"c"},{"content":"c"}]})"),
            "f.jsonl:3: key `messages[1].role`: missing; every message needs a role");
  EXPECT_EQ(error_of(R"({"id":"a","messages":[{"role":"user","content":["x"]}]})"),
            "f.jsonl:3: key `messages[0].content[0]`: must be an object {type, ...} (got a "
            "string)");
}

TEST(RequestStream, SyntaxErrors) {
  EXPECT_EQ(error_of(R"({"id":"a",)").rfind("f.jsonl:3: invalid JSON (", 0), 0u);
  EXPECT_EQ(error_of(R"(["id"])"),
            "f.jsonl:3: expected a JSON object (got an array); each line must be one request "
            "object");
}

TEST(RequestStream, FileErrorsCarryFileAndLine) {
  TempDir dir;
  const std::string name = (dir.path() / "bad.jsonl").string();
  EXPECT_EQ(file_error(dir, "{\"id\":\"a\",\"prompt\":\"p\"}\n\n{\"id\":\"b\",\"prompt\":1}\n"),
            name + ":3: key `prompt`: must be a string (got an integer)");
  EXPECT_EQ(file_error(dir,
                       "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"b\",\"prompt\":\"p\"}\n"
                       "{\"id\":\"a\",\"prompt\":\"q\"}\n"),
            name +
                ":3: key `id`: duplicate id \"a\" (first at line 1); ids must be unique "
                "within a stream");
  EXPECT_EQ(file_error(dir, "{\"id\":\"a\",\"prompt\":\"p\"}\nnot json\n")
                .rfind(name + ":2: invalid JSON (", 0),
            0u);
  EXPECT_EQ(file_error(dir, "\n  \n"),
            name + ": no requests; the file must hold one JSON object per line");
  EXPECT_THROW(read_stream_file(dir.path() / "missing.jsonl"), StreamError);
}

TEST(RequestStream, ADirectoryIsNamedAsOneNotAsAReadError) {
  TempDir dir;
  fs::create_directories(dir.path() / "streams");
  try {
    read_stream_file(dir.path() / "streams");
    FAIL() << "read a directory as a stream";
  } catch (const StreamError& e) {
    EXPECT_EQ(std::string(e.what()), (dir.path() / "streams").string() +
                                         " is a directory, not a request stream; give the "
                                         ".jsonl file in it (one request per line)");
  }
}

TEST(ScorerSpec, ANameOrAStreamsScorerObject) {
  EXPECT_EQ(parse_scorer_spec("normalized", "--scorer"), (Expectation{"", "normalized", "", {}}));
  EXPECT_EQ(parse_scorer_spec("regex", "--scorer"), (Expectation{"", "regex", "", {}}));
  EXPECT_EQ(parse_scorer_spec(R"j({"kind":"regex","pattern":"answer: (\\d+)"})j", "--scorer"),
            (Expectation{"", "regex", "answer: (\\d+)", {}}));
  EXPECT_EQ(parse_scorer_spec(R"({"kind":"choice","choices":["A","B"]})", "--scorer"),
            (Expectation{"", "choice", "", {"A", "B"}}));
  // The JSON form is the stream's: a name, or an object for regex and choice.
  EXPECT_EQ(boost::json::serialize(scorer_to_json({"x", "exact", "", {}})), R"("exact")");
  EXPECT_EQ(boost::json::serialize(scorer_to_json({"A", "choice", "", {"A", "B"}})),
            R"({"kind":"choice","choices":["A","B"]})");
}

TEST(ScorerSpec, AnUnusableScorerIsNamedWithWhatIsWrong) {
  const auto error = [](const std::string& text) -> std::string {
    try {
      parse_scorer_spec(text, "--scorer");
    } catch (const StreamError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error("fuzzy"),
            "--scorer: unknown scorer \"fuzzy\"; the known scorers are exact, normalized, "
            "relaxed_numeric, regex and choice");
  EXPECT_NE(error(R"({"kind":"fuzzy"})").find("unknown scorer \"fuzzy\""), std::string::npos);
  EXPECT_NE(error("{kind").find("is not valid JSON"), std::string::npos);
  EXPECT_NE(error(R"({"pattern":"x"})").find("`scorer.kind`: missing"), std::string::npos);
  EXPECT_NE(error(R"({"kind":"regex","pattern":"(x"})").find("does not compile"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"exact","pattern":"x"})").find("is only for scorer regex"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"exact","choices":["A"]})").find("is only for scorer choice"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"choice","choices":["A","A"]})").find("is given twice"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"choice","choices":[""]})").find("non-empty"), std::string::npos);
  EXPECT_NE(error(R"({"kind":"regex","extra":1})").find("unknown key"), std::string::npos);
}

}  // namespace
}  // namespace dyno::workload
