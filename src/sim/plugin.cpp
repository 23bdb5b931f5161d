// The simulated engine as an in-process engine plugin (include/dyno/engine_plugin.h): the same
// performance model (sim/model.h), tokenizer and request rules (sim/request.h) as `dyno sim`,
// driven by one engine thread on the steady clock instead of by the HTTP server's timers. It is
// the worked example of docs/plugins.md.
//
// Configuration string: comma-separated key=value pairs, all optional:
//   profile=<built-in name or JSON profile file>   (default small-gpu)
//   seed=<unsigned integer>                        (default 0; seeds text and speculation)
//   model=<served model id>                        (default: the profile's model_name)
//
// Threads: dyno's thread calls submit/cancel/release (under the engine mutex); the engine thread
// plans and completes model steps and is the only thread that calls callbacks, so one request's
// callbacks never overlap. Each step's events are stamped with the steady time at which the step
// completed and delivered outside the mutex.
#include <dyno/engine_plugin.h>
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/model.h"
#include "sim/profile.h"
#include "sim/request.h"
#include "sim/tokenizer.h"

namespace dyno::sim {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// Zero-delay profiles: steps run back to back, delivered in bursts like the HTTP server's writes
// (sim/server.cpp), so both front ends hand over events in the same batches.
constexpr std::size_t kZeroDelayBurstSteps = 16;
constexpr std::size_t kZeroDelayBurstEvents = 512;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Writes `message` into a caller's buffer, NUL-terminated and truncated to fit.
void write_error(char* buffer, std::size_t size, std::string_view message) {
  if (buffer == nullptr || size == 0) return;
  const std::size_t n = std::min(size - 1, message.size());
  std::memcpy(buffer, message.data(), n);
  buffer[n] = '\0';
}

struct Config {
  std::string profile = "small-gpu";
  std::uint64_t seed = 0;
  std::optional<std::string> model;
};

// Throws std::invalid_argument naming the offending key.
Config parse_config(std::string_view text) {
  Config config;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw std::invalid_argument("'" + std::string(item) +
                                  "' is not key=value (keys: profile, seed, model)");
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (key == "profile") {
      config.profile = std::string(value);
    } else if (key == "seed") {
      std::uint64_t seed = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seed);
      if (ec != std::errc() || end != value.data() + value.size()) {
        throw std::invalid_argument("seed=" + std::string(value) + " is not an unsigned integer");
      }
      config.seed = seed;
    } else if (key == "model") {
      if (value.empty()) throw std::invalid_argument("model= needs a model id");
      config.model = std::string(value);
    } else {
      throw std::invalid_argument("unknown key '" + std::string(key) +
                                  "' (keys: profile, seed, model)");
    }
  }
  return config;
}

const char* finish_name(FinishReason r) { return r == FinishReason::kStop ? "stop" : "length"; }

}  // namespace
}  // namespace dyno::sim

// One submitted request. Owned by the engine from submit to release (the handle dyno holds).
struct dyno_engine_request_handle {
  std::uint64_t id = 0;  // model id
  dyno_engine_callbacks callbacks{};
  dyno::sim::CompletionRequest request;
  std::uint64_t text_seed = 0;
  std::int64_t generated = 0;
  std::int64_t reasoning_tokens = 0;
  std::int64_t cached_tokens = 0;           // prefix-cache tokens (from the first event)
  std::vector<std::uint64_t> block_hashes;  // the prompt's prefix-cache blocks (until submitted)
  bool ended = false;  // on_end is delivered or queued: no further callback is produced
  // Non-streamed requests: the whole answer, delivered as one event at the end.
  std::string content;
  std::string reasoning;
};

namespace dyno::sim {
namespace {

using Handle = dyno_engine_request_handle;

// One callback the engine thread delivers after it released the mutex.
struct Outgoing {
  dyno_engine_callbacks callbacks{};
  bool event = false;     // an on_event (else on_end)
  std::int64_t t_ns = 0;  // the step's completion time; 0: stamped when delivered
  std::string content;
  std::string reasoning;
  std::int64_t tokens = 0;
  std::int32_t status = DYNO_ENGINE_STATUS_OK;
  const char* finish_reason = nullptr;  // static strings
  const char* error_message = nullptr;
  std::int64_t prompt_tokens = -1;
  std::int64_t completion_tokens = -1;
  std::int64_t reasoning_tokens = -1;
  std::int64_t cached_tokens = -1;
};

// Counts a dyno thread that is about to take the engine mutex (see Engine::let_callers_in).
class Caller {
 public:
  explicit Caller(std::atomic<int>& count) : count_(count) {
    count_.fetch_add(1, std::memory_order_acq_rel);
  }
  ~Caller() { count_.fetch_sub(1, std::memory_order_acq_rel); }
  Caller(const Caller&) = delete;
  Caller& operator=(const Caller&) = delete;

 private:
  std::atomic<int>& count_;
};

class Engine {
 public:
  Engine(Profile profile, std::uint64_t seed)
      : profile_(std::move(profile)), seed_(seed), model_(profile_, seed) {
    json::object args;
    args["profile"] = json::parse(profile_to_json(profile_));
    args["seed"] = seed_;
    args_json_ = json::serialize(args);
    thread_ = std::thread([this] { run(); });
  }

  ~Engine() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    // Requests still live get no callback after destroy (the ABI's rule); their handles go here.
  }

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void describe(dyno_engine_identity& identity) const {
    identity.engine_name = "dyno-sim";
    if (DYNO_ENGINE_HAS_FIELD(&identity, dyno_engine_identity, engine_version)) {
      identity.engine_version = DYNO_VERSION;
    }
    if (DYNO_ENGINE_HAS_FIELD(&identity, dyno_engine_identity, model_id)) {
      identity.model_id = profile_.model_name.c_str();
    }
    // model_fingerprint stays NULL: a simulated engine has no weights.
    if (DYNO_ENGINE_HAS_FIELD(&identity, dyno_engine_identity, args_json)) {
      identity.args_json = args_json_.c_str();
    }
  }

  Handle* submit(const dyno_engine_request& r, const dyno_engine_callbacks& callbacks) {
    // Parsing and validation happen before the mutex is taken: the engine thread never waits
    // for them.
    CompletionRequest req;
    req.chat = r.api == DYNO_ENGINE_API_CHAT;
    req.stream = r.stream != 0;
    check_model(r.model != nullptr ? r.model : "", profile_);
    if (req.chat) {
      if (r.messages_json == nullptr) bad_request("a chat request needs messages_json");
      boost::system::error_code ec;
      const json::value messages =
          json::parse(std::string_view(r.messages_json, r.messages_json_len), ec);
      if (ec) bad_request("messages_json is not JSON: " + ec.message());
      set_chat_prompt(req, messages, profile_);
    } else {
      if (r.prompt == nullptr) bad_request("a completions request needs a prompt");
      set_text_prompt(req, std::string(r.prompt, r.prompt_len));
    }
    req.max_tokens =
        (r.has & DYNO_ENGINE_HAS_MAX_TOKENS) != 0 ? r.max_tokens : profile_.default_max_tokens;
    if (req.max_tokens < 1) bad_request("'max_tokens' must be >= 1");
    if ((r.has & DYNO_ENGINE_HAS_MIN_TOKENS) != 0) {
      if (r.min_tokens < 0) bad_request("'min_tokens' must be >= 0");
      req.min_tokens = r.min_tokens;
    }
    if ((r.has & DYNO_ENGINE_HAS_IGNORE_EOS) != 0) req.ignore_eos = r.ignore_eos != 0;
    if ((r.has & DYNO_ENGINE_HAS_SEED) != 0) req.seed = static_cast<std::uint64_t>(r.seed);
    check_context_length(req, profile_);

    auto handle = std::make_unique<Handle>();
    handle->block_hashes = prompt_block_hashes(req, profile_);
    handle->callbacks = callbacks;
    handle->request = std::move(req);
    Handle* raw = handle.get();
    {
      const Caller caller(callers_);
      std::lock_guard lock(mu_);
      raw->id = next_id_++;
      // The same text seed rule as the HTTP server: the request's seed, else one derived from
      // the engine seed and the arrival ordinal.
      raw->text_seed =
          raw->request.seed ? *raw->request.seed : default_text_seed(seed_, ++ordinal_);
      ModelRequest mr;
      mr.id = raw->id;
      mr.prompt_tokens = raw->request.prompt_tokens;
      mr.max_tokens = raw->request.max_tokens;
      mr.min_tokens = raw->request.min_tokens;
      mr.ignore_eos = raw->request.ignore_eos;
      mr.seed = raw->text_seed;
      mr.block_hashes = std::move(raw->block_hashes);
      model_.submit(mr, now_s());
      by_id_.emplace(raw->id, raw);
      handles_.emplace(raw, std::move(handle));
    }
    cv_.notify_all();
    return raw;
  }

  void cancel(Handle* handle) {
    {
      const Caller caller(callers_);
      std::lock_guard lock(mu_);
      if (handles_.count(handle) == 0 || handle->ended) return;  // idempotent
      handle->ended = true;
      model_.cancel(handle->id);
      by_id_.erase(handle->id);
      Outgoing out;
      out.callbacks = handle->callbacks;
      out.status = DYNO_ENGINE_STATUS_CANCELLED;
      out.error_message = "cancelled";
      out.completion_tokens = handle->generated;
      out.prompt_tokens = handle->request.prompt_tokens;
      cancelled_.push_back(std::move(out));
    }
    cv_.notify_all();  // the engine thread delivers the on_end (callbacks come from it only)
  }

  void release(Handle* handle) {
    const Caller caller(callers_);
    std::lock_guard lock(mu_);
    handles_.erase(handle);
  }

 private:
  double now_s() const { return std::chrono::duration<double>(Clock::now() - epoch_).count(); }

  void run() {
    // Steps end on timed waits; Linux lets a timed wait of an ordinary thread end up to 50 µs
    // late (timer slack), which would stretch every step. The HTTP server's timers (timerfd) are
    // not subject to it, so both front ends pace the model alike only with the slack at 1 ns.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    std::unique_lock lock(mu_);
    std::vector<Outgoing> out;
    std::size_t burst_steps = 0;
    while (!stopping_) {
      if (!cancelled_.empty()) {
        take_cancelled(out);
        deliver(lock, out);
        continue;
      }
      if (!profile_.zero_delay && model_.ready_s() > now_s()) {
        // The engine's finish work (profile.finish_s): requests that arrive meanwhile join
        // the next step; cancellations are answered meanwhile.
        const auto ready = epoch_ + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(model_.ready_s()));
        cv_.wait_until(lock, ready, [this] { return stopping_ || !cancelled_.empty(); });
        continue;
      }
      const std::optional<StepPlan> plan = model_.start_step(now_s());
      if (!plan) {
        if (!out.empty()) {  // the end of a zero-delay burst
          deliver(lock, out);
          continue;
        }
        cv_.wait(lock, [this] { return stopping_ || !cancelled_.empty() || model_.has_work(); });
        continue;
      }
      // Wait until the step ends; cancellations are answered meanwhile (a cancelled sequence
      // leaves the planned step, like a real engine aborting it at the step boundary).
      const auto end = epoch_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(plan->end_s));
      while (!stopping_ && Clock::now() < end) {
        cv_.wait_until(lock, end, [this] { return stopping_ || !cancelled_.empty(); });
        if (!cancelled_.empty()) {
          take_cancelled(out);
          deliver(lock, out);
        }
      }
      if (stopping_) break;
      if (profile_.zero_delay) let_callers_in(lock);
      const std::int64_t t_ns = steady_ns();
      for (const Event& e : model_.complete_step()) render(e, out, t_ns);
      // Zero delay: like the HTTP server, run up to kZeroDelayBurstSteps steps (or
      // kZeroDelayBurstEvents events per running sequence) back to back, then deliver them all.
      if (profile_.zero_delay && ++burst_steps < kZeroDelayBurstSteps &&
          out.size() < std::max(kZeroDelayBurstEvents, kZeroDelayBurstSteps * model_.running()) &&
          callers_.load(std::memory_order_acquire) == 0) {
        continue;
      }
      burst_steps = 0;
      deliver(lock, out);
    }
  }

  void take_cancelled(std::vector<Outgoing>& out) {
    for (Outgoing& o : cancelled_) out.push_back(std::move(o));
    cancelled_.clear();
  }

  // A zero-delay engine never sleeps: it hands the mutex to dyno's thread when that thread waits
  // for it (a mutex is not fair, so the engine thread could otherwise take it back at once).
  void let_callers_in(std::unique_lock<std::mutex>& lock) {
    if (callers_.load(std::memory_order_acquire) == 0) return;
    lock.unlock();
    while (callers_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    lock.lock();
  }

  // Turns one model event of the step that completed at `t_ns` into callbacks for its request
  // (under the mutex).
  void render(const Event& e, std::vector<Outgoing>& out, std::int64_t t_ns) {
    const auto it = by_id_.find(e.request_id);
    if (it == by_id_.end()) return;
    Handle& h = *it->second;
    h.generated += e.tokens;
    if (e.first) h.cached_tokens = e.cached_tokens;
    // Completions have no reasoning channel: the HTTP server sends reasoning tokens as text.
    const bool reasoning = e.kind == TokenKind::kReasoning && h.request.chat;
    if (e.kind == TokenKind::kReasoning) h.reasoning_tokens += e.tokens;
    const auto first = static_cast<std::uint64_t>(e.first_index);
    const auto count = static_cast<std::uint64_t>(e.tokens);
    if (h.request.stream) {
      Outgoing& ev = out.emplace_back();
      ev.callbacks = h.callbacks;
      ev.event = true;
      ev.t_ns = t_ns;
      ev.tokens = e.tokens;
      append_output_pieces(reasoning ? ev.reasoning : ev.content, h.text_seed, first, count);
    } else {
      append_output_pieces(reasoning ? h.reasoning : h.content, h.text_seed, first, count);
    }
    if (e.finish == FinishReason::kNone) return;
    if (!h.request.stream) {
      Outgoing& ev = out.emplace_back();
      ev.callbacks = h.callbacks;
      ev.event = true;
      ev.t_ns = t_ns;
      ev.tokens = h.generated;
      ev.content = std::move(h.content);
      ev.reasoning = std::move(h.reasoning);
    }
    Outgoing& end = out.emplace_back();
    end.callbacks = h.callbacks;
    end.t_ns = t_ns;
    end.finish_reason = finish_name(e.finish);
    end.prompt_tokens = h.request.prompt_tokens;
    end.completion_tokens = h.generated;
    if (profile_.prefix_cache_blocks > 0) end.cached_tokens = h.cached_tokens;
    // Like the HTTP server's usage: reasoning tokens only for profiles that produce them.
    if (profile_.reasoning_fraction > 0.0) end.reasoning_tokens = h.reasoning_tokens;
    h.ended = true;
    by_id_.erase(it);
  }

  // Calls the queued callbacks with the mutex released, then takes it back. Cancellations (no
  // step time) are stamped when delivered.
  void deliver(std::unique_lock<std::mutex>& lock, std::vector<Outgoing>& out) {
    if (out.empty()) return;
    lock.unlock();
    for (const Outgoing& o : out) {
      if (o.event) {
        dyno_engine_event ev{};
        ev.struct_size = sizeof ev;
        ev.t_ns = o.t_ns;
        ev.content = o.content.data();
        ev.content_len = o.content.size();
        ev.reasoning = o.reasoning.data();
        ev.reasoning_len = o.reasoning.size();
        ev.tokens = o.tokens;
        o.callbacks.on_event(o.callbacks.user_data, &ev);
      } else {
        dyno_engine_end end{};
        end.struct_size = sizeof end;
        end.t_ns = o.t_ns != 0 ? o.t_ns : steady_ns();
        end.status = o.status;
        end.finish_reason = o.finish_reason;
        end.error_message = o.error_message;
        end.prompt_tokens = o.prompt_tokens;
        end.completion_tokens = o.completion_tokens;
        end.cached_tokens = o.cached_tokens;  // -1 (unknown) unless the prefix cache is on
        end.reasoning_tokens = o.reasoning_tokens;
        // The last use of this request's callbacks; the handle may be released from now on.
        o.callbacks.on_end(o.callbacks.user_data, &end);
      }
    }
    out.clear();
    lock.lock();
  }

  const Profile profile_;
  const std::uint64_t seed_;
  std::string args_json_;
  Clock::time_point epoch_ = Clock::now();

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> callers_{0};                       // dyno threads inside submit/cancel/release
  Model model_;                                       // guarded by mu_
  std::unordered_map<std::uint64_t, Handle*> by_id_;  // live (not ended) requests, by model id
  std::unordered_map<Handle*, std::unique_ptr<Handle>> handles_;  // not yet released
  std::vector<Outgoing> cancelled_;  // on_end(CANCELLED) waiting for the engine thread
  std::uint64_t next_id_ = 1;
  std::uint64_t ordinal_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace
}  // namespace dyno::sim

struct dyno_engine {
  std::unique_ptr<dyno::sim::Engine> engine;
};

namespace {

dyno_engine* plugin_create(const char* config, char* error, std::size_t error_size) {
  try {
    const dyno::sim::Config c = dyno::sim::parse_config(config != nullptr ? config : "");
    dyno::sim::Profile profile = dyno::sim::resolve_profile(c.profile);
    if (c.model) profile.model_name = *c.model;
    auto engine = std::make_unique<dyno_engine>();
    engine->engine = std::make_unique<dyno::sim::Engine>(std::move(profile), c.seed);
    return engine.release();
  } catch (const std::exception& e) {
    dyno::sim::write_error(error, error_size, e.what());
  }
  return nullptr;
}

int plugin_describe(dyno_engine* engine, dyno_engine_identity* identity) {
  if (engine == nullptr || identity == nullptr) return 1;
  engine->engine->describe(*identity);
  return 0;
}

dyno_engine_request_handle* plugin_submit(dyno_engine* engine, const dyno_engine_request* request,
                                          const dyno_engine_callbacks* callbacks, char* error,
                                          std::size_t error_size) {
  try {
    if (request == nullptr || callbacks == nullptr || callbacks->on_event == nullptr ||
        callbacks->on_end == nullptr) {
      dyno::sim::write_error(error, error_size, "submit: request and both callbacks are needed");
      return nullptr;
    }
    return engine->engine->submit(*request, *callbacks);
  } catch (const dyno::sim::RequestError& e) {
    dyno::sim::write_error(error, error_size, e.message);
  } catch (const std::exception& e) {
    dyno::sim::write_error(error, error_size, e.what());
  }
  return nullptr;
}

void plugin_cancel(dyno_engine* engine, dyno_engine_request_handle* request) {
  engine->engine->cancel(request);
}

void plugin_release(dyno_engine* engine, dyno_engine_request_handle* request) {
  engine->engine->release(request);
}

void plugin_destroy(dyno_engine* engine) { delete engine; }

const dyno_engine_plugin kPlugin = {
    DYNO_ENGINE_PLUGIN_ABI_VERSION,
    0,
    sizeof(dyno_engine_plugin),
    plugin_create,
    plugin_describe,
    plugin_submit,
    plugin_cancel,
    plugin_release,
    plugin_destroy,
};

}  // namespace

extern "C" DYNO_ENGINE_PLUGIN_EXPORT const dyno_engine_plugin* dyno_engine_plugin_v1(void) {
  return &kPlugin;
}
