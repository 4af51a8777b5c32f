// SPDX-License-Identifier: MIT
//
// litectl: bring lite nodes up and down, join clusters, show status, ping.
//
// Exit codes (also in docs/litectl.md):
//   0 ok, 1 other error, 2 usage, 3 module not loaded, 4 not privileged,
//   5 no such device/instance, 6 secret refused or missing,
//   7 manager or node unreachable.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <lite/lite.hpp>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace
{

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

constexpr const char* kUsageText = R"(usage: litectl <command> [options]

commands:
  up --dev DEV --listen ADDR:PORT --secret-file FILE [--join ADDR:PORT]
     [--port N] [--timeout MS] [--cq busy|softirq|workqueue|adaptive|poll]
     [--isolation global|lmr]
        create a node on RDMA device DEV; without --join it becomes the
        manager (node 1) of a new cluster, with --join it joins the cluster
        whose manager listens at ADDR:PORT; --cq picks how the node takes
        completions (default: the measured best); --isolation what peers
        may reach of its memory: all of it with one key (global, the
        default) or only what they were given, each chunk with its own key
        (lmr)
  down [-i INSTANCE]      leave the cluster and remove the node
  status [-i INSTANCE] [--json]
                          node id, members, per-peer connection state and
                          counters (all instances without -i)
  ping [-i INSTANCE] [-c COUNT] NODE
                          control-plane round trips to member NODE
  info                    ABI version and instances

INSTANCE defaults to the only instance when there is exactly one.
)";

struct UsageError {
    std::string msg;
};

class Args
{
public:
    Args(int argc, char** argv) : args_(argv + 2, argv + argc) {}

    std::optional<std::string> take(const std::string& name)
    {
        for (size_t i = 0; i < args_.size(); i++) {
            if (args_[i] != name)
                continue;
            if (i + 1 >= args_.size())
                throw UsageError{name + " needs a value"};
            std::string v = args_[i + 1];
            args_.erase(args_.begin() + static_cast<long>(i), args_.begin() + static_cast<long>(i) + 2);
            return v;
        }
        return std::nullopt;
    }

    bool flag(const std::string& name)
    {
        for (size_t i = 0; i < args_.size(); i++) {
            if (args_[i] == name) {
                args_.erase(args_.begin() + static_cast<long>(i));
                return true;
            }
        }
        return false;
    }

    std::vector<std::string> rest()
    {
        for (const auto& a : args_) {
            if (a.starts_with("-")) {
                throw UsageError{"unknown option " + a};
            }
        }
        return args_;
    }

private:
    std::vector<std::string> args_;
};

uint32_t to_u32(const std::string& text, const char* what)
{
    try {
        size_t pos = 0;
        unsigned long v = std::stoul(text, &pos, 10);
        if (pos == text.size() && v <= 0xffffffffUL)
            return static_cast<uint32_t>(v);
    } catch (const std::exception&) {
    }
    throw UsageError{std::string(what) + " must be a number, not '" + text + "'"};
}

// Map an error to a message a user can act on, and an exit code.
int report(const lite::Error& e, const std::string& cmd, const std::string& context)
{
    int err = e.errnum();
    std::string msg;
    int code = kError;

    switch (err) {
    case ENOENT:
    case ENXIO:
        if (std::string(e.what()).starts_with("open ")) {
            msg = "/dev/lite not found: the lite kernel module is not loaded (insmod lite.ko)";
            code = kNoModule;
        } else if (cmd == "ping") {
            msg = context + " is not a member of this cluster";
            code = kNoDevice;
        } else if (err == ENXIO) {
            msg = "no such port on " + context;
            code = kNoDevice;
        } else {
            msg = "no such instance" + (context.empty() ? std::string() : " " + context) + " (see: litectl info)";
            code = kNoDevice;
        }
        break;
    case EPERM:
    case EACCES:
        if (std::string(e.what()).starts_with("open ")) {
            msg = "/dev/lite: permission denied: its users are root and group lite "
                  "(add the user to it; make install-udev sets the group up)";
        } else {
            msg = "not permitted: " + cmd + " needs CAP_NET_ADMIN (run as root)";
        }
        code = kNoPriv;
        break;
    case ENODEV:
        msg = "no RDMA device named '" + context + "' (see: rdma link show)";
        code = kNoDevice;
        break;
    case EKEYREJECTED:
        msg = "join refused: the cluster secret does not match the manager's";
        code = kAuth;
        break;
    case ENOKEY:
        msg = "a cluster secret is required (--secret-file)";
        code = kAuth;
        break;
    case EAGAIN:
        msg = "join refused for now: a member did not acknowledge the new node in time; try again";
        code = kUnreachable;
        break;
    case ENOSPC:
        msg = "join refused: the cluster has its maximum of " + std::to_string(LITE_MAX_NODES) + " members";
        break;
    case ECONNREFUSED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNRESET:
    case ECONNABORTED:
    case ENOTCONN:
        msg = (cmd == "ping" ? "node " : "manager at ") + context + " unreachable: " + std::strerror(err);
        code = kUnreachable;
        break;
    case EOPNOTSUPP:
        msg = "the node at " + context + " is not the cluster manager";
        code = kUnreachable;
        break;
    case EADDRINUSE:
        msg = "address " + context + " is already used by a node";
        break;
    case EADDRNOTAVAIL:
        msg = "address " + context + " does not belong to that RDMA device and port";
        break;
    default:
        msg = std::string(e.what());
        break;
    }
    std::cerr << "litectl " << cmd << ": " << msg << "\n";
    return code;
}

uint32_t pick_instance(const lite::Device& dev, Args& args)
{
    if (auto i = args.take("-i"))
        return to_u32(*i, "instance");
    auto ids = dev.instances();
    if (ids.size() == 1)
        return ids[0];
    if (ids.empty())
        throw lite::Error(ENOENT, "no instance");
    throw UsageError{"several instances exist: choose one with -i"};
}

int cmd_up(Args& args)
{
    lite::UpParams p;
    auto dev_name = args.take("--dev");
    auto listen = args.take("--listen");
    auto secret = args.take("--secret-file");
    auto join = args.take("--join");
    auto port = args.take("--port");
    auto timeout = args.take("--timeout");
    auto cq = args.take("--cq");
    auto isolation = args.take("--isolation");
    args.rest();
    if (!dev_name || !listen)
        throw UsageError{"up needs --dev and --listen"};
    if (cq) {
        auto mode = lite::parse_cq_mode(*cq);
        if (!mode) {
            throw UsageError{"unknown completion mode '" + *cq +
                             "' for --cq (use busy, softirq, workqueue, adaptive or poll)"};
        }
        p.cq_mode = *mode;
    }
    if (isolation) {
        auto mode = lite::parse_isolation(*isolation);
        if (!mode)
            throw UsageError{"unknown isolation '" + *isolation + "' for --isolation (use global or lmr)"};
        p.isolation = *mode;
    }
    if (!secret) {
        std::cerr << "litectl up: a cluster secret is required (--secret-file)\n";
        return kAuth;
    }
    p.device = *dev_name;
    p.listen = lite::Endpoint::parse(*listen);
    if (join)
        p.join = lite::Endpoint::parse(*join);
    if (port)
        p.port = to_u32(*port, "--port");
    if (timeout)
        p.timeout = std::chrono::milliseconds(to_u32(*timeout, "--timeout"));
    p.secret = lite::read_secret_file(*secret);

    auto dev = lite::Device::open();
    try {
        auto r = dev.up(p);
        std::cout << "instance " << r.instance << ": node " << r.node_id
                  << (join ? ", joined the cluster of " + *join : std::string(", manager of a new cluster"))
                  << ", listening on " << p.listen.to_string() << " (" << p.device << ")\n";
    } catch (const lite::Error& e) {
        std::string ctx;
        switch (e.errnum()) {
        case ENODEV:
        case ENXIO:
            ctx = *dev_name;
            break;
        case EADDRINUSE:
        case EADDRNOTAVAIL:
            ctx = p.listen.to_string();
            break;
        default:
            ctx = join ? p.join->to_string() : p.listen.to_string();
        }
        return report(e, "up", ctx);
    }
    return kOk;
}

int cmd_down(Args& args)
{
    auto dev = lite::Device::open();
    uint32_t inst = pick_instance(dev, args);
    args.rest();
    try {
        dev.down(inst);
    } catch (const lite::Error& e) {
        return report(e, "down", std::to_string(inst));
    }
    std::cout << "instance " << inst << " is down\n";
    return kOk;
}

std::string json_escape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    return out;
}

void print_json(const std::vector<lite::NodeStatus>& nodes)
{
    std::ostringstream o;
    o << "[";
    for (size_t n = 0; n < nodes.size(); n++) {
        const auto& s = nodes[n];
        const auto& c = s.counters;
        o << (n ? "," : "") << "\n"
          << R"(  {"instance": )" << s.instance << R"(, "node_id": )" << s.node_id << R"(, "manager_id": )"
          << s.manager_id << R"(, "epoch": )" << s.epoch << R"(, "device": ")" << json_escape(s.device)
          << R"(", "port": )" << s.port << R"(, "listen": ")" << json_escape(s.listen.to_string())
          << R"(", "cq_mode": ")" << lite::cq_mode_name(s.cq_mode) << R"(", "isolation": ")"
          << lite::isolation_name(s.isolation) << R"(",)"
          << "\n"
          << R"(   "counters": {"joins": )" << c.joins << R"(, "leaves": )" << c.leaves << R"(, "losses": )" << c.losses
          << R"(, "auth_failures": )" << c.auth_failures << R"(, "bad_msgs": )" << c.bad_msgs << R"(, "timeouts": )"
          << c.timeouts << R"(, "mem_bytes": )" << c.mem_bytes << R"(, "mem_lmrs": )" << c.mem_lmrs
          << R"(, "reconnects": )" << s.reconnects << "},\n"
          << R"(   "dsm": {"regions": )" << s.dsm.regions << R"(, "pages": )" << s.dsm.pages << R"(, "read_faults": )"
          << s.dsm.read_faults << R"(, "write_faults": )" << s.dsm.write_faults << R"(, "fetches": )" << s.dsm.fetches
          << R"(, "invalidations": )" << s.dsm.invalidations << R"(, "home_txns": )" << s.dsm.home_txns
          << R"(, "sigbus": )" << s.dsm.sigbus << R"(, "prot_changes": )" << s.dsm.prot_changes << R"(, "prot_ns": )"
          << s.dsm.prot_ns << "},\n"
          << R"(   "lease": {"hits": )" << s.lease.hits << R"(, "misses": )" << s.lease.misses << R"(, "stock_lmrs": )"
          << s.lease.stock_lmrs << R"(, "stock_bytes": )" << s.lease.stock_bytes << R"(, "granted_lmrs": )"
          << s.lease.granted_lmrs << R"(, "granted_bytes": )" << s.lease.granted_bytes << "},\n"
          << R"(   "expelled": )" << (s.expelled ? "true" : "false") << R"(, "no_manager": )"
          << (s.no_manager ? "true" : "false") << ",\n"
          << R"(   "members": [)";
        for (size_t i = 0; i < s.members.size(); i++) {
            const auto& m = s.members[i];
            o << (i ? "," : "") << "\n"
              << R"(     {"node_id": )" << m.node_id << R"(, "state": ")" << lite::peer_state_name(m.state)
              << R"(", "addr": ")" << json_escape(m.addr.to_string()) << R"(", "tx_msgs": )" << m.tx_msgs
              << R"(, "rx_msgs": )" << m.rx_msgs << R"(, "tx_bytes": )" << m.tx_bytes << R"(, "rx_bytes": )"
              << m.rx_bytes << R"(, "last_rtt_ns": )" << m.last_rtt.count() << R"(, "credits": )" << m.credits
              << R"(, "backlog": )" << m.backlog << "}";
        }
        o << "]}";
    }
    o << "\n]\n";
    std::cout << o.str();
}

void print_text(const lite::NodeStatus& s)
{
    const auto& c = s.counters;
    std::printf("instance %u: node %u%s on %s port %u, listening on %s\n", s.instance, s.node_id,
                s.node_id && s.node_id == s.manager_id ? " (manager)" : "", s.device.c_str(), s.port,
                s.listen.to_string().c_str());
    std::printf("  cluster: %zu members, manager %u%s, epoch %u\n", s.members.size(), s.manager_id,
                s.no_manager ? " (gone: no joins)" : "", s.epoch);
    if (s.expelled)
        std::printf("  EXPELLED: the cluster dropped this node; bring it up again to rejoin\n");
    std::printf("  completion mode: %s\n", lite::cq_mode_name(s.cq_mode));
    std::printf("  isolation: %s\n", lite::isolation_name(s.isolation));
    std::printf("  %-5s %-11s %-24s %9s %9s %11s %7s\n", "NODE", "STATE", "ADDRESS", "TX MSGS", "RX MSGS", "LAST RTT",
                "CREDITS");
    for (const auto& m : s.members) {
        std::string rtt = m.last_rtt.count() ? std::to_string(m.last_rtt.count() / 1000) + " us" : "-";
        std::printf("  %-5u %-11s %-24s %9llu %9llu %11s %7u\n", m.node_id, lite::peer_state_name(m.state),
                    m.addr.to_string().c_str(), static_cast<unsigned long long>(m.tx_msgs),
                    static_cast<unsigned long long>(m.rx_msgs), rtt.c_str(), m.credits);
    }
    std::printf("  counters: joins %llu, leaves %llu, losses %llu, reconnects %u, auth failures %llu, "
                "bad messages %llu, timeouts %llu\n",
                static_cast<unsigned long long>(c.joins), static_cast<unsigned long long>(c.leaves),
                static_cast<unsigned long long>(c.losses), s.reconnects,
                static_cast<unsigned long long>(c.auth_failures), static_cast<unsigned long long>(c.bad_msgs),
                static_cast<unsigned long long>(c.timeouts));
    std::printf("  memory held for the cluster: %llu bytes in %llu LMRs\n",
                static_cast<unsigned long long>(c.mem_bytes), static_cast<unsigned long long>(c.mem_lmrs));
    const auto& l = s.lease;
    std::printf("  leases: %llu allocations from stock, %llu asked the memory node; stock %llu bytes in %llu "
                "LMRs; granted to leases %llu bytes in %llu LMRs\n",
                static_cast<unsigned long long>(l.hits), static_cast<unsigned long long>(l.misses),
                static_cast<unsigned long long>(l.stock_bytes), static_cast<unsigned long long>(l.stock_lmrs),
                static_cast<unsigned long long>(l.granted_bytes), static_cast<unsigned long long>(l.granted_lmrs));
    const auto& d = s.dsm;
    std::printf("  DSM: %llu regions open, %llu pages held; faults %llu read, %llu write; %llu pages fetched, "
                "%llu copies dropped, %llu home transactions, %llu SIGBUS; %llu page-table changes in %llu us\n",
                static_cast<unsigned long long>(d.regions), static_cast<unsigned long long>(d.pages),
                static_cast<unsigned long long>(d.read_faults), static_cast<unsigned long long>(d.write_faults),
                static_cast<unsigned long long>(d.fetches), static_cast<unsigned long long>(d.invalidations),
                static_cast<unsigned long long>(d.home_txns), static_cast<unsigned long long>(d.sigbus),
                static_cast<unsigned long long>(d.prot_changes), static_cast<unsigned long long>(d.prot_ns / 1000));
}

int cmd_status(Args& args)
{
    auto dev = lite::Device::open();
    bool json = args.flag("--json");
    auto inst = args.take("-i");
    args.rest();
    std::vector<uint32_t> ids;
    if (inst) {
        ids.push_back(to_u32(*inst, "instance"));
    } else {
        ids = dev.instances();
    }

    std::vector<lite::NodeStatus> nodes;
    for (auto id : ids) {
        try {
            nodes.push_back(dev.status(id));
        } catch (const lite::Error& e) {
            if (!inst && e.errnum() == ENOENT)
                continue; // went down meanwhile
            return report(e, "status", std::to_string(id));
        }
    }
    if (json) {
        print_json(nodes);
    } else if (nodes.empty()) {
        std::cout << "no lite nodes on this host\n";
    } else {
        for (const auto& s : nodes)
            print_text(s);
    }
    return kOk;
}

// A duration in microseconds, for printing.
double us(std::chrono::nanoseconds d)
{
    return std::chrono::duration<double, std::micro>(d).count();
}

int cmd_ping(Args& args)
{
    auto dev = lite::Device::open();
    uint32_t inst = pick_instance(dev, args);
    auto count_text = args.take("-c");
    auto rest = args.rest();
    if (rest.size() != 1)
        throw UsageError{"ping needs exactly one NODE"};
    uint32_t node = to_u32(rest[0], "NODE");
    uint32_t count = count_text ? to_u32(*count_text, "-c") : 3;
    std::chrono::nanoseconds min{0}, max{0}, sum{0};

    for (uint32_t i = 0; i < count; i++) {
        std::chrono::nanoseconds rtt;
        try {
            rtt = dev.ping(inst, node);
        } catch (const lite::Error& e) {
            return report(e, "ping", "node " + std::to_string(node));
        }
        std::printf("reply from node %u: seq=%u rtt=%.1f us\n", node, i, us(rtt));
        min = i == 0 || rtt < min ? rtt : min;
        max = rtt > max ? rtt : max;
        sum += rtt;
    }
    if (count) {
        std::printf("node %u: %u replies, rtt min/avg/max = %.1f/%.1f/%.1f us\n", node, count, us(min), us(sum) / count,
                    us(max));
    }
    return kOk;
}

int cmd_info(Args& args)
{
    args.rest();
    auto dev = lite::Device::open();
    auto ids = dev.instances();
    std::cout << "lite ABI " << dev.abi_version() << ", " << ids.size() << " instance(s)";
    for (auto id : ids)
        std::cout << " " << id;
    std::cout << "\n";
    return kOk;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
        std::cout << kUsageText;
        return argc < 2 ? kUsage : kOk;
    }
    std::string cmd = argv[1];
    static const std::map<std::string, int (*)(Args&)> cmds = {
        {"up", cmd_up}, {"down", cmd_down}, {"status", cmd_status}, {"ping", cmd_ping}, {"info", cmd_info},
    };
    auto it = cmds.find(cmd);
    if (it == cmds.end()) {
        std::cerr << "litectl: unknown command '" << cmd << "'\n" << kUsageText;
        return kUsage;
    }
    Args args(argc, argv);
    try {
        return it->second(args);
    } catch (const UsageError& e) {
        std::cerr << "litectl " << cmd << ": " << e.msg << "\n";
        return kUsage;
    } catch (const lite::Error& e) {
        return report(e, cmd, "");
    }
}
