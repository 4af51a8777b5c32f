// SPDX-License-Identifier: MIT
// Allocation leases on the real module, 3 nodes: LITE_alloc of up to 1 MiB
// is served from memory a memory node allocated ahead (zeroed, cut to the
// size asked, shared and mapped at that size), the memory node counts it
// apart, freed memory comes back zeroed, a memory node that leaves takes
// its lease with it while allocations elsewhere go on, a process that
// exits leaves every counter where it was, idle stock goes back, and
// lease_kb=0 turns leases off.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <lite/session.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nodes.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 19800;
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;

std::vector<std::byte> pattern(uint64_t size, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::byte> v(size);
    for (auto& b : v)
        b = static_cast<std::byte>(rng());
    return v;
}

bool all_zero(const std::vector<std::byte>& v)
{
    return std::all_of(v.begin(), v.end(), [](std::byte b) { return b == std::byte{0}; });
}

class Lease : public ThreeNodes<kPort>
{
protected:
    void SetUp() override
    {
        kb_ = module_param("lease_kb", 8192);
        idle_ms_ = module_param("lease_idle_ms", 10000);
        quota_ = module_param("quota_mb", 0);
        ThreeNodes::SetUp();
    }
    void TearDown() override
    {
        ThreeNodes::TearDown();
        EXPECT_EQ(set_module_param("lease_kb", std::to_string(kb_)), 0);
        EXPECT_EQ(set_module_param("lease_idle_ms", std::to_string(idle_ms_)), 0);
        EXPECT_EQ(set_module_param("quota_mb", std::to_string(quota_)), 0);
    }

    [[nodiscard]] lite_lease_counters lease(size_t i) const { return dev_->status(inst_[i]).lease; }
    [[nodiscard]] lite_node_counters counters(size_t i) const { return dev_->status(inst_[i]).counters; }

    // An LMR of @size on node @node, allocated by @s (attached to node
    // index @i) until one came from the lease; the refill runs in the
    // background, so the first may not.
    [[nodiscard]] lite::Lmr from_lease(const lite::Session& s, size_t i, uint64_t size, uint32_t node) const
    {
        for (int tries = 0; tries < 100; tries++) {
            const uint64_t hits = lease(i).hits;
            auto l = s.alloc(size, node);
            if (lease(i).hits > hits)
                return l;
            std::this_thread::sleep_for(20ms);
        }
        throw std::runtime_error("no allocation of " + std::to_string(size) + " bytes on node " + std::to_string(node) +
                                 " came from the lease in 100 tries");
    }

    // Every byte of leased memory is in some node's stock: nothing that was
    // handed out is still held (true once frees in the background are done).
    [[nodiscard]] bool only_stock_left() const
    {
        uint64_t stock = 0, granted = 0;
        for (size_t i = 0; i < 3; i++) {
            stock += lease(i).stock_bytes;
            granted += lease(i).granted_bytes;
        }
        return stock == granted;
    }

    unsigned kb_ = 0;
    unsigned idle_ms_ = 0;
    unsigned quota_ = 0;
};

} // namespace

// Sizes from 1 byte to 1 MiB: from the lease, zeroed, exactly their size
// (bounds at the size asked, not the class), data round-trips, and the
// memory node counts the memory as lease memory, not as LMRs it holds.
TEST_F(Lease, SmallAllocationsComeFromTheLeaseCutToSize)
{
    auto s = lite::Session::open(inst_[0]);
    const auto base = counters(1);
    std::vector<lite::Lmr> held;
    uint64_t seed = 1;
    for (uint64_t size : std::vector<uint64_t>{1, 4 * kKiB, 5000, 64 * kKiB + 1, kMiB}) {
        auto l = from_lease(s, 0, size, 2);
        ASSERT_EQ(l.size(), size);
        std::vector<std::byte> back(size);
        l.read(0, std::span<std::byte>(back));
        EXPECT_TRUE(all_zero(back)) << size << " bytes: leased memory is zeroed";
        auto data = pattern(size, seed++);
        l.write(0, std::span<const std::byte>(data));
        l.read(0, std::span<std::byte>(back));
        EXPECT_EQ(checksum(back), checksum(data)) << size << " bytes";
        std::byte b{};
        EXPECT_EQ(LITE_read(s.get(), l.handle(), size, &b, 1), -ERANGE) << size << ": one past its size";
        EXPECT_EQ(LITE_write(s.get(), l.handle(), size - 1, &b, 2), -ERANGE) << size << ": crosses its end";
        held.push_back(std::move(l));
    }
    const auto now = counters(1);
    EXPECT_EQ(now.mem_bytes, base.mem_bytes) << "leased memory is not counted as LMRs held";
    EXPECT_EQ(now.mem_lmrs, base.mem_lmrs);
    EXPECT_GE(lease(1).granted_bytes, 4 * kKiB + 4 * kKiB + 8 * kKiB + 128 * kKiB + kMiB)
        << "node 2 counts it as lease memory, whole classes";
    EXPECT_GE(lease(0).hits, 5u);
    held.clear();
    EXPECT_TRUE(wait_until([&] { return only_stock_left(); }, 10s)) << "the frees went out";
}

// A leased LMR shared and mapped on another node has the size it was
// allocated with there too, the same data, and the owner's free revokes
// the mapping before it returns.
TEST_F(Lease, SharedLeasedLmrMapsAtItsSize)
{
    auto s = lite::Session::open(inst_[0]);
    auto l = from_lease(s, 0, 5000, 3);
    const auto data = pattern(5000, 7);
    l.write(0, std::span<const std::byte>(data));
    l.share("leased", LITE_PERM_ALL);
    auto m = lite::Session::open(inst_[1]);
    auto mapped = m.map("leased");
    ASSERT_EQ(mapped.size(), 5000u);
    std::vector<std::byte> back(5000);
    mapped.read(0, std::span<std::byte>(back));
    EXPECT_EQ(checksum(back), checksum(data));
    std::byte b{};
    EXPECT_EQ(LITE_read(m.get(), mapped.handle(), 5000, &b, 1), -ERANGE) << "the mapping ends at 5000 too";
    ASSERT_EQ(LITE_free(s.get(), l.handle()), 0); // l's own free then finds nothing
    EXPECT_EQ(LITE_read(m.get(), mapped.handle(), 0, &b, 1), -EKEYREVOKED) << "free waits for a published LMR";
}

// Memory written and freed is zeroed before anyone gets it again: rounds
// of allocate, check zero, scribble, free, on a peer and on the node itself.
TEST_F(Lease, FreedMemoryComesBackZeroed)
{
    auto s = lite::Session::open(inst_[0]);
    const uint64_t hits = lease(0).hits;
    for (uint32_t node : {2U, 1U}) {
        for (int round = 0; round < 40; round++) {
            auto l = s.alloc(8 * kKiB, node);
            std::vector<std::byte> back(8 * kKiB);
            l.read(0, std::span<std::byte>(back));
            ASSERT_TRUE(all_zero(back)) << "round " << round << " on node " << node;
            l.fill(0, std::byte{0xa5}, 8 * kKiB);
            if (round % 8 == 7)
                std::this_thread::sleep_for(50ms); // let the refill catch up
        }
    }
    EXPECT_GT(lease(0).hits, hits) << "some rounds came from the lease";
}

// Node 3 leaves: node 1's lease of it is dropped (its stock goes, nothing
// of it is handed out), allocating on node 3 fails as it should, and the
// lease of node 2 goes on serving.
TEST_F(Lease, MemoryNodeLeavingDropsItsLease)
{
    auto s = lite::Session::open(inst_[0]);
    {
        auto a = from_lease(s, 0, 4 * kKiB, 3);
    }
    {
        auto b = from_lease(s, 0, 4 * kKiB, 2);
    }
    ASSERT_TRUE(wait_until([&] { return only_stock_left() && lease(2).granted_lmrs > 0; }, 10s))
        << "node 3 keeps stock for node 1";

    dev_->down(inst_[2]);
    ASSERT_TRUE(wait_until([&] { return member_ids(*dev_, inst_[0]) == std::vector<uint32_t>{1, 2}; }, 5s));
    lite_lmr_t h = 0;
    EXPECT_EQ(LITE_alloc(s.get(), 4 * kKiB, 3, &h), -EHOSTUNREACH) << "no stale stock of a node that left";
    // Node 1's stock is now exactly what node 2 granted (node 1 is the only
    // node with leases of node 2): node 3's part went.
    EXPECT_TRUE(
        wait_until([&] { return lease(0).stock_bytes == lease(1).granted_bytes && lease(1).granted_bytes > 0; }, 10s))
        << "stock " << lease(0).stock_bytes << ", node 2 granted " << lease(1).granted_bytes;

    auto c = from_lease(s, 0, 4 * kKiB, 2);
    const auto data = pattern(4 * kKiB, 3);
    c.write(0, std::span<const std::byte>(data));
    std::vector<std::byte> back(4 * kKiB);
    c.read(0, std::span<std::byte>(back));
    EXPECT_EQ(checksum(back), checksum(data)) << "allocations elsewhere still work";
}

// A process that allocates from leases (and above them) on every node and
// exits without freeing leaves every node's LMR counters where they were,
// and no leased memory outside some stock.
TEST_F(Lease, ProcessExitLeavesCountersAtStart)
{
    auto warm = lite::Session::open(inst_[1]);
    {
        auto w = from_lease(warm, 1, 4 * kKiB, 1);
    }
    // The warm-up's frees go out in the background: start from rest.
    ASSERT_TRUE(wait_until(
        [&] { return only_stock_left() && counters(0).mem_lmrs + counters(1).mem_lmrs + counters(2).mem_lmrs == 0; },
        10s));
    lite_node_counters base[3] = {counters(0), counters(1), counters(2)};
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        lite_t* c = nullptr;
        if (LITE_open(inst_[1], &c) != 0)
            _exit(10);
        for (int round = 0; round < 5; round++) {
            for (uint32_t node = 1; node <= 3; node++) {
                for (uint64_t size : std::vector<uint64_t>{100, 4 * kKiB, 8000, 64 * kKiB, kMiB, kMiB + 1}) {
                    lite_lmr_t h = 0;
                    if (LITE_alloc(c, size, node, &h) != 0)
                        _exit(11);
                    const uint8_t x = 0x5a;
                    if (LITE_write(c, h, size - 1, &x, 1) != 0)
                        _exit(12);
                }
            }
        }
        _exit(0); // no free, no close
    }
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_TRUE(wait_until(
            [&] {
                auto c = counters(i);
                return c.mem_bytes == base[i].mem_bytes && c.mem_lmrs == base[i].mem_lmrs;
            },
            10s))
            << "node " << i + 1 << " holds " << counters(i).mem_bytes << " bytes, had " << base[i].mem_bytes;
    }
    EXPECT_TRUE(wait_until([&] { return only_stock_left(); }, 10s)) << "a claimed LMR outlived its process";
    EXPECT_GT(lease(1).hits, 0u);
}

// Stock nobody claims from for lease_idle_ms goes back to its memory node.
TEST_F(Lease, IdleStockGoesBack)
{
    ASSERT_EQ(set_module_param("lease_idle_ms", "300"), 0);
    auto s = lite::Session::open(inst_[0]);
    {
        auto a = from_lease(s, 0, 16 * kKiB, 2);
    }
    {
        auto b = from_lease(s, 0, 16 * kKiB, 1);
    }
    EXPECT_TRUE(wait_until(
        [&] {
            for (size_t i = 0; i < 3; i++) {
                if (lease(i).stock_lmrs != 0 || lease(i).granted_lmrs != 0)
                    return false;
            }
            return true;
        },
        10s))
        << "node 1 stock " << lease(0).stock_lmrs << ", node 2 granted " << lease(1).granted_lmrs;
}

// An allocation a lease may serve counts as its whole size class (the
// memory it takes there), from the lease or not; the free returns it.
TEST_F(Lease, QuotaCountsTheSizeClass)
{
    ASSERT_EQ(set_module_param("quota_mb", "1"), 0);
    auto s = lite::Session::open(inst_[0]);
    lite_lmr_t a = 0, b = 0;
    ASSERT_EQ(LITE_alloc(s.get(), 512 * kKiB + 1, 2, &a), 0);
    EXPECT_EQ(LITE_alloc(s.get(), 1, 2, &b), -EDQUOT) << "512 KiB + 1 takes the 1 MiB class";
    ASSERT_EQ(LITE_free(s.get(), a), 0);
    ASSERT_EQ(LITE_alloc(s.get(), kMiB, 2, &a), 0) << "the free returned the whole class";
    ASSERT_EQ(LITE_free(s.get(), a), 0);
    for (int i = 0; i < 256; i++) {
        ASSERT_EQ(LITE_alloc(s.get(), 1, 3, &a), 0) << "one byte takes one page: 256 fit, round " << i;
        ASSERT_EQ(LITE_free(s.get(), a), 0);
    }
}

// lease_kb=0: no allocation comes from a lease.
TEST_F(Lease, LeaseKbZeroTurnsLeasesOff)
{
    ASSERT_EQ(set_module_param("lease_kb", "0"), 0);
    auto s = lite::Session::open(inst_[0]);
    for (int i = 0; i < 10; i++) {
        auto l = s.alloc(4 * kKiB, 2);
        std::vector<std::byte> back(4 * kKiB);
        l.read(0, std::span<std::byte>(back));
        EXPECT_TRUE(all_zero(back));
    }
    EXPECT_EQ(lease(0).hits, 0u);
    EXPECT_EQ(lease(0).stock_lmrs, 0u);
    EXPECT_EQ(lease(1).granted_lmrs, 0u);
}
