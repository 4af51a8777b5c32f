// SPDX-License-Identifier: GPL-2.0
// Wire format: encode, decode, and rejection of malformed messages.
#include <gtest/gtest.h>

#include <cerrno>
#include <random>

#include "core.hpp"

using namespace lite_test;

namespace
{

lite_wire_hello good_hello(uint8_t purpose = LITE_PURPOSE_PEER, uint16_t id = 3)
{
    lite_wire_hello h{};
    for (int i = 0; i < LITE_NONCE_LEN; i++)
        h.nonce[i] = static_cast<uint8_t>(i);
    h.purpose = purpose;
    h.node_id = htole16(id);
    auto a = v4(10, 99, 0, 1, 18515);
    lite_wire_put_addr(&h.listen, &a);
    return h;
}

std::vector<uint8_t> good_accept(uint16_t n, uint16_t your_id, uint16_t mgr)
{
    std::vector<uint8_t> p(sizeof(lite_wire_auth) + sizeof(lite_wire_accept) + n * sizeof(lite_wire_member));
    auto* acc = reinterpret_cast<lite_wire_accept*>(p.data() + sizeof(lite_wire_auth));
    acc->your_id = htole16(your_id);
    acc->manager_id = htole16(mgr);
    acc->n_members = htole16(n);
    acc->epoch = htole32(7);
    for (uint16_t i = 0; i < n; i++) {
        acc->members[i].id = htole16(i + 1);
        auto a = v4(10, 99, 0, 1, static_cast<uint16_t>(18515 + i));
        lite_wire_put_addr(&acc->members[i].addr, &a);
    }
    return p;
}

lite_wire_accept* accept_of(std::vector<uint8_t>& payload)
{
    return reinterpret_cast<lite_wire_accept*>(payload.data() + sizeof(lite_wire_auth));
}

int parse_auth_reply(const std::vector<uint8_t>& payload)
{
    return parse(message(LITE_MSG_AUTH, true, 5, 0, payload.data(), static_cast<uint32_t>(payload.size())));
}

} // namespace

TEST(Wire, HeaderRoundTrip)
{
    lite_wire_ping ping{};
    ping.t0 = htole64(0x1122334455667788ULL);
    auto m = message(LITE_MSG_PING, false, 42, 0, &ping, sizeof(ping), 9);
    hdr(m)->credits = htole16(3);
    lite_msg msg{};
    ASSERT_EQ(parse(m, &msg), 0);
    EXPECT_EQ(msg.type, LITE_MSG_PING);
    EXPECT_FALSE(msg.reply);
    EXPECT_EQ(msg.src, 9);
    EXPECT_EQ(msg.credits, 3);
    EXPECT_EQ(msg.req_id, 42u);
    EXPECT_EQ(msg.status, 0);
    ASSERT_EQ(msg.len, sizeof(ping));
    EXPECT_EQ(std::memcmp(msg.payload, &ping, sizeof(ping)), 0);
}

TEST(Wire, FailedReplyCarriesStatus)
{
    auto m = message(LITE_MSG_AUTH, true, 8, -EKEYREJECTED, nullptr, 0);
    lite_msg msg{};
    ASSERT_EQ(parse(m, &msg), 0);
    EXPECT_TRUE(msg.reply);
    EXPECT_EQ(msg.status, -EKEYREJECTED);
}

TEST(Wire, RejectsEveryTruncation)
{
    auto hello = good_hello();
    auto m = message(LITE_MSG_HELLO, false, 1, 0, &hello, sizeof(hello));
    ASSERT_EQ(parse(m), 0);
    for (size_t n = 0; n < m.size(); n++) {
        lite_msg msg{};
        EXPECT_EQ(lite_wire_parse(m.data(), n, &msg), -EBADMSG) << "length " << n;
    }
}

TEST(Wire, RejectsTruncationEvenWhenLengthFieldAgrees)
{
    auto hello = good_hello();
    auto m = message(LITE_MSG_HELLO, false, 1, 0, &hello, sizeof(hello));
    for (size_t n = sizeof(lite_wire_hdr); n < m.size(); n++) {
        auto t = std::vector<uint8_t>(m.begin(), m.begin() + static_cast<long>(n));
        hdr(t)->len = htole32(static_cast<uint32_t>(n - sizeof(lite_wire_hdr)));
        EXPECT_EQ(parse(t), -EBADMSG) << "payload " << n - sizeof(lite_wire_hdr);
    }
}

TEST(Wire, RejectsOversize)
{
    std::vector<uint8_t> big(LITE_MSG_MAX + 1);
    lite_wire_put_hdr(big.data(), LITE_MSG_PING, false, 1, 0, 1, 0,
                      static_cast<uint32_t>(big.size() - sizeof(lite_wire_hdr)));
    EXPECT_EQ(parse(big), -EBADMSG);
}

TEST(Wire, RejectsBadHeaderFields)
{
    lite_wire_ping ping{};
    auto base = message(LITE_MSG_PING, false, 1, 0, &ping, sizeof(ping));
    ASSERT_EQ(parse(base), 0);

    auto m = base;
    hdr(m)->magic ^= htole32(1);
    EXPECT_EQ(parse(m), -EBADMSG) << "magic";

    m = base;
    hdr(m)->version = LITE_WIRE_VERSION + 1;
    EXPECT_EQ(parse(m), -EPROTO) << "version";

    for (uint8_t type : {uint8_t{0}, uint8_t{LITE_MSG_TYPE_END}, uint8_t{0xff}}) {
        m = base;
        hdr(m)->type = type;
        EXPECT_EQ(parse(m), -EBADMSG) << "type " << int(type);
    }

    m = base;
    hdr(m)->flags = htole16(0x8000);
    EXPECT_EQ(parse(m), -EBADMSG) << "unknown flag";

    m = base;
    hdr(m)->reserved[1] = htole32(1);
    EXPECT_EQ(parse(m), -EBADMSG) << "reserved";

    m = base;
    hdr(m)->len = htole32(sizeof(ping) + 1);
    EXPECT_EQ(parse(m), -EBADMSG) << "len larger than received";

    m = base;
    hdr(m)->len = htole32(sizeof(ping) - 1);
    EXPECT_EQ(parse(m), -EBADMSG) << "len smaller than received";

    m = base;
    hdr(m)->src = htole16(LITE_WIRE_MAX_NODES + 1);
    EXPECT_EQ(parse(m), -EBADMSG) << "src out of range";
}

TEST(Wire, RejectsBadStatus)
{
    auto m = message(LITE_MSG_PING, true, 1, 0, nullptr, 0);
    hdr(m)->status = htole32(5);
    EXPECT_EQ(parse(m), -EBADMSG) << "positive";
    hdr(m)->status = htole32(static_cast<uint32_t>(-4096));
    EXPECT_EQ(parse(m), -EBADMSG) << "beyond errno range";

    lite_wire_ping ping{};
    auto req = message(LITE_MSG_PING, false, 1, -EIO, &ping, sizeof(ping));
    EXPECT_EQ(parse(req), -EBADMSG) << "status on a request";

    auto failed_with_payload = message(LITE_MSG_PING, true, 1, -EIO, &ping, sizeof(ping));
    EXPECT_EQ(parse(failed_with_payload), -EBADMSG);

    auto reply_without_id = message(LITE_MSG_PING, true, 0, 0, &ping, sizeof(ping));
    EXPECT_EQ(parse(reply_without_id), -EBADMSG);
}

TEST(Wire, HelloRules)
{
    auto check = [](const lite_wire_hello& h) { return parse(message(LITE_MSG_HELLO, false, 1, 0, &h, sizeof(h))); };
    EXPECT_EQ(check(good_hello(LITE_PURPOSE_PEER, 3)), 0);
    EXPECT_EQ(check(good_hello(LITE_PURPOSE_JOIN, 0)), 0);
    EXPECT_EQ(check(good_hello(LITE_PURPOSE_JOIN, 2)), -EBADMSG) << "JOIN claims an id";
    EXPECT_EQ(check(good_hello(LITE_PURPOSE_PEER, 0)), -EBADMSG) << "PEER without id";
    EXPECT_EQ(check(good_hello(LITE_PURPOSE_PEER, LITE_WIRE_MAX_NODES + 1)), -EBADMSG);
    EXPECT_EQ(check(good_hello(9, 0)), -EBADMSG) << "purpose";

    auto h = good_hello();
    h.reserved = htole32(1);
    EXPECT_EQ(check(h), -EBADMSG);

    h = good_hello();
    h.listen.family = 5;
    EXPECT_EQ(check(h), -EBADMSG) << "family";

    h = good_hello();
    h.listen.port = 0;
    EXPECT_EQ(check(h), -EBADMSG) << "port 0";

    h = good_hello();
    h.listen.addr[9] = 1;
    EXPECT_EQ(check(h), -EBADMSG) << "IPv4 with trailing bytes";

    h = good_hello();
    h.listen.family = LITE_WIRE_AF_INET6;
    h.listen.addr[15] = 1;
    EXPECT_EQ(check(h), 0) << "IPv6";
}

TEST(Wire, ChallengeAndAuthSizes)
{
    lite_wire_challenge ch{};
    EXPECT_EQ(parse(message(LITE_MSG_HELLO, true, 1, 0, &ch, sizeof(ch))), 0);
    EXPECT_EQ(parse(message(LITE_MSG_HELLO, true, 1, 0, &ch, sizeof(ch) - 1)), -EBADMSG);
    uint8_t auth[sizeof(lite_wire_auth) + 1] = {};
    EXPECT_EQ(parse(message(LITE_MSG_AUTH, false, 1, 0, auth, sizeof(lite_wire_auth))), 0);
    EXPECT_EQ(parse(message(LITE_MSG_AUTH, false, 1, 0, auth, sizeof(auth))), -EBADMSG);
    EXPECT_EQ(parse(message(LITE_MSG_AUTH, true, 1, 0, auth, sizeof(lite_wire_auth))), 0) << "PEER accept";
    EXPECT_EQ(parse(message(LITE_MSG_AUTH, true, 1, 0, auth, sizeof(auth))), -EBADMSG) << "proof + 1 byte";
}

TEST(Wire, AcceptRules)
{
    EXPECT_EQ(parse_auth_reply(good_accept(3, 3, 1)), 0);
    EXPECT_EQ(parse_auth_reply(good_accept(LITE_WIRE_MAX_NODES, 2, 1)), 0) << "full cluster";

    auto p = good_accept(3, 3, 1);
    p.resize(p.size() - 1);
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "truncated member";

    p = good_accept(3, 3, 1);
    accept_of(p)->n_members = htole16(4);
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "count larger than members";

    p = good_accept(3, 3, 1);
    accept_of(p)->members[2].id = htole16(2);
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "duplicate id";

    p = good_accept(3, 3, 1);
    accept_of(p)->members[0].id = 0;
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "id 0";

    p = good_accept(3, 3, 1);
    accept_of(p)->members[0].id = htole16(LITE_WIRE_MAX_NODES + 1);
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "id too large";

    EXPECT_EQ(parse_auth_reply(good_accept(3, 5, 1)), -EBADMSG) << "your id not listed";
    EXPECT_EQ(parse_auth_reply(good_accept(3, 3, 7)), -EBADMSG) << "manager not listed";
    EXPECT_EQ(parse_auth_reply(good_accept(3, 1, 1)), -EBADMSG) << "you are the manager";

    p = good_accept(3, 3, 1);
    accept_of(p)->n_members = 0;
    p.resize(sizeof(lite_wire_auth) + sizeof(lite_wire_accept));
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "no members";

    p = good_accept(3, 3, 1);
    accept_of(p)->members[2].addr = accept_of(p)->members[0].addr;
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "two members at one address";

    p = good_accept(3, 3, 1);
    accept_of(p)->members[1].addr.family = 0;
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "bad member address";

    p = good_accept(3, 3, 1);
    accept_of(p)->reserved = htole32(1);
    EXPECT_EQ(parse_auth_reply(p), -EBADMSG) << "reserved";
}

TEST(Wire, OneWayMessagesCarryNothing)
{
    EXPECT_EQ(parse(message(LITE_MSG_LEAVE, false, 0, 0, nullptr, 0)), 0);
    EXPECT_EQ(parse(message(LITE_MSG_CREDIT, false, 0, 0, nullptr, 0)), 0);
    uint8_t b = 0;
    EXPECT_EQ(parse(message(LITE_MSG_LEAVE, false, 0, 0, &b, 1)), -EBADMSG);
    EXPECT_EQ(parse(message(LITE_MSG_CREDIT, false, 3, 0, nullptr, 0)), -EBADMSG) << "with req id";
    EXPECT_EQ(parse(message(LITE_MSG_LEAVE, true, 3, 0, nullptr, 0)), -EBADMSG) << "as reply";
}

TEST(Wire, MemberAddRules)
{
    lite_wire_member m{};
    m.id = htole16(4);
    auto a = v4(10, 0, 0, 4, 1);
    lite_wire_put_addr(&m.addr, &a);
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_ADD, false, 1, 0, &m, sizeof(m))), 0);
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_ADD, true, 1, 0, nullptr, 0)), 0);
    m.id = 0;
    EXPECT_EQ(parse(message(LITE_MSG_MEMBER_ADD, false, 1, 0, &m, sizeof(m))), -EBADMSG);
}

TEST(Wire, RandomBytesNeverAccepted)
{
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<size_t> len(0, 256);
    for (int i = 0; i < 200000; i++) {
        std::vector<uint8_t> m(len(rng));
        for (auto& b : m)
            b = static_cast<uint8_t>(byte(rng));
        lite_msg msg{};
        ASSERT_NE(lite_wire_parse(m.data(), m.size(), &msg), 0);
    }
}

TEST(Wire, BitFlipsInValidMessagesAreCaughtOrHarmless)
{
    // Flip each bit of a valid accept: the parser must either reject it or
    // return a message that still satisfies every invariant it promises.
    auto p = good_accept(4, 4, 1);
    auto m = message(LITE_MSG_AUTH, true, 5, 0, p.data(), static_cast<uint32_t>(p.size()));
    for (size_t bit = 0; bit < m.size() * 8; bit++) {
        auto f = m;
        f[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        lite_msg msg{};
        if (lite_wire_parse(f.data(), f.size(), &msg) != 0)
            continue;
        EXPECT_LE(msg.len + sizeof(lite_wire_hdr), f.size());
        if (msg.type == LITE_MSG_AUTH && msg.reply && msg.len > sizeof(lite_wire_auth)) {
            lite_membership mb{};
            EXPECT_EQ(lite_mbr_apply_accept(&mb, static_cast<const uint8_t*>(msg.payload) + sizeof(lite_wire_auth),
                                            msg.len - static_cast<uint32_t>(sizeof(lite_wire_auth))),
                      0)
                << "bit " << bit;
        }
    }
}
