// SPDX-License-Identifier: GPL-2.0
/*
 * LMRs as their users see them: allocating on a node (this one or a peer),
 * mapping by name, fetching the chunk list, guarding accesses against free
 * and revocation, and releasing.
 *
 * Every lite_lmr is on node->lmrs from before its chunk list is fetched
 * until it is released, so an INVALIDATE can never miss it. Accesses hold
 * lite_lmr_begin() for one transfer step at a time, or (io_uring) from
 * submission until their work requests or call completed - never across a
 * user page fault and never until task work runs - so revocation waits at
 * most for posted work to complete.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/seq_file.h>

#include "internal.h"

static_assert(LITE_LMR_NIC_ATOMIC == LITE_WIRE_LMR_NIC_ATOMIC);
static_assert(LITE_LMR_FLAGS_ALL == LITE_WIRE_LMR_FLAGS);
/* The share registry keeps them in a byte (struct lite_wire_share). */
static_assert(LITE_WIRE_LMR_FLAGS <= U8_MAX);

/**
 * lite_node_conn - a connection to node @id, with a reference
 * @node: our node
 * @id: the node; our own id gives the loopback connection
 *
 * Takes only node->peers_lock and never sleeps: the data path calls it.
 * The connection may be closing.
 *
 * Return: the connection, referenced, or NULL if there is none (or @id is
 * out of range).
 */
struct lite_conn *lite_node_conn(struct lite_node *node, u16 id)
{
	struct lite_conn *conn;

	if (!id || id > LITE_MAX_NODES)
		return NULL;
	spin_lock_bh(&node->peers_lock);
	conn = id == READ_ONCE(node->self_id) ? node->self_conn :
						node->peers[id];
	if (conn)
		lite_conn_get(conn);
	spin_unlock_bh(&node->peers_lock);
	return conn;
}

/**
 * lite_node_has_conn - whether a usable connection to node @id exists now
 * @node: our node
 * @id: the node; our own id means the loopback connection
 *
 * Any context but hard irq; takes node->peers_lock.
 *
 * Return: true if there is a connection to @id that is not closing.
 */
bool lite_node_has_conn(struct lite_node *node, u16 id)
{
	struct lite_conn *conn;
	bool has;

	if (!id || id > LITE_MAX_NODES)
		return false;
	spin_lock_bh(&node->peers_lock);
	conn = id == READ_ONCE(node->self_id) ? node->self_conn :
						node->peers[id];
	has = conn && READ_ONCE(conn->state) != LITE_CONN_CLOSING;
	spin_unlock_bh(&node->peers_lock);
	return has;
}

/**
 * lite_node_set_conn - set the connection to node @id
 * @node: our node; node->lock held
 * @id: the member (0: the loopback connection)
 * @conn: the connection, or NULL to clear it
 *
 * Takes node->peers_lock too. Setting a connection wakes
 * lite_node_conn_wait() callers.
 */
void lite_node_set_conn(struct lite_node *node, u16 id, struct lite_conn *conn)
{
	lockdep_assert_held(&node->lock);
	if (conn)
		conn->peer_since = lite_mbr_since(&node->mb,
						  id ?: node->mb.self);
	spin_lock_bh(&node->peers_lock);
	if (id)
		node->peers[id] = conn;
	else
		node->self_conn = conn;
	spin_unlock_bh(&node->peers_lock);
	if (conn)
		wake_up_all(&node->peers_wq);	/* lite_node_conn_wait() */
}

/**
 * lite_manager_conn - a connection to the manager (the registry)
 * @node: our node
 *
 * Takes node->lock: may sleep.
 *
 * Return: the connection, referenced, or NULL if there is no manager or
 * no connection to it.
 */
struct lite_conn *lite_manager_conn(struct lite_node *node)
{
	u16 mgr;

	mutex_lock(&node->lock);
	mgr = node->mb.manager;
	mutex_unlock(&node->lock);
	return lite_node_conn(node, mgr);
}

/**
 * lite_lmr_get - take another reference on an LMR
 * @lmr: the LMR; the caller already holds a reference
 */
void lite_lmr_get(struct lite_lmr *lmr)
{
	kref_get(&lmr->ref);
}

static void lite_lmr_free(struct kref *ref)
{
	struct lite_lmr *lmr = container_of(ref, struct lite_lmr, ref);

	kvfree(lmr->chunks);
	lite_node_put(lmr->node);
	kfree_rcu(lmr, rcu);	/* a handle lookup may still read @ref */
}

/**
 * lite_lmr_put - drop a reference on an LMR
 * @lmr: the LMR
 *
 * The last put frees its chunk array and drops its node reference; it
 * must be off node->lmrs by then (lite_lmr_release()).
 */
void lite_lmr_put(struct lite_lmr *lmr)
{
	kref_put(&lmr->ref, lite_lmr_free);
}

/*
 * lmr->steps counts the transfer steps in progress with one atomic each
 * way, no lock: revocation adds LITE_LMR_CLOSED (once, under lmr->lock,
 * after setting the flags), which makes the count negative so that no step
 * starts any more, and waits for it to come down to LITE_LMR_CLOSED.
 */
#define LITE_LMR_CLOSED	INT_MIN

/**
 * lite_lmr_begin - start one transfer step of an access
 * @lmr: the LMR
 *
 * A step that started holds off revocation until lite_lmr_end(). One
 * atomic operation; any context.
 *
 * Return: 0 (end the step with lite_lmr_end()), -EHOSTDOWN once its memory
 * node is gone, or -EKEYREVOKED once revoked.
 */
int lite_lmr_begin(struct lite_lmr *lmr)
{
	if (likely(atomic_inc_unless_negative(&lmr->steps)))
		return 0;
	return lite_lmr_closed_err(lmr);
}

/**
 * lite_lmr_closed_err - why an LMR takes no new access
 * @lmr: an LMR seen revoked (lmr->revoked, or lite_lmr_begin() refused)
 *
 * The flags were set before the LMR closed, under its lock. Takes
 * lmr->lock; any context.
 *
 * Return: -EHOSTDOWN if its memory node left, else -EKEYREVOKED.
 */
int lite_lmr_closed_err(struct lite_lmr *lmr)
{
	int ret;

	spin_lock_bh(&lmr->lock);
	ret = lmr->mem_gone ? -EHOSTDOWN : -EKEYREVOKED;
	spin_unlock_bh(&lmr->lock);
	return ret;
}

/**
 * lite_lmr_end - end a transfer step lite_lmr_begin() started
 * @lmr: the LMR; the caller still holds a reference
 *
 * The last step to end on a revoked LMR wakes whoever waits to revoke it.
 * Any context.
 */
void lite_lmr_end(struct lite_lmr *lmr)
{
	if (atomic_dec_return(&lmr->steps) == LITE_LMR_CLOSED)
		wake_up(&lmr->idle_wq);
}

/* Revoked, and no step in progress any more. */
static bool lite_lmr_drained(struct lite_lmr *lmr)
{
	return atomic_read(&lmr->steps) == LITE_LMR_CLOSED;
}

/* Revoked, but a step is still in progress. */
static bool lite_lmr_draining(struct lite_lmr *lmr)
{
	int steps = atomic_read(&lmr->steps);

	return steps < 0 && steps != LITE_LMR_CLOSED;
}

/* No new step from now on (@gone: its memory node left). Takes lmr->lock. */
static void lite_lmr_close(struct lite_lmr *lmr, bool gone)
{
	spin_lock_bh(&lmr->lock);
	if (gone)
		WRITE_ONCE(lmr->mem_gone, true);
	if (!lmr->revoked) {
		WRITE_ONCE(lmr->revoked, true);
		atomic_add(LITE_LMR_CLOSED, &lmr->steps);
	}
	spin_unlock_bh(&lmr->lock);
}

/*
 * No new step from now on; wait for the one in progress, which ends by
 * itself: its work requests complete or are flushed, its calls time out.
 */
static void lite_lmr_revoke(struct lite_lmr *lmr)
{
	lite_lmr_close(lmr, false);
	wait_event(lmr->idle_wq, lite_lmr_drained(lmr));
}

/*
 * Whether @mem_node is still the member that an answer about its memory
 * came from: a member, and, if the answer came on @via, its connection
 * to @mem_node, the member that connection was made to (its id may have
 * been given to a newcomer since).
 */
static bool lite_lmr_mem_current(struct lite_node *node, u16 mem_node,
				 const struct lite_conn *via)
{
	lockdep_assert_held(&node->lock);
	if (!lite_mbr_present(&node->mb, mem_node))
		return false;
	return !via || via->peer_since == lite_mbr_since(&node->mb, mem_node);
}

/*
 * A new LMR without chunks yet, already on node->lmrs. If its memory node
 * left after answering (on @via, if not NULL) - lite_lmrs_mem_gone() did
 * not see this LMR then - it is marked gone at once.
 */
static struct lite_lmr *lite_lmr_new(struct lite_node *node, u16 mem_node,
				     const struct lite_conn *via, u64 mr_id,
				     u64 size, u32 flags)
{
	struct lite_lmr *lmr;

	lmr = kzalloc(sizeof(*lmr), GFP_KERNEL);
	if (!lmr)
		return NULL;
	kref_init(&lmr->ref);
	lite_node_get(node);
	lmr->node = node;
	lmr->mem_node = mem_node;
	lmr->mr_id = mr_id;
	lmr->flags = flags;
	lmr->layout.size = size;
	INIT_LIST_HEAD(&lmr->lease_entry);
	spin_lock_init(&lmr->lock);
	atomic_set(&lmr->steps, 0);
	init_waitqueue_head(&lmr->idle_wq);
	mutex_lock(&node->lock);
	list_add_tail(&lmr->map_entry, &node->lmrs);
	if (!lite_lmr_mem_current(node, mem_node, via))
		lite_lmr_close(lmr, true);
	mutex_unlock(&node->lock);
	return lmr;
}

/* Take @lmr off node->lmrs and drop the caller's reference. */
static void lite_lmr_drop(struct lite_lmr *lmr)
{
	struct lite_node *node = lmr->node;

	mutex_lock(&node->lock);
	list_del_init(&lmr->map_entry);
	mutex_unlock(&node->lock);
	lite_lmr_put(lmr);
}

/* Size the chunk array from the first batch (checked against the size). */
static int lite_lmr_size_chunks(struct lite_lmr *lmr,
				const struct lite_wire_chunks *w)
{
	u32 total = le32_to_cpu(w->total);

	/* A leased LMR lives in its size class: less than twice its pages. */
	if (!lmr->layout.size || lmr->layout.size > LITE_LMR_MAX ||
	    total > 2 * DIV_ROUND_UP(lmr->layout.size, PAGE_SIZE))
		return -EPROTO;
	lmr->chunks = kvcalloc(total, sizeof(*lmr->chunks), GFP_KERNEL);
	if (!lmr->chunks)
		return -ENOMEM;
	lmr->layout.n_chunks = total;
	lmr->layout.chunks = lmr->chunks;
	return 0;
}

/* Copy one chunk-list message into @lmr; chunks arrive in order. */
static int lite_lmr_take_chunks(struct lite_lmr *lmr,
				const struct lite_wire_chunks *w, u32 *have)
{
	u32 start = le32_to_cpu(w->start), count = le32_to_cpu(w->count), i;
	u64 off = *have ? lmr->chunks[*have - 1].start +
		  lmr->chunks[*have - 1].len : 0;

	if (start != *have || le32_to_cpu(w->total) != lmr->layout.n_chunks ||
	    count > lmr->layout.n_chunks - start)
		return -EPROTO;
	for (i = 0; i < count; i++) {
		lmr->chunks[start + i].addr = le64_to_cpu(w->chunks[i].addr);
		lmr->chunks[start + i].len = le32_to_cpu(w->chunks[i].len);
		lmr->chunks[start + i].rkey = le32_to_cpu(w->chunks[i].rkey);
		lmr->chunks[start + i].start = off;
		off += lmr->chunks[start + i].len;
	}
	*have += count;
	return 0;
}

/*
 * Fetch @lmr's chunk list from its memory node, from chunk @have on
 * (@have 0: size the array from the first batch).
 */
static int lite_lmr_fetch(struct lite_conn *conn, struct lite_lmr *lmr,
			  u32 have, unsigned long deadline)
{
	struct lite_wire_lmr_ref req = {
		.mr_id = cpu_to_le64(lmr->mr_id),
		.grant = cpu_to_le64(lmr->grant),
	};
	struct lite_wire_chunks *rep;
	int ret = 0;

	rep = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	while (!ret && (!lmr->chunks || have < lmr->layout.n_chunks)) {
		req.start = cpu_to_le32(have);
		ret = lite_call(conn, LITE_MSG_LMR_CHUNKS, &req, sizeof(req),
				rep, LITE_MSG_MAX, NULL, deadline);
		if (!ret && !lmr->chunks)
			ret = lite_lmr_size_chunks(lmr, rep);
		if (!ret)
			ret = lite_lmr_take_chunks(lmr, rep, &have);
	}
	kfree(rep);
	/* Cut to the LMR's size: a leased one's chunks cover its class. */
	if (!ret && lite_layout_fit(&lmr->layout, lmr->chunks,
				    lmr->layout.size))
		ret = -EPROTO;	/* the chunks do not cover the LMR */
	return ret;
}

/*
 * Ask @mem_node, over @conn, to free our LMR @mr_id; @unmapped: it was
 * never published, so no mapping of it is left on this node. If the
 * request's fate is unknown (the connection broke, or no answer came), ask
 * once more on the connection that replaces it: FREE is idempotent (a
 * second one finds nothing, ENOENT), and a lost one would keep the memory
 * until we leave.
 */
static void lite_lmr_remote_free(struct lite_conn *conn, u16 mem_node,
				 u64 mr_id, bool unmapped)
{
	struct lite_wire_lmr_ref req = {
		.mr_id = cpu_to_le64(mr_id),
		.flags = cpu_to_le32(unmapped ? LITE_WIRE_FREE_UNMAPPED : 0),
	};
	unsigned long wait = msecs_to_jiffies(lite_tun(call_timeout_ms) +
					      LITE_INVALIDATE_MS);
	struct lite_node *node = conn->node;
	int ret;

	ret = lite_call(conn, LITE_MSG_LMR_FREE, &req, sizeof(req), NULL, 0,
			NULL, jiffies + wait);
	if (ret != -ECONNRESET && ret != -ETIMEDOUT)
		return;
	conn = lite_node_conn_wait(node, mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (!conn)
		return;	/* declared dead, or gone: nothing to free */
	lite_call(conn, LITE_MSG_LMR_FREE, &req, sizeof(req), NULL, 0, NULL,
		  jiffies + wait);
	lite_conn_put(conn);
}

/*
 * Send @type (LMR_GRANT or LMR_UNKEY) about our LMR @mr_id to its memory
 * node and wait for the reply; the request may queue behind a FREE that
 * invalidates mappers. Sleeps.
 */
static int lite_lmr_tell(struct lite_node *node, u16 mem_node, u8 type,
			 const struct lite_wire_lmr_ref *req)
{
	unsigned long wait = msecs_to_jiffies(lite_tun(call_timeout_ms) +
					      LITE_INVALIDATE_MS);
	struct lite_conn *conn;
	bool member;
	int ret;

	conn = lite_node_conn_wait(node, mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (!conn) {
		mutex_lock(&node->lock);
		member = lite_mbr_present(&node->mb, mem_node);
		mutex_unlock(&node->lock);
		return member ? -EHOSTUNREACH : -EHOSTDOWN;
	}
	ret = lite_call(conn, type, req, sizeof(*req), NULL, 0, NULL,
			jiffies + wait);
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_lmr_grant - let a name of our LMR have keys of its own
 * @node: our node, the LMR's owner
 * @lmr: the LMR
 * @perms: the rights the name gives (LITE_PERM_*, not 0)
 * @grant: set to the grant id the name carries, or 0 if its memory node
 *	   has one key for everything (global mode)
 *
 * Sleeps.
 *
 * Return: 0; -EHOSTUNREACH without a connection to its memory node,
 * -EHOSTDOWN if that node left, or the error of the LMR_GRANT request
 * (-ENOSPC for too many names, -ETIMEDOUT, ...).
 */
int lite_lmr_grant(struct lite_node *node, struct lite_lmr *lmr, u32 perms,
		   u64 *grant)
{
	struct lite_wire_lmr_ref req = {
		.mr_id = cpu_to_le64(lmr->mr_id),
		.perms = cpu_to_le32(perms),
	};
	u64 id;
	int ret;

	do {	/* random: a member that was not told it cannot guess it */
		id = get_random_u64();
	} while (!id);
	req.grant = cpu_to_le64(id);
	ret = lite_lmr_tell(node, lmr->mem_node, LITE_MSG_LMR_GRANT, &req);
	*grant = ret ? 0 : id;
	if (ret == -ETIMEDOUT || ret == -ECONNRESET || ret == -EINTR)
		/* It may have been made: best effort, nobody knows the id. */
		lite_lmr_unkey(node, lmr->mem_node, lmr->mr_id, id);
	return ret == -EOPNOTSUPP ? 0 : ret;
}

/**
 * lite_lmr_unkey - have a memory node void the keys of a withdrawn name
 * @node: our node, the LMR's owner
 * @mem_node: the LMR's memory node
 * @mr_id: the LMR's wire id
 * @grant: the name's grant (not 0); every mapping made through the name
 *	   is dropped
 *
 * Tries once more on a new connection if the first one broke or timed
 * out. Sleeps.
 *
 * Return: 0 once the grant's keys are invalid (or the LMR was freed: the
 * memory node voids every grant's keys at the FREE; or its memory node
 * left); -EHOSTUNREACH without a connection to its memory node, which is
 * still a member; or the error of the LMR_UNKEY request.
 */
int lite_lmr_unkey(struct lite_node *node, u16 mem_node, u64 mr_id,
		   u64 grant)
{
	struct lite_wire_lmr_ref req = {
		.mr_id = cpu_to_le64(mr_id),
		.grant = cpu_to_le64(grant),
	};
	int ret;

	ret = lite_lmr_tell(node, mem_node, LITE_MSG_LMR_UNKEY, &req);
	if (ret == -ECONNRESET || ret == -ETIMEDOUT)
		ret = lite_lmr_tell(node, mem_node, LITE_MSG_LMR_UNKEY, &req);
	return ret == -ENOENT || ret == -EHOSTDOWN ? 0 : ret;
}

/*
 * An LMR_ALLOC request on its way. The requester waits for it, bounded and
 * killable; if it gives up, it abandons the request to its done_fn instead
 * of leaving a late reply to be dropped: the request stays in node->calls
 * until its reply or its connection's failure, and then frees whatever the
 * memory node made for it and returns the quota charge. @state decides,
 * once, which of waiter and done_fn owns the request after the reply.
 */
struct lite_alloc_req {
	struct lite_call call;		/* holds a reference on call.conn */
	atomic_t state;			/* enum lite_alloc_req_state */
	struct lite_node *node;		/* immutable */
	u16 mem_node;			/* immutable */
	kuid_t uid;			/* immutable: charged @charged */
	u64 charged;			/* quota charge to return, or 0 */
	u64 size;			/* immutable */
	u32 flags;			/* immutable: LITE_WIRE_LMR_* */
	unsigned long deadline;		/* immutable: the requester gives up */
	struct lite_wire_lmr *rep;	/* the reply (LITE_MSG_MAX bytes) */
	struct work_struct reap;	/* abandoned: on node->close_wq */
};

enum lite_alloc_req_state {
	LITE_AREQ_WAITING,	/* the requester waits */
	LITE_AREQ_DONE,		/* the reply or a failure came */
	LITE_AREQ_ABANDONED,	/* the requester left: done_fn cleans up */
};

/* The request is over: return its charge and everything it holds. */
static void lite_alloc_req_free(struct lite_alloc_req *ar)
{
	lite_quota_uncharge(ar->node, ar->uid, ar->charged);
	lite_conn_put(ar->call.conn);
	kfree(ar->rep);
	kfree(ar);
}

/* An abandoned request got its answer: free what was made for nobody. */
static void lite_alloc_req_reap(struct work_struct *work)
{
	struct lite_alloc_req *ar = container_of(work, struct lite_alloc_req,
						 reap);

	if (!ar->call.status)
		lite_lmr_remote_free(ar->call.conn, ar->mem_node,
				     le64_to_cpu(ar->rep->mr_id), true);
	lite_alloc_req_free(ar);
}

/* done_fn, any context: the reply came, or the connection failed. */
static void lite_alloc_req_done(struct lite_call *call)
{
	struct lite_alloc_req *ar = container_of(call, struct lite_alloc_req,
						 call);

	if (atomic_xchg(&ar->state, LITE_AREQ_DONE) == LITE_AREQ_ABANDONED)
		queue_work(ar->node->close_wq, &ar->reap);
	else
		complete(&call->done);	/* the waiter owns @ar now */
}

/*
 * Send LMR_ALLOC for @size bytes to @mem_node on @conn, whose reference it
 * takes; @how: LITE_WIRE_ALLOC_*; @charged: what @uid was charged for it.
 */
static struct lite_alloc_req *lite_alloc_req_start(struct lite_node *node,
						   struct lite_conn *conn,
						   u16 mem_node, kuid_t uid,
						   u64 charged, u64 size,
						   u32 flags, u32 how,
						   int *err)
{
	struct lite_wire_lmr_alloc req = { .size = cpu_to_le64(size),
					   .flags = cpu_to_le32(flags),
					   .how = cpu_to_le32(how) };
	struct lite_alloc_req *ar;

	*err = -ENOMEM;
	ar = kzalloc(sizeof(*ar), GFP_KERNEL);
	if (!ar)
		goto err_conn;
	ar->rep = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!ar->rep)
		goto err_ar;
	atomic_set(&ar->state, LITE_AREQ_WAITING);
	ar->node = node;
	ar->mem_node = mem_node;
	ar->uid = uid;
	ar->charged = charged;
	ar->size = size;
	ar->flags = flags;
	INIT_WORK(&ar->reap, lite_alloc_req_reap);
	*err = lite_call_start_async(conn, &ar->call, lite_alloc_req_done,
				     LITE_MSG_LMR_ALLOC, &req, sizeof(req),
				     ar->rep, LITE_MSG_MAX);
	if (*err)
		goto err_rep;
	return ar;

err_rep:
	kfree(ar->rep);
err_ar:
	kfree(ar);
err_conn:
	lite_conn_put(conn);
	return NULL;
}

/*
 * Tell the memory node that nobody waits for LMR_ALLOC @req_id any more,
 * on whatever connection to it there is now, waiting for a reconnect if
 * the old one broke (a reply lost with it left an LMR nobody knows the id
 * of). Best effort: if the memory node stays unreachable it reaps what the
 * requester held when it drops it as a member.
 */
static void lite_alloc_cancel(struct lite_node *node, u16 mem_node,
			      u32 req_id)
{
	struct lite_wire_lmr_cancel c = { .req_id = cpu_to_le32(req_id) };
	struct lite_conn *conn;

	conn = lite_node_conn_wait(node, mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (!conn)
		return;
	lite_conn_send(conn, LITE_MSG_LMR_CANCEL, false, 0, 0, &c, sizeof(c));
	lite_conn_put(conn);
}

/*
 * Wait for @ar's reply until @deadline, or until the caller is killed.
 * Return: the reply's status (0: the reply is in ar->rep) or the failure
 * (-ECONNRESET); the caller then frees @ar. Or, with *@abandoned set,
 * -ETIMEDOUT or -EINTR: @ar belongs to its done_fn now.
 */
static int lite_alloc_req_wait(struct lite_alloc_req *ar, u16 mem_node,
			       unsigned long deadline, bool *abandoned)
{
	struct lite_node *node = ar->node;
	u32 req_id = ar->call.req_id;
	long left;

	left = lite_wait_done(node, ar->call.conn, &ar->call.done,
			      max_t(long, (long)(deadline - jiffies), 1), true);
	if (left > 0)
		goto answered;
	if (atomic_cmpxchg(&ar->state, LITE_AREQ_WAITING,
			   LITE_AREQ_ABANDONED) != LITE_AREQ_WAITING) {
		/* The reply or a failure took it first: it completes now. */
		wait_for_completion(&ar->call.done);
		goto answered;
	}
	*abandoned = true;
	if (!left)
		lite_count_error(node, mem_node, LITE_ERR_TIMEOUT, -ETIMEDOUT);
	lite_alloc_cancel(node, mem_node, req_id);
	return left ? -EINTR : -ETIMEDOUT;

answered:
	if (ar->call.status == -ECONNRESET)
		lite_alloc_cancel(node, mem_node, req_id);
	return ar->call.status;
}

/* The LMR the successful reply @rep describes, with its whole layout. */
static int lite_lmr_from_reply(struct lite_node *node, struct lite_conn *conn,
			       u16 mem_node, u64 size, u32 flags,
			       const struct lite_wire_lmr *rep,
			       unsigned long deadline, struct lite_lmr **out)
{
	struct lite_lmr *lmr;
	u32 have = 0;
	int ret;

	lite_fault_delay_lmr(node);
	lmr = lite_lmr_new(node, mem_node, conn, le64_to_cpu(rep->mr_id), size,
			   flags);
	if (!lmr)
		return -ENOMEM;
	WRITE_ONCE(lmr->held, size);	/* debugfs reads it */
	if (le64_to_cpu(rep->size) != size || le32_to_cpu(rep->flags) != flags)
		ret = -EPROTO;
	else
		ret = lite_lmr_size_chunks(lmr, &rep->first);
	if (!ret)
		ret = lite_lmr_take_chunks(lmr, &rep->first, &have);
	if (!ret && !READ_ONCE(lmr->mem_gone))
		ret = lite_lmr_fetch(conn, lmr, have, deadline);
	/* It left before, or while, we took the chunk list: nothing to free. */
	if (READ_ONCE(lmr->mem_gone))
		ret = -EHOSTDOWN;
	if (ret) {
		lite_lmr_drop(lmr);
		return ret;
	}
	*out = lmr;
	return 0;
}

/**
 * lite_lmr_request_start - ask node @mem_node to allocate @size bytes for us
 * @node: the requesting node
 * @mem_node: the node whose memory it is (may be @node itself)
 * @size: bytes, 1 .. LITE_LMR_MAX
 * @flags: LITE_WIRE_LMR_*
 * @how: LITE_WIRE_ALLOC_*: LEASE for a lease's stock (lease.c)
 * @uid: the user charged @charged bytes for it on @node
 * @charged: the charge, or 0; the request takes it over: a failed one
 *	returns it (an abandoned one once the memory node answered), the LMR
 *	carries it
 *
 * Sends LMR_ALLOC, waiting for a connection to @mem_node if it is being
 * made again; lite_lmr_request_finish() waits for the answer. Several may
 * be under way at once. Sleeps.
 *
 * Return: the request, or an ERR_PTR: -EHOSTUNREACH (-ENOTCONN for
 * ourselves) without a connection, -ENOMEM, or the error of the send.
 */
struct lite_alloc_req *lite_lmr_request_start(struct lite_node *node,
					      u16 mem_node, u64 size,
					      u32 flags, u32 how, kuid_t uid,
					      u64 charged)
{
	/* Zeroing a GiB under emulation takes a while: allow for it. */
	unsigned long deadline = jiffies + msecs_to_jiffies(
		lite_tun(call_timeout_ms) + (size >> 20) * 50);
	struct lite_alloc_req *ar;
	struct lite_conn *conn;
	int ret;

	conn = lite_node_conn_wait(node, mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (!conn) {
		lite_quota_uncharge(node, uid, charged);
		return ERR_PTR(mem_node == READ_ONCE(node->self_id) ?
			       -ENOTCONN : -EHOSTUNREACH);
	}
	/* @ar takes the reference over. */
	ar = lite_alloc_req_start(node, conn, mem_node, uid, charged, size,
				  flags, how, &ret);
	if (!ar) {
		lite_quota_uncharge(node, uid, charged);
		return ERR_PTR(ret);
	}
	ar->deadline = deadline;
	return ar;
}

/**
 * lite_lmr_request_finish - the LMR lite_lmr_request_start() asked for
 * @ar: the request; it is over on return
 * @out: the LMR, on success, carrying the request's charge
 *
 * Waits for the answer, bounded by a deadline that grows with the size,
 * and killably; fetches the rest of a long chunk list. Sleeps.
 *
 * Return: 0; -ETIMEDOUT or -EINTR if the caller gave up (timeout, fatal
 * signal): the memory node then stops or frees the allocation, and the
 * charge stays until it did; -EHOSTDOWN if the memory node answered and
 * left (its id perhaps given to a newcomer) before the LMR was recorded
 * or its chunk list fetched: nothing to free there; or another error of
 * the request.
 */
int lite_lmr_request_finish(struct lite_alloc_req *ar, struct lite_lmr **out)
{
	struct lite_conn *conn = ar->call.conn;
	struct lite_node *node = ar->node;
	bool abandoned = false;
	int ret;

	ret = lite_alloc_req_wait(ar, ar->mem_node, ar->deadline, &abandoned);
	if (abandoned)
		return ret;	/* @ar, with its charge, is its done_fn's */
	if (!ret) {
		ret = lite_lmr_from_reply(node, conn, ar->mem_node, ar->size,
					  ar->flags, ar->rep, ar->deadline,
					  out);
		if (ret && ret != -EHOSTDOWN)	/* else gone with its node */
			lite_lmr_remote_free(conn, ar->mem_node,
					     le64_to_cpu(ar->rep->mr_id), true);
	}
	if (!ret) {
		/* The charge goes with the LMR. */
		(*out)->uid = ar->uid;
		(*out)->charged = ar->charged;
		ar->charged = 0;
	}
	lite_alloc_req_free(ar);
	return ret;
}

/**
 * lite_lmr_alloc - allocate @size bytes on node @mem_node
 * @node: the requesting node
 * @mem_node: the node whose memory it is (may be @node itself)
 * @size: bytes, 1 .. LITE_LMR_MAX
 * @flags: LITE_WIRE_LMR_* (the uapi's LITE_LMR_* have the same values)
 * @uid: the user whose quota on @node it counts against
 * @out: the LMR, on success
 *
 * From this node's lease of @mem_node's memory if it has one of the size
 * (no message at all), else by a request to @mem_node. @uid is charged
 * lite_lease_charge() bytes: up to LITE_LEASE_MAX, the whole size class.
 *
 * Return: 0; -EDQUOT over @uid's quota; -ETIMEDOUT or -EINTR if the
 * caller gave up (timeout, fatal signal): the memory node then stops or
 * frees the allocation, and the charge stays until it did; or another
 * error of the request.
 */
int lite_lmr_alloc(struct lite_node *node, u16 mem_node, u64 size,
		   u32 flags, kuid_t uid, struct lite_lmr **out)
{
	u64 charge = lite_lease_charge(size, flags);
	struct lite_alloc_req *ar;
	int ret;

	ret = lite_quota_charge(node, uid, charge);
	if (ret)
		return ret;
	*out = lite_lease_claim(node, mem_node, size, flags);
	if (IS_ERR(*out)) {
		lite_quota_uncharge(node, uid, charge);
		return PTR_ERR(*out);
	}
	if (*out) {
		(*out)->uid = uid;
		(*out)->charged = charge;
		return 0;
	}
	ar = lite_lmr_request_start(node, mem_node, size, flags, 0, uid,
				    charge);
	if (IS_ERR(ar))
		return PTR_ERR(ar);
	return lite_lmr_request_finish(ar, out);
}

struct lite_lookup {
	struct lite_call call;
	struct lite_lmr *lmr;	/* created by the reply */
	u32 granted;
};

/*
 * The LOOKUP reply, in CQ context: the mapping goes on node->lmrs before
 * any later message on this connection - an INVALIDATE of the share, say -
 * is looked at.
 */
static int lite_lookup_reply(struct lite_call *call, const struct lite_msg *msg)
{
	struct lite_lookup *lk = container_of(call, struct lite_lookup, call);
	const struct lite_wire_share *sh = msg->payload;

	if (sh->kind != LITE_SHARE_LMR)
		return -EMEDIUMTYPE;	/* a DSM region's name */
	lk->lmr = lite_lmr_new(call->conn->node, le16_to_cpu(sh->mem_node),
			       NULL, le64_to_cpu(sh->mr_id),
			       le64_to_cpu(sh->size), sh->flags);
	if (!lk->lmr)
		return -ENOMEM;
	WRITE_ONCE(lk->lmr->share_id, le64_to_cpu(sh->share_id));
	lk->granted = le32_to_cpu(sh->perms);
	lk->lmr->grant = le64_to_cpu(sh->grant);
	return 0;
}

/**
 * lite_lmr_map - map the LMR published as @name
 * @node: our node
 * @name: the name, NUL-terminated
 * @perms: the permissions wanted (0: all that was granted); on return,
 *	what the mapping holds
 * @out: the mapping, on success
 *
 * Looks @name up in the manager's registry, then fetches the chunk list
 * from the memory node. Sleeps.
 *
 * Return: 0 with *@out holding a reference for the caller; -EHOSTUNREACH
 * without a connection to the manager or the memory node; -EACCES if
 * @perms asks for more than was granted; -EKEYREVOKED if it was revoked
 * meanwhile; or the error of the lookup (-ENOENT for an unknown name) or
 * of the fetch.
 */
int lite_lmr_map(struct lite_node *node, const char *name, u32 *perms,
		 struct lite_lmr **out)
{
	unsigned long deadline = lite_tun_deadline(call_timeout_ms) +
				 lite_tun_jiffies(call_timeout_ms);
	struct lite_lookup lk = {};
	struct lite_wire_share sh;
	struct lite_wire_name req;
	struct lite_conn *conn;
	int ret;

	conn = lite_manager_conn(node);
	if (!conn)
		return -EHOSTUNREACH;	/* no manager, no registry */
	memset(&req, 0, sizeof(req));
	strscpy(req.name, name, sizeof(req.name));
	lk.call.on_reply = lite_lookup_reply;
	ret = lite_call_start(conn, &lk.call, LITE_MSG_LOOKUP, &req,
			      sizeof(req), &sh, sizeof(sh));
	if (!ret)
		ret = lite_call_wait(&lk.call, deadline);
	lite_conn_put(conn);
	if (ret) {
		if (lk.lmr)
			lite_lmr_drop(lk.lmr);
		return ret;
	}

	if (*perms & ~lk.granted) {
		ret = -EACCES;
		goto fail;
	}
	if (!*perms)
		*perms = lk.granted;
	conn = lite_node_conn_wait(node, lk.lmr->mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (!conn) {
		ret = READ_ONCE(lk.lmr->mem_gone) ? -EHOSTDOWN : -EHOSTUNREACH;
		goto fail;
	}
	ret = lite_lmr_fetch(conn, lk.lmr, 0, deadline);
	lite_conn_put(conn);
	/*
	 * Its memory node gone, or the name revoked, before or while we
	 * fetched: the mapping never becomes usable.
	 */
	if (READ_ONCE(lk.lmr->mem_gone))
		ret = -EHOSTDOWN;
	else if (!ret && READ_ONCE(lk.lmr->revoked))
		ret = -EKEYREVOKED;
	if (ret)
		goto fail;
	*out = lk.lmr;
	return 0;
fail:
	lite_lmr_drop(lk.lmr);
	return ret;
}

/* Have the memory node free our LMR @lmr, waiting for a reconnect. */
static void lite_lmr_send_free(struct lite_lmr *lmr)
{
	struct lite_conn *conn;

	conn = lite_node_conn_wait(lmr->node, lmr->mem_node,
				   lite_tun_deadline(conn_wait_ms));
	if (conn) {
		lite_lmr_remote_free(conn, lmr->mem_node, lmr->mr_id,
				     !READ_ONCE(lmr->published));
		lite_conn_put(conn);
	}
}

/**
 * lite_lmr_free_queued - end an LMR lite_lease_free_later() queued
 * @lmr: the LMR, revoked, its owner's; the queue's reference is dropped
 * @send: send its FREE (false once our node left: its memory nodes free
 *	what we held)
 *
 * Sleeps, waiting for a reconnect to the memory node if needed.
 */
void lite_lmr_free_queued(struct lite_lmr *lmr, bool send)
{
	if (send)
		lite_lmr_send_free(lmr);
	lite_lmr_drop(lmr);
}

/**
 * lite_lmr_release - drop a handle's LMR
 * @lmr: the LMR; the caller's reference is dropped
 * @owner: the handle allocated it: free its memory
 *
 * No step of an access through it may be in progress or start afterwards:
 * it is revoked first, waiting for a step in progress. The owner's drop
 * frees the memory (unless its memory node is gone): the memory node
 * invalidates every node that fetched the chunks before it frees them.
 * Of an LMR never published, which nobody else can have mapped, that
 * happens in the background (lite_lease_free_later()); once our node left
 * the cluster, not at all (the memory node freed what we held). Returns
 * the quota charge once the FREE is answered or queued. Sleeps, waiting
 * for a reconnect to the memory node if needed.
 */
void lite_lmr_release(struct lite_lmr *lmr, bool owner)
{
	struct lite_node *node = lmr->node;
	u64 charged = lmr->charged;
	kuid_t uid = lmr->uid;
	bool gone;
	int ret;

	lite_lmr_revoke(lmr);
	spin_lock_bh(&lmr->lock);
	gone = lmr->mem_gone;
	spin_unlock_bh(&lmr->lock);
	if (owner && !gone) {
		/* Read after the revoke: a share racing us sees it. */
		ret = lite_lease_free_later(lmr, !READ_ONCE(lmr->published));
		if (!ret) {	/* the queue drops it: @lmr may be gone */
			lite_quota_uncharge(node, uid, charged);
			return;
		}
		if (ret != -ESHUTDOWN)
			lite_lmr_send_free(lmr);
	}
	lite_quota_uncharge(node, uid, charged);
	lite_lmr_drop(lmr);
}

static bool lite_lmr_matches(const struct lite_lmr *lmr, u64 share_id,
			     u16 mem_node, u64 mr_id)
{
	if (share_id)
		return lmr->share_id == share_id;
	return lmr->mem_node == mem_node && lmr->mr_id == mr_id;
}

/* A matching revoked LMR whose step is in progress, referenced; or NULL. */
static struct lite_lmr *lite_lmr_busy(struct lite_node *node, u64 share_id,
				      u16 mem_node, u64 mr_id)
{
	struct lite_lmr *lmr, *busy = NULL;

	mutex_lock(&node->lock);
	list_for_each_entry(lmr, &node->lmrs, map_entry) {
		if (lite_lmr_matches(lmr, share_id, mem_node, mr_id) &&
		    lite_lmr_draining(lmr)) {
			lite_lmr_get(lmr);
			busy = lmr;
			break;
		}
	}
	mutex_unlock(&node->lock);
	return busy;
}

/**
 * lite_lmr_invalidate - INVALIDATE from the manager or a memory node
 * @node: our node
 * @msg: the message; its payload is a &struct lite_wire_invalidate naming
 *	a share (share_id), or else an LMR (mem_node and mr_id)
 *
 * Revokes the matching LMRs, and returns only when no step of an access
 * to them is in progress. Takes node->lock; sleeps.
 */
void lite_lmr_invalidate(struct lite_node *node, const struct lite_msg *msg)
{
	const struct lite_wire_invalidate *inv = msg->payload;
	u64 share_id = le64_to_cpu(inv->share_id);
	u64 mr_id = le64_to_cpu(inv->mr_id);
	u16 mem_node = le16_to_cpu(inv->mem_node);
	struct lite_lmr *lmr;

	mutex_lock(&node->lock);
	list_for_each_entry(lmr, &node->lmrs, map_entry) {
		if (lite_lmr_matches(lmr, share_id, mem_node, mr_id))
			lite_lmr_close(lmr, false);
	}
	mutex_unlock(&node->lock);

	/* Wait outside node->lock: steps take it to find connections. */
	while ((lmr = lite_lmr_busy(node, share_id, mem_node, mr_id))) {
		wait_event(lmr->idle_wq, lite_lmr_drained(lmr));
		lite_lmr_put(lmr);
	}
}

/**
 * lite_lmrs_mem_gone - node @mem_node left: its memory is gone
 * @node: our node; node->lock held
 * @mem_node: the node that left
 *
 * Its id may come back as a different node. Nothing may reach, or free,
 * through old LMRs: they are revoked and marked gone. Steps in flight
 * fail with the connection.
 */
void lite_lmrs_mem_gone(struct lite_node *node, u16 mem_node)
{
	struct lite_lmr *lmr;

	lockdep_assert_held(&node->lock);
	list_for_each_entry(lmr, &node->lmrs, map_entry) {
		if (lmr->mem_node == mem_node)
			lite_lmr_close(lmr, true);
	}
}

/**
 * lite_invalidate_on - have node @id drop the mappings @inv names
 * @node: our node
 * @id: the node that may map them
 * @inv: what to invalidate
 * @deadline: in jiffies
 *
 * Our own are dropped here directly (the request would queue behind the
 * caller). If @id does not confirm by @deadline, our connection to it is
 * closed and we wait until its QP is destroyed: it cannot reach our memory
 * through that QP any more, but it may reconnect, so the caller must try
 * again before the memory goes. Sleeps.
 *
 * Return: 0 once @id confirmed, -ENOTCONN if it has no connection now (it
 * is reconnecting, or gone), or the error that forced the close.
 */
int lite_invalidate_on(struct lite_node *node, u16 id,
		       const struct lite_wire_invalidate *inv,
		       unsigned long deadline)
{
	struct lite_msg msg = { .payload = inv, .len = sizeof(*inv) };
	struct lite_conn *conn;
	struct lite_call call = {};
	int ret;

	if (id == READ_ONCE(node->self_id)) {
		lite_lmr_invalidate(node, &msg);
		return 0;
	}
	conn = lite_node_conn(node, id);
	if (!conn)
		return -ENOTCONN;
	ret = lite_call_start(conn, &call, LITE_MSG_INVALIDATE, inv,
			      sizeof(*inv), NULL, 0);
	if (!ret)
		ret = lite_call_wait(&call, deadline);
	if (ret) {
		pr_info("lite%u: node %u did not drop a mapping (%d): disconnecting it\n",
			node->instance, id, ret);
		lite_conn_close(conn);
		wait_for_completion(&conn->closed);
	}
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_lmrs_show - list the LMRs of the node (debugfs "lmrs")
 * @m: the file
 * @node: the node
 *
 * A header, then one line per LMR made or mapped on this node: its wire
 * id (hex), memory node, size, the bytes its memory node holds for it (a
 * lease's: the whole size class; 0 until the allocation is complete), the
 * share it was mapped through (0: allocated here), and flags:
 * nic_atomic, published, revoked, mem_gone ("-": none).
 *
 * Return: 0.
 */
int lite_lmrs_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_lmr *lmr;

	seq_puts(m, "mr_id mem_node size held share_id flags\n");
	mutex_lock(&node->lock);
	list_for_each_entry(lmr, &node->lmrs, map_entry) {
		const char *flag[] = {
			lmr->flags & LITE_WIRE_LMR_NIC_ATOMIC ? "nic_atomic" :
			NULL,
			READ_ONCE(lmr->published) ? "published" : NULL,
			READ_ONCE(lmr->revoked) ? "revoked" : NULL,
			READ_ONCE(lmr->mem_gone) ? "mem_gone" : NULL,
		};
		const char *sep = " ";
		int i;

		seq_printf(m, "%llx %u %llu %llu %llu", lmr->mr_id,
			   lmr->mem_node, READ_ONCE(lmr->layout.size),
			   READ_ONCE(lmr->held), READ_ONCE(lmr->share_id));
		for (i = 0; i < ARRAY_SIZE(flag); i++) {
			if (!flag[i])
				continue;
			seq_printf(m, "%s%s", sep, flag[i]);
			sep = ",";
		}
		seq_puts(m, *sep == ' ' ? " -\n" : "\n");
	}
	mutex_unlock(&node->lock);
	return 0;
}
