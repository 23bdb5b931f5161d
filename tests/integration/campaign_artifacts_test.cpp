// What a campaign file carries beside its figures (issue 34), through the `dyno` binary: what
// the user declares of the campaign (name, notes, status, hardware label, evidence), the energy
// source and sampling derived from the cells' telemetry, a ladder's prefill cells that decode N
// tokens, the engine spec's open topology shapes, and a campaign published with its runs,
// scrubbed, re-pinned and verifiable where it was published.
#include <unistd.h>

#include "digest/digest.h"
#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

class CampaignArtifacts : public Integration {
 protected:
  fs::path root() const { return dir_ / "runs"; }

  /// A fake GPU (tests/telemetry/fake_nvml) drawing 250 W.
  fs::path gpu_trace() { return fake_gpu_trace(250, 5000000000, 60, 60, 1800); }

  /// A spec launching this build's `dyno sim` with `topology` as its [topology] table.
  fs::path sim_spec(const std::string& topology) {
    const fs::path p = dir_ / "sim.toml";
    std::ofstream(p) << "name = \"sim-under-test\"\npreset = \"sim\"\nport = \"auto\"\n"
                     << "\n[engine_args]\nprofile = \"small-gpu\"\n[topology]\n"
                     << topology << "\n[ready]\ntimeout_s = 60\n[stop]\ngrace_s = 10\n";
    return p;
  }

  /// Every regular file under `dir`, with its text.
  static std::vector<std::pair<fs::path, std::string>> files_under(const fs::path& dir) {
    std::vector<std::pair<fs::path, std::string>> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) out.emplace_back(e.path(), Child::slurp(e.path().string()));
    }
    return out;
  }
};

}  // namespace

TEST_F(CampaignArtifacts, TheCampaignFileCarriesWhatTheUserDeclaresAndTheTelemetrysSampling) {
  const std::string cmd =
      "FAKE_NVML_PID=$$ FAKE_NVML_TRACE='" + gpu_trace().string() + "' exec '" +
      std::string(DYNO_BINARY) + "' ladder --json -q --runs-root '" + root().string() +
      "' --depths 0 --prefill-sizes 48 --decode-tokens 8 --prefill-decode-tokens 5 --repeat 1 "
      "--nvml-library '" +
      std::string(FAKE_NVML_PATH) +
      "' --telemetry-period-ms 50 --campaign-name lab-2026.ladder_1 "
      "--notes 'warm-up: none; prompts from the seeded generator' --notes 'second, with a comma' "
      "--campaign-status 'draft: awaiting review' --hardware-label 2x3090fe-nvlink "
      "--evidence evidence/launch.json --evidence https://example.org/ledger.csv";
  Child c({"/bin/sh", "-c", cmd}, (dir_ / "ladder.out").string(), (dir_ / "ladder.err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const std::string id(json::parse(c.out()).at("campaign_id").as_string());
  const json::object doc = read_json(root() / "campaigns" / (id + ".json"));

  // What the user declared, as given; dyno's own status beside the user's.
  EXPECT_EQ(doc.at("name"), "lab-2026.ladder_1");
  EXPECT_EQ(doc.at("status"), "ok");
  EXPECT_EQ(doc.at("user_status"), "draft: awaiting review");
  EXPECT_EQ(doc.at("notes"), (json::array{"warm-up: none; prompts from the seeded generator",
                                          "second, with a comma"}));
  EXPECT_EQ(doc.at("hardware").at("label"), "2x3090fe-nvlink");
  const std::string first(
      doc.at("cells").as_array()[0].at("runs").as_array()[0].at("run_id").as_string());
  EXPECT_EQ(doc.at("hardware").at("detected"),
            read_json(root() / first / "manifest.json").at("hardware").at("label"));
  EXPECT_EQ(doc.at("evidence"),
            (json::array{"evidence/launch.json", "https://example.org/ledger.csv"}));
  EXPECT_TRUE(id.find("ladder") != std::string::npos);  // the id stays dyno's own

  // The energy source, sampling period and sample count, from the cells' records.
  const auto& t = doc.at("session_telemetry").as_object();
  EXPECT_EQ(t.at("energy_source"), "counter");
  EXPECT_EQ(t.at("energy_sources").at("counter").as_int64(), 2);  // one GPU, two cells
  const auto& sampling = t.at("sampling").as_object();
  EXPECT_EQ(sampling.at("period_ms_requested").to_number<double>(), 50.0);
  std::int64_t samples = 0;
  double lo = 1e9, hi = 0;
  for (const auto& cell : doc.at("cells").as_array()) {
    const std::string run(cell.at("runs").as_array()[0].at("run_id").as_string());
    const json::object s = read_json(root() / run / "summary.json");
    for (const auto& d : s.at("energy").at("devices").as_array()) {
      if (d.at("kind") == "gpu") samples += d.at("samples").as_int64();
    }
    const double achieved = read_json(root() / run / "manifest.json")
                                .at("telemetry")
                                .at("period_ms")
                                .at("achieved_mean")
                                .to_number<double>();
    lo = std::min(lo, achieved);
    hi = std::max(hi, achieved);
  }
  EXPECT_GT(samples, 0);
  EXPECT_EQ(sampling.at("samples").as_int64(), samples);
  EXPECT_EQ(t.at("devices").as_array().at(0).at("samples").as_int64(), samples);
  EXPECT_EQ(sampling.at("period_ms_achieved_mean").at("min").to_number<double>(), lo);
  EXPECT_EQ(sampling.at("period_ms_achieved_mean").at("max").to_number<double>(), hi);

  // The prefill cell decodes 5 tokens, says so, and is judged by its prefill rate.
  EXPECT_EQ(doc.at("protocol").at("params").at("prefill_decode_tokens").as_int64(), 5);
  const json::object* prefill = nullptr;
  for (const auto& cell : doc.at("cells").as_array()) {
    if (cell.at("cell") == "prefill@48") prefill = &cell.as_object();
  }
  ASSERT_NE(prefill, nullptr) << doc;
  EXPECT_EQ(prefill->at("params").at("output_tokens").as_int64(), 5);
  EXPECT_EQ(prefill->at("selection").at("metric"), "prefill_rate_p50");
  const std::string prun(prefill->at("runs").as_array()[0].at("run_id").as_string());
  const json::object pm = read_json(root() / prun / "manifest.json");
  EXPECT_EQ(pm.at("workload").at("sampling").at("max_tokens").as_int64(), 5);
  EXPECT_EQ(pm.at("workload").at("protocol").at("cell_params").at("output_tokens").as_int64(), 5);
  EXPECT_EQ(read_json(root() / prun / "summary.json").at("tokens").at("output_total").as_int64(),
            5);
  const auto& head = doc.at("headline").at("prefill").at("48").as_object();
  EXPECT_GT(head.at("prefill_tok_s").to_number<double>(), 0.0);
  EXPECT_GT(head.at("decode_tok_s").to_number<double>(), 0.0);  // it decoded: a rate exists

  // The name where a lab looks for it: runs list --campaigns (table and JSON, and its filter).
  const Outcome table = dyno({"runs", "list", "--campaigns", "--runs-root", root().string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("NAME"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("lab-2026.ladder_1"), std::string::npos) << table.out;
  const Outcome by_name = dyno({"runs", "list", "--campaigns", "--json", "--campaign", "lab-2026.*",
                                "--runs-root", root().string()});
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  const json::array rows = json::parse(by_name.out).as_array();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("name"), "lab-2026.ladder_1");
  EXPECT_EQ(rows[0].at("user_status"), "draft: awaiting review");
  // ...and the file still verifies against its own digest.
  const Outcome v = dyno({"runs", "verify", id, "--runs-root", root().string()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

TEST_F(CampaignArtifacts, HostileDeclarationsAreRefusedNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--campaign-name", "../escape"}, "--campaign-name"},
      {{"--campaign-name", "a b"}, "--campaign-name"},
      {{"--campaign-name", std::string(65, 'a')}, "--campaign-name"},
      {{"--notes", "line\nbreak"}, "--notes"},
      {{"--notes", ""}, "--notes"},
      {{"--campaign-status", "\x1b[31mred"}, "--campaign-status"},
      {{"--hardware-label", "bad\xff"}, "--hardware-label"},
      {{"--evidence", std::string(5000, 'e')}, "--evidence"},
      {{"--prefill-decode-tokens", "0"}, "--prefill-decode-tokens"},
  };
  for (const auto& [flags, name] : cases) {
    std::vector<std::string> args = {"ladder",      "-q",   "--telemetry", "off",
                                     "--runs-root", runs(), "--depths",    "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    const Outcome o = dyno(args);
    EXPECT_EQ(o.exit_code, 2) << name << ": " << o.err;
    EXPECT_NE(o.err.find(name), std::string::npos) << o.err;
  }
  EXPECT_EQ(record_count(), 0u);  // refused before anything ran
}

TEST_F(CampaignArtifacts, OpenTopologyShapesAreRecordedAsGivenAndOthersRefused) {
  // A count of GPUs and a link kind: recorded as given (no indices invented, no
  // CUDA_VISIBLE_DEVICES made of a count).
  const fs::path spec = sim_spec("gpus = 2\np2p = \"nvlink\"");
  const Outcome ok = dyno({"speed", "-q", "--json", "--telemetry", "off", "--runs-root", runs(),
                           "--engine", spec.string(), "--passes", "a", "--burst", "2",
                           "--output-tokens", "8", "--input-tokens", "8"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const json::object doc = json::parse(ok.out).as_object();
  const auto& topo = doc.at("engine").at("topology").as_object();
  EXPECT_EQ(topo.at("gpus"), json::value(2));
  EXPECT_EQ(topo.at("p2p"), "nvlink");
  EXPECT_FALSE(doc.at("engine").at("launch").at("env").as_object().contains("CUDA_VISIBLE_DEVICES"))
      << doc.at("engine");
  // The older shapes still read: a list of indices (which sets CUDA_VISIBLE_DEVICES), a boolean.
  for (const std::string& bad :
       {std::string("gpus = 0"), std::string("gpus = \"two\""), std::string("gpus = [0, -1]"),
        std::string("p2p = 3"), std::string("p2p = \"\""), std::string("p2p = [\"nvlink\"]")}) {
    const Outcome o = dyno({"speed", "-q", "--telemetry", "off", "--runs-root", runs(), "--engine",
                            sim_spec(bad).string(), "--passes", "a"});
    EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.err;
    const std::string key = bad.starts_with("gpus") ? "topology.gpus" : "topology.p2p";
    EXPECT_NE(o.err.find(key), std::string::npos) << bad << ": " << o.err;
  }
}

TEST_F(CampaignArtifacts, APublishedCampaignIsScrubbedRepinnedAndVerifiesWhereItWasPublished) {
  const fs::path spec = sim_spec("gpus = [0]\np2p = true");
  const Outcome run = dyno({"speed",
                            "-q",
                            "--json",
                            "--telemetry",
                            "off",
                            "--runs-root",
                            runs(),
                            "--engine",
                            spec.string(),
                            "--passes",
                            "a,b",
                            "--burst",
                            "2",
                            "--output-tokens",
                            "8",
                            "--input-tokens",
                            "8",
                            "--evidence",
                            (dir_ / "lab" / "energy.json").string(),
                            "--notes",
                            "launched from " + spec.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json::object doc = json::parse(run.out).as_object();
  const std::string id(doc.at("campaign_id").as_string());
  const std::int64_t port = doc.at("engine").at("launch").at("port").as_int64();
  // The campaign repeats the launch line: the spec's absolute path and the port are in it.
  const std::string original = Child::slurp((root() / "campaigns" / (id + ".json")).string());
  ASSERT_NE(original.find(dir_.string()), std::string::npos);

  const fs::path pub = dir_ / "public";
  const Outcome p = dyno({"runs", "publish", id, "--out", pub.string(), "--runs-root", runs()});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("published campaign " + id), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("4 runs re-pinned"), std::string::npos) << p.out;

  // No absolute path, port or host name in any published file.
  char host[256] = {0};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  const std::string hostname(host);
  const std::regex port_re("(:|\"port\": |\")" + std::to_string(port) + "([^0-9]|$)");
  std::size_t files = 0;
  for (const auto& [path, text] : files_under(pub)) {
    ++files;
    EXPECT_EQ(text.find(dir_.string()), std::string::npos) << path;
    EXPECT_EQ(text.find(DYNO_BINARY), std::string::npos) << path;
    EXPECT_FALSE(std::regex_search(text, port_re)) << path << " holds port " << port;
    if (hostname.size() >= 4 && hostname != "localhost") {
      EXPECT_EQ(text.find(hostname), std::string::npos) << path << " holds " << hostname;
    }
  }
  EXPECT_GT(files, 4u);

  // Re-pinned to the published records, its changes listed, signed again.
  const fs::path published = pub / "campaigns" / (id + ".json");
  const json::object pdoc = read_json(published);
  EXPECT_EQ(pdoc.at("engine").at("launch").at("port"), "<scrubbed:port>");
  EXPECT_EQ(pdoc.at("evidence").at(0), "<scrubbed:path>");
  bool lists_port = false;
  for (const auto& f : pdoc.at("scrubbed_fields").as_array()) {
    lists_port = lists_port || f == json::value(id + ".json#/engine/launch/port");
  }
  EXPECT_TRUE(lists_port) << pdoc.at("scrubbed_fields");
  for (const auto& cell : pdoc.at("cells").as_array()) {
    for (const auto& r : cell.at("runs").as_array()) {
      const std::string rid(r.at("run_id").as_string());
      EXPECT_EQ(r.at("record_sha256"),
                json::value(dyno::digest::sha256_hex_file(pub / rid / "SHA256SUMS")));
    }
  }
  const Outcome v = dyno({"runs", "verify", id, "--runs-root", pub.string()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("ok      campaign " + id), std::string::npos) << v.out;
  const Outcome all = dyno({"runs", "verify", "--all", "--runs-root", pub.string()});
  EXPECT_EQ(all.exit_code, 0) << all.out << all.err;
  // The original is as it was, and still verifies.
  EXPECT_EQ(Child::slurp((root() / "campaigns" / (id + ".json")).string()), original);
  EXPECT_EQ(dyno({"runs", "verify", id, "--runs-root", runs()}).exit_code, 0);

  // Published again to the same place: refused, nothing changed; --in-place is not for a
  // campaign.
  const Outcome again = dyno({"runs", "publish", id, "--out", pub.string(), "--runs-root", runs()});
  EXPECT_EQ(again.exit_code, 3) << again.out;
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  const Outcome in_place = dyno({"runs", "publish", id, "--in-place", "--runs-root", runs()});
  EXPECT_EQ(in_place.exit_code, 2) << in_place.err;
  EXPECT_EQ(dyno({"runs", "verify", id, "--runs-root", pub.string()}).exit_code, 0);
}
