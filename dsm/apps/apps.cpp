// SPDX-License-Identifier: MIT
#include "apps.hpp"

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "kernels.hpp"

namespace dsm_apps
{
namespace
{

template <class T> T* at(std::byte* base, uint64_t off)
{
    return reinterpret_cast<T*>(base + off); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}
template <class T> const T* at(const std::byte* base, uint64_t off)
{
    return reinterpret_cast<const T*>(base + off); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

// ---- Jacobi: two N x N grids; rows split among the workers ---------------
class Stencil final : public App
{
public:
    explicit Stencil(unsigned scale) : n_(stencil_size(scale).n), sweeps_(stencil_size(scale).sweeps) {}

    [[nodiscard]] uint64_t region_bytes() const override { return 2 * grid_bytes(); }
    void init(std::byte* base) const override
    {
        for (uint64_t g = 0; g < 2; g++) {
            auto* grid = at<double>(base, g * grid_bytes());
            for (uint64_t i = 0; i < n_; i++) {
                for (uint64_t j = 0; j < n_; j++)
                    grid[i * n_ + j] = stencil_initial(n_, i, j);
            }
        }
    }
    void work(const Ctx& c) const override
    {
        const Range rows = split(n_ - 2, c.worker(), c.workers());
        for (unsigned s = 0; s < sweeps_; s++) {
            const auto* src = at<double>(c.base, (s % 2) * grid_bytes());
            auto* dst = at<double>(c.base, ((s + 1) % 2) * grid_bytes());
            for (uint64_t i = rows.begin + 1; i < rows.end + 1; i++)
                stencil_row(src + (i - 1) * n_, src + i * n_, src + (i + 1) * n_, dst + i * n_, n_);
            c.sync();
        }
    }
    [[nodiscard]] uint64_t result(const std::byte* base) const override
    {
        return digest({base + (sweeps_ % 2) * grid_bytes(), grid_bytes()});
    }
    [[nodiscard]] std::string describe() const override
    {
        return "Jacobi stencil, " + std::to_string(n_) + "x" + std::to_string(n_) + " doubles, " +
               std::to_string(sweeps_) + " sweeps";
    }

private:
    [[nodiscard]] uint64_t grid_bytes() const { return page_round(n_ * n_ * sizeof(double)); }
    uint64_t n_;
    unsigned sweeps_;
};

// ---- Blocked matmul: blocks of C handed out through a counter under the
// lock; layout: [counter page][A][B][C] -------------------------------------
class Matmul final : public App
{
public:
    explicit Matmul(unsigned scale) : n_(matmul_size(scale).n), bs_(matmul_size(scale).bs) {}

    [[nodiscard]] uint64_t region_bytes() const override { return kPage + 3 * mat_bytes(); }
    void init(std::byte* base) const override
    {
        *at<uint64_t>(base, 0) = 0;
        auto* a = at<double>(base, a_off());
        auto* b = at<double>(base, b_off());
        for (uint64_t i = 0; i < n_; i++) {
            for (uint64_t k = 0; k < n_; k++) {
                a[i * n_ + k] = matmul_a(i, k);
                b[i * n_ + k] = matmul_b(i, k);
            }
        }
        std::memset(base + c_off(), 0, mat_bytes());
    }
    void work(const Ctx& c) const override
    {
        const uint64_t per_side = n_ / bs_;
        const uint64_t tasks = per_side * per_side;
        const auto* a = at<double>(c.base, a_off());
        const auto* b = at<double>(c.base, b_off());
        auto* out = at<double>(c.base, c_off());
        auto* next = at<volatile uint64_t>(c.base, 0);
        std::vector<double> block(bs_ * bs_);
        for (;;) {
            uint64_t t = 0;
            c.locked([&] {
                t = *next;
                *next = t + 1;
            });
            if (t >= tasks)
                break;
            const uint64_t bi = t / per_side;
            const uint64_t bj = t % per_side;
            matmul_block(a + bi * bs_ * n_, n_, b + bj * bs_, n_, block.data(), n_, bs_);
            for (uint64_t i = 0; i < bs_; i++)
                std::memcpy(out + (bi * bs_ + i) * n_ + bj * bs_, block.data() + i * bs_, bs_ * sizeof(double));
        }
        c.sync();
    }
    [[nodiscard]] uint64_t result(const std::byte* base) const override
    {
        return digest({base + c_off(), mat_bytes()});
    }
    [[nodiscard]] std::string describe() const override
    {
        return "blocked matrix multiply, " + std::to_string(n_) + "x" + std::to_string(n_) + " doubles, " +
               std::to_string(bs_) + "x" + std::to_string(bs_) + " blocks";
    }

private:
    [[nodiscard]] uint64_t mat_bytes() const { return page_round(n_ * n_ * sizeof(double)); }
    [[nodiscard]] uint64_t a_off() const { return kPage; }
    [[nodiscard]] uint64_t b_off() const { return kPage + mat_bytes(); }
    [[nodiscard]] uint64_t c_off() const { return kPage + 2 * mat_bytes(); }
    uint64_t n_;
    uint64_t bs_;
};

// ---- PageRank: the graph and two vectors in the region; vertices split
// among the workers; two phases per iteration --------------------------------
class PageRank final : public App
{
public:
    explicit PageRank(unsigned scale)
        : iters_(pagerank_size(scale).iters),
          g_(rmat(pagerank_size(scale).scale, pagerank_size(scale).edge_factor, pagerank_size(scale).seed))
    {
    }

    [[nodiscard]] uint64_t region_bytes() const override { return contrib_off() + vec_bytes(); }
    void init(std::byte* base) const override
    {
        std::memcpy(base + off_off(), g_.offsets.data(), g_.offsets.size() * sizeof(uint64_t));
        std::memcpy(base + src_off(), g_.sources.data(), g_.sources.size() * sizeof(uint32_t));
        std::memcpy(base + deg_off(), g_.outdeg.data(), g_.outdeg.size() * sizeof(uint32_t));
        auto* rank = at<double>(base, rank_off());
        for (uint64_t v = 0; v < g_.vertices; v++)
            rank[v] = 1.0 / static_cast<double>(g_.vertices);
    }
    void work(const Ctx& c) const override
    {
        const uint64_t nv = g_.vertices;
        const auto* offsets = at<uint64_t>(c.base, off_off());
        const auto* src = at<uint32_t>(c.base, src_off());
        const auto* deg = at<uint32_t>(c.base, deg_off());
        auto* rank = at<double>(c.base, rank_off());
        auto* contrib = at<double>(c.base, contrib_off());
        const Range mine = split(nv, c.worker(), c.workers());
        for (unsigned it = 0; it < iters_; it++) {
            for (uint64_t v = mine.begin; v < mine.end; v++)
                contrib[v] = pagerank_contrib(rank[v], deg[v]);
            c.sync();
            for (uint64_t v = mine.begin; v < mine.end; v++)
                rank[v] = pagerank_vertex(src + offsets[v], offsets[v + 1] - offsets[v], contrib, nv);
            c.sync();
        }
    }
    [[nodiscard]] uint64_t result(const std::byte* base) const override
    {
        return digest({base + rank_off(), g_.vertices * sizeof(double)});
    }
    [[nodiscard]] std::string describe() const override
    {
        return "PageRank, R-MAT graph of " + std::to_string(g_.vertices) + " vertices and " +
               std::to_string(g_.sources.size()) + " edges, " + std::to_string(iters_) + " iterations";
    }

private:
    [[nodiscard]] uint64_t vec_bytes() const { return page_round(g_.vertices * sizeof(double)); }
    static uint64_t off_off() { return 0; }
    [[nodiscard]] uint64_t src_off() const { return page_round((g_.vertices + 1) * sizeof(uint64_t)); }
    [[nodiscard]] uint64_t deg_off() const { return src_off() + page_round(g_.sources.size() * sizeof(uint32_t)); }
    [[nodiscard]] uint64_t rank_off() const { return deg_off() + page_round(g_.vertices * sizeof(uint32_t)); }
    [[nodiscard]] uint64_t contrib_off() const { return rank_off() + vec_bytes(); }
    unsigned iters_;
    Graph g_;
};

// Thrown in the threads of a node once one of them failed.
struct Aborted : std::runtime_error {
    Aborted() : std::runtime_error("another thread failed") {}
};

} // namespace

const std::vector<std::string>& app_names()
{
    static const std::vector<std::string> names{"stencil", "matmul", "pagerank"};
    return names;
}

std::unique_ptr<App> make_app(std::string_view name, unsigned scale)
{
    if (scale == 0)
        throw std::invalid_argument("scale must be at least 1");
    if (name == "stencil")
        return std::make_unique<Stencil>(scale);
    if (name == "matmul")
        return std::make_unique<Matmul>(scale);
    if (name == "pagerank")
        return std::make_unique<PageRank>(scale);
    throw std::invalid_argument("unknown program '" + std::string(name) + "' (stencil, matmul, pagerank)");
}

void run_node(const App& app, std::byte* base, unsigned node, unsigned nodes, unsigned threads, const NodeSync& sync)
{
    std::atomic<bool> failed{false};
    std::mutex err_lock;
    std::exception_ptr err;
    auto fail = [&](std::exception_ptr e) {
        const std::lock_guard g(err_lock);
        if (!err)
            err = std::move(e);
        failed = true;
    };
    // The last local thread to arrive meets the other nodes.
    auto meet = [&]() noexcept {
        if (failed)
            return;
        try {
            sync.barrier();
        } catch (...) {
            fail(std::current_exception());
        }
    };
    std::barrier bar(static_cast<std::ptrdiff_t>(threads), meet);
    std::mutex node_lock;

    Ctx proto;
    proto.base = base;
    proto.node = node;
    proto.nodes = nodes;
    proto.threads = threads;
    proto.sync_ = [&] {
        bar.arrive_and_wait();
        if (failed)
            throw Aborted();
    };
    proto.locked_ = [&](const std::function<void()>& f) {
        const std::lock_guard g(node_lock);
        sync.locked(f);
    };

    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; t++) {
        pool.emplace_back([&, t] {
            Ctx c = proto;
            c.thread = t;
            try {
                app.work(c);
            } catch (const Aborted&) {
                bar.arrive_and_drop();
            } catch (...) {
                fail(std::current_exception());
                bar.arrive_and_drop();
            }
        });
    }
    pool.clear();
    if (err)
        std::rethrow_exception(err);
}

uint64_t reference(const App& app)
{
    const uint64_t bytes = app.region_bytes();
    std::unique_ptr<std::byte, decltype(&std::free)> mem(static_cast<std::byte*>(std::aligned_alloc(kPage, bytes)),
                                                         &std::free);
    if (!mem)
        throw std::bad_alloc();
    app.init(mem.get());
    NodeSync none{[] {}, [](const std::function<void()>& f) { f(); }};
    run_node(app, mem.get(), 0, 1, 1, none);
    return app.result(mem.get());
}

} // namespace dsm_apps
