// SPDX-License-Identifier: MIT
//
// A worker: threads that ask the master for tasks and do them, a thread
// that keeps the lease, and an RPC port on which mappers reserve room in
// this worker's inbox. A job's LMRs (inbox segments, outputs, mappings of
// other workers' segments) live in one JobState that cleanup releases
// once no task of the job is running.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <lite/rpc.hpp>

#include "mapreduce/apps.hpp"
#include "mapreduce/cluster.hpp"
#include "mapreduce/input.hpp"
#include "mapreduce/records.hpp"
#include "protocol.hpp"

namespace mr
{

namespace
{

using Clock = std::chrono::steady_clock;
using wire::Reader;
using wire::Writer;

// Inbox segments grow by doubling up to this (a push larger gets a
// segment of its own size).
constexpr uint64_t kMaxSegment = 256ULL << 20;
constexpr uint64_t kPage = 4096;

// A failure caused by another worker (a push it did not take).
class PeerError : public std::runtime_error
{
public:
    PeerError(uint32_t worker, const std::string& what) : std::runtime_error(what), worker_(worker) {}
    [[nodiscard]] uint32_t worker() const noexcept { return worker_; }

private:
    uint32_t worker_;
};

struct Owner {
    uint32_t worker = 0;
    uint32_t node = 0;
    uint32_t port = 0;
};

struct Chunk {
    uint32_t segment = 0;
    uint64_t offset = 0;
    uint64_t len = 0;
};

struct Segment {
    std::shared_ptr<lite::Lmr> lmr;
    std::string name;
    uint64_t used = 0;
};

// Everything of one job on this worker; guarded by the worker's mu.
struct JobState {
    uint32_t id = 0;
    std::string app;
    apps::App built;
    std::vector<Owner> owners; // partition -> owner
    uint64_t next_segment = 0; // size of the next inbox segment
    std::vector<Segment> inbox;
    std::map<uint32_t, std::vector<Chunk>> chunks;            // partition -> what arrived
    std::map<uint32_t, std::vector<std::string>> local;       // partition -> this worker's own pushes
    std::map<std::string, std::shared_ptr<lite::Lmr>> mapped; // other workers' segments
    std::vector<std::unique_ptr<lite::Lmr>> outputs;
    unsigned active = 0; // tasks of this job running
    bool closing = false;
};

class Worker
{
public:
    Worker(const lite::Session& s, const WorkerConfig& cfg) : s_(s), cfg_(cfg) {}

    // A task of a job running: counted, so that cleanup waits for it.
    class Active
    {
    public:
        Active(Worker& w, std::shared_ptr<JobState> job) : w_(w), job_(std::move(job)) {}
        Active(const Active&) = delete;
        Active& operator=(const Active&) = delete;
        Active(Active&&) = delete;
        Active& operator=(Active&&) = delete;
        ~Active() { w_.leave(job_); }
        [[nodiscard]] const std::shared_ptr<JobState>& job() const noexcept { return job_; }

    private:
        Worker& w_;
        std::shared_ptr<JobState> job_;
    };

    void run();

private:
    void join_master();
    void task_loop();
    void heartbeat();
    void reply_reserve(std::span<const std::byte> req, std::vector<std::byte>& reply);
    Chunk reserve_local(uint32_t job, uint32_t partition, uint64_t bytes, std::string& name);

    void setup(uint32_t job_id, Reader& r, Writer& rep);
    void map_task(uint32_t job_id, Reader& r, Writer& rep);
    void reduce_task(uint32_t job_id, Reader& r, Writer& rep);
    void cleanup(uint32_t job_id, Reader& r, Writer& rep);
    void push(JobState& job, uint32_t partition, std::string data);
    std::shared_ptr<JobState> enter(uint32_t job);
    void leave(const std::shared_ptr<JobState>& job);
    [[nodiscard]] std::string prefix(uint32_t job) const;
    Reader call_master(const Writer& w, std::vector<std::byte>& buf, std::chrono::milliseconds timeout) const;
    void stop(const std::string& why);

    const lite::Session& s_;
    WorkerConfig cfg_;
    uint32_t id_ = 0;
    uint32_t port_ = 0;
    std::chrono::milliseconds lease_{4000};

    std::mutex mu_;
    std::condition_variable cv_;
    std::shared_ptr<JobState> job_; // guarded by mu_
    std::string fatal_;             // guarded by mu_
    std::atomic<bool> stop_{false};
};

std::string Worker::prefix(uint32_t job) const
{
    // Unique among the cluster's shares: the master's node, the worker's
    // node and pid, the job.
    return "mr." + std::to_string(cfg_.master_node) + "." + std::to_string(s_.node_id()) + "." +
           std::to_string(getpid()) + "." + std::to_string(job);
}

void Worker::stop(const std::string& why)
{
    {
        const std::lock_guard lock(mu_);
        if (fatal_.empty() && !why.empty()) {
            fatal_ = why;
        }
    }
    stop_ = true;
    cv_.notify_all();
}

Reader Worker::call_master(const Writer& w, std::vector<std::byte>& buf, std::chrono::milliseconds timeout) const
{
    buf.resize(LITE_RPC_MAX);
    const size_t n = s_.call(cfg_.master_node, cfg_.master_port, w.bytes(), buf, timeout);
    buf.resize(n);
    Reader r(buf);
    const uint32_t status = r.u32();
    if (status != 0) {
        throw lite::Error(static_cast<int>(status), "the master refused: " + r.str());
    }
    return r;
}

void Worker::join_master()
{
    Writer w;
    w.op(wire::MasterOp::hello).u32(s_.node_id()).u32(port_).u32(cfg_.threads).u32(static_cast<uint32_t>(getpid()));
    std::vector<std::byte> buf;
    const auto deadline = Clock::now() + cfg_.join_timeout;
    for (;;) {
        try {
            Reader r = call_master(w, buf, std::chrono::milliseconds(2000));
            id_ = r.u32();
            lease_ = std::chrono::milliseconds(r.u32());
            r.end();
            return;
        } catch (const lite::Error& e) {
            // Not up yet: nobody serves the port, or its node has not joined.
            if ((e.errnum() != ENOENT && e.errnum() != ENOTCONN && e.errnum() != ETIMEDOUT) ||
                Clock::now() > deadline) {
                throw;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

void Worker::heartbeat()
{
    Writer w;
    w.op(wire::MasterOp::beat).u32(id_);
    std::vector<std::byte> buf;
    auto last_ok = Clock::now();
    std::unique_lock lock(mu_);
    while (!stop_) {
        cv_.wait_for(lock, lease_ / 4);
        if (stop_) {
            break;
        }
        lock.unlock();
        std::string error;
        try {
            call_master(w, buf, lease_ / 2).end();
            last_ok = Clock::now();
        } catch (const std::exception& e) {
            error = e.what();
        }
        lock.lock();
        if (!error.empty() && Clock::now() - last_ok > lease_) {
            lock.unlock();
            stop("worker " + std::to_string(id_) + ": the master is gone: " + error);
            lock.lock();
        }
    }
}

std::shared_ptr<JobState> Worker::enter(uint32_t job)
{
    const std::lock_guard lock(mu_);
    if (!job_ || job_->id != job || job_->closing) {
        throw std::runtime_error("job " + std::to_string(job) + " is not open on this worker");
    }
    job_->active++;
    return job_;
}

void Worker::leave(const std::shared_ptr<JobState>& job)
{
    const std::lock_guard lock(mu_);
    job->active--;
    cv_.notify_all();
}

void Worker::setup(uint32_t job_id, Reader& r, Writer& rep)
{
    auto job = std::make_shared<JobState>();
    job->id = job_id;
    job->app = r.str();
    const std::string params = r.str();
    job->next_segment = std::min(kMaxSegment, (r.u64() + kPage - 1) / kPage * kPage);
    const uint32_t n = r.u32();
    for (uint32_t i = 0; i < n; i++) {
        Owner o;
        o.worker = r.u32();
        o.node = r.u32();
        o.port = r.u32();
        job->owners.push_back(o);
    }
    r.end();
    rep.op(wire::Report::joined).u32(job->id);
    job->built = apps::make_app(job->app, params);
    const std::lock_guard lock(mu_);
    job_ = std::move(job);
}

Chunk Worker::reserve_local(uint32_t job_id, uint32_t partition, uint64_t bytes, std::string& name)
{
    const std::lock_guard lock(mu_);
    if (!job_ || job_->id != job_id || job_->closing) {
        throw std::runtime_error("job " + std::to_string(job_id) + " is not open on worker " + std::to_string(id_));
    }
    JobState& job = *job_;
    if (partition >= job.owners.size() || job.owners[partition].worker != id_) {
        throw std::runtime_error("partition " + std::to_string(partition) + " is not worker " + std::to_string(id_) +
                                 "'s");
    }
    if (bytes == 0 || bytes > LITE_LMR_MAX) {
        throw std::runtime_error("a push of " + std::to_string(bytes) + " bytes");
    }
    if (job.inbox.empty() || job.inbox.back().lmr->size() - job.inbox.back().used < bytes) {
        // A new segment: the next size, or the push's own if larger.
        const uint64_t size = std::max(job.next_segment, (bytes + kPage - 1) / kPage * kPage);
        job.next_segment = std::min(kMaxSegment, job.next_segment * 2);
        Segment seg;
        seg.lmr = std::make_shared<lite::Lmr>(s_.alloc(size));
        seg.name = prefix(job.id) + ".s" + std::to_string(job.inbox.size());
        seg.lmr->share(seg.name, LITE_PERM_WRITE);
        job.inbox.push_back(std::move(seg));
    }
    auto& seg = job.inbox.back();
    const Chunk c{static_cast<uint32_t>(job.inbox.size() - 1), seg.used, bytes};
    seg.used += bytes;
    job.chunks[partition].push_back(c);
    name = seg.name;
    return c;
}

void Worker::reply_reserve(std::span<const std::byte> req, std::vector<std::byte>& reply)
{
    Writer w;
    try {
        Reader r(req);
        if (r.op<wire::WorkerOp>() != wire::WorkerOp::reserve) {
            throw wire::BadMessage("unknown request");
        }
        const uint32_t job = r.u32();
        const uint32_t partition = r.u32();
        const uint64_t bytes = r.u64();
        r.end();
        std::string name;
        const Chunk c = reserve_local(job, partition, bytes, name);
        w.u32(0).str(name).u64(c.offset);
    } catch (const lite::Error& e) {
        w = Writer();
        w.u32(static_cast<uint32_t>(e.errnum())).str(e.what());
    } catch (const std::exception& e) {
        w = Writer();
        w.u32(EINVAL).str(e.what());
    }
    const auto b = w.bytes();
    reply.assign(b.begin(), b.end());
}

void Worker::push(JobState& job, uint32_t partition, std::string data)
{
    const Owner& o = job.owners.at(partition);
    if (o.worker == id_) {
        // The reducer is this process: no copy through the NIC.
        const std::lock_guard lock(mu_);
        job.local[partition].push_back(std::move(data));
        return;
    }
    std::string name;
    uint64_t offset = 0;
    std::shared_ptr<lite::Lmr> dst;
    {
        const std::string who = "worker " + std::to_string(o.worker) + " (node " + std::to_string(o.node) + ")";
        try {
            Writer w;
            w.op(wire::WorkerOp::reserve).u32(job.id).u32(partition).u64(data.size());
            std::vector<std::byte> buf(256);
            buf.resize(s_.call(o.node, o.port, w.bytes(), buf, lease_));
            Reader r(buf);
            const uint32_t status = r.u32();
            if (status != 0) {
                throw lite::Error(static_cast<int>(status), r.str());
            }
            name = r.str();
            offset = r.u64();
            r.end();
            {
                const std::lock_guard lock(mu_);
                dst = job.mapped[name];
            }
            if (!dst) {
                auto m = std::make_shared<lite::Lmr>(s_.map(name, LITE_PERM_WRITE));
                const std::lock_guard lock(mu_);
                auto& slot = job.mapped[name];
                if (!slot) {
                    slot = std::move(m);
                }
                dst = slot;
            }
            if (offset > dst->size() || dst->size() - offset < data.size()) {
                throw std::runtime_error("it reserved bytes past the end of its segment " + name);
            }
            dst->write(offset, std::as_bytes(std::span(data)));
        } catch (const std::exception& e) {
            throw PeerError(o.worker, "pushing " + std::to_string(data.size()) + " bytes of partition " +
                                          std::to_string(partition) + " to " + who + ": " + e.what());
        }
    }
}

void Worker::map_task(uint32_t job_id, Reader& r, Writer& rep)
{
    const uint32_t task = r.u32();
    const std::string file = r.str();
    const uint64_t off = r.u64();
    const uint64_t len = r.u64();
    r.end();
    const Active active(*this, enter(job_id));
    const auto& job = active.job();
    const auto t0 = Clock::now();
    uint64_t start = 0;
    const std::string data = read_split(file, off, len, job->built.binary, start);
    Partitions parts(static_cast<uint32_t>(job->owners.size()), job->built.job.combine);
    PartitionEmitter out(parts);
    job->built.job.map(Split{data, file, start}, out);
    const auto t1 = Clock::now();
    uint64_t pushed = 0;
    for (uint32_t p = 0; p < parts.size(); p++) {
        std::string d = parts.take(p);
        if (!d.empty()) {
            pushed += job->owners[p].worker != id_ ? d.size() : 0;
            push(*job, p, std::move(d));
        }
    }
    const auto t2 = Clock::now();
    rep.op(wire::Report::mapped).u32(job_id).u32(task).u64(data.size()).u64(pushed);
    rep.u64(static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count()));
    rep.u64(static_cast<uint64_t>(std::chrono::nanoseconds(t2 - t1).count()));
}

void Worker::reduce_task(uint32_t job_id, Reader& r, Writer& rep)
{
    const uint32_t p = r.u32();
    r.end();
    const Active active(*this, enter(job_id));
    const auto& job = active.job();
    const auto t0 = Clock::now();
    std::vector<Chunk> chunks;
    std::vector<std::shared_ptr<lite::Lmr>> segs;
    std::vector<std::string> inputs;
    {
        const std::lock_guard lock(mu_);
        if (auto it = job->chunks.find(p); it != job->chunks.end()) {
            chunks = it->second;
        }
        if (auto it = job->local.find(p); it != job->local.end()) {
            inputs = std::move(it->second);
            job->local.erase(it);
        }
        for (const auto& seg : job->inbox) {
            segs.push_back(seg.lmr);
        }
    }
    for (const auto& c : chunks) {
        std::string buf(c.len, '\0');
        segs.at(c.segment)->read(c.offset, std::as_writable_bytes(std::span(buf)));
        inputs.push_back(std::move(buf));
    }
    const auto reduced = reduce_partitions(job->built.job, inputs);
    std::string out;
    for (const auto& [k, v] : reduced) {
        put_record(out, k, v);
    }
    std::string name;
    if (!out.empty()) {
        auto lmr = std::make_unique<lite::Lmr>(s_.alloc(out.size()));
        lmr->write(0, std::as_bytes(std::span(out)));
        name = prefix(job_id) + ".o" + std::to_string(p);
        lmr->share(name, LITE_PERM_READ);
        const std::lock_guard lock(mu_);
        job->outputs.push_back(std::move(lmr));
    }
    rep.op(wire::Report::reduced).u32(job_id).u32(p).str(name).u64(out.size());
    rep.u64(static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - t0).count()));
}

void Worker::cleanup(uint32_t job_id, Reader& r, Writer& rep)
{
    r.end();
    std::shared_ptr<JobState> job;
    {
        std::unique_lock lock(mu_);
        if (job_ && job_->id == job_id) {
            job = job_;
            job->closing = true; // no new task or push of it starts
            // Tasks still running end in bounded time (each RPC has the
            // lease as its timeout); the wait has a bound of its own too.
            // The tasks keep the JobState alive until they end.
            cv_.wait_for(lock, 2 * lease_, [&] { return job->active == 0; });
            if (job_ == job) {
                job_.reset();
            }
        }
    }
    job.reset(); // frees and unmaps the job's LMRs once no task holds them
    rep.op(wire::Report::cleaned).u32(job_id);
}

void Worker::task_loop()
{
    std::vector<std::byte> buf;
    Writer report;
    report.op(wire::Report::none);
    while (!stop_) {
        Writer next;
        next.op(wire::MasterOp::next).u32(id_).append(report);
        std::optional<Reader> r;
        try {
            r.emplace(call_master(next, buf, lease_));
        } catch (const std::exception& e) {
            // After another thread heard "exit", the master stops serving:
            // a call that fails then is no error.
            if (!stop_) {
                stop("worker " + std::to_string(id_) + ": asking the master for work: " + e.what());
            }
            return;
        }
        report = Writer();
        uint32_t job_id = 0;
        try {
            const auto task = r->op<wire::Task>();
            if (task == wire::Task::exit) {
                stop("");
                return;
            }
            if (task == wire::Task::wait) {
                // The master may ask for a pause (its handlers are busy).
                const std::chrono::milliseconds pause(r->u32());
                report.op(wire::Report::none);
                std::unique_lock lock(mu_);
                cv_.wait_for(lock, pause, [&] { return stop_.load(); });
                continue;
            }
            job_id = r->u32();
            switch (task) {
            case wire::Task::job:
                setup(job_id, *r, report);
                break;
            case wire::Task::map:
                map_task(job_id, *r, report);
                break;
            case wire::Task::reduce:
                reduce_task(job_id, *r, report);
                break;
            case wire::Task::cleanup:
                cleanup(job_id, *r, report);
                break;
            case wire::Task::exit:
            case wire::Task::wait:
                break;
            default:
                throw wire::BadMessage("unknown task " + std::to_string(static_cast<uint32_t>(task)));
            }
        } catch (const std::exception& e) {
            const auto* peer = dynamic_cast<const PeerError*>(&e);
            report = Writer();
            report.op(wire::Report::failed).u32(job_id).u32(peer != nullptr ? peer->worker() : wire::kNoWorker);
            report.str(e.what());
        }
    }
}

void Worker::run()
{
    if (cfg_.threads == 0) {
        throw std::invalid_argument("mapreduce: a worker needs at least one thread");
    }
    // The worker's own port: the first free one from port_base.
    std::optional<lite::Server> server;
    for (uint32_t p = cfg_.port_base; !server; p++) {
        try {
            server.emplace(
                s_, p,
                [this](const lite::Incoming& /*in*/, std::span<const std::byte> req, std::vector<std::byte>& reply) {
                    reply_reserve(req, reply);
                    return reply.size();
                },
                2);
            port_ = p;
        } catch (const lite::Error& e) {
            if (e.errnum() != EADDRINUSE || p >= cfg_.port_base + 256) {
                throw;
            }
        }
    }
    join_master();
    std::thread beat([this] { heartbeat(); });
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < cfg_.threads; t++) {
        threads.emplace_back([this] { task_loop(); });
    }
    for (auto& t : threads) {
        t.join();
    }
    stop("");
    beat.join();
    server->stop();
    {
        const std::lock_guard lock(mu_);
        job_.reset();
    }
    if (!fatal_.empty()) {
        throw std::runtime_error(fatal_);
    }
}

} // namespace

void run_worker(const lite::Session& session, const WorkerConfig& cfg)
{
    Worker w(session, cfg);
    w.run();
}

} // namespace mr
