// SPDX-License-Identifier: MIT
//
// reg-cost: what it costs to make memory usable for remote access, native
// against lite (see benchmarks/bench.sh):
//
//   native  ibv_reg_mr and ibv_dereg_mr of a buffer of SIZE bytes, allocated
//           and touched (every page faulted in) before the timed calls, on
//           the RDMA device that owns ADDR; the buffer is allocated once
//           per size and registered and deregistered ITERS times;
//   lite    LITE_alloc of SIZE bytes on node NODE and LITE_free of it (the
//           memory node allocates, zeroes and registers it; this node
//           fetches its layout).
//
// Each side runs twice for sizes up to 1 MiB (lite's lease sizes): back to
// back, and paced (--pace-ms of computing, a busy loop, before each call,
// 10 by default: an application that allocates now and then, whose lease
// the memory node refills meanwhile); larger sizes run back to back only
// ("-" in the paced columns).
// Back to back, lite's lease runs dry after its depth and the calls ask the
// memory node again: both columns matter.
//
// A size whose allocation or registration fails with ENOMEM is skipped on
// that side, with a line on stderr, and shows as "-" in the CSV; any other
// failure ends the program. Default iterations per size: 20 up to 1 MiB,
// 5 up to 256 MiB, 3 above (--iters sets one count for all), after one
// untimed round for sizes up to 16 MiB (three when paced).
//
// Prints CSV on stdout, medians in us:
//
//   size,native_reg_us,native_dereg_us,lite_alloc_us,lite_free_us,
//   native_reg_paced_us,native_dereg_paced_us,lite_alloc_paced_us,
//   lite_free_paced_us
//
// exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"
#include "verbs.hpp"

#include <lite/lite.h>
#include <lite/lite.hpp>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace
{

using bench::Lite;
using bench::lite_error;

using namespace bench::verbs;

constexpr const char* kProg = "reg-cost";
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;
constexpr uint64_t kGiB = kMiB * 1024;
constexpr uint64_t kPacedMax = kMiB; // lite's lease sizes

struct Args {
    std::string addr = default_addr();
    unsigned instance = 0;
    uint32_t node = 2;
    unsigned iters = 0; // 0: by size
    unsigned pace_ms = 10;
    std::vector<uint64_t> sizes{4 * kKiB, 64 * kKiB, kMiB, 16 * kMiB, 256 * kMiB, kGiB};
};

using Clock = std::chrono::steady_clock;

int64_t ns_since(Clock::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

unsigned default_iters(uint64_t size)
{
    if (size <= kMiB)
        return 20;
    return size <= 256 * kMiB ? 5 : 3;
}

double median_us(std::vector<int64_t> ns)
{
    return bench::summarize(std::move(ns)).median_us;
}

struct Medians {
    double first = 0;
    double second = 0;
};

// How the rounds of one measurement run: how many, and how far apart.
struct Rounds {
    unsigned iters = 0;
    unsigned warmup = 0;
    std::chrono::milliseconds pace{0}; // computed for before each round
};

// Keep this CPU busy for about @d, as a caller that computes between calls
// does: sleeping instead would put a wake-up's cold caches into every call,
// and reading the clock in a loop would too (the guest's clock source may
// be an emulated device). An arithmetic loop, calibrated once.
void compute_for(std::chrono::milliseconds d)
{
    static const double loops_per_ms = [] {
        constexpr uint64_t kLoops = 20'000'000;
        volatile uint64_t x = 0;
        const auto t0 = Clock::now();
        for (uint64_t i = 0; i < kLoops; i++)
            x = x + i;
        const double ms = static_cast<double>(ns_since(t0)) / 1e6;
        return static_cast<double>(kLoops) / (ms > 0 ? ms : 1);
    }();
    volatile uint64_t x = 0;
    const auto n = static_cast<uint64_t>(loops_per_ms * static_cast<double>(d.count()));
    for (uint64_t i = 0; i < n; i++)
        x = x + i;
}

// Native: @r.iters rounds (plus @r.warmup untimed) of ibv_reg_mr and
// ibv_dereg_mr of one touched buffer of @size bytes; nothing on ENOMEM.
std::optional<Medians> native_cost(ibv_pd* pd, uint64_t size, const Rounds& r)
{
    std::unique_ptr<uint8_t[]> buf(new (std::nothrow) uint8_t[size]);
    if (!buf) {
        (void)std::fprintf(stderr, "%s: native, %llu bytes: cannot allocate the buffer (ENOMEM), skipped\n", kProg,
                           static_cast<unsigned long long>(size));
        return std::nullopt;
    }
    std::memset(buf.get(), 0x5a, size); // fault every page in
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    std::vector<int64_t> reg;
    std::vector<int64_t> dereg;
    for (unsigned i = 0; i < r.warmup + r.iters; i++) {
        compute_for(r.pace);
        const auto t0 = Clock::now();
        ibv_mr* mr = ibv_reg_mr(pd, buf.get(), size, access);
        const int64_t t_reg = ns_since(t0);
        if (mr == nullptr) {
            const int err = errno;
            if (err == ENOMEM) {
                (void)std::fprintf(stderr, "%s: native, %llu bytes: ibv_reg_mr: ENOMEM, skipped\n", kProg,
                                   static_cast<unsigned long long>(size));
                return std::nullopt;
            }
            throw verb_error("ibv_reg_mr (" + std::to_string(size) + " bytes)", err);
        }
        const auto t1 = Clock::now();
        const int rc = ibv_dereg_mr(mr);
        const int64_t t_dereg = ns_since(t1);
        if (rc != 0)
            throw verb_error("ibv_dereg_mr", rc);
        if (i >= r.warmup) {
            reg.push_back(t_reg);
            dereg.push_back(t_dereg);
        }
    }
    return Medians{median_us(std::move(reg)), median_us(std::move(dereg))};
}

// This node's lease counters (for the log: how many calls its lease served).
lite_lease_counters lease_of(unsigned instance)
{
    return lite::Device::open().status(instance).lease;
}

// Lite: @r.iters rounds (plus @r.warmup untimed) of LITE_alloc and
// LITE_free of @size bytes on @node; nothing on ENOMEM. Logs how many of
// the calls the lease served.
std::optional<Medians> lite_cost(lite_t* lite, unsigned instance, uint32_t node, uint64_t size, const Rounds& r)
{
    const lite_lease_counters before = lease_of(instance);
    std::vector<int64_t> alloc;
    std::vector<int64_t> frees;
    for (unsigned i = 0; i < r.warmup + r.iters; i++) {
        compute_for(r.pace);
        lite_lmr_t lmr = 0;
        const auto t0 = Clock::now();
        const int rc = LITE_alloc(lite, size, node, &lmr);
        const int64_t t_alloc = ns_since(t0);
        if (rc == -ENOMEM) {
            (void)std::fprintf(stderr, "%s: lite, %llu bytes on node %u: LITE_alloc: ENOMEM, skipped\n", kProg,
                               static_cast<unsigned long long>(size), node);
            return std::nullopt;
        }
        if (rc < 0)
            throw lite_error("LITE_alloc(" + std::to_string(size) + " bytes on node " + std::to_string(node) + ")", rc);
        const auto t1 = Clock::now();
        const int frc = LITE_free(lite, lmr);
        const int64_t t_free = ns_since(t1);
        if (frc < 0)
            throw lite_error("LITE_free(" + std::to_string(size) + " bytes)", frc);
        if (i >= r.warmup) {
            alloc.push_back(t_alloc);
            frees.push_back(t_free);
        }
    }
    const lite_lease_counters after = lease_of(instance);
    (void)std::fprintf(stderr, "%s: lite, %llu bytes, %s: %llu of %u allocations from the lease, %llu asked node %u\n",
                       kProg, static_cast<unsigned long long>(size), r.pace.count() ? "paced" : "back to back",
                       static_cast<unsigned long long>(after.hits - before.hits), r.warmup + r.iters,
                       static_cast<unsigned long long>(after.misses - before.misses), node);
    return Medians{median_us(std::move(alloc)), median_us(std::move(frees))};
}

std::string cell(const std::optional<Medians>& m, bool first)
{
    if (!m)
        return "-";
    char text[32];
    (void)std::snprintf(text, sizeof(text), "%.2f", first ? m->first : m->second);
    return text;
}

int run(const Args& a)
{
    const auto& addr = a.addr;
    const auto& instance = a.instance;
    const auto& node = a.node;
    const auto& iters = a.iters;
    const auto& pace_ms = a.pace_ms;
    const auto& sizes = a.sizes;
    sockaddr_in sin = parse_addr(addr, 0);

    // The native side's device: the one an rdma_cm id bound to ADDR gets.
    Channel channel = make_channel();
    CmId id = make_id(channel.get());
    check_cm(rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&sin)), "rdma_bind_addr");
    if (id->verbs == nullptr)
        throw std::runtime_error("rdma_bind_addr: " + addr + " is not the address of an RDMA device");
    Pd pd(ibv_alloc_pd(id->verbs));
    if (!pd)
        throw verb_error("ibv_alloc_pd", errno);

    lite_t* raw = nullptr;
    if (int rc = LITE_open(instance, &raw); rc < 0)
        throw lite_error("LITE_open(instance " + std::to_string(instance) + ")", rc);
    Lite lite(raw);
    (void)std::fprintf(stderr, "%s: native on %s (%s), lite instance %u (node %u) allocating on node %u\n", kProg,
                       ibv_get_device_name(id->verbs->device), addr.c_str(), instance, LITE_node_id(lite.get()), node);

    std::printf("size,native_reg_us,native_dereg_us,lite_alloc_us,lite_free_us,native_reg_paced_us,"
                "native_dereg_paced_us,lite_alloc_paced_us,lite_free_paced_us\n");
    for (uint64_t size : sizes) {
        const Rounds burst{iters != 0 ? iters : default_iters(size), size <= 16 * kMiB ? 1U : 0U};
        const std::optional<Medians> nat = native_cost(pd.get(), size, burst);
        const std::optional<Medians> lit = lite_cost(lite.get(), instance, node, size, burst);
        std::optional<Medians> nat_paced;
        std::optional<Medians> lit_paced;
        if (pace_ms != 0 && size <= kPacedMax) {
            const Rounds paced{burst.iters, 3, std::chrono::milliseconds(pace_ms)};
            nat_paced = native_cost(pd.get(), size, paced);
            lit_paced = lite_cost(lite.get(), instance, node, size, paced);
        }
        std::printf("%llu,%s,%s,%s,%s,%s,%s,%s,%s\n", static_cast<unsigned long long>(size), cell(nat, true).c_str(),
                    cell(nat, false).c_str(), cell(lit, true).c_str(), cell(lit, false).c_str(),
                    cell(nat_paced, true).c_str(), cell(nat_paced, false).c_str(), cell(lit_paced, true).c_str(),
                    cell(lit_paced, false).c_str());
        (void)std::fflush(stdout);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "ibv_reg_mr + ibv_dereg_mr against LITE_alloc + LITE_free, median time per size; prints "
                          "CSV on stdout. The lite nodes must be up already (litectl up).");
        Args a;
        add_addr(app, a.addr, "address of the RDMA device's netdev for the native side ($LITE_ADDR, else 10.99.0.1)");
        lite_cli::add_instance(app, a.instance, "local lite node instance to attach to (default 0)");
        lite_cli::add_node(app, a.node, false, "node that holds the LMRs (default 2)");
        lite_cli::add_number(app, "--iters", a.iters, 1, 1'000'000,
                             "timed rounds per size (default 20 up to 1M, 5 up to 256M, 3 above)");
        lite_cli::add_list(app, "--sizes", a.sizes, 1, LITE_LMR_MAX,
                           "comma-separated sizes, with an optional K, M or G suffix (default 4K,64K,1M,16M,256M,1G)");
        lite_cli::add_number(
            app, "--pace-ms", a.pace_ms, 0, 10'000,
            "also measure sizes up to 1M with N ms of computing (a busy loop) before each call (default "
            "10; 0: back to back only)");
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
