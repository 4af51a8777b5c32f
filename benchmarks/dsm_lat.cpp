// SPDX-License-Identifier: MIT
//
// dsm-lat: DSM fault latency against one raw 4 KiB LITE_read, measured in
// the same run on the same nodes. Three local nodes must be up (litectl
// up); INSTANCES names them: the first is the region's home, the second
// faults, the third is one more sharer.
//
//   raw_read       LITE_read of 4 KiB from an LMR on the home, through the
//                  faulting node
//   read_fault     the faulting node's first load of a page the home wrote
//                  and a third node read since (SHARED: one RDMA READ)
//   read_fault_dirty  ... of a page the home has just written (EXCL at the
//                  home: it is downgraded first)
//   write_fault_0  first store to a page nobody wrote (zero fill)
//   write_fault_1  first store to a page the home holds (invalidated)
//   write_fault_2  first store to a page the home and the third node read
//                  (both invalidated)
//
// and the same faults through the user-level baseline (dsm/udsm.cpp, the
// same protocol over liblite with userfaultfd), as user_read_fault,
// user_read_fault_dirty, user_write_fault_0/1/2.
//
//   protect_64     the protection change for a group of 64 pages: the
//                  faulting node holds read copies of 64 pages, the home
//                  writes them all, and each write takes the faulting
//                  node's copy away. The time is what the faulting node
//                  spent changing its page tables for the group, as each
//                  DSM counts it (the kernel: lite's dsm prot_ns, an unmap
//                  in the kernel per page; udsm: its madvise system calls),
//                  not the network round trips around them.
//   user_protect_64  the same through udsm
//
// Each fault is timed around one 8-byte access to a page the faulting node
// never touched (a fresh page per run). CSV on stdout:
//
//   name,runs,median_us,p99_us,min_us
//
// exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"

#include <lite/dsm.hpp>
#include <lite/lite.hpp>
#include <lite/session.hpp>
#include <udsm.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace
{

constexpr uint64_t kPage = 4096;

double now_us()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

inline void store(std::byte* p, uint64_t v)
{
    *reinterpret_cast<volatile uint64_t*>(p) = v; // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast): a plain store
}

inline uint64_t load(const std::byte* p)
{
    return *reinterpret_cast<const volatile uint64_t*>(
        p); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast): a plain load
}

void row(const char* name, std::vector<double> t)
{
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    std::printf("%s,%zu,%.1f,%.1f,%.1f\n", name, n, t[n / 2], t[std::min(n - 1, n * 99 / 100)], t[0]);
    (void)std::fflush(stdout);
}

// The five faults, each on fresh pages of a region mapped three times:
// @h at the home, @f at the faulting node, @o at the third.
void faults(const std::string& prefix, std::byte* h, std::byte* f, std::byte* o, unsigned runs)
{
    uint64_t next = 0;
    auto measure = [&](const std::string& label, const std::function<void(uint64_t)>& prepare, bool write) {
        std::vector<double> times;
        for (unsigned i = 0; i < runs; i++) {
            uint64_t p = next++;
            prepare(p);
            double t0 = now_us();
            if (write) {
                store(f + p * kPage, i + 1);
            } else {
                (void)load(f + p * kPage);
            }
            times.push_back(now_us() - t0);
        }
        row((prefix + label).c_str(), times);
    };
    measure(
        "read_fault",
        [&](uint64_t p) {
            store(h + p * kPage, p);
            (void)load(o + p * kPage);
        },
        false);
    measure(
        "read_fault_dirty", [&](uint64_t p) { store(h + p * kPage, p); }, false);
    measure(
        "write_fault_0", [](uint64_t) {}, true);
    measure(
        "write_fault_1", [&](uint64_t p) { store(h + p * kPage, p); }, true);
    measure(
        "write_fault_2",
        [&](uint64_t p) {
            store(h + p * kPage, p);
            (void)load(o + p * kPage);
        },
        true);
}

constexpr uint64_t kGroup = 64;

// protect_64 (see the top): @groups groups of fresh pages from @first on.
// @counter returns the faulting node's {page-table changes, ns} so far.
void protect(const std::string& prefix, std::byte* h, std::byte* f, uint64_t first, unsigned groups,
             const std::function<std::pair<uint64_t, uint64_t>()>& counter)
{
    std::vector<double> times;
    for (unsigned g = 0; g < groups; g++) {
        std::byte* hp = h + (first + g * kGroup) * kPage;
        std::byte* fp = f + (first + g * kGroup) * kPage;
        for (uint64_t i = 0; i < kGroup; i++) {
            (void)load(fp + i * kPage);
        }
        const auto before = counter();
        for (uint64_t i = 0; i < kGroup; i++) {
            store(hp + i * kPage, i + 1);
        }
        const auto after = counter();
        if (after.first - before.first != kGroup) {
            throw std::runtime_error(prefix + "protect_64: the faulting node changed " +
                                     std::to_string(after.first - before.first) + " pages, not " +
                                     std::to_string(kGroup));
        }
        times.push_back(static_cast<double>(after.second - before.second) / 1e3);
    }
    row((prefix + "protect_" + std::to_string(kGroup)).c_str(), times);
}

int run(const std::vector<unsigned>& inst, unsigned runs)
{
    if (inst.size() != 3)
        throw lite_cli::UsageError("--instances: three instances");

    auto home = lite::Session::open(inst[0]);
    auto faulter = lite::Session::open(inst[1]);
    auto other = lite::Session::open(inst[2]);

    // The baseline: one raw 4 KiB read of memory on the home node.
    auto lmr = faulter.alloc(kPage, home.node_id());
    std::vector<std::byte> buf(kPage);
    std::vector<double> t;
    std::printf("name,runs,median_us,p99_us,min_us\n");
    for (unsigned i = 0; i < runs + 20; i++) {
        double t0 = now_us();
        lmr.read(0, std::span<std::byte>(buf));
        if (i >= 20)
            t.push_back(now_us() - t0);
    }
    row("raw_read", t);

    const std::string name = "dsm-lat-" + std::to_string(::getpid());
    const unsigned groups = std::max(10U, runs / 20);
    const uint64_t first = uint64_t{5} * runs; // faults() uses the pages before
    const uint64_t pages = first + groups * kGroup;
    auto h = lite::Dsm::create(home, name, pages * kPage);
    auto f = lite::Dsm::open(faulter, name);
    auto o = lite::Dsm::open(other, name);
    faults("", h.data(), f.data(), o.data(), runs);
    const auto dev = lite::Device::open();
    protect("", h.data(), f.data(), first, groups, [&] {
        const auto st = dev.status(inst[1]);
        return std::pair{st.dsm.prot_changes, st.dsm.prot_ns};
    });
    {
        auto uh = udsm::Region::create(home, "u" + name, pages * kPage);
        auto uf = udsm::Region::open(faulter, "u" + name);
        auto uo = udsm::Region::open(other, "u" + name);
        faults("user_", uh.data(), uf.data(), uo.data(), runs);
        protect("user_", uh.data(), uf.data(), first, groups, [&] {
            const auto st = uf.stats();
            return std::pair{st.prot_changes, st.prot_ns};
        });
    }
    h.destroy();
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("dsm-lat", [&] {
        lite_cli::App app("dsm-lat",
                          "DSM fault latency (read, write with 0-2 copies to invalidate) against one raw 4 KiB "
                          "LITE_read on the same nodes; CSV on stdout.");
        std::vector<unsigned> inst;
        unsigned runs = 300;
        lite_cli::add_list(app, "--instances", inst, 0, 1U << 30, "local node instances HOME,FAULTER,OTHER")
            ->required();
        lite_cli::add_number(app, "--runs", runs, 10, 100000, "faults timed per kind (default 300)");
        return app.run(argc, argv, [&] { return run(inst, runs); });
    });
}
