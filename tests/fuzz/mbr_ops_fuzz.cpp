// SPDX-License-Identifier: GPL-2.0
// The member table (lite_kmod/core/membership.c) under any sequence of
// additions, removals, id allocations and address look-ups, against a
// model: every result code (a full table included), the count, the epoch
// (bumped on each change and only then), the manager dropped with its
// member, the JOIN accept for any member round-tripping through
// lite_mbr_apply_accept().
#include <cerrno>
#include <vector>

#include "fuzz.hpp"

namespace
{

// One of 32 addresses, IPv4 and IPv6, so that they collide often.
lite_naddr pick_addr(uint8_t b)
{
    lite_naddr a{};
    a.family = (b & 0x10) ? LITE_WIRE_AF_INET6 : LITE_WIRE_AF_INET;
    a.port = static_cast<uint16_t>(18515 + (b & 3));
    a.addr[0] = 10;
    a.addr[3] = static_cast<uint8_t>((b >> 2) & 3);
    if (a.family == LITE_WIRE_AF_INET6)
        a.addr[15] = 1;
    return a;
}

struct Model {
    bool present[LITE_MBR_MAX + 1] = {};
    lite_naddr addr[LITE_MBR_MAX + 1] = {};
    int count = 0;
    uint32_t epoch = 0;
    uint16_t manager = 0;
    uint16_t self = 0;

    [[nodiscard]] int find(const lite_naddr& a) const
    {
        for (int id = 1; id <= LITE_MBR_MAX; id++) {
            if (present[id] && addr[id].family == a.family && addr[id].port == a.port &&
                std::memcmp(addr[id].addr, a.addr, sizeof(a.addr)) == 0)
                return id;
        }
        return -ENOENT;
    }
};

// The counters, and member @id.
void compare_one(const lite_membership& mb, const Model& m, int id)
{
    FUZZ_CHECK(mb.count == m.count && mb.epoch == m.epoch);
    FUZZ_CHECK(mb.manager == m.manager && mb.self == m.self);
    if (id < 1 || id > LITE_MBR_MAX)
        return;
    FUZZ_CHECK(lite_mbr_present(&mb, static_cast<uint16_t>(id)) == m.present[id]);
    if (m.present[id])
        FUZZ_CHECK(lite_naddr_equal(&mb.addr[id], &m.addr[id]));
}

// The whole table.
void compare(const lite_membership& mb, const Model& m)
{
    FUZZ_CHECK(mb.count == m.count && mb.epoch == m.epoch);
    FUZZ_CHECK(mb.manager == m.manager && mb.self == m.self);
    FUZZ_CHECK(!mb.present[0]);
    for (int id = 1; id <= LITE_MBR_MAX; id++) {
        FUZZ_CHECK(mb.present[id] == m.present[id]);
        FUZZ_CHECK(lite_mbr_present(&mb, static_cast<uint16_t>(id)) == m.present[id]);
        if (m.present[id])
            FUZZ_CHECK(lite_naddr_equal(&mb.addr[id], &m.addr[id]));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);
    lite_membership mb{};
    Model m;
    lite_mbr_init(&mb);
    // Applying a full accept and filling the table take a while: two of
    // them per input keep the fuzzer fast.
    int heavy = 2;

    while (!in.empty()) {
        uint8_t op = in.u8() % 7;
        if (op == 5 || op == 6) {
            if (heavy) {
                heavy--;
            } else {
                op = 2;
            }
        }
        int touched = 0; // the id to compare after the operation; -1: all
        switch (op) {
        case 0: { // add; ids 0 and 129 are out of range
            auto id = static_cast<uint16_t>(in.range(0, LITE_MBR_MAX + 1));
            touched = id;
            lite_naddr a = pick_addr(in.u8());
            int want = 0;
            if (id == 0 || id > LITE_MBR_MAX) {
                want = -EINVAL;
            } else if (m.present[id]) {
                want = -EEXIST;
            } else if (m.find(a) > 0) {
                want = -EADDRINUSE;
            }
            FUZZ_CHECK(lite_mbr_add(&mb, id, &a) == want);
            if (!want) {
                m.present[id] = true;
                m.addr[id] = a;
                m.count++;
                m.epoch++;
            }
            break;
        }
        case 1: { // remove
            auto id = static_cast<uint16_t>(in.range(0, LITE_MBR_MAX + 1));
            touched = id;
            bool was = id >= 1 && id <= LITE_MBR_MAX && m.present[id];
            FUZZ_CHECK(lite_mbr_remove(&mb, id) == (was ? 0 : -ENOENT));
            if (was) {
                m.present[id] = false;
                m.count--;
                m.epoch++;
                if (m.manager == id)
                    m.manager = 0;
            }
            break;
        }
        case 2: { // the lowest free id
            int want = -ENOSPC;
            for (int id = LITE_MBR_MAX; id >= 1; id--) {
                if (!m.present[id])
                    want = id;
            }
            FUZZ_CHECK(lite_mbr_alloc_id(&mb) == want);
            break;
        }
        case 3: { // who listens there
            lite_naddr a = pick_addr(in.u8());
            FUZZ_CHECK(lite_mbr_find_addr(&mb, &a) == m.find(a));
            break;
        }
        case 4: { // a new cluster with us as manager
            lite_naddr a = pick_addr(in.u8());
            FUZZ_CHECK(lite_mbr_init_manager(&mb, &a) == 0);
            m = Model{};
            m.present[1] = true;
            m.addr[1] = a;
            m.count = 1;
            m.epoch = 1;
            m.manager = m.self = 1;
            touched = -1;
            break;
        }
        case 5: { // the accept a joiner would get, applied on its side
            auto you = static_cast<uint16_t>(in.range(1, LITE_MBR_MAX));
            size_t want = lite_mbr_accept_size(&mb);
            std::vector<uint64_t> buf((want + 7) / 8 + 1);
            FUZZ_CHECK(lite_mbr_encode_accept(&mb, you, buf.data(), want) == want);
            lite_membership joiner{};
            int ret = lite_mbr_apply_accept(&joiner, buf.data(), static_cast<uint32_t>(want));
            bool ok = m.present[you] && m.manager && m.present[m.manager];
            FUZZ_CHECK((ret == 0) == ok);
            if (ok) {
                Model j = m;
                j.self = you;
                compare(joiner, j);
            }
            break;
        }
        case 6: { // fill the table, at addresses outside pick_addr()'s
            auto n = static_cast<int>(in.range(1, LITE_MBR_MAX));
            for (int id = 1; id <= LITE_MBR_MAX && n; id++) {
                if (m.present[id])
                    continue;
                lite_naddr a{};
                a.family = LITE_WIRE_AF_INET;
                a.port = static_cast<uint16_t>(20000 + id);
                a.addr[0] = 10;
                a.addr[1] = 1;
                FUZZ_CHECK(lite_mbr_add(&mb, static_cast<uint16_t>(id), &a) == 0);
                m.present[id] = true;
                m.addr[id] = a;
                m.count++;
                m.epoch++;
                n--;
            }
            touched = -1;
            break;
        }
        }
        if (touched < 0) {
            compare(mb, m);
        } else {
            compare_one(mb, m, touched);
        }
    }
    compare(mb, m);
    return 0;
}
