// SPDX-License-Identifier: GPL-2.0
// Shared by the libFuzzer targets in tests/fuzz/ (built by tools/fuzz-host.sh
// with clang, -fsanitize=fuzzer,address,undefined): the verb-free kernel
// core through the host stub headers, a reader that turns the fuzzer's bytes
// into fields, and the check that turns a broken invariant into a finding.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
extern "C" {
#include "core/auth.h"
#include "core/credits.h"
#include "core/dsm.h"
#include "core/lmr.h"
#include "core/membership.h"
#include "core/sync.h"
#include "core/wire.h"
}
#pragma GCC diagnostic pop

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The libFuzzer entry point each target defines.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fuzz
{

// A broken invariant: say which and abort, so libFuzzer keeps the input.
[[noreturn]] inline void fail(const char* file, int line, const char* what)
{
    (void)std::fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", file, line, what);
    std::abort();
}

// Fields from the fuzzer's bytes, front to back; zeros once they run out.
class Reader
{
public:
    Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    [[nodiscard]] bool empty() const { return pos_ >= size_; }
    [[nodiscard]] size_t left() const { return empty() ? 0 : size_ - pos_; }

    void bytes(void* out, size_t n)
    {
        size_t have = n < left() ? n : left();
        if (have)
            std::memcpy(out, data_ + pos_, have);
        if (have < n)
            std::memset(static_cast<uint8_t*>(out) + have, 0, n - have);
        pos_ += have;
    }

    template <typename T> T get()
    {
        T v{};
        bytes(&v, sizeof(v));
        return v;
    }

    uint8_t u8() { return get<uint8_t>(); }
    uint16_t u16() { return get<uint16_t>(); }
    uint32_t u32() { return get<uint32_t>(); }
    uint64_t u64() { return get<uint64_t>(); }
    bool flag() { return (u8() & 1) != 0; }

    // A value in [lo, hi] (hi >= lo), from as few bytes as the range needs.
    uint64_t range(uint64_t lo, uint64_t hi)
    {
        uint64_t span = hi - lo, v = 0;
        for (uint64_t s = span; s; s >>= 8)
            v = v << 8 | u8();
        return span == UINT64_MAX ? v : lo + v % (span + 1);
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

} // namespace fuzz

// Check an invariant of the code under test; a failure is a finding.
#define FUZZ_CHECK(cond)                                                                                               \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            fuzz::fail(__FILE__, __LINE__, #cond);                                                                     \
    } while (0)
