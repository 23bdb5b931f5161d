// HttpResponseReader: the framing of HTTP/1.1 responses without a socket.
#include "transport/http_response.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using dyno::transport::HttpResponseReader;
using dyno::transport::ResponseHead;
using State = HttpResponseReader::State;

struct Seen : HttpResponseReader::Handler {
  std::vector<ResponseHead> heads;
  std::string body;
  bool on_head(const ResponseHead& head) override {
    heads.push_back(head);
    return true;
  }
  bool on_body(std::string_view bytes) override {
    body.append(bytes);
    return true;
  }
};

TEST(HttpResponse, ContentLengthBodyThenTheNextResponse) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: Application/JSON; charset=utf-8\r\nContent-Length: "
      "4\r\n\r\nbodyHTTP/1.1 500 X\r\n";
  HttpResponseReader reader;
  Seen seen;
  std::size_t consumed = 0;
  EXPECT_EQ(reader.feed(wire.data(), wire.size(), seen, &consumed), State::kComplete);
  EXPECT_EQ(wire.substr(consumed), "HTTP/1.1 500 X\r\n");
  ASSERT_EQ(seen.heads.size(), 1u);
  EXPECT_EQ(seen.heads[0].status, 200);
  EXPECT_EQ(seen.heads[0].content_type, "application/json");
  EXPECT_EQ(seen.heads[0].content_length, 4u);
  EXPECT_TRUE(seen.heads[0].keep_alive);
  EXPECT_EQ(seen.body, "body");
}

TEST(HttpResponse, ChunkedInPiecesOfOneByte) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\n"
      "Trailer: x\r\n\r\n";
  HttpResponseReader reader;
  Seen seen;
  State state = State::kNeedMore;
  for (const char c : wire) {
    ASSERT_EQ(state, State::kNeedMore);
    state = reader.feed(&c, 1, seen);
  }
  EXPECT_EQ(state, State::kComplete);
  EXPECT_EQ(seen.body, "hello!");
  EXPECT_TRUE(seen.heads.at(0).chunked);
}

TEST(HttpResponse, InterimResponsesAreSkippedAndCloseDelimitsABody) {
  const std::string wire = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil the end";
  HttpResponseReader reader;
  Seen seen;
  EXPECT_EQ(reader.feed(wire.data(), wire.size(), seen), State::kNeedMore);
  ASSERT_EQ(seen.heads.size(), 1u);
  EXPECT_EQ(seen.heads[0].status, 200);
  EXPECT_FALSE(seen.heads[0].keep_alive);
  EXPECT_TRUE(reader.eof_completes());
  EXPECT_EQ(seen.body, "until the end");
}

// Found by fuzzing: a 204 (or 304) with a Content-Length has no body, and its head now says so,
// so a handler that trusts content_length is not told of 13 bytes that never come.
TEST(HttpResponse, NoBodyAfter204Or304WhateverTheHeadersSay) {
  for (const std::string status : {"204 No Content", "304 Not Modified"}) {
    const std::string wire = "HTTP/1.1 " + status +
                             "\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    HttpResponseReader reader;
    Seen seen;
    std::size_t consumed = 0;
    ASSERT_EQ(reader.feed(wire.data(), wire.size(), seen, &consumed), State::kComplete) << status;
    ASSERT_EQ(seen.heads.size(), 1u);
    EXPECT_EQ(seen.heads[0].content_length, 0u) << status;
    EXPECT_FALSE(seen.heads[0].chunked) << status;
    EXPECT_EQ(seen.body, "");
    reader.reset();
    const std::string rest = wire.substr(consumed);
    EXPECT_EQ(reader.feed(rest.data(), rest.size(), seen), State::kComplete);
    EXPECT_EQ(seen.body, "ok");
  }
}

TEST(HttpResponse, MalformedAndOversizedHeadsAreErrorsOfTheirKind) {
  {
    const std::string wire = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n";
    HttpResponseReader reader;
    Seen seen;
    EXPECT_EQ(reader.feed(wire.data(), wire.size(), seen), State::kError);
    EXPECT_EQ(reader.error_kind(), HttpResponseReader::ErrorKind::kMalformed);
    EXPECT_NE(reader.error().find("Content-Length"), std::string::npos) << reader.error();
  }
  {
    const std::string wire =
        "HTTP/1.1 200 OK\r\nX-Big: " + std::string(HttpResponseReader::kMaxHeaderBytes, 'a') +
        "\r\n\r\n";
    HttpResponseReader reader;
    Seen seen;
    EXPECT_EQ(reader.feed(wire.data(), wire.size(), seen), State::kError);
    EXPECT_EQ(reader.error_kind(), HttpResponseReader::ErrorKind::kTooLarge);
  }
  {
    const std::string wire = "SMTP ready\r\n\r\n";
    HttpResponseReader reader;
    Seen seen;
    EXPECT_EQ(reader.feed(wire.data(), wire.size(), seen), State::kError);
    EXPECT_EQ(reader.error_kind(), HttpResponseReader::ErrorKind::kMalformed);
  }
}

}  // namespace
