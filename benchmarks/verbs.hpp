// SPDX-License-Identifier: MIT
//
// Shared by the native verbs benchmarks (native_lat.cpp, native_rpc.cpp):
// errors that name the failing verb, RAII for the rdma_cm and verbs objects,
// and the rdma_cm steps both take to connect the RDMA device to itself.
#pragma once

#include "lat.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace bench::verbs
{

constexpr int kCmTimeoutMs = 5000; // each rdma_cm step

// An error naming the verb that failed and the errno it gave.
inline std::runtime_error verb_error(const std::string& verb, int err)
{
    return std::runtime_error(verb + " failed: " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
}

// For the rdma_* calls: -1 with errno set on failure.
inline void check_cm(int rc, const char* verb)
{
    if (rc != 0)
        throw verb_error(verb, errno);
}

// Destructors cannot throw: a failing destroy verb (EBUSY from a leaked
// child object, say) is reported instead of passing silently.
inline void warn_destroy(int err, const char* verb) noexcept
{
    if (err != 0) {
        (void)std::fprintf(stderr, "%s: warning: %s failed: %s\n", program_invocation_short_name, verb,
                           std::strerror(err));
    }
}

// RAII for the rdma_cm and verbs objects, destroyed with the matching verb.
struct ChannelDeleter {
    void operator()(rdma_event_channel* c) const noexcept { rdma_destroy_event_channel(c); }
};
struct IdDeleter {
    void operator()(rdma_cm_id* id) const noexcept
    {
        warn_destroy(rdma_destroy_id(id) != 0 ? errno : 0, "rdma_destroy_id");
    }
};
struct EventDeleter {
    void operator()(rdma_cm_event* e) const noexcept
    {
        warn_destroy(rdma_ack_cm_event(e) != 0 ? errno : 0, "rdma_ack_cm_event");
    }
};
struct PdDeleter {
    void operator()(ibv_pd* pd) const noexcept { warn_destroy(ibv_dealloc_pd(pd), "ibv_dealloc_pd"); }
};
struct CqDeleter {
    void operator()(ibv_cq* cq) const noexcept { warn_destroy(ibv_destroy_cq(cq), "ibv_destroy_cq"); }
};
struct MrDeleter {
    void operator()(ibv_mr* mr) const noexcept { warn_destroy(ibv_dereg_mr(mr), "ibv_dereg_mr"); }
};
// Holds the cm_id whose QP (made by rdma_create_qp) it destroys.
struct QpDeleter {
    void operator()(rdma_cm_id* id) const noexcept { rdma_destroy_qp(id); }
};

using Channel = std::unique_ptr<rdma_event_channel, ChannelDeleter>;
using CmId = std::unique_ptr<rdma_cm_id, IdDeleter>;
using Event = std::unique_ptr<rdma_cm_event, EventDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
using Qp = std::unique_ptr<rdma_cm_id, QpDeleter>;

// A registered buffer as the peer learns it from the connection's private
// data.
struct RemoteBuffer {
    uint64_t addr;
    uint32_t rkey;
    uint32_t len;
};

inline Channel make_channel()
{
    Channel ch(rdma_create_event_channel());
    if (!ch)
        throw verb_error("rdma_create_event_channel", errno);
    return ch;
}

inline CmId make_id(rdma_event_channel* ch)
{
    rdma_cm_id* id = nullptr;
    check_cm(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), "rdma_create_id");
    return CmId(id);
}

// The next event on @ch, which must be of type @want; waits at most
// kCmTimeoutMs.
inline Event wait_event(rdma_event_channel* ch, rdma_cm_event_type want, const char* side)
{
    pollfd pfd{ch->fd, POLLIN, 0};
    int n = 0;
    do {
        n = poll(&pfd, 1, kCmTimeoutMs);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        throw verb_error("poll on the rdma_cm event channel", errno);
    if (n == 0) {
        throw std::runtime_error(std::string(side) + ": no rdma_cm event within " + std::to_string(kCmTimeoutMs) +
                                 " ms (waiting for " + rdma_event_str(want) + ")");
    }
    rdma_cm_event* raw = nullptr;
    check_cm(rdma_get_cm_event(ch, &raw), "rdma_get_cm_event");
    Event ev(raw);
    if (ev->event != want) {
        throw std::runtime_error(std::string(side) + ": waiting for " + rdma_event_str(want) + ", got " +
                                 rdma_event_str(ev->event) + " (status " + std::to_string(ev->status) + ")");
    }
    return ev;
}

inline sockaddr_in parse_addr(const std::string& addr, uint16_t port)
{
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    if (inet_pton(AF_INET, addr.c_str(), &sin.sin_addr) != 1)
        throw UsageError("--addr: '" + addr + "' is not an IPv4 address");
    return sin;
}

} // namespace bench::verbs
