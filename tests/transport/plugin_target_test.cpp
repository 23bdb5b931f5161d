// PluginTarget and PluginEngine: the simulated engine's plugin through the load runner, a tiny C
// plugin that answers synchronously, and every way loading a plugin can fail.
#include "transport/plugin_target.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "load/runner.h"
#include "sim/tokenizer.h"
#include "temp_dir.h"
#include "transport/event_loop.h"

namespace {

using dyno::transport::ErrorCategory;
using dyno::transport::EventLoop;
using dyno::transport::PluginEngine;
using dyno::transport::PluginError;
using dyno::transport::PluginTarget;
using dyno::transport::PluginTargetConfig;
using dyno::workload::Request;

constexpr const char* kText = "the quick brown fox jumps over the lazy dog";

std::vector<Request> chat_requests(int n, std::int64_t max_tokens,
                                   const std::string& text = kText) {
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    Request r;
    r.id = "r" + std::to_string(i);
    r.messages = {{"user", text + " " + std::to_string(i), {}}};
    r.sampling.max_tokens = max_tokens;
    r.sampling.ignore_eos = true;
    r.sampling.temperature = 0.0;
    out.push_back(r);
  }
  return out;
}

PluginTargetConfig config_for(const std::string& model) {
  PluginTargetConfig c;
  c.model = model;
  return c;
}

dyno::load::LoadResult run(EventLoop& loop, PluginTarget& target, const std::vector<Request>& rs,
                           std::uint32_t concurrency, std::uint64_t count) {
  dyno::load::LoadConfig lc;
  lc.concurrency = concurrency;
  lc.requests = count;
  lc.keep_output_text = true;
  return dyno::load::run_load(loop, target, rs, lc, {});
}

/// The message of the PluginError `make` throws ("" when it throws none).
std::string load_error(const std::function<void()>& make) {
  try {
    make();
  } catch (const PluginError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// test_plugin_live_handles() of the C test plugin: handles submitted and not yet released.
int live_handles() {
  static void* lib = dlopen(TEST_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  static auto* fn = reinterpret_cast<int (*)()>(dlsym(lib, "test_plugin_live_handles"));
  return fn != nullptr ? fn() : -1;
}

/// Records one request's observer calls (for tests that drive the target directly).
struct Recorder final : dyno::transport::StreamObserver {
  std::int64_t sent_ns = 0;
  std::vector<std::int64_t> event_ns;
  std::string text;
  std::optional<ErrorCategory> error;
  std::string message;
  bool done = false;
  std::function<void()> on_event_hook;
  std::function<void()> on_end_hook;

  void on_sent(std::int64_t t) override { sent_ns = t; }
  void on_first_byte(std::int64_t, int) override { ADD_FAILURE() << "no first byte in-process"; }
  void on_token_event(std::int64_t t, std::string_view content, std::string_view) override {
    event_ns.push_back(t);
    text += content;
    if (on_event_hook) on_event_hook();
  }
  void on_usage(const dyno::transport::Usage&) override {}
  void on_done(std::int64_t, const dyno::transport::DoneInfo&) override {
    done = true;
    if (on_end_hook) on_end_hook();
  }
  void on_error(std::int64_t, ErrorCategory category, std::string_view m,
                std::optional<int>) override {
    error = category;
    message = std::string(m);
    if (on_end_hook) on_end_hook();
  }
};

/// Runs the loop until `stop` is called or 60 s passed (the guard timer keeps it busy while the
/// engine's threads work).
void run_until_stopped(EventLoop& loop) {
  const std::uint64_t guard =
      loop.call_at(dyno::transport::steady_now_ns() + 60'000'000'000, [&loop] {
        ADD_FAILURE() << "timed out";
        loop.stop();
      });
  loop.run();
  loop.cancel_timer(guard);
}

}  // namespace

TEST(PluginEngine, DescribesTheSimulatedEngine) {
  PluginEngine engine(SIM_PLUGIN_PATH, "profile=small-gpu,seed=7");
  const auto& id = engine.identity();
  EXPECT_EQ(id.engine_name, "dyno-sim");
  ASSERT_TRUE(id.engine_version.has_value());
  EXPECT_FALSE(id.engine_version->empty());
  EXPECT_EQ(id.model_id, "dyno-sim");
  EXPECT_FALSE(id.model_fingerprint.has_value());
  ASSERT_TRUE(id.args_json.has_value());
  EXPECT_TRUE(contains(*id.args_json, "\"small-gpu\"")) << *id.args_json;
  EXPECT_TRUE(contains(*id.args_json, "\"seed\":7")) << *id.args_json;
  PluginEngine renamed(SIM_PLUGIN_PATH, "model=other-name");
  EXPECT_EQ(renamed.identity().model_id, "other-name");
}

TEST(PluginEngine, LoadErrorsSayWhatIsWrong) {
  EXPECT_TRUE(
      contains(load_error([] { PluginEngine("/nonexistent/libx.so", ""); }), "no such file"));

  const auto dir = dyno::testing::make_temp_dir("dyno-plugin-test");
  const auto text_file = (dir / "libtext.so").string();
  std::ofstream(text_file) << "not an ELF file\n";
  const std::string not_elf = load_error([&] { PluginEngine(text_file, ""); });
  EXPECT_TRUE(contains(not_elf, "cannot load")) << not_elf;
  std::filesystem::remove_all(dir);

  const std::string no_entry = load_error([] { PluginEngine(TEST_PLUGIN_NO_ENTRY_PATH, ""); });
  EXPECT_TRUE(contains(no_entry, "is not a dyno engine plugin")) << no_entry;
  EXPECT_TRUE(contains(no_entry, "dyno_engine_plugin_v1")) << no_entry;

  const std::string abi = load_error([] { PluginEngine(TEST_PLUGIN_ABI99_PATH, ""); });
  EXPECT_TRUE(contains(abi, "built for engine plugin ABI version 99")) << abi;
  EXPECT_TRUE(contains(abi, "this dyno loads ABI version 1")) << abi;

  const std::string future = load_error([] { PluginEngine(TEST_PLUGIN_V2_PATH, ""); });
  EXPECT_TRUE(contains(future, "ABI version 2 (it exports dyno_engine_plugin_v2)")) << future;

  const std::string create = load_error([] { PluginEngine(TEST_PLUGIN_PATH, "fail=1"); });
  EXPECT_TRUE(contains(create, "could not be created: fail=1 was asked for")) << create;

  const std::string profile = load_error([] { PluginEngine(SIM_PLUGIN_PATH, "profile=nope"); });
  EXPECT_TRUE(contains(profile, "unknown profile \"nope\"")) << profile;

  const std::string key = load_error([] { PluginEngine(SIM_PLUGIN_PATH, "colour=red"); });
  EXPECT_TRUE(contains(key, "unknown key 'colour'")) << key;

  EXPECT_EQ(load_error([] { PluginEngine(TEST_PLUGIN_PATH, ""); }), "");
}

TEST(PluginTarget, SimPluginThroughTheLoadRunner) {
  PluginEngine engine(SIM_PLUGIN_PATH, "profile=small-gpu");
  EventLoop loop;
  PluginTarget target(loop, engine, config_for("dyno-sim"));
  const std::vector<Request> requests = chat_requests(8, 24);
  const auto result = run(loop, target, requests, 4, 16);
  ASSERT_EQ(result.traces.size(), 16u);
  for (const auto& t : result.traces) {
    ASSERT_TRUE(t.ok()) << t.error_category << ": " << t.error_message;
    const Request& r = requests[t.index % requests.size()];
    const auto prompt = dyno::sim::apply_chat_template({{"user", r.messages[0].content}});
    EXPECT_EQ(t.input_tokens, static_cast<std::int64_t>(dyno::sim::count_tokens(prompt)));
    EXPECT_EQ(t.output_tokens, 24);
    EXPECT_EQ(t.token_count_source, dyno::metrics::TokenCountSource::kUsage);
    EXPECT_EQ(t.finish_reason, "length");
    EXPECT_FALSE(t.first_byte_ns.has_value());
    ASSERT_EQ(t.event_times_ns.size(), 24u);  // one token per event without speculation
    EXPECT_TRUE(std::is_sorted(t.event_times_ns.begin(), t.event_times_ns.end()));
    EXPECT_LE(*t.sent_ns, *t.first_token_ns);
    EXPECT_LE(*t.last_token_ns, *t.done_ns);
    // The text is the sim's output vocabulary: it tokenizes back into exactly 24 pieces.
    EXPECT_EQ(dyno::sim::count_tokens(t.output_text), 24u) << t.output_text;
  }
  const auto stamps = target.stamps();
  EXPECT_EQ(stamps.engine, 16u * 24u + 16u);  // every event and every end, on the engine's clock
  EXPECT_EQ(stamps.receive, 0u);
  EXPECT_EQ(stamps.rejected, 0u);
}

TEST(PluginTarget, SeveralTokensPerEventWithSpeculativeDecoding) {
  PluginEngine engine(SIM_PLUGIN_PATH, "profile=spec,seed=3");
  EventLoop loop;
  PluginTarget target(loop, engine, config_for("dyno-sim"));
  const auto result = run(loop, target, chat_requests(4, 64), 4, 4);
  std::int64_t tokens = 0;
  std::size_t events = 0;
  for (const auto& t : result.traces) {
    ASSERT_TRUE(t.ok()) << t.error_message;
    EXPECT_EQ(t.output_tokens, 64);
    EXPECT_EQ(dyno::sim::count_tokens(t.output_text), 64u);
    tokens += *t.output_tokens;
    events += t.event_times_ns.size();
  }
  EXPECT_LT(events, static_cast<std::size_t>(tokens));  // accepted drafts share an event
}

TEST(PluginTarget, NotStreamedCompletionIsOneEventAtTheEnd) {
  PluginEngine engine(SIM_PLUGIN_PATH, "profile=firehose");
  EventLoop loop;
  PluginTargetConfig c = config_for("dyno-sim");
  c.api = dyno::workload::Api::kCompletions;
  c.stream = false;
  PluginTarget target(loop, engine, c);
  Request r;
  r.id = "p";
  r.prompt = kText;
  r.sampling.max_tokens = 50;
  r.sampling.ignore_eos = true;
  const auto result = run(loop, target, {r}, 2, 4);
  for (const auto& t : result.traces) {
    ASSERT_TRUE(t.ok()) << t.error_message;
    EXPECT_EQ(t.output_tokens, 50);
    EXPECT_EQ(t.input_tokens, static_cast<std::int64_t>(dyno::sim::count_tokens(kText)));
    ASSERT_EQ(t.event_times_ns.size(), 1u);
    EXPECT_EQ(t.first_token_ns, t.done_ns);
    EXPECT_EQ(dyno::sim::count_tokens(t.output_text), 50u);
  }
  // A chat-only request cannot go to the completions API.
  EXPECT_THROW(target.prepare(chat_requests(1, 5)[0]), std::invalid_argument);
}

TEST(PluginTarget, SynchronousPluginAndTheClockOfEachTime) {
  for (const std::string stamps : {"engine", "none", "bogus"}) {
    SCOPED_TRACE(stamps);
    PluginEngine engine(TEST_PLUGIN_PATH, "tokens=4,stamps=" + stamps);
    {
      EventLoop loop;
      PluginTarget target(loop, engine, config_for("test-model"));
      const auto result = run(loop, target, chat_requests(3, 4), 2, 6);
      for (const auto& t : result.traces) {
        ASSERT_TRUE(t.ok()) << t.error_message;
        EXPECT_EQ(t.output_text, " t0 t1 t2 t3");
        EXPECT_EQ(t.output_tokens, 4);
        ASSERT_EQ(t.event_times_ns.size(), 4u);
        EXPECT_LE(*t.sent_ns, t.event_times_ns.front());
        EXPECT_TRUE(std::is_sorted(t.event_times_ns.begin(), t.event_times_ns.end()));
        EXPECT_LE(t.event_times_ns.back(), *t.done_ns);
      }
      const auto counts = target.stamps();
      const std::uint64_t all = 6u * (4u + 1u);
      EXPECT_EQ(counts.engine, stamps == "engine" ? all : 0u);
      EXPECT_EQ(counts.receive, stamps == "none" ? all : 0u);
      EXPECT_EQ(counts.rejected, stamps == "bogus" ? all : 0u);
    }
    EXPECT_EQ(live_handles(), 0);  // every handle was released
  }
}

TEST(PluginTarget, CompletionTokensFromTheEventsWhenTheEngineGivesNoCount) {
  PluginEngine engine(TEST_PLUGIN_PATH, "tokens=5,count=0");
  EventLoop loop;
  PluginTarget target(loop, engine, config_for("test-model"));
  const auto result = run(loop, target, chat_requests(1, 5), 1, 2);
  for (const auto& t : result.traces) {
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t.output_tokens, 5);
    EXPECT_EQ(t.token_count_source, dyno::metrics::TokenCountSource::kUsage);
  }
}

TEST(PluginTarget, EngineFailuresBecomeErrorCategories) {
  struct Case {
    std::string path;
    std::string config;
    std::string model;
    std::string category;
    std::string message;
  };
  const std::vector<Case> cases = {
      {TEST_PLUGIN_PATH, "end=rejected", "test-model", "engine_rejected", "test plugin says no"},
      {TEST_PLUGIN_PATH, "end=failed", "test-model", "engine_failed", "test plugin says no"},
      {TEST_PLUGIN_PATH, "end=timeout", "test-model", "timeout", "engine timeout"},
      {TEST_PLUGIN_PATH, "end=cancelled", "test-model", "engine_failed", "on its own"},
      {TEST_PLUGIN_PATH, "refuse=1", "test-model", "engine_rejected", "refused by config"},
      {SIM_PLUGIN_PATH, "", "no-such-model", "engine_rejected", "does not exist"},
      {SIM_PLUGIN_PATH, "", "dyno-sim", "engine_rejected", "maximum context length"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config + " " + c.model);
    PluginEngine engine(c.path, c.config);
    EventLoop loop;
    PluginTarget target(loop, engine, config_for(c.model));
    // The last case asks for more than the sim's max_model_len (32768).
    const auto result = run(
        loop, target, chat_requests(1, c.message == "maximum context length" ? 40000 : 3), 1, 2);
    for (const auto& t : result.traces) {
      EXPECT_EQ(t.status, dyno::metrics::RequestStatus::kError);
      EXPECT_EQ(t.error_category, c.category);
      EXPECT_TRUE(contains(t.error_message, c.message)) << t.error_message;
      EXPECT_TRUE(t.sent_ns.has_value());
    }
  }
  EXPECT_EQ(live_handles(), 0);
}

TEST(PluginTarget, CancelMidStreamEndsTheRequestsAndTheEngineGoesOn) {
  PluginEngine engine(SIM_PLUGIN_PATH, "profile=cpu");
  EventLoop loop;
  auto target = std::make_unique<PluginTarget>(loop, engine, config_for("dyno-sim"));
  const auto prepared = target->prepare(chat_requests(1, 5000)[0]);
  Recorder a;
  Recorder b;
  int ended = 0;
  bool cancel_posted = false;
  // Cancel once both streams are under way (from the loop, never inside an observer call).
  const auto maybe_cancel = [&] {
    if (!cancel_posted && a.event_ns.size() >= 2 && b.event_ns.size() >= 2) {
      cancel_posted = true;
      loop.post([&] { target->cancel_all(); });
    }
  };
  a.on_event_hook = maybe_cancel;
  b.on_event_hook = maybe_cancel;
  for (Recorder* r : {&a, &b}) {
    r->on_end_hook = [&] {
      if (++ended == 2) loop.stop();
    };
  }
  loop.post([&] {
    target->submit(*prepared, 0, a);
    target->submit(*prepared, 1, b);
  });
  run_until_stopped(loop);
  for (const Recorder* r : {&a, &b}) {
    EXPECT_EQ(r->error, ErrorCategory::kCancelled);
    EXPECT_FALSE(r->done);
    EXPECT_GE(r->event_ns.size(), 2u);
    EXPECT_LT(r->event_ns.size(), 5000u);
    EXPECT_GT(r->sent_ns, 0);
  }
  target.reset();  // waits for the engine's ends and releases the handles

  // The engine serves new requests afterwards.
  PluginTarget again(loop, engine, config_for("dyno-sim"));
  const auto result = run(loop, again, chat_requests(1, 3), 1, 1);
  ASSERT_EQ(result.traces.size(), 1u);
  EXPECT_TRUE(result.traces[0].ok()) << result.traces[0].error_message;
}

TEST(PluginTarget, CancelOfASynchronousPluginAndDestroyWithoutCancel) {
  PluginEngine engine(TEST_PLUGIN_PATH, "tokens=2,hang=1");
  EventLoop loop;
  Recorder a;
  {
    PluginTarget target(loop, engine, config_for("test-model"));
    const auto prepared = target.prepare(chat_requests(1, 2)[0]);
    a.on_event_hook = [&] {
      if (a.event_ns.size() == 2) loop.post([&] { target.cancel_all(); });
    };
    a.on_end_hook = [&] { loop.stop(); };
    loop.post([&] { target.submit(*prepared, 0, a); });
    run_until_stopped(loop);
    EXPECT_EQ(a.error, ErrorCategory::kCancelled);
    EXPECT_EQ(a.text, " t0 t1");
  }
  EXPECT_EQ(live_handles(), 0);

  // A target destroyed with a request still running ends it in the engine, calls no observer,
  // and releases the handle.
  Recorder b;
  {
    PluginTarget target(loop, engine, config_for("test-model"));
    const auto prepared = target.prepare(chat_requests(1, 2)[0]);
    b.on_event_hook = [&] {
      if (b.event_ns.size() == 2) loop.stop();
    };
    loop.post([&] { target.submit(*prepared, 0, b); });
    run_until_stopped(loop);
    EXPECT_EQ(live_handles(), 1);
  }
  EXPECT_FALSE(b.error.has_value());
  EXPECT_FALSE(b.done);
  EXPECT_EQ(live_handles(), 0);
}

TEST(PluginTarget, FirstTokenTimeoutCancelsTheRequestInTheEngine) {
  // The cpu profile prefills 300 tokens/s: a long prompt keeps the first token away for seconds.
  PluginEngine engine(SIM_PLUGIN_PATH, "profile=cpu");
  EventLoop loop;
  PluginTargetConfig c = config_for("dyno-sim");
  c.first_token_timeout = std::chrono::milliseconds(100);
  PluginTarget target(loop, engine, c);
  std::string prompt;
  for (int i = 0; i < 200; ++i) prompt += " word";
  const auto result = run(loop, target, chat_requests(1, 8, prompt), 1, 1);
  ASSERT_EQ(result.traces.size(), 1u);
  const auto& t = result.traces[0];
  EXPECT_EQ(t.error_category, "timeout");
  EXPECT_TRUE(contains(t.error_message, "first-token timeout of 100 ms")) << t.error_message;
  EXPECT_TRUE(t.event_times_ns.empty());
  EXPECT_GE(*t.done_ns - *t.sent_ns, 100'000'000);
}
