// The simulated engine's HTTP side: accepting connections, reading requests (with the kernel's
// receive time of their bytes), routing, the endpoints (/v1/models, /metrics, /tokenize,
// /apply-template, completions), and writing streamed and whole responses.
#include "sim/server_impl.h"

namespace dyno::sim {

// ---------------------------------------------------------------------------------------------
// Connections

asio::awaitable<void> Server::Impl::accept_loop() {
  while (!stopping) {
    error_code ec;
    tcp::socket socket(io);
    co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping || !acceptor.is_open()) co_return;
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    transport::enable_receive_timestamps(socket.native_handle());  // the truth's arrived_ns
    auto conn = std::make_shared<Conn>(std::move(socket));
    // Forget connections that ended, so the list stays as long as the live set.
    conns.remove_if([](const std::weak_ptr<Conn>& w) { return w.expired(); });
    conns.push_back(conn);
    asio::co_spawn(io, session(std::move(conn)), asio::detached);
  }
}

asio::awaitable<void> Server::Impl::session(std::shared_ptr<Conn> conn) {
  beast::flat_buffer buffer;
  try {
    while (!stopping) {
      error_code ec;
      http::request_parser<http::string_body> parser;
      parser.body_limit(kBodyLimit);
      if (buffer.size() == 0) {
        co_await conn->socket.async_wait(tcp::socket::wait_read,
                                         asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
        conn->arrived_ns = peek_arrival_ns(conn->socket);
      } else {
        conn->arrived_ns = steady_ns();  // already read with the previous request
      }
      co_await http::async_read_header(conn->socket, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      // curl sends "Expect: 100-continue" for larger bodies and waits a second for this.
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await asio::async_write(conn->socket, asio::buffer(kContinue),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) break;
      }
      co_await http::async_read(conn->socket, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      http::request<http::string_body> req = parser.release();
      if (!co_await handle(*conn, req)) break;
    }
  } catch (const std::exception&) {
    // A connection's failure never takes the server down; the socket is closed below.
  }
  error_code ignored;
  conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
  conn->socket.close(ignored);
}

namespace {

http::response<http::string_body> make_response(http::status status, unsigned version,
                                                bool keep_alive, std::string body,
                                                std::string_view content_type) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "dyno-sim");
  res.set(http::field::content_type, content_type);
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace

// Note: no temporaries with destructors inside co_await expressions here and below (GCC 12
// mis-destroys some of them); values are computed into locals first.
asio::awaitable<bool> Server::Impl::handle(Conn& conn, http::request<http::string_body>& req) {
  std::string_view target = req.target();
  if (const auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  const bool keep_alive = req.keep_alive();
  const auto method = req.method();
  const bool completion = target == "/v1/chat/completions" || target == "/v1/completions";
  if (completion && method == http::verb::post) {
    const bool chat = target == "/v1/chat/completions";
    const bool keep = co_await handle_completion(conn, req, chat);
    co_return keep;
  }

  http::status status = http::status::ok;
  std::string body;
  std::string_view content_type = "application/json";
  if (completion) {
    status = http::status::method_not_allowed;
    body = error_body(HttpError{status, "use POST for " + std::string(target)});
  } else if (target == "/health" && method == http::verb::get) {
    body = "{}";
  } else if (target == "/v1/models" && method == http::verb::get) {
    body = models_body();
  } else if (target == "/version" && method == http::verb::get) {
    // vLLM's shape ({"version"}), plus what the engine is (read by dyno's identity probe).
    body = json::serialize(json::object{{"version", std::string(DYNO_SIM_VERSION)},
                                        {"engine", "dyno-sim"},
                                        {"profile", options.profile.name}});
  } else if (target == "/metrics" && method == http::verb::get) {
    body = metrics_body();
    content_type = "text/plain; version=0.0.4";
  } else if (target == "/tokenize" && method == http::verb::post) {
    body = handle_tokenize(req.body(), status);
  } else if (target == "/apply-template" && method == http::verb::post) {
    body = handle_apply_template(req.body(), status);
  } else {
    status = http::status::not_found;
    body = error_body(HttpError{
        status, "no route for " + std::string(req.method_string()) + " " + std::string(target),
        "not_found_error"});
  }
  http::response<http::string_body> res =
      make_response(status, req.version(), keep_alive, std::move(body), content_type);
  error_code ec;
  co_await http::async_write(conn.socket, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec && keep_alive;
}

std::string Server::Impl::models_body() const {
  json::object entry;
  entry["id"] = options.profile.model_name;
  entry["object"] = "model";
  entry["created"] = 0;
  entry["owned_by"] = "dyno-sim";
  entry["max_model_len"] = options.profile.max_model_len;
  json::array data;
  data.push_back(std::move(entry));
  json::object body;
  body["object"] = "list";
  body["data"] = std::move(data);
  return json::serialize(body);
}

namespace {

// Prometheus text exposition (format 0.0.4) of one metric family with one sample per label set.
class Exposition {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels` is the rendered label set without braces ("" for none).
  void sample(std::string_view name, std::string_view labels, double value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    std::array<char, 32> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    out_.append(buf.data(), ec == std::errc{} ? end : buf.data());
    out_ += '\n';
  }
  void metric(std::string_view name, std::string_view type, std::string_view help,
              std::string_view labels, double value) {
    family(name, type, help);
    sample(name, labels, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

// Runs on the server thread (the handler's), so the counters and the model are read in place.
std::string Server::Impl::metrics_body() const {
  const Counters& c = counters;
  const auto running = static_cast<double>(model.running());
  const auto waiting = static_cast<double>(model.waiting());
  const std::int64_t capacity = options.profile.kv_capacity_tokens;
  const double kv =
      capacity > 0
          ? std::min(1.0, static_cast<double>(model.kv_used()) / static_cast<double>(capacity))
          : 0.0;
  const auto n = [](std::int64_t v) { return static_cast<double>(v); };
  const std::string model_label = "model_name=\"" + label_value(options.profile.model_name) + "\"";
  Exposition x;
  // vLLM's dialect (labelled with the served model name).
  x.metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
           model_label, running);
  x.metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           model_label, waiting);
  x.metric("vllm:kv_cache_usage_perc", "gauge",
           "KV-cache usage. 1 means 100 percent usage (reserved tokens / capacity).", model_label,
           kv);
  x.metric("vllm:num_preemptions_total", "counter",
           "Cumulative number of preemption from the engine.", model_label, 0.0);
  x.metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
           model_label, n(c.prompt_tokens));
  x.metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           model_label, n(c.generation_tokens));
  x.metric("vllm:prefix_cache_queries_total", "counter",
           "Prefix cache queries, in terms of number of queried tokens.", model_label,
           n(model.prefix_cache_queries()));
  x.metric("vllm:prefix_cache_hits_total", "counter",
           "Prefix cache hits, in terms of number of cached tokens.", model_label,
           n(model.prefix_cache_hits()));
  x.family("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  x.sample("vllm:request_success_total", model_label + ",finished_reason=\"length\"",
           n(c.finished_length));
  x.sample("vllm:request_success_total", model_label + ",finished_reason=\"stop\"",
           n(c.finished_stop));
  if (options.profile.spec_tokens > 0) {
    x.metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
             model_label, n(c.spec_draft_tokens));
    x.metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
             model_label, n(c.spec_accepted_tokens));
  }
  // llama.cpp's dialect (no labels): the same numbers.
  x.metric("llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.", "",
           n(c.prompt_tokens));
  x.metric("llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
           "", n(c.generation_tokens));
  x.metric("llamacpp:requests_processing", "gauge", "Number of requests processing.", "", running);
  x.metric("llamacpp:requests_deferred", "gauge", "Number of requests deferred.", "", waiting);
  x.metric("llamacpp:kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 = 100% used.", "", kv);
  return x.take();
}

namespace {

// The token id every image counts as in /tokenize answers.
std::int32_t image_token_id() { return token_id("<image>"); }

}  // namespace

std::string Server::Impl::handle_tokenize(const std::string& body, http::status& status) const {
  try {
    const json::object o = parse_object(body);
    if (const json::value* m = o.if_contains("model");
        m && m->is_string() && m->get_string() != options.profile.model_name) {
      throw RequestError{404, "The model `" + std::string(m->get_string()) + "` does not exist."};
    }
    std::string text;
    std::int64_t images = 0;
    bool llama = false;  // llama.cpp's shape: {"content": ..} -> {"tokens": [..]} only
    if (const json::value* messages = o.if_contains("messages")) {
      ParsedChat parsed = parse_messages(*messages);
      add_tools(parsed, o.if_contains("tools"));
      text = apply_chat_template(parsed.messages, optional_bool(o, "add_generation_prompt", true),
                                 options.profile.chat_template_tokens);
      images = parsed.images;
    } else if (const json::value* prompt = o.if_contains("prompt")) {
      if (!prompt->is_string()) bad_request("'prompt' must be a string");
      text = std::string(prompt->get_string());
    } else if (const json::value* content = o.if_contains("content")) {
      if (!content->is_string()) bad_request("'content' must be a string");
      text = std::string(content->get_string());
      llama = true;
    } else {
      bad_request("'prompt', 'messages' or 'content' is required");
    }
    const bool with_pieces = llama && optional_bool(o, "with_pieces", false);
    json::array ids;
    for (const Token& t : tokenize(text)) {
      if (with_pieces) {
        ids.push_back(json::object{{"id", t.id}, {"piece", t.piece}});
      } else {
        ids.push_back(t.id);
      }
    }
    for (std::int64_t i = 0; i < images * options.profile.image_tokens; ++i) {
      ids.push_back(image_token_id());
    }
    json::object out;
    if (!llama) {
      out["count"] = ids.size();
      out["max_model_len"] = options.profile.max_model_len;
    }
    out["tokens"] = std::move(ids);
    return json::serialize(out);
  } catch (const RequestError& e) {
    const HttpError error = http_error(e);
    status = error.status;
    return error_body(error);
  }
}

std::string Server::Impl::handle_apply_template(const std::string& body,
                                                http::status& status) const {
  try {
    const json::object o = parse_object(body);
    const json::value* messages = o.if_contains("messages");
    if (!messages) bad_request("'messages' is required");
    const ParsedChat parsed = parse_messages(*messages);
    json::object out;
    out["prompt"] =
        apply_chat_template(parsed.messages, optional_bool(o, "add_generation_prompt", true),
                            options.profile.chat_template_tokens);
    return json::serialize(out);
  } catch (const RequestError& e) {
    const HttpError error = http_error(e);
    status = error.status;
    return error_body(error);
  }
}

asio::awaitable<bool> Server::Impl::handle_completion(Conn& conn,
                                                      http::request<http::string_body>& req,
                                                      bool chat) {
  const std::int64_t received_ns = steady_ns();
  const std::uint64_t n = ++ordinal;
  const bool keep_alive = req.keep_alive();
  std::string xid;
  if (const auto it = req.find("X-Request-Id"); it != req.end()) xid = std::string(it->value());
  const Faults& faults = options.faults;

  // Plain error responses (injected 500/429 first: they stand in for a failing front end).
  std::optional<HttpError> error;
  Fault fault = Fault::kNone;
  CompletionRequest parsed;
  if (every(faults.http_500_every, n)) {
    fault = Fault::kHttp500;
    error = HttpError{http::status::internal_server_error, "injected fault: internal error",
                      "server_error"};
  } else if (every(faults.http_429_every, n)) {
    fault = Fault::kHttp429;
    error = HttpError{http::status::too_many_requests, "injected fault: rate limited",
                      "rate_limit_error"};
  } else {
    try {
      parsed = parse_completion(req.body(), chat, options.profile);
    } catch (const RequestError& e) {
      error = http_error(e);
    }
  }
  if (error) {
    auto res = make_response(error->status, req.version(), keep_alive, error_body(*error),
                             "application/json");
    if (fault == Fault::kHttp429) res.set(http::field::retry_after, "1");
    log_truth(xid, conn.arrived_ns, received_ns, static_cast<int>(error->status), fault,
              parsed.stream, nullptr, steady_ns());
    error_code ec;
    co_await http::async_write(conn.socket, res, asio::redirect_error(asio::use_awaitable, ec));
    if (!stopping) count_end();
    co_return !ec && keep_alive && !stopping;
  }

  auto st = std::make_shared<Stream>(io.get_executor());
  st->id = next_id++;
  st->req = parsed;
  st->xid = std::move(xid);
  st->received_ns = received_ns;
  st->arrived_ns = conn.arrived_ns;
  st->text_seed = parsed.seed ? *parsed.seed : default_text_seed(options.seed, n);
  if (every(faults.malformed_every, n)) {
    st->fault = Fault::kMalformed;
  } else if (every(faults.cut_every, n)) {
    st->fault = Fault::kCut;
  } else if (every(faults.stall_every, n)) {
    st->fault = Fault::kStall;
  } else if (every(faults.error_every, n)) {
    st->fault = Fault::kError;
  } else if (every(faults.unfinished_every, n)) {
    st->fault = Fault::kUnfinished;
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string object = chat ? "chat.completion.chunk" : "text_completion";
  st->chunk_head = "data: {\"id\":\"" + std::string(chat ? "chatcmpl-" : "cmpl-") +
                   std::to_string(st->id) + "\",\"object\":\"" + object +
                   "\",\"created\":" + std::to_string(created) +
                   ",\"model\":" + json_string(options.profile.model_name) + ",";
  if (chat) {
    st->prefix_content = st->chunk_head + R"("choices":[{"index":0,"delta":{"content":")";
    st->prefix_reasoning =
        st->chunk_head + R"("choices":[{"index":0,"delta":{"reasoning_content":")";
    st->suffix = "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  } else {
    st->prefix_content = st->chunk_head + R"("choices":[{"index":0,"text":")";
    st->suffix = "\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}\n\n";
  }

  ModelRequest mr;
  mr.id = st->id;
  mr.prompt_tokens = parsed.prompt_tokens;
  mr.max_tokens = parsed.max_tokens;
  mr.min_tokens = parsed.min_tokens;
  mr.ignore_eos = parsed.ignore_eos;
  mr.seed = st->text_seed;
  mr.block_hashes = prompt_block_hashes(parsed, options.profile);
  streams.emplace(st->id, st);
  if (st->fault != Fault::kNone && faults.after_tokens == 0) trigger_fault(*st);
  if (!st->fault_triggered && !st->finished) {
    model.submit(mr, now_s());
    wake_engine();
  } else {
    streams.erase(st->id);
  }

  bool keep = false;
  if (parsed.stream) {
    keep = co_await stream_response(conn, *st, keep_alive);
  } else {
    const unsigned version = req.version();
    keep = co_await whole_response(conn, *st, version, keep_alive);
  }
  // Whatever happened (client gone, fault, stop), the sequence leaves the model.
  if (streams.erase(st->id) > 0) model.cancel(st->id);
  if (stopping) co_return false;
  log_stream(*st, steady_ns());  // no-op when logged at its last write
  count_end();
  if (st->fault_triggered) {
    // A stall ends (and is logged) when the sending stops; the connection then stays open,
    // silent, until the client gives up. A cut closes it at once.
    if (st->fault == Fault::kStall) co_await wait_for_close(conn);
    error_code ignored;
    conn.socket.close(ignored);
    co_return false;
  }
  co_return keep && !stopping;
}

// The SSE writer: sends whatever the engine rendered, batching everything pending into one
// write. Returns whether the connection can serve another request.
asio::awaitable<bool> Server::Impl::stream_response(Conn& conn, Stream& stream, bool keep_alive) {
  Stream* st = &stream;
  error_code ec;
  std::string head =
      "HTTP/1.1 200 OK\r\nServer: dyno-sim\r\nContent-Type: text/event-stream\r\n"
      "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  co_await asio::async_write(conn.socket, asio::buffer(head),
                             asio::redirect_error(asio::use_awaitable, ec));
  std::string out;
  while (!ec && !stopping) {
    if (st->pending.empty()) {
      if (st->tail_rendered || st->fault_triggered) break;
      st->signal.expires_at(Clock::time_point::max());
      error_code wait_ec;
      co_await st->signal.async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
      continue;
    }
    out.clear();
    out.swap(st->pending);
    const std::int64_t t = steady_ns();
    for (const std::int32_t tokens : st->pending_event_tokens) {
      st->event_times_ns.push_back(t);
      st->event_tokens.push_back(tokens);
    }
    st->pending_event_tokens.clear();
    const bool last = st->tail_rendered && !st->fault_triggered;
    if (last) log_stream(*st, t);
    const Sizes size_line = chunk_size_line(out.size());
    const std::array<asio::const_buffer, 3> buffers{
        asio::buffer(size_line.text.data(), size_line.size), asio::buffer(out),
        asio::buffer(last ? std::string_view("\r\n0\r\n\r\n") : std::string_view("\r\n"))};
    co_await asio::async_write(conn.socket, buffers, asio::redirect_error(asio::use_awaitable, ec));
    if (st->paused && st->pending.size() < kLowWater) {
      st->paused = false;
      model.set_paused(st->id, false);
      wake_engine();
    }
  }
  if (ec || stopping) co_return false;
  co_return !st->fault_triggered && keep_alive;
}

asio::awaitable<bool> Server::Impl::whole_response(Conn& conn, Stream& stream, unsigned version,
                                                   bool keep_alive) {
  Stream* st = &stream;
  while (!st->finished && !st->fault_triggered && !stopping) {
    st->signal.expires_at(Clock::time_point::max());
    error_code wait_ec;
    co_await st->signal.async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
  }
  if (stopping) co_return false;
  if (st->fault_triggered) co_return false;
  std::string body;
  if (st->fault == Fault::kMalformed && st->fault_done) {
    body = "{not json";
  } else if (st->fault == Fault::kError && st->fault_done) {
    body = injected_error_json();
  } else {
    const Stream& s = *st;
    json::object usage;
    usage["prompt_tokens"] = s.req.prompt_tokens;
    usage["completion_tokens"] = s.generated;
    usage["total_tokens"] = s.req.prompt_tokens + s.generated;
    if (options.profile.prefix_cache_blocks > 0) {
      json::object prompt_details;
      prompt_details["cached_tokens"] = s.cached_tokens;
      usage["prompt_tokens_details"] = std::move(prompt_details);
    }
    if (options.profile.reasoning_fraction > 0.0) {
      json::object details;
      details["reasoning_tokens"] = s.reasoning_tokens;
      usage["completion_tokens_details"] = std::move(details);
    }
    json::object choice;
    choice["index"] = 0;
    if (s.req.chat) {
      json::object message;
      message["role"] = "assistant";
      message["content"] = s.content;
      if (options.profile.reasoning_fraction > 0.0) message["reasoning_content"] = s.reasoning;
      choice["message"] = std::move(message);
    } else {
      choice["text"] = s.content;
    }
    choice["logprobs"] = nullptr;
    const bool unfinished = s.fault == Fault::kUnfinished && s.fault_done;
    choice["finish_reason"] =
        unfinished ? json::value(nullptr) : json::value(finish_name(s.finish));
    json::object o;
    o["id"] = (s.req.chat ? "chatcmpl-" : "cmpl-") + std::to_string(s.id);
    o["object"] = s.req.chat ? "chat.completion" : "text_completion";
    o["created"] = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    o["model"] = options.profile.model_name;
    json::array choices;
    choices.push_back(std::move(choice));
    o["choices"] = std::move(choices);
    o["usage"] = std::move(usage);
    body = json::serialize(o);
    // llama.cpp puts `timings` at the top level of the body, after `usage`.
    st->timings = timings_json(s);
    body.pop_back();
    body += ",\"timings\":" + st->timings + "}";
  }
  auto res =
      make_response(http::status::ok, version, keep_alive, std::move(body), "application/json");
  const std::int64_t t = steady_ns();
  st->event_times_ns.assign(st->event_tokens.size(), t);
  log_stream(*st, t);
  error_code ec;
  co_await http::async_write(conn.socket, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec && keep_alive;
}

// Reads and discards until the peer closes (or the server stops): a stalled response.
asio::awaitable<void> Server::Impl::wait_for_close(Conn& conn) {
  std::array<char, 4096> sink{};
  error_code ec;
  while (!ec && !stopping) {
    co_await conn.socket.async_read_some(asio::buffer(sink),
                                         asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace dyno::sim
