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
#include <unordered_map>
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
    std::vector<std::string> encoded_;                                              // without a combiner
    std::vector<std::unordered_map<std::string, std::vector<std::string>>> groups_; // with one
};

// The job's key order (bytewise if it gives none).
std::function<bool(std::string_view, std::string_view)> key_order(const Job& job);

// A reducer's work: every record of @parts (whole partitions from the
// mappers), grouped by key, each group reduced, in the job's key order.
std::vector<Pair> reduce_partitions(const Job& job, const std::vector<std::string>& parts);

} // namespace mr
