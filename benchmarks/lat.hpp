// SPDX-License-Identifier: MIT
//
// Shared by the latency benchmarks (native_lat.cpp, lite_lat.cpp): command
// line options, timing, percentiles, and the CSV both print on stdout for
// benchmarks/bench.sh to join:
//
//   op,size,iters,median_us,p99_us,min_us
//   write,8,1000,23.41,40.12,15.02
//
// One row per operation and size, operations in the order measured.
// Progress and errors go to stderr.
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bench
{

struct Options {
    unsigned iters = 1000;
    unsigned warmup = 100;
    std::vector<size_t> sizes{8, 64, 512, 4096, 32768};
};

// A command line error: the program prints it with its usage and exits 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Every benchmark's main(): @run's exit status. A UsageError prints
// "@prog: message" and @usage on stderr (exit 2; with no message, the usage
// on stdout, exit 0), any other exception "@prog: message" (exit 1).
inline int guarded_main(const char* prog, const std::string& usage, int (*run)(int, char**), int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const UsageError& e) {
        if (*e.what() == '\0') {
            std::printf("%s", usage.c_str());
            return 0;
        }
        (void)std::fprintf(stderr, "%s: %s\n%s", prog, e.what(), usage.c_str());
        return 2;
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "%s: %s\n", prog, e.what());
        return 1;
    }
}

// Parses a decimal number in [lo, hi]; throws UsageError naming @what.
inline uint64_t parse_number(std::string_view text, std::string_view what, uint64_t lo, uint64_t hi)
{
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc{} || ptr != end || text.empty() || v < lo || v > hi) {
        throw UsageError(std::string(what) + ": '" + std::string(text) + "' is not a number in " + std::to_string(lo) +
                         ".." + std::to_string(hi));
    }
    return v;
}

// "4K", "16M", "1G", "4096": a byte count with an optional K, M or G suffix
// (binary units), in 1..@max; throws UsageError naming @what.
inline uint64_t parse_bytes(std::string_view text, std::string_view what, uint64_t max)
{
    uint64_t unit = 1;
    std::string_view digits = text;
    if (!digits.empty()) {
        switch (digits.back()) {
        case 'K':
        case 'k':
            unit = uint64_t{1} << 10;
            break;
        case 'M':
        case 'm':
            unit = uint64_t{1} << 20;
            break;
        case 'G':
        case 'g':
            unit = uint64_t{1} << 30;
            break;
        default:
            break;
        }
    }
    if (unit != 1)
        digits.remove_suffix(1);
    uint64_t v = 0;
    const char* end = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(digits.data(), end, v);
    if (ec != std::errc{} || ptr != end || digits.empty() || v == 0 || v > max / unit) {
        throw UsageError(std::string(what) + ": '" + std::string(text) + "' is not a size in 1.." +
                         std::to_string(max) + " bytes (a number with an optional K, M or G suffix)");
    }
    return v * unit;
}

// "a,b,c": @one applied to each comma-separated item, in order.
template <typename Fn> auto parse_list(std::string_view text, const Fn& one)
{
    std::vector<decltype(one(text))> items;
    while (true) {
        const size_t comma = text.find(',');
        items.push_back(one(text.substr(0, comma)));
        if (comma == std::string_view::npos)
            break;
        text.remove_prefix(comma + 1);
    }
    return items;
}

// "8,64,512": sizes in bytes, each in 1..@max.
inline std::vector<size_t> parse_sizes(std::string_view text, size_t max)
{
    std::vector<size_t> sizes;
    while (true) {
        size_t comma = text.find(',');
        sizes.push_back(parse_number(text.substr(0, comma), "--sizes", 1, max));
        if (comma == std::string_view::npos)
            break;
        text.remove_prefix(comma + 1);
    }
    return sizes;
}

// Takes --iters, --warmup and --sizes out of argv at @i (advancing it past
// the value); false if argv[i] is none of them.
inline bool parse_common(Options& o, int argc, char** argv, int& i, size_t max_size)
{
    std::string_view arg = argv[i];
    if (arg != "--iters" && arg != "--warmup" && arg != "--sizes")
        return false;
    if (i + 1 >= argc)
        throw UsageError(std::string(arg) + " needs a value");
    std::string_view val = argv[++i];
    if (arg == "--iters") {
        o.iters = static_cast<unsigned>(parse_number(val, arg, 1, 10'000'000));
    } else if (arg == "--warmup") {
        o.warmup = static_cast<unsigned>(parse_number(val, arg, 0, 10'000'000));
    } else {
        o.sizes = parse_sizes(val, max_size);
    }
    return true;
}

constexpr const char* kCommonUsage = R"(  --iters N      timed operations per op and size (default 1000)
  --warmup N     untimed operations before them (default 100)
  --sizes LIST   comma-separated sizes in bytes (default 8,64,512,4096,32768)
)";

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
