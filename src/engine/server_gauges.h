// The engine's gauges over a cell: /metrics scraped on the telemetry period on a thread of its
// own (blocking client; never the load's event loop), every gauge sample kept as a series.
// summary.json → server.gauges gets each series' distribution; the series themselves go to
// evidence/metrics_gauges.jsonl.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport/http_target.h"

namespace dyno::engine {

class GaugeSampler {
 public:
  /// `period_ns`: the telemetry period, at least 100 ms (a scrape is an HTTP request and a
  /// parse of the whole exposition, on the engine's side too).
  GaugeSampler(const transport::BaseUrl& url, std::optional<std::string> api_key, bool tls_verify,
               std::optional<std::string> ca_file, std::int64_t period_ns);
  ~GaugeSampler();
  GaugeSampler(const GaugeSampler&) = delete;
  GaugeSampler& operator=(const GaugeSampler&) = delete;

  void start();
  void stop();  ///< idempotent; joins the thread

  /// server.gauges: {period_ms, scrapes, failed_scrapes, series: {"name{labels}": distribution
  /// + last}}; times relative to `t0_ns`.
  boost::json::object summary_json() const;
  /// One line per scrape: {"t_ns": <since t0>, "values": {"name{labels}": value}}.
  std::string evidence_jsonl(std::int64_t t0_ns) const;
  std::size_t scrapes() const;

  /// The key of a sample: `name{a="x",b="y"}` (labels sorted), or `name`.
  static std::string key_of(const std::string& name,
                            const std::map<std::string, std::string>& labels);

 private:
  void loop();

  transport::BaseUrl url_;
  std::optional<std::string> api_key_;
  bool tls_verify_;
  std::optional<std::string> ca_file_;
  std::int64_t period_ns_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  struct Scrape {
    std::int64_t t_ns = 0;
    std::vector<std::pair<std::string, double>> values;
  };
  std::vector<Scrape> scrapes_;
  std::size_t failed_ = 0;
};

}  // namespace dyno::engine
