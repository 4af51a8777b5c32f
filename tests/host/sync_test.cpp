// SPDX-License-Identifier: GPL-2.0
// Lock and barrier words (lite_kmod/core/sync.c): ticket order, halves that
// wrap without carrying, the free word back to zero, barrier generations.
#include <gtest/gtest.h>

#include <cstdint>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
extern "C" {
#include "core/sync.h"
}
#pragma GCC diagnostic pop

namespace
{

uint64_t word(uint32_t high, uint32_t low)
{
    return uint64_t{high} << 32 | low;
}

} // namespace

TEST(SyncLock, TicketsAreServedInOrderAndTheWordReturnsToZero)
{
    uint64_t v = 0;
    uint32_t t = 99;
    bool granted = false;
    v = lite_lock_take(v, &t, &granted);
    EXPECT_EQ(t, 0u);
    EXPECT_TRUE(granted) << "a free lock is granted at once";
    v = lite_lock_take(v, &t, &granted);
    EXPECT_EQ(t, 1u);
    EXPECT_FALSE(granted);
    v = lite_lock_take(v, &t, &granted);
    EXPECT_EQ(t, 2u);
    EXPECT_FALSE(granted);
    EXPECT_FALSE(lite_lock_free(v));

    uint32_t served = 0;
    bool idle = true;
    v = lite_lock_serve_next(v, &served, &idle);
    EXPECT_EQ(served, 1u) << "FIFO: the second taker is next";
    EXPECT_FALSE(idle);
    v = lite_lock_serve_next(v, &served, &idle);
    EXPECT_EQ(served, 2u);
    EXPECT_FALSE(idle);
    v = lite_lock_serve_next(v, &served, &idle);
    EXPECT_TRUE(idle);
    EXPECT_EQ(v, 0u) << "free and nobody waiting: zero";
    EXPECT_TRUE(lite_lock_free(v));
}

TEST(SyncLock, HalvesWrapWithoutCarrying)
{
    uint32_t t = 0;
    bool granted = false;
    uint64_t v = lite_lock_take(word(0xffffffffU, 0xffffffffU), &t, &granted);
    EXPECT_EQ(t, 0xffffffffU);
    EXPECT_TRUE(granted);
    EXPECT_EQ(v, word(0, 0xffffffffU)) << "the next ticket wraps to 0, the served half is untouched";
    v = lite_lock_take(v, &t, &granted);
    EXPECT_EQ(t, 0u);
    EXPECT_FALSE(granted);

    uint32_t served = 0;
    bool idle = true;
    v = lite_lock_serve_next(v, &served, &idle);
    EXPECT_EQ(served, 0u) << "serving wraps too";
    EXPECT_FALSE(idle);
    EXPECT_EQ(v, word(1, 0)) << "no carry into the ticket half";
    v = lite_lock_serve_next(v, &served, &idle);
    EXPECT_TRUE(idle);
    EXPECT_EQ(v, 0u);
}

// Found by tests/fuzz/sync: a word that says 2^32 - 1 arrivals (anyone who
// may write the LMR can put it there) wrapped to none on the next arrival
// instead of releasing, as any other word past the count does.
TEST(SyncBarrier, AWordPastTheCountReleasesEvenAtTheTopOfTheHalf)
{
    for (uint32_t arrivals : {3u, 1000u, 0xfffffffeu, 0xffffffffu}) {
        uint32_t gen = 0;
        bool release = false;
        uint64_t v = lite_barrier_arrive(word(7, arrivals), 3, &gen, &release);
        EXPECT_EQ(gen, 7u);
        EXPECT_TRUE(release) << arrivals << " arrivals";
        EXPECT_EQ(v, word(8, 0));
    }
}

TEST(SyncBarrier, ReleasesOnTheLastArrivalAndStartsTheNextGeneration)
{
    uint64_t v = 0;
    uint32_t gen = 7;
    bool release = true;
    v = lite_barrier_arrive(v, 3, &gen, &release);
    EXPECT_EQ(gen, 0u);
    EXPECT_FALSE(release);
    v = lite_barrier_arrive(v, 3, &gen, &release);
    EXPECT_FALSE(release);
    EXPECT_EQ(v, word(0, 2));
    v = lite_barrier_withdraw(v);
    EXPECT_EQ(v, word(0, 1)) << "a participant that gave up is not counted";
    v = lite_barrier_arrive(v, 3, &gen, &release);
    EXPECT_FALSE(release);
    v = lite_barrier_arrive(v, 3, &gen, &release);
    EXPECT_TRUE(release);
    EXPECT_EQ(gen, 0u) << "released in the generation it arrived in";
    EXPECT_EQ(v, word(1, 0));

    v = lite_barrier_arrive(v, 1, &gen, &release);
    EXPECT_TRUE(release) << "a barrier of one never waits";
    EXPECT_EQ(gen, 1u);
    EXPECT_EQ(v, word(2, 0));
    v = lite_barrier_arrive(word(0xffffffffU, 0), 1, &gen, &release);
    EXPECT_EQ(v, word(0, 0)) << "the generation wraps";
}
