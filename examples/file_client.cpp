// SPDX-License-Identifier: MIT
//
// The client of file_server: fetch a file range into an LMR of its own
// (on this node or on --lmr-node), published for the server under a name
// of this process, then check the bytes that arrived against the
// checksum the server computed, and optionally write them to a file.
//   file_client --node N [--instance N] [--port P] [--lmr-node M]
//               [--offset O] [--len L] [--out FILE] PATH
#include "file_wire.hpp"
#include "lite_cli.hpp"

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

struct Options {
    uint32_t node = 0;
    unsigned inst = 0;
    uint32_t port = filesrv::kDefaultPort;
    uint32_t lmr_node = 0;
    uint64_t offset = 0;
    uint64_t len = uint64_t{1} << 20;
    std::string out;
    std::string path;
};

int run(const Options& o)
{
    if (o.path.size() > filesrv::kMaxPath)
        throw lite_cli::UsageError("PATH is longer than " + std::to_string(filesrv::kMaxPath) + " bytes");
    const auto& node = o.node;
    const auto& inst = o.inst;
    const auto& port = o.port;
    const auto& lmr_node = o.lmr_node;
    const auto& offset = o.offset;
    const auto& len = o.len;
    const auto& out = o.out;
    const auto& path = o.path;

    auto lite = lite::Session::open(inst);
    auto lmr = lite.alloc(len, lmr_node);
    const std::string name = "file_client." + std::to_string(lite.node_id()) + "." + std::to_string(getpid());
    lmr.share(name, LITE_PERM_WRITE);

    filesrv::Request req;
    req.file_offset = offset;
    req.len = len;
    req.flags = filesrv::kWantSum;
    req.lmr_name = name;
    req.path = path;
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
                                "the server could not send " + path);
    }

    std::vector<uint8_t> got(reply->sent);
    lmr.read(0, std::span<uint8_t>(got));
    const uint64_t sum = filesrv::fnv1a(got.data(), got.size());
    std::printf("file_client: %llu bytes of %s into an LMR on node %u in %.1f ms (%.1f MB/s); checksum %016llx %s\n",
                static_cast<unsigned long long>(reply->sent), path.c_str(), lmr_node ? lmr_node : lite.node_id(), ms,
                ms > 0 ? static_cast<double>(reply->sent) / ms / 1e3 : 0.0, static_cast<unsigned long long>(sum),
                sum == reply->sum ? "matches the server's" : "DIFFERS from the server's");
    if (!out.empty()) {
        const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, got.data(), got.size()) != static_cast<ssize_t>(got.size()) || close(fd) != 0)
            throw std::system_error(errno, std::generic_category(), "write " + out);
    }
    return sum == reply->sum ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("file_client", [&] {
        lite_cli::App app(
            "file_client",
            "Ask file_server on node N for L bytes of PATH from offset O into a fresh LMR on node M (default: "
            "this node), then read them back and compare their checksum with the server's. Exit 0 if they "
            "match.");
        Options o;
        lite_cli::add_node(app, o.node, false, "the file server's node")->required();
        lite_cli::add_instance(app, o.inst, "local node instance (default 0)");
        lite_cli::add_number(app, "--port", o.port, 1, UINT32_MAX, "the server's RPC port (default 4100)");
        lite_cli::add_node(app, o.lmr_node, true, "node of the LMR the bytes go to (default 0: this node)",
                           "--lmr-node");
        lite_cli::add_number(app, "--offset", o.offset, 0, INT64_MAX, "where in the file to start (default 0)");
        lite_cli::add_number(app, "--len", o.len, 1, uint64_t{1} << 32,
                             "bytes to fetch (default 1M; K, M, G suffixes)");
        app.add_option("--out", o.out, "also write the bytes to FILE")->type_name("FILE");
        app.add_option("PATH", o.path, "the file, beneath the server's root")->required();
        return app.run(argc, argv, [&o] {
            try {
                return run(o);
            } catch (const lite::Error& e) {
                if (e.errnum() == ETIMEDOUT) {
                    (void)std::fprintf(stderr,
                                       "file_client: %s\nfile_client: is file_server running on that node and "
                                       "port?\n",
                                       e.what());
                    return 1;
                }
                throw;
            }
        });
    });
}
