// SPDX-License-Identifier: MIT
// litectl's command line, where no module is needed: arguments are parsed
// before /dev/lite is opened, so a usage error is exit 2 with a message
// that names the problem, on a host without lite too; --version, help and
// per-command --help. (With the module: guest test Cluster.Litectl*.)
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

namespace
{

struct Ran {
    int status = -1;
    std::string output; // stdout and stderr
};

Ran litectl(const std::string& args)
{
    Ran r;
    const std::string cmd = std::string(LITE_LITECTL_PATH) + " " + args + " 2>&1";
    // A fixed program with fixed arguments.
    FILE* p = ::popen(cmd.c_str(), "r"); // NOLINT(cert-env33-c)
    if (p == nullptr)
        return r;
    for (int c = std::fgetc(p); c != EOF; c = std::fgetc(p))
        r.output.push_back(static_cast<char>(c));
    int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

bool has(const Ran& r, const std::string& text)
{
    return r.output.find(text) != std::string::npos;
}

TEST(Litectl, VersionIsTheProjects)
{
    auto r = litectl("--version");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "litectl " LITE_PROJECT_VERSION "\n");
}

TEST(Litectl, HelpListsTheCommandsAndEachHasItsOwn)
{
    auto r = litectl("help");
    EXPECT_EQ(r.status, 0) << r.output;
    for (const char* c : {"up", "down", "status", "ping", "info"})
        EXPECT_TRUE(has(r, std::string("  ") + c)) << c << " missing from:\n" << r.output;
    r = litectl("help up");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(has(r, "--isolation")) << r.output;
    r = litectl("status --help");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(has(r, "--instance")) << r.output;
    r = litectl("help nope");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "no command 'nope'")) << r.output;
}

TEST(Litectl, NoCommandIsAUsageError)
{
    auto r = litectl("");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "up")) << "the help: " << r.output;
}

TEST(Litectl, UnknownCommandIsAUsageError)
{
    auto r = litectl("start");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "start")) << r.output;
}

// The device is opened after the arguments are parsed: a missing value is
// a usage error, not "module not loaded".
TEST(Litectl, MissingValueIsAUsageErrorBeforeTheDevice)
{
    auto r = litectl("status -i");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "--instance")) << r.output;
    EXPECT_FALSE(has(r, "not loaded")) << r.output;
}

TEST(Litectl, BadNumberIsAUsageError)
{
    auto r = litectl("ping -c many 2");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "--count")) << r.output;
}

TEST(Litectl, RequiredOptionsAreNamed)
{
    auto r = litectl("up --dev=rxe0");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "--listen is required")) << r.output;
}

TEST(Litectl, BadAddressIsAUsageError)
{
    auto r = litectl("up --dev rxe0 --listen nowhere --secret-file /dev/null");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "nowhere")) << r.output;
}

TEST(Litectl, UnknownIsolationIsAUsageErrorBeforeTheDevice)
{
    auto r = litectl("up --dev rxe0 --listen 127.0.0.1:1 --isolation strict");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, "unknown isolation 'strict'")) << r.output;
}

} // namespace
