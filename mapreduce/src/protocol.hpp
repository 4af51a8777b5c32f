// SPDX-License-Identifier: MIT
//
// lite-MapReduce's control messages, carried by lite RPC: workers call the
// master's port (HELLO once, then NEXT for every task and BEAT as a
// heartbeat), and mappers call the port of the worker that owns a
// partition (RESERVE, for room in its inbox). The bulk data never goes
// through these: it moves with one-sided writes and reads of LMRs.
//
// A message is a sequence of little-endian u32/u64 and length-prefixed
// strings; a reply starts with a u32 status (0, or an errno with a text).
// Readers check every length: a short or overlong message is BadMessage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mr::wire
{

// Calls on the master's port (the first u32 of a request).
enum class MasterOp : uint32_t {
    hello = 1, // node, port, threads, pid -> worker id, lease ms
    next = 2,  // worker id, a Report of the last task -> a Task
    beat = 3,  // worker id -> nothing
};

// Calls on a worker's port.
enum class WorkerOp : uint32_t {
    reserve = 1, // job, partition, bytes -> segment name, offset
};

// What a worker tells the master with NEXT about the task it just did.
enum class Report : uint32_t {
    none = 0,
    joined = 1,  // job
    mapped = 2,  // job, task, input bytes, shuffle bytes, map ns, push ns
    reduced = 3, // job, partition, output name, output bytes, reduce ns
    cleaned = 4, // job
    failed = 5,  // job, the worker to blame (kNoWorker: none), the error
};

// What the master answers NEXT with.
enum class Task : uint32_t {
    wait = 0,    // nothing now: ask again after the pause (ms) it carries
    job = 1,     // job, app, params, inbox hint, partitions and their owners
    map = 2,     // job, task, file, offset, length
    reduce = 3,  // job, partition
    cleanup = 4, // job: release everything of it
    exit = 5,    // the master is done with this worker
};

constexpr uint32_t kNoWorker = std::numeric_limits<uint32_t>::max();

// A control message that does not decode.
class BadMessage : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

class Writer
{
public:
    Writer& u32(uint32_t v) { return put(v, 4); }
    Writer& u64(uint64_t v) { return put(v, 8); }
    template <class E> Writer& op(E e) { return u32(static_cast<uint32_t>(e)); }
    Writer& str(std::string_view s)
    {
        u32(static_cast<uint32_t>(s.size()));
        b_.append(s);
        return *this;
    }
    // Appends what another Writer wrote (a report inside a NEXT).
    Writer& append(const Writer& w)
    {
        b_.append(w.b_);
        return *this;
    }
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return std::as_bytes(std::span(b_)); }

private:
    Writer& put(uint64_t v, size_t n)
    {
        for (size_t i = 0; i < n; i++) {
            b_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
        }
        return *this;
    }
    std::string b_;
};

class Reader
{
public:
    explicit Reader(std::span<const std::byte> b) : b_(b) {}
    uint32_t u32() { return static_cast<uint32_t>(get(4)); }
    uint64_t u64() { return get(8); }
    template <class E> E op() { return static_cast<E>(u32()); }
    std::string str()
    {
        const uint32_t n = u32();
        need(n);
        std::string s(reinterpret_cast<const char*>(b_.data() + at_), n); // NOLINT(*-reinterpret-cast)
        at_ += n;
        return s;
    }
    // Throws if bytes are left over.
    void end() const
    {
        if (at_ != b_.size()) {
            throw BadMessage("mapreduce: " + std::to_string(b_.size() - at_) + " stray bytes after a message");
        }
    }

private:
    void need(size_t n) const
    {
        if (b_.size() - at_ < n) {
            throw BadMessage("mapreduce: a message is cut short at byte " + std::to_string(at_));
        }
    }
    uint64_t get(size_t n)
    {
        need(n);
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) {
            v |= static_cast<uint64_t>(std::to_integer<uint8_t>(b_[at_ + i])) << (8 * i);
        }
        at_ += n;
        return v;
    }
    std::span<const std::byte> b_;
    size_t at_ = 0;
};

} // namespace mr::wire
