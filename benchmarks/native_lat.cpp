// SPDX-License-Identifier: MIT
//
// native-lat: RDMA WRITE and RDMA READ latency through plain rdma-core verbs,
// the baseline for lite-lat (see benchmarks/bench.sh).
//
// One process plays both sides of one RC connection made with librdmacm on
// the RDMA device that owns ADDR (rxe0 on 10.99.0.1 in a lite-vm guest):
// a server id listens on ADDR:PORT, registers a buffer for remote reads and
// writes and hands its address and rkey to the client in the accept's
// private data; the client connects to it and, for each size, posts one
// signaled WRITE (then READ) at a time and waits for its completion: it
// busy-polls its CQ (--poll busy, the default), or sleeps on the CQ's
// completion channel and polls after each event (--poll event; the ops are
// then write-event and read-event in the CSV). Both sides are driven from this one thread: every rdma_cm
// call is asynchronous, so the steps simply alternate between the two event
// channels. Before the timed runs of each size the data is checked once:
// what the client wrote must be in the server's buffer, and what it read
// must equal the server's buffer.
//
// Prints CSV on stdout (format in lat.hpp); exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "pair.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace
{

using namespace bench::verbs;

constexpr const char* kProg = "native-lat";
constexpr size_t kMaxSize = size_t{1} << 20;
constexpr auto kCompletionTimeout = std::chrono::seconds(5);

struct Args {
    bench::Options opt;
    Target at{18600};
    PollMode mode = PollMode::busy;
};

// One end of the connection. Members are destroyed in reverse order: the
// QP before the MR, buffer and CQ it uses, those before the PD, the ids
// before their channel.
const char* op_name(ibv_wr_opcode op)
{
    return op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ";
}

// Posts one signaled @op of @len bytes between the start of the client's
// buffer and the start of @remote, and waits for its completion (busy
// polling or on the completion channel: the client's CQ decides).
class Poster
{
public:
    Poster(Side& client, const RemoteBuffer& remote) : client_(client), remote_(remote) {}

    void operator()(ibv_wr_opcode op, size_t len)
    {
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uintptr_t>(client_.bytes());
        sge.length = static_cast<uint32_t>(len);
        sge.lkey = client_.mr->lkey;
        ibv_send_wr wr{};
        wr.wr_id = ++seq_;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = remote_.addr;
        wr.wr.rdma.rkey = remote_.rkey;
        ibv_send_wr* bad = nullptr;
        if (int rc = ibv_post_send(client_.id->qp, &wr, &bad); rc != 0)
            throw verb_error("ibv_post_send (" + std::string(op_name(op)) + ")", rc);

        ibv_wc wc{};
        int n = 0;
        if (!client_.cq.wait_until([&] { return (n = ibv_poll_cq(client_.cq.get(), 1, &wc)) != 0; },
                                   kCompletionTimeout)) {
            throw std::runtime_error(std::string("ibv_poll_cq: no completion for a ") + op_name(op) + " of " +
                                     std::to_string(len) + " bytes within 5 s");
        }
        if (n < 0)
            throw std::runtime_error("ibv_poll_cq failed (returned " + std::to_string(n) + ")");
        if (wc.status != IBV_WC_SUCCESS) {
            throw std::runtime_error(std::string(op_name(op)) + " of " + std::to_string(len) +
                                     " bytes completed with error: " + ibv_wc_status_str(wc.status) + " (vendor_err " +
                                     std::to_string(wc.vendor_err) + ")");
        }
        if (wc.wr_id != seq_) {
            throw std::runtime_error("ibv_poll_cq: completion for wr_id " + std::to_string(wc.wr_id) + ", expected " +
                                     std::to_string(seq_));
        }
    }

private:
    Side& client_;
    RemoteBuffer remote_;
    uint64_t seq_ = 0;
};

// One WRITE and one READ of @len bytes whose data must arrive.
void check_data(Side& server, Side& client, Poster& post, size_t len, unsigned seed)
{
    bench::fill_pattern(client.bytes(), len, seed);
    post(IBV_WR_RDMA_WRITE, len);
    if (std::memcmp(client.bytes(), server.bytes(), len) != 0)
        throw std::runtime_error("RDMA WRITE of " + std::to_string(len) + " bytes: the server's buffer differs");
    bench::fill_pattern(server.bytes(), len, seed + 1);
    std::memset(client.bytes(), 0, len);
    post(IBV_WR_RDMA_READ, len);
    if (std::memcmp(client.bytes(), server.bytes(), len) != 0)
        throw std::runtime_error("RDMA READ of " + std::to_string(len) + " bytes: the data read differs");
}

int run(const Args& a)
{
    const auto& opt = a.opt;
    const auto& at = a.at;
    const auto& mode = a.mode;
    const sockaddr_in sin = at.sockaddr();
    const size_t len = *std::max_element(opt.sizes.begin(), opt.sizes.end());

    Side server;
    Side client;
    const RemoteBuffer remote = connect_pair(server, client, sin, len, mode, PairConfig{});
    (void)std::fprintf(stderr, "%s: %s, RC QP %u -> %u via %s:%u, %u+%u iterations, %s polling\n", kProg,
                       ibv_get_device_name(client.id->verbs->device), client.id->qp->qp_num, server.id->qp->qp_num,
                       at.addr.c_str(), at.port, opt.warmup, opt.iters, poll_name(mode));

    Poster post(client, remote);
    unsigned seed = 0;
    for (size_t size : opt.sizes)
        check_data(server, client, post, size, seed += 2);

    bench::print_csv_header();
    for (ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ}) {
        if (!opt.runs(op == IBV_WR_RDMA_WRITE ? bench::Only::write : bench::Only::read))
            continue;
        const std::string label = op_label(op == IBV_WR_RDMA_WRITE ? "write" : "read", mode);
        for (size_t size : opt.sizes) {
            bench::Stats s = bench::measure(opt, [&] { post(op, size); });
            bench::print_csv_row(label.c_str(), size, opt, s);
        }
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "RDMA WRITE/READ latency over one RC connection from the RDMA device that owns IPV4 to "
                          "itself, made with librdmacm; prints CSV on stdout.");
        Args a;
        a.at.add_options(app);
        add_poll(
            app, a.mode,
            "how to wait for a completion: busy (default) polls the CQ in a loop; event sleeps on the CQ's completion "
            "channel (ibv_req_notify_cq, ibv_get_cq_event) and polls after each event; the CSV's ops are then "
            "write-event and read-event");
        bench::add_common(app, a.opt, kMaxSize);
        bench::add_only(app, a.opt);
        return app.run(argc, argv, [&a] { return run(a); });
    });
}
