#include "scrub/scrub_text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace dyno::scrub::text {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// A key or flag name in one spelling: lower case, '-' as '_', leading dashes dropped.
std::string normalize_key(std::string_view key) {
  while (!key.empty() && key.front() == '-') key.remove_prefix(1);
  std::string out = lower(key);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::string scrub_marker(const std::string& category) {
  return std::string(kMarkerPrefix) + category + ">";
}

bool is_secret_key(std::string_view key) {
  const std::string k = normalize_key(key);
  if (one_of(k, {"api_key",
                 "apikey",
                 "x_api_key",
                 "authorization",
                 "proxy_authorization",
                 "cookie",
                 "set_cookie",
                 "token",
                 "access_token",
                 "auth_token",
                 "refresh_token",
                 "id_token",
                 "bearer_token",
                 "hf_token",
                 "hf_hub_token",
                 "hugging_face_hub_token",
                 "huggingface_token",
                 "github_token",
                 "gh_token",
                 "password",
                 "passwd",
                 "secret",
                 "client_secret",
                 "private_key",
                 "credentials"})) {
    return true;
  }
  for (std::string_view suffix : {"_api_key", "_secret", "_password", "_access_token",
                                  "_auth_token", "_secret_key", "_private_key"}) {
    if (k.size() > suffix.size() && k.ends_with(suffix)) return true;
  }
  // Any word (split at '_' and '.') that says secret: AWS_SECRET_ACCESS_KEY,
  // --basic-auth-password. Not "token": records are full of token counts and times
  // (first_token_ns, token_count_source); secret tokens are named above.
  std::size_t start = 0;
  while (start <= k.size()) {
    std::size_t end = k.find_first_of("_.", start);
    if (end == std::string::npos) end = k.size();
    if (one_of(std::string_view(k).substr(start, end - start),
               {"secret", "password", "passwd", "credential", "credentials", "apikey",
                "authorization", "cookie"})) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

bool is_marker(std::string_view s) { return s.starts_with(kMarkerPrefix); }

bool one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_host_char(char c) { return is_alnum(c) || c == '-' || c == '_'; }

bool is_loopback(std::string_view host) {
  std::string h = lower(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h == "localhost" || h.starts_with("127.") || h == "::1" || h == "0.0.0.0" || h == "::";
}

namespace {

const std::array<std::string_view, 9> kSystemPaths = {"/usr", "/lib",  "/lib64", "/bin", "/sbin",
                                                      "/etc", "/proc", "/sys",   "/dev"};
/// HTTP API paths that appear in engine logs; not file paths.
const std::array<std::string_view, 12> kApiPaths = {
    "/v1",       "/v2",         "/metrics", "/health", "/tokenize", "/detokenize",
    "/generate", "/completion", "/props",   "/slots",  "/api",      "/infer"};

/// Replaces [begin, end) of `s` with `with`; returns the index just after the replacement.
std::size_t splice(std::string& s, std::size_t begin, std::size_t end, std::string_view with) {
  s.replace(begin, end - begin, with);
  return begin + with.size();
}

bool ieq_at(std::string_view s, std::size_t pos, std::string_view word) {
  if (pos + word.size() > s.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[pos + i])) != word[i]) return false;
  }
  return true;
}

bool is_value_end(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '"' || c == '\'' || c == '&' ||
         c == ',' || c == ';' || c == '`' || c == ')' || c == ']' || c == '}' || c == '>' ||
         c == '<' || c == '#';
}

}  // namespace

namespace {

/// API keys written bare, found by their shape: OpenAI-style `sk-…` (also `sk-proj-…`,
/// Anthropic's `sk-ant-…`) and Hugging Face `hf_…` tokens, a prefix not inside a longer word
/// followed by at least `min` key characters ([A-Za-z0-9_-]): long enough that prose
/// ("sk-learn") is left alone.
void scrub_bare_keys(std::string& s, const std::string& secret) {
  struct Shape {
    std::string_view prefix;
    std::size_t min;
  };
  for (const Shape shape : {Shape{"sk-", 20}, Shape{"hf_", 30}}) {
    std::size_t i = 0;
    while ((i = s.find(shape.prefix, i)) != std::string::npos) {
      const bool inside = i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '_' || s[i - 1] == '-');
      std::size_t e = i + shape.prefix.size();
      while (e < s.size() && (is_alnum(s[e]) || s[e] == '_' || s[e] == '-')) ++e;
      if (!inside && e - (i + shape.prefix.size()) >= shape.min) {
        i = splice(s, i, e, secret);
      } else {
        i = e;
      }
    }
  }
}

}  // namespace

/// Authorization / cookie headers, bearer tokens, secret NAME=VALUE pairs (query strings,
/// --flag=value, environment), "--secret-flag VALUE", quoted JSON-ish "secret": "value", and
/// API keys written bare (sk-…, hf_…).
void scrub_secrets(std::string& s) {
  const std::string secret = scrub_marker("secret");
  scrub_bare_keys(s, secret);
  // Header lines: the value runs to the end of the line.
  for (std::string_view header : {"proxy-authorization:", "authorization:", "set-cookie:",
                                  "cookie:", "x-api-key:", "api-key:"}) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!ieq_at(s, i, header)) continue;
      if (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '-')) continue;
      std::size_t v = i + header.size();
      while (v < s.size() && (s[v] == ' ' || s[v] == '\t')) ++v;
      std::size_t e = v;
      while (e < s.size() && s[e] != '\n' && s[e] != '\r' && s[e] != '"' && s[e] != '\'') ++e;
      if (e > v && std::string_view(s).substr(v, e - v) != secret) splice(s, v, e, secret);
      i = v;
    }
  }
  // "Bearer <token>" anywhere (a token: 8 or more token characters, so prose survives).
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!ieq_at(s, i, "bearer ") || (i > 0 && is_alnum(s[i - 1]))) continue;
    std::size_t v = i + 7;
    while (v < s.size() && s[v] == ' ') ++v;
    std::size_t e = v;
    while (e < s.size() &&
           (is_alnum(s[e]) || std::string_view("-._~+/=").find(s[e]) != std::string_view::npos)) {
      ++e;
    }
    if (e - v >= 8) i = splice(s, v, e, secret) - 1;
  }
  // NAME=VALUE, NAME: VALUE after a quoted NAME, and --NAME VALUE, for secret names.
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!(is_alnum(s[i]) || s[i] == '_')) continue;
    if (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '_')) continue;
    std::size_t e = i;
    while (e < s.size() && (is_alnum(s[e]) || s[e] == '_' || s[e] == '-')) ++e;
    const std::string name = normalize_key(std::string_view(s).substr(i, e - i));
    if (!is_secret_key(name)) {
      i = e;
      continue;
    }
    const bool quoted = i > 0 && (s[i - 1] == '"' || s[i - 1] == '\'');
    const bool flag = i >= 2 && s[i - 1] == '-' && s[i - 2] == '-';
    std::size_t v = e;
    if (quoted && v < s.size() && s[v] == s[i - 1]) ++v;
    while (v < s.size() && s[v] == ' ') ++v;
    if (v < s.size() && (s[v] == '=' || (quoted && s[v] == ':'))) {
      ++v;
    } else if (!(flag && e < s.size() && s[e] == ' ')) {
      i = e;
      continue;
    }
    while (v < s.size() && s[v] == ' ') ++v;
    char close = 0;
    if (v < s.size() && (s[v] == '"' || s[v] == '\'')) close = s[v++];
    std::size_t end = v;
    while (end < s.size() && (close != 0 ? s[end] != close : !is_value_end(s[end]))) ++end;
    if (flag && close == 0 && v < s.size() && s[v] == '-') {  // "--token --next": no value
      i = e;
      continue;
    }
    if (end > v && std::string_view(s).substr(v, end - v) != secret) {
      i = splice(s, v, end, secret);
    } else {
      i = end;
    }
  }
}

namespace {

/// host[:port] at s[pos..end): replaces what the rules ask; returns the new end.
std::size_t scrub_authority(std::string& s, std::size_t pos, std::size_t end,
                            const TextRules& rules) {
  std::size_t host_end;
  if (std::string_view(s).substr(pos).starts_with(kMarkerPrefix)) {  // scrubbed before
    host_end = s.find('>', pos);
    host_end = host_end == std::string::npos || host_end >= end ? end : host_end + 1;
  } else if (pos < end && s[pos] == '[') {
    host_end = s.find(']', pos);
    host_end = host_end == std::string::npos || host_end >= end ? end : host_end + 1;
  } else {
    host_end = s.find(':', pos);
    if (host_end == std::string::npos || host_end > end) host_end = end;
  }
  const std::string host = s.substr(pos, host_end - pos);
  std::size_t delta = 0;
  if (rules.hosts && !host.empty() && !is_loopback(host) && !is_marker(host)) {
    const std::string m = scrub_marker("host");
    splice(s, pos, host_end, m);
    delta = m.size() - host.size();
    host_end = pos + m.size();
    end += delta;
  }
  if (rules.ports && host_end < end && s[host_end] == ':') {
    std::size_t p = host_end + 1;
    std::size_t q = p;
    while (q < end && is_digit(s[q])) ++q;
    if (q > p && q == end) {
      const std::string m = scrub_marker("port");
      splice(s, p, q, m);
      end = p + m.size();
    }
  }
  return end;
}

}  // namespace

/// scheme://[userinfo@]host[:port]: userinfo always, host and port by the rules.
void scrub_urls(std::string& s, const TextRules& rules) {
  std::size_t i = 0;
  while ((i = s.find("://", i)) != std::string::npos) {
    std::size_t b = i;
    while (b > 0 && (is_alnum(s[b - 1]) || s[b - 1] == '+' || s[b - 1] == '.' || s[b - 1] == '-'))
      --b;
    std::size_t a = i + 3;
    if (b == i) {
      i = a;
      continue;
    }
    std::size_t e = a;
    while (e < s.size() && s[e] != '/' && s[e] != '?' && s[e] != '#' &&
           !(std::isspace(static_cast<unsigned char>(s[e])) != 0) && s[e] != '"' && s[e] != '\'' &&
           s[e] != ',' && s[e] != ')' && s[e] != '>' && s[e] != '<') {
      ++e;
    }
    // The authority may hold a marker from an earlier scrub ("<scrubbed:host>"): extend over it.
    while (e < s.size() && s[e] == '<' &&
           std::string_view(s).substr(e).starts_with(kMarkerPrefix)) {
      const std::size_t close = s.find('>', e);
      if (close == std::string::npos) break;
      e = close + 1;
      while (e < s.size() &&
             (is_alnum(s[e]) || std::string_view(":.-@").find(s[e]) != std::string_view::npos)) {
        ++e;
      }
    }
    const std::size_t at = s.rfind('@', e == 0 ? 0 : e - 1);
    if (at != std::string::npos && at >= a && at < e) {
      const std::string m = scrub_marker("secret");
      if (std::string_view(s).substr(a, at - a) != m) {
        splice(s, a, at, m);
        e = e - (at - a) + m.size();
      }
      a = a + m.size() + 1;
    }
    i = scrub_authority(s, a, e, rules);
  }
}

/// dyno's own connection messages: "connect to HOST:PORT failed", "cannot resolve host HOST".
void scrub_connect_messages(std::string& s, const TextRules& rules) {
  for (std::string_view lead : {"connect to ", "resolve host "}) {
    std::size_t i = 0;
    while ((i = s.find(lead, i)) != std::string::npos) {
      const std::size_t a = i + lead.size();
      std::size_t e = a;
      while (e < s.size() && !(std::isspace(static_cast<unsigned char>(s[e])) != 0) &&
             s[e] != ',' && s[e] != ';' && s[e] != '"' && s[e] != '\'') {
        ++e;
      }
      if (e > a && s[e - 1] == ':') --e;  // "resolve host x: error"
      // "connect to" is common English: only an authority with a port is a host there.
      const std::size_t colon = s.rfind(':', e == a ? a : e - 1);
      const bool has_port = colon != std::string::npos && colon > a && colon + 1 < e &&
                            std::all_of(s.begin() + static_cast<std::ptrdiff_t>(colon + 1),
                                        s.begin() + static_cast<std::ptrdiff_t>(e), is_digit);
      if (e > a && (lead[0] == 'r' || has_port)) {
        i = scrub_authority(s, a, e, rules);
      } else {
        i = a;
      }
    }
  }
}

/// Dotted IPv4 addresses (loopback and 0.0.0.0 kept), with their ":port".
void scrub_ipv4(std::string& s, const TextRules& rules) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_digit(s[i]) || (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '.'))) continue;
    std::size_t e = i;
    int parts = 0;
    bool valid = true;
    while (true) {
      std::size_t d = e;
      while (d < s.size() && is_digit(s[d])) ++d;
      if (d == e || d - e > 3 || std::stoi(s.substr(e, d - e)) > 255) valid = false;
      ++parts;
      e = d;
      if (parts < 4 && e + 1 < s.size() && s[e] == '.' && is_digit(s[e + 1])) {
        ++e;
        continue;
      }
      break;
    }
    if (!valid || parts != 4 || (e < s.size() && (is_alnum(s[e]) || s[e] == '.'))) {
      i = e;
      continue;
    }
    std::size_t end = e;
    if (end + 1 < s.size() && s[end] == ':' && is_digit(s[end + 1])) {
      ++end;
      while (end < s.size() && is_digit(s[end])) ++end;
    }
    i = scrub_authority(s, i, end, rules) - 1;
  }
}

/// Every occurrence of `needle` not inside a longer name.
bool replace_word(std::string& s, std::string_view needle, std::string_view with,
                  bool require_boundary) {
  if (needle.empty()) return false;
  bool changed = false;
  std::size_t i = 0;
  while ((i = s.find(needle, i)) != std::string::npos) {
    const std::size_t e = i + needle.size();
    if (require_boundary &&
        ((i > 0 && is_host_char(s[i - 1])) || (e < s.size() && is_host_char(s[e])))) {
      i = e;
      continue;
    }
    i = splice(s, i, e, with);
    changed = true;
  }
  return changed;
}

/// Every occurrence of a host name not inside a longer name, with its ":port".
void replace_host(std::string& s, std::string_view name, const TextRules& rules) {
  std::size_t i = 0;
  while ((i = s.find(name, i)) != std::string::npos) {
    std::size_t e = i + name.size();
    if ((i > 0 && is_host_char(s[i - 1])) || (e < s.size() && is_host_char(s[e]))) {
      i = e;
      continue;
    }
    if (e + 1 < s.size() && s[e] == ':' && is_digit(s[e + 1])) {
      ++e;
      while (e < s.size() && is_digit(s[e])) ++e;
    }
    i = scrub_authority(s, i, e, rules);
  }
}

/// GPU-xxxxxxxx-xxxx-… and MIG-… identifiers (NVIDIA's UUID forms).
void scrub_uuid_patterns(std::string& s, const std::function<std::string(const std::string&)>& f) {
  for (std::string_view prefix : {"GPU-", "MIG-"}) {
    std::size_t i = 0;
    while ((i = s.find(prefix, i)) != std::string::npos) {
      if (i > 0 && is_host_char(s[i - 1])) {
        i += prefix.size();
        continue;
      }
      std::size_t e = i + prefix.size();
      std::size_t hex = 0;
      while (e < s.size() && (is_hex(s[e]) || s[e] == '-' || s[e] == '/')) {
        if (is_hex(s[e])) ++hex;
        ++e;
      }
      while (e > i && (s[e - 1] == '-' || s[e - 1] == '/')) --e;
      if (hex < 16) {
        i = e;
        continue;
      }
      i = splice(s, i, e, f(s.substr(i, e - i)));
    }
  }
}

namespace {

bool is_path_start(const std::string& s, std::size_t i) {
  if (s[i] != '/' || i + 1 >= s.size()) return false;
  const char next = s[i + 1];
  if (!(is_alnum(next) || next == '.' || next == '_' || next == '-' || next == '~')) return false;
  if (i == 0) return true;
  const char prev = s[i - 1];
  if (prev == ':') return !(i >= 2 && s[i - 2] == '/');  // "file:/x" yes; never "//"
  return std::string_view(" \t\n\r=(['\",;{|").find(prev) != std::string_view::npos;
}

}  // namespace

namespace {

/// `p` is `dir` or lies under it.
bool under(std::string_view p, std::string_view dir) {
  return p.starts_with(dir) &&
         (p.size() == dir.size() || p[dir.size()] == '/' || p[dir.size()] == '?');
}

}  // namespace

namespace {

bool kept_path(std::string_view p) {
  return std::any_of(kSystemPaths.begin(), kSystemPaths.end(),
                     [p](std::string_view d) { return under(p, d); }) ||
         std::any_of(kApiPaths.begin(), kApiPaths.end(),
                     [p](std::string_view d) { return under(p, d); });
}

}  // namespace

void scrub_paths(std::string& s) {
  const std::string m = scrub_marker("path");
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!is_path_start(s, i)) continue;
    std::size_t e = i + 1;
    while (e < s.size() && !is_value_end(s[e]) && s[e] != ':') ++e;
    if (kept_path(std::string_view(s).substr(i, e - i))) {
      i = e;
      continue;
    }
    i = splice(s, i, e, m) - 1;
  }
}

}  // namespace dyno::scrub::text
