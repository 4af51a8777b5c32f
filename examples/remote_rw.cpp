// SPDX-License-Identifier: MIT
//
// Quick start: allocate memory on another node, write it, read it back.
//   remote_rw [--instance I] [--node N] [--size BYTES]
// Runs on a host with a lite node up (litectl up ...), as any user.
#include <cstdio>
#include <cstring>
#include <lite/session.hpp>
#include <string>
#include <vector>

#include "lite_cli.hpp"

int main(int argc, char** argv)
{
    return lite_cli::guard("remote_rw", [&] {
        lite_cli::App app("remote_rw", "Quick start: allocate memory on another node, write it, read it back.");
        unsigned instance = 0;
        uint32_t node = 2;
        uint64_t size = 1 << 20;
        lite_cli::add_instance(app, instance, "local node instance (default 0)");
        lite_cli::add_node(app, node, true, "node that holds the memory (default 2)");
        lite_cli::add_number(app, "--size", size, 1, LITE_LMR_MAX, "bytes, K/M/G suffixes (default 1M)");
        return app.run(argc, argv, [&] {
            auto lite = lite::Session::open(instance);
            auto lmr = lite.alloc(size, node); // memory on node `node`, zeroed
            std::printf("node %u: allocated %llu bytes on node %u\n", lite.node_id(),
                        static_cast<unsigned long long>(size), node);

            std::vector<std::byte> out(size), in(size);
            for (size_t i = 0; i < out.size(); i++)
                out[i] = static_cast<std::byte>(i * 131 + 7);
            lmr.write(0, std::span<const std::byte>(out)); // one-sided RDMA write
            lmr.read(0, std::span<std::byte>(in));         // one-sided RDMA read
            bool same = std::memcmp(out.data(), in.data(), size) == 0;
            std::printf("wrote and read back %llu bytes: %s\n", static_cast<unsigned long long>(size),
                        same ? "identical" : "MISMATCH");
            return same ? 0 : 1;
        });
    });
}
