// SPDX-License-Identifier: GPL-2.0
// Wire rules of RPC: ring descriptions, ring acks, lock/barrier requests,
// the entries peers write into rings and the reply headers they write
// into reply buffers. Every field a peer controls is checked.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core.hpp"

using namespace lite_test;

namespace
{

constexpr uint32_t kMax = LITE_RPC_PAYLOAD_MAX;

std::vector<uint8_t> ring_payload(uint64_t size, uint32_t n, uint32_t chunk)
{
    std::vector<uint8_t> p(sizeof(lite_wire_ring) + n * sizeof(lite_wire_chunk));
    auto* r = reinterpret_cast<lite_wire_ring*>(p.data());
    r->size = htole64(size);
    r->chunks.count = htole32(n);
    r->chunks.total = htole32(n);
    for (uint32_t i = 0; i < n; i++) {
        r->chunks.chunks[i].addr = htole64(0x100000ULL * (i + 1));
        r->chunks.chunks[i].len = htole32(chunk);
        r->chunks.chunks[i].rkey = htole32(7 + i);
    }
    return p;
}

int parse_bytes(uint8_t type, bool reply, uint32_t req_id, const std::vector<uint8_t>& p)
{
    return parse(message(type, reply, req_id, 0, p.data(), static_cast<uint32_t>(p.size())));
}

lite_wire_sync sync_req(uint8_t op)
{
    lite_wire_sync s{};
    s.mr_id = htole64(0x500000001ULL);
    s.offset = htole64(64);
    s.op = op;
    return s;
}

lite_wire_rpc call_entry(uint64_t pos)
{
    lite_wire_rpc w{};
    w.magic = htole32(LITE_RPC_MAGIC);
    w.kind = LITE_RPC_CALL;
    w.src = htole16(2);
    w.port = htole32(100);
    w.call_id = htole32(9);
    w.pos = htole64(pos);
    w.len = htole32(1000);
    w.n_segs = htole32(1);
    w.reply_cap = htole64(4096);
    return w;
}

} // namespace

TEST(WireRpc, RingRequestAndReply)
{
    EXPECT_EQ(parse(message(LITE_MSG_RING, false, 1, 0, nullptr, 0)), 0);
    uint8_t junk = 0;
    EXPECT_EQ(parse(message(LITE_MSG_RING, false, 1, 0, &junk, 1)), -EBADMSG) << "request has no payload";

    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, ring_payload(uint64_t{2} * 65536, 2, 65536)), 0);
    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, ring_payload(uint64_t{3} * 65536, 2, 65536)), -EBADMSG)
        << "chunks must add up to the size";
    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, ring_payload(65536 + 8, 1, 65536 + 8)), -EBADMSG)
        << "size must be a multiple of the entry alignment";
    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, ring_payload(0, 0, 0)), -EBADMSG) << "empty ring";
    // Found by tests/fuzz/wire_parse: check_ring() read the ring's size
    // before checking that it had arrived.
    auto whole = ring_payload(65536, 1, 65536);
    for (size_t len = 0; len < sizeof(lite_wire_ring); len++) {
        std::vector<uint8_t> p(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(len));
        EXPECT_EQ(parse_guarded(message(LITE_MSG_RING, true, 1, 0, p.data(), static_cast<uint32_t>(len))), -EBADMSG)
            << len << " bytes";
    }
    auto p = ring_payload(65536, 1, 65536);
    reinterpret_cast<lite_wire_ring*>(p.data())->reserved = 1;
    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, p), -EBADMSG) << "reserved";
    p = ring_payload(65536, 1, 65536);
    reinterpret_cast<lite_wire_ring*>(p.data())->reserved0 = 1;
    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, p), -EBADMSG) << "reserved0 (the ring's key before version 7)";
    p = ring_payload(uint64_t{2} * 65536, 2, 65536);
    reinterpret_cast<lite_wire_ring*>(p.data())->chunks.start = htole32(1);
    EXPECT_EQ(parse_bytes(LITE_MSG_RING, true, 1, p), -EBADMSG) << "the whole list, from chunk 0";
}

TEST(WireRpc, RingAckIsOneWay)
{
    lite_wire_ring_ack a{htole64(4096)};
    EXPECT_EQ(parse(message(LITE_MSG_RING_ACK, false, 0, 0, &a, sizeof(a))), 0);
    EXPECT_EQ(parse(message(LITE_MSG_RING_ACK, false, 3, 0, &a, sizeof(a))), -EBADMSG) << "no request id";
    EXPECT_EQ(parse(message(LITE_MSG_RING_ACK, false, 0, 0, &a, 4)), -EBADMSG) << "short";
}

TEST(WireRpc, HeartbeatIsOneWayAndChecked)
{
    lite_wire_heartbeat hb{};
    hb.epoch = htole32(7);
    hb.members = htole16(3);
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, false, 0, 0, &hb, sizeof(hb))), 0);
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, false, 5, 0, &hb, sizeof(hb))), -EBADMSG) << "no request id";
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, true, 5, 0, &hb, sizeof(hb))), -EBADMSG) << "no reply";
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, false, 0, 0, &hb, 4)), -EBADMSG) << "short";
    auto bad = hb;
    bad.members = 0;
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, false, 0, 0, &bad, sizeof(bad))), -EBADMSG) << "no members";
    bad = hb;
    bad.members = htole16(LITE_WIRE_MAX_NODES + 1);
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, false, 0, 0, &bad, sizeof(bad))), -EBADMSG) << "too many";
    bad = hb;
    bad.reserved = 1;
    EXPECT_EQ(parse(message(LITE_MSG_HEARTBEAT, false, 0, 0, &bad, sizeof(bad))), -EBADMSG) << "reserved";
}

TEST(WireRpc, SyncRequests)
{
    for (uint8_t op : {LITE_SYNC_LOCK, LITE_SYNC_TRYLOCK, LITE_SYNC_UNLOCK}) {
        auto s = sync_req(op);
        if (op == LITE_SYNC_UNLOCK)
            s.owner = htole32(1);
        EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &s, sizeof(s))), 0) << int(op);
        s.count = htole16(2);
        EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &s, sizeof(s))), -EBADMSG) << "count only for barriers";
    }
    auto b = sync_req(LITE_SYNC_BARRIER);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &b, sizeof(b))), -EBADMSG) << "barrier needs a count";
    b.count = htole16(3);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &b, sizeof(b))), 0);
    b.offset = htole64(65);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &b, sizeof(b))), -EBADMSG) << "misaligned";

    auto c = sync_req(LITE_SYNC_CANCEL);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &c, sizeof(c))), -EBADMSG) << "cancel names its kind";
    c.kind = LITE_SYNC_BARRIER;
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &c, sizeof(c))), 0);
    c.kind = LITE_SYNC_UNLOCK;
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &c, sizeof(c))), -EBADMSG);

    auto u = sync_req(0);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &u, sizeof(u))), -EBADMSG) << "no op";
    u.op = LITE_SYNC_OP_MAX + 1;
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &u, sizeof(u))), -EBADMSG) << "unknown op";
    auto k = sync_req(LITE_SYNC_LOCK);
    k.kind = LITE_SYNC_LOCK;
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &k, sizeof(k))), -EBADMSG) << "kind only for cancel";
    k = sync_req(LITE_SYNC_LOCK);
    k.reserved = 1;
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &k, sizeof(k))), -EBADMSG) << "reserved";

    lite_wire_sync_result r{htole32(4), htole32(9)};
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, true, 1, 0, &r, sizeof(r))), 0);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, true, 1, 0, &r, 4)), -EBADMSG) << "short";

    auto un = sync_req(LITE_SYNC_UNLOCK);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &un, sizeof(un))), -EBADMSG) << "unlock names its owner";
    un.owner = htole32(9);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &un, sizeof(un))), 0);
    auto lo = sync_req(LITE_SYNC_LOCK);
    lo.owner = htole32(9);
    EXPECT_EQ(parse(message(LITE_MSG_SYNC, false, 1, 0, &lo, sizeof(lo))), -EBADMSG) << "owner only for unlock";
}

TEST(WireRpc, EntrySize)
{
    EXPECT_EQ(lite_rpc_entry_size(0, 0), 64u);
    EXPECT_EQ(lite_rpc_entry_size(0, 1), 128u);
    EXPECT_EQ(lite_rpc_entry_size(1, 48), 128u);
    EXPECT_EQ(lite_rpc_entry_size(1, 49), 192u);
    EXPECT_EQ(lite_rpc_entry_size(LITE_RPC_MAX_SEGS, kMax) % LITE_RPC_ALIGN, 0u);
}

TEST(WireRpc, EntryParse)
{
    lite_rpc_entry e{};
    auto w = call_entry(640);
    ASSERT_EQ(lite_rpc_entry_parse(&w, 640, 2, 1 << 20, &e), 0);
    EXPECT_EQ(e.kind, LITE_RPC_CALL);
    EXPECT_EQ(e.port, 100u);
    EXPECT_EQ(e.call_id, 9u);
    EXPECT_EQ(e.len, 1000u);
    EXPECT_EQ(e.hdr_len, 64u + 16u);
    EXPECT_EQ(e.size, lite_rpc_entry_size(1, 1000));
    EXPECT_EQ(e.reply_cap, 4096u);

    EXPECT_EQ(lite_rpc_entry_parse(&w, 704, 2, 1 << 20, &e), -EBADMSG) << "not where the ring expects it";
    EXPECT_EQ(lite_rpc_entry_parse(&w, 640, 3, 1 << 20, &e), -EBADMSG) << "another node's id";
    EXPECT_EQ(lite_rpc_entry_parse(&w, 640, 2, 1024, &e), -EBADMSG) << "larger than the room the sender has";

    auto bad = [&](auto change, const char* what) {
        auto v = call_entry(0);
        change(v);
        EXPECT_EQ(lite_rpc_entry_parse(&v, 0, 2, 1 << 30, &e), -EBADMSG) << what;
    };
    bad([](lite_wire_rpc& v) { v.magic = 0; }, "magic");
    bad([](lite_wire_rpc& v) { v.kind = 3; }, "kind");
    bad([](lite_wire_rpc& v) { v.port = 0; }, "port 0");
    bad([](lite_wire_rpc& v) { v.len = htole32(kMax + 1); }, "payload too big");
    bad([](lite_wire_rpc& v) { v.call_id = 0; }, "call without id");
    bad([](lite_wire_rpc& v) { v.call_id = htole32(LITE_IMM_REPLY | 1); }, "call id with the reply bit");
    bad([](lite_wire_rpc& v) { v.n_segs = 0; }, "call without reply buffer");
    bad([](lite_wire_rpc& v) { v.n_segs = htole32(LITE_RPC_MAX_SEGS + 1); }, "too many segments");
    bad([](lite_wire_rpc& v) { v.reply_cap = htole64(uint64_t{kMax} + 1); }, "reply too big");
    bad([](lite_wire_rpc& v) { v.reserved0 = 1; }, "reserved0");
    bad([](lite_wire_rpc& v) { v.reserved1 = 1; }, "reserved1");
    bad([](lite_wire_rpc& v) { v.reserved2 = 1; }, "reserved2 (the reply buffer's key before version 7)");
    bad([](lite_wire_rpc& v) { v.reserved[1] = 1; }, "reserved");

    auto m = call_entry(0);
    m.kind = LITE_RPC_MSG;
    EXPECT_EQ(lite_rpc_entry_parse(&m, 0, 2, 1 << 30, &e), -EBADMSG) << "a message has no reply fields";
    m.call_id = 0;
    m.n_segs = 0;
    m.reply_cap = 0;
    EXPECT_EQ(lite_rpc_entry_parse(&m, 0, 2, 1 << 30, &e), 0);
    EXPECT_EQ(e.hdr_len, 64u);
}

TEST(WireRpc, ReplyParse)
{
    lite_wire_rpc_reply r{};
    r.magic = htole32(LITE_RPC_MAGIC);
    r.call_id = htole32(9);
    r.len = htole32(100);
    int status = 1;
    uint32_t len = 0;
    ASSERT_EQ(lite_rpc_reply_parse(&r, 9, 100, &status, &len), 0);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(len, 100u);
    EXPECT_EQ(lite_rpc_reply_parse(&r, 8, 100, &status, &len), -EBADMSG) << "another call's reply";
    EXPECT_EQ(lite_rpc_reply_parse(&r, 9, 99, &status, &len), -EBADMSG) << "longer than the buffer";

    r.status = htole32(static_cast<uint32_t>(-EMSGSIZE));
    r.len = htole32(5000);
    ASSERT_EQ(lite_rpc_reply_parse(&r, 9, 100, &status, &len), 0) << "EMSGSIZE tells the size needed";
    EXPECT_EQ(status, -EMSGSIZE);
    EXPECT_EQ(len, 5000u);

    r.status = htole32(static_cast<uint32_t>(-ECONNRESET));
    EXPECT_EQ(lite_rpc_reply_parse(&r, 9, 100, &status, &len), -EBADMSG) << "errors carry no payload";
    r.len = 0;
    EXPECT_EQ(lite_rpc_reply_parse(&r, 9, 100, &status, &len), 0);
    EXPECT_EQ(status, -ECONNRESET);
    r.status = htole32(5);
    EXPECT_EQ(lite_rpc_reply_parse(&r, 9, 100, &status, &len), -EBADMSG) << "positive status";
    r.status = 0;
    r.reserved[0] = 1;
    EXPECT_EQ(lite_rpc_reply_parse(&r, 9, 100, &status, &len), -EBADMSG) << "reserved";
}
