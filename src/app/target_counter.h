// The tokenizer `dyno stream make` and the trace imports count prompts with: the target's
// /tokenize (--url/--model) or the embedded simulated engine's (--profile).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine_session/engine_session.h"
#include "telemetry/options.h"
#include "workload/exact_prompt.h"
#include "workload/request.h"

namespace dyno::app {

/// The flags naming the counting target.
struct TargetFlags {
  std::optional<std::string> url;     ///< base URL, e.g. http://127.0.0.1:8000/v1
  std::optional<std::string> model;   ///< required with --url
  std::string api = "chat";           ///< chat | completions
  std::string profile = "small-gpu";  ///< embedded sim profile (no --url)
  double timeout_s = 30.0;            ///< per tokenize call
  bool insecure = false;
  std::optional<std::string> ca_file;
};

/// Counts whole prompts with the target's tokenizer (chat: with the chat template). Throws
/// UsageError for bad flags (--model missing with --url …).
class TargetCounter {
 public:
  TargetCounter(const TargetFlags& flags, std::uint64_t seed);
  std::int64_t operator()(const workload::Request& request) { return count_(request); }
  workload::Api api() const { return api_; }
  std::string engine() const { return engine_session_.display(); }
  bool embedded() { return engine_session_.embedded() != nullptr; }
  const std::string& model() const { return engine_session_.model(); }
  const char* flavor() { return count_.flavor(); }
  /// "no --url: …" when the embedded sim counts, then "tokenizer: … /tokenize (…), model …".
  std::string describe(const std::string& api_name);
  /// `n` more counters on connections of their own, each to be called from one thread (they
  /// live as long as this object).
  std::vector<workload::PromptTokenCounter> parallel(std::size_t n, double timeout_s);

 private:
  workload::Api api_;
  telemetry::TelemetryOptions telemetry_;
  std::atomic<bool> never_stop_{false};  // no engine is launched (no --engine here)
  engine_session::EngineSession engine_session_;
  engine_session::PromptCounter count_;
  std::vector<std::unique_ptr<engine_session::PromptCounter>> more_;
};

}  // namespace dyno::app
