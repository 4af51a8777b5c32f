// SPDX-License-Identifier: MIT
//
// lite-MapReduce on three nodes in this guest: a master in the test
// process (node 1) and lite-mr worker processes on nodes 1..n. Every
// application's output must equal its single-process reference exactly on
// one node and on three; the nodes' LMR memory must be back where it was
// after every job; a worker killed in the map phase must fail the job
// with an error naming it and the phase, in bounded time, and leave the
// others usable.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <lite/session.hpp>

#include "mapreduce/apps.hpp"
#include "mapreduce/cluster.hpp"
#include "nodes.hpp"
#include "util.hpp"

extern char** environ; // NOLINT(readability-redundant-declaration)

namespace
{

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kPort = 19600;
constexpr uint32_t kMasterPort = 7300;

// lite-mr worker processes, killed and reaped when this goes away.
class Workers
{
public:
    Workers() = default;
    Workers(const Workers&) = delete;
    Workers& operator=(const Workers&) = delete;
    Workers(Workers&&) = delete;
    Workers& operator=(Workers&&) = delete;
    ~Workers()
    {
        for (const pid_t pid : pids_) {
            lite_guest::kill_child(pid);
        }
    }

    void start(uint32_t instance, uint32_t master_node, unsigned threads)
    {
        std::vector<std::string> args = {LITE_MR_PATH,    "worker",
                                         "--instance",    std::to_string(instance),
                                         "--master-node", std::to_string(master_node),
                                         "--master-port", std::to_string(kMasterPort),
                                         "--threads",     std::to_string(threads)};
        std::vector<char*> argv;
        argv.reserve(args.size() + 1);
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        pid_t pid = 0;
        ASSERT_EQ(posix_spawn(&pid, LITE_MR_PATH, nullptr, nullptr, argv.data(), environ), 0);
        pids_.push_back(pid);
    }

    // Each worker's exit: its code, or 128 + the signal; -1 if it did not
    // end within @timeout (then it is killed).
    std::vector<int> wait(std::chrono::milliseconds timeout)
    {
        std::vector<int> codes;
        const auto deadline = Clock::now() + timeout;
        for (const pid_t pid : pids_) {
            int status = 0;
            pid_t got = 0;
            while ((got = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
                std::this_thread::sleep_for(20ms);
            }
            if (got == 0) {
                lite_guest::kill_child(pid);
                codes.push_back(-1);
            } else {
                codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            }
        }
        pids_.clear();
        return codes;
    }

private:
    std::vector<pid_t> pids_;
};

std::string words()
{
    std::ifstream in("/usr/share/dict/words");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write(const fs::path& p, const std::string& data)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
    ASSERT_TRUE(out.flush()) << p;
}

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The reference over whole files, as every run is checked.
std::vector<mr::Pair> reference(const mr::JobSpec& spec, const std::vector<fs::path>& files)
{
    std::vector<std::string> data;
    std::vector<std::string> names;
    for (const auto& f : files) {
        data.push_back(slurp(f));
        names.push_back(f.string());
    }
    std::vector<mr::Split> splits;
    for (size_t i = 0; i < files.size(); i++) {
        splits.push_back({data[i], names[i], 0});
    }
    return mr::apps::reference(spec.app, spec.params, splits);
}

class MapReduce : public lite_guest::ThreeNodes<kPort>
{
protected:
    void SetUp() override
    {
        ThreeNodes::SetUp();
        dir_ = fs::path("/tmp") / ("lite-mr-test-" + std::to_string(getpid()));
        fs::create_directories(dir_ / "docs");
        const std::string w = words();
        ASSERT_GT(w.size(), 100000U) << "the word list (Debian's wamerican) is missing";
        write(dir_ / "text.txt", mr::apps::make_zipf_text(w, 3U << 20, 11));
        for (int i = 0; i < 12; i++) {
            write(dir_ / "docs" / ("doc" + std::to_string(i) + ".txt"),
                  mr::apps::make_zipf_text(w, 20000 + 7000 * static_cast<size_t>(i), 100 + i));
        }
        std::string bytes(1U << 20, '\0');
        uint64_t x = 7;
        for (auto& b : bytes) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            b = static_cast<char>((x >> 56) * ((x >> 48) & 0xff) >> 8);
        }
        write(dir_ / "bytes.bin", bytes);
        write(dir_ / "points.txt", mr::apps::make_points(60000, 12));
        write(dir_ / "clusters.txt", mr::apps::make_clusters(60000, 5, 13));
    }
    void TearDown() override
    {
        fs::remove_all(dir_);
        ThreeNodes::TearDown();
    }

    struct Memory {
        uint64_t bytes = 0;
        uint64_t lmrs = 0;
        bool operator==(const Memory&) const = default;
    };
    [[nodiscard]] std::vector<Memory> memory() const
    {
        std::vector<Memory> m;
        for (const uint32_t inst : inst_) {
            const auto st = dev_->status(inst);
            m.push_back({st.counters.mem_bytes, st.counters.mem_lmrs});
        }
        return m;
    }

    // Runs @spec and checks it against its reference and the memory
    // counters against @before; returns the result.
    mr::JobResult run_checked(mr::Master& master, const mr::JobSpec& spec, const std::vector<Memory>& before)
    {
        std::vector<fs::path> files;
        for (const auto& in : spec.inputs) {
            if (fs::is_directory(in)) {
                for (const auto& e : fs::directory_iterator(in)) {
                    files.push_back(e.path());
                }
            } else {
                files.emplace_back(in);
            }
        }
        auto res = master.run(spec);
        const auto want = reference(spec, files);
        EXPECT_FALSE(want.empty()) << spec.app;
        EXPECT_EQ(res.output.size(), want.size()) << spec.app;
        EXPECT_TRUE(res.output == want) << spec.app << ": the output differs from the reference";
        EXPECT_EQ(res.stats.input_bytes,
                  [&] {
                      uint64_t n = 0;
                      for (const auto& f : files) {
                          n += fs::file_size(f);
                      }
                      return n;
                  }())
            << spec.app << ": every input byte mapped exactly once";
        const auto after = memory();
        for (size_t i = 0; i < after.size(); i++) {
            EXPECT_EQ(after[i].bytes, before[i].bytes) << spec.app << ": node " << i + 1 << " LMR bytes";
            EXPECT_EQ(after[i].lmrs, before[i].lmrs) << spec.app << ": node " << i + 1 << " LMRs";
        }
        return res;
    }

    std::string path(const char* name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

TEST_F(MapReduce, EveryApplicationEqualsItsReferenceOnOneAndThreeNodes)
{
    for (const uint32_t nodes : {1U, 3U}) {
        SCOPED_TRACE(std::to_string(nodes) + " node(s)");
        const auto before = memory();
        const auto session = lite::Session::open(inst_[0]);
        Workers workers;
        {
            mr::MasterConfig cfg;
            cfg.port = kMasterPort;
            cfg.lease = 4s;
            cfg.job_timeout = 300s;
            mr::Master master(session, cfg);
            for (uint32_t n = 0; n < nodes; n++) {
                workers.start(inst_[n], 1, 2);
            }
            master.wait_for_workers(nodes, 30s);
            ASSERT_EQ(master.workers().size(), nodes);

            auto job = [&](const char* app, std::vector<std::string> inputs, uint64_t split) {
                mr::JobSpec spec;
                spec.app = app;
                spec.inputs = std::move(inputs);
                spec.split_bytes = split;
                return spec;
            };
            const auto wc = run_checked(master, job("wordcount", {path("text.txt")}, 256U << 10), before);
            EXPECT_EQ(wc.stats.map_tasks, (fs::file_size(path("text.txt")) + (256U << 10) - 1) / (256U << 10));
            EXPECT_EQ(wc.stats.partitions, 2 * nodes);
            if (nodes == 3) {
                EXPECT_GT(wc.stats.shuffle_bytes, 0U) << "partitions crossed between workers";
            }
            run_checked(master, job("histogram", {path("bytes.bin")}, 100000), before);
            run_checked(master, job("linreg", {path("points.txt")}, 100000), before);
            run_checked(master, job("invindex", {path("docs")}, 1U << 20), before);
            auto sm = job("strmatch", {path("text.txt"), path("docs")}, 512U << 10);
            sm.params = "the\nab\nqu\nzzzzzz\n";
            run_checked(master, sm, before);
            // k-means: three iterations, each one job, each checked.
            auto c = mr::apps::initial_centroids(5, 3);
            for (int it = 0; it < 3; it++) {
                auto km = job("kmeans", {path("clusters.txt")}, 200000);
                km.params = mr::apps::format_centroids(c);
                const auto res = run_checked(master, km, before);
                c = mr::apps::kmeans_update(c, res.output);
            }
            master.shutdown();
        }
        for (const int code : workers.wait(15s)) {
            EXPECT_EQ(code, 0) << "a worker did not exit cleanly after the master's shutdown";
        }
        EXPECT_EQ(memory(), before);
    }
}

TEST_F(MapReduce, BadJobsAreRefusedBeforeTheyStart)
{
    const auto session = lite::Session::open(inst_[0]);
    mr::MasterConfig cfg;
    cfg.port = kMasterPort;
    mr::Master master(session, cfg);
    mr::JobSpec spec;
    spec.app = "wordcount";
    spec.inputs = {path("no-such-file")};
    EXPECT_THROW(master.run(spec), std::invalid_argument);
    spec.inputs = {path("text.txt")};
    spec.app = "nosuchapp";
    try {
        (void)master.run(spec);
        ADD_FAILURE() << "an unknown application ran";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("nosuchapp"), std::string::npos) << e.what();
    }
    spec.app = "kmeans";
    spec.params = "1 x\n";
    EXPECT_THROW(master.run(spec), std::invalid_argument);
    spec.app = "wordcount";
    spec.params.clear();
    try {
        (void)master.run(spec);
        ADD_FAILURE() << "a job ran without workers";
    } catch (const mr::JobFailed& e) {
        EXPECT_NE(std::string(e.what()).find("no live workers"), std::string::npos) << e.what();
    }
    // Port taken: a second master on it is refused.
    EXPECT_THROW(mr::Master(session, cfg), lite::Error);
}

TEST_F(MapReduce, AKilledWorkerFailsTheJobNamingItAndThePhase)
{
    const auto before = memory();
    // Enough map tasks that the job is still mapping when the kill lands.
    std::string block = mr::apps::make_zipf_text(words(), 1U << 20, 21);
    std::string big;
    for (int i = 0; i < 24; i++) {
        big += block;
    }
    write(dir_ / "big.txt", big);
    const auto session = lite::Session::open(inst_[0]);
    Workers workers;
    {
        mr::MasterConfig cfg;
        cfg.port = kMasterPort;
        cfg.lease = 2s;
        cfg.job_timeout = 300s;
        mr::Master master(session, cfg);
        for (uint32_t n = 0; n < 3; n++) {
            workers.start(inst_[n], 1, 1);
        }
        master.wait_for_workers(3, 30s);
        mr::WorkerInfo victim;
        for (const auto& w : master.workers()) {
            if (w.node == 3) {
                victim = w;
            }
        }
        ASSERT_EQ(victim.node, 3U);

        mr::JobSpec spec;
        spec.app = "wordcount";
        spec.inputs = {path("big.txt")};
        spec.split_bytes = 128U << 10;
        auto job = std::async(std::launch::async, [&] { return master.run(spec); });
        const auto deadline = Clock::now() + 120s;
        while (master.progress().maps_done < 2 && Clock::now() < deadline) {
            std::this_thread::sleep_for(5ms);
        }
        const auto p = master.progress();
        ASSERT_EQ(p.phase, "map") << "the job left the map phase before the kill";
        ASSERT_LT(p.maps_done, p.map_tasks);
        ASSERT_EQ(kill(static_cast<pid_t>(victim.pid), SIGKILL), 0);
        const auto killed = Clock::now();
        ASSERT_EQ(job.wait_for(60s), std::future_status::ready) << "the job hangs after a worker died";
        const auto took = Clock::now() - killed;
        try {
            (void)job.get();
            ADD_FAILURE() << "the job completed without worker " << victim.id;
        } catch (const mr::JobFailed& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("worker " + std::to_string(victim.id)), std::string::npos) << what;
            EXPECT_NE(what.find("node 3"), std::string::npos) << what;
            EXPECT_NE(what.find("map phase"), std::string::npos) << what;
            std::cout << "  the job failed after "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms: " << what << "\n";
        }
        EXPECT_LT(took, 3 * cfg.lease + 10s);

        // The survivors still work: the next job runs on them.
        mr::JobSpec small;
        small.app = "wordcount";
        small.inputs = {path("text.txt")};
        small.split_bytes = 512U << 10;
        const auto res = master.run(small);
        EXPECT_EQ(res.stats.workers, 2U);
        std::vector<fs::path> files = {dir_ / "text.txt"};
        EXPECT_TRUE(res.output == reference(small, files));
        master.shutdown();
    }
    const auto codes = workers.wait(15s);
    ASSERT_EQ(codes.size(), 3U);
    EXPECT_EQ(codes[0], 0);
    EXPECT_EQ(codes[1], 0);
    EXPECT_EQ(codes[2], 128 + SIGKILL);
    EXPECT_EQ(memory(), before) << "every node's LMR memory is back, the killed worker's too";
}

} // namespace
