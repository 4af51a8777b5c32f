// SPDX-License-Identifier: MIT
//
// The single-process engine: the cluster engine's steps (map, combine,
// partition, encode; decode, group, reduce; merge) with threads instead of
// nodes and strings instead of LMRs.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "mapreduce/job.hpp"
#include "mapreduce/records.hpp"

namespace mr
{

namespace
{

// Runs @fn(i) for i in [0, n) on @threads threads; the first exception
// ends the work and is rethrown here.
template <class F> void parallel_for(size_t n, unsigned threads, F fn)
{
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mu;
    auto work = [&] {
        for (size_t i = next++; i < n; i = next++) {
            try {
                fn(i);
            } catch (...) {
                const std::lock_guard lock(error_mu);
                if (!error) {
                    error = std::current_exception();
                }
                next = n;
            }
        }
    };
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < std::max(1U, threads); t++) {
        pool.emplace_back(work);
    }
    work();
    pool.clear(); // joins
    if (error) {
        std::rethrow_exception(error);
    }
}

} // namespace

std::vector<Split> split_lines(std::string_view text, size_t target, std::string_view name)
{
    if (target == 0) {
        throw std::invalid_argument("mapreduce: split size 0");
    }
    std::vector<Split> out;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = std::min(text.size(), at + target);
        if (end < text.size()) {
            const size_t nl = text.find('\n', end - 1);
            end = nl == std::string_view::npos ? text.size() : nl + 1;
        }
        out.push_back({text.substr(at, end - at), name, at});
        at = end;
    }
    return out;
}

std::vector<Split> split_bytes(std::string_view data, size_t target, std::string_view name)
{
    if (target == 0) {
        throw std::invalid_argument("mapreduce: split size 0");
    }
    std::vector<Split> out;
    for (size_t at = 0; at < data.size(); at += target) {
        out.push_back({data.substr(at, target), name, at});
    }
    return out;
}

uint32_t partition_of(std::string_view key, uint32_t n)
{
    return n != 0 ? static_cast<uint32_t>(key_hash(key) % n) : 0;
}

std::vector<Pair> run_local(const Job& job, std::span<const Split> splits, unsigned threads, uint32_t reducers)
{
    if (!job.map || !job.reduce) {
        throw std::invalid_argument("mapreduce: a job needs map and reduce");
    }
    // Map: one Partitions per split, as one mapper task each.
    std::vector<std::vector<std::string>> mapped(splits.size());
    parallel_for(splits.size(), threads, [&](size_t i) {
        Partitions parts(reducers, job.combine);
        PartitionEmitter out(parts);
        job.map(splits[i], out);
        for (uint32_t r = 0; r < reducers; r++) {
            mapped[i].push_back(parts.take(r));
        }
    });
    // Shuffle and reduce: reducer r takes partition r of every mapper.
    std::vector<std::vector<Pair>> reduced(reducers);
    parallel_for(reducers, threads, [&](size_t r) {
        std::vector<std::string> inputs;
        inputs.reserve(mapped.size());
        for (auto& m : mapped) {
            inputs.push_back(std::move(m[r]));
        }
        reduced[r] = reduce_partitions(job, inputs);
    });
    // Merge: every reducer's output is sorted; the keys are disjoint.
    std::vector<Pair> out;
    for (auto& r : reduced) {
        std::move(r.begin(), r.end(), std::back_inserter(out));
    }
    const auto less = key_order(job);
    std::sort(out.begin(), out.end(), [&](const Pair& a, const Pair& b) { return less(a.first, b.first); });
    return out;
}

} // namespace mr
