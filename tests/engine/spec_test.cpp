// TOML reading and engine spec validation: presets, launch lines, secrets, clear errors.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/spec.h"
#include "engine/toml.h"

namespace json = boost::json;
using dyno::engine::EngineSpec;
using dyno::engine::parse_spec;
using dyno::engine::parse_toml;
using dyno::engine::SpecError;
using dyno::engine::TomlError;

namespace {

std::string toml_error(const std::string& text) {
  try {
    parse_toml(text, "t.toml");
  } catch (const TomlError& e) {
    return e.what();
  }
  return "";
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
  EXPECT_NE(toml_error("a = 1\na = 2\n").find("t.toml:2: key 'a' is defined twice"),
            std::string::npos);
  EXPECT_NE(toml_error("x = \"open\n").find("t.toml:1: unterminated string"), std::string::npos);
  EXPECT_NE(toml_error("x = vllm\n").find("strings need quotes"), std::string::npos);
  EXPECT_NE(toml_error("\n\nx = 1 2\n").find("t.toml:3: unexpected text"), std::string::npos);
  EXPECT_NE(toml_error("[[servers]]\n").find("arrays of tables"), std::string::npos);
  EXPECT_NE(toml_error("d = 2024-01-01\n").find("dates and times are not supported"),
            std::string::npos);
  EXPECT_NE(toml_error("x = [1, 2\n").find("unterminated array"), std::string::npos);
  EXPECT_NE(toml_error("x = \"\\q\"\n").find("unknown escape"), std::string::npos);
  EXPECT_NE(toml_error("[t]\n[t]\n").find("defined twice"), std::string::npos);
  EXPECT_NE(toml_error("x = 1\n[x]\n").find("already a value"), std::string::npos);
  EXPECT_NE(toml_error("x = 99999999999999999999\n").find("out of range"), std::string::npos);
  EXPECT_NE(toml_error("x = 007\n").find("leading zeros"), std::string::npos);
  EXPECT_NE(toml_error("x = { a = 1\n").find("inline table"), std::string::npos);
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
  l = argv_of("name='l'\npreset='llamacpp'\nmodel_file='/m/q.gguf'\n[engine_args]\n"
              "max_model_len=4096\nn_gpu_layers=99\n");
  EXPECT_EQ(l.argv[0], "llama-server");
  EXPECT_EQ(l.argv[2], "/m/q.gguf");
  EXPECT_EQ(l.argv[4], "q");  // the alias defaults to the file's stem
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--ctx-size"), l.argv.end());
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--metrics"), l.argv.end());
  l = argv_of("name='t'\npreset='tgi'\nmodel='m'\n[topology]\ntp=2\n");
  EXPECT_NE(std::find(l.argv.begin(), l.argv.end(), "--num-shard"), l.argv.end());
  l = argv_of("name='o'\npreset='ollama'\nmodel='llama3'\n[engine_args]\nmax_num_seqs=4\n"
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
  EXPECT_NE(spec_error("name = \n").find("s.toml:1:"), std::string::npos);
  try {
    dyno::engine::load_spec("/nonexistent/spec.toml");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/spec.toml: cannot read"),
              std::string::npos);
  }
}
