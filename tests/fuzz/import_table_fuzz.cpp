// `dyno import table` reading a ledger (interop/import_table.h): any bytes, under a CSV-style
// mapping, a mapping of JSON paths and one of JSON rows at a path, give results or an
// ImportFileError naming the file, never another exception, a crash or a hang; every result
// is summary-only, names its row, and holds only finite, non-negative figures with counts that
// agree.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "interop/import_table.h"

namespace {

void check_figure(const std::optional<double>& v) {
  FUZZ_CHECK(!v || (std::isfinite(*v) && *v >= 0));
}

void check(const dyno::interop::ImportedResult& r) {
  FUZZ_CHECK(r.source.timing == "summary_only");
  FUZZ_CHECK(r.source.part && !r.source.part->empty());
  FUZZ_CHECK(r.status == "ok" || r.status == "partial" || r.status == "failed");
  FUZZ_CHECK(r.model_id && !r.model_id->empty());
  FUZZ_CHECK(!r.api || *r.api == "chat" || *r.api == "completions");  // none: --api says
  const auto& s = r.summary;
  // A count the file does not give is written null (absent_counts), not 0: no sum to check.
  const auto absent = [&](const std::string& path) {
    return std::find(r.absent_counts.begin(), r.absent_counts.end(), path) != r.absent_counts.end();
  };
  FUZZ_CHECK(absent("requests.ok") || absent("requests.failed") ||
             s.requests_ok + s.requests_failed == s.requests_total || s.requests_total == 0);
  for (const auto* f : {&s.output_tokens_per_s, &s.requests_per_s, &s.ttft_ms.p50, &s.ttft_ms.p99,
                        &s.e2e_ms.mean, &s.accuracy, &s.error_rate}) {
    check_figure(*f);
  }
  FUZZ_CHECK(!s.accuracy || *s.accuracy <= 1);
  FUZZ_CHECK(!r.load.concurrency || *r.load.concurrency >= 1);
  FUZZ_CHECK(!r.load.rate_per_s || *r.load.rate_per_s > 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::vector<std::vector<std::string>> maps{
      {"model=model", "c=concurrency", "t=latency_ms.ttft.p50:s", "ok=requests.ok",
       "total=requests.total", "rate=rate", "api=api", "gpu=gpu"},
      {"model=model", "$.m.t[0]=latency_ms.ttft.p99", "m.e=latency_ms.e2e.mean:us",
       "a=quality.accuracy:percent", "p=protocol", "cell=cell", "f=requests.failed"},
      {"$.rows=rows", "model=model", "$.x[1].y=throughput.output_tokens_per_s:per_min"},
  };
  for (const auto& map : maps) {
    try {
      for (const auto& r : dyno::interop::read_table(bytes, "fuzz.csv", map)) check(r);
    } catch (const dyno::interop::ImportFileError& e) {
      FUZZ_CHECK(std::string(e.what()).rfind("fuzz.csv", 0) == 0);
    }
  }
  return 0;
}
