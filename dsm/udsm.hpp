// SPDX-License-Identifier: MIT
//
// udsm: the user-level DSM, the baseline the kernel DSM (lite::Dsm) is
// measured against, as in seeds 000/001. The same protocol and the same
// directory code (lite_kmod/core/dsm.c), run in user space over liblite:
//
//  - page faults reach a handler thread through userfaultfd (a missing page,
//    or a write to a write-protected read copy);
//  - the protocol's messages are lite RPC calls between the participants'
//    service threads (the home runs the directory);
//  - page bytes move with LITE_read from the LMR where each participant
//    keeps the bytes it may be asked for (copied there when its copy is
//    downgraded or dropped).
//
// A participant is one udsm::Region object: a process may hold several, on
// several nodes (each through its own lite::Session, which must outlive
// it). Every access that cannot be served ends the process with SIGBUS.
// It is a baseline, not a service: it does not heal (a participant that
// goes away, cleanly or not, before the others are done makes their next
// access to its pages fail), the home must be destroyed last, and its
// memory must not be the target of pinned I/O (O_DIRECT, lite's zero-copy
// transfers), which would bypass the write protection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <lite/session.hpp>

namespace udsm
{

class Region
{
public:
    // A region of @size bytes (a multiple of 4096) homed at @s's node.
    [[nodiscard]] static Region create(const lite::Session& s, std::string_view name, uint64_t size);
    // A region another participant created.
    [[nodiscard]] static Region open(const lite::Session& s, std::string_view name);

    Region(Region&&) noexcept;
    Region& operator=(Region&&) noexcept;
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    ~Region();

    [[nodiscard]] std::byte* data() const noexcept;
    [[nodiscard]] uint64_t size() const noexcept;
    [[nodiscard]] uint32_t home() const noexcept;

    // The page protection this participant changed for the protocol, as
    // lite's kernel DSM counts its own (lite_dsm_counters.prot_changes and
    // prot_ns): pages dropped (madvise) or write-protected (userfaultfd)
    // for another participant or before new bytes, and the time those
    // system calls took.
    struct Stats {
        uint64_t prot_changes = 0;
        uint64_t prot_ns = 0;
    };
    [[nodiscard]] Stats stats() const noexcept;
    template <class T> [[nodiscard]] T* as(uint64_t offset = 0) const noexcept
    {
        return reinterpret_cast<T*>(data() + offset); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    }

    struct Impl;

private:
    explicit Region(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

} // namespace udsm
