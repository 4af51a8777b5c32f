// SPDX-License-Identifier: GPL-2.0
// Credit-based flow control (lite_kmod/core/credits.c) between two ends of
// a connection, driven as lite.ko drives it (conn.c, msg.c, rdma.c): sends
// that wait in a backlog without a credit, writes with immediate that take
// a credit but return none, deliveries that grant what the header carries,
// reposts that may trigger a CREDIT message. Any interleaving the fuzzer
// picks must keep, for each direction, every credit accounted for (held by
// the sender, in flight, in a receive buffer not yet reposted, owed by the
// receiver, or on its way back), so a message always finds a posted buffer
// and an honest peer never returns too many; and once the traffic stops,
// the credits flow back until both ends could send again.
#include <cerrno>
#include <deque>

#include "fuzz.hpp"

namespace
{

struct Msg {
    uint16_t credits; // returned to the receiver of this message
};

struct End {
    lite_credits c{};
    uint32_t posted = 0;      // receive buffers the NIC may fill
    uint32_t held = 0;        // received, not yet reposted
    uint32_t backlog = 0;     // sends waiting for a credit
    std::deque<Msg> out;      // in flight towards the other end
    uint64_t out_credits = 0; // returned by the messages in @out
};

struct Link {
    uint32_t depth;
    End e[2];

    explicit Link(uint32_t d) : depth(d)
    {
        for (auto& x : e) {
            lite_credits_init(&x.c, d);
            x.posted = d;
        }
    }

    // lite_tx_post_locked(): piggyback what we owe.
    static void post(End& s)
    {
        s.out.push_back({lite_credits_collect(&s.c)});
        s.out_credits += s.out.back().credits;
    }

    // lite_conn_send() of an ordinary message.
    static void send(End& s)
    {
        if (s.backlog || !lite_credits_take(&s.c, false)) {
            s.backlog++;
        } else {
            post(s);
        }
    }

    // lite_rdma_post() of a write with immediate: waits for a credit (the
    // fuzzer just does something else meanwhile), returns none.
    static void write_imm(End& s)
    {
        if (!lite_credits_avail(&s.c))
            return;
        FUZZ_CHECK(lite_credits_take(&s.c, false));
        s.out.push_back({0});
    }

    // The receive completion and lite_conn_grant().
    void deliver(int to)
    {
        End& s = e[1 - to];
        End& r = e[to];
        if (s.out.empty())
            return;
        Msg m = s.out.front();
        s.out.pop_front();
        s.out_credits -= m.credits;
        FUZZ_CHECK(r.posted > 0); // or the NIC had nowhere to put it
        r.posted--;
        r.held++;
        if (m.credits) {
            FUZZ_CHECK(lite_credits_grant(&r.c, m.credits) == 0);
            while (r.backlog && lite_credits_take(&r.c, false)) { // the flush
                r.backlog--;
                post(r);
            }
        }
    }

    // lite_conn_repost(), and the CREDIT message it may send.
    static void repost(End& r)
    {
        if (!r.held)
            return;
        r.held--;
        r.posted++;
        lite_credits_reposted(&r.c);
        if (lite_credits_update_due(&r.c) && r.c.unreturned && lite_credits_take(&r.c, true))
            post(r);
    }

    // Every credit of the sender @s is somewhere.
    void check(int s) const
    {
        const End& snd = e[s];
        const End& rcv = e[1 - s];
        FUZZ_CHECK(snd.c.depth == depth && snd.c.send <= depth && snd.c.unreturned <= depth);
        FUZZ_CHECK(snd.c.send + snd.out.size() + rcv.held + rcv.c.unreturned + rcv.out_credits == depth);
        FUZZ_CHECK(rcv.posted + rcv.held == depth);
    }

    [[nodiscard]] bool quiet() const { return e[0].out.empty() && e[1].out.empty() && !e[0].held && !e[1].held; }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    // lite.ko posts LITE_RX_DEPTH (32) buffers per connection; the scheme
    // holds for any depth from LITE_CREDITS_MIN_DEPTH to U16_MAX.
    uint8_t pick = in.u8() % 3;
    Link link(pick == 0   ? 32
              : pick == 1 ? static_cast<uint32_t>(in.range(LITE_CREDITS_MIN_DEPTH, 64))
                          : static_cast<uint32_t>(in.range(LITE_CREDITS_MIN_DEPTH, UINT16_MAX)));

    while (!in.empty()) {
        uint8_t op = in.u8();
        End& x = link.e[op & 1];
        switch ((op >> 1) % 4) {
        case 0:
            Link::send(x);
            break;
        case 1:
            Link::write_imm(x);
            break;
        case 2:
            link.deliver(op & 1);
            break;
        case 3:
            Link::repost(x);
            break;
        }
        link.check(0);
        link.check(1);
    }

    // The traffic stops: deliver and repost everything, backlogs included.
    // That settles within a bounded number of rounds.
    for (int round = 0; !link.quiet() || link.e[0].backlog || link.e[1].backlog; round++) {
        FUZZ_CHECK(round < 100000);
        for (int to = 0; to < 2; to++) {
            link.deliver(to);
            Link::repost(link.e[to]);
        }
        link.check(0);
        link.check(1);
    }
    // Nobody is left owing enough to be due a CREDIT message it cannot send,
    // and both ends may send an ordinary message.
    for (auto& x : link.e) {
        FUZZ_CHECK(!lite_credits_update_due(&x.c));
        FUZZ_CHECK(lite_credits_avail(&x.c));
    }
    return 0;
}
