// SPDX-License-Identifier: MIT
//
// lite-rpc-ring: RPC throughput with everything on io_uring (lite::Ring):
// an echo server on SERVER_INSTANCE keeps DEPTH receives in flight on one
// ring and answers each call with a reply SQE; each client thread on
// CLIENT_INSTANCE keeps DEPTH calls in flight on its own ring, refilling as
// replies come, for SECONDS. No thread waits per call and no io_uring
// worker is involved: what a busy server and a pipelining client get.
// Every reply is checked against its request (rpc.hpp); a wrong reply or a
// failed call fails the run, and the server must have answered exactly the
// calls the clients saw answered.
//
// Prints the throughput CSV of rpc.hpp (threads,size,calls,seconds,
// calls_per_s) on stdout; exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "rpc.hpp"

#include <lite/async.hpp>
#include <lite/session.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

using bench::rpc::Clock;
using namespace std::chrono_literals;

constexpr const char* kProg = "lite-rpc-ring";

struct Options {
    unsigned client_instance = 0;
    unsigned server_instance = 1;
    uint32_t port = 7002;
    unsigned depth = 32;
    std::vector<unsigned> threads{1};
    size_t size = 64;
    unsigned seconds = 3;
};

// The echo server: @depth receives in flight on one ring; a reply SQE per
// call, the receive re-armed once its reply was taken (the reply is copied
// at submission, so the buffer is then free).
class RingServer
{
public:
    RingServer(const Options& opt, size_t cap)
        : session_(lite::Session::open(opt.server_instance)), service_(session_.serve(opt.port)),
          bufs_(opt.depth, std::vector<std::byte>(cap)), thread_([this] { serve(); })
    {
    }
    RingServer(const RingServer&) = delete;
    RingServer& operator=(const RingServer&) = delete;
    RingServer(RingServer&&) = delete;
    RingServer& operator=(RingServer&&) = delete;
    // A server stopped by unwinding (the run failed already): its own
    // failure is printed, not thrown.
    ~RingServer()
    {
        try {
            stop();
        } catch (const std::exception& e) {
            (void)std::fprintf(stderr, "%s: %s\n", kProg, e.what());
        } catch (...) {
            (void)std::fprintf(stderr, "%s: the server failed\n", kProg);
        }
    }

    [[nodiscard]] uint32_t node() const noexcept { return session_.node_id(); }

    // Closes the port (the receives end with ENOENT) and joins; throws what
    // the server failed with.
    void stop()
    {
        if (thread_.joinable()) {
            try {
                service_.close();
            } catch (const lite::Error&) {
                // Already closed: the thread ends all the same.
            }
            thread_.join();
        }
        if (!error_.empty())
            throw std::runtime_error("server: " + error_);
    }

    [[nodiscard]] uint64_t served() const noexcept { return served_; }

private:
    void arm(lite::Ring& ring, size_t i)
    {
        ring.recv(service_, bufs_[i], [this, &ring, i](const lite::Result& r) {
            if (r.error() == ENOENT)
                return; // the port closed: done
            if (!r.ok()) {
                error_ = "receive: " + std::string(std::strerror(r.error()));
                return;
            }
            lite::Incoming in = r.incoming();
            ring.reply(in.token, std::span<const std::byte>(bufs_[i]).first(in.len),
                       [this, &ring, i](const lite::Result& rr) {
                           if (!rr.ok()) {
                               error_ = "reply: " + std::string(std::strerror(rr.error()));
                               return;
                           }
                           served_++;
                           arm(ring, i);
                       });
        });
    }

    void serve()
    {
        try {
            lite::Ring ring(session_, static_cast<unsigned>(bufs_.size()) * 2);
            for (size_t i = 0; i < bufs_.size(); i++)
                arm(ring, i);
            while (ring.in_flight() > 0)
                ring.wait(1);
        } catch (const std::exception& e) {
            error_ = e.what();
        }
    }

    lite::Session session_;
    lite::Service service_;
    std::vector<std::vector<std::byte>> bufs_;
    uint64_t served_ = 0; // the server thread's; read after join
    std::string error_;
    std::thread thread_;
};

// One client thread: @depth calls in flight until @deadline, every reply
// checked; returns the calls answered.
uint64_t pipeline(const Options& opt, uint32_t node, unsigned thread, Clock::time_point deadline,
                  const std::atomic<bool>& abort)
{
    auto session = lite::Session::open(opt.client_instance);
    lite::Ring ring(session, opt.depth * 2);
    std::vector<std::vector<uint8_t>> reqs(opt.depth, std::vector<uint8_t>(opt.size));
    std::vector<std::vector<uint8_t>> replies(opt.depth, std::vector<uint8_t>(opt.size));
    uint64_t issued = 0, answered = 0;
    std::string error;
    std::function<void(size_t)> issue = [&](size_t i) {
        bench::rpc::fill_request(reqs[i], bench::rpc::call_seed(thread, issued++));
        ring.call(node, opt.port, std::as_bytes(std::span(reqs[i])), std::as_writable_bytes(std::span(replies[i])),
                  [&, i](const lite::Result& r) {
                      if (!r.ok()) {
                          if (error.empty())
                              error = "call: " + std::string(std::strerror(r.error()));
                          return;
                      }
                      bench::rpc::check_reply(reqs[i], replies[i], r.value());
                      answered++;
                      if (Clock::now() < deadline && !abort.load(std::memory_order_relaxed))
                          issue(i);
                  });
    };
    for (size_t i = 0; i < opt.depth; i++)
        issue(i);
    ring.drain();
    if (!error.empty())
        throw std::runtime_error(error);
    return answered;
}

int run(const Options& opt)
{
    RingServer server(opt, opt.size);
    (void)std::fprintf(stderr, "%s: %zu-byte calls to node %u, %u in flight per client thread, %u receives\n", kProg,
                       opt.size, server.node(), opt.depth, opt.depth);
    uint64_t calls = 0;
    bench::rpc::print_tput_header();
    for (unsigned n : opt.threads) {
        bench::rpc::Throughput r =
            bench::rpc::run_threads(n, opt.seconds, [&](unsigned t, Clock::time_point deadline, const auto& abort) {
                return pipeline(opt, server.node(), t, deadline, abort);
            });
        bench::rpc::print_tput_row(n, opt.size, r);
        calls += r.calls;
    }
    server.stop();
    if (server.served() != calls) {
        throw std::runtime_error("the server answered " + std::to_string(server.served()) + " calls, the clients saw " +
                                 std::to_string(calls));
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg, "RPC calls per second with calls and receives in flight on io_uring; prints CSV on "
                                 "stdout. The nodes must be up already (litectl up).");
        Options o;
        lite_cli::add_instance(app, o.client_instance, "node instance the calls are made from (default 0)",
                               "--client-instance");
        lite_cli::add_instance(app, o.server_instance, "node instance that serves them (default 1)",
                               "--server-instance");
        lite_cli::add_number(app, "--port", o.port, 1, UINT32_MAX, "RPC port the server registers (default 7002)");
        lite_cli::add_number(app, "--depth", o.depth, 1, 1024,
                             "calls in flight per client thread, and receives in flight at the server (default 32)");
        lite_cli::add_list(app, "--threads", o.threads, 1, bench::rpc::kMaxThreads,
                           "client threads, each with its own ring (default 1)");
        lite_cli::add_number(app, "--size", o.size, 1, LITE_RPC_MAX, "request (and reply) size (default 64)");
        lite_cli::add_number(app, "--seconds", o.seconds, 1, 3600, "per point (default 3)");
        return app.run(argc, argv, [&o] { return run(o); });
    });
}
