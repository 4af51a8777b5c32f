// SPDX-License-Identifier: MIT
//
// dsm-apps: the three DSM programs (dsm/apps: stencil, matmul, pagerank)
// timed on one backend, each result checked against the single-node
// reference computed in the same run.
//
//   kernel  the kernel DSM (lite::Dsm): one process per node, forked, each
//           attached to one of INSTANCES (three local nodes up) with
//           THREADS threads; the first creates the region and writes the
//           input (not timed)
//   user    the same over the user-level DSM (udsm::Region)
//   local   THREADS threads over plain memory in one process (context: a
//           single node's shared memory)
//
// Locks and barriers across nodes are lite's (an LMR-word lock and
// barrier). The time is the computation only: from a barrier of all nodes
// after the input was written to the end of the last phase. CSV on stdout:
//
//   app,backend,nodes,threads,run,seconds,digest,reference,match
//
// exit 0 ok, 1 error or a result that differs from the reference, 2 usage.
#include "dsm_apps_opts.hpp"
#include "lat.hpp"

#include <lite/dsm.hpp>
#include <lite/session.hpp>
#include <sys/wait.h>
#include <udsm.hpp>
#include <unistd.h>

#include <apps.hpp>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <kernels.hpp>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace
{

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kWait{60'000}; // a barrier or a lock (lite's longest)

struct Options : bench::AppOptions {
    std::string backend;
    std::vector<unsigned> instances{0, 1, 2};
    unsigned threads = 4;
};

// The command line into @o, with its checks.
void add_options(lite_cli::App& app, Options& o)
{
    bench::add_app_options(app, o);
    lite_cli::add_choice(app, "--backend", o.backend, {{"kernel", "kernel"}, {"user", "user"}, {"local", "local"}},
                         "the kernel DSM, the user-level DSM (udsm) or local memory")
        ->required();
    lite_cli::add_list(app, "--instances", o.instances, 0, 1U << 30,
                       "local node instances, one process each (kernel, user; default 0,1,2)");
    lite_cli::add_number(app, "--threads", o.threads, 1, 64, "threads per node (default 4)");
}

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What node 0's process reports to the parent.
struct Report {
    double seconds = 0;
    uint64_t digest = 0;
};

// The region of a backend, mapped in this process.
template <class Region> struct Backend;
template <> struct Backend<lite::Dsm> {
    static lite::Dsm create(const lite::Session& s, const std::string& n, uint64_t size)
    {
        return lite::Dsm::create(s, n, size);
    }
    static lite::Dsm open(const lite::Session& s, const std::string& n) { return lite::Dsm::open(s, n); }
    static void finish(lite::Dsm& r) { r.destroy(); }
};
template <> struct Backend<udsm::Region> {
    static udsm::Region create(const lite::Session& s, const std::string& n, uint64_t size)
    {
        return udsm::Region::create(s, n, size);
    }
    static udsm::Region open(const lite::Session& s, const std::string& n) { return udsm::Region::open(s, n); }
    static void finish(udsm::Region& /*r*/) {}
};

// A pipe end, closed with its owner.
class Fd
{
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept
    {
        reset();
        fd_ = std::exchange(o.fd_, -1);
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    [[nodiscard]] int get() const { return fd_; }
    void reset()
    {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }
    // One byte (a signal between the processes); false on EOF or error.
    [[nodiscard]] bool put() const { return ::write(fd_, "g", 1) == 1; }
    [[nodiscard]] bool take() const
    {
        char c = 0;
        return ::read(fd_, &c, 1) == 1;
    }

private:
    int fd_ = -1;
};

struct Pipe {
    Fd r;
    Fd w;
};

Pipe make_pipe()
{
    std::array<int, 2> fds{};
    if (::pipe(fds.data()) < 0)
        throw std::system_error(errno, std::generic_category(), "pipe");
    return {Fd(fds[0]), Fd(fds[1])};
}

// How one node's process talks to the parent.
struct Line {
    Fd go;     // read: the parent says start (node 0: finish)
    Fd ready;  // node 0 writes: the region is set up
    Fd report; // node 0 writes its Report
};

// One node's process. Node 0 creates the region, writes the input and
// shares the LMR of the lock and barrier, then waits for the parent's word
// to take it down after every other node left (udsm's home leaves last);
// the others attach once the parent says so. All meet at a barrier, then
// compute; node 0 digests the result before everyone leaves.
template <class Region>
void node_main(const dsm_apps::App& app, const Options& o, unsigned node, const std::string& name, const Line& line)
{
    auto s = lite::Session::open(o.instances[node]);
    std::optional<Region> region;
    std::optional<lite::Lmr> shared;
    if (node == 0) {
        region.emplace(Backend<Region>::create(s, name, app.region_bytes()));
        app.init(region->data());
        shared.emplace(s.alloc(64));
        shared->share(name + "-sync", LITE_PERM_ALL);
        if (!line.ready.put())
            throw std::runtime_error("the parent is gone");
    } else {
        if (!line.go.take())
            throw std::runtime_error("node 0 did not set the region up");
        region.emplace(Backend<Region>::open(s, name));
    }
    auto sync = s.map(name + "-sync");
    const auto nodes = static_cast<uint32_t>(o.instances.size());
    dsm_apps::NodeSync ns{[&] { sync.barrier(0, nodes, kWait); },
                          [&](const std::function<void()>& f) {
                              auto held = sync.lock(8, kWait);
                              f();
                          }};
    ns.barrier();
    const auto t0 = Clock::now();
    dsm_apps::run_node(app, region->data(), node, nodes, o.threads, ns);
    Report r{seconds_since(t0), 0};
    if (node == 0)
        r.digest = app.result(region->data());
    ns.barrier(); // nobody leaves while node 0 reads
    if (node != 0)
        return;
    if (::write(line.report.get(), &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r)))
        throw std::system_error(errno, std::generic_category(), "report to the parent");
    (void)line.go.take(); // the others are gone (or the parent is)
    Backend<Region>::finish(*region);
}

pid_t wait_child(pid_t p, std::string& err)
{
    int st = 0;
    while (::waitpid(p, &st, 0) < 0) {
        if (errno != EINTR)
            return p;
    }
    if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && err.empty())
        err = "a node's process failed (status " + std::to_string(st) + ")";
    return p;
}

// Fork one process per node and see them through.
template <class Region> Report run_nodes(const dsm_apps::App& app, const Options& o, const std::string& name)
{
    const size_t n = o.instances.size();
    Pipe ready = make_pipe();
    Pipe report = make_pipe();
    std::vector<Pipe> go;
    for (size_t i = 0; i < n; i++)
        go.push_back(make_pipe());
    std::vector<pid_t> pids;
    for (size_t i = 0; i < n; i++) {
        const pid_t pid = ::fork();
        if (pid < 0) {
            std::string ignored;
            for (auto& g : go)
                g.w.reset(); // the children see EOF and end
            for (pid_t p : pids)
                wait_child(p, ignored);
            throw std::system_error(errno, std::generic_category(), "fork");
        }
        if (pid == 0) {
            int rc = 0;
            try {
                // Only node 0 keeps the ends it writes: the parent sees
                // EOF if it dies before it writes.
                Line line{std::move(go[i].r), i == 0 ? std::move(ready.w) : Fd(), i == 0 ? std::move(report.w) : Fd()};
                ready.w.reset();
                report.w.reset();
                for (auto& g : go)
                    g.w.reset();
                node_main<Region>(app, o, static_cast<unsigned>(i), name, line);
            } catch (const std::exception& e) {
                (void)std::fprintf(stderr, "dsm-apps: node %zu: %s\n", i, e.what());
                rc = 1;
            }
            (void)std::fflush(nullptr);
            ::_exit(rc);
        }
        pids.push_back(pid);
        go[i].r.reset();
    }
    ready.w.reset();
    report.w.reset();

    std::string err;
    Report r;
    if (ready.r.take()) {
        for (size_t i = 1; i < n; i++)
            (void)go[i].w.put();
        if (::read(report.r.get(), &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r)))
            err = "node 0 reported no result";
    } else {
        err = "node 0 could not set the region up";
    }
    for (size_t i = 1; i < n; i++) {
        go[i].w.reset();
        wait_child(pids[i], err);
    }
    go[0].w.reset(); // node 0 takes the region down now
    wait_child(pids[0], err);
    if (!err.empty())
        throw std::runtime_error(err);
    return r;
}

Report run_local(const dsm_apps::App& app, const Options& o)
{
    const uint64_t bytes = app.region_bytes();
    std::unique_ptr<std::byte, decltype(&std::free)> mem(
        static_cast<std::byte*>(std::aligned_alloc(dsm_apps::kPage, bytes)), &std::free);
    if (!mem)
        throw std::bad_alloc();
    app.init(mem.get());
    dsm_apps::NodeSync none{[] {}, [](const std::function<void()>& f) { f(); }};
    const auto t0 = Clock::now();
    dsm_apps::run_node(app, mem.get(), 0, 1, o.threads, none);
    return {seconds_since(t0), app.result(mem.get())};
}

int run(const Options& o)
{
    if (o.instances.size() > 16)
        throw lite_cli::UsageError("--instances: 1 to 16 instances");
    bool all_match = true;
    std::printf("app,backend,nodes,threads,run,seconds,digest,reference,match\n");
    for (const auto& name : o.apps) {
        const auto app = dsm_apps::make_app(name, o.scale);
        (void)std::fprintf(stderr, "dsm-apps: %s: %s\n", name.c_str(), app->describe().c_str());
        const uint64_t ref = dsm_apps::reference(*app);
        for (unsigned k = 0; k < o.runs; k++) {
            const std::string region = "apps-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(k);
            Report r;
            size_t nodes = o.instances.size();
            if (o.backend == "kernel") {
                r = run_nodes<lite::Dsm>(*app, o, region);
            } else if (o.backend == "user") {
                r = run_nodes<udsm::Region>(*app, o, region);
            } else {
                r = run_local(*app, o);
                nodes = 1;
            }
            const bool match = r.digest == ref;
            all_match = all_match && match;
            std::printf("%s,%s,%zu,%u,%u,%.4f,%016" PRIx64 ",%016" PRIx64 ",%s\n", name.c_str(), o.backend.c_str(),
                        nodes, o.threads, k, r.seconds, r.digest, ref, match ? "yes" : "NO");
            (void)std::fflush(stdout);
        }
    }
    if (!all_match)
        (void)std::fprintf(stderr, "dsm-apps: a result differs from the single-node reference\n");
    return all_match ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("dsm-apps", [&] {
        lite_cli::App app("dsm-apps",
                          "The DSM programs (stencil, matmul, PageRank) on the kernel DSM, the user-level DSM "
                          "or local memory, checked against a single-node run; CSV on stdout.");
        Options o;
        add_options(app, o);
        return app.run(argc, argv, [&o] { return run(o); });
    });
}
