// SPDX-License-Identifier: GPL-2.0
// RPC reply headers (lite_kmod/core/wire.c): lite_rpc_reply_parse() on the
// 32 bytes a callee wrote at the start of our reply buffer. An accepted
// reply names our call, carries 0 or an errno, and a successful one fits
// the capacity we offered (-EMSGSIZE instead tells the size that did not).
#include <endian.h>

#include <cerrno>

#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    auto w = in.get<lite_wire_rpc_reply>();
    uint32_t call_id = in.flag() ? le32toh(w.call_id) : in.u32();
    uint64_t cap = in.flag() ? in.range(0, LITE_RPC_PAYLOAD_MAX) : in.u64();

    int status = 12345;
    uint32_t len = 12345;
    int ret = lite_rpc_reply_parse(&w, call_id, cap, &status, &len);
    if (ret) {
        FUZZ_CHECK(ret == -EBADMSG);
        return 0;
    }

    FUZZ_CHECK(le32toh(w.magic) == LITE_RPC_MAGIC && le32toh(w.call_id) == call_id);
    FUZZ_CHECK(w.reserved[0] == 0 && w.reserved[1] == 0);
    FUZZ_CHECK(status <= 0 && status >= -4095 && status == static_cast<int32_t>(le32toh(w.status)));
    FUZZ_CHECK(len == le32toh(w.len));
    if (status == 0) {
        FUZZ_CHECK(len <= cap);
    } else if (status != -EMSGSIZE) {
        FUZZ_CHECK(len == 0);
    }
    return 0;
}
