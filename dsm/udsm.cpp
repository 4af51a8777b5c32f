// SPDX-License-Identifier: MIT
// udsm: the user-level DSM (see udsm.hpp). One participant = a Region
// object: the application's view of the region (anonymous memory under
// userfaultfd), a handler thread that serves its page faults, a service
// thread that answers the protocol's calls on a lite RPC port, and an LMR
// on its own node holding the bytes other participants may read. The home
// (the creator) also keeps the directory: the kernel DSM's core/dsm.c.
#include "udsm.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
extern "C" {
#include "core/dsm.h"
}
#pragma GCC diagnostic pop

namespace udsm
{
namespace
{

constexpr uint64_t kPage = 4096;
constexpr uint32_t kCallMs = 10000;
constexpr uint64_t kMetaMagic = 0x6d73647555ULL; // "Udsm"

enum Op : uint32_t {
    kReq = 1,   // to the home: a copy of a page (kind, seq)
    kDone = 2,  // to the home: the grant of txn was carried out (status)
    kInval = 3, // from the home: invalidate, downgrade or probe (kind)
};

struct Msg {
    uint32_t op = 0;
    uint32_t kind = 0; // enum lite_dsm_kind, or lite_dsm_inval_kind
    uint64_t page = 0;
    uint32_t txn = 0;
    int32_t status = 0;
};

struct Reply {
    int32_t status = 0;
    uint8_t grant = 0; // enum lite_dsm_grant_kind
    uint8_t has_frame = 0;
    uint16_t from = 0;
    uint32_t txn = 0;
};

enum Local : uint8_t { kInvalid = 0, kShared = 1, kExcl = 2 };

uint32_t port_for(std::string_view name)
{
    uint32_t h = 2166136261U;
    for (char c : name)
        h = (h ^ static_cast<uint8_t>(c)) * 16777619U;
    return 30000 + h % 20000;
}

[[noreturn]] void die(const char* what, int err)
{
    (void)std::fprintf(stderr, "udsm: %s: %s\n", what, std::strerror(err));
    (void)std::raise(SIGBUS); // as the kernel DSM does for an access it cannot serve
    std::abort();
}

} // namespace

struct Region::Impl {
    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    Impl(Impl&&) = delete;
    Impl& operator=(Impl&&) = delete;

    const lite::Session* s = nullptr;
    std::string name;
    uint64_t size = 0;
    uint64_t pages = 0;
    uint32_t self = 0;
    uint32_t home = 0;
    uint32_t port = 0;
    std::byte* mem = nullptr;
    int uffd = -1;
    int wake = -1; // eventfd: stop the handler thread
    std::optional<lite::Lmr> frames;

    std::mutex mu; // the fields below
    std::vector<uint8_t> state;
    std::vector<uint8_t> intact;
    std::vector<lite_dsm_dir> dir;            // home only
    std::map<uint64_t, lite_dsm_txn> running; // home only: busy pages
    uint32_t next_txn = 0;
    std::map<uint32_t, lite::Lmr> peer_frames; // mapped LMRs of the others

    std::atomic<bool> stop{false};
    mutable std::atomic<uint64_t> prot_changes{0}; // Region::stats()
    mutable std::atomic<uint64_t> prot_ns{0};
    std::thread handler;
    std::thread service;

    std::optional<lite::Lmr> meta; // home: {magic, home, size} under "udsm:NAME"

    [[nodiscard]] std::string frame_name(uint32_t node) const { return "udsm:" + name + ":" + std::to_string(node); }

    // --- directory (home) ---------------------------------------------
    Reply ask(uint32_t node, uint8_t what, uint64_t page)
    {
        Reply r{};
        if (node == self) {
            std::lock_guard g(mu);
            r.has_frame = inval_locked(page, what) ? 1 : 0;
            return r;
        }
        Msg m{kInval, what, page, 0, 0};
        size_t len = 0;
        int ret = LITE_rpc_call(s->get(), node, port, &m, sizeof(m), &r, sizeof(r), &len, kCallMs);
        if (ret < 0)
            r.status = ret;
        return r;
    }

    // Run a request to its grant (or failure); -EBUSY: try again.
    Reply home_request(uint32_t requester, uint32_t kind, uint64_t page)
    {
        Reply rep{};
        lite_dsm_txn t{};
        std::unique_lock g(mu);
        if (page >= pages) {
            rep.status = -EINVAL;
            return rep;
        }
        if (++next_txn == 0)
            next_txn = 1;
        int err =
            lite_dsm_begin(&dir[page], &t, static_cast<uint8_t>(kind), static_cast<uint16_t>(requester), next_txn);
        if (err) {
            rep.status = err;
            return rep;
        }
        for (;;) {
            // The questions go out without the lock: the nodes asked may be
            // waiting for it in their own calls to us.
            std::vector<std::pair<uint16_t, uint8_t>> q;
            for (uint16_t id = lite_dsm_nodes_next(&t.inval, 0); id; id = lite_dsm_nodes_next(&t.inval, id))
                q.emplace_back(id, LITE_DSM_INVALIDATE);
            if (t.downgrade)
                q.emplace_back(t.downgrade, LITE_DSM_DOWNGRADE);
            if (t.probe)
                q.emplace_back(t.probe, LITE_DSM_PROBE);
            g.unlock();
            std::vector<Reply> answers;
            answers.reserve(q.size());
            for (auto [node, what] : q)
                answers.push_back(ask(node, what, page));
            g.lock();
            for (size_t i = 0; i < q.size(); i++) {
                // Frames are reached through each node's LMR, not by key.
                (void)lite_dsm_answer(&dir[page], &t, q[i].second, q[i].first, answers[i].status,
                                      answers[i].has_frame != 0, page * kPage, 0);
            }
            lite_dsm_grant gr{};
            err = lite_dsm_decide(&dir[page], &t, &gr);
            if (err == -EAGAIN)
                continue; // probe another holder
            if (err) {
                lite_dsm_abort(&dir[page], &t, false);
                rep.status = err;
                return rep;
            }
            rep.grant = gr.kind;
            rep.from = gr.from;
            rep.txn = t.id;
            running[page] = t;
            return rep;
        }
    }

    int home_done(uint32_t requester, uint64_t page, uint32_t txn, int status)
    {
        std::lock_guard g(mu);
        auto it = running.find(page);
        if (page >= pages || it == running.end() || it->second.requester != requester || it->second.id != txn)
            return -ESTALE;
        if (status == 0) {
            lite_dsm_commit(&dir[page], &it->second, page * kPage, 0);
        } else {
            lite_dsm_abort(&dir[page], &it->second, false);
        }
        running.erase(it);
        return 0;
    }

    // --- this participant's copies -------------------------------------
    void write_protect(uint64_t page, bool on) const
    {
        uffdio_writeprotect wp{};
        wp.range.start =
            reinterpret_cast<uint64_t>(mem + page * kPage); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        wp.range.len = kPage;
        wp.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
        if (::ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) < 0)
            die("UFFDIO_WRITEPROTECT", errno);
    }

    // Run @change, one protection change of a page for the protocol, timed
    // for Region::stats().
    template <class F> void protect(F&& change) const
    {
        const auto t0 = std::chrono::steady_clock::now();
        std::forward<F>(change)();
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
        prot_ns += static_cast<uint64_t>(ns.count());
        prot_changes++;
    }

    // Drop our copy of @page from the mapping (its next access faults).
    void drop(uint64_t page) const
    {
        protect([&] {
            if (::madvise(mem + page * kPage, kPage, MADV_DONTNEED) < 0)
                die("madvise", errno);
        });
    }

    // Keep the bytes others may read in our LMR.
    void snapshot(uint64_t page) { frames->write(page * kPage, std::span<const std::byte>(mem + page * kPage, kPage)); }

    // What the home asks of our copy. Returns whether our frame holds its
    // bytes. Lock held.
    bool inval_locked(uint64_t page, uint8_t what)
    {
        if (page >= pages)
            return false;
        if (what == LITE_DSM_INVALIDATE && state[page] != kInvalid) {
            if (state[page] == kExcl) {
                protect([&] { write_protect(page, true); }); // no store after the snapshot
                snapshot(page);
            }
            drop(page);
            state[page] = kInvalid;
        } else if (what == LITE_DSM_DOWNGRADE && state[page] == kExcl) {
            protect([&] { write_protect(page, true); });
            snapshot(page);
            state[page] = kShared;
        }
        return intact[page] != 0;
    }

    Reply request(uint32_t kind, uint64_t page)
    {
        if (self == home)
            return home_request(self, kind, page);
        Msg m{kReq, kind, page, 0, 0};
        Reply r{};
        size_t len = 0;
        int ret = LITE_rpc_call(s->get(), home, port, &m, sizeof(m), &r, sizeof(r), &len, kCallMs);
        if (ret < 0)
            r.status = ret;
        return r;
    }

    void done(uint64_t page, uint32_t txn, int status)
    {
        if (self == home) {
            (void)home_done(self, page, txn, status);
            return;
        }
        Msg m{kDone, 0, page, txn, status};
        Reply r{};
        size_t len = 0;
        int ret = LITE_rpc_call(s->get(), home, port, &m, sizeof(m), &r, sizeof(r), &len, kCallMs);
        if (ret < 0 || r.status < 0)
            die("DONE to the home", ret < 0 ? -ret : -r.status);
    }

    lite::Lmr& peer(uint32_t node)
    {
        auto it = peer_frames.find(node);
        if (it == peer_frames.end())
            it = peer_frames.emplace(node, s->map(frame_name(node))).first;
        return it->second;
    }

    // Wake the threads waiting on @page's fault.
    void wake_page(uint64_t page) const
    {
        uffdio_range r{};
        r.start = reinterpret_cast<uint64_t>(mem + page * kPage); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        r.len = kPage;
        if (::ioctl(uffd, UFFDIO_WAKE, &r) < 0)
            die("UFFDIO_WAKE", errno);
    }

    // Map the page with @bytes (write-protected for a read copy).
    void install(uint64_t page, const std::byte* bytes, bool writable) const
    {
        uffdio_copy c{};
        c.dst = reinterpret_cast<uint64_t>(mem + page * kPage); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        c.src = reinterpret_cast<uint64_t>(bytes);              // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        c.len = kPage;
        c.mode = writable ? 0 : UFFDIO_COPY_MODE_WP;
        if (::ioctl(uffd, UFFDIO_COPY, &c) < 0) {
            if (errno != EEXIST)
                die("UFFDIO_COPY", errno);
            wake_page(page);
        }
    }

    // Serve one fault: @write access to @page.
    void fault(uint64_t page, bool write)
    {
        const uint32_t kind = write ? LITE_DSM_WR : LITE_DSM_RD;
        alignas(64) static thread_local std::byte staging[kPage];
        for (;;) {
            {
                std::lock_guard g(mu);
                if (state[page] == kExcl || (!write && state[page] == kShared)) {
                    // Another thread's fault got it meanwhile.
                    if (write) {
                        write_protect(page, false);
                    } else {
                        wake_page(page);
                    }
                    return;
                }
            }
            Reply r = request(kind, page);
            if (r.status == -EBUSY) {
                if (stop.load())
                    return; // being destroyed: nobody may fault now
                std::this_thread::sleep_for(std::chrono::microseconds(50));
                continue;
            }
            if (r.status < 0)
                die("page request", -r.status);
            int status = 0;
            {
                std::lock_guard g(mu);
                if (r.grant == LITE_DSM_KEEP) {
                    if (!intact[page]) {
                        status = -ESTALE;
                    } else if (state[page] == kInvalid) {
                        frames->read(page * kPage, std::span<std::byte>(staging, kPage));
                        install(page, staging, write);
                    } else if (write) {
                        write_protect(page, false);
                    }
                } else {
                    if (r.grant == LITE_DSM_FILL) {
                        std::memset(staging, 0, kPage);
                    } else {
                        peer(r.from).read(page * kPage, std::span<std::byte>(staging, kPage));
                    }
                    frames->write(page * kPage, std::span<const std::byte>(staging, kPage));
                    if (state[page] != kInvalid)
                        drop(page);
                    install(page, staging, write);
                }
                if (status == 0) {
                    state[page] = write ? kExcl : kShared;
                    intact[page] = 1;
                }
            }
            done(page, r.txn, status);
            if (status == 0)
                return;
        }
    }

    void handler_loop()
    {
        pollfd fds[2] = {{uffd, POLLIN, 0}, {wake, POLLIN, 0}};
        while (!stop.load()) {
            if (::poll(fds, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                die("poll", errno);
            }
            if (fds[1].revents != 0)
                break;
            uffd_msg msg{};
            ssize_t n = ::read(uffd, &msg, sizeof(msg));
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n != sizeof(msg))
                die("read userfaultfd", n < 0 ? errno : EIO);
            if (msg.event != UFFD_EVENT_PAGEFAULT)
                continue;
            const uint64_t off = msg.arg.pagefault.address -
                                 reinterpret_cast<uint64_t>(mem); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
            try {
                fault(off / kPage, (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0);
            } catch (const std::exception& e) { // a page that cannot be served: SIGBUS
                die(e.what(), EIO);
            }
        }
    }

    void service_loop()
    {
        Msg m{};
        while (!stop.load()) {
            lite_rpc_in_t in{};
            int ret = LITE_rpc_recv(s->get(), port, &m, sizeof(m), 200, &in);
            if (ret == -ETIMEDOUT || ret == -EINTR)
                continue;
            if (ret < 0)
                die("LITE_rpc_recv", -ret);
            Reply r{};
            try {
                r = serve(m, in);
            } catch (const std::exception& e) {
                die(e.what(), EIO);
            }
            if (in.token != 0)
                (void)LITE_rpc_reply(s->get(), in.token, &r, sizeof(r));
        }
    }

    Reply serve(const Msg& m, const lite_rpc_in_t& in)
    {
        Reply r{};
        {
            if (in.len != sizeof(m)) {
                r.status = -EBADMSG;
            } else if (m.op == kReq && self == home) {
                r = home_request(in.src_node, m.kind, m.page);
            } else if (m.op == kDone && self == home) {
                r.status = home_done(in.src_node, m.page, m.txn, m.status);
            } else if (m.op == kInval && in.src_node == home) {
                std::lock_guard g(mu);
                r.has_frame = inval_locked(m.page, static_cast<uint8_t>(m.kind)) ? 1 : 0;
            } else {
                r.status = -EPROTO;
            }
        }
        return r;
    }

    void start()
    {
        state.assign(pages, kInvalid);
        intact.assign(pages, 0);
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            throw lite::Error(errno, "udsm: map " + name);
        mem = static_cast<std::byte*>(p);
        uffd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
        if (uffd < 0)
            throw lite::Error(errno, "udsm: userfaultfd");
        uffdio_api api{};
        api.api = UFFD_API;
        api.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP;
        if (::ioctl(uffd, UFFDIO_API, &api) < 0)
            throw lite::Error(errno, "udsm: UFFDIO_API (write-protect faults)");
        uffdio_register reg{};
        reg.range.start = reinterpret_cast<uint64_t>(mem); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        reg.range.len = size;
        reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
        if (::ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
            throw lite::Error(errno, "udsm: UFFDIO_REGISTER");
        wake = ::eventfd(0, EFD_CLOEXEC);
        if (wake < 0)
            throw lite::Error(errno, "udsm: eventfd");
        if (int ret = LITE_rpc_register(s->get(), port); ret < 0)
            throw lite::Error(-ret, "udsm: register port " + std::to_string(port));
        frames.emplace(s->alloc(size, 0));
        frames->share(frame_name(self), LITE_PERM_READ | LITE_PERM_WRITE);
        if (self == home) {
            const uint64_t info[3] = {kMetaMagic, home, size};
            meta.emplace(s->alloc(sizeof(info), 0));
            meta->write(0, std::span<const uint64_t>(info));
            meta->share("udsm:" + name, LITE_PERM_READ);
        }
        service = std::thread([this] { service_loop(); });
        handler = std::thread([this] { handler_loop(); });
    }

    void revoke(std::optional<lite::Lmr>& lmr, const std::string& what) const noexcept
    {
        if (!lmr)
            return;
        try {
            s->revoke(what);
        } catch (const lite::Error&) { // NOLINT(bugprone-empty-catch): gone with its node already
        }
        lmr.reset();
    }

    ~Impl()
    {
        stop.store(true);
        if (wake >= 0) {
            uint64_t one = 1;
            (void)::write(wake, &one, sizeof(one));
        }
        if (handler.joinable())
            handler.join();
        if (service.joinable())
            service.join();
        if (port != 0)
            (void)LITE_rpc_unregister(s->get(), port);
        peer_frames.clear();
        revoke(frames, frame_name(self));
        revoke(meta, "udsm:" + name);
        if (mem != nullptr)
            ::munmap(mem, size);
        if (uffd >= 0)
            ::close(uffd);
        if (wake >= 0)
            ::close(wake);
    }
};

Region Region::create(const lite::Session& s, std::string_view name, uint64_t size)
{
    if (size == 0 || size % kPage != 0)
        throw lite::Error(EINVAL, "udsm: a region is a whole number of pages");
    auto impl = std::make_unique<Impl>();
    impl->s = &s;
    impl->name = std::string(name);
    impl->size = size;
    impl->pages = size / kPage;
    impl->self = s.node_id();
    impl->home = impl->self;
    impl->port = port_for(name);
    impl->dir.assign(impl->pages, lite_dsm_dir{});
    impl->start();
    return Region(std::move(impl));
}

Region Region::open(const lite::Session& s, std::string_view name)
{
    auto impl = std::make_unique<Impl>();
    impl->s = &s;
    impl->name = std::string(name);
    {
        uint64_t info[3] = {};
        auto meta = s.map("udsm:" + impl->name);
        meta.read(0, std::span<uint64_t>(info));
        if (info[0] != kMetaMagic || info[2] == 0 || info[2] % kPage != 0)
            throw lite::Error(EBADMSG, "udsm: " + impl->name + " is not a udsm region");
        impl->home = static_cast<uint32_t>(info[1]);
        impl->size = info[2];
    }
    impl->pages = impl->size / kPage;
    impl->self = s.node_id();
    impl->port = port_for(name);
    if (impl->self == impl->home)
        throw lite::Error(EEXIST, "udsm: region " + impl->name + " is homed on this node already");
    impl->start();
    return Region(std::move(impl));
}

Region::Region(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Region::Region(Region&&) noexcept = default;
Region& Region::operator=(Region&&) noexcept = default;
Region::~Region() = default;

std::byte* Region::data() const noexcept
{
    return impl_->mem;
}
uint64_t Region::size() const noexcept
{
    return impl_->size;
}
uint32_t Region::home() const noexcept
{
    return impl_->home;
}
Region::Stats Region::stats() const noexcept
{
    return {impl_->prot_changes.load(), impl_->prot_ns.load()};
}

} // namespace udsm
