// SPDX-License-Identifier: GPL-2.0
// The verb-free kernel core, seen from C++ host tests.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
extern "C" {
#include "core/auth.h"
#include "core/credits.h"
#include "core/membership.h"
#include "core/wire.h"
}
#pragma GCC diagnostic pop

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace lite_test
{

inline lite_naddr v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
    lite_naddr n{};
    n.family = LITE_WIRE_AF_INET;
    n.port = port;
    n.addr[0] = a;
    n.addr[1] = b;
    n.addr[2] = c;
    n.addr[3] = d;
    return n;
}

// A whole message: header + payload.
inline std::vector<uint8_t> message(uint8_t type, bool reply, uint32_t req_id, int status, const void* payload,
                                    uint32_t len, uint16_t src = 1)
{
    std::vector<uint8_t> buf(sizeof(lite_wire_hdr) + len);
    size_t h = lite_wire_put_hdr(buf.data(), type, reply, src, 0, req_id, status, len);
    if (len)
        std::memcpy(buf.data() + h, payload, len);
    return buf;
}

// Bytes at the very end of a readable page with an inaccessible page after
// it: code that reads past them faults (what ASan shows the fuzzers).
class GuardedBytes
{
public:
    explicit GuardedBytes(const std::vector<uint8_t>& bytes) : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE)))
    {
        if (bytes.size() > page_)
            throw std::length_error("GuardedBytes: more than a page");
        map_ = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map_ == MAP_FAILED || mprotect(static_cast<uint8_t*>(map_) + page_, page_, PROT_NONE))
            throw std::runtime_error("GuardedBytes: mmap");
        data_ = static_cast<uint8_t*>(map_) + page_ - bytes.size();
        if (!bytes.empty())
            std::memcpy(data_, bytes.data(), bytes.size());
    }
    GuardedBytes(const GuardedBytes&) = delete;
    GuardedBytes& operator=(const GuardedBytes&) = delete;
    GuardedBytes(GuardedBytes&&) = delete;
    GuardedBytes& operator=(GuardedBytes&&) = delete;
    ~GuardedBytes() { munmap(map_, 2 * page_); }

    [[nodiscard]] const uint8_t* data() const { return data_; }

private:
    size_t page_;
    void* map_ = nullptr;
    uint8_t* data_ = nullptr;
};

// Parse a message that ends right before a guard page.
inline int parse_guarded(const std::vector<uint8_t>& m)
{
    GuardedBytes g(m);
    lite_msg tmp{};
    return lite_wire_parse(g.data(), m.size(), &tmp);
}

inline lite_wire_hdr* hdr(std::vector<uint8_t>& m)
{
    return reinterpret_cast<lite_wire_hdr*>(m.data());
}

inline int parse(const std::vector<uint8_t>& m, lite_msg* out = nullptr)
{
    lite_msg tmp{};
    return lite_wire_parse(m.data(), m.size(), out ? out : &tmp);
}

} // namespace lite_test
