// A deliberately misbehaving OpenAI-style server for dyno's tests (docs/reliability.md).
//
//   hostile_server --mode MODE [--port 0]
//
// Prints "listening on http://127.0.0.1:PORT/v1" and serves every POST to a completions
// endpoint in the way MODE says, one thread per connection, on plain POSIX sockets (nothing of
// dyno's own transport is used, so its mistakes cannot cancel dyno's). GET /metrics answers 404.
// Modes (the category dyno must report is in tests/integration/hostile_test.cpp):
//   ok            a correct stream of 8 token events, usage, [DONE]
//   nagle         ok, but Nagle's algorithm on and the first token 5 ms after the headers
//   reset_mid     2 token events, then a TCP reset
//   stall_before  headers, then nothing (connection open)
//   stall_after   headers and 1 token event, then nothing
//   slow_headers  the head one byte per 20 ms, then ok
//   status_429    429 with a JSON body;  status_500_bad_utf8: 500 with invalid UTF-8 in its body
//   garbage_sse   lines that are not SSE fields between the events, then ok
//   invalid_json  a `data:` payload that is not JSON
//   huge_line     a 10 MB `data:` line
//   nul_bytes     NUL bytes inside a `data:` payload
//   bad_utf8      token text with invalid UTF-8 bytes (JSON-escaped as raw bytes)
//   truncated     a chunked body cut mid-chunk (connection closed)
//   no_done       ok without `data: [DONE]`
//   redirect      307 to another address
//   gzip          200 with Content-Encoding: gzip
//   empty_200     200 with an empty body
//   html_200      200 with an HTML login page
//   http10        HTTP/1.0, body delimited by the close
//   close_each    ok with Connection: close on every response
//   huge_headers  100 KB of response headers
//   endless       token events as fast as the socket takes them, never ending
//   endless_padded  the same, each event padded with 2 KB of an unknown field (bytes, not text)
//   echo_key      401 whose body repeats the Authorization header
//   echo_key_stream  the API key streamed back as token text, split across two events
//   two_threads   ok, but like llama-server's HTTP thread pool: 2 threads, each serving one
//                 connection until it closes or idles 5 s; GET /metrics answers (gauges)
// The server's own word (each after 2 token events unless said otherwise):
//   error_field   llama.cpp's `error: {"code":500,"message":…}` SSE field, then data: [DONE]
//   error_event   `event: error` with a JSON message as its data
//   error_data    `data: {"error": {"message": …}}` (vLLM, SGLang), then data: [DONE]
//   error_tgi     `data: {"error": "…", "error_type": "…"}` (TGI's string error)
//   error_bare    Ollama's unframed `{"error": {…}}` line, and the body ends
//   error_first   the `error:` field before any token, then data: [DONE]
//   error_echo_key  an `error:` field whose message repeats the Authorization header
//   finish_abort  8 token events ending with finish_reason "abort"
//   unfinished_done  8 token events and usage, no finish reason, data: [DONE]
//   unfinished_eof   8 token events, no finish reason, the body ends
//   said_no_tokens   a 200 stream with a role-only chunk and a note, no token, data: [DONE]
//   usage_overflow   ok, but usage.completion_tokens is 9223372036854775807
//   timings_prompt_n  ok, with llama.cpp b4748's `timings` (prompt_n 12 of 40 prompt tokens, no
//                 cache_n) and no cached-token count in usage
//   status_401_straddle  401 whose body repeats the Authorization header across byte 512
//   metrics_echo_key ok; GET /metrics answers with the Authorization header inside
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace {

std::string g_mode = "ok";

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string chunk(std::string_view payload) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
  return std::string(size) + std::string(payload) + "\r\n";
}

std::string event(std::string_view text) {
  return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + std::string(text) +
         "\"},\"finish_reason\":null}]}\n\n";
}

const std::string kFinal =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],"
    "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":8,\"total_tokens\":13}}\n\n";

constexpr std::string_view kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n";

/// A whole correct answer of 8 token events, chunked; `done` adds [DONE].
std::string answer_body(bool done) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += chunk(event("tok" + std::to_string(i) + " "));
  out += chunk(kFinal);
  if (done) out += chunk("data: [DONE]\n\n");
  return out + "0\r\n\r\n";
}

std::string plain_response(std::string_view status, std::string_view type, std::string_view body,
                           std::string_view extra = "") {
  return "HTTP/1.1 " + std::string(status) + "\r\nContent-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + std::string(extra) +
         "\r\n" + std::string(body);
}

void hang(int fd) {
  char buf[1024];
  while (::recv(fd, buf, sizeof buf, 0) > 0) {
  }
}

/// A correct stream, maybe slow or oddly framed: ok, slow_headers, close_each, nagle,
/// two_threads. Nothing when the mode is none of these.
std::optional<bool> serve_correct(int fd, const std::string& m) {
  if (m == "ok" || m == "slow_headers" || m == "close_each" || m == "nagle" || m == "two_threads") {
    std::string head =
        std::string(kSseHead) + (m == "close_each" ? "Connection: close\r\n" : "") + "\r\n";
    if (m == "slow_headers") {
      for (const char c : head) {
        if (!send_all(fd, std::string_view(&c, 1))) return false;
        sleep_ms(20);
      }
      return send_all(fd, answer_body(true));
    }
    if (m == "nagle") {
      // Each write on its own, Nagle on: the next small write waits for the ACK of the last.
      if (!send_all(fd, head)) return false;
      sleep_ms(5);
      for (int i = 0; i < 8; ++i) {
        if (!send_all(fd, chunk(event("tok")))) return false;
        sleep_ms(2);
      }
      return send_all(fd, chunk(kFinal) + chunk("data: [DONE]\n\n") + "0\r\n\r\n");
    }
    return send_all(fd, head + answer_body(true)) && m != "close_each";
  }
  return std::nullopt;
}

/// A response that is not a stream: an error status, a redirect, gzip, an empty or HTML
/// 200, the API key echoed. Nothing when the mode is none of these.
std::optional<bool> serve_error_response(int fd, const std::string& m,
                                         const std::string& authorization) {
  if (m == "status_429") {
    return send_all(fd, plain_response("429 Too Many Requests", "application/json",
                                       R"({"error":{"message":"slow down","code":429}})",
                                       "Retry-After: 1\r\n"));
  }
  if (m == "status_500_bad_utf8") {
    return send_all(fd, plain_response("500 Internal Server Error", "text/plain",
                                       "engine failed: \xff\xfe\xc3( bad bytes \xed\xa0\x80"));
  }
  if (m == "redirect") {
    return send_all(fd, plain_response("307 Temporary Redirect", "text/plain", "moved",
                                       "Location: http://127.0.0.1:1/v1/chat/completions\r\n"));
  }
  if (m == "gzip") {
    const std::string gz(
        "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20);
    return send_all(
        fd, plain_response("200 OK", "text/event-stream", gz, "Content-Encoding: gzip\r\n"));
  }
  if (m == "empty_200") return send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  if (m == "html_200") {
    return send_all(fd, plain_response("200 OK", "text/html; charset=utf-8",
                                       "<html><body><form>Sign in</form></body></html>"));
  }
  if (m == "echo_key") {
    return send_all(
        fd, plain_response("401 Unauthorized", "application/json",
                           "{\"error\":{\"message\":\"invalid key: " + authorization + "\"}}"));
  }
  return std::nullopt;
}

/// A stream whose content is wrong: no [DONE], garbage between events, bad JSON, a huge
/// line, NUL bytes, bad UTF-8, the API key streamed back. Nothing when the mode is none of these.
std::optional<bool> serve_bad_stream(int fd, const std::string& m,
                                     const std::string& authorization) {
  if (m == "no_done") return send_all(fd, std::string(kSseHead) + "\r\n" + answer_body(false));
  if (m == "garbage_sse") {
    std::string body = chunk("this is not an SSE field\n") + chunk("::::\nretry: x\n\n");
    body += chunk("event: nonsense\nid: 7\n");
    return send_all(fd, std::string(kSseHead) + "\r\n" + body + answer_body(true));
  }
  if (m == "invalid_json") {
    return send_all(fd, std::string(kSseHead) + "\r\n" + chunk(event("a")) +
                            chunk("data: {\"choices\": [ {not json\n\n") + answer_body(true));
  }
  if (m == "huge_line") {
    std::string body = std::string(kSseHead) + "\r\n" + chunk(event("a"));
    if (!send_all(fd, body)) return false;
    const std::string piece(64 * 1024, 'x');
    if (!send_all(fd, chunk("data: {\"choices\":[{\"delta\":{\"content\":\""))) return false;
    for (int i = 0; i < 160; ++i) {  // 10 MiB without a line end
      if (!send_all(fd, chunk(piece))) return false;
    }
    return send_all(fd, chunk("\"}}]}\n\n") + answer_body(true));
  }
  if (m == "nul_bytes") {
    static constexpr char kPayload[] =
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\0b\"}}]}\n\n";
    const std::string payload(kPayload, sizeof kPayload - 1);
    return send_all(fd, std::string(kSseHead) + "\r\n" + chunk(event("a")) + chunk(payload) +
                            answer_body(true));
  }
  if (m == "bad_utf8") {
    std::string body;
    for (const char* t : {"ok ", "\xff\xfe", "caf\xc3", "\xa9 \xe2\x82", "\xed\xa0\x80 end"}) {
      body += chunk(event(t));
    }
    return send_all(fd, std::string(kSseHead) + "\r\n" + body + answer_body(true));
  }
  if (m == "echo_key_stream") {
    const std::string key =
        authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7) : authorization;
    const std::size_t half = key.size() / 2;
    std::string body = chunk(event("your key is ")) + chunk(event(key.substr(0, half))) +
                       chunk(event(key.substr(half)));
    return send_all(fd, std::string(kSseHead) + "\r\n" + body + answer_body(true));
  }
  return std::nullopt;
}

/// The server's word inside a 200 stream: an in-stream error in each engine's form, an answer
/// without a finish reason or aborted, implausible usage, no token but a note. Nothing when
/// the mode is none of these.
std::optional<bool> serve_server_word(int fd, const std::string& m,
                                      const std::string& authorization) {
  const std::string head = std::string(kSseHead) + "\r\n";
  const std::string two = chunk(event("a ")) + chunk(event("b "));
  const std::string done = chunk("data: [DONE]\n\n") + "0\r\n\r\n";
  const std::string end = "0\r\n\r\n";
  if (m == "error_field") {
    return send_all(fd, head + two +
                            chunk("error: {\"code\":500,\"message\":\"Input prompt is too big "
                                  "compared to KV size.\",\"type\":\"server_error\"}\n\n") +
                            done);
  }
  if (m == "error_event") {
    return send_all(fd, head + two +
                            chunk("event: error\ndata: {\"message\":\"engine overloaded\","
                                  "\"type\":\"server_error\"}\n\n") +
                            end);
  }
  if (m == "error_data") {
    return send_all(fd, head + two +
                            chunk("data: {\"error\":{\"message\":\"CUDA out of memory\","
                                  "\"type\":\"InternalServerError\",\"code\":500}}\n\n") +
                            done);
  }
  if (m == "error_tgi") {
    return send_all(fd, head + two +
                            chunk("data: {\"error\":\"Request failed during generation: "
                                  "Server error: OOM\",\"error_type\":\"generation\"}\n\n") +
                            end);
  }
  if (m == "error_bare") {
    return send_all(fd, head + two +
                            chunk("{\"error\":{\"message\":\"model runner has unexpectedly "
                                  "stopped\",\"type\":\"api_error\",\"param\":null,"
                                  "\"code\":null}}\n") +
                            end);
  }
  if (m == "error_first") {
    return send_all(fd, head +
                            chunk("error: {\"code\":500,\"message\":\"Input prompt is too big "
                                  "compared to KV size.\",\"type\":\"server_error\"}\n\n") +
                            done);
  }
  if (m == "error_echo_key") {
    return send_all(fd, head + two +
                            chunk("error: {\"code\":401,\"message\":\"bad header " + authorization +
                                  "\",\"type\":\"auth\"}\n\n") +
                            done);
  }
  std::string eight;
  for (int i = 0; i < 8; ++i) eight += chunk(event("tok "));
  const std::string usage =
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":8,"
      "\"total_tokens\":13}}\n\n";
  if (m == "finish_abort") {
    return send_all(fd, head + eight +
                            chunk("data: {\"choices\":[{\"index\":0,\"delta\":{},"
                                  "\"finish_reason\":\"abort\"}]}\n\n") +
                            chunk(usage) + done);
  }
  if (m == "unfinished_done") return send_all(fd, head + eight + chunk(usage) + done);
  if (m == "unfinished_eof") return send_all(fd, head + eight + end);
  if (m == "said_no_tokens") {
    return send_all(fd, head +
                            chunk("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":"
                                  "\"assistant\"}}]}\n\n") +
                            chunk("data: {\"choices\":[],\"note\":\"model is loading\"}\n\n") +
                            done);
  }
  if (m == "timings_prompt_n") {
    return send_all(fd, head + eight +
                            chunk("data: {\"choices\":[{\"index\":0,\"delta\":{},"
                                  "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":"
                                  "40,\"completion_tokens\":8,\"total_tokens\":48},\"timings\":{"
                                  "\"prompt_n\":12,\"prompt_ms\":3.0,\"prompt_per_token_ms\":0.25,"
                                  "\"prompt_per_second\":4000.0,\"predicted_n\":8,\"predicted_ms\":"
                                  "16.0,\"predicted_per_token_ms\":2.0,\"predicted_per_second\":"
                                  "500.0}}\n\n") +
                            done);
  }
  if (m == "usage_overflow") {
    return send_all(fd, head + eight +
                            chunk("data: {\"choices\":[{\"index\":0,\"delta\":{},"
                                  "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,"
                                  "\"completion_tokens\":9223372036854775807}}\n\n") +
                            done);
  }
  if (m == "status_401_straddle") {
    // The header's value starts 12 bytes before byte 512 of the body: a cut there would keep
    // "Bearer sk-hos" unless the cut drops what it goes through.
    const std::string before = "{\"error\":{\"message\":\"";
    const std::size_t pad = 512 - 12 - before.size() - 1;
    return send_all(fd,
                    plain_response("401 Unauthorized", "application/json",
                                   before + std::string(pad, '.') + " " + authorization + "\"}}"));
  }
  if (m == "metrics_echo_key") return send_all(fd, head + answer_body(true));
  return std::nullopt;
}

/// A connection that breaks: reset, stalled, cut mid-chunk, closed to end the body, huge
/// headers, never ending. Nothing when the mode is none of these.
std::optional<bool> serve_bad_connection(int fd, const std::string& m) {
  if (m == "reset_mid") {
    send_all(fd, std::string(kSseHead) + "\r\n" + chunk(event("a")) + chunk(event("b")));
    sleep_ms(20);
    linger l{1, 0};  // close with RST
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    return false;
  }
  if (m == "stall_before") {
    send_all(fd, std::string(kSseHead) + "\r\n");
    hang(fd);
    return false;
  }
  if (m == "stall_after") {
    send_all(fd, std::string(kSseHead) + "\r\n" + chunk(event("a")));
    hang(fd);
    return false;
  }
  if (m == "truncated") {
    send_all(fd, std::string(kSseHead) + "\r\n" + chunk(event("a")) + "40\r\ndata: {\"cho");
    return false;
  }
  if (m == "http10") {
    std::string body;
    for (int i = 0; i < 8; ++i) body += event("t ");
    body += kFinal + "data: [DONE]\n\n";
    send_all(fd, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + body);
    return false;  // the close ends the body
  }
  if (m == "huge_headers") {
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";
    for (int i = 0; i < 1000; ++i)
      head += "X-Filler-" + std::to_string(i) + ": " + std::string(100, 'f') + "\r\n";
    send_all(fd, head + "Transfer-Encoding: chunked\r\n\r\n" + answer_body(true));
    return false;
  }
  if (m == "endless" || m == "endless_padded") {
    if (!send_all(fd, std::string(kSseHead) + "\r\n")) return false;
    const std::string pad = m == "endless" ? "" : std::string(2048, 'p');
    std::string one = "data: {\"pad\":\"" + pad +
                      "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"z\"}}]}\n\n";
    std::string batch;
    for (int i = 0; i < (m == "endless" ? 256 : 16); ++i) batch += one;
    const std::string c = chunk(batch);
    while (send_all(fd, c)) {
    }
    return false;
  }
  return std::nullopt;
}

/// Serves one completion request; returns false when the connection must end.
bool serve_completion(int fd, const std::string& authorization) {
  const std::string& m = g_mode;
  if (const auto r = serve_correct(fd, m)) return *r;
  if (const auto r = serve_error_response(fd, m, authorization)) return *r;
  if (const auto r = serve_bad_stream(fd, m, authorization)) return *r;
  if (const auto r = serve_server_word(fd, m, authorization)) return *r;
  if (const auto r = serve_bad_connection(fd, m)) return *r;
  std::fprintf(stderr, "hostile_server: unknown mode %s\n", m.c_str());
  return false;
}

void serve(int fd) {
  if (g_mode != "nagle") {
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  std::string buf;
  char tmp[65536];
  for (;;) {
    std::size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      buf.append(tmp, static_cast<std::size_t>(n));
    }
    const std::string head = buf.substr(0, end);
    std::size_t length = 0;
    std::string authorization;
    std::size_t pos = 0;
    while ((pos = head.find("\r\n", pos)) != std::string::npos) {
      pos += 2;
      const std::size_t eol = head.find("\r\n", pos);
      const std::string line = head.substr(pos, eol - pos);
      if (strncasecmp(line.c_str(), "content-length:", 15) == 0) {
        length = std::stoul(line.substr(15));
      } else if (strncasecmp(line.c_str(), "authorization:", 14) == 0) {
        authorization = line.substr(line.find_first_not_of(' ', 14));
      }
    }
    while (buf.size() < end + 4 + length) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      buf.append(tmp, static_cast<std::size_t>(n));
    }
    buf.erase(0, end + 4 + length);
    bool keep = true;
    if (head.rfind("POST ", 0) == 0 && head.find("completions") != std::string::npos) {
      keep = serve_completion(fd, authorization);
    } else if (g_mode == "metrics_echo_key" && head.rfind("GET /metrics ", 0) == 0) {
      // A server that echoes the request's Authorization header into its /metrics text.
      keep = send_all(fd, plain_response("200 OK", "text/plain; version=0.0.4",
                                         "# HELP seen_authorization " + authorization +
                                             "\n# TYPE requests_total counter\n"
                                             "requests_total 1\n"));
    } else if (g_mode == "two_threads" && head.rfind("GET /metrics ", 0) == 0) {
      keep = send_all(fd, plain_response("200 OK", "text/plain; version=0.0.4",
                                         "# TYPE llamacpp:requests_processing gauge\n"
                                         "llamacpp:requests_processing 0\n"));
    } else {
      keep = send_all(fd, plain_response("404 Not Found", "application/json",
                                         R"({"error":{"message":"not found"}})"));
    }
    if (!keep) break;
  }
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--mode") {
      g_mode = argv[i + 1];
    } else if (flag == "--port") {
      port = std::stoi(argv[i + 1]);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls, 128) != 0) {
    std::perror("hostile_server: bind");
    return 1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on http://127.0.0.1:%d/v1\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  if (g_mode == "two_threads") {
    // A fixed pool: a connection waits in the backlog until a thread is free; an idle
    // keep-alive connection holds its thread until it closes or idles for 5 s.
    const auto worker = [ls] {
      for (;;) {
        const int fd = ::accept(ls, nullptr, nullptr);
        if (fd < 0) continue;
        timeval idle{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
        serve(fd);
      }
    };
    std::thread(worker).detach();
    worker();
  }
  for (;;) {
    const int fd = ::accept(ls, nullptr, nullptr);
    if (fd < 0) continue;
    std::thread(serve, fd).detach();
  }
}
