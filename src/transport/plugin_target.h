// The in-process engine target: an engine plugin (include/dyno/engine_plugin.h, docs/plugins.md)
// loaded with dlopen, measured through the same Target seam as an HTTP engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "error/error.h"
#include "transport/event_loop.h"
#include "transport/target.h"

namespace dyno::transport {

/// A plugin dyno cannot use; the message says why and what to do.
class PluginError : public Error {
 public:
  explicit PluginError(const std::string& message) : Error(ErrorKind::input, message) {}
};

/// What the engine said it is (describe()), copied out of the plugin. Absent: not reported.
struct PluginIdentity {
  std::string engine_name;
  std::optional<std::string> engine_version;
  std::optional<std::string> model_id;
  std::optional<std::string> model_fingerprint;
  std::optional<std::string> args_json;  ///< a JSON object (checked when loaded)
};

/// A loaded plugin library and the one engine created from it: one per command, shared by the
/// PluginTargets of its cells (one target at a time). Not thread-safe; used from one thread.
class PluginEngine {
 public:
  /// Loads the library at `path`, checks its ABI, creates the engine with `config` (passed to
  /// the plugin unchanged) and asks for its identity. Throws PluginError when the file is
  /// missing, is not a loadable shared object, exports no dyno_engine_plugin_v1, was built for
  /// another ABI version, has an incomplete table, or create()/describe() failed (with the
  /// plugin's own message).
  PluginEngine(const std::string& path, const std::string& config);
  /// Destroys the engine, then unloads the library.
  ~PluginEngine();
  PluginEngine(const PluginEngine&) = delete;
  PluginEngine& operator=(const PluginEngine&) = delete;

  const PluginIdentity& identity() const;
  const std::string& path() const;

  struct Impl;  ///< the library and the engine (opaque)

 private:
  friend class PluginTarget;
  std::unique_ptr<Impl> impl_;
};

struct PluginTargetConfig {
  std::string model;
  workload::Api api = workload::Api::kChat;
  bool stream = true;
  std::string request_id_prefix = "dyno-";  ///< request id: <prefix><submission>
  std::optional<std::chrono::milliseconds> first_token_timeout;  ///< from sent
  std::optional<std::chrono::milliseconds> total_timeout;        ///< from sent
  /// How long the destructor waits for the engine to end requests it was asked to cancel.
  std::chrono::milliseconds end_wait{10'000};
};

/// Where the times given to observers came from (token events and request ends).
struct PluginStampCounts {
  std::uint64_t engine = 0;    ///< the engine's own stamp
  std::uint64_t receive = 0;   ///< dyno's receive time: the engine gave no stamp
  std::uint64_t rejected = 0;  ///< dyno's receive time: the engine's stamp was impossible
};

/// Runs requests on a PluginEngine. Behaviour (the StreamObserver contract, made precise):
/// - submit() stamps on_sent just before calling the plugin's submit; the observer is never
///   called inside submit() (every callback reaches it through the event loop).
/// - The plugin's callbacks may come from any thread: each copies its event into a queue and
///   wakes the loop once per batch; the loop hands the batch to the observers in order.
/// - An event's time is the engine's stamp when it has one that can be right (not before
///   on_sent, not after dyno received it, not before the request's previous time), else the
///   time dyno's callback ran (stamps() counts each case). on_first_byte is never called.
/// - Non-streamed (config.stream false): the answer's events are joined into one token event at
///   the end time, as for an HTTP response body.
/// - usage: the engine's counts at the end; without a completion count, the sum of the events'
///   token counts when every event gave one.
/// - Engine statuses: rejected (incl. a NULL submit) -> kEngineRejected, failed -> kEngineFailed,
///   timeout -> kTimeout; a cancellation dyno did not ask for -> kEngineFailed.
/// - first_token_timeout / total_timeout: on_error(kTimeout), and the request is cancelled in
///   the engine.
/// - cancel_all(): every request still with its observer gets on_error(kCancelled) at once and
///   is cancelled in the engine. Handles are released when the engine's end arrives.
/// - The destructor calls no observer; it cancels requests still running in the engine, waits up
///   to config.end_wait for their ends and releases them (a request the engine never ends is
///   left to the engine's destroy()).
class PluginTarget final : public Target {
 public:
  PluginTarget(EventLoop& loop, PluginEngine& engine, PluginTargetConfig config);
  ~PluginTarget() override;
  PluginTarget(const PluginTarget&) = delete;
  PluginTarget& operator=(const PluginTarget&) = delete;

  /// Throws std::invalid_argument for a chat-only request on the completions API.
  std::unique_ptr<PreparedRequest> prepare(const workload::Request& request) override;
  void submit(const PreparedRequest& request, std::uint64_t submission,
              StreamObserver& observer) override;
  void cancel_all() override;

  PluginStampCounts stamps() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dyno::transport
