// SPDX-License-Identifier: GPL-2.0
// Listen addresses on the wire (lite_kmod/core/wire.c): lite_wire_get_addr()
// on any 24 bytes, lite_wire_put_addr() and lite_naddr_equal(). A decoded
// address encodes back to the same bytes, and two decoded addresses are
// equal exactly when their encodings are (membership finds members by
// address, so equality must not depend on bytes the decoder ignored).
#include <endian.h>

#include <cerrno>

#include "fuzz.hpp"

namespace
{

bool decode(const lite_wire_addr& w, lite_naddr* a)
{
    int ret = lite_wire_get_addr(&w, a);
    FUZZ_CHECK(ret == 0 || ret == -EBADMSG);
    if (ret)
        return false;
    FUZZ_CHECK(a->family == w.family && a->port == be16toh(w.port) && a->port != 0);
    FUZZ_CHECK(w.reserved0 == 0 && w.reserved == 0);
    if (a->family == LITE_WIRE_AF_INET) {
        for (size_t i = 4; i < sizeof(w.addr); i++)
            FUZZ_CHECK(w.addr[i] == 0 && a->addr[i] == 0);
    } else {
        FUZZ_CHECK(a->family == LITE_WIRE_AF_INET6);
    }
    FUZZ_CHECK(std::memcmp(a->addr, w.addr, sizeof(a->addr)) == 0);

    lite_wire_addr back{};
    lite_wire_put_addr(&back, a);
    FUZZ_CHECK(std::memcmp(&back, &w, sizeof(back)) == 0);
    FUZZ_CHECK(lite_naddr_equal(a, a));
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    auto w1 = in.get<lite_wire_addr>();
    auto w2 = in.get<lite_wire_addr>();
    // Often the second address is the first with one byte changed.
    if (in.flag()) {
        w2 = w1;
        reinterpret_cast<uint8_t*>(&w2)[in.range(0, sizeof(w2) - 1)] ^= in.u8();
    }

    lite_naddr a{}, b{};
    bool ok1 = decode(w1, &a), ok2 = decode(w2, &b);
    if (ok1 && ok2) {
        bool eq = lite_naddr_equal(&a, &b);
        FUZZ_CHECK(eq == lite_naddr_equal(&b, &a));
        FUZZ_CHECK(eq == (std::memcmp(&w1, &w2, sizeof(w1)) == 0));
    }
    return 0;
}
