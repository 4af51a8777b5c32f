// SPDX-License-Identifier: MIT
//
// RPC echo: a server that answers every call with its request, and a
// client that checks every byte of every reply and reports round trips.
//   echo serve [--instance N] [--port P] [--threads T]
//   echo call [--instance N] --node ID [--port P] [--size BYTES] [--count N] [--timeout MS]
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

constexpr const char* kUsage = R"(usage: echo serve [--instance N] [--port P] [--threads T]
       echo call [--instance N] --node ID [--port P] [--size BYTES] [--count N] [--timeout MS]
  serve: answer every call to port P (default 7) with its own bytes, on T
         threads (default 2), until SIGINT or SIGTERM
  call:  make N calls (default 10) of BYTES bytes each (default 64, at most
         4M; K and M suffixes work) to port P on node ID (0: this node),
         check every byte of every reply, print the round trip times
  --instance: the local node instance to attach to (default 0)
)";

constexpr uint32_t kDefaultPort = 7;

int serve(example::Args& args, unsigned inst, uint32_t port)
{
    auto threads_text = args.take("--threads");
    if (!args.rest().empty())
        throw example::UsageError{"unexpected argument '" + args.rest()[0] + "'"};
    const unsigned threads = threads_text ? example::to_u32(*threads_text, "--threads", 1, 1024) : 2;

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

int call(example::Args& args, unsigned inst, uint32_t port)
{
    auto node_text = args.take("--node");
    auto size_text = args.take("--size");
    auto count_text = args.take("--count");
    auto timeout_text = args.take("--timeout");
    if (!args.rest().empty())
        throw example::UsageError{"unexpected argument '" + args.rest()[0] + "'"};
    if (!node_text)
        throw example::UsageError{"call needs --node ID"};
    const uint32_t node = example::to_u32(*node_text, "--node", 0, LITE_MAX_NODES);
    const size_t size = size_text ? example::to_u64(*size_text, "--size", 0, LITE_RPC_MAX) : 64;
    const uint64_t count = count_text ? example::to_u64(*count_text, "--count", 1, UINT32_MAX) : 10;
    const std::chrono::milliseconds timeout(timeout_text ? example::to_u32(*timeout_text, "--timeout", 0, 600000) : 0);

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

int run(int argc, char** argv)
{
    if (argc < 2 || std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help") {
        (void)std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string cmd = argv[1];
    if (cmd != "serve" && cmd != "call")
        throw example::UsageError{"unknown command '" + cmd + "'"};
    example::Args args(argc, argv, 2);
    auto instance = args.take("--instance");
    auto port_text = args.take("--port");
    const unsigned inst = instance ? example::to_u32(*instance, "--instance", 0, UINT32_MAX) : 0;
    const uint32_t port = port_text ? example::to_u32(*port_text, "--port", 1, UINT32_MAX) : kDefaultPort;
    return cmd == "serve" ? serve(args, inst, port) : call(args, inst, port);
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const example::UsageError& e) {
        (void)std::fprintf(stderr, "echo: %s\n%s", e.msg.c_str(), kUsage);
        return 2;
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "echo: %s\n", e.what());
        return 1;
    }
}
