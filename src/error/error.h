// One error type for dyno: every module's errors derive from dyno::Error and carry a kind, and
// `main` turns a kind into the exit code in one table (app/exit_codes.h). A message names what
// it is about; the caller that knows the flag or file adds it as the subject (about()); the few
// catches that throw another type are listed, with why, in docs/architecture.md "Error handling".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace dyno {

/// What went wrong, as far as the user is concerned.
enum class ErrorKind {
  usage,     ///< a bad flag value or combination (exit 2)
  input,     ///< an input file or a given value cannot be used: stream, spec, policy… (exit 2)
  io,        ///< dyno could not read or write its own files, e.g. the run record (exit 1)
  engine,    ///< the engine under test could not be started or reached (exit 1)
  internal,  ///< anything else (exit 1)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind), text_(message) {}

  ErrorKind kind() const noexcept { return kind_; }
  const char* what() const noexcept override { return text_.c_str(); }

  /// Puts `subject` (a flag such as "--plugin", or a file) in front of the message:
  /// "--plugin: <message>".
  void add_subject(std::string_view subject) { text_ = std::string(subject) + ": " + text_; }

 private:
  ErrorKind kind_;
  std::string text_;
};

/// A usage error: bad flag value or combination. The message names the flag and what to do.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

/// Runs `f`; a dyno::Error it throws leaves with `subject` in front of its message (its type
/// and kind unchanged).
template <class F>
decltype(auto) about(std::string_view subject, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (Error& e) {
    e.add_subject(subject);
    throw;
  }
}

}  // namespace dyno
