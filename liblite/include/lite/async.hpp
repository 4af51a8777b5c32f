// SPDX-License-Identifier: MIT
//
// liblite asynchronous API: a Ring (an io_uring on a Session's /dev/lite)
// takes reads, writes, atomics and RPC calls without a system call each,
// submits them in batches and runs a callback per completion. A Ring
// belongs to the thread that made it (IORING_SETUP_SINGLE_ISSUER, where
// the kernel has it): only that thread queues, submits, polls or waits,
// and completions are delivered when it does (IORING_SETUP_DEFER_TASKRUN:
// no interrupting task work). Callbacks run in that thread, never
// concurrently. A callback gets a Result; Result::value() throws
// lite::Error for an operation that failed, as the synchronous call would
// have (the error scheme of the whole C++ API). Buffers given to an
// operation must stay valid until its callback ran. A read or write
// submitted alone with nothing else in flight is polled for at submission
// (LITE_RW_SPIN, docs/uapi.md): at queue depth 1 its completion is
// usually there when submit() or wait() returns, without a wake-up.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <lite/session.hpp>
#include <memory>
#include <span>

namespace lite
{

class Result
{
public:
    Result(int res, uint64_t value, const char* what) noexcept : res_(res), value_(value), what_(what) {}
    [[nodiscard]] bool ok() const noexcept { return res_ >= 0; }
    // The errno of a failed operation, 0 if it succeeded.
    [[nodiscard]] int error() const noexcept { return res_ < 0 ? -res_ : 0; }
    // Atomics: the word's previous value; calls: the reply's length (also
    // in error() == EMSGSIZE's case, through needed()); send_file: the
    // bytes sent; reads and writes: 0.
    // Throws lite::Error if the operation failed.
    [[nodiscard]] uint64_t value() const
    {
        if (res_ < 0)
            detail::fail(res_, what_);
        return value_;
    }
    [[nodiscard]] uint64_t needed() const noexcept { return value_; }
    // A receive's request: its token, sender and length (at the start of
    // the receive's buffer). Throws lite::Error if the receive failed
    // (MessageSizeError if the buffer was too small).
    [[nodiscard]] Incoming incoming() const;

private:
    int res_;
    uint64_t value_;
    const char* what_;
};

using Callback = std::function<void(const Result&)>;

// How a Ring's thread learns that operations completed.
enum class Completion {
    // The kernel queues the completion for the thread, waking it if it
    // waits (a wake-up: about 150 us on a 2-vCPU guest).
    events,
    // The waiting thread polls in the kernel (IORING_SETUP_IOPOLL): no
    // wake-up, but its CPU stays busy while it waits. Reads, writes and
    // atomics only: RPC calls, receives and replies fail with EOPNOTSUPP.
    polled,
};

class Ring
{
public:
    // An io_uring with room for @entries submissions (and twice as many
    // operations in flight) on @session, which must outlive it.
    explicit Ring(const Session& session, unsigned int entries = 128, Completion how = Completion::events);
    Ring(Ring&& o) noexcept;
    Ring& operator=(Ring&& o) noexcept;
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;
    // Waits for the operations in flight (their buffers may be in use).
    ~Ring();

    // Queue an operation (submitted by the next submit(), wait() or when
    // the submission queue is full). When as many operations as the
    // completion queue holds are in flight, first waits for one.
    void read(const Lmr& lmr, uint64_t offset, std::span<std::byte> out, Callback cb);
    void write(const Lmr& lmr, uint64_t offset, std::span<const std::byte> in, Callback cb);
    // Register @bufs with the ring (once; they stay registered for its
    // life); read_fixed and write_fixed then move bytes straight between
    // registered buffer @index (@out / @in inside it) and the LMR.
    void register_buffers(std::span<const std::span<std::byte>> bufs);
    void read_fixed(const Lmr& lmr, uint64_t offset, std::span<std::byte> out, uint16_t index, Callback cb);
    void write_fixed(const Lmr& lmr, uint64_t offset, std::span<const std::byte> in, uint16_t index, Callback cb);
    // @len bytes (at most INT_MAX) of the regular file @fd from
    // @file_offset into @lmr at @offset, from the page cache; the
    // Result's value() is the bytes sent. Runs in an io_uring worker.
    void send_file(const Lmr& lmr, uint64_t offset, int fd, uint64_t file_offset, uint64_t len, Callback cb);
    void fetch_add(const Lmr& lmr, uint64_t offset, uint64_t add, Callback cb);
    void cmp_swap(const Lmr& lmr, uint64_t offset, uint64_t expected, uint64_t desired, Callback cb);
    void call(uint32_t node, uint32_t port, std::span<const std::byte> req, std::span<std::byte> reply, Callback cb,
              std::chrono::milliseconds timeout = {});

    // A server's receive on @service's port (registered on the same
    // Session) into @buf; the callback's Result::incoming() says what came.
    // With nothing queued it waits in the kernel without a thread, up to
    // @timeout (0: until a request comes, or the port is closed: then
    // ENOENT). Receives still waiting when the Ring is destroyed end
    // without touching their buffers.
    void recv(const Service& service, std::span<std::byte> buf, Callback cb, std::chrono::milliseconds timeout = {});
    // Answer the call @token (from a receive on this Session) with @data.
    void reply(uint64_t token, std::span<const std::byte> data, Callback cb);

    // Hand queued operations to the kernel; returns how many.
    unsigned int submit();
    // Run the callbacks of completions that arrived; returns how many.
    unsigned int poll();
    // Submit, then wait until @n more completions ran their callbacks (at
    // most the operations in flight); returns how many ran.
    unsigned int wait(unsigned int n = 1);
    // Submit and wait until nothing is in flight.
    void drain();

    [[nodiscard]] size_t in_flight() const noexcept;
    // Operations that may be in flight at once.
    [[nodiscard]] size_t capacity() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace lite
