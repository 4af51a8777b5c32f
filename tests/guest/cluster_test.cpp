// SPDX-License-Identifier: MIT
// Cluster membership on the real module: formation, ping, secrets, leave and
// rejoin, rmmod and device removal under live nodes, litectl's messages.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 18515;

class Cluster : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        down_all(*dev_);
    }
    void TearDown() override
    {
        if (dev_)
            down_all(*dev_);
    }

    // Three nodes: instances a, b, c with node ids 1, 2, 3.
    void form3()
    {
        auto a = up(*dev_, kPort, 0);
        auto b = up(*dev_, kPort + 1, kPort);
        auto c = up(*dev_, kPort + 2, kPort);
        ASSERT_EQ(a.node_id, 1u);
        ASSERT_EQ(b.node_id, 2u);
        ASSERT_EQ(c.node_id, 3u);
        inst_ = {a.instance, b.instance, c.instance};
    }

    std::unique_ptr<lite::Device> dev_;
    std::vector<uint32_t> inst_;
};

TEST_F(Cluster, ThreeNodesEachSeeAllThree)
{
    form3();
    const std::vector<uint32_t> all = {1, 2, 3};
    for (size_t i = 0; i < inst_.size(); i++) {
        auto st = dev_->status(inst_[i]);
        EXPECT_EQ(st.node_id, i + 1);
        EXPECT_EQ(st.manager_id, 1u);
        EXPECT_EQ(st.members.size(), 3u);
        EXPECT_EQ(st.device, env("LITE_RXE", "rxe0"));
        EXPECT_EQ(st.listen.to_string(), addr() + ":" + std::to_string(kPort + i));
        EXPECT_EQ(live_members(*dev_, inst_[i]), all) << "instance " << inst_[i];
        for (const auto& m : st.members) {
            EXPECT_EQ(m.addr.to_string(), addr() + ":" + std::to_string(kPort + m.node_id - 1));
            if (m.node_id != st.node_id) {
                EXPECT_GT(m.tx_msgs, 0u) << "handshake traffic counted";
                EXPECT_GT(m.credits, 0u);
            }
        }
    }
    EXPECT_EQ(dev_->status(inst_[0]).counters.joins, 2u);
}

TEST_F(Cluster, PingEveryPair)
{
    form3();
    for (size_t i = 0; i < inst_.size(); i++) {
        for (uint32_t node = 1; node <= 3; node++) {
            if (node == i + 1)
                continue;
            auto rtt = dev_->ping(inst_[i], node);
            EXPECT_GT(rtt.count(), 0) << "instance " << inst_[i] << " -> node " << node;
            EXPECT_LT(rtt, 3s);
            for (const auto& m : dev_->status(inst_[i]).members) {
                if (m.node_id == node) {
                    EXPECT_GT(m.last_rtt.count(), 0);
                }
            }
        }
    }
}

TEST_F(Cluster, PingErrors)
{
    form3();
    auto code = [&](uint32_t inst, uint32_t node) {
        try {
            (void)dev_->ping(inst, node);
            return 0;
        } catch (const lite::Error& e) {
            return e.errnum();
        }
    };
    EXPECT_EQ(code(inst_[0], 1), EINVAL) << "ping yourself";
    EXPECT_EQ(code(inst_[0], 7), ENOENT) << "not a member";
    EXPECT_EQ(code(inst_[0], 0), EINVAL) << "node 0";
    EXPECT_EQ(code(inst_[0], LITE_MAX_NODES + 1), EINVAL);
    EXPECT_EQ(code(9999, 2), ENOENT) << "no such instance";
}

TEST_F(Cluster, WrongSecretIsRefused)
{
    form3();
    // The analyzer does not follow the throw into the catch below, which reads it.
    // NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores)
    auto before = dev_->instances().size();
    std::string wrong = "not-the-cluster-secret";
    try {
        up(*dev_, kPort + 3, kPort, std::vector<uint8_t>(wrong.begin(), wrong.end()));
        FAIL() << "joined with a wrong secret";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), EKEYREJECTED);
    }
    EXPECT_EQ(dev_->instances().size(), before) << "the refused node is gone";
    auto st = dev_->status(inst_[0]);
    EXPECT_EQ(st.members.size(), 3u);
    EXPECT_EQ(st.counters.auth_failures, 1u) << "the manager counted it";

    // litectl says why, with its own exit code.
    auto bad = write_file("lite-wrong-secret", wrong + "\n");
    auto r = run(litectl() + " up --dev rxe0 --listen " + addr() + ":" + std::to_string(kPort + 3) + " --secret-file " +
                 bad + " --join " + addr() + ":" + std::to_string(kPort));
    EXPECT_EQ(r.status, 6) << r.output;
    EXPECT_NE(r.output.find("cluster secret does not match"), std::string::npos) << r.output;
}

TEST_F(Cluster, NoSecretIsRefused)
{
    form3();
    try {
        up(*dev_, kPort + 3, kPort, {});
        FAIL() << "joined without a secret";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), ENOKEY);
    }
    auto r = run(litectl() + " up --dev rxe0 --listen " + addr() + ":" + std::to_string(kPort + 3) + " --join " +
                 addr() + ":" + std::to_string(kPort));
    EXPECT_EQ(r.status, 6) << r.output;
    EXPECT_NE(r.output.find("secret is required"), std::string::npos) << r.output;
    EXPECT_EQ(dev_->status(inst_[0]).members.size(), 3u);
}

TEST_F(Cluster, ManagerUnreachable)
{
    up(*dev_, kPort, 0);
    try {
        up(*dev_, kPort + 1, kPort + 50); // nobody listens there
        FAIL() << "joined a cluster that does not exist";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), ECONNREFUSED);
    }
    auto r = run(litectl() + " up --dev rxe0 --listen " + addr() + ":" + std::to_string(kPort + 1) + " --secret-file " +
                 secret_file() + " --join " + addr() + ":" + std::to_string(kPort + 50));
    EXPECT_EQ(r.status, 7) << r.output;
    EXPECT_NE(r.output.find("unreachable"), std::string::npos) << r.output;
    EXPECT_EQ(dev_->instances().size(), 1u);
}

TEST_F(Cluster, JoiningThroughANonManagerIsRefused)
{
    form3();
    try {
        up(*dev_, kPort + 3, kPort + 1); // node 2 is not the manager
        FAIL();
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), EOPNOTSUPP);
    }
}

TEST_F(Cluster, DownThenRejoin)
{
    form3();
    dev_->down(inst_[1]); // node 2 leaves
    const std::vector<uint32_t> two = {1, 3};
    for (auto i : {inst_[0], inst_[2]}) {
        EXPECT_TRUE(wait_until([&] { return member_ids(*dev_, i) == two; }, 5s)) << "instance " << i;
        EXPECT_EQ(live_members(*dev_, i), two);
        EXPECT_EQ(dev_->status(i).counters.leaves, 1u);
        EXPECT_EQ(dev_->status(i).counters.losses, 0u);
    }
    try {
        (void)dev_->ping(inst_[0], 2);
        FAIL() << "pinged a node that left";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), ENOENT);
    }

    auto again = up(*dev_, kPort + 1, kPort);
    EXPECT_EQ(again.node_id, 2u) << "the lowest free id is reused";
    const std::vector<uint32_t> all = {1, 2, 3};
    for (auto i : {inst_[0], again.instance, inst_[2]}) {
        EXPECT_EQ(live_members(*dev_, i), all) << "instance " << i;
        for (uint32_t n = 1; n <= 3; n++) {
            if (n != dev_->status(i).node_id) {
                EXPECT_GT(dev_->ping(i, n).count(), 0);
            }
        }
    }
}

TEST_F(Cluster, ListenAddressRules)
{
    up(*dev_, kPort, 0);
    try {
        up(*dev_, kPort, 0);
        FAIL() << "two nodes on one address";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), EADDRINUSE);
    }
    lite::UpParams p;
    p.device = env("LITE_RXE", "rxe0");
    p.listen = lite::Endpoint::parse("127.0.0.1:18600"); // lo has no rxe device
    p.secret = secret();
    try {
        (void)dev_->up(p);
        FAIL() << "listened on an address of another device";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), EADDRNOTAVAIL);
    }
    p.device = "rxe9";
    p.listen = endpoint(18601);
    try {
        (void)dev_->up(p);
        FAIL();
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), ENODEV);
    }
    auto r = run(litectl() + " up --dev rxe9 --listen " + addr() + ":18601 --secret-file " + secret_file());
    EXPECT_EQ(r.status, 5) << r.output;
    EXPECT_NE(r.output.find("no RDMA device named 'rxe9'"), std::string::npos) << r.output;
}

TEST_F(Cluster, LitectlStatusAndPing)
{
    form3();
    auto r = run(litectl() + " status -i " + std::to_string(inst_[0]));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("node 1 (manager)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("3 members"), std::string::npos) << r.output;

    r = run(litectl() + " status --json");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("\"node_id\": 3"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\"state\": \"connected\""), std::string::npos) << r.output;

    r = run(litectl() + " ping -i " + std::to_string(inst_[2]) + " -c 2 1");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("2 replies"), std::string::npos) << r.output;

    r = run(litectl() + " ping -i " + std::to_string(inst_[2]) + " 9");
    EXPECT_EQ(r.status, 5) << r.output;
    EXPECT_NE(r.output.find("not a member"), std::string::npos) << r.output;
}

TEST_F(Cluster, LitectlIsolation)
{
    const std::string listen = " --listen " + addr() + ":" + std::to_string(kPort) + " --secret-file " + secret_file();
    auto r = run(litectl() + " up --dev rxe0" + listen + " --isolation strict");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("unknown isolation 'strict'"), std::string::npos) << r.output;
    EXPECT_TRUE(dev_->instances().empty());

    r = run(litectl() + " up --dev rxe0" + listen + " --isolation lmr");
    ASSERT_EQ(r.status, 0) << r.output;
    ASSERT_EQ(dev_->instances().size(), 1u);
    EXPECT_EQ(dev_->status(dev_->instances()[0]).isolation, static_cast<uint32_t>(LITE_ISOLATION_LMR));
    r = run(litectl() + " status");
    EXPECT_NE(r.output.find("isolation: lmr"), std::string::npos) << r.output;
    r = run(litectl() + " status --json");
    EXPECT_NE(r.output.find("\"isolation\": \"lmr\""), std::string::npos) << r.output;
}

// Every command prints JSON with --json (before or after the command),
// options take --opt=value, and a failure is JSON too, besides the message.
TEST_F(Cluster, LitectlJsonEveryCommand)
{
    const std::string at = addr() + ":" + std::to_string(kPort);
    auto r = run(litectl() + " --json up --dev=rxe0 --listen=" + at + " --secret-file=" + secret_file());
    ASSERT_EQ(r.status, 0) << r.output;
    auto up = nlohmann::json::parse(r.output);
    EXPECT_EQ(up["node_id"], 1);
    EXPECT_EQ(up["role"], "manager");
    EXPECT_EQ(up["listen"], at);
    const uint32_t inst = up["instance"];
    r = run(litectl() + " up --dev rxe0 --listen " + addr() + ":" + std::to_string(kPort + 1) + " --join " + at +
            " --secret-file " + secret_file() + " --json");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(nlohmann::json::parse(r.output)["node_id"], 2);

    r = run(litectl() + " status --json -i " + std::to_string(inst));
    ASSERT_EQ(r.status, 0) << r.output;
    auto st = nlohmann::json::parse(r.output);
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0]["members"].size(), 2u);
    EXPECT_EQ(st[0]["isolation"], lite::isolation_name(dev_->status(inst).isolation));

    r = run(litectl() + " ping --json -i " + std::to_string(inst) + " -c 2 2");
    ASSERT_EQ(r.status, 0) << r.output;
    auto ping = nlohmann::json::parse(r.output);
    ASSERT_EQ(ping["rtt_ns"].size(), 2u);
    EXPECT_GT(ping["rtt_ns"][0].get<int64_t>(), 0);

    // top: one JSON object per line and round, with the pings' traffic.
    r = run(litectl() + " top --json -n 2 -d 0.3 -i " + std::to_string(inst));
    ASSERT_EQ(r.status, 0) << r.output;
    std::istringstream rounds(r.output);
    std::string line;
    int n = 0;
    while (std::getline(rounds, line)) {
        auto round = nlohmann::json::parse(line);
        EXPECT_EQ(round["round"], ++n);
        EXPECT_GT(round["interval_s"].get<double>(), 0.2);
        ASSERT_EQ(round["nodes"].size(), 1u);
        EXPECT_EQ(round["nodes"][0]["node_id"], 1);
        ASSERT_EQ(round["nodes"][0]["members"].size(), 2u);
        EXPECT_GE(round["nodes"][0]["members"][1]["tx_msgs_per_s"].get<double>(), 0.0);
    }
    EXPECT_EQ(n, 2) << r.output;

    r = run(litectl() + " info --json");
    ASSERT_EQ(r.status, 0) << r.output;
    auto info = nlohmann::json::parse(r.output);
    EXPECT_EQ(info["version"], LITE_PROJECT_VERSION);
    EXPECT_EQ(info["instances"].size(), 2u);

    // A failure: the message on stderr, JSON on stdout, the same exit code.
    r = run("{ " + litectl() + " ping --json -i " + std::to_string(inst) + " 9 2>/dev/null; }");
    EXPECT_EQ(r.status, 5) << r.output;
    auto err = nlohmann::json::parse(r.output);
    EXPECT_EQ(err["exit"], 5);
    EXPECT_NE(err["error"].get<std::string>().find("not a member"), std::string::npos) << r.output;

    r = run(litectl() + " down --json -i " + std::to_string(inst));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(nlohmann::json::parse(r.output)["down"], true);
}

TEST_F(Cluster, UnprivilegedCannotControl)
{
    // A user of lite (group lite) without CAP_NET_ADMIN.
    const std::string user = "setpriv --reuid=65534 --regid=65534 --groups=lite ";
    auto r = run(user + litectl() + " up --dev rxe0 --listen " + addr() + ":" + std::to_string(kPort) +
                 " --secret-file " + secret_file());
    EXPECT_EQ(r.status, 4) << r.output;
    EXPECT_NE(r.output.find("CAP_NET_ADMIN"), std::string::npos) << r.output;
    EXPECT_TRUE(dev_->instances().empty());

    form3();
    r = run(user + litectl() + " down -i " + std::to_string(inst_[1]));
    EXPECT_EQ(r.status, 4) << r.output;
    EXPECT_EQ(dev_->instances().size(), 3u);
    r = run(user + litectl() + " status");
    EXPECT_EQ(r.status, 0) << "status is for every user of lite: " << r.output;

    // Outside group lite the device does not open; the message says why.
    r = run("setpriv --reuid=65534 --regid=65534 --clear-groups " + litectl() + " status");
    EXPECT_EQ(r.status, 4) << r.output;
    EXPECT_NE(r.output.find("group lite"), std::string::npos) << r.output;
}

// Kernel-side teardown paths. These reload the module or the device.
class Teardown : public ::testing::Test
{
protected:
    static std::string module() { return env("LITE_MODULE", "lite_kmod/lite.ko"); }
    static void ensure_loaded()
    {
        if (access("/dev/lite", F_OK) != 0) {
            auto r = run("insmod " + module() + " " + env("LITE_MODULE_ARGS", ""));
            ASSERT_EQ(r.status, 0) << r.output;
        }
    }
    void SetUp() override
    {
        ensure_loaded();
        auto dev = lite::Device::open();
        down_all(dev);
    }
    void TearDown() override
    {
        run("rdma link show rxe0/1 >/dev/null || rdma link add rxe0 type rxe netdev veth0");
        ensure_loaded();
    }
};

TEST_F(Teardown, RmmodWithNodesUp)
{
    {
        auto dev = lite::Device::open();
        up(dev, kPort, 0);
        up(dev, kPort + 1, kPort);
        up(dev, kPort + 2, kPort);
        ASSERT_EQ(dev.instances().size(), 3u);
    } // /dev/lite closed: the module can go
    auto r = run("timeout 60 rmmod lite");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(access("/dev/lite", F_OK), 0);

    r = run(litectl() + " status");
    EXPECT_EQ(r.status, 3) << r.output;
    EXPECT_NE(r.output.find("module is not loaded"), std::string::npos) << r.output;

    // Back again, the device is usable and a new cluster forms.
    ensure_loaded();
    auto dev = lite::Device::open();
    EXPECT_TRUE(dev.instances().empty());
    up(dev, kPort, 0);
    EXPECT_EQ(up(dev, kPort + 1, kPort).node_id, 2u);
    down_all(dev);
}

TEST_F(Teardown, RdmaLinkDeleteUnderNodes)
{
    auto dev = lite::Device::open();
    up(dev, kPort, 0);
    up(dev, kPort + 1, kPort);
    up(dev, kPort + 2, kPort);
    auto r = run("timeout 60 rdma link delete rxe0");
    ASSERT_EQ(r.status, 0) << "rdma link delete hung or failed: " << r.output;
    EXPECT_TRUE(dev.instances().empty()) << "nodes on the device are gone";

    r = run("rdma link add rxe0 type rxe netdev veth0");
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(wait_until(
        [&] {
            try {
                up(dev, kPort, 0);
                return true;
            } catch (const lite::Error&) {
                return false;
            }
        },
        10s))
        << "a node comes up on the re-added device";
    EXPECT_EQ(up(dev, kPort + 1, kPort).node_id, 2u);
    down_all(dev);
}

} // namespace
