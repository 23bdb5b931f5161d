#include "report/chart_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace dyno::report::chart_text {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string level_label(const std::string& kind, double level) {
  if (kind == "concurrency") return "c=" + num(level);
  if (kind == "rate") return num(level) + "/s";
  if (kind.ends_with("_tokens")) return num(level) + " tok";
  return num(level);
}

std::string level_word(const std::string& kind) {
  if (kind == "concurrency" || kind == "rate") return kind;
  if (kind == "decode_tokens") return "context";
  if (kind == "prefill_tokens") return "prompt";
  std::string w = kind;
  std::replace(w.begin(), w.end(), '_', ' ');
  return w;
}

bool ladder_kind(const std::string& kind) { return kind.ends_with("_tokens"); }

std::string level_cells(const std::string& kind) {
  if (kind == "decode_tokens") return "ladder decode cell (decode@<depth>)";
  if (kind == "prefill_tokens") return "ladder prefill cell (prefill@<size>)";
  if (ladder_kind(kind)) return "ladder cell";
  return level_word(kind) + " cell";
}

chart::Axis level_axis(const std::string& kind) {
  chart::Axis a;
  a.ticks_at_data = true;
  if (kind == "concurrency") {
    a.title = "Concurrency";
    a.unit = "requests in flight";
    a.scale = chart::Scale::kLog2;
  } else if (kind == "rate") {
    a.title = "Request rate";
    a.unit = "req/s";
  } else if (ladder_kind(kind)) {
    // A log axis cannot show depth 0, and a linear one crowds the small sizes together.
    a.title = kind == "decode_tokens"    ? "Context depth"
              : kind == "prefill_tokens" ? "Prompt size"
                                         : "Target length";
    a.unit = "tokens";
    a.scale = chart::Scale::kOrdinal;
  } else {
    a.title = level_word(kind);
    if (!a.title.empty()) a.title[0] = static_cast<char>(std::toupper(a.title[0]));
    a.unit = "level";
  }
  return a;
}

std::string slug(const std::string& text) {
  std::string s;
  for (unsigned char c : text) {
    if (std::isalnum(c) != 0 && c < 0x80) {
      s += static_cast<char>(std::tolower(c));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  if (s.size() > 40) s.resize(40);
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "model" : s;
}

// Text from records goes into the SVG's <title>/<desc> (XML-escaped there). report.html
// refuses an SVG holding "javascript:" anywhere, so that word's colon becomes U+2236 (∶):
// a model named so still gets its charts.
std::string defuse(std::string text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string word = "javascript:";
  for (auto pos = lower.rfind(word); pos != std::string::npos;
       pos = pos == 0 ? std::string::npos : lower.rfind(word, pos - 1)) {
    text.replace(pos + word.size() - 1, 1, "\u2236");
  }
  return text;
}

std::string device_label(const std::string& source, std::int64_t device) {
  const std::string d = std::to_string(device);
  if (source == "nvml" || source == "amdgpu") return "GPU " + d;
  if (source == "rapl") return "CPU package " + d;
  return source + " " + d;
}

std::string percent(double fraction) { return num(std::round(fraction * 1000.0) / 10.0) + " %"; }

}  // namespace dyno::report::chart_text
