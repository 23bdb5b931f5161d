// Text from servers, records and files on the terminal: control characters escaped, the API
// key redacted, dyno's own colours kept; `dyno runs list|show|rm` on records carrying escape
// sequences and on a run in progress.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "app/console.h"
#include "app/run_command.h"
#include "app/runs_command.h"
#include "record/record_fixture.h"
#include "record/run_writer.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::app::terminal_text;

namespace {

bool has_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      return true;  // a C1 control as UTF-8
    }
  }
  return false;
}

TEST(TerminalText, ControlCharactersAreShownNotSent) {
  EXPECT_EQ(terminal_text("plain text, caf\xC3\xA9 \xE2\x82\xAC"),
            "plain text, caf\xC3\xA9 \xE2\x82\xAC");
  EXPECT_EQ(terminal_text("\x1b]0;pwned\x07title"), "\\x1b]0;pwned\\x07title");
  EXPECT_EQ(terminal_text("red\x1b[31mX\x1b[0m"), "red\\x1b[31mX\\x1b[0m");
  EXPECT_EQ(terminal_text("del\x7f nul", false), "del\\x7f nul");
  EXPECT_EQ(terminal_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(terminal_text("\xC2\x9B"
                          "2J"),
            "\\u009b2J");  // C1 CSI as UTF-8
  EXPECT_EQ(terminal_text("\x9b"
                          "2J"),
            "\\x9b2J");  // ... and as a raw byte
  EXPECT_EQ(terminal_text("tab\there\rback"), "tab\\there\\rback");
  EXPECT_EQ(terminal_text("two\nlines"), "two\nlines");
  EXPECT_EQ(terminal_text("two\nlines", true), "two\\nlines");
  EXPECT_EQ(terminal_text("cut \xF0\x9F"), "cut \\xf0\\x9f");
  EXPECT_FALSE(has_control(terminal_text("\x1b\x07\x08\x7f\xC2\x85\xC2\x9F\x9b\x1b", true)));
}

TEST(TerminalText, TheApiKeyIsRedactedWhereverAServerEchoedIt) {
  ::setenv("DYNO_API_KEY", "sk-term-81x", 1);
  ::setenv("OPENAI_API_KEY", "sk-other-22y", 1);
  EXPECT_EQ(terminal_text("HTTP 401: bad key sk-term-81x (also sk-other-22y)"),
            "HTTP 401: bad key <scrubbed:secret> (also <scrubbed:secret>)");
  ::unsetenv("DYNO_API_KEY");
  ::unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(terminal_text("sk-term-81x"), "sk-term-81x");  // no key set: nothing to hide
}

TEST(TerminalText, WarningsAndTheSummaryEscapeWhatTheyQuoteButKeepDynosColours) {
  const std::vector<dyno::metrics::Warning> w = {
      {dyno::metrics::WarningCode::kTtftFarAboveServerPrefill, "engine version \x1b[2J\x1b[H",
       "hint with \x1b]8;;http://x\x07link"}};
  const std::string plain = dyno::app::render_warnings(w, false);
  EXPECT_FALSE(has_control(plain)) << plain;
  EXPECT_NE(plain.find("engine version \\x1b[2J\\x1b[H"), std::string::npos) << plain;
  const std::string colored = dyno::app::render_warnings(w, true);
  EXPECT_EQ(colored.find("\x1b[33mwarning[ttft_far_above_server_prefill]\x1b[0m"), 0u) << colored;
  EXPECT_EQ(colored.find("\x1b[2J"), std::string::npos);
  dyno::app::RunHeadline h;
  h.engine = "llama.cpp b4748\x1b[31m";
  h.model = "evil\x1b]0;title\x07model";
  const std::string table = dyno::app::render_summary(h, dyno::metrics::Summary{}, false);
  EXPECT_FALSE(has_control(table)) << table;
  EXPECT_NE(table.find("model evil\\x1b]0;title\\x07model"), std::string::npos) << table;
}

/// Runs `dyno runs ARGS` in-process; returns the exit code, stdout and stderr.
struct RunsResult {
  int code = -1;
  std::string out;
  std::string err;
};
RunsResult runs(const std::string& args) {
  CLI::App app("dyno");
  dyno::app::RunsCli cli(*app.add_subcommand("runs", ""));
  app.parse("runs " + args, false);
  std::ostringstream out, err;
  RunsResult r;
  r.code = cli.execute(out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(RunsConsole, ListAndShowEscapeAModelNameAndEngineVersionFromTheRecord) {
  const dyno::testing::TempDir tmp("dyno-runs-escapes");
  const std::string id = "20261129T214815Z-3fa9c1";
  json::object m = dyno::testing::sample_manifest(id, "2026-11-29T21:48:15.212Z");
  m["model"].as_object()["id"] = "tiny\x1b]0;owned\x07-model";
  m["engine"].as_object()["version"] = "0.6.3\x1b[2J\x1b[31m";
  dyno::testing::write_run(tmp.path(), m, dyno::testing::sample_summary(id, 100.0, 50.0));
  const RunsResult list = runs("list --runs-root " + tmp.path().string());
  EXPECT_EQ(list.code, 0);
  EXPECT_FALSE(has_control(list.out)) << list.out;
  EXPECT_NE(list.out.find("tiny\\x1b]0;owned\\x07-model"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("0.6.3\\x1b[2J\\x1b[31m"), std::string::npos) << list.out;
  const RunsResult show = runs("show --runs-root " + tmp.path().string() + " " + id);
  EXPECT_EQ(show.code, 0);
  EXPECT_FALSE(has_control(show.out)) << show.out;
  EXPECT_NE(show.out.find("tiny\\x1b]0;owned\\x07-model"), std::string::npos) << show.out;
}

TEST(RunsConsole, ListNamesARecordWhoseSummaryIsCorrupt) {
  const dyno::testing::TempDir tmp("dyno-runs-corrupt");
  const std::string id = "20261129T214815Z-3fa9c1";
  dyno::testing::write_run(tmp.path(), dyno::testing::sample_manifest(id, "2026-11-29T21:48:15Z"),
                           dyno::testing::sample_summary(id, 123.4, 50.0));
  EXPECT_NE(runs("list --runs-root " + tmp.path().string()).out.find("123.4"), std::string::npos);
  std::ofstream(tmp / id / "summary.json", std::ios::trunc) << "{\"requests\": ";
  const RunsResult list = runs("list --runs-root " + tmp.path().string());
  EXPECT_EQ(list.out.find("123.4"), std::string::npos) << "a stale cached figure:\n" << list.out;
  EXPECT_NE(list.err.find("summary.json is not valid JSON"), std::string::npos) << list.err;
  EXPECT_NE(list.err.find((tmp / id).string()), std::string::npos) << list.err;
}

TEST(RunsConsole, RmRefusesARunInProgressAndRemovesOneWhoseDynoIsGone) {
  const dyno::testing::TempDir tmp("dyno-runs-rm");
  const std::string id = "20261129T214815Z-3fa9c1";
  json::object m = dyno::testing::sample_manifest(id, "2026-11-29T21:48:15Z");
  m["status"] = "running";
  {
    dyno::record::RunWriter writer(tmp.path(), id, false);  // alive: the run is in progress
    writer.write_json("manifest.json", m);
    try {
      runs("rm --runs-root " + tmp.path().string() + " " + id);
      ADD_FAILURE() << "a run in progress was removed";
    } catch (const dyno::app::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("is in progress"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::exists(tmp / id / "manifest.json"));
  }
  // The writer is gone (as when dyno was killed): the record still says `running`, and is
  // removed like any ended run.
  const RunsResult rm = runs("rm --runs-root " + tmp.path().string() + " " + id);
  EXPECT_EQ(rm.code, 0);
  EXPECT_FALSE(fs::exists(tmp / id));
}

}  // namespace

namespace {

TEST(RunsConsole, ARunGivenThroughASymbolicLinkIsTheRunItLinksTo) {
  const dyno::testing::TempDir tmp("dyno-runs-link");
  const std::string id = "20261129T214815Z-3fa9c1";
  const fs::path root = tmp / "runs";
  dyno::testing::write_run(root, dyno::testing::sample_manifest(id, "2026-11-29T21:48:15Z"),
                           dyno::testing::sample_summary(id, 100.0, 50.0));
  fs::create_directory_symlink(root / id, tmp / "latest");
  const std::string link = (tmp / "latest").string();
  // The hand-made record is not schema-complete; what matters is that it is judged as itself.
  const RunsResult verify = runs("verify --runs-root " + root.string() + " " + link);
  EXPECT_EQ(verify.out.find("differs from the directory name"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find(id), std::string::npos) << verify.out;
  const RunsResult show = runs("show --runs-root " + root.string() + " " + link + "/");
  EXPECT_NE(show.out.find("run           " + id), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("(" + link + "/ links to it)"), std::string::npos) << show.out;
  fs::create_directory_symlink(root / id, root / "latest");
  try {
    runs("rm --runs-root " + root.string() + " " + (root / "latest").string());
    ADD_FAILURE() << "removed through a link";
  } catch (const dyno::app::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is a symbolic link to " + (root / id).string()),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(root / id / "manifest.json"));
}

}  // namespace
