// The typed reading of a run record (record/run_record.h, record/summary_file.h): every
// manifest.json and summary.json this repository holds — measured runs, imports of every
// format, the v1 fixture — reads into the typed values and writes back to the same bytes, so
// nothing a reader needs is left in untyped JSON; read_run reads a run directory whole.
#include "record/run_record.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "metrics/registry.h"
#include "record/manifest.h"
#include "record/record_json.h"
#include "record/record_reader.h"
#include "record/summary_file.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dyno::record::pretty_json;

fs::path source_root() { return fs::path(DYNO_SOURCE_DIR); }

json::object parse_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str()).as_object();
}

/// Every (name, manifest, summary) pair the repository keeps: run directories under tests/
/// and the import goldens ({manifest, summary, requests} per imported result).
struct Pair {
  std::string name;
  json::object manifest;
  json::object summary;
  bool current = true;  ///< written by this dyno's writers (not an older fixture)
};

/// "" when equal; else the first line that differs, both sides.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ra = static_cast<bool>(std::getline(ia, la));
    const bool rb = static_cast<bool>(std::getline(ib, lb));
    if (!ra && !rb) return "";
    if (!ra || !rb || la != lb) {
      return "line " + std::to_string(n) + ": written '" + la + "', read '" + lb + "'";
    }
  }
}

std::vector<Pair> every_record() {
  std::vector<Pair> out;
  for (const auto& e : fs::recursive_directory_iterator(source_root() / "tests")) {
    if (e.path().filename() != "summary.json") continue;
    const fs::path dir = e.path().parent_path();
    // tests/record/golden holds the writers' goldens, not a run directory.
    if (!fs::exists(dir / "manifest.json") || dir.filename() == "golden") continue;
    // The fixture run directories were written before the manifest carried
    // workload.request_stream.cycle: their manifests read, but do not write back alike.
    out.push_back({dir.string(), parse_file(dir / "manifest.json"), parse_file(e.path()), false});
  }
  for (const auto& e :
       fs::recursive_directory_iterator(source_root() / "tests/record/golden/import")) {
    if (e.path().extension() != ".json") continue;
    json::value doc = json::parse([&] {
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }());
    std::vector<json::value> results;
    if (doc.is_array()) {
      for (auto& v : doc.as_array()) results.push_back(v);
    } else {
      results.push_back(doc);
    }
    std::size_t i = 0;
    for (const json::value& r : results) {
      out.push_back({e.path().string() + "#" + std::to_string(i++), r.at("manifest").as_object(),
                     r.at("summary").as_object()});
    }
  }
  return out;
}

TEST(SummaryFile, EveryRecordInTheRepositoryReadsBackToTheSameBytes) {
  const std::vector<Pair> records = every_record();
  ASSERT_GE(records.size(), 25u);  // 5 run directories and 20+ imported results
  for (const Pair& p : records) {
    SCOPED_TRACE(p.name);
    const dyno::record::SummaryFile s = dyno::record::summary_file_from_json(p.summary);
    EXPECT_EQ(first_difference(pretty_json(dyno::record::summary_file_to_json(s)),
                               pretty_json(p.summary)),
              "");
    const dyno::record::Manifest m = dyno::record::manifest_from_json(p.manifest);
    // The typed sections (manifest_sections.h) read back to the same bytes in every record,
    // the older fixtures included.
    EXPECT_EQ(pretty_json(dyno::record::harness_to_json(m.harness)),
              pretty_json(p.manifest.at("harness")));
    EXPECT_EQ(pretty_json(dyno::record::model_to_json(m.model)),
              pretty_json(p.manifest.at("model")));
    EXPECT_EQ(pretty_json(dyno::record::hardware_to_json(m.hardware)),
              pretty_json(p.manifest.at("hardware")));
    EXPECT_EQ(pretty_json(dyno::record::protocol_to_json(m.workload.protocol)),
              pretty_json(p.manifest.at("workload").at("protocol")));
    if (p.current) {
      EXPECT_EQ(
          first_difference(pretty_json(dyno::record::manifest_to_json(m)), pretty_json(p.manifest)),
          "");
    }
  }
}

TEST(SummaryFile, TheFiguresReadBackAsTheWriterWroteThem) {
  // The golden summary (record_test.cpp writes it from a typed summary).
  const json::object golden = parse_file(source_root() / "tests/record/golden/summary.json");
  const dyno::metrics::Summary s = dyno::record::summary_from_json(golden);
  EXPECT_EQ(pretty_json(dyno::record::summary_to_json(s)), pretty_json(golden));
  EXPECT_EQ(s.requests_total, golden.at("requests").at("total").to_number<std::uint64_t>());
  EXPECT_EQ(s.ttft_ms.p50, golden.at("latency_ms").at("ttft").at("p50").to_number<double>());
}

TEST(SummaryFile, AnUnknownCountStaysUnknown) {
  // A summary-only import whose file does not say how many requests it made: null, not 0.
  for (const Pair& p : every_record()) {
    const json::value& total = p.summary.at("requests").at("total");
    if (!total.is_null()) continue;
    const dyno::record::SummaryFile s = dyno::record::summary_file_from_json(p.summary);
    EXPECT_FALSE(s.knows("requests.total")) << p.name;
    EXPECT_TRUE(s.knows("requests.cancelled")) << p.name;
    EXPECT_TRUE(dyno::record::summary_file_to_json(s).at("requests").at("total").is_null());
    return;
  }
  FAIL() << "no record with an unknown request count";
}

TEST(SummaryFile, AMalformedFigureIsNamedWithItsPath) {
  json::object golden = parse_file(source_root() / "tests/compare/data/runs" /
                                   "20261130T004322Z-dd1bd8-fast/summary.json");
  golden["latency_ms"].as_object()["ttft"].as_object()["p50"] = "fast";
  try {
    (void)dyno::record::summary_file_from_json(golden);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "summary.json: latency_ms.ttft.p50 is not a number");
  }
  // Percentiles of another method would be shown as dyno's: refused.
  golden = parse_file(source_root() / "tests/compare/data/runs" /
                      "20261130T004322Z-dd1bd8-fast/summary.json");
  golden["percentile_method"] = "nearest rank";
  try {
    (void)dyno::record::summary_file_from_json(golden);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("summary.json: percentile_method is not dyno's"),
              std::string::npos)
        << e.what();
  }
}

TEST(SummaryFile, TheEnergySectionReadsTypedAsWritten) {
  std::size_t measured = 0;
  for (const Pair& p : every_record()) {
    SCOPED_TRACE(p.name);
    const dyno::record::SummaryFile s = dyno::record::summary_file_from_json(p.summary);
    const auto e = s.energy_section();
    ASSERT_EQ(e.has_value(), p.summary.contains("energy"));
    if (!e) continue;
    const json::object& j = p.summary.at("energy").as_object();
    EXPECT_EQ(e->measured(), j.contains("window"));
    EXPECT_EQ(e->energy_j.has_value(), !j.at("energy_j").is_null());
    if (e->energy_j) {
      EXPECT_EQ(*e->energy_j, j.at("energy_j").to_number<double>());
    }
    // Every registry figure of the section, by its path, is the number the JSON holds.
    for (const dyno::metrics::Figure& f : dyno::metrics::figures()) {
      if (!f.path.starts_with("energy.") || !f.formula.empty()) continue;
      const json::value* v = j.if_contains(f.path.substr(std::string("energy.").size()));
      const std::optional<double> read = dyno::record::energy_figure(*e, f.path);
      ASSERT_EQ(read.has_value(), v != nullptr && v->is_number()) << f.path;
      if (read) {
        EXPECT_EQ(*read, v->to_number<double>()) << f.path;
      }
    }
    if (!e->measured()) continue;
    ++measured;
    const json::array& devices = j.at("devices").as_array();
    ASSERT_EQ(e->devices.size(), devices.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
      EXPECT_EQ(e->devices[i].kind, devices[i].at("kind").as_string());
      const json::value& p95 = devices[i].at("power_p95_w");
      EXPECT_EQ(e->devices[i].power_p95_w.has_value(), !p95.is_null());
    }
  }
  EXPECT_GE(measured, 1u);
}

TEST(SummaryFile, AMalformedEnergySectionIsNamedWithItsPath) {
  json::object golden = parse_file(source_root() / "tests/compare/data/runs" /
                                   "20261130T004322Z-dd1bd8-fast/summary.json");
  json::object& energy = golden["energy"].as_object();
  ASSERT_FALSE(energy.at("devices").as_array().empty());
  energy["devices"].as_array()[0].as_object()["kind"] = 7;
  try {
    (void)dyno::record::summary_file_from_json(golden);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "summary.json: energy.devices[].kind is not a string");
  }
  energy["devices"] = "none";
  EXPECT_THROW((void)dyno::record::summary_file_from_json(golden), std::runtime_error);
}

TEST(ReadRun, ReadsARunDirectoryWholeAndTyped) {
  const fs::path dir = source_root() / "tests/compare/data/runs/20261130T004322Z-dd1bd8-fast";
  const dyno::record::RunRecord r = dyno::record::read_run(dir);
  EXPECT_EQ(r.run_id, "20261130T004322Z-dd1bd8-fast");
  EXPECT_EQ(r.manifest.run_id, r.run_id);
  ASSERT_TRUE(r.has_summary());
  EXPECT_EQ(r.summary->run_id, r.run_id);
  EXPECT_TRUE(r.has_requests);
  EXPECT_EQ(r.traces.size(), r.summary->figures.requests_total +
                                 r.summary->figures.warmup_requests +
                                 r.summary->figures.requests_cancelled);
  EXPECT_TRUE(r.integrity_problems.empty());
  EXPECT_FALSE(r.imported());
  // Without the requests and the checksum check: the same manifest and summary.
  const dyno::record::RunRecord light = dyno::record::read_run(dir, {false, false});
  EXPECT_TRUE(light.traces.empty());
  EXPECT_TRUE(light.has_requests);
  EXPECT_TRUE(light.sums_sha256.empty());
  EXPECT_EQ(light.summary_json, r.summary_json);
}

TEST(ReadRun, AMalformedSummaryNamesTheFile) {
  const dyno::testing::TempDir tmp("dyno-read-run");
  const fs::path dir = tmp.path() / "run";
  fs::copy(source_root() / "tests/compare/data/runs/20261130T004322Z-dd1bd8-fast", dir,
           fs::copy_options::recursive);
  json::object s = parse_file(dir / "summary.json");
  s["requests"].as_object()["ok"] = -3;
  std::ofstream(dir / "summary.json") << json::serialize(s);
  try {
    (void)dyno::record::read_run(dir);
    FAIL();
  } catch (const dyno::record::RecordReadError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "summary.json").string() +
                                         ": summary.json: requests.ok is not a non-negative "
                                         "integer");
  }
}

}  // namespace
