// The base URL of an OpenAI-compatible server: http(s)://host[:port]/base-path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "error/error.h"

namespace dyno::transport {

/// A URL dyno cannot use; the message says why.
class UrlError : public Error {
 public:
  explicit UrlError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

/// http(s)://host[:port]/base-path, e.g. "http://127.0.0.1:8000/v1".
struct BaseUrl {
  bool tls = false;
  std::string host;
  std::uint16_t port = 0;
  std::string base_path;  ///< without trailing slash, e.g. "/v1"
  /// Parses and validates; throws UrlError.
  static BaseUrl parse(const std::string& url);
  /// scheme://host:port + path, for display (no credentials are ever part of it).
  std::string to_string() const;
  /// The host as written in a URL or a Host header: IPv6 literals in brackets.
  std::string bracketed_host() const;
  /// host:port, for messages.
  std::string authority() const;
};

}  // namespace dyno::transport
