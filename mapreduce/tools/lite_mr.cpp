// SPDX-License-Identifier: MIT
//
// lite-mr: lite-MapReduce from the command line.
//
//   lite-mr run --app wordcount --spawn FILE...   a job on this host's nodes
//   lite-mr worker --master-node N                a worker for a master
//   lite-mr serial --app wordcount FILE...        the single-process baseline
//   lite-mr gen text --size 256M OUT              deterministic inputs
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lite_cli.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <lite/lite.hpp>
#include <lite/session.hpp>

#include "mapreduce/apps.hpp"
#include "mapreduce/cluster.hpp"
#include "mapreduce/input.hpp"

extern char** environ; // NOLINT(readability-redundant-declaration)

namespace
{

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, std::string_view data)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out.flush()) {
        throw std::runtime_error("cannot write " + path);
    }
}

// Every regular file under @inputs, as the master splits them.

lite::Session open_session(std::optional<uint32_t> instance)
{
    return instance ? lite::Session::open(*instance) : lite::Session::open_default();
}

// Worker processes started by `run --spawn`, killed if still there when
// this goes away.
class Children
{
public:
    Children() = default;
    Children(const Children&) = delete;
    Children& operator=(const Children&) = delete;
    Children(Children&&) = delete;
    Children& operator=(Children&&) = delete;
    ~Children() { reap(std::chrono::seconds(5)); }

    void spawn(const std::vector<std::string>& args)
    {
        std::vector<char*> argv;
        argv.reserve(args.size() + 1);
        for (const auto& a : args) {
            argv.push_back(const_cast<char*>(a.c_str())); // NOLINT(*-const-cast)
        }
        argv.push_back(nullptr);
        pid_t pid = 0;
        const int err = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ);
        if (err != 0) {
            throw std::system_error(err, std::generic_category(), "start a worker");
        }
        pids_.push_back(pid);
    }

    // Waits up to @timeout for the workers to exit, then kills the rest;
    // returns how many did not exit with status 0.
    int reap(std::chrono::milliseconds timeout)
    {
        int bad = 0;
        const auto deadline = Clock::now() + timeout;
        for (const pid_t pid : pids_) {
            int status = 0;
            pid_t got = 0;
            while ((got = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            if (got == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
            }
            bad += (got == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
        }
        pids_.clear();
        return bad;
    }

private:
    std::vector<pid_t> pids_;
};

struct RunOptions {
    std::optional<uint32_t> instance;
    uint32_t workers = 0;
    bool spawn = false;
    std::vector<uint32_t> spawn_on;
    unsigned threads = 0;
    std::string app = "wordcount";
    std::vector<std::string> patterns;
    uint32_t k = 8;
    uint32_t iterations = 5;
    uint64_t seed = 1;
    uint64_t split = 32ULL << 20;
    uint32_t reducers = 0;
    uint32_t port = 7300;
    uint32_t lease_ms = 4000;
    uint32_t timeout_s = 3600;
    bool check = false;
    size_t top = 10;
    std::string output;
    std::string stats;
    std::string label;
    std::vector<std::string> inputs;
};

std::string seconds(std::chrono::nanoseconds d)
{
    std::ostringstream s;
    s.precision(3);
    s << std::fixed << std::chrono::duration<double>(d).count();
    return s.str();
}

void print_stats(const mr::JobStats& st, size_t pairs)
{
    const double mb = static_cast<double>(st.shuffle_bytes) / 1e6;
    const double push_s = std::chrono::duration<double>(st.push).count();
    std::cerr << "lite-mr: " << st.workers << " workers, " << st.map_tasks << " map tasks, " << st.partitions
              << " partitions, " << st.input_bytes << " input bytes, " << pairs << " output pairs\n"
              << "lite-mr: total " << seconds(st.total) << " s: setup " << seconds(st.setup) << ", map+shuffle "
              << seconds(st.map) << ", reduce " << seconds(st.reduce) << ", merge " << seconds(st.merge) << ", cleanup "
              << seconds(st.cleanup) << "\n"
              << "lite-mr: shuffle " << mb << " MB pushed in " << push_s << " s of pushing ("
              << (push_s > 0 ? mb / push_s : 0) << " MB/s per pushing thread)\n";
}

// One CSV row per job: label,app,workers,input_bytes,total_s,setup_s,
// map_s,reduce_s,merge_s,cleanup_s,shuffle_bytes,push_s,map_tasks,
// partitions,output_pairs
void append_stats(const std::string& path, const std::string& label, const std::string& app, const mr::JobStats& st,
                  size_t pairs)
{
    const bool fresh = !fs::exists(path);
    std::ofstream out(path, std::ios::app);
    if (fresh) {
        out << "label,app,workers,input_bytes,total_s,setup_s,map_s,reduce_s,merge_s,cleanup_s,shuffle_bytes,"
               "push_s,map_tasks,partitions,output_pairs\n";
    }
    out << label << ',' << app << ',' << st.workers << ',' << st.input_bytes << ',' << seconds(st.total) << ','
        << seconds(st.setup) << ',' << seconds(st.map) << ',' << seconds(st.reduce) << ',' << seconds(st.merge) << ','
        << seconds(st.cleanup) << ',' << st.shuffle_bytes << ',' << seconds(st.push) << ',' << st.map_tasks << ','
        << st.partitions << ',' << pairs << '\n';
    if (!out.flush()) {
        throw std::runtime_error("cannot write " + path);
    }
}

bool is_count(const std::string& v)
{
    return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The output: to a file as "key<TAB>value" lines, or its top pairs (by
// count where the values are counts) on stdout.
void show(const RunOptions& o, const std::vector<mr::Pair>& out)
{
    if (!o.output.empty()) {
        std::ofstream f(o.output, std::ios::trunc);
        for (const auto& [k, v] : out) {
            f << k << '\t' << v << '\n';
        }
        if (!f.flush()) {
            throw std::runtime_error("cannot write " + o.output);
        }
    }
    if (o.top == 0) {
        return;
    }
    std::vector<const mr::Pair*> top;
    top.reserve(out.size());
    for (const auto& p : out) {
        top.push_back(&p);
    }
    if (std::all_of(out.begin(), out.end(), [](const mr::Pair& p) { return is_count(p.second); })) {
        // Decimal counts without leading zeros: longer is larger.
        std::stable_sort(top.begin(), top.end(), [](const mr::Pair* a, const mr::Pair* b) {
            const auto& x = a->second;
            const auto& y = b->second;
            return x.size() != y.size() ? x.size() > y.size() : x > y;
        });
    }
    for (size_t i = 0; i < std::min(o.top, top.size()); i++) {
        std::string v = top[i]->second;
        std::replace(v.begin(), v.end(), '\n', ' ');
        if (v.size() > 100) {
            v = v.substr(0, 97) + "...";
        }
        std::cout << top[i]->first << '\t' << v << '\n';
    }
}

std::vector<mr::Split> load(const std::vector<std::string>& files, std::vector<std::string>& store)
{
    store.clear();
    store.reserve(files.size());
    std::vector<mr::Split> splits;
    for (const auto& f : files) {
        store.push_back(read_file(f));
    }
    for (size_t i = 0; i < files.size(); i++) {
        splits.push_back({store[i], files[i], 0});
    }
    return splits;
}

// Checks @got against the reference over the same files; exits 1 if not.
void check(const std::string& app, const std::string& params, const std::vector<std::string>& files,
           const std::vector<mr::Pair>& got)
{
    std::vector<std::string> store;
    const auto want = mr::apps::reference(app, params, load(files, store));
    if (got != want) {
        size_t i = 0;
        while (i < got.size() && i < want.size() && got[i] == want[i]) {
            i++;
        }
        throw std::runtime_error("CHECK FAILED: " + std::to_string(got.size()) + " pairs, the reference has " +
                                 std::to_string(want.size()) + "; the first difference is at pair " +
                                 std::to_string(i));
    }
    std::cerr << "lite-mr: check: the output equals the single-process reference (" << want.size() << " pairs)\n";
}

int run(const RunOptions& o)
{
    lite::Session session = open_session(o.instance);
    const auto dev = lite::Device::open();
    mr::MasterConfig cfg;
    cfg.port = o.port;
    cfg.lease = std::chrono::milliseconds(o.lease_ms);
    cfg.job_timeout = std::chrono::seconds(o.timeout_s);
    Children children;
    uint32_t workers = o.workers;
    if (o.spawn || !o.spawn_on.empty()) {
        const auto instances = o.spawn_on.empty() ? dev.instances() : o.spawn_on;
        if (instances.empty()) {
            throw std::runtime_error("--spawn: no lite node is up on this host (litectl up)");
        }
        const unsigned threads =
            o.threads != 0
                ? o.threads
                : std::max(1U, std::thread::hardware_concurrency() / static_cast<unsigned>(instances.size()));
        for (const uint32_t inst : instances) {
            children.spawn({"lite-mr", "worker", "--instance", std::to_string(inst), "--master-node",
                            std::to_string(session.node_id()), "--master-port", std::to_string(o.port), "--threads",
                            std::to_string(threads)});
        }
        if (workers == 0) {
            workers = static_cast<uint32_t>(instances.size());
        }
    }
    if (workers == 0) {
        throw lite_cli::UsageError("--workers: give the number of workers to wait for, or --spawn");
    }
    mr::Master master(session, cfg);
    master.wait_for_workers(workers, std::chrono::seconds(60));
    mr::JobSpec spec;
    spec.app = o.app;
    spec.inputs = o.inputs;
    spec.split_bytes = o.split;
    spec.reducers_per_worker = o.reducers;
    const auto files = mr::list_inputs(o.inputs);
    if (o.app == "strmatch") {
        for (const auto& p : o.patterns) {
            spec.params += p + "\n";
        }
    }
    if (o.app == "kmeans") {
        auto c = mr::apps::initial_centroids(o.k, o.seed);
        for (uint32_t it = 0; it < o.iterations; it++) {
            spec.params = mr::apps::format_centroids(c);
            const auto res = master.run(spec);
            if (o.check) {
                check(o.app, spec.params, files, res.output);
            }
            if (!o.stats.empty()) {
                append_stats(o.stats, o.label, o.app, res.stats, res.output.size());
            }
            print_stats(res.stats, res.output.size());
            c = mr::apps::kmeans_update(c, res.output);
        }
        std::cout << mr::apps::format_centroids(c);
    } else {
        const auto res = master.run(spec);
        print_stats(res.stats, res.output.size());
        if (o.check) {
            check(o.app, spec.params, files, res.output);
        }
        if (!o.stats.empty()) {
            append_stats(o.stats, o.label, o.app, res.stats, res.output.size());
        }
        show(o, res.output);
    }
    master.shutdown();
    if (children.reap(std::chrono::seconds(10)) != 0) {
        std::cerr << "lite-mr: a worker did not exit cleanly\n";
        return 1;
    }
    return 0;
}

int serial(const RunOptions& o)
{
    std::string params;
    for (const auto& p : o.patterns) {
        params += p + "\n";
    }
    if (o.app == "kmeans") {
        params = mr::apps::format_centroids(mr::apps::initial_centroids(o.k, o.seed));
    }
    const auto files = mr::list_inputs(o.inputs);
    const auto t0 = Clock::now();
    std::vector<std::string> store;
    const auto splits = load(files, store);
    const auto out = mr::apps::reference(o.app, params, splits);
    const auto t = Clock::now() - t0;
    std::cerr << "lite-mr: serial " << o.app << ": " << seconds(t) << " s for " << files.size() << " files, "
              << out.size() << " output pairs\n";
    if (!o.stats.empty()) {
        mr::JobStats st;
        st.total = t;
        st.workers = 1;
        for (const auto& s : store) {
            st.input_bytes += s.size();
        }
        append_stats(o.stats, o.label, o.app, st, out.size());
    }
    show(o, out);
    return 0;
}

struct GenOptions {
    std::string kind;
    uint64_t size = 16ULL << 20;
    uint64_t seed = 1;
    std::string words = "/usr/share/dict/words";
    uint32_t files = 1;
    uint32_t k = 8;
    std::string out;
};

// Writes @data to @o.out, or cut at line ends into o.files files in the
// directory o.out.
void write_out(const GenOptions& o, const std::string& data)
{
    if (o.files <= 1) {
        write_file(o.out, data);
        return;
    }
    fs::create_directories(o.out);
    size_t at = 0;
    for (uint32_t i = 0; i < o.files; i++) {
        size_t end = i + 1 == o.files ? data.size() : std::min(data.size(), (data.size() / o.files) * (i + 1));
        const size_t nl = data.find('\n', end == 0 ? 0 : end - 1);
        end = (i + 1 == o.files || nl == std::string::npos) ? data.size() : nl + 1;
        const std::string n = std::to_string(i);
        std::string name = "part-";
        name.append(4 - std::min<size_t>(4, n.size()), '0').append(n).append(".txt");
        write_file((fs::path(o.out) / name).string(), std::string_view(data).substr(at, end - at));
        at = end;
    }
}

int gen(const GenOptions& o)
{
    std::string data;
    if (o.kind == "text") {
        data = mr::apps::make_zipf_text(read_file(o.words), o.size, o.seed);
    } else if (o.kind == "bytes") {
        // Skewed bytes: a histogram with a shape, some values rare.
        data.resize(o.size);
        uint64_t x = o.seed * 0x9E3779B97F4A7C15ULL + 1;
        for (auto& c : data) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c = static_cast<char>((x & 0xff) * ((x >> 8) & 0xff) >> 8);
        }
    } else if (o.kind == "points") {
        data = mr::apps::make_points(o.size / 16, o.seed);
    } else if (o.kind == "clusters") {
        data = mr::apps::make_clusters(o.size / 16, o.k, o.seed);
    } else {
        throw lite_cli::UsageError("kind '" + o.kind + "': use text, bytes, points or clusters");
    }
    write_out(o, data);
    return 0;
}

} // namespace

namespace
{

int lite_mr(int argc, char** argv)
{
    lite_cli::App cli("lite-mr", "lite-MapReduce: jobs on a lite cluster, their workers, the serial baseline, inputs");
    cli.require_subcommand(1);

    RunOptions ro;
    auto add_job_options = [&](CLI::App* c) {
        c->add_option("--app", ro.app, "wordcount, histogram, linreg, kmeans, strmatch or invindex")
            ->capture_default_str();
        c->add_option("--pattern", ro.patterns, "strmatch: a string to count the lines of (repeatable)")
            ->allow_extra_args(false);
        c->add_option("--k", ro.k, "kmeans: clusters")->capture_default_str();
        c->add_option("--seed", ro.seed, "kmeans: seed of the starting centroids")->capture_default_str();
        c->add_option("--top", ro.top, "print this many pairs (the largest counts first)")->capture_default_str();
        c->add_option("--output", ro.output, "write every pair to this file, key<TAB>value");
        c->add_option("--stats", ro.stats, "append the job's times as a CSV row to this file");
        c->add_option("--label", ro.label, "the first column of the --stats row");
        c->add_option("inputs", ro.inputs, "input files or directories (every node reads the same paths)")->required();
    };
    auto* run_cmd = cli.add_subcommand("run", "run a job as its master");
    add_job_options(run_cmd);
    run_cmd->add_option("--instance", ro.instance, "the local node instance the master runs on");
    run_cmd->add_option("--workers", ro.workers, "wait for this many workers (default with --spawn: one per node)");
    run_cmd->add_flag("--spawn", ro.spawn, "start a worker on every lite node of this host");
    run_cmd->add_option("--spawn-on", ro.spawn_on, "start workers on these node instances only")->delimiter(',');
    run_cmd->add_option("--threads", ro.threads, "threads per spawned worker (default: CPUs / nodes)");
    run_cmd->add_option("--iterations", ro.iterations, "kmeans: jobs to run")->capture_default_str();
    lite_cli::add_number(*run_cmd, "--split", ro.split, 4096, 1ULL << 40, "map task size (K, M, G)")
        ->default_str("32M");
    run_cmd->add_option("--reducers-per-worker", ro.reducers, "partitions per worker (default: its threads)");
    run_cmd->add_option("--port", ro.port, "the master's RPC port")->capture_default_str();
    run_cmd->add_option("--lease-ms", ro.lease_ms, "a worker silent this long is dead")->capture_default_str();
    run_cmd->add_option("--timeout", ro.timeout_s, "seconds a job may take")->capture_default_str();
    run_cmd->add_flag("--check", ro.check, "compare the output with the single-process reference");

    auto* serial_cmd = cli.add_subcommand("serial", "the single-process reference, timed (the baseline)");
    add_job_options(serial_cmd);

    std::optional<uint32_t> w_instance;
    mr::WorkerConfig wc;
    uint32_t w_timeout_s = 30;
    auto* worker_cmd = cli.add_subcommand("worker", "serve a master until it says exit");
    worker_cmd->add_option("--instance", w_instance, "the local node instance to work on");
    worker_cmd->add_option("--master-node", wc.master_node, "the master's node id")->required();
    worker_cmd->add_option("--master-port", wc.master_port, "the master's RPC port")->capture_default_str();
    worker_cmd->add_option("--threads", wc.threads, "task threads")->capture_default_str();
    worker_cmd->add_option("--port-base", wc.port_base, "the first port to serve")->capture_default_str();
    worker_cmd->add_option("--join-timeout", w_timeout_s, "seconds to keep trying to reach the master")
        ->capture_default_str();

    GenOptions go;
    auto* gen_cmd = cli.add_subcommand("gen", "write a deterministic input");
    gen_cmd->add_option("kind", go.kind, "text (Zipf words), bytes, points (x y on a line), clusters (x y)")
        ->required();
    gen_cmd->add_option("out", go.out, "the file (or directory, with --files)")->required();
    lite_cli::add_number(*gen_cmd, "--size", go.size, 0, 1ULL << 40, "bytes (K, M, G)")->default_str("16M");
    gen_cmd->add_option("--seed", go.seed, "the generator's seed")->capture_default_str();
    gen_cmd->add_option("--words", go.words, "text: the word list, one per line")->capture_default_str();
    gen_cmd->add_option("--files", go.files, "cut into this many files in the directory OUT")->capture_default_str();
    gen_cmd->add_option("--k", go.k, "clusters: how many")->capture_default_str();

    return cli.run(argc, argv, [&] {
        if (run_cmd->parsed())
            return run(ro);
        if (serial_cmd->parsed())
            return serial(ro);
        if (worker_cmd->parsed()) {
            wc.join_timeout = std::chrono::seconds(w_timeout_s);
            const lite::Session s = open_session(w_instance);
            mr::run_worker(s, wc);
            return 0;
        }
        return gen(go);
    });
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("lite-mr", [&] { return lite_mr(argc, argv); });
}
