// SPDX-License-Identifier: GPL-2.0
// RPC ring entries (lite_kmod/core/wire.c): lite_rpc_entry_parse() on a
// 64-byte header a peer wrote into our ring, at any position, from any
// node, with any room left, and lite_rpc_entry_size(). An accepted entry
// fits the room, its sizes do not wrap, and every header byte was checked
// (the decoded fields encode back to the same header).
#include <endian.h>

#include <cerrno>

#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    auto w = in.get<lite_wire_rpc>();
    // The expected position and source usually match the header's, so the
    // fuzzer gets past those checks; the room is anything.
    uint64_t pos = in.flag() ? le64toh(w.pos) : in.u64();
    uint16_t src = in.flag() ? le16toh(w.src) : in.u16();
    uint64_t room = in.flag() ? in.range(0, uint64_t{1} << 24) : in.u64();

    // The size of any entry: aligned, and exact whenever it fits 32 bits.
    uint32_t any_segs = in.u32(), any_len = in.u32();
    uint64_t exact = sizeof(lite_wire_rpc) + uint64_t{any_segs} * sizeof(lite_wire_chunk) + any_len;
    uint32_t got = lite_rpc_entry_size(any_segs, any_len);
    FUZZ_CHECK(got % LITE_RPC_ALIGN == 0);
    if (exact <= UINT32_MAX - (LITE_RPC_ALIGN - 1))
        FUZZ_CHECK(got >= exact && got - exact < LITE_RPC_ALIGN);

    lite_rpc_entry e{};
    int ret = lite_rpc_entry_parse(&w, pos, src, room, &e);
    if (ret) {
        FUZZ_CHECK(ret == -EBADMSG);
        return 0;
    }

    FUZZ_CHECK(e.src == src && e.port != 0 && e.len <= LITE_RPC_PAYLOAD_MAX);
    if (e.kind == LITE_RPC_CALL) {
        FUZZ_CHECK(e.call_id != 0 && (e.call_id & LITE_IMM_REPLY) == 0);
        FUZZ_CHECK(e.n_segs >= 1 && e.n_segs <= LITE_RPC_MAX_SEGS);
        FUZZ_CHECK(e.reply_cap <= LITE_RPC_PAYLOAD_MAX);
    } else {
        FUZZ_CHECK(e.kind == LITE_RPC_MSG);
        FUZZ_CHECK(e.call_id == 0 && e.n_segs == 0 && e.reply_cap == 0);
    }
    // Header, segments and payload lie inside the entry, the entry inside
    // the room the sender had.
    FUZZ_CHECK(e.hdr_len == sizeof(lite_wire_rpc) + uint64_t{e.n_segs} * sizeof(lite_wire_chunk));
    FUZZ_CHECK(e.size % LITE_RPC_ALIGN == 0);
    FUZZ_CHECK(uint64_t{e.hdr_len} + e.len <= e.size);
    FUZZ_CHECK(e.size - (uint64_t{e.hdr_len} + e.len) < LITE_RPC_ALIGN);
    FUZZ_CHECK(e.size <= room);
    FUZZ_CHECK(e.size == lite_rpc_entry_size(e.n_segs, e.len));

    lite_wire_rpc again{};
    again.magic = htole32(LITE_RPC_MAGIC);
    again.kind = e.kind;
    again.src = htole16(e.src);
    again.port = htole32(e.port);
    again.call_id = htole32(e.call_id);
    again.pos = htole64(pos);
    again.len = htole32(e.len);
    again.n_segs = htole32(e.n_segs);
    again.reply_cap = htole64(e.reply_cap);
    FUZZ_CHECK(std::memcmp(&again, &w, sizeof(w)) == 0);
    return 0;
}
