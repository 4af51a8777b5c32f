// SPDX-License-Identifier: GPL-2.0
/* lite DSM directory: see dsm.h for the states and the transactions. */
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>

#include "dsm.h"

static bool lite_dsm_id_ok(u16 id)
{
	return id >= 1 && id <= LITE_DSM_NODE_WORDS * 64;
}

/**
 * lite_dsm_nodes_test - whether a node is in a set
 * @s: the set
 * @id: node id, 1..128 (others are never members)
 *
 * Return: true if @id is in @s.
 */
bool lite_dsm_nodes_test(const struct lite_dsm_nodes *s, u16 id)
{
	if (!lite_dsm_id_ok(id))
		return false;
	return s->w[(id - 1) / 64] & (1ULL << ((id - 1) % 64));
}

/**
 * lite_dsm_nodes_set - add a node to a set
 * @s: the set
 * @id: node id, 1..128 (others are ignored)
 */
void lite_dsm_nodes_set(struct lite_dsm_nodes *s, u16 id)
{
	if (lite_dsm_id_ok(id))
		s->w[(id - 1) / 64] |= 1ULL << ((id - 1) % 64);
}

/**
 * lite_dsm_nodes_clear - remove a node from a set
 * @s: the set
 * @id: node id (ids not in @s are ignored)
 */
void lite_dsm_nodes_clear(struct lite_dsm_nodes *s, u16 id)
{
	if (lite_dsm_id_ok(id))
		s->w[(id - 1) / 64] &= ~(1ULL << ((id - 1) % 64));
}

/**
 * lite_dsm_nodes_empty - whether a set has no node
 * @s: the set
 *
 * Return: true if empty.
 */
bool lite_dsm_nodes_empty(const struct lite_dsm_nodes *s)
{
	int i;

	for (i = 0; i < LITE_DSM_NODE_WORDS; i++)
		if (s->w[i])
			return false;
	return true;
}

/**
 * lite_dsm_nodes_next - the lowest node id in a set above another
 * @s: the set
 * @after: 0 for the first member
 *
 * Return: the next member's id, or 0 if there is none.
 */
u16 lite_dsm_nodes_next(const struct lite_dsm_nodes *s, u16 after)
{
	u16 id;

	for (id = after + 1; lite_dsm_id_ok(id); id++)
		if (lite_dsm_nodes_test(s, id))
			return id;
	return 0;
}

/* Whether @r's frame holds the current bytes of the page. */
static bool lite_dsm_has_copy(const struct lite_dsm_dir *d, u16 r)
{
	if (d->state == LITE_DSM_ZERO)
		return lite_dsm_nodes_test(&d->sharers, r);
	return lite_dsm_nodes_test(&d->holders, r);
}

/* No holder's frame is known to read the page from. */
static void lite_dsm_no_src(struct lite_dsm_dir *d)
{
	d->src = 0;
	d->src_addr = 0;
	d->src_rkey = 0;
}

/* No current copy left anywhere: the page is lost. */
static int lite_dsm_lose(struct lite_dsm_dir *d)
{
	d->state = LITE_DSM_LOST;
	lite_dsm_no_src(d);
	memset(&d->sharers, 0, sizeof(d->sharers));
	memset(&d->holders, 0, sizeof(d->holders));
	return -EHOSTDOWN;
}

/* Only @node holds the bytes (and maps them if @mapped). */
static void lite_dsm_only(struct lite_dsm_dir *d, u16 node, bool mapped)
{
	memset(&d->sharers, 0, sizeof(d->sharers));
	memset(&d->holders, 0, sizeof(d->holders));
	lite_dsm_nodes_set(&d->holders, node);
	if (mapped)
		lite_dsm_nodes_set(&d->sharers, node);
}

static int lite_dsm_plan_read(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
			      u16 r)
{
	if (lite_dsm_has_copy(d, r))
		return 0;
	t->need_data = true;
	if (d->state == LITE_DSM_EXCL) {
		t->downgrade = d->src;
	} else if (d->state == LITE_DSM_SHARED && !d->src) {
		t->probe = lite_dsm_nodes_next(&d->holders, 0);
		if (!t->probe)
			return lite_dsm_lose(d);
	}
	return 0;
}

static int lite_dsm_plan_write(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
			       u16 r)
{
	t->inval = d->sharers;
	lite_dsm_nodes_clear(&t->inval, r);
	if (d->state == LITE_DSM_EXCL && d->src != r)
		lite_dsm_nodes_set(&t->inval, d->src);
	t->need_data = !lite_dsm_has_copy(d, r);
	/*
	 * An unknown source: one of those invalidated says where it is, or
	 * else a holder is asked.
	 */
	if (t->need_data && d->state == LITE_DSM_SHARED && !d->src &&
	    lite_dsm_nodes_empty(&t->inval)) {
		t->probe = lite_dsm_nodes_next(&d->holders, 0);
		if (!t->probe)
			return lite_dsm_lose(d);
	}
	return 0;
}

/**
 * lite_dsm_begin - start a transaction on a page
 * @d: the page's record
 * @t: filled with the plan: whom to invalidate, downgrade or probe
 * @kind: LITE_DSM_RD or LITE_DSM_WR
 * @requester: the node that faulted
 * @id: the transaction's id (the DONE names it)
 *
 * Return: 0 and @d busy; -EBUSY if another transaction runs (queue the
 * request); -EHOSTDOWN if the page is lost; -EINVAL for a bad @kind or
 * @requester.
 */
int lite_dsm_begin(struct lite_dsm_dir *d, struct lite_dsm_txn *t, u8 kind,
		   u16 requester, u32 id)
{
	int err;

	if ((kind != LITE_DSM_RD && kind != LITE_DSM_WR) ||
	    !lite_dsm_id_ok(requester))
		return -EINVAL;
	if (d->busy)
		return -EBUSY;
	if (d->state == LITE_DSM_LOST)
		return -EHOSTDOWN;
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->requester = requester;
	t->id = id;
	if (kind == LITE_DSM_RD)
		err = lite_dsm_plan_read(d, t, requester);
	else
		err = lite_dsm_plan_write(d, t, requester);
	if (err)
		return err;
	d->busy = 1;
	d->txn = id;
	return 0;
}

/* The next holder to probe instead of one that is gone, or lose the page. */
static void lite_dsm_probe_next(struct lite_dsm_dir *d, struct lite_dsm_txn *t)
{
	t->probe = d->src ? 0 : lite_dsm_nodes_next(&d->holders, 0);
	if (!t->probe && !d->src) {
		lite_dsm_lose(d);
		t->status = -EHOSTDOWN;
	}
}

static void lite_dsm_fail(struct lite_dsm_txn *t, int status)
{
	if (!t->status)
		t->status = status;
}

static void lite_dsm_invalidated(struct lite_dsm_dir *d,
				 struct lite_dsm_txn *t, u16 node,
				 bool has_frame, u64 addr, u32 rkey)
{
	lite_dsm_nodes_clear(&d->sharers, node);
	if (d->state == LITE_DSM_ZERO)
		return;
	if (!has_frame || !lite_dsm_nodes_test(&d->holders, node)) {
		/* Its frame did not hold the bytes after all. */
		lite_dsm_nodes_clear(&d->holders, node);
		if (d->src == node)
			lite_dsm_no_src(d);
		if (lite_dsm_nodes_empty(&d->holders)) {
			lite_dsm_lose(d);
			lite_dsm_fail(t, -EHOSTDOWN);
		}
		return;
	}
	/* Unmapped; its frame still holds the bytes. */
	if (d->state == LITE_DSM_EXCL)
		d->state = LITE_DSM_SHARED;
	if (!d->src || d->src == node) {
		d->src = node;
		d->src_addr = addr;
		d->src_rkey = rkey;
	}
}

static void lite_dsm_downgraded(struct lite_dsm_dir *d,
				struct lite_dsm_txn *t, u16 node,
				bool has_frame, u64 addr, u32 rkey)
{
	if (!has_frame) {
		lite_dsm_fail(t, -EPROTO);
		return;
	}
	d->state = LITE_DSM_SHARED;
	lite_dsm_only(d, node, true);
	d->src = node;
	d->src_addr = addr;
	d->src_rkey = rkey;
}

static void lite_dsm_probed(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
			    u16 node, bool has_frame, u64 addr, u32 rkey)
{
	if (!has_frame) {
		/* It lost its copy without telling us: not a holder. */
		lite_dsm_nodes_clear(&d->sharers, node);
		lite_dsm_nodes_clear(&d->holders, node);
		lite_dsm_probe_next(d, t);
		return;
	}
	d->src = node;
	d->src_addr = addr;
	d->src_rkey = rkey;
}

/**
 * lite_dsm_answer - apply a node's answer to an INVAL message
 * @d: the page's record
 * @t: its running transaction
 * @what: the enum lite_dsm_inval_kind the node was asked
 * @node: who answers
 * @status: 0; -EHOSTDOWN if @node is gone (it holds no copy); another
 *	negative errno if the request failed (the transaction fails)
 * @has_frame: @node's frame holds the bytes it had (its copy was current)
 * @addr: that frame's address
 * @rkey: the key that reaches it
 *
 * A PROBE of a node that turns out to have no copy moves on to the next
 * sharer (@t->probe changes): send it another PROBE.
 * Return: 0, or -EPROTO for an answer the transaction did not ask for
 * (ignored).
 */
int lite_dsm_answer(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		    u8 what, u16 node, int status, bool has_frame, u64 addr,
		    u32 rkey)
{
	switch (what) {
	case LITE_DSM_INVALIDATE:
		if (!lite_dsm_nodes_test(&t->inval, node))
			return -EPROTO;
		lite_dsm_nodes_clear(&t->inval, node);
		if (status == -EHOSTDOWN)
			lite_dsm_nodes_clear(&d->sharers, node);
		else if (status)
			lite_dsm_fail(t, status);
		else
			lite_dsm_invalidated(d, t, node, has_frame, addr,
					     rkey);
		return 0;
	case LITE_DSM_DOWNGRADE:
		if (!node || node != t->downgrade)
			return -EPROTO;
		t->downgrade = 0;
		if (status == -EHOSTDOWN) {
			/* lite_dsm_node_gone() lost the page already. */
			lite_dsm_fail(t, -EHOSTDOWN);
		} else if (status) {
			lite_dsm_fail(t, status);
		} else {
			lite_dsm_downgraded(d, t, node, has_frame, addr, rkey);
		}
		return 0;
	case LITE_DSM_PROBE:
		if (!node || node != t->probe)
			return -EPROTO;
		t->probe = 0;
		if (status == -EHOSTDOWN) {
			lite_dsm_probe_next(d, t);
		} else if (status) {
			lite_dsm_fail(t, status);
		} else {
			lite_dsm_probed(d, t, node, has_frame, addr, rkey);
		}
		return 0;
	}
	return -EPROTO;
}

/**
 * lite_dsm_answered - whether no answer is outstanding
 * @t: the transaction
 *
 * Return: true when lite_dsm_decide() may be called.
 */
bool lite_dsm_answered(const struct lite_dsm_txn *t)
{
	return lite_dsm_nodes_empty(&t->inval) && !t->downgrade && !t->probe;
}

/**
 * lite_dsm_decide - what the requester gets, once every answer is in
 * @d: the page's record
 * @t: its running transaction
 * @g: filled with the grant
 *
 * Return: 0; -EAGAIN if the source died meanwhile and @t->probe names a
 * holder to PROBE first (then call again); or the transaction's failure
 * (-EHOSTDOWN: the page is lost): abort it and send the error.
 */
int lite_dsm_decide(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		   struct lite_dsm_grant *g)
{
	memset(g, 0, sizeof(*g));
	if (t->status)
		return t->status;
	if (d->state == LITE_DSM_LOST)
		return -EHOSTDOWN;
	if (!t->need_data || lite_dsm_has_copy(d, t->requester)) {
		g->kind = LITE_DSM_KEEP;
	} else if (d->state == LITE_DSM_ZERO) {
		g->kind = LITE_DSM_FILL;
	} else if (!d->src) {
		/* The source died meanwhile: ask another holder. */
		t->probe = lite_dsm_nodes_next(&d->holders, 0);
		if (t->probe)
			return -EAGAIN;
		return lite_dsm_lose(d);
	} else {
		g->kind = LITE_DSM_DATA;
		g->from = d->src;
		g->from_addr = d->src_addr;
		g->from_rkey = d->src_rkey;
	}
	t->granted = true;
	return 0;
}

/**
 * lite_dsm_commit - the requester has its copy: record it, end the
 * transaction
 * @d: the page's record
 * @t: its transaction, granted
 * @addr: the requester's frame address
 * @rkey: the key that reaches it
 */
void lite_dsm_commit(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		     u64 addr, u32 rkey)
{
	u16 r = t->requester;

	if (t->kind == LITE_DSM_WR) {
		d->state = LITE_DSM_EXCL;
		lite_dsm_only(d, r, false);
		d->src = r;
		d->src_addr = addr;
		d->src_rkey = rkey;
	} else if (d->state != LITE_DSM_EXCL) {
		/* (EXCL here: a KEEP of the writer's own page, no change.) */
		lite_dsm_nodes_set(&d->sharers, r);
		if (d->state == LITE_DSM_SHARED) {
			lite_dsm_nodes_set(&d->holders, r);
			if (!d->src) {
				d->src = r;
				d->src_addr = addr;
				d->src_rkey = rkey;
			}
		}
	}
	d->busy = 0;
}

/**
 * lite_dsm_abort - end a transaction that failed
 * @d: the page's record
 * @t: its transaction
 * @requester_gone: the requester died or left before its DONE
 *
 * A write granted to a requester that is gone may have been made: the
 * page is lost, since nobody else can have its bytes. A requester that was
 * to fetch the page may have torn its frame: it is no holder.
 */
void lite_dsm_abort(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		    bool requester_gone)
{
	d->busy = 0;
	if (requester_gone && t->granted && t->kind == LITE_DSM_WR) {
		lite_dsm_lose(d);
		return;
	}
	if (t->need_data && d->state != LITE_DSM_ZERO &&
	    d->state != LITE_DSM_LOST) {
		lite_dsm_nodes_clear(&d->holders, t->requester);
		if (d->src == t->requester)
			lite_dsm_no_src(d);
	}
}

/**
 * lite_dsm_node_gone - a node died or left without handing its copy back
 * @d: the page's record
 * @node: the node
 *
 * Its copy is gone: the page is lost if that was the only current one.
 * The caller also answers, with -EHOSTDOWN, whatever a running transaction
 * asked @node, and aborts a transaction that @node requested.
 */
void lite_dsm_node_gone(struct lite_dsm_dir *d, u16 node)
{
	lite_dsm_nodes_clear(&d->sharers, node);
	if (d->state == LITE_DSM_ZERO || d->state == LITE_DSM_LOST)
		return;
	lite_dsm_nodes_clear(&d->holders, node);
	if (d->src == node)
		lite_dsm_no_src(d);
	if (lite_dsm_nodes_empty(&d->holders))
		lite_dsm_lose(d);
}
