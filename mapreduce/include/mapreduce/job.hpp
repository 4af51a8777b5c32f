// SPDX-License-Identifier: MIT
//
// lite-MapReduce: the application's side of a job, Phoenix style. Keys and
// values are byte strings. The application gives a map function that emits
// key/value pairs from one input split, a reduce function that folds all
// values of one key into one, optionally a combiner (run on each mapper's
// output before the shuffle, usually the reduce function itself) and a key
// order for the final output (bytewise by default).
//
// This header is backend-free: the same Job runs on one process
// (mr::run_local(), the engine tests and the single-node point of the
// benchmark use) and, over lite, on a cluster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mr
{

// Where a map function puts its pairs. Not thread-safe: each mapping
// thread has its own.
class Emitter
{
public:
    Emitter() = default;
    Emitter(const Emitter&) = delete;
    Emitter& operator=(const Emitter&) = delete;
    Emitter(Emitter&&) = delete;
    Emitter& operator=(Emitter&&) = delete;
    virtual ~Emitter() = default;

    virtual void emit(std::string_view key, std::string_view value) = 0;
};

// All values of one key, in no particular order.
using Values = std::span<const std::string_view>;

// One piece of the input: bytes, and where they come from.
struct Split {
    std::string_view data{}; // the bytes to map
    std::string_view name{}; // the file they were read from ("" for memory)
    uint64_t offset = 0;     // where @data starts in that file
};

struct Job {
    // Emits the pairs of one split of the input.
    std::function<void(const Split& split, Emitter& out)> map;
    // Required: the one value a key ends with.
    std::function<std::string(std::string_view key, Values values)> reduce;
    // Optional: folds a mapper's values of one key before the shuffle; the
    // result must be a value reduce accepts (associative, commutative).
    std::function<std::string(std::string_view key, Values values)> combine;
    // Optional: the order of the output; bytewise if empty.
    std::function<bool(std::string_view a, std::string_view b)> key_less;
};

// One key and its reduced value.
using Pair = std::pair<std::string, std::string>;

// Cuts text into splits of about @target bytes that end at a line end (or
// at the end of @text), so that no word or line is cut in two. Splits
// cover @text exactly, in order, and carry @name and their offsets.
std::vector<Split> split_lines(std::string_view text, size_t target, std::string_view name = {});

// Cuts binary data into splits of @target bytes (the last one shorter).
std::vector<Split> split_bytes(std::string_view data, size_t target, std::string_view name = {});

// A 64-bit hash of @key's bytes: the same on every node and every run.
uint64_t key_hash(std::string_view key);

// Which of @n reducers owns @key: key_hash(@key) % @n.
uint32_t partition_of(std::string_view key, uint32_t n);

// Runs @job over @splits in this process with @threads mapping threads and
// @reducers partitions, through the same encode, combine, partition,
// decode and reduce steps as the cluster engine. Returns the output in the
// job's key order.
std::vector<Pair> run_local(const Job& job, std::span<const Split> splits, unsigned threads, uint32_t reducers);

} // namespace mr
