// SPDX-License-Identifier: MIT
//
// native-ops: the transport's own latency by operation and size through
// plain rdma-core verbs, the ceiling for everything lite does (see
// benchmarks/bench.sh; there is no lite counterpart in this table).
//
// One process plays both sides of one RC connection made with librdmacm on
// the RDMA device that owns ADDR, as native-lat does. For each operation
// and size the client posts one signaled work request at a time and waits
// for its own completion (busy-polled, or on the completion channel with
// --poll event; the CSV's ops then end in -event):
//
//   send       SEND into a RECV the server posted beforehand
//   write      RDMA WRITE
//   write-imm  RDMA WRITE WITH IMMEDIATE (consumes a server RECV)
//   read       RDMA READ
//   fetch-add  ATOMIC FETCH AND ADD, 8 bytes only
//   cmp-swap   ATOMIC COMPARE AND SWAP, 8 bytes only
//
// Every time is the sender's completion: for send and write-imm the
// server's receive completions are reaped, and its RECVs posted again,
// between timed operations, outside the timing. Each operation is checked
// once for the data it moved before it is timed. If the atomics fail (the
// device may not support them), a line on stderr says so and they are left
// out of the CSV; the program still exits 0 if the rest worked.
//
// Prints CSV on stdout:
//
//   op,size,iters,median_us,p99_us,mean_us
//
// exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "pair.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace
{

using namespace bench::verbs;

constexpr const char* kProg = "native-ops";
constexpr size_t kMaxSize = size_t{1} << 20;
constexpr auto kCompletionTimeout = std::chrono::seconds(5);
constexpr uint32_t kRecvDepth = 16; // server RECVs kept posted
constexpr size_t kAtomicSize = 8;

struct Args {
    bench::Options opt;
    Target at{18610};
    PollMode mode = PollMode::busy;
};

enum class Op { send, write, write_imm, read, fetch_add, cmp_swap };

const char* op_name(Op op)
{
    switch (op) {
    case Op::send:
        return "send";
    case Op::write:
        return "write";
    case Op::write_imm:
        return "write-imm";
    case Op::read:
        return "read";
    case Op::fetch_add:
        return "fetch-add";
    case Op::cmp_swap:
        return "cmp-swap";
    }
    return "?";
}

bool is_atomic(Op op)
{
    return op == Op::fetch_add || op == Op::cmp_swap;
}

// One end of the connection; members destroyed in reverse order (the QP
// before the MR, buffer and CQ it uses, those before the PD, the ids
// before their channel).
// Posts @n RECVs of the whole buffer on the server.
void post_recvs(Side& server, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uintptr_t>(server.bytes());
        sge.length = static_cast<uint32_t>(server.size());
        sge.lkey = server.mr->lkey;
        ibv_recv_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        if (int rc = ibv_post_recv(server.id->qp, &wr, &bad); rc != 0)
            throw verb_error("ibv_post_recv", rc);
    }
}

class Poster
{
public:
    Poster(Side& server, Side& client, const RemoteBuffer& remote) : server_(server), client_(client), remote_(remote)
    {
    }

    // One signaled @op of @len bytes from/to the start of the client's
    // buffer, to/from the start of the server's; returns at its completion.
    void operator()(Op op, size_t len, uint64_t compare_add = 1, uint64_t swap = 0)
    {
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uintptr_t>(client_.bytes());
        sge.length = static_cast<uint32_t>(len);
        sge.lkey = client_.mr->lkey;
        ibv_send_wr wr{};
        wr.wr_id = ++seq_;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        switch (op) {
        case Op::send:
            wr.opcode = IBV_WR_SEND;
            break;
        case Op::write:
            wr.opcode = IBV_WR_RDMA_WRITE;
            break;
        case Op::write_imm:
            wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
            wr.imm_data = htonl(static_cast<uint32_t>(seq_));
            break;
        case Op::read:
            wr.opcode = IBV_WR_RDMA_READ;
            break;
        case Op::fetch_add:
        case Op::cmp_swap:
            wr.opcode = op == Op::fetch_add ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
            wr.wr.atomic.remote_addr = remote_.addr;
            wr.wr.atomic.rkey = remote_.rkey;
            wr.wr.atomic.compare_add = compare_add;
            wr.wr.atomic.swap = swap;
            break;
        }
        if (!is_atomic(op) && op != Op::send) {
            wr.wr.rdma.remote_addr = remote_.addr;
            wr.wr.rdma.rkey = remote_.rkey;
        }
        ibv_send_wr* bad = nullptr;
        if (int rc = ibv_post_send(client_.id->qp, &wr, &bad); rc != 0)
            throw verb_error(std::string("ibv_post_send (") + op_name(op) + ")", rc);

        ibv_wc wc{};
        int n = 0;
        if (!client_.cq.wait_until([&] { return (n = ibv_poll_cq(client_.cq.get(), 1, &wc)) != 0; },
                                   kCompletionTimeout)) {
            throw std::runtime_error(std::string("no completion for a ") + op_name(op) + " of " + std::to_string(len) +
                                     " bytes within 5 s");
        }
        check_wc(n, wc, op, len, seq_);
    }

    // Between timed operations: reaps the server's receive completions
    // (one per send or write-imm, expected already there since the
    // sender's completion means the data was acknowledged) and posts as
    // many RECVs again.
    void reap(unsigned expected)
    {
        unsigned got = 0;
        const auto deadline = std::chrono::steady_clock::now() + kCompletionTimeout;
        while (got < expected) {
            ibv_wc wc{};
            const int n = ibv_poll_cq(server_.cq.get(), 1, &wc);
            if (n < 0)
                throw std::runtime_error("ibv_poll_cq (server) failed (returned " + std::to_string(n) + ")");
            if (n == 0) {
                if (std::chrono::steady_clock::now() > deadline)
                    throw std::runtime_error("server: no receive completion within 5 s");
                continue;
            }
            if (wc.status != IBV_WC_SUCCESS) {
                throw std::runtime_error(std::string("server: receive completed with error: ") +
                                         ibv_wc_status_str(wc.status));
            }
            got++;
        }
        post_recvs(server_, got);
    }

private:
    static void check_wc(int n, const ibv_wc& wc, Op op, size_t len, uint64_t seq)
    {
        if (n < 0)
            throw std::runtime_error("ibv_poll_cq failed (returned " + std::to_string(n) + ")");
        if (wc.status != IBV_WC_SUCCESS) {
            throw std::runtime_error(std::string(op_name(op)) + " of " + std::to_string(len) +
                                     " bytes completed with error: " + ibv_wc_status_str(wc.status) + " (vendor_err " +
                                     std::to_string(wc.vendor_err) + ")");
        }
        if (wc.wr_id != seq) {
            throw std::runtime_error("ibv_poll_cq: completion for wr_id " + std::to_string(wc.wr_id) + ", expected " +
                                     std::to_string(seq));
        }
    }

    Side& server_;
    Side& client_;
    RemoteBuffer remote_;
    uint64_t seq_ = 0;
};

bool consumes_recv(Op op)
{
    return op == Op::send || op == Op::write_imm;
}

// One @op of @len bytes whose effect must show.
void check_op(Side& server, Side& client, Poster& post, Op op, size_t len, unsigned seed)
{
    uint8_t* c = client.bytes();
    uint8_t* s = server.bytes();
    const auto n = static_cast<long>(len);
    if (is_atomic(op)) {
        server.words[0] = 1000 + seed;
        client.words[0] = 0;
        if (op == Op::fetch_add) {
            post(op, kAtomicSize, 5);
            if (client.words[0] != 1000 + seed || server.words[0] != 1005 + seed)
                throw std::runtime_error("fetch-add: wrong old value returned or wrong result");
        } else {
            post(op, kAtomicSize, 1000 + seed, 7);
            if (client.words[0] != 1000 + seed || server.words[0] != 7)
                throw std::runtime_error("cmp-swap: wrong old value returned or no swap");
        }
        return;
    }
    std::vector<uint8_t> pattern(len);
    bench::fill_pattern(pattern, len, seed);
    if (op == Op::read) {
        std::copy(pattern.begin(), pattern.end(), s);
        std::fill_n(c, len, 0);
    } else {
        std::copy(pattern.begin(), pattern.end(), c);
        std::fill_n(s, len, 0);
    }
    post(op, len);
    if (consumes_recv(op))
        post.reap(1);
    if (!std::equal(pattern.begin(), pattern.begin() + n, op == Op::read ? c : s)) {
        throw std::runtime_error(std::string(op_name(op)) + " of " + std::to_string(len) +
                                 " bytes: the data did not arrive");
    }
}

// Like bench::measure, with @after run untimed after every operation.
template <typename Fn, typename After> bench::Stats measure(const bench::Options& o, const Fn& op, const After& after)
{
    using clock = std::chrono::steady_clock;
    for (unsigned i = 0; i < o.warmup; i++) {
        op();
        after();
    }
    std::vector<int64_t> ns;
    ns.reserve(o.iters);
    for (unsigned i = 0; i < o.iters; i++) {
        const auto t0 = clock::now();
        op();
        const auto t1 = clock::now();
        after();
        ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
    return bench::summarize(std::move(ns));
}

void print_row(const std::string& op, size_t size, unsigned iters, const bench::Stats& s)
{
    std::printf("%s,%zu,%u,%.2f,%.2f,%.2f\n", op.c_str(), size, iters, s.median_us, s.p99_us, s.mean_us);
    (void)std::fflush(stdout);
}

int run(const Args& a)
{
    const auto& opt = a.opt;
    const auto& at = a.at;
    const auto& mode = a.mode;
    const sockaddr_in sin = at.sockaddr();
    const size_t len = std::max(*std::max_element(opt.sizes.begin(), opt.sizes.end()), kAtomicSize);

    Side server;
    Side client;
    PairConfig cfg;
    cfg.recv_depth = kRecvDepth;
    cfg.server_access |= IBV_ACCESS_REMOTE_ATOMIC;
    cfg.server_busy = true; // only reaped between timed operations
    cfg.before_accept = [](Side& s) { post_recvs(s, kRecvDepth); };
    const RemoteBuffer remote = connect_pair(server, client, sin, len, mode, cfg);
    (void)std::fprintf(stderr, "%s: %s, RC QP %u -> %u via %s:%u, %u+%u iterations, %s polling\n", kProg,
                       ibv_get_device_name(client.id->verbs->device), client.id->qp->qp_num, server.id->qp->qp_num,
                       at.addr.c_str(), at.port, opt.warmup, opt.iters, poll_name(mode));

    Poster post(server, client, remote);
    unsigned seed = 0;
    std::printf("op,size,iters,median_us,p99_us,mean_us\n");
    for (Op op : {Op::send, Op::write, Op::write_imm, Op::read, Op::fetch_add, Op::cmp_swap}) {
        const std::string label = op_label(op_name(op), mode);
        const std::vector<size_t> sizes = is_atomic(op) ? std::vector<size_t>{kAtomicSize} : opt.sizes;
        const unsigned reaps = consumes_recv(op) ? 1 : 0;
        for (size_t size : sizes) {
            uint64_t swap_to = 0;
            auto once = [&] {
                // cmp-swap: compare with what is there, so that every one swaps.
                post(op, size, op == Op::cmp_swap ? swap_to : 1, swap_to + 1);
                swap_to++;
            };
            auto after = [&] {
                if (reaps != 0)
                    post.reap(reaps);
            };
            if (!is_atomic(op)) {
                check_op(server, client, post, op, size, ++seed);
                print_row(label, size, opt.iters, measure(opt, once, after));
                continue;
            }
            // An atomic that fails leaves the QP in the error state: report
            // it, and the atomics after it, and go on without them.
            try {
                check_op(server, client, post, op, size, ++seed);
                server.words[0] = 0;
                print_row(label, size, opt.iters, measure(opt, once, after));
            } catch (const std::exception& e) {
                (void)std::fprintf(stderr, "%s: %s failed, left out of the CSV: %s\n", kProg, label.c_str(), e.what());
            }
        }
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "Native verbs latency by operation (send, write, write-imm, read, fetch-add, cmp-swap; "
                          "the atomics at 8 bytes only) over one RC connection from the RDMA device that owns IPV4 "
                          "to itself, made with librdmacm; prints CSV on stdout.");
        Args a;
        a.at.add_options(app);
        add_poll(app, a.mode,
                 "busy (default) or event, as native-lat; the CSV's ops are suffixed -event in event mode");
        bench::add_common(app, a.opt, kMaxSize);
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
