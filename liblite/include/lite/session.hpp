// SPDX-License-Identifier: MIT
//
// liblite C++ data API: a Session (an open /dev/lite attached to a node)
// and Lmr handles (RAII, move-only) with read/write/atomics over std::span.
// Errors throw lite::Error, like the rest of the C++ API; the C API in
// lite/lite.h underneath returns -errno.
#pragma once

#include <cstddef>
#include <cstdint>
#include <lite/lite.h>
#include <lite/lite.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace lite
{

namespace detail
{

inline void check(int ret, const char* what)
{
    if (ret < 0)
        throw Error(-ret, std::string(what) + ": " + LITE_strerror(ret));
}

struct Closer {
    void operator()(lite_t* l) const noexcept { LITE_close(l); }
};

} // namespace detail

class Lmr;

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

    // @size bytes on @node (0: this node), zeroed.
    [[nodiscard]] Lmr alloc(uint64_t size, uint32_t node = 0) const;
    // A published LMR, with @perms (0: all that was granted).
    [[nodiscard]] Lmr map(std::string_view name, uint32_t perms = 0) const;
    void revoke(std::string_view name) const
    {
        detail::check(LITE_revoke(l_.get(), std::string(name).c_str()), "revoke");
    }

private:
    explicit Session(lite_t* l) noexcept : l_(l) {}
    std::unique_ptr<lite_t, detail::Closer> l_;
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

    // Publish under @name with @perms (LITE_PERM_*).
    void share(std::string_view name, uint32_t perms) const
    {
        detail::check(LITE_share(l_, h_, std::string(name).c_str(), perms), "share");
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

inline Lmr Session::alloc(uint64_t size, uint32_t node) const
{
    lite_lmr_t h = 0;
    detail::check(LITE_alloc(l_.get(), size, node, &h), "alloc");
    return {l_.get(), h, size};
}

inline Lmr Session::map(std::string_view name, uint32_t perms) const
{
    lite_lmr_t h = 0;
    uint64_t size = 0;
    detail::check(LITE_map(l_.get(), std::string(name).c_str(), perms, &h, &size), "map");
    return {l_.get(), h, size};
}

} // namespace lite
