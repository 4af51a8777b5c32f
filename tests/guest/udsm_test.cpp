// SPDX-License-Identifier: MIT
// The user-level DSM baseline (dsm/udsm.cpp) on the real module, 3 nodes in
// one guest, one participant per node in this process: it must be correct
// too (data across nodes, litmus tests, exact counters under a lock).
#include <gtest/gtest.h>

#include <barrier>
#include <random>
#include <thread>
#include <udsm.hpp>
#include <vector>

#include "dsm_util.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 19200;
constexpr uint64_t kPage = 4096;

// A fifth of the kernel DSM's rounds: user-level faults are slower.
int litmus_rounds()
{
    const int n = std::max(100, std::stoi(env("LITE_DSM_ROUNDS", "10000")) / 5);
    ::testing::Test::RecordProperty("rounds", n);
    return n;
}

class Udsm : public ThreeSessions<kPort>
{
};

TEST_F(Udsm, WritesOnOneNodeAreReadOnTheOthers)
{
    const uint64_t size = 32 * kPage;
    auto a = udsm::Region::create(s_[0], "udsm-rw", size);
    auto b = udsm::Region::open(s_[1], "udsm-rw");
    auto c = udsm::Region::open(s_[2], "udsm-rw");
    ASSERT_EQ(b.size(), size);
    EXPECT_EQ(b.home(), s_[0].node_id());
    for (uint64_t off = 0; off < size; off += 1024)
        EXPECT_EQ(load(c.data() + off), 0U) << "a new region reads as zeros";
    std::mt19937_64 rng(12);
    std::vector<uint64_t> shadow(size / 8, 0);
    udsm::Region* maps[] = {&a, &b, &c};
    for (int k = 0; k < 1500; k++) {
        uint64_t word = rng() % (size / 8);
        uint64_t v = rng();
        store(maps[rng() % 3]->data() + word * 8, v);
        shadow[word] = v;
        uint64_t probe = rng() % (size / 8);
        ASSERT_EQ(load(maps[rng() % 3]->data() + probe * 8), shadow[probe]) << "round " << k << ", word " << probe;
    }
}

TEST_F(Udsm, MessagePassingAndStoreBufferingStaySequentiallyConsistent)
{
    const int rounds = litmus_rounds();
    const auto n = static_cast<size_t>(rounds);
    auto a = udsm::Region::create(s_[0], "udsm-litmus", uint64_t{4} * n * kPage);
    auto b = udsm::Region::open(s_[1], "udsm-litmus");
    std::barrier sync(2);
    std::vector<uint64_t> r1(n), r2(n);
    int mp_bad = 0;
    std::thread t([&] {
        for (size_t i = 0; i < n; i++) {
            std::byte* base = a.data() + 4 * i * kPage;
            sync.arrive_and_wait();
            store(base, 1);         // MP: data
            store(base + kPage, 1); // MP: flag
            sync.arrive_and_wait();
            store(base + 2 * kPage, 1);     // SB: x
            r1[i] = load(base + 3 * kPage); // SB: y
        }
    });
    for (size_t i = 0; i < n; i++) {
        std::byte* base = b.data() + 4 * i * kPage;
        sync.arrive_and_wait();
        uint64_t flag = load(base + kPage);
        uint64_t data = load(base);
        mp_bad += flag == 1 && data == 0 ? 1 : 0;
        sync.arrive_and_wait();
        store(base + 3 * kPage, 1);     // SB: y
        r2[i] = load(base + 2 * kPage); // SB: x
    }
    t.join();
    int sb_bad = 0;
    for (size_t i = 0; i < n; i++)
        sb_bad += r1[i] == 0 && r2[i] == 0 ? 1 : 0;
    EXPECT_EQ(mp_bad, 0) << "flag seen without the data written before it";
    EXPECT_EQ(sb_bad, 0) << "rounds in which both loads missed the other store";
}

TEST_F(Udsm, CountersUnderALockAreExact)
{
    constexpr int kPages = 4;
    constexpr int kThreads = 3;
    constexpr int kIncrements = 60;
    auto lock_lmr = s_[0].alloc(64, 1);
    lock_lmr.share("udsm-count-lock", LITE_PERM_ALL);
    auto a = udsm::Region::create(s_[0], "udsm-count", kPages * kPage);
    auto b = udsm::Region::open(s_[1], "udsm-count");
    auto c = udsm::Region::open(s_[2], "udsm-count");
    udsm::Region* maps[] = {&a, &b, &c};
    std::vector<std::thread> threads;
    for (size_t n = 0; n < 3; n++) {
        for (int t = 0; t < kThreads; t++) {
            threads.emplace_back([&, n, t] {
                auto s = lite::Session::open(inst_[n]);
                auto lk = s.map("udsm-count-lock");
                std::mt19937 rng(static_cast<unsigned>(n * 10 + t));
                for (int k = 0; k < kIncrements; k++) {
                    auto held = lk.lock(0);
                    std::byte* p = maps[n]->data() + (rng() % kPages) * kPage;
                    store(p, load(p) + 1);
                }
            });
        }
    }
    for (auto& t : threads)
        t.join();
    uint64_t total = 0;
    for (int p = 0; p < kPages; p++)
        total += load(c.data() + p * kPage);
    EXPECT_EQ(total, uint64_t{3} * kThreads * kIncrements);
}

} // namespace
