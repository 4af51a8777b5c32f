// SPDX-License-Identifier: MIT
// What one local user can do to the others, 3 nodes in one guest: a large
// allocation does not hold up small ones on its node, a killed process
// stops long transfers and allocations within a second and leaves nothing
// behind, and per-user quotas (quota_mb) cap what each user holds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <lite/session.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nodes.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace
{

constexpr uint16_t kPort = 19400;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = kMiB << 10;
const char* const kQuotaParam = "/sys/module/lite/parameters/quota_mb";

double seconds(Clock::duration d)
{
    return std::chrono::duration<double>(d).count();
}

// The module's quota_mb, as sysfs shows it.
unsigned long quota_mb()
{
    std::ifstream f(kQuotaParam);
    unsigned long v = ~0UL;
    f >> v;
    return v;
}

bool set_quota_mb(unsigned long mb)
{
    std::ofstream f(kQuotaParam);
    f << mb << '\n';
    f.flush();
    return f.good() && quota_mb() == mb;
}

// A pipe whose ends close with it.
struct Pipe {
    std::array<int, 2> fd{-1, -1};
    Pipe()
    {
        if (pipe(fd.data()) != 0)
            fd = {-1, -1};
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    Pipe(Pipe&&) = delete;
    Pipe& operator=(Pipe&&) = delete;
    ~Pipe()
    {
        for (int f : fd) {
            if (f >= 0)
                close(f);
        }
    }
    [[nodiscard]] bool put(char c) const { return write(fd[1], &c, 1) == 1; }
    [[nodiscard]] char get() const
    {
        char c = 0; // 0: nothing within 120 s
        if (read_byte_within(fd[0], &c, 120s) != 1)
            c = 0;
        return c;
    }
};

// /proc/PID/NAME, or "" once the process is gone.
std::string read_proc(pid_t pid, const char* name)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/" + name);
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return all;
}

class Limits : public ThreeNodes<kPort>
{
protected:
    void TearDown() override
    {
        EXPECT_TRUE(set_quota_mb(0)) << "quota_mb back to unlimited";
        ThreeNodes<kPort>::TearDown();
    }

    [[nodiscard]] uint64_t mem_bytes(size_t i) const { return dev_->status(inst_[i]).counters.mem_bytes; }

    // Counters that a healthy cluster keeps: summed over the nodes.
    struct Health {
        uint64_t timeouts = 0, bad_msgs = 0, losses = 0;
        bool operator==(const Health&) const = default;
    };
    [[nodiscard]] Health health() const
    {
        Health h;
        for (uint32_t i : inst_) {
            auto c = dev_->status(i).counters;
            h.timeouts += c.timeouts;
            h.bad_msgs += c.bad_msgs;
            h.losses += c.losses;
        }
        return h;
    }

    // Run @op in a child process attached to node 1, SIGKILL it once
    // @started says the operation is under way, and return the seconds
    // from the kill until the child was reaped. The child must not finish.
    double kill_midway(const std::function<int(lite_t*)>& op, const std::function<bool()>& started)
    {
        Pipe ready;
        pid_t pid = fork();
        if (pid == 0) {
            lite_t* c = nullptr;
            if (LITE_open(inst_[0], &c) != 0 || !ready.put('r'))
                _exit(10);
            int ret = op(c);
            _exit(ret == 0 ? 0 : 20);
        }
        EXPECT_GT(pid, 0);
        if (pid <= 0)
            return 99;
        EXPECT_EQ(ready.get(), 'r');
        EXPECT_TRUE(wait_until(started, 20s)) << "the operation did not start";
        std::this_thread::sleep_for(300ms); // well inside it
        auto t0 = Clock::now();
        kill(pid, SIGKILL);
        // Where the kernel holds the dying child, for a slow end's report.
        std::string trail;
        std::string last;
        while (seconds(Clock::now() - t0) < 5) {
            std::string stat = read_proc(pid, "stat");
            auto close_paren = stat.rfind(')');
            if (close_paren == std::string::npos || close_paren + 2 >= stat.size() || stat[close_paren + 2] == 'Z')
                break;
            std::string stack = read_proc(pid, "stack");
            if (stack != last) {
                trail += "--- at " + std::to_string(seconds(Clock::now() - t0)) + " s:\n" + stack;
                last = stack;
            }
            std::this_thread::sleep_for(2ms);
        }
        int st = wait_child_within(pid, 120s);
        EXPECT_NE(st, -1) << "the killed child did not exit in 120 s";
        double took = seconds(Clock::now() - t0);
        if (took > 0.25)
            std::printf("slow end (%.3f s); kernel stacks of the dying child:\n%s", took, trail.c_str());
        EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            << "the child was not killed mid-way (exit " << (WIFEXITED(st) ? WEXITSTATUS(st) : -1) << ")";
        return took;
    }
};

// Node 2 zeroes and maps a 1 GiB allocation for node 1 while another
// process allocates and frees 64 KiB on node 2 from node 3, again and
// again: those are served beside it, not behind it.
TEST_F(Limits, LargeAllocationDoesNotStallSmallOnes)
{
    const uint64_t base = mem_bytes(1);
    Pipe go, stop, result;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // Report: allocations done, failures, worst latency (us).
        std::array<uint64_t, 3> r{0, 0, 0};
        lite_t* c = nullptr;
        if (LITE_open(inst_[2], &c) != 0 || go.get() != 'g')
            _exit(10);
        fcntl(stop.fd[0], F_SETFL, O_NONBLOCK);
        char x = 0;
        while (read(stop.fd[0], &x, 1) != 1 && r[0] < 100000) {
            auto t0 = Clock::now();
            lite_lmr_t h = 0;
            int ret = LITE_alloc(c, 64 * uint64_t{1024}, 2, &h);
            if (ret == 0)
                ret = LITE_free(c, h);
            auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
            r[0]++;
            r[1] += ret != 0;
            r[2] = std::max<uint64_t>(r[2], static_cast<uint64_t>(us));
        }
        _exit(write(result.fd[1], r.data(), sizeof(r)) == sizeof(r) ? 0 : 11);
    }

    auto s = lite::Session::open(inst_[0]);
    std::atomic<bool> big_done{false};
    Clock::duration big_took{};
    int big_err = 0;
    std::thread big([&] {
        auto t0 = Clock::now();
        lite_lmr_t h = 0;
        big_err = LITE_alloc(s.get(), kGiB, 2, &h);
        big_took = Clock::now() - t0;
        big_done = true;
        if (big_err == 0)
            big_err = LITE_free(s.get(), h);
    });
    // Node 2 counts the memory as soon as its allocation job starts.
    EXPECT_TRUE(wait_until([&] { return mem_bytes(1) >= base + kGiB || big_done; }, 20s));
    EXPECT_FALSE(big_done) << "the large allocation ended before the small ones began";
    ASSERT_TRUE(go.put('g'));
    big.join();
    // What the child did while the large allocation ran.
    ASSERT_TRUE(stop.put('s'));
    std::array<uint64_t, 3> r{};
    ASSERT_EQ(read_within(result.fd[0], r.data(), sizeof(r), 120s), sizeof(r)) << "no result from the child in 120 s";
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    EXPECT_EQ(big_err, 0);
    double big_s = seconds(big_took), worst_s = static_cast<double>(r[2]) / 1e6;
    std::printf("1 GiB allocation: %.2f s; beside it %llu small allocations, worst %.3f s, %llu failed\n", big_s,
                static_cast<unsigned long long>(r[0]), worst_s, static_cast<unsigned long long>(r[1]));
    RecordProperty("big_alloc_s", std::to_string(big_s));
    RecordProperty("small_alloc_worst_s", std::to_string(worst_s));
    EXPECT_EQ(r[1], 0u) << "small allocations failed";
    EXPECT_GE(r[0], 3u) << "too few small allocations to tell";
    // Behind it, the first would have waited for most of it.
    EXPECT_LT(worst_s, big_s / 3) << "a small allocation waited for the large one";
    EXPECT_LT(worst_s, 3.0) << "a small allocation took longer than its normal timeout";
    EXPECT_TRUE(wait_until([&] { return mem_bytes(1) == base; }, 10s));
}

// A process killed in a 1 GiB read, write (both paths), memset, memcpy or
// allocation is gone within a second; the nodes stay healthy, and what the
// killed allocation had made is freed by the memory node.
TEST_F(Limits, FatalSignalStopsLongOperationsWithinASecond)
{
    auto s = lite::Session::open(inst_[0]);
    const uint64_t base = mem_bytes(1);
    const Health healthy = health();
    std::optional<lite::Lmr> lmr = s.alloc(kGiB, 2);
    lmr->share("fatal", LITE_PERM_ALL);
    // Untouched anonymous memory: pages appear as the transfer reaches them.
    void* mem = mmap(nullptr, kGiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    auto* buf = static_cast<uint8_t*>(mem);
    // The child maps the LMR, then runs @f on the mapping.
    auto on_mapping = [](std::function<int(lite_t*, lite_lmr_t)> f) {
        return [f = std::move(f)](lite_t* c) {
            lite_lmr_t h = 0;
            uint64_t size = 0;
            int ret = LITE_map(c, "fatal", 0, &h, &size);
            return ret != 0 ? ret : f(c, h);
        };
    };
    struct Case {
        const char* name;
        std::function<int(lite_t*)> op;
    };
    std::vector<Case> cases = {
        {"read (zero copy)",
         on_mapping([&](lite_t* c, lite_lmr_t h) { return LITE_read_flags(c, h, 0, buf, kGiB, LITE_RW_ZCOPY); })},
        {"read (copy)",
         on_mapping([&](lite_t* c, lite_lmr_t h) { return LITE_read_flags(c, h, 0, buf, kGiB, LITE_RW_COPY); })},
        {"write (zero copy)",
         on_mapping([&](lite_t* c, lite_lmr_t h) { return LITE_write_flags(c, h, 0, buf, kGiB, LITE_RW_ZCOPY); })},
        {"write (copy)",
         on_mapping([&](lite_t* c, lite_lmr_t h) { return LITE_write_flags(c, h, 0, buf, kGiB, LITE_RW_COPY); })},
        {"memset", on_mapping([](lite_t* c, lite_lmr_t h) { return LITE_memset(c, h, 0, 0x5a, kGiB); })},
        {"memcpy", on_mapping([](lite_t* c, lite_lmr_t h) { return LITE_memcpy(c, h, 4096, h, 0, kGiB - 4096); })},
    };
    double worst = 0;
    for (const auto& k : cases) {
        // Started: give the child time to map and post its first steps.
        double took = kill_midway(k.op, [] { return true; });
        std::printf("killed in %s: gone after %.3f s\n", k.name, took);
        EXPECT_LT(took, 1.0) << k.name;
        worst = std::max(worst, took);
    }

    // An allocation: node 2 counts its memory once the job started. The
    // quota has room for it, and must have again once it is freed.
    const uint64_t with_lmr = mem_bytes(1);
    ASSERT_TRUE(set_quota_mb(2 * 1024 + 1));
    double took = kill_midway(
        [](lite_t* c) {
            lite_lmr_t h = 0;
            return LITE_alloc(c, kGiB, 2, &h);
        },
        [&] { return mem_bytes(1) >= with_lmr + kGiB; });
    std::printf("killed in a 1 GiB allocation: gone after %.3f s\n", took);
    EXPECT_LT(took, 1.0) << "allocation";
    worst = std::max(worst, took);
    auto t0 = Clock::now();
    EXPECT_TRUE(wait_until([&] { return mem_bytes(1) == with_lmr; }, 20s))
        << "node 2 still holds " << mem_bytes(1) - with_lmr << " bytes of the killed allocation";
    std::printf("the killed allocation's memory was freed %.3f s after the child was gone\n",
                seconds(Clock::now() - t0));
    // The user holds the 1 GiB LMR only: 1 MiB more fits a 1 GiB + 1 MiB quota.
    ASSERT_TRUE(set_quota_mb(1024 + 1));
    lite_lmr_t h = 0;
    EXPECT_TRUE(wait_until([&] { return LITE_alloc(s.get(), kMiB, 3, &h) == 0; }, 5s))
        << "the killed allocation's quota charge was not returned";
    EXPECT_EQ(LITE_alloc(s.get(), kMiB, 3, &h), -EDQUOT);
    ASSERT_TRUE(set_quota_mb(0));
    munmap(mem, kGiB);

    // Still healthy: a fresh operation works, nothing timed out or broke.
    std::vector<uint8_t> out(65536), in(65536);
    for (size_t i = 0; i < out.size(); i++)
        out[i] = static_cast<uint8_t>(i * 7);
    lmr->write(kGiB - out.size(), std::span<const uint8_t>(out));
    lmr->read(kGiB - in.size(), std::span<uint8_t>(in));
    EXPECT_EQ(in, out);
    EXPECT_EQ(live_members(*dev_, inst_[0]), (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_EQ(health(), healthy) << "timeouts, bad messages or lost members after the kills";
    lmr.reset();
    EXPECT_TRUE(wait_until([&] { return mem_bytes(1) == base; }, 10s));

    RecordProperty("fatal_signal_stop_s", std::to_string(worst));
    std::printf("fatal_signal_stop_s = %.3f\n", worst);
    std::string out_dir = env("LITE_OUT", "");
    if (!out_dir.empty()) {
        std::ofstream(out_dir + "/fatal_signal.json") << "{\"fatal_signal_stop_s\": " << worst << "}\n";
    }
}

// quota_mb caps, per local user and per node the allocation is made from,
// the LMR memory held on any node; freeing returns it, mappings do not
// count, and another user has a quota of its own.
TEST_F(Limits, QuotaPerUserPerNode)
{
    ASSERT_EQ(quota_mb(), 0u) << "unlimited by default";
    ASSERT_TRUE(set_quota_mb(8));
    auto s = lite::Session::open(inst_[0]);
    lite_lmr_t a = 0, b = 0, c = 0, d = 0;
    EXPECT_EQ(LITE_alloc(s.get(), 9 * kMiB, 2, &a), -EDQUOT) << "one LMR above the quota";
    ASSERT_EQ(LITE_alloc(s.get(), 4 * kMiB, 2, &a), 0);
    ASSERT_EQ(LITE_alloc(s.get(), 4 * kMiB, 3, &b), 0) << "memory on any node counts";
    EXPECT_EQ(LITE_alloc(s.get(), 1, 1, &c), -EDQUOT) << "at the quota";
    EXPECT_EQ(LITE_alloc(s.get(), 1, 2, &c), -EDQUOT);
    {
        // A second file of the same user shares its quota.
        auto s2 = lite::Session::open(inst_[0]);
        EXPECT_EQ(LITE_alloc(s2.get(), 4096, 3, &c), -EDQUOT);
    }
    {
        // Allocations made from another node count there.
        auto other = lite::Session::open(inst_[1]);
        auto l = other.alloc(8 * kMiB, 1);
        EXPECT_EQ(LITE_alloc(other.get(), 1, 1, &c), -EDQUOT);
    }
    ASSERT_EQ(LITE_share(s.get(), a, "quota-shared", LITE_PERM_READ), 0);

    // Another user: its own quota; mapping costs it nothing.
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (!become_nobody(true)) // a member of group lite, as users are
            _exit(100);
        lite_t* n = nullptr;
        lite_lmr_t h = 0, m = 0;
        uint64_t size = 0;
        if (LITE_open(inst_[0], &n) != 0)
            _exit(101);
        if (LITE_alloc(n, 8 * kMiB, 3, &h) != 0)
            _exit(1);
        if (LITE_alloc(n, 1, 2, &m) != -EDQUOT)
            _exit(2);
        if (LITE_map(n, "quota-shared", LITE_PERM_READ, &m, &size) != 0 || size != 4 * kMiB)
            _exit(3);
        if (LITE_free(n, h) != 0 || LITE_alloc(n, 8 * kMiB, 1, &h) != 0)
            _exit(4);
        _exit(0);
    }
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "1: own quota refused, 2: quota not enforced, 3: map refused, 4: free did not "
                                     "return it, 10x: setup";

    // Freeing returns the memory to the quota.
    EXPECT_EQ(LITE_alloc(s.get(), 4 * kMiB, 1, &c), -EDQUOT);
    ASSERT_EQ(LITE_free(s.get(), b), 0);
    ASSERT_EQ(LITE_alloc(s.get(), 4 * kMiB, 1, &c), 0);
    EXPECT_EQ(LITE_alloc(s.get(), 1, 3, &d), -EDQUOT);
    // Raised at run time: room again; lowered: what is held stays.
    ASSERT_TRUE(set_quota_mb(9));
    EXPECT_EQ(LITE_alloc(s.get(), kMiB, 3, &d), 0);
    ASSERT_TRUE(set_quota_mb(1));
    uint8_t x = 1;
    EXPECT_EQ(LITE_read(s.get(), d, 0, &x, 1), 0);
    EXPECT_EQ(x, 0);
    EXPECT_EQ(LITE_alloc(s.get(), 1, 3, &b), -EDQUOT);
}

} // namespace
