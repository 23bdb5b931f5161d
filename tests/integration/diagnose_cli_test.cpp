// `dyno runs diagnose` end to end (docs/metrics.md "Diagnosis"): the embedded sim serving one
// request at a time (a profile with max_running_seqs 1, as llama.cpp with one slot) under
// eight users queues them, and the diagnosis says so from the server's running and waiting
// gauges; one user at a time does not queue; a run that does not exist is a usage error.
#include <fstream>

#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class Diagnose : public Integration {
 protected:
  /// small-gpu with one running sequence at a time.
  fs::path one_slot_profile() {
    const fs::path p = dir_ / "one_slot.json";
    std::ofstream(p) << json::serialize(
        json::object{{"base", "small-gpu"}, {"max_running_seqs", 1}});
    return p;
  }

  /// `dyno runs diagnose <dir> --json`: the queue finding.
  json::object queue_finding(const fs::path& run_dir) {
    const Outcome o = dyno({"runs", "diagnose", run_dir.string(), "--json"});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    const json::object d = json::parse(o.out).as_object();
    EXPECT_EQ(d.at("run_dir").as_string(), run_dir.string());
    const json::array& findings = d.at("findings").as_array();
    EXPECT_EQ(findings.size(), 5u);
    const json::object& q = findings.at(0).as_object();
    EXPECT_EQ(q.at("name").as_string(), "queue");
    return q;
  }

  static double number(const json::value& v) { return v.to_number<double>(); }
};

TEST_F(Diagnose, OneSlotUnderEightUsersQueuesInTheServer) {
  const fs::path profile = one_slot_profile();
  const Outcome o = run_dyno({"--profile", profile.string(), "-c", "8", "-n", "16",
                              "--input-tokens", "32", "--output-tokens", "24"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object q = queue_finding(o.run_dir);
  EXPECT_EQ(q.at("verdict").as_string(), "yes") << json::serialize(q);
  const json::object& e = q.at("evidence").as_object();
  EXPECT_NE(std::string(e.at("source").as_string()).find("server gauges"), std::string::npos)
      << json::serialize(e);
  EXPECT_EQ(number(e.at("running_max_requests")), 1.0);
  // Seven of the eight wait while one runs (a scrape may fall between one leaving and the next
  // being admitted, or in the drain at the end).
  EXPECT_GE(number(e.at("waiting_max_requests")), 6.0);
  EXPECT_LE(number(e.at("waiting_max_requests")), 7.0);
  EXPECT_GE(number(e.at("waiting_median_requests")), 1.0);
  EXPECT_EQ(number(e.at("load_concurrency_requests")), 8.0);
  EXPECT_EQ(e.at("engine").as_string(), "dyno-sim");

  // The console's form: one line per finding, the queue first, by its run id.
  const std::string id = o.run_dir.filename().string();
  const Outcome text = dyno({"runs", "diagnose", id, "--runs-root", runs()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("queue: yes — requests queued in the server: it ran at most 1 request "
                          "at once while up to"),
            std::string::npos)
      << text.out;
  for (const char* name :
       {"kv_cache: ", "prefill_interrupts_decode: ", "client_saturated: ", "network: "}) {
    EXPECT_NE(text.out.find(std::string("\n") + name), std::string::npos) << name << text.out;
  }
}

TEST_F(Diagnose, OneUserAtATimeDoesNotQueue) {
  const fs::path profile = one_slot_profile();
  const Outcome o = run_dyno({"--profile", profile.string(), "-c", "1", "-n", "6", "--input-tokens",
                              "32", "--output-tokens", "24"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json::object q = queue_finding(o.run_dir);
  EXPECT_EQ(q.at("verdict").as_string(), "no") << json::serialize(q);
  const json::object& e = q.at("evidence").as_object();
  EXPECT_NE(std::string(e.at("source").as_string()).find("server gauges"), std::string::npos);
  EXPECT_EQ(number(e.at("waiting_median_requests")), 0.0);
  // A scrape may catch the next request in the instant before the engine admits it.
  EXPECT_LE(number(e.at("waiting_max_requests")), 1.0);
  EXPECT_EQ(number(e.at("running_max_requests")), 1.0);
}

TEST_F(Diagnose, ARunThatIsNotThereIsAUsageError) {
  fs::create_directories(dir_ / "runs");
  const Outcome o = dyno({"runs", "diagnose", "nosuchrun", "--runs-root", runs()});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("nosuchrun"), std::string::npos) << o.err;
  const Outcome d = dyno({"runs", "diagnose", (dir_ / "nothere").string() + "/"});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find("nothere"), std::string::npos) << d.err;
}

}  // namespace
