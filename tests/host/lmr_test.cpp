// SPDX-License-Identifier: GPL-2.0
// LMR layout: chunk splitting and the access checks.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <random>
#include <vector>

#include "core.hpp"

extern "C" {
#include "core/lmr.h"
}

namespace
{

// Chunks of the given lengths at fake DMA addresses 1 MiB apart, each
// with a key of its own.
constexpr uint32_t kKeyBase = 0x5a00;

struct Layout {
    std::vector<lite_chunk> chunks;
    lite_layout l{};

    explicit Layout(const std::vector<uint32_t>& lens)
    {
        uint64_t start = 0;
        for (size_t i = 0; i < lens.size(); i++) {
            chunks.push_back({0x100000000ULL + i * 0x100000ULL, start, lens[i], kKeyBase + static_cast<uint32_t>(i)});
            start += lens[i];
        }
        l.size = start;
        l.n_chunks = static_cast<uint32_t>(chunks.size());
        l.chunks = chunks.data();
    }
};

// Where byte @off of the layout lives.
uint64_t addr_of(const Layout& lay, uint64_t off)
{
    for (const auto& c : lay.chunks) {
        if (off >= c.start && off < c.start + c.len) {
            return c.addr + (off - c.start);
        }
    }
    return 0;
}

// The key of the chunk byte @off lives in.
uint32_t key_of(const Layout& lay, uint64_t off)
{
    for (const auto& c : lay.chunks) {
        if (off >= c.start && off < c.start + c.len)
            return c.rkey;
    }
    return 0;
}

} // namespace

TEST(LmrCheck, DistinctErrnoPerRejection)
{
    const uint32_t all = LITE_LMR_PERMS;
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_READ, 0, 4096), 0);
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_READ, 4095, 1), 0) << "last byte";
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_READ, 4096, 0), 0) << "empty at the end";
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_READ, 4096, 1), -ERANGE) << "one past";
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_WRITE, 1, 4096), -ERANGE);
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_READ, UINT64_MAX, 2), -EOVERFLOW);
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_READ, 8, UINT64_MAX - 7), -EOVERFLOW);
    EXPECT_EQ(lite_lmr_check(UINT64_MAX, all, LITE_LMR_READ, UINT64_MAX - 1, 1), 0) << "no false overflow";
    EXPECT_EQ(lite_lmr_check(4096, LITE_LMR_READ, LITE_LMR_WRITE, 0, 1), -EACCES);
    EXPECT_EQ(lite_lmr_check(4096, LITE_LMR_READ | LITE_LMR_WRITE, LITE_LMR_ATOMIC, 0, 8), -EACCES);
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_ATOMIC, 4, 8), -EINVAL) << "unaligned atomic";
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_ATOMIC, 8, 4), -EINVAL) << "short atomic";
    EXPECT_EQ(lite_lmr_check(4096, all, LITE_LMR_ATOMIC, 4088, 8), 0);
    EXPECT_EQ(lite_lmr_check(4092, all, LITE_LMR_ATOMIC, 4088, 8), -ERANGE) << "atomic past the end";
    // Permission comes first: no probing of the size without the right.
    EXPECT_EQ(lite_lmr_check(4096, 0, LITE_LMR_READ, 9999, 1), -EACCES);
}

TEST(LmrLayout, ValidatesChunks)
{
    Layout ok({4096, 8192, 100});
    EXPECT_EQ(lite_layout_check(&ok.l), 0);

    Layout gap({4096, 4096});
    gap.chunks[1].start = 4097;
    EXPECT_EQ(lite_layout_check(&gap.l), -EINVAL) << "gap";

    Layout empty({4096, 0});
    EXPECT_EQ(lite_layout_check(&empty.l), -EINVAL) << "empty chunk";

    Layout size({4096});
    size.l.size = 4095;
    EXPECT_EQ(lite_layout_check(&size.l), -EINVAL) << "size mismatch";

    Layout wrap({4096});
    wrap.chunks[0].addr = UINT64_MAX - 10;
    EXPECT_EQ(lite_layout_check(&wrap.l), -EINVAL) << "address range wraps";
}

// A leased LMR lives in a size class: its layout is cut to its own size.
TEST(LmrLayout, FitCutsToTheSize)
{
    Layout lay({4096, 4096, 8192});
    ASSERT_EQ(lite_layout_fit(&lay.l, lay.chunks.data(), 5000), 0);
    EXPECT_EQ(lay.l.size, 5000u);
    EXPECT_EQ(lay.l.n_chunks, 2u) << "the third chunk is past the end";
    EXPECT_EQ(lay.chunks[1].len, 5000u - 4096u) << "the last chunk kept is shortened";
    EXPECT_EQ(lite_layout_check(&lay.l), 0) << "a fitted layout is a checked one";

    Layout exact({4096, 4096});
    ASSERT_EQ(lite_layout_fit(&exact.l, exact.chunks.data(), 8192), 0);
    EXPECT_EQ(exact.l.n_chunks, 2u);
    EXPECT_EQ(exact.chunks[1].len, 4096u) << "an exact cover stays as it is";

    Layout boundary({4096, 4096});
    ASSERT_EQ(lite_layout_fit(&boundary.l, boundary.chunks.data(), 4096), 0);
    EXPECT_EQ(boundary.l.n_chunks, 1u) << "a size on a chunk boundary drops the next chunk";
    EXPECT_EQ(boundary.chunks[0].len, 4096u);

    Layout one({4096});
    ASSERT_EQ(lite_layout_fit(&one.l, one.chunks.data(), 1), 0);
    EXPECT_EQ(one.chunks[0].len, 1u);
}

TEST(LmrLayout, FitRefusesShortOrInvalidChunks)
{
    Layout shorter({4096, 4096});
    EXPECT_EQ(lite_layout_fit(&shorter.l, shorter.chunks.data(), 8193), -EINVAL) << "covers less";
    EXPECT_EQ(shorter.l.n_chunks, 2u) << "left as it was";
    EXPECT_EQ(shorter.chunks[1].len, 4096u);

    Layout zero({4096});
    EXPECT_EQ(lite_layout_fit(&zero.l, zero.chunks.data(), 0), -EINVAL) << "an empty LMR";

    Layout gap({4096, 4096});
    gap.chunks[1].start = 4097;
    EXPECT_EQ(lite_layout_fit(&gap.l, gap.chunks.data(), 100), -EINVAL) << "a gap past the size still counts";

    Layout empty({4096, 0});
    EXPECT_EQ(lite_layout_fit(&empty.l, empty.chunks.data(), 100), -EINVAL) << "empty chunk";

    Layout wrap({4096, 4096});
    wrap.chunks[1].addr = UINT64_MAX - 10;
    EXPECT_EQ(lite_layout_fit(&wrap.l, wrap.chunks.data(), 100), -EINVAL) << "address range wraps";

    Layout other({4096});
    Layout alias({4096});
    EXPECT_EQ(lite_layout_fit(&other.l, alias.chunks.data(), 100), -EINVAL) << "not the layout's own array";
}

TEST(LmrLayout, ChunkIndexBinarySearch)
{
    Layout lay({4096, 4096, 8192, 1});
    EXPECT_EQ(lite_lmr_chunk_index(&lay.l, 0), 0u);
    EXPECT_EQ(lite_lmr_chunk_index(&lay.l, 4095), 0u);
    EXPECT_EQ(lite_lmr_chunk_index(&lay.l, 4096), 1u);
    EXPECT_EQ(lite_lmr_chunk_index(&lay.l, 8192), 2u);
    EXPECT_EQ(lite_lmr_chunk_index(&lay.l, 16383), 2u);
    EXPECT_EQ(lite_lmr_chunk_index(&lay.l, 16384), 3u);
}

TEST(LmrSegments, SplitsAtChunkBoundaries)
{
    Layout lay({4096, 4096, 8192});
    lite_seg segs[8];
    uint64_t done = 0;
    int n = lite_lmr_segments(&lay.l, 4000, 200, segs, 8, &done);
    ASSERT_EQ(n, 2);
    EXPECT_EQ(done, 200u);
    EXPECT_EQ(segs[0].addr, lay.chunks[0].addr + 4000);
    EXPECT_EQ(segs[0].len, 96u);
    EXPECT_EQ(segs[0].off, 0u);
    EXPECT_EQ(segs[1].addr, lay.chunks[1].addr);
    EXPECT_EQ(segs[1].len, 104u);
    EXPECT_EQ(segs[1].off, 96u);
    EXPECT_EQ(segs[0].rkey, kKeyBase) << "each segment carries its chunk's key";
    EXPECT_EQ(segs[1].rkey, kKeyBase + 1);

    n = lite_lmr_segments(&lay.l, 0, lay.l.size, segs, 8, &done);
    EXPECT_EQ(n, 3);
    EXPECT_EQ(done, lay.l.size);

    n = lite_lmr_segments(&lay.l, 16383, 1, segs, 8, &done);
    ASSERT_EQ(n, 1) << "1-byte edge";
    EXPECT_EQ(segs[0].addr, lay.chunks[2].addr + 8191);
}

TEST(LmrSegments, ResumesWhenOutOfRoom)
{
    Layout lay({4096, 4096, 4096, 4096});
    lite_seg segs[2];
    uint64_t done = 0, total = 0;
    int calls = 0;
    while (total < 16384) {
        int n = lite_lmr_segments(&lay.l, total, 16384 - total, segs, 2, &done);
        ASSERT_GT(n, 0);
        EXPECT_LE(n, 2);
        total += done;
        calls++;
    }
    EXPECT_EQ(calls, 2);
}

// Every byte of every random access maps to the right remote address, and
// the segments tile the access exactly.
TEST(LmrSegments, RandomAccessesTileExactly)
{
    std::mt19937_64 rng(99);
    std::vector<uint32_t> lens;
    lens.reserve(40);
    for (int i = 0; i < 40; i++)
        lens.push_back(static_cast<uint32_t>(4096u << (rng() % 4)) - (i == 39 ? 123u : 0u));
    Layout lay(lens);
    ASSERT_EQ(lite_layout_check(&lay.l), 0);
    lite_seg segs[64];
    for (int iter = 0; iter < 20000; iter++) {
        uint64_t off = rng() % lay.l.size;
        uint64_t len = 1 + rng() % (lay.l.size - off);
        if (iter % 2)
            len = 1 + len % 9000;
        if (off + len > lay.l.size)
            len = lay.l.size - off;
        ASSERT_EQ(lite_lmr_check(lay.l.size, LITE_LMR_PERMS, LITE_LMR_READ, off, len), 0);
        uint64_t done = 0;
        int n = lite_lmr_segments(&lay.l, off, len, segs, 64, &done);
        ASSERT_EQ(done, len);
        uint64_t expect_off = 0;
        for (int i = 0; i < n; i++) {
            ASSERT_EQ(segs[i].off, expect_off);
            ASSERT_GT(segs[i].len, 0u);
            ASSERT_EQ(segs[i].addr, addr_of(lay, off + segs[i].off));
            ASSERT_EQ(segs[i].addr + segs[i].len - 1, addr_of(lay, off + segs[i].off + segs[i].len - 1))
                << "a segment never leaves its chunk";
            ASSERT_EQ(segs[i].rkey, key_of(lay, off + segs[i].off)) << "and carries its key";
            expect_off += segs[i].len;
        }
        ASSERT_EQ(expect_off, len);
    }
}
