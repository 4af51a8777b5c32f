// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <lite/lite.hpp>

namespace lite
{

namespace
{

[[noreturn]] void bad_endpoint(std::string_view text, const char* why)
{
    throw Error(EINVAL, "bad address '" + std::string(text) + "': " + why);
}

} // namespace

Endpoint Endpoint::parse(std::string_view text)
{
    Endpoint ep;
    std::string host;
    std::string_view port_text;

    if (text.starts_with('[')) {
        auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            bad_endpoint(text, "expected [IPv6]:PORT");
        host = std::string(text.substr(1, close - 1));
        port_text = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos)
            bad_endpoint(text, "expected ADDRESS:PORT");
        host = std::string(text.substr(0, colon));
        port_text = text.substr(colon + 1);
    }

    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535)
        bad_endpoint(text, "port must be 1..65535");

    if (inet_pton(AF_INET, host.c_str(), ep.addr.addr) == 1) {
        ep.addr.family = AF_INET;
    } else if (inet_pton(AF_INET6, host.c_str(), ep.addr.addr) == 1) {
        ep.addr.family = AF_INET6;
    } else {
        bad_endpoint(text, "not an IPv4 or IPv6 address");
    }
    ep.addr.port = static_cast<uint16_t>(port);
    return ep;
}

std::string Endpoint::to_string() const
{
    char buf[INET6_ADDRSTRLEN] = {};

    if (addr.family == AF_INET) {
        inet_ntop(AF_INET, addr.addr, buf, sizeof(buf));
        return std::string(buf) + ":" + std::to_string(addr.port);
    }
    if (addr.family == AF_INET6) {
        inet_ntop(AF_INET6, addr.addr, buf, sizeof(buf));
        return "[" + std::string(buf) + "]:" + std::to_string(addr.port);
    }
    return "-";
}

} // namespace lite
