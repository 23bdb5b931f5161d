// The campaign summary record end to end, through the `dyno` binary: what a campaign file
// holds on its own (headline keys, telemetry over the session, VRAM after load, readiness),
// `runs list --campaigns`, and `runs verify` of a campaign and of every record it pins.
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

class Campaigns : public Integration {
 protected:
  fs::path root() const { return dir_ / "runs"; }

  /// A fake GPU (tests/telemetry/fake_nvml) drawing 300 W with 6 GB in use.
  fs::path gpu_trace() { return fake_gpu_trace(300, 6000000000, 60, 64, 1900); }

  /// `dyno speed` on the embedded simulated engine with the fake GPU; dyno is started by a
  /// shell that hands it its own pid, so the fake reports the engine's process (dyno itself).
  json::object speed_campaign() {
    const std::string cmd =
        "FAKE_NVML_PID=$$ FAKE_NVML_TRACE='" + gpu_trace().string() + "' exec '" +
        std::string(DYNO_BINARY) + "' speed --json -q --runs-root '" + root().string() +
        "' --passes fr,fr2 --burst 3 --output-tokens 24 --input-tokens 16 --nvml-library '" +
        std::string(FAKE_NVML_PATH) + "' --telemetry-period-ms 50";
    Child c({"/bin/sh", "-c", cmd}, (dir_ / "speed.out").string(), (dir_ / "speed.err").string());
    EXPECT_EQ(c.wait(), 0) << c.err();
    return json::parse(c.out()).as_object();
  }
};

TEST_F(Campaigns, TheCampaignFileStandsAloneAndVerifies) {
  const json::object doc = speed_campaign();
  const std::string id(doc.at("campaign_id").as_string());
  const fs::path file = root() / "campaigns" / (id + ".json");
  const json::object on_disk = read_json(file);
  // Stable headline keys: <pass>.solo and <pass>.agg, the selected repetition's figures.
  const auto& h = on_disk.at("headline").as_object();
  for (const char* pass : {"fr", "fr2"}) {
    ASSERT_TRUE(h.contains(pass)) << on_disk;
    EXPECT_GT(h.at(pass).at("solo").at("tok_s").as_double(), 0.0);
    EXPECT_GT(h.at(pass).at("solo").at("ttft_ms").as_double(), 0.0);
    EXPECT_EQ(h.at(pass).at("agg").at("ok").to_number<double>(), 3.0);
  }
  // Telemetry over the session: four measured windows, their seconds, energy at 300 W.
  const auto& t = on_disk.at("session_telemetry").as_object();
  EXPECT_EQ(t.at("windows").as_int64(), 4);
  const double covered = t.at("covered_s").as_double();
  EXPECT_GT(covered, 0.0);
  // ...the sums of what the cells' records say (the energy arithmetic itself is checked in
  // server_side_test.cpp and tests/telemetry).
  double energy = 0, window = 0, peak = 0;
  for (const auto& c : on_disk.at("cells").as_array()) {
    const std::string run(c.at("runs").as_array()[0].at("run_id").as_string());
    const json::object e = read_json(root() / run / "summary.json").at("energy").as_object();
    energy += e.at("energy_j").as_double();
    window += e.at("window_s").as_double();
    peak = std::max(peak, e.at("power_peak_w").as_double());
  }
  EXPECT_NEAR(t.at("energy_j").as_double(), energy, 1e-9 * energy);
  EXPECT_NEAR(covered, window, 1e-12 * window);
  EXPECT_NEAR(t.at("power_mean_w").as_double(), energy / window, 1e-9 * energy);
  EXPECT_EQ(t.at("power_peak_w").as_double(), peak);
  EXPECT_NEAR(peak, 300.0, 1e-6);
  EXPECT_EQ(t.at("devices").as_array().at(0).at("temperature_max_c").as_double(), 64.0);
  EXPECT_EQ(t.at("vram_peak_bytes").to_number<double>(), 6e9);
  // VRAM once the engine was ready, per GPU and by kind.
  const auto& vram = on_disk.at("vram_after_load").as_object();
  EXPECT_EQ(vram.at("snapshot"), "after_load");
  const auto& gpu = vram.at("devices").as_array().at(0).as_object();
  EXPECT_EQ(gpu.at("used_bytes").as_int64(), 6'000'000'000LL);
  EXPECT_EQ(gpu.at("engine_process_bytes").as_int64(), 1LL << 30);
  // The same snapshot is in each cell's summary.
  const std::string first(
      on_disk.at("cells").as_array()[0].at("runs").as_array()[0].at("run_id").as_string());
  const json::object summary = read_json(root() / first / "summary.json");
  EXPECT_EQ(summary.at("energy")
                .at("vram_after_load")
                .at("devices")
                .as_array()
                .at(0)
                .at("engine_process_bytes"),
            gpu.at("engine_process_bytes"));
  EXPECT_TRUE(on_disk.at("readiness").at("ready_s").is_null());  // nothing was launched
  EXPECT_TRUE(on_disk.at("warnings").is_array());
  EXPECT_TRUE(on_disk.at("energy_flags").is_array());
  EXPECT_EQ(on_disk.at("sha256").as_string().size(), 64u);
  for (const auto& c : on_disk.at("cells").as_array()) {
    EXPECT_EQ(c.at("runs").as_array()[0].at("record_sha256").as_string().size(), 64u);
  }

  // Listed by runs list --campaigns.
  const Outcome list =
      dyno({"runs", "list", "--campaigns", "--json", "--runs-root", root().string()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json::array rows = json::parse(list.out).as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("campaign_id"), json::value(id));
  EXPECT_EQ(rows[0].at("protocol"), "speed");
  EXPECT_EQ(rows[0].at("cells").as_int64(), 4);
  EXPECT_EQ(rows[0].at("runs").as_int64(), 4);
  const Outcome none =
      dyno({"runs", "list", "--campaigns", "--protocol", "ladder", "--runs-root", root().string()});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("0 campaigns"), std::string::npos) << none.out;

  // Verified alone, and with --all beside the runs.
  const Outcome one = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("ok      campaign " + id), std::string::npos) << one.out;
  const Outcome all = dyno({"runs", "verify", "--all", "--runs-root", root().string()});
  EXPECT_EQ(all.exit_code, 0) << all.out << all.err;
  EXPECT_NE(all.out.find("4 of 4 runs verify"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("1 of 1 campaigns verify"), std::string::npos) << all.out;
}

/// The campaign file's text with its self-digest made to match again, as a forger would: the
/// text without the last member hashed, that member put back with the new digest.
std::string resigned(const std::string& text) {
  const std::size_t at = text.rfind(",\n  \"sha256\": \"");
  EXPECT_NE(at, std::string::npos);
  const std::string body = text.substr(0, at) + "\n}\n";
  return text.substr(0, at) + ",\n  \"sha256\": \"" + dyno::workload::test::openssl_sha256(body) +
         "\"\n}\n";
}

TEST_F(Campaigns, AForgedHeadlineWithARecomputedDigestIsRefused) {
  const json::object doc = speed_campaign();
  const std::string id(doc.at("campaign_id").as_string());
  const fs::path file = root() / "campaigns" / (id + ".json");
  const std::string original = Child::slurp(file.string());
  EXPECT_EQ(resigned(original), original);  // the forger's digest is the writer's
  const Outcome ok = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;

  // headline.fr.solo.tok_s forged, the file's digest recomputed: the file agrees with itself,
  // not with the records it pins.
  std::string forged = original;
  const std::size_t h = forged.find("\"headline\": {");
  const std::size_t at = forged.find("\"tok_s\": ", h);
  ASSERT_NE(at, std::string::npos);
  forged.insert(at + 9, "9");
  write_file(file, resigned(forged));
  const Outcome a = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(a.exit_code, 3) << a.out;
  EXPECT_EQ(a.out.find("sha256 does not match"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("recompute: campaign " + id + ": headline.fr.solo.tok_s is 9"),
            std::string::npos)
      << a.out;
  EXPECT_NE(a.out.find("recomputed from the records it pins"), std::string::npos) << a.out;
  EXPECT_NE(a.err.find("1 campaign fails verification"), std::string::npos) << a.err;

  // The session's telemetry forged the same way: named too.
  std::string hot = original;
  const std::size_t t = hot.find("\"session_telemetry\": {");
  const std::size_t e = hot.find("\"energy_j\": ", t);
  ASSERT_NE(e, std::string::npos);
  hot.insert(e + 12, "1");
  write_file(file, resigned(hot));
  const Outcome b = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(b.exit_code, 3) << b.out;
  EXPECT_NE(b.out.find("session_telemetry.energy_j is "), std::string::npos) << b.out;
}

TEST_F(Campaigns, AChangedCampaignOrAChangedRecordFailsVerification) {
  const json::object doc = speed_campaign();
  const std::string id(doc.at("campaign_id").as_string());
  const fs::path file = root() / "campaigns" / (id + ".json");
  const std::string original = Child::slurp(file.string());

  // A figure edited in the campaign file, in place.
  std::string edited = original;
  const std::size_t at = edited.find("\"tok_s\": ");
  ASSERT_NE(at, std::string::npos);
  edited.insert(at + 9, "9");
  write_file(file, edited);
  const Outcome a = dyno({"runs", "verify", file.string()});  // by its path
  EXPECT_EQ(a.exit_code, 3);
  EXPECT_NE(a.out.find("sha256 does not match"), std::string::npos) << a.out;
  EXPECT_NE(a.err.find("1 campaign fails verification"), std::string::npos) << a.err;
  // Re-formatted: the same content, other bytes.
  write_file(file, json::serialize(json::parse(original)));
  const Outcome b = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(b.exit_code, 3);
  EXPECT_NE(b.out.find("re-formatted"), std::string::npos) << b.out;
  write_file(file, original);

  // A record rewritten after the campaign, its own SHA256SUMS made to match again: its files
  // agree with each other, but the run index remembers the record's digest from when dyno
  // wrote it (the witness, named), and the campaign that pinned it fails too.
  const std::string run(
      doc.at("cells").as_array()[1].at("runs").as_array()[0].at("run_id").as_string());
  const fs::path run_dir = root() / run;
  json::object summary = read_json(run_dir / "summary.json");
  summary["warnings"] = json::array{};
  write_file(run_dir / "summary.json", json::serialize(summary));
  Child resum({"/bin/sh", "-c",
               "cd '" + run_dir.string() +
                   "' && grep -v '  summary.json$' SHA256SUMS > S && sha256sum summary.json >> S "
                   "&& mv S SHA256SUMS"},
              (dir_ / "resum.out").string(), (dir_ / "resum.err").string());
  ASSERT_EQ(resum.wait(), 0) << resum.err();
  const Outcome alone = dyno({"runs", "verify", run, "--runs-root", root().string()});
  EXPECT_EQ(alone.exit_code, 3) << alone.out;
  EXPECT_NE(alone.out.find("index: SHA256SUMS: sha256 "), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("the digest the run index (" + (root() / "index.sqlite").string() +
                           ") remembers"),
            std::string::npos)
      << alone.out;
  // A listing reads the changed record again and still remembers the digest.
  ASSERT_EQ(dyno({"runs", "list", "--runs-root", root().string()}).exit_code, 0);
  EXPECT_EQ(dyno({"runs", "verify", run, "--runs-root", root().string()}).exit_code, 3);
  // Without an index the record's files are all there is: it verifies, and a note says why.
  fs::rename(root() / "index.sqlite", dir_ / "index.sqlite");
  const Outcome bare = dyno({"runs", "verify", run, "--runs-root", root().string()});
  EXPECT_EQ(bare.exit_code, 0) << bare.out;
  fs::rename(dir_ / "index.sqlite", root() / "index.sqlite");
  const Outcome c = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(c.exit_code, 3);
  EXPECT_NE(c.out.find(run + "/SHA256SUMS"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("the record changed after the campaign"), std::string::npos) << c.out;

  // A run the campaign lists is gone.
  fs::remove_all(run_dir);
  const Outcome gone = dyno({"runs", "verify", id, "--runs-root", root().string(), "--json"});
  EXPECT_EQ(gone.exit_code, 3);
  const json::array reports = json::parse(gone.out).as_array();
  EXPECT_FALSE(reports[0].at("ok").as_bool());
  EXPECT_NE(gone.out.find("the record is not in"), std::string::npos) << gone.out;
}

}  // namespace
