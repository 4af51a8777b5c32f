// SPDX-License-Identifier: MIT
// lite::Ring (lite/async.hpp) over liburing and lite/async.h.
#include <liburing.h>

#include <array>
#include <cerrno>
#include <lite/async.h>
#include <lite/async.hpp>
#include <string>
#include <utility>
#include <vector>

namespace lite
{

// Not part of the ABI: hidden, whatever liblite.map says.
struct __attribute__((visibility("hidden"))) Ring::Impl {
    static constexpr unsigned int kMaxWorkers = 16;

    io_uring ring{};
    lite_t* session = nullptr;
    int fd = -1;
    std::vector<Callback> slots;   // by user_data - 1
    std::vector<uint32_t> free;    // unused slots
    std::vector<const char*> what; // by slot: the operation, for errors
    std::vector<bool> is_recv;     // by slot: a receive (may never end)
    size_t in_flight = 0;          // queued or submitted, callback not run
    size_t recvs = 0;              // receives among them
    size_t cap = 0;
    bool deferred = false;      // IORING_SETUP_DEFER_TASKRUN: completions wait for us
    bool polled = false;        // IORING_SETUP_IOPOLL: reaping polls in the kernel
    lite_rw* last_rw = nullptr; // the last queued SQE's, if a read or write

    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    Impl(Impl&&) = delete;
    Impl& operator=(Impl&&) = delete;

    Impl(const Session& s, unsigned int entries, Completion how) : session(s.get()), fd(LITE_fd(s.get()))
    {
        // One issuing thread, whose completions wait until it asks for
        // them (6.1 on); an older kernel refuses the flags: without them.
        const unsigned int base =
            IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | (how == Completion::polled ? IORING_SETUP_IOPOLL : 0U);
        int ret = io_uring_queue_init(entries, &ring, base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
        if (ret == -EINVAL)
            ret = io_uring_queue_init(entries, &ring, base);
        if (ret < 0) {
            detail::fail(ret, std::string("io_uring setup (SQE128, CQE32") +
                                  (how == Completion::polled ? ", IOPOLL" : "") + ") with " + std::to_string(entries) +
                                  " entries");
        }
        deferred = (ring.flags & IORING_SETUP_DEFER_TASKRUN) != 0;
        polled = (ring.flags & IORING_SETUP_IOPOLL) != 0;
        // Operations that must wait (long transfers, RPC calls) run in
        // io_uring's worker threads: a few are enough, not one per op.
        std::array<unsigned int, 2> workers = {0, kMaxWorkers};
        ret = io_uring_register_iowq_max_workers(&ring, workers.data());
        if (ret < 0) {
            io_uring_queue_exit(&ring);
            detail::fail(ret, "limit io_uring's worker threads");
        }
        cap = ring.cq.ring_entries;
        slots.resize(cap);
        what.resize(cap);
        is_recv.resize(cap);
        free.reserve(cap);
        for (size_t i = cap; i > 0; i--)
            free.push_back(static_cast<uint32_t>(i - 1));
    }

    ~Impl()
    {
        // The kernel completes every operation by itself; their buffers
        // are the caller's until then, so wait, dropping callbacks. Not
        // for receives: once the ring is closed they end without writing.
        while (in_flight > recvs) {
            submit_queued();
            io_uring_cqe* cqe = nullptr;
            if (io_uring_wait_cqe(&ring, &cqe) < 0)
                break;
            auto slot = static_cast<uint32_t>(cqe->user_data - 1);
            if (is_recv[slot])
                recvs--;
            io_uring_cqe_seen(&ring, cqe);
            in_flight--;
        }
        io_uring_queue_exit(&ring);
    }

    unsigned int reap(bool wait, unsigned int want)
    {
        unsigned int ran = 0;
        while (in_flight > 0) {
            io_uring_cqe* cqe = nullptr;
            int ret = wait && ran < want ? io_uring_wait_cqe(&ring, &cqe) : io_uring_peek_cqe(&ring, &cqe);
            if (ret == -EAGAIN || (ret == -EINTR && ran > 0))
                break;
            if (ret == -EINTR)
                continue;
            if (ret < 0)
                detail::fail(ret, "wait for lite completions");
            auto slot = static_cast<uint32_t>(cqe->user_data - 1);
            Result r(cqe->res, cqe->big_cqe[0], what[slot]);
            Callback cb = std::exchange(slots[slot], nullptr);
            if (is_recv[slot])
                recvs--;
            io_uring_cqe_seen(&ring, cqe);
            free.push_back(slot);
            in_flight--;
            ran++;
            if (cb)
                cb(r);
        }
        return ran;
    }

    // A read or write about to be submitted alone, with nothing else in
    // flight, is flagged LITE_RW_SPIN: the kernel polls for its completion
    // at submission, as a synchronous call would, instead of this thread
    // sleeping until a wake-up (which costs more than the wait itself).
    void flag_lone_rw()
    {
        if (last_rw != nullptr && in_flight == 1 && io_uring_sq_ready(&ring) == 1)
            last_rw->flags |= LITE_RW_SPIN;
        last_rw = nullptr;
    }

    int submit_queued()
    {
        flag_lone_rw();
        return io_uring_submit(&ring);
    }

    int submit_and_wait(unsigned int n)
    {
        flag_lone_rw();
        return io_uring_submit_and_wait(&ring, n);
    }

    // Queue a new operation: @prep fills the SQE (clearing it first),
    // then it is tagged with the operation's slot. Returns the SQE's
    // command area.
    template <class Prep> uint8_t* queue(Callback cb, const char* op, Prep&& prep, bool recv = false)
    {
        if (in_flight == cap)
            reap(true, 1);
        io_uring_sqe* e = io_uring_get_sqe(&ring);
        if (e == nullptr) {
            int ret = submit_queued();
            if (ret < 0)
                detail::fail(ret, "submit lite operations");
            e = io_uring_get_sqe(&ring);
            if (e == nullptr)
                throw Error(EBUSY, "io_uring submission queue full");
        }
        uint32_t slot = free.back();
        free.pop_back();
        slots[slot] = std::move(cb);
        what[slot] = op;
        is_recv[slot] = recv;
        in_flight++;
        recvs += recv ? 1 : 0;
        prep(e);
        e->user_data = uint64_t{slot} + 1;
        last_rw = nullptr;
        return e->cmd;
    }

    // Queue a read or write (@prep fills the SQE with LITE_prep_rw*).
    template <class Prep> void queue_rw(Callback cb, const char* op, Prep&& prep)
    {
        uint8_t* cmd = queue(std::move(cb), op, std::forward<Prep>(prep));
        last_rw = reinterpret_cast<lite_rw*>(cmd);
    }

    void check_lmr(const Lmr& lmr) const
    {
        if (lmr.session() != session)
            throw Error(EINVAL, "LMR handle of another session used on this ring");
    }
};

Ring::Ring(const Session& session, unsigned int entries, Completion how)
    : impl_(std::make_unique<Impl>(session, entries, how))
{
}
Ring::Ring(Ring&& o) noexcept = default;
Ring& Ring::operator=(Ring&& o) noexcept = default;
Ring::~Ring() = default;

void Ring::read(const Lmr& lmr, uint64_t offset, std::span<std::byte> out, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue_rw(std::move(cb), "async read", [&](io_uring_sqe* e) {
        LITE_prep_read(e, impl_->fd, lmr.handle(), offset, out.data(), out.size());
    });
}

void Ring::write(const Lmr& lmr, uint64_t offset, std::span<const std::byte> in, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue_rw(std::move(cb), "async write", [&](io_uring_sqe* e) {
        LITE_prep_write(e, impl_->fd, lmr.handle(), offset, in.data(), in.size());
    });
}

void Ring::send_file(const Lmr& lmr, uint64_t offset, int fd, uint64_t file_offset, uint64_t len, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue(std::move(cb), "async sendfile", [&](io_uring_sqe* e) {
        LITE_prep_sendfile(e, impl_->fd, lmr.handle(), offset, fd, file_offset, len);
    });
}

void Ring::register_buffers(std::span<const std::span<std::byte>> bufs)
{
    std::vector<iovec> iov;
    iov.reserve(bufs.size());
    for (auto b : bufs)
        iov.push_back({b.data(), b.size()});
    int ret = io_uring_register_buffers(&impl_->ring, iov.data(), static_cast<unsigned>(iov.size()));
    if (ret < 0)
        detail::fail(ret, "register " + std::to_string(bufs.size()) + " buffers with the ring");
}

void Ring::read_fixed(const Lmr& lmr, uint64_t offset, std::span<std::byte> out, uint16_t index, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue_rw(std::move(cb), "async read (registered buffer)", [&](io_uring_sqe* e) {
        LITE_prep_rw_fixed(e, impl_->fd, 0, lmr.handle(), offset, out.data(), out.size(), index);
    });
}

void Ring::write_fixed(const Lmr& lmr, uint64_t offset, std::span<const std::byte> in, uint16_t index, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue_rw(std::move(cb), "async write (registered buffer)", [&](io_uring_sqe* e) {
        LITE_prep_rw_fixed(e, impl_->fd, 1, lmr.handle(), offset, in.data(), in.size(), index);
    });
}

void Ring::fetch_add(const Lmr& lmr, uint64_t offset, uint64_t add, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue(std::move(cb), "async fetch_add",
                 [&](io_uring_sqe* e) { LITE_prep_atomic(e, impl_->fd, 0, lmr.handle(), offset, add, 0); });
}

void Ring::cmp_swap(const Lmr& lmr, uint64_t offset, uint64_t expected, uint64_t desired, Callback cb)
{
    impl_->check_lmr(lmr);
    impl_->queue(std::move(cb), "async cmp_swap",
                 [&](io_uring_sqe* e) { LITE_prep_atomic(e, impl_->fd, 1, lmr.handle(), offset, expected, desired); });
}

void Ring::call(uint32_t node, uint32_t port, std::span<const std::byte> req, std::span<std::byte> reply, Callback cb,
                std::chrono::milliseconds timeout)
{
    uint32_t ms = detail::timeout_ms(timeout);
    impl_->queue(std::move(cb), "async call", [&](io_uring_sqe* e) {
        LITE_prep_call(e, impl_->fd, node, port, req.data(), req.size(), reply.data(), reply.size(), ms);
    });
}

void Ring::recv(const Service& service, std::span<std::byte> buf, Callback cb, std::chrono::milliseconds timeout)
{
    if (service.session() != impl_->session)
        throw Error(EINVAL, "service of another session used on this ring");
    uint32_t ms = detail::timeout_ms(timeout);
    impl_->queue(
        std::move(cb), "async receive",
        [&](io_uring_sqe* e) { LITE_prep_recv(e, impl_->fd, service.port(), buf.data(), buf.size(), ms); }, true);
}

void Ring::reply(uint64_t token, std::span<const std::byte> data, Callback cb)
{
    impl_->queue(std::move(cb), "async reply",
                 [&](io_uring_sqe* e) { LITE_prep_reply(e, impl_->fd, token, data.data(), data.size()); });
}

Incoming Result::incoming() const
{
    if (res_ == -EMSGSIZE)
        throw MessageSizeError(value_, std::string(what_) + ": request of " + std::to_string(value_) + " bytes");
    if (res_ < 0)
        detail::fail(res_, what_);
    return {LITE_CQE_TOKEN(value_), LITE_CQE_SRC(value_), static_cast<size_t>(res_)};
}

unsigned int Ring::submit()
{
    int ret = impl_->submit_queued();
    if (ret < 0)
        detail::fail(ret, "submit lite operations");
    return static_cast<unsigned int>(ret);
}

unsigned int Ring::poll()
{
    // Deferred completions are posted only when this thread enters the
    // kernel for them.
    if (impl_->deferred) {
        int ret = io_uring_get_events(&impl_->ring);
        if (ret < 0 && ret != -EINTR)
            detail::fail(ret, "collect lite completions");
    }
    return impl_->reap(false, 0);
}

unsigned int Ring::wait(unsigned int n)
{
    // Nothing to reap yet on a ring whose completions come as events: one
    // system call submits and waits for the first (and, deferred, runs its
    // task work), not one for each. (A polled ring's reaping polls anyway;
    // measured, waiting there in the same call made it slower.)
    if (n > 0 && !impl_->polled && impl_->in_flight > 0 && io_uring_cq_ready(&impl_->ring) == 0) {
        int ret = impl_->submit_and_wait(1);
        if (ret < 0 && ret != -EINTR)
            detail::fail(ret, "submit and wait for lite operations");
    } else {
        submit();
    }
    return impl_->reap(true, n);
}

void Ring::drain()
{
    while (impl_->in_flight > 0)
        wait(static_cast<unsigned int>(impl_->in_flight));
}

size_t Ring::in_flight() const noexcept
{
    return impl_->in_flight;
}

size_t Ring::capacity() const noexcept
{
    return impl_->cap;
}

} // namespace lite
