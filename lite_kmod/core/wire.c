// SPDX-License-Identifier: GPL-2.0
/*
 * lite wire format: encode, decode and validate control messages.
 * Verb-free; see wire.h.
 */
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/build_bug.h>
#include <linux/stddef.h>
#include <asm/byteorder.h>

#include "wire.h"
#include "dsm.h"

static_assert(sizeof(struct lite_wire_hdr) == 32);
static_assert(sizeof(struct lite_wire_addr) == 24);
static_assert(sizeof(struct lite_wire_hello) == 48);
static_assert(sizeof(struct lite_wire_member) == 32);
static_assert(sizeof(struct lite_wire_member_del) == 8);
static_assert(sizeof(struct lite_wire_chunk) == 16);
static_assert(sizeof(struct lite_wire_chunks) == 16);
static_assert(sizeof(struct lite_wire_lmr) == 40);
static_assert(sizeof(struct lite_wire_lmr_cancel) == 8);
static_assert(sizeof(struct lite_wire_lmr_ref) == 32);
static_assert(sizeof(struct lite_wire_share) == 104);
static_assert(sizeof(struct lite_wire_dsm_region) == 16);
static_assert(sizeof(struct lite_wire_dsm_info) == 16);
static_assert(sizeof(struct lite_wire_dsm_req) == 40);
static_assert(sizeof(struct lite_wire_dsm_grant) == 24);
static_assert(sizeof(struct lite_wire_dsm_done) == 32);
static_assert(sizeof(struct lite_wire_dsm_inval) == 24);
static_assert(sizeof(struct lite_wire_dsm_held) == 16);
static_assert(sizeof(struct lite_wire_invalidate) == 24);
static_assert(sizeof(struct lite_wire_atomic) == 40);
static_assert(sizeof(struct lite_wire_ring) == 32);
static_assert(sizeof(struct lite_wire_sync) == 32);
static_assert(sizeof(struct lite_wire_rpc) == LITE_RPC_ALIGN);
static_assert(sizeof(struct lite_wire_rpc_reply) == 32);
static_assert(32 + 40 + LITE_WIRE_MAX_CHUNKS * 16 <= LITE_MSG_MAX);
static_assert(sizeof(struct lite_wire_accept) == 16);
static_assert(sizeof(struct lite_wire_challenge) == LITE_NONCE_LEN);
static_assert(sizeof(struct lite_wire_hdr) + sizeof(struct lite_wire_auth) +
	      sizeof(struct lite_wire_accept) +
	      LITE_WIRE_MAX_NODES * sizeof(struct lite_wire_member) <=
	      LITE_MSG_MAX);

static bool all_zero(const void *p, size_t n)
{
	const u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/**
 * lite_wire_get_addr - decode and check an address from the wire
 * @w: the wire address
 * @a: the decoded address on success
 *
 * Return: 0, or -EBADMSG if a reserved field is set, the family is
 * neither IPv4 nor IPv6, an IPv4 address has bytes past its fourth, or
 * the port is 0.
 */
int lite_wire_get_addr(const struct lite_wire_addr *w, struct lite_naddr *a)
{
	if (w->reserved0 || w->reserved)
		return -EBADMSG;
	if (w->family == LITE_WIRE_AF_INET) {
		if (!all_zero(w->addr + 4, sizeof(w->addr) - 4))
			return -EBADMSG;
	} else if (w->family != LITE_WIRE_AF_INET6) {
		return -EBADMSG;
	}
	if (!w->port)
		return -EBADMSG;
	memset(a, 0, sizeof(*a));
	a->family = w->family;
	a->port = be16_to_cpu(w->port);
	memcpy(a->addr, w->addr, sizeof(a->addr));
	return 0;
}

/**
 * lite_wire_put_addr - encode an address for the wire
 * @w: the wire address, zeroed first
 * @a: the address (IPv4 or IPv6)
 */
void lite_wire_put_addr(struct lite_wire_addr *w, const struct lite_naddr *a)
{
	memset(w, 0, sizeof(*w));
	w->family = a->family;
	w->port = cpu_to_be16(a->port);
	memcpy(w->addr, a->addr, a->family == LITE_WIRE_AF_INET ? 4 : 16);
}

/**
 * lite_naddr_equal - whether two addresses are the same
 * @a: one address
 * @b: the other
 *
 * Return: true if family, port and address (4 bytes for IPv4, else 16)
 * are equal.
 */
bool lite_naddr_equal(const struct lite_naddr *a, const struct lite_naddr *b)
{
	size_t n = a->family == LITE_WIRE_AF_INET ? 4 : 16;

	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, n);
}

static int check_members(const void *payload, u32 len)
{
	const struct lite_wire_accept *acc = payload;
	u16 n = le16_to_cpu(acc->n_members);
	u16 your_id = le16_to_cpu(acc->your_id);
	u16 mgr = le16_to_cpu(acc->manager_id);
	u8 seen[LITE_WIRE_MAX_NODES + 1] = { 0 };
	bool you = false, manager = false;
	struct lite_naddr a, b;
	u16 i, j, id;

	if (acc->reserved0 || acc->reserved)
		return -EBADMSG;
	if (!n || n > LITE_WIRE_MAX_NODES)
		return -EBADMSG;
	if (len != sizeof(*acc) + (u32)n * sizeof(acc->members[0]))
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		const struct lite_wire_member *m = &acc->members[i];

		id = le16_to_cpu(m->id);
		if (!id || id > LITE_WIRE_MAX_NODES || seen[id])
			return -EBADMSG;
		if (m->reserved0 || m->reserved)
			return -EBADMSG;
		if (lite_wire_get_addr(&m->addr, &a))
			return -EBADMSG;
		/* Two members never share a listen address. */
		for (j = 0; j < i; j++) {
			lite_wire_get_addr(&acc->members[j].addr, &b);
			if (lite_naddr_equal(&a, &b))
				return -EBADMSG;
		}
		seen[id] = 1;
		you |= id == your_id;
		manager |= id == mgr;
	}
	return you && manager && your_id != mgr ? 0 : -EBADMSG;
}

static bool name_ok(const char *name)
{
	size_t i;

	for (i = 0; i < LITE_WIRE_NAME_MAX; i++)
		if (!name[i])
			return i > 0 && all_zero(name + i, LITE_WIRE_NAME_MAX - i);
	return false;
}

static int check_chunks(const struct lite_wire_chunks *c, u32 len)
{
	u32 count, start, total, i;

	/* Nothing is read before the length says it arrived. */
	if (len < sizeof(*c) || c->reserved)
		return -EBADMSG;
	count = le32_to_cpu(c->count);
	start = le32_to_cpu(c->start);
	total = le32_to_cpu(c->total);
	if (count > LITE_WIRE_MAX_CHUNKS ||
	    len != sizeof(*c) + count * sizeof(c->chunks[0]))
		return -EBADMSG;
	if (!total || start >= total || count > total - start || !count)
		return -EBADMSG;
	for (i = 0; i < count; i++)
		if (!le32_to_cpu(c->chunks[i].len))
			return -EBADMSG;
	return 0;
}

static int check_ring(const struct lite_wire_ring *r, u32 len)
{
	const struct lite_wire_chunks *c = &r->chunks;
	u64 size, sum = 0;
	u32 i;

	if (len < sizeof(*r))
		return -EBADMSG;
	size = le64_to_cpu(r->size);
	if (r->reserved0 || r->reserved || !size || size % LITE_RPC_ALIGN ||
	    size > (1ULL << 36))
		return -EBADMSG;
	if (check_chunks(c, len - offsetof(struct lite_wire_ring, chunks)) ||
	    c->start || c->count != c->total)
		return -EBADMSG;
	for (i = 0; i < le32_to_cpu(c->count); i++)
		sum += le32_to_cpu(c->chunks[i].len);
	return sum == size ? 0 : -EBADMSG;
}

/* RPC control payloads (rings, acks, locks and barriers). */
static int check_rpc_payload(const struct lite_msg *m)
{
	const struct lite_wire_sync *sync = m->payload;
	const struct lite_wire_sync_result *res = m->payload;

	switch (m->type) {
	case LITE_MSG_RING:
		if (m->reply)
			return check_ring(m->payload, m->len);
		return m->len ? -EBADMSG : 0;
	case LITE_MSG_RING_ACK:
		return m->reply || m->req_id ||
		       m->len != sizeof(struct lite_wire_ring_ack) ?
		       -EBADMSG : 0;
	case LITE_MSG_SYNC:
		if (m->reply)
			return m->len == sizeof(*res) ? 0 : -EBADMSG;
		if (m->len != sizeof(*sync) || sync->reserved ||
		    le64_to_cpu(sync->offset) & 7)
			return -EBADMSG;
		if ((sync->op == LITE_SYNC_UNLOCK) != !!sync->owner)
			return -EBADMSG;	/* the owner token, for UNLOCK */
		if (!sync->op || sync->op > LITE_SYNC_OP_MAX)
			return -EBADMSG;
		if (sync->op == LITE_SYNC_BARRIER && !sync->count)
			return -EBADMSG;
		if (sync->op != LITE_SYNC_BARRIER && sync->count)
			return -EBADMSG;
		if (sync->op == LITE_SYNC_CANCEL)
			return sync->kind == LITE_SYNC_LOCK ||
			       sync->kind == LITE_SYNC_BARRIER ? 0 : -EBADMSG;
		return sync->kind ? -EBADMSG : 0;
	}
	return -EBADMSG;
}

/**
 * lite_rpc_entry_size - bytes a ring entry takes
 * @n_segs: reply buffer segments it lists
 * @len: payload bytes
 *
 * Return: the size of header, segments and payload, rounded up to
 * LITE_RPC_ALIGN.
 */
u32 lite_rpc_entry_size(u32 n_segs, u32 len)
{
	u64 n = sizeof(struct lite_wire_rpc) +
		(u64)n_segs * sizeof(struct lite_wire_chunk) + len;

	return (u32)((n + LITE_RPC_ALIGN - 1) & ~(u64)(LITE_RPC_ALIGN - 1));
}

/**
 * lite_rpc_entry_parse - check the header of a ring entry that arrived
 * @w: the header as read from the ring
 * @pos: the ring position the receiver expected it at
 * @src: the node id of the connection it came on
 * @room: ring bytes from @pos to the end of what the sender may use
 * @e: decoded fields on success
 *
 * Return: 0 or -EBADMSG (a misbehaving peer: drop its connection).
 */
int lite_rpc_entry_parse(const struct lite_wire_rpc *w, u64 pos, u16 src,
			 u64 room, struct lite_rpc_entry *e)
{
	if (le32_to_cpu(w->magic) != LITE_RPC_MAGIC || w->reserved0 ||
	    w->reserved1 || w->reserved2 || w->reserved[0] || w->reserved[1])
		return -EBADMSG;
	if (le64_to_cpu(w->pos) != pos || le16_to_cpu(w->src) != src)
		return -EBADMSG;
	e->kind = w->kind;
	e->src = src;
	e->port = le32_to_cpu(w->port);
	e->call_id = le32_to_cpu(w->call_id);
	e->len = le32_to_cpu(w->len);
	e->n_segs = le32_to_cpu(w->n_segs);
	e->reply_cap = le64_to_cpu(w->reply_cap);
	if (!e->port || e->len > LITE_RPC_PAYLOAD_MAX)
		return -EBADMSG;
	if (e->kind == LITE_RPC_CALL) {
		if (!e->call_id || e->call_id & LITE_IMM_REPLY ||
		    !e->n_segs || e->n_segs > LITE_RPC_MAX_SEGS ||
		    e->reply_cap > LITE_RPC_PAYLOAD_MAX)
			return -EBADMSG;
	} else if (e->kind == LITE_RPC_MSG) {
		if (e->call_id || e->n_segs || e->reply_cap)
			return -EBADMSG;
	} else {
		return -EBADMSG;
	}
	e->hdr_len = sizeof(*w) + e->n_segs * sizeof(struct lite_wire_chunk);
	e->size = lite_rpc_entry_size(e->n_segs, e->len);
	return e->size <= room ? 0 : -EBADMSG;
}

/**
 * lite_rpc_reply_parse - check a reply header the caller found in its buffer
 * @w: the reply header
 * @call_id: the call it must answer
 * @cap: payload bytes the caller can take
 * @status: the reply's status (0 or a negative errno) on success
 * @len: the reply's payload length on success; with -EMSGSIZE, the size
 *	that did not fit
 *
 * Return: 0, or -EBADMSG if the magic, call id or reserved fields are
 * wrong, the status is not 0 or an errno, a failed reply has a payload or
 * a successful one is longer than @cap.
 */
int lite_rpc_reply_parse(const struct lite_wire_rpc_reply *w, u32 call_id,
			 u64 cap, int *status, u32 *len)
{
	s32 st = (s32)le32_to_cpu(w->status);

	if (le32_to_cpu(w->magic) != LITE_RPC_MAGIC ||
	    le32_to_cpu(w->call_id) != call_id || w->reserved[0] ||
	    w->reserved[1])
		return -EBADMSG;
	if (st > 0 || st < -4095)
		return -EBADMSG;
	*status = st;
	*len = le32_to_cpu(w->len);
	/* -EMSGSIZE tells the size that did not fit; success must fit. */
	if (st == -EMSGSIZE)
		return 0;
	if (st ? *len != 0 : *len > cap)
		return -EBADMSG;
	return 0;
}

/* LMR protocol payloads; 0 if well formed. */
static int check_lmr_payload(const struct lite_msg *m)
{
	const struct lite_wire_lmr_alloc *alloc = m->payload;
	const struct lite_wire_lmr *lmr = m->payload;
	const struct lite_wire_lmr_ref *ref = m->payload;
	const struct lite_wire_lmr_cancel *cancel = m->payload;
	const struct lite_wire_share *share = m->payload;
	const struct lite_wire_name *name = m->payload;
	const struct lite_wire_invalidate *inv = m->payload;
	const struct lite_wire_atomic *atom = m->payload;

	switch (m->type) {
	case LITE_MSG_LMR_ALLOC:
		if (m->reply)
			return m->len >= sizeof(*lmr) && !lmr->reserved &&
			       !(le32_to_cpu(lmr->flags) &
				 ~LITE_WIRE_LMR_FLAGS) &&
			       le64_to_cpu(lmr->size) ?
			       check_chunks(&lmr->first, m->len -
					    offsetof(struct lite_wire_lmr,
						     first)) : -EBADMSG;
		return m->len == sizeof(*alloc) &&
		       !(le32_to_cpu(alloc->flags) & ~LITE_WIRE_LMR_FLAGS) &&
		       !(le32_to_cpu(alloc->how) & ~LITE_WIRE_ALLOC_HOW) &&
		       le64_to_cpu(alloc->size) ?
		       0 : -EBADMSG;
	case LITE_MSG_LMR_CHUNKS:
		if (m->reply)
			return check_chunks(m->payload, m->len);
		return m->len == sizeof(*ref) && !ref->flags && !ref->perms &&
		       !ref->reserved ? 0 : -EBADMSG;
	case LITE_MSG_LMR_FREE:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		return m->len == sizeof(*ref) && !ref->start &&
		       !ref->grant && !ref->perms && !ref->reserved &&
		       !(le32_to_cpu(ref->flags) & ~LITE_WIRE_FREE_UNMAPPED) ?
		       0 : -EBADMSG;
	case LITE_MSG_LMR_GRANT:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		return m->len == sizeof(*ref) && !ref->start && !ref->flags &&
		       ref->grant && ref->perms && !ref->reserved &&
		       !(le32_to_cpu(ref->perms) & ~LITE_WIRE_PERMS) ?
		       0 : -EBADMSG;
	case LITE_MSG_LMR_UNKEY:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		return m->len == sizeof(*ref) && !ref->start && !ref->flags &&
		       ref->grant && !ref->perms && !ref->reserved ?
		       0 : -EBADMSG;
	case LITE_MSG_LMR_CANCEL:
		/* One-way only. */
		if (m->reply || m->req_id || m->len != sizeof(*cancel))
			return -EBADMSG;
		return cancel->req_id && !cancel->reserved ? 0 : -EBADMSG;
	case LITE_MSG_SHARE:
		if (m->reply)
			return m->len == sizeof(struct lite_wire_share_id) ?
			       0 : -EBADMSG;
		if (m->len != sizeof(*share) || !name_ok(share->name) ||
		    share->flags & ~LITE_WIRE_LMR_FLAGS ||
		    (share->kind == LITE_SHARE_DSM &&
		     (share->flags || share->grant)) ||
		    share->share_id ||
		    !le64_to_cpu(share->size) ||
		    share->kind > LITE_SHARE_KIND_MAX)
			return -EBADMSG;
		if (!le16_to_cpu(share->mem_node) ||
		    le16_to_cpu(share->mem_node) > LITE_WIRE_MAX_NODES)
			return -EBADMSG;
		return le32_to_cpu(share->perms) & ~LITE_WIRE_PERMS ?
		       -EBADMSG : 0;
	case LITE_MSG_LOOKUP:
		if (m->reply)
			return m->len == sizeof(*share) && name_ok(share->name) &&
			       !(share->flags & ~LITE_WIRE_LMR_FLAGS) &&
			       !(share->kind == LITE_SHARE_DSM && share->flags) &&
			       !(share->kind == LITE_SHARE_DSM && share->grant) &&
			       share->kind <= LITE_SHARE_KIND_MAX &&
			       share->share_id && le64_to_cpu(share->size) &&
			       !(le32_to_cpu(share->perms) & ~LITE_WIRE_PERMS) &&
			       le16_to_cpu(share->mem_node) &&
			       le16_to_cpu(share->mem_node) <=
			       LITE_WIRE_MAX_NODES ? 0 : -EBADMSG;
		fallthrough;
	case LITE_MSG_UNSHARE:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		return m->len == sizeof(*name) && name_ok(name->name) ?
		       0 : -EBADMSG;
	case LITE_MSG_ATOMIC:
		if (m->reply)
			return m->len == sizeof(struct lite_wire_atomic_result) ?
			       0 : -EBADMSG;
		if (m->len != sizeof(*atom) ||
		    !all_zero(atom->reserved0, sizeof(atom->reserved0)))
			return -EBADMSG;
		if (atom->op != LITE_ATOMIC_FETCH_ADD &&
		    atom->op != LITE_ATOMIC_CMP_SWAP)
			return -EBADMSG;
		if (atom->op == LITE_ATOMIC_FETCH_ADD && atom->swap)
			return -EBADMSG;
		return le64_to_cpu(atom->offset) & 7 ? -EBADMSG : 0;
	case LITE_MSG_INVALIDATE:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		return m->len == sizeof(*inv) && !inv->reserved0 &&
		       !inv->reserved && le16_to_cpu(inv->mem_node) <=
		       LITE_WIRE_MAX_NODES ? 0 : -EBADMSG;
	}
	return check_rpc_payload(m);
}

/* DSM payloads; 0 if well formed. */
static int check_dsm_payload(const struct lite_msg *m)
{
	const struct lite_wire_dsm_region *reg = m->payload;
	const struct lite_wire_dsm_info *info = m->payload;
	const struct lite_wire_dsm_req *req = m->payload;
	const struct lite_wire_dsm_grant *g = m->payload;
	const struct lite_wire_dsm_done *done = m->payload;
	const struct lite_wire_dsm_inval *inv = m->payload;
	const struct lite_wire_dsm_held *held = m->payload;
	s32 status;

	switch (m->type) {
	case LITE_MSG_DSM_OPEN:
		if (m->reply)
			return m->len == sizeof(*info) && !info->reserved &&
			       le64_to_cpu(info->size) &&
			       le64_to_cpu(info->size) / LITE_DSM_PAGE_SIZE <=
			       LITE_WIRE_DSM_MAX_PAGES ? 0 : -EBADMSG;
		fallthrough;
	case LITE_MSG_DSM_CLOSE:
	case LITE_MSG_DSM_GONE:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		return m->len == sizeof(*reg) && !reg->reserved &&
		       reg->region ? 0 : -EBADMSG;
	case LITE_MSG_DSM_REQ:
		if (m->reply) {
			if (m->len != sizeof(*g) || !g->txn ||
			    !all_zero(g->reserved0, sizeof(g->reserved0)))
				return -EBADMSG;
			if (g->kind == LITE_DSM_DATA)
				return le16_to_cpu(g->from) &&
				       le16_to_cpu(g->from) <=
				       LITE_WIRE_MAX_NODES ? 0 : -EBADMSG;
			return (g->kind == LITE_DSM_KEEP ||
				g->kind == LITE_DSM_FILL) && !g->from &&
			       !g->from_addr && !g->from_rkey ? 0 : -EBADMSG;
		}
		return m->len == sizeof(*req) && req->region &&
		       le64_to_cpu(req->page) < LITE_WIRE_DSM_MAX_PAGES &&
		       (req->kind == LITE_DSM_RD || req->kind == LITE_DSM_WR) &&
		       all_zero(req->reserved0, sizeof(req->reserved0)) ?
		       0 : -EBADMSG;
	case LITE_MSG_DSM_DONE:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		if (m->len != sizeof(*done))
			return -EBADMSG;
		status = (s32)le32_to_cpu(done->status);
		return done->region &&
		       le64_to_cpu(done->page) < LITE_WIRE_DSM_MAX_PAGES &&
		       done->txn && status <= 0 && status >= -4095 ?
		       0 : -EBADMSG;
	case LITE_MSG_DSM_INVAL:
		if (m->reply)
			return m->len == sizeof(*held) && held->has_frame <= 1 &&
			       all_zero(held->reserved0,
					sizeof(held->reserved0)) ? 0 : -EBADMSG;
		return m->len == sizeof(*inv) && inv->region &&
		       le64_to_cpu(inv->page) < LITE_WIRE_DSM_MAX_PAGES &&
		       inv->what >= LITE_DSM_INVALIDATE &&
		       inv->what <= LITE_DSM_PROBE &&
		       all_zero(inv->reserved0, sizeof(inv->reserved0)) ?
		       0 : -EBADMSG;
	}
	return check_lmr_payload(m);
}

/* Payload rules per (type, direction); 0 if the payload is well formed. */
static int check_payload(const struct lite_msg *m)
{
	const struct lite_wire_hello *hello = m->payload;
	const struct lite_wire_member *mbr = m->payload;
	const struct lite_wire_ping *ping = m->payload;
	const struct lite_wire_heartbeat *hb = m->payload;
	const struct lite_wire_member_del *del = m->payload;
	struct lite_naddr a;

	/* Failed replies carry no payload. */
	if (m->reply && m->status)
		return m->len ? -EBADMSG : 0;

	switch (m->type) {
	case LITE_MSG_HELLO:
		if (m->reply)
			return m->len == sizeof(struct lite_wire_challenge) ?
			       0 : -EBADMSG;
		if (m->len != sizeof(*hello) || hello->reserved0 ||
		    hello->reserved)
			return -EBADMSG;
		if (hello->purpose != LITE_PURPOSE_JOIN &&
		    hello->purpose != LITE_PURPOSE_PEER &&
		    hello->purpose != LITE_PURPOSE_SELF)
			return -EBADMSG;
		if (hello->purpose != LITE_PURPOSE_JOIN &&
		    (!le16_to_cpu(hello->node_id) ||
		     le16_to_cpu(hello->node_id) > LITE_WIRE_MAX_NODES))
			return -EBADMSG;
		if (hello->purpose == LITE_PURPOSE_JOIN && hello->node_id)
			return -EBADMSG;
		return lite_wire_get_addr(&hello->listen, &a);
	case LITE_MSG_AUTH:
		if (!m->reply)
			return m->len == sizeof(struct lite_wire_auth) ?
			       0 : -EBADMSG;
		/* The proof back; a JOIN accept then lists the members. */
		if (m->len == sizeof(struct lite_wire_auth))
			return 0;
		if (m->len < sizeof(struct lite_wire_auth) +
			     sizeof(struct lite_wire_accept))
			return -EBADMSG;
		return check_members((const u8 *)m->payload +
				     sizeof(struct lite_wire_auth),
				     m->len - sizeof(struct lite_wire_auth));
	case LITE_MSG_MEMBER_ADD:
		if (m->reply)
			return m->len ? -EBADMSG : 0;
		if (m->len != sizeof(*mbr) || mbr->reserved0 || mbr->reserved)
			return -EBADMSG;
		if (!le16_to_cpu(mbr->id) ||
		    le16_to_cpu(mbr->id) > LITE_WIRE_MAX_NODES)
			return -EBADMSG;
		return lite_wire_get_addr(&mbr->addr, &a);
	case LITE_MSG_PING:
		if (m->len != sizeof(*ping) || ping->reserved)
			return -EBADMSG;
		return 0;
	case LITE_MSG_MEMBER_DEL:
		if (m->reply || m->req_id || m->len != sizeof(*del) ||
		    (le16_to_cpu(del->flags) & ~LITE_DEL_LEFT) || del->reserved)
			return -EBADMSG;
		return le16_to_cpu(del->id) && le16_to_cpu(del->id) <=
		       LITE_WIRE_MAX_NODES ? 0 : -EBADMSG;
	case LITE_MSG_HEARTBEAT:
		if (m->reply || m->req_id || m->len != sizeof(*hb) ||
		    hb->reserved0 || hb->reserved)
			return -EBADMSG;
		return le16_to_cpu(hb->members) &&
		       le16_to_cpu(hb->members) <= LITE_WIRE_MAX_NODES ?
		       0 : -EBADMSG;
	case LITE_MSG_LEAVE:
	case LITE_MSG_CREDIT:
		/* One-way only, no payload. */
		return m->reply || m->req_id || m->len ? -EBADMSG : 0;
	}
	return check_dsm_payload(m);
}

/**
 * lite_wire_parse - check a received message and decode its header
 * @buf: received bytes
 * @n: number of bytes received
 * @msg: decoded header and payload pointer (into @buf) on success
 *
 * Return: 0, -EBADMSG for anything malformed (short, bad magic, unknown
 * type or flags, length mismatch, non-zero reserved fields, bad payload),
 * or -EPROTO for a version this node does not speak.
 */
int lite_wire_parse(const void *buf, size_t n, struct lite_msg *msg)
{
	const struct lite_wire_hdr *h = buf;
	u16 flags;
	s32 status;

	if (n < sizeof(*h) || n > LITE_MSG_MAX)
		return -EBADMSG;
	if (le32_to_cpu(h->magic) != LITE_WIRE_MAGIC)
		return -EBADMSG;
	if (h->version != LITE_WIRE_VERSION)
		return -EPROTO;
	flags = le16_to_cpu(h->flags);
	if (flags & ~LITE_MSGF_ALL)
		return -EBADMSG;
	if (h->reserved[0] || h->reserved[1])
		return -EBADMSG;
	if (!h->type || h->type >= LITE_MSG_TYPE_END)
		return -EBADMSG;
	if (le32_to_cpu(h->len) != n - sizeof(*h))
		return -EBADMSG;
	status = (s32)le32_to_cpu(h->status);
	if (status > 0 || status < -4095)
		return -EBADMSG;
	if (status && !(flags & LITE_MSGF_REPLY))
		return -EBADMSG;

	msg->type = h->type;
	msg->reply = flags & LITE_MSGF_REPLY;
	msg->src = le16_to_cpu(h->src);
	msg->credits = le16_to_cpu(h->credits);
	msg->req_id = le32_to_cpu(h->req_id);
	msg->status = status;
	msg->len = n - sizeof(*h);
	msg->payload = (const u8 *)buf + sizeof(*h);
	if (msg->src > LITE_WIRE_MAX_NODES)
		return -EBADMSG;
	if (msg->reply && !msg->req_id)
		return -EBADMSG;
	return check_payload(msg);
}

/**
 * lite_wire_put_hdr - write a message header
 * @buf: where to write it
 * @type: message type
 * @reply: it is a reply
 * @src: the sender's node id
 * @credits: credits returned to the receiver
 * @req_id: request id (0 for one-way messages)
 * @status: 0 or a negative errno (replies only)
 * @len: payload length
 *
 * Return: the header size; the payload of @len bytes follows it.
 */
size_t lite_wire_put_hdr(void *buf, u8 type, bool reply, u16 src,
			 u16 credits, u32 req_id, int status, u32 len)
{
	struct lite_wire_hdr *h = buf;

	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le32(LITE_WIRE_MAGIC);
	h->version = LITE_WIRE_VERSION;
	h->type = type;
	h->flags = cpu_to_le16(reply ? LITE_MSGF_REPLY : 0);
	h->src = cpu_to_le16(src);
	h->credits = cpu_to_le16(credits);
	h->len = cpu_to_le32(len);
	h->req_id = cpu_to_le32(req_id);
	h->status = cpu_to_le32((u32)status);
	return sizeof(*h);
}
