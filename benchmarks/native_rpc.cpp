// SPDX-License-Identifier: MIT
//
// native-rpc: RPC round trips through plain rdma-core verbs, the baseline for
// lite-rpc (see benchmarks/bench.sh).
//
// One process plays client and server over RC connections made with
// librdmacm from the RDMA device that owns ADDR to itself (rxe0 on 10.99.0.1
// in a lite-vm guest), one connection per client thread. Each end registers
// one buffer of two areas of SIZE bytes, an incoming one the peer writes and
// an outgoing one, and tells the peer the incoming area's address and rkey
// in the connection's private data. A call: the client RDMA WRITEs WITH
// IMMEDIATE the request from its outgoing area into the server's incoming
// area, the immediate data carrying the length; the server, on the receive
// completion, WRITEs WITH IMMEDIATE the same bytes from its incoming area
// back into the client's incoming area; the client's receive completion ends
// the call. Both ends (the server in a thread of its own per connection)
// wait for completions the same way: they busy-poll their CQ (--poll busy,
// the default), or sleep on the CQ's completion channel and poll after each
// event (--poll event; the CSV's op is then rpc-event). They signal one send
// in kSignalEvery and keep kRecvDepth receives posted. Every reply is
// checked against its request (rpc.hpp).
//
// A server thread is stopped through its std::jthread's stop token: in
// event mode it sleeps at most kStopCheck at a time, so it sees the request
// without a message from the client.
//
// Prints CSV on stdout (format in rpc.hpp); exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "pair.hpp"
#include "rpc.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

using namespace bench::verbs;
using bench::rpc::Clock;

constexpr const char* kProg = "native-rpc";
constexpr size_t kMaxSize = size_t{1} << 20;
constexpr auto kCompletionTimeout = std::chrono::seconds(5);
constexpr uint32_t kSendDepth = 32;   // send queue entries
constexpr uint32_t kSignalEvery = 16; // one signaled send in this many
constexpr uint32_t kRecvDepth = 16;   // receives kept posted
constexpr uint64_t kSendTag = 1;      // wr_id of sends
constexpr uint64_t kRecvTag = 2;      // wr_id of receives

// The longest an event-mode server thread sleeps before it looks at its
// stop token again.
constexpr auto kStopCheck = std::chrono::milliseconds(50);

struct Args {
    bench::rpc::RpcOptions opt;
    Target at{18601};
    PollMode mode = PollMode::busy;
};

// One end of one connection. Members are destroyed in reverse order: the QP
// before the MR, buffer and CQ it uses, those before the PD, the id before
// its channel.
struct Endpoint {
    Channel channel; // client ends only: server ids report to the listener's
    CmId id;
    Pd pd;
    CompletionQueue cq;
    std::vector<uint8_t> buf; // incoming area, then outgoing area
    Mr mr;
    Qp qp;
    size_t area = 0;     // bytes in each area
    RemoteBuffer peer{}; // the peer's incoming area
    uint64_t sends = 0;
    bool connected = false;

    Endpoint() = default;
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;
    Endpoint(Endpoint&&) = delete;
    Endpoint& operator=(Endpoint&&) = delete;
    ~Endpoint()
    {
        if (connected)
            rdma_disconnect(id.get()); // best effort; the peer may be gone
    }

    std::span<uint8_t> incoming() { return std::span(buf).first(area); }
    std::span<uint8_t> outgoing() { return std::span(buf).subspan(area, area); }
    [[nodiscard]] RemoteBuffer local() const
    {
        return RemoteBuffer{reinterpret_cast<uintptr_t>(buf.data()), mr->rkey, static_cast<uint32_t>(area)};
    }
};

// The listening id; the server ends' ids report to its channel, so it must
// outlive them.
struct Listener {
    Channel channel;
    CmId id;
};

void post_recv(Endpoint& e)
{
    ibv_recv_wr wr{};
    wr.wr_id = kRecvTag;
    wr.sg_list = nullptr; // the data of a WRITE WITH IMMEDIATE goes to the rkey's memory
    wr.num_sge = 0;
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_recv(e.id->qp, &wr, &bad); rc != 0)
        throw verb_error("ibv_post_recv", rc);
}

// PD, CQ (waited on as @mode says), an RC QP on @e.id with kRecvDepth
// receives posted, and @e.buf (two areas of @area bytes) registered for
// remote writes.
void make_resources(Endpoint& e, size_t area, PollMode mode)
{
    ibv_context* verbs = e.id->verbs;
    e.pd.reset(ibv_alloc_pd(verbs));
    if (!e.pd)
        throw verb_error("ibv_alloc_pd", errno);
    e.cq.create(verbs, static_cast<int>(kSendDepth + kRecvDepth), mode);

    ibv_qp_init_attr attr{};
    attr.send_cq = e.cq.get();
    attr.recv_cq = e.cq.get();
    attr.cap.max_send_wr = kSendDepth;
    attr.cap.max_recv_wr = kRecvDepth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    check_cm(rdma_create_qp(e.id.get(), e.pd.get(), &attr), "rdma_create_qp");
    e.qp.reset(e.id.get());

    e.area = area;
    e.buf.assign(2 * area, 0);
    e.mr.reset(ibv_reg_mr(e.pd.get(), e.buf.data(), e.buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!e.mr)
        throw verb_error("ibv_reg_mr", errno);
    for (uint32_t i = 0; i < kRecvDepth; i++)
        post_recv(e);
}

rdma_conn_param conn_param(const RemoteBuffer& mine)
{
    rdma_conn_param p{};
    p.private_data = &mine;
    p.private_data_len = sizeof(mine);
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    return p;
}

// The peer's incoming area from a connection event's private data.
RemoteBuffer peer_buffer(const rdma_conn_param& conn, const char* what)
{
    RemoteBuffer rb{};
    if (conn.private_data == nullptr || conn.private_data_len < sizeof(rb)) {
        throw std::runtime_error(std::string(what) + " carried " + std::to_string(conn.private_data_len) +
                                 " bytes of private data, not the peer's buffer");
    }
    std::memcpy(&rb, conn.private_data, sizeof(rb));
    return rb;
}

Listener listen_on(sockaddr_in sin, unsigned backlog)
{
    Listener l;
    l.channel = make_channel();
    l.id = make_id(l.channel.get());
    check_cm(rdma_bind_addr(l.id.get(), reinterpret_cast<sockaddr*>(&sin)), "rdma_bind_addr");
    check_cm(rdma_listen(l.id.get(), static_cast<int>(backlog)), "rdma_listen");
    return l;
}

// Connects @client to @l at @sin; @server becomes the accepted end. Each
// end's buffer has two areas of @area bytes; both wait for completions as
// @mode says.
void connect_pair(Listener& l, Endpoint& server, Endpoint& client, sockaddr_in sin, size_t area, PollMode mode)
{
    client.channel = make_channel();
    client.id = make_id(client.channel.get());
    check_cm(rdma_resolve_addr(client.id.get(), nullptr, reinterpret_cast<sockaddr*>(&sin), kCmTimeoutMs),
             "rdma_resolve_addr");
    wait_event(client.channel.get(), RDMA_CM_EVENT_ADDR_RESOLVED, "client");
    check_cm(rdma_resolve_route(client.id.get(), kCmTimeoutMs), "rdma_resolve_route");
    wait_event(client.channel.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, "client");
    make_resources(client, area, mode);
    const RemoteBuffer client_buf = client.local();
    rdma_conn_param cp = conn_param(client_buf);
    check_cm(rdma_connect(client.id.get(), &cp), "rdma_connect");

    {
        Event req = wait_event(l.channel.get(), RDMA_CM_EVENT_CONNECT_REQUEST, "server");
        server.id.reset(req->id); // the new id is ours from here on
        server.peer = peer_buffer(req->param.conn, "server: the connect request");
    }
    make_resources(server, area, mode);
    const RemoteBuffer server_buf = server.local();
    rdma_conn_param ap = conn_param(server_buf);
    check_cm(rdma_accept(server.id.get(), &ap), "rdma_accept");

    {
        Event est = wait_event(client.channel.get(), RDMA_CM_EVENT_ESTABLISHED, "client");
        client.peer = peer_buffer(est->param.conn, "client: the accept");
    }
    client.connected = true;
    wait_event(l.channel.get(), RDMA_CM_EVENT_ESTABLISHED, "server");
    server.connected = true;
}

// Posts a WRITE WITH IMMEDIATE of @len bytes at @src (in @e.buf) into the
// peer's incoming area; the immediate data is @len.
void post_write_imm(Endpoint& e, std::span<const uint8_t> src)
{
    if (src.size() > e.peer.len) {
        throw std::runtime_error(std::to_string(src.size()) + " bytes do not fit in the peer's area of " +
                                 std::to_string(e.peer.len));
    }
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(src.data());
    sge.length = static_cast<uint32_t>(src.size());
    sge.lkey = e.mr->lkey;
    ibv_send_wr wr{};
    wr.wr_id = kSendTag;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(static_cast<uint32_t>(src.size()));
    // An unsignaled send's queue entry is freed by the next signaled one's
    // completion; the CQ is polled while the end waits for a receive (and a
    // signaled send's completion wakes an event-mode waiter as well), so
    // kSendDepth never fills.
    wr.send_flags = ++e.sends % kSignalEvery == 0 ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = e.peer.addr;
    wr.wr.rdma.rkey = e.peer.rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(e.id->qp, &wr, &bad); rc != 0)
        throw verb_error("ibv_post_send (RDMA WRITE WITH IMMEDIATE)", rc);
}

// Polls @e's CQ until it is empty or a receive completed. A send
// completion is only checked; a receive is checked, replaced with a new one,
// and its immediate data (the length of what arrived) stored in @len. True
// if a receive completed; false only if the CQ was empty (so that an
// event-mode caller may sleep until the next completion event: a completion
// left in the CQ would not raise one).
bool poll_recv(Endpoint& e, uint32_t& len, const char* side)
{
    ibv_wc wc{};
    while (true) {
        int n = ibv_poll_cq(e.cq.get(), 1, &wc);
        if (n == 0)
            return false;
        if (n < 0)
            throw std::runtime_error(std::string(side) + ": ibv_poll_cq failed (returned " + std::to_string(n) + ")");
        const char* what = wc.wr_id == kSendTag ? "RDMA WRITE WITH IMMEDIATE" : "receive";
        if (wc.status != IBV_WC_SUCCESS) {
            throw std::runtime_error(std::string(side) + ": " + what +
                                     " completed with error: " + ibv_wc_status_str(wc.status) + " (vendor_err " +
                                     std::to_string(wc.vendor_err) + ")");
        }
        if (wc.wr_id != kSendTag)
            break;
    }
    if (wc.wr_id != kRecvTag || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
        throw std::runtime_error(std::string(side) + ": unexpected completion (wr_id " + std::to_string(wc.wr_id) +
                                 ", opcode " + std::to_string(wc.opcode) + ")");
    }
    len = ntohl(wc.imm_data);
    post_recv(e);
    return true;
}

// The server end of one connection, in a thread of its own: polls the CQ
// (busy, or after each completion event) and echoes every request until
// stopped.
class EchoServer
{
public:
    explicit EchoServer(Endpoint& e) : thread_([this, &e](const std::stop_token& st) { serve(e, st); }) {}

    void request_stop() { thread_.request_stop(); }

    // Stops the thread; throws what it failed with, if it did.
    void stop()
    {
        thread_.request_stop();
        if (thread_.joinable())
            thread_.join();
        if (error_)
            std::rethrow_exception(error_);
    }

private:
    void serve(Endpoint& e, const std::stop_token& st) noexcept
    {
        try {
            uint32_t len = 0;
            while (!st.stop_requested()) {
                if (!poll_recv(e, len, "server")) {
                    // Event mode: sleep until a completion event, or at most
                    // kStopCheck to look at the stop token again; the CQ is
                    // armed, so nothing that completes meanwhile is missed.
                    (void)e.cq.await(kStopCheck);
                    continue;
                }
                if (len == 0 || len > e.area) {
                    throw std::runtime_error("server: the immediate data says " + std::to_string(len) +
                                             " bytes arrived, in an area of " + std::to_string(e.area));
                }
                post_write_imm(e, e.incoming().first(len));
            }
        } catch (...) {
            error_ = std::current_exception();
        }
    }

    std::exception_ptr error_;
    std::jthread thread_; // last: started once error_ exists, joined before it goes
};

// The server threads of connections 0..n-1 while it exists.
class EchoServers
{
public:
    EchoServers(std::vector<std::unique_ptr<Endpoint>>& servers, unsigned n)
    {
        servers_.reserve(n);
        for (unsigned i = 0; i < n; i++)
            servers_.push_back(std::make_unique<EchoServer>(*servers[i]));
    }

    // Stops them all; throws the first error one failed with.
    void stop()
    {
        for (auto& s : servers_) // all at once: event-mode threads wake up to kStopCheck later
            s->request_stop();
        std::exception_ptr first;
        for (auto& s : servers_) {
            try {
                s->stop();
            } catch (...) {
                if (!first)
                    first = std::current_exception();
            }
        }
        if (first)
            std::rethrow_exception(first);
    }

private:
    std::vector<std::unique_ptr<EchoServer>> servers_; // jthreads stop on destruction
};

// Runs @fn while connections 0..@n-1 have their server threads. If a server
// thread failed, its error is thrown (a client's is then only its symptom,
// such as a reply that never came).
template <typename Fn> void with_echo(std::vector<std::unique_ptr<Endpoint>>& servers, unsigned n, const Fn& fn)
{
    EchoServers echo(servers, n);
    try {
        fn();
    } catch (...) {
        echo.stop(); // throws the server's error instead, if there is one
        throw;
    }
    echo.stop();
}

// The client end of one connection, for the drivers in rpc.hpp.
class Client
{
public:
    explicit Client(Endpoint& e) : e_(e) {}

    void fill(size_t size, uint64_t seed) { bench::rpc::fill_request(e_.outgoing().first(size), seed); }

    void call(size_t size)
    {
        post_write_imm(e_, e_.outgoing().first(size));
        if (!e_.cq.wait_until([this] { return poll_recv(e_, reply_len_, "client"); }, kCompletionTimeout))
            throw std::runtime_error("client: no reply to a request of " + std::to_string(size) + " bytes within 5 s");
    }

    void check(size_t size) { bench::rpc::check_reply(e_.outgoing().first(size), e_.incoming(), reply_len_); }

private:
    Endpoint& e_;
    uint32_t reply_len_ = 0;
};

int run(const Args& a)
{
    const auto& opt = a.opt;
    const auto& at = a.at;
    const auto& mode = a.mode;
    const sockaddr_in sin = at.sockaddr();
    const size_t area = opt.max_size();
    const unsigned pairs = opt.max_threads();

    // The listener first: destroyed after the server ids that report to it.
    Listener listener = listen_on(sin, pairs);
    std::vector<std::unique_ptr<Endpoint>> servers;
    std::vector<std::unique_ptr<Endpoint>> clients;
    for (unsigned i = 0; i < pairs; i++) {
        servers.push_back(std::make_unique<Endpoint>());
        clients.push_back(std::make_unique<Endpoint>());
        connect_pair(listener, *servers.back(), *clients.back(), sin, area, mode);
    }
    (void)std::fprintf(stderr,
                       "%s: %s, %u RC connection(s) via %s:%u (first QP %u -> %u), areas of %zu bytes, %s polling\n",
                       kProg, ibv_get_device_name(clients[0]->id->verbs->device), pairs, at.addr.c_str(), at.port,
                       clients[0]->id->qp->qp_num, servers[0]->id->qp->qp_num, area, poll_name(mode));

    if (opt.mode == bench::rpc::Mode::lat) {
        (void)std::fprintf(stderr, "%s: latency, %u+%u calls per size\n", kProg, opt.lat.warmup, opt.lat.iters);
        bench::rpc::print_lat_header();
        const std::string label = op_label("rpc", mode);
        with_echo(servers, 1, [&] {
            Client client(*clients[0]);
            uint64_t seq = 0;
            for (size_t size : opt.lat.sizes) {
                bench::Stats s = bench::rpc::measure_calls(opt.lat, size, seq, client);
                bench::rpc::print_lat_row(label.c_str(), size, opt.lat, s);
            }
        });
        return 0;
    }

    (void)std::fprintf(stderr, "%s: throughput, %zu-byte calls, %u s per point\n", kProg, opt.size, opt.seconds);
    bench::rpc::print_tput_header();
    for (unsigned n : opt.threads) {
        // Only the connections in use have a server thread: idle busy
        // pollers would take CPU from the others.
        bench::rpc::Throughput r;
        with_echo(servers, n, [&] {
            r = bench::rpc::run_threads(n, opt.seconds, [&](unsigned t, Clock::time_point deadline, const auto& abort) {
                Client client(*clients[t]);
                return bench::rpc::call_until(client, t, opt.size, deadline, abort);
            });
        });
        bench::rpc::print_tput_row(n, opt.size, r);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "RPC round trips (RDMA WRITE WITH IMMEDIATE both ways) over RC connections from the RDMA "
                          "device that owns IPV4 to itself, made with librdmacm; a server thread per connection "
                          "echoes every request. Prints CSV on stdout.");
        Args a;
        a.at.add_options(app);
        add_poll(
            app, a.mode,
            "how both ends wait for completions: busy (default) polls the CQ in a loop; event sleeps on the CQ's "
            "completion channel (ibv_req_notify_cq, ibv_get_cq_event) and polls after each event; lat's op is then "
            "rpc-event");
        bench::rpc::add_rpc(app, a.opt, kMaxSize);
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
