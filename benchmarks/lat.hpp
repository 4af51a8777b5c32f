// SPDX-License-Identifier: MIT
//
// Shared by the latency benchmarks (native_lat.cpp, lite_lat.cpp): command
// line options (on tools/cli/lite_cli.hpp), timing, percentiles, and the CSV both print on stdout for
// benchmarks/bench.sh to join:
//
//   op,size,iters,median_us,p99_us,min_us
//   write,8,1000,23.41,40.12,15.02
//
// One row per operation and size, operations in the order measured.
// Progress and errors go to stderr.
#pragma once

#include "lite_cli.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench
{

enum class Only { all, write, read };

struct Options {
    unsigned iters = 1000;
    unsigned warmup = 100;
    std::vector<size_t> sizes{8, 64, 512, 4096, 32768};
    Only only = Only::all; // --only: one operation (for profiling it alone)

    [[nodiscard]] bool runs(Only op) const { return only == Only::all || only == op; }
};

// --iters, --warmup and --sizes (each size in 1..@max_size) into @o; the
// help names @o's values as the defaults and @what is timed ("operations").
inline void add_common(CLI::App& app, Options& o, size_t max_size, const std::string& what = "operations",
                       const std::string& prefix = "")
{
    lite_cli::add_number(app, "--iters", o.iters, 1, 10'000'000,
                         prefix + "timed " + what + " per size (default " + std::to_string(o.iters) + ")");
    lite_cli::add_number(app, "--warmup", o.warmup, 0, 10'000'000,
                         prefix + "untimed " + what + " before them (default " + std::to_string(o.warmup) + ")");
    lite_cli::add_list(app, "--sizes", o.sizes, 1, max_size,
                       prefix + "comma-separated sizes in bytes (default " + lite_cli::join(o.sizes) + ")");
}

// --only write|read: time that operation alone (default: every one).
inline void add_only(CLI::App& app, Options& o)
{
    lite_cli::add_choice(app, "--only", o.only, {{"write", Only::write}, {"read", Only::read}},
                         "time only this operation, to profile it alone (default: all of them)");
}

struct Stats {
    double median_us = 0;
    double p99_us = 0;
    double min_us = 0;
    double mean_us = 0;
};

// Median (mean of the two middle samples for an even count), p99 by nearest
// rank, minimum and mean of the samples (nanoseconds), in microseconds.
inline Stats summarize(std::vector<int64_t> ns)
{
    if (ns.empty())
        throw std::logic_error("summarize: no samples");
    std::sort(ns.begin(), ns.end());
    const size_t n = ns.size();
    const size_t p99_rank = (n * 99 + 99) / 100; // ceil(0.99 n), 1-based
    Stats s;
    s.median_us = static_cast<double>(ns[(n - 1) / 2] + ns[n / 2]) / 2000.0;
    s.p99_us = static_cast<double>(ns[p99_rank - 1]) / 1000.0;
    s.min_us = static_cast<double>(ns.front()) / 1000.0;
    double sum = 0;
    for (int64_t v : ns)
        sum += static_cast<double>(v);
    s.mean_us = sum / static_cast<double>(n) / 1000.0;
    return s;
}

// Runs @op @warmup times untimed, then @iters times timed one by one;
// @op does one complete operation (returns when it has completed).
template <typename Op> Stats measure(const Options& o, Op&& op)
{
    using clock = std::chrono::steady_clock;
    for (unsigned i = 0; i < o.warmup; i++)
        op();
    std::vector<int64_t> ns;
    ns.reserve(o.iters);
    for (unsigned i = 0; i < o.iters; i++) {
        const auto t0 = clock::now();
        op();
        const auto t1 = clock::now();
        ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
    return summarize(std::move(ns));
}

inline void print_csv_header()
{
    std::printf("op,size,iters,median_us,p99_us,min_us\n");
}

inline void print_csv_row(const char* op, size_t size, const Options& o, const Stats& s)
{
    std::printf("%s,%zu,%u,%.2f,%.2f,%.2f\n", op, size, o.iters, s.median_us, s.p99_us, s.min_us);
    (void)std::fflush(stdout); // bench.sh may be watching
}

// A byte pattern that differs per size and round, to check data moved.
inline void fill_pattern(uint8_t* buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = static_cast<uint8_t>((i * 131 + size_t{seed} * 7 + len) & 0xff);
}

inline void fill_pattern(std::vector<uint8_t>& buf, size_t len, unsigned seed)
{
    fill_pattern(buf.data(), len, seed);
}

} // namespace bench
