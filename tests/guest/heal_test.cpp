// SPDX-License-Identifier: MIT
// A cluster that heals: connections broken by lite's fault hooks reconnect
// by themselves under load with data intact, a member whose heartbeats stop
// is declared dead by every node within the bound, and strangers cannot
// lock members out. Measured figures go to $LITE_OUT/faults/<key> (make
// check gathers them into build/check/faults.json).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <lite/session.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "nodes.hpp"
#include "util.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
extern "C" {
#include "core/wire.h" // LITE_WIRE_VERSION: strangers speak the current one
}
#pragma GCC diagnostic pop

using namespace lite_guest;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace
{

constexpr uint16_t kPort = 19300;
constexpr double kReconnectBound = 2.0; // seconds, the bound

class Heal : public ThreeNodes<kPort>
{
};

// Record a measured figure for build/check/faults.json.
double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint32_t reconnects(const lite::Device& dev, uint32_t instance)
{
    return dev.status(instance).reconnects;
}

// Every node's table holds exactly @want.
bool all_agree(const lite::Device& dev, const std::vector<uint32_t>& inst, const std::vector<uint32_t>& want)
{
    return std::all_of(inst.begin(), inst.end(),
                       [&](uint32_t i) { return member_ids(dev, i) == want && live_members(dev, i) == want; });
}

uint8_t pattern(uint32_t round, size_t block, size_t i)
{
    return static_cast<uint8_t>(size_t{round} * 131 + block * 7 + i);
}

} // namespace

// The fault files exist per node and refuse what makes no sense.
TEST_F(Heal, FaultFilesRejectBadInput)
{
    EXPECT_EQ(write_debugfs(inst_[0], "break_conn", "999"), EINVAL);
    EXPECT_EQ(write_debugfs(inst_[0], "break_conn", "junk"), EINVAL);
    EXPECT_EQ(write_debugfs(inst_[0], "break_conn", "77"), ENOTCONN) << "no such member";
    EXPECT_EQ(write_debugfs(inst_[0], "drop_rx_permille", "0"), 0);
    EXPECT_EQ(write_debugfs(inst_[0], "delay_lmr_ms", "0"), 0);
    EXPECT_EQ(write_debugfs(inst_[0], "delay_lmr_ms", "junk"), EINVAL);
    EXPECT_EQ(write_debugfs(inst_[0], "delay_take_ms", "0"), 0);
    EXPECT_EQ(write_debugfs(inst_[0], "delay_take_ms", "junk"), EINVAL);
}

// A connection broken under load (as a transport error would) comes back by
// itself; only operations in flight fail, and every byte is intact.
TEST_F(Heal, BrokenConnectionReconnectsUnderLoad)
{
    constexpr size_t kBlock = 4096, kBlocks = 64;
    auto s = lite::Session::open(inst_[2]); // node 3 ...
    auto l = s.alloc(kBlock * kBlocks, 2);  // ... writes memory on node 2
    lite_t* c = s.get();
    lite_lmr_t h = l.handle();

    std::vector<uint32_t> done(kBlocks, 0); // round last written, per block
    std::vector<uint32_t> tried(kBlocks, 0);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0}, bad_errno{0}, after_ok{0};
    std::atomic<bool> broken{false};
    std::thread writer([&] {
        std::vector<uint8_t> buf(kBlock);
        for (uint32_t round = 1; !stop; round++) {
            for (size_t b = 0; b < kBlocks && !stop; b++) {
                for (size_t i = 0; i < kBlock; i++)
                    buf[i] = pattern(round, b, i);
                tried[b] = round;
                int ret = LITE_write(c, h, b * kBlock, buf.data(), kBlock);
                if (ret == 0) {
                    done[b] = round;
                    if (broken)
                        after_ok++;
                    continue;
                }
                failures++;
                if (ret != -ECONNRESET && ret != -ENOTCONN && ret != -EIO)
                    bad_errno = -ret;
            }
        }
    });

    std::this_thread::sleep_for(milliseconds(300));
    uint32_t before = reconnects(*dev_, inst_[2]);
    auto t0 = Clock::now();
    broken = true;
    ASSERT_EQ(write_debugfs(inst_[2], "break_conn", "2"), 0);
    bool healed = wait_until(
        [&] {
            return reconnects(*dev_, inst_[2]) > before && after_ok > 0 && all_agree(*dev_, inst_, {1, 2, 3});
        },
        milliseconds(5000));
    double reconnect_s = seconds_since(t0);
    std::this_thread::sleep_for(milliseconds(200)); // traffic goes on
    stop = true;
    writer.join();

    ASSERT_TRUE(healed) << "no reconnect within 5 s";
    record("reconnect_s", std::to_string(reconnect_s));
    EXPECT_LT(reconnect_s, kReconnectBound);
    EXPECT_EQ(bad_errno.load(), 0) << "failed with errno " << bad_errno.load();
    EXPECT_LE(failures.load(), 8) << "more than the operations in flight failed";

    // Every block holds what was last written to it, or (if that write
    // failed in flight) what the failed write carried.
    std::vector<uint8_t> buf(kBlock);
    for (size_t b = 0; b < kBlocks; b++) {
        ASSERT_EQ(LITE_read(c, h, b * kBlock, buf.data(), kBlock), 0);
        // Round 0: never written (a slow kernel may not get round 1 done
        // before the end), so the LMR's zeros.
        auto want = [&](uint32_t round, size_t i) { return round ? pattern(round, b, i) : uint8_t{0}; };
        bool as_done = true, as_tried = true;
        for (size_t i = 0; i < kBlock; i++) {
            as_done = as_done && buf[i] == want(done[b], i);
            as_tried = as_tried && buf[i] == want(tried[b], i);
        }
        if (!as_done && !as_tried) {
            // What it holds instead: a round's pattern (which), or not.
            size_t first = 0;
            while (first < kBlock && buf[first] == want(done[b], first))
                first++;
            int64_t round = -1;
            for (uint32_t r = 0; r <= tried[b] + 1 && round < 0; r++) {
                bool all = true;
                for (size_t i = 0; i < kBlock && all; i++)
                    all = buf[i] == want(r, i);
                if (all)
                    round = r;
            }
            ADD_FAILURE() << "block " << b << " corrupt: written in round " << done[b] << ", tried in round "
                          << tried[b] << "; first wrong byte at " << first << "; holds round "
                          << (round < 0 ? std::string("none") : std::to_string(round)) << "'s pattern";
        }
    }
    auto st = dev_->status(inst_[1]);
    EXPECT_EQ(st.counters.mem_lmrs, 1u) << "node 2 still holds exactly the one LMR";
}

// A lock held across a reconnect stays held (mutual exclusion), and its
// holder releases it over the new connection.
TEST_F(Heal, LockHeldAcrossAReconnect)
{
    auto owner = lite::Session::open(inst_[0]);
    auto l = owner.alloc(4096, 2); // the lock word lives on node 2
    l.share("heal-lock", LITE_PERM_ALL);
    auto s3 = lite::Session::open(inst_[2]);
    auto m3 = s3.map("heal-lock", LITE_PERM_ALL);
    ASSERT_EQ(LITE_trylock(s3.get(), m3.handle(), 0), 0);

    uint32_t before = reconnects(*dev_, inst_[2]);
    ASSERT_EQ(write_debugfs(inst_[2], "break_conn", "2"), 0);
    ASSERT_TRUE(wait_until([&] { return reconnects(*dev_, inst_[2]) > before; }, milliseconds(3000)));
    EXPECT_EQ(LITE_trylock(owner.get(), l.handle(), 0), -EAGAIN) << "the lock must still be held";
    EXPECT_EQ(LITE_unlock(s3.get(), m3.handle(), 0), 0) << "the holder unlocks over the new connection";
    EXPECT_EQ(LITE_trylock(owner.get(), l.handle(), 0), 0);
    EXPECT_EQ(LITE_unlock(owner.get(), l.handle(), 0), 0);
}

// A post that fails (a broken QP) closes the connection; it heals.
TEST_F(Heal, FailedPostHeals)
{
    uint32_t before = reconnects(*dev_, inst_[2]) + reconnects(*dev_, inst_[1]);
    ASSERT_EQ(write_debugfs(inst_[2], "fail_posts", "1"), 0);
    // The next post of node 3 fails: a ping, or a heartbeat to the manager.
    try {
        (void)dev_->ping(inst_[2], 2, milliseconds(1000));
    } catch (const lite::Error&) {
    }
    EXPECT_TRUE(wait_until([&] { return reconnects(*dev_, inst_[2]) + reconnects(*dev_, inst_[1]) > before; },
                           milliseconds(3000)))
        << "no reconnect after a failed post";
    EXPECT_TRUE(wait_until(
        [&] {
            try {
                (void)dev_->ping(inst_[2], 1, milliseconds(500));
                (void)dev_->ping(inst_[2], 2, milliseconds(500));
                return all_agree(*dev_, inst_, {1, 2, 3});
            } catch (const lite::Error&) {
                return false;
            }
        },
        milliseconds(3000)));
}

// Lost control messages make requests time out; nothing else breaks.
TEST_F(Heal, DroppedMessagesTimeOut)
{
    ASSERT_EQ(write_debugfs(inst_[1], "drop_rx_permille", "1000"), 0);
    try {
        (void)dev_->ping(inst_[0], 2, milliseconds(300));
        ADD_FAILURE() << "a dropped ping was answered";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.code().value(), ETIMEDOUT);
    }
    ASSERT_EQ(write_debugfs(inst_[1], "drop_rx_permille", "0"), 0);
    EXPECT_GT(dev_->ping(inst_[0], 2, milliseconds(2000)).count(), 0);
    EXPECT_TRUE(all_agree(*dev_, inst_, {1, 2, 3}));
}

// A member whose heartbeats stop is declared dead by the manager, every node
// agrees within the bound, its memory is reported gone, the silenced node
// finds itself expelled, and a new node can join.
TEST_F(Heal, SilentMemberIsDeclaredDeadEverywhere)
{
    auto s = lite::Session::open(inst_[1]); // node 2 uses memory on node 3
    auto l = s.alloc(4096, 3);
    uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(LITE_write(s.get(), l.handle(), 0, b, sizeof(b)), 0);

    auto t0 = Clock::now();
    ASSERT_EQ(write_debugfs(inst_[2], "hb_stop", "Y"), 0);
    bool agreed = wait_until(
        [&] {
            return member_ids(*dev_, inst_[0]) == std::vector<uint32_t>{1, 2} &&
                   member_ids(*dev_, inst_[1]) == std::vector<uint32_t>{1, 2};
        },
        milliseconds(static_cast<long>(detect_bound_s(3.0) * 1000)));
    double detect_s = seconds_since(t0);
    ASSERT_TRUE(agreed) << "node 3 not declared dead within " << detect_bound_s(3.0) << " s";
    record("detect_dead_s", std::to_string(detect_s));
    // dead_ms + heartbeat_ms (1.7 s by default), and 0.3 s to notice.
    EXPECT_LT(detect_s, detect_bound_s(0.3));
    EXPECT_GT(detect_s, module_param("dead_ms", 1500) / 1000.0 * 2 / 3) << "declared dead before dead_ms passed";

    EXPECT_EQ(LITE_read(s.get(), l.handle(), 0, b, sizeof(b)), -EHOSTDOWN);
    EXPECT_EQ(LITE_write(s.get(), l.handle(), 0, b, sizeof(b)), -EHOSTDOWN);
    // Every other access to the gone memory says so too, locks and
    // barriers included (they used to say EKEYREVOKED).
    uint64_t old = 0;
    EXPECT_EQ(LITE_fetch_add(s.get(), l.handle(), 8, 1, &old), -EHOSTDOWN);
    EXPECT_EQ(LITE_cmp_swap(s.get(), l.handle(), 8, 0, 1, &old), -EHOSTDOWN);
    EXPECT_EQ(LITE_memset(s.get(), l.handle(), 0, 0, 64), -EHOSTDOWN);
    EXPECT_EQ(LITE_lock(s.get(), l.handle(), 16, 1000), -EHOSTDOWN);
    EXPECT_EQ(LITE_trylock(s.get(), l.handle(), 16), -EHOSTDOWN);
    EXPECT_EQ(LITE_barrier(s.get(), l.handle(), 24, 2, 1000), -EHOSTDOWN);
    EXPECT_TRUE(wait_until([&] { return dev_->status(inst_[2]).expelled; }, milliseconds(5000)))
        << "the silenced node does not know it was dropped";
    EXPECT_EQ(member_ids(*dev_, inst_[2]), std::vector<uint32_t>{3});
    EXPECT_FALSE(dev_->status(inst_[0]).no_manager);

    auto d = up(*dev_, kPort + 3, kPort);
    EXPECT_EQ(d.node_id, 3u) << "the dead member's id is free again";
    EXPECT_TRUE(all_agree(*dev_, {inst_[0], inst_[1], d.instance}, {1, 2, 3}));
}

// Node 3 answers an allocation of node 2's, then leaves before node 2 has
// recorded the LMR (delay_lmr_ms holds node 2 between the two), and a
// newcomer takes id 3 meanwhile: the allocation fails EHOSTDOWN (the LMR
// would name memory that went with the old node 3), nothing was freed on
// the newcomer in its name, and allocations on it work as before.
// (Once, the LMR was recorded as live: its accesses failed with another
// error, or reached the newcomer with the old node's addresses.)
TEST_F(Heal, MemoryNodeLeavesBetweenItsAnswerAndTheRecord)
{
    constexpr uint64_t kSize = 2 << 20; // above LITE_LEASE_MAX: a request, not the lease's stock
    const uint64_t held_before = dev_->status(inst_[2]).counters.mem_lmrs;
    ASSERT_EQ(write_debugfs(inst_[1], "delay_lmr_ms", "6000"), 0);
    auto s = lite::Session::open(inst_[1]);
    std::atomic<int> err{-1};
    std::thread alloc([&] {
        try {
            auto l = s.alloc(kSize, 3);
            err = 0;
        } catch (const lite::Error& e) {
            err = e.code().value();
        }
    });
    // Node 3 made it and answered...
    bool answered =
        wait_until([&] { return dev_->status(inst_[2]).counters.mem_lmrs > held_before; }, milliseconds(5000));
    std::this_thread::sleep_for(milliseconds(300)); // the answer lands
    // ...then it leaves, and a newcomer gets its id.
    dev_->down(inst_[2]);
    auto d = up(*dev_, kPort + 3, kPort);
    const bool in_time = err.load() == -1;
    alloc.join();
    ASSERT_EQ(write_debugfs(inst_[1], "delay_lmr_ms", "0"), 0);
    ASSERT_TRUE(answered) << "node 3 never made the LMR";
    EXPECT_EQ(d.node_id, 3u) << "the newcomer did not get the id";
    EXPECT_TRUE(in_time) << "the allocation ended before the newcomer joined: only the leave was shown";
    EXPECT_EQ(err.load(), EHOSTDOWN) << (err.load() > 0 ? std::strerror(err.load()) : "the allocation succeeded");
    EXPECT_EQ(dev_->status(d.instance).counters.mem_lmrs, 0u) << "the newcomer holds what it never made";
    auto l = s.alloc(kSize, 3);
    std::vector<uint8_t> out(kSize), back(kSize);
    for (size_t i = 0; i < kSize; i++)
        out[i] = static_cast<uint8_t>(i * 29 + 7);
    ASSERT_EQ(LITE_write(s.get(), l.handle(), 0, out.data(), out.size()), 0);
    ASSERT_EQ(LITE_read(s.get(), l.handle(), 0, back.data(), back.size()), 0);
    EXPECT_EQ(back, out) << "an LMR on the newcomer";
    EXPECT_EQ(dev_->status(d.instance).counters.mem_lmrs, 1u);
}

namespace
{

// Open @n rdma_cm connections to @port the way a local user without the
// secret can (lite's magic and version, a made-up ticket) and return how
// many the listener refused at once.
int hostile_connects(const std::string& ip, uint16_t port, int n)
{
    rdma_event_channel* ch = rdma_create_event_channel();
    if (!ch)
        return -errno;
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    inet_pton(AF_INET, ip.c_str(), &dst.sin_addr);
    std::vector<rdma_cm_id*> ids;
    int refused = 0;
    auto next = [&](rdma_cm_event_type want) {
        rdma_cm_event* ev = nullptr;
        if (rdma_get_cm_event(ch, &ev))
            return -1;
        int got = ev->event;
        rdma_ack_cm_event(ev);
        return got == want ? 0 : got;
    };
    for (int i = 0; i < n; i++) {
        rdma_cm_id* id = nullptr;
        if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
            break;
        ids.push_back(id);
        if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000) ||
            next(RDMA_CM_EVENT_ADDR_RESOLVED) || rdma_resolve_route(id, 2000) || next(RDMA_CM_EVENT_ROUTE_RESOLVED))
            break;
        ibv_qp_init_attr qa{};
        qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        qa.qp_type = IBV_QPT_RC;
        if (rdma_create_qp(id, nullptr, &qa))
            break;
        std::array<uint8_t, 36> pd{};
        const uint32_t magic = 0x4554494c;
        std::memcpy(pd.data(), &magic, 4);
        pd[4] = LITE_WIRE_VERSION;                  // refused for the ticket, not the version
        pd[6] = 32;                                 // rx depth
        std::fill(pd.begin() + 12, pd.end(), 0x5a); // a guessed ticket
        rdma_conn_param p{};
        p.private_data = pd.data();
        p.private_data_len = pd.size();
        p.retry_count = 1;
        if (rdma_connect(id, &p))
            break;
        if (next(RDMA_CM_EVENT_REJECTED) == 0)
            refused++;
    }
    for (auto* id : ids) {
        if (id->qp)
            rdma_destroy_qp(id);
        rdma_destroy_id(id);
    }
    rdma_destroy_event_channel(ch);
    return refused;
}

} // namespace

// 24 connections from a local user without the secret cost the members
// nothing: each is refused at the connect request, and a join succeeds.
TEST_F(Heal, HostileConnectionsDoNotStopAJoin)
{
    constexpr int kHostile = 24;
    uint64_t failures0 = dev_->status(inst_[0]).counters.auth_failures;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (!become_nobody(false)) // no privilege, not even group lite
            _exit(100);
        int refused = hostile_connects(addr(), kPort, kHostile);
        _exit(refused == kHostile ? 0 : refused < 0 ? 101 : 102);
    }
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "100: setuid, 101: rdma_cm, 102: not every stranger was refused";
    EXPECT_GE(dev_->status(inst_[0]).counters.auth_failures, failures0 + kHostile);

    // The strangers hold nothing: a member joins at once.
    auto t0 = Clock::now();
    auto d = up(*dev_, kPort + 3, kPort);
    double join_s = seconds_since(t0);
    EXPECT_EQ(d.node_id, 4u);
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && d.node_id == 4u;
    record("hostile_join_ok", ok ? "true" : "false");
    EXPECT_LT(join_s, 5.0);
    EXPECT_TRUE(all_agree(*dev_, {inst_[0], inst_[1], inst_[2], d.instance}, {1, 2, 3, 4}));
}
