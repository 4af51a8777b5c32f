// SPDX-License-Identifier: MIT
//
// RPC echo: a server that answers every call with its request, and a
// client that checks every byte of every reply and reports round trips.
//   echo serve [--instance N] [--port P] [--threads T]
//   echo call [--instance N] --node ID [--port P] [--size BYTES] [--count N] [--timeout MS]
#include "lite_cli.hpp"
#include "util.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <lite/rpc.hpp>
#include <string>
#include <vector>

namespace
{

constexpr uint32_t kDefaultPort = 7;

int serve(unsigned inst, uint32_t port, unsigned threads)
{
    const sigset_t stop_signals = example::block_stop_signals(); // before any thread starts
    auto lite = lite::Session::open(inst);
    lite::Server server(
        lite, port,
        [](const lite::Incoming& /*in*/, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            if (reply.size() < req.size())
                reply.resize(req.size());
            std::copy(req.begin(), req.end(), reply.begin());
            return req.size(); // ignored for one-way messages
        },
        threads);
    std::printf("echo: node %u serving port %u with %u threads (SIGINT or SIGTERM stops)\n", lite.node_id(), port,
                threads);
    (void)std::fflush(stdout);

    const int sig = example::wait_for_stop(stop_signals, [&server] { return server.running(); });
    server.stop();
    const auto st = server.stats();
    if (sig != 0)
        std::printf("echo: stopping on signal %d\n", sig);
    std::printf("echo: answered %llu calls, took %llu messages, %llu replies refused\n",
                static_cast<unsigned long long>(st.calls), static_cast<unsigned long long>(st.messages),
                static_cast<unsigned long long>(st.reply_errors));
    if (auto err = server.error())
        std::rethrow_exception(err);
    return 0;
}

// The request byte at @i of call @seq: differs between calls and positions.
std::byte pattern(uint64_t seq, size_t i)
{
    return static_cast<std::byte>((seq * 131 + i * 7 + (i >> 8) + 1) & 0xff);
}

double us(std::chrono::steady_clock::duration d)
{
    return std::chrono::duration<double, std::micro>(d).count();
}

int call(unsigned inst, uint32_t port, uint32_t node, size_t size, uint64_t count, std::chrono::milliseconds timeout)
{

    auto lite = lite::Session::open(inst);
    std::vector<std::byte> req(size), reply(size);
    std::chrono::steady_clock::duration min{}, max{}, sum{};

    for (uint64_t seq = 0; seq < count; seq++) {
        for (size_t i = 0; i < size; i++) {
            req[i] = pattern(seq, i);
            reply[i] = ~req[i]; // so that a stale buffer cannot pass
        }
        auto t0 = std::chrono::steady_clock::now();
        const size_t len = lite.call(node, port, req, reply, timeout);
        auto rtt = std::chrono::steady_clock::now() - t0;
        if (len != size) {
            (void)std::fprintf(stderr, "echo call %llu: reply of %zu bytes, sent %zu\n",
                               static_cast<unsigned long long>(seq), len, size);
            return 1;
        }
        auto diff = std::mismatch(req.begin(), req.end(), reply.begin());
        if (diff.first != req.end()) {
            const auto at = static_cast<size_t>(diff.first - req.begin());
            (void)std::fprintf(stderr, "echo call %llu: reply byte %zu is 0x%02x, sent 0x%02x\n",
                               static_cast<unsigned long long>(seq), at, std::to_integer<unsigned>(reply[at]),
                               std::to_integer<unsigned>(req[at]));
            return 1;
        }
        min = seq == 0 || rtt < min ? rtt : min;
        max = std::max(max, rtt);
        sum += rtt;
    }
    std::printf("echo: %llu calls of %zu bytes to port %u on node %u, every reply byte correct; "
                "rtt min/avg/max = %.1f/%.1f/%.1f us\n",
                static_cast<unsigned long long>(count), size, port, node, us(min), us(sum) / static_cast<double>(count),
                us(max));
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("echo", [&] {
        lite_cli::App app("echo",
                          "RPC echo: a server that answers every call with its request, and a client that checks "
                          "every byte of every reply and reports round trips.");
        app.require_subcommand(1, 1);
        unsigned inst = 0;
        uint32_t port = kDefaultPort;
        lite_cli::add_instance(app, inst, "the local node instance to attach to (default 0)");
        lite_cli::add_number(app, "--port", port, 1, UINT32_MAX, "RPC port (default 7)");

        auto* serve_cmd = app.add_subcommand("serve", "answer every call to port P with its own bytes, on T threads, "
                                                      "until SIGINT or SIGTERM");
        serve_cmd->fallthrough();
        unsigned threads = 2;
        lite_cli::add_number(*serve_cmd, "--threads", threads, 1, 1024, "server threads (default 2)");

        auto* call_cmd =
            app.add_subcommand("call", "make N calls of BYTES bytes each to port P on node ID, check every "
                                       "byte of every reply, print the round trip times");
        call_cmd->fallthrough();
        uint32_t node = 0;
        size_t size = 64;
        uint64_t count = 10;
        uint32_t timeout_ms = 0;
        lite_cli::add_node(*call_cmd, node, true, "the server's node (0: this node)")->required();
        lite_cli::add_number(*call_cmd, "--size", size, 0, LITE_RPC_MAX,
                             "bytes per call (default 64, at most 4M; K and M suffixes work)");
        lite_cli::add_number(*call_cmd, "--count", count, 1, UINT32_MAX, "calls (default 10)");
        lite_cli::add_number(*call_cmd, "--timeout", timeout_ms, 0, 600000,
                             "limit of each call, ms (default 0: LITE_RPC_TIMEOUT_MS)");

        return app.run(argc, argv, [&] {
            if (serve_cmd->parsed())
                return serve(inst, port, threads);
            return call(inst, port, node, size, count, std::chrono::milliseconds(timeout_ms));
        });
    });
}
