// SPDX-License-Identifier: MIT
//
// liblite C++ data API: a Session (an open /dev/lite attached to a node)
// and Lmr handles (RAII, move-only) with read/write/atomics over std::span;
// RPC (Session::call, Session::send, Session::serve -> Service) and
// LMR-based locks (Lmr::lock -> Lock) and barriers. Errors throw
// lite::Error, like the rest of the C++ API, and a timeout is an error too
// (ETIMEDOUT); the C API in lite/lite.h underneath returns -errno.
// lite/rpc.hpp adds lite::Server, a thread pool around a Service.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <lite/lite.h>
#include <lite/lite.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace lite
{

namespace detail
{

// Throw Error(-@ret). Its what() ends with the errno's text already; add
// LITE_strerror()'s words only where they say more.
[[noreturn]] inline void fail(int ret, const std::string& what)
{
    const char* lite_msg = LITE_strerror(ret);
    if (std::strcmp(lite_msg, std::strerror(-ret)) == 0)
        throw Error(-ret, what);
    throw Error(-ret, what + ": " + lite_msg);
}

inline void check(int ret, const char* what)
{
    if (ret < 0)
        fail(ret, what);
}

struct Closer {
    void operator()(lite_t* l) const noexcept { LITE_close(l); }
};

// A timeout for the uapi: milliseconds, 0 = the kernel's default.
inline uint32_t timeout_ms(std::chrono::milliseconds timeout)
{
    if (timeout.count() < 0)
        throw Error(EINVAL, "negative timeout");
    if (timeout.count() > std::numeric_limits<uint32_t>::max())
        return std::numeric_limits<uint32_t>::max();
    return static_cast<uint32_t>(timeout.count());
}

} // namespace detail

// EMSGSIZE with the size that was needed: a reply longer than the buffer
// given to Session::call (the reply is lost), or a request longer than the
// buffer given to Service::recv (it stays queued).
class MessageSizeError : public Error
{
public:
    MessageSizeError(size_t needed, const std::string& what) : Error(EMSGSIZE, what), needed_(needed) {}
    [[nodiscard]] size_t needed() const noexcept { return needed_; }

private:
    size_t needed_;
};

// A call or one-way message taken by Service::recv.
struct Incoming {
    uint64_t token = 0;    // for Service::reply; 0 for a one-way message
    uint32_t src_node = 0; // the sender's node
    size_t len = 0;        // bytes at the start of the receive buffer
    [[nodiscard]] bool is_call() const noexcept { return token != 0; }
};

class Lmr;
class Service;

// An open /dev/lite attached to one local node. Move-only. LMRs it hands
// out must not outlive it.
class Session
{
public:
    [[nodiscard]] static Session open(unsigned int instance)
    {
        lite_t* l = nullptr;
        detail::check(LITE_open(instance, &l), "attach to the lite node");
        return Session(l);
    }

    // The only node instance on this host.
    [[nodiscard]] static Session open_default()
    {
        lite_t* l = nullptr;
        detail::check(LITE_open_default(&l), "attach to the lite node");
        return Session(l);
    }

    [[nodiscard]] uint32_t node_id() const noexcept { return LITE_node_id(l_.get()); }
    [[nodiscard]] lite_t* get() const noexcept { return l_.get(); }

    // @size bytes on @node (0: this node), zeroed; @flags: LITE_LMR_*.
    [[nodiscard]] Lmr alloc(uint64_t size, uint32_t node = 0, uint32_t flags = 0) const;
    // A published LMR, with @perms (0: all that was granted).
    [[nodiscard]] Lmr map(std::string_view name, uint32_t perms = 0) const;
    void revoke(std::string_view name) const
    {
        detail::check(LITE_revoke(l_.get(), std::string(name).c_str()), "revoke");
    }

    // Call @port on @node (0: this node) with @req and wait for the reply,
    // which goes to the start of @reply; returns its length. Throws
    // MessageSizeError if the reply is longer than @reply, Error(ETIMEDOUT)
    // if none came within @timeout (0: LITE_RPC_TIMEOUT_MS).
    [[nodiscard]] size_t call(uint32_t node, uint32_t port, std::span<const std::byte> req, std::span<std::byte> reply,
                              std::chrono::milliseconds timeout = {}) const
    {
        size_t len = 0;
        int ret = LITE_rpc_call(l_.get(), node, port, req.data(), req.size(), reply.data(), reply.size(), &len,
                                detail::timeout_ms(timeout));
        if (ret == -EMSGSIZE && len > reply.size()) {
            throw MessageSizeError(len, "call port " + std::to_string(port) + " on node " + std::to_string(node) +
                                            ": reply of " + std::to_string(len) + " bytes, buffer " +
                                            std::to_string(reply.size()));
        }
        if (ret < 0)
            detail::fail(ret, "call port " + std::to_string(port) + " on node " + std::to_string(node));
        return len;
    }

    // One-way message to @port on @node (0: this node). @timeout bounds the
    // wait for ring space (0: LITE_RPC_TIMEOUT_MS).
    void send(uint32_t node, uint32_t port, std::span<const std::byte> msg,
              std::chrono::milliseconds timeout = {}) const
    {
        int ret = LITE_msg_send(l_.get(), node, port, msg.data(), msg.size(), detail::timeout_ms(timeout));
        if (ret < 0)
            detail::fail(ret, "send to port " + std::to_string(port) + " on node " + std::to_string(node));
    }

    // Serve @port (not 0) on this node until the Service is destroyed.
    [[nodiscard]] Service serve(uint32_t port) const;

private:
    explicit Session(lite_t* l) noexcept : l_(l) {}
    std::unique_ptr<lite_t, detail::Closer> l_;
};

// A lock held in an LMR word (Lmr::lock, Lmr::try_lock); unlocks when
// destroyed. Move-only; must not outlive the Lmr it came from. The lock is
// held by the Session's open file: threads that must exclude each other
// take it through Sessions of their own.
class Lock
{
public:
    Lock(Lock&& o) noexcept
        : l_(std::exchange(o.l_, nullptr)), h_(std::exchange(o.h_, 0)), offset_(std::exchange(o.offset_, 0))
    {
    }
    Lock& operator=(Lock&& o) noexcept
    {
        if (this != &o) {
            reset();
            l_ = std::exchange(o.l_, nullptr);
            h_ = std::exchange(o.h_, 0);
            offset_ = std::exchange(o.offset_, 0);
        }
        return *this;
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    ~Lock() { reset(); }

    [[nodiscard]] bool owns_lock() const noexcept { return l_ != nullptr; }
    explicit operator bool() const noexcept { return owns_lock(); }

    // Release now, reporting failure (the destructor ignores it). The guard
    // holds nothing afterwards, whatever happened.
    void unlock()
    {
        if (l_ == nullptr)
            throw Error(EPERM, "unlock: the guard does not hold the lock");
        int ret = LITE_unlock(std::exchange(l_, nullptr), h_, offset_);
        if (ret < 0)
            detail::fail(ret, "unlock at offset " + std::to_string(offset_));
    }

private:
    friend class Lmr;
    Lock(lite_t* l, lite_lmr_t h, uint64_t offset) noexcept : l_(l), h_(h), offset_(offset) {}
    void reset() noexcept
    {
        if (l_ != nullptr)
            (void)LITE_unlock(l_, h_, offset_);
        l_ = nullptr;
    }

    lite_t* l_ = nullptr; // not owned; null once released
    lite_lmr_t h_ = 0;
    uint64_t offset_ = 0;
};

// An LMR handle. Frees the LMR (if this session allocated it) or drops the
// mapping when destroyed. Move-only.
class Lmr
{
public:
    Lmr(Lmr&& o) noexcept
        : l_(std::exchange(o.l_, nullptr)), h_(std::exchange(o.h_, 0)), size_(std::exchange(o.size_, 0))
    {
    }
    Lmr& operator=(Lmr&& o) noexcept
    {
        if (this != &o) {
            reset();
            l_ = std::exchange(o.l_, nullptr);
            h_ = std::exchange(o.h_, 0);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }
    Lmr(const Lmr&) = delete;
    Lmr& operator=(const Lmr&) = delete;
    ~Lmr() { reset(); }

    [[nodiscard]] uint64_t size() const noexcept { return size_; }
    [[nodiscard]] lite_lmr_t handle() const noexcept { return h_; }
    // The session (lite_t) the handle belongs to.
    [[nodiscard]] lite_t* session() const noexcept { return l_; }

    void read(uint64_t offset, std::span<std::byte> out) const
    {
        detail::check(LITE_read(l_, h_, offset, out.data(), out.size()), "read");
    }
    void write(uint64_t offset, std::span<const std::byte> in) const
    {
        detail::check(LITE_write(l_, h_, offset, in.data(), in.size()), "write");
    }
    template <class T>
    requires std::is_trivially_copyable_v<T>
    void read(uint64_t offset, std::span<T> out) const { read(offset, std::as_writable_bytes(out)); }
    template <class T>
    requires std::is_trivially_copyable_v<T>
    void write(uint64_t offset, std::span<const T> in) const { write(offset, std::as_bytes(in)); }

    // On one 8-byte aligned word; return its previous value. Like
    // std::atomic::fetch_add, callers that only add may ignore it.
    // NOLINTNEXTLINE(modernize-use-nodiscard)
    uint64_t fetch_add(uint64_t offset, uint64_t add) const
    {
        uint64_t old = 0;
        detail::check(LITE_fetch_add(l_, h_, offset, add, &old), "fetch_add");
        return old;
    }
    [[nodiscard]] uint64_t cmp_swap(uint64_t offset, uint64_t expected, uint64_t desired) const
    {
        uint64_t old = 0;
        detail::check(LITE_cmp_swap(l_, h_, offset, expected, desired, &old), "cmp_swap");
        return old;
    }

    void fill(uint64_t offset, std::byte value, uint64_t len) const
    {
        detail::check(LITE_memset(l_, h_, offset, std::to_integer<int>(value), len), "memset");
    }
    // Copy @len bytes from @src at @src_offset to this LMR at @offset.
    void copy_from(uint64_t offset, const Lmr& src, uint64_t src_offset, uint64_t len) const
    {
        detail::check(LITE_memcpy(l_, h_, offset, src.h_, src_offset, len), "memcpy");
    }

    // Write @len bytes of the regular file @fd from @file_offset into this
    // LMR at @offset, straight from the page cache (no copy, no
    // registration). Returns the bytes sent: fewer than @len if the file
    // ended first, a signal arrived or a read failed after some bytes (call
    // again for the rest; 0 only at the end of the file).
    // NOLINTNEXTLINE(modernize-use-nodiscard)
    uint64_t send_file(uint64_t offset, int fd, uint64_t file_offset, uint64_t len) const
    {
        int64_t ret = LITE_sendfile(l_, fd, file_offset, len, h_, offset);
        if (ret < 0)
            detail::fail(static_cast<int>(ret), "sendfile");
        return static_cast<uint64_t>(ret);
    }

    // Publish under @name with @perms (LITE_PERM_*).
    void share(std::string_view name, uint32_t perms) const
    {
        detail::check(LITE_share(l_, h_, std::string(name).c_str(), perms), "share");
    }

    // The fair lock in the 8-byte aligned word at @offset (zero = free;
    // needs LITE_PERM_ATOMIC). Waits up to @timeout (0: LITE_RPC_TIMEOUT_MS)
    // and throws Error(ETIMEDOUT) then.
    [[nodiscard]] Lock lock(uint64_t offset, std::chrono::milliseconds timeout = {}) const
    {
        int ret = LITE_lock(l_, h_, offset, detail::timeout_ms(timeout));
        if (ret < 0)
            detail::fail(ret, "lock at offset " + std::to_string(offset));
        return {l_, h_, offset};
    }
    // The same without waiting: nothing if someone holds the lock.
    [[nodiscard]] std::optional<Lock> try_lock(uint64_t offset) const
    {
        int ret = LITE_trylock(l_, h_, offset);
        if (ret == -EAGAIN)
            return std::nullopt;
        if (ret < 0)
            detail::fail(ret, "try_lock at offset " + std::to_string(offset));
        return Lock(l_, h_, offset);
    }

    // Wait until @count participants (1..65535, on any nodes) arrived at the
    // barrier in the 8-byte aligned word at @offset; up to @timeout (0:
    // LITE_RPC_TIMEOUT_MS), then Error(ETIMEDOUT).
    void barrier(uint64_t offset, uint32_t count, std::chrono::milliseconds timeout = {}) const
    {
        int ret = LITE_barrier(l_, h_, offset, count, detail::timeout_ms(timeout));
        if (ret < 0)
            detail::fail(ret, "barrier at offset " + std::to_string(offset));
    }

private:
    friend class Session;
    Lmr(lite_t* l, lite_lmr_t h, uint64_t size) noexcept : l_(l), h_(h), size_(size) {}
    void reset() noexcept
    {
        if (l_ != nullptr && h_ != 0)
            (void)LITE_free(l_, h_);
        l_ = nullptr;
        h_ = 0;
    }

    lite_t* l_ = nullptr; // not owned: the Session outlives its LMRs
    lite_lmr_t h_ = 0;
    uint64_t size_ = 0;
};

inline Lmr Session::alloc(uint64_t size, uint32_t node, uint32_t flags) const
{
    lite_lmr_t h = 0;
    detail::check(LITE_alloc_flags(l_.get(), size, node, flags, &h), "alloc");
    return {l_.get(), h, size};
}

inline Lmr Session::map(std::string_view name, uint32_t perms) const
{
    lite_lmr_t h = 0;
    uint64_t size = 0;
    detail::check(LITE_map(l_.get(), std::string(name).c_str(), perms, &h, &size), "map");
    return {l_.get(), h, size};
}

// A registered RPC port: takes the calls and one-way messages sent to it;
// unregisters it when destroyed. Move-only; must not outlive its Session.
// Any number of threads may receive and reply through one Service.
class Service
{
public:
    Service(Service&& o) noexcept
        : l_(std::exchange(o.l_, nullptr)), port_(std::exchange(o.port_, 0)), registered_(o.registered_.exchange(false))
    {
    }
    Service& operator=(Service&& o) noexcept
    {
        if (this != &o) {
            reset();
            l_ = std::exchange(o.l_, nullptr);
            port_ = std::exchange(o.port_, 0);
            registered_ = o.registered_.exchange(false);
        }
        return *this;
    }
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;
    ~Service() { reset(); }

    [[nodiscard]] uint32_t port() const noexcept { return port_; }
    [[nodiscard]] lite_t* session() const noexcept { return l_; }

    // The next call or message, into the start of @buf. Throws
    // MessageSizeError if it does not fit (it stays queued; needed() is its
    // size), Error(ETIMEDOUT) after @timeout (0: wait until a signal, then
    // Error(EINTR)), Error(ENOENT) once the port is unregistered.
    [[nodiscard]] Incoming recv(std::span<std::byte> buf, std::chrono::milliseconds timeout = {}) const
    {
        lite_rpc_in_t in{};
        int ret = LITE_rpc_recv(l_, port_, buf.data(), buf.size(), detail::timeout_ms(timeout), &in);
        if (ret == -EMSGSIZE && in.len > buf.size()) {
            throw MessageSizeError(in.len, "receive on port " + std::to_string(port_) + ": request of " +
                                               std::to_string(in.len) + " bytes, buffer " + std::to_string(buf.size()));
        }
        if (ret < 0)
            detail::fail(ret, "receive on port " + std::to_string(port_));
        return {in.token, in.src_node, in.len};
    }

    // The same into @buf, which grows (never shrinks) until the request
    // fits; the request is then at buf[0, len).
    [[nodiscard]] Incoming recv(std::vector<std::byte>& buf, std::chrono::milliseconds timeout = {}) const
    {
        for (;;) {
            try {
                return recv(std::span<std::byte>(buf), timeout);
            } catch (const MessageSizeError& e) {
                buf.resize(e.needed()); // if another thread takes it first, the next may differ
            }
        }
    }

    // Answer the call @token with @data (at most the caller's reply buffer).
    void reply(uint64_t token, std::span<const std::byte> data) const
    {
        int ret = LITE_rpc_reply(l_, token, data.data(), data.size());
        if (ret < 0)
            detail::fail(ret, "reply on port " + std::to_string(port_));
    }

    // Unregister now, reporting failure (the destructor ignores it). Safe
    // while other threads wait in recv: they wake with Error(ENOENT).
    void close() const
    {
        if (!registered_.exchange(false))
            return;
        int ret = LITE_rpc_unregister(l_, port_);
        if (ret < 0)
            detail::fail(ret, "unregister port " + std::to_string(port_));
    }

private:
    friend class Session;
    Service(lite_t* l, uint32_t port) noexcept : l_(l), port_(port), registered_(true) {}
    void reset() noexcept
    {
        if (registered_.exchange(false))
            (void)LITE_rpc_unregister(l_, port_);
        l_ = nullptr;
    }

    lite_t* l_ = nullptr; // not owned: the Session outlives its Services
    uint32_t port_ = 0;
    mutable std::atomic<bool> registered_{false};
};

inline Service Session::serve(uint32_t port) const
{
    int ret = LITE_rpc_register(l_.get(), port);
    if (ret < 0)
        detail::fail(ret, "register port " + std::to_string(port));
    return {l_.get(), port};
}

} // namespace lite
