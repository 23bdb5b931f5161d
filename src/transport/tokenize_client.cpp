#include "transport/tokenize_client.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json.hpp>
#include <utility>

namespace dyno::transport {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr std::uint64_t kBodyLimit = 256ull * 1024 * 1024;
constexpr const char* kNoEndpoint =
    "the target has no /tokenize endpoint (tried vLLM, llama.cpp and TGI shapes); exact "
    "lengths need one";

struct Reply {
  unsigned status = 0;
  std::string body;
};

// An I/O failure (connect, TLS, write, read, timeout): may be retried on a fresh connection.
struct IoFailure {
  std::string what;
};

std::string first_bytes(const std::string& body) {
  std::string out = body.substr(0, 200);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::string host_text(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

// The server root: the base path without a trailing "/v1" (e.g. "/v1" -> "", "/x/v1" -> "/x").
std::string root_path(const std::string& base_path) {
  if (base_path.size() >= 3 && base_path.compare(base_path.size() - 3, 3, "/v1") == 0) {
    return base_path.substr(0, base_path.size() - 3);
  }
  return base_path;
}

std::optional<json::value> parse_json(const std::string& body) {
  error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return std::nullopt;
  return v;
}

std::optional<std::int64_t> integer(const json::value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

// vLLM/SGLang/sim: {"count": N, ...}.
std::optional<std::int64_t> vllm_count(const Reply& r) {
  if (r.status != 200) return std::nullopt;
  const auto v = parse_json(r.body);
  if (!v || !v->is_object()) return std::nullopt;
  return integer(v->get_object().if_contains("count"));
}

// llama.cpp: {"tokens": [ids or {id, piece}]}, no "count".
std::optional<std::int64_t> llama_count(const Reply& r) {
  if (r.status != 200) return std::nullopt;
  const auto v = parse_json(r.body);
  if (!v || !v->is_object()) return std::nullopt;
  const json::object& o = v->get_object();
  const json::value* tokens = o.if_contains("tokens");
  if (tokens == nullptr || !tokens->is_array() || o.contains("count")) return std::nullopt;
  return static_cast<std::int64_t>(tokens->get_array().size());
}

// TGI: [{"id","text","start","stop"}, ...].
std::optional<std::int64_t> tgi_count(const Reply& r) {
  if (r.status != 200) return std::nullopt;
  const auto v = parse_json(r.body);
  if (!v || !v->is_array()) return std::nullopt;
  return static_cast<std::int64_t>(v->get_array().size());
}

json::value message_value(const workload::Message& m) {
  json::object o;
  o["role"] = m.role;
  if (m.parts.empty()) {
    o["content"] = m.content;
  } else {
    json::array parts;
    for (const workload::ContentPart& p : m.parts) {
      json::object part;
      if (p.kind == workload::ContentPart::Kind::kText) {
        part["type"] = "text";
        part["text"] = p.text;
      } else {
        part["type"] = "image_url";
        part["image_url"] = json::object{{"url", p.image_url}};
      }
      parts.push_back(std::move(part));
    }
    o["content"] = std::move(parts);
  }
  return o;
}

bool has_images(const std::vector<workload::Message>& messages) {
  for (const workload::Message& m : messages) {
    for (const workload::ContentPart& p : m.parts) {
      if (p.kind == workload::ContentPart::Kind::kImage) return true;
    }
  }
  return false;
}

}  // namespace

std::string messages_json(const std::vector<workload::Message>& messages) {
  json::array a;
  for (const workload::Message& m : messages) a.push_back(message_value(m));
  return json::serialize(a);
}

const char* flavor_name(TokenizeClient::Flavor flavor) {
  switch (flavor) {
    case TokenizeClient::Flavor::kVllm:
      return "vllm";
    case TokenizeClient::Flavor::kLlamaCpp:
      return "llama.cpp";
    case TokenizeClient::Flavor::kTgi:
      return "tgi";
  }
  return "vllm";
}

struct TokenizeClient::Impl {
  Impl(const BaseUrl& u, std::string m, std::optional<std::string> key, TokenizeClientOptions o)
      : url(u), model(std::move(m)), api_key(std::move(key)), options(std::move(o)) {
    root = root_path(url.base_path);
    if (url.tls) {
      tls_context.emplace(ssl::context::tls_client);
      if (options.tls_verify) tls_context->set_default_verify_paths();
      if (options.ca_file) {
        error_code ec;
        tls_context->load_verify_file(*options.ca_file, ec);
        if (ec) {
          throw TokenizeError("cannot load CA file " + *options.ca_file + ": " + ec.message());
        }
      }
    }
  }

  BaseUrl url;
  std::string model;
  std::optional<std::string> api_key;
  TokenizeClientOptions options;
  std::string root;
  asio::io_context io;
  std::optional<ssl::context> tls_context;
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  std::optional<Flavor> flavor;
  std::uint64_t calls = 0;

  bool connected() const { return plain != nullptr || tls != nullptr; }

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  void close() {
    if (!connected()) return;
    error_code ec;
    lowest().socket().close(ec);
    plain.reset();
    tls.reset();
    buffer.clear();
  }

  // Runs the queued operations to completion (the stream's timer bounds them).
  void run() {
    io.restart();
    io.run();
  }

  void connect() {
    error_code ec;
    tcp::resolver resolver(io);
    tcp::resolver::results_type endpoints;
    resolver.async_resolve(url.host, std::to_string(url.port),
                           [&](error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             endpoints = std::move(r);
                           });
    run();
    if (ec) throw IoFailure{"cannot resolve " + url.host + ": " + ec.message()};
    auto stream = std::make_unique<beast::tcp_stream>(io);
    stream->expires_after(options.timeout);
    stream->async_connect(endpoints, [&](error_code e, const tcp::endpoint&) { ec = e; });
    run();
    if (ec) throw IoFailure{"cannot connect to " + url.to_string() + ": " + ec.message()};
    if (!url.tls) {
      plain = std::move(stream);
      return;
    }
    tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(*stream), *tls_context);
    error_code parse_ec;
    asio::ip::make_address(url.host, parse_ec);
    if (parse_ec) {  // SNI only for names, never for IP literals (SSL_set_tlsext_host_name)
      SSL_ctrl(tls->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(url.host.c_str()));
    }
    if (options.tls_verify) {
      tls->set_verify_mode(ssl::verify_peer);
      tls->set_verify_callback(ssl::host_name_verification(url.host));
    } else {
      tls->set_verify_mode(ssl::verify_none);
    }
    beast::get_lowest_layer(*tls).expires_after(options.timeout);
    tls->async_handshake(ssl::stream_base::client, [&](error_code e) { ec = e; });
    run();
    if (ec) {
      tls.reset();
      throw IoFailure{"TLS handshake with " + url.to_string() + " failed: " + ec.message()};
    }
  }

  template <class Stream>
  Reply exchange(Stream& stream, http::request<http::string_body>& req) {
    error_code ec;
    lowest().expires_after(options.timeout);
    http::async_write(stream, req, [&](error_code e, std::size_t) { ec = e; });
    run();
    if (ec) throw IoFailure{"sending to " + url.to_string() + " failed: " + ec.message()};
    http::response_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    http::async_read(stream, buffer, parser, [&](error_code e, std::size_t) { ec = e; });
    run();
    if (ec) throw IoFailure{"reading from " + url.to_string() + " failed: " + ec.message()};
    http::response<http::string_body> res = parser.release();
    if (!res.keep_alive()) close();
    return Reply{res.result_int(), std::move(res.body())};
  }

  Reply post(const std::string& path, const std::string& body) {
    return call(http::verb::post, path, body);
  }

  Reply call(http::verb verb, const std::string& path, const std::string& body) {
    http::request<http::string_body> req{verb, root + path, 11};
    const bool default_port = url.port == (url.tls ? 443 : 80);
    req.set(http::field::host,
            host_text(url.host) + (default_port ? "" : ":" + std::to_string(url.port)));
    req.set(http::field::user_agent, "dyno");
    if (verb == http::verb::post) {
      req.set(http::field::content_type, "application/json");
      req.set(http::field::accept, "application/json");
    }
    if (api_key) req.set(http::field::authorization, "Bearer " + *api_key);
    req.keep_alive(true);
    if (verb == http::verb::post) {
      req.body() = body;
      req.prepare_payload();
    }
    ++calls;
    // A reused keep-alive connection the server closed fails; retry once on a fresh one.
    for (int attempt = 0;; ++attempt) {
      const bool reused = connected();
      try {
        if (!connected()) connect();
        return tls ? exchange(*tls, req) : exchange(*plain, req);
      } catch (const IoFailure& f) {
        close();
        if (!reused || attempt > 0) throw TokenizeError(f.what);
      }
    }
  }

  [[noreturn]] void refused(const std::string& path, const Reply& r) const {
    throw TokenizeError(
        "the target refused POST " + root + path + ": HTTP " + std::to_string(r.status) + " " +
        first_bytes(r.body) +
        (r.status == 401 || r.status == 403 ? " (set DYNO_API_KEY or OPENAI_API_KEY)" : ""));
  }

  std::string vllm_text_body(const std::string& text) const {
    return json::serialize(json::object{{"model", model}, {"prompt", text}});
  }
  static std::string llama_text_body(const std::string& text) {
    return json::serialize(json::object{{"content", text}, {"add_special", true}});
  }
  static std::string tgi_text_body(const std::string& text) {
    return json::serialize(json::object{{"inputs", text}});
  }

  // Tries the shapes in order with `text`; remembers the first that answers; returns the count.
  std::int64_t detect(const std::string& text) {
    std::string tried;
    bool all_missing = true;
    const auto note = [&](const char* name, const Reply& r) {
      if (r.status == 401 || r.status == 403) refused("/tokenize", r);
      if (r.status != 404 && r.status != 405) all_missing = false;
      tried += std::string(tried.empty() ? "" : "; ") + name + ": HTTP " +
               std::to_string(r.status) + " " + first_bytes(r.body);
    };
    Reply r = post("/tokenize", vllm_text_body(text));
    if (const auto n = vllm_count(r)) {
      flavor = Flavor::kVllm;
      return *n;
    }
    if (r.status == 404 && !model.empty() && r.body.find(model) != std::string::npos) {
      throw TokenizeError("the target does not serve model '" + model + "': POST " + root +
                          "/tokenize: HTTP 404 " + first_bytes(r.body) + " (check --model)");
    }
    note("vLLM", r);
    r = post("/tokenize", llama_text_body(text));
    if (const auto n = llama_count(r)) {
      flavor = Flavor::kLlamaCpp;
      return *n;
    }
    note("llama.cpp", r);
    r = post("/tokenize", tgi_text_body(text));
    if (const auto n = tgi_count(r)) {
      flavor = Flavor::kTgi;
      return *n;
    }
    note("TGI", r);
    if (all_missing) throw TokenizeError(kNoEndpoint);
    throw TokenizeError(
        "the target's /tokenize answered none of the vLLM, llama.cpp and TGI "
        "shapes (" +
        tried + "); exact lengths need one");
  }

  std::int64_t count_text(const std::string& text) {
    if (!flavor) return detect(text);
    Reply r;
    std::optional<std::int64_t> n;
    switch (*flavor) {
      case Flavor::kVllm:
        r = post("/tokenize", vllm_text_body(text));
        n = vllm_count(r);
        break;
      case Flavor::kLlamaCpp:
        r = post("/tokenize", llama_text_body(text));
        n = llama_count(r);
        break;
      case Flavor::kTgi:
        r = post("/tokenize", tgi_text_body(text));
        n = tgi_count(r);
        break;
    }
    if (!n) refused("/tokenize", r);
    return *n;
  }

  std::optional<std::int64_t> count_chat(const std::vector<workload::Message>& messages) {
    if (!flavor) detect("Hello");
    const std::string msgs = messages_json(messages);
    if (*flavor == Flavor::kVllm) {
      std::string body = R"({"model":)" + json::serialize(json::string(model)) + R"(,"messages":)" +
                         msgs + R"(,"add_generation_prompt":true})";
      const Reply r = post("/tokenize", body);
      const auto n = vllm_count(r);
      if (!n) refused("/tokenize", r);
      return n;
    }
    if (*flavor == Flavor::kLlamaCpp && !has_images(messages)) {
      const Reply r = post("/apply-template", R"({"messages":)" + msgs + "}");
      if (r.status != 200) refused("/apply-template", r);
      const auto v = parse_json(r.body);
      const json::value* prompt =
          v && v->is_object() ? v->get_object().if_contains("prompt") : nullptr;
      if (prompt == nullptr || !prompt->is_string()) {
        throw TokenizeError("POST " + root + "/apply-template: no string \"prompt\" in " +
                            first_bytes(r.body));
      }
      return count_text(std::string(prompt->get_string()));
    }
    return std::nullopt;
  }
};

TokenizeClient::TokenizeClient(const BaseUrl& url, std::string model,
                               std::optional<std::string> api_key, TokenizeClientOptions options)
    : impl_(std::make_unique<Impl>(url, std::move(model), std::move(api_key), std::move(options))) {
}

TokenizeClient::~TokenizeClient() { impl_->close(); }

void TokenizeClient::disconnect() { impl_->close(); }

TokenizeClient::Flavor TokenizeClient::flavor() {
  if (!impl_->flavor) impl_->detect("Hello");
  return *impl_->flavor;
}

std::int64_t TokenizeClient::count_text(const std::string& text) { return impl_->count_text(text); }

std::optional<std::int64_t> TokenizeClient::count_chat(
    const std::vector<workload::Message>& messages) {
  return impl_->count_chat(messages);
}

std::optional<std::string> TokenizeClient::get_text(const std::string& path) {
  const Reply r = impl_->call(http::verb::get, path, "");
  if (r.status == 200) return r.body;
  if (r.status == 404 || r.status == 405) return std::nullopt;
  throw TokenizeError("GET " + impl_->root + path + ": HTTP " + std::to_string(r.status) + " " +
                      first_bytes(r.body));
}

TokenizeClient::HttpReply TokenizeClient::call(const std::string& method, const std::string& path,
                                               const std::string& body) {
  if (method != "GET" && method != "POST") {
    throw std::invalid_argument("TokenizeClient::call: method must be GET or POST");
  }
  HttpReply out;
  const auto r = impl_->call(method == "GET" ? http::verb::get : http::verb::post, path, body);
  out.status = static_cast<int>(r.status);
  out.body = r.body;
  return out;
}

std::uint64_t TokenizeClient::calls() const { return impl_->calls; }

}  // namespace dyno::transport
