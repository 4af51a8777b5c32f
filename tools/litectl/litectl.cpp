// SPDX-License-Identifier: MIT
//
// litectl: bring lite nodes up and down, join clusters, show status, ping.
// Arguments are parsed (CLI11) before /dev/lite is opened; every command
// prints JSON with --json (nlohmann-json). litectl(1) documents it.
//
// Exit codes:
//   0 ok, 1 other error, 2 usage, 3 module not loaded, 4 not privileged,
//   5 no such device/instance, 6 secret refused or missing,
//   7 manager or node unreachable.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <lite/lite.hpp>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

using json = nlohmann::ordered_json;

enum Exit : int {
    kOk = 0,
    kError = 1,
    kUsage = 2,
    kNoModule = 3,
    kNoPriv = 4,
    kNoDevice = 5,
    kAuth = 6,
    kUnreachable = 7,
};

// A request the arguments made that the program cannot carry out (exit 2).
struct UsageError {
    std::string msg;
};

// What a command ended with, for the text and the JSON forms.
struct Failure {
    int code;
    std::string msg;
    int errnum;
};

// Map an error to a message a user can act on, and an exit code.
Failure explain(const lite::Error& e, const std::string& cmd, const std::string& context)
{
    const int err = e.errnum();
    const bool opening = std::string(e.what()).starts_with("open ");
    switch (err) {
    case ENOENT:
    case ENXIO:
        if (opening) {
            return {kNoModule,
                    "/dev/lite not found: the lite kernel module is not loaded (modprobe lite, or insmod "
                    "lite_kmod/lite.ko)",
                    err};
        }
        if (cmd == "ping")
            return {kNoDevice, context + " is not a member of this cluster", err};
        if (err == ENXIO)
            return {kNoDevice, "no such port on " + context, err};
        return {kNoDevice,
                "no such instance" + (context.empty() ? std::string() : " " + context) + " (see: litectl info)", err};
    case EPERM:
    case EACCES:
        if (opening) {
            return {kNoPriv,
                    "/dev/lite: permission denied: its users are root and group lite "
                    "(add the user to it; make install-udev sets the group up)",
                    err};
        }
        return {kNoPriv, "not permitted: " + cmd + " needs CAP_NET_ADMIN (run as root)", err};
    case ENODEV:
        return {kNoDevice, "no RDMA device named '" + context + "' (see: rdma link show)", err};
    case EKEYREJECTED:
        return {kAuth, "join refused: the cluster secret does not match the manager's", err};
    case ENOKEY:
        return {kAuth, "a cluster secret is required (--secret-file)", err};
    case EAGAIN:
        return {kUnreachable, "join refused for now: a member did not acknowledge the new node in time; try again",
                err};
    case ENOSPC:
        return {kError, "join refused: the cluster has its maximum of " + std::to_string(LITE_MAX_NODES) + " members",
                err};
    case ECONNREFUSED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNRESET:
    case ECONNABORTED:
    case ENOTCONN:
        return {kUnreachable, (cmd == "ping" ? "" : "manager at ") + context + " unreachable: " + std::strerror(err),
                err};
    case EOPNOTSUPP:
        return {kUnreachable, "the node at " + context + " is not the cluster manager", err};
    case EADDRINUSE:
        return {kError, "address " + context + " is already used by a node", err};
    case EADDRNOTAVAIL:
        return {kError, "address " + context + " does not belong to that RDMA device and port", err};
    default:
        return {kError, e.what(), err};
    }
}

// The options, filled by the parser before anything runs.
struct Options {
    bool json = false;
    std::optional<uint32_t> instance;
    // up
    std::string dev, listen, secret_file, join, cq, isolation;
    uint32_t port = 0;
    uint32_t timeout_ms = 0;
    // ping
    uint32_t count = 3;
    // top
    uint32_t rounds = 0; // 0: until interrupted
    double interval_s = 1.0;
    uint32_t node = 0;
};

class Cli
{
public:
    explicit Cli(Options& o) : o_(o) {}

    // Print what a command did: @out with --json, else @text.
    [[nodiscard]] int finish(const json& out, const std::string& text) const
    {
        if (o_.json) {
            std::cout << out.dump(2) << "\n";
        } else {
            std::cout << text;
        }
        return kOk;
    }

    [[nodiscard]] int fail(const std::string& cmd, const Failure& f) const
    {
        std::cerr << "litectl " << cmd << ": " << f.msg << "\n";
        if (o_.json) {
            json j;
            j["error"] = f.msg;
            j["errno"] = f.errnum;
            j["exit"] = f.code;
            std::cout << j.dump(2) << "\n";
        }
        return f.code;
    }

    [[nodiscard]] uint32_t pick_instance(const lite::Device& dev) const
    {
        if (o_.instance)
            return *o_.instance;
        auto ids = dev.instances();
        if (!o_.listen.empty()) { // down --listen, or --config
            std::string want;
            try {
                want = lite::Endpoint::parse(o_.listen).to_string();
            } catch (const lite::Error& e) {
                throw UsageError{e.what()};
            }
            for (auto id : ids) {
                if (dev.status(id).listen.to_string() == want)
                    return id;
            }
            throw lite::Error(ENOENT, "no instance listens on " + want);
        }
        if (ids.size() == 1)
            return ids[0];
        if (ids.empty())
            throw lite::Error(ENOENT, "no instance");
        throw UsageError{"several instances exist: choose one with -i"};
    }

    [[nodiscard]] int up() const;
    [[nodiscard]] int down() const;
    [[nodiscard]] int status() const;
    [[nodiscard]] int ping() const;
    [[nodiscard]] int info() const;
    [[nodiscard]] int top() const;

private:
    Options& o_;
};

int Cli::up() const
{
    lite::UpParams p;
    if (!o_.cq.empty()) {
        auto mode = lite::parse_cq_mode(o_.cq);
        if (!mode) {
            throw UsageError{"unknown completion mode '" + o_.cq +
                             "' for --cq (use busy, softirq, workqueue, adaptive or poll)"};
        }
        p.cq_mode = *mode;
    }
    if (!o_.isolation.empty()) {
        auto mode = lite::parse_isolation(o_.isolation);
        if (!mode)
            throw UsageError{"unknown isolation '" + o_.isolation + "' for --isolation (use global or lmr)"};
        p.isolation = *mode;
    }
    if (o_.secret_file.empty())
        return fail("up", {kAuth, "a cluster secret is required (--secret-file)", ENOKEY});
    p.device = o_.dev;
    try {
        p.listen = lite::Endpoint::parse(o_.listen);
        if (!o_.join.empty())
            p.join = lite::Endpoint::parse(o_.join);
    } catch (const lite::Error& e) {
        throw UsageError{e.what()};
    }
    p.port = o_.port;
    if (o_.timeout_ms)
        p.timeout = std::chrono::milliseconds(o_.timeout_ms);
    p.secret = lite::read_secret_file(o_.secret_file);

    auto dev = lite::Device::open();
    try {
        auto r = dev.up(p);
        json j;
        j["instance"] = r.instance;
        j["node_id"] = r.node_id;
        j["role"] = p.join ? "member" : "manager";
        j["device"] = p.device;
        j["listen"] = p.listen.to_string();
        if (p.join)
            j["joined"] = p.join->to_string();
        return finish(j, "instance " + std::to_string(r.instance) + ": node " + std::to_string(r.node_id) +
                             (p.join ? ", joined the cluster of " + p.join->to_string()
                                     : std::string(", manager of a new cluster")) +
                             ", listening on " + p.listen.to_string() + " (" + p.device + ")\n");
    } catch (const lite::Error& e) {
        std::string ctx;
        switch (e.errnum()) {
        case ENODEV:
        case ENXIO:
            ctx = p.device;
            break;
        case EADDRINUSE:
        case EADDRNOTAVAIL:
            ctx = p.listen.to_string();
            break;
        default:
            ctx = p.join ? p.join->to_string() : p.listen.to_string();
        }
        return fail("up", explain(e, "up", ctx));
    }
}

int Cli::down() const
{
    auto dev = lite::Device::open();
    uint32_t inst = pick_instance(dev);
    try {
        dev.down(inst);
    } catch (const lite::Error& e) {
        return fail("down", explain(e, "down", std::to_string(inst)));
    }
    json j;
    j["instance"] = inst;
    j["down"] = true;
    return finish(j, "instance " + std::to_string(inst) + " is down\n");
}

json to_json(const lite::NodeStatus& s)
{
    const auto& c = s.counters;
    json j;
    j["instance"] = s.instance;
    j["node_id"] = s.node_id;
    j["manager_id"] = s.manager_id;
    j["epoch"] = s.epoch;
    j["device"] = s.device;
    j["port"] = s.port;
    j["listen"] = s.listen.to_string();
    j["cq_mode"] = lite::cq_mode_name(s.cq_mode);
    j["isolation"] = lite::isolation_name(s.isolation);
    j["counters"] = {{"joins", c.joins},           {"leaves", c.leaves},
                     {"losses", c.losses},         {"auth_failures", c.auth_failures},
                     {"bad_msgs", c.bad_msgs},     {"timeouts", c.timeouts},
                     {"mem_bytes", c.mem_bytes},   {"mem_lmrs", c.mem_lmrs},
                     {"reconnects", s.reconnects}, {"async_inflight", s.async_inflight},
                     {"async_peak", s.async_peak}};
    const auto& d = s.dsm;
    j["dsm"] = {{"regions", d.regions},           {"pages", d.pages},
                {"read_faults", d.read_faults},   {"write_faults", d.write_faults},
                {"fetches", d.fetches},           {"invalidations", d.invalidations},
                {"home_txns", d.home_txns},       {"sigbus", d.sigbus},
                {"prot_changes", d.prot_changes}, {"prot_ns", d.prot_ns}};
    const auto& l = s.lease;
    j["lease"] = {{"hits", l.hits},
                  {"misses", l.misses},
                  {"stock_lmrs", l.stock_lmrs},
                  {"stock_bytes", l.stock_bytes},
                  {"granted_lmrs", l.granted_lmrs},
                  {"granted_bytes", l.granted_bytes}};
    j["expelled"] = s.expelled;
    j["no_manager"] = s.no_manager;
    j["members"] = json::array();
    for (const auto& m : s.members) {
        j["members"].push_back({{"node_id", m.node_id},
                                {"state", lite::peer_state_name(m.state)},
                                {"addr", m.addr.to_string()},
                                {"tx_msgs", m.tx_msgs},
                                {"rx_msgs", m.rx_msgs},
                                {"tx_bytes", m.tx_bytes},
                                {"rx_bytes", m.rx_bytes},
                                {"last_rtt_ns", m.last_rtt.count()},
                                {"credits", m.credits},
                                {"backlog", m.backlog}});
    }
    return j;
}

std::string to_text(const lite::NodeStatus& s)
{
    const auto& c = s.counters;
    std::string out;
    char line[512];
    auto add = [&](int n) { out.append(line, static_cast<size_t>(std::max(0, std::min<int>(n, sizeof(line) - 1)))); };
    add(std::snprintf(line, sizeof(line), "instance %u: node %u%s on %s port %u, listening on %s\n", s.instance,
                      s.node_id, s.node_id && s.node_id == s.manager_id ? " (manager)" : "", s.device.c_str(), s.port,
                      s.listen.to_string().c_str()));
    add(std::snprintf(line, sizeof(line), "  cluster: %zu members, manager %u%s, epoch %u\n", s.members.size(),
                      s.manager_id, s.no_manager ? " (gone: no joins)" : "", s.epoch));
    if (s.expelled)
        out += "  EXPELLED: the cluster dropped this node; bring it up again to rejoin\n";
    out += std::string("  completion mode: ") + lite::cq_mode_name(s.cq_mode) + "\n";
    out += std::string("  isolation: ") + lite::isolation_name(s.isolation) + "\n";
    add(std::snprintf(line, sizeof(line), "  %-5s %-11s %-24s %9s %9s %11s %7s\n", "NODE", "STATE", "ADDRESS",
                      "TX MSGS", "RX MSGS", "LAST RTT", "CREDITS"));
    for (const auto& m : s.members) {
        std::string rtt = m.last_rtt.count() ? std::to_string(m.last_rtt.count() / 1000) + " us" : "-";
        add(std::snprintf(line, sizeof(line), "  %-5u %-11s %-24s %9llu %9llu %11s %7u\n", m.node_id,
                          lite::peer_state_name(m.state), m.addr.to_string().c_str(),
                          static_cast<unsigned long long>(m.tx_msgs), static_cast<unsigned long long>(m.rx_msgs),
                          rtt.c_str(), m.credits));
    }
    add(std::snprintf(line, sizeof(line),
                      "  counters: joins %llu, leaves %llu, losses %llu, reconnects %u, auth failures %llu, "
                      "bad messages %llu, timeouts %llu\n",
                      static_cast<unsigned long long>(c.joins), static_cast<unsigned long long>(c.leaves),
                      static_cast<unsigned long long>(c.losses), s.reconnects,
                      static_cast<unsigned long long>(c.auth_failures), static_cast<unsigned long long>(c.bad_msgs),
                      static_cast<unsigned long long>(c.timeouts)));
    add(std::snprintf(line, sizeof(line), "  memory held for the cluster: %llu bytes in %llu LMRs\n",
                      static_cast<unsigned long long>(c.mem_bytes), static_cast<unsigned long long>(c.mem_lmrs)));
    const auto& l = s.lease;
    add(std::snprintf(line, sizeof(line),
                      "  leases: %llu allocations from stock, %llu asked the memory node; stock %llu bytes in %llu "
                      "LMRs; granted to leases %llu bytes in %llu LMRs\n",
                      static_cast<unsigned long long>(l.hits), static_cast<unsigned long long>(l.misses),
                      static_cast<unsigned long long>(l.stock_bytes), static_cast<unsigned long long>(l.stock_lmrs),
                      static_cast<unsigned long long>(l.granted_bytes),
                      static_cast<unsigned long long>(l.granted_lmrs)));
    const auto& d = s.dsm;
    add(std::snprintf(line, sizeof(line),
                      "  DSM: %llu regions open, %llu pages held; faults %llu read, %llu write; %llu pages "
                      "fetched, %llu copies dropped, %llu home transactions, %llu SIGBUS; %llu page-table "
                      "changes in %llu us\n",
                      static_cast<unsigned long long>(d.regions), static_cast<unsigned long long>(d.pages),
                      static_cast<unsigned long long>(d.read_faults), static_cast<unsigned long long>(d.write_faults),
                      static_cast<unsigned long long>(d.fetches), static_cast<unsigned long long>(d.invalidations),
                      static_cast<unsigned long long>(d.home_txns), static_cast<unsigned long long>(d.sigbus),
                      static_cast<unsigned long long>(d.prot_changes),
                      static_cast<unsigned long long>(d.prot_ns / 1000)));
    return out;
}

int Cli::status() const
{
    auto dev = lite::Device::open();
    std::vector<uint32_t> ids = o_.instance ? std::vector<uint32_t>{*o_.instance} : dev.instances();
    json j = json::array();
    std::string text;
    for (auto id : ids) {
        try {
            auto s = dev.status(id);
            j.push_back(to_json(s));
            text += to_text(s);
        } catch (const lite::Error& e) {
            if (!o_.instance && e.errnum() == ENOENT)
                continue; // went down meanwhile
            return fail("status", explain(e, "status", std::to_string(id)));
        }
    }
    if (j.empty())
        text = "no lite nodes on this host\n";
    return finish(j, text);
}

// A duration in microseconds, for printing.
double us(std::chrono::nanoseconds d)
{
    return std::chrono::duration<double, std::micro>(d).count();
}

int Cli::ping() const
{
    auto dev = lite::Device::open();
    uint32_t inst = pick_instance(dev);
    std::chrono::nanoseconds min{0}, max{0}, sum{0};
    json rtts = json::array();
    std::string text;
    char line[128];
    for (uint32_t i = 0; i < o_.count; i++) {
        std::chrono::nanoseconds rtt{};
        try {
            rtt = dev.ping(inst, o_.node);
        } catch (const lite::Error& e) {
            return fail("ping", explain(e, "ping", "node " + std::to_string(o_.node)));
        }
        (void)std::snprintf(line, sizeof(line), "reply from node %u: seq=%u rtt=%.1f us\n", o_.node, i, us(rtt));
        if (!o_.json)
            std::cout << line << std::flush; // as they come
        rtts.push_back(rtt.count());
        min = i == 0 || rtt < min ? rtt : min;
        max = rtt > max ? rtt : max;
        sum += rtt;
    }
    json j;
    j["instance"] = inst;
    j["node"] = o_.node;
    j["rtt_ns"] = rtts;
    if (o_.count) {
        (void)std::snprintf(line, sizeof(line), "node %u: %u replies, rtt min/avg/max = %.1f/%.1f/%.1f us\n", o_.node,
                            o_.count, us(min), us(sum) / o_.count, us(max));
        text = line;
    }
    return finish(j, text);
}

// The rates of one member between two samples, per second.
json member_rates(const lite::Member& now, const lite::Member* then, double dt)
{
    auto rate = [&](uint64_t a, uint64_t b) {
        return then != nullptr && a >= b ? static_cast<double>(a - b) / dt : 0.0;
    };
    return {{"node_id", now.node_id},
            {"state", lite::peer_state_name(now.state)},
            {"tx_msgs_per_s", rate(now.tx_msgs, then ? then->tx_msgs : 0)},
            {"rx_msgs_per_s", rate(now.rx_msgs, then ? then->rx_msgs : 0)},
            {"tx_bytes_per_s", rate(now.tx_bytes, then ? then->tx_bytes : 0)},
            {"rx_bytes_per_s", rate(now.rx_bytes, then ? then->rx_bytes : 0)},
            {"last_rtt_ns", now.last_rtt.count()},
            {"credits", now.credits},
            {"backlog", now.backlog}};
}

// One round of top for a node: its counters now and what changed per
// second since @then (the previous round's status of the same instance).
json node_rates(const lite::NodeStatus& now, const lite::NodeStatus& then, double dt)
{
    auto rate = [dt](uint64_t a, uint64_t b) { return a >= b ? static_cast<double>(a - b) / dt : 0.0; };
    json j;
    j["instance"] = now.instance;
    j["node_id"] = now.node_id;
    j["mem_bytes"] = now.counters.mem_bytes;
    j["mem_lmrs"] = now.counters.mem_lmrs;
    j["async_inflight"] = now.async_inflight;
    j["timeouts_per_s"] = rate(now.counters.timeouts, then.counters.timeouts);
    j["bad_msgs_per_s"] = rate(now.counters.bad_msgs, then.counters.bad_msgs);
    j["dsm_faults_per_s"] =
        rate(now.dsm.read_faults + now.dsm.write_faults, then.dsm.read_faults + then.dsm.write_faults);
    j["lease_hits_per_s"] = rate(now.lease.hits, then.lease.hits);
    j["members"] = json::array();
    for (const auto& m : now.members) {
        const lite::Member* before = nullptr;
        for (const auto& b : then.members) {
            if (b.node_id == m.node_id)
                before = &b;
        }
        j["members"].push_back(member_rates(m, before, dt));
    }
    return j;
}

std::string top_text(const json& round)
{
    std::string out;
    char line[256];
    for (const auto& n : round["nodes"]) {
        (void)std::snprintf(line, sizeof(line),
                            "instance %u, node %u: %llu LMRs (%llu bytes) held, %u async in flight; per s: "
                            "%.0f timeouts, %.0f bad msgs, %.0f DSM faults, %.0f lease hits\n",
                            n["instance"].get<unsigned>(), n["node_id"].get<unsigned>(),
                            n["mem_lmrs"].get<unsigned long long>(), n["mem_bytes"].get<unsigned long long>(),
                            n["async_inflight"].get<unsigned>(), n["timeouts_per_s"].get<double>(),
                            n["bad_msgs_per_s"].get<double>(), n["dsm_faults_per_s"].get<double>(),
                            n["lease_hits_per_s"].get<double>());
        out += line;
        (void)std::snprintf(line, sizeof(line), "  %-5s %-11s %10s %10s %10s %10s %9s %7s %7s\n", "NODE", "STATE",
                            "TX MSG/S", "RX MSG/S", "TX KB/S", "RX KB/S", "RTT US", "CREDITS", "BACKLOG");
        out += line;
        for (const auto& m : n["members"]) {
            (void)std::snprintf(line, sizeof(line), "  %-5u %-11s %10.0f %10.0f %10.1f %10.1f %9.1f %7u %7u\n",
                                m["node_id"].get<unsigned>(), m["state"].get<std::string>().c_str(),
                                m["tx_msgs_per_s"].get<double>(), m["rx_msgs_per_s"].get<double>(),
                                m["tx_bytes_per_s"].get<double>() / 1024, m["rx_bytes_per_s"].get<double>() / 1024,
                                static_cast<double>(m["last_rtt_ns"].get<long long>()) / 1000,
                                m["credits"].get<unsigned>(), m["backlog"].get<unsigned>());
            out += line;
        }
    }
    return out;
}

// litectl top: every interval, the counters of the nodes (one, or all) and
// their rates since the round before; --json: one JSON object per line and
// round. Runs --count rounds, or until interrupted.
int Cli::top() const
{
    auto dev = lite::Device::open();
    auto ids = o_.instance ? std::vector<uint32_t>{*o_.instance} : dev.instances();
    auto sample = [&] {
        std::vector<lite::NodeStatus> all;
        all.reserve(ids.size());
        for (auto id : ids)
            all.push_back(dev.status(id));
        return all;
    };
    std::vector<lite::NodeStatus> then;
    try {
        then = sample();
    } catch (const lite::Error& e) {
        return fail("top", explain(e, "top", o_.instance ? std::to_string(*o_.instance) : ""));
    }
    const bool tty = ::isatty(STDOUT_FILENO) != 0 && !o_.json;
    auto last = std::chrono::steady_clock::now();
    for (uint32_t r = 0; o_.rounds == 0 || r < o_.rounds; r++) {
        std::this_thread::sleep_for(std::chrono::duration<double>(o_.interval_s));
        std::vector<lite::NodeStatus> now;
        try {
            now = sample();
        } catch (const lite::Error& e) {
            return fail("top", explain(e, "top", ""));
        }
        const auto at = std::chrono::steady_clock::now();
        const double dt = std::chrono::duration<double>(at - last).count();
        json round;
        round["round"] = r + 1;
        round["interval_s"] = dt;
        round["nodes"] = json::array();
        for (size_t i = 0; i < now.size(); i++)
            round["nodes"].push_back(node_rates(now[i], then[i], dt));
        if (o_.json) {
            std::cout << round.dump() << "\n" << std::flush;
        } else {
            std::cout << (tty ? "\033[H\033[2J" : "") << "litectl top: round " << r + 1 << ", every " << o_.interval_s
                      << " s\n"
                      << top_text(round) << std::flush;
        }
        then = std::move(now);
        last = at;
    }
    return kOk;
}

int Cli::info() const
{
    auto dev = lite::Device::open();
    auto ids = dev.instances();
    json j;
    j["version"] = LITE_PROJECT_VERSION;
    j["abi"] = dev.abi_version();
    j["instances"] = ids;
    std::string text = "lite " LITE_PROJECT_VERSION ", ABI " + std::to_string(dev.abi_version()) + ", " +
                       std::to_string(ids.size()) + " instance(s)";
    for (auto id : ids)
        text += " " + std::to_string(id);
    return finish(j, text + "\n");
}

// The value of option --config in @args (after the command), or "".
std::string config_arg(const std::vector<std::string>& args)
{
    for (size_t i = 1; i < args.size(); i++) {
        if (args[i] == "--config" && i + 1 < args.size())
            return args[i + 1];
        if (args[i].starts_with("--config="))
            return args[i].substr(std::strlen("--config="));
    }
    return {};
}

// litectl up|down --config FILE: each KEY = VALUE line of FILE (CLI11's
// INI reader) becomes --KEY=VALUE after @args, unless @args give that
// option themselves; down takes only listen from it.
std::vector<std::string> with_config(std::vector<std::string> args, const CLI::App& app, const std::string& cmd)
{
    const std::string file = config_arg(args);
    if (file.empty() || (cmd != "up" && cmd != "down"))
        return args;
    const CLI::App* up = app.get_subcommand("up");
    std::vector<CLI::ConfigItem> items;
    try {
        items = CLI::ConfigINI().from_file(file);
    } catch (const CLI::FileError& e) {
        throw UsageError{"--config " + file + ": " + e.what()};
    }
    auto given = [&args](const std::string& opt) {
        return std::any_of(args.begin(), args.end(),
                           [&opt](const std::string& a) { return a == opt || a.starts_with(opt + "="); });
    };
    for (const auto& it : items) {
        if (it.name == "++" || it.name == "--") // section markers
            continue;
        if (!it.parents.empty())
            throw UsageError{"--config " + file + ": no sections ([" + it.parents.front() + "])"};
        if (it.inputs.size() != 1)
            throw UsageError{"--config " + file + ": " + it.name + " needs one value"};
        const std::string opt = "--" + it.name;
        if (it.name == "config" || up->get_option_no_throw(opt) == nullptr) {
            throw UsageError{"--config " + file + ": unknown key '" + it.name +
                             "' (keys are litectl up's long options)"};
        }
        if ((cmd == "down" && it.name != "listen") || given(opt))
            continue;
        args.push_back(opt + "=" + it.inputs.front());
    }
    return args;
}

int run(int argc, char** argv)
{
    Options o;
    Cli cli(o);
    CLI::App app{"litectl: bring lite nodes up and down, show their status, ping members", "litectl"};
    app.set_version_flag("--version", "litectl " LITE_PROJECT_VERSION);
    app.add_flag("--json", o.json, "print the result as JSON (errors too, besides the message on stderr)");
    app.require_subcommand(1, 1);
    app.fallthrough(); // --json after the command too
    app.footer("Exit codes: 0 ok, 1 other error, 2 usage, 3 module not loaded, 4 not privileged, "
               "5 no such device or instance, 6 secret refused or missing, 7 manager or node unreachable.\n"
               "See litectl(1).");

    auto* up = app.add_subcommand("up", "create a node on an RDMA device: the manager of a new cluster, or a member "
                                        "joining one (--join)");
    up->add_option("--dev", o.dev, "RDMA device, e.g. rxe0")->required();
    up->add_option("--listen", o.listen, "address and port the node listens on, ADDR:PORT")->required();
    up->add_option("--secret-file", o.secret_file, "file holding the cluster secret");
    up->add_option("--join", o.join, "the manager's ADDR:PORT: join its cluster");
    up->add_option("--port", o.port, "port of the RDMA device (default: its first)");
    up->add_option("--timeout", o.timeout_ms, "join timeout, ms")->check(CLI::Range(1U, 60000U));
    up->add_option("--cq", o.cq,
                   "completion mode: busy, softirq, workqueue, adaptive or poll (default: the module "
                   "parameter cq_mode, the measured best)");
    up->add_option("--isolation", o.isolation,
                   "what peers may reach: global (one key for all memory) or lmr (a key "
                   "per chunk they were given)");
    const std::string config_help = "read the options from FILE: one KEY = VALUE line per long option, "
                                    "as /etc/lite/NAME.conf (lite@.service)";
    std::string config_file; // read by with_config() before parsing
    up->add_option("--config", config_file, config_help);

    auto* down = app.add_subcommand("down", "leave the cluster and remove the node");
    auto* down_inst = down->add_option("-i,--instance", o.instance, "the instance (default: the only one)");
    down->add_option("--listen", o.listen, "the instance listening on ADDR:PORT")->excludes(down_inst);
    down->add_option("--config", config_file, config_help + "; only listen counts");

    auto* status = app.add_subcommand("status", "node id, members, per-peer connection state and counters");
    status->add_option("-i,--instance", o.instance, "one instance (default: all)");

    auto* ping = app.add_subcommand("ping", "control-plane round trips to a member");
    ping->add_option("-i,--instance", o.instance, "the instance (default: the only one)");
    ping->add_option("-c,--count", o.count, "how many (default 3)");
    ping->add_option("NODE", o.node, "the member's node id")->required();

    auto* info = app.add_subcommand("info", "version, ABI version and instances");

    auto* top = app.add_subcommand("top", "a live view of the counters: rates per second, every interval");
    top->add_option("-i,--instance", o.instance, "one instance (default: all)");
    top->add_option("-n,--count", o.rounds, "rounds to show (default: until interrupted)")
        ->check(CLI::Range(1U, 1000000U));
    top->add_option("-d,--interval", o.interval_s, "seconds between rounds (default 1)")
        ->check(CLI::Range(0.1, 3600.0));

    auto* help = app.add_subcommand("help", "this help, or a command's: litectl help COMMAND");
    std::string help_for;
    help->add_option("COMMAND", help_for, "the command");

    const std::string usage = app.help(); // (after parsing it would be the command's)
    if (argc < 2) {
        std::cerr << usage;
        return kUsage;
    }
    for (int i = 1; i < argc; i++) { // the first word that is not an option
        const std::string w = argv[i];
        if (w.starts_with("-"))
            continue;
        const auto subs = app.get_subcommands([&w](CLI::App* c) { return c->get_name() == w; });
        if (subs.empty()) {
            std::cerr << "litectl: unknown command '" << w << "' (litectl help lists them)\n";
            return kUsage;
        }
        break;
    }
    try {
        std::vector<std::string> args(argv, argv + argc);
        const auto cmd_at =
            std::find_if(args.begin() + 1, args.end(), [](const std::string& w) { return !w.starts_with("-"); });
        const std::string command = cmd_at == args.end() ? "" : *cmd_at;
        args = with_config(std::move(args), app, command);
        std::reverse(args.begin(), args.end()); // CLI11 takes them last first
        args.pop_back();                        // without the program's name
        app.parse(std::move(args));
    } catch (const UsageError& e) {
        std::cerr << "litectl: " << e.msg << "\n";
        return kUsage;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) { // --help, --version
            app.exit(e);
            return kOk;
        }
        std::cerr << "litectl: " << e.what() << "\n(litectl help, or litectl COMMAND --help)\n";
        return kUsage;
    }

    std::string cmd = app.get_subcommands().front()->get_name();
    try {
        if (cmd == "help") {
            if (help_for.empty()) {
                std::cout << usage;
                return kOk;
            }
            for (auto* c : {up, down, status, ping, info, top}) {
                if (c->get_name() == help_for) {
                    std::cout << c->help();
                    return kOk;
                }
            }
            throw UsageError{"no command '" + help_for + "' (litectl help lists them)"};
        }
        if (cmd == "up")
            return cli.up();
        if (cmd == "down")
            return cli.down();
        if (cmd == "status")
            return cli.status();
        if (cmd == "ping")
            return cli.ping();
        if (cmd == "top")
            return cli.top();
        return cli.info();
    } catch (const UsageError& e) {
        return cli.fail(cmd, {kUsage, e.msg, EINVAL});
    } catch (const lite::Error& e) {
        return cli.fail(cmd, explain(e, cmd, ""));
    }
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception& e) { // e.g. an unreadable secret file
        (void)std::fputs(("litectl: " + std::string(e.what()) + "\n").c_str(), stderr);
    } catch (...) {
        (void)std::fputs("litectl: failed\n", stderr);
    }
    return kError;
}
