// SPDX-License-Identifier: MIT
// litectl's command line, where no module is needed: arguments are parsed
// before /dev/lite is opened, so a usage error is exit 2 with a message
// that names the problem, on a host without lite too; --version, help and
// per-command --help. (With the module: guest test Cluster.Litectl*.)
#include <gtest/gtest.h>

#include "run_program.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>

namespace
{

using lite_host::has;
using lite_host::Ran;

Ran litectl(const std::string& args)
{
    return lite_host::run_program(LITE_LITECTL_PATH, args);
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

// A usage error: exit 2, a message that names the problem, and nothing
// about the module (the device is opened after the arguments are parsed).
struct UsageCase {
    const char* name;
    std::string args;
    const char* says;
};

class LitectlUsage : public ::testing::TestWithParam<UsageCase>
{
};

TEST_P(LitectlUsage, IsExitTwoNamingTheProblem)
{
    auto r = litectl(GetParam().args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(has(r, GetParam().says)) << r.output;
    EXPECT_FALSE(has(r, "not loaded")) << r.output;
}

// A fresh directory under the temporary one, removed with what it holds
// when the object goes (for config_file(): when the program exits).
class TempDir
{
public:
    TempDir()
    {
        std::string tmpl = (std::filesystem::temp_directory_path() / "litectl-test-XXXXXX").string();
        const char* d = ::mkdtemp(tmpl.data());
        path_ = d != nullptr ? d : "/nonexistent";
    }
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec); // a leftover is not worth failing over
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    TempDir(TempDir&&) = delete;
    TempDir& operator=(TempDir&&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A configuration file for litectl up --config, in a fresh directory.
std::string config_file(const std::string& name, const std::string& text)
{
    static const TempDir dir;
    const auto path = dir.path() / name;
    std::ofstream(path) << text;
    return path.string();
}

const std::string kGoodConf = "dev = rxe0\nlisten = 127.0.0.1:1\n# join = 10.0.0.1:2\nsecret-file = " +
                              config_file("secret", "0123456789abcdef") + "\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, LitectlUsage,
    ::testing::Values(
        UsageCase{"UnknownCommand", "start", "unknown command 'start'"},
        UsageCase{"MissingValue", "status -i", "--instance"}, UsageCase{"BadNumber", "ping -c many 2", "--count"},
        UsageCase{"RequiredOption", "up --dev=rxe0", "--listen is required"},
        UsageCase{"BadAddress", "up --dev rxe0 --listen nowhere --secret-file /dev/null", "nowhere"},
        UsageCase{"UnknownIsolation", "up --dev rxe0 --listen 127.0.0.1:1 --isolation strict",
                  "unknown isolation 'strict'"},
        UsageCase{"InstanceAndListen", "down -i 1 --listen 127.0.0.1:1", "excludes"},
        UsageCase{"ConfigMissing", "up --config /nonexistent/lite.conf", "/nonexistent/lite.conf"},
        UsageCase{"ConfigUnknownKey", "up --config " + config_file("unknown.conf", kGoodConf + "colour = blue\n"),
                  "unknown key 'colour'"},
        UsageCase{"ConfigSection", "up --config " + config_file("section.conf", "[up]\ndev = rxe0\n"), "no sections"},
        UsageCase{"ConfigBadValue", "up --config " + config_file("bad.conf", kGoodConf + "cq = fastest\n"),
                  "unknown completion mode 'fastest'"},
        UsageCase{"ConfigLeavesOneOut", "up --config " + config_file("short.conf", "dev = rxe0\n"),
                  "--listen is required"}),
    [](const ::testing::TestParamInfo<UsageCase>& i) { return std::string(i.param.name); });

// The options of a configuration file reach the command: with a complete
// one, up and down get as far as the device (exit 3 without the module);
// the command line wins over the file.
TEST(Litectl, ConfigFileGivesTheOptions)
{
    const auto conf = config_file("good.conf", kGoodConf);
    auto r = litectl("up --config " + conf);
    EXPECT_EQ(r.status, 3) << r.output;
    EXPECT_TRUE(has(r, "not loaded")) << r.output;
    r = litectl("down --config=" + conf);
    EXPECT_EQ(r.status, 3) << r.output;
    r = litectl("up --config " + conf + " --listen nowhere");
    EXPECT_EQ(r.status, 2) << "the command line's --listen wins: " << r.output;
    EXPECT_TRUE(has(r, "nowhere")) << r.output;
}

} // namespace
