// SPDX-License-Identifier: GPL-2.0
// lite_wire_parse() (lite_kmod/core/wire.c) on any bytes: every control
// message type, both directions, every payload decoder behind it. The input
// is the received buffer itself, exactly as long as the message, so ASan sees
// any read past what arrived. A message the parser accepts must keep every
// promise a handler in lite.ko relies on; each is checked here on its own,
// written from the wire format in wire.h rather than from the parser.
#include <endian.h>

#include <cerrno>

#include "fuzz.hpp"

namespace
{

template <typename T> const T* as(const lite_msg& m)
{
    return static_cast<const T*>(m.payload);
}

bool all_zero(const void* p, size_t n)
{
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; i++) {
        if (b[i])
            return false;
    }
    return true;
}

bool node_id_ok(uint16_t le)
{
    uint16_t id = le16toh(le);
    return id >= 1 && id <= LITE_WIRE_MAX_NODES;
}

// A checked address decodes, and encodes back to the very same bytes.
void check_addr(const lite_wire_addr* w)
{
    lite_naddr a{};
    FUZZ_CHECK(lite_wire_get_addr(w, &a) == 0);
    FUZZ_CHECK(a.family == LITE_WIRE_AF_INET || a.family == LITE_WIRE_AF_INET6);
    FUZZ_CHECK(a.port != 0);
    lite_wire_addr back{};
    lite_wire_put_addr(&back, &a);
    FUZZ_CHECK(std::memcmp(&back, w, sizeof(back)) == 0);
}

// A name is 1..63 bytes, NUL-terminated, zero to the end of the field.
void check_name(const char* name)
{
    const void* nul = std::memchr(name, 0, LITE_WIRE_NAME_MAX);
    FUZZ_CHECK(nul != nullptr);
    size_t n = static_cast<const char*>(nul) - name;
    FUZZ_CHECK(n >= 1 && n < LITE_WIRE_NAME_MAX);
    FUZZ_CHECK(all_zero(name + n, LITE_WIRE_NAME_MAX - n));
}

// A chunk list fills exactly @len bytes and lies inside its LMR's list.
void check_chunks(const lite_wire_chunks* c, uint64_t len)
{
    uint32_t count = le32toh(c->count), start = le32toh(c->start), total = le32toh(c->total);

    FUZZ_CHECK(c->reserved == 0);
    FUZZ_CHECK(count >= 1 && count <= LITE_WIRE_MAX_CHUNKS);
    FUZZ_CHECK(len == sizeof(*c) + uint64_t{count} * sizeof(lite_wire_chunk));
    FUZZ_CHECK(uint64_t{start} + count <= total);
    for (uint32_t i = 0; i < count; i++)
        FUZZ_CHECK(le32toh(c->chunks[i].len) != 0);
}

// A ring: aligned size, all of its chunks from 0, adding up to the size.
void check_ring(const lite_msg& m)
{
    const auto* r = as<lite_wire_ring>(m);
    uint64_t size = le64toh(r->size), sum = 0;

    FUZZ_CHECK(m.len >= sizeof(*r) && r->reserved0 == 0 && r->reserved == 0);
    FUZZ_CHECK(size != 0 && size % LITE_RPC_ALIGN == 0 && size <= (uint64_t{1} << 36));
    check_chunks(&r->chunks, m.len - offsetof(lite_wire_ring, chunks));
    FUZZ_CHECK(r->chunks.start == 0 && r->chunks.count == r->chunks.total);
    for (uint32_t i = 0; i < le32toh(r->chunks.count); i++)
        sum += le32toh(r->chunks.chunks[i].len);
    FUZZ_CHECK(sum == size);
}

// A JOIN accept: the table it describes applies cleanly, as listed.
void check_accept(const uint8_t* p, uint32_t len)
{
    const auto* acc = reinterpret_cast<const lite_wire_accept*>(p);
    uint16_t n = le16toh(acc->n_members);
    uint16_t you = le16toh(acc->your_id), mgr = le16toh(acc->manager_id);

    FUZZ_CHECK(n >= 1 && n <= LITE_WIRE_MAX_NODES);
    FUZZ_CHECK(len == sizeof(*acc) + size_t{n} * sizeof(lite_wire_member));
    FUZZ_CHECK(acc->reserved0 == 0 && acc->reserved == 0);
    FUZZ_CHECK(you != mgr);

    lite_membership mb{};
    FUZZ_CHECK(lite_mbr_apply_accept(&mb, p, len) == 0);
    FUZZ_CHECK(mb.count == n && mb.self == you && mb.manager == mgr);
    FUZZ_CHECK(mb.epoch == le32toh(acc->epoch));
    FUZZ_CHECK(lite_mbr_present(&mb, you) && lite_mbr_present(&mb, mgr));
    for (uint16_t i = 0; i < n; i++) {
        const lite_wire_member* w = &acc->members[i];
        lite_naddr a{};
        FUZZ_CHECK(w->reserved0 == 0 && w->reserved == 0 && node_id_ok(w->id));
        check_addr(&w->addr);
        FUZZ_CHECK(lite_wire_get_addr(&w->addr, &a) == 0);
        FUZZ_CHECK(lite_mbr_find_addr(&mb, &a) == le16toh(w->id));
    }
}

void check_request(const lite_msg& m)
{
    switch (m.type) {
    case LITE_MSG_HELLO: {
        const auto* h = as<lite_wire_hello>(m);
        FUZZ_CHECK(m.len == sizeof(*h) && h->reserved0 == 0 && h->reserved == 0);
        if (h->purpose == LITE_PURPOSE_JOIN) {
            FUZZ_CHECK(h->node_id == 0);
        } else {
            FUZZ_CHECK((h->purpose == LITE_PURPOSE_PEER || h->purpose == LITE_PURPOSE_SELF) && node_id_ok(h->node_id));
        }
        check_addr(&h->listen);
        break;
    }
    case LITE_MSG_AUTH:
        FUZZ_CHECK(m.len == sizeof(lite_wire_auth));
        break;
    case LITE_MSG_MEMBER_ADD: {
        const auto* w = as<lite_wire_member>(m);
        FUZZ_CHECK(m.len == sizeof(*w) && w->reserved0 == 0 && w->reserved == 0 && node_id_ok(w->id));
        check_addr(&w->addr);
        break;
    }
    case LITE_MSG_LEAVE:
    case LITE_MSG_CREDIT:
        FUZZ_CHECK(m.len == 0 && m.req_id == 0);
        break;
    case LITE_MSG_PING:
        FUZZ_CHECK(m.len == sizeof(lite_wire_ping) && as<lite_wire_ping>(m)->reserved == 0);
        break;
    case LITE_MSG_MEMBER_DEL: {
        const auto* d = as<lite_wire_member_del>(m);
        FUZZ_CHECK(m.len == sizeof(*d) && m.req_id == 0 && d->reserved == 0 && node_id_ok(d->id));
        FUZZ_CHECK((le16toh(d->flags) & ~LITE_DEL_LEFT) == 0);
        break;
    }
    case LITE_MSG_LMR_ALLOC: {
        const auto* a = as<lite_wire_lmr_alloc>(m);
        FUZZ_CHECK(m.len == sizeof(*a) && (le32toh(a->flags) & ~LITE_WIRE_LMR_FLAGS) == 0 &&
                   (le32toh(a->how) & ~LITE_WIRE_ALLOC_HOW) == 0 && a->size != 0);
        break;
    }
    case LITE_MSG_LMR_CHUNKS: {
        const auto* r = as<lite_wire_lmr_ref>(m);
        FUZZ_CHECK(m.len == sizeof(*r) && r->flags == 0 && r->perms == 0 && r->reserved == 0);
        break;
    }
    case LITE_MSG_LMR_FREE: {
        const auto* r = as<lite_wire_lmr_ref>(m);
        FUZZ_CHECK(m.len == sizeof(*r) && (le32toh(r->flags) & ~LITE_WIRE_FREE_UNMAPPED) == 0);
        FUZZ_CHECK(r->start == 0 && r->grant == 0 && r->perms == 0 && r->reserved == 0);
        break;
    }
    case LITE_MSG_LMR_GRANT:
    case LITE_MSG_LMR_UNKEY: {
        const auto* r = as<lite_wire_lmr_ref>(m);
        FUZZ_CHECK(m.len == sizeof(*r) && r->start == 0 && r->flags == 0 && r->grant != 0 && r->reserved == 0);
        if (m.type == LITE_MSG_LMR_GRANT) {
            FUZZ_CHECK(r->perms != 0 && (le32toh(r->perms) & ~LITE_WIRE_PERMS) == 0);
        } else {
            FUZZ_CHECK(r->perms == 0);
        }
        break;
    }
    case LITE_MSG_SHARE: {
        const auto* s = as<lite_wire_share>(m);
        FUZZ_CHECK(m.len == sizeof(*s) && (s->flags & ~LITE_WIRE_LMR_FLAGS) == 0);
        FUZZ_CHECK(s->kind <= LITE_SHARE_KIND_MAX && (s->kind != LITE_SHARE_DSM || s->grant == 0));
        check_name(s->name);
        FUZZ_CHECK(s->share_id == 0 && s->size != 0 && node_id_ok(s->mem_node));
        FUZZ_CHECK((le32toh(s->perms) & ~LITE_WIRE_PERMS) == 0);
        break;
    }
    case LITE_MSG_LOOKUP:
    case LITE_MSG_UNSHARE:
        FUZZ_CHECK(m.len == sizeof(lite_wire_name));
        check_name(as<lite_wire_name>(m)->name);
        break;
    case LITE_MSG_INVALIDATE: {
        const auto* inv = as<lite_wire_invalidate>(m);
        FUZZ_CHECK(m.len == sizeof(*inv) && inv->reserved0 == 0 && inv->reserved == 0);
        FUZZ_CHECK(le16toh(inv->mem_node) <= LITE_WIRE_MAX_NODES);
        break;
    }
    case LITE_MSG_ATOMIC: {
        const auto* a = as<lite_wire_atomic>(m);
        FUZZ_CHECK(m.len == sizeof(*a) && all_zero(a->reserved0, sizeof(a->reserved0)));
        FUZZ_CHECK(a->op == LITE_ATOMIC_FETCH_ADD || a->op == LITE_ATOMIC_CMP_SWAP);
        FUZZ_CHECK(a->op == LITE_ATOMIC_CMP_SWAP || a->swap == 0);
        FUZZ_CHECK(le64toh(a->offset) % 8 == 0);
        break;
    }
    case LITE_MSG_RING:
        FUZZ_CHECK(m.len == 0);
        break;
    case LITE_MSG_RING_ACK:
        FUZZ_CHECK(m.len == sizeof(lite_wire_ring_ack) && m.req_id == 0);
        break;
    case LITE_MSG_SYNC: {
        const auto* s = as<lite_wire_sync>(m);
        FUZZ_CHECK(m.len == sizeof(*s) && s->reserved == 0 && le64toh(s->offset) % 8 == 0);
        FUZZ_CHECK(s->op >= LITE_SYNC_LOCK && s->op <= LITE_SYNC_OP_MAX);
        FUZZ_CHECK((s->op == LITE_SYNC_UNLOCK) == (s->owner != 0));
        FUZZ_CHECK((s->op == LITE_SYNC_BARRIER) == (s->count != 0));
        if (s->op == LITE_SYNC_CANCEL) {
            FUZZ_CHECK(s->kind == LITE_SYNC_LOCK || s->kind == LITE_SYNC_BARRIER);
        } else {
            FUZZ_CHECK(s->kind == 0);
        }
        break;
    }
    case LITE_MSG_HEARTBEAT:
        FUZZ_CHECK(m.len == sizeof(lite_wire_heartbeat) && m.req_id == 0);
        break;
    case LITE_MSG_LMR_CANCEL: {
        const auto* c = as<lite_wire_lmr_cancel>(m);
        FUZZ_CHECK(m.len == sizeof(*c) && m.req_id == 0 && c->req_id != 0 && c->reserved == 0);
        break;
    }
    case LITE_MSG_DSM_OPEN:
    case LITE_MSG_DSM_CLOSE:
    case LITE_MSG_DSM_GONE: {
        const auto* r = as<lite_wire_dsm_region>(m);
        FUZZ_CHECK(m.len == sizeof(*r) && r->region != 0 && r->reserved == 0);
        break;
    }
    case LITE_MSG_DSM_REQ: {
        const auto* q = as<lite_wire_dsm_req>(m);
        FUZZ_CHECK(m.len == sizeof(*q) && q->region != 0 && all_zero(q->reserved0, sizeof(q->reserved0)));
        FUZZ_CHECK(le64toh(q->page) < LITE_WIRE_DSM_MAX_PAGES);
        FUZZ_CHECK(q->kind == LITE_DSM_RD || q->kind == LITE_DSM_WR);
        break;
    }
    case LITE_MSG_DSM_DONE: {
        const auto* d = as<lite_wire_dsm_done>(m);
        auto status = static_cast<int32_t>(le32toh(d->status));
        FUZZ_CHECK(m.len == sizeof(*d) && d->region != 0 && d->txn != 0);
        FUZZ_CHECK(le64toh(d->page) < LITE_WIRE_DSM_MAX_PAGES && status <= 0 && status >= -4095);
        break;
    }
    case LITE_MSG_DSM_INVAL: {
        const auto* v = as<lite_wire_dsm_inval>(m);
        FUZZ_CHECK(m.len == sizeof(*v) && v->region != 0 && all_zero(v->reserved0, sizeof(v->reserved0)));
        FUZZ_CHECK(le64toh(v->page) < LITE_WIRE_DSM_MAX_PAGES);
        FUZZ_CHECK(v->what == LITE_DSM_INVALIDATE || v->what == LITE_DSM_DOWNGRADE || v->what == LITE_DSM_PROBE);
        break;
    }
    default:
        FUZZ_CHECK(!"a type the parser should have refused");
    }
}

void check_reply(const lite_msg& m)
{
    FUZZ_CHECK(m.req_id != 0);
    if (m.status) {
        FUZZ_CHECK(m.len == 0);
        return;
    }
    switch (m.type) {
    case LITE_MSG_HELLO:
        FUZZ_CHECK(m.len == sizeof(lite_wire_challenge));
        break;
    case LITE_MSG_AUTH:
        FUZZ_CHECK(m.len >= sizeof(lite_wire_auth));
        if (m.len > sizeof(lite_wire_auth)) {
            check_accept(static_cast<const uint8_t*>(m.payload) + sizeof(lite_wire_auth),
                         m.len - sizeof(lite_wire_auth));
        }
        break;
    case LITE_MSG_PING:
        FUZZ_CHECK(m.len == sizeof(lite_wire_ping) && as<lite_wire_ping>(m)->reserved == 0);
        break;
    case LITE_MSG_LMR_ALLOC: {
        const auto* l = as<lite_wire_lmr>(m);
        FUZZ_CHECK(m.len >= sizeof(*l) && (le32toh(l->flags) & ~LITE_WIRE_LMR_FLAGS) == 0 && l->size != 0);
        check_chunks(&l->first, m.len - offsetof(lite_wire_lmr, first));
        break;
    }
    case LITE_MSG_LMR_CHUNKS:
        check_chunks(as<lite_wire_chunks>(m), m.len);
        break;
    case LITE_MSG_SHARE:
        FUZZ_CHECK(m.len == sizeof(lite_wire_share_id));
        break;
    case LITE_MSG_LOOKUP: {
        const auto* s = as<lite_wire_share>(m);
        FUZZ_CHECK(m.len == sizeof(*s) && (s->flags & ~LITE_WIRE_LMR_FLAGS) == 0);
        FUZZ_CHECK(s->kind <= LITE_SHARE_KIND_MAX && (s->kind != LITE_SHARE_DSM || s->grant == 0));
        check_name(s->name);
        FUZZ_CHECK(s->share_id != 0 && s->size != 0 && node_id_ok(s->mem_node));
        FUZZ_CHECK((le32toh(s->perms) & ~LITE_WIRE_PERMS) == 0);
        break;
    }
    case LITE_MSG_ATOMIC:
        FUZZ_CHECK(m.len == sizeof(lite_wire_atomic_result));
        break;
    case LITE_MSG_RING:
        check_ring(m);
        break;
    case LITE_MSG_SYNC:
        FUZZ_CHECK(m.len == sizeof(lite_wire_sync_result));
        break;
    case LITE_MSG_DSM_OPEN: {
        const auto* i = as<lite_wire_dsm_info>(m);
        FUZZ_CHECK(m.len == sizeof(*i) && i->reserved == 0 && i->size != 0);
        FUZZ_CHECK(le64toh(i->size) / LITE_DSM_PAGE_SIZE <= LITE_WIRE_DSM_MAX_PAGES);
        break;
    }
    case LITE_MSG_DSM_REQ: {
        const auto* g = as<lite_wire_dsm_grant>(m);
        FUZZ_CHECK(m.len == sizeof(*g) && g->txn != 0 && all_zero(g->reserved0, sizeof(g->reserved0)));
        if (g->kind == LITE_DSM_DATA) {
            FUZZ_CHECK(node_id_ok(g->from));
        } else {
            FUZZ_CHECK(g->kind == LITE_DSM_KEEP || g->kind == LITE_DSM_FILL);
            FUZZ_CHECK(g->from == 0 && g->from_addr == 0 && g->from_rkey == 0);
        }
        break;
    }
    case LITE_MSG_DSM_INVAL: {
        const auto* h = as<lite_wire_dsm_held>(m);
        FUZZ_CHECK(m.len == sizeof(*h) && h->has_frame <= 1 && all_zero(h->reserved0, sizeof(h->reserved0)));
        break;
    }
    case LITE_MSG_DSM_CLOSE:
    case LITE_MSG_DSM_GONE:
    case LITE_MSG_DSM_DONE:
    case LITE_MSG_MEMBER_ADD:
    case LITE_MSG_LMR_FREE:
    case LITE_MSG_LMR_GRANT:
    case LITE_MSG_LMR_UNKEY:
    case LITE_MSG_UNSHARE:
    case LITE_MSG_INVALIDATE:
        FUZZ_CHECK(m.len == 0);
        break;
    default: // one-way messages have no reply
        FUZZ_CHECK(!"a reply the parser should have refused");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    lite_msg m{};
    int ret = lite_wire_parse(data, size, &m);

    if (ret) {
        FUZZ_CHECK(ret == -EBADMSG || ret == -EPROTO);
        // -EPROTO only for a well-formed header of another version.
        if (ret == -EPROTO)
            FUZZ_CHECK(size >= sizeof(lite_wire_hdr) && data[4] != LITE_WIRE_VERSION);
        return 0;
    }

    // The header: sizes and pointers inside what arrived.
    FUZZ_CHECK(size >= sizeof(lite_wire_hdr) && size <= LITE_MSG_MAX);
    FUZZ_CHECK(m.len == size - sizeof(lite_wire_hdr));
    FUZZ_CHECK(static_cast<const uint8_t*>(m.payload) == data + sizeof(lite_wire_hdr));
    FUZZ_CHECK(m.type >= LITE_MSG_HELLO && m.type < LITE_MSG_TYPE_END);
    FUZZ_CHECK(m.src <= LITE_WIRE_MAX_NODES);
    FUZZ_CHECK(m.status <= 0 && m.status >= -4095 && (m.reply || m.status == 0));

    // Nothing in an accepted header is unchecked: encoding the decoded
    // fields gives back the same 32 bytes.
    lite_wire_hdr again{};
    FUZZ_CHECK(lite_wire_put_hdr(&again, m.type, m.reply, m.src, m.credits, m.req_id, m.status, m.len) ==
               sizeof(again));
    FUZZ_CHECK(std::memcmp(&again, data, sizeof(again)) == 0);

    if (m.reply) {
        check_reply(m);
    } else {
        check_request(m);
    }
    return 0;
}
