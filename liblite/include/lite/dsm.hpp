// SPDX-License-Identifier: MIT
//
// lite::Dsm: a DSM region mapped into this process. Its bytes are shared,
// sequentially consistently, with every process on every node that maps
// the same region: use them with ordinary loads and stores (and the
// locks and barriers of lite::Lmr, or atomics within one node). An access
// the cluster cannot serve (the page's only copy died with its node, the
// region was destroyed) raises SIGBUS.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <lite/session.hpp>

namespace lite
{

class Dsm
{
public:
    // Create a region of @size bytes (a multiple of 4096) homed on this
    // node, or with @exclusive = false open it if it exists with that size.
    [[nodiscard]] static Dsm create(const Session& s, std::string_view name, uint64_t size, bool exclusive = true)
    {
        return {s, name, size, LITE_DSM_OPEN_CREATE | (exclusive ? LITE_DSM_OPEN_EXCL : 0)};
    }
    // Open an existing region.
    [[nodiscard]] static Dsm open(const Session& s, std::string_view name) { return {s, name, 0, 0}; }

    Dsm(Dsm&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)), base_(std::exchange(other.base_, nullptr)),
          size_(std::exchange(other.size_, 0)), home_(other.home_)
    {
    }
    Dsm& operator=(Dsm&& other) noexcept
    {
        if (this != &other) {
            release();
            fd_ = std::exchange(other.fd_, -1);
            base_ = std::exchange(other.base_, nullptr);
            size_ = std::exchange(other.size_, 0);
            home_ = other.home_;
        }
        return *this;
    }
    Dsm(const Dsm&) = delete;
    Dsm& operator=(const Dsm&) = delete;
    ~Dsm() { release(); }

    [[nodiscard]] std::byte* data() const noexcept { return base_; }
    [[nodiscard]] uint64_t size() const noexcept { return size_; }
    [[nodiscard]] uint32_t home() const noexcept { return home_; }
    [[nodiscard]] int fd() const noexcept { return fd_; }
    template <class T> [[nodiscard]] T* as(uint64_t offset = 0) const noexcept
    {
        return reinterpret_cast<T*>(base_ + offset); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    }

    // Destroy the region everywhere (only through the handle that created
    // it): every mapping of it raises SIGBUS from then on.
    void destroy() const { detail::check(LITE_dsm_destroy(fd_), "destroy the DSM region"); }

private:
    Dsm(const Session& s, std::string_view name, uint64_t size, uint32_t flags)
    {
        const std::string n(name);
        int ret = LITE_dsm_open(s.get(), n.c_str(), size, flags, &fd_, &size_, &home_);
        if (ret < 0)
            detail::fail(ret, "open DSM region " + n);
        void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd_);
            fd_ = -1;
            detail::fail(-err, "map DSM region " + n);
        }
        base_ = static_cast<std::byte*>(p);
    }
    void release() noexcept
    {
        if (base_ != nullptr)
            ::munmap(base_, size_);
        if (fd_ >= 0)
            ::close(fd_);
        base_ = nullptr;
        fd_ = -1;
    }

    int fd_ = -1;
    std::byte* base_ = nullptr;
    uint64_t size_ = 0;
    uint32_t home_ = 0;
};

} // namespace lite
