// An in-process engine plugin as a Target: the plugin's callbacks (any thread) marshalled onto
// the event loop as messages, each request's slot, its deadlines and its end in dyno's
// categories. One piece (about 700 lines): the slots, the message queue and the timers are one
// state that every part reads; the bounded message text is server_message.cpp's.
#include "transport/plugin_target.h"

#include <dlfcn.h>
#include <dyno/engine_plugin.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/http_target.h"
#include "transport/server_message.h"

namespace dyno::transport {

// ---------------------------------------------------------------------------------------------
// PluginEngine

struct PluginEngine::Impl {
  std::string path;
  void* library = nullptr;
  const dyno_engine_plugin* api = nullptr;
  dyno_engine* engine = nullptr;
  PluginIdentity identity;

  ~Impl() {
    if (engine != nullptr) api->destroy(engine);
    if (library != nullptr) dlclose(library);
  }
};

namespace {

std::optional<std::string> copy(const char* s) {
  return s != nullptr ? std::optional<std::string>(s) : std::nullopt;
}

// The error text of a C call that wrote into our buffer ("" when it wrote nothing).
std::string message_of(const std::array<char, 1024>& buffer) {
  return std::string(buffer.data(), ::strnlen(buffer.data(), buffer.size()));
}

}  // namespace

PluginEngine::PluginEngine(const std::string& path, const std::string& config)
    : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  p.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw PluginError(path + ": no such file (give the path of the plugin's .so)");
  }
  p.library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p.library == nullptr) {
    const char* err = dlerror();
    throw PluginError("cannot load " + path +
                      " as a shared library: " + (err != nullptr ? err : "dlopen failed"));
  }
  void* entry = dlsym(p.library, DYNO_ENGINE_PLUGIN_ENTRY);
  if (entry == nullptr) {
    // A plugin for another ABI exports another entry point: say which one.
    for (unsigned v = 2; v <= 16; ++v) {
      const std::string other = "dyno_engine_plugin_v" + std::to_string(v);
      if (dlsym(p.library, other.c_str()) != nullptr) {
        throw PluginError(path + " is an engine plugin for ABI version " + std::to_string(v) +
                          " (it exports " + other + "); this dyno loads ABI version " +
                          std::to_string(DYNO_ENGINE_PLUGIN_ABI_VERSION) +
                          ": rebuild the plugin against this dyno's include/dyno/engine_plugin.h");
      }
    }
    throw PluginError(path + " is not a dyno engine plugin: it exports no " +
                      DYNO_ENGINE_PLUGIN_ENTRY + " (see docs/plugins.md)");
  }
  const auto entry_fn = reinterpret_cast<dyno_engine_plugin_entry_fn>(entry);
  p.api = entry_fn();
  if (p.api == nullptr)
    throw PluginError(path + ": " + DYNO_ENGINE_PLUGIN_ENTRY + " returned NULL");
  if (p.api->abi_version != DYNO_ENGINE_PLUGIN_ABI_VERSION) {
    throw PluginError(path + " was built for engine plugin ABI version " +
                      std::to_string(p.api->abi_version) + "; this dyno loads ABI version " +
                      std::to_string(DYNO_ENGINE_PLUGIN_ABI_VERSION) +
                      ": rebuild the plugin against this dyno's include/dyno/engine_plugin.h");
  }
  if (!DYNO_ENGINE_HAS_FIELD(p.api, dyno_engine_plugin, destroy) || p.api->create == nullptr ||
      p.api->describe == nullptr || p.api->submit == nullptr || p.api->cancel == nullptr ||
      p.api->release == nullptr || p.api->destroy == nullptr) {
    throw PluginError(path +
                      ": its function table is incomplete (create, describe, submit, cancel, "
                      "release and destroy are all required)");
  }
  std::array<char, 1024> error{};
  p.engine = p.api->create(config.c_str(), error.data(), error.size());
  if (p.engine == nullptr) {
    const std::string why = message_of(error);
    throw PluginError(path + ": the engine could not be created: " +
                      (why.empty() ? std::string("the plugin gave no reason") : why));
  }
  dyno_engine_identity id{};
  id.struct_size = sizeof id;
  if (p.api->describe(p.engine, &id) != 0) {
    throw PluginError(path + ": describe() failed: the engine did not say what it is");
  }
  if (id.engine_name == nullptr || id.engine_name[0] == '\0') {
    throw PluginError(path + ": describe() gave no engine_name");
  }
  p.identity.engine_name = id.engine_name;
  p.identity.engine_version = copy(id.engine_version);
  p.identity.model_id = copy(id.model_id);
  p.identity.model_fingerprint = copy(id.model_fingerprint);
  p.identity.args_json = copy(id.args_json);
  if (p.identity.args_json) {
    boost::system::error_code json_ec;
    const boost::json::value args = boost::json::parse(*p.identity.args_json, json_ec);
    if (json_ec || !args.is_object()) {
      throw PluginError(path + ": describe() gave args_json that is not a JSON object");
    }
  }
}

PluginEngine::~PluginEngine() = default;

const PluginIdentity& PluginEngine::identity() const { return impl_->identity; }

const std::string& PluginEngine::path() const { return impl_->path; }

// ---------------------------------------------------------------------------------------------
// PluginTarget

namespace {

// What a plugin callback (or submit itself) reported, copied on the calling thread.
struct Message {
  enum class Kind { kSent, kEvent, kEnd, kRefused };
  Kind kind = Kind::kEvent;
  std::uint64_t slot = 0;
  std::int64_t engine_ns = 0;   // the engine's stamp, 0 when none
  std::int64_t receive_ns = 0;  // steady time when dyno's callback ran
  std::string content;
  std::string reasoning;
  std::int64_t tokens = 0;
  // kEnd / kRefused
  std::int32_t status = DYNO_ENGINE_STATUS_OK;
  std::string finish_reason;
  std::string error_message;
  std::int64_t prompt_tokens = -1;
  std::int64_t completion_tokens = -1;
  std::int64_t cached_tokens = -1;
  std::int64_t reasoning_tokens = -1;
};

class Inbox;

// Where the loop thread hands a batch of messages (the target).
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual void process(std::vector<Message>& batch) = 0;
};

// The user_data of one request's callbacks: lives from submit until its on_end was called.
struct CallbackContext {
  std::shared_ptr<Inbox> inbox;
  std::uint64_t slot = 0;
};

// One request on its way through the engine.
struct Slot {
  StreamObserver* observer = nullptr;  // null once it got its terminal call
  dyno_engine_request_handle* handle = nullptr;
  std::int64_t sent_ns = 0;
  std::int64_t last_ns = 0;  // latest time given for this request (times never go backwards)
  bool sent_delivered = false;
  bool cancel_asked = false;  // dyno called the plugin's cancel
  bool first_token = false;
  bool all_events_counted = true;  // every event reported its token count
  std::int64_t event_tokens = 0;
  std::string content;  // non-streamed: the events joined
  std::string reasoning;
  std::uint64_t first_token_timer = 0;
  std::uint64_t total_timer = 0;
};

}  // namespace

struct PluginTarget::Impl final : MessageSink {
  Impl(EventLoop& l, PluginEngine::Impl& e, PluginTargetConfig c);
  void process(std::vector<Message>& batch) override;
  void on_sent_message(std::uint64_t slot, std::int64_t t_ns);
  void on_event_message(std::uint64_t slot, Message& m);
  void on_end_message(std::uint64_t slot, Message& m);
  void on_timeout(std::uint64_t slot, bool first_token);
  std::int64_t pick_time(Slot& s, std::int64_t engine_ns, std::int64_t receive_ns);
  void release(Slot& s);

  EventLoop& loop;
  PluginEngine::Impl& engine;
  PluginTargetConfig config;
  std::shared_ptr<Inbox> inbox;
  std::unordered_map<std::uint64_t, Slot> slots;
  std::uint64_t next_slot = 1;
  PluginStampCounts stamps;
};

namespace {

// Messages from engine threads to the loop thread. Engine threads append under the mutex and
// post one drain per batch; the loop thread takes the whole batch at once.
class Inbox : public std::enable_shared_from_this<Inbox> {
 public:
  Inbox(EventLoop& loop, MessageSink& target) : loop_(&loop), target_(&target) {}

  void push(Message&& m) {
    std::lock_guard lock(mu_);
    if (m.kind == Message::Kind::kEnd) {
      --outstanding_;
      ended_.notify_all();
    }
    if (loop_ == nullptr) return;  // the target is gone: nobody will read it
    queue_.push_back(std::move(m));
    if (!drain_posted_) {
      drain_posted_ = true;
      loop_->post_threadsafe([self = shared_from_this()] { self->drain(); });
    }
  }

  /// Before the plugin's submit: one more on_end to expect.
  void expect_end() {
    std::lock_guard lock(mu_);
    ++outstanding_;
  }
  /// The plugin refused a request: its on_end will not come.
  void no_end() {
    std::lock_guard lock(mu_);
    --outstanding_;
  }

  /// Waits until every expected on_end was pushed, or `timeout`; then detaches from the target
  /// and returns what was queued. Called by the target's destructor on the loop thread.
  std::vector<Message> close(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    ended_.wait_for(lock, timeout, [this] { return outstanding_ <= 0; });
    loop_ = nullptr;
    target_ = nullptr;
    return std::move(queue_);
  }

 private:
  void drain() {
    std::vector<Message> batch;
    MessageSink* target = nullptr;
    {
      std::lock_guard lock(mu_);
      batch.swap(queue_);
      drain_posted_ = false;
      target = target_;
    }
    if (target != nullptr) target->process(batch);
  }

  std::mutex mu_;
  std::condition_variable ended_;
  std::vector<Message> queue_;
  bool drain_posted_ = false;
  std::int64_t outstanding_ = 0;  // submitted requests whose on_end has not come
  EventLoop* loop_;
  MessageSink* target_;
};

// The plugin's callbacks (any thread). They copy and queue; the loop does the rest.
void on_event_callback(void* user_data, const dyno_engine_event* event) {
  auto* ctx = static_cast<CallbackContext*>(user_data);
  Message m;
  m.kind = Message::Kind::kEvent;
  m.slot = ctx->slot;
  m.receive_ns = steady_now_ns();
  if (event != nullptr) {
    m.engine_ns = DYNO_ENGINE_HAS_FIELD(event, dyno_engine_event, t_ns) ? event->t_ns : 0;
    if (DYNO_ENGINE_HAS_FIELD(event, dyno_engine_event, content_len) && event->content) {
      m.content.assign(event->content, event->content_len);
    }
    if (DYNO_ENGINE_HAS_FIELD(event, dyno_engine_event, reasoning_len) && event->reasoning) {
      m.reasoning.assign(event->reasoning, event->reasoning_len);
    }
    if (DYNO_ENGINE_HAS_FIELD(event, dyno_engine_event, tokens)) m.tokens = event->tokens;
  }
  ctx->inbox->push(std::move(m));
}

void on_end_callback(void* user_data, const dyno_engine_end* end) {
  auto* ctx = static_cast<CallbackContext*>(user_data);
  Message m;
  m.kind = Message::Kind::kEnd;
  m.slot = ctx->slot;
  m.receive_ns = steady_now_ns();
  m.status = DYNO_ENGINE_STATUS_FAILED;
  m.error_message = "the engine ended the request without an end record";
  if (end != nullptr) {
    m.error_message.clear();
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, t_ns)) m.engine_ns = end->t_ns;
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, status)) m.status = end->status;
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, finish_reason) && end->finish_reason) {
      m.finish_reason = end->finish_reason;
    }
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, error_message) && end->error_message) {
      m.error_message = bounded_excerpt(end->error_message);
    }
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, prompt_tokens)) {
      m.prompt_tokens = end->prompt_tokens;
    }
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, completion_tokens)) {
      m.completion_tokens = end->completion_tokens;
    }
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, cached_tokens)) {
      m.cached_tokens = end->cached_tokens;
    }
    if (DYNO_ENGINE_HAS_FIELD(end, dyno_engine_end, reasoning_tokens)) {
      m.reasoning_tokens = end->reasoning_tokens;
    }
  }
  std::shared_ptr<Inbox> inbox = std::move(ctx->inbox);
  delete ctx;  // on_end is the request's last callback
  inbox->push(std::move(m));
}

// The plugin form of a request, built before the run.
struct Prepared final : PreparedRequest {
  std::string messages_json;
  std::string prompt;
  std::uint32_t has = 0;
  std::int32_t ignore_eos = 0;
  std::int64_t max_tokens = 0;
  std::int64_t min_tokens = 0;
  std::int64_t seed = 0;
  double temperature = 0.0;
  double top_p = 0.0;
  std::vector<std::string> stop;
  std::vector<const char*> stop_pointers;  // into `stop`
};

}  // namespace

PluginTarget::Impl::Impl(EventLoop& l, PluginEngine::Impl& e, PluginTargetConfig c)
    : loop(l), engine(e), config(std::move(c)) {}

std::int64_t PluginTarget::Impl::pick_time(Slot& s, std::int64_t engine_ns,
                                           std::int64_t receive_ns) {
  const std::int64_t lower = std::max(s.sent_ns, s.last_ns);
  std::int64_t t = receive_ns;
  if (engine_ns == 0) {
    ++stamps.receive;
  } else if (engine_ns >= lower && engine_ns <= receive_ns) {
    ++stamps.engine;
    t = engine_ns;
  } else {
    ++stamps.rejected;
  }
  t = std::max(t, lower);
  s.last_ns = t;
  return t;
}

void PluginTarget::Impl::process(std::vector<Message>& batch) {
  for (Message& m : batch) {
    const auto it = slots.find(m.slot);
    if (it == slots.end()) continue;
    switch (m.kind) {
      case Message::Kind::kSent:
        on_sent_message(m.slot, m.receive_ns);
        break;
      case Message::Kind::kEvent:
        on_event_message(m.slot, m);
        break;
      case Message::Kind::kEnd:
      case Message::Kind::kRefused:
        on_end_message(m.slot, m);
        break;
    }
  }
}

void PluginTarget::Impl::on_sent_message(std::uint64_t slot, std::int64_t t_ns) {
  Slot& s = slots.at(slot);
  if (s.sent_delivered || s.observer == nullptr) return;
  s.sent_delivered = true;
  s.observer->on_sent(t_ns);
}

void PluginTarget::Impl::on_event_message(std::uint64_t slot, Message& m) {
  Slot& s = slots.at(slot);
  if (s.observer == nullptr) return;  // ended for dyno (cancelled, timed out)
  if (m.tokens > 0) {
    s.event_tokens += m.tokens;
  } else {
    s.all_events_counted = false;
  }
  if (m.content.empty() && m.reasoning.empty()) return;  // not a token-bearing event
  if (!config.stream) {
    // Joined into one event at the end, like a whole HTTP response body.
    s.content += m.content;
    s.reasoning += m.reasoning;
    return;
  }
  const std::int64_t t = pick_time(s, m.engine_ns, m.receive_ns);
  if (!s.first_token) {
    s.first_token = true;
    if (s.first_token_timer != 0) {
      loop.cancel_timer(s.first_token_timer);
      s.first_token_timer = 0;
    }
  }
  s.observer->on_token_event(t, m.content, m.reasoning);
}

void PluginTarget::Impl::release(Slot& s) {
  for (const std::uint64_t timer : {s.first_token_timer, s.total_timer}) {
    if (timer != 0) loop.cancel_timer(timer);
  }
  s.first_token_timer = 0;
  s.total_timer = 0;
  if (s.handle != nullptr) engine.api->release(engine.engine, s.handle);
  s.handle = nullptr;
}

void PluginTarget::Impl::on_end_message(std::uint64_t slot, Message& m) {
  Slot& s = slots.at(slot);
  StreamObserver* observer = s.observer;
  s.observer = nullptr;
  release(s);
  if (observer == nullptr) {
    slots.erase(slot);  // dyno had ended it already (cancel, timeout)
    return;
  }
  const bool sent = s.sent_delivered;
  const std::int64_t sent_ns = s.sent_ns;
  const std::int64_t t = m.kind == Message::Kind::kRefused
                             ? std::max(m.receive_ns, s.last_ns)
                             : pick_time(s, m.engine_ns, m.receive_ns);
  const bool tokens_counted = s.all_events_counted && s.event_tokens > 0;
  const std::int64_t event_tokens = s.event_tokens;
  const std::string content = std::move(s.content);
  const std::string reasoning = std::move(s.reasoning);
  // The slot goes before the observer's terminal call: it may submit again from inside it.
  slots.erase(slot);
  if (!sent) observer->on_sent(sent_ns);
  if (m.kind == Message::Kind::kRefused) {
    observer->on_error(t, ErrorCategory::kEngineRejected, "engine refused: " + m.error_message,
                       std::nullopt);
    return;
  }
  const std::string detail = m.error_message.empty() ? std::string() : ": " + m.error_message;
  switch (m.status) {
    case DYNO_ENGINE_STATUS_OK: {
      if (!config.stream && (!content.empty() || !reasoning.empty())) {
        observer->on_token_event(t, content, reasoning);
      }
      Usage usage;
      if (m.prompt_tokens >= 0) usage.prompt_tokens = m.prompt_tokens;
      if (m.completion_tokens >= 0) {
        usage.completion_tokens = m.completion_tokens;
      } else if (tokens_counted) {
        usage.completion_tokens = event_tokens;
      }
      if (m.cached_tokens >= 0) usage.cached_tokens = m.cached_tokens;
      if (m.reasoning_tokens >= 0) usage.reasoning_tokens = m.reasoning_tokens;
      if (std::string why = implausible_usage(usage); !why.empty()) {
        observer->on_error(t, ErrorCategory::kImplausibleUsage, why, std::nullopt);
        return;
      }
      if (usage.prompt_tokens || usage.completion_tokens || usage.cached_tokens ||
          usage.reasoning_tokens) {
        observer->on_usage(usage);
      }
      DoneInfo info;
      info.finish_reason = m.finish_reason;
      observer->on_done(t, info);
      return;
    }
    case DYNO_ENGINE_STATUS_REJECTED:
      observer->on_error(t, ErrorCategory::kEngineRejected, "engine refused" + detail,
                         std::nullopt);
      return;
    case DYNO_ENGINE_STATUS_TIMEOUT:
      observer->on_error(t, ErrorCategory::kTimeout, "engine timeout" + detail, std::nullopt);
      return;
    case DYNO_ENGINE_STATUS_CANCELLED:
      observer->on_error(t, ErrorCategory::kEngineFailed,
                         "the engine cancelled the request on its own" + detail, std::nullopt);
      return;
    case DYNO_ENGINE_STATUS_FAILED:
      observer->on_error(t, ErrorCategory::kEngineFailed, "engine failure" + detail, std::nullopt);
      return;
    default:
      observer->on_error(
          t, ErrorCategory::kEngineFailed,
          "engine ended the request with unknown status " + std::to_string(m.status) + detail,
          std::nullopt);
      return;
  }
}

void PluginTarget::Impl::on_timeout(std::uint64_t slot, bool first_token) {
  const auto it = slots.find(slot);
  if (it == slots.end()) return;
  Slot& s = it->second;
  (first_token ? s.first_token_timer : s.total_timer) = 0;
  if (s.observer == nullptr) return;
  StreamObserver* observer = s.observer;
  s.observer = nullptr;
  if (s.handle != nullptr && !s.cancel_asked) {
    s.cancel_asked = true;
    engine.api->cancel(engine.engine, s.handle);
  }
  const bool sent = s.sent_delivered;
  const std::int64_t sent_ns = s.sent_ns;
  const std::int64_t t = std::max(steady_now_ns(), s.last_ns);
  const auto limit = first_token ? config.first_token_timeout : config.total_timeout;
  const std::string message =
      std::string(first_token ? "no token within the first-token timeout of "
                              : "not done within the timeout of ") +
      std::to_string(limit ? limit->count() : 0) + " ms";
  // `s` stays until the engine's end arrives (then the handle is released).
  if (!sent) observer->on_sent(sent_ns);
  observer->on_error(t, ErrorCategory::kTimeout, message, std::nullopt);
}

PluginTarget::PluginTarget(EventLoop& loop, PluginEngine& engine, PluginTargetConfig config)
    : impl_(std::make_unique<Impl>(loop, *engine.impl_, std::move(config))) {
  impl_->inbox = std::make_shared<Inbox>(loop, *impl_);
}

PluginTarget::~PluginTarget() {
  Impl& p = *impl_;
  for (auto& [id, s] : p.slots) {
    s.observer = nullptr;
    if (s.handle != nullptr && !s.cancel_asked) {
      s.cancel_asked = true;
      p.engine.api->cancel(p.engine.engine, s.handle);
    }
  }
  // Every request the engine ended is released; one it did not end within end_wait keeps its
  // handle (releasing it could race with the engine), and destroy() ends it later.
  std::vector<Message> rest = p.inbox->close(p.config.end_wait);
  for (const Message& m : rest) {
    if (m.kind != Message::Kind::kEnd) continue;
    const auto it = p.slots.find(m.slot);
    if (it != p.slots.end()) p.release(it->second);
  }
  for (auto& [id, s] : p.slots) {
    for (const std::uint64_t timer : {s.first_token_timer, s.total_timer}) {
      if (timer != 0) p.loop.cancel_timer(timer);
    }
  }
}

std::unique_ptr<PreparedRequest> PluginTarget::prepare(const workload::Request& request) {
  auto prepared = std::make_unique<Prepared>();
  if (impl_->config.api == workload::Api::kChat) {
    prepared->messages_json = build_messages_json(request);
  } else {
    prepared->prompt = completions_prompt(request);
  }
  const workload::Sampling& s = request.sampling;
  if (s.max_tokens) {
    prepared->has |= DYNO_ENGINE_HAS_MAX_TOKENS;
    prepared->max_tokens = *s.max_tokens;
  }
  if (s.temperature) {
    prepared->has |= DYNO_ENGINE_HAS_TEMPERATURE;
    prepared->temperature = *s.temperature;
  }
  if (s.top_p) {
    prepared->has |= DYNO_ENGINE_HAS_TOP_P;
    prepared->top_p = *s.top_p;
  }
  if (s.seed) {
    prepared->has |= DYNO_ENGINE_HAS_SEED;
    prepared->seed = *s.seed;
  }
  if (s.min_tokens) {
    prepared->has |= DYNO_ENGINE_HAS_MIN_TOKENS;
    prepared->min_tokens = *s.min_tokens;
  }
  if (s.ignore_eos) {
    prepared->has |= DYNO_ENGINE_HAS_IGNORE_EOS;
    prepared->ignore_eos = *s.ignore_eos ? 1 : 0;
  }
  prepared->stop = s.stop;
  for (const std::string& stop : prepared->stop) prepared->stop_pointers.push_back(stop.c_str());
  return prepared;
}

void PluginTarget::submit(const PreparedRequest& request, std::uint64_t submission,
                          StreamObserver& observer) {
  Impl& p = *impl_;
  // The contract: `request` came from this target's prepare().
  const auto& prepared = static_cast<const Prepared&>(request);
  const std::string request_id = p.config.request_id_prefix + std::to_string(submission);
  const bool chat = p.config.api == workload::Api::kChat;
  dyno_engine_request r{};
  r.struct_size = sizeof r;
  r.request_id = request_id.c_str();
  r.model = p.config.model.c_str();
  r.api = chat ? DYNO_ENGINE_API_CHAT : DYNO_ENGINE_API_COMPLETIONS;
  r.stream = p.config.stream ? 1 : 0;
  if (chat) {
    r.messages_json = prepared.messages_json.data();
    r.messages_json_len = prepared.messages_json.size();
  } else {
    r.prompt = prepared.prompt.data();
    r.prompt_len = prepared.prompt.size();
  }
  r.has = prepared.has;
  r.ignore_eos = prepared.ignore_eos;
  r.max_tokens = prepared.max_tokens;
  r.min_tokens = prepared.min_tokens;
  r.seed = prepared.seed;
  r.temperature = prepared.temperature;
  r.top_p = prepared.top_p;
  r.stop = prepared.stop_pointers.empty() ? nullptr : prepared.stop_pointers.data();
  r.stop_count = prepared.stop_pointers.size();

  const std::uint64_t id = p.next_slot++;
  Slot& s = p.slots[id];
  s.observer = &observer;
  auto* context = new CallbackContext{p.inbox, id};
  dyno_engine_callbacks callbacks{};
  callbacks.struct_size = sizeof callbacks;
  callbacks.user_data = context;
  callbacks.on_event = on_event_callback;
  callbacks.on_end = on_end_callback;

  // on_sent is queued before the plugin can queue anything, so it reaches the observer first.
  s.sent_ns = steady_now_ns();
  Message sent;
  sent.kind = Message::Kind::kSent;
  sent.slot = id;
  sent.receive_ns = s.sent_ns;
  p.inbox->push(std::move(sent));
  p.inbox->expect_end();
  std::array<char, 1024> error{};
  dyno_engine_request_handle* handle =
      p.engine.api->submit(p.engine.engine, &r, &callbacks, error.data(), error.size());
  if (handle == nullptr) {
    p.inbox->no_end();
    delete context;  // no callback will use it
    Message refused;
    refused.kind = Message::Kind::kRefused;
    refused.slot = id;
    refused.receive_ns = steady_now_ns();
    refused.error_message = message_of(error);
    if (refused.error_message.empty()) refused.error_message = "no reason given";
    p.inbox->push(std::move(refused));
    return;
  }
  s.handle = handle;
  Impl* impl = impl_.get();
  if (p.config.first_token_timeout) {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(*p.config.first_token_timeout);
    s.first_token_timer =
        p.loop.call_at(s.sent_ns + ns.count(), [impl, id] { impl->on_timeout(id, true); });
  }
  if (p.config.total_timeout) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*p.config.total_timeout);
    s.total_timer =
        p.loop.call_at(s.sent_ns + ns.count(), [impl, id] { impl->on_timeout(id, false); });
  }
}

void PluginTarget::cancel_all() {
  Impl& p = *impl_;
  std::vector<std::uint64_t> ids;
  for (const auto& [id, s] : p.slots) {
    if (s.observer != nullptr) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());  // in submission order
  const std::int64_t now = steady_now_ns();
  for (const std::uint64_t id : ids) {
    const auto it = p.slots.find(id);
    if (it == p.slots.end() || it->second.observer == nullptr) continue;
    Slot& s = it->second;
    StreamObserver* observer = s.observer;
    s.observer = nullptr;
    if (s.handle != nullptr && !s.cancel_asked) {
      s.cancel_asked = true;
      p.engine.api->cancel(p.engine.engine, s.handle);
    }
    const bool sent = s.sent_delivered;
    const std::int64_t sent_ns = s.sent_ns;
    const std::int64_t t = std::max(now, s.last_ns);
    if (!sent) observer->on_sent(sent_ns);
    observer->on_error(t, ErrorCategory::kCancelled, "cancelled", std::nullopt);
  }
}

PluginStampCounts PluginTarget::stamps() const { return impl_->stamps; }

}  // namespace dyno::transport
