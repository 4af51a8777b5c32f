// SPDX-License-Identifier: GPL-2.0
// Membership table: id allocation, add/remove, and the JOIN accept.
#include <gtest/gtest.h>

#include <cerrno>

#include "core.hpp"

using namespace lite_test;

TEST(Membership, ManagerStartsAsNodeOne)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 18515);
    ASSERT_EQ(lite_mbr_init_manager(&mb, &a), 0);
    EXPECT_EQ(mb.self, 1);
    EXPECT_EQ(mb.manager, 1);
    EXPECT_EQ(mb.count, 1);
    EXPECT_TRUE(lite_mbr_present(&mb, 1));
    EXPECT_FALSE(lite_mbr_present(&mb, 0));
    EXPECT_FALSE(lite_mbr_present(&mb, LITE_MBR_MAX + 1));
}

TEST(Membership, LowestFreeIdIsReused)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    lite_mbr_init_manager(&mb, &a);
    for (uint16_t id = 2; id <= 5; id++) {
        ASSERT_EQ(lite_mbr_alloc_id(&mb), id);
        auto b = v4(10, 99, 0, 1, id);
        ASSERT_EQ(lite_mbr_add(&mb, id, &b), 0);
    }
    ASSERT_EQ(lite_mbr_remove(&mb, 3), 0);
    EXPECT_EQ(lite_mbr_alloc_id(&mb), 3);
    EXPECT_EQ(mb.count, 4);
}

TEST(Membership, FullClusterRefusesMore)
{
    lite_membership mb;
    lite_mbr_init(&mb);
    for (int id = 1; id <= LITE_MBR_MAX; id++) {
        auto a = v4(10, 1, static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 7);
        ASSERT_EQ(lite_mbr_add(&mb, static_cast<uint16_t>(id), &a), 0);
    }
    EXPECT_EQ(lite_mbr_alloc_id(&mb), -ENOSPC);
}

TEST(Membership, AddRejections)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    auto b = v4(10, 99, 0, 1, 2);
    lite_mbr_init_manager(&mb, &a);
    EXPECT_EQ(lite_mbr_add(&mb, 0, &b), -EINVAL);
    EXPECT_EQ(lite_mbr_add(&mb, LITE_MBR_MAX + 1, &b), -EINVAL);
    EXPECT_EQ(lite_mbr_add(&mb, 1, &b), -EEXIST);
    EXPECT_EQ(lite_mbr_add(&mb, 2, &a), -EADDRINUSE) << "same listen address twice";
    EXPECT_EQ(lite_mbr_remove(&mb, 9), -ENOENT);
    EXPECT_EQ(mb.count, 1);
}

TEST(Membership, EpochCountsChanges)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    auto b = v4(10, 99, 0, 1, 2);
    lite_mbr_init_manager(&mb, &a);
    uint32_t e = mb.epoch;
    lite_mbr_add(&mb, 2, &b);
    EXPECT_EQ(mb.epoch, e + 1);
    lite_mbr_remove(&mb, 2);
    EXPECT_EQ(mb.epoch, e + 2);
    lite_mbr_remove(&mb, 2);
    EXPECT_EQ(mb.epoch, e + 2) << "a failed removal changes nothing";
}

TEST(Membership, RemovingTheManagerLeavesNone)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    lite_mbr_init_manager(&mb, &a);
    ASSERT_EQ(lite_mbr_remove(&mb, 1), 0);
    EXPECT_EQ(mb.manager, 0);
}

TEST(Membership, AcceptRoundTrip)
{
    lite_membership mgr;
    auto a = v4(10, 99, 0, 1, 1);
    lite_mbr_init_manager(&mgr, &a);
    for (uint16_t id = 2; id <= 4; id++) {
        auto b = v4(10, 99, 0, static_cast<uint8_t>(id), id);
        lite_mbr_add(&mgr, id, &b);
    }
    lite_mbr_remove(&mgr, 3);

    std::vector<uint8_t> reply(sizeof(lite_wire_auth) + lite_mbr_accept_size(&mgr));
    size_t n =
        lite_mbr_encode_accept(&mgr, 4, reply.data() + sizeof(lite_wire_auth), reply.size() - sizeof(lite_wire_auth));
    ASSERT_EQ(n, lite_mbr_accept_size(&mgr));

    // What the joiner receives passes the wire checks...
    auto m = message(LITE_MSG_AUTH, true, 9, 0, reply.data(), static_cast<uint32_t>(reply.size()));
    lite_msg msg{};
    ASSERT_EQ(parse(m, &msg), 0);

    // ...and reproduces the manager's table, seen from node 4.
    lite_membership joiner{};
    ASSERT_EQ(lite_mbr_apply_accept(&joiner, static_cast<const uint8_t*>(msg.payload) + sizeof(lite_wire_auth),
                                    msg.len - static_cast<uint32_t>(sizeof(lite_wire_auth))),
              0);
    EXPECT_EQ(joiner.self, 4);
    EXPECT_EQ(joiner.manager, 1);
    EXPECT_EQ(joiner.count, 3);
    EXPECT_EQ(joiner.epoch, mgr.epoch);
    for (uint16_t id = 1; id <= LITE_MBR_MAX; id++) {
        ASSERT_EQ(lite_mbr_present(&joiner, id), lite_mbr_present(&mgr, id)) << id;
        if (lite_mbr_present(&mgr, id)) {
            EXPECT_TRUE(lite_naddr_equal(&joiner.addr[id], &mgr.addr[id]));
        }
    }
}

TEST(Membership, EncodeNeedsRoom)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    lite_mbr_init_manager(&mb, &a);
    std::vector<uint8_t> buf(lite_mbr_accept_size(&mb) - 1);
    EXPECT_EQ(lite_mbr_encode_accept(&mb, 2, buf.data(), buf.size()), 0u);
}

// Found by tests/fuzz/mbr_accept: lite_mbr_apply_accept() read the member
// count before checking that the accept's header had arrived.
TEST(Membership, ApplyReadsNothingPastAShortAccept)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 18515);
    ASSERT_EQ(lite_mbr_init_manager(&mb, &a), 0);
    for (size_t len = 0; len < sizeof(lite_wire_accept); len++) {
        std::vector<uint8_t> p(len, 0);
        GuardedBytes g(p);
        EXPECT_EQ(lite_mbr_apply_accept(&mb, g.data(), static_cast<uint32_t>(len)), -EBADMSG) << len << " bytes";
        EXPECT_EQ(mb.self, 1) << "a short accept leaves the table alone";
    }
}

TEST(Membership, ApplyRejectsInconsistentAccept)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    lite_mbr_init_manager(&mb, &a);
    std::vector<uint8_t> buf(lite_mbr_accept_size(&mb));
    lite_mbr_encode_accept(&mb, 2, buf.data(), buf.size()); // node 2 is not listed

    lite_membership joiner{};
    EXPECT_EQ(lite_mbr_apply_accept(&joiner, buf.data(), static_cast<uint32_t>(buf.size())), -EBADMSG);
    EXPECT_EQ(joiner.count, 0) << "a failed apply leaves an empty table";
    EXPECT_EQ(lite_mbr_apply_accept(&joiner, buf.data(), 3), -EBADMSG) << "short";
}

// An id freed and given out again names another member: since() tells the
// two apart (a connection or an answer of the earlier one is stale), also
// across a JOIN accept that replaces the table.
TEST(Membership, AnIdThatComesBackIsAnotherMember)
{
    lite_membership mb;
    auto a = v4(10, 99, 0, 1, 1);
    ASSERT_EQ(lite_mbr_init_manager(&mb, &a), 0);
    auto b = v4(10, 99, 0, 2, 2);
    ASSERT_EQ(lite_mbr_add(&mb, 2, &b), 0);
    const uint32_t first = lite_mbr_since(&mb, 2);
    EXPECT_NE(first, 0u);
    EXPECT_NE(first, lite_mbr_since(&mb, 1));
    ASSERT_EQ(lite_mbr_remove(&mb, 2), 0);
    EXPECT_EQ(lite_mbr_since(&mb, 2), 0u) << "not a member";
    ASSERT_EQ(lite_mbr_add(&mb, 2, &b), 0);
    const uint32_t second = lite_mbr_since(&mb, 2);
    EXPECT_NE(second, 0u);
    EXPECT_NE(second, first) << "the same id and address, another member";
    EXPECT_EQ(lite_mbr_since(&mb, 0), 0u);
    EXPECT_EQ(lite_mbr_since(&mb, LITE_MBR_MAX + 1), 0u);

    // A node that joins again takes the manager's table; the numbers it
    // gave out before are not given out again.
    std::vector<uint8_t> buf(lite_mbr_accept_size(&mb));
    ASSERT_EQ(lite_mbr_encode_accept(&mb, 2, buf.data(), buf.size()), buf.size());
    lite_membership joiner{};
    auto c = v4(10, 99, 0, 7, 7);
    for (int round = 0; round < 3; round++) {
        ASSERT_EQ(lite_mbr_add(&joiner, 7, &c), 0);
        ASSERT_EQ(lite_mbr_remove(&joiner, 7), 0);
    }
    const uint32_t before = joiner.joins;
    ASSERT_EQ(lite_mbr_apply_accept(&joiner, buf.data(), static_cast<uint32_t>(buf.size())), 0);
    EXPECT_GT(lite_mbr_since(&joiner, 1), before);
    EXPECT_GT(lite_mbr_since(&joiner, 2), before);
    EXPECT_NE(lite_mbr_since(&joiner, 1), lite_mbr_since(&joiner, 2));
    const uint32_t after = joiner.joins;
    std::vector<uint8_t> bad(lite_mbr_accept_size(&mb));
    lite_mbr_encode_accept(&mb, 5, bad.data(), bad.size()); // node 5 is not listed
    EXPECT_EQ(lite_mbr_apply_accept(&joiner, bad.data(), static_cast<uint32_t>(bad.size())), -EBADMSG);
    EXPECT_EQ(joiner.count, 0);
    EXPECT_GT(joiner.joins, after) << "the numbers a refused accept used are not given out again";
}
