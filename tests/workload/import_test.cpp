// Importing streams: ShareGPT, tables (CSV / JSONL / JSON) and image QA sets.
#include "workload/import.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "stream_test_util.h"
#include "workload/csv.h"

namespace dyno::workload {
namespace {

namespace fs = std::filesystem;
using test::openssl_sha256;
using test::ScratchDir;
using test::tiny_png;

const fs::path kShareGpt = fs::path(DYNO_SOURCE_DIR) / "tests/workload/data/sharegpt_small.json";

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const StreamError& e) {
    return e.what();
  }
  return "<no error>";
}

std::vector<std::string> ids(const RequestStream& s) {
  std::vector<std::string> out;
  for (const Request& r : s.requests) out.push_back(r.id);
  return out;
}

TEST(ShareGpt, Defaults) {
  const RequestStream s = stream_from_sharegpt(kShareGpt, {});
  // Element 2 has no human turn and is skipped; element 1 has no id, element 4 a numeric one.
  EXPECT_EQ(ids(s), (std::vector<std::string>{"sharegpt-abc", "sharegpt-1", "sharegpt-short",
                                              "sharegpt-42"}));
  EXPECT_EQ(s.source, "sharegpt:" + kShareGpt.string());
  EXPECT_EQ(s.sha256, stream_sha256(s.requests));
  const Request& first = s.requests[0];
  ASSERT_EQ(first.messages.size(), 1u);
  EXPECT_EQ(first.messages[0], (Message{"user", "What is the capital of France?"}));
  EXPECT_EQ(first.sampling.max_tokens, 256);
  const Request& second = s.requests[1];
  ASSERT_EQ(second.messages.size(), 2u);
  EXPECT_EQ(second.messages[0], (Message{"system", "You are terse."}));
  EXPECT_EQ(second.messages[1], (Message{"user", "Name three primes."}));
}

TEST(ShareGpt, OutputFromReferenceFilterShuffleLimit) {
  ShareGptOptions o;
  o.output_from_reference = true;
  const RequestStream s = stream_from_sharegpt(kShareGpt, o);
  // "short" has no reply and is skipped. Replies: 6 words → 8, 3 words → 4, 14 words → 18.
  EXPECT_EQ(ids(s), (std::vector<std::string>{"sharegpt-abc", "sharegpt-1", "sharegpt-42"}));
  EXPECT_EQ(s.requests[0].sampling.max_tokens, 8);
  EXPECT_EQ(s.requests[1].sampling.max_tokens, 4);
  EXPECT_EQ(s.requests[2].sampling.max_tokens, 18);

  ShareGptOptions f;
  f.min_prompt_chars = 20;
  f.max_tokens = 32;
  const RequestStream filtered = stream_from_sharegpt(kShareGpt, f);
  EXPECT_EQ(ids(filtered), (std::vector<std::string>{"sharegpt-abc", "sharegpt-42"}));
  EXPECT_EQ(filtered.requests[1].sampling.max_tokens, 32);

  ShareGptOptions sh;
  sh.shuffle = true;
  sh.seed = 7;
  const RequestStream a = stream_from_sharegpt(kShareGpt, sh);
  const RequestStream b = stream_from_sharegpt(kShareGpt, sh);
  EXPECT_EQ(a.requests, b.requests);  // seeded: reproducible
  EXPECT_EQ(a.sha256, b.sha256);
  std::vector<std::string> sorted = ids(a);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"sharegpt-1", "sharegpt-42", "sharegpt-abc",
                                              "sharegpt-short"}));
  bool some_seed_reorders = false;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    sh.seed = seed;
    some_seed_reorders = some_seed_reorders || ids(stream_from_sharegpt(kShareGpt, sh)) !=
                                                   ids(stream_from_sharegpt(kShareGpt, {}));
  }
  EXPECT_TRUE(some_seed_reorders);
  sh.seed = 7;
  sh.limit = 2;
  const RequestStream limited = stream_from_sharegpt(kShareGpt, sh);
  EXPECT_EQ(ids(limited), (std::vector<std::string>{ids(a)[0], ids(a)[1]}));

  ShareGptOptions c;
  c.api = Api::kCompletions;
  const RequestStream comp = stream_from_sharegpt(kShareGpt, c);
  EXPECT_EQ(comp.requests[1].prompt, "You are terse.\n\nName three primes.");
}

TEST(ShareGpt, Errors) {
  ScratchDir dir;
  const auto err = [&](const std::string& text) {
    const fs::path p = dir.write("sg.json", text);
    return error_of([&] { stream_from_sharegpt(p, {}); });
  };
  const std::string name = (dir.path() / "sg.json").string();
  EXPECT_EQ(err(R"([{"conversations":[{"from":"human","value":"a"}]},{"id":"x"}])"),
            name + ": element 1: key `conversations` missing or not an array");
  EXPECT_EQ(err(R"([{"conversations":[{"from":"human","value":3}]}])"),
            name + ": element 0: key `conversations[0].value` missing or not a string");
  EXPECT_EQ(err(R"([{"conversations":[{"from":"robot","value":"a"}]}])"),
            name +
                ": element 0: key `conversations[0].from`: unknown role \"robot\"; expected "
                "human, gpt or system");
  EXPECT_EQ(err(R"([{"id":"d","conversations":[{"from":"human","value":"a"}]},)"
                R"({"id":"d","conversations":[{"from":"human","value":"b"}]}])"),
            name + ": element 1: duplicate id \"sharegpt-d\" (first at " + name +
                ": element 0); ids must be unique within a stream");
  EXPECT_EQ(err(R"({"conversations":[]})"),
            name + ": expected a JSON array of {id, conversations} (ShareGPT)");
  EXPECT_EQ(err("[]"), name + ": no requests imported (empty, or all records filtered)");
  EXPECT_EQ(err("[1]"), name + ": element 0: expected an object {id, conversations}");
}

TEST(Table, CsvQuoting) {
  ScratchDir dir;
  const fs::path p = dir.write("t.csv",
                               "\xef\xbb\xbfid,question,answer,lang\r\n"
                               "q1,\"Hello, world\",1,en\r\n"
                               "q2,\"She said \"\"hi\"\"\nthen left\",\"2\",fr\n"
                               "\n"
                               "q3,,3,\"\"\n"
                               "q4,\"last, \"\"one\"\"\",4,de");
  TableMapping m;
  m.id = "id";
  m.prompt = "question";
  m.expected = "answer";
  m.scorer = "relaxed_numeric";
  m.tags = {"lang"};
  m.max_tokens = 16;
  const std::string name = p.string();
  // q3 has an empty prompt: an error naming its line (line 6: the quoted newline counts).
  EXPECT_EQ(error_of([&] { stream_from_table(p, m); }),
            name + ":6: column `question` (prompt) is empty");
  const fs::path fixed = dir.write("t.csv",
                                   "\xef\xbb\xbfid,question,answer,lang\r\n"
                                   "q1,\"Hello, world\",1,en\r\n"
                                   "q2,\"She said \"\"hi\"\"\nthen left\",\"2\",fr\n"
                                   "\n"
                                   "q4,\"last, \"\"one\"\"\",4,\"\"");
  const RequestStream s = stream_from_table(fixed, m);
  EXPECT_EQ(s.source, "table:" + name);
  ASSERT_EQ(s.requests.size(), 3u);
  EXPECT_EQ(s.requests[0].messages[0].content, "Hello, world");
  EXPECT_EQ(s.requests[1].messages[0].content, "She said \"hi\"\nthen left");
  EXPECT_EQ(s.requests[2].messages[0].content, "last, \"one\"");
  EXPECT_EQ(s.requests[2].tags.at("lang"), "");
  EXPECT_EQ(s.requests[1].tags.at("lang"), "fr");
  EXPECT_EQ(s.requests[1].expected, (Expectation{"2", "relaxed_numeric", "", {}}));
  EXPECT_EQ(s.requests[0].sampling.max_tokens, 16);
  EXPECT_EQ(s.sha256, stream_sha256(s.requests));

  const auto err = [&](const std::string& text) {
    const fs::path bad = dir.write("bad.csv", text);
    return error_of([&] { stream_from_table(bad, m); });
  };
  const std::string bad = (dir.path() / "bad.csv").string();
  EXPECT_EQ(err("id,question,answer,lang\nq1,\"open\n"),
            bad + ":2: quoted field is not closed before the end of the file");
  EXPECT_EQ(err("id,question,answer,lang\nq1,\"a\"b,1,en\n"),
            bad +
                ":2: text after a closing quote; a quoted field must end at ',' or the end of "
                "the line");
  EXPECT_EQ(err("id,question,answer,lang\nq1,a\"b,1,en\n"),
            bad +
                ":2: stray '\"' inside an unquoted field; quote the whole field and double "
                "inner quotes");
  EXPECT_EQ(err("id,question,answer,lang\nq1,a,1\n"), bad + ":2: 3 fields, but the header has 4");
  EXPECT_EQ(
      err("id,question,answer,lang\nq1,a,1,en\nq1,b,2,en\n"),
      bad + ":3: duplicate id \"q1\" (first at " + bad + ":2); ids must be unique within a stream");
}

TEST(Table, JsonlAndMappingErrors) {
  ScratchDir dir;
  dir.write("img/c.png", tiny_png());
  const fs::path p = dir.write(
      "t.jsonl", R"({"text":"Describe.","n":12,"pic":"img/c.png","sys":"Be brief","gold":7})"
                 "\n\n"
                 R"({"text":"Count.","n":"3","pic":"","sys":"","gold":"x"})"
                 "\n");
  TableMapping m;
  m.prompt = "text";
  m.max_tokens_column = "n";
  m.image = "pic";
  m.system = "sys";
  m.expected = "gold";
  const RequestStream s = stream_from_table(p, m);
  EXPECT_EQ(ids(s), (std::vector<std::string>{"row-1", "row-2"}));
  const Request& r1 = s.requests[0];
  ASSERT_EQ(r1.messages.size(), 2u);
  EXPECT_EQ(r1.messages[0], (Message{"system", "Be brief"}));
  ASSERT_EQ(r1.messages[1].parts.size(), 2u);
  EXPECT_EQ(r1.messages[1].parts[0].image_sha256, openssl_sha256(tiny_png()));
  EXPECT_EQ(r1.messages[1].parts[1].text, "Describe.");
  EXPECT_EQ(r1.sampling.max_tokens, 12);
  EXPECT_EQ(r1.expected->answer, "7");
  EXPECT_EQ(r1.expected->scorer, "exact");
  const Request& r2 = s.requests[1];
  EXPECT_EQ(r2.messages, (std::vector<Message>{{"user", "Count."}}));  // no system, no image
  EXPECT_EQ(r2.sampling.max_tokens, 3);

  const std::string name = p.string();
  TableMapping missing = m;
  missing.prompt = "question";
  EXPECT_EQ(error_of([&] { stream_from_table(p, missing); }),
            name + ":1: column `question` (prompt) not found; available: text, n, pic, sys, gold");
  TableMapping bad_n;
  bad_n.prompt = "text";
  bad_n.max_tokens_column = "sys";
  EXPECT_EQ(error_of([&] { stream_from_table(p, bad_n); }),
            name + ":1: column `sys`: \"Be brief\" is not an integer >= 1 (max_tokens)");
  TableMapping bad_scorer = m;
  bad_scorer.scorer = "fuzzy";
  EXPECT_EQ(error_of([&] { stream_from_table(p, bad_scorer); }),
            name +
                ":1: key `scorer`: unknown scorer \"fuzzy\"; use exact, normalized, "
                "relaxed_numeric, regex or choice");
  TableMapping comp;
  comp.prompt = "text";
  comp.image = "pic";
  comp.api = Api::kCompletions;
  EXPECT_EQ(error_of([&] { stream_from_table(p, comp); }),
            name +
                ": the completions API takes a prompt only; image and system columns need "
                "the chat API");
  comp.image.clear();
  const RequestStream cs = stream_from_table(p, comp);
  EXPECT_EQ(cs.requests[0].prompt, "Describe.");

  const fs::path csv = dir.write("h.csv", "a,b\n1,2\n");
  TableMapping csv_map;
  csv_map.prompt = "a";
  csv_map.tags = {"c"};
  EXPECT_EQ(error_of([&] { stream_from_table(csv, csv_map); }),
            csv.string() + ":2: column `c` (tag) not found; available: a, b");
  const fs::path nested = dir.write("n.jsonl", R"({"prompt":["x"]})");
  EXPECT_EQ(error_of([&] { stream_from_table(nested, {}); }),
            nested.string() + ":1: column `prompt` holds an array; a string or number is needed");
}

TEST(ImageQa, ChartQaLayoutEndToEnd) {
  ScratchDir dir;
  std::string second = tiny_png();
  second[40] = static_cast<char>(second[40] ^ 1);
  dir.write("test/png/a.png", tiny_png());
  dir.write("test/png/b.png", second);
  dir.write("test/test_human.json",
            R"([{"imgname":"a.png","query":"What is the peak?","label":"42"},)"
            R"({"imgname":"b.png","query":"Which year?","label":["2019"]}])");
  ImageQaOptions o;
  o.image_dir = "png";
  o.instruction = "Answer with a single word or number.";
  o.max_tokens = 32;
  const RequestStream s = stream_from_image_qa(dir.path() / "test", o);  // the directory's one file
  EXPECT_EQ(s.source, "image-qa:" + (dir.path() / "test/test_human.json").string());
  EXPECT_EQ(ids(s), (std::vector<std::string>{"test_human-0", "test_human-1"}));
  const Request& r = s.requests[0];
  ASSERT_EQ(r.messages.size(), 1u);
  ASSERT_EQ(r.messages[0].parts.size(), 2u);
  EXPECT_EQ(r.messages[0].parts[0].kind, ContentPart::Kind::kImage);
  EXPECT_EQ(r.messages[0].parts[0].image_url.rfind("data:image/png;base64,", 0), 0u);
  EXPECT_EQ(r.messages[0].parts[0].image_sha256, openssl_sha256(tiny_png()));
  EXPECT_EQ(r.messages[0].parts[1].text, "What is the peak? Answer with a single word or number.");
  EXPECT_EQ(r.expected, (Expectation{"42", "relaxed_numeric", "", {}}));
  EXPECT_EQ(r.sampling.max_tokens, 32);
  EXPECT_EQ(s.requests[1].expected->answer, "2019");
  EXPECT_EQ(s.requests[1].messages[0].parts[0].image_sha256, openssl_sha256(second));
  EXPECT_EQ(s.sha256, stream_sha256(s.requests));

  // Written out, the stream is self-contained and reads back to the same hash.
  write_stream_file(dir.path() / "qa.jsonl", s);
  const RequestStream back = read_stream_file(dir.path() / "qa.jsonl");
  EXPECT_EQ(back.requests, s.requests);
  EXPECT_EQ(back.sha256, s.sha256);

  // Without image_dir the images are looked for next to the file: the error names the path.
  ImageQaOptions plain;
  EXPECT_EQ(error_of([&] { stream_from_image_qa(dir.path() / "test", plain); })
                .rfind((dir.path() / "test/test_human.json").string() +
                           ": element 0: key `imgname`: cannot open image file " +
                           (dir.path() / "test/a.png").string(),
                       0),
            0u);
  // Two data files: name one.
  dir.write("test/test_augmented.json", "[]");
  EXPECT_EQ(error_of([&] { stream_from_image_qa(dir.path() / "test", o); }),
            (dir.path() / "test").string() +
                ": expected exactly one .jsonl, .csv or .json file, found 2 (test_augmented.json, "
                "test_human.json); name the file");
}

TEST(ImageQa, CsvWithCustomKeys) {
  ScratchDir dir;
  dir.write("p.png", tiny_png());
  const fs::path csv = dir.write("qa.csv", "file,q,a\np.png,\"How many, total?\",5\n");
  ImageQaOptions o;
  o.image_key = "file";
  o.question_key = "q";
  o.answer_key = "a";
  o.scorer = "exact";
  const RequestStream s = stream_from_image_qa(csv, o);
  ASSERT_EQ(s.requests.size(), 1u);
  EXPECT_EQ(s.requests[0].messages[0].parts[1].text, "How many, total?");
  EXPECT_EQ(s.requests[0].expected, (Expectation{"5", "exact", "", {}}));
  o.answer_key = "answer";
  EXPECT_EQ(error_of([&] { stream_from_image_qa(csv, o); }),
            csv.string() + ":2: column `answer` (answer) not found; available: file, q, a");
  const fs::path jsonl = dir.write("qa.jsonl", R"({"image":"p.png","question":"Q"})");
  EXPECT_EQ(error_of([&] { stream_from_image_qa(jsonl, {}); }),
            jsonl.string() + ":1: column `answer` (answer) not found; available: image, question");
}

TEST(CsvWriter, TextIsGuardedAndQuotedNumbersAreNot) {
  EXPECT_EQ(CsvCell().field(), "");
  EXPECT_EQ(CsvCell::text("plain").field(), "plain");
  EXPECT_EQ(CsvCell::text("=1+1").field(), "'=1+1");
  EXPECT_EQ(CsvCell::text("+1").field(), "'+1");
  EXPECT_EQ(CsvCell::text("-x").field(), "'-x");
  EXPECT_EQ(CsvCell::text("@SUM(A1)").field(), "'@SUM(A1)");
  EXPECT_EQ(CsvCell::text("\tx").field(), "'\tx");
  EXPECT_EQ(CsvCell::text("\rx").field(), "\"'\rx\"");
  EXPECT_EQ(CsvCell::text("a,b").field(), "\"a,b\"");
  EXPECT_EQ(CsvCell::text(" padded").field(), "\" padded\"");
  EXPECT_EQ(CsvCell::text("=HYPERLINK(\"x\")").field(), "\"'=HYPERLINK(\"\"x\"\")\"");
  EXPECT_EQ(CsvCell::number(-1.5).field(), "-1.5");  // a number stays a number
  EXPECT_EQ(CsvCell::number(24.0).field(), "24.0");
  EXPECT_EQ(CsvCell::number(std::nan("")).field(), "");
  EXPECT_EQ(CsvCell::number(std::optional<double>()).field(), "");
  EXPECT_EQ(CsvCell::integer(std::int64_t{-3}).field(), "-3");
  const std::string row = csv_row({CsvCell::text("=a,b"), CsvCell::number(0.1), CsvCell()});
  EXPECT_EQ(row, "\"'=a,b\",0.1,\r\n");
  const auto back =
      parse_csv(row, [](std::size_t, const std::string& what) { throw std::runtime_error(what); });
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].second, (std::vector<std::string>{"'=a,b", "0.1", ""}));
}

}  // namespace
}  // namespace dyno::workload
