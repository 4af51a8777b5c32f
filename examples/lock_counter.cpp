// SPDX-License-Identifier: MIT
//
// A counter that is not atomic, made safe by a lite lock: every thread of
// every participating process (on any nodes) takes the lock kept in an LMR
// word, reads the counter with LITE_read, writes it back plus one with
// LITE_write and unlocks. A barrier then waits for all participants, and the
// creator checks that no increment was lost.
//   lock_counter [--instance N] --name NAME [--create] [--node ID] --iters N
//                --threads T [--participants P] [--timeout MS]
#include "lite_cli.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <lite/session.hpp>
#include <string>
#include <thread>
#include <vector>

namespace
{

// The LMR: three 8-byte words.
constexpr uint64_t kLockOffset = 0;
constexpr uint64_t kCounterOffset = 8;
constexpr uint64_t kBarrierOffset = 16;
constexpr uint64_t kSize = 64;

using Clock = std::chrono::steady_clock;

// Map @name, waiting until @deadline for the creator to share it.
lite::Lmr map_when_shared(const lite::Session& lite, const std::string& name, Clock::time_point deadline)
{
    for (;;) {
        try {
            auto lmr = lite.map(name, LITE_PERM_ALL);
            if (lmr.size() < kSize) {
                throw lite::Error(EINVAL, "'" + name + "' is an LMR of " + std::to_string(lmr.size()) +
                                              " bytes, not a lock_counter's");
            }
            return lmr;
        } catch (const lite::Error& e) {
            if (e.errnum() != ENOENT)
                throw;
            if (Clock::now() >= deadline) {
                throw lite::Error(ENOENT, "nothing is shared as '" + name +
                                              "' (start one process with --create, or raise --timeout)");
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

struct Options {
    unsigned instance = 0;
    std::string name;
    bool create = false;
    uint32_t node = 0;
    uint64_t iters = 0;
    unsigned threads = 0;
    uint32_t participants = 1;
    std::chrono::milliseconds timeout{60000};
};

// One thread: @iters locked increments through a session of its own (the
// lock belongs to an open file, so threads sharing one would share it).
void worker(const Options& o, Clock::time_point deadline, std::atomic<unsigned>& failures)
{
    try {
        auto lite = lite::Session::open(o.instance);
        auto lmr = map_when_shared(lite, o.name, deadline);
        for (uint64_t i = 0; i < o.iters; i++) {
            auto guard = lmr.lock(kLockOffset, o.timeout);
            uint64_t value = 0;
            lmr.read(kCounterOffset, std::span<uint64_t>(&value, 1));
            value++;
            lmr.write(kCounterOffset, std::span<const uint64_t>(&value, 1));
            guard.unlock();
        }
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "lock_counter: thread: %s\n", e.what());
        failures.fetch_add(1);
    }
}

int run(const Options& o)
{
    if (o.name.empty() || o.name.size() >= LITE_NAME_MAX)
        throw lite_cli::UsageError("NAME must be 1 to " + std::to_string(LITE_NAME_MAX - 1) + " bytes");
    const auto deadline = Clock::now() + o.timeout;

    auto lite = lite::Session::open(o.instance);
    auto lmr = o.create ? lite.alloc(kSize, o.node) : map_when_shared(lite, o.name, deadline);
    if (o.create) {
        lmr.share(o.name, LITE_PERM_ALL);
        std::printf("lock_counter: node %u created '%s' (memory on node %u) for %u participants x %u threads x "
                    "%llu iterations\n",
                    lite.node_id(), o.name.c_str(), o.node != 0 ? o.node : lite.node_id(), o.participants, o.threads,
                    static_cast<unsigned long long>(o.iters));
    }
    (void)std::fflush(stdout);

    std::atomic<unsigned> failures{0};
    auto t0 = Clock::now();
    {
        std::vector<std::jthread> pool;
        pool.reserve(o.threads);
        for (unsigned t = 0; t < o.threads; t++)
            pool.emplace_back([&o, deadline, &failures] { worker(o, deadline, failures); });
    } // joined here
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("lock_counter: node %u: %u threads x %llu locked increments in %.3f s (%.0f per second)%s\n",
                lite.node_id(), o.threads, static_cast<unsigned long long>(o.iters), secs,
                secs > 0 ? static_cast<double>(o.iters) * o.threads / secs : 0.0,
                failures.load() != 0 ? ", SOME THREADS FAILED" : "");
    (void)std::fflush(stdout);

    // Even after a failure: the others must not wait for us in vain.
    lmr.barrier(kBarrierOffset, o.participants, o.timeout);
    if (!o.create)
        return failures.load() == 0 ? 0 : 1;

    uint64_t total = 0;
    lmr.read(kCounterOffset, std::span<uint64_t>(&total, 1));
    const uint64_t want = static_cast<uint64_t>(o.participants) * o.threads * o.iters;
    const bool exact = total == want;
    std::printf("lock_counter: final counter %llu, expected %llu: %s\n", static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(want), exact ? "exact" : "WRONG");
    return exact && failures.load() == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("lock_counter", [&] {
        lite_cli::App app("lock_counter", "A counter made safe by a lite lock.");
        app.footer(
            "Exactly one process runs with --create: it allocates the LMR (on node ID, default this node) and "
            "shares it as NAME; the P-1 others (on any nodes) map NAME, waiting for it to appear. Every process "
            "runs T threads, each with a session of its own, that N times lock, read the counter, write it back "
            "plus one and unlock. Then every process waits at a barrier for all P participants, and the creator "
            "prints the final counter and whether it equals P x T x N (so all must use the same T and N); it exits "
            "1 if not. MS bounds each lock wait, the barrier and the wait for NAME.");
        Options o;
        uint32_t timeout_ms = 60000;
        lite_cli::add_instance(app, o.instance, "the local node instance (default 0)");
        app.add_option("--name", o.name, "the LMR's share name")->type_name("NAME")->required();
        auto* create = app.add_flag("--create", o.create, "allocate the LMR and share it as NAME");
        lite_cli::add_node(app, o.node, true, "with --create: the LMR's node (default 0: this node)");
        lite_cli::add_number(app, "--iters", o.iters, 0, 1000000000, "locked increments per thread")->required();
        lite_cli::add_number(app, "--threads", o.threads, 1, 1024, "threads per process")->required();
        lite_cli::add_number(app, "--participants", o.participants, 1, 65535, "processes in all (default 1)");
        lite_cli::add_number(app, "--timeout", timeout_ms, 1, 600000, "ms (default 60000)");
        return app.run(argc, argv, [&]() -> int {
            if (app.given("--node") && create->count() == 0)
                throw lite_cli::UsageError("--node only goes with --create");
            o.timeout = std::chrono::milliseconds(timeout_ms);
            return run(o);
        });
    });
}
