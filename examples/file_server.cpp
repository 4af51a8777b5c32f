// SPDX-License-Identifier: MIT
//
// A file server that serves files into its clients' memory without
// copying them (LITE_sendfile): a client publishes an LMR under a name and
// calls this server with the name, a path and a range (file_wire.hpp); the
// server maps the name and sends the file's pages from its page cache
// straight into the LMR, wherever it lives, then replies with the count
// (and, if asked, a checksum of what it sent).
//   file_server --root DIR [--instance N] [--port P] [--threads T]
// Paths resolve beneath DIR only (openat2 RESOLVE_BENEATH: no "..", no
// absolute paths, no symlinks out). Clients: file_client --node <this node>.
#include "file_wire.hpp"
#include "lite_cli.hpp"
#include "util.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <lite/rpc.hpp>
#include <string>
#include <vector>

namespace
{

// An open file, closed with the object.
class Fd
{
public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&&) = delete;
    Fd& operator=(Fd&&) = delete;
    ~Fd()
    {
        if (fd_ >= 0)
            close(fd_);
    }
    [[nodiscard]] int get() const { return fd_; }

private:
    int fd_;
};

class Files
{
public:
    Files(const lite::Session& lite, const std::string& root)
        : lite_(lite), root_(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC))
    {
        if (root_.get() < 0)
            throw std::system_error(errno, std::generic_category(), "open " + root);
    }

    size_t handle(const lite::Incoming& in, std::span<const std::byte> msg, std::vector<std::byte>& reply)
    {
        if (!in.is_call())
            return 0;
        filesrv::Reply r;
        if (auto req = filesrv::decode(msg)) {
            r = serve(*req);
        } else {
            r.status = EINVAL;
        }
        (r.status == 0 ? served_ : failed_).fetch_add(1);
        bytes_.fetch_add(r.sent);
        reply = filesrv::encode(r);
        return reply.size();
    }

    void print_summary() const
    {
        std::printf("file_server: %llu ranges served (%llu bytes), %llu refused\n",
                    static_cast<unsigned long long>(served_.load()), static_cast<unsigned long long>(bytes_.load()),
                    static_cast<unsigned long long>(failed_.load()));
    }

private:
    filesrv::Reply serve(const filesrv::Request& req)
    {
        filesrv::Reply r;
        open_how how{};
        how.flags = O_RDONLY | O_CLOEXEC;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        Fd fd(static_cast<int>(syscall(SYS_openat2, root_.get(), req.path.c_str(), &how, sizeof(how))));
        if (fd.get() < 0) {
            r.status = static_cast<uint32_t>(errno);
            return r;
        }
        try {
            // The client's LMR, by the name it published; write access only.
            const lite::Lmr dst = lite_.map(req.lmr_name, LITE_PERM_WRITE);
            r.sent = dst.send_file(req.lmr_offset, fd.get(), req.file_offset, req.len);
        } catch (const lite::Error& e) {
            r.status = static_cast<uint32_t>(e.errnum());
            return r;
        }
        if ((req.flags & filesrv::kWantSum) != 0)
            r.status = checksum(fd.get(), req.file_offset, r.sent, r.sum);
        return r;
    }

    // FNV-1a of @len bytes of @fd from @off (read again: for the client's
    // check only; the send itself copied nothing).
    static uint32_t checksum(int fd, uint64_t off, uint64_t len, uint64_t& sum)
    {
        std::vector<uint8_t> buf(1 << 20);
        sum = 0xcbf29ce484222325ULL;
        for (uint64_t done = 0; done < len;) {
            const size_t n = std::min<uint64_t>(buf.size(), len - done);
            const ssize_t got = pread(fd, buf.data(), n, static_cast<off_t>(off + done));
            if (got <= 0)
                return got < 0 ? static_cast<uint32_t>(errno) : EIO; // truncated since
            sum = filesrv::fnv1a(buf.data(), static_cast<size_t>(got), sum);
            done += static_cast<uint64_t>(got);
        }
        return 0;
    }

    const lite::Session& lite_;
    Fd root_;
    std::atomic<uint64_t> served_{0};
    std::atomic<uint64_t> failed_{0};
    std::atomic<uint64_t> bytes_{0};
};

int run(const std::string& root, unsigned inst, uint32_t port, unsigned threads)
{
    const sigset_t stop_signals = example::block_stop_signals(); // before any thread starts
    auto lite = lite::Session::open(inst);
    Files files(lite, root);
    lite::Server server(
        lite, port,
        [&files](const lite::Incoming& in, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            return files.handle(in, req, reply);
        },
        threads);
    std::printf("file_server: node %u serving %s on port %u with %u threads (SIGINT or SIGTERM stops)\n",
                lite.node_id(), root.c_str(), port, threads);
    (void)std::fflush(stdout);

    const int sig = example::wait_for_stop(stop_signals, [&server] { return server.running(); });
    server.stop();
    if (sig != 0)
        std::printf("file_server: stopping on signal %d\n", sig);
    files.print_summary();
    if (auto err = server.error())
        std::rethrow_exception(err);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("file_server", [&] {
        lite_cli::App app("file_server", "Serve the files beneath DIR into clients' LMRs until SIGINT or SIGTERM.");
        std::string root;
        unsigned inst = 0;
        uint32_t port = filesrv::kDefaultPort;
        unsigned threads = 2;
        app.add_option("--root", root, "serve the files beneath DIR")->type_name("DIR")->required();
        lite_cli::add_instance(app, inst, "local node instance (default 0)");
        lite_cli::add_number(app, "--port", port, 1, UINT32_MAX, "RPC port (default 4100)");
        lite_cli::add_number(app, "--threads", threads, 1, 64, "server threads (default 2)");
        return app.run(argc, argv, [&] { return run(root, inst, port, threads); });
    });
}
