// SPDX-License-Identifier: MIT
// RPC, one-way messages, distributed locks and barriers on the real module,
// 3 nodes in one guest: checksummed calls from every node under load, a
// slow server, a server process and a whole node dying mid-call, mutual
// exclusion, barrier generations, per-sender message order, every rejection
// with its own errno, and the completion modes (cq_mode) carrying traffic.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <lite/rpc.hpp>
#include <lite/session.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "nodes.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 18900;
const uint32_t kTimeoutMs = call_bound_ms(30000); // generous (TCG), but bounded
constexpr size_t kMiB = size_t{1} << 20;

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

std::string err(int e)
{
    if (e == 0)
        return "success";
    const char* name = strerrorname_np(e);
    return name ? name : "errno " + std::to_string(e);
}

double secs(Clock::duration d)
{
    return std::chrono::duration<double>(d).count();
}

uint32_t get32(std::span<const uint8_t> b, size_t off)
{
    uint32_t v = 0;
    std::memcpy(&v, b.data() + off, sizeof(v));
    return v;
}

uint64_t get64(std::span<const uint8_t> b, size_t off)
{
    uint64_t v = 0;
    std::memcpy(&v, b.data() + off, sizeof(v));
    return v;
}

void put32(Bytes& b, size_t off, uint32_t v)
{
    std::memcpy(b.data() + off, &v, sizeof(v));
}

Bytes random_bytes(size_t n, uint64_t seed)
{
    Bytes b(n);
    std::mt19937_64 rng(seed);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = rng();
        std::memcpy(b.data() + i, &w, sizeof(w));
    }
    for (; i < n; i++)
        b[i] = static_cast<uint8_t>(rng());
    return b;
}

// Payloads of kSealMin bytes or more are sealed: bytes 0..3 name the sending
// node, bytes 4..7 a sequence number or tag, and the last 8 bytes are the
// checksum of everything before them. Shorter payloads are compared
// byte for byte by whoever can predict them.
constexpr size_t kSealMin = 16;

void seal(Bytes& b)
{
    uint64_t h = checksum(std::span<const uint8_t>(b).first(b.size() - 8));
    std::memcpy(b.data() + b.size() - 8, &h, sizeof(h));
}

bool sealed_ok(std::span<const uint8_t> b)
{
    return b.size() >= kSealMin && get64(b, b.size() - 8) == checksum(b.first(b.size() - 8));
}

Bytes make_request(size_t len, uint32_t node, uint32_t tag, uint64_t seed)
{
    Bytes b = random_bytes(len, seed);
    if (len >= kSealMin) {
        put32(b, 0, node);
        put32(b, 4, tag);
        seal(b);
    }
    return b;
}

// A request as its server must see it: checksum intact, sent by src_node.
bool request_ok(const lite_rpc_in_t& in, std::span<const uint8_t> req)
{
    if (in.len != req.size())
        return false;
    return req.size() < kSealMin || (sealed_ok(req) && get32(req, 0) == in.src_node);
}

// What a server on @server_node answers: the request with every byte but
// the seal XORed with a key of that node, sealed again. The caller checks it
// came from the node it called and carries its own data.
Bytes transform(std::span<const uint8_t> req, uint32_t server_node)
{
    Bytes out(req.begin(), req.end());
    size_t body = out.size() >= kSealMin ? out.size() - 8 : out.size();
    auto key = static_cast<uint8_t>(0xA5U ^ (server_node * 0x3BU));
    uint64_t key8 = key * 0x0101010101010101ULL;
    size_t i = 0;
    for (; i + 8 <= body; i += 8) {
        uint64_t w = 0;
        std::memcpy(&w, out.data() + i, sizeof(w));
        w ^= key8;
        std::memcpy(out.data() + i, &w, sizeof(w));
    }
    for (; i < body; i++)
        out[i] ^= key;
    if (out.size() >= kSealMin)
        seal(out);
    return out;
}

bool reply_ok(std::span<const uint8_t> req, std::span<const uint8_t> reply, uint32_t server_node)
{
    Bytes want = transform(req, server_node);
    return reply.size() == want.size() && std::equal(reply.begin(), reply.end(), want.begin()) &&
           (reply.size() < kSealMin || sealed_ok(reply));
}

// A call through the C API: 0 or the errno. @reply gets the reply (cap
// bytes at most).
int call(lite_t* l, uint32_t node, uint32_t port, std::span<const uint8_t> req, Bytes& reply, size_t cap,
         uint32_t timeout_ms = kTimeoutMs)
{
    reply.resize(cap);
    size_t len = 0;
    int r = LITE_rpc_call(l, node, port, req.data(), req.size(), reply.data(), cap, &len, timeout_ms);
    reply.resize(r < 0 ? 0 : len);
    return r < 0 ? -r : 0;
}

// Failures seen by worker threads, reported by the test body.
class Failures
{
public:
    void add(std::string what)
    {
        std::lock_guard g(mu_);
        if (list_.size() < 8)
            list_.push_back(std::move(what));
        count_++;
    }
    [[nodiscard]] size_t count() const
    {
        std::lock_guard g(mu_);
        return count_;
    }
    [[nodiscard]] std::string text() const
    {
        std::lock_guard g(mu_);
        std::string s;
        for (const auto& f : list_)
            s += f + "\n";
        return s;
    }

private:
    mutable std::mutex mu_;
    std::vector<std::string> list_;
    size_t count_ = 0;
};

// Run body(0..n-1) on n threads and wait for all; exceptions become failures.
void parallel(size_t n, Failures& fails, const std::function<void(size_t)>& body)
{
    std::vector<std::thread> pool;
    pool.reserve(n);
    for (size_t w = 0; w < n; w++) {
        pool.emplace_back([&fails, &body, w] {
            try {
                body(w);
            } catch (const std::exception& e) {
                fails.add("worker " + std::to_string(w) + ": " + e.what());
            }
        });
    }
    for (auto& t : pool)
        t.join();
}

// A port served on one node by a pool of threads sharing one open file,
// until stopped. The handler gets each call and each one-way message
// (token 0) and returns the reply (ignored for messages). The receive buffer
// starts small and grows on EMSGSIZE, so large requests also take the
// "too small, retry" path.
class Server
{
public:
    using Handler = std::function<Bytes(const lite_rpc_in_t&, std::span<const uint8_t>)>;

    // @combined: each thread answers a call with the next receive
    // (LITE_rpc_reply_recv) instead of LITE_rpc_reply then LITE_rpc_recv.
    Server(uint32_t instance, uint32_t port, size_t threads, Handler handler, bool combined = false)
        : session_(lite::Session::open(instance)), port_(port), handler_(std::move(handler)), combined_(combined)
    {
        int r = LITE_rpc_register(session_.get(), port);
        if (r < 0)
            throw lite::Error(-r, "register port " + std::to_string(port));
        for (size_t t = 0; t < threads; t++)
            pool_.emplace_back([this] { loop(); });
    }
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    Server(Server&&) = delete;
    Server& operator=(Server&&) = delete;
    ~Server() { stop(); }

    void stop()
    {
        stop_ = true;
        for (auto& t : pool_) {
            if (t.joinable())
                t.join();
        }
    }
    [[nodiscard]] uint32_t node_id() const noexcept { return session_.node_id(); }

    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> messages{0};
    std::atomic<uint64_t> recv_errors{0};
    std::atomic<uint64_t> reply_errors{0};
    std::atomic<int> last_error{0};

private:
    void reply_done(int r)
    {
        calls++;
        if (r < 0) {
            reply_errors++;
            last_error = -r;
        }
    }

    void loop()
    {
        Bytes buf(size_t{64} * 1024);
        Bytes reply;
        uint64_t token = 0; // combined: the call whose reply goes next
        while (!stop_) {
            lite_rpc_in_t in{};
            int r = 0;
            if (combined_) {
                r = LITE_rpc_reply_recv(session_.get(), token, reply.data(), reply.size(), port_, buf.data(),
                                        buf.size(), 100, &in);
                if (token != 0)
                    reply_done(in.reply_status);
                token = 0;
            } else {
                r = LITE_rpc_recv(session_.get(), port_, buf.data(), buf.size(), 100, &in);
            }
            if (r == -ETIMEDOUT)
                continue;
            if (r == -EMSGSIZE) {
                buf.resize(in.len > buf.size() ? in.len : LITE_RPC_MAX);
                continue;
            }
            if (r < 0) {
                recv_errors++;
                last_error = -r;
                std::this_thread::sleep_for(20ms);
                continue;
            }
            reply = handler_(in, std::span<const uint8_t>(buf.data(), std::min<size_t>(in.len, buf.size())));
            if (in.token == 0) {
                messages++;
                continue;
            }
            if (combined_) {
                token = in.token;
            } else {
                reply_done(LITE_rpc_reply(session_.get(), in.token, reply.data(), reply.size()));
            }
        }
        if (token != 0)
            reply_done(LITE_rpc_reply(session_.get(), token, reply.data(), reply.size()));
    }

    lite::Session session_;
    uint32_t port_;
    Handler handler_;
    bool combined_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> pool_;
};

// The server of most tests: checks each request, answers transform().
Server::Handler echo(uint32_t node, std::atomic<uint64_t>& bad)
{
    return [node, &bad](const lite_rpc_in_t& in, std::span<const uint8_t> req) {
        if (!request_ok(in, req))
            bad++;
        return transform(req, node);
    };
}

// An open /dev/lite driven by raw ioctls, for what the C API never sends.
class RawFile
{
public:
    RawFile() : fd_(::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC)) {}
    explicit RawFile(uint32_t instance) : RawFile()
    {
        lite_attach at{};
        at.instance = instance;
        if (io(LITE_IOC_ATTACH, &at) == 0)
            node_ = at.node_id;
    }
    RawFile(const RawFile&) = delete;
    RawFile& operator=(const RawFile&) = delete;
    RawFile(RawFile&&) = delete;
    RawFile& operator=(RawFile&&) = delete;
    ~RawFile()
    {
        if (fd_ >= 0)
            ::close(fd_);
    }

    // 0 or the errno.
    int io(unsigned long cmd, void* arg) const { return ::ioctl(fd_, cmd, arg) < 0 ? errno : 0; }
    [[nodiscard]] bool ok() const noexcept { return fd_ >= 0; }
    [[nodiscard]] uint32_t node_id() const noexcept { return node_; }

    [[nodiscard]] int reg(uint32_t port, unsigned long cmd = LITE_IOC_RPC_REGISTER) const
    {
        lite_rpc_port p{};
        p.port = port;
        return io(cmd, &p);
    }
    // An LMR of @size bytes on @node with all rights; 0 on failure.
    [[nodiscard]] uint64_t alloc(uint64_t size, uint32_t node) const
    {
        lite_lmr_alloc a{};
        a.size = size;
        a.node_id = node;
        return io(LITE_IOC_LMR_ALLOC, &a) == 0 ? a.handle : 0;
    }

private:
    int fd_;
    uint32_t node_ = 0;
};

lite_rpc_call call_req(uint32_t node, uint32_t port, std::span<const uint8_t> req, std::span<uint8_t> reply,
                       uint32_t timeout_ms = kTimeoutMs)
{
    lite_rpc_call c{};
    c.node_id = node;
    c.port = port;
    c.req_ptr = reinterpret_cast<uintptr_t>(req.data());
    c.req_len = req.size();
    c.reply_ptr = reinterpret_cast<uintptr_t>(reply.data());
    c.reply_cap = reply.size();
    c.timeout_ms = timeout_ms;
    return c;
}

lite_rpc_recv recv_req(uint32_t port, std::span<uint8_t> buf, uint32_t timeout_ms = kTimeoutMs)
{
    lite_rpc_recv r{};
    r.port = port;
    r.timeout_ms = timeout_ms;
    r.buf_ptr = reinterpret_cast<uintptr_t>(buf.data());
    r.buf_cap = buf.size();
    return r;
}

lite_msg_send msg_req(uint32_t node, uint32_t port, std::span<const uint8_t> buf, uint32_t timeout_ms = kTimeoutMs)
{
    lite_msg_send m{};
    m.node_id = node;
    m.port = port;
    m.buf_ptr = reinterpret_cast<uintptr_t>(buf.data());
    m.len = buf.size();
    m.timeout_ms = timeout_ms;
    return m;
}

lite_rpc_reply reply_req(uint64_t token, std::span<const uint8_t> buf)
{
    lite_rpc_reply r{};
    r.token = token;
    r.buf_ptr = reinterpret_cast<uintptr_t>(buf.data());
    r.len = buf.size();
    return r;
}

using Nodes3 = ThreeNodes<kPort>;

class Rpc : public Nodes3
{
};
class Msg : public Nodes3
{
};
class Lock : public Nodes3
{
};
class Barrier : public Nodes3
{
};
class RpcUapi : public Nodes3
{
};

// ---------------------------------------------------------------- RPC

// 3 nodes x 4 client threads call servers on every node (node 0 = their
// own, and each node by id), 0 bytes to 1 MiB, odd sizes; requests and
// replies checksummed and checked on both ends.
// 3 nodes x 4 client threads call every node (and their own) with sizes
// from 0 to 1 MiB; every reply is checked, every call served once. Servers
// answer with LITE_rpc_reply (or, @combined, LITE_rpc_reply_recv).
void concurrent_calls(const std::vector<uint32_t>& inst, bool combined)
{
    constexpr uint32_t kRpcPort = 100;
    constexpr size_t kClients = 4, kRandom = 5;
    std::atomic<uint64_t> bad_requests{0};
    std::vector<std::unique_ptr<Server>> servers;
    for (size_t i = 0; i < 3; i++) {
        auto node = static_cast<uint32_t>(i + 1);
        servers.push_back(std::make_unique<Server>(inst[i], kRpcPort, 2, echo(node, bad_requests), combined));
        ASSERT_EQ(servers.back()->node_id(), node);
    }
    const std::vector<size_t> sizes = {0,    1,    7,     15,     16,     17,       1000, 4095,
                                       4096, 4097, 65537, 262143, 300001, kMiB - 1, kMiB};
    Failures fails;
    std::atomic<uint64_t> good{0};
    std::mutex slow_mu;
    Clock::duration slowest{};
    std::string slowest_call;
    parallel(3 * kClients, fails, [&](size_t w) {
        size_t i = w / kClients;
        auto self = static_cast<uint32_t>(i + 1);
        auto s = lite::Session::open(inst[i]);
        // Every thread its own order, so the big ones overlap only partly.
        std::vector<size_t> mine(sizes);
        std::rotate(mine.begin(), mine.begin() + static_cast<long>(w % mine.size()), mine.end());
        std::mt19937_64 rng(w);
        for (size_t k = 0; k < kRandom; k++)
            mine.push_back(rng() % (size_t{64} * 1024));
        Bytes reply;
        for (size_t k = 0; k < mine.size(); k++) {
            // Every node from every thread; one size to several nodes.
            auto target = static_cast<uint32_t>((k + w / 3) % 4); // 0: this node
            uint32_t server = target ? target : self;
            auto req = make_request(mine[k], self, static_cast<uint32_t>(w << 16 | k), w * 1000 + k);
            auto t0 = Clock::now();
            int e = call(s.get(), target, kRpcPort, req, reply, kMiB);
            auto took = Clock::now() - t0;
            {
                std::lock_guard g(slow_mu);
                if (took > slowest) {
                    slowest = took;
                    slowest_call = "node " + std::to_string(self) + " -> " + std::to_string(target) + ", " +
                                   std::to_string(mine[k]) + " bytes";
                }
            }
            if (e) {
                fails.add("node " + std::to_string(self) + " -> " + std::to_string(target) + ", " +
                          std::to_string(mine[k]) + " bytes: " + err(e));
                return;
            }
            if (!reply_ok(req, reply, server)) {
                fails.add("node " + std::to_string(self) + " -> " + std::to_string(target) + ", " +
                          std::to_string(mine[k]) + " bytes: wrong reply (" + std::to_string(reply.size()) + " bytes)");
                return;
            }
            good++;
        }
    });
    uint64_t served = 0;
    for (auto& srv : servers) {
        srv->stop();
        served += srv->calls;
        EXPECT_EQ(srv->recv_errors, 0u) << err(srv->last_error);
        EXPECT_EQ(srv->reply_errors, 0u) << err(srv->last_error);
        EXPECT_EQ(srv->messages, 0u);
    }
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(good, 3 * kClients * (sizes.size() + kRandom));
    EXPECT_EQ(served, good.load()) << "each call served exactly once";
    EXPECT_EQ(bad_requests, 0u) << "requests arrived corrupted or with the wrong src_node";
    std::cout << "[          ] slowest call " << secs(slowest) << " s (" << slowest_call << ")\n";
}

TEST_F(Rpc, ConcurrentCallsFromThreeNodesWithChecksums)
{
    concurrent_calls(inst_, false);
}

TEST_F(Rpc, CombinedReplyRecvFromThreeNodesWithChecksums)
{
    concurrent_calls(inst_, true);
}

// lite::Server with more threads than a file may hold calls
// (rpc_held_max 1, 4 threads, a handler that takes 20 ms): the threads
// that find the file full (EMFILE) wait and take the call later; every
// call is answered with its own checksummed echo, no thread ends.
TEST_F(Rpc, ServerThreadsBeyondTheHeldCapAnswerEveryCall)
{
    constexpr uint32_t kRpcPort = 110;
    constexpr size_t kClients = 6, kCalls = 5;
    ParamRestore keep("rpc_held_max");
    ASSERT_EQ(set_module_param("rpc_held_max", "1"), 0);
    auto s2 = lite::Session::open(inst_[1]);
    std::atomic<uint64_t> bad{0};
    lite::Server srv(
        s2, kRpcPort,
        [&](const lite::Incoming& in, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            if (in.src_node != 1)
                bad++;
            std::this_thread::sleep_for(20ms);
            reply.assign(req.begin(), req.end());
            return req.size();
        },
        4);
    Failures fails;
    parallel(kClients, fails, [&](size_t w) {
        auto s = lite::Session::open(inst_[0]);
        Bytes reply;
        for (size_t k = 0; k < kCalls; k++) {
            auto req = make_request(64 + 8 * k, 1, static_cast<uint32_t>(w << 16 | k), w * 100 + k);
            int e = call(s.get(), 2, kRpcPort, req, reply, 4096);
            if (e || reply != req) {
                fails.add("client " + std::to_string(w) + " call " + std::to_string(k) + ": " +
                          (e ? err(e) : "wrong reply"));
                return;
            }
        }
    });
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_TRUE(srv.running()) << "no server thread ended";
    EXPECT_FALSE(srv.error());
    auto st = srv.stats();
    srv.stop();
    EXPECT_EQ(srv.stats().calls, kClients * kCalls);
    EXPECT_EQ(st.handler_errors + st.reply_errors, 0u);
    EXPECT_EQ(bad, 0u);
}

// A node keeps the reply buffers of finished calls for later ones (the
// smallest that fits, 8 MiB in all): calls from 16 B to LITE_RPC_MAX of
// capacity, in an order where each takes a buffer a larger or smaller one
// left, get exactly their own reply (checked), never bytes of an earlier
// one; a reply larger than the capacity fails with EMSGSIZE and its length
// (the server's reply too), and the next call through the same buffer is
// whole.
TEST_F(Rpc, KeptReplyBuffersOfEveryCapacity)
{
    constexpr uint32_t kRpcPort = 101;
    constexpr size_t kMaxLen = size_t{256} * 1024; // the largest reply sent here
    std::atomic<uint64_t> bad{0};
    Server srv(inst_[1], kRpcPort, 1, echo(2, bad));
    auto s = lite::Session::open(inst_[0]);
    const std::vector<size_t> caps = {16,   4096, 65537, kMiB,         LITE_RPC_MAX, 4096,
                                      kMiB, 16,   65537, LITE_RPC_MAX, 100000,       kMiB + 1};
    Bytes reply;
    uint32_t tag = 0;
    uint64_t too_long = 0;
    for (size_t round = 0; round < 2; round++) {
        for (size_t cap : caps) {
            const size_t full = std::min(cap, kMaxLen);
            for (size_t len : {full, full / 2 + 1, size_t{0}}) {
                const uint32_t t = ++tag;
                auto req = make_request(len, 1, t, t);
                ASSERT_EQ(call(s.get(), 2, kRpcPort, req, reply, cap), 0) << "cap " << cap << ", " << len << " B";
                EXPECT_TRUE(reply_ok(req, reply, 2))
                    << "cap " << cap << ", " << len << " B: " << reply.size() << " B back";
            }
            if (cap >= kMaxLen)
                continue;
            const uint32_t t = ++tag;
            auto req = make_request(cap + 1, 1, t, t);
            reply.assign(cap, 0);
            size_t len = 0;
            EXPECT_EQ(LITE_rpc_call(s.get(), 2, kRpcPort, req.data(), req.size(), reply.data(), cap, &len, kTimeoutMs),
                      -EMSGSIZE)
                << "cap " << cap;
            EXPECT_EQ(len, cap + 1) << "the length the reply needed";
            too_long++;
        }
    }
    srv.stop();
    EXPECT_EQ(bad, 0u) << "requests arrived corrupted";
    EXPECT_EQ(srv.reply_errors, too_long) << "only the replies too long fail";
    EXPECT_EQ(srv.last_error, EMSGSIZE);
}

// Requests and replies of 4 KiB and more go from buffers the kernel keeps
// pinned, read in place by the NIC (the copy path takes the rest). One
// request buffer and one reply buffer, used again and again at offsets
// that cross pages and 32-page mapping steps, with new contents every
// call (a stale page would show), until the 8 MiB ring wrapped; then the
// request buffer mapped anew at the same address (its old pages must not
// be sent). Every request and reply is checked; both buffers stay pinned
// between calls (VmPin).
TEST_F(Rpc, RequestsAndRepliesFromKeptPages)
{
    constexpr uint32_t kRpcPort = 102;
    constexpr size_t kSpan = 2 * kMiB;
    auto unmap = [](uint8_t* p) { munmap(p, kSpan); };
    using Mapping = std::unique_ptr<uint8_t, decltype(unmap)>;
    auto map = [&] {
        void* p = mmap(nullptr, kSpan, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            throw std::system_error(errno, std::generic_category(), "mmap");
        return Mapping(static_cast<uint8_t*>(p), unmap);
    };
    Mapping req_map = map(), reply_map = map();
    uint8_t* req = req_map.get();
    uint8_t* rbuf = reply_map.get();
    const uint64_t pinned_at_start = vm_pin_kb();

    // The server (node 2) answers from rbuf, at an offset the request names.
    auto srv_session = lite::Session::open(inst_[1]);
    ASSERT_EQ(LITE_rpc_register(srv_session.get(), kRpcPort), 0);
    std::atomic<uint64_t> served{0}, bad{0};
    std::jthread server([&](const std::stop_token& stop) { // stopped and joined on any exit
        Bytes in_buf(kMiB);
        while (!stop.stop_requested()) {
            lite_rpc_in_t in{};
            int r = LITE_rpc_recv(srv_session.get(), kRpcPort, in_buf.data(), in_buf.size(), 100, &in);
            if (r == -ETIMEDOUT)
                continue;
            if (r < 0) {
                bad++;
                return;
            }
            auto got = std::span<const uint8_t>(in_buf).first(in.len);
            if (!request_ok(in, got))
                bad++;
            const size_t at = get32(got, 4) % 4096; // the tag picks the offset
            Bytes out = transform(got, 2);
            std::memcpy(rbuf + at, out.data(), out.size());
            if (LITE_rpc_reply(srv_session.get(), in.token, rbuf + at, out.size()) < 0)
                bad++;
            served++;
        }
    });

    auto s = lite::Session::open(inst_[0]);
    Bytes reply;
    // length, offset in the request buffer
    const std::vector<std::pair<size_t, size_t>> shapes = {
        {4096, 0},     {4097, 1}, {65536, 4095},    {size_t{32} * 4096, 0}, {size_t{32} * 4096 + 3, 4093},
        {300001, 100}, {kMiB, 0}, {kMiB - 4096, 7}, {777777, 4000},         {size_t{33} * 4096, 2048},
    };
    uint32_t tag = 0;
    size_t sent = 0;
    auto one = [&](size_t len, size_t off) {
        const uint32_t t = ++tag;
        Bytes r = make_request(len, 1, t, 1000 + t);
        std::memcpy(req + off, r.data(), len);
        reply.resize(len);
        size_t got = 0;
        int e = LITE_rpc_call(s.get(), 2, kRpcPort, req + off, len, reply.data(), len, &got, kTimeoutMs);
        reply.resize(e < 0 ? 0 : got);
        sent += len;
        return e == 0 && reply_ok(r, reply, 2);
    };
    for (size_t round = 0; sent < size_t{24} * kMiB; round++) {
        for (auto [len, off] : shapes)
            ASSERT_TRUE(one(len, off)) << "round " << round << ": " << len << " B at offset " << off;
    }
    EXPECT_GE(vm_pin_kb(), pinned_at_start + uint64_t{2} * 1024) << "the request and reply buffers stay pinned";

    // The same address, new pages: what goes out is what is there now.
    ASSERT_EQ(munmap(req, kSpan), 0);
    void* again = mmap(req, kSpan, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_EQ(again, static_cast<void*>(req));
    for (auto [len, off] : shapes)
        ASSERT_TRUE(one(len, off)) << "after the remap: " << len << " B at offset " << off;

    server.request_stop();
    server.join();
    EXPECT_EQ(bad, 0u) << "requests arrived corrupted or a reply failed";
    EXPECT_EQ(served, tag);
}

// A fast client against a slow server (one thread, 2 ms per request): 2000
// one-way messages, some of 200 KiB, plus calls from two nodes in between.
// Senders wait for ring space; nothing is lost, duplicated or reordered.
TEST_F(Rpc, FastClientSlowServerLosesNothing)
{
    constexpr uint32_t kRpcPort = 200, kMsgs = 2000;
    constexpr size_t kCalls = 20;
    std::mutex mu;
    std::vector<uint32_t> seen(kMsgs, 0);
    uint32_t next = 0;
    uint64_t out_of_order = 0, bad = 0;
    Server srv(inst_[1], kRpcPort, 1, [&](const lite_rpc_in_t& in, std::span<const uint8_t> req) {
        std::this_thread::sleep_for(2ms);
        std::lock_guard g(mu);
        if (!request_ok(in, req)) {
            bad++;
            return Bytes{};
        }
        if (in.token != 0)
            return transform(req, 2);
        uint32_t seq = req.size() >= kSealMin ? get32(req, 4) : kMsgs;
        if (in.src_node != 1 || seq >= kMsgs) {
            bad++;
            return Bytes{};
        }
        if (seen[seq]++ == 0 && seq != next)
            out_of_order++;
        next = seq + 1;
        return Bytes{};
    });
    Failures fails;
    std::atomic<uint64_t> calls_ok{0};
    parallel(3, fails, [&](size_t w) {
        if (w == 0) { // the flood, from node 1
            auto s = lite::Session::open(inst_[0]);
            for (uint32_t seq = 0; seq < kMsgs; seq++) {
                size_t len = kSealMin + (seq * size_t{7919}) % 4096;
                if (seq % 97 == 0)
                    len = 200 * 1024 + seq;
                auto m = make_request(len, 1, seq, seq);
                int r = LITE_msg_send(s.get(), 2, kRpcPort, m.data(), m.size(), 60000);
                if (r < 0) {
                    fails.add("message " + std::to_string(seq) + ": " + err(-r));
                    return;
                }
            }
            return;
        }
        // Calls from node 1 (sharing the ring with the flood) and node 3.
        size_t i = w == 1 ? 0 : 2;
        auto self = static_cast<uint32_t>(i + 1);
        auto s = lite::Session::open(inst_[i]);
        Bytes reply;
        for (size_t k = 0; k < kCalls; k++) {
            auto req = make_request((k * 3331) % 65536, self, static_cast<uint32_t>(k), 77 + k + w * 100);
            int e = call(s.get(), 2, kRpcPort, req, reply, 65536, 60000);
            if (e || !reply_ok(req, reply, 2)) {
                fails.add("call " + std::to_string(k) + " from node " + std::to_string(self) + ": " +
                          (e ? err(e) : "wrong reply"));
                return;
            }
            calls_ok++;
        }
    });
    EXPECT_TRUE(wait_until([&] { return srv.messages >= kMsgs; }, 90s))
        << srv.messages << " of " << kMsgs << " messages received";
    srv.stop();
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(calls_ok, 2 * kCalls);
    EXPECT_EQ(srv.calls, 2 * kCalls);
    EXPECT_EQ(srv.messages, kMsgs);
    EXPECT_EQ(srv.recv_errors, 0u) << err(srv.last_error);
    EXPECT_EQ(srv.reply_errors, 0u) << err(srv.last_error);
    std::lock_guard g(mu);
    EXPECT_EQ(bad, 0u) << "corrupted, misattributed or unknown messages";
    EXPECT_EQ(out_of_order, 0u);
    size_t missing = 0, dup = 0;
    for (auto n : seen) {
        missing += n == 0;
        dup += n > 1;
    }
    EXPECT_EQ(missing, 0u) << "messages lost";
    EXPECT_EQ(dup, 0u) << "messages received twice";
}

// A server process takes a call and exits without replying: the caller
// gets ECONNRESET well before its timeout, and the port is free again.
TEST_F(Rpc, ServerProcessExitResetsThePendingCall)
{
    constexpr uint32_t kRpcPort = 300;
    std::array<int, 2> ready{};
    ASSERT_EQ(pipe(ready.data()), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        lite_t* c = nullptr;
        if (LITE_open(inst_[1], &c) != 0)
            _exit(10);
        if (LITE_rpc_register(c, kRpcPort) != 0)
            _exit(11);
        char x = 'r';
        if (write(ready[1], &x, 1) != 1)
            _exit(12);
        std::array<uint8_t, 4096> buf{};
        lite_rpc_in_t in{};
        if (LITE_rpc_recv(c, kRpcPort, buf.data(), buf.size(), kTimeoutMs, &in) < 0 || in.token == 0)
            _exit(13);
        x = 'g';
        if (write(ready[1], &x, 1) != 1)
            _exit(14);
        _exit(0); // no reply, no close
    }
    close(ready[1]);
    char x = 0;
    if (read_byte_within(ready[0], &x, 60s) != 1) {
        kill_child(pid);
        FAIL() << "the child did not register in 60 s";
    }
    auto s = lite::Session::open(inst_[0]);
    auto req = make_request(1000, 1, 0, 3);
    Bytes reply;
    auto t0 = Clock::now();
    int e = call(s.get(), 2, kRpcPort, req, reply, 4096, kTimeoutMs);
    auto took = Clock::now() - t0;
    EXPECT_EQ(e, ECONNRESET) << err(e);
    EXPECT_LT(took, 10s) << "the reset took " << secs(took) << " s";
    if (e != ECONNRESET)
        kill(pid, SIGKILL);
    EXPECT_EQ(read_byte_within(ready[0], &x, 60s), 1);
    EXPECT_EQ(x, 'g') << "the child never received the call";
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
    close(ready[0]);

    auto s2 = lite::Session::open(inst_[1]);
    EXPECT_TRUE(wait_until([&] { return LITE_rpc_register(s2.get(), kRpcPort) == 0; }, 2s))
        << "the port stayed registered after its process exited";
    EXPECT_EQ(LITE_rpc_unregister(s2.get(), kRpcPort), 0);
    std::atomic<uint64_t> bad{0};
    Server again(inst_[1], kRpcPort, 1, echo(2, bad));
    EXPECT_EQ(call(s.get(), 2, kRpcPort, req, reply, 4096), 0);
    EXPECT_TRUE(reply_ok(req, reply, 2));
    EXPECT_EQ(bad, 0u);
}

// Unregistering fails the calls still queued for the port with ECONNRESET
// (later calls find nobody: ENOENT); a call the server already took can
// still be answered.
TEST_F(Rpc, UnregisterResetsQueuedCalls)
{
    constexpr uint32_t kRpcPort = 301;
    auto srv = lite::Session::open(inst_[2]);
    ASSERT_EQ(LITE_rpc_register(srv.get(), kRpcPort), 0);
    auto s = lite::Session::open(inst_[0]);
    auto taken = make_request(64, 1, 1, 5);
    auto queued = make_request(100, 1, 2, 6);
    std::array<int, 2> e = {-1, -1};
    std::array<Bytes, 2> reply;
    std::array<Clock::duration, 2> took{};
    auto caller = [&](size_t k, const Bytes& req) {
        auto t0 = Clock::now();
        e.at(k) = call(s.get(), 3, kRpcPort, req, reply.at(k), 4096, kTimeoutMs);
        took.at(k) = Clock::now() - t0;
    };
    std::thread first(caller, size_t{0}, std::cref(taken));
    Bytes buf(4096);
    lite_rpc_in_t in{};
    ASSERT_EQ(LITE_rpc_recv(srv.get(), kRpcPort, buf.data(), buf.size(), kTimeoutMs, &in), 0);
    EXPECT_NE(in.token, 0u);
    uint64_t token = in.token;
    std::thread second(caller, size_t{1}, std::cref(queued));
    // A receive with no room sees the second request queued and leaves it.
    in = {};
    EXPECT_EQ(LITE_rpc_recv(srv.get(), kRpcPort, nullptr, 0, kTimeoutMs, &in), -EMSGSIZE);
    EXPECT_EQ(in.len, queued.size());
    EXPECT_EQ(LITE_rpc_unregister(srv.get(), kRpcPort), 0);
    second.join();
    EXPECT_EQ(e[1], ECONNRESET) << err(e[1]);
    EXPECT_LT(took[1], 10s) << "the reset took " << secs(took[1]) << " s";

    auto answer = transform(std::span<const uint8_t>(buf.data(), taken.size()), 3);
    EXPECT_EQ(LITE_rpc_reply(srv.get(), token, answer.data(), answer.size()), 0) << "the taken call";
    first.join();
    EXPECT_EQ(e[0], 0) << err(e[0]);
    EXPECT_TRUE(reply_ok(taken, reply[0], 3));
    Bytes r;
    EXPECT_EQ(call(s.get(), 3, kRpcPort, queued, r, 4096), ENOENT) << "nobody serves it now";
}

// The server's whole node goes down while it holds a call: the caller gets
// ECONNRESET or ENOTCONN before its timeout; the node is then unknown.
TEST_F(Rpc, NodeGoingDownFailsThePendingCall)
{
    constexpr uint32_t kRpcPort = 400;
    std::atomic<bool> got{false}, release{false};
    auto srv = std::make_unique<Server>(inst_[2], kRpcPort, 1, [&](const lite_rpc_in_t&, std::span<const uint8_t> req) {
        got = true;
        wait_until([&] { return release.load(); }, 60s);
        return transform(req, 3);
    });
    auto s = lite::Session::open(inst_[0]);
    auto req = make_request(5000, 1, 0, 6);
    int e = -1;
    Clock::duration took{};
    std::thread caller([&] {
        Bytes reply;
        auto t0 = Clock::now();
        e = call(s.get(), 3, kRpcPort, req, reply, 8192, kTimeoutMs);
        took = Clock::now() - t0;
    });
    bool received = wait_until([&] { return got.load(); }, 20s);
    EXPECT_TRUE(received) << "the server never got the call";
    if (received)
        dev_->down(inst_[2]);
    caller.join();
    release = true;
    srv.reset();
    EXPECT_TRUE(e == ECONNRESET || e == ENOTCONN) << err(e);
    EXPECT_LT(took, std::chrono::milliseconds(kTimeoutMs)) << "the call only ended by timing out";
    std::cout << "[          ] the call failed " << secs(took) << " s after it started (" << err(e) << ")\n";

    const std::vector<uint32_t> two = {1, 2};
    ASSERT_TRUE(wait_until([&] { return member_ids(*dev_, inst_[0]) == two; }, 10s));
    Bytes reply;
    EXPECT_EQ(call(s.get(), 3, kRpcPort, req, reply, 8192, 5000), ENOTCONN) << "no such node";
    EXPECT_EQ(-LITE_msg_send(s.get(), 3, kRpcPort, req.data(), req.size(), 5000), ENOTCONN);
}

// ---------------------------------------------------------------- messages

// One sender per node, 500 messages each to one port on node 1: every
// sender's messages arrive complete and in order, with its node as src_node.
TEST_F(Msg, PerSenderOrderFromThreeNodes)
{
    constexpr uint32_t kRpcPort = 500, kMsgs = 500;
    std::mutex mu;
    std::array<uint32_t, 4> next{};
    uint64_t bad = 0, out_of_order = 0;
    Server srv(inst_[0], kRpcPort, 1, [&](const lite_rpc_in_t& in, std::span<const uint8_t> req) {
        std::lock_guard g(mu);
        if (in.token != 0 || !request_ok(in, req) || req.size() < kSealMin || in.src_node < 1 || in.src_node > 3) {
            bad++;
            return Bytes{};
        }
        if (get32(req, 4) != next[in.src_node])
            out_of_order++;
        next[in.src_node] = get32(req, 4) + 1;
        return Bytes{};
    });
    Failures fails;
    parallel(3, fails, [&](size_t i) {
        auto s = lite::Session::open(inst_[i]);
        auto self = static_cast<uint32_t>(i + 1);
        for (uint32_t seq = 0; seq < kMsgs; seq++) {
            auto m = make_request(kSealMin + (seq * size_t{37} + i * 11) % 1000, self, seq, self * 100000 + seq);
            int r = LITE_msg_send(s.get(), 1, kRpcPort, m.data(), m.size(), kTimeoutMs);
            if (r < 0) {
                fails.add("node " + std::to_string(self) + " message " + std::to_string(seq) + ": " + err(-r));
                return;
            }
        }
    });
    EXPECT_TRUE(wait_until([&] { return srv.messages >= uint64_t{3} * kMsgs; }, 60s)) << srv.messages << " received";
    srv.stop();
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(srv.messages, uint64_t{3} * kMsgs);
    EXPECT_EQ(srv.recv_errors, 0u) << err(srv.last_error);
    std::lock_guard g(mu);
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(out_of_order, 0u);
    for (uint32_t n = 1; n <= 3; n++)
        EXPECT_EQ(next[n], kMsgs) << "from node " << n;
}

// Several threads of two nodes post to one peer at once (each its own open
// file, all through their node's one ring to the peer; they copy at once
// and post in ring order): every thread's messages arrive complete and in
// its order, also with messages between them whose data faults part way
// (longer than one staging step: EFAULT, and the ring is not disturbed).
TEST_F(Msg, ConcurrentPostersKeepPerSenderOrder)
{
    constexpr uint32_t kRpcPort = 510, kThreads = 4, kMsgs = 200;
    std::mutex mu;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> next; // (node, thread) -> seq
    uint64_t bad = 0, out_of_order = 0;
    Server srv(inst_[0], kRpcPort, 1, [&](const lite_rpc_in_t& in, std::span<const uint8_t> req) {
        std::lock_guard g(mu);
        if (in.token != 0 || !request_ok(in, req) || req.size() < kSealMin || in.src_node < 2 || in.src_node > 3) {
            bad++;
            return Bytes{};
        }
        const uint32_t id = get32(req, 4);
        uint32_t& want = next[{in.src_node, id >> 16}];
        if ((id & 0xffff) != want)
            out_of_order++;
        want = (id & 0xffff) + 1;
        return Bytes{};
    });
    constexpr size_t kFaultyLen = 3 * kMiB;
    void* map = mmap(nullptr, kFaultyLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    std::memset(map, 0x33, kFaultyLen);
    ASSERT_EQ(mprotect(static_cast<uint8_t*>(map) + 2 * kMiB, kMiB, PROT_NONE), 0);
    const void* faulty = map;
    Failures fails;
    parallel(size_t{2} * kThreads, fails, [&](size_t w) {
        size_t i = 1 + w / kThreads; // nodes 2 and 3
        auto s = lite::Session::open(inst_[i]);
        auto self = static_cast<uint32_t>(i + 1);
        auto thread = static_cast<uint32_t>(w % kThreads);
        for (uint32_t seq = 0; seq < kMsgs; seq++) {
            auto m =
                make_request(kSealMin + (seq * size_t{53} + w * 7) % 600, self, thread << 16 | seq, w * 100000 + seq);
            int r = LITE_msg_send(s.get(), 1, kRpcPort, m.data(), m.size(), kTimeoutMs);
            if (r < 0) {
                fails.add("node " + std::to_string(self) + " thread " + std::to_string(thread) + " message " +
                          std::to_string(seq) + ": " + err(-r));
                return;
            }
            // Now and then a message longer than one staging step whose
            // last MiB faults: EFAULT, nothing of it in the ring.
            if (thread == 0 && seq % 40 == 20) {
                r = LITE_msg_send(s.get(), 1, kRpcPort, faulty, kFaultyLen, kTimeoutMs);
                if (r != -EFAULT)
                    fails.add("faulting message: " + (r < 0 ? err(-r) : std::string("sent")));
            }
        }
    });
    const uint64_t total = uint64_t{2} * kThreads * kMsgs;
    EXPECT_TRUE(wait_until([&] { return srv.messages >= total; }, 60s)) << srv.messages << " received";
    srv.stop();
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(srv.messages, total);
    EXPECT_EQ(srv.recv_errors, 0u) << err(srv.last_error);
    std::lock_guard g(mu);
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(out_of_order, 0u);
    EXPECT_EQ(next.size(), size_t{2} * kThreads);
    for (const auto& [who, n] : next)
        EXPECT_EQ(n, kMsgs) << "from node " << who.first << " thread " << who.second;
    munmap(map, kFaultyLen);
}

// A message to a port nobody serves is dropped at the receiver (sending it
// succeeds); it is not delivered to whoever registers the port later.
TEST_F(Msg, ToAPortNobodyServesIsDropped)
{
    constexpr uint32_t kRpcPort = 600, kOtherPort = 601;
    auto s = lite::Session::open(inst_[0]);
    auto lost = make_request(64, 1, 0, 8);
    EXPECT_EQ(LITE_msg_send(s.get(), 2, kRpcPort, lost.data(), lost.size(), kTimeoutMs), 0);
    {
        // A call from the same node after it: node 2 has seen the message.
        std::atomic<uint64_t> bad{0};
        Server other(inst_[1], kOtherPort, 1, echo(2, bad));
        Bytes reply;
        auto req = make_request(32, 1, 0, 9);
        EXPECT_EQ(call(s.get(), 2, kOtherPort, req, reply, 64), 0);
        std::this_thread::sleep_for(200ms);
    }
    std::mutex mu;
    std::vector<uint32_t> got;
    Server srv(inst_[1], kRpcPort, 1, [&](const lite_rpc_in_t& in, std::span<const uint8_t> req) {
        std::lock_guard g(mu);
        got.push_back(request_ok(in, req) && req.size() >= kSealMin ? get32(req, 4) : 999);
        return Bytes{};
    });
    auto kept = make_request(64, 1, 1, 10);
    EXPECT_EQ(LITE_msg_send(s.get(), 2, kRpcPort, kept.data(), kept.size(), kTimeoutMs), 0);
    EXPECT_TRUE(wait_until([&] { return srv.messages >= 1; }, 10s));
    std::this_thread::sleep_for(300ms);
    srv.stop();
    std::lock_guard g(mu);
    EXPECT_EQ(got, std::vector<uint32_t>{1}) << "only the message sent after registering";
}

// A receiver that does not drain: 1 MiB messages fill the ring until a send
// times out (ETIMEDOUT); the timed-out one is not delivered, the others are,
// in order, and sending works again once the receiver drained the ring.
TEST_F(Msg, SendTimesOutWhenTheReceiverDoesNotDrain)
{
    constexpr uint32_t kRpcPort = 700;
    constexpr int kMaxSends = 64;
    auto srv = lite::Session::open(inst_[1]);
    ASSERT_EQ(LITE_rpc_register(srv.get(), kRpcPort), 0);
    auto s = lite::Session::open(inst_[0]);
    int sent = 0, timed_out = 0, other = 0;
    for (int k = 0; k < kMaxSends && timed_out == 0 && other == 0; k++) {
        auto m = make_request(kMiB, 1, static_cast<uint32_t>(k), 1000 + static_cast<uint64_t>(k));
        int r = LITE_msg_send(s.get(), 2, kRpcPort, m.data(), m.size(), 2000);
        if (r == 0) {
            sent++;
        } else if (r == -ETIMEDOUT) {
            timed_out++;
        } else {
            other = -r;
        }
    }
    EXPECT_EQ(other, 0) << err(other);
    ASSERT_EQ(timed_out, 1) << sent << " MiB sent to a receiver that never drains, none timed out";
    Bytes buf(kMiB);
    for (int k = 0; k < sent; k++) {
        lite_rpc_in_t in{};
        int r = LITE_rpc_recv(srv.get(), kRpcPort, buf.data(), buf.size(), 10000, &in);
        ASSERT_GE(r, 0) << "message " << k << ": " << err(-r);
        EXPECT_EQ(in.token, 0u);
        EXPECT_EQ(in.src_node, 1u);
        ASSERT_EQ(in.len, kMiB);
        EXPECT_TRUE(sealed_ok(buf));
        EXPECT_EQ(get32(buf, 4), static_cast<uint32_t>(k)) << "in order";
    }
    lite_rpc_in_t in{};
    EXPECT_EQ(-LITE_rpc_recv(srv.get(), kRpcPort, buf.data(), buf.size(), 1000, &in), ETIMEDOUT)
        << "the message that timed out was delivered after all";
    auto m = make_request(kMiB, 1, 4242, 5);
    EXPECT_EQ(LITE_msg_send(s.get(), 2, kRpcPort, m.data(), m.size(), kTimeoutMs), 0) << "ring space is back";
    in = {};
    ASSERT_GE(LITE_rpc_recv(srv.get(), kRpcPort, buf.data(), buf.size(), 10000, &in), 0);
    EXPECT_EQ(get32(buf, 4), 4242u);
}

// ---------------------------------------------------------------- locks

// 3 nodes x 4 threads, each its own open file: lock, read the counter, add
// one, write it, unlock. No lost update, nobody inside together, and the
// lock is free (its word zero) at the end.
TEST_F(Lock, MutualExclusionFromThreeNodes)
{
    constexpr size_t kThreads = 4, kIters = 25;
    auto owner = lite::Session::open(inst_[0]);
    auto l = owner.alloc(64, 2);
    l.share("rpc-test-mutex", LITE_PERM_ALL);
    std::atomic<int> inside{0}, overlaps{0};
    Failures fails;
    parallel(3 * kThreads, fails, [&](size_t w) {
        auto s = lite::Session::open(inst_[w / kThreads]);
        auto m = s.map("rpc-test-mutex");
        for (size_t k = 0; k < kIters; k++) {
            int r = LITE_lock(s.get(), m.handle(), 0, 60000);
            if (r < 0) {
                fails.add("lock: " + err(-r));
                return;
            }
            if (inside.fetch_add(1) != 0)
                overlaps++;
            uint64_t v = 0;
            m.read(8, std::span<uint64_t>(&v, 1));
            v++;
            m.write(8, std::span<const uint64_t>(&v, 1));
            inside.fetch_sub(1);
            r = LITE_unlock(s.get(), m.handle(), 0);
            if (r < 0) {
                fails.add("unlock: " + err(-r));
                return;
            }
        }
    });
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(overlaps, 0) << "two holders at once";
    std::array<uint64_t, 2> words{};
    l.read(0, std::span<uint64_t>(words));
    EXPECT_EQ(words[1], 3 * kThreads * kIters) << "lost updates";
    EXPECT_EQ(words[0], 0u) << "a free lock's word is zero again";
    EXPECT_EQ(LITE_trylock(owner.get(), l.handle(), 0), 0) << "the lock is free at the end";
    EXPECT_EQ(LITE_unlock(owner.get(), l.handle(), 0), 0);
}

// Try-lock, re-lock, unlock by a non-holder, timeouts, independent words,
// and the release of a lock whose holder closes its file.
TEST_F(Lock, HolderRulesAndReleaseOnClose)
{
    auto owner = lite::Session::open(inst_[0]);
    auto l = owner.alloc(4096, 3);
    l.share("rpc-test-lock", LITE_PERM_ALL);
    lite_t* raw = nullptr;
    ASSERT_EQ(LITE_open(inst_[1], &raw), 0);
    std::unique_ptr<lite_t, decltype(&LITE_close)> holder(raw, &LITE_close);
    lite_t* a = holder.get();
    lite_lmr_t ah = 0;
    uint64_t size = 0;
    ASSERT_EQ(LITE_map(a, "rpc-test-lock", 0, &ah, &size), 0);
    auto b = lite::Session::open(inst_[2]);
    auto bm = b.map("rpc-test-lock");
    lite_lmr_t bh = bm.handle();

    EXPECT_EQ(LITE_trylock(a, ah, 0), 0) << "free: taken";
    EXPECT_EQ(LITE_trylock(b.get(), bh, 0), -EAGAIN) << "held by a";
    EXPECT_EQ(LITE_lock(a, ah, 0, 1000), -EDEADLK) << "a holds it already";
    EXPECT_EQ(LITE_trylock(a, ah, 0), -EDEADLK) << "a holds it already";
    EXPECT_EQ(LITE_unlock(b.get(), bh, 0), -EPERM) << "b does not hold it";
    EXPECT_EQ(LITE_unlock(owner.get(), l.handle(), 0), -EPERM) << "nor does the LMR's owner";
    EXPECT_EQ(LITE_unlock(owner.get(), l.handle(), 8), -EPERM) << "never locked";
    auto t0 = Clock::now();
    EXPECT_EQ(LITE_lock(b.get(), bh, 0, 500), -ETIMEDOUT);
    auto took = Clock::now() - t0;
    EXPECT_GE(took, 450ms);
    EXPECT_LT(took, 10s);
    EXPECT_EQ(LITE_trylock(b.get(), bh, 8), 0) << "another word, another lock";
    EXPECT_EQ(LITE_unlock(b.get(), bh, 8), 0);
    EXPECT_EQ(LITE_unlock(b.get(), bh, 8), -EPERM) << "unlocked twice";

    // b waits; a's file closes while holding the lock: b gets it.
    int got = 1;
    Clock::duration waited{};
    std::thread waiter([&] {
        auto w0 = Clock::now();
        got = LITE_lock(b.get(), bh, 0, kTimeoutMs);
        waited = Clock::now() - w0;
    });
    std::this_thread::sleep_for(300ms);
    holder.reset(); // close a's file
    waiter.join();
    EXPECT_EQ(got, 0) << err(-got);
    EXPECT_LT(waited, 10s);
    EXPECT_EQ(LITE_unlock(b.get(), bh, 0), 0);
    uint64_t word = 1;
    l.read(0, std::span<uint64_t>(&word, 1));
    EXPECT_EQ(word, 0u) << "free again: the word is zero";
    EXPECT_EQ(LITE_trylock(owner.get(), l.handle(), 0), 0) << "the owner can lock it too";
    EXPECT_EQ(LITE_unlock(owner.get(), l.handle(), 0), 0);
}

// Waiters are served in arrival order (they arrive 500 ms apart).
TEST_F(Lock, GrantedInArrivalOrder)
{
    auto owner = lite::Session::open(inst_[0]);
    auto l = owner.alloc(64, 2);
    l.share("rpc-test-fifo", LITE_PERM_ALL);
    ASSERT_EQ(LITE_lock(owner.get(), l.handle(), 0, kTimeoutMs), 0);
    std::mutex mu;
    std::vector<size_t> order;
    Failures fails;
    std::vector<std::thread> waiters;
    for (size_t w = 0; w < 4; w++) {
        waiters.emplace_back([&, w] {
            try {
                auto s = lite::Session::open(inst_[(w + 1) % 3]);
                auto m = s.map("rpc-test-fifo");
                int r = LITE_lock(s.get(), m.handle(), 0, 60000);
                if (r < 0) {
                    fails.add("waiter " + std::to_string(w) + ": " + err(-r));
                    return;
                }
                {
                    std::lock_guard g(mu);
                    order.push_back(w);
                }
                std::this_thread::sleep_for(20ms);
                r = LITE_unlock(s.get(), m.handle(), 0);
                if (r < 0)
                    fails.add("waiter " + std::to_string(w) + " unlock: " + err(-r));
            } catch (const std::exception& e) {
                fails.add(e.what());
            }
        });
        std::this_thread::sleep_for(500ms);
    }
    EXPECT_EQ(LITE_unlock(owner.get(), l.handle(), 0), 0);
    for (auto& t : waiters)
        t.join();
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST_F(Lock, Rejections)
{
    auto owner = lite::Session::open(inst_[1]);
    auto l = owner.alloc(4096, 1);
    l.share("rpc-test-lock-rw", LITE_PERM_ALL);
    lite_t* c = owner.get();
    lite_lmr_t h = l.handle();
    EXPECT_EQ(LITE_lock(c, h + 1000, 0, 100), -EBADF) << "no such handle";
    EXPECT_EQ(LITE_trylock(c, h + 1000, 0), -EBADF);
    EXPECT_EQ(LITE_unlock(c, h + 1000, 0), -EBADF);
    EXPECT_EQ(LITE_lock(c, h, 4, 100), -EINVAL) << "not 8-byte aligned";
    EXPECT_EQ(LITE_trylock(c, h, 12), -EINVAL);
    EXPECT_EQ(LITE_lock(c, h, 4096, 100), -ERANGE) << "past the end";
    EXPECT_EQ(LITE_trylock(c, h, 4096 + 8), -ERANGE);
    auto other = lite::Session::open(inst_[2]);
    auto rw = other.map("rpc-test-lock-rw", LITE_PERM_READ | LITE_PERM_WRITE);
    EXPECT_EQ(LITE_lock(other.get(), rw.handle(), 0, 100), -EACCES) << "mapping without LITE_PERM_ATOMIC";
    EXPECT_EQ(LITE_trylock(other.get(), rw.handle(), 0), -EACCES);
    EXPECT_EQ(LITE_trylock(c, h, 4088), 0) << "the last word is in range";
    EXPECT_EQ(LITE_unlock(c, h, 4088), 0);
}

// ---------------------------------------------------------------- barriers

// 9 participants (3 per node), 3 generations on one barrier word. Each adds
// one to this generation's arrival counter, waits, then reads the counter:
// it must already be 9 (nobody left early). One straggler per generation.
TEST_F(Barrier, NobodyLeavesEarlyThreeGenerations)
{
    constexpr size_t kPerNode = 3, kN = 3 * kPerNode, kGens = 3;
    auto owner = lite::Session::open(inst_[0]);
    auto l = owner.alloc(64, 3);
    l.share("rpc-test-barrier", LITE_PERM_ALL);
    std::atomic<int> early{0};
    Failures fails;
    parallel(kN, fails, [&](size_t w) {
        auto s = lite::Session::open(inst_[w / kPerNode]);
        auto m = s.map("rpc-test-barrier");
        for (size_t g = 0; g < kGens; g++) {
            if (w == (g * 4) % kN)
                std::this_thread::sleep_for(300ms); // the straggler
            uint64_t off = 8 * (g + 1);
            m.fetch_add(off, 1);
            int r = LITE_barrier(s.get(), m.handle(), 0, kN, 60000);
            if (r < 0) {
                fails.add("generation " + std::to_string(g) + ": " + err(-r));
                return;
            }
            uint64_t arrived = 0;
            m.read(off, std::span<uint64_t>(&arrived, 1));
            if (arrived != kN) {
                early++;
                fails.add("generation " + std::to_string(g) + ": released with " + std::to_string(arrived) +
                          " arrived");
            }
        }
    });
    EXPECT_EQ(fails.count(), 0u) << fails.text();
    EXPECT_EQ(early, 0);
    std::array<uint64_t, kGens> arrived{};
    l.read(8, std::span<uint64_t>(arrived));
    for (auto a : arrived)
        EXPECT_EQ(a, kN);
}

TEST_F(Barrier, Rejections)
{
    auto owner = lite::Session::open(inst_[2]);
    auto l = owner.alloc(4096, 2);
    l.share("rpc-test-barrier-rw", LITE_PERM_ALL);
    lite_t* c = owner.get();
    lite_lmr_t h = l.handle();
    EXPECT_EQ(LITE_barrier(c, h, 0, 0, 100), -EINVAL) << "count 0";
    EXPECT_EQ(LITE_barrier(c, h, 0, 65536, 100), -EINVAL) << "count above 65535";
    EXPECT_EQ(LITE_barrier(c, h, 4, 2, 100), -EINVAL) << "not 8-byte aligned";
    EXPECT_EQ(LITE_barrier(c, h, 4096, 2, 100), -ERANGE) << "past the end";
    EXPECT_EQ(LITE_barrier(c, h + 1000, 0, 2, 100), -EBADF);
    auto other = lite::Session::open(inst_[0]);
    auto rw = other.map("rpc-test-barrier-rw", LITE_PERM_READ | LITE_PERM_WRITE);
    EXPECT_EQ(LITE_barrier(other.get(), rw.handle(), 0, 2, 100), -EACCES);

    EXPECT_EQ(LITE_barrier(c, h, 16, 1, kTimeoutMs), 0) << "alone: released at once";
    EXPECT_EQ(LITE_barrier(c, h, 16, 1, kTimeoutMs), 0) << "and again";
    auto t0 = Clock::now();
    EXPECT_EQ(LITE_barrier(c, h, 24, 2, 400), -ETIMEDOUT) << "one of two";
    EXPECT_GE(Clock::now() - t0, 350ms);
    EXPECT_EQ(LITE_barrier(c, h, 32, 65535, 200), -ETIMEDOUT) << "the largest count is valid";

    // One participant waits for 3; another arriving for 2 disagrees.
    int parked = 1;
    std::thread t([&] { parked = LITE_barrier(c, h, 40, 3, 2000); });
    std::this_thread::sleep_for(500ms);
    auto third = lite::Session::open(inst_[1]);
    auto all = third.map("rpc-test-barrier-rw");
    EXPECT_EQ(LITE_barrier(third.get(), all.handle(), 40, 2, 1000), -EINVAL) << "count differs from the waiter's";
    t.join();
    EXPECT_EQ(parked, -ETIMEDOUT);
}

// ---------------------------------------------------------------- uapi

// Raw ioctls: flags, reserved and output fields, and each errno of
// REGISTER and UNREGISTER.
TEST_F(RpcUapi, RegisterAndUnregister)
{
    RawFile loose;
    ASSERT_TRUE(loose.ok());
    EXPECT_EQ(loose.reg(42), EBADFD) << "not attached";

    RawFile a(inst_[1]), b(inst_[1]), c(inst_[2]);
    ASSERT_EQ(a.node_id(), 2u);
    ASSERT_EQ(c.node_id(), 3u);
    lite_rpc_port p{};
    EXPECT_EQ(a.io(LITE_IOC_RPC_REGISTER, &p), EINVAL) << "port 0";
    p.port = 42;
    p.flags = 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_REGISTER, &p), EINVAL) << "flags";
    p.flags = 0;
    p.reserved[1] = 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_REGISTER, &p), EINVAL) << "reserved";
    p.reserved[1] = 0;
    EXPECT_EQ(a.io(LITE_IOC_RPC_REGISTER, &p), 0);
    EXPECT_EQ(a.reg(42), EADDRINUSE) << "twice by one file";
    EXPECT_EQ(b.reg(42), EADDRINUSE) << "by another file on the node";
    EXPECT_EQ(c.reg(42), 0) << "ports are per node";
    EXPECT_EQ(a.reg(43), 0) << "a file may serve several ports";

    p = {};
    p.port = 42;
    p.flags = 2;
    EXPECT_EQ(a.io(LITE_IOC_RPC_UNREGISTER, &p), EINVAL) << "flags";
    p.flags = 0;
    p.reserved[0] = 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_UNREGISTER, &p), EINVAL) << "reserved";
    EXPECT_EQ(b.reg(42, LITE_IOC_RPC_UNREGISTER), ENOENT) << "b does not serve it";
    EXPECT_EQ(b.reg(44, LITE_IOC_RPC_UNREGISTER), ENOENT) << "nobody serves it";
    EXPECT_EQ(a.reg(42, LITE_IOC_RPC_UNREGISTER), 0);
    EXPECT_EQ(a.reg(42, LITE_IOC_RPC_UNREGISTER), ENOENT) << "twice";
    EXPECT_EQ(b.reg(42), 0) << "free again";
    EXPECT_EQ(a.reg(43, LITE_IOC_RPC_UNREGISTER), 0);
}

TEST_F(RpcUapi, CallRejections)
{
    RawFile loose, a(inst_[0]), srv(inst_[1]);
    ASSERT_EQ(a.node_id(), 1u);
    ASSERT_EQ(srv.reg(50), 0);
    Bytes req(64, 1), reply(64);
    auto c = call_req(2, 50, req, reply, 300);
    EXPECT_EQ(loose.io(LITE_IOC_RPC_CALL, &c), EBADFD) << "not attached";
    c.flags = 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EINVAL) << "flags";
    c = call_req(2, 50, req, reply, 300);
    c.reserved[1] = 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EINVAL) << "reserved";
    c = call_req(2, 0, req, reply, 300);
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EINVAL) << "port 0";
    c = call_req(2, 50, req, reply, 300);
    c.reply_len = 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EINVAL) << "output field not zero";
    c = call_req(LITE_MAX_NODES + 1, 50, req, reply, 300);
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EINVAL) << "node id above LITE_MAX_NODES";
    c = call_req(2, 50, req, reply, 60001);
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EINVAL) << "timeout above 60 s";
    c = call_req(2, 50, req, reply, 300);
    c.req_len = uint64_t{LITE_RPC_MAX} + 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EMSGSIZE) << "request too long";
    c = call_req(2, 50, req, reply, 300);
    c.reply_cap = uint64_t{LITE_RPC_MAX} + 1;
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EMSGSIZE) << "reply capacity too large";
    c = call_req(2, 50, req, reply, 300);
    c.req_ptr = 8;
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), EFAULT) << "bad request buffer";
    c = call_req(2, 51, req, reply, 300);
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), ENOENT) << "nobody serves port 51 on node 2";
    c = call_req(3, 50, req, reply, 300);
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), ENOENT) << "port 50 is served on node 2, not 3";
    c = call_req(77, 50, req, reply, 300);
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), ENOTCONN) << "no such node";
    // srv registered but never receives.
    c = call_req(2, 50, req, reply, 300);
    auto t0 = Clock::now();
    EXPECT_EQ(a.io(LITE_IOC_RPC_CALL, &c), ETIMEDOUT);
    auto took = Clock::now() - t0;
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 10s);
}

// RECV and REPLY, with a caller thread on node 1 and servers on node 2.
TEST_F(RpcUapi, RecvAndReplyRejections)
{
    constexpr uint32_t kRpcPort = 60;
    RawFile a(inst_[0]), srv(inst_[1]), other(inst_[1]);
    ASSERT_EQ(srv.reg(kRpcPort), 0);
    ASSERT_EQ(other.reg(kRpcPort + 1), 0);
    Bytes buf(4096);

    auto r = recv_req(kRpcPort, buf, 200);
    r.flags = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), EINVAL) << "flags";
    r = recv_req(kRpcPort, buf, 200);
    r.reserved[0] = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), EINVAL) << "reserved";
    r = recv_req(kRpcPort, buf, 200);
    r.token = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), EINVAL) << "output field not zero";
    r = recv_req(kRpcPort, buf, 200);
    r.src_node = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), EINVAL) << "output field not zero";
    r = recv_req(kRpcPort, buf, 200);
    EXPECT_EQ(other.io(LITE_IOC_RPC_RECV, &r), ENOENT) << "another file's port";
    r = recv_req(kRpcPort + 2, buf, 200);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), ENOENT) << "nobody's port";
    r = recv_req(kRpcPort, buf, 300);
    auto t0 = Clock::now();
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), ETIMEDOUT) << "nothing came";
    EXPECT_GE(Clock::now() - t0, 250ms);

    auto rp = reply_req(12345, buf);
    rp.flags = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), EINVAL) << "flags";
    rp = reply_req(12345, buf);
    rp.reserved[2] = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), EINVAL) << "reserved";
    rp = reply_req(12345, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), ENOENT) << "unknown token";

    // A call of 1000 bytes with room for 100 in reply.
    auto req = make_request(1000, 1, 7, 11);
    Bytes small(100);
    lite_rpc_call c1 = call_req(2, kRpcPort, req, small);
    int c1_err = -1;
    std::thread caller([&] { c1_err = a.io(LITE_IOC_RPC_CALL, &c1); });
    r = recv_req(kRpcPort, std::span<uint8_t>(buf).first(10));
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), EMSGSIZE) << "buffer too small";
    EXPECT_EQ(r.len, 1000u) << "the length it needs";
    r = recv_req(kRpcPort, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0) << "the request stayed queued";
    EXPECT_EQ(r.len, 1000u);
    EXPECT_NE(r.token, 0u) << "a call";
    EXPECT_EQ(r.src_node, 1u);
    EXPECT_TRUE(std::equal(req.begin(), req.end(), buf.begin()));
    Bytes big(101, 0x33);
    rp = reply_req(r.token, big);
    EXPECT_EQ(other.io(LITE_IOC_RPC_REPLY, &rp), ENOENT) << "another file's token";
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), EMSGSIZE) << "longer than the caller's reply_cap";
    caller.join();
    EXPECT_EQ(c1_err, EMSGSIZE) << err(c1_err);
    EXPECT_EQ(c1.reply_len, 101u) << "the caller learns the reply's length";

    // A good call; its token works once.
    Bytes reply(64);
    lite_rpc_call c2 = call_req(2, kRpcPort, req, reply);
    int c2_err = -1;
    std::thread caller2([&] { c2_err = a.io(LITE_IOC_RPC_CALL, &c2); });
    r = recv_req(kRpcPort, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0);
    Bytes answer = {'p', 'o', 'n', 'g', '!'};
    rp = reply_req(r.token, answer);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), 0);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), ENOENT) << "a token is used once";
    caller2.join();
    EXPECT_EQ(c2_err, 0) << err(c2_err);
    EXPECT_EQ(c2.reply_len, answer.size());
    EXPECT_TRUE(std::equal(answer.begin(), answer.end(), reply.begin()));

    // A reply from a bad buffer: EFAULT for the server, EREMOTEIO for the
    // caller (it learns that the server failed, not how).
    lite_rpc_call c3 = call_req(2, kRpcPort, req, reply);
    int c3_err = -1;
    std::thread caller3([&] { c3_err = a.io(LITE_IOC_RPC_CALL, &c3); });
    r = recv_req(kRpcPort, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0);
    rp = reply_req(r.token, answer);
    rp.buf_ptr = 8;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), EFAULT);
    caller3.join();
    EXPECT_EQ(c3_err, EREMOTEIO) << err(c3_err);

    // An empty one-way message: token 0, the sender's node.
    auto m = msg_req(2, kRpcPort, {});
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), 0);
    r = recv_req(kRpcPort, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0);
    EXPECT_EQ(r.len, 0u);
    EXPECT_EQ(r.token, 0u) << "one-way";
    EXPECT_EQ(r.src_node, 1u);
}

// rpc_held_max caps the calls one file holds taken and not answered: a
// receive that finds one more fails with EMFILE, writes nothing and leaves
// the call queued for the file to take once it answered one; another file
// on the node is not held back by it. Every caller gets its own reply.
TEST_F(RpcUapi, HeldCallsPerFileCap)
{
    constexpr uint32_t kRpcPort = 62;
    constexpr int kCalls = 3;
    ParamRestore keep("rpc_held_max");
    ASSERT_EQ(set_module_param("rpc_held_max", "2"), 0);
    RawFile a(inst_[0]), srv(inst_[1]), other(inst_[1]);
    ASSERT_EQ(srv.reg(kRpcPort), 0);
    ASSERT_EQ(other.reg(kRpcPort + 1), 0);

    std::vector<Bytes> reqs, replies(kCalls + 1, Bytes(64));
    reqs.reserve(kCalls + 1);
    for (int i = 0; i <= kCalls; i++)
        reqs.push_back(make_request(200 + 10 * i, 1, i, 100 + i));
    std::vector<lite_rpc_call> calls;
    calls.reserve(kCalls + 1);
    for (int i = 0; i < kCalls; i++)
        calls.push_back(call_req(2, kRpcPort, reqs[i], replies[i]));
    calls.push_back(call_req(2, kRpcPort + 1, reqs[kCalls], replies[kCalls]));
    std::vector<int> errs(kCalls + 1, -1);
    std::vector<std::thread> callers;
    for (int i = 0; i <= kCalls; i++)
        callers.emplace_back([&, i] { errs[i] = a.io(LITE_IOC_RPC_CALL, &calls[i]); });

    // Which request @buf holds (-1: none of them, or not intact).
    auto tag_of = [&](const Bytes& buf, size_t len) {
        for (int i = 0; i <= kCalls; i++) {
            if (len == reqs[i].size() && std::equal(reqs[i].begin(), reqs[i].end(), buf.begin()))
                return i;
        }
        return -1;
    };
    Bytes buf(4096);
    std::vector<uint64_t> tokens;
    for (int k = 0; k < 2; k++) {
        auto r = recv_req(kRpcPort, buf);
        ASSERT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0) << "call " << k << " of the cap";
        ASSERT_GE(tag_of(buf, r.len), 0) << "a request intact";
        tokens.push_back(r.token);
    }
    // The third call is queued by now or arrives within the wait.
    std::fill(buf.begin(), buf.end(), uint8_t{0xee});
    auto r = recv_req(kRpcPort, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), EMFILE) << "a third held call";
    EXPECT_EQ(r.token, 0u);
    EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0xee; })) << "nothing written";

    // Another file on the node takes and answers its own call meanwhile.
    r = recv_req(kRpcPort + 1, buf);
    ASSERT_EQ(other.io(LITE_IOC_RPC_RECV, &r), 0);
    ASSERT_EQ(tag_of(buf, r.len), kCalls);
    auto rp = reply_req(r.token, std::span<const uint8_t>(buf).first(16));
    EXPECT_EQ(other.io(LITE_IOC_RPC_REPLY, &rp), 0);

    // Answer one; the queued call is taken now.
    rp = reply_req(tokens[0], {});
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), 0);
    tokens.erase(tokens.begin());
    r = recv_req(kRpcPort, buf);
    ASSERT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0) << "the call left queued";
    ASSERT_GE(tag_of(buf, r.len), 0) << "intact";
    tokens.push_back(r.token);
    // At the cap, a message with no call queued ahead of it comes through
    // (it holds no token).
    auto m = msg_req(2, kRpcPort, reqs[0]);
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), 0);
    r = recv_req(kRpcPort, buf);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), 0) << "a message at the cap";
    EXPECT_EQ(r.token, 0u);
    EXPECT_EQ(tag_of(buf, r.len), 0);
    for (auto t : tokens) {
        rp = reply_req(t, {});
        EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), 0);
    }
    for (auto& t : callers)
        t.join();
    for (int i = 0; i <= kCalls; i++)
        EXPECT_EQ(errs[i], 0) << "call " << i << ": " << err(errs[i]);
    for (int i = 0; i < kCalls; i++)
        EXPECT_EQ(calls[i].reply_len, 0u);
    EXPECT_EQ(calls[kCalls].reply_len, 16u);
    EXPECT_TRUE(std::equal(reqs[kCalls].begin(), reqs[kCalls].begin() + 16, replies[kCalls].begin()));
}

// A call a receive took, whose connection closes before the receive copies
// it out and fails (EFAULT), is dropped: it cannot be answered, and put
// back it would hold the closed connection (and its ring) until another
// receive took it. delay_take_ms holds the taken call while break_conn
// closes the connection and the close sweeps the port; the caller gets
// ECONNRESET, the next receive finds nothing, and the port serves the
// reconnected caller.
TEST_F(RpcUapi, CallTakenAcrossACloseIsDropped)
{
    constexpr uint32_t kRpcPort = 63;
    constexpr uint32_t kHoldMs = 8000; // unscaled: the hook holds at most 10 s
    RawFile a(inst_[0]), srv(inst_[1]);
    ASSERT_EQ(srv.reg(kRpcPort), 0);
    Bytes req = make_request(300, 1, 0, 77), reply(64), buf(4096);
    // A line "KEY VALUE" of a node's debugfs "rpc", or the queued count
    // of a port's line (not the kept buffers' table after them); "" if
    // there is none.
    auto rpc_state = [](uint32_t inst, const std::string& key) {
        std::ifstream in(debugfs_path(inst, "rpc"));
        int blanks = 0;
        for (std::string k, v, line; std::getline(in, line) && blanks < 2;) {
            blanks += line.empty();
            std::istringstream words(line);
            if (words >> k >> v && k == key)
                return v;
        }
        return std::string();
    };

    ASSERT_EQ(write_debugfs(inst_[1], "delay_take_ms", std::to_string(kHoldMs)), 0);
    auto bad = recv_req(kRpcPort, buf, call_bound_ms(20000));
    bad.buf_ptr = 8; // unmapped: the copy-out fails after the hold
    int recv_err = -1;
    std::atomic<bool> recv_done{false};
    std::thread receiver([&] {
        recv_err = srv.io(LITE_IOC_RPC_RECV, &bad);
        recv_done = true;
    });
    lite_rpc_call c = call_req(2, kRpcPort, req, reply);
    int call_err = -1;
    std::thread caller([&] { call_err = a.io(LITE_IOC_RPC_CALL, &c); });
    // Taken: in flight from node 1, on no queue of node 2.
    bool taken = wait_until(
        [&] {
            return rpc_state(inst_[0], "calls_in_flight") == "1" &&
                   rpc_state(inst_[1], std::to_string(kRpcPort)) == "0";
        },
        std::chrono::milliseconds(call_bound_ms(3000)));
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the request's way from the wire to the receiver
    uint32_t before = dev_->status(inst_[1]).reconnects + dev_->status(inst_[0]).reconnects;
    EXPECT_TRUE(taken) << "the call never left node 1, or stayed queued";
    EXPECT_EQ(write_debugfs(inst_[1], "break_conn", "1"), 0);
    // Reconnected: the close (and its sweep of the port) has run.
    bool healed =
        wait_until([&] { return dev_->status(inst_[1]).reconnects + dev_->status(inst_[0]).reconnects > before; },
                   std::chrono::milliseconds(call_bound_ms(5000)));
    EXPECT_TRUE(healed) << "no reconnect";
    EXPECT_FALSE(recv_done) << "the receive ended before the close swept the port: nothing was tested";
    receiver.join();
    caller.join();
    EXPECT_EQ(write_debugfs(inst_[1], "delay_take_ms", "0"), 0);
    ASSERT_EQ(recv_err, EFAULT) << "the receive took the call, then failed: " << err(recv_err);
    EXPECT_EQ(call_err, ECONNRESET) << err(call_err);

    auto r = recv_req(kRpcPort, buf, call_bound_ms(500));
    EXPECT_EQ(srv.io(LITE_IOC_RPC_RECV, &r), ETIMEDOUT) << "a call of the closed connection was put back";
    EXPECT_EQ(rpc_state(inst_[1], "requests_held"), "0");

    // The port serves the reconnected caller.
    int call2_err = -1;
    lite_rpc_call c2 = call_req(2, kRpcPort, req, reply);
    std::thread caller2([&] { call2_err = a.io(LITE_IOC_RPC_CALL, &c2); });
    r = recv_req(kRpcPort, buf);
    int recv2_err = srv.io(LITE_IOC_RPC_RECV, &r);
    auto rp = reply_req(r.token, std::span<const uint8_t>(buf).first(16));
    int reply_err = recv2_err ? -1 : srv.io(LITE_IOC_RPC_REPLY, &rp);
    caller2.join();
    ASSERT_EQ(recv2_err, 0) << err(recv2_err);
    EXPECT_EQ(r.len, req.size());
    EXPECT_TRUE(std::equal(req.begin(), req.end(), buf.begin()));
    EXPECT_EQ(reply_err, 0) << err(reply_err);
    EXPECT_EQ(call2_err, 0) << err(call2_err);
    EXPECT_EQ(c2.reply_len, 16u);
    EXPECT_TRUE(std::equal(req.begin(), req.begin() + 16, reply.begin()));
}

// LITE_IOC_RPC_REPLY_RECV: each half checked as its own ioctl checks it;
// a failed reply receives nothing and writes nothing back; once the reply
// is sent its token reads 0, also when the receive then fails.
TEST_F(RpcUapi, ReplyRecvRejectionsAndOrder)
{
    constexpr uint32_t kRpcPort = 65;
    RawFile a(inst_[0]), srv(inst_[1]), other(inst_[1]);
    ASSERT_EQ(srv.reg(kRpcPort), 0);
    ASSERT_EQ(other.reg(kRpcPort + 1), 0);
    Bytes buf(4096);
    Bytes answer = {'a', 'n', 's', 'w', 'e', 'r'};
    auto rr = [&](uint64_t token, uint32_t timeout_ms) {
        lite_rpc_reply_recv x{};
        x.reply = reply_req(token, answer);
        x.recv = recv_req(kRpcPort, buf, timeout_ms);
        return x;
    };
    auto x = rr(0, 200);
    x.reply.flags = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), EINVAL) << "reply flags";
    x = rr(0, 200);
    x.reply.reserved[1] = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), EINVAL) << "reply reserved";
    x = rr(0, 200);
    x.recv.flags = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), EINVAL) << "recv flags";
    x = rr(0, 200);
    x.recv.reserved[1] = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), EINVAL) << "recv reserved";
    x = rr(0, 200);
    x.recv.token = 1;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), EINVAL) << "recv output field not zero";
    x = rr(0, 200);
    x.recv.port = 0;
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), EINVAL) << "port 0";
    x = rr(0, 200);
    EXPECT_EQ(other.io(LITE_IOC_RPC_REPLY_RECV, &x), ENOENT) << "another file's port";
    x = rr(12345, 200);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), ENOENT) << "unknown token";
    EXPECT_EQ(x.reply.token, 12345u) << "not sent: the struct is not written back";
    x = rr(0, 300);
    auto t0 = Clock::now();
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), ETIMEDOUT) << "nothing to answer, nothing came";
    EXPECT_GE(Clock::now() - t0, 250ms);

    // A call taken with token 0, answered by the next one, whose receive
    // then times out: the caller has its reply, the token reads 0.
    auto req = make_request(100, 1, 3, 5);
    Bytes reply(64);
    lite_rpc_call c = call_req(2, kRpcPort, req, reply);
    int c_err = -1;
    std::thread caller([&] { c_err = a.io(LITE_IOC_RPC_CALL, &c); });
    x = rr(0, kTimeoutMs);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), 0);
    EXPECT_EQ(x.recv.len, 100u);
    EXPECT_EQ(x.recv.src_node, 1u);
    ASSERT_NE(x.recv.token, 0u) << "a call";
    EXPECT_TRUE(std::equal(req.begin(), req.end(), buf.begin()));
    uint64_t token = x.recv.token;
    x = rr(token, 200);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY_RECV, &x), ETIMEDOUT) << "answered, then nothing came";
    EXPECT_EQ(x.reply.token, 0u) << "the reply went out";
    caller.join();
    EXPECT_EQ(c_err, 0) << err(c_err);
    ASSERT_EQ(c.reply_len, answer.size());
    EXPECT_TRUE(std::equal(answer.begin(), answer.end(), reply.begin()));
    auto rp = reply_req(token, answer);
    EXPECT_EQ(srv.io(LITE_IOC_RPC_REPLY, &rp), ENOENT) << "the token was used";
}

TEST_F(RpcUapi, MsgSendRejections)
{
    RawFile loose, a(inst_[0]);
    Bytes buf(64, 2);
    auto m = msg_req(2, 70, buf, 300);
    EXPECT_EQ(loose.io(LITE_IOC_MSG_SEND, &m), EBADFD) << "not attached";
    m.flags = 1;
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), EINVAL) << "flags";
    m = msg_req(2, 70, buf, 300);
    m.reserved[1] = 1;
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), EINVAL) << "reserved";
    m = msg_req(2, 0, buf, 300);
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), EINVAL) << "port 0";
    m = msg_req(LITE_MAX_NODES + 1, 70, buf, 300);
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), EINVAL) << "node id above LITE_MAX_NODES";
    m = msg_req(2, 70, buf, 60001);
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), EINVAL) << "timeout above 60 s";
    m = msg_req(2, 70, buf, 300);
    m.len = uint64_t{LITE_RPC_MAX} + 1;
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), EMSGSIZE);
    m = msg_req(77, 70, buf, 300);
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), ENOTCONN) << "no such node";
    m = msg_req(2, 70, buf, 300);
    EXPECT_EQ(a.io(LITE_IOC_MSG_SEND, &m), 0) << "nobody serves it: sent, dropped there";
}

TEST_F(RpcUapi, LockAndBarrierRejections)
{
    RawFile a(inst_[0]);
    uint64_t h = a.alloc(64, 2);
    ASSERT_NE(h, 0u);
    lite_lock lk{};
    lk.handle = h;
    lk.timeout_ms = 1000;
    lk.flags = 1U << 4;
    EXPECT_EQ(a.io(LITE_IOC_LOCK, &lk), EINVAL) << "unknown flag";
    lk.flags = 0;
    lk.reserved[1] = 1;
    EXPECT_EQ(a.io(LITE_IOC_LOCK, &lk), EINVAL) << "reserved";
    lk.reserved[1] = 0;
    lk.timeout_ms = 60001;
    EXPECT_EQ(a.io(LITE_IOC_LOCK, &lk), EINVAL) << "timeout above 60 s";
    lk.timeout_ms = 1000;
    EXPECT_EQ(a.io(LITE_IOC_LOCK, &lk), 0);
    lk.flags = LITE_LOCK_TRY;
    EXPECT_EQ(a.io(LITE_IOC_UNLOCK, &lk), EINVAL) << "flags are for LOCK only";
    lk.flags = 0;
    lk.reserved[0] = 1;
    EXPECT_EQ(a.io(LITE_IOC_UNLOCK, &lk), EINVAL) << "reserved";
    lk.reserved[0] = 0;
    EXPECT_EQ(a.io(LITE_IOC_UNLOCK, &lk), 0);

    lite_barrier br{};
    br.handle = h;
    br.offset = 8;
    br.count = 1;
    br.timeout_ms = 1000;
    br.flags = 1;
    EXPECT_EQ(a.io(LITE_IOC_BARRIER, &br), EINVAL) << "flags";
    br.flags = 0;
    br.reserved[2] = 1;
    EXPECT_EQ(a.io(LITE_IOC_BARRIER, &br), EINVAL) << "reserved";
    br.reserved[2] = 0;
    br.timeout_ms = 60001;
    EXPECT_EQ(a.io(LITE_IOC_BARRIER, &br), EINVAL) << "timeout above 60 s";
    br.timeout_ms = 1000;
    EXPECT_EQ(a.io(LITE_IOC_BARRIER, &br), 0);
}

// ---------------------------------------------------------------- cq_mode

lite_node_up up_req(uint16_t port, uint16_t manager_port, uint32_t cq_mode)
{
    lite_node_up u{};
    // Bounded copy; u is zeroed, so dev_name stays NUL-terminated.
    env("LITE_RXE", "rxe0").copy(u.dev_name, sizeof(u.dev_name) - 1);
    u.listen = endpoint(port).addr;
    if (manager_port) {
        u.flags = LITE_UP_JOIN;
        u.join = endpoint(manager_port).addr;
    }
    u.secret_ptr = reinterpret_cast<uintptr_t>(secret().data());
    u.secret_len = static_cast<uint32_t>(secret().size());
    u.cq_mode = cq_mode;
    return u;
}

// Every completion mode carries calls both ways, one-sided reads and
// writes, atomics, a lock and a barrier. The two nodes use different modes
// (manager m, joiner the next one), so each mode serves on both sides.
TEST(CqMode, EveryModeCarriesTraffic)
{
    auto dev = lite::Device::open();
    down_all(dev);
    constexpr uint32_t kRpcPort = 800;
    for (uint32_t mode = 1; mode <= LITE_CQ_MODE_MAX; mode++) {
        uint32_t mode2 = mode % LITE_CQ_MODE_MAX + 1;
        auto base = static_cast<uint16_t>(kPort + 10 + 2 * mode);
        auto u1 = up_req(base, 0, mode);
        ASSERT_EQ(dev.ioctl_raw(LITE_IOC_NODE_UP, &u1), 0) << "mode " << mode;
        auto u2 = up_req(base + 1, base, mode2);
        ASSERT_EQ(dev.ioctl_raw(LITE_IOC_NODE_UP, &u2), 0) << "mode " << mode2;
        for (auto [inst, want] : {std::pair{u1.instance, mode}, std::pair{u2.instance, mode2}}) {
            lite_node_status st{};
            st.instance = inst;
            ASSERT_EQ(dev.ioctl_raw(LITE_IOC_NODE_STATUS, &st), 0);
            EXPECT_EQ(st.cq_mode, want);
        }
        std::atomic<uint64_t> bad{0};
        {
            Server s1(u1.instance, kRpcPort, 1, echo(1, bad));
            Server s2(u2.instance, kRpcPort, 1, echo(2, bad));
            auto c1 = lite::Session::open(u1.instance);
            auto c2 = lite::Session::open(u2.instance);
            Bytes reply;
            for (size_t len : {size_t{0}, size_t{4099}, size_t{300001}}) {
                auto req = make_request(len, 1, mode, len);
                EXPECT_EQ(call(c1.get(), 2, kRpcPort, req, reply, kMiB), 0) << "mode " << mode << " " << len;
                EXPECT_TRUE(reply_ok(req, reply, 2)) << "mode " << mode << " " << len;
                req = make_request(len, 2, mode, len + 1);
                EXPECT_EQ(call(c2.get(), 1, kRpcPort, req, reply, kMiB), 0) << "mode " << mode2 << " " << len;
                EXPECT_TRUE(reply_ok(req, reply, 1)) << "mode " << mode2 << " " << len;
            }
            auto l = c1.alloc(300001, 2);
            auto data = random_bytes(300001, mode);
            l.write(0, std::span<const uint8_t>(data));
            Bytes back(data.size());
            l.read(0, std::span<uint8_t>(back));
            EXPECT_EQ(checksum(back), checksum(data)) << "mode " << mode;
            // Lock, barrier and atomics in a word LMR both nodes use.
            auto w = c1.alloc(64, 2);
            w.share("rpc-test-cq", LITE_PERM_ALL);
            auto m = c2.map("rpc-test-cq");
            EXPECT_EQ(w.fetch_add(16, 5), 0u) << "mode " << mode;
            EXPECT_EQ(m.fetch_add(16, 1), 5u) << "mode " << mode2;
            EXPECT_EQ(LITE_lock(c2.get(), m.handle(), 8, kTimeoutMs), 0);
            EXPECT_EQ(LITE_trylock(c1.get(), w.handle(), 8), -EAGAIN);
            EXPECT_EQ(LITE_unlock(c2.get(), m.handle(), 8), 0);
            int other = -1;
            std::thread t([&] { other = LITE_barrier(c2.get(), m.handle(), 24, 2, kTimeoutMs); });
            EXPECT_EQ(LITE_barrier(c1.get(), w.handle(), 24, 2, kTimeoutMs), 0) << "mode " << mode;
            t.join();
            EXPECT_EQ(other, 0) << "mode " << mode2;
        }
        EXPECT_EQ(bad, 0u);
        down_all(dev);
    }
}

} // namespace
