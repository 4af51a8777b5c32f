// SPDX-License-Identifier: MIT
//
// The master: hands out tasks to workers that ask (NEXT), watches their
// leases, reads and merges the reducers' outputs. All state is under one
// mutex; RPC handler threads long-poll on a condition variable so that a
// worker waiting for work hears of it at once.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <queue>
#include <sstream>
#include <unistd.h>

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

// How long a NEXT waits in the master for a task before answering "wait".
constexpr std::chrono::milliseconds kLongPoll{200};
// Handler threads. At most all but kFreeHandlers of them long-poll, so
// that HELLO and BEAT never queue behind NEXTs; a NEXT that finds them
// taken is answered "wait kBusyPause" at once.
constexpr unsigned kServerThreads = 16;
constexpr unsigned kFreeHandlers = 4;
constexpr std::chrono::milliseconds kBusyPause{50};

enum class Phase { idle, setup, map, reduce, merge, cleanup, done };

const char* phase_name(Phase p)
{
    switch (p) {
    case Phase::idle:
        return "idle";
    case Phase::setup:
        return "setup";
    case Phase::map:
        return "map";
    case Phase::reduce:
        return "reduce";
    case Phase::merge:
        return "merge";
    case Phase::cleanup:
        return "cleanup";
    case Phase::done:
        return "done";
    }
    return "?";
}

enum class State { pending, running, done };

struct Worker {
    WorkerInfo info;
    Clock::time_point last_seen;
    bool in_job = false;
    bool joining = false;
    bool joined = false;
    bool cleaning = false;
    bool cleaned = false;
    unsigned exits = 0; // NEXTs answered "exit"
};

struct MapTask {
    std::string file;
    uint64_t offset = 0;
    uint64_t len = 0;
    State state = State::pending;
    uint32_t worker = 0;
};

struct Partition {
    uint32_t owner = 0; // worker id
    State state = State::pending;
    std::string out_name;
    uint64_t out_size = 0;
};

std::string seconds(Clock::duration d)
{
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << std::chrono::duration<double>(d).count() << " s";
    return s.str();
}

std::string describe(const WorkerInfo& w)
{
    return "worker " + std::to_string(w.id) + " (node " + std::to_string(w.node) + ", pid " + std::to_string(w.pid) +
           ")";
}

// Every regular file of @inputs with its size; each must be readable.
// Throws std::invalid_argument naming the input.
std::vector<std::pair<std::string, uint64_t>> input_files(const std::vector<std::string>& inputs)
{
    std::vector<std::pair<std::string, uint64_t>> out;
    for (auto& name : list_inputs(inputs)) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(name, ec);
        if (ec || access(name.c_str(), R_OK) != 0) {
            throw std::invalid_argument("mapreduce: input '" + name + "' is not readable");
        }
        out.emplace_back(std::move(name), size);
    }
    return out;
}

// Merges @parts, each sorted by @less and with keys no other part has.
std::vector<Pair> merge_sorted(std::vector<std::vector<Pair>> parts,
                               const std::function<bool(std::string_view, std::string_view)>& less)
{
    using Head = std::pair<size_t, size_t>; // part, index
    auto greater = [&](const Head& a, const Head& b) {
        return less(parts[b.first][b.second].first, parts[a.first][a.second].first);
    };
    std::priority_queue<Head, std::vector<Head>, decltype(greater)> heads(greater);
    size_t total = 0;
    for (size_t p = 0; p < parts.size(); p++) {
        total += parts[p].size();
        if (!parts[p].empty()) {
            heads.emplace(p, 0);
        }
    }
    std::vector<Pair> out;
    out.reserve(total);
    while (!heads.empty()) {
        const auto [p, i] = heads.top();
        heads.pop();
        out.push_back(std::move(parts[p][i]));
        if (i + 1 < parts[p].size()) {
            heads.emplace(p, i + 1);
        }
    }
    return out;
}

} // namespace

struct Master::Impl {
    Impl(const lite::Session& s, MasterConfig c) : session(s), cfg(c) {}

    const lite::Session& session;
    const MasterConfig cfg;

    mutable std::mutex mu;
    std::condition_variable cv;
    std::vector<Worker> workers; // guarded by mu; index = id - 1
    bool shutting_down = false;  // guarded by mu
    unsigned polling = 0;        // handlers in a long poll; guarded by mu
    // The job, guarded by mu.
    uint32_t job_id = 0;
    Phase phase = Phase::idle;
    JobSpec spec;
    std::vector<MapTask> tasks;
    std::vector<Partition> parts;
    std::string failure;
    std::array<Clock::time_point, 7> entered{}; // when the job entered each Phase
    uint64_t inbox_hint = 0;                    // first inbox size a worker opens
    JobStats stats;
    uint32_t maps_done = 0;

    std::unique_ptr<lite::Server> server; // started last, stopped first

    size_t handle(std::span<const std::byte> req, std::vector<std::byte>& reply);
    void hello(Reader& r, Writer& w);
    void next(Reader& r, Writer& w, std::unique_lock<std::mutex>& lock);
    void report(Worker& wk, Reader& r);
    bool pick(Worker& wk, Writer& w);
    void fail(const std::string& why);
    void check_leases(Clock::time_point now);
    void advance();
    void enter(Phase p);
    Worker* find(uint32_t id);
    std::vector<Pair> merge(const Job& job);
};

Worker* Master::Impl::find(uint32_t id)
{
    if (id == 0 || id > workers.size()) {
        return nullptr;
    }
    return &workers[id - 1];
}

size_t Master::Impl::handle(std::span<const std::byte> req, std::vector<std::byte>& reply)
{
    Writer w;
    try {
        Reader r(req);
        std::unique_lock lock(mu);
        switch (r.op<wire::MasterOp>()) {
        case wire::MasterOp::hello:
            hello(r, w);
            break;
        case wire::MasterOp::next:
            next(r, w, lock);
            break;
        case wire::MasterOp::beat: {
            Worker* wk = find(r.u32());
            r.end();
            if (wk == nullptr || !wk->info.alive) {
                w.u32(ESRCH).str("the master does not know this worker (declared dead?)");
            } else {
                wk->last_seen = Clock::now();
                w.u32(0);
            }
            break;
        }
        default:
            w.u32(EINVAL).str("unknown request");
        }
    } catch (const std::exception& e) {
        w = Writer();
        w.u32(EINVAL).str(e.what());
    }
    const auto b = w.bytes();
    reply.assign(b.begin(), b.end());
    return reply.size();
}

void Master::Impl::hello(Reader& r, Writer& w)
{
    Worker wk;
    wk.info.node = r.u32();
    wk.info.port = r.u32();
    wk.info.threads = std::max(1U, r.u32());
    wk.info.pid = r.u32();
    r.end();
    for (auto& old : workers) {
        // A HELLO retried after its reply was lost: the same worker.
        if (old.info.alive && old.info.node == wk.info.node && old.info.pid == wk.info.pid &&
            old.info.port == wk.info.port) {
            old.last_seen = Clock::now();
            w.u32(0).u32(old.info.id).u32(static_cast<uint32_t>(cfg.lease.count()));
            return;
        }
    }
    wk.info.id = static_cast<uint32_t>(workers.size() + 1);
    wk.info.alive = true;
    wk.last_seen = Clock::now();
    workers.push_back(wk);
    cv.notify_all();
    w.u32(0).u32(wk.info.id).u32(static_cast<uint32_t>(cfg.lease.count()));
}

void Master::Impl::next(Reader& r, Writer& w, std::unique_lock<std::mutex>& lock)
{
    const uint32_t id = r.u32();
    Worker* wk = find(id);
    if (wk == nullptr || !wk->info.alive) {
        w.u32(ESRCH).str("the master does not know this worker (declared dead?)");
        return;
    }
    wk->last_seen = Clock::now();
    report(*wk, r);
    r.end();
    Writer task;
    task.u32(0);
    if (pick(*find(id), task)) {
        w = std::move(task);
        return;
    }
    if (polling + kFreeHandlers >= kServerThreads) {
        task.op(wire::Task::wait).u32(static_cast<uint32_t>(kBusyPause.count()));
        w = std::move(task);
        return;
    }
    // Long poll: answer as soon as there is a task, or "wait" (no pause).
    polling++;
    const auto deadline = Clock::now() + kLongPoll;
    bool got = false;
    while (!(got = pick(*find(id), task))) {
        if (cv.wait_until(lock, deadline) == std::cv_status::timeout) {
            break;
        }
    }
    polling--;
    if (!got) {
        task.op(wire::Task::wait).u32(0);
    }
    w = std::move(task);
}

void Master::Impl::report(Worker& wk, Reader& r)
{
    const auto kind = r.op<wire::Report>();
    if (kind == wire::Report::none) {
        return;
    }
    const uint32_t job = r.u32();
    const bool current = job == job_id && wk.in_job;
    switch (kind) {
    case wire::Report::joined:
        if (current) {
            wk.joined = true;
        }
        break;
    case wire::Report::mapped: {
        const uint32_t t = r.u32();
        const uint64_t in = r.u64();
        const uint64_t shuffled = r.u64();
        const std::chrono::nanoseconds map_ns(r.u64());
        const std::chrono::nanoseconds push_ns(r.u64());
        if (current && t < tasks.size() && tasks[t].state == State::running && tasks[t].worker == wk.info.id) {
            tasks[t].state = State::done;
            maps_done++;
            stats.input_bytes += in;
            stats.shuffle_bytes += shuffled;
            stats.map_cpu += map_ns;
            stats.push += push_ns;
        }
        break;
    }
    case wire::Report::reduced: {
        const uint32_t p = r.u32();
        std::string name = r.str();
        const uint64_t size = r.u64();
        const std::chrono::nanoseconds ns(r.u64());
        if (current && p < parts.size() && parts[p].state == State::running && parts[p].owner == wk.info.id) {
            parts[p].state = State::done;
            parts[p].out_name = std::move(name);
            parts[p].out_size = size;
            stats.reduce_cpu += ns;
            stats.output_bytes += size;
        }
        break;
    }
    case wire::Report::cleaned:
        if (current) {
            wk.cleaned = true;
        }
        break;
    case wire::Report::failed: {
        const uint32_t blame = r.u32();
        const std::string what = r.str();
        if (current) {
            const Worker* b = find(blame);
            if (b != nullptr) {
                fail(describe(b->info) + " is gone or unreachable in the " + phase_name(phase) +
                     " phase: " + describe(wk.info) + " reports: " + what);
            } else {
                fail(describe(wk.info) + " failed in the " + phase_name(phase) + " phase: " + what);
            }
        }
        break;
    }
    default:
        throw wire::BadMessage("mapreduce: unknown report " + std::to_string(static_cast<uint32_t>(kind)));
    }
    advance();
}

bool Master::Impl::pick(Worker& wk, Writer& w)
{
    if (shutting_down) {
        wk.exits++;
        cv.notify_all();
        w.op(wire::Task::exit);
        return true;
    }
    if (!wk.in_job) {
        return false;
    }
    switch (phase) {
    case Phase::setup:
        if (wk.joining) {
            return false;
        }
        wk.joining = true;
        w.op(wire::Task::job).u32(job_id).str(spec.app).str(spec.params);
        w.u64(inbox_hint);
        w.u32(static_cast<uint32_t>(parts.size()));
        for (const auto& p : parts) {
            const auto& o = find(p.owner)->info;
            w.u32(o.id).u32(o.node).u32(o.port);
        }
        return true;
    case Phase::map:
        for (uint32_t t = 0; t < tasks.size(); t++) {
            if (tasks[t].state == State::pending) {
                tasks[t].state = State::running;
                tasks[t].worker = wk.info.id;
                w.op(wire::Task::map).u32(job_id).u32(t).str(tasks[t].file).u64(tasks[t].offset).u64(tasks[t].len);
                return true;
            }
        }
        return false;
    case Phase::reduce:
        for (uint32_t p = 0; p < parts.size(); p++) {
            if (parts[p].state == State::pending && parts[p].owner == wk.info.id) {
                parts[p].state = State::running;
                w.op(wire::Task::reduce).u32(job_id).u32(p);
                return true;
            }
        }
        return false;
    case Phase::cleanup:
        if (wk.cleaning || !wk.joining) {
            return false;
        }
        wk.cleaning = true;
        w.op(wire::Task::cleanup).u32(job_id);
        return true;
    default:
        return false;
    }
}

void Master::Impl::fail(const std::string& why)
{
    if (failure.empty()) {
        failure = why;
    }
    if (phase != Phase::idle && phase != Phase::cleanup && phase != Phase::done) {
        enter(Phase::cleanup);
    }
    cv.notify_all();
}

void Master::Impl::enter(Phase p)
{
    phase = p;
    entered.at(static_cast<size_t>(p)) = Clock::now();
    cv.notify_all();
}

void Master::Impl::check_leases(Clock::time_point now)
{
    for (auto& wk : workers) {
        if (!wk.info.alive || now - wk.last_seen <= cfg.lease) {
            continue;
        }
        wk.info.alive = false;
        // A worker lost in the cleanup of a job that succeeded takes
        // nothing with it: its LMRs go with its process or node.
        const bool harmless = phase == Phase::cleanup && failure.empty();
        if (wk.in_job && phase != Phase::idle && phase != Phase::done && !harmless) {
            fail(describe(wk.info) + " stopped answering in the " + phase_name(phase) + " phase: nothing from it for " +
                 seconds(now - wk.last_seen) + " (lease " + seconds(cfg.lease) + ")");
        }
    }
    advance();
}

// Moves the job to its next phase when the current one is complete.
void Master::Impl::advance()
{
    auto all = [&](auto pred) {
        return std::all_of(workers.begin(), workers.end(),
                           [&](const Worker& w) { return !w.in_job || !w.info.alive || pred(w); });
    };
    if (phase == Phase::setup && all([](const Worker& w) { return w.joined; })) {
        enter(Phase::map);
    }
    if (phase == Phase::map && maps_done == tasks.size()) {
        enter(Phase::reduce);
    }
    if (phase == Phase::reduce &&
        std::all_of(parts.begin(), parts.end(), [](const Partition& p) { return p.state == State::done; })) {
        enter(Phase::merge); // run() reads the outputs
    }
    if (phase == Phase::cleanup && all([](const Worker& w) { return w.cleaned || !w.joining; })) {
        enter(Phase::done);
    }
}

std::vector<Pair> Master::Impl::merge(const Job& job)
{
    std::vector<std::vector<Pair>> outs(parts.size());
    for (size_t p = 0; p < parts.size(); p++) {
        if (parts[p].out_size == 0) {
            continue;
        }
        const lite::Lmr lmr = session.map(parts[p].out_name, LITE_PERM_READ);
        std::string data(parts[p].out_size, '\0');
        lmr.read(0, std::as_writable_bytes(std::span(data)));
        for_each_record(data, [&](std::string_view k, std::string_view v) { outs[p].emplace_back(k, v); });
    }
    return merge_sorted(std::move(outs), key_order(job));
}

Master::Master(const lite::Session& session, MasterConfig cfg) : impl_(std::make_unique<Impl>(session, cfg))
{
    if (cfg.lease < std::chrono::milliseconds(100)) {
        throw std::invalid_argument("mapreduce: a lease under 100 ms");
    }
    Impl* impl = impl_.get();
    impl_->server = std::make_unique<lite::Server>(
        session, cfg.port,
        [impl](const lite::Incoming& /*in*/, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            return impl->handle(req, reply);
        },
        kServerThreads);
}

Master::~Master()
{
    shutdown();
}

void Master::wait_for_workers(uint32_t n, std::chrono::milliseconds timeout)
{
    std::unique_lock lock(impl_->mu);
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        impl_->check_leases(Clock::now());
        const auto alive =
            std::count_if(impl_->workers.begin(), impl_->workers.end(), [](const Worker& w) { return w.info.alive; });
        if (static_cast<uint32_t>(alive) >= n) {
            return;
        }
        if (Clock::now() >= deadline) {
            throw JobFailed("mapreduce: " + std::to_string(alive) + " of " + std::to_string(n) +
                            " workers joined within " + seconds(timeout));
        }
        impl_->cv.wait_for(lock, std::chrono::milliseconds(100));
    }
}

std::vector<WorkerInfo> Master::workers() const
{
    const std::lock_guard lock(impl_->mu);
    std::vector<WorkerInfo> out;
    for (const auto& w : impl_->workers) {
        out.push_back(w.info);
    }
    return out;
}

Progress Master::progress() const
{
    const std::lock_guard lock(impl_->mu);
    return {phase_name(impl_->phase), impl_->maps_done, static_cast<uint32_t>(impl_->tasks.size())};
}

JobResult Master::run(const JobSpec& spec)
{
    const apps::App app = apps::make_app(spec.app, spec.params); // the same checks the workers make
    const auto files = input_files(spec.inputs);
    if (spec.split_bytes == 0) {
        throw std::invalid_argument("mapreduce: split size 0");
    }
    auto& m = *impl_;
    std::unique_lock lock(m.mu);
    if (m.phase != Phase::idle) {
        throw std::logic_error("mapreduce: a job is already running");
    }
    if (m.shutting_down) {
        throw JobFailed("mapreduce: the master is shut down");
    }
    m.check_leases(Clock::now());
    m.job_id++;
    m.spec = spec;
    m.tasks.clear();
    m.parts.clear();
    m.failure.clear();
    m.stats = JobStats{};
    m.maps_done = 0;
    uint64_t total = 0;
    for (const auto& [name, size] : files) {
        for (uint64_t off = 0; off < size; off += spec.split_bytes) {
            m.tasks.push_back({name, off, std::min(spec.split_bytes, size - off), State::pending, 0});
        }
        total += size;
    }
    for (auto& w : m.workers) {
        w.in_job = w.info.alive;
        w.joining = w.joined = w.cleaning = w.cleaned = false;
        if (!w.in_job) {
            continue;
        }
        m.stats.workers++;
        const uint32_t n = spec.reducers_per_worker != 0 ? spec.reducers_per_worker : w.info.threads;
        for (uint32_t i = 0; i < n; i++) {
            m.parts.push_back({w.info.id, State::pending, {}, 0});
        }
    }
    if (m.stats.workers == 0) {
        m.phase = Phase::idle;
        throw JobFailed("mapreduce: no live workers");
    }
    m.inbox_hint = std::max<uint64_t>(1ULL << 20, total / m.parts.size() / 4);
    m.stats.map_tasks = static_cast<uint32_t>(m.tasks.size());
    m.stats.partitions = static_cast<uint32_t>(m.parts.size());
    m.entered.fill({});
    const auto start = Clock::now();
    m.enter(Phase::setup);
    std::vector<Pair> output;
    while (m.phase != Phase::done) {
        m.cv.wait_for(lock, std::chrono::milliseconds(100));
        const auto now = Clock::now();
        m.check_leases(now);
        if (m.cfg.job_timeout.count() > 0 && now - start > m.cfg.job_timeout) {
            m.fail("the job took longer than " + seconds(m.cfg.job_timeout) + " (in the " + phase_name(m.phase) +
                   " phase)");
        }
        if (m.phase == Phase::merge) {
            lock.unlock();
            std::string error;
            try {
                output = m.merge(app.job);
            } catch (const std::exception& e) {
                error = std::string("reading the reducers' outputs: ") + e.what();
            }
            lock.lock();
            if (!error.empty()) {
                m.fail("the master failed in the merge phase: " + error);
            } else if (m.phase == Phase::merge) {
                m.enter(Phase::cleanup);
            }
        }
        // A failed job waits for the survivors' cleanup, but not forever.
        if (m.phase == Phase::cleanup && !m.failure.empty() &&
            Clock::now() - m.entered.at(static_cast<size_t>(Phase::cleanup)) > 2 * m.cfg.lease) {
            break;
        }
    }
    const auto end = Clock::now();
    auto at = [&](Phase p) { return m.entered.at(static_cast<size_t>(p)); };
    m.stats.total = end - start;
    if (m.failure.empty()) {
        m.stats.setup = at(Phase::map) - start;
        m.stats.map = at(Phase::reduce) - at(Phase::map);
        m.stats.reduce = at(Phase::merge) - at(Phase::reduce);
        m.stats.merge = at(Phase::cleanup) - at(Phase::merge);
        m.stats.cleanup = end - at(Phase::cleanup);
    }
    m.phase = Phase::idle;
    for (auto& w : m.workers) {
        w.in_job = false;
    }
    if (!m.failure.empty()) {
        throw JobFailed("mapreduce: job " + std::to_string(m.job_id) + " (" + spec.app + ") failed: " + m.failure);
    }
    return {std::move(output), m.stats};
}

void Master::shutdown() noexcept
{
    auto& m = *impl_;
    {
        std::unique_lock lock(m.mu);
        if (!m.shutting_down) {
            m.shutting_down = true;
            m.cv.notify_all();
            const auto deadline = Clock::now() + m.cfg.lease;
            while (Clock::now() < deadline) {
                m.check_leases(Clock::now());
                // Every thread of every worker told: none of their calls
                // is left to fail when the port goes.
                if (std::all_of(m.workers.begin(), m.workers.end(),
                                [](const Worker& w) { return w.exits >= w.info.threads || !w.info.alive; })) {
                    break;
                }
                m.cv.wait_for(lock, std::chrono::milliseconds(50));
            }
        }
    }
    if (m.server) {
        m.server->stop();
    }
}

} // namespace mr
