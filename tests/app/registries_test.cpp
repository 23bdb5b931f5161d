// Every extension point is a registry of one shape (error/registry.h, docs/extending.md): its
// names unique, non-empty and described on one line, each entry doing something; an unknown name
// refused with the list of names; the help listing every command; and what the docs say of an
// entry (engine presets, chart kinds) is what the entry holds.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/export_command.h"
#include "app/protocol_commands.h"
#include "app/stream_import_command.h"
#include "cluster/plan.h"
#include "engine/spec.h"
#include "error/registry.h"
#include "interop/import_formats.h"
#include "metrics/registry.h"
#include "record/run_writer.h"
#include "report/board_charts.h"
#include "workload/scoring.h"
#include "workload/trace_import.h"

namespace dyno {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = DYNO_SOURCE_DIR;

/// A file of the repository, whole (record::read_file: throws naming it when it cannot).
std::string read(const fs::path& p) { return record::read_file(p); }

/// The shape every registry keeps: names unique and non-empty (no spaces), each described on
/// one line, each with its function.
template <class E, class F>
void expect_registry(std::span<const E> entries, const std::string& what, F has_function) {
  SCOPED_TRACE(what);
  EXPECT_FALSE(entries.empty());
  std::set<std::string> seen;
  for (const E& e : entries) {
    const std::string name(e.name);
    SCOPED_TRACE(name);
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find_first_of(" \t\n"), std::string::npos);
    EXPECT_TRUE(seen.insert(name).second) << "named twice";
    EXPECT_FALSE(std::string_view(e.describe).empty());
    EXPECT_EQ(std::string_view(e.describe).find('\n'), std::string_view::npos);
    EXPECT_TRUE(has_function(e));
  }
  // An unknown name: a usage error (exit 2) listing every name, in order.
  try {
    registry::lookup(entries, "no-such-name", what);
    ADD_FAILURE() << "an unknown name was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown " + what + " 'no-such-name'; the " + what +
                                         "s are: " + registry::name_list(entries));
    for (const E& entry : entries) {
      EXPECT_NE(std::string(e.what()).find(std::string(entry.name)), std::string::npos);
    }
  }
  EXPECT_EQ(registry::find(entries, "no-such-name"), nullptr);
  for (const E& e : entries) EXPECT_EQ(&registry::lookup(entries, e.name, what), &e);
}

TEST(Registries, EveryRegistryHasUniqueDescribedNamesAndRefusesAnUnknownOneWithTheList) {
  const auto has_add = [](const auto& e) { return e.add != nullptr; };
  expect_registry(app::commands(), "command", has_add);
  expect_registry(app::protocols(), "protocol", has_add);
  expect_registry(app::stream_imports(), "stream import kind",
                  [](const auto& e) { return e.run != nullptr; });
  expect_registry(interop::import_formats(), "import format",
                  [](const auto& e) { return e.read != nullptr; });
  expect_registry(app::export_formats(), "export format",
                  [](const auto& e) { return e.files != nullptr; });
  expect_registry(engine::presets(), "preset",
                  [](const auto& e) { return !e.command.empty() && !e.ready_path.empty(); });
  expect_registry(report::chart_kinds(), "chart kind", has_add);
  expect_registry(workload::trace_formats(), "trace format",
                  [](const auto& e) { return e.parse != nullptr; });
  expect_registry(workload::scorers(), "scorer", [](const auto& e) { return e.score != nullptr; });
}

TEST(Scorers, EachScorerIsARowOfDocsMetricsMdsTableAndItsParameterAKeyOfTheSchema) {
  const std::string metrics = read(kSource / "docs/metrics.md");
  const std::string schema = read(kSource / "docs/schema/request.schema.json");
  for (const workload::Scorer& s : workload::scorers()) {
    SCOPED_TRACE(s.name);
    EXPECT_NE(metrics.find("| `" + std::string(s.name) + "` |"), std::string::npos);
    EXPECT_NE(schema.find("\"" + std::string(s.name) + "\""), std::string::npos);
    if (s.parameter != nullptr) {
      EXPECT_NE(schema.find("\"" + std::string(s.parameter) + "\""), std::string::npos);
    }
  }
}

TEST(Registries, NameListsJoinAsMessagesSayThem) {
  struct E {
    std::string_view name, describe;
  };
  const E three[] = {{"a", "x"}, {"b", "y"}, {"c", "z"}};
  EXPECT_EQ(registry::name_list(std::span<const E>(three)), "a, b, c");
  EXPECT_EQ(registry::name_list(std::span<const E>(three), " or "), "a, b or c");
  EXPECT_EQ(registry::name_list(std::span<const E>(three).first(1), " or "), "a");
  EXPECT_EQ(registry::names(std::span<const E>(three)), (std::vector<std::string>{"a", "b", "c"}));
}

/// The app main() makes: the command table added to it.
struct Cli {
  CLI::App app{"dyno"};
  std::vector<app::AddedCommand> added = app::add_commands(app, app::commands());
};

TEST(Commands, TheHelpListsEveryCommandWithItsLineInTableOrder) {
  Cli cli;
  const std::string help = cli.app.help();
  std::size_t at = 0;
  for (const app::Command& c : app::commands()) {
    SCOPED_TRACE(std::string(c.name));
    const std::size_t line = help.find("\n  " + std::string(c.name) + " ", at);
    ASSERT_NE(line, std::string::npos);
    EXPECT_NE(help.find(std::string(c.describe), line), std::string::npos);
    at = line;
  }
  // One subcommand per entry, nothing else.
  EXPECT_EQ(cli.app.get_subcommands({}).size(), app::commands().size());
}

TEST(Commands, RunAndTheProtocolsComeFirstAndTheStreamGroupListsItsCommands) {
  const auto table = app::commands();
  ASSERT_GT(table.size(), app::protocols().size());
  EXPECT_EQ(table[0].name, "run");
  for (std::size_t i = 0; i < app::protocols().size(); ++i) {
    EXPECT_EQ(table[i + 1].name, app::protocols()[i].name);
  }
  Cli cli;
  CLI::App* stream = cli.app.get_subcommand("stream");
  std::vector<std::string> names;
  for (const CLI::App* s : stream->get_subcommands({})) names.push_back(s->get_name());
  EXPECT_EQ(names, (std::vector<std::string>{"make", "import"}));
}

TEST(Commands, AParseChoosesOneCommandAndNoParseNone) {
  Cli cli;
  cli.app.parse("export csv r -o out.csv", false);
  std::ostringstream out, err;
  std::size_t chosen = 0;
  for (const auto& a : cli.added) chosen += a.cmd->parsed() ? 1 : 0;
  EXPECT_EQ(chosen, 1u);
  EXPECT_TRUE(cli.app.get_subcommand("export")->parsed());

  Cli none;
  EXPECT_EQ(app::run_chosen(none.added, {out, err}), std::nullopt);
}

/// The message CLI11 refuses `args` with (what `dyno` prints after "error: ").
std::string refusal(const std::string& args) {
  Cli cli;
  try {
    cli.app.parse(args, false);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(Commands, AnUnknownNameOnTheCommandLineIsRefusedWithTheRegisteredNames) {
  const std::string exports = refusal("export nope run -o x");
  EXPECT_EQ(exports, "format: nope not in {vllm-bench,csv}");
  for (const auto& f : app::export_formats()) {
    EXPECT_NE(exports.find(std::string(f.name)), std::string::npos);
  }
  const std::string imports = refusal("import nope file");
  for (const auto& f : interop::import_formats()) {
    EXPECT_NE(imports.find(std::string(f.name)), std::string::npos) << imports;
  }
  const std::string streams = refusal("stream import nope in -o out");
  for (const auto& k : app::stream_imports()) {
    EXPECT_NE(streams.find(std::string(k.name)), std::string::npos) << streams;
  }
  EXPECT_FALSE(refusal("no-such-command").empty());
}

TEST(Commands, EachFormatAndKindIsInItsArgumentsHelp) {
  Cli cli;
  const std::string import_help = cli.app.get_subcommand("import")->help();
  for (const auto& f : interop::import_formats()) {
    EXPECT_NE(import_help.find(std::string(f.name) + ": " + std::string(f.describe)),
              std::string::npos)
        << f.name;
  }
  const std::string export_help = cli.app.get_subcommand("export")->help();
  for (const auto& f : app::export_formats()) {
    EXPECT_NE(export_help.find(std::string(f.name) + ": " + std::string(f.describe)),
              std::string::npos)
        << f.name;
  }
  // `stream import`'s kind help is written as a sentence: it names every kind.
  const std::string kind_help = cli.app.get_subcommand("stream")
                                    ->get_subcommand("import")
                                    ->get_option("kind")
                                    ->get_description();
  for (const auto& k : app::stream_imports()) {
    EXPECT_NE(kind_help.find(std::string(k.name)), std::string::npos) << k.name;
  }
}

TEST(StreamImports, EveryTraceFormatIsAStreamImportOfATrace) {
  for (const auto& t : workload::trace_formats()) {
    SCOPED_TRACE(std::string(t.name));
    ASSERT_NE(registry::find(app::stream_imports(), t.name), nullptr);
    EXPECT_EQ(registry::find(app::stream_imports(), t.name)->run, &app::trace_import_command);
  }
  for (const auto& k : app::stream_imports()) {
    EXPECT_EQ(workload::is_trace_kind(k.name), k.run == &app::trace_import_command) << k.name;
  }
}

TEST(Protocols, ACampaignPlanNamesRunOrAProtocolAndGivesItsArgsAsTheCommandsFlags) {
  std::vector<std::string> kinds{"run"};
  for (const auto& p : app::protocols()) kinds.emplace_back(p.name);
  EXPECT_EQ(cluster::protocol_kinds(), kinds);
  Cli cli;
  for (const std::string& kind : kinds) {
    SCOPED_TRACE(kind);
    const CLI::App* cmd = cli.app.get_subcommand(kind);
    const auto args = cluster::plan_args(kind);
    EXPECT_FALSE(args.empty());
    for (std::string flag : args) {
      std::replace(flag.begin(), flag.end(), '_', '-');
      EXPECT_NE(cmd->get_option_no_throw("--" + flag), nullptr) << flag;
    }
  }
  EXPECT_TRUE(cluster::plan_args("no-such-kind").empty());
}

// ---- What the docs say of an entry -------------------------------------------------------

/// The cells of a Markdown table's rows that start with "| `<name>` |", by name.
std::map<std::string, std::vector<std::string>> table_rows(const std::string& text,
                                                           const std::string& heading) {
  std::map<std::string, std::vector<std::string>> rows;
  const std::size_t start = text.find(heading);
  EXPECT_NE(start, std::string::npos) << heading;
  std::istringstream in(text.substr(start));
  std::string line;
  std::getline(in, line);  // the heading
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        const std::size_t first = cell.find_first_not_of(' ');
        cells.push_back(first == std::string::npos ? std::string() : cell.substr(first));
        while (!cells.back().empty() && cells.back().back() == ' ') cells.back().pop_back();
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (!cells.empty() && cells[0].size() > 2 && cells[0].front() == '`') {
      rows[cells[0].substr(1, cells[0].find('`', 1) - 1)] = cells;
    }
  }
  return rows;
}

/// `text` has `word` whole: not inside a longer name (dtype is not kv_cache_dtype).
bool names_word(const std::string& text, const std::string& word) {
  const auto part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    if ((at == 0 || !part(text[at - 1])) && (end == text.size() || !part(text[end]))) return true;
  }
  return false;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

TEST(Presets, EachPresetIsWhatDocsEnginesMdSaysOfIt) {
  const auto rows = table_rows(read(kSource / "docs/engines.md"), "### Presets");
  EXPECT_EQ(rows.size(), engine::presets().size());
  for (const engine::Preset& p : engine::presets()) {
    const std::string name(p.name);
    SCOPED_TRACE(name);
    ASSERT_EQ(rows.count(name), 1u);
    const std::vector<std::string>& row = rows.at(name);
    ASSERT_EQ(row.size(), 6u);  // preset, command, ready, identity, stop, engine_args
    // command: every word the docs write is a word of the launch command (placeholders as
    // written; --host and --port stand for "--host {host}").
    const std::string command = row[1].substr(1, row[1].find('`', 1) - 1);
    std::istringstream words(command);
    for (std::string w; words >> w;) {
      EXPECT_NE(std::find(p.command.begin(), p.command.end(), w), p.command.end()) << w;
    }
    EXPECT_EQ(row[1].find("needs `model_file`") != std::string::npos, p.needs_model_file);
    for (const auto& [var, value] : p.env) {
      EXPECT_NE(row[1].find(var + "=" + value), std::string::npos) << var;
    }
    EXPECT_EQ(row[2].rfind(
                  "GET " + std::string(p.ready_path) + " = " + std::to_string(p.ready_status), 0),
              0u)
        << row[2];
    EXPECT_EQ(row[3], join(p.identity_paths, ", "));
    std::ostringstream stop;
    stop << p.stop_signal << ", " << p.grace_s << " s";
    EXPECT_EQ(row[4], stop.str());
    // engine_args: every key with a rule is named, and ollama's are environment variables.
    for (const engine::ArgRule& r : p.rules) {
      EXPECT_TRUE(names_word(row[5], std::string(r.key))) << r.key;
    }
    EXPECT_EQ(row[5].rfind("environment:", 0) == 0, p.args_as_env);
    EXPECT_EQ(row[5].find("others are an error") != std::string::npos, !p.unknown_as_dashes);
  }
}

TEST(ChartKinds, EachKindIsARowOfDocsCompareMdsChartTableInOrder) {
  const std::string text = read(kSource / "docs/compare.md");
  const std::size_t table = text.find("| file stem | section | chart | from |");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = text.substr(table, text.find("\n\n", table) - table);
  std::size_t at = 0;
  for (const auto& k : report::chart_kinds()) {
    SCOPED_TRACE(std::string(k.name));
    const std::size_t found = rows.find("`" + std::string(k.name) + "`");
    ASSERT_NE(found, std::string::npos);
    EXPECT_GE(found, at);
    at = found;
  }
}

TEST(MetricRegistry, DocsCompareMdsEngineTableListsEveryEngineBoardFigure) {
  // docs/compare.md "Engine-timed figures": a row per board view of the engine's section, with
  // its label and its place in summary.json, as the registry defines them.
  const std::string text = read(kSource / "docs/compare.md");
  const std::size_t table = text.find("| key | label | from `summary.json` | delta |");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = text.substr(table, text.find("\n\n", table) - table);
  for (const metrics::Figure& f : metrics::figures()) {
    for (const metrics::BoardView& v : f.board) {
      if (v.section != metrics::Section::kEngine) continue;
      SCOPED_TRACE(v.key);
      const std::size_t row = rows.find("| `" + v.key + "` | " + v.label + " | `" + f.path);
      EXPECT_NE(row, std::string::npos)
          << "no row `" << v.key << "` | " << v.label << " | `" << f.path << "…";
    }
  }
}

}  // namespace
}  // namespace dyno
