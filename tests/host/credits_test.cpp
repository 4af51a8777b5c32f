// SPDX-License-Identifier: GPL-2.0
// Credit-based flow control: unit rules and a two-sided simulation.
#include <gtest/gtest.h>

#include <cerrno>
#include <deque>
#include <random>

#include "core.hpp"

TEST(Credits, LastCreditIsForCreditMessages)
{
    lite_credits c;
    lite_credits_init(&c, 4);
    EXPECT_TRUE(lite_credits_take(&c, false));
    EXPECT_TRUE(lite_credits_take(&c, false));
    EXPECT_TRUE(lite_credits_take(&c, false));
    EXPECT_FALSE(lite_credits_take(&c, false)) << "the last one is reserved";
    EXPECT_TRUE(lite_credits_take(&c, true));
    EXPECT_FALSE(lite_credits_take(&c, true));
    EXPECT_EQ(c.send, 0u);
}

TEST(Credits, GrantCannotExceedDepth)
{
    lite_credits c;
    lite_credits_init(&c, 4);
    lite_credits_take(&c, false);
    EXPECT_EQ(lite_credits_grant(&c, 2), -EPROTO);
    EXPECT_EQ(lite_credits_grant(&c, 1), 0);
    EXPECT_EQ(lite_credits_grant(&c, 1), -EPROTO);
    EXPECT_EQ(lite_credits_grant(&c, 0xffff), -EPROTO);
    EXPECT_EQ(c.send, 4u);
}

TEST(Credits, CollectAndUpdateThreshold)
{
    lite_credits c;
    lite_credits_init(&c, 8);
    for (int i = 0; i < 3; i++)
        lite_credits_reposted(&c);
    EXPECT_FALSE(lite_credits_update_due(&c));
    lite_credits_reposted(&c);
    EXPECT_TRUE(lite_credits_update_due(&c));
    EXPECT_EQ(lite_credits_collect(&c), 4);
    EXPECT_EQ(lite_credits_collect(&c), 0);
    EXPECT_FALSE(lite_credits_update_due(&c));
}

namespace
{

// One side of a connection in the simulation: what conn.c does.
struct Side {
    lite_credits cr{};
    std::deque<bool> backlog; // queued ordinary messages
    int posted_rx;            // free receive buffers
    int unprocessed = 0;      // received, not yet reposted
    uint64_t sent = 0, received = 0;
};

struct Msg {
    bool credit_msg;
    uint16_t credits;
};

} // namespace

// Two sides send random bursts and process receives in random order. No
// side may ever receive into a full ring, and every message gets through.
TEST(Credits, SimulationNeverOverrunsOrDeadlocks)
{
    constexpr uint32_t depth = 16;
    std::mt19937 rng(42);
    Side s[2];
    std::deque<Msg> wire[2]; // wire[i]: in flight towards side i
    for (auto& x : s) {
        lite_credits_init(&x.cr, depth);
        x.posted_rx = depth;
    }

    auto post = [&](int from, bool credit_msg) {
        Side& a = s[from];
        wire[1 - from].push_back({credit_msg, lite_credits_collect(&a.cr)});
        if (!credit_msg)
            a.sent++;
    };
    auto flush = [&](int i) {
        while (!s[i].backlog.empty() && lite_credits_take(&s[i].cr, false)) {
            s[i].backlog.pop_front();
            post(i, false);
        }
    };

    uint64_t to_send[2] = {20000, 20000};
    for (int step = 0; step < 2000000; step++) {
        int i = static_cast<int>(rng() % 2);
        switch (rng() % 3) {
        case 0: // application sends
            if (to_send[i]) {
                to_send[i]--;
                s[i].backlog.push_back(false);
                flush(i);
            }
            break;
        case 1: // a message arrives at side i
            if (!wire[i].empty()) {
                ASSERT_GT(s[i].posted_rx, 0) << "receive into a full ring";
                Msg m = wire[i].front();
                wire[i].pop_front();
                s[i].posted_rx--;
                ASSERT_EQ(lite_credits_grant(&s[i].cr, m.credits), 0);
                flush(i);
                if (!m.credit_msg)
                    s[i].received++;
                s[i].unprocessed++;
            }
            break;
        case 2: // side i reposts a processed buffer
            if (s[i].unprocessed) {
                s[i].unprocessed--;
                s[i].posted_rx++;
                lite_credits_reposted(&s[i].cr);
                if (lite_credits_update_due(&s[i].cr) && lite_credits_take(&s[i].cr, true))
                    post(i, true);
            }
            break;
        }
        if (!to_send[0] && !to_send[1] && wire[0].empty() && wire[1].empty() && s[0].backlog.empty() &&
            s[1].backlog.empty() && !s[0].unprocessed && !s[1].unprocessed)
            break;
    }
    EXPECT_EQ(s[0].received, 20000u);
    EXPECT_EQ(s[1].received, 20000u);
    EXPECT_TRUE(s[0].backlog.empty() && s[1].backlog.empty()) << "stuck: deadlock";
}

TEST(Credits, AvailMatchesTakeForOrdinaryMessages)
{
    lite_credits c{};
    lite_credits_init(&c, 3);
    EXPECT_TRUE(lite_credits_avail(&c));
    EXPECT_TRUE(lite_credits_take(&c, false));
    EXPECT_TRUE(lite_credits_avail(&c));
    EXPECT_TRUE(lite_credits_take(&c, false));
    EXPECT_FALSE(lite_credits_avail(&c)) << "the last credit is kept for CREDIT messages";
    EXPECT_FALSE(lite_credits_take(&c, false));
    EXPECT_TRUE(lite_credits_take(&c, true));
}
