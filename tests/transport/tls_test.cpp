// HttpTarget over real TLS: a certificate made for the test, a TLS server in a thread.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "temp_dir.h"
#include "transport/http_target.h"

namespace dyno::transport {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;

/// A self-signed certificate for 127.0.0.1 (CN and subjectAltName), written as PEM files.
class TestCertificate {
 public:
  TestCertificate() {
    dir_ = dyno::testing::make_temp_dir("dyno-tls");
    EVP_PKEY* key = EVP_RSA_gen(2048);
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"},
                                     std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      X509_add_ext(cert, ext, -1);
      X509_EXTENSION_free(ext);
    }
    X509_sign(cert, key, EVP_sha256());
    FILE* f = std::fopen(cert_path().c_str(), "w");
    PEM_write_X509(f, cert);
    std::fclose(f);
    f = std::fopen(key_path().c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  ~TestCertificate() { fs::remove_all(dir_); }
  std::string cert_path() const { return (dir_ / "cert.pem").string(); }
  std::string key_path() const { return (dir_ / "key.pem").string(); }

 private:
  fs::path dir_;
};

/// Serves one streamed chat response over TLS per connection, `connections` times.
class TlsServer {
 public:
  TlsServer(const TestCertificate& cert, int connections)
      : tls_(ssl::context::tls_server),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    tls_.use_certificate_chain_file(cert.cert_path());
    tls_.use_private_key_file(cert.key_path(), ssl::context::pem);
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        ssl::stream<tcp::socket> stream(io_, tls_);
        boost::system::error_code ec;
        acceptor_.accept(stream.next_layer(), ec);
        if (ec) return;
        stream.handshake(ssl::stream_base::server, ec);
        if (ec) continue;  // the client refused our certificate
        asio::streambuf buf;
        asio::read_until(stream, buf, "\r\n\r\n", ec);
        const std::string body =
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},"
            "\"finish_reason\":\"stop\"}]}\n\n"
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"
            "data: [DONE]\n\n";
        const std::string response =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
            "Content-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body;
        asio::write(stream, asio::buffer(response), ec);
        stream.shutdown(ec);
      }
    });
  }
  ~TlsServer() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    if (thread_.joinable()) thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  asio::io_context io_;
  ssl::context tls_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

struct Result final : StreamObserver {
  std::string content;
  std::optional<std::int64_t> completion_tokens;
  std::optional<ErrorCategory> error;
  std::string message;
  bool done = false;
  EventLoop* loop = nullptr;
  void on_sent(std::int64_t) override {}
  void on_first_byte(std::int64_t, int) override {}
  void on_token_event(std::int64_t, std::string_view c, std::string_view) override { content += c; }
  void on_usage(const Usage& u) override { completion_tokens = u.completion_tokens; }
  void on_done(std::int64_t, const DoneInfo&) override {
    done = true;
    loop->stop();
  }
  void on_error(std::int64_t, ErrorCategory c, std::string_view m, std::optional<int>) override {
    error = c;
    message = m;
    loop->stop();
  }
};

Result run_once(std::uint16_t port, bool verify, std::optional<std::string> ca_file) {
  EventLoop loop;
  HttpTargetConfig config;
  config.url = BaseUrl::parse("https://127.0.0.1:" + std::to_string(port) + "/v1");
  config.model = "m";
  config.tls_verify = verify;
  config.ca_file = std::move(ca_file);
  config.connect_timeout = std::chrono::milliseconds(5000);
  config.total_timeout = std::chrono::milliseconds(5000);
  HttpTarget target(loop, config);
  workload::Request request;
  request.id = "r";
  request.messages = {{"user", "hello"}};
  const auto prepared = target.prepare(request);
  Result result;
  result.loop = &loop;
  target.submit(*prepared, 0, result);
  loop.run();
  return result;
}

TEST(Tls, StreamsOverTlsWhenTheCertificateIsTrusted) {
  TestCertificate cert;
  TlsServer server(cert, 1);
  const Result r = run_once(server.port(), true, cert.cert_path());
  EXPECT_TRUE(r.done) << r.message;
  EXPECT_EQ(r.content, "hi there");
  EXPECT_EQ(r.completion_tokens, 2);
}

TEST(Tls, UntrustedCertificateIsATlsError) {
  TestCertificate cert;
  TlsServer server(cert, 1);
  const Result r = run_once(server.port(), true, std::nullopt);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, ErrorCategory::kTls) << r.message;
  EXPECT_NE(r.message.find("certificate"), std::string::npos) << r.message;
}

TEST(Tls, InsecureSkipsVerification) {
  TestCertificate cert;
  TlsServer server(cert, 1);
  const Result r = run_once(server.port(), false, std::nullopt);
  EXPECT_TRUE(r.done) << r.message;
  EXPECT_EQ(r.content, "hi there");
}

TEST(Tls, UnreadableCaFileIsRejectedUpFront) {
  EventLoop loop;
  HttpTargetConfig config;
  config.url = BaseUrl::parse("https://127.0.0.1:1/v1");
  config.model = "m";
  config.ca_file = "/nonexistent/ca.pem";
  EXPECT_THROW(HttpTarget(loop, config), dyno::Error);
}

}  // namespace
}  // namespace dyno::transport
