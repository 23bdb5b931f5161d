// `dyno quick`'s pure parts (app/quick_command.h): the ports it probes, the model list it reads,
// the model it picks, the names and numbers it prints. The command itself is tested through the
// binary (tests/integration/quick_test.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "app/quick_command.h"
#include "error/error.h"

namespace dyno::app {
namespace {

std::string ports_of(const std::vector<UsualPort>& ports) {
  std::string out;
  for (const UsualPort& p : ports) out += std::to_string(p.port) + ":" + std::string(p.owner) + ";";
  return out;
}

TEST(QuickPorts, TheUsualPortsUnlessTheVariableReplacesThem) {
  EXPECT_EQ(ports_of(quick_ports(nullptr)),
            "11434:Ollama;8080:llama.cpp or TGI;1234:LM Studio;8000:vLLM;30000:SGLang;3000:TGI;");
  EXPECT_EQ(ports_of(quick_ports("9000")), "9000:;");
  // A usual port keeps its owner; the order is the variable's.
  EXPECT_EQ(ports_of(quick_ports("8000,65535,1")), "8000:vLLM;65535:;1:;");
}

TEST(QuickPorts, ABadListIsAUsageErrorNamingTheVariable) {
  for (const char* bad : {"", ",", "8080,", ",8080", "0", "65536", "080", "8080,x", "-1", "1e3",
                          " 8080", "8080;9000"}) {
    try {
      (void)quick_ports(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("DYNO_QUICK_PORTS"), std::string::npos) << e.what();
    }
  }
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::to_string(9000 + i);
  EXPECT_THROW((void)quick_ports(many.c_str()), UsageError);
  many.erase(many.rfind(','));
  EXPECT_EQ(quick_ports(many.c_str()).size(), 16u);
}

TEST(QuickModels, ReadsWhatLlamaServerAndTheSimAnswer) {
  std::ifstream in(std::string(DYNO_SOURCE_DIR) +
                   "/../shared/fixtures/llama-server-b4748/v1_models.json");
  if (in) {  // the fixture as llama-server b4748 answered
    std::stringstream body;
    body << in.rdbuf();
    const std::optional<ModelList> m = read_model_list(body.str());
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->ids, std::vector<std::string>{"rand-tiny-23M-f16"});
    EXPECT_EQ(m->owned_by, "llamacpp");
  }
  const std::optional<ModelList> sim = read_model_list(
      R"({"object":"list","data":[{"id":"dyno-sim","object":"model","created":0,"owned_by":"dyno-sim"}]})");
  ASSERT_TRUE(sim.has_value());
  EXPECT_EQ(sim->ids, std::vector<std::string>{"dyno-sim"});
  EXPECT_EQ(sim->owned_by, "dyno-sim");
  const std::optional<ModelList> two =
      read_model_list(R"({"data":[{"id":"a"},{"id":"b","owned_by":"x"}]})");
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(two->owned_by.has_value());  // the first entry's owner only
  EXPECT_TRUE(read_model_list(R"({"data":[]})").has_value());
}

TEST(QuickModels, AnythingElseIsNotAModelList) {
  for (const char* body : {"", "not json", "[]", "{}", R"({"data":{}})", R"({"data":[1]})",
                           R"({"data":[{"name":"x"}]})", R"({"data":[{"id":7}]})",
                           "<html>404</html>", R"({"data":[{"id":"a"}]} trailing)"}) {
    EXPECT_FALSE(read_model_list(body).has_value()) << body;
  }
}

TEST(QuickModels, PicksTheOneModelOrAsksForModel) {
  EXPECT_EQ(pick_model(ModelList{{"m"}, {}}, std::nullopt, "127.0.0.1:8080"), "m");
  EXPECT_EQ(pick_model(ModelList{{"a", "b"}, {}}, std::string("b"), "x"), "b");
  EXPECT_EQ(pick_model(ModelList{}, std::string("given"), "x"), "given");
  try {
    (void)pick_model(ModelList{{"qwen", "llama"}, {}}, std::nullopt, "127.0.0.1:11434");
    ADD_FAILURE() << "picked one of two";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("127.0.0.1:11434 serves 2 models"), std::string::npos) << m;
    EXPECT_NE(m.find("--model qwen"), std::string::npos) << m;
    EXPECT_NE(m.find("--model llama"), std::string::npos) << m;
  }
  try {
    (void)pick_model(ModelList{}, std::nullopt, "127.0.0.1:1234");
    ADD_FAILURE() << "picked from none";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("lists no model"), std::string::npos) << e.what();
  }
}

TEST(QuickWords, EngineNamesAndThreeDigits) {
  EXPECT_EQ(engine_display_name("llamacpp"), "llama.cpp");
  EXPECT_EQ(engine_display_name("llama.cpp"), "llama.cpp");
  EXPECT_EQ(engine_display_name("vllm"), "vLLM");
  EXPECT_EQ(engine_display_name("dyno-sim"), "dyno sim");
  EXPECT_EQ(engine_display_name("text-generation-inference"), "TGI");
  EXPECT_EQ(engine_display_name("my-engine"), "my-engine");
  EXPECT_EQ(engine_display_name("evil\x1b[2J"), "evil\\x1b[2J");  // terminal-safe
  EXPECT_EQ(three_digits(850.4), "850");
  EXPECT_EQ(three_digits(1234.6), "1235");
  EXPECT_EQ(three_digits(12.34), "12.3");
  EXPECT_EQ(three_digits(1.234), "1.23");
  EXPECT_EQ(three_digits(0.4123), "0.412");
  EXPECT_EQ(three_digits(0.0), "0.000");
}

}  // namespace
}  // namespace dyno::app
