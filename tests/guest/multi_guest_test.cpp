// SPDX-License-Identifier: MIT
// One node per guest on a virtual network (lite-vm --guests N, N >= 2):
// guest 0 is the manager, the others join it at once; all ping across and
// use memory in each other's guests; the joiners leave and the manager sees
// them go. Run only with --gtest_filter=MultiGuest.*.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <lite/session.hpp>
#include <vector>

#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 18515;

double us(std::chrono::nanoseconds d)
{
    return std::chrono::duration<double, std::micro>(d).count();
}

std::vector<int> every_guest(uint32_t guests)
{
    std::vector<int> v;
    for (uint32_t i = 0; i < guests; i++)
        v.push_back(static_cast<int>(i));
    return v;
}

std::vector<uint32_t> ids(uint32_t first, uint32_t last)
{
    std::vector<uint32_t> v;
    for (uint32_t i = first; i <= last; i++)
        v.push_back(i);
    return v;
}

// N guests (lite-vm --guests N, N >= 2). Guest 0: node 1 (manager); later
// node N + 1 too. Guests 1..N-1 join at once and get nodes 2..N in the
// order the manager admits them. Membership changes and the guests' LMR
// counters order the steps across the guests (and a barrier once every
// guest saw every node, which a slow guest may see late): a joiner leaves only once
// node N + 1 has pinged it and put two LMRs in its memory; guest 0 waits
// for every leave.
TEST(MultiGuest, FormPingLeave)
{
    const auto guests = static_cast<uint32_t>(std::stoi(env("LITE_GUESTS", "1")));
    ASSERT_GE(guests, 2u) << "run under lite-vm --guests N (N >= 2)";
    int index = std::stoi(env("LITE_GUEST_INDEX", "0"));
    auto dev = lite::Device::open();
    down_all(dev);
    const uint32_t extra = guests + 1; // guest 0's second node
    const auto joined = ids(1, guests), all = ids(1, extra);
    const std::vector<uint32_t> left = {1, extra};

    if (index == 0) {
        auto mgr = up(dev, kPort, 0);
        ASSERT_EQ(mgr.node_id, 1u);
        ASSERT_TRUE(wait_until([&] { return live_members(dev, mgr.instance) == joined; }, 120s))
            << "not every guest joined";
        for (uint32_t n = 2; n <= guests; n++) {
            auto rtt = dev.ping(mgr.instance, n);
            EXPECT_GT(rtt.count(), 0);
            std::printf("guest 0: node 1 -> node %u: rtt %.1f us\n", n, us(rtt));
        }

        // A second node here joins and connects to the nodes across the network.
        auto second = up(dev, kPort + 1, kPort);
        ASSERT_EQ(second.node_id, extra);
        EXPECT_EQ(live_members(dev, second.instance), all);
        for (uint32_t n = 2; n <= guests; n++) {
            auto rtt = dev.ping(second.instance, n);
            EXPECT_GT(rtt.count(), 0);
            std::printf("guest 0: node %u -> node %u: rtt %.1f us\n", extra, n, us(rtt));
        }

        // Nobody leaves before every guest saw every node (a slow guest
        // might otherwise never see the whole cluster at once).
        ASSERT_TRUE(guest_barrier("formed", every_guest(guests), 120s)) << "not every guest saw every node";

        // Memory in each other guest, written and read across the network;
        // a second LMR there then tells that guest (its counters) we are done.
        auto s = lite::Session::open(second.instance);
        std::vector<lite::Lmr> lmrs;
        for (uint32_t n = 2; n <= guests; n++) {
            auto remote = s.alloc(64 * 1024 + 5, n); // the guests' link is slow
            std::vector<uint8_t> out(remote.size()), in(remote.size());
            for (size_t i = 0; i < out.size(); i++)
                out[i] = static_cast<uint8_t>(i * 131 + 7 + n);
            remote.write(0, std::span<const uint8_t>(out));
            remote.read(0, std::span<uint8_t>(in));
            EXPECT_EQ(in, out) << "LMR on node " << n << " in another guest";
            uint64_t word = 0;
            std::memcpy(&word, out.data() + 8, sizeof(word));
            EXPECT_EQ(remote.fetch_add(8, 5), word) << "atomic on node " << n << "'s memory";
            lmrs.push_back(std::move(remote));
            lmrs.push_back(s.alloc(64, n));
        }
        // Done with every other guest's memory. (Its counters are no
        // signal: a memory node counts an LMR before the reply is out,
        // and in lmr isolation it registers the chunks in between.)
        ASSERT_TRUE(guest_barrier("allocated", every_guest(guests), 120s)) << "a guest did not wait for its LMRs";

        for (auto i : {mgr.instance, second.instance}) {
            ASSERT_TRUE(wait_until([&] { return member_ids(dev, i) == left; }, 120s)) << "not every guest left";
            EXPECT_EQ(dev.status(i).counters.leaves, guests - 1);
            EXPECT_EQ(dev.status(i).counters.losses, 0u);
        }
        down_all(dev);
        return;
    }

    // Guests 1..N-1: the manager may still be booting; retry the join.
    lite::UpParams p;
    p.device = env("LITE_RXE", "rxe0");
    p.listen = endpoint(kPort);
    p.join = lite::Endpoint::parse(guest_addr(0) + ":" + std::to_string(kPort));
    p.secret = secret();
    p.timeout = 30000ms; // several guests join at once over slow emulated links
    lite::UpResult me;
    int last = 0;
    ASSERT_TRUE(wait_until(
        [&] {
            try {
                me = dev.up(p);
                return true;
            } catch (const lite::Error& e) {
                last = e.errnum();
                return false;
            }
        },
        120s))
        << "join failed: " << std::strerror(last);
    EXPECT_GE(me.node_id, 2u);
    EXPECT_LE(me.node_id, guests);
    auto rtt = dev.ping(me.instance, 1);
    EXPECT_GT(rtt.count(), 0);
    std::printf("guest %d: node %u -> node 1 on %s: rtt %.1f us\n", index, me.node_id, guest_addr(0).c_str(), us(rtt));

    ASSERT_TRUE(wait_until([&] { return live_members(dev, me.instance) == all; }, 120s)) << "not every node appeared";
    ASSERT_TRUE(guest_barrier("formed", every_guest(guests), 120s)) << "not every guest saw every node";
    for (uint32_t n = 2; n <= extra; n++) {
        if (n == me.node_id)
            continue;
        rtt = dev.ping(me.instance, n);
        EXPECT_GT(rtt.count(), 0);
        std::printf("guest %d: node %u -> node %u: rtt %.1f us\n", index, me.node_id, n, us(rtt));
    }
    // Node N + 1 is done with us once it allocated its two LMRs here.
    ASSERT_TRUE(guest_barrier("allocated", every_guest(guests), 120s))
        << "node " << extra << " never allocated its LMRs here";
    EXPECT_EQ(dev.status(me.instance).counters.mem_lmrs, 2u);
    EXPECT_EQ(dev.status(me.instance).counters.mem_bytes, 64u * 1024 + 5 + 64);
    dev.down(me.instance);
}

} // namespace
