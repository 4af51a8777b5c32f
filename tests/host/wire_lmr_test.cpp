// SPDX-License-Identifier: GPL-2.0
// Wire rules of the LMR, sharing and membership-removal messages, and the
// addresses bound into the handshake proofs.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "core.hpp"

using namespace lite_test;

namespace
{

template <class T> int parse_req(uint8_t type, const T& p)
{
    return parse(message(type, false, 1, 0, &p, sizeof(p)));
}

template <class T> int parse_rep(uint8_t type, const T& p)
{
    return parse(message(type, true, 1, 0, &p, sizeof(p)));
}

std::vector<uint8_t> chunks_payload(uint32_t start, uint32_t count, uint32_t total)
{
    std::vector<uint8_t> p(sizeof(lite_wire_chunks) + count * sizeof(lite_wire_chunk));
    auto* c = reinterpret_cast<lite_wire_chunks*>(p.data());
    c->start = htole32(start);
    c->count = htole32(count);
    c->total = htole32(total);
    for (uint32_t i = 0; i < count; i++) {
        c->chunks[i].addr = htole64(0x1000ULL * (i + 1));
        c->chunks[i].len = htole32(4096);
    }
    return p;
}

lite_wire_share good_share()
{
    lite_wire_share s{};
    std::strcpy(s.name, "counter");
    s.mr_id = htole64(3);
    s.size = htole64(8);
    s.mem_node = htole16(2);
    s.perms = htole32(5);
    return s;
}

} // namespace

TEST(WireLmr, AllocRequest)
{
    lite_wire_lmr_alloc a{};
    a.size = htole64(4096);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_ALLOC, a), 0);
    a.flags = htole32(LITE_WIRE_LMR_NIC_ATOMIC);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_ALLOC, a), 0) << "NIC atomics";
    a.flags = htole32(2);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_ALLOC, a), -EBADMSG) << "unknown flag";
    a.flags = 0;
    a.how = htole32(LITE_WIRE_ALLOC_LEASE);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_ALLOC, a), 0) << "for a lease";
    a.how = htole32(2);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_ALLOC, a), -EBADMSG) << "unknown purpose";
    a.how = 0;
    a.size = 0;
    EXPECT_EQ(parse_req(LITE_MSG_LMR_ALLOC, a), -EBADMSG) << "size 0";
}

TEST(WireLmr, ChunkLists)
{
    auto ok = chunks_payload(0, 3, 5);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, ok.data(), static_cast<uint32_t>(ok.size()))), 0);

    auto over = chunks_payload(4, 3, 5);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, over.data(), static_cast<uint32_t>(over.size()))),
              -EBADMSG)
        << "start + count beyond total";

    auto none = chunks_payload(0, 0, 5);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, none.data(), static_cast<uint32_t>(none.size()))),
              -EBADMSG)
        << "empty batch";

    auto empty_chunk = chunks_payload(0, 2, 2);
    reinterpret_cast<lite_wire_chunks*>(empty_chunk.data())->chunks[1].len = 0;
    EXPECT_EQ(
        parse(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, empty_chunk.data(), static_cast<uint32_t>(empty_chunk.size()))),
        -EBADMSG)
        << "zero-length chunk";

    auto truncated = chunks_payload(0, 3, 3);
    truncated.pop_back();
    EXPECT_EQ(
        parse(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, truncated.data(), static_cast<uint32_t>(truncated.size()))),
        -EBADMSG)
        << "truncated";

    lite_wire_lmr_ref ref{};
    ref.mr_id = htole64(9);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_CHUNKS, ref), 0);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_FREE, ref), 0);
    ref.flags = htole32(LITE_WIRE_FREE_UNMAPPED);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_FREE, ref), 0) << "FREE of an LMR its owner never published";
    EXPECT_EQ(parse_req(LITE_MSG_LMR_CHUNKS, ref), -EBADMSG) << "CHUNKS has no flags";
    ref.flags = htole32(2);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_FREE, ref), -EBADMSG) << "unknown FREE flag";
}

// Keys per share: the owner grants (a random id and the rights), mappers
// fetch with the grant id, the owner voids it with LMR_UNKEY.
TEST(WireLmr, GrantAndUnkey)
{
    lite_wire_lmr_ref ref{};
    ref.mr_id = htole64(9);
    ref.grant = htole64(0x9e3779b97f4a7c15ULL);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_CHUNKS, ref), 0) << "a fetch through a name";
    EXPECT_EQ(parse_req(LITE_MSG_LMR_UNKEY, ref), 0);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_GRANT, ref), -EBADMSG) << "a grant gives some right";
    EXPECT_EQ(parse_req(LITE_MSG_LMR_FREE, ref), -EBADMSG) << "FREE names no grant";
    ref.perms = htole32(1U);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_GRANT, ref), 0) << "read only";
    EXPECT_EQ(parse_req(LITE_MSG_LMR_CHUNKS, ref), -EBADMSG) << "a fetch claims no rights";
    EXPECT_EQ(parse_req(LITE_MSG_LMR_UNKEY, ref), -EBADMSG) << "UNKEY carries no rights";
    ref.perms = htole32(LITE_WIRE_PERMS + 1U);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_GRANT, ref), -EBADMSG) << "unknown right";
    ref.perms = htole32(1U);
    ref.grant = 0;
    EXPECT_EQ(parse_req(LITE_MSG_LMR_GRANT, ref), -EBADMSG) << "grant 0 is the owner's";
    ref.perms = 0;
    EXPECT_EQ(parse_req(LITE_MSG_LMR_UNKEY, ref), -EBADMSG) << "grant 0 is the owner's";
    ref.grant = htole64(5);
    ref.reserved = htole32(1);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_UNKEY, ref), -EBADMSG) << "reserved set";
    EXPECT_EQ(parse_req(LITE_MSG_LMR_CHUNKS, ref), -EBADMSG) << "reserved set";
    ref.reserved = 0;
    ref.start = htole32(1);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_UNKEY, ref), -EBADMSG) << "UNKEY has no start";
    EXPECT_EQ(parse(message(LITE_MSG_LMR_UNKEY, true, 1, 0, nullptr, 0)), 0) << "its reply is empty";
    EXPECT_EQ(parse(message(LITE_MSG_LMR_GRANT, true, 1, -EOPNOTSUPP, nullptr, 0)), 0) << "global mode";
}

// Found by tests/fuzz/wire_parse: check_chunks() read the list's header
// before checking that it had arrived.
TEST(WireLmr, ShortChunkListIsNotReadPastItsEnd)
{
    auto full = chunks_payload(0, 1, 1);
    for (size_t len = 0; len < sizeof(lite_wire_chunks); len++) {
        std::vector<uint8_t> p(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
        EXPECT_EQ(parse_guarded(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, p.data(), static_cast<uint32_t>(len))),
                  -EBADMSG)
            << len << " bytes";
    }
    EXPECT_EQ(parse_guarded(message(LITE_MSG_LMR_CHUNKS, true, 1, 0, full.data(), static_cast<uint32_t>(full.size()))),
              0);
}

TEST(WireLmr, AllocReplyCarriesFirstChunks)
{
    auto tail = chunks_payload(0, 2, 4);
    std::vector<uint8_t> p(offsetof(lite_wire_lmr, first) + tail.size());
    auto* l = reinterpret_cast<lite_wire_lmr*>(p.data());
    l->mr_id = htole64(1);
    l->size = htole64(uint64_t{4} * 4096);
    std::memcpy(p.data() + offsetof(lite_wire_lmr, first), tail.data(), tail.size());
    EXPECT_EQ(parse(message(LITE_MSG_LMR_ALLOC, true, 1, 0, p.data(), static_cast<uint32_t>(p.size()))), 0);
    l->flags = htole32(LITE_WIRE_LMR_NIC_ATOMIC);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_ALLOC, true, 1, 0, p.data(), static_cast<uint32_t>(p.size()))), 0);
    l->flags = htole32(4);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_ALLOC, true, 1, 0, p.data(), static_cast<uint32_t>(p.size()))), -EBADMSG)
        << "unknown flag";
    l->flags = 0;
    l->reserved = htole32(1);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_ALLOC, true, 1, 0, p.data(), static_cast<uint32_t>(p.size()))), -EBADMSG)
        << "reserved (the LMR's key before version 7)";
    l->reserved = 0;
    l->size = 0;
    EXPECT_EQ(parse(message(LITE_MSG_LMR_ALLOC, true, 1, 0, p.data(), static_cast<uint32_t>(p.size()))), -EBADMSG);
}

TEST(WireLmr, ShareAndLookup)
{
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, good_share()), 0);

    auto f = good_share();
    f.flags = LITE_WIRE_LMR_NIC_ATOMIC;
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, f), 0) << "an LMR of NIC atomics";
    f.flags = 0x80;
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, f), -EBADMSG) << "unknown LMR flag";
    f.flags = LITE_WIRE_LMR_NIC_ATOMIC;
    f.kind = LITE_SHARE_DSM;
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, f), -EBADMSG) << "LMR flags on a DSM region's name";

    auto s = good_share();
    std::memset(s.name, 'x', sizeof(s.name));
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "name not terminated";

    s = good_share();
    s.name[0] = 0;
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "empty name";

    s = good_share();
    s.name[20] = 'z';
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "bytes after the NUL";

    s = good_share();
    s.perms = htole32(8);
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "unknown right";

    s = good_share();
    s.mem_node = htole16(LITE_WIRE_MAX_NODES + 1);
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "memory node";

    s = good_share();
    s.share_id = htole64(4);
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "a request names no share";

    s = good_share();
    s.grant = htole64(0x9e3779b97f4a7c15ULL);
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), 0) << "an LMR's name with its grant";
    s.kind = LITE_SHARE_DSM;
    s.perms = 0;
    EXPECT_EQ(parse_req(LITE_MSG_SHARE, s), -EBADMSG) << "a DSM region has no grant";
    s.share_id = htole64(4);
    EXPECT_EQ(parse_rep(LITE_MSG_LOOKUP, s), -EBADMSG) << "nor in a lookup reply";

    s = good_share();
    s.share_id = htole64(4);
    EXPECT_EQ(parse_rep(LITE_MSG_LOOKUP, s), 0) << "lookup reply";
    s.share_id = 0;
    EXPECT_EQ(parse_rep(LITE_MSG_LOOKUP, s), -EBADMSG) << "lookup reply without share id";

    lite_wire_name n{};
    std::strcpy(n.name, "counter");
    EXPECT_EQ(parse_req(LITE_MSG_LOOKUP, n), 0);
    EXPECT_EQ(parse_req(LITE_MSG_UNSHARE, n), 0);
}

TEST(WireLmr, InvalidateAndAtomic)
{
    lite_wire_invalidate inv{};
    inv.share_id = htole64(3);
    EXPECT_EQ(parse_req(LITE_MSG_INVALIDATE, inv), 0);
    inv.reserved = 1;
    EXPECT_EQ(parse_req(LITE_MSG_INVALIDATE, inv), -EBADMSG);

    lite_wire_atomic a{};
    a.op = LITE_ATOMIC_FETCH_ADD;
    a.offset = htole64(16);
    a.operand = htole64(1);
    EXPECT_EQ(parse_req(LITE_MSG_ATOMIC, a), 0);
    a.offset = htole64(12);
    EXPECT_EQ(parse_req(LITE_MSG_ATOMIC, a), -EBADMSG) << "unaligned";
    a.offset = htole64(16);
    a.swap = htole64(2);
    EXPECT_EQ(parse_req(LITE_MSG_ATOMIC, a), -EBADMSG) << "swap on fetch-add";
    a.op = LITE_ATOMIC_CMP_SWAP;
    EXPECT_EQ(parse_req(LITE_MSG_ATOMIC, a), 0);
    a.op = 9;
    EXPECT_EQ(parse_req(LITE_MSG_ATOMIC, a), -EBADMSG) << "unknown op";
    lite_wire_atomic_result r{};
    EXPECT_EQ(parse_rep(LITE_MSG_ATOMIC, r), 0);
}

TEST(WireLmr, MemberDel)
{
    lite_wire_member_del d{};
    d.id = htole16(3);
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_DEL, false, 0, 0, &d, sizeof(d))), 0);
    d.flags = htole16(LITE_DEL_LEFT);
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_DEL, false, 0, 0, &d, sizeof(d))), 0);
    d.flags = htole16(2);
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_DEL, false, 0, 0, &d, sizeof(d))), -EBADMSG) << "unknown flag";
    d.flags = 0;
    d.id = 0;
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_DEL, false, 0, 0, &d, sizeof(d))), -EBADMSG) << "id 0";
    d.id = htole16(3);
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_DEL, true, 1, 0, &d, sizeof(d))), -EBADMSG) << "one-way only";
}

TEST(AuthAddresses, ProofsBindBothListenAddresses)
{
    static const uint8_t secret[] = "a cluster secret";
    lite_auth_ctx ctx{};
    ctx.purpose = LITE_PURPOSE_PEER;
    ctx.node_id = 2;
    ctx.active_listen = v4(10, 99, 0, 1, 18516);
    ctx.passive_listen = v4(10, 99, 0, 1, 18515);
    uint8_t mac[LITE_MAC_LEN];
    lite_auth_mac(secret, sizeof(secret), &ctx, LITE_ROLE_ACTIVE, mac);
    EXPECT_TRUE(lite_auth_verify(secret, sizeof(secret), &ctx, LITE_ROLE_ACTIVE, mac));

    auto moved = ctx;
    moved.active_listen.port = 9999;
    EXPECT_FALSE(lite_auth_verify(secret, sizeof(secret), &moved, LITE_ROLE_ACTIVE, mac))
        << "a relay cannot change where the joiner listens";
    moved = ctx;
    moved.passive_listen = v4(10, 99, 0, 2, 18515);
    EXPECT_FALSE(lite_auth_verify(secret, sizeof(secret), &moved, LITE_ROLE_ACTIVE, mac))
        << "a proof for one node is not valid at another";
}

TEST(WireLmr, CancelIsOneWayAndNamesARequest)
{
    lite_wire_lmr_cancel c{};
    c.req_id = htole32(7);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CANCEL, false, 0, 0, &c, sizeof(c))), 0);
    EXPECT_EQ(parse_req(LITE_MSG_LMR_CANCEL, c), -EBADMSG) << "one-way: no request id of its own";
    EXPECT_EQ(parse_rep(LITE_MSG_LMR_CANCEL, c), -EBADMSG) << "never a reply";
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CANCEL, false, 0, 0, &c, sizeof(c) - 1)), -EBADMSG) << "short";
    c.reserved = htole32(1);
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CANCEL, false, 0, 0, &c, sizeof(c))), -EBADMSG) << "reserved";
    c = {};
    EXPECT_EQ(parse(message(LITE_MSG_LMR_CANCEL, false, 0, 0, &c, sizeof(c))), -EBADMSG) << "request id 0";
}
