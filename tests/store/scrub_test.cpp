// Scrubbing: a hand-made record holding every sensitive field, policies, free text.
#include "scrub/scrub.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>

#include "digest/digest.h"
#include "record/publish.h"
#include "record/record_fixture.h"
#include "record/run_verify.h"
#include "record/run_writer.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::scrub::Scrubber;
using dyno::scrub::ScrubPolicy;
using dyno::scrub::UuidRule;
using dyno::testing::sample_manifest;
using dyno::testing::sample_summary;
using dyno::testing::TempDir;
using dyno::testing::write_run;

namespace {

constexpr const char* kId = "20261129T214815Z-3fa9c1";
constexpr const char* kHost = "gpu-node-17.corp.example.com";
constexpr const char* kUuid = "GPU-3f2a6c1e-8d4b-4a7f-9c1e-2b3d4e5f6a7b";
// Secrets that a careless writer could have let through; scrubbing removes them all.
constexpr const char* kSecrets[] = {"sk-in-args-0001", "hf_launch_0002", "sk-flag-0003",
                                    "sk-log-0004",     "c00kie-0005",    "p4ss-0006"};

json::object sensitive_manifest() {
  json::object m = sample_manifest(kId, "2026-11-29T21:48:15.212Z");
  auto& hw = m["hardware"].as_object();
  hw["host"] = kHost;
  hw["gpus"].as_array()[0].as_object()["uuid"] = kUuid;
  m["telemetry"] = json::object{
      {"mode", "auto"},
      {"backends", json::array{json::object{
                       {"name", "nvml"},
                       {"available", true},
                       {"devices", json::array{json::object{{"index", 0}, {"uuid", kUuid}}}}}}}};
  auto& engine = m["engine"].as_object();
  engine["reached"] = json::object{{"kind", "launched"},
                                   {"scheme", "http"},
                                   {"path", "/v1"},
                                   {"host", "10.1.2.3"},
                                   {"port", 8000}};
  engine["container_name"] = "vllm-bench-alice";
  engine["labels"] = json::object{{"owner", "alice"}};
  engine["volumes"] = json::array{"/home/alice/hf:/root/.cache/huggingface"};
  engine["launch_line"] = json::array{"/usr/bin/docker",
                                      "run",
                                      "--name",
                                      "vllm-alice",
                                      "-v",
                                      "/home/alice/models:/models",
                                      "-p",
                                      "8000:8000",
                                      "--label",
                                      "owner=alice",
                                      "-e",
                                      "HF_TOKEN=hf_launch_0002",
                                      "vllm/vllm-openai:v0.6.3",
                                      "--model",
                                      "/models/llama",
                                      "--api-key",
                                      "sk-flag-0003",
                                      "--port",
                                      "8000",
                                      "--host",
                                      "0.0.0.0"};
  engine["engine_args"] = json::object{{"api_key", "sk-in-args-0001"},
                                       {"tensor_parallel_size", 2},
                                       {"download_dir", "/home/alice/hf"}};
  engine["api_key_used"] = true;
  m["model"].as_object()["id"] = "/data/alice/models/Llama-3.1-8B-Instruct";
  m["workload"].as_object()["request_stream"].as_object()["source"] =
      "sharegpt:/home/alice/data/ShareGPT_V3.json";
  m["warnings"] = json::array{
      json::object{{"code", "engine_slow"},
                   {"message", std::string("http://") + kHost + ":8000/v1 answered slowly"},
                   {"hint", "see /home/alice/logs/vllm.log"}}};
  m["evidence"] = json::array{
      json::object{{"path", "evidence/engine.log"}, {"sha256", ""}},
  };
  return m;
}

std::string engine_log() {
  return std::string("INFO Started server process on ") + kHost +
         ":8000\n"
         "DEBUG request headers: Authorization: Bearer sk-log-0004\n"
         "DEBUG Cookie: session=c00kie-0005\n"
         "INFO GPU 0 " +
         kUuid +
         " ready, 80 GiB\n"
         "INFO loading /home/alice/models/llama/model-00001.safetensors\n"
         "INFO uvicorn POST /v1/chat/completions HTTP/1.1 200 from 10.9.8.7:51234\n"
         "INFO login password=p4ss-0006 at http://admin:p4ss-0006@10.1.2.3:9000/\n";
}

/// The sensitive manifest without its evidence file, for records of a few request lines.
json::object sensitive_manifest_without_evidence() {
  json::object m = sensitive_manifest();
  m["evidence"] = json::array();
  return m;
}

/// The sensitive record as a run directory (digests and SHA256SUMS right).
fs::path write_sensitive(const fs::path& root) {
  json::object m = sensitive_manifest();
  const fs::path dir = root / kId;
  fs::create_directories(dir / "evidence");
  const std::string log = engine_log();
  dyno::record::write_file_atomic(dir / "evidence" / "engine.log", log);
  m["evidence"].as_array()[0].as_object()["sha256"] = dyno::digest::sha256_hex(log);
  json::object s = sample_summary(kId, 100, 10);
  s["warnings"] = json::array{json::object{{"code", "x"}, {"message", "wrote /home/alice/out"}}};
  const std::string requests =
      "{\"index\":0,\"status\":\"ok\",\"error\":null,\"output_text\":\"The file is "
      "/home/alice/x on gpu-node-17\"}\n"
      "{\"index\":1,\"status\":\"error\",\"error\":{\"category\":\"connect\",\"message\":"
      "\"connect to 10.1.2.3:8000 failed: Connection refused\"}}\n";
  return write_run(root, m, s, requests);
}

/// A JSON value as text: strings bare, everything else serialised.
std::string S(const json::value& v) {
  return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
}

json::object read_json(const fs::path& p) {
  return json::parse(dyno::record::read_file(p)).as_object();
}

std::string all_text(const fs::path& dir) {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) all += dyno::record::read_file(e.path());
  }
  return all;
}

}  // namespace

TEST(Scrub, TheDefaultPolicyScrubsEverySensitiveField) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path());
  ASSERT_TRUE(dyno::record::verify_run_dir(dir, /*schema=*/false).ok());
  const auto out = dyno::record::scrub_run_dir(dir, ScrubPolicy{});

  const std::vector<std::string> expected = {"evidence/engine.log",
                                             "manifest.json#/engine/container_name",
                                             "manifest.json#/engine/engine_args/api_key",
                                             "manifest.json#/engine/engine_args/download_dir",
                                             "manifest.json#/engine/labels",
                                             "manifest.json#/engine/launch_line/11",
                                             "manifest.json#/engine/launch_line/14",
                                             "manifest.json#/engine/launch_line/16",
                                             "manifest.json#/engine/launch_line/18",
                                             "manifest.json#/engine/launch_line/3",
                                             "manifest.json#/engine/launch_line/5",
                                             "manifest.json#/engine/launch_line/7",
                                             "manifest.json#/engine/launch_line/9",
                                             "manifest.json#/engine/reached/host",
                                             "manifest.json#/engine/reached/port",
                                             "manifest.json#/engine/volumes",
                                             "manifest.json#/hardware/gpus/0/uuid",
                                             "manifest.json#/hardware/host",
                                             "manifest.json#/model/id",
                                             "manifest.json#/telemetry/backends/0/devices/0/uuid",
                                             "manifest.json#/warnings/0/hint",
                                             "manifest.json#/warnings/0/message",
                                             "manifest.json#/workload/request_stream/source",
                                             "requests.jsonl#/error/message",
                                             "requests.jsonl#/output_text",
                                             "summary.json#/warnings/0/message"};
  EXPECT_EQ(out.changed, expected);

  const json::object m = read_json(dir / "manifest.json");
  std::vector<std::string> listed;
  for (const auto& v : m.at("scrubbed_fields").as_array()) listed.emplace_back(v.as_string());
  EXPECT_EQ(listed, expected);
  const auto& e = m.at("engine").as_object();
  EXPECT_EQ(S(m.at("hardware").at("host")), "<scrubbed:host>");
  EXPECT_EQ(S(m.at("hardware").at("gpus").at(0).at("uuid")), "<scrubbed:gpu-uuid>");
  EXPECT_EQ(S(m.at("hardware").at("gpus").at(0).at("name")), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(S(e.at("reached").at("host")), "<scrubbed:host>");
  EXPECT_EQ(S(e.at("reached").at("port")), "<scrubbed:port>");
  EXPECT_EQ(S(e.at("reached").at("path")), "/v1");  // a URL path, kept
  EXPECT_EQ(S(e.at("container_name")), "<scrubbed:container>");
  EXPECT_EQ(S(e.at("labels")), "<scrubbed:container>");
  EXPECT_EQ(S(e.at("volumes")), "<scrubbed:volume>");
  EXPECT_EQ(e.at("engine_args"), (json::object{{"api_key", "<scrubbed:secret>"},
                                               {"tensor_parallel_size", 2},
                                               {"download_dir", "<scrubbed:path>"}}));
  EXPECT_EQ(S(e.at("api_key_used")), "true");
  EXPECT_EQ(e.at("launch_line"), (json::array{"/usr/bin/docker",
                                              "run",
                                              "--name",
                                              "<scrubbed:container>",
                                              "-v",
                                              "<scrubbed:volume>",
                                              "-p",
                                              "<scrubbed:port>",
                                              "--label",
                                              "<scrubbed:container>",
                                              "-e",
                                              "HF_TOKEN=<scrubbed:secret>",
                                              "vllm/vllm-openai:v0.6.3",
                                              "--model",
                                              "<scrubbed:path>",
                                              "--api-key",
                                              "<scrubbed:secret>",
                                              "--port",
                                              "<scrubbed:port>",
                                              "--host",
                                              "0.0.0.0"}));
  EXPECT_EQ(S(m.at("model").at("id")), "<scrubbed:path>");
  EXPECT_EQ(S(m.at("workload").at("request_stream").at("source")), "sharegpt:<scrubbed:path>");
  EXPECT_EQ(S(m.at("workload").at("request_stream").at("sha256")), std::string(64, 'a'));
  EXPECT_EQ(S(m.at("warnings").at(0).at("message")),
            "http://<scrubbed:host>:<scrubbed:port>/v1 answered slowly");
  EXPECT_EQ(S(m.at("warnings").at(0).at("hint")), "see <scrubbed:path>");

  EXPECT_EQ(dyno::record::read_file(dir / "evidence" / "engine.log"),
            "INFO Started server process on <scrubbed:host>:<scrubbed:port>\n"
            "DEBUG request headers: Authorization: <scrubbed:secret>\n"
            "DEBUG Cookie: <scrubbed:secret>\n"
            "INFO GPU 0 <scrubbed:gpu-uuid> ready, 80 GiB\n"
            "INFO loading <scrubbed:path>\n"
            "INFO uvicorn POST /v1/chat/completions HTTP/1.1 200 from "
            "<scrubbed:host>:<scrubbed:port>\n"
            "INFO login password=<scrubbed:secret> at "
            "http://<scrubbed:secret>@<scrubbed:host>:<scrubbed:port>/\n");
  const std::string requests = dyno::record::read_file(dir / "requests.jsonl");
  // Generated text: only literal names are replaced (the host's short name), no pattern.
  EXPECT_NE(requests.find("\"output_text\":\"The file is /home/alice/x on <scrubbed:host>\""),
            std::string::npos)
      << requests;
  EXPECT_NE(requests.find("connect to <scrubbed:host>:<scrubbed:port> failed"), std::string::npos);
  // No secret and no sensitive value left anywhere; the record verifies again.
  const std::string all = all_text(dir);
  for (const char* s : kSecrets) EXPECT_EQ(all.find(s), std::string::npos) << s;
  for (const char* s :
       {"gpu-node-17", "3f2a6c1e", "10.1.2.3", "vllm-alice", "/home/alice/hf", "/data/alice"}) {
    EXPECT_EQ(all.find(s), std::string::npos) << s;
  }
  const auto rep = dyno::record::verify_run_dir(dir, /*schema=*/false);
  EXPECT_TRUE(rep.ok()) << (rep.ok() ? "" : rep.problems.front().message);
  // Scrubbing again changes nothing and keeps the list.
  const auto again = dyno::record::scrub_run_dir(dir, ScrubPolicy{});
  EXPECT_TRUE(again.changed.empty());
  EXPECT_EQ(read_json(dir / "manifest.json").at("scrubbed_fields").as_array().size(),
            expected.size());
}

TEST(Scrub, HashedUuidsAreTheSameHashEverywhere) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path());
  ScrubPolicy p;
  p.gpu_uuids = UuidRule::kHash;
  dyno::record::scrub_run_dir(dir, p);
  const std::string hashed = "sha256:" + dyno::digest::sha256_hex(kUuid);
  const json::object m = read_json(dir / "manifest.json");
  EXPECT_EQ(S(m.at("hardware").at("gpus").at(0).at("uuid")), hashed);
  EXPECT_EQ(S(m.at("telemetry").at("backends").at(0).at("devices").at(0).at("uuid")), hashed);
  EXPECT_NE(dyno::record::read_file(dir / "evidence" / "engine.log").find("GPU 0 " + hashed),
            std::string::npos);
  // A second scrub does not hash the hash.
  EXPECT_TRUE(dyno::record::scrub_run_dir(dir, p).changed.empty());
}

TEST(Scrub, KeptCategoriesStayAndPromptHashesGoOnRequest) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path());
  ScrubPolicy p;
  dyno::scrub::keep_categories(p, "hosts,ports,gpu-uuids");
  p.prompt_hashes = true;
  p.strings = {"alice"};
  const auto out = dyno::record::scrub_run_dir(dir, p);
  const json::object m = read_json(dir / "manifest.json");
  EXPECT_EQ(S(m.at("hardware").at("host")), kHost);
  EXPECT_EQ(S(m.at("hardware").at("gpus").at(0).at("uuid")), kUuid);
  EXPECT_EQ(S(m.at("engine").at("reached").at("port")), "8000");
  EXPECT_EQ(S(m.at("workload").at("request_stream").at("sha256")), "<scrubbed:prompt-hash>");
  EXPECT_EQ(S(m.at("engine").at("engine_args").at("api_key")), "<scrubbed:secret>");  // always
  const std::string all = all_text(dir);
  EXPECT_EQ(all.find("alice"), std::string::npos);  // --scrub-string: everywhere, even outputs
  for (const char* s : kSecrets) EXPECT_EQ(all.find(s), std::string::npos) << s;
}

TEST(Scrub, PublishWritesAScrubbedCopyAndLeavesTheRecordAlone) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path() / "runs");
  const std::string before = all_text(dir);
  const auto out = dyno::record::publish_run(dir, tmp.path() / "public", ScrubPolicy{});
  EXPECT_FALSE(out.changed.empty());
  EXPECT_EQ(all_text(dir), before);
  const fs::path copy = tmp.path() / "public" / kId;
  EXPECT_TRUE(dyno::record::verify_run_dir(copy, /*schema=*/false).ok());
  EXPECT_EQ(all_text(copy).find(kHost), std::string::npos);
  // Only the finished copy is there (no temporary directory left behind).
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path() / "public")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
  EXPECT_THROW(dyno::record::publish_run(dir, tmp.path() / "public", ScrubPolicy{}),
               dyno::scrub::ScrubError);
}

TEST(Scrub, ARecordThatDoesNotVerifyIsNotScrubbed) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path());
  std::ofstream(dir / "summary.json", std::ios::app) << " ";
  try {
    dyno::record::scrub_run_dir(dir, ScrubPolicy{});
    FAIL() << "scrubbed a modified record";
  } catch (const dyno::scrub::ScrubError& e) {
    EXPECT_NE(std::string(e.what()).find("does not verify"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dyno::record::publish_run(dir, tmp.path() / "out", ScrubPolicy{}),
               dyno::scrub::ScrubError);
}

TEST(Scrub, DryRunWritesNothing) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path());
  const std::string before = all_text(dir);
  const auto out = dyno::record::scrub_run_dir(dir, ScrubPolicy{}, true);
  EXPECT_EQ(out.changed.size(), 26u);
  EXPECT_EQ(all_text(dir), before);
}

TEST(Scrub, FreeTextRules) {
  json::object m = sample_manifest("x", "t");
  m["hardware"].as_object()["host"] = "buildbox";
  const Scrubber s(ScrubPolicy{}, m);
  const auto scrub = [&s](std::string text) {
    s.scrub_text(text);
    return text;
  };
  // Secrets, whatever the policy.
  EXPECT_EQ(scrub("curl -H 'x-api-key: abc123'"), "curl -H 'x-api-key: <scrubbed:secret>'");
  EXPECT_EQ(scrub("OPENAI_API_KEY=sk-1 DYNO_API_KEY=sk-2 run"),
            "OPENAI_API_KEY=<scrubbed:secret> DYNO_API_KEY=<scrubbed:secret> run");
  EXPECT_EQ(scrub("{\"api_key\": \"sk-3\", \"max_tokens\": 5}"),
            "{\"api_key\": \"<scrubbed:secret>\", \"max_tokens\": 5}");
  EXPECT_EQ(scrub("--hf-token hf_x --token=t0k"),
            "--hf-token <scrubbed:secret> --token=<scrubbed:secret>");
  EXPECT_EQ(scrub("GET /v1/models?access_token=abc&x=1"),
            "GET /v1/models?access_token=<scrubbed:secret>&x=1");
  EXPECT_EQ(scrub("curl -H \"Authorization: Bearer abc\" -d '{\"x\": 1}'"),
            "curl -H \"Authorization: <scrubbed:secret>\" -d '{\"x\": 1}'");
  EXPECT_EQ(scrub("headers={'authorization': 'Bearer sk-abcdefgh'}"),
            "headers={'authorization': '<scrubbed:secret>'}");
  EXPECT_EQ(scrub("a basic profile; the bearer of news"), "a basic profile; the bearer of news");
  EXPECT_EQ(scrub("set first_token=12 max_tokens=5 tokens=7"),
            "set first_token=12 max_tokens=5 tokens=7");
  // Hosts and ports.
  EXPECT_EQ(scrub("https://api.example.com:8443/v1"), "https://<scrubbed:host>:<scrubbed:port>/v1");
  EXPECT_EQ(scrub("http://127.0.0.1:8000/v1"), "http://127.0.0.1:<scrubbed:port>/v1");
  EXPECT_EQ(scrub("http://[fe80::1]:80/x"), "http://<scrubbed:host>:<scrubbed:port>/x");
  EXPECT_EQ(scrub("peer 192.168.1.20 and 10.0.0.1:22; version 1.2.3 and 300.1.1.1"),
            "peer <scrubbed:host> and <scrubbed:host>:<scrubbed:port>; version 1.2.3 and "
            "300.1.1.1");
  EXPECT_EQ(scrub("cannot resolve host engine-7: Host not found"),
            "cannot resolve host <scrubbed:host>: Host not found");
  EXPECT_EQ(scrub("failed to connect to the server"), "failed to connect to the server");
  EXPECT_EQ(scrub("buildbox ran; buildbox.lan too; not rebuildbox or buildbox_x"),
            "<scrubbed:host> ran; <scrubbed:host>.lan too; not rebuildbox or buildbox_x");
  // Paths: personal ones go, system locations and API paths stay.
  EXPECT_EQ(scrub("read /home/bob/a.json and /usr/lib/libnvidia-ml.so.1, /sys/class/drm"),
            "read <scrubbed:path> and /usr/lib/libnvidia-ml.so.1, /sys/class/drm");
  EXPECT_EQ(scrub("PATH=/usr/bin:/opt/me/bin"), "PATH=/usr/bin:<scrubbed:path>");
  EXPECT_EQ(scrub("POST /v1/chat/completions and /metrics"),
            "POST /v1/chat/completions and /metrics");
  EXPECT_EQ(scrub("model meta-llama/Llama-3.1-8B and 1/2"),
            "model meta-llama/Llama-3.1-8B and 1/2");
  // GPU UUIDs seen only in text.
  EXPECT_EQ(
      scrub("GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee, MIG-11111111-2222-3333-4444-555555555555"),
      "<scrubbed:gpu-uuid>, <scrubbed:gpu-uuid>");
}

TEST(Scrub, PolicyFilesAndCategories) {
  TempDir tmp;
  const fs::path file = tmp.path() / "policy.json";
  std::ofstream(file) << R"({"keep": ["ports", "paths"], "gpu_uuids": "hash",
                             "prompt_hashes": "scrub", "strings": ["project-x"]})";
  const ScrubPolicy p = dyno::scrub::read_scrub_policy(file);
  EXPECT_TRUE(p.hosts);
  EXPECT_FALSE(p.ports);
  EXPECT_FALSE(p.paths);
  EXPECT_TRUE(p.containers);
  EXPECT_EQ(p.gpu_uuids, UuidRule::kHash);
  EXPECT_TRUE(p.prompt_hashes);
  EXPECT_EQ(p.strings, std::vector<std::string>{"project-x"});
  EXPECT_EQ(dyno::scrub::policy_to_json(p), (json::object{{"keep", json::array{"ports", "paths"}},
                                                          {"gpu_uuids", "hash"},
                                                          {"prompt_hashes", "scrub"},
                                                          {"strings", json::array{"project-x"}}}));
  const auto error_of = [&](const std::string& text) {
    std::ofstream(file, std::ios::trunc) << text;
    try {
      dyno::scrub::read_scrub_policy(file);
    } catch (const dyno::scrub::ScrubError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(R"({"keep": ["hosts"], "colour": 1})").find("key 'colour' is unknown"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"gpu_uuids": "shred"})").find("'gpu_uuids' must be"), std::string::npos);
  EXPECT_NE(error_of(R"({"keep": ["secrets"]})").find("cannot be kept"), std::string::npos);
  EXPECT_NE(error_of(R"({"keep": ["hostz"]})").find("unknown category 'hostz'"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("not an object"), std::string::npos);
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  ScrubPolicy q;
  EXPECT_THROW(dyno::scrub::keep_categories(q, "hosts,nope"), dyno::scrub::ScrubError);
}

TEST(Scrub, SecretKeys) {
  for (const char* k : {"api_key", "API-KEY", "--api-key", "Authorization", "cookie", "HF_TOKEN",
                        "OPENAI_API_KEY", "password", "client_secret", "token"}) {
    EXPECT_TRUE(dyno::scrub::is_secret_key(k)) << k;
  }
  for (const char* k : {"api_key_used", "max_tokens", "first_token", "output_tokens", "tokens",
                        "token_count_source", "key", "secretary"}) {
    EXPECT_FALSE(dyno::scrub::is_secret_key(k)) << k;
  }
}

TEST(Scrub, RedactSecretsTouchesNothingElse) {
  json::value doc = sensitive_manifest();
  const auto changed = dyno::scrub::redact_secrets(doc);
  EXPECT_EQ(changed,
            (std::vector<std::string>{"/engine/engine_args/api_key", "/engine/launch_line/11",
                                      "/engine/launch_line/16"}));
  EXPECT_EQ(S(doc.at("engine").at("engine_args").at("api_key")), "<scrubbed:secret>");
  EXPECT_EQ(S(doc.at("hardware").at("host")), kHost);
  EXPECT_EQ(S(doc.at("model").at("id")), "/data/alice/models/Llama-3.1-8B-Instruct");
  EXPECT_EQ(S(doc.at("engine").at("reached").at("port")), "8000");
}

TEST(Scrub, TheRunWriterNeverWritesASecretKeyedValue) {
  TempDir tmp;
  dyno::record::RunWriter writer(tmp.path(), "20261129T214815Z-3fa9c1", false);
  writer.write_json("manifest.json", sensitive_manifest());
  const std::string text = dyno::record::read_file(writer.dir() / "manifest.json");
  for (const char* s : {"sk-in-args-0001", "hf_launch_0002", "sk-flag-0003"}) {
    EXPECT_EQ(text.find(s), std::string::npos) << s;
  }
  EXPECT_NE(text.find(kHost), std::string::npos);  // not a secret: scrubbed on publishing only
}

TEST(Scrub, LiteralStringsMatchWholeWordsAndLeaveTheBookkeepingAlone) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path());
  ScrubPolicy p;
  p.strings = {"a", "engine", "alice"};  // "engine" is also the evidence file's name
  dyno::record::scrub_run_dir(dir, p);
  const json::object m = read_json(dir / "manifest.json");
  EXPECT_EQ(S(m.at("evidence").at(0).at("path")), "evidence/engine.log");
  EXPECT_EQ(S(m.at("engine").at("reached").at("kind")), "launched");  // no "a" inside words
  EXPECT_EQ(S(m.at("warnings").at(0).at("code")), "engine_slow");     // '_' joins a word
  const auto rep = dyno::record::verify_run_dir(dir, /*schema=*/false);
  EXPECT_TRUE(rep.ok()) << (rep.ok() ? "" : rep.problems.front().message);
  const Scrubber s(p, m);
  std::string text = "malice and alice, a cat, 'engine' and engines";
  s.scrub_text(text);
  EXPECT_EQ(text,
            "malice and <scrubbed:string>, <scrubbed:string> cat, '<scrubbed:string>' and "
            "engines");
}

TEST(Scrub, AScoresExpectedAnswerAndPatternAreDataLikeTheOutput) {
  // Kept for `dyno rescore`: only literal names are replaced in them, no pattern (an answer
  // that looks like a path is the data set's, not the machine's).
  TempDir tmp;
  const std::string requests =
      "{\"index\":0,\"status\":\"ok\",\"error\":null,\"score\":{\"correct\":true,"
      "\"extracted\":\"/srv/x\",\"scorer\":\"regex\",\"expected\":\"/srv/x on gpu-node-17\","
      "\"pattern\":\"(/srv/[a-z]+) 10.1.2.3\"},\"output_text\":\"/srv/x\"}\n";
  const fs::path dir = write_run(tmp.path(), sensitive_manifest_without_evidence(),
                                 sample_summary(kId, 1, 1), requests);
  dyno::record::scrub_run_dir(dir, ScrubPolicy{});
  const std::string text = dyno::record::read_file(dir / "requests.jsonl");
  EXPECT_NE(text.find("\"expected\":\"/srv/x on <scrubbed:host>\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"pattern\":\"(/srv/[a-z]+) 10.1.2.3\""), std::string::npos) << text;
}

TEST(Scrub, PublishingIntoTheRunDirectoryItselfIsRefusedAndNamed) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path() / "runs");
  const std::string before = all_text(dir);
  for (const fs::path& out : {dir, dir / "public"}) {
    try {
      dyno::record::publish_run(dir, out, ScrubPolicy{});
      ADD_FAILURE() << "published into " << out;
    } catch (const dyno::scrub::ScrubError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("is inside the run directory " + dir.string()), std::string::npos)
          << what;
    }
  }
  EXPECT_EQ(all_text(dir), before);
  EXPECT_TRUE(dyno::record::verify_run_dir(dir, /*schema=*/false).ok());
}

TEST(Scrub, AFailedCopySaysWhyNotSuccess) {
  TempDir tmp;
  const fs::path dir = write_sensitive(tmp.path() / "runs");
  const fs::path out = tmp.path() / "public";
  // The copy fails like a full disk: no file may grow past 100 bytes (in a child process).
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit rl{100, 100};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    try {
      dyno::record::publish_run(dir, out, ScrubPolicy{});
    } catch (const dyno::scrub::ScrubError& e) {
      const std::string what = e.what();
      // A cause, never "Success": "File too large" (EFBIG), or for a file of a few kB the
      // "Input/output error" std::filesystem::copy_file reports here when it is cut short.
      const bool names_cause = (what.find("File too large") != std::string::npos ||
                                what.find("Input/output error") != std::string::npos) &&
                               what.find("Success") == std::string::npos &&
                               what.find("cannot copy " + dir.string()) != std::string::npos;
      ::_exit(names_cause ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::is_empty(out)) << "a half copy was left behind";
}
