// SPDX-License-Identifier: GPL-2.0
// LMR layouts and access checks (lite_kmod/core/lmr.c). A layout from the
// fuzzer, built the way lite.ko builds one from a peer's chunk lists (or
// with any chunk starts at all), is cut to a size by lite_layout_fit() (as
// a leased LMR's is) or not, goes through lite_layout_check(); then
// accesses with any permissions, offsets and lengths go through
// lite_lmr_check() and, when allowed, lite_lmr_segments() in batches of any
// size, as the RDMA path calls it. Checked: each verdict against the rules
// in lmr.h; an allowed access ends inside the LMR without wrapping; the
// segments cover it exactly, in order, each inside one chunk, at that
// chunk's address plus the offset, with no address that wraps.
#include <cerrno>
#include <optional>
#include <vector>

#include "fuzz.hpp"

namespace
{

// The bytes chunks @c cover if they are valid (non-empty, contiguous from
// 0, no address range that wraps), written out; nothing if not.
std::optional<uint64_t> cover_of(const std::vector<lite_chunk>& c)
{
    uint64_t next = 0, end = 0;
    if (c.empty())
        return std::nullopt;
    for (const auto& ch : c) {
        if (!ch.len || ch.start != next || __builtin_add_overflow(ch.addr, uint64_t{ch.len} - 1, &end))
            return std::nullopt;
        next += ch.len;
    }
    return next;
}

// lite_layout_check()'s rule: valid chunks that cover exactly @size > 0.
bool layout_valid(uint64_t size, const std::vector<lite_chunk>& c)
{
    auto cover = cover_of(c);
    return size && cover && *cover == size;
}

// lite_layout_fit()'s rule: valid chunks that cover at least @want > 0.
bool fit_valid(const std::vector<lite_chunk>& c, uint64_t want)
{
    auto cover = cover_of(c);
    return want && cover && want <= *cover;
}

int access_verdict(uint64_t size, uint32_t held, uint32_t need, uint64_t off, uint64_t len)
{
    uint64_t end = 0;
    if ((held & need) != need)
        return -EACCES;
    if (__builtin_add_overflow(off, len, &end))
        return -EOVERFLOW;
    if (end > size)
        return -ERANGE;
    if ((need & LITE_LMR_ATOMIC) && (len != 8 || off % 8))
        return -EINVAL;
    return 0;
}

// The chunk holding byte @pos, by a linear walk.
size_t chunk_of(const std::vector<lite_chunk>& c, uint64_t pos)
{
    for (size_t i = 0; i < c.size(); i++) {
        if (pos >= c[i].start && pos - c[i].start < c[i].len)
            return i;
    }
    fuzz::fail(__FILE__, __LINE__, "a byte of the LMR in no chunk");
}

void check_segments(const lite_layout& l, const std::vector<lite_chunk>& c, uint64_t off, uint64_t len,
                    fuzz::Reader& in)
{
    lite_seg segs[8];
    uint64_t done = 0;

    while (done < len) {
        auto max = static_cast<uint32_t>(in.range(1, 8));
        uint64_t got = 0;
        int n = lite_lmr_segments(&l, off + done, len - done, segs, max, &got);
        FUZZ_CHECK(n >= 1 && static_cast<uint32_t>(n) <= max);
        FUZZ_CHECK(got >= 1 && got <= len - done);
        uint64_t at = 0;
        for (int i = 0; i < n; i++) {
            const lite_seg& s = segs[i];
            uint64_t pos = off + done + at, last = 0;
            FUZZ_CHECK(s.off == at && s.len >= 1);
            const lite_chunk& ch = c[chunk_of(c, pos)];
            // Inside one chunk, at its address plus the offset into it.
            FUZZ_CHECK(pos + s.len - ch.start <= ch.len);
            FUZZ_CHECK(s.addr == ch.addr + (pos - ch.start));
            FUZZ_CHECK(!__builtin_add_overflow(s.addr, uint64_t{s.len} - 1, &last));
            // Segments end where chunks end, unless the access ends first.
            if (i + 1 < n)
                FUZZ_CHECK(pos + s.len == ch.start + ch.len);
            at += s.len;
        }
        FUZZ_CHECK(at == got);
        done += got;
    }
    FUZZ_CHECK(done == len);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    bool as_kmod = in.flag(); // starts follow from the lengths
    auto n = static_cast<uint32_t>(in.range(0, 64));
    std::vector<lite_chunk> c(n);
    uint64_t next = 0;
    for (auto& ch : c) {
        uint8_t kind = in.u8();
        // Addresses: small, page aligned, or anywhere (near the top too).
        ch.addr = (kind & 3) == 0 ? in.u64() : (kind & 3) == 1 ? ~uint64_t{0} - in.u16() : in.u32() * uint64_t{4096};
        ch.len = (kind & 4) ? in.u32() : static_cast<uint32_t>(in.range(0, 5000));
        ch.start = as_kmod ? next : (kind & 8) ? in.u64() : next + static_cast<int8_t>(in.u8()) / 64;
        next += ch.len;
    }
    uint64_t lmr_size = in.flag() ? next : in.u64();

    // As a leased LMR and its mappers do: cut the chunks to a size first.
    if (in.flag()) {
        const std::vector<lite_chunk> before = c;
        uint64_t want = in.flag() ? in.range(0, next) : in.u64();
        lite_layout f{lmr_size, n, c.empty() ? nullptr : c.data()};
        int fr = lite_layout_fit(&f, c.empty() ? nullptr : c.data(), want);
        FUZZ_CHECK(fr == 0 || fr == -EINVAL);
        FUZZ_CHECK((fr == 0) == fit_valid(before, want));
        if (fr) { // left as it was
            FUZZ_CHECK(f.size == lmr_size && f.n_chunks == n);
            for (size_t i = 0; i < c.size(); i++) {
                FUZZ_CHECK(c[i].addr == before[i].addr && c[i].start == before[i].start && c[i].len == before[i].len);
            }
        } else { // a prefix, the last one shortened, exactly @want bytes
            FUZZ_CHECK(f.size == want && f.n_chunks >= 1 && f.n_chunks <= n);
            c.resize(f.n_chunks);
            for (size_t i = 0; i < c.size(); i++) {
                FUZZ_CHECK(c[i].addr == before[i].addr && c[i].start == before[i].start &&
                           (i + 1 < c.size() ? c[i].len == before[i].len : c[i].len <= before[i].len));
            }
            FUZZ_CHECK(layout_valid(want, c));
            n = f.n_chunks;
            lmr_size = want;
        }
    }

    lite_layout l{lmr_size, n, c.empty() ? nullptr : c.data()};
    int ret = lite_layout_check(&l);
    FUZZ_CHECK(ret == 0 || ret == -EINVAL);
    FUZZ_CHECK((ret == 0) == layout_valid(lmr_size, c));

    while (!in.empty()) {
        auto held = static_cast<uint32_t>(in.range(0, LITE_LMR_PERMS));
        auto need = static_cast<uint32_t>(in.range(0, LITE_LMR_PERMS));
        uint64_t off = 0, len = 0;
        if (in.flag()) { // anything, overflow included
            off = in.u64();
            len = in.u64();
        } else if (lmr_size) { // mostly inside the LMR
            off = in.range(0, lmr_size);
            len = in.range(0, lmr_size - off + 1);
        }
        int verdict = lite_lmr_check(lmr_size, held, need, off, len);
        FUZZ_CHECK(verdict == access_verdict(lmr_size, held, need, off, len));
        if (verdict)
            continue;
        uint64_t end = 0;
        FUZZ_CHECK(!__builtin_add_overflow(off, len, &end) && end <= lmr_size);
        if (ret)
            continue; // no layout to map it with
        if (off < lmr_size) {
            u32 i = lite_lmr_chunk_index(&l, off);
            FUZZ_CHECK(i < n && i == chunk_of(c, off));
        }
        check_segments(l, c, off, len, in);
    }
    return 0;
}
