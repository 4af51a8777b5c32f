// SPDX-License-Identifier: MIT
//
// The client of file_server: fetch a file range into an LMR of its own
// (on this node or on --lmr-node), published for the server under a name
// of this process, then check the bytes that arrived against the
// checksum the server computed, and optionally write them to a file.
//   file_client --node N [--instance N] [--port P] [--lmr-node M]
//               [--offset O] [--len L] [--out FILE] PATH
#include "file_wire.hpp"
#include "util.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <lite/session.hpp>
#include <string>
#include <vector>

namespace
{

constexpr const char* kUsage = R"(usage: file_client --node N [--instance N] [--port P] [--lmr-node M]
                   [--offset O] [--len L] [--out FILE] PATH
  Ask file_server on node N (RPC port P, default 4100) for L bytes (default
  1M; K, M, G suffixes) of PATH from offset O into a fresh LMR on node M
  (default: this node), then read them back and compare their checksum with
  the server's. --out writes them to FILE. Exit 0 if they match.
)";

int run(int argc, char** argv)
{
    example::Args args(argc, argv, 1);
    if (args.flag("--help") || args.flag("-h")) {
        std::printf("%s", kUsage);
        return 0;
    }
    auto node_text = args.take("--node");
    auto instance = args.take("--instance");
    auto port_text = args.take("--port");
    auto lmr_node_text = args.take("--lmr-node");
    auto offset_text = args.take("--offset");
    auto len_text = args.take("--len");
    auto out = args.take("--out");
    auto rest = args.rest();
    if (!node_text)
        throw example::UsageError{"--node is required"};
    if (rest.size() != 1)
        throw example::UsageError{"one PATH is needed"};
    const uint32_t node = example::to_u32(*node_text, "--node", 1, LITE_MAX_NODES);
    const unsigned inst = instance ? example::to_u32(*instance, "--instance", 0, UINT32_MAX) : 0;
    const uint32_t port = port_text ? example::to_u32(*port_text, "--port", 1, UINT32_MAX) : filesrv::kDefaultPort;
    const uint32_t lmr_node = lmr_node_text ? example::to_u32(*lmr_node_text, "--lmr-node", 0, LITE_MAX_NODES) : 0;
    const uint64_t offset = offset_text ? example::to_u64(*offset_text, "--offset", 0, INT64_MAX) : 0;
    const uint64_t len = len_text ? example::to_u64(*len_text, "--len", 1, uint64_t{1} << 32) : uint64_t{1} << 20;
    if (rest[0].size() > filesrv::kMaxPath)
        throw example::UsageError{"PATH is longer than " + std::to_string(filesrv::kMaxPath) + " bytes"};

    auto lite = lite::Session::open(inst);
    auto lmr = lite.alloc(len, lmr_node);
    const std::string name = "file_client." + std::to_string(lite.node_id()) + "." + std::to_string(getpid());
    lmr.share(name, LITE_PERM_WRITE);

    filesrv::Request req;
    req.file_offset = offset;
    req.len = len;
    req.flags = filesrv::kWantSum;
    req.lmr_name = name;
    req.path = rest[0];
    std::vector<std::byte> reply_buf(filesrv::kReply);
    const auto t0 = std::chrono::steady_clock::now();
    const size_t n = lite.call(node, port, filesrv::encode(req), reply_buf, std::chrono::seconds(60));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    lite.revoke(name); // the server is done with it
    auto reply = filesrv::decode_reply(std::span<const std::byte>(reply_buf.data(), n));
    if (!reply)
        throw std::runtime_error("the server's reply is malformed (" + std::to_string(n) + " bytes)");
    if (reply->status != 0) {
        throw std::system_error(static_cast<int>(reply->status), std::generic_category(),
                                "the server could not send " + rest[0]);
    }

    std::vector<uint8_t> got(reply->sent);
    lmr.read(0, std::span<uint8_t>(got));
    const uint64_t sum = filesrv::fnv1a(got.data(), got.size());
    std::printf("file_client: %llu bytes of %s into an LMR on node %u in %.1f ms (%.1f MB/s); checksum %016llx %s\n",
                static_cast<unsigned long long>(reply->sent), rest[0].c_str(), lmr_node ? lmr_node : lite.node_id(), ms,
                ms > 0 ? static_cast<double>(reply->sent) / ms / 1e3 : 0.0, static_cast<unsigned long long>(sum),
                sum == reply->sum ? "matches the server's" : "DIFFERS from the server's");
    if (out) {
        const int fd = open(out->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, got.data(), got.size()) != static_cast<ssize_t>(got.size()) || close(fd) != 0)
            throw std::system_error(errno, std::generic_category(), "write " + *out);
    }
    return sum == reply->sum ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const example::UsageError& e) {
        (void)std::fprintf(stderr, "file_client: %s\n%s", e.msg.c_str(), kUsage);
        return 2;
    } catch (const lite::Error& e) {
        (void)std::fprintf(stderr, "file_client: %s\n", e.what());
        if (e.errnum() == ETIMEDOUT)
            (void)std::fprintf(stderr, "file_client: is file_server running on that node and port?\n");
        return 1;
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "file_client: %s\n", e.what());
        return 1;
    }
}
