// SPDX-License-Identifier: MIT
//
// Quick start: allocate memory on another node, write it, read it back.
//   remote_rw [--instance I] [--node N] [--size BYTES]
// Runs on a host with a lite node up (litectl up ...), as any user.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lite/session.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    unsigned instance = 0;
    uint32_t node = 2;
    uint64_t size = 1 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string opt = argv[i];
        unsigned long long v = std::strtoull(argv[i + 1], nullptr, 0);
        if (opt == "--instance") {
            instance = static_cast<unsigned>(v);
        } else if (opt == "--node") {
            node = static_cast<uint32_t>(v);
        } else if (opt == "--size") {
            size = v;
        }
    }
    try {
        auto lite = lite::Session::open(instance);
        auto lmr = lite.alloc(size, node); // memory on node `node`, zeroed
        std::printf("node %u: allocated %llu bytes on node %u\n", lite.node_id(), static_cast<unsigned long long>(size),
                    node);

        std::vector<std::byte> out(size), in(size);
        for (size_t i = 0; i < out.size(); i++)
            out[i] = static_cast<std::byte>(i * 131 + 7);
        lmr.write(0, std::span<const std::byte>(out)); // one-sided RDMA write
        lmr.read(0, std::span<std::byte>(in));         // one-sided RDMA read
        bool same = std::memcmp(out.data(), in.data(), size) == 0;
        std::printf("wrote and read back %llu bytes: %s\n", static_cast<unsigned long long>(size),
                    same ? "identical" : "MISMATCH");
        return same ? 0 : 1;
    } catch (const lite::Error& e) {
        (void)std::fprintf(stderr, "remote_rw: %s\n", e.what());
        return 1;
    }
}
