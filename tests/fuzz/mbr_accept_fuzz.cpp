// SPDX-License-Identifier: GPL-2.0
// The JOIN accept (lite_kmod/core/membership.c): lite_mbr_apply_accept() on
// any payload. An accepted table is consistent and is exactly what the
// accept listed; encoding it again (lite_mbr_encode_accept) and applying
// that gives the same table; a refused one leaves an empty table. The
// parser's check of an AUTH reply (lite_wire_parse) and this decoder agree.
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "fuzz.hpp"

namespace
{

bool same_table(const lite_membership& a, const lite_membership& b)
{
    if (a.self != b.self || a.manager != b.manager || a.epoch != b.epoch || a.count != b.count)
        return false;
    for (int id = 0; id <= LITE_MBR_MAX; id++) {
        if (a.present[id] != b.present[id])
            return false;
        if (a.present[id] && !lite_naddr_equal(&a.addr[id], &b.addr[id]))
            return false;
    }
    return true;
}

// Every member's since() is its own, non-zero and at most @joins; every
// other id's is 0; @joins did not go back from @joins_before.
bool since_sound(const lite_membership& mb, uint32_t joins_before)
{
    if (mb.joins < joins_before)
        return false;
    std::vector<uint32_t> seen;
    for (int id = 0; id <= LITE_MBR_MAX + 1; id++) {
        uint32_t s = lite_mbr_since(&mb, static_cast<uint16_t>(id));
        if (id == 0 || id > LITE_MBR_MAX || !mb.present[id]) {
            if (s != 0)
                return false;
            continue;
        }
        if (s == 0 || s > mb.joins || s <= joins_before || std::find(seen.begin(), seen.end(), s) != seen.end())
            return false;
        seen.push_back(s);
    }
    return true;
}

bool empty_table(const lite_membership& mb)
{
    lite_membership zero{};
    lite_mbr_init(&zero);
    return same_table(mb, zero);
}

// What lite_wire_parse() says of an AUTH reply carrying this accept.
int parse_as_auth_reply(const uint8_t* p, size_t len)
{
    std::vector<uint8_t> msg(sizeof(lite_wire_hdr) + sizeof(lite_wire_auth) + len);
    lite_wire_put_hdr(msg.data(), LITE_MSG_AUTH, true, 1, 0, 1, 0, static_cast<uint32_t>(sizeof(lite_wire_auth) + len));
    if (len)
        std::memcpy(msg.data() + sizeof(lite_wire_hdr) + sizeof(lite_wire_auth), p, len);
    lite_msg m{};
    return lite_wire_parse(msg.data(), msg.size(), &m);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    // The largest accept the manager sends; an AUTH reply has room for it.
    const size_t max = sizeof(lite_wire_accept) + LITE_WIRE_MAX_NODES * sizeof(lite_wire_member);
    if (size > max + sizeof(lite_wire_member))
        return 0;
    // A heap copy exactly @size long (so ASan sees any read past @len),
    // aligned like a received payload.
    auto copy = std::make_unique<uint8_t[]>(size);
    uint8_t* p = copy.get();
    if (size)
        std::memcpy(p, data, size);

    // A table from before: a wrong length leaves it, anything else replaces
    // it (with an empty one if the accept is refused).
    lite_membership mb{}, before{};
    lite_naddr old_addr{LITE_WIRE_AF_INET, 18515, {10, 0, 0, 1}};
    lite_mbr_init_manager(&mb, &old_addr);
    before = mb;
    int ret = lite_mbr_apply_accept(&mb, p, static_cast<uint32_t>(size));
    FUZZ_CHECK(ret ? mb.joins >= before.joins : since_sound(mb, before.joins));
    int parsed = parse_as_auth_reply(p, size);
    FUZZ_CHECK(ret == 0 || ret == -EBADMSG);
    if (size && parsed == 0) // (an AUTH reply without an accept is fine)
        FUZZ_CHECK(ret == 0);
    const auto* acc = reinterpret_cast<const lite_wire_accept*>(p);
    bool len_ok =
        size >= sizeof(*acc) && size == sizeof(*acc) + size_t{le16toh(acc->n_members)} * sizeof(lite_wire_member);
    if (ret) {
        FUZZ_CHECK(len_ok ? empty_table(mb) : same_table(mb, before));
        return 0;
    }

    FUZZ_CHECK(len_ok);
    uint16_t n = le16toh(acc->n_members);
    FUZZ_CHECK(mb.count == n && n >= 1 && n <= LITE_MBR_MAX);
    FUZZ_CHECK(mb.self == le16toh(acc->your_id) && mb.manager == le16toh(acc->manager_id));
    FUZZ_CHECK(lite_mbr_present(&mb, mb.self) && lite_mbr_present(&mb, mb.manager));
    FUZZ_CHECK(mb.epoch == le32toh(acc->epoch));

    // Exactly the listed members, at their addresses, no address twice.
    int present = 0;
    bool members_clean = true;
    for (int id = 0; id <= LITE_MBR_MAX; id++)
        present += mb.present[id];
    FUZZ_CHECK(!mb.present[0] && present == n);
    for (uint16_t i = 0; i < n; i++) {
        lite_naddr a{};
        FUZZ_CHECK(lite_wire_get_addr(&acc->members[i].addr, &a) == 0);
        uint16_t id = le16toh(acc->members[i].id);
        FUZZ_CHECK(lite_mbr_present(&mb, id) && lite_naddr_equal(&mb.addr[id], &a));
        members_clean &= acc->members[i].reserved0 == 0 && acc->members[i].reserved == 0;
    }
    // The parser refuses only what the decoder leaves to it.
    bool header_clean = acc->reserved0 == 0 && acc->reserved == 0 && mb.self != mb.manager;
    if (header_clean && members_clean)
        FUZZ_CHECK(parsed == 0);

    // decode(encode(table)) is the table.
    size_t want = lite_mbr_accept_size(&mb);
    FUZZ_CHECK(want == sizeof(*acc) + size_t{n} * sizeof(lite_wire_member));
    std::vector<uint64_t> out((want + 7) / 8);
    FUZZ_CHECK(lite_mbr_encode_accept(&mb, mb.self, out.data(), want - 1) == 0);
    FUZZ_CHECK(lite_mbr_encode_accept(&mb, mb.self, out.data(), want) == want);
    lite_membership again{};
    FUZZ_CHECK(lite_mbr_apply_accept(&again, out.data(), static_cast<uint32_t>(want)) == 0);
    FUZZ_CHECK(same_table(mb, again));
    return 0;
}
