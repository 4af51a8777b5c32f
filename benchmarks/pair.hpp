// SPDX-License-Identifier: MIT
//
// One RC connection from the RDMA device to itself (native-lat, native-ops):
// a server side that listens and exposes a registered buffer, a client side
// that connects and learns where that buffer is; plus the --addr/--port
// options every native benchmark takes.
#pragma once

#include "verbs.hpp"

#include <functional>

namespace bench::verbs
{

// One end: its cm ids, PD, CQ, QP and registered buffer (8-byte aligned, so
// atomics may target it).
struct Side {
    Channel channel;
    CmId listener; // server only
    CmId id;
    Pd pd;
    CompletionQueue cq;
    std::vector<uint64_t> words;
    Mr mr;
    Qp qp;
    bool connected = false;

    Side() = default;
    Side(const Side&) = delete;
    Side& operator=(const Side&) = delete;
    Side(Side&&) = delete;
    Side& operator=(Side&&) = delete;
    ~Side()
    {
        if (connected)
            rdma_disconnect(id.get()); // best effort; the peer may be gone
    }

    [[nodiscard]] uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words.data()); }
    [[nodiscard]] size_t size() const { return words.size() * sizeof(uint64_t); }
};

// How the pair differs between benchmarks.
struct PairConfig {
    uint32_t send_depth = 16; // send queue (and CQ) size
    uint32_t recv_depth = 1;  // receive queue size
    int server_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    bool server_busy = false; // the server's CQ is busy-polled whatever the mode
    uint8_t rd_atomic = 1;    // READs and atomics in flight at once (at most what the device allows)
    std::function<void(Side& server)> before_accept; // e.g. post RECVs
};

// PD, CQ (waited on as @mode says), an RC QP on @s.id, and @len bytes
// registered with @access.
inline void make_resources(Side& s, size_t len, int access, PollMode mode, const PairConfig& cfg)
{
    ibv_context* verbs = s.id->verbs;
    s.pd.reset(ibv_alloc_pd(verbs));
    if (!s.pd)
        throw verb_error("ibv_alloc_pd", errno);
    s.cq.create(verbs, static_cast<int>(std::max(cfg.send_depth, cfg.recv_depth)), mode);

    ibv_qp_init_attr attr{};
    attr.send_cq = s.cq.get();
    attr.recv_cq = s.cq.get();
    attr.cap.max_send_wr = cfg.send_depth;
    attr.cap.max_recv_wr = cfg.recv_depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    check_cm(rdma_create_qp(s.id.get(), s.pd.get(), &attr), "rdma_create_qp");
    s.qp.reset(s.id.get());

    s.words.assign((len + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
    s.mr.reset(ibv_reg_mr(s.pd.get(), s.words.data(), s.size(), access));
    if (!s.mr)
        throw verb_error("ibv_reg_mr", errno);
}

inline rdma_conn_param conn_param(ibv_context* verbs, uint8_t rd_atomic)
{
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(verbs, &attr); rc != 0)
        throw verb_error("ibv_query_device", rc);
    rdma_conn_param p{};
    p.initiator_depth = static_cast<uint8_t>(std::min<int>(rd_atomic, attr.max_qp_init_rd_atom));
    p.responder_resources = static_cast<uint8_t>(std::min<int>(rd_atomic, attr.max_qp_rd_atom));
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    return p;
}

// Server listening on @sin, client connected to it, waiting for completions
// as @mode says; returns the server's buffer as the client learned it.
inline RemoteBuffer connect_pair(Side& server, Side& client, sockaddr_in sin, size_t len, PollMode mode,
                                 const PairConfig& cfg)
{
    server.channel = make_channel();
    server.listener = make_id(server.channel.get());
    check_cm(rdma_bind_addr(server.listener.get(), reinterpret_cast<sockaddr*>(&sin)), "rdma_bind_addr");
    check_cm(rdma_listen(server.listener.get(), 1), "rdma_listen");

    client.channel = make_channel();
    client.id = make_id(client.channel.get());
    check_cm(rdma_resolve_addr(client.id.get(), nullptr, reinterpret_cast<sockaddr*>(&sin), kCmTimeoutMs),
             "rdma_resolve_addr");
    wait_event(client.channel.get(), RDMA_CM_EVENT_ADDR_RESOLVED, "client");
    check_cm(rdma_resolve_route(client.id.get(), kCmTimeoutMs), "rdma_resolve_route");
    wait_event(client.channel.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, "client");
    make_resources(client, len, IBV_ACCESS_LOCAL_WRITE, mode, cfg);
    rdma_conn_param cp = conn_param(client.id->verbs, cfg.rd_atomic);
    check_cm(rdma_connect(client.id.get(), &cp), "rdma_connect");

    {
        Event req = wait_event(server.channel.get(), RDMA_CM_EVENT_CONNECT_REQUEST, "server");
        server.id.reset(req->id); // the new id is ours from here on
    }
    make_resources(server, len, cfg.server_access, cfg.server_busy ? PollMode::busy : mode, cfg);
    if (cfg.before_accept)
        cfg.before_accept(server);
    RemoteBuffer rb{reinterpret_cast<uintptr_t>(server.bytes()), server.mr->rkey, static_cast<uint32_t>(server.size())};
    rdma_conn_param ap = conn_param(server.id->verbs, cfg.rd_atomic);
    ap.private_data = &rb;
    ap.private_data_len = sizeof(rb);
    check_cm(rdma_accept(server.id.get(), &ap), "rdma_accept");

    RemoteBuffer got{};
    {
        Event est = wait_event(client.channel.get(), RDMA_CM_EVENT_ESTABLISHED, "client");
        if (est->param.conn.private_data_len < sizeof(got)) {
            throw std::runtime_error("client: the accept carried " + std::to_string(est->param.conn.private_data_len) +
                                     " bytes of private data, not the server's buffer");
        }
        std::memcpy(&got, est->param.conn.private_data, sizeof(got));
    }
    client.connected = true;
    wait_event(server.channel.get(), RDMA_CM_EVENT_ESTABLISHED, "server");
    server.connected = true;
    return got;
}

// Where the native benchmarks connect: $LITE_ADDR (else 10.99.0.1) and a
// port of their own, overridden by --addr and --port.
struct Target {
    std::string addr = default_addr();
    uint16_t port;

    explicit Target(uint16_t default_port) : port(default_port) {}

    // --addr and --port, the help naming the defaults (and @port_note).
    void add_options(CLI::App& app, const std::string& port_note = "")
    {
        add_addr(app, addr, "address of an RDMA device's netdev ($LITE_ADDR, else 10.99.0.1)");
        lite_cli::add_number(app, "--port", port, 1, 65535,
                             "rdma_cm port to listen on (default " + std::to_string(port) + port_note + ")");
    }

    [[nodiscard]] sockaddr_in sockaddr() const { return parse_addr(addr, port); }
};

} // namespace bench::verbs
