// SPDX-License-Identifier: MIT
// lite-mr's command line, where no module is needed: a usage error is exit
// 2 with a message that names the problem (as for litectl and every
// example and benchmark), --help is exit 0, and `gen` writes the size it
// is asked for. (Jobs on a cluster: guest test MapReduce.*.)
#include <gtest/gtest.h>

#include "run_program.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

namespace
{

using lite_host::has;

// lite-mr with @args: its exit status and output.
auto lite_mr(const std::string& args)
{
    return lite_host::run_program(LITE_MR_PATH, args);
}

TEST(LiteMr, UsageErrorsExit2NamingTheProblem)
{
    struct Case {
        const char* args;
        const char* names;
    };
    for (const Case& c : {
             Case{"", "A subcommand is required"},
             Case{"bogus", "unknown command 'bogus'"},
             Case{"gen text out --size 12Q", "--size: must be a number from 0 to"},
             Case{"gen nope out --size 1K", "kind 'nope': use text, bytes, points or clusters"},
             Case{"run --split 1 input", "--split: must be a number from 4096 to"},
             Case{"run --port x input", "--port"},
             Case{"worker", "--master-node is required"},
             Case{"serial --frobnicate input", "--frobnicate"},
         }) {
        auto r = lite_mr(c.args);
        EXPECT_EQ(r.status, 2) << "lite-mr " << c.args << ": " << r.output;
        EXPECT_TRUE(has(r, c.names)) << "lite-mr " << c.args << ": " << r.output;
        EXPECT_TRUE(has(r, "lite-mr --help lists the options")) << r.output;
    }
}

TEST(LiteMr, HelpAndGen)
{
    auto r = lite_mr("--help");
    EXPECT_EQ(r.status, 0) << r.output;
    for (const char* c : {"run", "serial", "worker", "gen"})
        EXPECT_TRUE(has(r, c)) << c << " missing from:\n" << r.output;
    r = lite_mr("gen --help");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(has(r, "--size")) << r.output;

    // Sizes with suffixes; an option given twice takes its last value.
    const auto out = std::filesystem::temp_directory_path() / ("lite-mr-gen-" + std::to_string(::getpid()));
    r = lite_mr("gen bytes " + out.string() + " --size 4K --size 8K");
    EXPECT_EQ(r.status, 0) << r.output;
    std::error_code ec;
    EXPECT_EQ(std::filesystem::file_size(out, ec), 8192U) << ec.message();
    std::filesystem::remove(out, ec);
}

} // namespace
