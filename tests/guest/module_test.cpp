// SPDX-License-Identifier: MIT
// The module's face (lite_kmod/params.c): its version and its general
// tunables as /sys/module/lite shows them; a value out of range is refused
// with EINVAL and changes nothing; a new value holds for what starts
// afterwards.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "util.hpp"

using namespace lite_guest;

namespace
{

constexpr uint16_t kPort = 19700;

std::string param_path(const std::string& name)
{
    return "/sys/module/lite/parameters/" + name;
}

std::string first_line(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

TEST(ModuleFace, VersionIsTheProjects)
{
    EXPECT_EQ(first_line("/sys/module/lite/version"), LITE_PROJECT_VERSION);
}

struct Tunable {
    const char* name;
    unsigned long def;
    unsigned long min;
    unsigned long max;
};

TEST(ModuleFace, TunablesTakeTheirRangeOnly)
{
    const std::vector<Tunable> tunables = {
        {"call_timeout_ms", 3000, 1000, 60000}, {"data_timeout_ms", 10000, 9000, 60000},
        {"conn_wait_ms", 2000, 0, 60000},       {"zcopy_min_kb", 256, 4, 1UL << 20},
        {"pin_cache_kb", 16384, 0, 1UL << 20},  {"cq_mode", LITE_CQ_POLL, LITE_CQ_BUSY, LITE_CQ_MODE_MAX},
        {"rpc_held_max", 4096, 1, 65535}};
    for (const auto& t : tunables) {
        SCOPED_TRACE(t.name);
        ParamRestore keep(t.name);
        EXPECT_EQ(keep.old(), std::to_string(t.def)) << "the default";
        if (t.min > 0) {
            EXPECT_EQ(set_module_param(t.name, std::to_string(t.min - 1)), -EINVAL) << "below the range";
        }
        EXPECT_EQ(set_module_param(t.name, std::to_string(t.max + 1)), -EINVAL) << "above the range";
        EXPECT_EQ(set_module_param(t.name, "soon"), -EINVAL) << "not a number";
        EXPECT_EQ(set_module_param(t.name, "-1"), -EINVAL) << "negative";
        EXPECT_EQ(first_line(param_path(t.name)), keep.old()) << "a refused value changes nothing";
        ASSERT_EQ(set_module_param(t.name, std::to_string(t.min)), 0);
        EXPECT_EQ(first_line(param_path(t.name)), std::to_string(t.min));
        ASSERT_EQ(set_module_param(t.name, std::to_string(t.max)), 0);
        EXPECT_EQ(first_line(param_path(t.name)), std::to_string(t.max));
    }
}

// A node brought up without a completion mode gets the parameter's.
TEST(ModuleFace, CqModeIsTheDefaultOfNewNodes)
{
    auto dev = lite::Device::open();
    down_all(dev);
    ParamRestore keep("cq_mode");
    ASSERT_EQ(set_module_param("cq_mode", std::to_string(LITE_CQ_ADAPTIVE)), 0);
    auto a = up(dev, kPort, 0);
    EXPECT_EQ(dev.status(a.instance).cq_mode, uint32_t{LITE_CQ_ADAPTIVE});
    ASSERT_EQ(set_module_param("cq_mode", std::to_string(LITE_CQ_POLL)), 0);
    auto b = up(dev, kPort + 1, kPort);
    EXPECT_EQ(dev.status(b.instance).cq_mode, uint32_t{LITE_CQ_POLL});
    EXPECT_EQ(dev.status(a.instance).cq_mode, uint32_t{LITE_CQ_ADAPTIVE}) << "a node keeps the mode it came up with";
    down_all(dev);
}

} // namespace
