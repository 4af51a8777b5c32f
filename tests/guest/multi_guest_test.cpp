// SPDX-License-Identifier: MIT
// One node per guest on a virtual network (lite-vm --guests 2): guest 0 is
// the manager, guest 1 joins it; both ping across; guest 1 leaves and the
// manager sees it go. Run only with --gtest_filter=MultiGuest.*.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

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

std::string peer_addr(int index)
{
    std::istringstream peers(env("LITE_PEERS", ""));
    std::string a;
    for (int i = 0; peers >> a; i++) {
        if (i == index) {
            return a;
        }
    }
    return "";
}

// Guest 0: node 1 (manager); later node 3 too. Guest 1: node 2.
// Membership changes and node 2's LMR counter order the steps across the
// guests: guest 1 leaves only once node 3 has pinged it and put an LMR in
// its memory; guest 0 waits for that leave.
TEST(MultiGuest, FormPingLeave)
{
    ASSERT_GE(std::stoi(env("LITE_GUESTS", "1")), 2) << "run under lite-vm --guests 2";
    int index = std::stoi(env("LITE_GUEST_INDEX", "0"));
    auto dev = lite::Device::open();
    down_all(dev);
    const std::vector<uint32_t> one_two = {1, 2}, all = {1, 2, 3}, one_three = {1, 3};

    if (index == 0) {
        auto mgr = up(dev, kPort, 0);
        ASSERT_EQ(mgr.node_id, 1u);
        ASSERT_TRUE(wait_until([&] { return live_members(dev, mgr.instance) == one_two; }, 120s))
            << "guest 1 never joined";
        auto rtt = dev.ping(mgr.instance, 2);
        EXPECT_GT(rtt.count(), 0);
        std::printf("guest 0: node 1 -> node 2 on %s: rtt %.1f us\n", peer_addr(1).c_str(), us(rtt));

        // A second node here joins and connects to node 2 across the network.
        auto third = up(dev, kPort + 1, kPort);
        ASSERT_EQ(third.node_id, 3u);
        EXPECT_EQ(live_members(dev, third.instance), all);
        rtt = dev.ping(third.instance, 2);
        EXPECT_GT(rtt.count(), 0);
        std::printf("guest 0: node 3 -> node 2: rtt %.1f us\n", us(rtt));

        // Memory in the other guest, written and read across the network;
        // a second LMR there then tells guest 1 (its counters) we are done.
        auto s = lite::Session::open(third.instance);
        auto remote = s.alloc(64 * 1024 + 5, 2); // the guests' link is slow
        std::vector<uint8_t> out(remote.size()), in(remote.size());
        for (size_t i = 0; i < out.size(); i++)
            out[i] = static_cast<uint8_t>(i * 131 + 7);
        remote.write(0, std::span<const uint8_t>(out));
        remote.read(0, std::span<uint8_t>(in));
        EXPECT_EQ(in, out) << "LMR on node 2 in the other guest";
        uint64_t word = 0;
        std::memcpy(&word, out.data() + 8, sizeof(word));
        EXPECT_EQ(remote.fetch_add(8, 5), word) << "atomic on the other guest's memory";
        auto done = s.alloc(64, 2);

        for (auto i : {mgr.instance, third.instance}) {
            ASSERT_TRUE(wait_until([&] { return member_ids(dev, i) == one_three; }, 120s)) << "guest 1 never left";
            EXPECT_EQ(dev.status(i).counters.leaves, 1u);
            EXPECT_EQ(dev.status(i).counters.losses, 0u);
        }
        down_all(dev);
        return;
    }

    // Guest 1: the manager may still be booting; retry the join.
    lite::UpParams p;
    p.device = env("LITE_RXE", "rxe0");
    p.listen = endpoint(kPort);
    p.join = lite::Endpoint::parse(peer_addr(0) + ":" + std::to_string(kPort));
    p.secret = secret();
    p.timeout = 5000ms;
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
    EXPECT_EQ(me.node_id, 2u);
    EXPECT_EQ(live_members(dev, me.instance), one_two);
    auto rtt = dev.ping(me.instance, 1);
    EXPECT_GT(rtt.count(), 0);
    std::printf("guest 1: node 2 -> node 1 on %s: rtt %.1f us\n", peer_addr(0).c_str(), us(rtt));

    ASSERT_TRUE(wait_until([&] { return live_members(dev, me.instance) == all; }, 120s)) << "node 3 never appeared";
    rtt = dev.ping(me.instance, 3);
    EXPECT_GT(rtt.count(), 0);
    std::printf("guest 1: node 2 -> node 3: rtt %.1f us\n", us(rtt));
    // Node 3 is done with us once its second LMR sits in our memory.
    ASSERT_TRUE(wait_until([&] { return dev.status(me.instance).counters.mem_lmrs == 2; }, 120s))
        << "node 3 never allocated its LMRs here";
    EXPECT_EQ(dev.status(me.instance).counters.mem_bytes, 64u * 1024 + 5 + 64);
    dev.down(me.instance);
}

} // namespace
