// The run index's error (run_index.h, sqlite_statement.h).
#pragma once

#include <string>

#include "error/error.h"

namespace dyno::store {

/// The index cannot be opened or written; the message names the file and the cause.
class IndexError : public Error {
 public:
  explicit IndexError(const std::string& message) : Error(ErrorKind::io, message) {}
};

}  // namespace dyno::store
