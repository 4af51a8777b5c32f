// SPDX-License-Identifier: MIT
//
// Three programs written as ordinary multi-threaded C++ over one shared
// mapping, the way a DSM is meant to be used: a Jacobi stencil, a blocked
// matrix multiply and PageRank on an R-MAT graph. Each runs unchanged on
// the kernel DSM (lite::Dsm), on the user-level DSM (udsm::Region) and on
// plain local memory (the single-node reference its result is checked
// against). Locks and barriers come from lite: an LMR-word lock and
// barrier across nodes, combined with a std::mutex and std::barrier among
// one node's threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dsm_apps
{

// What one worker thread sees.
class Ctx
{
public:
    std::byte* base = nullptr; // the shared region, mapped at this node
    unsigned node = 0;         // this node's index among the participants
    unsigned nodes = 1;
    unsigned thread = 0; // this thread's index on its node
    unsigned threads = 1;

    [[nodiscard]] unsigned worker() const { return node * threads + thread; }
    [[nodiscard]] unsigned workers() const { return nodes * threads; }
    // Every thread of every node has arrived.
    void sync() const { sync_(); }
    // Run @f holding the program's one lock (across all nodes and threads).
    void locked(const std::function<void()>& f) const { locked_(f); }

    std::function<void()> sync_;
    std::function<void(const std::function<void()>&)> locked_;
};

// One program with its parameters.
class App
{
public:
    virtual ~App() = default;
    App() = default;
    App(const App&) = delete;
    App& operator=(const App&) = delete;
    App(App&&) = delete;
    App& operator=(App&&) = delete;

    // Bytes of shared memory it needs (whole pages).
    [[nodiscard]] virtual uint64_t region_bytes() const = 0;
    // Write the input into the region (one thread of node 0, before work).
    virtual void init(std::byte* base) const = 0;
    // The computation, run by every thread of every node.
    virtual void work(const Ctx& c) const = 0;
    // The digest of the output, read from the region after work.
    [[nodiscard]] virtual uint64_t result(const std::byte* base) const = 0;
    // A line that says what was computed, e.g. "512x512 grid, 50 sweeps".
    [[nodiscard]] virtual std::string describe() const = 0;
};

// "stencil", "matmul" or "pagerank" at a scale: 1 is the default size
// (small enough for a TCG guest), each step up doubles the work.
[[nodiscard]] std::unique_ptr<App> make_app(std::string_view name, unsigned scale = 1);
[[nodiscard]] const std::vector<std::string>& app_names();

// How one node's threads meet the other nodes: a barrier and a lock
// across nodes (lite's LMR-word barrier and lock), each called by one
// thread of the node at a time.
struct NodeSync {
    std::function<void()> barrier;
    std::function<void(const std::function<void()>&)> locked;
};

// Run @app's work on this node: @threads threads over the region mapped at
// @base, meeting other nodes through @sync. Rethrows the first error of
// any thread (the others are released: their waits fail too).
void run_node(const App& app, std::byte* base, unsigned node, unsigned nodes, unsigned threads, const NodeSync& sync);

// The single-node reference: @app on local memory, one thread.
[[nodiscard]] uint64_t reference(const App& app);

} // namespace dsm_apps
