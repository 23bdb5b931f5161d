// dyno's exit codes (documented in the README and `dyno --help`), and the one table that turns
// an error's kind into one.
#pragma once

#include "error/error.h"

namespace dyno::app {

using ::dyno::UsageError;

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    ///< dyno itself could not work (I/O, internal)
inline constexpr int kExitUsage = 2;      ///< bad flags or input files
inline constexpr int kExitRunFailed = 3;  ///< run failed or exceeded the error budget
inline constexpr int kExitInterrupted = 130;

/// The exit code of a command that ended with an error of `kind`.
constexpr int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
    case ErrorKind::input:
      return kExitUsage;
    case ErrorKind::io:
    case ErrorKind::engine:
    case ErrorKind::internal:
      return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace dyno::app
