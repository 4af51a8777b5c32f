// SPDX-License-Identifier: MIT
//
// async-tput: throughput of remote writes (or reads) of LEN bytes with QD
// operations in flight, for each queue depth in QDS (see bench.sh):
//
//   native      RDMA WRITE/READ on one RC QP from the device to itself
//               (as many READs in flight as the device allows, up to QD),
//               QD work requests outstanding, each completion reposted
//               (--poll busy or event)
//   lite-ring   lite::Ring (io_uring, lite/async.hpp): QD operations in
//               flight, each completion's callback queues the next, batches
//               submitted with one system call
//   lite-ring-poll  the same on a polled Ring (lite::Completion::polled,
//               IORING_SETUP_IOPOLL: the waiting thread polls, no wake-up)
//   lite-sync   QD threads, each calling LITE_write/LITE_read (one ioctl
//               per operation, waiting for it) on one session
//
// The lite modes write into (read from) an LMR on node NODE from instance
// INSTANCE; every operation targets the next LEN-byte slot of a 4 MiB
// region, so that operations in flight never overlap. Data is checked once
// per mode before the timed runs (a write read back, compared).
//
// Prints CSV on stdout: mode,op,qd,len,ops,seconds,ops_per_s
// exit 0 ok, 1 error, 2 usage.
#include "lat.hpp"
#include "lite_util.hpp"
#include "pair.hpp"
#include "verbs.hpp"

#include <lite/async.hpp>
#include <lite/lite.h>
#include <lite/session.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace
{

using namespace bench::verbs;
using Clock = std::chrono::steady_clock;

constexpr const char* kProg = "async-tput";
constexpr size_t kRegion = size_t{4} << 20;
constexpr unsigned kMaxQd = 256;

struct Options {
    std::string mode;
    bool write = true;
    std::vector<unsigned> qds{1, 2, 4, 8, 16, 32, 64};
    size_t len = 64;
    double seconds = 1;
    unsigned instance = 0;
    uint32_t node = 2;
    PollMode poll = PollMode::busy;
};

void print_row(const Options& o, const char* mode, unsigned qd, uint64_t ops, double secs)
{
    std::printf("%s,%s,%u,%zu,%llu,%.3f,%.1f\n", mode, o.write ? "write" : "read", qd, o.len,
                static_cast<unsigned long long>(ops), secs, static_cast<double>(ops) / secs);
    (void)std::fflush(stdout);
}

// ------------------------------------------------------------ native

void run_native(const Options& o, const Target& at)
{
    unsigned max_qd = *std::max_element(o.qds.begin(), o.qds.end());
    PairConfig cfg;
    cfg.send_depth = max_qd;
    cfg.rd_atomic = static_cast<uint8_t>(std::min(max_qd, 255U)); // READs in flight: as many as the device allows
    Side server;
    Side client;
    RemoteBuffer remote = connect_pair(server, client, at.sockaddr(), kRegion, o.poll, cfg);
    const ibv_wr_opcode opcode = o.write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    const size_t slots = kRegion / o.len;
    uint64_t next = 0;

    // One signaled WR of @op between the client's and the server's buffers
    // at @off.
    auto post_at = [&](ibv_wr_opcode op, size_t off) {
        ibv_sge sge{reinterpret_cast<uintptr_t>(client.bytes() + off), static_cast<uint32_t>(o.len), client.mr->lkey};
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.opcode = op;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = remote.addr + off;
        wr.wr.rdma.rkey = remote.rkey;
        if (int rc = ibv_post_send(client.id->qp, &wr, &bad); rc != 0)
            throw verb_error("ibv_post_send", rc);
    };
    auto post = [&]() { post_at(opcode, (next++ % slots) * o.len); };

    // Check once: a write lands.
    bench::fill_pattern(client.bytes(), o.len, 7);
    post_at(IBV_WR_RDMA_WRITE, 0);
    ibv_wc wc{};
    bool got = client.cq.wait_until(
        [&] {
            int n = ibv_poll_cq(client.cq.get(), 1, &wc);
            if (n < 0)
                throw verb_error("ibv_poll_cq", -n);
            return n == 1;
        },
        std::chrono::seconds(10));
    if (!got)
        throw std::runtime_error("no completion within 10 s");
    if (wc.status != IBV_WC_SUCCESS)
        throw std::runtime_error(std::string("work request failed: ") + ibv_wc_status_str(wc.status));
    if (std::memcmp(server.bytes(), client.bytes(), o.len) != 0)
        throw std::runtime_error("RDMA WRITE: the data did not arrive");

    const std::string label = std::string("native_") + poll_name(o.poll);
    std::vector<ibv_wc> wcs(max_qd);
    for (unsigned qd : o.qds) {
        for (unsigned i = 0; i < qd; i++)
            post();
        uint64_t done = 0;
        unsigned outstanding = qd;
        const auto start = Clock::now();
        const auto end = start + std::chrono::duration<double>(o.seconds);
        bool timing = true;
        while (outstanding > 0) {
            int n = 0;
            bool got = client.cq.wait_until(
                [&] {
                    n = ibv_poll_cq(client.cq.get(), static_cast<int>(outstanding), wcs.data());
                    if (n < 0)
                        throw verb_error("ibv_poll_cq", -n);
                    return n > 0;
                },
                std::chrono::seconds(10));
            if (!got)
                throw std::runtime_error("no completion within 10 s at queue depth " + std::to_string(qd));
            for (int i = 0; i < n; i++) {
                if (wcs[i].status != IBV_WC_SUCCESS)
                    throw std::runtime_error(std::string("work request failed: ") + ibv_wc_status_str(wcs[i].status));
            }
            outstanding -= n;
            if (timing) {
                done += n;
                if (Clock::now() >= end) {
                    timing = false;
                    print_row(o, label.c_str(), qd, done, std::chrono::duration<double>(Clock::now() - start).count());
                    continue;
                }
                for (int i = 0; i < n; i++, outstanding++)
                    post();
            }
        }
    }
}

// ------------------------------------------------------------ lite

// A write read back through the synchronous path: the data arrived.
void check_lite(const lite::Lmr& lmr, size_t len)
{
    std::vector<std::byte> w(len), r(len);
    bench::fill_pattern(reinterpret_cast<uint8_t*>(w.data()), len, 11);
    lmr.write(0, std::span<const std::byte>(w));
    lmr.read(0, std::span<std::byte>(r));
    if (w != r)
        throw std::runtime_error("lite write/read of " + std::to_string(len) + " bytes: the data differs");
}

void run_lite_ring(const Options& o, lite::Completion how)
{
    auto s = lite::Session::open(o.instance);
    auto lmr = s.alloc(kRegion, o.node);
    check_lite(lmr, o.len);
    unsigned max_qd = *std::max_element(o.qds.begin(), o.qds.end());
    lite::Ring ring(s, max_qd, how);
    std::vector<std::byte> buf(kRegion);
    const size_t slots = kRegion / o.len;
    uint64_t next = 0, done = 0;
    bool timing = false;
    std::function<void(const lite::Result&)> again;
    auto issue = [&]() {
        size_t off = (next++ % slots) * o.len;
        auto cb = [&again](const lite::Result& r) { again(r); }; // no allocation
        if (o.write) {
            ring.write(lmr, off, std::span<const std::byte>(buf).subspan(off, o.len), cb);
        } else {
            ring.read(lmr, off, std::span<std::byte>(buf).subspan(off, o.len), cb);
        }
    };
    again = [&](const lite::Result& r) {
        (void)r.value(); // throws lite::Error if it failed
        done++;
        if (timing)
            issue();
    };
    for (unsigned qd : o.qds) {
        done = 0;
        timing = true;
        for (unsigned i = 0; i < qd; i++)
            issue();
        const auto start = Clock::now();
        const auto end = start + std::chrono::duration<double>(o.seconds);
        while (Clock::now() < end)
            ring.wait(1);
        timing = false;
        uint64_t counted = done;
        double secs = std::chrono::duration<double>(Clock::now() - start).count();
        ring.drain();
        print_row(o, how == lite::Completion::polled ? "lite_ring_poll" : "lite_ring", qd, counted, secs);
    }
}

void run_lite_sync(const Options& o)
{
    auto s = lite::Session::open(o.instance);
    auto lmr = s.alloc(kRegion, o.node);
    check_lite(lmr, o.len);
    const size_t slots = kRegion / o.len;
    for (unsigned qd : o.qds) {
        std::atomic<bool> stop{false};
        std::atomic<uint64_t> done{0};
        std::atomic<int> err{0};
        std::vector<std::thread> ts;
        const auto start = Clock::now();
        for (unsigned t = 0; t < qd; t++) {
            ts.emplace_back([&, t] {
                std::vector<std::byte> buf(o.len);
                uint64_t n = 0;
                for (size_t k = t; !stop.load(std::memory_order_relaxed); k += qd) {
                    uint64_t off = (k % slots) * o.len;
                    int rc = o.write ? LITE_write(s.get(), lmr.handle(), off, buf.data(), o.len)
                                     : LITE_read(s.get(), lmr.handle(), off, buf.data(), o.len);
                    if (rc < 0) {
                        err.store(rc);
                        break;
                    }
                    n++;
                }
                done += n;
            });
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
        stop = true;
        for (auto& t : ts)
            t.join();
        if (err.load() != 0)
            throw bench::lite_error(o.write ? "LITE_write" : "LITE_read", err.load());
        print_row(o, "lite_sync", qd, done.load(), std::chrono::duration<double>(Clock::now() - start).count());
    }
}

int run(const Options& o, const Target& at)
{
    std::printf("mode,op,qd,len,ops,seconds,ops_per_s\n");
    if (o.mode == "native") {
        run_native(o, at);
    } else if (o.mode == "lite-ring") {
        run_lite_ring(o, lite::Completion::events);
    } else if (o.mode == "lite-ring-poll") {
        run_lite_ring(o, lite::Completion::polled);
    } else {
        run_lite_sync(o);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard(kProg, [&] {
        lite_cli::App app(kProg,
                          "Throughput with operations in flight, by queue depth: lite over io_uring (lite::Ring, "
                          "completions by events or polled), lite over one blocking call per thread, native verbs; "
                          "CSV on stdout.");
        Options o;
        Target at(18640);
        lite_cli::add_choice(app, "--mode", o.mode,
                             {{"native", "native"},
                              {"lite-ring", "lite-ring"},
                              {"lite-ring-poll", "lite-ring-poll"},
                              {"lite-sync", "lite-sync"}},
                             "what is measured")
            ->required();
        lite_cli::add_choice(app, "--op", o.write, {{"write", true}, {"read", false}}, "operation (default write)");
        lite_cli::add_list(app, "--qd", o.qds, 1, kMaxQd, "comma-separated queue depths (default 1,2,4,8,16,32,64)");
        lite_cli::add_number(app, "--len", o.len, 1, 65536, "bytes per operation (default 64)");
        lite_cli::add_number(app, "--seconds", o.seconds, 1, 600, "time per queue depth (default 1)");
        lite_cli::add_instance(app, o.instance, "lite modes: the local node instance (default 0)");
        lite_cli::add_node(app, o.node, false, "lite modes: the node holding the LMR (default 2)");
        add_poll(app, o.poll, "native: how completions are waited for (default busy)");
        at.add_options(app); // native: where the loopback connection listens
        return app.run(argc, argv, [&o, &at] { return run(o, at); });
    });
}
