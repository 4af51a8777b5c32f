// SPDX-License-Identifier: MIT
//
// The arithmetic of the three DSM programs (a Jacobi stencil, a blocked
// matrix multiply, PageRank on an R-MAT graph): their inputs, the inner
// loops and the digest of their outputs. Shared by the programs on the DSM
// (dsm/apps/apps.cpp) and by their Global Arrays peer
// (benchmarks/dsm_apps_ga.cpp), so that every version does the same
// floating-point operations in the same order and gives the same bits as
// a single-node run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace dsm_apps
{

constexpr uint64_t kPage = 4096;

// Round @n bytes up to whole pages.
constexpr uint64_t page_round(uint64_t n)
{
    return (n + kPage - 1) / kPage * kPage;
}

// A deterministic stream of 64-bit numbers (splitmix64).
class Rng
{
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next()
    {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1).
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    uint64_t s_;
};

// FNV-1a over bytes: the digest a run prints and the tests compare.
inline uint64_t digest(std::span<const std::byte> b, uint64_t h = 0xcbf29ce484222325ULL)
{
    for (std::byte x : b) {
        h ^= static_cast<uint64_t>(x);
        h *= 0x100000001b3ULL;
    }
    return h;
}

// Worker @w of @n gets [begin, end) of @count items, in contiguous blocks.
struct Range {
    uint64_t begin;
    uint64_t end;
};
inline Range split(uint64_t count, uint64_t w, uint64_t n)
{
    return {count * w / n, count * (w + 1) / n};
}

// ---- The sizes of the three programs at a scale (1: small enough for a
// TCG guest; larger scales run longer) ------------------------------------

struct StencilSize {
    uint64_t n;      // grid side: one row of doubles is one page at 512
    unsigned sweeps; // Jacobi sweeps
};
inline StencilSize stencil_size(unsigned scale)
{
    return {512, 40 * scale};
}

struct MatmulSize {
    uint64_t n;  // matrix side
    uint64_t bs; // block side
};
inline MatmulSize matmul_size(unsigned scale)
{
    return {256 * uint64_t{scale}, 32};
}

struct PagerankSize {
    unsigned scale;       // 2^scale vertices
    unsigned edge_factor; // edges per vertex
    uint64_t seed;
    unsigned iters;
};
inline PagerankSize pagerank_size(unsigned scale)
{
    return {13, 8, 42, 10 * scale};
}

// ---- Jacobi stencil on an N x N grid of doubles -------------------------
//
// The boundary is fixed; every interior point becomes the mean of its four
// neighbours, for a number of sweeps (two grids, alternating).

inline double stencil_initial(uint64_t n, uint64_t i, uint64_t j)
{
    if (i == 0)
        return 100.0; // the hot edge
    if (i == n - 1 || j == 0 || j == n - 1)
        return 0.0;
    Rng r(i * n + j);
    return r.unit();
}

// Row @i of the next grid from rows i-1, i, i+1 of the current one.
inline void stencil_row(const double* up, const double* mid, const double* down, double* out, uint64_t n)
{
    out[0] = mid[0];
    for (uint64_t j = 1; j + 1 < n; j++)
        out[j] = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
    out[n - 1] = mid[n - 1];
}

// ---- Blocked matrix multiply C = A x B, N x N doubles -------------------

inline double matmul_a(uint64_t i, uint64_t k)
{
    Rng r((i << 32) ^ k ^ 0xa);
    return r.unit() - 0.5;
}
inline double matmul_b(uint64_t k, uint64_t j)
{
    Rng r((k << 32) ^ j ^ 0xb0000000000ULL);
    return r.unit() - 0.5;
}

// One @bs x @bs block of C into @c (row-major, stride bs): @a is the first
// of its bs rows of A (stride lda), @b the first of its bs columns of B
// (stride ldb), @n the inner dimension. The sum for each element runs over
// k in ascending order: the same bits however the blocks are shared out
// and wherever A and B are read from.
inline void matmul_block(const double* a, uint64_t lda, const double* b, uint64_t ldb, double* c, uint64_t n,
                         uint64_t bs)
{
    std::fill(c, c + bs * bs, 0.0);
    for (uint64_t i = 0; i < bs; i++) {
        const double* arow = a + i * lda;
        double* crow = c + i * bs;
        for (uint64_t k = 0; k < n; k++) {
            const double aik = arow[k];
            const double* brow = b + k * ldb;
            for (uint64_t j = 0; j < bs; j++)
                crow[j] += aik * brow[j];
        }
    }
}

// ---- PageRank on an R-MAT graph -----------------------------------------
//
// 2^scale vertices, edge_factor * 2^scale directed edges drawn with the
// R-MAT probabilities (0.57, 0.19, 0.19, 0.05). Stored by destination
// (CSR of in-edges: offsets[v]..offsets[v+1] index sources[]) with each
// vertex's out-degree. A rank becomes (1 - d) / N + d * the sum of its
// in-neighbours' rank / out-degree, in the order of sources[].

struct Graph {
    uint64_t vertices = 0;
    std::vector<uint64_t> offsets; // vertices + 1
    std::vector<uint32_t> sources; // edges
    std::vector<uint32_t> outdeg;  // vertices
};

inline Graph rmat(unsigned scale, unsigned edge_factor, uint64_t seed)
{
    const uint64_t nv = uint64_t{1} << scale;
    const uint64_t ne = nv * edge_factor;
    std::vector<uint32_t> src(ne);
    std::vector<uint32_t> dst(ne);
    Rng r(seed);
    for (uint64_t e = 0; e < ne; e++) {
        uint64_t u = 0;
        uint64_t v = 0;
        for (unsigned bit = 0; bit < scale; bit++) {
            double p = r.unit();
            uint64_t ub = p >= 0.57 + 0.19 ? 1 : 0;                     // c or d quadrant
            uint64_t vb = (p >= 0.57 && p < 0.76) || p >= 0.95 ? 1 : 0; // b or d quadrant
            u |= ub << bit;
            v |= vb << bit;
        }
        src[e] = static_cast<uint32_t>(u);
        dst[e] = static_cast<uint32_t>(v);
    }
    Graph g;
    g.vertices = nv;
    g.offsets.assign(nv + 1, 0);
    g.outdeg.assign(nv, 0);
    for (uint64_t e = 0; e < ne; e++) {
        g.offsets[dst[e] + 1]++;
        g.outdeg[src[e]]++;
    }
    for (uint64_t v = 0; v < nv; v++)
        g.offsets[v + 1] += g.offsets[v];
    g.sources.resize(ne);
    std::vector<uint64_t> fill(g.offsets.begin(), g.offsets.end() - 1);
    for (uint64_t e = 0; e < ne; e++) // stable: sources keep the order drawn
        g.sources[fill[dst[e]]++] = src[e];
    return g;
}

constexpr double kDamping = 0.85;

// What vertex @v passes to each out-neighbour.
inline double pagerank_contrib(double rank, uint32_t outdeg)
{
    return outdeg == 0 ? 0.0 : rank / static_cast<double>(outdeg);
}

// The new rank of one vertex from the contributions of its @count
// in-neighbours @src.
inline double pagerank_vertex(const uint32_t* src, uint64_t count, const double* contrib, uint64_t vertices)
{
    double sum = 0.0;
    for (uint64_t e = 0; e < count; e++)
        sum += contrib[src[e]];
    return (1.0 - kDamping) / static_cast<double>(vertices) + kDamping * sum;
}

} // namespace dsm_apps
