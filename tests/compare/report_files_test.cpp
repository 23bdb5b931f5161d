// The board directory and its writers: SHA256SUMS, figures as a list, HTML escaping of text
// from records, Markdown escaping, CSV quoting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "chart/chart.h"
#include "digest/digest.h"
#include "record/run_writer.h"
#include "report/board_document.h"
#include "report/board_files.h"
#include "report/format.h"
#include "temp_dir.h"
#include "test_records.h"

namespace dyno::report {
namespace {

namespace fs = std::filesystem;

using dyno::testing::count;
using dyno::testing::slurp;

class BoardDir : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dyno::testing::make_temp_dir("dyno-board"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BoardDir, WritesEveryFileAndSums) {
  const compare::Board b = compare::build_board(testing::fixture_input(), testing::fixed_options());
  const auto names = write_board(dir_, b, {});
  EXPECT_EQ(names, (std::vector<std::string>{"README.md", "report.html", "board.json", "board.csv",
                                             "SHA256SUMS"}));
  // SHA256SUMS lists every other file with its hash, in sha256sum's format.
  std::istringstream sums(slurp(dir_ / "SHA256SUMS"));
  std::string line;
  std::size_t n = 0;
  while (std::getline(sums, line)) {
    ++n;
    const std::string name = line.substr(66);
    EXPECT_EQ(line.substr(0, 64), digest::sha256_hex(slurp(dir_ / name))) << name;
  }
  EXPECT_EQ(n, 4u);
  // The written README is the golden rendering.
  EXPECT_EQ(slurp(dir_ / "README.md"), to_markdown(board_document(b, {}, DocumentKind::kFull), {}));
}

TEST_F(BoardDir, FiguresArriveAsAListAndAreWrittenReferencedAndInlined) {
  const compare::Board b = compare::build_board(testing::fixture_input(), testing::fixed_options());
  Figure f;
  f.title = "Output tok/s by concurrency";
  f.stem = "throughput-by-concurrency";
  f.section = compare::Section::kThroughput;
  f.caption = "one line per arm";
  f.svg =
      "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" "
      "height=\"10\"><rect width=\"10\" height=\"10\"/></svg>\n";
  f.png = std::string("\x89PNG\r\n\x1a\n", 8) + "test bytes";
  const auto names = write_board(dir_, b, {f});
  EXPECT_EQ(slurp(dir_ / "throughput-by-concurrency.svg"), f.svg);
  EXPECT_EQ(slurp(dir_ / "throughput-by-concurrency.png"), f.png);
  const std::string readme = slurp(dir_ / "README.md");
  EXPECT_NE(readme.find("![Output tok/s by concurrency](throughput-by-concurrency.png)"),
            std::string::npos);
  // In the throughput section, before the prefill section.
  EXPECT_LT(readme.find("throughput-by-concurrency.png"), readme.find("## Prefill"));
  const std::string html = slurp(dir_ / "report.html");
  EXPECT_NE(html.find("<svg xmlns"), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  const std::string sums = slurp(dir_ / "SHA256SUMS");
  EXPECT_NE(sums.find("  throughput-by-concurrency.svg\n"), std::string::npos);
  EXPECT_NE(sums.find("  throughput-by-concurrency.png\n"), std::string::npos);
  EXPECT_NE(slurp(dir_ / "board.json").find("\"stem\": \"throughput-by-concurrency\""),
            std::string::npos);
  // Bad figures are refused.
  Figure bad = f;
  bad.stem = "../x";
  EXPECT_THROW(write_board(dir_, b, {bad}), std::invalid_argument);
  bad = f;
  bad.svg = "<svg><script>x</script></svg>";
  EXPECT_THROW(write_board(dir_, b, {bad}), std::invalid_argument);
  EXPECT_THROW(write_board(dir_, b, {f, f}), std::invalid_argument);
}

TEST_F(BoardDir, HtmlEscapesEveryTextFromTheRecords) {
  // The fixture's fast c4 run answered q00 with a planted <script>; here a model name and the
  // title carry markup too.
  compare::BoardInput in = testing::fixture_input();
  for (auto& arm : in.arms) {
    for (auto& r : arm.runs) {
      auto copy = testing::copy_run(r);
      testing::set_manifest(*copy, "model.id", "<img src=x onerror=alert(1)>");
      r = copy;
    }
  }
  in.title = "<b>bold</b> & co";
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  write_board(dir_, b, {});
  const std::string html = slurp(dir_ / "report.html");
  EXPECT_EQ(count(html, "<script"), 1u);  // the table sorter, nothing from a record
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;board&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;bold&lt;/b&gt; &amp; co"), std::string::npos);
  // No network: nothing is fetched from anywhere.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  const std::string readme = slurp(dir_ / "README.md");
  // No '<' from a record can open a tag: each is backslash-escaped (README's own markup has
  // none).
  for (std::size_t at = readme.find('<'); at != std::string::npos; at = readme.find('<', at + 1)) {
    EXPECT_TRUE(at > 0 && readme[at - 1] == '\\') << readme.substr(at, 40);
  }
  EXPECT_NE(readme.find("\\<script>alert"), std::string::npos);  // shown as text, no entity
  EXPECT_EQ(readme.find("&lt;"), std::string::npos);
}

TEST(Format, EscapesAndNumbers) {
  EXPECT_EQ(markdown_escape("a|b *c* _d_ <e> & `f` [g] #h ~i\nj"),
            "a\\|b \\*c\\* \\_d\\_ \\<e> & \\`f\\` \\[g\\] \\#h \\~i j");
  // No HTML entity: '>' is plain text but at the start (a block quote), '&' is escaped only
  // where it could start an entity.
  EXPECT_EQ(markdown_escape("p99 > budget & more"), "p99 > budget & more");
  EXPECT_EQ(markdown_escape("> quoted &gt; &#62;"), "\\> quoted \\&gt; \\&\\#62;");
  EXPECT_EQ(dyno::chart::markup_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(number(1189.44, 1), "1,189.4");
  EXPECT_EQ(number(999.0, 0), "999");
  EXPECT_EQ(number(-12345.678, 2), "-12,345.68");
  EXPECT_EQ(number(std::nullopt, 1), "n/a");
  EXPECT_EQ(signed_pct(12.34), "+12.3 %");
  EXPECT_EQ(signed_pct(-4.0), "\u22124.0 %");
  EXPECT_EQ(signed_pct(-0.01), "±0.0 %");
  EXPECT_EQ(signed_pp(1.5625), "+1.56 pp");
  EXPECT_EQ(gib(20289945600.0), "18.90 GiB");
  // Only a hash is shortened; a parameter list is shown whole.
  EXPECT_EQ(short_hash(std::string(64, 'a')), std::string(12, 'a'));
  EXPECT_EQ(short_hash("e3acdf4951dabbe2369fa03dc5b90e1da1408411"), "e3acdf4951da");
  EXPECT_EQ(short_hash("[1.0,2.0,4.0,8.0,16.0]"), "[1.0,2.0,4.0,8.0,16.0]");
  EXPECT_EQ(short_hash("abc"), "abc");
}

TEST(Document, MarkdownTablesAndBoldSpans) {
  Document d;
  d.title = "T|itle";
  Section s{"S", 2, {}};
  Block p;
  p.kind = Block::Kind::kParagraph;
  p.text = {{"Status:", true, false}, {" ok ", true, false}, {"x", false, true}};
  s.blocks.push_back(p);
  Block t;
  t.kind = Block::Kind::kTable;
  t.table.header = {"a", "b"};
  t.table.numeric = {false, true};
  t.table.rows.push_back({{{{"x|y", false, false}}, std::nullopt}, {{{"1", true, false}}, 1.0}});
  s.blocks.push_back(t);
  d.sections.push_back(s);
  EXPECT_EQ(
      to_markdown(d, {}),
      "# T\\|itle\n\n## S\n\n**Status:** **ok** `x`\n\n| a | b |\n|---|---:|\n| x\\|y | **1** |\n");
  const std::string html = to_html(d, {});
  EXPECT_NE(html.find("<td class=\"num\" data-sort=\"1\"><strong>1</strong></td>"),
            std::string::npos);
  const std::string text = to_text(d);
  EXPECT_NE(text.find("  x|y 1"), std::string::npos) << text;
}

TEST(Csv, QuotesFieldsThatNeedIt) {
  compare::BoardInput in = testing::fixture_input();
  for (auto& arm : in.arms) {
    for (auto& r : arm.runs) {
      auto copy = testing::copy_run(r);
      testing::set_manifest(*copy, "model.id", "a \"quoted\", model");
      r = copy;
    }
  }
  const compare::Board b = compare::build_board(in, testing::fixed_options());
  const std::string csv = board_csv(b);
  EXPECT_NE(csv.find(",\"a \"\"quoted\"\", model\","), std::string::npos);
  EXPECT_EQ(csv.substr(0, 14), "arm,baseline,c");
  // One row per comparison, cell and figure the board shows, plus the header (no engine-timed
  // figures: no run of the fixture has one).
  ASSERT_FALSE(b.engine_figures);
  std::size_t shown = 0;
  for (const auto& m : compare::metric_catalog()) shown += compare::shown(m, false) ? 1 : 0;
  EXPECT_LT(shown, compare::metric_catalog().size());
  // Each load cell also has its operating point's output per GPU (no price: no cost rows).
  EXPECT_EQ(count(csv, "\r\n"), 1 + 2 * (shown + 1));
  EXPECT_EQ(count(csv, ",output_tokens_per_s_per_gpu,"), 2u);
  EXPECT_EQ(count(csv, "usd_per_mtok"), 0u);
}

}  // namespace
}  // namespace dyno::report
