// SPDX-License-Identifier: MIT
//
// A counter shared by processes on every node: one process allocates an
// 8-byte LMR and shares it by name; one process per node instance maps it
// and adds to it from several threads with LITE fetch-and-add; the total
// must come out exact.
//   shared_counter [--instances N] [--threads T] [--adds A]
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <lite/session.hpp>
#include <string>
#include <thread>
#include <vector>

#include "lite_cli.hpp"

namespace
{

constexpr const char* kName = "shared-counter";

// One process attached to node instance @instance.
int adder(unsigned instance, unsigned threads, uint64_t adds)
{
    try {
        std::vector<std::thread> pool;
        std::vector<int> failed(threads, 0);
        for (unsigned t = 0; t < threads; t++) {
            pool.emplace_back([&, t] {
                try {
                    // Each thread its own session: a separate open file.
                    auto lite = lite::Session::open(instance);
                    auto counter = lite.map(kName, LITE_PERM_ATOMIC | LITE_PERM_READ);
                    for (uint64_t i = 0; i < adds; i++)
                        counter.fetch_add(0, 1);
                } catch (const lite::Error& e) {
                    (void)std::fprintf(stderr, "instance %u thread %u: %s\n", instance, t, e.what());
                    failed[t] = 1;
                }
            });
        }
        for (auto& th : pool)
            th.join();
        for (int f : failed) {
            if (f) {
                return 1;
            }
        }
        return 0;
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "instance %u: %s\n", instance, e.what());
        return 1;
    }
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("shared_counter", [&] {
        lite_cli::App app("shared_counter", "A counter shared by processes on every node: one process per node "
                                            "instance adds to it from several threads with fetch-and-add; the total "
                                            "must come out exact.");
        unsigned instances = 3;
        unsigned threads = 4;
        uint64_t adds = 100;
        lite_cli::add_number(app, "--instances", instances, 1, 1024,
                             "node instances 0..N-1, a process each (default 3)");
        lite_cli::add_number(app, "--threads", threads, 1, 1024, "threads per process (default 4)");
        lite_cli::add_number(app, "--adds", adds, 0, 1000000000, "fetch-and-adds per thread (default 100)");
        return app.run(argc, argv, [&] {
            auto lite = lite::Session::open(0);
            auto counter = lite.alloc(8, 0); // on node instance 0's node
            counter.share(kName, LITE_PERM_READ | LITE_PERM_ATOMIC);
            std::printf("counter on node %u shared as '%s'; %u nodes x %u threads x %llu adds\n", lite.node_id(), kName,
                        instances, threads, static_cast<unsigned long long>(adds));

            std::vector<pid_t> kids;
            for (unsigned inst = 0; inst < instances; inst++) {
                pid_t pid = fork();
                if (pid == 0)
                    _exit(adder(inst, threads, adds));
                kids.push_back(pid);
            }
            int bad = 0;
            for (pid_t pid : kids) {
                int st = 0;
                waitpid(pid, &st, 0);
                bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
            }
            uint64_t total = 0;
            counter.read(0, std::span<uint64_t>(&total, 1));
            uint64_t want = static_cast<uint64_t>(instances) * threads * adds;
            std::printf("total %llu, expected %llu: %s\n", static_cast<unsigned long long>(total),
                        static_cast<unsigned long long>(want), total == want && !bad ? "exact" : "WRONG");
            return total == want && !bad ? 0 : 1;
        });
    });
}
