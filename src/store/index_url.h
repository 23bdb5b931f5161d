// The URL of a PostgreSQL run index (--index, DYNO_INDEX_URL; docs/store.md "A shared index"):
// checking it, and keeping its password out of every message. The password may come in the
// URL, from PGPASSWORD or from ~/.pgpass, as libpq reads them; dyno never prints it.
#pragma once

#include <string>

#include "error/error.h"

namespace dyno::store {

/// The environment variable that names the index when no --index is given.
inline constexpr const char* kIndexUrlEnv = "DYNO_INDEX_URL";

/// A malformed index URL (exit 2). The message shows the URL redacted (redact_index_url).
class IndexUrlError : public Error {
 public:
  explicit IndexUrlError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

/// Throws IndexUrlError unless `url` is a postgresql:// or postgres:// URL that libpq parses.
void check_index_url(const std::string& url);

/// The URL with its password replaced by *** in every form a person may give it: user:PASSWORD@
/// (libpq's '@', so a '?' may be in the password; a '/' too), a password= parameter, a mistyped
/// scheme ("postgresql:/u:PASSWORD@h", "mysql://u:PASSWORD@h"), and a libpq keyword/value string
/// ("host=h password=PASSWORD", quoted values included).
std::string redact_index_url(const std::string& url);

/// `text` with every occurrence of the URL shown redacted and of its password (as written in
/// the URL and as decoded) replaced by ***. For messages that quote libpq or the URL.
std::string redact_secret_of(const std::string& url, std::string text);

/// DYNO_INDEX_URL, or "" when it is unset or empty.
std::string index_url_from_env();

}  // namespace dyno::store
