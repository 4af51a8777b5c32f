// SPDX-License-Identifier: MIT
#include "mapreduce/apps.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

namespace mr::apps
{

namespace
{

// Each byte -> itself lower-cased if it is an ASCII letter, else 0.
constexpr std::array<char, 256> kWordChar = [] {
    std::array<char, 256> t{};
    for (int c = 'a'; c <= 'z'; c++) {
        const int upper = c - 'a' + 'A';
        t.at(static_cast<size_t>(c)) = static_cast<char>(c);
        t.at(static_cast<size_t>(upper)) = static_cast<char>(c);
    }
    return t;
}();

// Calls @fn(word) for each word of @text (runs of ASCII letters,
// lower-cased). The view passed is only valid during the call.
template <class F> void each_word(std::string_view text, F fn)
{
    std::string w;
    const auto* p = reinterpret_cast<const unsigned char*>(text.data()); // NOLINT(*-reinterpret-cast)
    const auto* end = p + text.size();
    while (p < end) {
        while (p < end && kWordChar[*p] == 0) {
            p++;
        }
        const auto* start = p;
        while (p < end && kWordChar[*p] != 0) {
            p++;
        }
        if (p == start) {
            break;
        }
        w.resize(static_cast<size_t>(p - start));
        for (size_t i = 0; i < w.size(); i++) {
            w[i] = kWordChar[start[i]];
        }
        fn(std::string_view(w));
    }
}

int64_t to_i64(std::string_view s)
{
    if (s.size() == 1 && s[0] >= '0' && s[0] <= '9') {
        return s[0] - '0'; // the most common value of all
    }
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

using ByteCounts = std::array<int64_t, 256>;

void count_bytes(std::string_view data, ByteCounts& counts)
{
    for (const char c : data) {
        counts.at(static_cast<unsigned char>(c))++;
    }
}

// Each byte value that occurs, as {"0".."255", count}.
std::vector<Pair> byte_pairs(const ByteCounts& counts)
{
    std::vector<Pair> out;
    for (size_t b = 0; b < counts.size(); b++) {
        if (counts.at(b) != 0) {
            out.emplace_back(std::to_string(b), std::to_string(counts.at(b)));
        }
    }
    return out;
}

std::vector<Pair> byte_counts(std::string_view data)
{
    ByteCounts counts{};
    count_bytes(data, counts);
    return byte_pairs(counts);
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
    job.map = [](const Split& split, Emitter& out) {
        each_word(split.data, [&](std::string_view w) { out.emit(w, "1"); });
    };
    job.reduce = sum;
    job.combine = sum;
    return job;
}

std::vector<Pair> word_count_reference(std::string_view text)
{
    const Split whole{text};
    return reference("wordcount", "", std::span(&whole, 1));
}

Job histogram()
{
    Job job;
    job.map = [](const Split& split, Emitter& out) {
        for (const auto& [k, v] : byte_counts(split.data)) {
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
    const Split whole{data};
    return reference("histogram", "", std::span(&whole, 1));
}

Job linear_regression()
{
    Job job;
    job.map = [](const Split& split, Emitter& out) {
        for (const auto& [k, v] : sums_as_pairs(point_sums(split.data))) {
            out.emit(k, v);
        }
    };
    job.reduce = sum;
    job.combine = sum;
    return job;
}

std::vector<Pair> linear_regression_reference(std::string_view text)
{
    const Split whole{text};
    return reference("linreg", "", std::span(&whole, 1));
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

namespace
{

// Calls @fn(line) for each line of @text, without its '\n'; empty lines
// too, but not the nothing after a final '\n'.
template <class F> void each_line(std::string_view text, F fn)
{
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        fn(text.substr(at, end - at));
        at = end + 1;
    }
}

struct ClusterSums {
    int64_t n = 0;
    int64_t sx = 0;
    int64_t sy = 0;
};

std::pair<int64_t, int64_t> parse_point(std::string_view line)
{
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) {
        throw std::invalid_argument("mapreduce: point line '" + std::string(line) + "' has no 'x y'");
    }
    return {to_i64(line.substr(0, sp)), to_i64(line.substr(sp + 1))};
}

// The index of the centroid nearest to (x, y); the lowest on a tie.
size_t nearest(const Centroids& c, int64_t x, int64_t y)
{
    size_t best = 0;
    double best_d = 0;
    for (size_t i = 0; i < c.size(); i++) {
        const double dx = static_cast<double>(x) - c[i][0];
        const double dy = static_cast<double>(y) - c[i][1];
        const double d = dx * dx + dy * dy;
        if (i == 0 || d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

void add_cluster_sums(std::string_view text, const Centroids& c, std::vector<ClusterSums>& sums)
{
    each_line(text, [&](std::string_view line) {
        if (line.empty()) {
            return;
        }
        const auto [x, y] = parse_point(line);
        auto& s = sums.at(nearest(c, x, y));
        s.n++;
        s.sx += x;
        s.sy += y;
    });
}

std::vector<Pair> cluster_pairs(const std::vector<ClusterSums>& sums)
{
    std::vector<Pair> out;
    for (size_t i = 0; i < sums.size(); i++) {
        if (sums[i].n != 0) {
            out.emplace_back(std::to_string(i), std::to_string(sums[i].n) + ' ' + std::to_string(sums[i].sx) + ' ' +
                                                    std::to_string(sums[i].sy));
        }
    }
    return out;
}

// "n sx sy" -> its three numbers.
std::array<int64_t, 3> parse_triple(std::string_view v)
{
    std::array<int64_t, 3> t{};
    size_t at = 0;
    for (size_t i = 0; i < t.size(); i++) {
        size_t end = i + 1 < t.size() ? v.find(' ', at) : v.size();
        if (end == std::string_view::npos) {
            throw std::invalid_argument("mapreduce: k-means value '" + std::string(v) + "' is not 'n sx sy'");
        }
        t.at(i) = to_i64(v.substr(at, end - at));
        at = end + 1;
    }
    return t;
}

std::string sum_triples(std::string_view /*key*/, Values values)
{
    std::array<int64_t, 3> s{};
    for (const auto v : values) {
        const auto t = parse_triple(v);
        for (size_t i = 0; i < s.size(); i++) {
            s.at(i) += t.at(i);
        }
    }
    return std::to_string(s[0]) + ' ' + std::to_string(s[1]) + ' ' + std::to_string(s[2]);
}

std::vector<int64_t> line_matches(std::string_view text, const std::vector<std::string>& patterns)
{
    std::vector<int64_t> n(patterns.size());
    each_line(text, [&](std::string_view line) {
        for (size_t i = 0; i < patterns.size(); i++) {
            if (line.find(patterns[i]) != std::string_view::npos) {
                n[i]++;
            }
        }
    });
    return n;
}

// The union of '\n'-separated sorted name lists, sorted, without repeats.
std::string union_of_names(std::string_view /*key*/, Values values)
{
    std::vector<std::string_view> names;
    for (const auto v : values) {
        each_line(v, [&](std::string_view name) { names.push_back(name); });
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string out;
    for (const auto name : names) {
        if (!out.empty()) {
            out += '\n';
        }
        out += name;
    }
    return out;
}

std::vector<std::string> split_patterns(std::string_view params)
{
    std::vector<std::string> patterns;
    each_line(params, [&](std::string_view p) {
        if (p.empty()) {
            throw std::invalid_argument("mapreduce: string match: an empty pattern");
        }
        patterns.emplace_back(p);
    });
    if (patterns.empty()) {
        throw std::invalid_argument("mapreduce: string match needs at least one pattern");
    }
    return patterns;
}

void no_params(std::string_view app, std::string_view params)
{
    if (!params.empty()) {
        throw std::invalid_argument("mapreduce: " + std::string(app) + " takes no parameters");
    }
}

} // namespace

Job kmeans(const Centroids& centroids)
{
    if (centroids.empty()) {
        throw std::invalid_argument("mapreduce: k-means needs at least one centroid");
    }
    Job job;
    job.map = [centroids](const Split& split, Emitter& out) {
        std::vector<ClusterSums> sums(centroids.size());
        add_cluster_sums(split.data, centroids, sums);
        for (const auto& [k, v] : cluster_pairs(sums)) {
            out.emit(k, v);
        }
    };
    job.reduce = sum_triples;
    job.combine = sum_triples;
    job.key_less = numeric_less;
    return job;
}

std::vector<Pair> kmeans_reference(std::string_view text, const Centroids& centroids)
{
    const Split whole{text};
    return reference("kmeans", format_centroids(centroids), std::span(&whole, 1));
}

Centroids kmeans_update(const Centroids& centroids, const std::vector<Pair>& sums)
{
    Centroids next = centroids;
    for (const auto& [k, v] : sums) {
        const auto i = static_cast<size_t>(to_i64(k));
        const auto t = parse_triple(v);
        if (i >= next.size() || t[0] <= 0) {
            std::string what = "mapreduce: k-means output '";
            what.append(k).append("' -> '").append(v).append("' fits no centroid");
            throw std::invalid_argument(what);
        }
        next[i] = {static_cast<double>(t[1]) / static_cast<double>(t[0]),
                   static_cast<double>(t[2]) / static_cast<double>(t[0])};
    }
    return next;
}

std::string format_centroids(const Centroids& c)
{
    std::string out;
    for (const auto& p : c) {
        for (size_t i = 0; i < p.size(); i++) {
            std::array<char, 32> b{};
            const auto r = std::to_chars(b.data(), b.data() + b.size(), p.at(i));
            out.append(b.data(), r.ptr);
            out += i + 1 < p.size() ? ' ' : '\n';
        }
    }
    return out;
}

Centroids parse_centroids(std::string_view text)
{
    Centroids c;
    each_line(text, [&](std::string_view line) {
        const size_t sp = line.find(' ');
        std::array<double, 2> p{};
        const std::string_view parts[2] = {line.substr(0, sp), sp == std::string_view::npos ? "" : line.substr(sp + 1)};
        for (size_t i = 0; i < p.size(); i++) {
            const auto [end, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), p.at(i));
            if (ec != std::errc() || end != parts[i].data() + parts[i].size() || parts[i].empty()) {
                throw std::invalid_argument("mapreduce: centroid line '" + std::string(line) + "' is not 'x y'");
            }
        }
        c.push_back(p);
    });
    return c;
}

Centroids initial_centroids(size_t k, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    Centroids c(k);
    for (auto& p : c) {
        p = {static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000),
             static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000)};
    }
    return c;
}

std::string make_clusters(size_t lines, size_t k, uint64_t seed)
{
    if (k == 0) {
        throw std::invalid_argument("mapreduce: clusters: k is 0");
    }
    std::mt19937_64 rng(seed);
    std::vector<std::pair<int64_t, int64_t>> centers(k);
    for (auto& c : centers) {
        c = {static_cast<int64_t>(rng() % 1800001) - 900000, static_cast<int64_t>(rng() % 1800001) - 900000};
    }
    std::string text;
    for (size_t i = 0; i < lines; i++) {
        const auto& c = centers[rng() % k];
        // The sum of four uniform draws: a bell around the center.
        int64_t dx = 0;
        int64_t dy = 0;
        for (int j = 0; j < 4; j++) {
            dx += static_cast<int64_t>(rng() % 50001) - 25000;
            dy += static_cast<int64_t>(rng() % 50001) - 25000;
        }
        text += std::to_string(c.first + dx);
        text += ' ';
        text += std::to_string(c.second + dy);
        text += '\n';
    }
    return text;
}

Job string_match(const std::vector<std::string>& patterns)
{
    if (patterns.empty()) {
        throw std::invalid_argument("mapreduce: string match needs at least one pattern");
    }
    Job job;
    job.map = [patterns](const Split& split, Emitter& out) {
        const auto n = line_matches(split.data, patterns);
        for (size_t i = 0; i < n.size(); i++) {
            if (n[i] != 0) {
                out.emit(patterns[i], std::to_string(n[i]));
            }
        }
    };
    job.reduce = sum;
    job.combine = sum;
    return job;
}

std::vector<Pair> string_match_reference(std::span<const Split> files, const std::vector<std::string>& patterns)
{
    std::map<std::string, int64_t> counts;
    for (const auto& f : files) {
        const auto n = line_matches(f.data, patterns);
        for (size_t i = 0; i < n.size(); i++) {
            if (n[i] != 0) {
                counts[patterns[i]] += n[i];
            }
        }
    }
    return pairs_of(counts);
}

Job inverted_index()
{
    Job job;
    job.map = [](const Split& split, Emitter& out) {
        // Each distinct word of the split once.
        std::unordered_set<std::string> seen;
        seen.reserve(1U << 14);
        each_word(split.data, [&](std::string_view w) {
            if (seen.emplace(w).second) {
                out.emit(w, split.name);
            }
        });
    };
    job.reduce = union_of_names;
    job.combine = union_of_names;
    return job;
}

std::vector<Pair> inverted_index_reference(std::span<const Split> files)
{
    std::map<std::string, std::set<std::string>> index;
    for (const auto& f : files) {
        each_word(f.data, [&](std::string_view w) { index[std::string(w)].insert(std::string(f.name)); });
    }
    std::vector<Pair> out;
    for (const auto& [w, names] : index) {
        std::string v;
        for (const auto& n : names) {
            v += (v.empty() ? "" : "\n") + n;
        }
        out.emplace_back(w, std::move(v));
    }
    return out;
}

App make_app(std::string_view name, std::string_view params)
{
    if (name == "wordcount") {
        no_params(name, params);
        return {word_count(), false};
    }
    if (name == "histogram") {
        no_params(name, params);
        return {histogram(), true};
    }
    if (name == "linreg") {
        no_params(name, params);
        return {linear_regression(), false};
    }
    if (name == "kmeans") {
        return {kmeans(parse_centroids(params)), false};
    }
    if (name == "strmatch") {
        return {string_match(split_patterns(params)), false};
    }
    if (name == "invindex") {
        no_params(name, params);
        return {inverted_index(), false};
    }
    throw std::invalid_argument("mapreduce: no application '" + std::string(name) +
                                "' (wordcount, histogram, linreg, kmeans, strmatch, invindex)");
}

std::vector<Pair> reference(std::string_view name, std::string_view params, std::span<const Split> files)
{
    [[maybe_unused]] const App checked = make_app(name, params); // the same checks of name and parameters
    if (name == "wordcount") {
        // A hash table, then sorted: the serial baseline should be a fair one.
        std::unordered_map<std::string, int64_t> counts;
        counts.reserve(1U << 16);
        std::string key;
        for (const auto& f : files) {
            each_word(f.data, [&](std::string_view w) {
                key.assign(w);
                counts[key]++;
            });
        }
        std::vector<Pair> out;
        out.reserve(counts.size());
        for (const auto& [k, v] : counts) {
            out.emplace_back(k, std::to_string(v));
        }
        std::sort(out.begin(), out.end());
        return out;
    }
    if (name == "histogram") {
        ByteCounts counts{};
        for (const auto& f : files) {
            count_bytes(f.data, counts);
        }
        return byte_pairs(counts);
    }
    if (name == "linreg") {
        std::array<int64_t, 5> total{};
        for (const auto& f : files) {
            const auto s = point_sums(f.data);
            for (size_t i = 0; i < s.size(); i++) {
                total.at(i) += s.at(i);
            }
        }
        return sums_as_pairs(total);
    }
    if (name == "kmeans") {
        const Centroids c = parse_centroids(params);
        std::vector<ClusterSums> sums(c.size());
        for (const auto& f : files) {
            add_cluster_sums(f.data, c, sums);
        }
        return cluster_pairs(sums);
    }
    if (name == "strmatch") {
        return string_match_reference(files, split_patterns(params));
    }
    return inverted_index_reference(files);
}

} // namespace mr::apps
