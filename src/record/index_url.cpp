// Index URLs (index_url.h): the scheme check, libpq's parse, and redacting the password.
#include "record/index_url.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace dyno::record {

namespace {

constexpr const char* kMask = "***";

/// Length of the scheme and "://" when `url` is a PostgreSQL URL, else 0.
std::size_t scheme_length(const std::string& url) {
  for (const char* s : {"postgresql://", "postgres://"}) {
    const std::string scheme(s);
    if (url.compare(0, scheme.size(), scheme) == 0) return scheme.size();
  }
  return 0;
}

/// [begin, end) of the password in "user:password@" after the scheme, when there is one.
/// Any scheme's: a URL given by mistake (mysql://…) is shown redacted as well.
std::optional<std::pair<std::size_t, std::size_t>> userinfo_password(const std::string& url) {
  const std::size_t sep = url.find("://");
  if (sep == std::string::npos) return std::nullopt;
  const std::size_t start = sep + 3;
  const std::size_t query = url.find('?', start);
  const std::size_t at = url.rfind('@', query == std::string::npos ? std::string::npos : query);
  if (at == std::string::npos || at < start) return std::nullopt;
  const std::size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return std::nullopt;
  return std::make_pair(colon + 1, at);
}

/// [begin, end) of every password=VALUE parameter's value.
std::vector<std::pair<std::size_t, std::size_t>> query_passwords(const std::string& url) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t query = url.find('?');
  if (query == std::string::npos) return out;
  std::size_t p = query + 1;
  while (p <= url.size()) {
    std::size_t end = url.find('&', p);
    if (end == std::string::npos) end = url.size();
    const std::string key = "password=";
    if (url.compare(p, key.size(), key) == 0) out.emplace_back(p + key.size(), end);
    p = end + 1;
  }
  return out;
}

void replace_all(std::string& text, const std::string& what, const std::string& with) {
  if (what.empty()) return;
  for (std::size_t p = text.find(what); p != std::string::npos;
       p = text.find(what, p + with.size())) {
    text.replace(p, what.size(), with);
  }
}

/// The password libpq reads from the URL (decoded), when it parses and has one.
std::string parsed_password(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  PQfreemem(err);
  if (opts == nullptr) return {};
  std::string out;
  for (const PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (std::string(o->keyword) == "password" && o->val != nullptr) out = o->val;
  }
  PQconninfoFree(opts);
  return out;
}

}  // namespace

std::string redact_index_url(const std::string& url) {
  std::vector<std::pair<std::size_t, std::size_t>> spans = query_passwords(url);
  if (const auto u = userinfo_password(url)) spans.push_back(*u);
  std::sort(spans.begin(), spans.end());
  std::string out;
  std::size_t pos = 0;
  for (const auto& [b, e] : spans) {
    if (b < pos) continue;
    out += url.substr(pos, b - pos) + kMask;
    pos = e;
  }
  return out + url.substr(pos);
}

std::string redact_secret_of(const std::string& url, std::string text) {
  if (url.empty()) return text;
  const std::string shown = redact_index_url(url);
  replace_all(text, url, shown);
  std::vector<std::string> secrets{parsed_password(url)};
  std::vector<std::pair<std::size_t, std::size_t>> spans = query_passwords(url);
  if (const auto u = userinfo_password(url)) spans.push_back(*u);
  for (const auto& [b, e] : spans) secrets.push_back(url.substr(b, e - b));
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& s : secrets) {
    if (s != kMask) replace_all(text, s, kMask);
  }
  return text;
}

void check_index_url(const std::string& url) {
  if (scheme_length(url) == 0) {
    throw IndexUrlError("'" + redact_index_url(url) +
                        "' is not a PostgreSQL index URL; use postgresql://[user@][host][:port]"
                        "/dbname[?param=value…] (the password from PGPASSWORD or ~/.pgpass)");
  }
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? err : "out of memory";
    PQfreemem(err);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw IndexUrlError(
        redact_secret_of(url, "index URL " + redact_index_url(url) + " is malformed: " + why));
  }
  std::string port;
  for (const PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (std::string(o->keyword) == "port" && o->val != nullptr) port = o->val;
  }
  PQconninfoFree(opts);
  // libpq checks the port only when it connects; a malformed one is the URL's fault.
  for (std::size_t b = 0; b <= port.size();) {
    std::size_t e = port.find(',', b);
    if (e == std::string::npos) e = port.size();
    const std::string one = port.substr(b, e - b);
    if (one.find_first_not_of("0123456789") != std::string::npos || one.size() > 5 ||
        (!one.empty() && (std::stoi(one) > 65535 || std::stoi(one) == 0))) {
      throw IndexUrlError(redact_secret_of(url, "index URL " + redact_index_url(url) +
                                                    " is malformed: port '" + one +
                                                    "' is not a number from 1 to 65535"));
    }
    b = e + 1;
  }
}

std::string index_url_from_env() {
  const char* v = std::getenv(kIndexUrlEnv);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace dyno::record
