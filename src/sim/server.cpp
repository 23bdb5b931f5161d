// The simulated engine's server: its lifecycle, the engine loop that turns model events into
// rendered SSE bytes for each stream, the truth log, and the public API. The HTTP side
// (connections, routing, endpoints) is in server_http.cpp; the shared state in server_impl.h.
#include "digest/digest.h"
#include "sim/server_impl.h"

namespace dyno::sim {

// ---------------------------------------------------------------------------------------------
// Lifecycle

std::uint16_t Server::Impl::start() {
  if (options.truth_path) {
    truth_file.open(*options.truth_path, std::ios::binary | std::ios::trunc);
    if (!truth_file) {
      throw std::runtime_error("cannot open truth log " + options.truth_path->string());
    }
  }
  error_code ec;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(options.host, std::to_string(options.port), ec);
  if (ec || results.empty()) {
    throw std::runtime_error("sim: cannot resolve " + options.host + ": " + ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("sim: cannot listen on " + options.host + ":" +
                             std::to_string(options.port) + ": " + ec.message());
  }
  bound_port = acceptor.local_endpoint().port();
  asio::co_spawn(io, accept_loop(), asio::detached);
  asio::co_spawn(io, engine_loop(), asio::detached);
  thread = std::thread([this] {
    io.run();
    timespec cpu{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    thread_cpu_s = static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
  });
  started = true;
  return bound_port;
}

// Runs on the server thread: stop accepting, drop every connection, end the loop. Requests in
// flight get no truth line (they never ended).
void Server::Impl::initiate_stop() {
  if (stopping) return;
  stopping = true;
  error_code ec;
  acceptor.close(ec);
  for (auto& weak : conns) {
    if (auto conn = weak.lock()) conn->socket.close(ec);
  }
  engine_wake.cancel();
  step_timer.cancel();
  for (auto& [id, st] : streams) st->signal.cancel();
  io.stop();
}

void Server::Impl::join_and_flush() {
  std::lock_guard lock(join_mutex);
  if (joined || !thread.joinable()) return;
  thread.join();
  joined = true;
  if (truth_file.is_open()) {
    truth_file << truth_buf;
    truth_buf.clear();
    truth_file.flush();
    truth_file.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Engine

asio::awaitable<void> Server::Impl::engine_loop() {
  error_code ec;
  const bool zero_delay = options.profile.zero_delay;
  std::size_t burst_steps = 0;
  std::size_t burst_events = 0;
  while (!stopping) {
    if (!zero_delay && model.ready_s() > now_s()) {
      // The engine's finish work (profile.finish_s): requests that arrive meanwhile join the
      // next step.
      step_timer.expires_at(epoch + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(model.ready_s())));
      co_await step_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    const std::optional<StepPlan> plan = model.start_step(now_s());
    if (!plan) {
      engine_wake.expires_at(Clock::time_point::max());
      co_await engine_wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (zero_delay) {
      // Let the sockets be serviced between steps, in bounded bursts: one yield per step would
      // cost one write syscall per step when a single connection streams.
      const std::size_t event_cap =
          std::max(kZeroDelayBurstEvents, kZeroDelayBurstSteps * model.running());
      if (++burst_steps >= kZeroDelayBurstSteps || burst_events >= event_cap) {
        burst_steps = 0;
        burst_events = 0;
        co_await asio::post(io, asio::use_awaitable);
      }
    } else {
      step_timer.expires_at(epoch + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(plan->end_s)));
      co_await step_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (stopping) break;
    const std::vector<Event>& events = model.complete_step();
    burst_events += events.size();
    for (const Event& e : events) dispatch(e);
  }
}

void Server::Impl::dispatch(const Event& e) {
  const auto it = streams.find(e.request_id);
  if (it == streams.end()) return;
  Stream& st = *it->second;
  // Metrics: every event of a live sequence reaches its client (cancelled sequences leave the
  // model at once). A decode event of a speculative profile proposed spec_tokens drafts and
  // accepted all its tokens but the first (the verified/bonus one).
  counters.generation_tokens += e.tokens;
  if (e.first) {
    counters.prompt_tokens += st.req.prompt_tokens;
  } else if (options.profile.spec_tokens > 0) {
    counters.spec_draft_tokens += options.profile.spec_tokens;
    counters.spec_accepted_tokens += e.tokens - 1;
  }
  if (e.finish == FinishReason::kStop) ++counters.finished_stop;
  if (e.finish == FinishReason::kLength) ++counters.finished_length;
  st.generated += e.tokens;
  if (e.kind == TokenKind::kReasoning) st.reasoning_tokens += e.tokens;
  if (e.first) {
    st.prefill_start_s = e.prefill_start_s;
    st.cached_tokens = e.cached_tokens;
    st.first_token_s = e.time_s;
  } else if (options.profile.spec_tokens > 0) {
    st.draft_tokens += options.profile.spec_tokens;
    st.draft_accepted += e.tokens - 1;
  }
  st.last_token_s = e.time_s;
  const auto first = static_cast<std::uint64_t>(e.first_index);
  const auto count = static_cast<std::uint64_t>(e.tokens);
  if (st.req.stream) {
    if (!st.role_sent && st.req.chat) {
      st.pending += st.chunk_head;
      st.pending +=
          R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
          R"("finish_reason":null}]})"
          "\n\n";
    }
    st.role_sent = true;
    st.pending +=
        e.kind == TokenKind::kReasoning && st.req.chat ? st.prefix_reasoning : st.prefix_content;
    append_output_pieces(st.pending, st.text_seed, first, count);
    st.pending += st.suffix;
    st.pending_event_tokens.push_back(e.tokens);
  } else {
    append_output_pieces(e.kind == TokenKind::kReasoning && st.req.chat ? st.reasoning : st.content,
                         st.text_seed, first, count);
    st.event_tokens.push_back(e.tokens);
  }
  ++st.events_rendered;
  bool wake = st.req.stream;
  // A response that ends at the fault point gets no cut/stall (nothing left to cut).
  if (st.fault != Fault::kNone && !st.fault_done &&
      st.events_rendered >= options.faults.after_tokens &&
      (st.fault == Fault::kMalformed || e.finish == FinishReason::kNone)) {
    trigger_fault(st);
    wake = true;
  }
  if (e.finish != FinishReason::kNone) {
    st.finished = true;
    st.finish = e.finish;
    if (st.req.stream) render_tail(st);
    wake = true;
  }
  if (!st.finished && !st.fault_triggered && st.req.stream && !st.paused &&
      st.pending.size() > kHighWater) {
    st.paused = true;
    model.set_paused(st.id, true);
  }
  if (st.finished || st.fault_triggered) streams.erase(it);  // `st` stays alive in its session
  if (wake) st.signal.cancel();
}

Faults::ErrorForm parse_error_form(std::string_view name) {
  if (name == "data") return Faults::ErrorForm::kData;
  if (name == "field") return Faults::ErrorForm::kField;
  if (name == "event") return Faults::ErrorForm::kEvent;
  if (name == "bare") return Faults::ErrorForm::kBare;
  throw std::invalid_argument("unknown error form '" + std::string(name) +
                              "' (data, field, event or bare)");
}

std::string injected_error_json() {
  return R"({"error":{"message":"injected fault: out of KV cache","type":"server_error","code":500}})";
}

// Malformed: a bad `data:` line, then normal streaming. Cut/stall: the sequence leaves the
// model; the writer sends what is pending, then closes or stalls. Error/unfinished: the
// sequence leaves the model and its answer ends now, cleanly (the writer ends the body).
void Server::Impl::trigger_fault(Stream& st) {
  st.fault_done = true;
  if (st.fault == Fault::kMalformed) {
    // Non-streamed responses get a malformed body instead (see whole_response).
    if (st.req.stream) st.pending += "data: {not json\n\n";
    return;
  }
  if (st.fault == Fault::kError || st.fault == Fault::kUnfinished) {
    if (st.req.stream) render_early_end(st);
    st.finished = true;  // whole_response writes the error body, or the answer without a reason
    st.tail_rendered = st.req.stream;
    model.cancel(st.id);
    wake_engine();
    return;
  }
  st.fault_triggered = true;
  if (!st.finished) model.cancel(st.id);
  wake_engine();
}

void Server::Impl::render_early_end(Stream& st) {
  std::string& out = st.pending;
  if (st.fault == Fault::kError) {
    const std::string message =
        R"("message":"injected fault: out of KV cache","type":"server_error")";
    switch (options.faults.error_form) {
      case Faults::ErrorForm::kData:
        out += "data: " + injected_error_json() + "\n\ndata: [DONE]\n\n";
        break;
      case Faults::ErrorForm::kField:  // llama.cpp's server_sent_event(sink, "error", …)
        out += R"(error: {"code":500,)" + message + "}\n\ndata: [DONE]\n\n";
        break;
      case Faults::ErrorForm::kEvent:
        out += "event: error\ndata: {" + message + "}\n\n";
        break;
      case Faults::ErrorForm::kBare:  // Ollama: json.Encoder's line, no SSE field
        out += injected_error_json() + "\n";
        break;
    }
    return;
  }
  // Unfinished: the usage chunk (when asked for), no finish reason, [DONE] unless at EOF.
  if (st.req.include_usage) {
    out += st.chunk_head;
    out += R"("choices":[],"usage":{"prompt_tokens":)";
    out += std::to_string(st.req.prompt_tokens);
    out += R"(,"completion_tokens":)";
    out += std::to_string(st.generated);
    out += R"(,"total_tokens":)";
    out += std::to_string(st.req.prompt_tokens + st.generated);
    out += "}}\n\n";
  }
  if (!options.faults.unfinished_eof) out += "data: [DONE]\n\n";
}

void Server::Impl::render_tail(Stream& st) {
  const std::int64_t prompt = st.req.prompt_tokens;
  std::string& out = st.pending;
  out += st.chunk_head;
  st.timings = timings_json(st);
  // Like llama.cpp, `timings` rides on the last chunk before [DONE]: the usage chunk when
  // there is one, else the finish_reason chunk.
  const std::string timings_tail = ",\"timings\":" + st.timings + "}\n\n";
  if (st.req.chat) {
    out += R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":")";
    out += finish_name(st.finish);
    out += "\"}]";
  } else {
    out += R"("choices":[{"index":0,"text":"","logprobs":null,"finish_reason":")";
    out += finish_name(st.finish);
    out += "\",\"stop_reason\":null}]";
  }
  out += st.req.include_usage ? std::string("}\n\n") : timings_tail;
  if (st.req.include_usage) {
    out += st.chunk_head;
    out += R"("choices":[],"usage":{"prompt_tokens":)";
    out += std::to_string(prompt);
    out += R"(,"completion_tokens":)";
    out += std::to_string(st.generated);
    out += R"(,"total_tokens":)";
    out += std::to_string(prompt + st.generated);
    if (options.profile.prefix_cache_blocks > 0) {
      out += R"(,"prompt_tokens_details":{"cached_tokens":)";
      out += std::to_string(st.cached_tokens);
      out += "}";
    }
    if (options.profile.reasoning_fraction > 0.0) {
      out += R"(,"completion_tokens_details":{"reasoning_tokens":)";
      out += std::to_string(st.reasoning_tokens);
      out += "}";
    }
    out += "}";
    out += timings_tail;
  }
  out += "data: [DONE]\n\n";
  st.tail_rendered = true;
}

// llama.cpp's per-response `timings` (server_slot::get_timings): prompt_ms from the start of
// prompt processing to the first token, predicted_ms from the first token to the last,
// predicted_n all output tokens (the first included), the per-token and per-second figures
// derived from them; draft_n/draft_n_accepted only when speculative decoding is on. cache_n is
// the prompt tokens the prefix cache served, prompt_n the rest (those prefilled). A rate over zero
// time (zero- delay profiles) is null, as llama.cpp's JSON writer renders a non-finite number.
std::string Server::Impl::timings_json(const Stream& st) const {
  const std::int64_t prompt_n = st.req.prompt_tokens - st.cached_tokens;
  const std::int64_t predicted_n = st.generated;
  // Whole microseconds, like llama.cpp's timer (ggml_time_us).
  const auto to_ms = [](double s) { return std::round(s * 1e6) / 1e3; };
  const double prompt_ms = to_ms(st.first_token_s - st.prefill_start_s);
  const double predicted_ms = to_ms(st.last_token_s - st.first_token_s);
  const auto per_token = [](double ms, std::int64_t n) {
    return n > 0 ? ms / static_cast<double>(n) : 0.0;
  };
  const auto per_second = [](double ms, std::int64_t n) -> json::value {
    if (ms <= 0.0) return nullptr;
    return 1e3 / ms * static_cast<double>(n);
  };
  json::object t;
  t["cache_n"] = st.cached_tokens;
  t["prompt_n"] = prompt_n;
  t["prompt_ms"] = prompt_ms;
  t["prompt_per_token_ms"] = per_token(prompt_ms, prompt_n);
  t["prompt_per_second"] = per_second(prompt_ms, prompt_n);
  t["predicted_n"] = predicted_n;
  t["predicted_ms"] = predicted_ms;
  t["predicted_per_token_ms"] = per_token(predicted_ms, predicted_n);
  t["predicted_per_second"] = per_second(predicted_ms, predicted_n);
  if (st.draft_tokens > 0) {
    t["draft_n"] = st.draft_tokens;
    t["draft_n_accepted"] = st.draft_accepted;
  }
  return json_text::compact(t);
}

// A model-clock time as steady-clock ns (the truth log's clock).
std::int64_t Server::Impl::model_ns(double model_s) const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(epoch.time_since_epoch()).count() +
         std::llround(model_s * 1e9);
}
// ---------------------------------------------------------------------------------------------
// Truth log

// A request's truth line is logged when its last bytes are handed to the socket (so a stop that
// follows the client's read of them cannot lose it); it counts as ended (exit_after_requests)
// once that write completed.
void Server::Impl::log_stream(Stream& st, std::int64_t done_ns) {
  if (st.logged) return;
  st.logged = true;
  log_truth(st.xid, st.arrived_ns, st.received_ns, 200, st.fault_done ? st.fault : Fault::kNone,
            st.req.stream, &st, done_ns);
}

void Server::Impl::count_end() {
  ++ended;
  if (options.exit_after_requests && ended >= *options.exit_after_requests) initiate_stop();
}

void Server::Impl::log_truth(const std::string& request_id, std::int64_t arrived_ns,
                             std::int64_t received_ns, int status, Fault fault, bool stream,
                             const Stream* st, std::int64_t done_ns) {
  if (truth_file.is_open()) {
    std::string& out = truth_buf;
    out += R"({"request_id":)";
    out += json_string(request_id);
    out += R"(,"arrived_ns":)";
    out += std::to_string(arrived_ns);
    out += R"(,"received_ns":)";
    out += std::to_string(received_ns);
    out += R"(,"status":)";
    out += std::to_string(status);
    out += R"(,"fault":")";
    out += fault_name(fault);
    out += R"(","stream":)";
    out += stream ? "true" : "false";
    out += R"(,"prompt_tokens":)";
    out += std::to_string(st ? st->req.prompt_tokens : 0);
    if (st) {
      out += R"(,"prompt_sha256":")";
      out += digest::sha256_hex(st->req.prompt_text);
      out += '"';
    }
    out += R"(,"cached_tokens":)";
    out += std::to_string(st ? st->cached_tokens : 0);
    out += R"(,"completion_tokens":)";
    std::int64_t sent = 0;
    if (st) {
      for (const std::int32_t tokens : st->event_tokens) sent += tokens;
    }
    out += std::to_string(sent);
    out += R"(,"event_times_ns":[)";
    if (st) {
      for (std::size_t i = 0; i < st->event_times_ns.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(st->event_times_ns[i]);
      }
    }
    out += R"(],"event_tokens":[)";
    if (st) {
      for (std::size_t i = 0; i < st->event_tokens.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(st->event_tokens[i]);
      }
    }
    out += R"(],"first_token_ns":)";
    out += st && !st->event_times_ns.empty() ? std::to_string(st->event_times_ns.front())
                                             : std::string("null");
    out += R"(,"done_ns":)";
    out += std::to_string(done_ns);
    // The engine's own times behind the response's `timings`, when it carried one.
    const bool timed = st && !st->timings.empty();
    out += R"(,"prefill_start_ns":)";
    out += timed ? std::to_string(model_ns(st->prefill_start_s)) : std::string("null");
    out += R"(,"timings":)";
    out += timed ? st->timings : std::string("null");
    if (st && !st->req.image_sha256.empty()) {
      out += R"(,"image_sha256":[)";
      for (std::size_t i = 0; i < st->req.image_sha256.size(); ++i) {
        if (i) out += ',';
        out += '"';
        out += st->req.image_sha256[i];
        out += '"';
      }
      out += ']';
    }
    out += "}\n";
    if (truth_buf.size() > (1u << 20)) {
      truth_file << truth_buf;
      truth_buf.clear();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Public API

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop(); }

std::uint16_t Server::start() {
  if (impl_->started) throw std::logic_error("sim::Server::start called twice");
  return impl_->start();
}

void Server::stop() {
  if (!impl_->started) return;
  asio::post(impl_->io, [impl = impl_.get()] { impl->initiate_stop(); });
  impl_->join_and_flush();
}

void Server::wait() {
  if (impl_->started) impl_->join_and_flush();
}

std::uint16_t Server::port() const { return impl_->bound_port; }

double Server::cpu_seconds() const {
  if (impl_->joined) return impl_->thread_cpu_s;
  if (!impl_->started) return 0.0;
  // Live: the running server thread's CPU clock.
  clockid_t clock{};
  if (pthread_getcpuclockid(impl_->thread.native_handle(), &clock) != 0) return 0.0;
  timespec cpu{};
  clock_gettime(clock, &cpu);
  return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
}

}  // namespace dyno::sim
