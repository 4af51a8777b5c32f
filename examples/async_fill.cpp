// SPDX-License-Identifier: MIT
//
// async_fill: fill an LMR on another node with many writes in flight
// through lite::Ring (io_uring), read it back the same way, check every
// block, and count blocks with one fetch-and-add each.
//   async_fill [--instance N] [--node ID] [--size BYTES] [--block BYTES]
//              [--depth N]
// Prints what it did and how fast; exit 0 if every block came back intact.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <lite/async.hpp>
#include <lite/session.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lite_cli.hpp"

namespace
{

struct Options {
    uint32_t instance = 0;
    uint32_t node = 2;
    uint64_t size = 16 << 20;
    uint64_t block = 4096;
    uint32_t depth = 256;
};

std::byte expected(uint64_t at)
{
    return static_cast<std::byte>((at * 2654435761U) >> 13);
}

double secs_since(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int run(const Options& o)
{
    auto lite = lite::Session::open(o.instance);
    auto lmr = lite.alloc(o.size + 8, o.node); // the last word counts blocks
    lite::Ring ring(lite, o.depth);

    std::vector<std::byte> out(o.size), in(o.size);
    for (uint64_t i = 0; i < o.size; i++)
        out[i] = expected(i);
    const uint64_t blocks = (o.size + o.block - 1) / o.block;
    auto piece = [&](std::vector<std::byte>& v, uint64_t b) {
        return std::span<std::byte>(v).subspan(b * o.block, std::min(o.block, o.size - b * o.block));
    };

    auto t = std::chrono::steady_clock::now();
    size_t peak = 0;
    for (uint64_t b = 0; b < blocks; b++) {
        ring.write(lmr, b * o.block, piece(out, b), [](const lite::Result& r) { (void)r.value(); });
        ring.fetch_add(lmr, o.size, 1, [](const lite::Result& r) { (void)r.value(); });
        peak = std::max(peak, ring.in_flight());
    }
    ring.drain();
    double wsecs = secs_since(t);

    t = std::chrono::steady_clock::now();
    for (uint64_t b = 0; b < blocks; b++)
        ring.read(lmr, b * o.block, piece(in, b), [](const lite::Result& r) { (void)r.value(); });
    ring.drain();
    double rsecs = secs_since(t);

    uint64_t counted = 0;
    ring.fetch_add(lmr, o.size, 0, [&](const lite::Result& r) { counted = r.value(); });
    ring.drain();
    bool same = std::memcmp(out.data(), in.data(), o.size) == 0;
    const double mib = static_cast<double>(o.size) / (1 << 20);
    std::printf("node %u: %llu blocks of %llu bytes to node %u, up to %zu operations in flight\n", lite.node_id(),
                static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(o.block), o.node, peak);
    std::printf("write + fetch_add: %.1f MiB/s; read: %.1f MiB/s; counter %llu; data %s\n", mib / wsecs, mib / rsecs,
                static_cast<unsigned long long>(counted), same ? "identical" : "MISMATCH");
    return same && counted == blocks ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("async_fill", [&] {
        lite_cli::App app("async_fill",
                          "Fill an LMR on another node with many writes in flight through lite::Ring "
                          "(io_uring), read it back, check every block, count blocks with fetch-and-add.");
        Options o;
        lite_cli::add_instance(app, o.instance, "local node instance (default 0)");
        lite_cli::add_node(app, o.node, false, "node that holds the memory (default 2)");
        lite_cli::add_number(app, "--size", o.size, 1, LITE_LMR_MAX, "bytes to fill, K/M/G suffixes (default 16M)");
        lite_cli::add_number(app, "--block", o.block, 1, 4 << 20,
                             "bytes per write (default 4K, at most 64K for the no-wait path)");
        lite_cli::add_number(app, "--depth", o.depth, 1, 4096,
                             "io_uring submission entries; twice as many may be in flight (default 256)");
        return app.run(argc, argv, [&o] { return run(o); });
    });
}
