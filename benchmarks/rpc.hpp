// SPDX-License-Identifier: MIT
//
// Shared by the RPC benchmarks (native_rpc.cpp, lite_rpc.cpp): options, the
// request data and the check of its reply, the latency and throughput
// drivers, and the CSV both print on stdout for benchmarks/bench.sh:
//
//   --mode lat    op,size,iters,median_us,p99_us,mean_us
//                 rpc,8,1000,61.20,120.33,70.10
//                 (op is rpc-event for native-rpc --poll event)
//   --mode tput   threads,size,calls,seconds,calls_per_s
//                 2,64,21034,3.002,7006.7
//
// A call is a request of SIZE bytes and its reply, which must be the request
// echoed back: every reply is checked (its length and every byte), and a
// wrong one fails the program instead of being counted. The request data
// differs per client thread and per call, so a stale or misdelivered reply
// is caught as well. In latency mode only the call itself is timed: the
// request is filled before the clock starts and the reply checked after it
// stops. In throughput mode filling and checking are part of every call.
// Progress and errors go to stderr.
#pragma once

#include "lat.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <latch>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace bench::rpc
{

using Clock = std::chrono::steady_clock;

enum class Mode { lat, tput };

constexpr unsigned kMaxThreads = 64;

struct RpcOptions {
    Mode mode = Mode::lat;
    Options lat{1000, 100, {8, 64, 512, 4096, 32768, 65536}};
    std::vector<unsigned> threads{1, 2, 4};
    size_t size = 64;
    unsigned seconds = 3;

    // The largest request (and reply) of the run.
    [[nodiscard]] size_t max_size() const
    {
        return mode == Mode::lat ? *std::max_element(lat.sizes.begin(), lat.sizes.end()) : size;
    }
    // Client threads at once, at most.
    [[nodiscard]] unsigned max_threads() const
    {
        return mode == Mode::lat ? 1 : *std::max_element(threads.begin(), threads.end());
    }
};

// --mode, --iters, --warmup, --sizes (in 1..@max_size), --threads, --size
// (in 1..@max_size) and --seconds into @o, the help naming @o's values as
// the defaults.
inline void add_rpc(CLI::App& app, RpcOptions& o, size_t max_size)
{
    lite_cli::add_choice(app, "--mode", o.mode, {{"lat", Mode::lat}, {"tput", Mode::tput}},
                         "lat (default): one call at a time, per size; tput: calls per second from several client "
                         "threads at once");
    add_common(app, o.lat, max_size, "calls", "lat: ");
    lite_cli::add_list(app, "--threads", o.threads, 1, kMaxThreads,
                       "tput: comma-separated client thread counts (default " + lite_cli::join(o.threads) + ")");
    lite_cli::add_number(app, "--size", o.size, 1, max_size,
                         "tput: request size (default " + std::to_string(o.size) + ")");
    lite_cli::add_number(app, "--seconds", o.seconds, 1, 3600,
                         "tput: time per thread count (default " + std::to_string(o.seconds) + ")");
}

// The request data of call @call of client thread @thread: different for
// every call of a run.
inline uint64_t call_seed(unsigned thread, uint64_t call)
{
    return (uint64_t{thread} << 48) ^ call;
}

// Fills @buf with data that depends on @seed: every 8-byte word differs
// between two seeds.
inline void fill_request(std::span<uint8_t> buf, uint64_t seed)
{
    const uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL;
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= buf.size(); i += sizeof(uint64_t)) {
        const uint64_t w = x ^ (i * 0xff51afd7ed558ccdULL);
        std::memcpy(&buf[i], &w, sizeof(w));
    }
    for (; i < buf.size(); i++)
        buf[i] = static_cast<uint8_t>((x >> (8 * (i % 8))) ^ i);
}

// Throws unless the reply of @reply_len bytes, the start of @reply, is
// @request.
inline void check_reply(std::span<const uint8_t> request, std::span<const uint8_t> reply, size_t reply_len)
{
    if (reply_len != request.size()) {
        throw std::runtime_error("wrong reply: " + std::to_string(reply_len) + " bytes for a request of " +
                                 std::to_string(request.size()) + " (the server echoes the request)");
    }
    if (reply_len > reply.size()) {
        throw std::runtime_error("wrong reply: " + std::to_string(reply_len) +
                                 " bytes reported, but the buffer holds " + std::to_string(reply.size()));
    }
    auto [req_at, reply_at] = std::mismatch(request.begin(), request.end(), reply.begin());
    if (req_at != request.end()) {
        throw std::runtime_error("wrong reply to a request of " + std::to_string(request.size()) +
                                 " bytes: it first differs from the request at byte " +
                                 std::to_string(req_at - request.begin()));
    }
}

// One call at a time: @client.fill(size, seed) writes the request,
// @client.call(size) makes the call and returns when the reply is in,
// @client.check(size) throws unless the reply is right. @o.warmup calls,
// then @o.iters timed ones; @seq numbers the calls of the run.
template <typename Client> Stats measure_calls(const Options& o, size_t size, uint64_t& seq, Client& client)
{
    std::vector<int64_t> ns;
    ns.reserve(o.iters);
    for (unsigned i = 0; i < o.warmup + o.iters; i++) {
        client.fill(size, call_seed(0, seq++));
        const auto t0 = Clock::now();
        client.call(size);
        const auto t1 = Clock::now();
        client.check(size);
        if (i >= o.warmup)
            ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
    return summarize(std::move(ns));
}

// Calls through @client (as measure_calls) as client thread @thread until
// @deadline, or until @abort is set (by a thread that failed); at least one.
// Returns the number of calls.
template <typename Client>
uint64_t call_until(Client& client, unsigned thread, size_t size, Clock::time_point deadline,
                    const std::atomic<bool>& abort)
{
    uint64_t calls = 0;
    do {
        client.fill(size, call_seed(thread, calls));
        client.call(size);
        client.check(size);
        calls++;
    } while (!abort.load(std::memory_order_relaxed) && Clock::now() < deadline);
    return calls;
}

struct Throughput {
    uint64_t calls = 0;
    double seconds = 0; // from the common start until the last thread ended
};

// Starts @n threads together, each running @body(thread, deadline, abort)
// (which returns its number of calls, see call_until) with a deadline
// @seconds after the start. If one throws, the others are told to stop
// (abort) and the first error is rethrown once all have ended.
template <typename Body> Throughput run_threads(unsigned n, unsigned seconds, const Body& body)
{
    std::latch start(static_cast<std::ptrdiff_t>(n) + 1);
    std::atomic<bool> abort{false};
    std::vector<uint64_t> calls(n, 0);
    std::vector<std::exception_ptr> errors(n);
    Clock::time_point t0;
    Clock::time_point deadline; // written before the latch opens
    std::vector<std::thread> threads;
    threads.reserve(n);
    try {
        for (unsigned t = 0; t < n; t++) {
            threads.emplace_back([&, t] {
                try {
                    start.arrive_and_wait();
                    if (!abort.load())
                        calls[t] = body(t, deadline, abort);
                } catch (...) {
                    errors[t] = std::current_exception();
                    abort.store(true);
                }
            });
        }
    } catch (...) { // no thread for all of them: let the others go and end
        abort.store(true);
        start.count_down(static_cast<std::ptrdiff_t>(n - threads.size()) + 1);
        for (std::thread& th : threads)
            th.join();
        throw;
    }
    t0 = Clock::now();
    deadline = t0 + std::chrono::seconds(seconds);
    start.count_down();
    for (std::thread& th : threads)
        th.join();
    const auto t1 = Clock::now();
    for (const std::exception_ptr& e : errors) {
        if (e)
            std::rethrow_exception(e);
    }
    Throughput r;
    for (uint64_t c : calls)
        r.calls += c;
    r.seconds = std::chrono::duration<double>(t1 - t0).count();
    return r;
}

inline void print_lat_header()
{
    std::printf("op,size,iters,median_us,p99_us,mean_us\n");
}

// @op is "rpc" (native-rpc adds its poll mode: "rpc-event").
inline void print_lat_row(const char* op, size_t size, const Options& o, const Stats& s)
{
    std::printf("%s,%zu,%u,%.2f,%.2f,%.2f\n", op, size, o.iters, s.median_us, s.p99_us, s.mean_us);
    (void)std::fflush(stdout); // bench.sh may be watching
}

inline void print_tput_header()
{
    std::printf("threads,size,calls,seconds,calls_per_s\n");
}

inline void print_tput_row(unsigned threads, size_t size, const Throughput& r)
{
    std::printf("%u,%zu,%llu,%.3f,%.1f\n", threads, size, static_cast<unsigned long long>(r.calls), r.seconds,
                static_cast<double>(r.calls) / r.seconds);
    (void)std::fflush(stdout);
}

} // namespace bench::rpc
