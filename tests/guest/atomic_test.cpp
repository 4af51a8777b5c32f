// SPDX-License-Identifier: MIT
// Atomic domains on the real module, 3 nodes: an LMR of LITE_LMR_NIC_ATOMIC
// takes one-sided NIC atomics (exact totals and distinct previous values
// from 3 nodes x 4 threads, synchronous and through io_uring), its flag
// travels with a share, and every path that would change one of its words
// on the memory node's CPU (lock, trylock, barrier) is refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <lite/async.hpp>
#include <lite/session.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nodes.hpp"
#include "util.hpp"

using namespace lite_guest;

namespace
{

constexpr uint16_t kPort = 19700;

class Atomic : public ThreeNodes<kPort>
{
};

// Runs @body(node index, thread index) on 3 nodes x 4 threads; the first
// exception's text per thread, "" if none.
template <typename F> std::vector<std::string> on_twelve_threads(F body)
{
    std::vector<std::string> errs(12);
    std::vector<std::thread> ts;
    for (size_t n = 0; n < 3; n++) {
        for (size_t t = 0; t < 4; t++) {
            ts.emplace_back([&, n, t] {
                try {
                    body(n, t);
                } catch (const std::exception& e) {
                    errs[n * 4 + t] = e.what();
                }
            });
        }
    }
    for (auto& t : ts)
        t.join();
    return errs;
}

} // namespace

// Fetch-and-add and a compare-and-swap increment loop from 12 threads on
// three nodes, to a word on node 2: every previous value is seen exactly
// once and the totals are exact.
TEST_F(Atomic, NicAtomicsFromThreeNodesAreExact)
{
    auto owner = lite::Session::open(inst_[1]);
    auto words = owner.alloc(4096, 2, LITE_LMR_NIC_ATOMIC);
    words.share("nic-words", LITE_PERM_ALL);
    constexpr uint64_t kAdds = 300;
    constexpr uint64_t kSwaps = 60;
    std::vector<std::vector<uint64_t>> adds(12), swaps(12);
    auto errs = on_twelve_threads([&](size_t n, size_t t) {
        auto s = lite::Session::open(inst_[n]);
        auto w = s.map("nic-words");
        auto& a = adds[n * 4 + t];
        auto& c = swaps[n * 4 + t];
        for (uint64_t i = 0; i < kAdds; i++)
            a.push_back(w.fetch_add(0, 1));
        uint64_t guess = 0;
        while (c.size() < kSwaps) {
            uint64_t old = w.cmp_swap(64, guess, guess + 1);
            if (old == guess)
                c.push_back(old); // ours: the word went from old to old + 1
            guess = old == guess ? guess + 1 : old;
        }
    });
    for (const auto& e : errs)
        ASSERT_EQ(e, "");
    std::set<uint64_t> seen_adds, seen_swaps;
    for (size_t i = 0; i < 12; i++) {
        seen_adds.insert(adds[i].begin(), adds[i].end());
        seen_swaps.insert(swaps[i].begin(), swaps[i].end());
    }
    EXPECT_EQ(seen_adds.size(), 12 * kAdds) << "a previous value seen twice";
    EXPECT_EQ(*seen_adds.rbegin(), 12 * kAdds - 1);
    EXPECT_EQ(seen_swaps.size(), 12 * kSwaps) << "two swaps won from the same value";
    EXPECT_EQ(*seen_swaps.rbegin(), 12 * kSwaps - 1);
    EXPECT_EQ(words.fetch_add(0, 0), 12 * kAdds);
    EXPECT_EQ(words.cmp_swap(64, 0, 0), 12 * kSwaps) << "a failed compare returns the word";
    uint64_t plain[2] = {};
    ASSERT_EQ(LITE_read(owner.get(), words.handle(), 0, &plain[0], 8), 0);
    ASSERT_EQ(LITE_read(owner.get(), words.handle(), 64, &plain[1], 8), 0);
    EXPECT_EQ(plain[0], 12 * kAdds) << "a read sees what the NIC's atomics left";
    EXPECT_EQ(plain[1], 12 * kSwaps);
}

// The same through io_uring: 3 nodes x 4 threads, each with its own ring.
TEST_F(Atomic, NicAtomicsThroughIoUringAreExact)
{
    auto owner = lite::Session::open(inst_[2]);
    auto word = owner.alloc(4096, 1, LITE_LMR_NIC_ATOMIC);
    word.share("nic-ring-word", LITE_PERM_ALL);
    constexpr uint64_t kEach = 400;
    std::vector<std::vector<uint64_t>> olds(12);
    auto errs = on_twelve_threads([&](size_t n, size_t t) {
        auto s = lite::Session::open(inst_[n]);
        auto w = s.map("nic-ring-word");
        lite::Ring ring(s, 64);
        auto& o = olds[n * 4 + t];
        for (uint64_t i = 0; i < kEach; i++)
            ring.fetch_add(w, 8, 1, [&o](const lite::Result& r) { o.push_back(r.value()); });
        ring.drain();
    });
    for (const auto& e : errs)
        ASSERT_EQ(e, "");
    std::set<uint64_t> all;
    size_t n = 0;
    for (const auto& o : olds) {
        all.insert(o.begin(), o.end());
        n += o.size();
    }
    EXPECT_EQ(n, 12 * kEach);
    EXPECT_EQ(all.size(), 12 * kEach) << "a previous value seen twice";
    EXPECT_EQ(*all.rbegin(), 12 * kEach - 1);
    EXPECT_EQ(word.fetch_add(8, 0), 12 * kEach);

    lite::Ring ring(owner, 8);
    uint64_t won = 0, lost = 0;
    ring.cmp_swap(word, 8, 12 * kEach, 5, [&](const lite::Result& r) { won = r.value(); });
    ring.cmp_swap(word, 8, 1, 9, [&](const lite::Result& r) { lost = r.value(); });
    ring.drain();
    EXPECT_EQ(won, 12 * kEach);
    EXPECT_EQ(lost, 5u) << "a failed compare returns the word";
}

// The domain rule: no lock or barrier on an LMR of NIC atomics, from its
// owner or through a mapping on another node; an LMR without the flag
// takes locks, barriers and atomics as before.
TEST_F(Atomic, LocksAndBarriersAreRefusedOnNicWords)
{
    auto owner = lite::Session::open(inst_[0]);
    auto nic = owner.alloc(4096, 3, LITE_LMR_NIC_ATOMIC);
    nic.share("nic-lockless", LITE_PERM_ALL);
    auto other = lite::Session::open(inst_[1]);
    auto mapped = other.map("nic-lockless");
    for (const auto* l : {&nic, &mapped}) {
        lite_t* c = l == &nic ? owner.get() : other.get();
        EXPECT_EQ(LITE_lock(c, l->handle(), 0, 100), -EOPNOTSUPP);
        EXPECT_EQ(LITE_trylock(c, l->handle(), 0), -EOPNOTSUPP);
        EXPECT_EQ(LITE_barrier(c, l->handle(), 8, 1, 100), -EOPNOTSUPP);
        EXPECT_EQ(LITE_unlock(c, l->handle(), 0), -EPERM) << "nothing to release";
        // The access checks come first: a bad word is EINVAL, not refused.
        EXPECT_EQ(LITE_lock(c, l->handle(), 4, 100), -EINVAL);
    }
    EXPECT_EQ(mapped.fetch_add(0, 3), 0u) << "NIC atomics through the mapping";
    EXPECT_EQ(nic.fetch_add(0, 0), 3u);

    auto cpu = owner.alloc(4096, 3);
    {
        auto held = cpu.lock(0);
        EXPECT_EQ(cpu.fetch_add(8, 2), 0u) << "CPU atomics beside a held lock";
    }
    cpu.barrier(16, 1);
    EXPECT_EQ(cpu.fetch_add(8, 0), 2u);
}

// Raw ioctls: the flag's rejections.
TEST_F(Atomic, AllocFlagRejections)
{
    auto s = lite::Session::open(inst_[0]);
    lite_lmr_alloc al{};
    al.size = 4096;
    al.flags = LITE_LMR_NIC_ATOMIC << 1;
    EXPECT_EQ(::ioctl(LITE_fd(s.get()), LITE_IOC_LMR_ALLOC, &al), -1);
    EXPECT_EQ(errno, EINVAL) << "an unknown flag";
    al.flags = ~0U;
    EXPECT_EQ(::ioctl(LITE_fd(s.get()), LITE_IOC_LMR_ALLOC, &al), -1);
    EXPECT_EQ(errno, EINVAL) << "every bit";
    al.flags = LITE_LMR_NIC_ATOMIC;
    ASSERT_EQ(::ioctl(LITE_fd(s.get()), LITE_IOC_LMR_ALLOC, &al), 0);
    EXPECT_NE(al.handle, 0u);
    EXPECT_EQ(LITE_free(s.get(), al.handle), 0);
}
