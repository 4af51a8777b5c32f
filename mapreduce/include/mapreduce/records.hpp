// SPDX-License-Identifier: MIT
//
// lite-MapReduce's intermediate data: what a mapper leaves for a reducer
// and what crosses the network in the shuffle. A partition is a byte
// string of records, each
//
//   u32 key length, u32 value length (little endian), key bytes, value bytes
//
// appended back to back; a reducer takes whole partitions (one per mapper)
// and never trusts them: a record that runs past the end is an error that
// names the offset, not a read out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "job.hpp"

namespace mr
{

// A partition that does not decode.
class BadRecords : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

// Appends one record to @out.
void put_record(std::string& out, std::string_view key, std::string_view value);

// Calls @fn(key, value) for each record of @data in order; throws
// BadRecords if @data does not end on a record boundary. The views point
// into @data.
void for_each_record(std::string_view data, const std::function<void(std::string_view, std::string_view)>& fn);

// Values grouped by key, as a combiner and a reducer need them: an
// open-addressing hash table over keys kept in one arena, each key's
// values appended (length-prefixed) to a buffer of its own. No allocation
// per value once the buffers have grown.
class KeyGroups
{
public:
    // Appends @value to @key's values; returns how many it has now.
    size_t add(std::string_view key, std::string_view value);
    // The same with key_hash(@key) already computed.
    size_t add(std::string_view key, uint64_t hash, std::string_view value);
    // Replaces the values of the key added last (by add) with @value.
    void replace_last(std::string_view value);
    // The values of the key added last (valid until the next call).
    [[nodiscard]] Values last_values();
    // Calls @fn(key, values) for every key, in no particular order.
    void for_each(const std::function<void(std::string_view, Values)>& fn);
    [[nodiscard]] size_t size() const noexcept { return entries_.size(); }
    void clear();

private:
    struct Entry {
        uint64_t hash = 0;
        size_t key_at = 0;
        uint32_t key_len = 0;
        uint32_t count = 0;
        std::string values; // u32 length, bytes; back to back
    };
    [[nodiscard]] std::string_view key_of(const Entry& e) const
    {
        return std::string_view(keys_).substr(e.key_at, e.key_len);
    }
    void grow();

    std::string keys_;
    std::vector<Entry> entries_;
    struct Slot {
        uint32_t tag = 0;   // the hash's top half
        uint32_t entry = 0; // index + 1; 0: empty
    };
    std::vector<Slot> slots_;
    std::vector<std::string_view> scratch_; // what last_values() and for_each() pass
    size_t last_ = 0;
};

// One mapper's output, @n partitions. With a combiner, values are grouped
// per key as they come and folded when a partition is taken; without one,
// records are encoded as they come.
class Partitions
{
public:
    Partitions(uint32_t n, std::function<std::string(std::string_view, Values)> combine);

    void add(std::string_view key, std::string_view value);
    // Partition @i, encoded (combined first if there is a combiner); the
    // partition is empty afterwards.
    [[nodiscard]] std::string take(uint32_t i);
    [[nodiscard]] uint32_t size() const noexcept { return static_cast<uint32_t>(encoded_.size()); }

private:
    std::function<std::string(std::string_view, Values)> combine_;
    std::vector<std::string> encoded_; // without a combiner
    std::vector<KeyGroups> groups_;    // with one
};

// An Emitter into Partitions.
class PartitionEmitter final : public Emitter
{
public:
    explicit PartitionEmitter(Partitions& p) : p_(p) {}
    void emit(std::string_view key, std::string_view value) override { p_.add(key, value); }

private:
    Partitions& p_;
};

// The job's key order (bytewise if it gives none).
std::function<bool(std::string_view, std::string_view)> key_order(const Job& job);

// A reducer's work: every record of @parts (whole partitions from the
// mappers), grouped by key, each group reduced, in the job's key order.
std::vector<Pair> reduce_partitions(const Job& job, const std::vector<std::string>& parts);

} // namespace mr
