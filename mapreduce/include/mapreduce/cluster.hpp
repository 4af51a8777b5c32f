// SPDX-License-Identifier: MIT
//
// lite-MapReduce on a lite cluster. One master process (mr::Master) and
// worker processes (mr::run_worker), one or more per node, each with
// several threads:
//
//   setup    every worker builds the job from the application's name and
//            parameters (mr::apps::make_app) and opens an inbox: LMRs on
//            its own node that receive its partitions;
//   map      workers take map tasks (byte ranges of input files, which
//            every node reads from the same path) from the master, map
//            them, combine, partition by key hash and push each partition
//            with one-sided writes into the owning worker's inbox, room
//            for it reserved by an RPC to that worker (the inbox grows by
//            new, larger LMRs; a push never overflows);
//   reduce   each worker reduces the partitions it owns and leaves the
//            sorted output in an LMR on its node;
//   merge    the master reads every output with one-sided reads and
//            merges them in the job's key order;
//   cleanup  every worker releases the job's LMRs before the job returns.
//
// Control goes through lite RPC (see src/protocol.hpp); the bulk data
// only through LMRs. A worker that stops answering (its process killed,
// its node gone) fails the job with an error naming it and the phase,
// after at most the lease; the other workers clean up and stay usable.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <lite/session.hpp>

#include "job.hpp"

namespace mr
{

// A job as the master runs it: the application (see apps.hpp), its input
// files (paths every worker can open) and how to cut them.
struct JobSpec {
    std::string app;
    std::string params;
    std::vector<std::string> inputs;
    uint64_t split_bytes = 32ULL << 20; // map task size; a file smaller is one task
    uint32_t reducers_per_worker = 0;   // partitions per worker; 0: its threads
};

// Where a job's time went, as the master saw it.
struct JobStats {
    std::chrono::nanoseconds setup{0};  // start -> every worker ready
    std::chrono::nanoseconds map{0};    // -> every map task mapped and pushed
    std::chrono::nanoseconds reduce{0}; // -> every partition reduced
    std::chrono::nanoseconds merge{0};  // -> outputs read and merged
    std::chrono::nanoseconds cleanup{0};
    std::chrono::nanoseconds total{0};
    uint32_t workers = 0;
    uint32_t map_tasks = 0;
    uint32_t partitions = 0;
    uint64_t input_bytes = 0;
    uint64_t shuffle_bytes = 0;       // pushed into other workers' inboxes
    std::chrono::nanoseconds push{0}; // summed over the pushing threads
    std::chrono::nanoseconds map_cpu{0};
    std::chrono::nanoseconds reduce_cpu{0};
    uint64_t output_bytes = 0;
};

struct JobResult {
    std::vector<Pair> output; // in the job's key order
    JobStats stats;
};

// A job that did not complete; what() names the phase and, where one is
// to blame, the worker.
class JobFailed : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

struct MasterConfig {
    uint32_t port = 7300; // the master's RPC port on its node
    // A worker not heard from for this long is dead (at least 100 ms).
    std::chrono::milliseconds lease{4000};
    // The most a job may take (0: no bound but the leases, which do not
    // catch a worker that answers but whose task never ends).
    std::chrono::milliseconds job_timeout{std::chrono::hours(1)};
};

// A worker as the master knows it.
struct WorkerInfo {
    uint32_t id = 0;
    uint32_t node = 0;
    uint32_t port = 0;
    uint32_t pid = 0;
    uint32_t threads = 0;
    bool alive = false;
};

// What a running job has done so far.
struct Progress {
    std::string phase; // "idle", "setup", "map", "reduce", "merge", "cleanup"
    uint32_t maps_done = 0;
    uint32_t map_tasks = 0;
};

class Master
{
public:
    // Serves cfg.port on @session's node; @session must outlive the Master.
    Master(const lite::Session& session, MasterConfig cfg);
    Master(const Master&) = delete;
    Master& operator=(const Master&) = delete;
    Master(Master&&) = delete;
    Master& operator=(Master&&) = delete;
    // Tells the workers to exit (shutdown()) and stops serving.
    ~Master();

    // Waits until @n workers are alive; throws JobFailed after @timeout.
    void wait_for_workers(uint32_t n, std::chrono::milliseconds timeout);
    [[nodiscard]] std::vector<WorkerInfo> workers() const;
    [[nodiscard]] Progress progress() const;

    // Runs @spec on every live worker; throws JobFailed, or
    // std::invalid_argument for a spec that cannot run (no such
    // application, an input that cannot be read).
    JobResult run(const JobSpec& spec);

    // Tells every worker to exit, waiting up to the lease for them to hear
    // it. Idempotent.
    void shutdown() noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct WorkerConfig {
    uint32_t master_node = 0;
    uint32_t master_port = 7300;
    unsigned threads = 1;
    uint32_t port_base = 7301; // the first port tried for the worker's own
    // How long to keep trying to reach the master at the start.
    std::chrono::milliseconds join_timeout{30000};
};

// Runs a worker on @session's node until the master says exit (returns)
// or is gone (throws lite::Error or std::runtime_error naming why).
void run_worker(const lite::Session& session, const WorkerConfig& cfg);

} // namespace mr
