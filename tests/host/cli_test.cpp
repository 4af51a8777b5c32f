// SPDX-License-Identifier: MIT
// The command line of the examples and benchmarks (tools/cli/lite_cli.hpp
// and the benchmarks' option groups on it): numbers in a range with K, M,
// G, lists, choices, the exit codes (--help 0, usage 2 naming the option,
// other errors 1), --opt=value, the last of an option given twice.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "../../benchmarks/rpc.hpp"
#include "lite_cli.hpp"

namespace
{

// @args parsed by @app, then @body: the exit status and what went to
// stderr.
struct Outcome {
    int status;
    std::string err;
};

Outcome run(
    lite_cli::App& app, const std::vector<std::string>& args, const std::function<int()>& body = [] { return 0; })
{
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    const int status = app.run(args, body);
    (void)testing::internal::GetCapturedStdout();
    return {status, testing::internal::GetCapturedStderr()};
}

TEST(Cli, Numbers)
{
    EXPECT_EQ(lite_cli::parse_u64("4096"), 4096U);
    EXPECT_EQ(lite_cli::parse_u64("4K"), 4096U);
    EXPECT_EQ(lite_cli::parse_u64("16m"), 16U << 20);
    EXPECT_EQ(lite_cli::parse_u64("1G"), 1U << 30);
    EXPECT_EQ(lite_cli::parse_u64("0"), 0U);
    for (const char* bad : {"", "x", "-1", "+1", " 1", "1T", "4KB", "1.5", "18446744073709551616", "17179869184G"})
        EXPECT_FALSE(lite_cli::parse_u64(bad).has_value()) << bad;
    EXPECT_EQ(lite_cli::to_number("64", "--len", 1, 64), 64U);
    try {
        (void)lite_cli::to_number("65", "--len", 1, 64);
        ADD_FAILURE() << "65 is out of 1..64";
    } catch (const lite_cli::UsageError& e) {
        EXPECT_STREQ(e.what(), "--len: must be a number from 1 to 64, not '65'");
    }
}

TEST(Cli, ExitCodes)
{
    lite_cli::App app("prog", "a test");
    unsigned n = 5;
    lite_cli::add_number(app, "--n", n, 1, 10, "a number");
    EXPECT_EQ(run(app, {"--help"}).status, 0);
    lite_cli::App app_h("prog", "a test");
    EXPECT_EQ(run(app_h, {"-h"}).status, 0);

    lite_cli::App unknown("prog", "a test");
    lite_cli::add_number(unknown, "--n", n, 1, 10, "a number");
    auto o = run(unknown, {"--bogus"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("prog: "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("--bogus"), std::string::npos) << o.err;

    lite_cli::App range("prog", "a test");
    lite_cli::add_number(range, "--n", n, 1, 10, "a number");
    o = run(range, {"--n", "11"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("--n: must be a number from 1 to 10, not '11'"), std::string::npos) << o.err;
    EXPECT_EQ(n, 5U) << "a rejected value is not stored";

    lite_cli::App missing("prog", "a test");
    lite_cli::add_number(missing, "--n", n, 1, 10, "a number");
    o = run(missing, {"--n"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("--n"), std::string::npos) << o.err;

    lite_cli::App stray("prog", "a test");
    o = run(stray, {"stray"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("stray"), std::string::npos) << o.err;

    lite_cli::App commands("prog", "a test");
    commands.require_subcommand(1, 1);
    commands.add_subcommand("serve", "a command");
    o = run(commands, {"frob"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("unknown command 'frob'"), std::string::npos) << o.err;
    lite_cli::App none("prog", "a test");
    none.require_subcommand(1, 1);
    none.add_subcommand("serve", "a command");
    EXPECT_EQ(run(none, {}).status, 2);

    // What the program's body throws after parsing.
    lite_cli::App body("prog", "a test");
    o = run(body, {}, []() -> int { throw lite_cli::UsageError("--a only goes with --b"); });
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("prog: --a only goes with --b"), std::string::npos) << o.err;
    lite_cli::App fail("prog", "a test");
    o = run(fail, {}, []() -> int { throw std::runtime_error("no device"); });
    EXPECT_EQ(o.status, 1);
    EXPECT_EQ(o.err, "prog: no device\n");
    lite_cli::App ok("prog", "a test");
    EXPECT_EQ(run(ok, {}, [] { return 3; }).status, 3);
}

TEST(Cli, ValuesAndLists)
{
    lite_cli::App app("prog", "a test");
    uint64_t size = 0;
    uint32_t node = 2;
    unsigned inst = 7;
    std::vector<size_t> list{1, 2};
    lite_cli::add_number(app, "--size", size, 1, LITE_LMR_MAX, "bytes");
    lite_cli::add_node(app, node, false, "a node");
    lite_cli::add_instance(app, inst, "an instance");
    lite_cli::add_list(app, "--list", list, 1, 64 << 10, "sizes");
    EXPECT_EQ(run(app, {"--size=4G", "--node", "3", "--node", "5", "--list", "8,4K,64K"}).status, 0);
    EXPECT_EQ(size, uint64_t{4} << 30);
    EXPECT_EQ(node, 5U) << "the last of an option given twice";
    EXPECT_EQ(inst, 7U) << "not given: the default stays";
    EXPECT_EQ(list, (std::vector<size_t>{8, 4096, 65536}));

    lite_cli::App again("prog", "a test");
    lite_cli::add_list(again, "--list", list, 1, 64 << 10, "sizes");
    EXPECT_EQ(run(again, {"--list", "1,2", "--list=3"}).status, 0);
    EXPECT_EQ(list, (std::vector<size_t>{3})) << "a list given twice: the last one";

    for (const char* bad : {"1,,2", "1,0", "1,65537", "", "1,x"}) {
        lite_cli::App b("prog", "a test");
        lite_cli::add_list(b, "--list", list, 1, 64 << 10, "sizes");
        auto o = run(b, {"--list", bad});
        EXPECT_EQ(o.status, 2) << bad;
        EXPECT_NE(o.err.find("--list: "), std::string::npos) << o.err;
    }
    lite_cli::App zero("prog", "a test");
    lite_cli::add_node(zero, node, false, "a node");
    EXPECT_EQ(run(zero, {"--node", "0"}).status, 2) << "node ids start at 1";
    lite_cli::App this_node("prog", "a test");
    lite_cli::add_node(this_node, node, true, "a node");
    EXPECT_EQ(run(this_node, {"--node", "0"}).status, 0);
    EXPECT_EQ(node, 0U);
}

TEST(Cli, Choices)
{
    enum class Poll { busy, event };
    Poll poll = Poll::busy;
    lite_cli::App app("prog", "a test");
    lite_cli::add_choice(app, "--poll", poll, {{"busy", Poll::busy}, {"event", Poll::event}}, "how");
    EXPECT_EQ(run(app, {"--poll=event"}).status, 0);
    EXPECT_EQ(poll, Poll::event);

    lite_cli::App bad("prog", "a test");
    lite_cli::add_choice(bad, "--poll", poll, {{"busy", Poll::busy}, {"event", Poll::event}}, "how");
    auto o = run(bad, {"--poll", "idle"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("--poll: must be busy or event, not 'idle'"), std::string::npos) << o.err;
}

TEST(Cli, BenchGroups)
{
    bench::rpc::RpcOptions o;
    lite_cli::App app("bench", "a test");
    bench::rpc::add_rpc(app, o, 1 << 20);
    EXPECT_EQ(
        run(app, {"--mode", "tput", "--threads", "1,8", "--size", "4K", "--seconds", "2", "--iters", "10"}).status, 0);
    EXPECT_EQ(o.mode, bench::rpc::Mode::tput);
    EXPECT_EQ(o.threads, (std::vector<unsigned>{1, 8}));
    EXPECT_EQ(o.size, 4096U);
    EXPECT_EQ(o.seconds, 2U);
    EXPECT_EQ(o.lat.iters, 10U);
    EXPECT_EQ(o.lat.warmup, 100U);
    EXPECT_EQ(o.lat.sizes, (std::vector<size_t>{8, 64, 512, 4096, 32768, 65536})) << "the RPC default sizes";

    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{{"--mode", "both"},
                                                                                     {"--threads", "0"},
                                                                                     {"--threads", "65"},
                                                                                     {"--sizes", "8,2M"},
                                                                                     {"--iters", "0"},
                                                                                     {"--seconds", "3601"}}) {
        bench::rpc::RpcOptions r;
        lite_cli::App b("bench", "a test");
        bench::rpc::add_rpc(b, r, 1 << 20);
        auto out = run(b, bad);
        EXPECT_EQ(out.status, 2) << bad[0] << " " << bad[1];
        EXPECT_NE(out.err.find(bad[0] + ": "), std::string::npos) << out.err;
    }

    bench::Options lat;
    lite_cli::App l("bench", "a test");
    bench::add_common(l, lat, 4096);
    EXPECT_EQ(run(l, {"--warmup", "0", "--sizes", "8"}).status, 0);
    EXPECT_EQ(lat.warmup, 0U);
    EXPECT_EQ(lat.sizes, (std::vector<size_t>{8}));
}

} // namespace
