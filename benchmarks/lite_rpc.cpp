// SPDX-License-Identifier: MIT
//
// lite-rpc: RPC round trips through liblite's C API (LITE_rpc_call,
// LITE_rpc_reply_recv in lite/lite.h), to compare with native-rpc
// (see benchmarks/bench.sh).
//
// Brings nothing up itself: the nodes must already run (litectl up). One
// process is both sides: it attaches to node instance SERVER_INSTANCE,
// registers PORT there and echoes every call from as many server threads as
// the run has client threads at most (each LITE_rpc_reply_recv: the echo of
// the last call and the next receive in one system call); and it attaches
// to CLIENT_INSTANCE
// and calls PORT on the server instance's node, one call at a time per
// client thread. Every reply is checked against its request (rpc.hpp): a
// wrong reply, or a server thread that failed, fails the run.
//
// Prints CSV on stdout (format in rpc.hpp); exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"
#include "rpc.hpp"

#include <lite/lite.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

using bench::Lite;
using bench::lite_error;
using bench::open_lite;

using bench::rpc::Clock;

constexpr const char* kProg = "lite-rpc";
constexpr uint32_t kRecvWaitMs = 200; // a server thread looks for stop this often

struct Args {
    bench::rpc::RpcOptions opt;
    unsigned client_instance = 0;
    unsigned server_instance = 1;
    uint32_t port = 7001;
    uint32_t timeout_ms = 5000;
};

// @port registered on @lite and served by @threads echo threads while this
// exists.
class EchoServer
{
public:
    EchoServer(lite_t* lite, uint32_t port, unsigned threads, size_t cap) : lite_(lite), port_(port), errors_(threads)
    {
        if (int rc = LITE_rpc_register(lite, port); rc < 0)
            throw lite_error("LITE_rpc_register(port " + std::to_string(port) + ")", rc);
        try {
            threads_.reserve(threads);
            for (unsigned t = 0; t < threads; t++) {
                threads_.emplace_back(
                    [this, t, cap](const std::stop_token& st) { serve(errors_[t], std::vector<uint8_t>(cap), st); });
            }
        } catch (...) {
            end();
            throw;
        }
    }
    EchoServer(const EchoServer&) = delete;
    EchoServer& operator=(const EchoServer&) = delete;
    EchoServer(EchoServer&&) = delete;
    EchoServer& operator=(EchoServer&&) = delete;
    ~EchoServer() { end(); }

    // Stops the threads and unregisters the port; throws the first error a
    // thread failed with, or the unregister's.
    void stop()
    {
        end();
        throw_thread_error();
        if (unregister_rc_ < 0)
            throw lite_error("LITE_rpc_unregister(port " + std::to_string(port_) + ")", unregister_rc_);
    }

    // Stops the threads and unregisters the port; throws the first error a
    // thread failed with, if one did. For a client that failed: a server
    // thread's error is the cause, the client's only its symptom.
    void stop_after_client_error()
    {
        end();
        throw_thread_error();
    }

    [[nodiscard]] uint64_t served() const { return served_.load(); }

private:
    void throw_thread_error() const
    {
        for (const std::exception_ptr& e : errors_) {
            if (e)
                std::rethrow_exception(e);
        }
    }

    void serve(std::exception_ptr& error, std::vector<uint8_t> buf, const std::stop_token& st) noexcept
    {
        try {
            // Each echo goes out with the next receive (one system call per
            // call): the reply is read from buf before the next request
            // lands in it.
            uint64_t token = 0;
            size_t len = 0;
            while (!st.stop_requested()) {
                lite_rpc_in_t in{};
                int rc =
                    LITE_rpc_reply_recv(lite_, token, buf.data(), len, port_, buf.data(), buf.size(), kRecvWaitMs, &in);
                if (token != 0) {
                    if (in.reply_status < 0) {
                        throw lite_error("server: LITE_rpc_reply_recv(reply of " + std::to_string(len) + " bytes)",
                                         in.reply_status);
                    }
                    served_.fetch_add(1, std::memory_order_relaxed);
                    token = 0;
                }
                if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
                    continue; // nothing yet: look at st again
                if (rc < 0)
                    throw lite_error("server: LITE_rpc_reply_recv(port " + std::to_string(port_) + ")", rc);
                if (in.token == 0) {
                    throw std::runtime_error("server: a one-way message of " + std::to_string(in.len) +
                                             " bytes from node " + std::to_string(in.src_node) +
                                             " arrived; only calls were expected");
                }
                if (in.len > buf.size()) {
                    throw std::runtime_error("server: LITE_rpc_recv reported " + std::to_string(in.len) +
                                             " bytes in a buffer of " + std::to_string(buf.size()));
                }
                token = in.token;
                len = in.len;
            }
            if (token != 0) {
                int rc = LITE_rpc_reply(lite_, token, buf.data(), len);
                if (rc < 0)
                    throw lite_error("server: LITE_rpc_reply(" + std::to_string(len) + " bytes)", rc);
                served_.fetch_add(1, std::memory_order_relaxed);
            }
        } catch (...) {
            error = std::current_exception();
        }
    }

    // Stops and joins the threads, then unregisters the port (once).
    void end() noexcept
    {
        for (std::jthread& t : threads_)
            t.request_stop();
        for (std::jthread& t : threads_) {
            if (t.joinable())
                t.join();
        }
        if (registered_) {
            registered_ = false;
            unregister_rc_ = LITE_rpc_unregister(lite_, port_);
            if (unregister_rc_ < 0) {
                (void)std::fprintf(stderr, "%s: warning: LITE_rpc_unregister(port %u) failed: %s\n", kProg, port_,
                                   LITE_strerror(unregister_rc_));
            }
        }
    }

    lite_t* lite_;
    uint32_t port_;
    bool registered_ = true;
    int unregister_rc_ = 0;
    std::atomic<uint64_t> served_{0};
    std::vector<std::exception_ptr> errors_; // one per thread
    std::vector<std::jthread> threads_;
};

// One client thread's calls, for the drivers in rpc.hpp. The reply buffer
// is as large as the largest request, so a reply longer than its request
// would still arrive, and fail the check.
class Client
{
public:
    Client(lite_t* lite, uint32_t node, uint32_t port, uint32_t timeout_ms, size_t cap)
        : lite_(lite), node_(node), port_(port), timeout_ms_(timeout_ms), request_(cap), reply_(cap)
    {
    }

    void fill(size_t size, uint64_t seed) { bench::rpc::fill_request(std::span(request_).first(size), seed); }

    void call(size_t size)
    {
        reply_len_ = 0;
        int rc = LITE_rpc_call(lite_, node_, port_, request_.data(), size, reply_.data(), reply_.size(), &reply_len_,
                               timeout_ms_);
        if (rc < 0) {
            throw lite_error("LITE_rpc_call(node " + std::to_string(node_) + ", port " + std::to_string(port_) + ", " +
                                 std::to_string(size) + " bytes)",
                             rc);
        }
    }

    void check(size_t size) { bench::rpc::check_reply(std::span(request_).first(size), reply_, reply_len_); }

private:
    lite_t* lite_;
    uint32_t node_;
    uint32_t port_;
    uint32_t timeout_ms_;
    std::vector<uint8_t> request_;
    std::vector<uint8_t> reply_;
    size_t reply_len_ = 0;
};

// Makes the calls of the run from @lite to @port on @node, prints the CSV;
// returns the number of calls.
uint64_t measure(const bench::rpc::RpcOptions& opt, lite_t* lite, uint32_t node, uint32_t port, uint32_t timeout_ms)
{
    const size_t cap = opt.max_size();
    uint64_t calls = 0;
    if (opt.mode == bench::rpc::Mode::lat) {
        (void)std::fprintf(stderr, "%s: latency, %u+%u calls per size\n", kProg, opt.lat.warmup, opt.lat.iters);
        Client client(lite, node, port, timeout_ms, cap);
        uint64_t seq = 0;
        bench::rpc::print_lat_header();
        for (size_t size : opt.lat.sizes) {
            bench::Stats s = bench::rpc::measure_calls(opt.lat, size, seq, client);
            bench::rpc::print_lat_row("rpc", size, opt.lat, s);
        }
        calls = seq;
    } else {
        (void)std::fprintf(stderr, "%s: throughput, %zu-byte calls, %u s per point\n", kProg, opt.size, opt.seconds);
        bench::rpc::print_tput_header();
        for (unsigned n : opt.threads) {
            bench::rpc::Throughput r =
                bench::rpc::run_threads(n, opt.seconds, [&](unsigned t, Clock::time_point deadline, const auto& abort) {
                    Client client(lite, node, port, timeout_ms, cap);
                    return bench::rpc::call_until(client, t, opt.size, deadline, abort);
                });
            bench::rpc::print_tput_row(n, opt.size, r);
            calls += r.calls;
        }
    }
    return calls;
}

int run(const Args& a)
{
    const auto& opt = a.opt;
    const auto& client_instance = a.client_instance;
    const auto& server_instance = a.server_instance;
    const auto& port = a.port;
    const auto& timeout_ms = a.timeout_ms;
    const size_t cap = opt.max_size();

    Lite server_lite = open_lite(server_instance);
    Lite client_lite = open_lite(client_instance);
    const uint32_t server_node = LITE_node_id(server_lite.get());
    const uint32_t client_node = LITE_node_id(client_lite.get());
    if (server_node == client_node) {
        (void)std::fprintf(stderr, "%s: warning: client and server are both node %u: the calls are local\n", kProg,
                           server_node);
    }
    EchoServer server(server_lite.get(), port, opt.max_threads(), cap);
    (void)std::fprintf(stderr, "%s: node %u (instance %u) calls port %u on node %u (instance %u, %u server threads)\n",
                       kProg, client_node, client_instance, port, server_node, server_instance, opt.max_threads());

    uint64_t calls = 0;
    try {
        calls = measure(opt, client_lite.get(), server_node, port, timeout_ms);
    } catch (...) {
        server.stop_after_client_error();
        throw;
    }
    server.stop();
    // Every checked reply came from one served call; more served calls than
    // that would mean some call was delivered twice.
    if (server.served() != calls) {
        throw std::runtime_error("the server answered " + std::to_string(server.served()) +
                                 " calls, the clients made " + std::to_string(calls));
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "RPC round trips through lite (LITE_rpc_call to an echo server on another node); prints "
                          "CSV on stdout. The nodes must be up already (litectl up).");
        Args a;
        lite_cli::add_instance(app, a.client_instance, "node instance the calls are made from (default 0)",
                               "--client-instance");
        lite_cli::add_instance(app, a.server_instance, "node instance that serves them (default 1)",
                               "--server-instance");
        lite_cli::add_number(app, "--port", a.port, 1, UINT32_MAX, "RPC port the server registers (default 7001)");
        lite_cli::add_number(app, "--timeout-ms", a.timeout_ms, 1, 3'600'000, "limit of each call (default 5000)");
        bench::rpc::add_rpc(app, a.opt, LITE_RPC_MAX);
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
