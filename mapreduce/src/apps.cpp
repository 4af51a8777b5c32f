// SPDX-License-Identifier: MIT
#include "mapreduce/apps.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

namespace mr::apps
{

namespace
{

bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Calls @fn(word) for each word of @text (runs of ASCII letters,
// lower-cased).
template <class F> void each_word(std::string_view text, F fn)
{
    std::string w;
    for (const char c : text) {
        if (is_letter(c)) {
            w.push_back(lower(c));
        } else if (!w.empty()) {
            fn(w);
            w.clear();
        }
    }
    if (!w.empty()) {
        fn(w);
    }
}

int64_t to_i64(std::string_view s)
{
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
        throw std::invalid_argument("mapreduce: '" + std::string(s) + "' is not an integer");
    }
    return v;
}

std::string sum(std::string_view /*key*/, Values values)
{
    int64_t n = 0;
    for (const auto v : values) {
        n += to_i64(v);
    }
    return std::to_string(n);
}

bool numeric_less(std::string_view a, std::string_view b)
{
    return to_i64(a) < to_i64(b);
}

// Each byte value of @data that occurs, as {"0".."255", count}.
std::vector<Pair> byte_counts(std::string_view data)
{
    std::array<int64_t, 256> counts{};
    for (const char c : data) {
        counts.at(static_cast<unsigned char>(c))++;
    }
    std::vector<Pair> out;
    for (size_t b = 0; b < counts.size(); b++) {
        if (counts.at(b) != 0) {
            out.emplace_back(std::to_string(b), std::to_string(counts.at(b)));
        }
    }
    return out;
}

template <class M> std::vector<Pair> pairs_of(const M& m)
{
    std::vector<Pair> out;
    out.reserve(m.size());
    for (const auto& [k, v] : m) {
        out.emplace_back(k, std::to_string(v));
    }
    return out;
}

// The five sums of the points in @text.
std::array<int64_t, 5> point_sums(std::string_view text)
{
    std::array<int64_t, 5> s{};
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(at, end - at);
        at = end + 1;
        if (line.empty()) {
            continue;
        }
        const size_t sp = line.find(' ');
        if (sp == std::string_view::npos) {
            throw std::invalid_argument("mapreduce: point line '" + std::string(line) + "' has no 'x y'");
        }
        const int64_t x = to_i64(line.substr(0, sp));
        const int64_t y = to_i64(line.substr(sp + 1));
        s[0] += 1;
        s[1] += x;
        s[2] += y;
        s[3] += x * x;
        s[4] += x * y;
    }
    return s;
}

std::vector<Pair> sums_as_pairs(const std::array<int64_t, 5>& s)
{
    // n, sx, sy, sxx, sxy -> the key order above
    return {{"n", std::to_string(s[0])},
            {"sx", std::to_string(s[1])},
            {"sxx", std::to_string(s[3])},
            {"sxy", std::to_string(s[4])},
            {"sy", std::to_string(s[2])}};
}

} // namespace

Job word_count()
{
    Job job;
    job.map = [](std::string_view split, Emitter& out) {
        each_word(split, [&](const std::string& w) { out.emit(w, "1"); });
    };
    job.reduce = sum;
    job.combine = sum;
    return job;
}

std::vector<Pair> word_count_reference(std::string_view text)
{
    std::map<std::string, int64_t> counts;
    each_word(text, [&](const std::string& w) { counts[w]++; });
    return pairs_of(counts);
}

Job histogram()
{
    Job job;
    job.map = [](std::string_view split, Emitter& out) {
        for (const auto& [k, v] : byte_counts(split)) {
            out.emit(k, v);
        }
    };
    job.reduce = sum;
    job.combine = sum;
    job.key_less = numeric_less;
    return job;
}

std::vector<Pair> histogram_reference(std::string_view data)
{
    return byte_counts(data);
}

Job linear_regression()
{
    Job job;
    job.map = [](std::string_view split, Emitter& out) {
        for (const auto& [k, v] : sums_as_pairs(point_sums(split))) {
            out.emit(k, v);
        }
    };
    job.reduce = sum;
    job.combine = sum;
    return job;
}

std::vector<Pair> linear_regression_reference(std::string_view text)
{
    return sums_as_pairs(point_sums(text));
}

std::string make_zipf_text(std::string_view words, size_t bytes, uint64_t seed)
{
    std::vector<std::string_view> vocab;
    size_t at = 0;
    while (at < words.size()) {
        size_t end = words.find('\n', at);
        if (end == std::string_view::npos) {
            end = words.size();
        }
        if (end > at) {
            vocab.push_back(words.substr(at, end - at));
        }
        at = end + 1;
    }
    if (vocab.empty()) {
        throw std::invalid_argument("mapreduce: no words to generate text from");
    }
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    // Rank r is drawn with probability about 1/r (Zipf, s = 1): inverse
    // transform of the continuous law over [1, N].
    const auto n = static_cast<double>(vocab.size());
    std::string text;
    text.reserve(bytes + 64);
    int in_line = 0;
    int line_len = 1 + static_cast<int>(rng() % 12);
    while (text.size() < bytes) {
        const auto rank = static_cast<size_t>(std::exp(u(rng) * std::log(n + 1)) - 1);
        text += vocab[std::min(rank, vocab.size() - 1)];
        if (++in_line >= line_len) {
            text += '\n';
            in_line = 0;
            line_len = 1 + static_cast<int>(rng() % 12);
        } else {
            text += ' ';
        }
    }
    return text;
}

std::string make_points(size_t lines, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::string text;
    for (size_t i = 0; i < lines; i++) {
        const auto x = static_cast<int64_t>(rng() % 2000001) - 1000000;
        const int64_t noise = static_cast<int64_t>(rng() % 2001) - 1000;
        const int64_t y = std::clamp<int64_t>(x / 3 + 1234 + noise, -1048575, 1048575);
        text += std::to_string(x) + ' ' + std::to_string(y) + '\n';
    }
    return text;
}

} // namespace mr::apps
