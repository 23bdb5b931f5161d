#include "transport/base_url.h"

#include <charconv>
#include <string_view>

namespace dyno::transport {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

// Error messages never repeat the URL itself: it may carry credentials or a key in a query.
BaseUrl BaseUrl::parse(const std::string& url) {
  BaseUrl out;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    throw UrlError("the URL must start with http:// or https://");
  }
  const std::string scheme = lower(std::string_view(url).substr(0, scheme_end));
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme != "http") {
    throw UrlError("unsupported URL scheme '" + scheme + "' (use http:// or https://)");
  }
  const std::string_view rest = std::string_view(url).substr(scheme_end + 3);
  if (rest.find('?') != std::string_view::npos) {
    throw UrlError("the URL must not contain a query string ('?')");
  }
  if (rest.find('#') != std::string_view::npos) {
    throw UrlError("the URL must not contain a fragment ('#')");
  }
  const auto path_start = rest.find('/');
  const std::string_view authority = rest.substr(0, path_start);
  std::string_view path =
      path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (authority.find('@') != std::string_view::npos) {
    throw UrlError("the URL must not contain credentials (user@host); pass the API key instead");
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw UrlError("unterminated IPv6 address in the URL");
    out.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw UrlError("unexpected characters after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) throw UrlError("empty port in the URL");
    }
  } else {
    const auto colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) throw UrlError("empty port in the URL");
    }
  }
  if (out.host.empty()) throw UrlError("the URL has no host");
  if (out.host.find_first_of(" \t\r\n/\\") != std::string::npos) {
    throw UrlError("invalid characters in the URL host");
  }
  if (port_text.empty()) {
    out.port = out.tls ? 443 : 80;
  } else {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535) {
      throw UrlError("invalid port in the URL (expected 1-65535)");
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.find_first_of(" \t\r\n") != std::string_view::npos) {
    throw UrlError("invalid characters in the URL path");
  }
  out.base_path = std::string(path);
  return out;
}

std::string BaseUrl::to_string() const {
  return std::string(tls ? "https" : "http") + "://" + bracketed_host() + ":" +
         std::to_string(port) + base_path;
}

std::string BaseUrl::bracketed_host() const {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string BaseUrl::authority() const { return bracketed_host() + ":" + std::to_string(port); }

}  // namespace dyno::transport
