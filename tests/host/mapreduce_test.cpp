// SPDX-License-Identifier: MIT
//
// lite-MapReduce's backend-free part: records, splits, partitioning and
// the single-process engine, checked against direct computations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "mapreduce/apps.hpp"
#include "mapreduce/input.hpp"
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

TEST(MapReduceInput, TextSplitsMapEveryLineExactlyOnce)
{
    // Files with short and long lines, with and without a final newline,
    // cut into ranges of every size from 1 byte up: the splits' bytes,
    // joined, are the file, and each split starts at a line start.
    const std::string path = ::testing::TempDir() + "mr-input-test.txt";
    std::mt19937_64 rng(9);
    for (int round = 0; round < 40; round++) {
        std::string text;
        const int lines = static_cast<int>(rng() % 30);
        for (int l = 0; l < lines; l++) {
            text.append(rng() % 4 == 0 ? rng() % 70 : rng() % 8, static_cast<char>('a' + l % 26));
            text += '\n';
        }
        if (rng() % 2 == 0) {
            text += "tail without newline";
        }
        {
            std::ofstream out(path, std::ios::binary | std::ios::trunc);
            out << text;
        }
        for (const uint64_t len : {1ULL, 2ULL, 3ULL, 7ULL, 64ULL, 1000ULL}) {
            std::string joined;
            for (uint64_t off = 0; off < text.size(); off += len) {
                uint64_t start = 0;
                const std::string got =
                    mr::read_split(path, off, std::min<uint64_t>(len, text.size() - off), false, start);
                if (!got.empty()) {
                    EXPECT_EQ(start, joined.size()) << "round " << round << " len " << len << " off " << off;
                    EXPECT_TRUE(start == 0 || text[start - 1] == '\n');
                }
                joined += got;
            }
            ASSERT_EQ(joined, text) << "round " << round << " split " << len;
        }
        if (text.size() >= 3) {
            uint64_t start = 0;
            EXPECT_EQ(mr::read_split(path, 1, 2, true, start), text.substr(1, 2)) << "binary: the bytes exactly";
        }
    }
    uint64_t start = 0;
    EXPECT_THROW((void)mr::read_split(path, 0, 1U << 20, true, start), std::runtime_error);
    EXPECT_THROW((void)mr::read_split(path + ".missing", 0, 1, false, start), std::system_error);
    std::filesystem::remove(path);
}

TEST(MapReduceApps, NewApplicationsEqualTheirReferences)
{
    const std::string text = mr::apps::make_zipf_text(word_list(), 1U << 19, 8);
    const std::string a = text.substr(0, text.size() / 2 + 37);
    const std::string b = "some other words\nand " + a.substr(0, a.find(' ')) + " lines\n"; // a word of a too
    const std::vector<mr::Split> files = {{a, "a.txt", 0}, {b, "b.txt", 0}};
    // string match and the inverted index over two files
    std::vector<mr::Split> splits;
    for (const auto& f : files) {
        for (auto s : mr::split_lines(f.data, 4096, f.name)) {
            splits.push_back(s);
        }
    }
    const auto sm = mr::apps::make_app("strmatch", "wa\nb\nnever-there\n");
    EXPECT_EQ(mr::run_local(sm.job, splits, 2, 3), mr::apps::reference("strmatch", "wa\nb\nnever-there\n", files));
    const auto ii = mr::run_local(mr::apps::inverted_index(), splits, 2, 3);
    EXPECT_EQ(ii, mr::apps::reference("invindex", "", files));
    bool both = false;
    for (const auto& [w, names] : ii) {
        both = both || names == "a.txt\nb.txt";
    }
    EXPECT_TRUE(both) << "some word is in both files";
    // k-means: iterations through the engine equal the direct ones
    const std::string pts = mr::apps::make_clusters(20000, 4, 5);
    auto c = mr::apps::initial_centroids(4, 6);
    auto direct = c;
    for (int it = 0; it < 3; it++) {
        const auto params = mr::apps::format_centroids(c);
        EXPECT_EQ(mr::apps::parse_centroids(params), c) << "centroids round-trip exactly";
        const auto got = mr::run_local(mr::apps::kmeans(c), mr::split_lines(pts, 10000), 3, 2);
        EXPECT_EQ(got, mr::apps::kmeans_reference(pts, direct));
        c = mr::apps::kmeans_update(c, got);
        direct = mr::apps::kmeans_update(direct, mr::apps::kmeans_reference(pts, direct));
    }
    EXPECT_EQ(c, direct);
    EXPECT_THROW((void)mr::apps::make_app("kmeans", "1 2\nx\n"), std::invalid_argument);
    EXPECT_THROW((void)mr::apps::make_app("strmatch", ""), std::invalid_argument);
    EXPECT_THROW((void)mr::apps::make_app("wordcount", "p"), std::invalid_argument);
    EXPECT_THROW((void)mr::apps::make_app("nope", ""), std::invalid_argument);
}
