// SPDX-License-Identifier: MIT
//
// lite-MapReduce applications, each a mr::Job and a single-process
// reference that computes the same output directly from the same input
// (the check every run is held to, and the serial baseline of the
// benchmark). Outputs are key/value byte strings in the job's key order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "job.hpp"

namespace mr::apps
{

// Word count: words are runs of ASCII letters, lower-cased; the value is
// the count in decimal. Combiner: the sum.
Job word_count();
std::vector<Pair> word_count_reference(std::string_view text);

// Histogram of the bytes of a binary input: key "0".."255" (numeric
// order), value the count in decimal; bytes that never occur are left out.
// Each split counts its bytes itself and emits at most 256 pairs.
Job histogram();
std::vector<Pair> histogram_reference(std::string_view data);

// Linear regression over lines "x y" of decimal integers (|x|, |y| below
// 2^20, at most 2^20 lines per split so that the sums stay exact in 64
// bits): keys "n", "sx", "sy", "sxx", "sxy" with exact integer sums. The
// fit itself (slope, intercept) is then computed from the sums, once.
Job linear_regression();
std::vector<Pair> linear_regression_reference(std::string_view text);

// Input of a given size, generated from a seed: text of words drawn with a
// Zipf-like law from @words (one per line, as /usr/share/dict ships them),
// lines of 1 to 12 words; and lines of "x y" points around a line.
std::string make_zipf_text(std::string_view words, size_t bytes, uint64_t seed);
std::string make_points(size_t lines, uint64_t seed);

// k-means over points "x y" (decimal integers, as make_clusters() writes
// them), one job per iteration: each point goes to its nearest centroid
// (the lowest index on a tie); key the centroid's index (numeric order),
// value "n sx sy", the exact integer count and sums of its points.
// kmeans_update() turns them into the next centroids (a centroid without
// points stays where it was).
using Centroids = std::vector<std::array<double, 2>>;
Job kmeans(const Centroids& centroids);
std::vector<Pair> kmeans_reference(std::string_view text, const Centroids& centroids);
Centroids kmeans_update(const Centroids& centroids, const std::vector<Pair>& sums);
// Centroids as text, one "x y" per line, exactly (shortest round trip).
std::string format_centroids(const Centroids& c);
Centroids parse_centroids(std::string_view text);
// @k starting centroids from @seed, and @lines points around @k centers.
Centroids initial_centroids(size_t k, uint64_t seed);
std::string make_clusters(size_t lines, size_t k, uint64_t seed);

// String match: for each pattern, the number of lines that contain it
// (patterns with no such line are left out). Combiner: the sum.
Job string_match(const std::vector<std::string>& patterns);
std::vector<Pair> string_match_reference(std::span<const Split> files, const std::vector<std::string>& patterns);

// Inverted index over a set of text files: each word (as word count cuts
// them) -> the names of the files it occurs in, sorted, one per line.
// Combiner: the union.
Job inverted_index();
std::vector<Pair> inverted_index_reference(std::span<const Split> files);

// An application by name, as the cluster engine's workers build it from
// the master's job description: "wordcount", "histogram", "linreg",
// "invindex" (no parameters), "kmeans" (the centroids, format_centroids())
// and "strmatch" (the patterns, one per line). Throws
// std::invalid_argument naming what is wrong.
struct App {
    Job job;
    bool binary = false; // splits are byte ranges, not whole lines
};
App make_app(std::string_view name, std::string_view params);

// The application's output computed directly over whole files (name and
// data in each Split), without the engine: what every run is checked
// against.
std::vector<Pair> reference(std::string_view name, std::string_view params, std::span<const Split> files);

} // namespace mr::apps
