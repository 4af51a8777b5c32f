// SPDX-License-Identifier: MIT
//
// The wire format of file_server and file_client: one RPC call per file
// range. The client owns the destination: an LMR it published (LITE_share)
// under a name, with write permission for the server. All integers are
// little-endian (this host's order: both sides run lite on x86-64); both
// sides check every length.
//
// Request (fixed 48-byte header, then the names):
//   [0..7]   offset in the file
//   [8..15]  bytes wanted
//   [16..23] offset in the LMR
//   [24]     flags: bit 0 = also return the FNV-1a checksum of what was sent
//   [25..27] zero
//   [28..29] LMR name length, 1..63
//   [30..31] path length, 1..4095 (relative to the server's root, no "..")
//   [32..47] zero
//   [48..]   the LMR's published name, then the path; nothing after them
//
// Reply (24 bytes):
//   [0..3]   status: 0 OK, else an errno (positive) naming what failed
//   [4..7]   zero
//   [8..15]  bytes sent (less than wanted only at the end of the file)
//   [16..23] FNV-1a of the bytes sent (flag bit 0), else 0
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace filesrv
{

constexpr uint32_t kDefaultPort = 4100;
constexpr size_t kHeader = 48;
constexpr size_t kMaxName = 63;
constexpr size_t kMaxPath = 4095;
constexpr size_t kMaxRequest = kHeader + kMaxName + kMaxPath;
constexpr size_t kReply = 24;
constexpr uint8_t kWantSum = 1;

struct Request {
    uint64_t file_offset = 0;
    uint64_t len = 0;
    uint64_t lmr_offset = 0;
    uint8_t flags = 0;
    std::string lmr_name;
    std::string path;
};

struct Reply {
    uint32_t status = 0;
    uint64_t sent = 0;
    uint64_t sum = 0;
};

inline uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 0xcbf29ce484222325ULL)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

template <typename T> void put(std::vector<std::byte>& out, size_t at, T v)
{
    std::memcpy(out.data() + at, &v, sizeof(v));
}

template <typename T> T get(std::span<const std::byte> in, size_t at)
{
    T v{};
    std::memcpy(&v, in.data() + at, sizeof(v));
    return v;
}

inline std::vector<std::byte> encode(const Request& r)
{
    std::vector<std::byte> out(kHeader + r.lmr_name.size() + r.path.size());
    put(out, 0, r.file_offset);
    put(out, 8, r.len);
    put(out, 16, r.lmr_offset);
    put(out, 24, r.flags);
    put(out, 28, static_cast<uint16_t>(r.lmr_name.size()));
    put(out, 30, static_cast<uint16_t>(r.path.size()));
    std::memcpy(out.data() + kHeader, r.lmr_name.data(), r.lmr_name.size());
    std::memcpy(out.data() + kHeader + r.lmr_name.size(), r.path.data(), r.path.size());
    return out;
}

// A request, or nothing if any field or length is out of its range.
inline std::optional<Request> decode(std::span<const std::byte> in)
{
    if (in.size() < kHeader)
        return std::nullopt;
    Request r;
    r.file_offset = get<uint64_t>(in, 0);
    r.len = get<uint64_t>(in, 8);
    r.lmr_offset = get<uint64_t>(in, 16);
    r.flags = get<uint8_t>(in, 24);
    const auto name_len = get<uint16_t>(in, 28);
    const auto path_len = get<uint16_t>(in, 30);
    bool zero = true;
    for (size_t i : {25, 26, 27})
        zero = zero && in[i] == std::byte{0};
    for (size_t i = 32; i < kHeader; i++)
        zero = zero && in[i] == std::byte{0};
    if (!zero || (r.flags & ~kWantSum) != 0 || name_len == 0 || name_len > kMaxName || path_len == 0 ||
        path_len > kMaxPath || in.size() != kHeader + name_len + path_len)
        return std::nullopt;
    const auto* p = reinterpret_cast<const char*>(in.data()) + kHeader;
    r.lmr_name.assign(p, name_len);
    r.path.assign(p + name_len, path_len);
    if (r.lmr_name.find('\0') != std::string::npos || r.path.find('\0') != std::string::npos)
        return std::nullopt;
    return r;
}

inline std::vector<std::byte> encode(const Reply& r)
{
    std::vector<std::byte> out(kReply);
    put(out, 0, r.status);
    put(out, 8, r.sent);
    put(out, 16, r.sum);
    return out;
}

inline std::optional<Reply> decode_reply(std::span<const std::byte> in)
{
    if (in.size() != kReply)
        return std::nullopt;
    return Reply{get<uint32_t>(in, 0), get<uint64_t>(in, 8), get<uint64_t>(in, 16)};
}

} // namespace filesrv
