// Index URLs (index_url.h): the scheme check, libpq's parse, and redacting the password.
#include "store/index_url.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace dyno::store {

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

/// Whether `text` is a libpq keyword/value string ("host=h password=pw dbname=d"), not a URL.
/// It begins with a keyword and '=' (spaces allowed around), and is no URL.
bool keyword_value(const std::string& text) {
  if (text.find("://") != std::string::npos) return false;
  std::size_t p = text.find_first_not_of(" \t\n");
  if (p == std::string::npos || !std::islower(static_cast<unsigned char>(text[p]))) return false;
  while (p < text.size() && (std::islower(static_cast<unsigned char>(text[p])) || text[p] == '_')) {
    ++p;
  }
  while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
  return p < text.size() && text[p] == '=';
}

/// The '@' that ends "user:password@": libpq's (the first '@' before any '/', so a '?' may be
/// in the password), else the last '@' before the first '?' (a '/' in an unencoded password).
std::size_t userinfo_end(const std::string& url, std::size_t start) {
  for (std::size_t p = start; p < url.size() && url[p] != '/'; ++p) {
    if (url[p] == '@') return p;
  }
  // No '@' before the path: a password holding an unencoded '/' or '?' ("u:a/b?c@h") still
  // ends at the last '@' (libpq would read it as host and port; a message must not show it).
  // An '@' in a parameter's value is masked with it: too much hidden, never too little.
  const std::size_t colon = url.find(':', start);
  const std::size_t slash = url.find('/', start);
  if (colon == std::string::npos || (slash != std::string::npos && colon > slash)) {
    const std::size_t query = url.find('?', start);
    const std::size_t at = url.rfind('@', query == std::string::npos ? std::string::npos : query);
    return at == std::string::npos || at < start ? std::string::npos : at;
  }
  const std::size_t at = url.rfind('@');
  return at == std::string::npos || at < start ? std::string::npos : at;
}

/// Where the authority ("user:password@host…") begins: after "://", or, in a string whose
/// scheme is mistyped ("postgresql:/u:pw@h", "postgres//u:pw@h", "postgresql:u:pw@h"), after the
/// scheme-like word and the ':' and '/' that follow it; else at 0.
std::size_t authority_start(const std::string& url) {
  const std::size_t sep = url.find("://");
  if (sep != std::string::npos) return sep + 3;
  std::size_t p = 0;
  while (p < url.size() && (std::isalnum(static_cast<unsigned char>(url[p])) || url[p] == '+' ||
                            url[p] == '.' || url[p] == '-')) {
    ++p;
  }
  if (p == 0 || p >= url.size() || (url[p] != ':' && url[p] != '/')) return 0;
  while (p < url.size() && (url[p] == ':' || url[p] == '/')) ++p;
  return p;
}

/// [begin, end) of the password in "user:password@", when there is one: in any scheme's URL (a
/// URL given by mistake, mysql://…, is shown redacted as well) and in a mistyped one. In a
/// string without "://" and without a ':' after the authority's start ("u:pw@h" read as scheme
/// "u"), from the string's first ':'.
std::optional<std::pair<std::size_t, std::size_t>> userinfo_password(const std::string& url) {
  if (keyword_value(url)) return std::nullopt;
  const std::size_t start = authority_start(url);
  const std::size_t at = userinfo_end(url, start);
  if (at == std::string::npos) return std::nullopt;
  std::size_t colon = url.find(':', start);
  if ((colon == std::string::npos || colon > at) && url.find("://") == std::string::npos) {
    colon = url.find(':');
  }
  if (colon == std::string::npos || colon > at) return std::nullopt;
  return std::make_pair(colon + 1, at);
}

/// [begin, end) of every password's value: a URL's password=VALUE parameters (after the
/// userinfo, whose password may hold a '?'), or a keyword/value string's password = VALUE
/// (a value in single quotes, with its \' and \\ escapes, or up to the next space).
std::vector<std::pair<std::size_t, std::size_t>> query_passwords(const std::string& url) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::string key = "password";
  if (keyword_value(url)) {
    for (std::size_t p = url.find(key); p != std::string::npos; p = url.find(key, p + 1)) {
      if (p > 0 && !std::isspace(static_cast<unsigned char>(url[p - 1]))) continue;
      std::size_t v = p + key.size();
      while (v < url.size() && std::isspace(static_cast<unsigned char>(url[v]))) ++v;
      if (v >= url.size() || url[v] != '=') continue;
      ++v;
      while (v < url.size() && std::isspace(static_cast<unsigned char>(url[v]))) ++v;
      std::size_t e = v;
      if (e < url.size() && url[e] == '\'') {
        for (++e; e < url.size() && url[e] != '\''; ++e) {
          if (url[e] == '\\') ++e;
        }
        e = std::min(e + 1, url.size());
      } else {
        while (e < url.size() && !std::isspace(static_cast<unsigned char>(url[e]))) ++e;
      }
      if (e > v) out.emplace_back(v, e);
    }
    return out;
  }
  const auto userinfo = userinfo_password(url);
  const std::size_t query = url.find('?', userinfo ? userinfo->second : 0);
  if (query == std::string::npos) return out;
  std::size_t p = query + 1;
  while (p <= url.size()) {
    std::size_t end = url.find('&', p);
    if (end == std::string::npos) end = url.size();
    if (url.compare(p, key.size() + 1, key + "=") == 0) out.emplace_back(p + key.size() + 1, end);
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
  if (scheme_length(url) == 0 && keyword_value(url)) {
    throw IndexUrlError("'" + redact_secret_of(url, redact_index_url(url)) +
                        "' is a libpq keyword/value string; give the index as a URL: "
                        "postgresql://[user@][host][:port]/dbname[?param=value…] (the password "
                        "from PGPASSWORD or ~/.pgpass)");
  }
  if (scheme_length(url) == 0) {
    throw IndexUrlError("'" + redact_secret_of(url, redact_index_url(url)) +
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

}  // namespace dyno::store
