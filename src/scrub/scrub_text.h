// The text passes of scrubbing (scrub/scrub.h): patterns found in free text — secrets,
// URLs and their authority, dyno's connection messages, IPv4 addresses, host names, GPU UUIDs,
// absolute paths — and the character classes they share with the JSON walk, and which keys
// name a secret, and the marker a scrubbed value becomes. Internal to the scrub module (scrub.h
// re-exports is_secret_key and scrub_marker).
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dyno::scrub::text {

inline constexpr std::string_view kMarkerPrefix = "<scrubbed:";

/// Marker written in place of a scrubbed value, e.g. "<scrubbed:host>".
std::string scrub_marker(const std::string& category);

std::string lower(std::string_view s);
/// A key or flag name in one spelling: lower case, '-' as '_', leading dashes dropped.
std::string normalize_key(std::string_view key);
/// True when a key names a secret (api_key, authorization, cookie, token, password, …):
/// such values are scrubbed whatever the policy, and writers must never record them.
bool is_secret_key(std::string_view key);
bool is_marker(std::string_view s);
bool one_of(std::string_view s, std::initializer_list<std::string_view> set);
bool is_alnum(char c);
bool is_digit(char c);
bool is_hex(char c);
bool is_host_char(char c);
bool is_loopback(std::string_view host);

/// Which of hosts and ports a text pass replaces.
struct TextRules {
  bool hosts = false;
  bool ports = false;
};

/// Authorization / cookie headers, bearer tokens, secret NAME=VALUE pairs (query strings,
/// --flag=value, environment), "--secret-flag VALUE", quoted JSON-ish "secret": "value", and
/// API keys written bare by their shape (`sk-` + 20 or more key characters, `hf_` + 30).
void scrub_secrets(std::string& s);
/// scheme://[userinfo@]host[:port]: userinfo always, host and port by the rules.
void scrub_urls(std::string& s, const TextRules& rules);
/// dyno's own connection messages: "connect to HOST:PORT failed", "cannot resolve host HOST".
void scrub_connect_messages(std::string& s, const TextRules& rules);
/// Dotted IPv4 addresses (loopback and 0.0.0.0 kept), with their ":port".
void scrub_ipv4(std::string& s, const TextRules& rules);
/// Every occurrence of `needle` (with `require_boundary`: not inside a longer name of letters,
/// digits, '-' and '_'); true when one was replaced.
bool replace_word(std::string& s, std::string_view needle, std::string_view with,
                  bool require_boundary);
/// Every occurrence of a host name not inside a longer name, with its ":port".
void replace_host(std::string& s, std::string_view name, const TextRules& rules);
/// GPU-xxxxxxxx-xxxx-… and MIG-… identifiers (NVIDIA's UUID forms).
void scrub_uuid_patterns(std::string& s, const std::function<std::string(const std::string&)>& f);
/// Absolute file paths (system locations and HTTP API paths kept).
void scrub_paths(std::string& s);

}  // namespace dyno::scrub::text
