#include "engine/server_gauges.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>

#include "engine/prometheus.h"
#include "json/json_text.h"
#include "metrics/stats.h"
#include "record/record_json.h"
#include "transport/event_loop.h"
#include "transport/tokenize_client.h"

namespace dyno::engine {

namespace json = boost::json;

GaugeSampler::GaugeSampler(const transport::BaseUrl& url, std::optional<std::string> api_key,
                           bool tls_verify, std::optional<std::string> ca_file,
                           std::int64_t period_ns)
    : url_(url),
      api_key_(std::move(api_key)),
      tls_verify_(tls_verify),
      ca_file_(std::move(ca_file)),
      period_ns_(std::max<std::int64_t>(period_ns, 100'000'000)) {}

GaugeSampler::~GaugeSampler() { stop(); }

void GaugeSampler::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void GaugeSampler::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string GaugeSampler::key_of(const std::string& name,
                                 const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return name;
  std::string out = name + "{";
  bool first = true;
  for (const auto& [k, v] : labels) {  // std::map: sorted by label name
    out += (first ? "" : ",") + k + "=\"" + v + "\"";
    first = false;
  }
  return out + "}";
}

void GaugeSampler::loop() {
  std::unique_ptr<transport::TokenizeClient> client;
  try {
    transport::TokenizeClientOptions co;
    co.timeout =
        std::chrono::milliseconds(std::max<std::int64_t>(period_ns_ / 1'000'000 * 5, 2000));
    co.tls_verify = tls_verify_;
    co.ca_file = ca_file_;
    client = std::make_unique<transport::TokenizeClient>(url_, "", api_key_, co);
  } catch (const std::exception&) {
    std::lock_guard<std::mutex> lock(mu_);
    ++failed_;
    return;
  }
  std::int64_t next = transport::steady_now_ns();
  while (!stop_.load()) {
    const std::int64_t t = transport::steady_now_ns();
    Scrape s;
    s.t_ns = t;
    bool ok = false;
    try {
      if (auto text = client->get_text("/metrics")) {
        const Exposition e = parse_prometheus(*text);
        for (const auto& f : e.families) {
          if (f.type != MetricType::kGauge) continue;
          for (const auto& sample : f.samples) {
            s.values.emplace_back(key_of(sample.name, sample.labels), sample.value);
          }
        }
        ok = true;
      }
    } catch (const std::exception&) {
      ok = false;  // a failed scrape is counted, never fatal
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ok) {
        scrapes_.push_back(std::move(s));
      } else {
        ++failed_;
      }
    }
    next += period_ns_;
    const std::int64_t now = transport::steady_now_ns();
    if (next < now) next = now;  // a slow scrape does not cause a burst of catch-up scrapes
    // Sleep in short steps so stop() is prompt.
    while (!stop_.load() && transport::steady_now_ns() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::min<std::int64_t>(20, (next - transport::steady_now_ns()) / 1'000'000 + 1)));
    }
  }
}

std::size_t GaugeSampler::scrapes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scrapes_.size();
}

json::object GaugeSampler::summary_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::vector<double>> series;
  for (const auto& s : scrapes_) {
    for (const auto& [k, v] : s.values) series[k].push_back(v);
  }
  json::object out;
  out["period_ms"] = static_cast<double>(period_ns_) / 1e6;
  out["scrapes"] = scrapes_.size();
  out["failed_scrapes"] = failed_;
  json::object per;
  for (auto& [k, values] : series) {
    const double last = values.back();
    json::object d = record::distribution_to_json(metrics::summarize(values));
    d["last"] = std::isfinite(last) ? json::value(last) : json::value(nullptr);
    per[k] = std::move(d);
  }
  out["series"] = std::move(per);
  return out;
}

std::string GaugeSampler::evidence_jsonl(std::int64_t t0_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& s : scrapes_) {
    json::object values;
    for (const auto& [k, v] : s.values) {
      values[k] = std::isfinite(v) ? json::value(v) : json::value(nullptr);
    }
    out +=
        json_text::compact(json::object{{"t_ns", s.t_ns - t0_ns}, {"values", std::move(values)}});
    out += '\n';
  }
  return out;
}

}  // namespace dyno::engine
