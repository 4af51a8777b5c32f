// SPDX-License-Identifier: MIT
//
// first-op: time to the first operation (see benchmarks/bench.sh): how long
// a fresh process takes from its start to its first completed 8-byte remote
// write, through lite or through native verbs.
//
// The parent runs RUNS children, one at a time: it reads CLOCK_MONOTONIC
// just before fork(), passes that time on the child's command line, and the
// child (this program again, through exec with the hidden flag --child-t0)
// reads the clock again when its write has completed and prints the
// difference. So each time includes fork, exec, the dynamic loader and
// library start-up, and everything the child needs to do before it can
// write:
//
//   lite    LITE_open(INSTANCE), LITE_alloc of 4096 bytes on node NODE,
//           LITE_write of 8 bytes to it (the nodes must be up: litectl up);
//   native  an rdma_cm id, address and route resolved to ADDR:PORT, a PD,
//           a CQ, an RC QP, a 4 KiB buffer registered, a connection to a
//           listener this parent runs in a thread (which makes a QP for
//           each connection on a PD, CQ and registered buffer it made
//           beforehand, and passes the buffer's address and rkey in the
//           accept's private data), one signaled RDMA WRITE of 8 bytes
//           posted and its completion busy-polled.
//
// What the child does after that (freeing, disconnecting, exiting) is not
// timed. Per-run times go to stderr; CSV on stdout:
//
//   mode,runs,median_us,p99_us,min_us
//
// exit 0 ok, 1 error (any child failing), 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"
#include "verbs.hpp"

#include <fcntl.h>
#include <lite/lite.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

using bench::Lite;
using bench::lite_error;

using namespace bench::verbs;

constexpr const char* kProg = "first-op";
constexpr size_t kBufSize = 4096;
constexpr size_t kWriteSize = 8;
constexpr auto kCompletionTimeout = std::chrono::seconds(5);

enum class Mode { lite, native };

struct Args {
    Mode mode = Mode::lite;
    unsigned runs = 20;
    std::string addr = default_addr();
    uint16_t port = 18620;
    unsigned instance = 0;
    uint32_t node = 2;
    int64_t child_t0 = -1; // >= 0: this is a child
};

int64_t mono_ns()
{
    timespec ts{};
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        throw verb_error("clock_gettime", errno);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The command line into @a.
void add_options(lite_cli::App& app, Args& a)
{
    lite_cli::add_choice(app, "--mode", a.mode, {{"lite", Mode::lite}, {"native", Mode::native}},
                         "lite (LITE_open + LITE_alloc + LITE_write; the nodes must be up) or native (rdma_cm + verbs "
                         "to a listener in this process)")
        ->required();
    lite_cli::add_number(app, "--runs", a.runs, 1, 100'000, "child processes (default 20)");
    add_addr(app, a.addr, "native: address of the RDMA device's netdev ($LITE_ADDR, else 10.99.0.1)");
    lite_cli::add_number(app, "--port", a.port, 1, 65535, "native: rdma_cm port the listener uses (default 18620)");
    lite_cli::add_instance(app, a.instance, "lite: local node instance to attach to (default 0)");
    lite_cli::add_node(app, a.node, false, "lite: node that holds the LMR (default 2)");
    // A child's start time (CLOCK_MONOTONIC ns), given by its parent.
    lite_cli::add_number(app, "--child-t0", a.child_t0, 0, INT64_MAX, "")->group("");
}

// ---- the children ----

// Returns the time the write completed; frees what it made afterwards.
int64_t child_lite(const Args& a)
{
    lite_t* raw = nullptr;
    if (int rc = LITE_open(a.instance, &raw); rc < 0)
        throw lite_error("LITE_open(instance " + std::to_string(a.instance) + ")", rc);
    Lite lite(raw);
    lite_lmr_t lmr = 0;
    if (int rc = LITE_alloc(lite.get(), kBufSize, a.node, &lmr); rc < 0)
        throw lite_error("LITE_alloc(4096 bytes on node " + std::to_string(a.node) + ")", rc);
    const uint64_t word = 0x0123456789abcdefULL;
    const int wrc = LITE_write(lite.get(), lmr, 0, &word, kWriteSize);
    const int64_t t1 = mono_ns();
    if (wrc < 0) {
        (void)LITE_free(lite.get(), lmr);
        throw lite_error("LITE_write(8 bytes)", wrc);
    }
    if (int rc = LITE_free(lite.get(), lmr); rc < 0)
        throw lite_error("LITE_free", rc);
    return t1;
}

rdma_conn_param conn_param()
{
    rdma_conn_param p{};
    p.initiator_depth = 1;
    p.responder_resources = 1;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    return p;
}

ibv_qp_init_attr qp_attr(ibv_cq* cq)
{
    ibv_qp_init_attr attr{};
    attr.send_cq = cq;
    attr.recv_cq = cq;
    attr.cap.max_send_wr = 4;
    attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RC;
    return attr;
}

// The native child's objects, destroyed in reverse order.
struct NativeClient {
    Channel channel;
    CmId id;
    Pd pd;
    Cq cq;
    std::vector<uint8_t> buf;
    Mr mr;
    Qp qp;
    bool connected = false;

    NativeClient() = default;
    NativeClient(const NativeClient&) = delete;
    NativeClient& operator=(const NativeClient&) = delete;
    NativeClient(NativeClient&&) = delete;
    NativeClient& operator=(NativeClient&&) = delete;
    ~NativeClient()
    {
        if (connected)
            rdma_disconnect(id.get());
    }
};

int64_t child_native(const Args& a)
{
    sockaddr_in sin = parse_addr(a.addr, a.port);
    NativeClient c;
    c.channel = make_channel();
    c.id = make_id(c.channel.get());
    check_cm(rdma_resolve_addr(c.id.get(), nullptr, reinterpret_cast<sockaddr*>(&sin), kCmTimeoutMs),
             "rdma_resolve_addr");
    wait_event(c.channel.get(), RDMA_CM_EVENT_ADDR_RESOLVED, "child");
    check_cm(rdma_resolve_route(c.id.get(), kCmTimeoutMs), "rdma_resolve_route");
    wait_event(c.channel.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, "child");
    c.pd.reset(ibv_alloc_pd(c.id->verbs));
    if (!c.pd)
        throw verb_error("ibv_alloc_pd", errno);
    c.cq.reset(ibv_create_cq(c.id->verbs, 4, nullptr, nullptr, 0));
    if (!c.cq)
        throw verb_error("ibv_create_cq", errno);
    ibv_qp_init_attr attr = qp_attr(c.cq.get());
    check_cm(rdma_create_qp(c.id.get(), c.pd.get(), &attr), "rdma_create_qp");
    c.qp.reset(c.id.get());
    c.buf.assign(kBufSize, 0x5a);
    c.mr.reset(ibv_reg_mr(c.pd.get(), c.buf.data(), c.buf.size(), IBV_ACCESS_LOCAL_WRITE));
    if (!c.mr)
        throw verb_error("ibv_reg_mr", errno);
    rdma_conn_param cp = conn_param();
    check_cm(rdma_connect(c.id.get(), &cp), "rdma_connect");
    RemoteBuffer rb{};
    {
        Event est = wait_event(c.channel.get(), RDMA_CM_EVENT_ESTABLISHED, "child");
        if (est->param.conn.private_data_len < sizeof(rb))
            throw std::runtime_error("child: the accept carried no buffer in its private data");
        std::memcpy(&rb, est->param.conn.private_data, sizeof(rb));
    }
    c.connected = true;

    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(c.buf.data());
    sge.length = kWriteSize;
    sge.lkey = c.mr->lkey;
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = rb.addr;
    wr.wr.rdma.rkey = rb.rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(c.id->qp, &wr, &bad); rc != 0)
        throw verb_error("ibv_post_send (RDMA WRITE)", rc);
    ibv_wc wc{};
    int n = 0;
    const auto deadline = std::chrono::steady_clock::now() + kCompletionTimeout;
    while ((n = ibv_poll_cq(c.cq.get(), 1, &wc)) == 0) {
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("child: no completion for the RDMA WRITE within 5 s");
    }
    const int64_t t1 = mono_ns();
    if (n < 0)
        throw std::runtime_error("ibv_poll_cq failed (returned " + std::to_string(n) + ")");
    if (wc.status != IBV_WC_SUCCESS)
        throw std::runtime_error(std::string("RDMA WRITE completed with error: ") + ibv_wc_status_str(wc.status));
    return t1;
}

// ---- the parent ----

// The native children's peer: a listener on ADDR:PORT, its PD, CQ and a
// registered buffer made before the first child starts; a QP per
// connection, made when the request comes and destroyed at disconnect.
class Listener
{
public:
    explicit Listener(const Args& a)
    {
        sockaddr_in sin = parse_addr(a.addr, a.port);
        channel_ = make_channel();
        id_ = make_id(channel_.get());
        check_cm(rdma_bind_addr(id_.get(), reinterpret_cast<sockaddr*>(&sin)), "rdma_bind_addr");
        if (id_->verbs == nullptr)
            throw std::runtime_error("rdma_bind_addr: " + a.addr + " is not the address of an RDMA device");
        check_cm(rdma_listen(id_.get(), 8), "rdma_listen");
        pd_.reset(ibv_alloc_pd(id_->verbs));
        if (!pd_)
            throw verb_error("ibv_alloc_pd", errno);
        cq_.reset(ibv_create_cq(id_->verbs, 16, nullptr, nullptr, 0));
        if (!cq_)
            throw verb_error("ibv_create_cq", errno);
        buf_.assign(kBufSize, 0);
        mr_.reset(ibv_reg_mr(pd_.get(), buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
        if (!mr_)
            throw verb_error("ibv_reg_mr", errno);
        thread_ = std::thread([this] { serve(); });
    }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    Listener(Listener&&) = delete;
    Listener& operator=(Listener&&) = delete;
    ~Listener()
    {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
    }

    // Stops the thread; rethrows what ended it, if anything.
    void finish()
    {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
        if (error_)
            std::rethrow_exception(error_);
    }

private:
    struct Conn {
        CmId id;
        Qp qp; // destroyed before the id
    };

    void serve() noexcept
    {
        try {
            while (!stop_) {
                pollfd pfd{channel_->fd, POLLIN, 0};
                const int n = poll(&pfd, 1, 100);
                if (n < 0 && errno != EINTR)
                    throw verb_error("poll on the rdma_cm event channel", errno);
                if (n > 0)
                    handle_event();
            }
        } catch (...) {
            error_ = std::current_exception();
        }
    }

    void handle_event()
    {
        rdma_cm_event* raw = nullptr;
        check_cm(rdma_get_cm_event(channel_.get(), &raw), "rdma_get_cm_event");
        Event ev(raw);
        rdma_cm_id* id = ev->id;
        switch (ev->event) {
        case RDMA_CM_EVENT_CONNECT_REQUEST: {
            auto& conn = conns_[id];
            conn.id.reset(id);
            ibv_qp_init_attr attr = qp_attr(cq_.get());
            check_cm(rdma_create_qp(id, pd_.get(), &attr), "rdma_create_qp (listener)");
            conn.qp.reset(id);
            RemoteBuffer rb{reinterpret_cast<uintptr_t>(buf_.data()), mr_->rkey, static_cast<uint32_t>(kBufSize)};
            rdma_conn_param ap = conn_param();
            ap.private_data = &rb;
            ap.private_data_len = sizeof(rb);
            check_cm(rdma_accept(id, &ap), "rdma_accept");
            break;
        }
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_REJECTED: {
            ev.reset(); // acknowledged before its id is destroyed
            conns_.erase(id);
            break;
        }
        default:
            break;
        }
    }

    Channel channel_;
    CmId id_;
    Pd pd_;
    Cq cq_;
    std::vector<uint8_t> buf_;
    Mr mr_;
    std::map<rdma_cm_id*, Conn> conns_; // destroyed before the PD and CQ
    std::thread thread_;
    std::atomic<bool> stop_ = false;
    std::exception_ptr error_;
};

// Runs one child; returns its time in ns.
int64_t run_child(const std::vector<std::string>& base)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) // dup2 clears it on the child's stdout
        throw verb_error("pipe2", errno);
    std::vector<std::string> args = base;
    const int64_t t0 = mono_ns();
    args.emplace_back("--child-t0");
    args.push_back(std::to_string(t0));
    std::vector<char*> cargv;
    cargv.reserve(args.size() + 1);
    for (std::string& s : args)
        cargv.push_back(s.data());
    cargv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0)
        throw verb_error("fork", errno);
    if (pid == 0) {
        (void)close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0)
            _exit(127);
        execv("/proc/self/exe", cargv.data());
        _exit(127);
    }
    (void)close(fds[1]);
    std::string out;
    char chunk[256];
    ssize_t got = 0;
    while ((got = read(fds[0], chunk, sizeof(chunk))) != 0) {
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        out.append(chunk, static_cast<size_t>(got));
    }
    (void)close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            throw verb_error("waitpid", errno);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error("a child failed (wait status " + std::to_string(status) + ")");
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return static_cast<int64_t>(lite_cli::to_number(out, "the child's time", 0, INT64_MAX));
}

int run(const Args& a, const char* argv0)
{
    if (a.child_t0 >= 0) {
        const int64_t t1 = a.mode == Mode::lite ? child_lite(a) : child_native(a);
        std::printf("%lld\n", static_cast<long long>(t1 - a.child_t0));
        return 0;
    }

    std::vector<std::string> base{argv0, "--mode", a.mode == Mode::lite ? "lite" : "native"};
    if (a.mode == Mode::lite) {
        base.insert(base.end(), {"--instance", std::to_string(a.instance), "--node", std::to_string(a.node)});
    } else {
        base.insert(base.end(), {"--addr", a.addr, "--port", std::to_string(a.port)});
    }
    std::unique_ptr<Listener> listener;
    if (a.mode == Mode::native)
        listener = std::make_unique<Listener>(a);
    std::vector<int64_t> ns;
    for (unsigned i = 0; i < a.runs; i++) {
        try {
            ns.push_back(run_child(base));
        } catch (const std::exception&) {
            if (listener)
                listener->finish(); // what went wrong on its side, if anything
            throw;
        }
    }
    std::string times;
    for (int64_t t : ns)
        times += " " + std::to_string((t + 500) / 1000);
    (void)std::fprintf(stderr, "%s: %s mode, %u runs, times in us:%s\n", kProg, base[2].c_str(), a.runs, times.c_str());
    if (listener)
        listener->finish();
    const bench::Stats s = bench::summarize(ns);
    std::printf("mode,runs,median_us,p99_us,min_us\n");
    std::printf("%s,%u,%.2f,%.2f,%.2f\n", base[2].c_str(), a.runs, s.median_us, s.p99_us, s.min_us);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg, "Time from a fresh process's start (fork) to its first completed 8-byte remote write, "
                                 "over RUNS child processes; prints CSV on stdout.");
        Args a;
        add_options(app, a);
        return app.run(argc, argv, [&a, argv] { return run(a, argv[0]); });
    });
}
