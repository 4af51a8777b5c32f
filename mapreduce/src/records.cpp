// SPDX-License-Identifier: MIT
#include "mapreduce/records.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

namespace mr
{

namespace
{

constexpr size_t kHeader = 8;

void put_u32(std::string& out, uint32_t v)
{
    std::array<char, 4> b{};
    for (size_t i = 0; i < b.size(); i++) {
        b.at(i) = static_cast<char>((v >> (8 * i)) & 0xff);
    }
    out.append(b.data(), b.size());
}

uint32_t get_u32(std::string_view data, size_t at)
{
    uint32_t v = 0;
    for (size_t i = 0; i < 4; i++) {
        v |= static_cast<uint32_t>(static_cast<unsigned char>(data[at + i])) << (8 * i);
    }
    return v;
}

uint32_t checked_len(std::string_view s, const char* what)
{
    if (s.size() > std::numeric_limits<uint32_t>::max()) {
        throw std::length_error(std::string("mapreduce: a ") + what + " of " + std::to_string(s.size()) +
                                " bytes does not fit in a record");
    }
    return static_cast<uint32_t>(s.size());
}

// Folds @values of @key with @fn (combine or reduce).
std::string fold(const std::function<std::string(std::string_view, Values)>& fn, std::string_view key,
                 const std::vector<std::string>& values)
{
    std::vector<std::string_view> views(values.begin(), values.end());
    return fn(key, Values(views));
}

} // namespace

void put_record(std::string& out, std::string_view key, std::string_view value)
{
    put_u32(out, checked_len(key, "key"));
    put_u32(out, checked_len(value, "value"));
    out.append(key);
    out.append(value);
}

void for_each_record(std::string_view data, const std::function<void(std::string_view, std::string_view)>& fn)
{
    size_t at = 0;
    while (at < data.size()) {
        if (data.size() - at < kHeader) {
            throw BadRecords("mapreduce: a record header at offset " + std::to_string(at) + " is cut short (" +
                             std::to_string(data.size() - at) + " bytes left)");
        }
        const uint64_t klen = get_u32(data, at);
        const uint64_t vlen = get_u32(data, at + 4);
        if (data.size() - at - kHeader < klen + vlen) {
            throw BadRecords("mapreduce: the record at offset " + std::to_string(at) + " needs " +
                             std::to_string(klen + vlen) + " bytes, " + std::to_string(data.size() - at - kHeader) +
                             " are left");
        }
        fn(data.substr(at + kHeader, klen), data.substr(at + kHeader + klen, vlen));
        at += kHeader + klen + vlen;
    }
}

Partitions::Partitions(uint32_t n, std::function<std::string(std::string_view, Values)> combine)
    : combine_(std::move(combine)), encoded_(n)
{
    if (n == 0) {
        throw std::invalid_argument("mapreduce: no partitions");
    }
    if (combine_) {
        groups_.resize(n);
    }
}

void Partitions::add(std::string_view key, std::string_view value)
{
    const uint32_t p = partition_of(key, size());
    if (!combine_) {
        put_record(encoded_.at(p), key, value);
        return;
    }
    auto& group = groups_.at(p)[std::string(key)];
    group.emplace_back(value);
    // Keep a hot key's list short: fold it as it grows.
    if (group.size() >= 64) {
        std::string folded = fold(combine_, key, group);
        group.clear();
        group.push_back(std::move(folded));
    }
}

std::string Partitions::take(uint32_t i)
{
    std::string out = std::move(encoded_.at(i));
    encoded_.at(i).clear();
    if (combine_) {
        for (auto& [key, values] : groups_.at(i)) {
            put_record(out, key, values.size() == 1 ? values.front() : fold(combine_, key, values));
        }
        groups_.at(i).clear();
    }
    return out;
}

std::function<bool(std::string_view, std::string_view)> key_order(const Job& job)
{
    if (job.key_less) {
        return job.key_less;
    }
    return [](std::string_view a, std::string_view b) { return a < b; };
}

std::vector<Pair> reduce_partitions(const Job& job, const std::vector<std::string>& parts)
{
    const auto less = key_order(job);
    std::map<std::string_view, std::vector<std::string_view>, decltype(less)> groups(less);
    for (const auto& part : parts) {
        for_each_record(part, [&](std::string_view k, std::string_view v) { groups[k].push_back(v); });
    }
    std::vector<Pair> out;
    out.reserve(groups.size());
    for (const auto& [key, values] : groups) {
        out.emplace_back(std::string(key), job.reduce(key, Values(values)));
    }
    return out;
}

} // namespace mr
