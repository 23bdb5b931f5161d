#include "load/shard.h"

#include <cstdlib>
#include <ctime>
#include <regex>

#include "error/error.h"

namespace dyno::load {

namespace {

std::int64_t ns_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// now+N{ms,s,m}, or nullopt when `text` is not of that form.
std::optional<std::int64_t> relative_ns(const std::string& text) {
  static const std::regex form(R"(now\+([0-9]{1,9})(ms|s|m))");
  std::smatch m;
  if (!std::regex_match(text, m, form)) return std::nullopt;
  const std::int64_t n = std::stoll(m[1].str());
  const std::int64_t unit = m[2] == "ms" ? 1'000'000 : m[2] == "s" ? 1'000'000'000 : 60'000'000'000;
  return n * unit;
}

/// RFC 3339 UTC, or nullopt when `text` is not of that form.
std::optional<std::int64_t> absolute_ns(const std::string& text) {
  static const std::regex form(
      R"(([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.([0-9]{1,9}))?Z)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(m[1].str()) - 1900;
  tm.tm_mon = std::stoi(m[2].str()) - 1;
  tm.tm_mday = std::stoi(m[3].str());
  tm.tm_hour = std::stoi(m[4].str());
  tm.tm_min = std::stoi(m[5].str());
  tm.tm_sec = std::stoi(m[6].str());
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 59) {
    return std::nullopt;
  }
  const std::tm given = tm;
  const std::time_t seconds = timegm(&tm);
  if (tm.tm_mday != given.tm_mday) return std::nullopt;  // e.g. February 30th, normalised
  std::string fraction = m[8].str();
  fraction.resize(9, '0');
  return static_cast<std::int64_t>(seconds) * 1'000'000'000 + std::stoll(fraction);
}

}  // namespace

Shard parse_shard(const std::string& text) {
  static const std::regex form(R"(([0-9]{1,9})/([0-9]{1,9}))");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    throw UsageError("--shard " + text +
                     ": give K/N, this process's shard K (0-based) of N, e.g. --shard 0/4");
  }
  const auto k = static_cast<std::uint32_t>(std::stoul(m[1].str()));
  const auto n = static_cast<std::uint32_t>(std::stoul(m[2].str()));
  if (n < 1) throw UsageError("--shard " + text + ": N must be at least 1");
  if (k >= n) {
    throw UsageError("--shard " + text + ": K is 0-based and must be below N (0 to " +
                     std::to_string(n - 1) + ")");
  }
  return Shard{k, n};
}

Shard slurm_shard(const char* procid, const char* ntasks) {
  static const std::regex number("[0-9]{1,9}");
  const auto read = [](const char* name, const char* value) {
    if (value == nullptr) {
      throw UsageError(std::string("--shard slurm: ") + name +
                       " is not set: run dyno under srun (one task per client host), or give "
                       "--shard K/N");
    }
    if (!std::regex_match(value, number)) {
      throw UsageError(std::string("--shard slurm: ") + name + "=" + value +
                       " is not a task number");
    }
    return static_cast<std::uint32_t>(std::stoul(value));
  };
  const std::uint32_t k = read("SLURM_PROCID", procid);
  const std::uint32_t n = read("SLURM_NTASKS", ntasks);
  if (n < 1 || k >= n) {
    throw UsageError("--shard slurm: SLURM_PROCID=" + std::to_string(k) + " with SLURM_NTASKS=" +
                     std::to_string(n) + ": the task number must be below the number of tasks");
  }
  return Shard{k, n};
}

Shard resolve_shard(const std::string& text) {
  if (text == "slurm") return slurm_shard(std::getenv("SLURM_PROCID"), std::getenv("SLURM_NTASKS"));
  return parse_shard(text);
}

std::int64_t parse_start_at(const std::string& text, std::chrono::system_clock::time_point now) {
  const std::int64_t now_ns = ns_of(now);
  std::int64_t at = 0;
  if (const auto rel = relative_ns(text)) {
    at = now_ns + *rel;
  } else if (const auto abs = absolute_ns(text)) {
    at = *abs;
  } else {
    throw UsageError("--start-at " + text +
                     ": give an RFC 3339 UTC time such as 2026-12-03T14:30:00Z, or now+5s "
                     "(units ms, s, m)");
  }
  if (at < now_ns - 1'000'000'000) {
    throw UsageError("--start-at " + text + " is in the past (more than a second ago)");
  }
  if (at > now_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(kMaxStartAhead).count()) {
    throw UsageError("--start-at " + text + " is more than 24 hours ahead");
  }
  return at;
}

}  // namespace dyno::load
