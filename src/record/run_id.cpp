#include "record/run_id.h"

#include <cstdio>
#include <ctime>
#include <random>

namespace dyno::record {

namespace {

std::tm utc_tm(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

std::string sanitize_label(const std::string& label) {
  std::string out;
  for (char c : label) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    out.push_back(keep ? c : '-');
    if (out.size() == 48) break;
  }
  return out;
}

std::string make_run_id(std::chrono::system_clock::time_point now, const std::string& label) {
  const std::tm tm = utc_tm(now);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device rd;
  char rnd[8];
  std::snprintf(rnd, sizeof rnd, "%06x", rd() & 0xffffffu);
  std::string id = std::string(stamp) + "-" + rnd;
  const std::string clean = sanitize_label(label);
  if (!clean.empty()) id += "-" + clean;
  return id;
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const std::tm tm = utc_tm(t);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

}  // namespace dyno::record
