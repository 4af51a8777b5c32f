// SPDX-License-Identifier: MIT
//
// lite-lat: LITE_write, LITE_read, LITE_fetch_add and LITE_cmp_swap latency
// (NIC atomics, then the memory node's CPU: rows cpu-fetch-add, cpu-cmp-swap)
// and the floor under them (rows floor-ioctl: the system call alone;
// floor-write: LITE_write of 0 bytes, the checks without RDMA)
// through liblite's C API
// (lite/lite.h), to compare with native-lat (see benchmarks/bench.sh).
//
// Brings nothing up itself: the nodes must already run (litectl up). It
// attaches to node instance INSTANCE, allocates one LMR of LMR_SIZE bytes
// on node NODE, checks once per size that what LITE_write stores
// LITE_read returns, then times one call at a time at offset 0: each call
// returns when the transfer has completed.
//
// Prints CSV on stdout (format in lat.hpp); exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"

#include <lite/lite.h>

#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace
{

using bench::Lite;
using bench::lite_error;
using bench::Lmr;
using bench::open_lite;

constexpr const char* kProg = "lite-lat";

// No command of /dev/lite (its ioctl type is LITE_IOC_MAGIC, 0xE1).
constexpr unsigned long kUnknownIoctl = 0x7fff;

struct Args {
    bench::Options opt;
    unsigned instance = 0;
    uint32_t node = 2;
    uint64_t lmr_size = 65536;
};

uint32_t g_flags = 0; // LITE_RW_* from --path

void write_lmr(lite_t* lite, const Lmr& lmr, const std::vector<uint8_t>& buf, size_t len)
{
    if (int rc = LITE_write_flags(lite, lmr.handle(), 0, buf.data(), len, g_flags); rc < 0)
        throw lite_error("LITE_write(" + std::to_string(len) + " bytes)", rc);
}

void read_lmr(lite_t* lite, const Lmr& lmr, std::vector<uint8_t>& buf, size_t len)
{
    if (int rc = LITE_read_flags(lite, lmr.handle(), 0, buf.data(), len, g_flags); rc < 0)
        throw lite_error("LITE_read(" + std::to_string(len) + " bytes)", rc);
}

// LITE_fetch_add and LITE_cmp_swap on the LMR's first word (8 bytes), each
// checked once: the old value returned and the word after. Rows are named
// @prefix-fetch-add and @prefix-cmp-swap (no prefix: an LMR of NIC atomics).
void measure_atomics(lite_t* lite, const Lmr& lmr, const bench::Options& opt, const std::string& prefix)
{
    uint64_t old = 0;
    auto call = [](int rc, const char* what) {
        if (rc < 0)
            throw lite_error(what, rc);
    };
    call(LITE_cmp_swap(lite, lmr.handle(), 0, 0, 0, &old), "LITE_cmp_swap"); // read the word
    const uint64_t base = old;
    call(LITE_fetch_add(lite, lmr.handle(), 0, 5, &old), "LITE_fetch_add");
    uint64_t now = 0;
    call(LITE_fetch_add(lite, lmr.handle(), 0, 0, &now), "LITE_fetch_add");
    if (old != base || now != base + 5)
        throw std::runtime_error("LITE_fetch_add: wrong old value returned or wrong result");
    call(LITE_cmp_swap(lite, lmr.handle(), 0, now, 42, &old), "LITE_cmp_swap");
    call(LITE_fetch_add(lite, lmr.handle(), 0, 0, &now), "LITE_fetch_add");
    if (old != base + 5 || now != 42)
        throw std::runtime_error("LITE_cmp_swap: wrong old value returned or wrong result");

    bench::Stats s =
        bench::measure(opt, [&] { call(LITE_fetch_add(lite, lmr.handle(), 0, 1, &old), "LITE_fetch_add"); });
    bench::print_csv_row((prefix + "fetch-add").c_str(), 8, opt, s);
    s = bench::measure(opt, [&] { call(LITE_cmp_swap(lite, lmr.handle(), 0, 1, 2, &old), "LITE_cmp_swap"); });
    bench::print_csv_row((prefix + "cmp-swap").c_str(), 8, opt, s);
}

int run(const Args& a)
{
    const auto& opt = a.opt;
    const auto& instance = a.instance;
    const auto& node = a.node;
    const auto& lmr_size = a.lmr_size;
    const size_t len = *std::max_element(opt.sizes.begin(), opt.sizes.end());
    if (len > lmr_size) {
        throw lite_cli::UsageError("--sizes: " + std::to_string(len) + " bytes do not fit in the LMR of " +
                                   std::to_string(lmr_size) + " bytes (--lmr-size)");
    }

    Lite lite = open_lite(instance);
    const uint32_t self = LITE_node_id(lite.get());
    if (self == node)
        (void)std::fprintf(stderr, "%s: warning: node %u is this node: the LMR is local, not remote\n", kProg, node);
    Lmr lmr(lite.get(), lmr_size, node);
    (void)std::fprintf(stderr, "%s: instance %u (node %u), LMR of %llu bytes on node %u, %u+%u iterations\n", kProg,
                       instance, self, static_cast<unsigned long long>(lmr_size), node, opt.warmup, opt.iters);

    std::vector<uint8_t> out(len);
    std::vector<uint8_t> in(len);
    unsigned seed = 0;
    for (size_t size : opt.sizes) {
        bench::fill_pattern(out, size, ++seed);
        std::fill(in.begin(), in.end(), 0);
        write_lmr(lite.get(), lmr, out, size);
        read_lmr(lite.get(), lmr, in, size);
        if (!std::equal(out.begin(), out.begin() + static_cast<long>(size), in.begin())) {
            throw std::runtime_error("LITE_read of " + std::to_string(size) +
                                     " bytes did not return what LITE_write stored");
        }
    }

    bench::print_csv_header();
    for (size_t size : opt.runs(bench::Only::write) ? opt.sizes : std::vector<size_t>{}) {
        bench::Stats s = bench::measure(opt, [&] { write_lmr(lite.get(), lmr, out, size); });
        bench::print_csv_row("write", size, opt, s);
    }
    for (size_t size : opt.runs(bench::Only::read) ? opt.sizes : std::vector<size_t>{}) {
        bench::Stats s = bench::measure(opt, [&] { read_lmr(lite.get(), lmr, in, size); });
        bench::print_csv_row("read", size, opt, s);
    }
    if (opt.only != bench::Only::all)
        return 0;
    // What a one-sided call costs before any RDMA: the system call alone
    // (a command /dev/lite does not know: ENOTTY), then LITE_write of 0
    // bytes (the system call, the copy-in of its arguments, the handle
    // and bounds checks; it returns before the transfer).
    const int fd = LITE_fd(lite.get());
    bench::Stats floor = bench::measure(opt, [&] {
        if (::ioctl(fd, kUnknownIoctl, nullptr) != -1 || errno != ENOTTY)
            throw std::runtime_error("an unknown ioctl did not fail with ENOTTY");
    });
    bench::print_csv_row("floor-ioctl", 0, opt, floor);
    floor = bench::measure(opt, [&] { write_lmr(lite.get(), lmr, out, 0); });
    bench::print_csv_row("floor-write", 0, opt, floor);
    // The two atomic domains (docs/uapi.md): one-sided NIC atomics on an
    // LMR of LITE_LMR_NIC_ATOMIC, the memory node's CPU on any other.
    Lmr nic(lite.get(), 4096, node, LITE_LMR_NIC_ATOMIC);
    measure_atomics(lite.get(), nic, opt, "");
    measure_atomics(lite.get(), lmr, opt, "cpu-");
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "LITE_write/LITE_read latency to an LMR on a lite node; prints CSV on stdout. The nodes "
                          "must be up already (litectl up).");
        Args a;
        lite_cli::add_instance(app, a.instance, "local node instance to attach to (default 0)");
        lite_cli::add_node(app, a.node, false, "node that holds the LMR (default 2)");
        lite_cli::add_number(app, "--lmr-size", a.lmr_size, 1, LITE_LMR_MAX,
                             "LMR size (default 65536); every size must fit in it");
        lite_cli::add_choice(
            app, "--path", g_flags,
            {{"auto", 0U}, {"copy", uint32_t{LITE_RW_COPY}}, {"zcopy", uint32_t{LITE_RW_ZCOPY}}},
            "auto (default: the kernel picks: pages it keeps pinned, else by size), copy (through a kernel "
            "buffer) or zcopy (user pages kept pinned, or pinned for the call)");
        bench::add_common(app, a.opt, LITE_LMR_MAX); // sizes are checked against the LMR size in run()
        bench::add_only(app, a.opt);
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
