// SPDX-License-Identifier: MIT
//
// sendfile-bench: serving a file's bytes into remote memory (seed 002's
// table), four ways, one file of each size in --dir (made here, read once
// so its pages are in the page cache, as a server's hot files are):
//
//   native_reg    per request: mmap the file (shared, see Mapping),
//                 ibv_reg_mr, RDMA WRITE(s) to
//                 a peer's registered buffer, ibv_dereg_mr, munmap;
//   native_cache  the same with the registration kept across requests (a
//                 registration cache that always hits): RDMA WRITE(s) only;
//   copy          pread() into a user buffer, then LITE_write into an LMR
//                 on node NODE;
//   sendfile      LITE_sendfile of the file into the same LMR.
//
// The native side is one RC connection from the device to itself (as
// native-lat), measured busy-polled and waiting on a completion channel
// (--port and the next port): the better of the two counts. With --nfs DIR it also reads
// each file sequentially as DIR/NAME with O_DIRECT (so every read goes to
// the server: for an NFS mount over RDMA, the kernel's own file serving on
// the same device).
//
// Per size and way: the median time of one whole request, as MB/s, and the
// CPU time of this process per MiB (user + system: the kernel work of the
// system calls counts; completion work in softirq is charged to whoever
// it interrupts). The data of each way is checked once per size against
// the file (FNV-1a). Iterations: as many as make --bytes per size (64 MiB
// by default), 3 to 200, after one untimed request.
//
// Prints CSV on stdout:
//
//   size,native_reg_mbs,native_cache_mbs,copy_mbs,sendfile_mbs,nfs_mbs,
//   native_reg_cpu,native_cache_cpu,copy_cpu,sendfile_cpu,nfs_cpu,
//   native_reg_mode,native_cache_mode
//
// (cpu in us per MiB; nfs columns "-" without --nfs; the modes name the
// native poll mode that did better: busy or event). exit 0 ok, 1 error,
// 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"
#include "pair.hpp"

#include <fcntl.h>
#include <lite/lite.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace
{

using bench::lite_error;
using namespace bench::verbs;

constexpr const char* kProg = "sendfile-bench";
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;
constexpr uint64_t kWrMax = kMiB; // bytes per native RDMA WRITE
constexpr uint32_t kDepth = 16;   // native WRITEs in flight

struct Args {
    Target target{18650};
    std::string dir;
    std::string nfs;
    unsigned instance = 0;
    uint32_t node = 2;
    uint64_t per_size = 64 * kMiB;
    std::vector<uint64_t> sizes{4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB, kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB};
};

using Clock = std::chrono::steady_clock;

int64_t ns_since(Clock::time_point t0)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

int64_t cpu_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 0xcbf29ce484222325ULL)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

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

// A shared mapping of a file, unmapped with the object. Writable: 6.1's
// ib_umem_get() pins with FOLL_WRITE even for a registration without
// write access (FOLL_FORCE then breaks copy-on-write, which a shared
// read-only mapping refuses with EFAULT), so the native side opens the
// file read-write; nothing writes through it.
class Mapping
{
public:
    Mapping(int fd, uint64_t len) : len_(len)
    {
        p_ = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p_ == MAP_FAILED)
            throw verb_error("mmap of the file", errno);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    Mapping(Mapping&&) = delete;
    Mapping& operator=(Mapping&&) = delete;
    ~Mapping() { munmap(p_, len_); }
    [[nodiscard]] void* get() const { return p_; }

private:
    void* p_;
    uint64_t len_;
};

// The file DIR/sf-SIZE with a pattern of its size, made if missing, read
// once (page cache warm). Return: its checksum.
uint64_t make_file(const std::string& path, uint64_t size)
{
    Fd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fd.get() < 0)
        throw verb_error("open " + path, errno);
    std::vector<uint8_t> buf(std::min(size, 4 * kMiB));
    struct stat st {
    };
    if (fstat(fd.get(), &st) != 0)
        throw verb_error("fstat " + path, errno);
    const bool fresh = static_cast<uint64_t>(st.st_size) != size;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t off = 0; off < size; off += buf.size()) {
        const size_t n = std::min<uint64_t>(buf.size(), size - off);
        if (fresh) {
            bench::fill_pattern(buf.data(), n, static_cast<unsigned>(off / buf.size()));
            if (pwrite(fd.get(), buf.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n))
                throw verb_error("write " + path, errno);
        } else if (pread(fd.get(), buf.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) {
            throw verb_error("read " + path, errno);
        }
        h = fnv1a(buf.data(), n, h);
    }
    if (fresh && ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
        throw verb_error("ftruncate " + path, errno);
    return h;
}

struct Figure {
    double mbs = 0;
    double cpu_us_per_mib = 0;
    const char* mode = "-"; // native: the poll mode it was measured in
};

// The native figure: the better of the two poll modes.
Figure better(Figure busy, Figure event)
{
    busy.mode = "busy";
    event.mode = "event";
    return event.mbs > busy.mbs ? event : busy;
}

// @iters timed runs of @op (after one untimed): median MB/s, CPU per MiB.
template <typename Op> Figure measure(uint64_t size, unsigned iters, const Op& op)
{
    op();
    std::vector<int64_t> ns;
    const int64_t cpu0 = cpu_ns();
    for (unsigned i = 0; i < iters; i++) {
        const auto t0 = Clock::now();
        op();
        ns.push_back(ns_since(t0));
    }
    const int64_t cpu = cpu_ns() - cpu0;
    const double median_s = bench::summarize(std::move(ns)).median_us / 1e6;
    const double mib = static_cast<double>(size) * iters / static_cast<double>(kMiB);
    return {static_cast<double>(size) / median_s / 1e6, static_cast<double>(cpu) / 1e3 / mib};
}

// The native pair: the client writes from registered file pages into the
// server's registered buffer.
class Native
{
public:
    Native(sockaddr_in sin, uint64_t max, PollMode mode)
    {
        PairConfig cfg;
        cfg.send_depth = kDepth;
        remote_ = connect_pair(server_, client_, sin, max, mode, cfg);
    }

    // @len bytes at @src (lkey @lkey) to the server's buffer; waits.
    void write(const void* src, uint64_t len, uint32_t lkey)
    {
        uint64_t posted = 0;
        uint64_t done = 0;
        unsigned in_flight = 0;
        while (done < len) {
            while (posted < len && in_flight < kDepth) {
                const uint64_t n = std::min(kWrMax, len - posted);
                ibv_sge sge{reinterpret_cast<uintptr_t>(src) + posted, static_cast<uint32_t>(n), lkey};
                ibv_send_wr wr{};
                ibv_send_wr* bad = nullptr;
                wr.wr_id = n;
                wr.sg_list = &sge;
                wr.num_sge = 1;
                wr.opcode = IBV_WR_RDMA_WRITE;
                wr.send_flags = IBV_SEND_SIGNALED;
                wr.wr.rdma.remote_addr = remote_.addr + posted;
                wr.wr.rdma.rkey = remote_.rkey;
                if (int rc = ibv_post_send(client_.id->qp, &wr, &bad); rc != 0)
                    throw verb_error("ibv_post_send (RDMA WRITE)", rc);
                posted += n;
                in_flight++;
            }
            ibv_wc wc{};
            const bool got = client_.cq.wait_until(
                [&] {
                    int n = ibv_poll_cq(client_.cq.get(), 1, &wc);
                    if (n < 0)
                        throw verb_error("ibv_poll_cq", -n);
                    return n == 1;
                },
                std::chrono::seconds(10));
            if (!got)
                throw std::runtime_error("native RDMA WRITE: no completion in 10 s");
            if (wc.status != IBV_WC_SUCCESS)
                throw std::runtime_error(std::string("native RDMA WRITE: ") + ibv_wc_status_str(wc.status));
            done += wc.wr_id;
            in_flight--;
        }
    }

    // Per request: map, register, write, deregister, unmap.
    void write_registering(int fd, uint64_t len)
    {
        Mapping m(fd, len);
        Mr mr(ibv_reg_mr(client_.pd.get(), m.get(), len, 0));
        if (!mr)
            throw verb_error("ibv_reg_mr of the file mapping", errno);
        write(m.get(), len, mr->lkey);
    }

    [[nodiscard]] ibv_pd* pd() const { return client_.pd.get(); }
    [[nodiscard]] uint64_t sum(uint64_t len) { return fnv1a(server_.bytes(), len); }
    void clear(uint64_t len) { std::memset(server_.bytes(), 0, len); }

private:
    Side server_;
    Side client_;
    RemoteBuffer remote_{};
};

uint64_t lmr_sum(lite_t* lite, lite_lmr_t lmr, uint64_t len)
{
    std::vector<uint8_t> buf(std::min(len, 4 * kMiB));
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t off = 0; off < len; off += buf.size()) {
        const size_t n = std::min<uint64_t>(buf.size(), len - off);
        if (int rc = LITE_read(lite, lmr, off, buf.data(), n); rc < 0)
            throw lite_error("LITE_read", rc);
        h = fnv1a(buf.data(), n, h);
    }
    return h;
}

void check_sum(uint64_t got, uint64_t want, const char* way, uint64_t size)
{
    if (got != want) {
        throw std::runtime_error(std::string(way) + ", " + std::to_string(size) +
                                 " bytes: the destination does not hold the file's bytes");
    }
}

// Sequential O_DIRECT reads of @path (the whole file, 1 MiB at a time).
void read_direct(const std::string& path, uint64_t size, uint8_t* buf)
{
    Fd fd(open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    if (fd.get() < 0)
        throw verb_error("open " + path + " (O_DIRECT)", errno);
    for (uint64_t off = 0; off < size;) {
        const uint64_t n = std::min(kMiB, size - off);
        const ssize_t got = pread(fd.get(), buf + off, n, static_cast<off_t>(off));
        if (got <= 0)
            throw verb_error("read " + path, got < 0 ? errno : EIO);
        off += static_cast<uint64_t>(got);
    }
}

std::string cell(const std::optional<Figure>& f, bool cpu)
{
    if (!f)
        return "-";
    char text[32];
    (void)std::snprintf(text, sizeof(text), "%.1f", cpu ? f->cpu_us_per_mib : f->mbs);
    return text;
}

int run(const Args& a)
{
    const auto& target = a.target;
    const auto& dir = a.dir;
    const auto& nfs = a.nfs;
    const auto& instance = a.instance;
    const auto& node = a.node;
    const auto& per_size = a.per_size;
    const auto& sizes = a.sizes;
    if (dir.empty())
        throw lite_cli::UsageError("--dir is required");
    uint64_t max = 0;
    for (uint64_t s : sizes)
        max = std::max(max, s);

    Native busy(target.sockaddr(), max, PollMode::busy);
    sockaddr_in sin = target.sockaddr();
    sin.sin_port = htons(static_cast<uint16_t>(target.port + 1));
    Native event(sin, max, PollMode::event);
    bench::Lite lite = bench::open_lite(instance);
    bench::Lmr lmr(lite.get(), max, node);
    std::vector<uint8_t> buf(max);
    void* aligned = nullptr;
    if (posix_memalign(&aligned, 4096, max) != 0)
        throw std::runtime_error("posix_memalign: no memory");
    std::unique_ptr<uint8_t, decltype(&std::free)> direct(static_cast<uint8_t*>(aligned), &std::free);
    (void)std::fprintf(stderr, "%s: files in %s%s%s, LMR on node %u\n", kProg, dir.c_str(),
                       nfs.empty() ? "" : ", NFS reads from ", nfs.c_str(), node);

    std::printf("size,native_reg_mbs,native_cache_mbs,copy_mbs,sendfile_mbs,nfs_mbs,"
                "native_reg_cpu,native_cache_cpu,copy_cpu,sendfile_cpu,nfs_cpu,native_reg_mode,native_cache_mode\n");
    for (uint64_t size : sizes) {
        const std::string name = "sf-" + std::to_string(size);
        std::string path = dir;
        path += "/" + name;
        const uint64_t want = make_file(path, size);
        const auto iters = static_cast<unsigned>(std::clamp<uint64_t>(per_size / size, 3, 200));
        Fd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
        if (fd.get() < 0)
            throw verb_error("open " + path, errno);

        Figure regs[2];
        Figure caches[2];
        for (int i = 0; i < 2; i++) {
            Native& native = i == 0 ? busy : event;
            native.clear(size);
            regs[i] = measure(size, iters, [&] { native.write_registering(fd.get(), size); });
            check_sum(native.sum(size), want, "native_reg", size);

            native.clear(size);
            Mapping m(fd.get(), size);
            Mr mr(ibv_reg_mr(native.pd(), m.get(), size, 0));
            if (!mr)
                throw verb_error("ibv_reg_mr of the file mapping", errno);
            caches[i] = measure(size, iters, [&] { native.write(m.get(), size, mr->lkey); });
            check_sum(native.sum(size), want, "native_cache", size);
        }
        const Figure reg = better(regs[0], regs[1]);
        const Figure cache = better(caches[0], caches[1]);

        if (int rc = LITE_memset(lite.get(), lmr.handle(), 0, 0, size); rc < 0)
            throw lite_error("LITE_memset", rc);
        const Figure copy = measure(size, iters, [&] {
            if (pread(fd.get(), buf.data(), size, 0) != static_cast<ssize_t>(size))
                throw verb_error("pread " + path, errno);
            if (int rc = LITE_write(lite.get(), lmr.handle(), 0, buf.data(), size); rc < 0)
                throw lite_error("LITE_write", rc);
        });
        check_sum(lmr_sum(lite.get(), lmr.handle(), size), want, "copy", size);

        if (int rc = LITE_memset(lite.get(), lmr.handle(), 0, 0, size); rc < 0)
            throw lite_error("LITE_memset", rc);
        const Figure sf = measure(size, iters, [&] {
            const int64_t sent = LITE_sendfile(lite.get(), fd.get(), 0, size, lmr.handle(), 0);
            if (sent < 0)
                throw lite_error("LITE_sendfile", static_cast<int>(sent));
            if (static_cast<uint64_t>(sent) != size) {
                throw std::runtime_error("LITE_sendfile: " + std::to_string(sent) + " of " + std::to_string(size) +
                                         " bytes sent");
            }
        });
        check_sum(lmr_sum(lite.get(), lmr.handle(), size), want, "sendfile", size);

        std::optional<Figure> nfs_fig;
        if (!nfs.empty()) {
            std::string remote = nfs;
            remote += "/" + name;
            nfs_fig = measure(size, iters, [&] { read_direct(remote, size, direct.get()); });
            check_sum(fnv1a(direct.get(), size), want, "nfs", size);
        }
        std::printf("%llu,%.1f,%.1f,%.1f,%.1f,%s,%.1f,%.1f,%.1f,%.1f,%s,%s,%s\n", static_cast<unsigned long long>(size),
                    reg.mbs, cache.mbs, copy.mbs, sf.mbs, cell(nfs_fig, false).c_str(), reg.cpu_us_per_mib,
                    cache.cpu_us_per_mib, copy.cpu_us_per_mib, sf.cpu_us_per_mib, cell(nfs_fig, true).c_str(), reg.mode,
                    cache.mode);
        (void)std::fflush(stdout);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "A file's bytes into remote memory: native verbs with a registration per request or "
                          "cached, pread + LITE_write, LITE_sendfile (and NFS reads with --nfs); MB/s and CPU per "
                          "MiB by size, CSV on stdout. The lite nodes must be up already (litectl up).");
        Args a;
        app.add_option("--dir", a.dir, "where the test files are made (sf-SIZE)")->type_name("DIR")->required();
        app.add_option("--nfs", a.nfs, "also read DIR/sf-SIZE with O_DIRECT (an NFS mount of --dir)")->type_name("DIR");
        a.target.add_options(app, "; the event pair takes the next one");
        lite_cli::add_instance(app, a.instance, "local lite node instance to attach to (default 0)");
        lite_cli::add_node(app, a.node, false, "node that holds the LMR (default 2)");
        lite_cli::add_list(app, "--sizes", a.sizes, 1, 1ULL << 30,
                           "comma-separated sizes with K, M or G (default 4K,16K,64K,256K,1M,4M,16M,64M)");
        lite_cli::add_number(app, "--bytes", a.per_size, 1, uint64_t{1} << 40,
                             "bytes moved per size and way (default 64M)");
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
