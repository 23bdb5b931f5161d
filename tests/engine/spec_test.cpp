// TOML reading and engine spec validation: presets, launch lines, secrets, clear errors.
#include "engine/spec.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/toml.h"

namespace json = boost::json;
using dyno::engine::EngineSpec;
using dyno::engine::parse_spec;
using dyno::engine::parse_toml;
using dyno::engine::SpecError;
using dyno::engine::TomlError;
using namespace std::string_literals;

namespace {

std::string toml_error(const std::string& text) {
  try {
    parse_toml(text, "t.toml");
  } catch (const TomlError& e) {
    return e.what();
  }
  return "";
}

// The error of `text` is "t.toml:<line>: ...", with `words` in it.
testing::AssertionResult toml_error_is(const std::string& text, int line,
                                       const std::string& words) {
  const std::string error = toml_error(text);
  const std::string where = "t.toml:" + std::to_string(line) + ": ";
  if (error.rfind(where, 0) == 0 && error.find(words) != std::string::npos) {
    return testing::AssertionSuccess();
  }
  return testing::AssertionFailure()
         << "error \"" << error << "\", wanted " << where << "... " << words;
}

std::string spec_error(const std::string& text) {
  try {
    parse_spec(text, "s.toml");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Toml, ReadsEveryValueKindWithLines) {
  const auto doc = parse_toml(R"(# a comment
name = "vllm"   # trailing comment
count = 1_000
hex = 0xff
neg = -3
ratio = 0.9
exp = 1e3
yes = true
no = false
list = [1, 2,
  3,   # comment inside
]
path = 'C:\raw\path'
esc = "tab\there \"q\" \u00e9"
dotted.key = "d"
"quoted key" = 1
inline = { a = 1, b = "x" }
multi = """
line one
line two"""

[table]
x = 1
[table.sub]
y = [ "a", 'b' ]
)",
                              "t.toml");
  const auto& r = doc.root;
  EXPECT_EQ(r.at("name").as_string(), "vllm");
  EXPECT_EQ(r.at("count").as_int64(), 1000);
  EXPECT_EQ(r.at("hex").as_int64(), 255);
  EXPECT_EQ(r.at("neg").as_int64(), -3);
  EXPECT_DOUBLE_EQ(r.at("ratio").as_double(), 0.9);
  EXPECT_DOUBLE_EQ(r.at("exp").as_double(), 1000.0);
  EXPECT_TRUE(r.at("yes").as_bool());
  EXPECT_FALSE(r.at("no").as_bool());
  EXPECT_EQ(r.at("list").as_array().size(), 3u);
  EXPECT_EQ(r.at("path").as_string(), "C:\\raw\\path");
  EXPECT_EQ(r.at("esc").as_string(), "tab\there \"q\" \xc3\xa9");
  EXPECT_EQ(r.at("dotted").at("key").as_string(), "d");
  EXPECT_EQ(r.at("quoted key").as_int64(), 1);
  EXPECT_EQ(r.at("inline").at("b").as_string(), "x");
  EXPECT_EQ(r.at("multi").as_string(), "line one\nline two");
  EXPECT_EQ(r.at("table").at("sub").at("y").as_array()[1].as_string(), "b");
  EXPECT_EQ(doc.line_of("name"), 2);
  EXPECT_EQ(doc.line_of("ratio"), 6);
  EXPECT_EQ(doc.line_of("table.x"), 23);
  EXPECT_EQ(doc.line_of("table.sub.y"), 25);
  EXPECT_EQ(doc.line_of("table.sub.nothing"), doc.line_of("table.sub"));
}

TEST(Toml, SyntaxErrorsNameTheLine) {
  // The wording is toml++'s (or dyno's, for what dyno refuses); the line is the point.
  EXPECT_TRUE(toml_error_is("a = 1\na = 2\n", 2, "redefine existing integer 'a'"));
  EXPECT_TRUE(toml_error_is("x = \"open\n", 1, "string"));
  EXPECT_TRUE(toml_error_is("x = vllm\n", 1, "strings need quotes"));
  EXPECT_TRUE(toml_error_is("\n\nx = 1 2\n", 3, "saw '2'"));
  EXPECT_TRUE(toml_error_is("[[servers]]\n", 1, "arrays of tables"));
  EXPECT_TRUE(toml_error_is("d = 2024-01-01\n", 1, "dates and times are not supported"));
  EXPECT_TRUE(toml_error_is("x = [1, 2\n", 1, "array"));
  EXPECT_TRUE(toml_error_is("x = \"\\q\"\n", 1, "unknown escape"));
  EXPECT_TRUE(toml_error_is("[t]\n[t]\n", 2, "redefine existing table 't'"));
  EXPECT_TRUE(toml_error_is("x = 1\n[x]\n", 2, "redefine existing integer 'x' as table"));
  EXPECT_TRUE(toml_error_is("x = 99999999999999999999\n", 1, "not representable in 64 bits"));
  EXPECT_TRUE(toml_error_is("x = 007\n", 1, "leading zero"));
  EXPECT_TRUE(toml_error_is("x = { a = 1\n", 1, "inline table"));
}

TEST(Toml, RefusesDatesAndArraysOfTablesNamingTheLine) {
  // Spec files use neither; each is refused where it is written, however deep.
  EXPECT_TRUE(toml_error_is("name = 'x'\n\n[ready]\nsince = 1979-05-27T07:32:00Z\n", 4,
                            "'ready.since': dates and times are not supported"));
  EXPECT_TRUE(toml_error_is("a = 1\nt = [1, { at = 07:32:00 }]\n", 2,
                            "'t[1].at': dates and times are not supported"));
  EXPECT_TRUE(toml_error_is("a = 1\n\n[[array.of.tables]]\nx = 1\n", 3,
                            "[[array.of.tables]]: arrays of tables are not supported"));
  // An inline array of tables is an array of inline tables: allowed.
  const auto doc = parse_toml("servers = [ { a = 1 }, { a = 2 } ]\n", "t.toml");
  EXPECT_EQ(doc.root.at("servers").as_array()[1].at("a").as_int64(), 2);
}

TEST(Toml, DuplicateKeysAreErrorsWithTheirLine) {
  EXPECT_TRUE(toml_error_is("[ready]\nhttp_path = '/a'\n\nhttp_path = '/b'\n", 4, "redefine"));
  EXPECT_TRUE(toml_error_is("ready.http_path = '/a'\n\nready.http_path = '/b'\n", 3, "redefine"));
  // A table that dotted keys made cannot be opened again as [ready] (TOML 1.0).
  EXPECT_TRUE(toml_error_is("ready.http_path = '/a'\n[ready]\nhttp_status = 200\n", 2, "redefine"));
  EXPECT_TRUE(toml_error_is("stop = { signal = 'A', signal = 'B' }\n", 1, "redefine"));
}

TEST(Toml, LinesOfDottedAndInlineTableKeys) {
  const auto doc = parse_toml(R"(name = "x"
args = [
  "--a",
  "--b",
]

ready.http_path = "/health"
stop = { signal = "SIGINT", grace = 5 }
[topology]
tp = 2
[engine_args]
a.b.c = 1
x = { y = { z = 2 } }
)",
                              "t.toml");
  EXPECT_EQ(doc.lines.at("args"), 2);
  EXPECT_EQ(doc.lines.at("ready"), 7);
  EXPECT_EQ(doc.lines.at("ready.http_path"), 7);
  EXPECT_EQ(doc.lines.at("stop"), 8);
  EXPECT_EQ(doc.lines.at("stop.signal"), 8);
  EXPECT_EQ(doc.lines.at("stop.grace"), 8);
  EXPECT_EQ(doc.lines.at("topology"), 9);
  EXPECT_EQ(doc.lines.at("topology.tp"), 10);
  EXPECT_EQ(doc.lines.at("engine_args.a.b.c"), 12);
  EXPECT_EQ(doc.lines.at("engine_args.x.y.z"), 13);
  EXPECT_EQ(doc.line_of("stop.nothing"), 8);
  EXPECT_EQ(doc.root.at("ready").at("http_path").as_string(), "/health");
  EXPECT_EQ(doc.root.at("engine_args").at("x").at("y").at("z").as_int64(), 2);
}

TEST(Toml, KeysKeepTheOrderOfTheFile) {
  // engine_args become flags in the order they are written.
  const auto doc = parse_toml("z = 1\nb = 2\n[engine_args]\nzz = 1\naa = 2\nmm.x = 3\n", "t.toml");
  std::vector<std::string> keys;
  for (const auto& kv : doc.root) keys.emplace_back(kv.key());
  for (const auto& kv : doc.root.at("engine_args").as_object()) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "b", "engine_args", "zz", "aa", "mm"}));
}

TEST(Toml, HostileInputIsAnErrorNotACrash) {
  EXPECT_TRUE(toml_error_is("x = 1\ny = \"a\0b\"\n"s, 2, "control"));
  EXPECT_TRUE(toml_error_is("x = 1\n\0 = 1\n"s, 2, "saw"));
  EXPECT_TRUE(toml_error_is("x = 1\n\xff = 1\n", 2, "not UTF-8 text (byte 0xff)"));
  EXPECT_TRUE(toml_error_is("x = 1\ny = \"a\xc3\"\n", 2, "not UTF-8"));
  EXPECT_TRUE(toml_error_is("x = \"\xed\xa0\x80\"\n", 1, "not UTF-8"));  // a surrogate
  // Nesting that would exhaust the stack (toml++ recurses once per level): refused up front.
  std::string deep = "a = 1\n";
  for (int i = 0; i < 100000; ++i) deep += i == 0 ? "k" : ".k";
  EXPECT_TRUE(toml_error_is(deep + " = 1\n", 2, "nest deeper than 256 levels"));
  EXPECT_TRUE(toml_error_is("a = 1\n[" + deep.substr(6) + "]\n", 2, "nest deeper"));
  EXPECT_TRUE(toml_error_is("x = " + std::string(100000, '[') + "\n", 1, "nest deeper"));
  std::string tables = "x = ";
  for (int i = 0; i < 100000; ++i) tables += "{ a = ";
  EXPECT_TRUE(toml_error_is(tables + "\n", 1, "nest deeper"));
  // Deep but within the bound, and dots and brackets inside strings do not count.
  std::string ok = "[a";
  for (int i = 1; i < 200; ++i) ok += ".a";
  ok += "]\nb.b.b = [[{ c = \"" + std::string(1000, '[') + std::string(1000, '.') + "\" }]]\n";
  EXPECT_NO_THROW(parse_toml(ok, "t.toml"));
}

TEST(EngineSpec, VllmPresetFillsProbeIdentityStopAndFlags) {
  const EngineSpec s = parse_spec(R"(
name = "vllm-main"
preset = "vllm"
model = "meta-llama/Llama-3.1-8B-Instruct"
args = ["--served-model-name", "{model}"]
[engine_args]
gpu_memory_utilization = 0.9
max_model_len = 8192
enable_prefix_caching = false
kv_cache_dtype = "fp8"
speculative_config = '{"method": "ngram"}'
[topology]
tp = 2
gpus = [0, 1]
)",
                                  "s.toml");
  EXPECT_EQ(s.ready.http_path.value(), "/health");
  EXPECT_EQ(s.stop_signal, "SIGINT");
  EXPECT_EQ(s.identity_paths.front(), "/version");
  const auto line = dyno::engine::launch_line(s, {8123, "/bin/dyno"});
  const std::vector<std::string> want = {"vllm",
                                         "serve",
                                         "meta-llama/Llama-3.1-8B-Instruct",
                                         "--host",
                                         "127.0.0.1",
                                         "--port",
                                         "8123",
                                         "--gpu-memory-utilization",
                                         "0.9",
                                         "--max-model-len",
                                         "8192",
                                         "--no-enable-prefix-caching",
                                         "--kv-cache-dtype",
                                         "fp8",
                                         "--speculative-config",
                                         "{\"method\": \"ngram\"}",
                                         "--tensor-parallel-size",
                                         "2",
                                         "--served-model-name",
                                         "meta-llama/Llama-3.1-8B-Instruct"};
  EXPECT_EQ(line.argv, want);
  EXPECT_EQ(line.env.at("CUDA_VISIBLE_DEVICES"), "0,1");
}

TEST(EngineSpec, EachPresetSpeaksItsEnginesFlags) {
  const auto argv_of = [](const std::string& text) {
    return dyno::engine::launch_line(parse_spec(text, "s.toml"), {9000, "/x/dyno"});
  };
  auto l = argv_of(
      "name='s'\npreset='sglang'\nmodel='m'\n[engine_args]\nenable_prefix_caching=false\n"
      "max_num_seqs=64\n[topology]\ntp=4\n");
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--disable-radix-cache"), l.argv.end());
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--max-running-requests"), l.argv.end());
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--tp-size"), l.argv.end());
  l = argv_of(
      "name='l'\npreset='llamacpp'\nmodel_file='/m/q.gguf'\n[engine_args]\n"
      "max_model_len=4096\nn_gpu_layers=99\n");
  EXPECT_EQ(l.argv[0], "llama-server");
  EXPECT_EQ(l.argv[2], "/m/q.gguf");
  EXPECT_EQ(l.argv[4], "q");  // the alias defaults to the file's stem
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--ctx-size"), l.argv.end());
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--metrics"), l.argv.end());
  l = argv_of("name='t'\npreset='tgi'\nmodel='m'\n[topology]\ntp=2\n");
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--num-shard"), l.argv.end());
  l = argv_of(
      "name='o'\npreset='ollama'\nmodel='llama3'\n[engine_args]\nmax_num_seqs=4\n"
      "flash_attn=true\n");
  EXPECT_EQ(l.argv, (std::vector<std::string>{"ollama", "serve"}));
  EXPECT_EQ(l.env.at("OLLAMA_HOST"), "127.0.0.1:9000");
  EXPECT_EQ(l.env.at("OLLAMA_NUM_PARALLEL"), "4");
  EXPECT_EQ(l.env.at("OLLAMA_FLASH_ATTENTION"), "1");
  l = argv_of("name='d'\npreset='sim'\n[engine_args]\nprofile='cpu'\nexit_after=5\n");
  EXPECT_EQ(l.argv[0], "/x/dyno");
  EXPECT_EQ(l.argv[1], "sim");
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--exit-after"), l.argv.end());
  // The example specs in docs/examples/ all load.
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(DYNO_SOURCE_DIR) + "/docs/examples")) {
    if (entry.path().extension() != ".toml") continue;
    EXPECT_NO_THROW(dyno::engine::load_spec(entry.path().string())) << entry.path();
  }
}

TEST(EngineSpec, TopologyTakesOpenKeysCheckedByType) {
  // How a model is split, offloaded, parallelised and linked, in the engine's own words.
  const EngineSpec s = parse_spec(
      "name='s'\npreset='llamacpp'\nmodel='m'\nmodel_file='m.gguf'\n[topology]\ntp=2\nep=4\ndp="
      "1\ngpus=[0, 1]\n"
      "link='nvlink'\nsplit='row'\noffload=99\ncpu_moe=true\ntensor_split=[0.6, 0.4]\n",
      "s.toml");
  EXPECT_EQ(s.topology.at("link"), "nvlink");
  EXPECT_EQ(s.topology.at("split"), "row");
  EXPECT_EQ(s.topology.at("offload"), 99);
  EXPECT_EQ(s.topology.at("cpu_moe"), true);  // an open key, recorded as given
  EXPECT_EQ(s.topology.at("tensor_split").as_array().size(), 2u);
  EXPECT_EQ(parse_spec("name='s'\npreset='vllm'\nmodel='m'\n[topology]\noffload='all'\n", "s.toml")
                .topology.at("offload"),
            "all");
  // The known keys keep their types; an open key is a value or an array of values.
  for (const auto& [body, key] :
       std::vector<std::pair<std::string, std::string>>{{"ep=0", "topology.ep"},
                                                        {"link=1", "topology.link"},
                                                        {"offload=-1", "topology.offload"},
                                                        {"[topology.extra]\nx=1", "topology.extra"},
                                                        {"nested=[[1]]", "topology.nested"}}) {
    EXPECT_NE(
        spec_error("name='x'\npreset='vllm'\nmodel='m'\n[topology]\n" + body + "\n").find(key),
        std::string::npos)
        << body;
  }
}

TEST(EngineSpec, TopologyTakesAGpuCountAndALinkKindAsGiven) {
  // A lab's `gpus: 2`, `p2p: "nvlink"`: a count is not made into indices, so it sets no
  // CUDA_VISIBLE_DEVICES; a list of indices does.
  const EngineSpec count = parse_spec(
      "name='s'\npreset='vllm'\nmodel='m'\n[topology]\ngpus=2\np2p='nvlink'\n", "s.toml");
  EXPECT_EQ(count.topology.at("gpus"), 2);
  EXPECT_EQ(count.topology.at("p2p"), "nvlink");
  EXPECT_EQ(dyno::engine::launch_line(count, {9000, "/x/dyno"}).env.count("CUDA_VISIBLE_DEVICES"),
            0u);
  const EngineSpec list = parse_spec(
      "name='s'\npreset='vllm'\nmodel='m'\n[topology]\ngpus=[0, 1]\np2p=true\n", "s.toml");
  EXPECT_EQ(list.topology.at("p2p"), true);
  EXPECT_EQ(dyno::engine::launch_line(list, {9000, "/x/dyno"}).env.at("CUDA_VISIBLE_DEVICES"),
            "0,1");
}

TEST(EngineSpec, ErrorsNameTheFileLineKeyAndWhatToDo) {
  EXPECT_NE(spec_error("preset = 'vllm'\nmodel='m'\n").find("'name' is missing"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vlm'\n").find("s.toml:2: preset: unknown preset 'vlm'"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\nmodel='m'\ncommand='vllm serve'\n")
                .find("s.toml:3: command: expected an array of strings"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\nmodel='m'\ncommand=['a']\n").find("no readiness probe"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\n[ready]\nhttp_status='200'\n")
                .find("s.toml:5: ready.http_status: expected an integer"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\n[ready]\ntimeout=5\n")
                .find("s.toml:5: ready.timeout: unknown key; the keys here are:"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\n[stop]\nsignal='SIGFOO'\n")
                .find("unknown signal 'SIGFOO'"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\nport=70000\n").find("port"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='llamacpp'\nmodel='m'\n").find("needs 'model_file'"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='ollama'\nmodel='m'\n[engine_args]\nfoo=1\n")
                .find("has no known setting"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\nmodle='m'\n")
                .find("s.toml:4: modle: unknown key"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\n[topology]\ngpus=['a']\n")
                .find("topology.gpus"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\n[topology]\ngpus=0\n")
                .find("topology.gpus: expected an array of GPU indices"),
            std::string::npos);
  EXPECT_NE(spec_error("name='x'\npreset='vllm'\nmodel='m'\n[topology]\np2p=1\n")
                .find("topology.p2p: expected a boolean or a link kind"),
            std::string::npos);
  EXPECT_NE(spec_error("name = \n").find("s.toml:1:"), std::string::npos);
  try {
    dyno::engine::load_spec("/nonexistent/spec.toml");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/spec.toml: cannot read"), std::string::npos);
  }
}
