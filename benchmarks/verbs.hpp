// SPDX-License-Identifier: MIT
//
// Shared by the native verbs benchmarks (native-lat, -ops, -rpc, first-op):
// errors that name the failing verb, RAII for the rdma_cm and verbs objects,
// the rdma_cm steps both take to connect the RDMA device to itself, and the
// two ways they wait for completions (--poll busy|event, CompletionQueue).
#pragma once

#include "lat.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
struct CompChannelDeleter {
    void operator()(ibv_comp_channel* c) const noexcept
    {
        warn_destroy(ibv_destroy_comp_channel(c), "ibv_destroy_comp_channel");
    }
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
using CompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
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
        throw lite_cli::UsageError("--addr: '" + addr + "' is not an IPv4 address");
    return sin;
}

// Where the native benchmarks connect by default: $LITE_ADDR, else
// 10.99.0.1 (checked when used: parse_addr).
inline std::string default_addr()
{
    const char* env = std::getenv("LITE_ADDR");
    return env != nullptr && *env != '\0' ? env : "10.99.0.1";
}

// --addr IPV4 into @addr (which holds the default), checked as it is given.
inline CLI::Option* add_addr(CLI::App& app, std::string& addr, const std::string& help)
{
    return app.add_option("--addr", addr, help)
        ->type_name("IPV4")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                in_addr a{};
                return inet_pton(AF_INET, text.c_str(), &a) == 1 ? "" : "'" + text + "' is not an IPv4 address";
            },
            ""));
}

// How a program waits for its completions (--poll):
//   busy   ibv_poll_cq in a loop, never giving up the CPU (the lowest latency
//          when the device has a core of its own; a software device such as
//          rxe, which needs CPU time in the kernel, is starved by it);
//   event  the CQ has a completion channel: arm it (ibv_req_notify_cq),
//          sleep until the channel has an event, read it (ibv_get_cq_event),
//          re-arm, then poll the CQ, as an event-driven program does.
enum class PollMode { busy, event };

// --poll busy|event into @mode.
inline CLI::Option* add_poll(CLI::App& app, PollMode& mode, const std::string& help)
{
    return lite_cli::add_choice(app, "--poll", mode, {{"busy", PollMode::busy}, {"event", PollMode::event}}, help);
}

inline const char* poll_name(PollMode mode)
{
    return mode == PollMode::busy ? "busy" : "event";
}

// The CSV's op column: @op as it is for busy polling ("rpc"), suffixed for
// event mode ("rpc-event"), so that one CSV can hold both.
inline std::string op_label(const char* op, PollMode mode)
{
    return mode == PollMode::busy ? std::string(op) : std::string(op) + "-event";
}

// A CQ and, in event mode, the completion channel it reports to. Used by
// one thread at a time (its events are this object's state).
//
// Event mode is the race-free pattern: the CQ is armed when it is made and
// again right after every event, before the CQ is polled, so a completion
// that arrives after the poll that found the CQ empty always produces an
// event to wake the waiter. Events are acknowledged kAckBatch at a time
// (ibv_ack_cq_events takes a lock) and the rest before the CQ is destroyed:
// ibv_destroy_cq waits for every event it reported to be acknowledged.
class CompletionQueue
{
public:
    static constexpr unsigned kAckBatch = 64;

    CompletionQueue() = default;
    CompletionQueue(const CompletionQueue&) = delete;
    CompletionQueue& operator=(const CompletionQueue&) = delete;
    CompletionQueue(CompletionQueue&&) = delete;
    CompletionQueue& operator=(CompletionQueue&&) = delete;
    ~CompletionQueue() { ack_events(); } // then cq_, then channel_

    // Makes the CQ of @depth entries on @verbs (once).
    void create(ibv_context* verbs, int depth, PollMode mode)
    {
        mode_ = mode;
        if (mode == PollMode::event) {
            channel_.reset(ibv_create_comp_channel(verbs));
            if (!channel_)
                throw verb_error("ibv_create_comp_channel", errno);
            // Non-blocking: await() sleeps in poll(), with a timeout, and
            // then reads the event that is there.
            const int flags = fcntl(channel_->fd, F_GETFL);
            if (flags < 0 || fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0)
                throw verb_error("fcntl (O_NONBLOCK) on the completion channel", errno);
        }
        cq_.reset(ibv_create_cq(verbs, depth, nullptr, channel_.get(), 0));
        if (!cq_)
            throw verb_error("ibv_create_cq", errno);
        if (mode == PollMode::event)
            arm();
    }

    [[nodiscard]] ibv_cq* get() const { return cq_.get(); }
    [[nodiscard]] PollMode mode() const { return mode_; }

    // Event mode: sleeps until the CQ's next completion event or for at most
    // @timeout; after an event the CQ is armed again (poll it then). False
    // if the time ran out; true after an event, or after a wake-up without
    // one (a signal): either way the caller polls and decides. Busy mode:
    // returns true at once.
    bool await(std::chrono::nanoseconds timeout)
    {
        if (mode_ == PollMode::busy)
            return true;
        using std::chrono::milliseconds;
        const auto ms = std::chrono::ceil<milliseconds>(std::max(timeout, std::chrono::nanoseconds(0)));
        pollfd pfd{channel_->fd, POLLIN, 0};
        const int n = poll(&pfd, 1, static_cast<int>(std::min<milliseconds::rep>(ms.count(), INT_MAX)));
        if (n < 0 && errno == EINTR)
            return true;
        if (n < 0)
            throw verb_error("poll on the completion channel", errno);
        if (n == 0)
            return false;
        ibv_cq* ev_cq = nullptr;
        void* ev_ctx = nullptr;
        if (ibv_get_cq_event(channel_.get(), &ev_cq, &ev_ctx) != 0) {
            if (errno == EAGAIN || errno == EINTR)
                return true;
            throw verb_error("ibv_get_cq_event", errno);
        }
        if (ev_cq != cq_.get())
            throw std::runtime_error("ibv_get_cq_event: an event for a CQ that is not this channel's");
        if (++unacked_ >= kAckBatch)
            ack_events();
        arm();
        return true;
    }

    // Calls @try_once (which polls the CQ and returns true when what the
    // caller waits for has completed) until it returns true, or until
    // @timeout has passed since the first try that did not (false then).
    // Between tries busy mode spins, event mode sleeps in await(); so
    // @try_once must return false only when it found the CQ empty (a
    // completion it left there would raise no event to end the sleep).
    template <typename Fn> bool wait_until(const Fn& try_once, std::chrono::nanoseconds timeout)
    {
        using Clock = std::chrono::steady_clock;
        Clock::time_point deadline{};
        if (mode_ == PollMode::busy) {
            for (unsigned spins = 0; !try_once(); spins++) {
                if ((spins & 0xfff) != 0)
                    continue; // look at the clock only now and then
                auto now = Clock::now();
                if (spins == 0) {
                    deadline = now + timeout;
                } else if (now > deadline) {
                    return false;
                }
            }
            return true;
        }
        for (bool first = true; !try_once(); first = false) {
            auto now = Clock::now();
            if (first) {
                deadline = now + timeout;
            } else if (now > deadline) {
                return false;
            }
            (void)await(deadline - now); // a timeout shows in the next round
        }
        return true;
    }

private:
    void arm()
    {
        if (int rc = ibv_req_notify_cq(cq_.get(), 0); rc != 0)
            throw verb_error("ibv_req_notify_cq", rc);
    }

    void ack_events() noexcept
    {
        if (unacked_ != 0)
            ibv_ack_cq_events(cq_.get(), unacked_);
        unacked_ = 0;
    }

    PollMode mode_ = PollMode::busy;
    CompChannel channel_; // event mode only; destroyed after the CQ
    Cq cq_;
    unsigned unacked_ = 0; // events read and not yet acknowledged
};

} // namespace bench::verbs
