// Signed records and campaign files end to end, through the `dyno` binary (docs/record.md
// "Signatures", docs/store.md "Signatures"): --sign-key on `run` and a protocol, `runs verify`
// with and without --verify-key, a re-checksummed edit caught, publishing, a board's
// provenance, and key files refused.
#include "integration/integration_fixture.h"
#include "integration/test_keys.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)
using dyno::testing::KeyFiles;
using dyno::testing::make_key;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

/// The sha256 of a public key's DER (what dyno calls its fingerprint), from the SIGNATURE
/// sidecar dyno wrote — checked against the key file by `runs verify --verify-key` below.
std::string fingerprint_in(const fs::path& sidecar) {
  return std::string(read_json(sidecar).at("key_fingerprint").as_string());
}

class Signing : public Integration {
 protected:
  fs::path root() const { return dir_ / "runs"; }

  Outcome verify(std::vector<std::string> args) {
    args.insert(args.begin(), {"runs", "verify", "--runs-root", root().string()});
    return dyno(args);
  }
};

TEST_F(Signing, RunAndProtocolRecordsAndCampaignFileAreSignedAndVerified) {
  const KeyFiles a = make_key(dir_, "a");
  const KeyFiles b = make_key(dir_, "b");
  const Outcome run =
      run_dyno({"-n", "4", "-c", "2", "--output-tokens", "8", "--sign-key", a.priv.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path sig = run.run_dir / "SIGNATURE";
  ASSERT_TRUE(fs::exists(sig));
  const json::object s = read_json(sig);
  EXPECT_EQ(s.at("algorithm").as_string(), "ed25519");
  EXPECT_EQ(s.at("signed_file").as_string(), "SHA256SUMS");
  const std::string fp = fingerprint_in(sig);
  EXPECT_EQ(fp.size(), 64u);
  // SHA256SUMS does not list its own signature; the key's private bytes are nowhere.
  EXPECT_EQ(slurp(run.run_dir / "SHA256SUMS").find("SIGNATURE"), std::string::npos);
  const std::string priv_body = slurp(a.priv).substr(28, 40);
  for (const auto& e : fs::recursive_directory_iterator(run.run_dir)) {
    if (e.is_regular_file()) {
      EXPECT_EQ(slurp(e.path()).find(priv_body), std::string::npos) << e.path();
    }
  }
  EXPECT_EQ(run.err.find(priv_body), std::string::npos);

  // A protocol signs each of its records and its campaign file.
  Child c({DYNO_BINARY, "sweep", "--json", "-q", "--runs-root", root().string(), "--concurrencies",
           "1,2", "--min-requests", "2", "--per-slot", "1", "--output-tokens", "8", "--sign-key",
           a.priv.string()},
          (dir_ / "p.out").string(), (dir_ / "p.err").string());
  ASSERT_EQ(c.wait(), 0) << c.err();
  const json::object doc = json::parse(c.out()).as_object();
  const fs::path campaign(std::string(doc.at("campaign_file").as_string()));
  ASSERT_TRUE(fs::exists(campaign.string() + ".sig"));
  EXPECT_EQ(fingerprint_in(campaign.string() + ".sig"), fp);
  for (const auto& cell : doc.at("cells").as_array()) {
    for (const auto& r : cell.at("runs").as_array()) {
      EXPECT_EQ(fingerprint_in(root() / std::string(r.at("run_id").as_string()) / "SIGNATURE"), fp);
    }
  }
  const std::string campaign_id = campaign.stem().string();

  // Without --verify-key: each signature checked against the key it names, and reported.
  Outcome v = verify({"--all"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("signed by key " + fp), std::string::npos) << v.out;
  v = verify({"--all", "--json"});
  const json::value reports = json::parse(v.out);
  for (const auto& rep : reports.as_array()) {
    EXPECT_EQ(rep.at("signed_by").as_string(), fp) << rep;
  }
  // With the signer's public key: all pass; with another key: each fails naming both keys.
  v = verify({"--all", "--verify-key", a.pub.string()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  v = verify({campaign_id, "--verify-key", b.pub.string()});
  EXPECT_EQ(v.exit_code, 3) << v.out << v.err;
  EXPECT_NE(v.out.find("signed by key " + fp + ", not by the required key"), std::string::npos)
      << v.out;

  // An unsigned record fails --verify-key, and passes without it.
  const Outcome plain = run_dyno({"-n", "2", "-c", "1", "--output-tokens", "4"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const std::string plain_id = plain.run_dir.filename().string();
  EXPECT_EQ(verify({plain_id}).exit_code, 0);
  v = verify({plain_id, "--verify-key", a.pub.string()});
  EXPECT_EQ(v.exit_code, 3);
  EXPECT_NE(v.out.find("unsigned: a signature by key " + fp + " is required"), std::string::npos)
      << v.out;

  // A record edited and re-checksummed: SHA256SUMS no longer what the key signed.
  const std::string id = run.run_dir.filename().string();
  std::string summary = slurp(run.run_dir / "summary.json");
  summary.insert(summary.find('{') + 1, "\"forged\": 1,");
  write_text(run.run_dir / "summary.json", summary);
  {
    std::ifstream in(run.run_dir / "SHA256SUMS");
    std::string line, rebuilt;
    while (std::getline(in, line)) {
      if (line.substr(66) == "summary.json") {
        Child h({"/usr/bin/sha256sum", (run.run_dir / "summary.json").string()},
                (dir_ / "h.out").string(), (dir_ / "h.err").string());
        h.wait();
        line = h.out().substr(0, 64) + "  summary.json";
      }
      rebuilt += line + "\n";
    }
    write_text(run.run_dir / "SHA256SUMS", rebuilt);
  }
  v = verify({id});
  EXPECT_EQ(v.exit_code, 3) << v.out;
  EXPECT_NE(v.out.find("signature: SIGNATURE: the signature by key " + fp + " does not verify"),
            std::string::npos)
      << v.out;
  // A forger re-signing with their own key passes a plain verify, never --verify-key.
  Child resign({DYNO_BINARY, "runs", "publish", "--runs-root", root().string(), id, "--in-place",
                "--sign-key", b.priv.string()},
               (dir_ / "r.out").string(), (dir_ / "r.err").string());
  EXPECT_EQ(resign.wait(), 3) << resign.out() << resign.err();  // it does not verify: refused
  fs::remove_all(run.run_dir);  // (the forged record is left out of the records-conform check)
}

TEST_F(Signing, PublishDropsOrRenewsTheSignatureAndBoardsNameTheKey) {
  const KeyFiles a = make_key(dir_, "a");
  const KeyFiles b = make_key(dir_, "b");
  const std::string url = start_sim({});
  const Outcome run =
      run_dyno({"--url", url, "--model", "dyno-sim", "-n", "3", "-c", "1", "--output-tokens", "4",
                "--label", "arm-a", "--sign-key", a.priv.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Outcome other = run_dyno({"--url", url, "--model", "dyno-sim", "-n", "3", "-c", "1",
                                  "--output-tokens", "4", "--label", "arm-b"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  const std::string fp = fingerprint_in(run.run_dir / "SIGNATURE");
  const std::string id = run.run_dir.filename().string();

  // A board names each run's key, or "unsigned", and its Methodology says so.
  Outcome rep = dyno({"report", "--runs-root", root().string(), "--arm", "a=label=arm-a", "--arm",
                      "b=label=arm-b", "--allow-unresolved", "--out", (dir_ / "board").string()});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const json::object board = read_json(dir_ / "board" / "board.json");
  std::map<std::string, std::string> signer;
  for (const auto& r : board.at("provenance").at("runs").as_array()) {
    signer[std::string(r.at("run_id").as_string())] = std::string(r.at("signed_by").as_string());
  }
  EXPECT_EQ(signer[id], fp);
  EXPECT_EQ(signer[other.run_dir.filename().string()], "unsigned");
  const std::string readme = slurp(dir_ / "board" / "README.md");
  EXPECT_NE(readme.find("Signatures:"), std::string::npos) << readme;
  EXPECT_NE(readme.find("of 2 records, 1 signed by key " + fp.substr(0, 8)), std::string::npos)
      << readme;
  EXPECT_NE(readme.find("1 unsigned"), std::string::npos) << readme;

  // A published copy whose scrub changed SHA256SUMS loses the old signature...
  Outcome pub = dyno(
      {"runs", "publish", "--runs-root", root().string(), id, "--out", (dir_ / "public").string()});
  ASSERT_EQ(pub.exit_code, 0) << pub.err;
  const fs::path copy = dir_ / "public" / id;
  EXPECT_FALSE(fs::exists(copy / "SIGNATURE")) << pub.out;
  EXPECT_NE(pub.out.find("its SIGNATURE was removed"), std::string::npos) << pub.out;
  EXPECT_EQ(dyno({"runs", "verify", copy.string()}).exit_code, 0);
  // ...and with --sign-key it is signed again, by that key, and verifies against it.
  pub = dyno({"runs", "publish", "--runs-root", root().string(), id, "--out",
              (dir_ / "public2").string(), "--sign-key", b.priv.string()});
  ASSERT_EQ(pub.exit_code, 0) << pub.err;
  const fs::path copy2 = dir_ / "public2" / id;
  EXPECT_NE(fingerprint_in(copy2 / "SIGNATURE"), fp);
  EXPECT_EQ(dyno({"runs", "verify", copy2.string(), "--verify-key", b.pub.string()}).exit_code, 0);
  EXPECT_EQ(dyno({"runs", "verify", copy2.string(), "--verify-key", a.pub.string()}).exit_code, 3);
  stop_sims();
}

TEST_F(Signing, ImportRescoreAndMergeSignWhatTheyWrite) {
  const KeyFiles a = make_key(dir_, "a");
  const fs::path data = fs::path(DYNO_SOURCE_DIR) / "tests/record/data/vllm_bench";
  const Outcome imp =
      dyno({"import", "vllm-bench", (data / "detailed.json").string(), "--runs-root", runs(),
            "--engine", "vllm", "--json", "--sign-key", a.priv.string()});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  const std::string imported(json::parse(imp.out).as_array().at(0).at("run_id").as_string());
  // A derived record is signed with the key rescore is given (over its own SHA256SUMS).
  const fs::path qa = dir_ / "qa.jsonl";
  write_text(qa,
             "{\"id\":\"q0\",\"messages\":[{\"role\":\"user\",\"content\":\"one word?\"}],"
             "\"max_tokens\":1,\"seed\":0,\"expected\":\"a\",\"scorer\":\"exact\"}\n");
  const Outcome source = run_dyno({"--stream", qa.string(), "-c", "1"});
  ASSERT_EQ(source.exit_code, 0) << source.err;
  const Outcome r = dyno({"rescore", source.run_dir.filename().string(), "--runs-root", runs(),
                          "--json", "--sign-key", a.priv.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string derived(json::parse(r.out).as_object().at("run_id").as_string());
  Outcome v = dyno(
      {"runs", "verify", "--runs-root", runs(), imported, derived, "--verify-key", a.pub.string()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  // The unsigned source fails the same check.
  v = dyno({"runs", "verify", "--runs-root", runs(), source.run_dir.filename().string(),
            "--verify-key", a.pub.string()});
  EXPECT_EQ(v.exit_code, 3) << v.out;
  // A bad key is refused before anything is written.
  const Outcome bad =
      dyno({"import", "vllm-bench", (data / "detailed.json").string(), "--runs-root",
            (dir_ / "other").string(), "--sign-key", a.pub.string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--sign-key: "), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir_ / "other"));
  const Outcome m = dyno({"runs", "merge", source.run_dir.filename().string(), "--runs-root",
                          runs(), "--sign-key", (dir_ / "nope.pem").string()});
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_NE(m.err.find("--sign-key: "), std::string::npos) << m.err;
}

TEST_F(Signing, BadKeyFilesAreRefusedNamingTheFlag) {
  const KeyFiles ed = make_key(dir_, "ed");
  const KeyFiles rsa = make_key(dir_, "rsa", "RSA");
  write_text(dir_ / "garbage.pem", "not a key at all\n");
  const std::string secret_body = slurp(rsa.priv).substr(30, 40);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(dir_ / "missing.pem").string(), "no such file"},
      {(dir_ / "garbage.pem").string(), "not a PEM key file"},
      {ed.pub.string(), "a public key; signing needs the private key"},
      {rsa.priv.string(), "the private key is RSA, not Ed25519"},
      {dir_.string(), "not a regular file"}};
  for (const auto& [file, why] : cases) {
    const Outcome o = run_dyno({"-n", "2", "--sign-key", file});
    EXPECT_EQ(o.exit_code, 2) << file << o.err;
    EXPECT_NE(o.err.find("--sign-key: " + file + ": " + why), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find(secret_body), std::string::npos);
    const Outcome p = dyno({"speed", "--runs-root", runs(), "--sign-key", file});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("--sign-key: "), std::string::npos) << p.err;
  }
  EXPECT_EQ(record_count(), 0u);  // refused before anything ran
  const Outcome v =
      dyno({"runs", "verify", "--runs-root", runs(), "--all", "--verify-key", ed.priv.string()});
  EXPECT_EQ(v.exit_code, 2) << v.err;
  EXPECT_NE(v.err.find("--verify-key: " + ed.priv.string() + ": a private key"), std::string::npos)
      << v.err;
}

}  // namespace
