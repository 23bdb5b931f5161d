#include "transport/read_reactor.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <system_error>

namespace dyno::transport {
namespace {

using namespace std::chrono_literals;

/// A socket pair: `ours` is watched, `theirs` writes to it.
struct Pair {
  int ours = -1;
  int theirs = -1;
  Pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
      throw std::system_error(errno, std::system_category(), "socketpair");
    }
    ours = fds[0];
    theirs = fds[1];
  }
  ~Pair() {
    if (ours >= 0) ::close(ours);
    if (theirs >= 0) ::close(theirs);
  }
  void send(const std::string& s) const {
    ASSERT_EQ(::write(theirs, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  std::string drain() const {
    std::string out;
    char buf[256];
    for (;;) {
      const ssize_t n = ::read(ours, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
};

struct Client final : ReadReactor::Client {
  int inputs = 0;
  bool hangup = false;
  std::function<void()> then;
  void on_input(bool h) override {
    ++inputs;
    hangup = hangup || h;
    if (then) then();
  }
};

/// Two watched socket pairs on one loop, and a run that reports how long it took.
class ReadReactorTest : public ::testing::Test {
 protected:
  /// Runs the loop until it has nothing to wait for (at most 5 s); the time it took.
  std::chrono::steady_clock::duration run() {
    context.restart();
    const auto started = std::chrono::steady_clock::now();
    context.run_for(5s);
    return std::chrono::steady_clock::now() - started;
  }

  boost::asio::io_context context;
  ReadReactor reactor{context};
  Pair a;
  Pair b;
  Client ca;
  Client cb;
  ReadReactor::Token ta = reactor.add(a.ours, ca);
  ReadReactor::Token tb = reactor.add(b.ours, cb);
};

TEST_F(ReadReactorTest, EachArrivalIsOneInputToItsClientAndTheLoopEndsWhenNoneAwaits) {
  a.send("x");
  // Nobody awaits input: the loop has nothing to wait for and returns at once.
  EXPECT_EQ(context.run_for(1s), 0u);
  EXPECT_EQ(ca.inputs, 0);

  // Awaiting: the input that arrived before is reported (the set is level at the first wait).
  reactor.awaiting();
  ca.then = [&] {
    EXPECT_EQ(a.drain(), "x");
    reactor.not_awaiting();
  };
  EXPECT_LT(run(), 2s) << "the loop kept waiting";
  EXPECT_EQ(ca.inputs, 1);
  EXPECT_EQ(cb.inputs, 0);

  // Two sockets ready at one wake-up: each client once; edge-triggered, so an input that was
  // not read is not reported again until more arrives.
  ca.then = nullptr;
  cb.then = [&] { reactor.not_awaiting(); };
  a.send("y");
  b.send("z");
  reactor.awaiting();
  run();
  EXPECT_EQ(ca.inputs, 2);
  EXPECT_EQ(cb.inputs, 1);
  EXPECT_EQ(b.drain(), "z");
  EXPECT_EQ(a.drain(), "y");

  reactor.remove(a.ours, ta);
  EXPECT_EQ(ta.generation, 0u);
  reactor.remove(a.ours, ta);  // twice: nothing
}

TEST_F(ReadReactorTest, TheLastAwaiterLeavingCancelsTheWait) {
  reactor.awaiting();
  // The request ends some other way (a timeout): the client stops awaiting without input.
  boost::asio::post(context, [&] { reactor.not_awaiting(); });
  EXPECT_LT(run(), 2s) << "the loop kept waiting";
  EXPECT_EQ(ca.inputs, 0);
}

TEST_F(ReadReactorTest, AHangUpIsSignalled) {
  a.send("last words");
  ::shutdown(a.theirs, SHUT_WR);
  ca.then = [&] { reactor.not_awaiting(); };
  reactor.awaiting();
  run();
  EXPECT_EQ(ca.inputs, 1);
  EXPECT_TRUE(ca.hangup);
  EXPECT_EQ(a.drain(), "last words");
  b.send("more");
  cb.then = [&] { reactor.not_awaiting(); };
  reactor.awaiting();
  run();
  EXPECT_EQ(cb.inputs, 1);
  EXPECT_FALSE(cb.hangup);
}

TEST_F(ReadReactorTest, ASocketRemovedWhileAnotherIsHandledIsNotReported) {
  // Both ready at one wake-up; whichever is handled first removes the other (a client may
  // close any socket while handling input): the removed one is never reported.
  a.send("a");
  b.send("b");
  ca.then = [&] {
    reactor.remove(b.ours, tb);
    reactor.not_awaiting();
  };
  cb.then = [&] {
    reactor.remove(a.ours, ta);
    reactor.not_awaiting();
  };
  reactor.awaiting();
  run();
  EXPECT_EQ(ca.inputs + cb.inputs, 1);
}

TEST_F(ReadReactorTest, ASlotIsReusedWithANewGeneration) {
  const ReadReactor::Token first = ta;
  reactor.remove(a.ours, ta);
  Pair c;
  Client cc;
  ReadReactor::Token tc = reactor.add(c.ours, cc);
  EXPECT_EQ(tc.slot, first.slot);
  EXPECT_NE(tc.generation, first.generation);
  EXPECT_THROW(reactor.add(-1, cc), std::system_error);
  reactor.remove(c.ours, tc);
}

}  // namespace
}  // namespace dyno::transport
