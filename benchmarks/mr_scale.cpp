// SPDX-License-Identifier: MIT
//
// mr-scale: MR scalability, native verbs against lite (see benchmarks/bench.sh).
// Throughput of random small remote writes as the registered memory grows
// (--sweep memory: one region of each of --sizes) and as the number of
// regions grows (--sweep regions: each of --regions regions of --region-size
// bytes):
//
//   native  one RC connection from the RDMA device that owns ADDR to itself
//           (pair.hpp); the server side maps the memory (one anonymous mmap
//           for all regions) and registers one MR per region (ibv_reg_mr);
//           the client posts signaled RDMA WRITEs of LEN bytes from its own
//           registered buffer, each to a uniformly random region at a
//           uniformly random LEN-aligned offset in it, with that region's
//           address and rkey; it busy-polls its CQ (--poll busy) or sleeps on
//           the CQ's completion channel (--poll event) for each completion;
//   lite    the regions are LMRs on node NODE (one LITE_alloc each; the
//           memory node's global key covers them all), written with
//           LITE_write to a random handle at a random LEN-aligned offset.
//
// Queue depth 1 on both sides: one write outstanding at a time (native
// waits for each completion before the next post; LITE_write returns when
// its write has completed). The loop in drive() is written for a queue
// depth: native could keep several writes posted, lite needs an
// asynchronous path first.
//
// Per point (a number of regions of a size): setup, timed (native: mmap and
// ibv_reg_mr of every region, which faults in and zeroes the pages; lite:
// LITE_alloc of every region, which allocates, zeroes and DMA-maps them on
// the memory node); one write per LEN checked (native: the bytes are in the
// server's memory; lite: LITE_read returns them); per LEN, WARMUP untimed
// writes and SECONDS of timed ones; teardown, timed (ibv_dereg_mr and
// munmap; LITE_free). The random targets are the same sequence in both
// modes (a fixed seed per point and LEN). A point whose setup fails with
// ENOMEM is skipped with a line on stderr and "-" in its rows; any other
// failure ends the program. Nothing of one point is left when the next is
// set up.
//
// Prints CSV on stdout, one row per point and LEN:
//
//   sweep,mode,poll,qd,regions,region_bytes,total_bytes,len,ops,seconds,ops_per_s,setup_s,teardown_s
//
// poll is busy or event for native, "-" for lite; setup_s and teardown_s are
// per point (the same in its rows). Progress on stderr. Exit 0 ok, 1 error,
// 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"
#include "pair.hpp"

#include <lite/lite.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace
{

using bench::Lite;
using bench::lite_error;
using bench::LiteError;
using bench::Lmr;

using namespace bench::verbs;

constexpr const char* kProg = "mr-scale";
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;
constexpr uint64_t kGiB = kMiB * 1024;
constexpr uint64_t kMaxLen = 64 * kKiB;
constexpr uint64_t kMaxRegions = 1'000'000;
constexpr unsigned kQueueDepth = 1; // writes outstanding (see drive())
constexpr auto kCompletionTimeout = std::chrono::seconds(5);

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

enum class Mode { native, lite };
enum class Sweep { memory, regions };

struct Options {
    std::optional<Mode> mode;
    std::optional<Sweep> sweep;
    std::vector<uint64_t> sizes{kMiB, 16 * kMiB, 256 * kMiB, kGiB, 4 * kGiB};
    std::vector<uint64_t> regions{1, 10, 100, 1000, 10000};
    uint64_t region_size = 64 * kKiB;
    std::vector<uint64_t> lens{64, 1024};
    unsigned seconds = 2;
    unsigned warmup = 100;
    PollMode poll = PollMode::busy;
    Target at{18620};
    unsigned instance = 0;
    uint32_t node = 2;
};

// One point of a sweep: @count regions of @bytes each.
struct Point {
    uint64_t count;
    uint64_t bytes;

    [[nodiscard]] uint64_t total() const { return count * bytes; }
};

// Where a write goes: a region and an offset in it.
struct Slot {
    uint64_t region;
    uint64_t offset;
};

// Uniformly random slots: a region, and a LEN-aligned offset in it at which
// LEN bytes fit.
class Picker
{
public:
    Picker(const Point& p, uint64_t len, uint64_t seed)
        : len_(len), rng_(seed), region_(0, p.count - 1), slot_(0, p.bytes / len - 1)
    {
    }

    Slot operator()() { return {region_(rng_), slot_(rng_) * len_}; }

private:
    uint64_t len_;
    std::mt19937_64 rng_;
    std::uniform_int_distribution<uint64_t> region_;
    std::uniform_int_distribution<uint64_t> slot_;
};

struct Throughput {
    uint64_t ops = 0;
    double seconds = 0;
};

// Writes of @len bytes to slots from @pick: @warmup untimed, then for
// @secs, keeping kQueueDepth submitted. @w.submit(slot, len) starts a
// write; @w.complete() waits for the oldest submitted one. At queue depth 1
// every write completes before the next is submitted.
template <typename Writer>
Throughput drive(Writer& w, Picker& pick, uint64_t len, unsigned warmup, std::chrono::seconds secs)
{
    for (unsigned i = 0; i < warmup; i++) {
        w.submit(pick(), len);
        w.complete();
    }
    Throughput r;
    const auto t0 = Clock::now();
    const auto end = t0 + secs;
    auto now = t0;
    unsigned in_flight = 0;
    while (true) {
        for (; in_flight < kQueueDepth && now < end; in_flight++)
            w.submit(pick(), len);
        if (in_flight == 0)
            break;
        w.complete();
        in_flight--;
        r.ops++;
        now = Clock::now();
    }
    r.seconds = std::chrono::duration<double>(now - t0).count();
    return r;
}

// ---- native ----------------------------------------------------------

// An anonymous private mapping, unmapped on destruction.
class Mapping
{
public:
    // @len bytes; nothing (with errno set) if mmap fails.
    static std::optional<Mapping> make(uint64_t len)
    {
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return std::nullopt;
        return Mapping(static_cast<uint8_t*>(p), len);
    }
    Mapping(Mapping&& other) noexcept : addr_(std::exchange(other.addr_, nullptr)), len_(other.len_) {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    Mapping& operator=(Mapping&&) = delete;
    ~Mapping()
    {
        if (addr_ != nullptr && munmap(addr_, len_) != 0)
            warn_destroy(errno, "munmap");
    }

    [[nodiscard]] uint8_t* get() const { return addr_; }

private:
    Mapping(uint8_t* addr, uint64_t len) : addr_(addr), len_(len) {}
    uint8_t* addr_;
    uint64_t len_;
};

// The regions of a point on the server side: one mapping, one MR per region.
class NativeRegions
{
public:
    // Maps and registers @p on @pd; nothing (after a line on stderr) on
    // ENOMEM, an exception on any other failure.
    static std::optional<NativeRegions> make(ibv_pd* pd, const Point& p)
    {
        std::optional<Mapping> map = Mapping::make(p.total());
        if (!map) {
            const int err = errno;
            if (err == ENOMEM) {
                (void)std::fprintf(stderr, "%s: native, %llu x %llu bytes: mmap: ENOMEM, skipped\n", kProg,
                                   static_cast<unsigned long long>(p.count), static_cast<unsigned long long>(p.bytes));
                return std::nullopt;
            }
            throw verb_error("mmap (" + std::to_string(p.total()) + " bytes)", err);
        }
        NativeRegions r(std::move(*map), p.bytes);
        r.mrs_.reserve(p.count);
        const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        for (uint64_t i = 0; i < p.count; i++) {
            Mr mr(ibv_reg_mr(pd, r.base(i), p.bytes, access));
            if (!mr) {
                const int err = errno;
                if (err == ENOMEM) {
                    (void)std::fprintf(stderr,
                                       "%s: native, %llu x %llu bytes: ibv_reg_mr of region %llu: ENOMEM, skipped\n",
                                       kProg, static_cast<unsigned long long>(p.count),
                                       static_cast<unsigned long long>(p.bytes), static_cast<unsigned long long>(i));
                    return std::nullopt;
                }
                throw verb_error(
                    "ibv_reg_mr of region " + std::to_string(i) + " (" + std::to_string(p.bytes) + " bytes)", err);
            }
            r.mrs_.push_back(std::move(mr));
        }
        return r;
    }

    [[nodiscard]] uint8_t* base(uint64_t region) const { return map_->get() + region * bytes_; }
    [[nodiscard]] uint32_t rkey(uint64_t region) const { return mrs_[region]->rkey; }

    // Deregisters every MR, then unmaps; throws if a deregistration fails.
    void teardown()
    {
        while (!mrs_.empty()) {
            if (int rc = ibv_dereg_mr(mrs_.back().release()); rc != 0)
                throw verb_error("ibv_dereg_mr", rc);
            mrs_.pop_back();
        }
        map_.reset();
    }

private:
    NativeRegions(Mapping map, uint64_t bytes) : map_(std::move(map)), bytes_(bytes) {}

    std::optional<Mapping> map_; // destroyed after the MRs
    uint64_t bytes_;
    std::vector<Mr> mrs_;
};

// Signaled RDMA WRITEs from the client's buffer into @regions.
class NativeWriter
{
public:
    NativeWriter(Side& client, const NativeRegions& regions) : client_(client), regions_(regions) {}

    void submit(const Slot& s, uint64_t len)
    {
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uintptr_t>(client_.bytes());
        sge.length = static_cast<uint32_t>(len);
        sge.lkey = client_.mr->lkey;
        ibv_send_wr wr{};
        wr.wr_id = ++posted_;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(regions_.base(s.region) + s.offset);
        wr.wr.rdma.rkey = regions_.rkey(s.region);
        ibv_send_wr* bad = nullptr;
        if (int rc = ibv_post_send(client_.id->qp, &wr, &bad); rc != 0)
            throw verb_error("ibv_post_send (RDMA WRITE)", rc);
    }

    void complete()
    {
        ibv_wc wc{};
        int n = 0;
        if (!client_.cq.wait_until([&] { return (n = ibv_poll_cq(client_.cq.get(), 1, &wc)) != 0; },
                                   kCompletionTimeout)) {
            throw std::runtime_error("ibv_poll_cq: no completion for RDMA WRITE " + std::to_string(done_ + 1) +
                                     " within 5 s");
        }
        if (n < 0)
            throw std::runtime_error("ibv_poll_cq failed (returned " + std::to_string(n) + ")");
        if (wc.status != IBV_WC_SUCCESS) {
            throw std::runtime_error(std::string("RDMA WRITE completed with error: ") + ibv_wc_status_str(wc.status) +
                                     " (vendor_err " + std::to_string(wc.vendor_err) + ")");
        }
        if (wc.wr_id != ++done_) {
            throw std::runtime_error("ibv_poll_cq: completion for wr_id " + std::to_string(wc.wr_id) + ", expected " +
                                     std::to_string(done_));
        }
    }

private:
    Side& client_;
    const NativeRegions& regions_;
    uint64_t posted_ = 0;
    uint64_t done_ = 0;
};

// ---- lite ------------------------------------------------------------

// The regions of a point: one LMR each on the memory node.
class LiteRegions
{
public:
    // Allocates @p on @node; nothing (after a line on stderr, with what was
    // allocated freed) on ENOMEM, an exception on any other failure.
    static std::optional<LiteRegions> make(lite_t* lite, uint32_t node, const Point& p)
    {
        LiteRegions r;
        r.lmrs_.reserve(p.count);
        for (uint64_t i = 0; i < p.count; i++) {
            try {
                r.lmrs_.emplace_back(lite, p.bytes, node);
            } catch (const LiteError& e) {
                if (e.rc != -ENOMEM)
                    throw;
                (void)std::fprintf(stderr, "%s: lite, %llu x %llu bytes on node %u: LMR %llu: %s, skipped\n", kProg,
                                   static_cast<unsigned long long>(p.count), static_cast<unsigned long long>(p.bytes),
                                   node, static_cast<unsigned long long>(i), e.what());
                return std::nullopt;
            }
        }
        return r;
    }

    [[nodiscard]] lite_lmr_t handle(uint64_t region) const { return lmrs_[region].handle(); }

    // Frees every LMR; throws if one cannot be freed.
    void teardown()
    {
        while (!lmrs_.empty()) {
            lmrs_.back().free();
            lmrs_.pop_back();
        }
    }

private:
    std::vector<Lmr> lmrs_;
};

// LITE_write from a local buffer into @regions. Synchronous: the write has
// completed when submit() returns, so complete() has nothing to wait for.
class LiteWriter
{
public:
    LiteWriter(lite_t* lite, const LiteRegions& regions, const std::vector<uint8_t>& buf)
        : lite_(lite), regions_(regions), buf_(buf)
    {
    }

    void submit(const Slot& s, uint64_t len)
    {
        if (int rc = LITE_write(lite_, regions_.handle(s.region), s.offset, buf_.data(), len); rc < 0)
            throw lite_error("LITE_write(" + std::to_string(len) + " bytes at " + std::to_string(s.offset) + ")", rc);
    }

    void complete() {}

private:
    lite_t* lite_;
    const LiteRegions& regions_;
    const std::vector<uint8_t>& buf_;
};

// ---- both ------------------------------------------------------------

const char* sweep_name(Sweep s)
{
    return s == Sweep::memory ? "memory" : "regions";
}

std::vector<Point> points(const Options& o)
{
    std::vector<Point> ps;
    if (*o.sweep == Sweep::memory) {
        for (uint64_t size : o.sizes)
            ps.push_back({1, size});
    } else {
        for (uint64_t n : o.regions)
            ps.push_back({n, o.region_size});
    }
    return ps;
}

// The slots each point's data check writes: the last one of the last
// region (the far end of the memory) and a random one.
std::vector<Slot> check_slots(const Point& p, uint64_t len)
{
    Picker pick(p, len, 0);
    return {{p.count - 1, (p.bytes / len - 1) * len}, pick()};
}

// The rows of one point. @tput is empty if the point was skipped.
void print_rows(const Options& o, const char* poll, const Point& p, const std::vector<Throughput>& tput, double setup_s,
                double teardown_s)
{
    for (size_t i = 0; i < o.lens.size(); i++) {
        std::printf("%s,%s,%s,%u,%llu,%llu,%llu,%llu,", sweep_name(*o.sweep),
                    *o.mode == Mode::native ? "native" : "lite", poll, kQueueDepth,
                    static_cast<unsigned long long>(p.count), static_cast<unsigned long long>(p.bytes),
                    static_cast<unsigned long long>(p.total()), static_cast<unsigned long long>(o.lens[i]));
        if (tput.empty()) {
            std::printf("-,-,-,-,-\n");
            continue;
        }
        const Throughput& t = tput[i];
        std::printf("%llu,%.3f,%.1f,%.3f,%.3f\n", static_cast<unsigned long long>(t.ops), t.seconds,
                    t.seconds > 0 ? static_cast<double>(t.ops) / t.seconds : 0.0, setup_s, teardown_s);
    }
    (void)std::fflush(stdout); // bench.sh may be watching
}

void print_header()
{
    std::printf("sweep,mode,poll,qd,regions,region_bytes,total_bytes,len,ops,seconds,ops_per_s,setup_s,teardown_s\n");
}

void progress(const char* what, const Point& p, uint64_t len, const Throughput& t)
{
    (void)std::fprintf(stderr, "%s: %s, %llu x %llu bytes, %llu-byte writes: %llu in %.2f s (%.0f/s)\n", kProg, what,
                       static_cast<unsigned long long>(p.count), static_cast<unsigned long long>(p.bytes),
                       static_cast<unsigned long long>(len), static_cast<unsigned long long>(t.ops), t.seconds,
                       t.seconds > 0 ? static_cast<double>(t.ops) / t.seconds : 0.0);
}

void progress_setup(const char* what, const Point& p, double setup_s)
{
    (void)std::fprintf(stderr, "%s: %s, %llu x %llu bytes: set up in %.3f s\n", kProg, what,
                       static_cast<unsigned long long>(p.count), static_cast<unsigned long long>(p.bytes), setup_s);
}

int run_native(const Options& o)
{
    const uint64_t max_len = *std::max_element(o.lens.begin(), o.lens.end());
    Side server;
    Side client;
    (void)connect_pair(server, client, o.at.sockaddr(), max_len, o.poll, PairConfig{});
    const std::string what = std::string("native ") + poll_name(o.poll);
    (void)std::fprintf(stderr, "%s: %s, RC QP %u -> %u via %s:%u, %s polling, %s sweep, %u s per point\n", kProg,
                       ibv_get_device_name(client.id->verbs->device), client.id->qp->qp_num, server.id->qp->qp_num,
                       o.at.addr.c_str(), o.at.port, poll_name(o.poll), sweep_name(*o.sweep), o.seconds);

    print_header();
    for (const Point& p : points(o)) {
        const auto t0 = Clock::now();
        std::optional<NativeRegions> regions = NativeRegions::make(server.pd.get(), p);
        const double setup_s = seconds_since(t0);
        if (!regions) {
            print_rows(o, poll_name(o.poll), p, {}, 0, 0);
            continue;
        }
        progress_setup(what.c_str(), p, setup_s);
        NativeWriter w(client, *regions);
        unsigned seed = 0;
        for (uint64_t len : o.lens) {
            for (const Slot& s : check_slots(p, len)) {
                bench::fill_pattern(client.bytes(), len, ++seed);
                w.submit(s, len);
                w.complete();
                if (std::memcmp(regions->base(s.region) + s.offset, client.bytes(), len) != 0) {
                    throw std::runtime_error("RDMA WRITE of " + std::to_string(len) + " bytes to region " +
                                             std::to_string(s.region) + " offset " + std::to_string(s.offset) +
                                             ": the server's memory differs");
                }
            }
        }
        std::vector<Throughput> tput;
        for (size_t i = 0; i < o.lens.size(); i++) {
            Picker pick(p, o.lens[i], i + 1);
            tput.push_back(drive(w, pick, o.lens[i], o.warmup, std::chrono::seconds(o.seconds)));
            progress(what.c_str(), p, o.lens[i], tput.back());
        }
        const auto t1 = Clock::now();
        regions->teardown();
        print_rows(o, poll_name(o.poll), p, tput, setup_s, seconds_since(t1));
    }
    return 0;
}

int run_lite(const Options& o)
{
    const uint64_t max_len = *std::max_element(o.lens.begin(), o.lens.end());
    Lite lite = bench::open_lite(o.instance);
    const uint32_t self = LITE_node_id(lite.get());
    if (self == o.node) {
        (void)std::fprintf(stderr, "%s: warning: node %u is this node: the LMRs are local, not remote\n", kProg,
                           o.node);
    }
    (void)std::fprintf(stderr, "%s: lite instance %u (node %u), LMRs on node %u, %s sweep, %u s per point\n", kProg,
                       o.instance, self, o.node, sweep_name(*o.sweep), o.seconds);

    std::vector<uint8_t> out(max_len);
    std::vector<uint8_t> in(max_len);
    print_header();
    for (const Point& p : points(o)) {
        const auto t0 = Clock::now();
        std::optional<LiteRegions> regions = LiteRegions::make(lite.get(), o.node, p);
        const double setup_s = seconds_since(t0);
        if (!regions) {
            print_rows(o, "-", p, {}, 0, 0);
            continue;
        }
        progress_setup("lite", p, setup_s);
        LiteWriter w(lite.get(), *regions, out);
        unsigned seed = 0;
        for (uint64_t len : o.lens) {
            for (const Slot& s : check_slots(p, len)) {
                bench::fill_pattern(out, len, ++seed);
                w.submit(s, len);
                w.complete();
                std::fill(in.begin(), in.end(), 0);
                if (int rc = LITE_read(lite.get(), regions->handle(s.region), s.offset, in.data(), len); rc < 0)
                    throw lite_error("LITE_read(" + std::to_string(len) + " bytes)", rc);
                if (!std::equal(out.begin(), out.begin() + static_cast<long>(len), in.begin())) {
                    throw std::runtime_error("LITE_write of " + std::to_string(len) + " bytes to region " +
                                             std::to_string(s.region) + " offset " + std::to_string(s.offset) +
                                             ": LITE_read returned other bytes");
                }
            }
        }
        std::vector<Throughput> tput;
        for (size_t i = 0; i < o.lens.size(); i++) {
            Picker pick(p, o.lens[i], i + 1);
            tput.push_back(drive(w, pick, o.lens[i], o.warmup, std::chrono::seconds(o.seconds)));
            progress("lite", p, o.lens[i], tput.back());
        }
        const auto t1 = Clock::now();
        regions->teardown();
        print_rows(o, "-", p, tput, setup_s, seconds_since(t1));
    }
    return 0;
}

// The command line into @o.
void add_options(lite_cli::App& app, Options& o)
{
    lite_cli::add_choice(app, "--mode", o.mode, {{"native", Mode::native}, {"lite", Mode::lite}}, "native or lite")
        ->required();
    lite_cli::add_choice(app, "--sweep", o.sweep, {{"memory", Sweep::memory}, {"regions", Sweep::regions}},
                         "memory: one region of each of --sizes; regions: each of --regions regions of --region-size")
        ->required();
    lite_cli::add_list(app, "--sizes", o.sizes, 1, LITE_LMR_MAX,
                       "region sizes of the memory sweep, with an optional K, M or G suffix (default "
                       "1M,16M,256M,1G,4G)");
    lite_cli::add_list(app, "--regions", o.regions, 1, kMaxRegions,
                       "region counts of the regions sweep (default 1,10,100,1000,10000)");
    lite_cli::add_number(app, "--region-size", o.region_size, 1, LITE_LMR_MAX,
                         "bytes per region in the regions sweep (default 64K)");
    lite_cli::add_list(app, "--lens", o.lens, 1, kMaxLen, "write sizes in bytes (default 64,1024)");
    lite_cli::add_number(app, "--seconds", o.seconds, 1, 3600, "timed seconds per point and write size (default 2)");
    lite_cli::add_number(app, "--warmup", o.warmup, 0, 10'000'000, "untimed writes before them (default 100)");
    o.at.add_options(app);
    add_poll(app, o.poll, "native: busy (default) or event, as native-lat");
    lite_cli::add_instance(app, o.instance, "lite: local node instance to attach to (default 0)");
    lite_cli::add_node(app, o.node, false, "lite: node that holds the LMRs (default 2)");
}

// The checks of the options together.
void check(const lite_cli::App& app, const Options& o)
{
    const bool native_only = app.given("--poll") || app.given("--addr") || app.given("--port");
    const bool lite_only = app.given("--instance") || app.given("--node");
    if (*o.mode == Mode::lite && native_only)
        throw lite_cli::UsageError("--poll, --addr and --port are for --mode native");
    if (*o.mode == Mode::native && lite_only)
        throw lite_cli::UsageError("--instance and --node are for --mode lite");
    const uint64_t max_len = *std::max_element(o.lens.begin(), o.lens.end());
    for (const Point& p : points(o)) {
        if (p.bytes < max_len) {
            throw lite_cli::UsageError("regions of " + std::to_string(p.bytes) + " bytes are smaller than the " +
                                       std::to_string(max_len) + "-byte writes of --lens");
        }
    }
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "Random RDMA writes into growing registered memory (--sweep memory) or into a growing "
                          "number of regions (--sweep regions), native verbs (one MR per region) or lite (one LMR "
                          "per region); one write outstanding at a time. Prints CSV on stdout. For lite the nodes "
                          "must be up already (litectl up).");
        Options o;
        add_options(app, o);
        return app.run(argc, argv, [&] {
            check(app, o);
            return *o.mode == Mode::native ? run_native(o) : run_lite(o);
        });
    });
}
