// What of a launch line may be written down, and the secrets it hides from the engine's log.
#include "engine/launch.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "scrub/scrub.h"

namespace json = boost::json;

TEST(SecretNames, WordsThatSaySecretAndNotTokenCounts) {
  using dyno::scrub::is_secret_key;
  EXPECT_TRUE(is_secret_key("--api-key"));
  EXPECT_TRUE(is_secret_key("HF_TOKEN"));
  EXPECT_TRUE(is_secret_key("HF_HUB_TOKEN"));
  EXPECT_TRUE(is_secret_key("AWS_SECRET_ACCESS_KEY"));
  EXPECT_TRUE(is_secret_key("api_key"));
  EXPECT_TRUE(is_secret_key("--basic-auth-password"));
  EXPECT_FALSE(is_secret_key("--max-num-batched-tokens"));
  EXPECT_FALSE(is_secret_key("--kv-cache-dtype"));
  EXPECT_FALSE(is_secret_key("OLLAMA_KEEP_ALIVE"));
  EXPECT_FALSE(is_secret_key("--tokenizer-mode"));
  EXPECT_FALSE(is_secret_key("bos_token"));
}

TEST(ScrubLaunchLine, SecretFlagsVariablesAndUrlCredentialsAreHiddenEverywhere) {
  dyno::engine::LaunchLine line;
  line.argv = {"vllm",
               "serve",
               "m",
               "--api-key",
               "sk-live-123456",
               "--hf-token=hf_abcdef",
               "--model-loader-extra-config",
               "https://user:pa55word@host/x",
               "--max-num-batched-tokens",
               "8192"};
  line.env = {{"HF_TOKEN", "hf_envtoken"}, {"HF_HOME", "/data/hf"}};
  const auto s = dyno::engine::scrub_launch_line(line);
  const std::string marker = dyno::scrub::scrub_marker("secret");
  EXPECT_EQ(s.argv[4].as_string(), marker);
  EXPECT_EQ(s.argv[5].as_string(), "--hf-token=" + marker);
  EXPECT_EQ(s.argv[7].as_string().find("pa55word"), std::string::npos);
  EXPECT_EQ(s.argv[9].as_string(), "8192");
  EXPECT_EQ(s.env.at("HF_TOKEN").as_string(), marker);
  EXPECT_EQ(s.env.at("HF_HOME").as_string(), "/data/hf");
  const std::string log = dyno::engine::redact_values(
      "args: --api-key sk-live-123456 token hf_abcdef env hf_envtoken url user:pa55word@host",
      s.secrets);
  EXPECT_EQ(log.find("sk-live"), std::string::npos) << log;
  EXPECT_EQ(log.find("hf_abcdef"), std::string::npos) << log;
  EXPECT_EQ(log.find("hf_envtoken"), std::string::npos) << log;
  EXPECT_EQ(log.find("pa55word"), std::string::npos) << log;
  EXPECT_NE(log.find("args: --api-key " + marker), std::string::npos) << log;
}

TEST(CrashLogTail, DynosOwnProbesAreNotEngineLines) {
  using dyno::engine::is_probe_access_line;
  const std::optional<std::string> ready = std::string("/ready");
  // llama.cpp's and uvicorn's (vLLM, SGLang) access-log shapes of dyno's probes.
  EXPECT_TRUE(is_probe_access_line("srv  log_server_r: request: GET /metrics 127.0.0.1 200", {}));
  EXPECT_TRUE(
      is_probe_access_line(R"(INFO:     127.0.0.1:53872 - "GET /metrics HTTP/1.1" 200 OK)", {}));
  EXPECT_TRUE(is_probe_access_line(R"("GET /health?x=1 HTTP/1.1" 200)", {}));
  EXPECT_TRUE(is_probe_access_line("request: POST /tokenize 127.0.0.1 200", {}));
  EXPECT_TRUE(is_probe_access_line("request: GET /v1/models 127.0.0.1 200", {}));
  EXPECT_TRUE(is_probe_access_line("request: GET /ready 127.0.0.1 200", ready));
  // The engine's own lines, and the load's requests, stay.
  EXPECT_FALSE(is_probe_access_line("request: POST /v1/chat/completions 127.0.0.1 200", {}));
  EXPECT_FALSE(is_probe_access_line("CUDA error: out of memory", {}));
  EXPECT_FALSE(is_probe_access_line("GET /metricsfoo 200", {}));
  EXPECT_FALSE(is_probe_access_line("request: GET /ready 127.0.0.1 200", {}));
}
