// Reading another tool's JSON for `dyno import`: every error names the file, the line (text
// that is not JSON) or the JSON path ($.ttfts[3]), and what was expected (ImportFileError,
// exit 2). Shared by the format readers (import_vllm.cpp …).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "interop/result_import.h"

namespace dyno::interop {

/// The longest time within one request another tool recorded (a ttft, a gap, a latency, and
/// their sums), in seconds: a time past it could not be a benchmark's, and would overflow the
/// record's nanoseconds.
inline constexpr double kMaxImportedRequestS = 1e7;

/// The largest token count dyno believes of one request (2^31 − 1, beyond any model's context;
/// transport/server_message.h holds a server's usage to the same bound): a count past it is an
/// input error, never a number to add up (INT64_MAX would wrap a total).
inline constexpr std::int64_t kMaxImportedTokens = 2147483647;

/// Seconds (a tool's float) as whole nanoseconds.
std::int64_t seconds_to_ns(double seconds);

/// A device_identity entry (docs/schema/manifest.schema.json) of a GPU a file names: its
/// vendor when the file says it (null otherwise), its index and name; the rest null.
boost::json::object named_gpu(std::optional<std::string> vendor, std::uint64_t index,
                              const std::string& name);

/// Parses `bytes` as exactly one JSON value (`what` says what the tool writes, for the error:
/// "the JSON object `vllm bench serve --save-result` writes"). `line` > 0: the value is line
/// `line` of a JSONL file, and errors say FILE:LINE. An object that names a key twice is
/// refused, naming the key and its path: JSON leaves the meaning open, and dyno does not pick
/// one of the two values for the tool.
boost::json::value parse_one_json(const std::string& bytes, const std::string& file,
                                  const std::string& what, std::size_t line = 0);

/// One JSON object of an imported file, read with every error naming the file (and line of a
/// JSONL file) and the JSON path of the key. `path` is the object's own path ("$" at the top,
/// "$.benchmarks[0]" inside); `tool` names the format in "missing" errors ("a vllm-bench
/// result has it").
class ImportDoc {
 public:
  ImportDoc(const boost::json::object& o, std::string file, std::string path = "$",
            std::string tool = "the format", std::size_t line = 0);

  [[noreturn]] void fail(const std::string& path, const std::string& what) const;
  /// The path of `key` in this object ("$.key").
  std::string at(const std::string& key) const { return path_ + "." + key; }
  /// The value of `key`, or nullptr when absent or null.
  const boost::json::value* find(const char* key) const;
  const boost::json::value& need(const char* key) const;
  std::string string(const char* key) const;
  std::optional<std::string> opt_string(const char* key) const;
  std::optional<double> opt_number(const char* key) const;
  double number(const char* key) const;
  double number(const boost::json::value& v, const std::string& path) const;
  /// A time in seconds within [0, max]: a time past it could not be a benchmark's, and would
  /// overflow the record's nanoseconds.
  double seconds(const boost::json::value& v, const std::string& path, double max) const;
  std::int64_t count(const boost::json::value& v, const std::string& path) const;
  /// A token count of one request: a count up to kMaxImportedTokens.
  std::int64_t tokens(const boost::json::value& v, const std::string& path) const;
  /// A token total over `requests` requests: a count up to requests × kMaxImportedTokens.
  std::int64_t token_total(const char* key, std::int64_t requests) const;
  /// `a + b` of counts, or a failure at `path` when the sum would overflow int64.
  std::int64_t add(std::int64_t a, std::int64_t b, const std::string& path) const;
  std::int64_t mul(std::int64_t a, std::int64_t b, const std::string& path) const;
  std::int64_t count(const char* key) const;
  std::optional<std::int64_t> opt_count(const char* key) const;
  const boost::json::array* opt_array(const char* key) const;
  const boost::json::object* opt_object(const char* key) const;
  /// The object at `key` as a document of its own (its path below this one's).
  ImportDoc child(const char* key) const;
  ImportDoc element(const boost::json::array& a, std::size_t i, const std::string& path) const;
  const boost::json::object& raw() const { return o_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  const boost::json::object& o_;
  std::string file_;
  std::string path_;
  std::string tool_;
  std::size_t line_;
};

}  // namespace dyno::interop
