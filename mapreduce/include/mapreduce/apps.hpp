// SPDX-License-Identifier: MIT
//
// lite-MapReduce applications, each a mr::Job and a single-process
// reference that computes the same output directly from the same input
// (the check every run is held to, and the serial baseline of the
// benchmark). Outputs are key/value byte strings in the job's key order.
#pragma once

#include <cstddef>
#include <cstdint>
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

} // namespace mr::apps
