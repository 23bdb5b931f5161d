#include "scrub/redact.h"

#include <algorithm>
#include <boost/json.hpp>

#include "scrub/scrub_text.h"

namespace dyno::scrub {

namespace json = boost::json;

std::string_view secret_marker() { return "<scrubbed:secret>"; }

std::vector<std::string> normalize_secrets(std::vector<std::string> secrets) {
  secrets.erase(std::remove(secrets.begin(), secrets.end(), std::string()), secrets.end());
  std::sort(secrets.begin(), secrets.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  secrets.erase(std::unique(secrets.begin(), secrets.end()), secrets.end());
  return secrets;
}

std::size_t redact_literals(std::string& text, const std::vector<std::string>& secrets) {
  if (secrets.empty() || text.empty()) return 0;
  // The earliest match from `from`; at one position the longest secret wins (secrets are
  // sorted longest first).
  const auto next = [&](std::size_t from, std::size_t& length) {
    std::size_t best = std::string::npos;
    for (const auto& s : secrets) {
      const std::size_t at = text.find(s, from);
      if (at < best) {
        best = at;
        length = s.size();
      }
    }
    return best;
  };
  std::size_t length = 0;
  std::size_t at = next(0, length);
  if (at == std::string::npos) return 0;
  std::string out;
  out.reserve(text.size());
  std::size_t from = 0;
  std::size_t count = 0;
  while (at != std::string::npos) {
    out.append(text, from, at - from);
    out.append(secret_marker());
    from = at + length;
    ++count;
    at = next(from, length);
  }
  out.append(text, from, std::string::npos);
  text = std::move(out);
  return count;
}

std::size_t redact_literals(json::value& doc, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return 0;
  std::size_t count = 0;
  const auto redact_string = [&](json::string& s) {
    std::string text(s);
    if (const std::size_t n = redact_literals(text, secrets); n > 0) {
      s = text;
      count += n;
    }
  };
  if (auto* str = doc.if_string()) {
    redact_string(*str);
  } else if (auto* arr = doc.if_array()) {
    for (auto& e : *arr) count += redact_literals(e, secrets);
  } else if (auto* obj = doc.if_object()) {
    count += redact_literals(*obj, secrets);
  }
  return count;
}

std::size_t redact_literals(json::object& obj, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return 0;
  std::size_t count = 0;
  bool key_changed = false;
  for (auto& kv : obj) {
    count += redact_literals(kv.value(), secrets);
    std::string key(kv.key());
    key_changed = key_changed || redact_literals(key, secrets) > 0;
  }
  if (key_changed) {  // keys are immutable in place: rebuild the object, order kept
    json::object rebuilt;
    for (auto& kv : obj) {
      std::string key(kv.key());
      count += redact_literals(key, secrets);
      rebuilt[key] = std::move(kv.value());
    }
    obj = std::move(rebuilt);
  }
  return count;
}

void redact_server_text(std::string& text, const std::vector<std::string>& secrets) {
  text::scrub_secrets(text);
  redact_literals(text, secrets);
}

}  // namespace dyno::scrub
