// SPDX-License-Identifier: MIT
// liblite: endpoint parsing and the error scheme.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <lite/lite.hpp>

TEST(Endpoint, ParsesIpv4AndIpv6)
{
    auto a = lite::Endpoint::parse("10.99.0.1:18515");
    EXPECT_EQ(a.addr.family, AF_INET);
    EXPECT_EQ(a.addr.port, 18515);
    EXPECT_EQ(a.addr.addr[0], 10);
    EXPECT_EQ(a.addr.addr[3], 1);
    EXPECT_EQ(a.to_string(), "10.99.0.1:18515");

    auto b = lite::Endpoint::parse("[fd00::5]:7");
    EXPECT_EQ(b.addr.family, AF_INET6);
    EXPECT_EQ(b.addr.port, 7);
    EXPECT_EQ(b.to_string(), "[fd00::5]:7");
}

TEST(Endpoint, RejectsGarbageWithEinval)
{
    for (const char* bad : {"", "10.0.0.1", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:12x", "host:80",
                            "[fd00::1]80", "[fd00::1", "1.2.3.4.5:9"}) {
        try {
            (void)lite::Endpoint::parse(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const lite::Error& e) {
            EXPECT_EQ(e.errnum(), EINVAL) << bad;
            EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << "message names the input";
        }
    }
}

TEST(Device, MissingDeviceIsEnoent)
{
    try {
        (void)lite::Device::open("/nonexistent/lite");
        ADD_FAILURE() << "opened a missing device";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), ENOENT);
    }
}

TEST(Device, SecretFileChecks)
{
    char path[] = "/tmp/lite-secret-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << "short\n";
    try {
        (void)lite::read_secret_file(path);
        ADD_FAILURE() << "accepted a 5-byte secret";
    } catch (const lite::Error& e) {
        EXPECT_EQ(e.errnum(), EINVAL);
    }
    std::ofstream(path) << "0123456789abcdef\n";
    auto s = lite::read_secret_file(path);
    EXPECT_EQ(s.size(), 16u) << "one trailing newline is dropped";
    (void)std::remove(path); // best effort: a stray file in /tmp is harmless
}
