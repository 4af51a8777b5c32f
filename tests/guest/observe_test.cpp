// SPDX-License-Identifier: MIT
// What an operator sees of a node, 3 nodes in one guest: the debugfs files
// say what `litectl status --json` says, and list the connections, RPC
// services, LMRs and locks; the tracepoints (events/lite) show connection
// state changes, control messages, RPC calls and replies, and errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <lite/rpc.hpp>
#include <lite/session.hpp>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodes.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;
using nlohmann::json;

namespace
{

constexpr uint16_t kPort = 19100;
constexpr uint32_t kEchoPort = 7;
constexpr uint32_t kSlowPort = 8;

class Observe : public ThreeNodes<kPort>
{
};

std::vector<std::string> lines_of(const std::string& path)
{
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    return lines;
}

std::vector<std::string> words(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string s; in >> s;)
        w.push_back(s);
    return w;
}

// A "KEY VALUE" file, in order.
std::vector<std::pair<std::string, std::string>> keyvals(uint32_t instance, const std::string& file)
{
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& l : lines_of(debugfs_path(instance, file))) {
        auto w = words(l);
        EXPECT_EQ(w.size(), 2u) << file << ": " << l;
        if (w.size() == 2)
            kv.emplace_back(w[0], w[1]);
    }
    return kv;
}

// A file of a header line and rows: each row by column name. Lines
// before @skip_to_blank's blank line are not part of it; a blank line
// after the rows ends them.
std::vector<std::map<std::string, std::string>> table(uint32_t instance, const std::string& file,
                                                      std::vector<std::string>* header = nullptr,
                                                      bool skip_to_blank = false)
{
    auto lines = lines_of(debugfs_path(instance, file));
    size_t i = 0;
    if (skip_to_blank) {
        while (i < lines.size() && !lines[i].empty())
            i++;
        i++;
    }
    std::vector<std::map<std::string, std::string>> rows;
    if (i >= lines.size()) {
        ADD_FAILURE() << file << ": no header";
        return rows;
    }
    auto cols = words(lines[i]);
    if (header)
        *header = cols;
    for (i++; i < lines.size() && !lines[i].empty(); i++) {
        auto w = words(lines[i]);
        EXPECT_EQ(w.size(), cols.size()) << file << ": " << lines[i];
        std::map<std::string, std::string> row;
        for (size_t c = 0; c < std::min(w.size(), cols.size()); c++)
            row[cols[c]] = w[c];
        rows.push_back(row);
    }
    return rows;
}

json status_json(uint32_t instance)
{
    auto r = run(litectl() + " status --json -i " + std::to_string(instance));
    EXPECT_EQ(r.status, 0) << r.output;
    auto j = json::parse(r.output);
    EXPECT_EQ(j.size(), 1u);
    return j.at(0);
}

// How debugfs prints a JSON scalar: strings bare, the rest as JSON.
std::string text_of(const json& v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

// @dbg read between two status reads @a and @b: a number must lie between
// theirs (counters only grow, gauges of an idle cluster do not move much),
// anything else must equal both.
void expect_between(const std::string& what, const std::string& dbg, const json& a, const json& b)
{
    if (a.is_number_unsigned() && b.is_number_unsigned()) {
        uint64_t v = std::stoull(dbg);
        uint64_t lo = std::min(a.get<uint64_t>(), b.get<uint64_t>());
        uint64_t hi = std::max(a.get<uint64_t>(), b.get<uint64_t>());
        EXPECT_TRUE(v >= lo && v <= hi) << what << ": debugfs " << v << ", status " << a << " then " << b;
        return;
    }
    EXPECT_EQ(a, b) << what << " changed between the status reads";
    EXPECT_EQ(dbg, text_of(a)) << what;
}

// A "KEY VALUE" file (@kv, read between the status reads @a and @b)
// against a JSON object: the same keys, the same values.
void expect_object(const std::string& file, const std::vector<std::pair<std::string, std::string>>& kv, const json& a,
                   const json& b)
{
    std::set<std::string> seen;
    for (const auto& [k, v] : kv) {
        ASSERT_TRUE(a.contains(k)) << file << " has " << k << ", status --json does not";
        std::string what = file;
        what.append(".").append(k);
        expect_between(what, v, a[k], b[k]);
        seen.insert(k);
    }
    for (const auto& [k, v] : a.items()) {
        if (!v.is_structured()) {
            EXPECT_TRUE(seen.count(k)) << file << " lacks " << k << ", which status --json has";
        }
    }
}

size_t echo(const lite::Incoming& /*in*/, std::span<const std::byte> req, std::vector<std::byte>& reply)
{
    reply.assign(req.begin(), req.end());
    std::reverse(reply.begin(), reply.end());
    return reply.size();
}

std::vector<std::byte> pattern(size_t n, unsigned seed)
{
    std::vector<std::byte> b(n);
    for (size_t i = 0; i < n; i++)
        b[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
    return b;
}

// One echo call from @from to node 2, its reply checked.
void echo_call(const lite::Session& from, size_t len)
{
    auto req = pattern(len, 7);
    std::vector<std::byte> reply(len);
    ASSERT_EQ(from.call(2, kEchoPort, req, reply), len);
    std::reverse(reply.begin(), reply.end());
    EXPECT_EQ(reply, req);
}

TEST_F(Observe, DebugfsMatchesStatusJson)
{
    // Something in every file: an LMR of node 1's on node 2 (larger than
    // any lease's size class: no stock LMR has its size), a port on node 2
    // that answered a call.
    auto s1 = lite::Session::open(inst_[0]);
    auto s2 = lite::Session::open(inst_[1]);
    lite::Server srv(s2, kEchoPort, echo);
    echo_call(s1, 100);
    constexpr uint64_t kLmrSize = (3 << 20) + 4096;
    auto lmr = s1.alloc(kLmrSize, 2);

    for (uint32_t inst : inst_) {
        SCOPED_TRACE("instance " + std::to_string(inst));
        auto a = status_json(inst);
        // Every file read between the two status reads.
        auto status = keyvals(inst, "status");
        std::vector<std::string> member_cols;
        auto members = table(inst, "members", &member_cols);
        auto counters = keyvals(inst, "counters");
        auto dsm = keyvals(inst, "dsm");
        auto lease = keyvals(inst, "lease");
        auto b = status_json(inst);

        expect_object("status", status, a, b);
        expect_object("counters", counters, a["counters"], b["counters"]);
        expect_object("dsm", dsm, a["dsm"], b["dsm"]);
        expect_object("lease", lease, a["lease"], b["lease"]);

        // members: the JSON members' keys as columns, one row each.
        std::set<std::string> want_cols;
        for (const auto& [k, v] : a["members"][0].items())
            want_cols.insert(k);
        EXPECT_EQ(std::set<std::string>(member_cols.begin(), member_cols.end()), want_cols);
        ASSERT_EQ(members.size(), a["members"].size());
        ASSERT_EQ(members.size(), 3u);
        for (size_t m = 0; m < members.size(); m++) {
            SCOPED_TRACE("member row " + std::to_string(m));
            for (const auto& [k, v] : members[m]) {
                if (k == "credits" || k == "backlog") // move with every message
                    continue;
                expect_between("members." + k, v, a["members"][m][k], b["members"][m][k]);
            }
        }
    }

    // conns: every member connection ready; the loopback both ways.
    auto conns = table(inst_[0], "conns");
    std::multiset<std::string> peers;
    for (const auto& c : conns) {
        if (c.at("state") != "ready")
            continue;
        peers.insert(c.at("peer"));
        EXPECT_GT(std::stoul(c.at("credits")), 0u);
    }
    EXPECT_EQ(peers.count("2"), 1u);
    EXPECT_EQ(peers.count("3"), 1u);
    EXPECT_GE(peers.count("1"), 1u) << "the loopback connection";
    // The call node 1 made to node 2 set up node 2's ring on node 1's side.
    bool ring = false;
    for (const auto& c : conns)
        ring |= c.at("peer") == "2" && c.at("state") == "ready" && c.at("tx_size") != "-";
    EXPECT_TRUE(ring) << "node 1 writes calls into node 2's ring";

    // rpc: node 2 serves the echo port; nothing is in flight.
    std::map<std::string, std::string> rpc_kv;
    for (const auto& l : lines_of(debugfs_path(inst_[1], "rpc"))) {
        if (l.empty())
            break;
        auto w = words(l);
        ASSERT_EQ(w.size(), 2u) << l;
        rpc_kv[w[0]] = w[1];
    }
    EXPECT_EQ(rpc_kv["calls_in_flight"], "0");
    EXPECT_EQ(rpc_kv["requests_held"], "0");
    auto ports = table(inst_[1], "rpc", nullptr, true);
    ASSERT_EQ(ports.size(), 1u);
    EXPECT_EQ(ports[0].at("port"), std::to_string(kEchoPort));
    EXPECT_EQ(ports[0].at("dead"), "false");

    // lmrs: node 1's LMR on node 2 (beside the leases' stock), held
    // whole, allocated here, not shared.
    int found = 0;
    for (const auto& l : table(inst_[0], "lmrs")) {
        if (l.at("size") != std::to_string(kLmrSize))
            continue;
        found++;
        EXPECT_EQ(l.at("mem_node"), "2");
        EXPECT_EQ(l.at("held"), std::to_string(kLmrSize));
        EXPECT_EQ(l.at("share_id"), "0");
        EXPECT_EQ(l.at("flags"), "-");
    }
    EXPECT_EQ(found, 1);
    // locks: none held or parked.
    auto locks = table(inst_[1], "locks");
    EXPECT_TRUE(locks.empty());
}

// tracefs, wherever it is mounted.
std::string tracefs()
{
    for (const char* p : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
        if (::access((std::string(p) + "/events/lite").c_str(), F_OK) == 0)
            return p;
    }
    return {};
}

void write_to(const std::string& path, const std::string& value)
{
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
    ASSERT_EQ(::write(fd, value.data(), value.size()), static_cast<ssize_t>(value.size())) << path;
    ::close(fd);
}

// Trace lines of event @event that contain every one of @parts.
size_t count_events(const std::vector<std::string>& trace, const std::string& event,
                    const std::vector<std::string>& parts)
{
    return std::count_if(trace.begin(), trace.end(), [&](const std::string& l) {
        if (l.find(" " + event + ": ") == std::string::npos)
            return false;
        return std::all_of(parts.begin(), parts.end(),
                           [&](const std::string& p) { return l.find(p) != std::string::npos; });
    });
}

TEST_F(Observe, TracepointsShowStateMessagesCallsAndErrors)
{
    const std::string tr = tracefs();
    ASSERT_FALSE(tr.empty()) << "no events/lite in tracefs";
    auto s1 = lite::Session::open(inst_[0]);
    auto s2 = lite::Session::open(inst_[1]);
    lite::Server srv(s2, kEchoPort, echo);
    lite::Server slow(s2, kSlowPort, [](const lite::Incoming&, std::span<const std::byte>, std::vector<std::byte>&) {
        std::this_thread::sleep_for(600ms);
        return size_t{0};
    });
    echo_call(s1, 8); // the ring is set up: the traced call is one entry

    write_to(tr + "/trace", "");
    write_to(tr + "/events/lite/enable", "1");
    write_to(tr + "/tracing_on", "1");
    const std::string i0 = "lite" + std::to_string(inst_[0]) + " ";
    const std::string i1 = "lite" + std::to_string(inst_[1]) + " ";

    (void)dev_->ping(inst_[0], 2);
    echo_call(s1, 300);
    std::vector<std::byte> reply(16);
    EXPECT_THROW((void)s1.call(2, kSlowPort, pattern(16, 1), reply, 100ms), lite::Error);
    // A transport error on node 1's connection to node 3, healed by a
    // reconnect.
    ASSERT_EQ(write_debugfs(inst_[0], "break_conn", "3"), 0);
    EXPECT_TRUE(wait_until([&] { return live_members(*dev_, inst_[0]).size() == 3; }, 30s));
    std::this_thread::sleep_for(200ms);
    write_to(tr + "/events/lite/enable", "0");
    auto trace = lines_of(tr + "/trace");
    std::string all;
    for (const auto& l : trace) {
        if (l.find("lite_") != std::string::npos)
            all += l + "\n";
    }
    SCOPED_TRACE("lite events:\n" + all.substr(0, 20000));

    // The ping, both ways, as messages.
    EXPECT_GE(count_events(trace, "lite_msg_send", {i0, "peer=2 type=ping req_id="}), 1u);
    EXPECT_GE(count_events(trace, "lite_msg_recv", {i1, "peer=1 type=ping req_id="}), 1u);
    EXPECT_GE(count_events(trace, "lite_msg_send", {i1, "peer=1 type=ping reply"}), 1u);
    EXPECT_GE(count_events(trace, "lite_msg_recv", {i0, "peer=2 type=ping reply"}), 1u);

    // The echo call: sent, arrived, answered, done - with its call id.
    std::string call_id;
    for (const auto& l : trace) {
        auto at = l.find(" lite_rpc_call: " + i0 + "peer=2 port=7 call_id=");
        if (at != std::string::npos && l.find(" len=300") != std::string::npos) {
            auto w = words(l.substr(l.find("call_id=")));
            call_id = w[0];
        }
    }
    ASSERT_FALSE(call_id.empty()) << "no lite_rpc_call event for the echo call";
    EXPECT_EQ(count_events(trace, "lite_rpc_request", {i1, "peer=1 port=7 " + call_id + " len=300"}), 1u);
    EXPECT_EQ(count_events(trace, "lite_rpc_reply", {i1, "peer=1 " + call_id + " status=0 len=300"}), 1u);
    EXPECT_EQ(count_events(trace, "lite_rpc_done", {i0, "peer=2 " + call_id + " status=0 len=300"}), 1u);

    // The slow call timed out: an error event, counted.
    EXPECT_EQ(count_events(trace, "lite_error", {i0, "peer=2 timeout err=-110"}), 1u);
    // The broken connection closed, and a new one came up.
    EXPECT_GE(count_events(trace, "lite_conn_state", {i0, "peer=3", "ready -> closing"}), 1u);
    EXPECT_GE(count_events(trace, "lite_conn_state", {i0, "handshake -> ready"}), 1u);
}

} // namespace
