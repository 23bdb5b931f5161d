// Boards that agree with themselves: for a board of every protocol, made by the `dyno` binary
// from two simulated engines, every cell is judged by its own figures (board.json `judged_by`)
// and only those, wherever a reader looks — the colour sign and label of its heatmap cell (the
// SVG's description lists every heatmap cell), the bold "win" of the README's tables, the
// tallies at a glance and the `nonwin` findings — and no chart shortens a label.
#include <array>
#include <cmath>
#include <cstdio>
#include <set>

#include "integration/integration_fixture.h"

using namespace dyno::integration;  // the fixture, fs, json, Child, read_json(l)

namespace {

/// "+12.3 %" as the report writes a positive delta (a win's delta is above 0).
std::string win_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "+%.1f %%", v);
  std::string s = buf;
  if (s == "+0.0 %") s = "±0.0 %";
  return s;
}

/// The heatmap's cells from its SVG description: "row × column: value label" by "row × column".
std::map<std::string, std::string> heatmap_cells(const std::string& svg) {
  std::map<std::string, std::string> out;
  const auto at = svg.find(" Cells: ");
  if (at == std::string::npos) return out;
  const auto end = svg.find("</desc>", at);
  std::string list = svg.substr(at + 8, end - at - 8);
  if (!list.empty() && list.back() == '.') list.pop_back();
  std::size_t pos = 0;
  while (pos < list.size()) {
    std::size_t next = list.find("; ", pos);
    if (next == std::string::npos) next = list.size();
    const std::string item = list.substr(pos, next - pos);
    const auto colon = item.find(": ");
    if (colon != std::string::npos) out[item.substr(0, colon)] = item.substr(colon + 2);
    pos = next + 2;
  }
  return out;
}

/// Markdown-unescaped text of a README table cell ("\[" → "[").
std::string unescape(std::string s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) continue;
    out += s[i];
  }
  return out;
}

/// The table rows of a README whose first two cells are (model, cell): their cells.
std::vector<std::vector<std::string>> rows_of(const std::string& readme, const std::string& model,
                                              const std::string& cell) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(readme);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t pos = 2;
    while (pos < line.size()) {
      const std::size_t bar = line.find(" | ", pos);
      const std::size_t end = bar == std::string::npos ? line.rfind(" |") : bar;
      if (end == std::string::npos || end < pos) break;
      cells.push_back(unescape(line.substr(pos, end - pos)));
      if (bar == std::string::npos) break;
      pos = bar + 3;
    }
    if (cells.size() >= 2 && cells[0] == model && cells[1] == cell) rows.push_back(cells);
  }
  return rows;
}

class BoardAgreement : public Integration {
 protected:
  /// Two arms of one protocol: `base` on the small-gpu profile, `fast` on a profile with a
  /// faster step and a faster prefill, so that cells differ both ways.
  void run_arms(const std::string& protocol, const std::vector<std::string>& args) {
    const fs::path fast = dir_ / "fast.json";
    if (!fs::exists(fast)) {
      std::ofstream(fast) << R"({"base": "small-gpu", "step_base_s": 0.002,)"
                          << R"( "prefill_tokens_per_s": 60000})";
    }
    for (const auto& [label, profile] : std::vector<std::pair<std::string, std::string>>{
             {"base", "small-gpu"}, {"fast", fast.string()}}) {
      std::vector<std::string> argv = {protocol,    "-q",    "--runs-root", runs(),
                                       "--profile", profile, "--label",     protocol + "-" + label};
      argv.insert(argv.end(), args.begin(), args.end());
      const Outcome o = dyno(argv);
      ASSERT_EQ(o.exit_code, 0) << protocol << ": " << o.err;
    }
  }

  /// `dyno report` of the protocol's two arms; the board directory.
  fs::path board(const std::string& protocol) {
    const fs::path out = dir_ / ("board-" + protocol);
    const Outcome o =
        dyno({"report", "--runs-root", runs(), "--arm", "fast=label=" + protocol + "-fast", "--arm",
              "base=label=" + protocol + "-base", "--out", out.string()});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return out;
  }

  /// Every cell of the board: each judged figure's verdict agrees with its heatmap cell, its
  /// table mark and its tally; no other figure is bold, coloured or tallied for the cell.
  void check_agreement(const fs::path& dir) {
    const json::object b = read_json(dir / "board.json");
    const std::string readme = Child::slurp((dir / "README.md").string());
    // Heatmaps by the figure they show: a key, or the cell's prefill figure.
    std::map<std::string, std::map<std::string, std::string>> heat;
    for (const char* stem : {"delta-heatmap", "decode-delta-heatmap", "prefill-delta-heatmap"}) {
      if (fs::exists(dir / (std::string(stem) + ".svg"))) {
        heat[stem] = heatmap_cells(Child::slurp((dir / (std::string(stem) + ".svg")).string()));
      }
    }
    std::map<std::pair<std::string, std::string>, std::array<int, 3>> counted;  // (arm, key)
    std::size_t judged_deltas = 0;
    std::set<std::string> nonwins;  // "cell|arm|key" of the findings
    for (const auto& f : b.at("findings").as_array()) {
      if (f.at("type") != "nonwin") continue;
      nonwins.insert(std::string(f.at("cell").as_string()) + "|" +
                     std::string(f.at("arm").as_string()) + "|" +
                     std::string(f.at("data").at("metric").as_string()));
    }
    std::size_t heat_cells_seen = 0;
    for (const auto& cv : b.at("cells").as_array()) {
      const json::object& cell = cv.as_object();
      const std::string model(cell.at("model").as_string());
      const std::string name(cell.at("cell").as_string());
      const std::string id(cell.at("id").as_string());
      // The heatmap's column label: a concurrency cell by its level ("c=4"), others by name.
      const std::string column = cell.at("level_kind") == "concurrency"
                                     ? "c=" + std::to_string(cell.at("level").to_number<int>())
                                     : name;
      std::set<std::string> judged;
      for (const auto& k : cell.at("judged_by").as_array())
        judged.insert(std::string(k.as_string()));
      const std::string prefill(cell.at("prefill_figure").as_string());
      EXPECT_TRUE(prefill == "server_prefill_tokens_per_s" || prefill == "prefill_rate_client_p50");
      const auto rows = rows_of(readme, model, name);
      ASSERT_FALSE(rows.empty()) << id;
      for (const auto& cmp : cell.at("comparisons").as_array()) {
        const std::string arm(cmp.at("arm").as_string());
        if (cmp.at("status") != "compared") continue;
        const json::object& deltas = cmp.at("deltas").as_object();
        // Bold marks: each is a win of a judged figure, and each judged win is bold somewhere.
        std::set<std::string> bold;
        for (const auto& r : rows) {
          for (const auto& c : r) {
            if (c.rfind("**", 0) == 0) bold.insert(c.substr(2, c.size() - 4));
          }
        }
        for (const auto& [key, dv] : deltas) {
          const json::object& d = dv.as_object();
          const std::string verdict(d.at("verdict").as_string());
          const bool is_judged = judged.count(std::string(key)) > 0;
          const bool win = verdict == "win";
          if (win && d.at("value").is_number()) {
            const std::string text = win_text(d.at("value").to_number<double>());
            bool shown_bold = false;
            for (const auto& s : bold) shown_bold = shown_bold || s.rfind(text + " [", 0) == 0;
            if (is_judged) {
              EXPECT_TRUE(shown_bold) << id << " " << key << " " << text;
            }
          }
          if (!is_judged) {
            EXPECT_EQ(nonwins.count(id + "|" + arm + "|" + std::string(key)), 0u) << id << key;
            continue;
          }
          ++judged_deltas;
          auto& c = counted[{arm, std::string(key)}];
          c[win ? 0 : verdict == "tie" ? 1 : 2] += 1;
          EXPECT_EQ(nonwins.count(id + "|" + arm + "|" + std::string(key)), win ? 0u : 1u)
              << id << " " << key << " " << verdict;
          // The heatmap of this figure shows the cell with the same sign and verdict.
          const std::string stem = key == "output_tokens_per_s"        ? "delta-heatmap"
                                   : key == "decode_rate_per_user_p50" ? "decode-delta-heatmap"
                                   : key == prefill                    ? "prefill-delta-heatmap"
                                                                       : "";
          if (stem.empty()) continue;
          ASSERT_TRUE(heat.count(stem)) << id << ": no " << stem;
          const std::string row = b.at("arms").as_array().size() > 2 ? model + " · " + arm : model;
          std::string shown;
          for (const auto& [where, what] : heat[stem]) {
            if (where == row + " × " + column) {
              shown = what;
            }
          }
          ASSERT_FALSE(shown.empty()) << id << " not in " << stem;
          ++heat_cells_seen;
          const double v = d.at("value").to_number<double>();
          if (std::abs(v) >= 0.05) {
            EXPECT_EQ(shown[0] == '+', v > 0) << id << " " << shown;
          }
          EXPECT_NE(shown.find(verdict == "no_interval" ? "no interval" : verdict),
                    std::string::npos)
              << id << " " << key << ": " << shown << " vs " << verdict;
          if (stem == "prefill-delta-heatmap") {
            EXPECT_NE(shown.find(key == "server_prefill_tokens_per_s" ? "engine" : "client"),
                      std::string::npos)
                << shown;
          }
        }
        // Nothing else is bold: every bold delta is a win of a figure the cell is judged by.
        for (const auto& text : bold) {
          bool judged_win = false;
          for (const auto& k : judged) {
            const auto it = deltas.find(k);
            if (it == deltas.end() || it->value().at("verdict") != "win") continue;
            const std::string w = win_text(it->value().at("value").to_number<double>());
            judged_win = judged_win || text.rfind(w + " [", 0) == 0;
          }
          EXPECT_TRUE(judged_win) << id << ": bold " << text;
        }
        // Heatmaps colour no cell by a figure it is not judged by.
        for (const auto& [stem, cells] : heat) {
          const std::string key = stem == "delta-heatmap"          ? "output_tokens_per_s"
                                  : stem == "decode-delta-heatmap" ? "decode_rate_per_user_p50"
                                                                   : prefill;
          if (judged.count(key) > 0) continue;
          for (const auto& [where, what] : cells) {
            EXPECT_NE(where, model + " × " + column)
                << id << " drawn in " << stem << " (" << what << ")";
          }
        }
      }
    }
    EXPECT_GT(judged_deltas, 0u);
    EXPECT_GT(heat_cells_seen, 0u);
    // Tallies count exactly the judged verdicts.
    for (const auto& tv : b.at("tallies").as_array()) {
      const json::object& t = tv.as_object();
      if (t.at("basis") != "intervals") continue;
      const auto it = counted.find(
          {std::string(t.at("arm").as_string()), std::string(t.at("metric").as_string())});
      ASSERT_NE(it, counted.end()) << t.at("metric");
      EXPECT_EQ(t.at("wins").to_number<int>(), it->second[0]) << t.at("metric");
      EXPECT_EQ(t.at("ties").to_number<int>(), it->second[1]) << t.at("metric");
      counted.erase(it);
    }
    EXPECT_TRUE(counted.empty()) << "judged figures without a tally";
  }
};

TEST_F(BoardAgreement, EveryProtocolsCellsAreJudgedByTheirOwnFiguresEverywhere) {
  run_arms("sweep", {"--concurrencies", "1,4", "--min-requests", "12", "--per-slot", "3",
                     "--output-tokens", "16", "--input-tokens", "96"});
  run_arms("ladder",
           {"--depths", "0,2048", "--prefill-sizes", "256,2048", "--decode-tokens", "16"});
  {
    std::ofstream cases(dir_ / "cases.jsonl");
    for (const char* c : {"design", "review"}) {
      for (int i = 0; i < 4; ++i) {
        cases << R"({"id":")" << c << "-" << i
              << R"(","messages":[{"role":"user","content":"a real prompt about )" << c
              << " number " << i << R"("}],"max_tokens":24,"ignore_eos":true,"tags":{"case":")" << c
              << R"("}})"
              << "\n";
      }
    }
  }
  run_arms("real", {"--stream", (dir_ / "cases.jsonl").string()});
  for (const char* protocol : {"sweep", "ladder", "real"}) {
    SCOPED_TRACE(protocol);
    const fs::path dir = board(protocol);
    check_agreement(dir);
    // The aggregate input rate is never called prefill; a ladder's one-request cells get no CDF.
    const std::string readme = Child::slurp((dir / "README.md").string());
    EXPECT_EQ(readme.find("Prefill tok/s (aggregate)"), std::string::npos);
    EXPECT_EQ(readme.find("aggregate prefill"), std::string::npos);
    if (std::string(protocol) == "ladder") {
      EXPECT_FALSE(fs::exists(dir / "ttft-cdf.svg"));
      EXPECT_TRUE(fs::exists(dir / "ttft-by-prompt.svg"));
      EXPECT_NE(readme.find("| one request |"), std::string::npos);
    }
  }
}

}  // namespace
