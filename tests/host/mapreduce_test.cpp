// SPDX-License-Identifier: MIT
//
// lite-MapReduce's backend-free part: records, splits, partitioning and
// the single-process engine, checked against direct computations.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mapreduce/apps.hpp"
#include "mapreduce/job.hpp"
#include "mapreduce/records.hpp"

namespace
{

// 3000 distinct words of letters only, some capitalised, one per line.
std::string word_list()
{
    std::string words;
    for (int i = 0; i < 3000; i++) {
        std::string w = i % 3 == 0 ? "W" : "w";
        for (int v = i; v > 0; v /= 26) {
            w.push_back(static_cast<char>('a' + v % 26));
        }
        words += w + "\n";
    }
    return words;
}

mr::Job word_count(bool combine)
{
    mr::Job job = mr::apps::word_count();
    if (!combine) {
        job.combine = nullptr;
    }
    return job;
}

} // namespace

TEST(MapReduceRecords, RoundTripIncludingEmptyAndBinary)
{
    std::string data;
    const std::string bin("\0\xff\n", 3);
    mr::put_record(data, "key", "value");
    mr::put_record(data, "", "");
    mr::put_record(data, bin, "x");
    std::vector<std::pair<std::string, std::string>> got;
    mr::for_each_record(data, [&](std::string_view k, std::string_view v) { got.emplace_back(k, v); });
    ASSERT_EQ(got.size(), 3U);
    EXPECT_EQ(got[0], (std::pair<std::string, std::string>{"key", "value"}));
    EXPECT_EQ(got[1], (std::pair<std::string, std::string>{"", ""}));
    EXPECT_EQ(got[2].first, bin);
    EXPECT_EQ(data.size(), 3U * 8 + 3 + 5 + 3 + 1);
}

TEST(MapReduceRecords, CutDataIsAnErrorNamingTheOffset)
{
    std::string data;
    mr::put_record(data, "alpha", "beta");
    mr::put_record(data, "gamma", "delta");
    const size_t first = 8 + 5 + 4;
    for (size_t cut = 1; cut < data.size(); cut++) {
        if (cut == first) {
            continue; // a record boundary: one whole record
        }
        size_t seen = 0;
        try {
            mr::for_each_record(std::string_view(data).substr(0, cut), [&](auto, auto) { seen++; });
            ADD_FAILURE() << "cut at " << cut << " decoded";
        } catch (const mr::BadRecords& e) {
            const std::string at = "offset " + std::to_string(cut < first ? 0 : first);
            EXPECT_NE(std::string(e.what()).find(at), std::string::npos) << e.what();
        }
        EXPECT_EQ(seen, cut < first ? 0U : 1U);
    }
    // A length field claiming more than the data holds, near 4 GiB.
    std::string bad = data;
    bad[0] = '\xff';
    bad[1] = '\xff';
    bad[2] = '\xff';
    bad[3] = '\xff';
    EXPECT_THROW(mr::for_each_record(bad, [](auto, auto) {}), mr::BadRecords);
}

TEST(MapReduceSplit, LinesAreNeverCutAndSplitsCoverTheText)
{
    const std::string text = mr::apps::make_zipf_text(word_list(), 150000, 1);
    for (const size_t target : {1UL, 7UL, 100UL, 4096UL, text.size(), text.size() * 2}) {
        const auto splits = mr::split_lines(text, target);
        std::string joined;
        for (size_t i = 0; i < splits.size(); i++) {
            joined += splits[i].data;
            if (i + 1 < splits.size()) {
                EXPECT_EQ(splits[i].data.back(), '\n') << "split " << i << " of size " << target;
            }
            EXPECT_FALSE(splits[i].data.empty());
        }
        EXPECT_EQ(joined, text) << "target " << target;
    }
    EXPECT_TRUE(mr::split_lines("", 10).empty());
    EXPECT_EQ(mr::split_lines("no newline at all", 3).size(), 1U);
    EXPECT_THROW((void)mr::split_lines("x", 0), std::invalid_argument);
}

TEST(MapReducePartition, StableAndSpread)
{
    // Fixed values, so that every node (and every build) agrees.
    EXPECT_EQ(mr::key_hash(""), 0x2ad0938b4c26d017ULL);
    EXPECT_EQ(mr::key_hash("a"), 0xf8ec39b68a68c9edULL);
    EXPECT_EQ(mr::partition_of("", 1000), 0x2ad0938b4c26d017ULL % 1000);
    EXPECT_EQ(mr::partition_of("a", 1U << 31), 0xf8ec39b68a68c9edULL % (1U << 31));
    std::vector<int> hits(7, 0);
    for (int i = 0; i < 7000; i++) {
        hits[mr::partition_of("word" + std::to_string(i), 7)]++;
    }
    for (const int h : hits) {
        EXPECT_GT(h, 700);
        EXPECT_LT(h, 1300);
    }
}

TEST(MapReduceLocal, WordCountEqualsADirectCount)
{
    const std::string text = mr::apps::make_zipf_text(word_list(), 1U << 20, 2);
    const auto want = mr::apps::word_count_reference(text);
    const auto splits = mr::split_lines(text, 16384);
    ASSERT_GT(splits.size(), 10U);
    for (const bool combine : {false, true}) {
        for (const unsigned threads : {1U, 4U}) {
            for (const uint32_t reducers : {1U, 5U}) {
                const auto got = mr::run_local(word_count(combine), splits, threads, reducers);
                ASSERT_EQ(got.size(), want.size()) << combine << threads << reducers;
                auto it = want.begin();
                for (const auto& [k, v] : got) {
                    ASSERT_EQ(k, it->first);
                    ASSERT_EQ(v, it->second) << "word " << k;
                    ++it;
                }
            }
        }
    }
}

TEST(MapReduceLocal, KeyOrderIsTheJobs)
{
    auto job = word_count(true);
    job.key_less = [](std::string_view a, std::string_view b) { return a > b; };
    const std::string text = "b a c\nb a\nb\n";
    const std::vector<mr::Split> splits = mr::split_lines(text, 2);
    const auto got = mr::run_local(job, splits, 2, 3);
    const std::vector<mr::Pair> want = {{"c", "1"}, {"b", "3"}, {"a", "2"}};
    EXPECT_EQ(got, want);
}

TEST(MapReduceLocal, AMapFailureEndsTheJobWithItsError)
{
    auto job = word_count(false);
    job.map = [](const mr::Split& split, mr::Emitter& out) {
        if (split.data.find("bad") != std::string_view::npos) {
            throw std::runtime_error("map: bad input");
        }
        out.emit(split.data, "1");
    };
    const std::vector<mr::Split> splits = {{"x"}, {"y"}, {"bad"}, {"z"}};
    try {
        (void)mr::run_local(job, splits, 3, 2);
        ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "map: bad input");
    }
    mr::Job empty;
    EXPECT_THROW((void)mr::run_local(empty, splits, 1, 1), std::invalid_argument);
    EXPECT_THROW(mr::Partitions(0, nullptr), std::invalid_argument);
}

TEST(MapReduceApps, EachEqualsItsReference)
{
    const std::string words = word_list();
    const std::string text = mr::apps::make_zipf_text(words, 1U << 20, 5);
    ASSERT_GE(text.size(), 1U << 20);
    EXPECT_EQ(text, mr::apps::make_zipf_text(words, 1U << 20, 5)) << "the generator is deterministic";
    std::string bytes(300000, '\0');
    std::mt19937_64 rng(6);
    for (auto& b : bytes) {
        b = static_cast<char>(rng() % 97 * (rng() % 3)); // skewed, some values never occur
    }
    const std::string points = mr::apps::make_points(50000, 7);
    for (const unsigned threads : {1U, 3U}) {
        const auto wc = mr::run_local(mr::apps::word_count(), mr::split_lines(text, 65536), threads, 4);
        EXPECT_EQ(wc, mr::apps::word_count_reference(text));
        EXPECT_GT(wc.size(), 1000U);
        const auto hist = mr::run_local(mr::apps::histogram(), mr::split_bytes(bytes, 10000), threads, 3);
        EXPECT_EQ(hist, mr::apps::histogram_reference(bytes));
        EXPECT_EQ(hist.front().first, "0");
        EXPECT_LT(hist.size(), 256U);
        const auto lr = mr::run_local(mr::apps::linear_regression(), mr::split_lines(points, 4096), threads, 2);
        EXPECT_EQ(lr, mr::apps::linear_regression_reference(points));
        ASSERT_EQ(lr.size(), 5U);
        EXPECT_EQ(lr[0], (mr::Pair{"n", "50000"}));
    }
    EXPECT_THROW((void)mr::run_local(mr::apps::linear_regression(), std::vector<mr::Split>{{"1 2\n3\n"}}, 1, 1),
                 std::invalid_argument);
    EXPECT_THROW((void)mr::apps::make_zipf_text("", 10, 1), std::invalid_argument);
}
