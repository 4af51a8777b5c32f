// SPDX-License-Identifier: MIT
//
// The wire format of kv_server and kv_client: one RPC call per operation.
// All integers are little-endian; both sides check every length.
//
// Request (8-byte header, then the key, then the value):
//   [0]     op: 1 GET, 2 PUT, 3 DELETE
//   [1]     key length, 1..255
//   [2..3]  zero
//   [4..7]  value length, 0..1 MiB (PUT only; 0 for GET and DELETE)
//   [8..]   key bytes, then value bytes; nothing after them
//
// Reply (8-byte header, then the value):
//   [0]     status: 0 OK, 1 NOT_FOUND, 2 BAD_REQUEST
//   [1..3]  zero
//   [4..7]  value length, 0..1 MiB (only for GET with OK; else 0)
//   [8..]   value bytes; nothing after them
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kv
{

constexpr uint32_t kDefaultPort = 4000;
constexpr size_t kHeader = 8;
constexpr size_t kMaxKey = 255;
constexpr size_t kMaxValue = size_t{1} << 20;
constexpr size_t kMaxRequest = kHeader + kMaxKey + kMaxValue;
constexpr size_t kMaxReply = kHeader + kMaxValue;

enum class Op : uint8_t { get = 1, put = 2, del = 3 };
enum class Status : uint8_t { ok = 0, not_found = 1, bad_request = 2 };

inline const char* status_name(Status s)
{
    switch (s) {
    case Status::ok:
        return "OK";
    case Status::not_found:
        return "NOT_FOUND";
    case Status::bad_request:
        return "BAD_REQUEST";
    }
    return "?";
}

inline void put_le32(std::byte* p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

inline uint32_t get_le32(const std::byte* p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= std::to_integer<uint32_t>(p[i]) << (8 * i);
    return v;
}

// Throws std::invalid_argument if @key or @value has a length the format
// does not allow, or a GET/DELETE carries a value.
inline std::vector<std::byte> encode_request(Op op, std::string_view key, std::span<const std::byte> value)
{
    if (key.empty() || key.size() > kMaxKey)
        throw std::invalid_argument("keys are 1 to " + std::to_string(kMaxKey) + " bytes");
    if (value.size() > kMaxValue)
        throw std::invalid_argument("values are at most " + std::to_string(kMaxValue) + " bytes");
    if (op != Op::put && !value.empty())
        throw std::invalid_argument("only PUT carries a value");
    std::vector<std::byte> msg(kHeader + key.size() + value.size());
    msg[0] = static_cast<std::byte>(op);
    msg[1] = static_cast<std::byte>(key.size());
    put_le32(&msg[4], static_cast<uint32_t>(value.size()));
    std::memcpy(&msg[kHeader], key.data(), key.size());
    if (!value.empty())
        std::memcpy(&msg[kHeader + key.size()], value.data(), value.size());
    return msg;
}

struct Request {
    Op op = Op::get;
    std::string_view key;             // into the message
    std::span<const std::byte> value; // into the message
};

// Nothing if @msg is not a well-formed request.
inline std::optional<Request> decode_request(std::span<const std::byte> msg)
{
    if (msg.size() < kHeader || msg[2] != std::byte{0} || msg[3] != std::byte{0})
        return std::nullopt;
    const auto op = std::to_integer<uint8_t>(msg[0]);
    const auto key_len = std::to_integer<size_t>(msg[1]);
    const size_t value_len = get_le32(&msg[4]);
    if (op < static_cast<uint8_t>(Op::get) || op > static_cast<uint8_t>(Op::del))
        return std::nullopt;
    if (key_len == 0 || value_len > kMaxValue || (op != static_cast<uint8_t>(Op::put) && value_len != 0))
        return std::nullopt;
    if (msg.size() != kHeader + key_len + value_len)
        return std::nullopt;
    Request r;
    r.op = static_cast<Op>(op);
    r.key = std::string_view(reinterpret_cast<const char*>(&msg[kHeader]), key_len);
    r.value = msg.subspan(kHeader + key_len, value_len);
    return r;
}

// Write a reply at the start of @out (grown if needed); returns its length.
inline size_t encode_reply(std::vector<std::byte>& out, Status status, std::span<const std::byte> value = {})
{
    const size_t len = kHeader + value.size();
    if (out.size() < len)
        out.resize(len);
    std::memset(out.data(), 0, kHeader);
    out[0] = static_cast<std::byte>(status);
    put_le32(&out[4], static_cast<uint32_t>(value.size()));
    if (!value.empty())
        std::memcpy(&out[kHeader], value.data(), value.size());
    return len;
}

struct Reply {
    Status status = Status::bad_request;
    std::span<const std::byte> value; // into the message
};

// Nothing if @msg is not a well-formed reply to @op.
inline std::optional<Reply> decode_reply(std::span<const std::byte> msg, Op op)
{
    if (msg.size() < kHeader || msg[1] != std::byte{0} || msg[2] != std::byte{0} || msg[3] != std::byte{0})
        return std::nullopt;
    const auto status = std::to_integer<uint8_t>(msg[0]);
    const size_t value_len = get_le32(&msg[4]);
    if (status > static_cast<uint8_t>(Status::bad_request))
        return std::nullopt;
    if (value_len > kMaxValue || msg.size() != kHeader + value_len)
        return std::nullopt;
    if (value_len != 0 && (op != Op::get || status != static_cast<uint8_t>(Status::ok)))
        return std::nullopt;
    Reply r;
    r.status = static_cast<Status>(status);
    r.value = msg.subspan(kHeader, value_len);
    return r;
}

} // namespace kv
