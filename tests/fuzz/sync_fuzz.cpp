// SPDX-License-Identifier: GPL-2.0
// Lock and barrier words (lite_kmod/core/sync.c). Any word a user could
// have written into the LMR goes through each function once, against the
// layout in sync.h. Then a ticket lock and a barrier are driven as lite.ko
// drives them (take, unlock by the holder, waiters giving up; arrive,
// withdraw) from any starting generation, against a model: one holder at a
// time, tickets served first come first served, the word back to zero when
// nobody waits; a barrier releases exactly when the last participant
// arrives, once per generation.
#include <deque>
#include <set>

#include "fuzz.hpp"

namespace
{

uint64_t word(uint32_t high, uint32_t low)
{
    return uint64_t{high} << 32 | low;
}

// Each function on any word.
void any_word(uint64_t v, uint16_t count)
{
    uint32_t hi = lite_word_high(v), lo = lite_word_low(v), t = 0;
    bool b = false;

    FUZZ_CHECK(word(hi, lo) == v);
    FUZZ_CHECK(lite_lock_free(v) == (hi == lo));

    uint64_t nv = lite_lock_take(v, &t, &b);
    FUZZ_CHECK(t == hi && b == (hi == lo) && nv == word(hi + 1, lo));

    nv = lite_lock_serve_next(v, &t, &b);
    FUZZ_CHECK(t == lo + 1 && b == (lo + 1 == hi));
    FUZZ_CHECK(nv == (b ? 0 : word(hi, lo + 1)));

    // This arrival is the last one when arrivals reach @count.
    nv = lite_barrier_arrive(v, count, &t, &b);
    FUZZ_CHECK(t == hi);
    FUZZ_CHECK(b == (uint64_t{lo} + 1 >= count));
    FUZZ_CHECK(nv == (b ? word(hi + 1, 0) : word(hi, lo + 1)));

    FUZZ_CHECK(lite_barrier_withdraw(v) == word(hi, lo - 1));
}

struct Lock {
    uint64_t v;
    bool held = false;
    uint32_t holder = 0;
    std::deque<uint32_t> waiting; // tickets in the order taken
    std::set<uint32_t> abandoned;

    explicit Lock(uint32_t base) : v(word(base, base)) {}

    void take(bool try_only)
    {
        uint32_t t = 0;
        bool granted = false;
        bool free_now = !held && waiting.empty();
        FUZZ_CHECK(lite_lock_free(v) == free_now);
        if (try_only && !free_now)
            return; // lite.ko answers -EAGAIN without touching the word
        v = lite_lock_take(v, &t, &granted);
        FUZZ_CHECK(granted == free_now);
        if (granted) {
            held = true;
            holder = t;
        } else {
            FUZZ_CHECK(t == (waiting.empty() ? holder : waiting.back()) + 1);
            waiting.push_back(t);
        }
    }

    // The holder leaves: serve tickets until one is still wanted.
    void unlock()
    {
        if (!held)
            return;
        held = false;
        for (;;) {
            uint32_t served = 0;
            bool idle = false;
            v = lite_lock_serve_next(v, &served, &idle);
            FUZZ_CHECK(idle == waiting.empty());
            if (idle) {
                FUZZ_CHECK(v == 0 && abandoned.empty());
                return;
            }
            FUZZ_CHECK(served == waiting.front()); // first come, first served
            waiting.pop_front();
            if (!abandoned.erase(served)) {
                held = true;
                holder = served;
                return;
            }
        }
    }

    void give_up(size_t which)
    {
        if (waiting.empty())
            return;
        abandoned.insert(waiting[which % waiting.size()]);
    }
};

struct Barrier {
    uint64_t v;
    uint16_t count;
    uint32_t gen;
    uint32_t parked = 0;

    Barrier(uint32_t g, uint16_t n) : v(word(g, 0)), count(n), gen(g) {}

    void arrive()
    {
        uint32_t g = 0;
        bool release = false;
        v = lite_barrier_arrive(v, count, &g, &release);
        FUZZ_CHECK(g == gen);
        FUZZ_CHECK(release == (parked + 1 == count));
        if (release) {
            parked = 0;
            gen++;
        } else {
            parked++;
        }
        FUZZ_CHECK(v == word(gen, parked));
    }

    void withdraw()
    {
        if (!parked)
            return;
        v = lite_barrier_withdraw(v);
        parked--;
        FUZZ_CHECK(v == word(gen, parked));
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    any_word(in.u64(), in.u16());

    // Start generations and tickets anywhere, near the wrap too.
    Lock lock(in.flag() ? ~uint32_t{0} - in.u8() : in.u32());
    Barrier barrier(in.flag() ? ~uint32_t{0} - in.u8() : in.u32(), static_cast<uint16_t>(in.range(1, 16)));
    while (!in.empty()) {
        uint8_t op = in.u8();
        switch (op % 6) {
        case 0:
            lock.take(false);
            break;
        case 1:
            lock.take(true);
            break;
        case 2:
            lock.unlock();
            break;
        case 3:
            lock.give_up(op / 6);
            break;
        case 4:
            barrier.arrive();
            break;
        case 5:
            barrier.withdraw();
            break;
        }
    }
    return 0;
}
