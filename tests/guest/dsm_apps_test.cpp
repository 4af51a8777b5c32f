// SPDX-License-Identifier: MIT
// The three DSM programs (dsm/apps: Jacobi stencil, blocked matmul,
// PageRank on an R-MAT graph) on three nodes with four threads each, on the
// kernel DSM and on the user-level DSM: each result must be bit for bit the
// single-node reference's (the same operations in the same order), and
// the run must have crossed nodes.
#include <gtest/gtest.h>

#include <apps.hpp>
#include <lite/dsm.hpp>
#include <lite/session.hpp>
#include <string>
#include <thread>
#include <udsm.hpp>
#include <vector>

#include "dsm_util.hpp"

using namespace lite_guest;

namespace
{

constexpr uint16_t kPort = 19500;
constexpr unsigned kThreads = 4;
constexpr std::chrono::milliseconds kWait{60'000}; // lite's longest

class DsmApps : public ThreeSessions<kPort>, public ::testing::WithParamInterface<std::string>
{
protected:
    // Run @app with kThreads threads on each of the three nodes, each over
    // its own mapping (@maps[i], through node i's session); the result as
    // node 2 reads it.
    uint64_t run_on_three(const dsm_apps::App& app, const std::vector<std::byte*>& maps, const std::string& name)
    {
        auto sync = s_[0].alloc(64);
        sync.share(name + "-sync", LITE_PERM_ALL);
        std::vector<lite::Lmr> per_node;
        for (auto& s : s_)
            per_node.push_back(s.map(name + "-sync"));
        std::vector<std::thread> nodes;
        std::vector<std::string> errors(3);
        for (unsigned n = 0; n < 3; n++) {
            nodes.emplace_back([&, n] {
                const lite::Lmr& l = per_node[n];
                dsm_apps::NodeSync ns{[&] { l.barrier(0, 3, kWait); },
                                      [&](const std::function<void()>& f) {
                                          auto held = l.lock(8, kWait);
                                          f();
                                      }};
                try {
                    dsm_apps::run_node(app, maps[n], n, 3, kThreads, ns);
                } catch (const std::exception& e) {
                    errors[n] = e.what();
                }
            });
        }
        for (auto& t : nodes)
            t.join();
        for (unsigned n = 0; n < 3; n++)
            EXPECT_EQ(errors[n], "") << "node " << n;
        return app.result(maps[2]);
    }

    // The region @name for @app: created on node 1 with the input written,
    // then opened on nodes 2 and 3 (lite::Dsm or udsm::Region).
    template <class Region> std::vector<Region> three_maps(const dsm_apps::App& app, const std::string& name)
    {
        std::vector<Region> r;
        r.push_back(Region::create(s_[0], name, app.region_bytes()));
        app.init(r[0].data());
        r.push_back(Region::open(s_[1], name));
        r.push_back(Region::open(s_[2], name));
        return r;
    }
};

TEST_P(DsmApps, KernelDsmGivesTheSingleNodeResult)
{
    const auto app = dsm_apps::make_app(GetParam());
    const uint64_t ref = dsm_apps::reference(*app);
    const std::string name = "apps-k-" + GetParam();
    auto r = three_maps<lite::Dsm>(*app, name);
    const auto before = dev_->status(inst_[1]).dsm;
    const uint64_t got = run_on_three(*app, {r[0].data(), r[1].data(), r[2].data()}, name);
    EXPECT_EQ(got, ref) << app->describe() << ": differs from the single-node run";
    const auto after = dev_->status(inst_[1]).dsm;
    EXPECT_GT(after.fetches, before.fetches) << "node 2 fetched no page: the program did not cross nodes";
    r[0].destroy();
}

TEST_P(DsmApps, UserLevelDsmGivesTheSingleNodeResult)
{
    const auto app = dsm_apps::make_app(GetParam());
    const uint64_t ref = dsm_apps::reference(*app);
    const std::string name = "apps-u-" + GetParam();
    auto r = three_maps<udsm::Region>(*app, name);
    const uint64_t got = run_on_three(*app, {r[0].data(), r[1].data(), r[2].data()}, name);
    EXPECT_EQ(got, ref) << app->describe() << ": differs from the single-node run";
    while (!r.empty())
        r.pop_back(); // udsm's home leaves last
}

INSTANTIATE_TEST_SUITE_P(Programs, DsmApps, ::testing::ValuesIn(dsm_apps::app_names()),
                         [](const auto& info) { return info.param; });

} // namespace
