// SPDX-License-Identifier: GPL-2.0
/*
 * Distributed locks and barriers on 8-byte LMR words.
 *
 * The word is the state: a lock word holds the next ticket (high half) and
 * the ticket being served (low half), and is zero whenever the lock is free
 * and nobody waits; a barrier word holds its generation (high) and the
 * arrivals of this generation (low). The operations run on the memory
 * node's CPU (SYNC requests), like the atomics on an LMR without
 * LITE_WIRE_LMR_NIC_ATOMIC; an LMR with it has no locks or barriers (the
 * NIC's atomics are not atomic with the CPU's). A waiter does not poll: its
 * request stays parked at the memory node, which answers it when its
 * ticket is served or the last participant arrives. Tickets are served in
 * order, so the lock is fair (FIFO).
 *
 * The memory node remembers parked waiters and holders (lite_sync_wait):
 * a requester that gives up (timeout, signal) sends CANCEL, a waiter whose
 * connection closes gives up, a holder keeps the lock across a reconnect
 * and loses it when its node stops being a member; either way the next
 * ticket is served. Holders are open files on the requesting node (lite_held_lock);
 * closing the file releases its locks.
 */
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "internal.h"
#include "core/sync.h"

#define LITE_SYNC_CANCEL_MS	3000

enum lite_sync_state {
	LITE_SYNC_PARKED,	/* waiting for its ticket or the last arrival */
	LITE_SYNC_HELD,		/* holds the lock */
	LITE_SYNC_ABANDONED,	/* gave up while parked: skip its ticket */
};

/* The memory node's record of one requester; node->sync_waits. */
struct lite_sync_wait {
	struct list_head entry;		/* node->sync_waits; node lock */
	u64 mr_id;
	u64 offset;
	u8 kind;			/* LITE_SYNC_LOCK or LITE_SYNC_BARRIER */
	enum lite_sync_state state;
	u32 ticket;			/* lock ticket, or barrier generation */
	u32 owner;			/* lock: token of this holding */
	u16 count;			/* barrier participants */
	/*
	 * Holds a reference (NULL once abandoned, or for a lock held across
	 * a reconnect). Dropped under node->lock: never the last one, because
	 * close_work detaches every record of a connection
	 * (lite_sync_conn_closed) before its final put.
	 */
	struct lite_conn *conn;
	u16 peer;			/* the requester's node id */
	u32 req_id;
};


static void lite_sync_answer(struct lite_sync_wait *w, int status, u32 val)
{
	struct lite_wire_sync_result res = {
		.ticket = cpu_to_le32(val),
		.owner = cpu_to_le32(w->owner),
	};
	struct lite_msg req = {
		.type = LITE_MSG_SYNC,
		.req_id = w->req_id,
	};

	lite_reply(w->conn, &req, status, &res, sizeof(res));
}

static void lite_sync_free(struct lite_sync_wait *w)
{
	list_del(&w->entry);
	if (w->conn)
		lite_conn_put(w->conn);
	kfree(w);
}

static struct lite_sync_wait *lite_sync_find(struct lite_node *node,
					     u64 mr_id, u64 off, u8 kind,
					     u32 ticket)
{
	struct lite_sync_wait *w;

	list_for_each_entry(w, &node->sync_waits, entry)
		if (w->mr_id == mr_id && w->offset == off && w->kind == kind &&
		    w->ticket == ticket)
			return w;
	return NULL;
}

/*
 * Serve the next ticket after the holder of the current one left: hand
 * the lock to the waiter holding it, skipping tickets whose waiters gave
 * up. node->lock held.
 */
static void lite_sync_serve_next(struct lite_node *node, u64 mr_id, u64 off,
				 atomic64_t *word)
{
	struct lite_sync_wait *w;
	u32 served;
	bool idle;
	u64 v;

	for (;;) {
		do {
			v = atomic64_read(word);
		} while (atomic64_cmpxchg(word, v,
			 lite_lock_serve_next(v, &served, &idle)) != v);
		if (idle)
			return;		/* nobody waits: the word is zero */
		w = lite_sync_find(node, mr_id, off, LITE_SYNC_LOCK, served);
		if (!w)
			return;		/* not ours: someone wrote the word */
		if (w->state == LITE_SYNC_PARKED) {
			w->state = LITE_SYNC_HELD;
			lite_sync_answer(w, 0, w->ticket);
			return;
		}
		lite_sync_free(w);	/* abandoned: next */
	}
}

static struct lite_sync_wait *lite_sync_record(struct lite_conn *conn,
					       const struct lite_msg *msg,
					       u8 kind, u32 ticket)
{
	const struct lite_wire_sync *req = msg->payload;
	struct lite_sync_wait *w;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return NULL;
	w->mr_id = le64_to_cpu(req->mr_id);
	w->offset = le64_to_cpu(req->offset);
	w->kind = kind;
	w->ticket = ticket;
	w->count = le16_to_cpu(req->count);
	if (kind == LITE_SYNC_LOCK) {
		/* Tickets restart at zero: the token tells holdings apart. */
		do {
			w->owner = ++conn->node->next_owner;
		} while (!w->owner);
	}
	lite_conn_get(conn);
	w->conn = conn;
	w->peer = conn->peer_id;
	w->req_id = msg->req_id;
	list_add_tail(&w->entry, &conn->node->sync_waits);
	return w;
}

static int lite_sync_lock_op(struct lite_conn *conn,
			     const struct lite_msg *msg, atomic64_t *word,
			     bool try, u32 *ticket, u32 *owner)
{
	struct lite_sync_wait *w;
	bool granted;
	u64 v, nv;

	v = atomic64_read(word);
	if (try && !lite_lock_free(v))
		return -EAGAIN;
	/* The record first: nothing to undo once the ticket is taken. */
	w = lite_sync_record(conn, msg, LITE_SYNC_LOCK, 0);
	if (!w)
		return -ENOMEM;
	for (;;) {
		nv = lite_lock_take(v, &w->ticket, &granted);
		if (try && !granted)
			break;
		if (atomic64_cmpxchg(word, v, nv) == v)
			break;
		v = atomic64_read(word);
	}
	if (try && !granted) {
		lite_sync_free(w);
		return -EAGAIN;
	}
	if (!granted)
		return 1;		/* parked: answered when served */
	w->state = LITE_SYNC_HELD;
	*ticket = w->ticket;
	*owner = w->owner;
	return 0;
}

static int lite_sync_unlock_op(struct lite_conn *conn, u64 mr_id, u64 off,
			       atomic64_t *word, u32 ticket, u32 owner)
{
	struct lite_sync_wait *w;

	w = lite_sync_find(conn->node, mr_id, off, LITE_SYNC_LOCK, ticket);
	if (!w || w->state != LITE_SYNC_HELD || w->peer != conn->peer_id ||
	    w->owner != owner)
		return -EPERM;
	lite_sync_free(w);
	lite_sync_serve_next(conn->node, mr_id, off, word);
	return 0;
}

static int lite_sync_barrier_op(struct lite_conn *conn,
				const struct lite_msg *msg, atomic64_t *word,
				u32 *gen)
{
	const struct lite_wire_sync *req = msg->payload;
	struct lite_node *node = conn->node;
	u64 mr_id = le64_to_cpu(req->mr_id), off = le64_to_cpu(req->offset);
	u16 count = le16_to_cpu(req->count);
	struct lite_sync_wait *w, *tmp;
	bool release;
	u64 v, nv;

	list_for_each_entry(w, &node->sync_waits, entry)
		if (w->mr_id == mr_id && w->offset == off &&
		    w->kind == LITE_SYNC_BARRIER && w->count != count)
			return -EINVAL;	/* participants disagree */
	/* Every lite operation on the word runs under node->lock. */
	v = atomic64_read(word);
	nv = lite_barrier_arrive(v, count, gen, &release);
	if (!release) {
		w = lite_sync_record(conn, msg, LITE_SYNC_BARRIER, *gen);
		if (!w)
			return -ENOMEM;
		atomic64_set(word, nv);
		return 1;		/* parked */
	}
	/* The last one: release this generation, start the next. */
	atomic64_set(word, nv);
	list_for_each_entry_safe(w, tmp, &node->sync_waits, entry) {
		if (w->mr_id != mr_id || w->offset != off ||
		    w->kind != LITE_SYNC_BARRIER || w->ticket != *gen)
			continue;
		lite_sync_answer(w, 0, *gen);
		lite_sync_free(w);
	}
	return 0;
}

/* The requester of @req_id gave up; node->lock held. */
static void lite_sync_cancel_op(struct lite_conn *conn, u64 mr_id, u64 off,
				atomic64_t *word, u8 kind, u32 req_id)
{
	struct lite_sync_wait *w;

	list_for_each_entry(w, &conn->node->sync_waits, entry) {
		if (w->peer != conn->peer_id || w->req_id != req_id ||
		    w->mr_id != mr_id || w->offset != off || w->kind != kind)
			continue;
		if (kind == LITE_SYNC_BARRIER) {
			u64 v;

			do {
				v = atomic64_read(word);
			} while (atomic64_cmpxchg(word, v,
				 lite_barrier_withdraw(v)) != v);
			lite_sync_free(w);
		} else if (w->state == LITE_SYNC_HELD) {
			lite_sync_free(w);	/* granted after all: release */
			lite_sync_serve_next(conn->node, mr_id, off, word);
		} else if (w->conn) {
			w->state = LITE_SYNC_ABANDONED;
			lite_conn_put(w->conn);
			w->conn = NULL;
		}
		return;
	}
}

/**
 * lite_sync_handle - SYNC: a lock or barrier operation on our memory
 * @conn: the requester's connection
 * @msg: the request: LMR, offset and operation
 *
 * Runs on the receive path in process context, under node->lock; never
 * waits for the network. A request that must wait (a lock ticket not yet
 * served, a barrier not yet complete) is parked and answered later.
 * Replies with the ticket and owner token (locks) or generation
 * (barriers), or with -EKEYREVOKED or -ERANGE for a word that is not
 * ours, -EOPNOTSUPP for a word of an LMR of NIC atomics (the requester
 * refuses those first), -EAGAIN for a busy TRYLOCK, -EPERM for an UNLOCK by a non-holder,
 * -EINVAL for barrier participants that disagree on the count, -ENOMEM.
 */
void lite_sync_handle(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_sync *req = msg->payload;
	struct lite_node *node = conn->node;
	u64 mr_id = le64_to_cpu(req->mr_id), off = le64_to_cpu(req->offset);
	struct lite_wire_sync_result res = {};
	u32 val = 0, owner = 0;
	atomic64_t *word;
	int ret;

	mutex_lock(&node->lock);
	word = lite_export_word(node, mr_id, off, &ret);
	if (word) {
		switch (req->op) {
		case LITE_SYNC_LOCK:
		case LITE_SYNC_TRYLOCK:
			ret = lite_sync_lock_op(conn, msg, word,
						req->op == LITE_SYNC_TRYLOCK,
						&val, &owner);
			break;
		case LITE_SYNC_UNLOCK:
			ret = lite_sync_unlock_op(conn, mr_id, off, word,
						  le32_to_cpu(req->ticket),
						  le32_to_cpu(req->owner));
			break;
		case LITE_SYNC_BARRIER:
			ret = lite_sync_barrier_op(conn, msg, word, &val);
			break;
		default:
			lite_sync_cancel_op(conn, mr_id, off, word, req->kind,
					    le32_to_cpu(req->ticket));
			ret = 0;
			break;
		}
	}
	mutex_unlock(&node->lock);
	if (ret > 0)
		return;			/* parked: answered later */
	res.ticket = cpu_to_le32(val);
	res.owner = cpu_to_le32(owner);
	lite_reply(conn, msg, ret, &res, sizeof(res));
}

/* Whether a lock held by node @peer survives its connection; node lock. */
static bool lite_sync_keeps(struct lite_node *node, u16 peer)
{
	lockdep_assert_held(&node->lock);
	return !node->dying && peer && lite_mbr_present(&node->mb, peer);
}

/**
 * lite_sync_conn_closed - @conn's QP is gone (close_work)
 * @conn: the connection
 *
 * Its parked requests are abandoned (the requesters got ECONNRESET) and
 * its barrier arrivals withdrawn. A lock held through it stays held while
 * its node is a member (the holder unlocks over the next connection);
 * otherwise it is released. Takes node->lock.
 */
void lite_sync_conn_closed(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;
	struct lite_sync_wait *w;
	atomic64_t *word;
	bool again = true;
	int err;

	mutex_lock(&node->lock);
	while (again) {
		again = false;
		list_for_each_entry(w, &node->sync_waits, entry) {
			if (w->conn != conn)
				continue;
			if (w->state == LITE_SYNC_HELD &&
			    lite_sync_keeps(node, w->peer)) {
				lite_conn_put(conn);	/* never the last */
				w->conn = NULL;
				continue;
			}
			word = lite_export_word(node, w->mr_id, w->offset,
						&err);
			if (word)
				lite_sync_cancel_op(conn, w->mr_id, w->offset,
						    word, w->kind, w->req_id);
			else
				lite_sync_free(w);
			again = true;	/* the list changed */
			break;
		}
	}
	mutex_unlock(&node->lock);
}

/**
 * lite_sync_drop_peer - node @peer stopped being a member
 * @node: our node; node->lock held
 * @peer: the member
 *
 * The locks it held across a reconnect are released.
 */
void lite_sync_drop_peer(struct lite_node *node, u16 peer)
{
	struct lite_sync_wait *w;
	bool again = true;
	atomic64_t *word;
	u64 mr_id, off;
	int err;

	lockdep_assert_held(&node->lock);
	while (again) {
		again = false;
		list_for_each_entry(w, &node->sync_waits, entry) {
			if (w->peer != peer || w->conn ||
			    w->state != LITE_SYNC_HELD)
				continue;
			mr_id = w->mr_id;
			off = w->offset;
			word = lite_export_word(node, mr_id, off, &err);
			lite_sync_free(w);
			if (word)	/* may free other records */
				lite_sync_serve_next(node, mr_id, off, word);
			again = true;
			break;
		}
	}
}

/**
 * lite_sync_drop_export - export @mr_id is being freed
 * @node: our node, the memory node
 * @mr_id: the export's wire id
 *
 * Its parked waiters fail with -EKEYREVOKED; its records go. Takes
 * node->lock.
 */
void lite_sync_drop_export(struct lite_node *node, u64 mr_id)
{
	struct lite_sync_wait *w, *tmp;

	mutex_lock(&node->lock);
	list_for_each_entry_safe(w, tmp, &node->sync_waits, entry) {
		if (w->mr_id != mr_id)
			continue;
		if (w->state == LITE_SYNC_PARKED)
			lite_sync_answer(w, -EKEYREVOKED, 0);
		lite_sync_free(w);
	}
	mutex_unlock(&node->lock);
}

/* The requesting side. */

/*
 * Send CANCEL for a request we gave up on. Once it is queued it is
 * processed in order after that request, whether or not we wait for its
 * answer (a fatal signal ends the wait at once); only if it cannot be sent
 * does the connection close, which makes the memory node drop our records.
 */
static void lite_sync_cancel(struct lite_conn *conn,
			     const struct lite_wire_sync *req)
{
	struct lite_wire_sync_result res;
	struct lite_call call = {};
	int ret;

	ret = lite_call_start(conn, &call, LITE_MSG_SYNC, req, sizeof(*req),
			      &res, sizeof(res));
	if (!ret)
		lite_call_wait(&call, jiffies +
			       msecs_to_jiffies(LITE_SYNC_CANCEL_MS));
	else if (ret != -ENOTCONN)
		lite_conn_close(conn);
}

static int lite_sync_call(struct lite_lmr *lmr, u8 op, u64 off, u32 ticket,
			  u32 owner, u16 count, u32 timeout_ms,
			  struct lite_wire_sync_result *out)
{
	struct lite_wire_sync_result res;
	struct lite_wire_sync req = {
		.mr_id = cpu_to_le64(lmr->mr_id),
		.offset = cpu_to_le64(off),
		.ticket = cpu_to_le32(ticket),
		.count = cpu_to_le16(count),
		.op = op,
		.owner = cpu_to_le32(owner),
	};
	struct lite_call call = {};
	struct lite_conn *conn;
	unsigned long deadline;
	int ret;

	/* A release is no access: it goes out even on a revoked LMR. */
	if (op != LITE_SYNC_UNLOCK && READ_ONCE(lmr->revoked))
		return lite_lmr_closed_err(lmr);
	conn = lite_node_conn_wait(lmr->node, lmr->mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (!conn)
		return lite_lmr_conn_err(lmr);
	deadline =
		jiffies + msecs_to_jiffies(timeout_ms ?: LITE_RPC_TIMEOUT_MS);
	ret = lite_call_start(conn, &call, LITE_MSG_SYNC, &req, sizeof(req),
			      &res, sizeof(res));
	if (!ret)
		ret = lite_call_wait(&call, deadline);
	if ((ret == -ETIMEDOUT || ret == -EINTR) && op != LITE_SYNC_UNLOCK) {
		/*
		 * Withdraw, so no ticket, holding or arrival lingers (a grant
		 * may be on its way). If even that fails, closing the
		 * connection makes the memory node drop them.
		 */
		memset(&req, 0, sizeof(req));
		req.mr_id = cpu_to_le64(lmr->mr_id);
		req.offset = cpu_to_le64(off);
		req.op = LITE_SYNC_CANCEL;
		req.kind = op == LITE_SYNC_BARRIER ? LITE_SYNC_BARRIER :
						     LITE_SYNC_LOCK;
		req.ticket = cpu_to_le32(call.req_id);
		lite_sync_cancel(conn, &req);
	}
	if (!ret && (op == LITE_SYNC_LOCK || op == LITE_SYNC_TRYLOCK) &&
	    !res.owner) {
		/* A grant we cannot release: make the memory node drop it. */
		lite_conn_close(conn);
		ret = -EPROTO;
	}
	if (!ret && out)
		*out = res;
	lite_conn_put(conn);
	return ret;
}

static bool lite_same_word(const struct lite_held_lock *h,
			   const struct lite_lmr *lmr, u64 off)
{
	return h->lmr->mem_node == lmr->mem_node &&
	       h->lmr->mr_id == lmr->mr_id && h->offset == off;
}

/* The lock on @lmr at @off this file holds, or NULL; file lock held. */
static struct lite_held_lock *lite_held_find(struct lite_file *lf,
					     const struct lite_lmr *lmr, u64 off)
{
	struct lite_held_lock *h;

	list_for_each_entry(h, &lf->locks, entry)
		if (lite_same_word(h, lmr, off))
			return h;
	return NULL;
}

/**
 * lite_sync_lock - take a lock on an LMR word for file @lf
 * @lf: the file that will hold it
 * @lmr: the LMR; the access was checked (an aligned word, atomic right)
 * @off: the word's offset
 * @try: fail at once if the lock is taken
 * @timeout_ms: longest wait (0: LITE_RPC_TIMEOUT_MS)
 *
 * Locks are fair (FIFO). The lock stays held, with a reference on @lmr,
 * until lite_sync_unlock() or the file's release. A wait that ends
 * withdraws the request. Sleeps.
 *
 * Return: 0; -EDEADLK if @lf holds this lock already; -EAGAIN if @try and
 * the lock is taken; -ETIMEDOUT; -EINTR; -EKEYREVOKED; -ENOTCONN
 * without a connection to the memory node (-EHOSTDOWN if it left);
 * -ENOMEM; -EPROTO for a grant without an owner token; or another error
 * of the request.
 */
int lite_sync_lock(struct lite_file *lf, struct lite_lmr *lmr, u64 off,
		   bool try, u32 timeout_ms)
{
	struct lite_wire_sync_result res;
	struct lite_held_lock *h;
	int ret;

	mutex_lock(&lf->lock);
	h = lite_held_find(lf, lmr, off);
	mutex_unlock(&lf->lock);
	if (h)
		return -EDEADLK;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	ret = lite_sync_call(lmr, try ? LITE_SYNC_TRYLOCK : LITE_SYNC_LOCK,
			     off, 0, 0, 0, timeout_ms, &res);
	if (ret) {
		kfree(h);
		return ret;
	}
	lite_lmr_get(lmr);
	h->lmr = lmr;
	h->offset = off;
	h->ticket = le32_to_cpu(res.ticket);
	h->owner = le32_to_cpu(res.owner);
	mutex_lock(&lf->lock);
	list_add_tail(&h->entry, &lf->locks);
	mutex_unlock(&lf->lock);
	return 0;
}

static int lite_held_release(struct lite_held_lock *h)
{
	int ret;

	ret = lite_sync_call(h->lmr, LITE_SYNC_UNLOCK, h->offset, h->ticket,
			     h->owner, 0, 0, NULL);
	lite_lmr_put(h->lmr);
	kfree(h);
	return ret;
}

/**
 * lite_sync_unlock - release a lock file @lf holds
 * @lf: the file
 * @lmr: the LMR (it may be revoked: a release is no access)
 * @off: the word's offset
 *
 * The lock is forgotten here whatever the memory node answers. Sleeps.
 *
 * Return: 0; -EPERM if @lf does not hold it; or the error of the UNLOCK
 * request.
 */
int lite_sync_unlock(struct lite_file *lf, struct lite_lmr *lmr, u64 off)
{
	struct lite_held_lock *h;

	mutex_lock(&lf->lock);
	h = lite_held_find(lf, lmr, off);
	if (h)
		list_del(&h->entry);
	mutex_unlock(&lf->lock);
	if (!h)
		return -EPERM;
	return lite_held_release(h);
}

/**
 * lite_sync_barrier - wait at a barrier on an LMR word
 * @lmr: the LMR; the access was checked (an aligned word, atomic right)
 * @off: the word's offset
 * @count: participants, the same for each of them
 * @timeout_ms: longest wait (0: LITE_RPC_TIMEOUT_MS)
 *
 * Returns when the last of @count participants arrived; a wait that ends
 * otherwise withdraws the arrival. Sleeps.
 *
 * Return: 0; -EINVAL if participants disagree on @count; -ETIMEDOUT;
 * -EINTR; -EKEYREVOKED; -ENOTCONN without a connection to the memory
 * node (-EHOSTDOWN if it left); or another error of the request.
 */
int lite_sync_barrier(struct lite_lmr *lmr, u64 off, u32 count,
		      u32 timeout_ms)
{
	return lite_sync_call(lmr, LITE_SYNC_BARRIER, off, 0, 0, count,
			      timeout_ms, NULL);
}

/**
 * lite_sync_file_release - closing the file: release its locks
 * @lf: the file
 *
 * Sleeps.
 */
void lite_sync_file_release(struct lite_file *lf)
{
	struct lite_held_lock *h, *tmp;

	list_for_each_entry_safe(h, tmp, &lf->locks, entry) {
		list_del(&h->entry);
		lite_held_release(h);
	}
}

/**
 * lite_sync_show - the lock and barrier requests this node's memory serves
 *	(debugfs "locks")
 * @m: the file
 * @node: the node
 *
 * A header, then one line per request parked or holding: lock or barrier,
 * the LMR's wire id (hex) and the word's offset, state (parked, held,
 * abandoned), the lock ticket or barrier generation, the holder's token,
 * the barrier's participants (0 for a lock) and the requester's node id.
 *
 * Return: 0.
 */
int lite_sync_show(struct seq_file *m, struct lite_node *node)
{
	static const char *const states[] = {
		[LITE_SYNC_PARKED] = "parked",
		[LITE_SYNC_HELD] = "held",
		[LITE_SYNC_ABANDONED] = "abandoned",
	};
	struct lite_sync_wait *w;

	seq_puts(m, "kind mr_id offset state ticket owner count peer\n");
	mutex_lock(&node->lock);
	list_for_each_entry(w, &node->sync_waits, entry)
		seq_printf(m, "%s %llx %llu %s %u %u %u %u\n",
			   w->kind == LITE_SYNC_LOCK ? "lock" : "barrier",
			   w->mr_id, w->offset, states[w->state], w->ticket,
			   w->owner, w->count, w->peer);
	mutex_unlock(&node->lock);
	return 0;
}
