#include "sim/profile.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace dyno::sim {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = dir_ / "profile.json";
    std::ofstream(path_) << text;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  dyno::testing::TempDir dir_{"dyno-sim-profile"};
  std::filesystem::path path_;
};

std::string error_of(const std::string& text) {
  TempFile f(text);
  try {
    load_profile_file(f.path());
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

TEST(Profile, Builtins) {
  const auto names = builtin_profile_names();
  ASSERT_EQ(names, (std::vector<std::string>{"small-gpu", "large-gpu", "cpu", "reasoning", "spec",
                                             "firehose"}));
  for (const auto& name : names) {
    const Profile p = builtin_profile(name);
    EXPECT_EQ(p.name, name);
    EXPECT_FALSE(p.description.empty());
    EXPECT_EQ(resolve_profile(name).name, name);
    // Round trip through the JSON file format.
    TempFile f(profile_to_json(p));
    const Profile q = load_profile_file(f.path());
    EXPECT_EQ(profile_to_json(q), profile_to_json(p));
  }
  EXPECT_TRUE(builtin_profile("firehose").zero_delay);
  EXPECT_EQ(builtin_profile("cpu").max_running_seqs, 4u);
  EXPECT_DOUBLE_EQ(builtin_profile("reasoning").reasoning_fraction, 0.5);
  EXPECT_EQ(builtin_profile("spec").spec_tokens, 3u);
  EXPECT_THROW(builtin_profile("nope"), ProfileError);
  try {
    builtin_profile("nope");
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("small-gpu"), std::string::npos);
  }
}

TEST(Profile, FileOverridesBase) {
  TempFile f(R"({"base":"cpu","prefill_tokens_per_s":500,"step_base_s":0.1,"model_name":"m"})");
  const Profile p = load_profile_file(f.path());
  EXPECT_EQ(p.max_running_seqs, 4u);  // from cpu
  EXPECT_DOUBLE_EQ(p.prefill_tokens_per_s, 500.0);
  EXPECT_DOUBLE_EQ(p.step_base_s, 0.1);
  EXPECT_EQ(p.model_name, "m");
  EXPECT_EQ(p.name, f.path().stem().string());
  EXPECT_EQ(resolve_profile(f.path().string()).model_name, "m");

  TempFile g(R"({"spec_tokens":2,"spec_acceptance":0.5,"name":"mine"})");
  const Profile q = load_profile_file(g.path());
  EXPECT_EQ(q.name, "mine");
  EXPECT_EQ(q.spec_tokens, 2u);
  EXPECT_EQ(q.max_running_seqs, Profile{}.max_running_seqs);  // defaults otherwise
}

TEST(Profile, Errors) {
  std::string e = error_of(R"({"prefil_tokens_per_s":1})");
  EXPECT_NE(e.find("unknown key \"prefil_tokens_per_s\""), std::string::npos) << e;
  EXPECT_NE(e.find("profile file "), std::string::npos) << e;
  e = error_of(R"({"max_running_seqs":"many"})");
  EXPECT_NE(e.find("\"max_running_seqs\" must be an integer"), std::string::npos) << e;
  e = error_of(R"({"step_token_budget":1.5})");
  EXPECT_NE(e.find("step_token_budget"), std::string::npos) << e;
  e = error_of(R"({"zero_delay":1})");
  EXPECT_NE(e.find("zero_delay"), std::string::npos) << e;
  e = error_of(R"({"prefill_tokens_per_s":0})");
  EXPECT_NE(e.find("prefill_tokens_per_s must be a finite number > 0"), std::string::npos) << e;
  e = error_of(R"({"spec_acceptance":1.5})");
  EXPECT_NE(e.find("spec_acceptance must be in [0, 1]"), std::string::npos) << e;
  e = error_of(R"({"prefill_ctx_token_s":-1e-9})");
  EXPECT_NE(e.find("prefill_ctx_token_s must be a finite number >= 0"), std::string::npos) << e;
  e = error_of(R"({"shared_kv_token_s":-1e-9})");
  EXPECT_NE(e.find("shared_kv_token_s must be a finite number >= 0"), std::string::npos) << e;
  e = error_of(R"({"finish_s":-0.001})");
  EXPECT_NE(e.find("finish_s must be a finite number >= 0"), std::string::npos) << e;
  e = error_of(R"({"prefix_cache_block_tokens":0})");
  EXPECT_NE(e.find("prefix_cache_block_tokens must be >= 1"), std::string::npos) << e;
  e = error_of(R"({"prefix_cache_blocks":-1})");
  EXPECT_NE(e.find("prefix_cache_blocks must be >= 0"), std::string::npos) << e;
  e = error_of(R"({"base":"gpu"})");
  EXPECT_NE(e.find("\"base\""), std::string::npos) << e;
  e = error_of("{not json");
  EXPECT_NE(e.find("invalid JSON"), std::string::npos) << e;
  e = error_of("[1]");
  EXPECT_NE(e.find("JSON object"), std::string::npos) << e;
  EXPECT_THROW(load_profile_file("/nonexistent/dir/p.json"), ProfileError);
  EXPECT_THROW(resolve_profile("no-such-profile"), ProfileError);
}

TEST(Profile, ToJsonHasEveryField) {
  const auto v = boost::json::parse(profile_to_json(builtin_profile("small-gpu")));
  const auto& o = v.as_object();
  EXPECT_EQ(o.size(), 24u);
  EXPECT_EQ(o.at("prefill_ctx_token_s").to_number<double>(), 0.0);
  EXPECT_EQ(o.at("shared_kv_token_s").to_number<double>(), 0.0);
  EXPECT_EQ(o.at("finish_s").to_number<double>(), 0.0);
  EXPECT_EQ(o.at("image_tokens").to_number<int>(), 576);
  EXPECT_EQ(o.at("name").as_string(), "small-gpu");
  EXPECT_EQ(o.at("max_running_seqs").to_number<int>(), 256);
}

}  // namespace
}  // namespace dyno::sim
