// SPDX-License-Identifier: MIT
//
// dsm-apps-ga: the peer of the DSM programs, written for Global Arrays
// (over ARMCI-MPI and MPI), the tool a user would pick instead of a DSM.
// The same three programs with the same inputs and the same arithmetic
// (dsm/apps/kernels.hpp), so the results are bit for bit those of the
// single-node reference, which rank 0 computes and compares:
//
//   stencil   the grids are row-distributed global arrays; each rank gets
//             its rows and their halo, computes, puts its rows; GA_Sync
//   matmul    A, B, C global arrays; blocks of C handed out by NGA_Read_inc
//             on a counter array; each rank caches the row and column
//             blocks of A and B it fetched
//   pagerank  the in-edge CSR, out-degrees and both vectors are global
//             arrays; each rank gets its slice of the graph once and the
//             whole contribution vector every iteration
//
// Run under mpirun, one rank per node, e.g.
//   mpirun -np 3 --mca btl tcp,self dsm-apps-ga --app all
// The time is the computation only, from a GA_Sync after the input was
// written. CSV on stdout (rank 0), as dsm-apps prints it:
//
//   app,backend,nodes,threads,run,seconds,digest,reference,match
//
// exit 0 ok, 1 error or a result that differs from the reference, 2 usage.
#include <ga.h>
#include <macdecls.h>
#include <mpi.h>

#include <apps.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "dsm_apps_opts.hpp"
#include "kernels.hpp"
#include "lat.hpp"

namespace
{

using Clock = std::chrono::steady_clock;
using dsm_apps::Range;
using dsm_apps::split;

using Options = bench::AppOptions;

// A global array, destroyed with its handle.
class Array
{
public:
    Array(int type, std::vector<int> dims, const char* name)
    {
        std::vector<int> chunk(dims.size(), -1);
        for (size_t d = 1; d < dims.size(); d++) // whole rows on each rank
            chunk[d] = dims[d];
        h_ = NGA_Create(type, static_cast<int>(dims.size()), dims.data(), const_cast<char*>(name), // NOLINT
                        chunk.data());
        if (h_ == 0)
            throw std::runtime_error(std::string("NGA_Create ") + name);
    }
    Array(const Array&) = delete;
    Array& operator=(const Array&) = delete;
    Array(Array&&) = delete;
    Array& operator=(Array&&) = delete;
    ~Array() { GA_Destroy(h_); }

    // Rows [lo, hi) (and every column) of a 1-D or 2-D array.
    void get(int64_t lo, int64_t hi, void* buf, int64_t cols = 1) const { xfer(lo, hi, buf, cols, false); }
    void put(int64_t lo, int64_t hi, const void* buf, int64_t cols = 1) const
    {
        xfer(lo, hi, const_cast<void*>(buf), cols, true); // NOLINT(cppcoreguidelines-pro-type-const-cast)
    }
    // The @bs x @bs block at (r, c) of a 2-D array, or @rows x @cols.
    void get_block(int r, int c, int rows, int cols, double* buf) const
    {
        int lo[2] = {r, c};                       // NOLINT
        int hi[2] = {r + rows - 1, c + cols - 1}; // NOLINT
        int ld = cols;
        NGA_Get(h_, lo, hi, buf, &ld);
    }
    void put_block(int r, int c, int rows, int cols, const double* buf) const
    {
        int lo[2] = {r, c};                       // NOLINT
        int hi[2] = {r + rows - 1, c + cols - 1}; // NOLINT
        int ld = cols;
        NGA_Put(h_, lo, hi, const_cast<double*>(buf), &ld); // NOLINT(cppcoreguidelines-pro-type-const-cast)
    }
    [[nodiscard]] int handle() const { return h_; }

private:
    void xfer(int64_t lo, int64_t hi, void* buf, int64_t cols, bool put) const
    {
        if (hi <= lo)
            return;
        const int nd = GA_Ndim(h_);
        int l[2] = {static_cast<int>(lo), 0};                              // NOLINT
        int h[2] = {static_cast<int>(hi - 1), static_cast<int>(cols - 1)}; // NOLINT
        int ld = static_cast<int>(cols);
        if (nd == 1)
            h[1] = 0;
        if (put) {
            NGA_Put(h_, l, h, buf, &ld);
        } else {
            NGA_Get(h_, l, h, buf, &ld);
        }
    }
    int h_ = 0;
};

double since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

int me()
{
    return GA_Nodeid();
}
int np()
{
    return GA_Nnodes();
}

// Each returns (seconds, digest of the output as read back on rank 0).
struct Outcome {
    double seconds = 0;
    uint64_t digest = 0;
};

Outcome stencil(unsigned scale)
{
    const auto sz = dsm_apps::stencil_size(scale);
    const auto n = static_cast<int64_t>(sz.n);
    const int dims_n = static_cast<int>(n);
    Array g0(C_DBL, {dims_n, dims_n}, "grid0");
    Array g1(C_DBL, {dims_n, dims_n}, "grid1");
    const Array* grids[2] = {&g0, &g1}; // NOLINT
    if (me() == 0) {
        std::vector<double> init(n * n);
        for (int64_t i = 0; i < n; i++) {
            for (int64_t j = 0; j < n; j++)
                init[i * n + j] = dsm_apps::stencil_initial(n, i, j);
        }
        g0.put(0, n, init.data(), n);
        g1.put(0, n, init.data(), n);
    }
    GA_Sync();
    const auto t0 = Clock::now();
    const Range rows = split(n - 2, me(), np());
    const auto count = static_cast<int64_t>(rows.end - rows.begin);
    std::vector<double> in((count + 2) * n);
    std::vector<double> out(std::max<int64_t>(count, 1) * n);
    for (unsigned s = 0; s < sz.sweeps; s++) {
        const Array& src = *grids[s % 2];
        const Array& dst = *grids[(s + 1) % 2];
        if (count > 0) {
            // interior rows begin+1 .. end, with one halo row on each side
            src.get(static_cast<int64_t>(rows.begin), static_cast<int64_t>(rows.end) + 2, in.data(), n);
            for (int64_t r = 0; r < count; r++)
                dsm_apps::stencil_row(&in[r * n], &in[(r + 1) * n], &in[(r + 2) * n], &out[r * n], n);
            dst.put(static_cast<int64_t>(rows.begin) + 1, static_cast<int64_t>(rows.end) + 1, out.data(), n);
        }
        GA_Sync();
    }
    Outcome o{since(t0), 0};
    if (me() == 0) {
        std::vector<double> all(n * n);
        grids[sz.sweeps % 2]->get(0, n, all.data(), n);
        o.digest = dsm_apps::digest(std::as_bytes(std::span(all)));
    }
    return o;
}

Outcome matmul(unsigned scale)
{
    const auto sz = dsm_apps::matmul_size(scale);
    const auto n = static_cast<int>(sz.n);
    const auto bs = static_cast<int>(sz.bs);
    Array a(C_DBL, {n, n}, "A");
    Array b(C_DBL, {n, n}, "B");
    Array c(C_DBL, {n, n}, "C");
    Array next(C_INT, {1}, "next");
    if (me() == 0) {
        std::vector<double> ma(sz.n * sz.n);
        std::vector<double> mb(sz.n * sz.n);
        for (uint64_t i = 0; i < sz.n; i++) {
            for (uint64_t k = 0; k < sz.n; k++) {
                ma[i * sz.n + k] = dsm_apps::matmul_a(i, k);
                mb[i * sz.n + k] = dsm_apps::matmul_b(i, k);
            }
        }
        a.put(0, n, ma.data(), n);
        b.put(0, n, mb.data(), n);
    }
    GA_Zero(next.handle());
    GA_Sync();
    const auto t0 = Clock::now();
    const int per_side = n / bs;
    if (per_side == 0)
        throw std::logic_error("matmul: blocks larger than the matrix");
    const int tasks = per_side * per_side;
    std::map<int, std::vector<double>> arows; // bs x n, by block row
    std::map<int, std::vector<double>> bcols; // n x bs, by block column
    std::vector<double> block(sz.bs * sz.bs);
    for (;;) {
        int zero = 0;
        const long t = NGA_Read_inc(next.handle(), &zero, 1);
        if (t >= tasks)
            break;
        const int bi = static_cast<int>(t) / per_side;
        const int bj = static_cast<int>(t) % per_side;
        auto& ar = arows[bi];
        if (ar.empty()) {
            ar.resize(sz.bs * sz.n);
            a.get_block(bi * bs, 0, bs, n, ar.data());
        }
        auto& bc = bcols[bj];
        if (bc.empty()) {
            bc.resize(sz.n * sz.bs);
            b.get_block(0, bj * bs, n, bs, bc.data());
        }
        dsm_apps::matmul_block(ar.data(), sz.n, bc.data(), sz.bs, block.data(), sz.n, sz.bs);
        c.put_block(bi * bs, bj * bs, bs, bs, block.data());
    }
    GA_Sync();
    Outcome o{since(t0), 0};
    if (me() == 0) {
        std::vector<double> all(sz.n * sz.n);
        c.get(0, n, all.data(), n);
        o.digest = dsm_apps::digest(std::as_bytes(std::span(all)));
    }
    return o;
}

Outcome pagerank(unsigned scale)
{
    const auto sz = dsm_apps::pagerank_size(scale);
    const dsm_apps::Graph g = dsm_apps::rmat(sz.scale, sz.edge_factor, sz.seed);
    const auto nv = static_cast<int64_t>(g.vertices);
    const auto ne = static_cast<int64_t>(g.sources.size());
    static_assert(sizeof(long) == sizeof(uint64_t) && sizeof(int) == sizeof(uint32_t));
    Array offsets(C_LONG, {static_cast<int>(nv + 1)}, "offsets");
    Array sources(C_INT, {static_cast<int>(ne)}, "sources");
    Array outdeg(C_INT, {static_cast<int>(nv)}, "outdeg");
    Array rank(C_DBL, {static_cast<int>(nv)}, "rank");
    Array contrib(C_DBL, {static_cast<int>(nv)}, "contrib");
    if (me() == 0) {
        offsets.put(0, nv + 1, g.offsets.data());
        sources.put(0, ne, g.sources.data());
        outdeg.put(0, nv, g.outdeg.data());
        std::vector<double> r0(nv, 1.0 / static_cast<double>(nv));
        rank.put(0, nv, r0.data());
    }
    GA_Sync();
    const auto t0 = Clock::now();
    const Range mine = split(nv, me(), np());
    const auto b = static_cast<int64_t>(mine.begin);
    const auto e = static_cast<int64_t>(mine.end);
    std::vector<uint64_t> off(e - b + 1);
    offsets.get(b, e + 1, off.data());
    std::vector<uint32_t> src(off.back() - off.front());
    sources.get(static_cast<int64_t>(off.front()), static_cast<int64_t>(off.back()), src.data());
    std::vector<uint32_t> deg(e - b);
    outdeg.get(b, e, deg.data());
    std::vector<double> my(e - b);
    std::vector<double> all(nv);
    for (unsigned it = 0; it < sz.iters; it++) {
        rank.get(b, e, my.data());
        for (int64_t v = b; v < e; v++)
            my[v - b] = dsm_apps::pagerank_contrib(my[v - b], deg[v - b]);
        contrib.put(b, e, my.data());
        GA_Sync();
        contrib.get(0, nv, all.data());
        for (int64_t v = b; v < e; v++) {
            my[v - b] = dsm_apps::pagerank_vertex(src.data() + (off[v - b] - off[0]), off[v - b + 1] - off[v - b],
                                                  all.data(), g.vertices);
        }
        rank.put(b, e, my.data());
        GA_Sync();
    }
    Outcome o{since(t0), 0};
    if (me() == 0) {
        rank.get(0, nv, all.data());
        o.digest = dsm_apps::digest(std::as_bytes(std::span(all)));
    }
    return o;
}

int run(const Options& o)
{
    bool all_match = true;
    if (me() == 0)
        std::printf("app,backend,nodes,threads,run,seconds,digest,reference,match\n");
    for (const auto& name : o.apps) {
        uint64_t ref = 0;
        if (me() == 0)
            ref = dsm_apps::reference(*dsm_apps::make_app(name, o.scale));
        for (unsigned k = 0; k < o.runs; k++) {
            Outcome r;
            if (name == "stencil") {
                r = stencil(o.scale);
            } else if (name == "matmul") {
                r = matmul(o.scale);
            } else {
                r = pagerank(o.scale);
            }
            if (me() == 0) {
                const bool match = r.digest == ref;
                all_match = all_match && match;
                std::printf("%s,ga,%d,1,%u,%.4f,%016" PRIx64 ",%016" PRIx64 ",%s\n", name.c_str(), np(), k, r.seconds,
                            r.digest, ref, match ? "yes" : "NO");
                (void)std::fflush(stdout);
            }
        }
    }
    return all_match ? 0 : 1;
}

int run_ga(int argc, char** argv)
{
    GA_Initialize();
    const int rc = lite_cli::guard("dsm-apps-ga", [&] {
        lite_cli::App app("dsm-apps-ga", "The DSM programs on Global Arrays (ARMCI-MPI, Open MPI), under mpirun -np N; "
                                         "CSV on stdout (rank 0), as dsm-apps prints it.");
        Options o;
        bench::add_app_options(app, o);
        return app.run(argc, argv, [&o] { return run(o); });
    });
    if (rc == 1 && np() > 1) // the others may wait in a collective call
        MPI_Abort(MPI_COMM_WORLD, 1);
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    GA_Terminate();
    return worst;
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    const int rc = run_ga(argc, argv);
    MPI_Finalize();
    return rc;
}
