// SPDX-License-Identifier: MIT
// lite::Server: a thread pool taking the calls and messages of one port.
#include <cerrno>
#include <lite/rpc.hpp>
#include <string>
#include <system_error>
#include <utility>

namespace lite
{

namespace
{

constexpr size_t kInitialBuffer = size_t{64} * 1024; // grows to the largest request seen

} // namespace

Server::Server(const Session& session, uint32_t port, Handler handler, unsigned threads)
    : l_(session.get()), service_(session.serve(port)), handler_(std::move(handler))
{
    if (threads == 0)
        throw Error(EINVAL, "server on port " + std::to_string(port) + ": needs at least one thread");
    if (!handler_)
        throw Error(EINVAL, "server on port " + std::to_string(port) + ": no handler");
    try {
        threads_.reserve(threads);
        for (unsigned i = 0; i < threads; i++) {
            live_threads_.fetch_add(1);
            try {
                threads_.emplace_back([this] { run(); });
            } catch (...) {
                live_threads_.fetch_sub(1);
                throw;
            }
        }
    } catch (...) {
        stop();
        throw;
    }
}

void Server::stop() noexcept
{
    const std::lock_guard<std::mutex> guard(stop_mutex_);
    stopping_.store(true);
    for (auto& t : threads_) {
        try {
            if (t.joinable())
                t.join();
        } catch (const std::system_error&) {
            // Only if called from a handler, which the interface rules out.
        }
    }
    threads_.clear();
    try {
        service_.close();
    } catch (const std::exception&) {
        // Unregistered already (the node went down): nothing left to undo.
    }
}

std::exception_ptr Server::error() const
{
    const std::lock_guard<std::mutex> guard(error_mutex_);
    return error_;
}

Server::Stats Server::stats() const noexcept
{
    Stats s;
    s.calls = calls_.load();
    s.messages = messages_.load();
    s.handler_errors = handler_errors_.load();
    s.reply_errors = reply_errors_.load();
    return s;
}

void Server::record_error(std::exception_ptr e) noexcept
{
    const std::lock_guard<std::mutex> guard(error_mutex_);
    if (!error_)
        error_ = std::move(e);
}

void Server::count_reply(int status, bool handled) noexcept
{
    if (status < 0) {
        reply_errors_.fetch_add(1);
    } else if (handled) {
        calls_.fetch_add(1);
    }
}

void Server::run() noexcept
{
    const auto poll_ms = static_cast<uint32_t>(kPollInterval.count());
    const uint32_t port = service_.port();
    std::vector<std::byte> req;
    std::vector<std::byte> reply;

    try {
        req.resize(kInitialBuffer);
    } catch (...) {
        record_error(std::current_exception());
        stopping_.store(true);
    }

    // The answer to the call handled last goes out with the next receive.
    uint64_t token = 0;
    size_t reply_len = 0;
    bool reply_ok = false;
    while (!stopping_.load()) {
        lite_rpc_in_t in{};
        int ret = LITE_rpc_reply_recv(l_, token, reply.data(), reply_len, port, req.data(), req.size(), poll_ms, &in);
        if (token != 0) {
            count_reply(in.reply_status, reply_ok);
            token = 0;
        }
        if (ret == -ETIMEDOUT || ret == -EINTR)
            continue;
        if (ret == -EMFILE || ret == -EBUSY) {
            // The file (rpc_held_max) or the node holds as many calls as it
            // may: this thread holds none now, the others answer theirs.
            // The call stays queued; take it a little later.
            std::this_thread::sleep_for(kHeldFullBackoff);
            continue;
        }
        if (ret == -EMSGSIZE && in.len > req.size() && in.len <= LITE_RPC_MAX) {
            try {
                req.resize(in.len); // then take it again (or whatever came first)
                continue;
            } catch (...) {
                record_error(std::current_exception());
                break;
            }
        }
        if (ret < 0) {
            if (!stopping_.load()) {
                try {
                    detail::fail(ret, "receive on port " + std::to_string(port));
                } catch (...) {
                    record_error(std::current_exception());
                }
            }
            break;
        }

        const Incoming inc{in.token, in.src_node, in.len};
        size_t n = 0;
        bool ok = true;
        try {
            n = handler_(inc, std::span<const std::byte>(req.data(), in.len), reply);
            ok = n <= reply.size();
        } catch (...) {
            ok = false;
        }
        if (!ok) {
            handler_errors_.fetch_add(1);
            n = 0;
        }
        if (!inc.is_call()) {
            if (ok)
                messages_.fetch_add(1);
            continue;
        }
        token = in.token;
        reply_len = n;
        reply_ok = ok;
    }
    if (token != 0) {
        // Stopping: the last call still gets its answer.
        count_reply(LITE_rpc_reply(l_, token, reply.data(), reply_len), reply_ok);
    }
    live_threads_.fetch_sub(1);
}

} // namespace lite
