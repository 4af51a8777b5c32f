// SPDX-License-Identifier: MIT
// Asynchronous operations through io_uring on the real module, 3 nodes in
// one guest: thousands of checksummed reads and writes in flight at once
// (local and remote LMRs, some across chunk boundaries, some long enough
// for io_uring's workers), atomics whose previous values prove each ran
// exactly once, RPC calls, every rejection with its errno, and processes
// that exit, are killed, or cancel with operations in flight: node memory
// and in-flight counters back where they started.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <lite/async.h>
#include <lite/async.hpp>
#include <lite/rpc.hpp>
#include <lite/session.hpp>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nodes.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 19100;
constexpr size_t kMiB = size_t{1} << 20;
using Bytes = std::vector<std::byte>;

Bytes pattern(size_t n, uint64_t seed)
{
    Bytes b(n);
    std::mt19937_64 rng(seed);
    for (auto& x : b)
        x = static_cast<std::byte>(rng());
    return b;
}

// Queue on @r one RPC call to @port on @node per entry of @req, which
// becomes the request (its index), with the reply into the same entry of
// @replies, user_data @first + index.
void prep_calls(io_uring& r, int fd, uint32_t node, uint32_t port, std::vector<uint64_t>& req,
                std::vector<Bytes>& replies, uint32_t timeout_ms, uint64_t first)
{
    for (size_t i = 0; i < req.size(); i++) {
        io_uring_sqe* e = io_uring_get_sqe(&r);
        ASSERT_NE(e, nullptr);
        req[i] = i;
        LITE_prep_call(e, fd, node, port, &req[i], sizeof(req[i]), replies[i].data(), replies[i].size(), timeout_ms);
        e->user_data = first + i;
    }
}

// A block of test data at an offset of one of several LMRs.
struct Block {
    size_t lmr = 0, off = 0;
    Bytes data, back;
};

// @blocks over @n_lmrs LMRs of @lmr_size bytes in turn, of @sizes in turn,
// each LMR's packed from @start with @gap bytes between, the data seeded
// from @seed up.
void lay_out(std::vector<Block>& blocks, size_t n_lmrs, size_t lmr_size, const std::vector<size_t>& sizes, size_t start,
             size_t gap, uint64_t seed)
{
    std::vector<size_t> next(n_lmrs, start);
    for (size_t i = 0; i < blocks.size(); i++) {
        Block& b = blocks[i];
        b.lmr = i % n_lmrs;
        b.data = pattern(sizes[i % sizes.size()], seed + i);
        b.off = next[b.lmr];
        next[b.lmr] += b.data.size() + gap;
        ASSERT_LE(next[b.lmr], lmr_size);
    }
}

// How many operations succeeded, and the first failure.
struct Tally {
    size_t ok = 0;
    std::string first_err;
    [[nodiscard]] lite::Callback counter()
    {
        return [this](const lite::Result& r) {
            if (r.ok()) {
                ok++;
            } else if (first_err.empty()) {
                first_err = std::strerror(r.error());
            }
        };
    }
};

class Async : public ThreeNodes<kPort>
{
protected:
    // Memory held and operations in flight, summed over the nodes.
    struct Counters {
        uint64_t mem_bytes = 0, mem_lmrs = 0, inflight = 0;
        bool operator==(const Counters&) const = default;
    };
    [[nodiscard]] Counters counters() const
    {
        Counters c;
        for (uint32_t i : inst_) {
            auto st = dev_->status(i);
            c.mem_bytes += st.counters.mem_bytes;
            c.mem_lmrs += st.counters.mem_lmrs;
            c.inflight += st.async_inflight;
        }
        return c;
    }
    // The counters return to @base: nothing leaked.
    void expect_back_to(const Counters& base)
    {
        Counters now;
        bool ok = wait_until(
            [&] {
                now = counters();
                return now == base;
            },
            30s);
        EXPECT_TRUE(ok) << "mem_bytes " << now.mem_bytes << " (was " << base.mem_bytes << "), lmrs " << now.mem_lmrs
                        << " (was " << base.mem_lmrs << "), in flight " << now.inflight;
    }
};

// 4096 writes, then 4096 reads, all queued before the first completion is
// reaped, over LMRs on the caller's node and on both others; sizes from 1
// byte to 64 KiB + 1 (the last go through io_uring's workers); each block
// read back through the ring and, for a sample, the synchronous path.
TEST_F(Async, ThousandsInFlightChecksummed)
{
    auto s = lite::Session::open(inst_[0]);
    const Counters base = counters();
    constexpr size_t kLmrSize = 40 * kMiB;
    {
        std::vector<lite::Lmr> lmrs;
        for (uint32_t node = 1; node <= 3; node++)
            lmrs.push_back(s.alloc(kLmrSize, node));
        lite::Ring ring(s, 4096);
        ASSERT_GE(ring.capacity(), 4096u);

        constexpr size_t kOps = 4096;
        std::vector<Block> blocks(kOps);
        // Some cross 4 MiB.
        ASSERT_NO_FATAL_FAILURE(lay_out(blocks, lmrs.size(), kLmrSize,
                                        {1, 8, 64, 1000, 4096, 4097, 20000, 65536, 65537}, 4 * kMiB - 3000, 13, 0));
        Tally t;
        auto count = t.counter();
        size_t peak = 0;
        for (auto& b : blocks)
            ring.write(lmrs[b.lmr], b.off, b.data, count);
        peak = ring.in_flight();
        ring.submit(); // all 4096 in one system call
        ring.drain();
        EXPECT_EQ(t.ok, kOps) << t.first_err;
        EXPECT_EQ(peak, kOps);
        // Completions are reaped in this task after the submission call
        // returned: the kernel had them all in flight at once.
        uint32_t kpeak = dev_->status(inst_[0]).async_peak;
        std::cout << "async: " << peak << " writes queued, the kernel's peak in flight " << kpeak << '\n';
        EXPECT_GE(kpeak, 3000u);

        t.ok = 0;
        for (auto& b : blocks) {
            b.back.assign(b.data.size(), std::byte{0x5a});
            ring.read(lmrs[b.lmr], b.off, b.back, count);
        }
        ring.drain();
        EXPECT_EQ(t.ok, kOps) << t.first_err;
        size_t bad = 0;
        for (auto& b : blocks)
            bad += checksum(b.back) != checksum(b.data) || b.back != b.data;
        EXPECT_EQ(bad, 0u) << "blocks read back different";
        for (size_t i = 0; i < kOps; i += 97) {
            Bytes sync(blocks[i].data.size());
            lmrs[blocks[i].lmr].read(blocks[i].off, std::span<std::byte>(sync));
            EXPECT_EQ(sync, blocks[i].data) << "block " << i << " through the synchronous path";
        }
    }
    expect_back_to(base);
}

// 2 x 2000 fetch_adds of 1 from two nodes' rings on one word on node 3:
// the previous values are exactly 0..3999, each once; then compare-and-swap.
TEST_F(Async, AtomicsRunExactlyOnce)
{
    auto owner = lite::Session::open(inst_[2]);
    auto word = owner.alloc(4096, 3);
    word.share("async-word", LITE_PERM_ALL);
    constexpr uint64_t kEach = 2000;
    std::vector<std::vector<uint64_t>> olds(2);
    std::vector<std::string> errs(2);
    std::vector<std::thread> ts;
    for (size_t t = 0; t < 2; t++) {
        ts.emplace_back([&, t] {
            try {
                auto s = lite::Session::open(inst_[t]);
                auto w = s.map("async-word");
                lite::Ring ring(s, 256);
                for (uint64_t i = 0; i < kEach; i++)
                    ring.fetch_add(w, 8, 1, [&](const lite::Result& r) { olds[t].push_back(r.value()); });
                ring.drain();
            } catch (const std::exception& e) {
                errs[t] = e.what();
            }
        });
    }
    for (auto& t : ts)
        t.join();
    ASSERT_EQ(errs[0], "");
    ASSERT_EQ(errs[1], "");
    std::set<uint64_t> all(olds[0].begin(), olds[0].end());
    all.insert(olds[1].begin(), olds[1].end());
    EXPECT_EQ(olds[0].size() + olds[1].size(), 2 * kEach);
    EXPECT_EQ(all.size(), 2 * kEach) << "a previous value seen twice";
    EXPECT_EQ(*all.begin(), 0u);
    EXPECT_EQ(*all.rbegin(), 2 * kEach - 1);
    EXPECT_EQ(word.fetch_add(8, 0), 2 * kEach);

    lite::Ring ring(owner, 8);
    uint64_t seen = 0, failed_old = 0;
    ring.cmp_swap(word, 8, 2 * kEach, 77, [&](const lite::Result& r) { seen = r.value(); });
    ring.cmp_swap(word, 8, 1, 99, [&](const lite::Result& r) { failed_old = r.value(); });
    ring.drain();
    EXPECT_EQ(seen, 2 * kEach);
    EXPECT_EQ(failed_old, 77u) << "a failed compare returns the word";
    EXPECT_EQ(word.fetch_add(8, 0), 77u);
}

// 300 calls in flight to an echo-like server on node 2; each reply checked.
TEST_F(Async, RpcCallsInFlight)
{
    auto srv_session = lite::Session::open(inst_[1]);
    lite::Server server(
        srv_session, 7,
        [](const lite::Incoming&, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            reply.assign(req.rbegin(), req.rend());
            return req.size();
        },
        4);
    auto s = lite::Session::open(inst_[0]);
    lite::Ring ring(s, 64);
    constexpr size_t kCalls = 300;
    std::vector<Bytes> reqs(kCalls), replies(kCalls);
    size_t good = 0;
    std::string first_err;
    for (size_t i = 0; i < kCalls; i++) {
        reqs[i] = pattern(1 + (i * 37) % 5000, 1000 + i);
        replies[i].resize(reqs[i].size());
        ring.call(2, 7, reqs[i], replies[i], [&, i](const lite::Result& r) {
            if (!r.ok()) {
                if (first_err.empty())
                    first_err = std::strerror(r.error());
                return;
            }
            Bytes want(reqs[i].rbegin(), reqs[i].rend());
            good += r.value() == reqs[i].size() && replies[i] == want;
        });
    }
    ring.drain();
    EXPECT_EQ(good, kCalls) << first_err;

    // A reply longer than the buffer: EMSGSIZE, and the length it needed.
    Bytes req = pattern(100, 5), small(10);
    int err = 0;
    uint64_t needed = 0;
    ring.call(2, 7, req, small, [&](const lite::Result& r) {
        err = r.error();
        needed = r.needed();
    });
    ring.drain();
    EXPECT_EQ(err, EMSGSIZE);
    EXPECT_EQ(needed, 100u);
}

// Calls on a ring whose server answers some in time and some after their
// 80 ms timeout, the latest at about twice it: each ends with its exact
// reply or ETIMEDOUT, a late reply lands in the abandoned buffer (freed
// then), and afterwards the connection serves calls as before and nothing
// is left held. Timers and replies meet near the deadline: the timer takes
// the call out of the ring's list as it gives the buffer to the table.
TEST_F(Async, RpcCallsTimingOutAroundTheirReplies)
{
    constexpr size_t kCalls = 48;
    constexpr uint32_t kPort = 24;
    constexpr uint64_t kTimeoutMs = 80;
    const Counters base = counters();
    auto reply_of = [](uint64_t i) { return pattern(64 + (i * 131) % 3000, 900 + i); };
    {
        auto srv_session = lite::Session::open(inst_[1]);
        lite::Server server(
            srv_session, kPort,
            [&](const lite::Incoming&, std::span<const std::byte> req, std::vector<std::byte>& reply) {
                uint64_t i = 0;
                std::memcpy(&i, req.data(), std::min(req.size(), sizeof(i)));
                std::this_thread::sleep_for(std::chrono::milliseconds((i * 37) % (2 * kTimeoutMs)));
                reply = reply_of(i);
                return reply.size();
            },
            8);
        auto s = lite::Session::open(inst_[0]);
        io_uring r{};
        ASSERT_EQ(io_uring_queue_init(2 * kCalls, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32), 0);
        const int fd = LITE_fd(s.get());
        std::vector<uint64_t> req(kCalls);
        std::vector<Bytes> replies(kCalls, Bytes(4096));
        prep_calls(r, fd, 2, kPort, req, replies, kTimeoutMs, 0);
        ASSERT_EQ(io_uring_submit(&r), static_cast<int>(kCalls));
        size_t ok = 0, timed_out = 0;
        for (size_t n = 0; n < kCalls; n++) {
            io_uring_cqe* cqe = nullptr;
            __kernel_timespec ts{.tv_sec = 30, .tv_nsec = 0};
            ASSERT_EQ(io_uring_wait_cqe_timeout(&r, &cqe, &ts), 0) << "completion " << n << " of " << kCalls;
            const size_t i = cqe->user_data;
            ASSERT_LT(i, kCalls);
            const Bytes want = reply_of(i);
            if (cqe->res == -ETIMEDOUT) {
                timed_out++;
            } else {
                EXPECT_EQ(cqe->res, static_cast<int>(want.size()))
                    << "call " << i << ": " << (cqe->res < 0 ? std::strerror(-cqe->res) : "wrong length");
                EXPECT_TRUE(cqe->res < 0 || std::equal(want.begin(), want.end(), replies[i].begin()))
                    << "call " << i << "'s reply";
                ok += cqe->res == static_cast<int>(want.size());
            }
            io_uring_cqe_seen(&r, cqe);
        }
        EXPECT_GT(ok, 0U) << "no call was answered in time: the test shows nothing";
        EXPECT_GT(timed_out, 0U) << "no call timed out: the test shows nothing";
        std::cout << "[          ] " << ok << " answered in time, " << timed_out << " timed out\n";
        // Let the late replies land, then the connection still serves.
        std::this_thread::sleep_for(std::chrono::milliseconds(4 * kTimeoutMs));
        io_uring_sqe* e = io_uring_get_sqe(&r);
        ASSERT_NE(e, nullptr);
        req[0] = 0; // answered at once
        LITE_prep_call(e, fd, 2, kPort, &req[0], sizeof(req[0]), replies[0].data(), replies[0].size(), 5000);
        ASSERT_EQ(io_uring_submit(&r), 1);
        io_uring_cqe* cqe = nullptr;
        ASSERT_EQ(io_uring_wait_cqe(&r, &cqe), 0);
        const Bytes want = reply_of(0);
        EXPECT_EQ(cqe->res, static_cast<int>(want.size())) << "a call after the timeouts";
        EXPECT_TRUE(std::equal(want.begin(), want.end(), replies[0].begin()));
        io_uring_cqe_seen(&r, cqe);
        io_uring_queue_exit(&r);
    }
    expect_back_to(base);
}

// ------------------------------------------------ an io_uring RPC server

// Requests for the ring server: bytes 0..3 the caller's node, 4..7 a
// sequence number, a pattern, and the checksum of all that in the last 8
// bytes. The reply is the request reversed.
Bytes ring_request(uint32_t node, uint32_t seq, size_t len)
{
    Bytes b = pattern(len, uint64_t{node} << 32 | seq);
    std::memcpy(b.data(), &node, 4);
    std::memcpy(b.data() + 4, &seq, 4);
    uint64_t h = checksum(std::span<const std::byte>(b).first(len - 8));
    std::memcpy(b.data() + len - 8, &h, 8);
    return b;
}

bool ring_request_ok(std::span<const std::byte> b, uint32_t src)
{
    if (b.size() < 16)
        return false;
    uint32_t node = 0;
    uint64_t h = 0;
    std::memcpy(&node, b.data(), 4);
    std::memcpy(&h, b.data() + b.size() - 8, 8);
    return node == src && h == checksum(b.first(b.size() - 8));
}

struct RingServerStats {
    uint64_t calls = 0, bad = 0, recv_errors = 0, reply_errors = 0;
    int last_error = 0;
};

// Serve @svc on a ring of @session: @depth receives always in flight, each
// request checked and answered by a reply SQE; calls @on_call after each.
// Returns once the port is closed (the receives end with ENOENT).
RingServerStats ring_serve(const lite::Session& session, const lite::Service& svc, size_t depth,
                           const std::function<void(uint64_t)>& on_call = {})
{
    constexpr size_t kMaxReq = 70000;
    RingServerStats st;
    lite::Ring ring(session, 256);
    std::vector<Bytes> bufs(depth, Bytes(kMaxReq));
    std::function<void(size_t)> arm = [&](size_t i) {
        ring.recv(svc, bufs[i], [&, i](const lite::Result& r) {
            if (r.error() == ENOENT)
                return; // the port closed: this receive is done
            if (!r.ok()) {
                st.recv_errors++;
                st.last_error = r.error();
                arm(i);
                return;
            }
            lite::Incoming in = r.incoming();
            auto req = std::span<const std::byte>(bufs[i]).first(in.len);
            st.bad += ring_request_ok(req, in.src_node) ? 0 : 1;
            auto rep = std::make_shared<Bytes>(req.rbegin(), req.rend());
            ring.reply(in.token, *rep, [rep, &st](const lite::Result& rr) {
                if (!rr.ok()) {
                    st.reply_errors++;
                    st.last_error = rr.error();
                }
            });
            st.calls++;
            arm(i); // the next receive into the same buffer
            if (on_call)
                on_call(st.calls);
        });
    };
    for (size_t i = 0; i < depth; i++)
        arm(i);
    while (ring.in_flight() > 0)
        ring.wait(1);
    return st;
}

struct ClientStats {
    uint64_t good = 0, wrong = 0, peak = 0;
    std::map<int, uint64_t> errors; // errno -> calls
};

// @calls calls to @port on @node from one ring, all queued before the first
// completion is reaped (as many in flight as the ring holds).
ClientStats ring_calls(uint32_t instance, uint32_t node, uint32_t port, size_t calls)
{
    auto s = lite::Session::open(instance);
    uint32_t self = s.node_id();
    lite::Ring ring(s, 1024);
    std::vector<Bytes> reqs(calls), replies(calls);
    ClientStats st;
    for (size_t i = 0; i < calls; i++) {
        size_t len = i % 97 == 0 ? 65536 : 16 + (i * 131) % 4000;
        reqs[i] = ring_request(self, static_cast<uint32_t>(i), len);
        replies[i].resize(len);
        ring.call(
            node, port, reqs[i], replies[i],
            [&, i](const lite::Result& r) {
                if (!r.ok()) {
                    st.errors[r.error()]++;
                    return;
                }
                bool ok =
                    r.value() == reqs[i].size() && std::equal(replies[i].begin(), replies[i].end(), reqs[i].rbegin());
                (ok ? st.good : st.wrong)++;
            },
            60s); // one server for thousands: half a minute on the debug kernel
        st.peak = std::max<uint64_t>(st.peak, ring.in_flight());
    }
    ring.drain();
    return st;
}

std::string errors_text(const std::map<int, uint64_t>& errors)
{
    std::string t;
    for (auto [e, n] : errors)
        t += std::string(std::strerror(e)) + " x" + std::to_string(n) + "; ";
    return t;
}

// An io_uring server on node 2 (64 receives in flight, replies as SQEs)
// against 3 nodes with 2000 calls each in flight on their rings: every
// request and reply checksummed, every call served exactly once.
TEST_F(Async, RingServerThousandsInFlightFromThreeNodes)
{
    constexpr uint32_t kRpcPort = 9;
    constexpr size_t kCalls = 2000;
    const Counters base = counters();
    auto srv_session = lite::Session::open(inst_[1]);
    auto svc = srv_session.serve(kRpcPort);
    RingServerStats served;
    std::thread server([&] { served = ring_serve(srv_session, svc, 64); });
    std::vector<ClientStats> clients(3);
    std::vector<std::thread> pool;
    for (size_t i = 0; i < 3; i++)
        pool.emplace_back([&, i] { clients[i] = ring_calls(inst_[i], 2, kRpcPort, kCalls); });
    for (auto& t : pool)
        t.join();
    svc.close();
    server.join();
    uint64_t good = 0, peak = 0;
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(clients[i].good, kCalls)
            << "node " << i + 1 << ": " << clients[i].wrong << " wrong replies, " << errors_text(clients[i].errors);
        good += clients[i].good;
        peak += clients[i].peak;
    }
    EXPECT_GE(peak, 3 * kCalls - 3) << "calls in flight at once";
    EXPECT_EQ(served.calls, good) << "each call served exactly once";
    EXPECT_EQ(served.bad, 0u) << "requests arrived corrupted or with the wrong sender";
    EXPECT_EQ(served.recv_errors + served.reply_errors, 0u) << std::strerror(served.last_error);
    std::cout << "[          ] " << good << " calls, up to " << peak << " in flight\n";
    expect_back_to(base);
}

// The io_uring server process is killed while three nodes have thousands
// of calls in flight to it: every call ends - with its checked reply, or
// ECONNRESET (queued or taken when it died) or ENOENT (came after) - in
// bounded time; nothing stays in flight; the port can be served again.
TEST_F(Async, RingServerKilledMidFlight)
{
    constexpr uint32_t kRpcPort = 10;
    constexpr size_t kCalls = 1500;
    const Counters base = counters();
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(p[0]);
        auto s = lite::Session::open(inst_[1]);
        auto svc = s.serve(kRpcPort);
        char c = 'g';
        if (write(p[1], &c, 1) != 1)
            _exit(2);
        ring_serve(s, svc, 64, [&](uint64_t n) {
            if (n == 300) {
                char r = 'r';
                (void)!write(p[1], &r, 1);
            }
        });
        _exit(3); // not reached: killed while serving
    }
    close(p[1]);
    char c = 0;
    if (read_byte_within(p[0], &c, 60s) != 1) {
        kill_child(pid);
        FAIL() << "the server did not register in 60 s";
    }
    std::vector<ClientStats> clients(3);
    std::vector<std::thread> pool;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < 3; i++)
        pool.emplace_back([&, i] { clients[i] = ring_calls(inst_[i], 2, kRpcPort, kCalls); });
    // The calls end by themselves (60 s each at most) if the server stalls.
    EXPECT_EQ(read_byte_within(p[0], &c, 120s), 1) << "the server answered fewer than 300 calls";
    kill(pid, SIGKILL);
    for (auto& t : pool)
        t.join();
    auto took = std::chrono::steady_clock::now() - t0;
    int st = wait_child_within(pid, 60s);
    ASSERT_NE(st, -1) << "the killed server did not exit in 60 s (its ring's commands did not end)";
    EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "child status " << st;
    close(p[0]);
    uint64_t good = 0, failed = 0;
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(clients[i].wrong, 0u);
        uint64_t expected_errors = 0;
        for (auto [e, n] : clients[i].errors) {
            if (e == ECONNRESET || e == ENOENT)
                expected_errors += n;
        }
        EXPECT_EQ(expected_errors, kCalls - clients[i].good)
            << "node " << i + 1 << ": other errors: " << errors_text(clients[i].errors);
        good += clients[i].good;
        failed += kCalls - clients[i].good;
    }
    EXPECT_GE(good, 300u - 64) << "replies the server sent before it died (up to 64 may be queued, not submitted)";
    EXPECT_GT(failed, 0u) << "the server died with nothing in flight";
    EXPECT_LT(took, 60s);
    std::cout << "[          ] " << good << " answered, " << failed << " failed with the server\n";
    expect_back_to(base);

    // The port is free again and served.
    auto srv_session = lite::Session::open(inst_[1]);
    std::optional<lite::Service> svc;
    EXPECT_TRUE(wait_until(
        [&] {
            try {
                svc.emplace(srv_session.serve(kRpcPort));
                return true;
            } catch (const lite::Error&) {
                return false;
            }
        },
        5s));
    ASSERT_TRUE(svc.has_value());
    RingServerStats served;
    std::thread server([&] { served = ring_serve(srv_session, *svc, 8); });
    ClientStats again = ring_calls(inst_[0], 2, kRpcPort, 100);
    svc->close();
    server.join();
    EXPECT_EQ(again.good, 100u) << errors_text(again.errors);
    EXPECT_EQ(served.calls, 100u);
}

// The raw interface: each malformed command gets its own errno in its CQE.
class AsyncUapi : public Async
{
protected:
    // Submit one prepared SQE and return its CQE's res (and big_cqe[0]).
    static int one(io_uring& ring, const std::function<void(io_uring_sqe*)>& prep, uint64_t* extra = nullptr)
    {
        io_uring_sqe* e = io_uring_get_sqe(&ring);
        prep(e);
        e->user_data = 42;
        if (io_uring_submit(&ring) != 1)
            return -9999;
        io_uring_cqe* cqe = nullptr;
        if (io_uring_wait_cqe(&ring, &cqe) < 0)
            return -9998;
        int res = cqe->res;
        if (extra != nullptr)
            *extra = (ring.flags & IORING_SETUP_CQE32) != 0 ? cqe->big_cqe[0] : 0;
        io_uring_cqe_seen(&ring, cqe);
        return res;
    }
};

TEST_F(AsyncUapi, Rejections)
{
    auto s = lite::Session::open(inst_[0]);
    int fd = LITE_fd(s.get());
    auto lmr = s.alloc(kMiB, 2);
    auto h = lmr.handle();
    std::vector<std::byte> buf(4096);

    io_uring small{};
    ASSERT_EQ(io_uring_queue_init(8, &small, 0), 0);
    EXPECT_EQ(one(small,
                  [&](io_uring_sqe* e) {
                      std::memset(e, 0, sizeof(*e));
                      e->opcode = IORING_OP_URING_CMD;
                      e->fd = fd;
                      e->cmd_op = LITE_IOC_READ;
                  }),
              -EINVAL)
        << "64-byte SQEs";
    io_uring_queue_exit(&small);

    io_uring no32{};
    ASSERT_EQ(io_uring_queue_init(8, &no32, IORING_SETUP_SQE128), 0);
    EXPECT_EQ(one(no32, [&](io_uring_sqe* e) { LITE_prep_atomic(e, fd, 0, h, 0, 1, 0); }), -EINVAL)
        << "atomics without 32-byte CQEs";
    EXPECT_EQ(one(no32, [&](io_uring_sqe* e) { LITE_prep_write(e, fd, h, 0, buf.data(), 64); }), 0)
        << "writes need no big CQE";
    io_uring_queue_exit(&no32);

    io_uring r{};
    ASSERT_EQ(io_uring_queue_init(8, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32), 0);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_cmd(e, fd, LITE_IOC_MEMSET); }), -ENOTTY) << "not async";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_cmd(e, fd, 0x1234); }), -ENOTTY) << "unknown cmd_op";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, 999, 0, buf.data(), 8); }), -EBADF);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, h, kMiB - 4, buf.data(), 8); }), -ERANGE);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, h, ~0ULL, buf.data(), 8); }), -EOVERFLOW);
    EXPECT_EQ(
        one(r, [&](io_uring_sqe* e) { LITE_prep_rw(e, fd, 0, h, 0, buf.data(), 8, LITE_RW_COPY | LITE_RW_ZCOPY); }),
        -EINVAL)
        << "both copy flags";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_rw(e, fd, 0, h, 0, buf.data(), 8, 1U << 7); }), -EINVAL)
        << "unknown flag";
    EXPECT_EQ(one(r,
                  [&](io_uring_sqe* e) {
                      LITE_prep_read(e, fd, h, 0, buf.data(), 8);
                      reinterpret_cast<lite_rw*>(e->cmd)->reserved[1] = 1;
                  }),
              -EINVAL)
        << "reserved";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, h, 0, nullptr, 0); }), 0) << "empty read";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, h, kMiB, nullptr, 0); }), 0)
        << "empty read at the end";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_write(e, fd, h, kMiB + 1, nullptr, 0); }), -ERANGE)
        << "empty write past the end";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, h, 0, reinterpret_cast<void*>(8), 64); }), -EFAULT)
        << "bad user buffer";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_atomic(e, fd, 0, h, 4, 1, 0); }), -EINVAL) << "unaligned";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_atomic(e, fd, 0, h, 0, 1, 5); }), -EINVAL)
        << "swap value on fetch_add";
    EXPECT_EQ(one(r,
                  [&](io_uring_sqe* e) {
                      LITE_prep_atomic(e, fd, 1, h, 0, 0, 1);
                      reinterpret_cast<lite_atomic*>(e->cmd)->result = 3;
                  }),
              -EINVAL)
        << "output field set";
    uint64_t old = 1;
    EXPECT_EQ(one(
                  r, [&](io_uring_sqe* e) { LITE_prep_atomic(e, fd, 1, h, 0, 0, 9); }, &old),
              0);
    EXPECT_EQ(old, 0u);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_call(e, fd, 2, 0, buf.data(), 8, buf.data(), 8, 0); }), -EINVAL)
        << "port 0";
    EXPECT_EQ(
        one(r, [&](io_uring_sqe* e) { LITE_prep_call(e, fd, 2, 5, buf.data(), LITE_RPC_MAX + 1, buf.data(), 8, 0); }),
        -EMSGSIZE);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_call(e, fd, 2, 5, buf.data(), 8, buf.data(), 8, 500); }), -ENOENT)
        << "nobody serves the port";

    // A read-only mapping cannot be written or added to.
    lmr.share("async-ro", LITE_PERM_READ);
    auto ro = s.map("async-ro");
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_write(e, fd, ro.handle(), 0, buf.data(), 8); }), -EACCES);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_atomic(e, fd, 0, ro.handle(), 0, 1, 0); }), -EACCES);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, fd, ro.handle(), 0, buf.data(), 8); }), 0);

    // A file not attached to a node has no handles: the file is the problem.
    int raw = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    ASSERT_GE(raw, 0);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_read(e, raw, h, 0, buf.data(), 8); }), -EBADFD);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_call(e, raw, 2, 5, buf.data(), 8, buf.data(), 8, 0); }), -EBADFD);
    ::close(raw);
    io_uring_queue_exit(&r);
}

// Receives and replies through io_uring: each rejection with its errno, a
// request too big for the buffer, a timeout, a port closed under a waiting
// receive, and a ring closed under one (its buffer is never written).
TEST_F(AsyncUapi, RecvAndReplyRejections)
{
    constexpr uint32_t kRpcPort = 11;
    const Counters base = counters();
    auto s = lite::Session::open(inst_[0]);
    int fd = LITE_fd(s.get());
    std::vector<std::byte> buf(4096);
    ASSERT_EQ(LITE_rpc_register(s.get(), kRpcPort), 0);

    io_uring no32{};
    ASSERT_EQ(io_uring_queue_init(8, &no32, IORING_SETUP_SQE128), 0);
    EXPECT_EQ(one(no32, [&](io_uring_sqe* e) { LITE_prep_recv(e, fd, kRpcPort, buf.data(), buf.size(), 10); }), -EINVAL)
        << "receives without 32-byte CQEs";
    io_uring_queue_exit(&no32);

    io_uring r{};
    ASSERT_EQ(io_uring_queue_init(8, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32), 0);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_recv(e, fd, 0, buf.data(), buf.size(), 10); }), -EINVAL)
        << "port 0";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_recv(e, fd, kRpcPort + 1, buf.data(), buf.size(), 10); }),
              -ENOENT)
        << "a port this file did not register";
    const std::pair<const char*, void (*)(lite_rpc_recv&)> bad_fields[] = {
        {"unknown flag", [](lite_rpc_recv& rv) { rv.flags = 1; }},
        {"output field set", [](lite_rpc_recv& rv) { rv.token = 5; }},
        {"reserved", [](lite_rpc_recv& rv) { rv.reserved[1] = 1; }},
    };
    for (const auto& bad : bad_fields) {
        EXPECT_EQ(one(r,
                      [&](io_uring_sqe* e) {
                          LITE_prep_recv(e, fd, kRpcPort, buf.data(), buf.size(), 10);
                          bad.second(*reinterpret_cast<lite_rpc_recv*>(e->cmd));
                      }),
                  -EINVAL)
            << bad.first;
    }
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_recv(e, fd, kRpcPort, buf.data(), buf.size(), 100); }),
              -ETIMEDOUT)
        << "nothing came";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_reply(e, fd, 12345, buf.data(), 8); }), -ENOENT)
        << "no such token";
    EXPECT_EQ(one(r,
                  [&](io_uring_sqe* e) {
                      LITE_prep_reply(e, fd, 12345, buf.data(), 8);
                      reinterpret_cast<lite_rpc_reply*>(e->cmd)->flags = 2;
                  }),
              -EINVAL)
        << "unknown reply flag";

    // Too big for the buffer: EMSGSIZE and the size; it stays queued.
    Bytes msg = pattern(100, 77);
    ASSERT_EQ(LITE_msg_send(s.get(), 0, kRpcPort, msg.data(), msg.size(), 5000), 0);
    uint64_t big = 0;
    EXPECT_EQ(one(
                  r, [&](io_uring_sqe* e) { LITE_prep_recv(e, fd, kRpcPort, buf.data(), 10, 5000); }, &big),
              -EMSGSIZE);
    EXPECT_EQ(big, 100u);
    EXPECT_EQ(one(
                  r, [&](io_uring_sqe* e) { LITE_prep_recv(e, fd, kRpcPort, buf.data(), buf.size(), 5000); }, &big),
              100);
    EXPECT_EQ(LITE_CQE_TOKEN(big), 0u) << "a one-way message has no token";
    EXPECT_EQ(LITE_CQE_SRC(big), s.node_id());
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), buf.begin()));

    // A waiting receive ends with ENOENT when its port is closed.
    io_uring_sqe* e = io_uring_get_sqe(&r);
    LITE_prep_recv(e, fd, kRpcPort, buf.data(), buf.size(), 0);
    ASSERT_EQ(io_uring_submit(&r), 1);
    std::this_thread::sleep_for(50ms);
    ASSERT_EQ(LITE_rpc_unregister(s.get(), kRpcPort), 0);
    io_uring_cqe* cqe = nullptr;
    ASSERT_EQ(io_uring_wait_cqe(&r, &cqe), 0);
    EXPECT_EQ(cqe->res, -ENOENT);
    io_uring_cqe_seen(&r, cqe);
    io_uring_queue_exit(&r);

    // A ring closed under a waiting receive: the receive ends without
    // writing its buffer; the next message goes to the next receiver.
    ASSERT_EQ(LITE_rpc_register(s.get(), kRpcPort), 0);
    std::vector<std::byte> untouched(4096, std::byte{0x5a});
    io_uring gone{};
    ASSERT_EQ(io_uring_queue_init(8, &gone, IORING_SETUP_SQE128 | IORING_SETUP_CQE32), 0);
    e = io_uring_get_sqe(&gone);
    LITE_prep_recv(e, fd, kRpcPort, untouched.data(), untouched.size(), 0);
    ASSERT_EQ(io_uring_submit(&gone), 1);
    io_uring_queue_exit(&gone);
    ASSERT_EQ(LITE_msg_send(s.get(), 0, kRpcPort, msg.data(), msg.size(), 5000), 0);
    lite_rpc_in_t in{};
    std::vector<std::byte> got(4096);
    EXPECT_EQ(LITE_rpc_recv(s.get(), kRpcPort, got.data(), got.size(), 5000, &in), 0);
    EXPECT_EQ(in.len, msg.size());
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), got.begin()));
    EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](std::byte b) { return b == std::byte{0x5a}; }))
        << "a receive of a closed ring wrote its buffer";
    EXPECT_EQ(LITE_rpc_unregister(s.get(), kRpcPort), 0);
    expect_back_to(base);
}

// A child process queues thousands of operations on LMRs it allocated on
// nodes 2 and 3 and exits (or is killed, or cancels them) without waiting:
// the node memory and in-flight counters come back to where they were.
enum class Ending { Exit, Kill, Cancel };

void child_body(uint32_t instance, Ending how, int ready_fd, bool polled = false)
{
    auto s = lite::Session::open(instance);
    auto a = s.alloc(8 * kMiB, 2);
    auto b = s.alloc(8 * kMiB, 3);
    io_uring r{};
    if (io_uring_queue_init(4096, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | (polled ? IORING_SETUP_IOPOLL : 0U)) !=
        0)
        _exit(2);
    int fd = LITE_fd(s.get());
    static std::vector<std::byte> buf(8 * kMiB, std::byte{1});
    constexpr unsigned kOps = 4000;
    for (unsigned i = 0; i < kOps; i++) {
        io_uring_sqe* e = io_uring_get_sqe(&r);
        const lite::Lmr& l = i % 2 ? a : b;
        uint64_t off = (i * 2048ULL) % (8 * kMiB - 2048);
        if (i % 5 == 4) {
            LITE_prep_atomic(e, fd, 0, l.handle(), 0, 1, 0);
        } else if (i % 2) {
            LITE_prep_write(e, fd, l.handle(), off, buf.data() + off, 2048);
        } else {
            LITE_prep_read(e, fd, l.handle(), off, buf.data() + off, 2048);
        }
        e->user_data = i + 1;
    }
    if (io_uring_submit(&r) != static_cast<int>(kOps))
        _exit(3);
    if (how == Ending::Cancel) {
        unsigned cancels = 0, done = 0, cancelled = 0;
        for (unsigned i = 0; i < kOps; i += 3) {
            io_uring_sqe* e = io_uring_get_sqe(&r);
            if (e == nullptr) {
                io_uring_submit(&r);
                e = io_uring_get_sqe(&r);
            }
            io_uring_prep_cancel64(e, i + 1, 0);
            e->user_data = 1000000 + i;
            cancels++;
        }
        io_uring_submit(&r);
        std::vector<int> seen(kOps, 0);
        unsigned bad = 0;
        while (done < kOps + cancels) {
            io_uring_cqe* cqe = nullptr;
            if (io_uring_wait_cqe(&r, &cqe) != 0)
                _exit(4);
            if (cqe->user_data >= 1000000) {
                // Started commands cannot be cancelled on this kernel.
                bad += cqe->res != 0 && cqe->res != -ENOENT && cqe->res != -EALREADY;
            } else {
                seen[cqe->user_data - 1]++;
                cancelled += cqe->res == -ECANCELED;
                bad += cqe->res != 0 && cqe->res != -ECANCELED;
            }
            io_uring_cqe_seen(&r, cqe);
            done++;
        }
        bad += std::count_if(seen.begin(), seen.end(), [](int n) { return n != 1; });
        std::printf("cancel: %u ops, %u cancel requests, %u cancelled\n", kOps, cancels, cancelled);
        _exit(bad == 0 ? 0 : 5);
    }
    if (ready_fd >= 0) {
        char c = 'x';
        (void)!write(ready_fd, &c, 1);
        pause();
    }
    _exit(0); // with everything in flight: no io_uring_queue_exit, no LITE_close
}

// A child runs child_body() on @instance (polled: on a polled ring) and
// ends as @how says; it exits cleanly, or dies of the SIGKILL sent here.
void end_child(uint32_t instance, Ending how, bool polled)
{
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(p[0]);
        child_body(instance, how, how == Ending::Kill ? p[1] : -1, polled);
    }
    close(p[1]);
    if (how == Ending::Kill) {
        char c = 0;
        EXPECT_EQ(read_byte_within(p[0], &c, 60s), 1) << "the child did not start its operations in 60 s";
        kill(pid, SIGKILL);
    }
    close(p[0]);
    int st = wait_child_within(pid, 60s);
    ASSERT_NE(st, -1) << "the child did not exit in 60 s";
    if (how == Ending::Kill) {
        EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    } else {
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
    }
}

TEST_F(Async, ProcessExitKillAndCancelMidFlight)
{
    const Counters base = counters();
    for (Ending how : {Ending::Exit, Ending::Kill, Ending::Cancel}) {
        end_child(inst_[0], how, false);
        expect_back_to(base);
    }
    // The nodes still work.
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(4096, 3);
    lite::Ring ring(s, 4);
    Bytes w = pattern(512, 9), rd(512);
    ring.write(l, 100, w, [](const lite::Result& r) { (void)r.value(); });
    ring.drain();
    ring.read(l, 100, rd, [](const lite::Result& r) { (void)r.value(); });
    ring.drain();
    EXPECT_EQ(rd, w);
}

// The same on a polled ring (IORING_SETUP_IOPOLL), whose completions
// nobody reaps once the process is gone but io_uring's exit work, polling:
// a process that exits or is killed with 4000 operations in flight leaves
// nothing behind. (A polled ring takes no cancel requests.)
TEST_F(Async, PolledRingExitAndKillMidFlight)
{
    const Counters base = counters();
    for (Ending how : {Ending::Exit, Ending::Kill}) {
        end_child(inst_[0], how, true);
        expect_back_to(base);
    }
}

// A polled Ring (lite::Completion::polled): 1024 writes then reads of 0
// bytes to 300 KiB over LMRs on all three nodes (the empty ones finish at
// once, the longest in io_uring's workers: both complete through the poll
// list), checksummed; fetch_adds on a CPU-domain and a NIC-atomic word
// whose previous values prove each ran once; RPC refused with EOPNOTSUPP.
TEST_F(Async, PolledRingChecksummedAtomicsExactRpcRefused)
{
    auto s = lite::Session::open(inst_[0]);
    const Counters base = counters();
    {
        std::vector<lite::Lmr> lmrs;
        for (uint32_t node = 1; node <= 3; node++)
            lmrs.push_back(s.alloc(32 * kMiB, node));
        lite::Ring ring(s, 1024, lite::Completion::polled);
        std::vector<Block> blocks(1024);
        ASSERT_NO_FATAL_FAILURE(lay_out(blocks, lmrs.size(), 32 * kMiB,
                                        {0, 1, 64, 4096, 4097, 65536, 65537, 300 * size_t{1024}}, 100, 7, 500));
        Tally t;
        auto count = t.counter();
        for (auto& b : blocks)
            ring.write(lmrs[b.lmr], b.off, b.data, count);
        ring.drain();
        EXPECT_EQ(t.ok, blocks.size()) << t.first_err;
        t.ok = 0;
        for (auto& b : blocks) {
            b.back.assign(b.data.size(), std::byte{0x5a});
            ring.read(lmrs[b.lmr], b.off, b.back, count);
        }
        ring.drain();
        EXPECT_EQ(t.ok, blocks.size()) << t.first_err;
        size_t bad = 0;
        for (auto& b : blocks)
            bad += checksum(b.back) != checksum(b.data) || b.back != b.data;
        EXPECT_EQ(bad, 0u) << "blocks read back different";

        auto cpu_word = s.alloc(4096, 2);
        auto nic_word = s.alloc(4096, 3, LITE_LMR_NIC_ATOMIC);
        for (const lite::Lmr* w : {&cpu_word, &nic_word}) {
            std::set<uint64_t> olds;
            for (uint64_t i = 0; i < 500; i++)
                ring.fetch_add(*w, 16, 1, [&](const lite::Result& r) { olds.insert(r.value()); });
            ring.drain();
            EXPECT_EQ(olds.size(), 500u) << "a previous value seen twice";
            EXPECT_EQ(*olds.rbegin(), 499u);
            uint64_t seen = 0;
            ring.cmp_swap(*w, 16, 500, 7, [&](const lite::Result& r) { seen = r.value(); });
            ring.drain();
            EXPECT_EQ(seen, 500u);
            EXPECT_EQ(w->fetch_add(16, 0), 7u);
        }

        Bytes req(8), rep(8);
        int err = 0;
        ring.call(2, 4242, req, rep, [&](const lite::Result& r) { err = r.error(); });
        ring.drain();
        EXPECT_EQ(err, EOPNOTSUPP) << "an RPC call on a polled ring";
    }
    expect_back_to(base);
}

// Freeing an LMR waits for its operations in flight; later ones fail.
TEST_F(Async, FreeWithOperationsInFlight)
{
    auto s = lite::Session::open(inst_[0]);
    const Counters base = counters();
    {
        lite::Ring ring(s, 512);
        auto l = s.alloc(4 * kMiB, 2);
        Bytes data = pattern(4096, 3);
        size_t ok = 0, other = 0;
        for (int i = 0; i < 1000; i++)
            ring.write(l, (i * 4096ULL) % (4 * kMiB), data, [&](const lite::Result& r) { (r.ok() ? ok : other)++; });
        ring.submit();
        lite::Lmr gone = std::move(l);
        {
            auto drop = std::move(gone);
        } // LITE_free while writes are in flight
        ring.drain();
        EXPECT_EQ(ok + other, 1000u);
        std::cout << "free mid-flight: " << ok << " completed, " << other << " failed\n";
    }
    expect_back_to(base);
}

// The thread that submitted the operations frees their LMR before it
// reaped anything, on a ring whose completions only run when that thread
// asks (DEFER_TASKRUN): the free must not wait for its own task work.
TEST_F(Async, FreeBeforeReapingOwnCompletions)
{
    const Counters base = counters();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        auto s = lite::Session::open(inst_[0]);
        io_uring r{};
        if (io_uring_queue_init(1024, &r,
                                IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | IORING_SETUP_SINGLE_ISSUER |
                                    IORING_SETUP_DEFER_TASKRUN) != 0) {
            _exit(2);
        }
        static std::vector<std::byte> buf(64 * kMiB);
        {
            auto l = s.alloc(64 * kMiB, 2);
            int fd = LITE_fd(s.get());
            for (unsigned i = 0; i < 1000; i++) {
                io_uring_sqe* e = io_uring_get_sqe(&r);
                if (e == nullptr) {
                    io_uring_submit(&r);
                    e = io_uring_get_sqe(&r);
                }
                if (e == nullptr)
                    _exit(6);
                LITE_prep_read(e, fd, l.handle(), i * 65536ULL, buf.data() + i * 65536ULL, 65536);
                e->user_data = i + 1;
            }
            if (io_uring_submit(&r) < 0)
                _exit(3);
        } // LITE_free, completions not reaped
        unsigned ok = 0;
        for (unsigned i = 0; i < 1000; i++) {
            io_uring_cqe* cqe = nullptr;
            if (io_uring_wait_cqe(&r, &cqe) != 0)
                _exit(4);
            ok += cqe->res == 0;
            io_uring_cqe_seen(&r, cqe);
        }
        _exit(ok == 1000 ? 0 : 5);
    }
    int st = 0;
    bool exited = wait_until([&] { return waitpid(pid, &st, WNOHANG) == pid; }, 60s);
    if (!exited) {
        std::cout << run("cat /proc/" + std::to_string(pid) + "/stack").output;
        kill(pid, SIGKILL); // stays in D state if the kernel deadlocked
    }
    ASSERT_TRUE(exited) << "LMR free waited for the freeing thread's own completions";
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
    expect_back_to(base);
}

// The submitting thread has not reaped its completions (its ring runs
// task work only when that thread waits for completions: DEFER_TASKRUN)
// when its node goes away (@take_down, named @what, on the node of
// instance @inst[0]): that must not wait for the task work (it once waited
// for the connection references the operations kept until then, for as
// long as the thread did not reap), and what completed keeps its result:
// every read checksummed, every write in the LMR (node 3's, on node 2,
// mapped through node 1), every RPC call's reply (from node 2; its reply
// buffer, mapped on the device, is unmapped by the node's teardown: the
// task work once unmapped it on a device that was gone).
void down_before_reap(const lite::Device& dev, const std::vector<uint32_t>& inst, const char* what,
                      const std::function<void()>& take_down)
{
    constexpr size_t kOps = 64;
    constexpr size_t kLen = 16384;
    constexpr size_t kCalls = 24;
    constexpr uint32_t kPort = 23;
    auto reply_of = [](uint64_t i) { return pattern(1000 + (i * 7919) % 60000, 500 + i); };
    std::atomic<size_t> answered{0};
    auto s2 = lite::Session::open(inst[1]);
    std::optional<lite::Server> server;
    server.emplace(
        s2, kPort,
        [&](const lite::Incoming&, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            uint64_t i = 0;
            std::memcpy(&i, req.data(), std::min(req.size(), sizeof(i)));
            reply = reply_of(i);
            answered++;
            return reply.size();
        },
        2);
    auto s3 = lite::Session::open(inst[2]);
    auto owned = s3.alloc(2 * kOps * kLen, 2);
    owned.share("down-before-reap", LITE_PERM_ALL);
    const Bytes before = pattern(kOps * kLen, 77), after = pattern(kOps * kLen, 78);
    owned.write(0, before);
    auto s = lite::Session::open(inst[0]);
    auto l = s.map("down-before-reap");
    io_uring r{};
    ASSERT_EQ(io_uring_queue_init(static_cast<unsigned>(4 * kOps), &r,
                                  IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | IORING_SETUP_SINGLE_ISSUER |
                                      IORING_SETUP_DEFER_TASKRUN),
              0);
    Bytes got(kOps * kLen);
    int fd = LITE_fd(s.get());
    for (size_t i = 0; i < kOps; i++) {
        io_uring_sqe* e = io_uring_get_sqe(&r);
        ASSERT_NE(e, nullptr);
        LITE_prep_read(e, fd, l.handle(), i * kLen, got.data() + i * kLen, kLen);
        e->user_data = i;
        e = io_uring_get_sqe(&r);
        ASSERT_NE(e, nullptr);
        LITE_prep_write(e, fd, l.handle(), (kOps + i) * kLen, after.data() + i * kLen, kLen);
        e->user_data = kOps + i;
    }
    std::vector<uint64_t> call_req(kCalls);
    std::vector<Bytes> replies(kCalls, Bytes(61000));
    prep_calls(r, fd, 2, kPort, call_req, replies, 0, 2 * kOps);
    ASSERT_EQ(io_uring_submit(&r), static_cast<int>(2 * kOps + kCalls));
    // Let them complete on the wire; nothing here reaps, so their task
    // work waits (the counter drops only when it runs).
    ASSERT_TRUE(wait_until([&] { return answered.load() == kCalls; }, 20s))
        << "node 2 answered " << answered.load() << " of " << kCalls << " calls";
    std::this_thread::sleep_for(500ms);
    uint32_t waiting = dev.status(inst[0]).async_inflight;
    ASSERT_GT(waiting, 0U) << "every operation finished without the submitter reaping: the test shows nothing";

    std::atomic<bool> down_done{false};
    std::string down_err;
    std::jthread admin([&] {
        try {
            take_down();
        } catch (const std::exception& e) {
            down_err = e.what();
        }
        down_done = true;
    });
    bool returned = wait_until([&] { return down_done.load(); }, 20s);
    // Reap (this also ends a take-down that waited for it).
    size_t ok = 0;
    constexpr size_t kAll = 2 * kOps + kCalls;
    std::vector<int> res(kAll, 1);
    for (size_t i = 0; i < kAll; i++) {
        io_uring_cqe* cqe = nullptr;
        __kernel_timespec ts{.tv_sec = 30, .tv_nsec = 0};
        ASSERT_EQ(io_uring_wait_cqe_timeout(&r, &cqe, &ts), 0) << what << ": completion " << i << " of " << kAll;
        ASSERT_LT(cqe->user_data, kAll);
        res[cqe->user_data] = cqe->res;
        io_uring_cqe_seen(&r, cqe);
    }
    admin.join();
    io_uring_queue_exit(&r);
    server.reset(); // its node may be gone: its threads ended with an error
    EXPECT_TRUE(returned) << what << " waited for the task work of " << waiting
                          << " completed operations nobody reaped";
    EXPECT_TRUE(down_err.empty()) << what << ": " << down_err;
    for (size_t i = 0; i < 2 * kOps; i++)
        ok += res[i] == 0;
    EXPECT_EQ(ok, 2 * kOps) << what << ": operations that completed before it lost their result";
    for (size_t i = 0; i < kCalls; i++) {
        const Bytes want = reply_of(i);
        ASSERT_EQ(res[2 * kOps + i], static_cast<int>(want.size()))
            << what << ": call " << i << " (" << (res[2 * kOps + i] < 0 ? std::strerror(-res[2 * kOps + i]) : "")
            << ") lost the reply it had";
        EXPECT_TRUE(std::equal(want.begin(), want.end(), replies[i].begin())) << what << ": call " << i << "'s reply";
    }
    for (size_t i = 0; i < kOps; i++) {
        if (res[i] == 0) {
            EXPECT_TRUE(std::equal(before.begin() + i * kLen, before.begin() + (i + 1) * kLen, got.begin() + i * kLen))
                << what << ": read " << i << " returned other bytes";
        }
    }
    if (dev.instances().empty())
        return; // the device went, and the LMR's nodes with it
    Bytes back(kOps * kLen);
    owned.read(kOps * kLen, back);
    for (size_t i = 0; i < kOps; i++) {
        if (res[kOps + i] == 0) {
            EXPECT_TRUE(std::equal(after.begin() + i * kLen, after.begin() + (i + 1) * kLen, back.begin() + i * kLen))
                << what << ": write " << i << " did not land";
        }
    }
}

TEST_F(Async, NodeDownBeforeTheSubmitterReaps)
{
    down_before_reap(*dev_, inst_, "NODE_DOWN", [&] { dev_->down(inst_[0]); });
}

// The same when the device is removed (all three nodes go with it); the
// device is added back for the tests after this one.
TEST_F(Async, DeviceRemovedBeforeTheSubmitterReaps)
{
    down_before_reap(*dev_, inst_, "rdma link delete", [] {
        auto r = run("timeout 60 rdma link delete rxe0");
        if (r.status != 0)
            throw std::runtime_error("rdma link delete: " + r.output);
    });
    EXPECT_TRUE(dev_->instances().empty()) << "nodes on the removed device are gone";
    auto r = run("rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev veth0");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(wait_until([] { return run("rdma link show rxe0/1 | grep -q ACTIVE").status == 0; }, 10s))
        << "rxe0 is not active again";
}

// A flood of asynchronous writes on a connection must not starve the
// synchronous operations on it, whatever the completion mode.
TEST_F(Async, SyncOperationsBesideAnAsyncFlood)
{
    for (uint32_t mode : {LITE_CQ_WORKQUEUE, LITE_CQ_SOFTIRQ}) {
        down_all(*dev_);
        lite::UpParams p;
        p.device = env("LITE_RXE", "rxe0");
        p.listen = endpoint(kPort);
        p.secret = secret();
        p.cq_mode = mode;
        auto a = dev_->up(p);
        p.listen = endpoint(kPort + 1);
        p.join = endpoint(kPort);
        (void)dev_->up(p);
        auto s = lite::Session::open(a.instance);
        auto l = s.alloc(64 * kMiB, 2);
        std::atomic<bool> stop{false};
        std::string flood_err;
        std::thread flood([&] {
            try {
                lite::Ring ring(s, 512);
                static const Bytes data = pattern(65536, 1);
                for (size_t i = 0; !stop; i++) {
                    ring.write(l, (i % 900) * 65536ULL, data, [](const lite::Result& r) { (void)r.value(); });
                    if (ring.in_flight() >= 1000)
                        ring.wait(1);
                }
                ring.drain();
            } catch (const std::exception& e) {
                flood_err = e.what();
            }
        });
        std::this_thread::sleep_for(500ms);
        Bytes w = pattern(64, 2), r(64);
        auto slowest = std::chrono::steady_clock::duration::zero();
        try { // the flood thread is joined whatever happens here
            for (int k = 0; k < 20; k++) {
                auto t = std::chrono::steady_clock::now();
                const uint64_t off = 60 * kMiB + 64 * static_cast<uint64_t>(k);
                l.write(off, std::span<const std::byte>(w));
                l.read(off, std::span<std::byte>(r));
                slowest = std::max(slowest, std::chrono::steady_clock::now() - t);
                EXPECT_EQ(r, w);
            }
        } catch (const lite::Error& e) {
            ADD_FAILURE() << "a synchronous operation beside the flood failed: " << e.what();
        }
        stop = true;
        flood.join();
        EXPECT_EQ(flood_err, "");
        // Starved, they failed after data_timeout_ms (10 s); here 1-2
        // ms, and up to 5 s under the debug kernel (KASAN, lockdep), where
        // each 64 KiB write ahead of them takes tens of ms.
        EXPECT_LT(slowest, 8s) << "cq mode " << mode;
        std::cout << "cq mode " << mode << ": slowest write + read beside the flood "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count() << " ms\n";
    }
}

} // namespace

// Registered buffers (IORING_URING_CMD_FIXED): writes from and reads into
// them, checksummed, to LMRs on the other two nodes; sizes from 1 byte to
// 64 KiB at offsets that cross pages (the NIC moves the pages directly),
// and 200 KiB (more pieces than one operation holds: a worker's
// synchronous path). Nothing leaks.
TEST_F(Async, RegisteredBuffersChecksummed)
{
    const Counters base = counters();
    {
        auto s = lite::Session::open(inst_[0]);
        lite::Ring ring(s, 64);
        Bytes src = pattern(kMiB, 77);
        Bytes dst(kMiB);
        std::array<std::span<std::byte>, 2> bufs = {std::span(src), std::span(dst)};
        ring.register_buffers(bufs);
        std::vector<lite::Lmr> lmrs;
        lmrs.push_back(s.alloc(kMiB, 2));
        lmrs.push_back(s.alloc(kMiB, 3));
        const std::array<size_t, 7> sizes = {1, 8, 100, 4096, 5000, 65536, size_t{200} * 1024};
        const std::array<size_t, 3> at = {0, 4095, 12345};
        std::vector<std::string> errs;
        auto check = [&](const char* what) {
            return [&errs, what](const lite::Result& r) {
                try {
                    (void)r.value();
                } catch (const std::exception& e) {
                    errs.push_back(std::string(what) + ": " + e.what());
                }
            };
        };
        for (size_t n : sizes) {
            for (size_t a : at) {
                for (auto& l : lmrs) {
                    std::fill(dst.begin(), dst.end(), std::byte{0});
                    ring.write_fixed(l, 3, std::span(src).subspan(a, n), 0, check("write_fixed"));
                    ring.drain();
                    ring.read_fixed(l, 3, std::span(dst).subspan(a + 1, n), 1, check("read_fixed"));
                    ring.drain();
                    ASSERT_EQ(errs, std::vector<std::string>{}) << n << " bytes at " << a;
                    EXPECT_EQ(checksum(std::span(dst).subspan(a + 1, n)), checksum(std::span(src).subspan(a, n)))
                        << n << " bytes at " << a;
                    Bytes sync(n);
                    l.read(3, std::span(sync));
                    EXPECT_EQ(checksum(sync), checksum(std::span(src).subspan(a, n)))
                        << "the synchronous read of " << n << " bytes";
                }
            }
        }
    }
    expect_back_to(base);
}

// Registered buffers: what the kernel refuses, each with its errno.
TEST_F(AsyncUapi, RegisteredBufferRejections)
{
    auto s = lite::Session::open(inst_[0]);
    int fd = LITE_fd(s.get());
    auto lmr = s.alloc(kMiB, 2);
    auto h = lmr.handle();
    std::vector<std::byte> buf(8192);
    io_uring r{};
    ASSERT_EQ(io_uring_queue_init(8, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32), 0);
    iovec iov{buf.data(), buf.size()};
    ASSERT_EQ(io_uring_register_buffers(&r, &iov, 1), 0);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_rw_fixed(e, fd, 1, h, 0, buf.data(), 8192, 0); }), 0);
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_rw_fixed(e, fd, 0, h, 0, buf.data() + 8, 8, 0); }), 0);
    EXPECT_EQ(one(r,
                  [&](io_uring_sqe* e) {
                      LITE_prep_rw_fixed(e, fd, 0, h, 0, buf.data(), 8, 0);
                      reinterpret_cast<lite_rw*>(e->cmd)->flags = LITE_RW_COPY;
                  }),
              -EINVAL)
        << "a path flag on a registered buffer";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_rw_fixed(e, fd, 0, h, 0, buf.data() + 8190, 8, 0); }), -EFAULT)
        << "past the registered buffer's end";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_rw_fixed(e, fd, 0, h, 0, buf.data(), 8, 1); }), -EFAULT)
        << "no registered buffer 1 (io_uring's own check)";
    EXPECT_EQ(one(r,
                  [&](io_uring_sqe* e) {
                      LITE_prep_atomic(e, fd, 0, h, 0, 1, 0);
                      e->uring_cmd_flags = IORING_URING_CMD_FIXED;
                  }),
              -EINVAL)
        << "an atomic on a registered buffer";
    EXPECT_EQ(one(r, [&](io_uring_sqe* e) { LITE_prep_rw_fixed(e, fd, 0, h, kMiB - 4, buf.data(), 8, 0); }), -ERANGE)
        << "the LMR's access checks come first";
    io_uring_queue_exit(&r);
}

// LITE_RW_SPIN: the submitting thread polls for a read's or write's
// completion. On rings whose completions come as events (with and without
// deferred task work) and on a polled ring, writes and reads of 1 byte to
// 8 KiB, from plain and registered buffers, to an LMR on another node,
// each alone in flight: the data comes back, and on a node in poll mode
// some completions are there when the submission returns.
TEST_F(AsyncUapi, SpinningSubmissionsChecksummed)
{
    const Counters base = counters();
    {
        auto s = lite::Session::open(inst_[0]);
        const int fd = LITE_fd(s.get());
        auto lmr = s.alloc(kMiB, 2);
        const auto h = lmr.handle();
        const bool polls = dev_->status(inst_[0]).cq_mode == LITE_CQ_POLL;
        Bytes src = pattern(size_t{64} * 1024, 91);
        Bytes dst(src.size());
        struct Kind {
            const char* name;
            unsigned int flags;
        };
        for (Kind k : {Kind{"events", 0U}, Kind{"deferred", IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN},
                       Kind{"polled", IORING_SETUP_IOPOLL}}) {
            io_uring r{};
            ASSERT_EQ(io_uring_queue_init(8, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | k.flags), 0) << k.name;
            std::array<iovec, 2> iov{{{src.data(), src.size()}, {dst.data(), dst.size()}}};
            ASSERT_EQ(io_uring_register_buffers(&r, iov.data(), 2), 0) << k.name;
            size_t at_submit = 0;
            // Submit one operation with the flag; was its CQE there at once?
            auto spin = [&](const std::function<void(io_uring_sqe*)>& prep) {
                io_uring_sqe* e = io_uring_get_sqe(&r);
                prep(e);
                reinterpret_cast<lite_rw*>(e->cmd)->flags |= LITE_RW_SPIN;
                e->user_data = 7;
                if (io_uring_submit(&r) != 1)
                    return -9999;
                io_uring_cqe* cqe = nullptr;
                if (io_uring_peek_cqe(&r, &cqe) == 0) {
                    at_submit++;
                } else if (io_uring_wait_cqe(&r, &cqe) < 0) {
                    return -9998;
                }
                const int res = cqe->res;
                io_uring_cqe_seen(&r, cqe);
                return res;
            };
            for (size_t i = 0; i < 60; i++) {
                const size_t n = size_t{1} << (i % 14);
                const size_t off = (i * 4099) % (kMiB - n);
                const bool fixed = i % 3 == 2;
                std::fill(dst.begin(), dst.end(), std::byte{0});
                ASSERT_EQ(spin([&](io_uring_sqe* e) {
                              if (fixed)
                                  LITE_prep_rw_fixed(e, fd, 1, h, off, src.data() + i, n, 0);
                              else
                                  LITE_prep_write(e, fd, h, off, src.data() + i, n);
                          }),
                          0)
                    << k.name << ": write of " << n << " bytes";
                ASSERT_EQ(spin([&](io_uring_sqe* e) {
                              if (fixed)
                                  LITE_prep_rw_fixed(e, fd, 0, h, off, dst.data(), n, 1);
                              else
                                  LITE_prep_read(e, fd, h, off, dst.data(), n);
                          }),
                          0)
                    << k.name << ": read of " << n << " bytes";
                EXPECT_EQ(checksum(std::span(dst).first(n)), checksum(std::span(src).subspan(i, n)))
                    << k.name << ": " << n << " bytes at " << off << (fixed ? ", registered buffers" : "");
            }
            if (polls && (k.flags & IORING_SETUP_IOPOLL) == 0) {
                EXPECT_GT(at_submit, 0U) << k.name << ": no completion came while the submission polled";
            }
            std::cout << k.name << ": " << at_submit << " of 120 completions found by the first look\n";
            EXPECT_EQ(one(r,
                          [&](io_uring_sqe* e) {
                              LITE_prep_rw_fixed(e, fd, 0, h, 0, dst.data(), 8, 1);
                              reinterpret_cast<lite_rw*>(e->cmd)->flags = LITE_RW_SPIN | LITE_RW_COPY;
                          }),
                      -EINVAL)
                << k.name << ": a path flag beside the spin flag on a registered buffer";
            io_uring_queue_exit(&r);
        }
    }
    expect_back_to(base);
}
