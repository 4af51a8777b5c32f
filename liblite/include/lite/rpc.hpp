// SPDX-License-Identifier: MIT
//
// liblite RPC server helper: lite::Server registers a port and runs a
// handler for every call and one-way message to it on a pool of threads,
// until stopped. The primitives underneath (Session::call, Session::send,
// Session::serve, Service) are in lite/session.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <lite/session.hpp>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace lite
{

class Server
{
public:
    // Called for every call and message: @req holds the request. For a call
    // (in.is_call()) it puts the reply at the start of @reply (resizing it
    // as needed; the vector is the thread's own and is reused) and returns
    // its length; for a one-way message the return value is ignored. If it
    // throws, or returns more than reply.size(), the caller gets an empty
    // reply and handler_errors counts it.
    using Handler =
        std::function<size_t(const Incoming& in, std::span<const std::byte> req, std::vector<std::byte>& reply)>;

    struct Stats {
        uint64_t calls = 0;          // calls handled and answered
        uint64_t messages = 0;       // one-way messages handled
        uint64_t handler_errors = 0; // handler threw or returned too much
        uint64_t reply_errors = 0;   // replies the kernel refused (caller gone, timed out)
    };

    // How long a thread waits in recv before it looks at the stop flag: the
    // most stop() waits for an idle thread.
    static constexpr std::chrono::milliseconds kPollInterval{100};
    // How long a thread waits before it receives again when the session's
    // file (more threads than the module's rpc_held_max) or the node holds
    // all the calls it may (EMFILE, EBUSY): the call waits, queued.
    static constexpr std::chrono::milliseconds kHeldFullBackoff{1};

    // Register @port on @session (which must outlive the Server) and start
    // @threads threads (at least 1) running @handler concurrently. Throws
    // Error if the port cannot be registered (EADDRINUSE: taken, usually).
    Server(const Session& session, uint32_t port, Handler handler, unsigned threads = 1);
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    Server(Server&&) = delete;
    Server& operator=(Server&&) = delete;
    ~Server() { stop(); }

    [[nodiscard]] uint32_t port() const noexcept { return service_.port(); }

    // Stop taking requests, let the handlers running finish and reply, join
    // the threads and unregister the port (requests still queued fail on
    // their callers' side). Idempotent; not from inside a handler.
    void stop() noexcept;

    // False once the threads ended: stop() was called, or receiving failed
    // (see error()).
    [[nodiscard]] bool running() const noexcept { return live_threads_.load() > 0; }

    // What ended the threads early (receiving failed in a way that retrying
    // cannot fix, e.g. ENOENT after the port was unregistered behind the
    // Server's back), or null.
    [[nodiscard]] std::exception_ptr error() const;

    [[nodiscard]] Stats stats() const noexcept;

private:
    void run() noexcept;
    // Counts the answer to a call: sent (@status 0) or refused.
    void count_reply(int status, bool handled) noexcept;
    void record_error(std::exception_ptr e) noexcept;

    lite_t* l_;
    Service service_;
    Handler handler_;
    std::atomic<bool> stopping_{false};
    std::atomic<unsigned> live_threads_{0};
    std::atomic<uint64_t> calls_{0};
    std::atomic<uint64_t> messages_{0};
    std::atomic<uint64_t> handler_errors_{0};
    std::atomic<uint64_t> reply_errors_{0};
    mutable std::mutex error_mutex_;
    std::exception_ptr error_; // guarded by error_mutex_
    std::mutex stop_mutex_;
    std::vector<std::thread> threads_; // guarded by stop_mutex_ after construction
};

} // namespace lite
