// `dyno quick` through the binary (app/quick_command.h): against `dyno sim` in another process,
// by --url and by discovery on the ports DYNO_QUICK_PORTS names (never the real usual ports),
// and its refusals when nothing answers.
#include "free_port.h"
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

using dyno::testing::free_loopback_port;

/// A number printed with d decimals stands for the record's value when they differ by at most
/// half its last digit.
void expect_printed(const std::string& printed, double recorded, const std::string& what) {
  const std::size_t dot = printed.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(printed.size() - dot - 1);
  EXPECT_LE(std::fabs(std::stod(printed) - recorded), 0.5 * std::pow(10.0, -decimals) + 1e-9)
      << what << ": printed " << printed << ", recorded " << recorded;
}

/// The port of a sim URL "http://127.0.0.1:PORT/v1".
std::string port_of(const std::string& url) {
  std::smatch m;
  const std::regex re(":([0-9]+)/v1$");
  if (!std::regex_search(url, m, re)) throw std::runtime_error("no port in " + url);
  return m[1];
}

class Quick : public Integration {
 protected:
  /// A sim whose decode step grows 5 ms per running sequence (1 ms base): TPOT ≈ 1 + 5·C ms,
  /// so a 50 ms TPOT objective holds up to 9 users at once.
  std::string start_stepped_sim() {
    std::ofstream(dir_ / "profile.json")
        << R"({"base":"small-gpu","max_running_seqs":64,"prefill_tokens_per_s":1000000,)"
        << R"("step_base_s":0.001,"decode_seq_s":0.005})";
    return start_sim({"--profile", (dir_ / "profile.json").string()});
  }
};

TEST_F(Quick, AgainstTheSimItsSentenceSaysWhatTheRecordsHold) {
  const std::string url = start_stepped_sim();
  const Outcome o = dyno({"quick", "--url", url, "--runs-root", runs(), "--output-tokens", "16",
                          "--max-users", "16", "-q"});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  // One paragraph on stdout: who, one user, the capacity, the records.
  std::smatch m;
  const std::regex one_user(
      "^dyno sim at 127\\.0\\.0\\.1:[0-9]+ \\(model dyno-sim\\): one user gets the first token in "
      "([0-9.]+) ms and ([0-9.]+) tok/s \\(medians of 8 requests\\)\\. ");
  ASSERT_TRUE(std::regex_search(o.out, m, one_user)) << o.out;
  const std::string ttft = m[1], rate = m[2];
  const std::regex records("Records: one user (\\S+), campaign (\\S+)\\n$");
  ASSERT_TRUE(std::regex_search(o.out, m, records)) << o.out;
  const fs::path user_dir = std::string(m[1]);
  const fs::path campaign_file = std::string(m[2]);

  // The one-user numbers are the one-user record's medians.
  check_record(user_dir);
  const json::object summary = read_json(user_dir / "summary.json");
  EXPECT_EQ(summary.at("requests").at("ok").as_int64(), 8);
  EXPECT_EQ(summary.at("requests").at("warmup_discarded").as_int64(), 1);
  expect_printed(ttft, summary.at("latency_ms").at("ttft").at("p50").to_number<double>(), "TTFT");
  expect_printed(rate,
                 summary.at("rates_tok_s").at("decode_rate_per_user").at("p50").to_number<double>(),
                 "decode rate");
  const json::object manifest = read_json(user_dir / "manifest.json");
  EXPECT_EQ(manifest.at("load").at("concurrency").as_int64(), 1);
  // One user decodes a token per ~6 ms step: about 170 tok/s.
  const double r = std::stod(rate);
  EXPECT_GT(r, 80.0);
  EXPECT_LT(r, 200.0);

  // The capacity is the campaign file's answer.
  ASSERT_TRUE(fs::exists(campaign_file)) << campaign_file;
  const json::object campaign = read_json(campaign_file);
  const json::object& answer = campaign.at("capacity").at("answer").as_object();
  ASSERT_EQ(answer.at("status").as_string(), "found") << json::serialize(answer);
  const double capacity = answer.at("capacity").to_number<double>();
  const std::regex said("Capacity ([0-9]+) users: ");
  ASSERT_TRUE(std::regex_search(o.out, m, said)) << o.out;
  EXPECT_EQ(std::stod(m[1]), capacity) << o.out;
  // TPOT ≈ 1 + 5·C ms: 50 ms holds at 9 users, not at 10 (a busy test machine only lowers it).
  EXPECT_GE(capacity, 4.0);
  EXPECT_LE(capacity, 9.0);
  stop_sims();
}

TEST_F(Quick, FindsTheSimOnTheListedPortsAndNamesIt) {
  const std::string url = start_stepped_sim();
  const std::string ports = std::to_string(free_loopback_port()) + "," + port_of(url);
  const Outcome o = dyno({"quick", "--runs-root", runs(), "--output-tokens", "8", "--max-users",
                          "2", "--slo", "ttft_p90=2s,tpot_p90=1s,errors=50%"},
                         {{"DYNO_QUICK_PORTS", ports}});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.err.find("found a server at 127.0.0.1:" + port_of(url)), std::string::npos) << o.err;
  EXPECT_EQ(o.out.rfind("dyno sim at 127.0.0.1:" + port_of(url) + " (model dyno-sim): ", 0), 0u)
      << o.out;
  stop_sims();
}

TEST_F(Quick, RefusesWhenNothingListensNamingThePortsItTried) {
  const int a = free_loopback_port();
  const int b = free_loopback_port();
  const Outcome o = dyno({"quick", "--runs-root", runs()},
                         {{"DYNO_QUICK_PORTS", std::to_string(a) + "," + std::to_string(b)}});
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("no local server found"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(std::to_string(a)), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(std::to_string(b)), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--url"), std::string::npos) << o.err;
  EXPECT_EQ(record_count(), 0u);
}

TEST_F(Quick, RefusesAUrlThatDoesNotAnswerAndABadPortList) {
  const std::string dead = "http://127.0.0.1:" + std::to_string(free_loopback_port()) + "/v1";
  Outcome o = dyno({"quick", "--url", dead, "--runs-root", runs()});
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("--url " + dead), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--model"), std::string::npos) << o.err;
  o = dyno({"quick", "--runs-root", runs()}, {{"DYNO_QUICK_PORTS", "8080,99999"}});
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("DYNO_QUICK_PORTS"), std::string::npos) << o.err;
  o = dyno({"quick", "--url", "ftp://x", "--runs-root", runs()});
  EXPECT_EQ(o.exit_code, 2) << o.err;
  EXPECT_NE(o.err.find("--url"), std::string::npos) << o.err;
  EXPECT_EQ(record_count(), 0u);
}

}  // namespace
