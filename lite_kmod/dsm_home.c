// SPDX-License-Identifier: GPL-2.0
/*
 * lite DSM, the home's side: the directory of a region created on this
 * node (one core/dsm.c record per page), the transactions that move pages
 * between nodes, and who uses the region. Homes are by creator: the node
 * that creates a region keeps the whole directory (docs/architecture.md,
 * DSM).
 *
 * A request (DSM_REQ from a node, or a fault on this node) starts a
 * transaction on its page, or queues behind the one that runs. The
 * transaction asks the nodes the plan names (DSM_INVAL: invalidate,
 * downgrade, probe), each ask from a work item, and when every answer is
 * in, grants the request; the requester's DONE commits it and starts the
 * next request queued for the page. A timer bounds every wait: an answer
 * late by LITE_DSM_ANSWER_MS fails the transaction (the requester asks
 * again), a DONE late by LITE_DSM_DONE_MS ends it as if the requester
 * died. Everything here runs in process context, except the start of a
 * remote request for a free page, which runs in the CQ handler
 * (lite_dsm_handle_req_fast(): its lite_dsm_todo is atomic); the home lock
 * is a spinlock taken with bottom halves off.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/mm.h>

#include "internal.h"

struct lite_dsm_home {
	spinlock_t lock;		/* protects everything below */
	struct lite_dsm_dir *dir;	/* n_pages records */
	struct list_head running;	/* lite_dsm_htxn, one per busy page */
	struct list_head queued;	/* lite_dsm_htxn waiting, in order */
	u32 next_txn;
	bool users[LITE_MAX_NODES + 1];	/* other nodes that opened it */
	u32 opens[LITE_MAX_NODES + 1];	/* each node's OPENs, counted */
	bool dying;			/* removed: no new transaction; read
					 * without the lock by
					 * lite_dsm_removed() */
};

/* A request, queued or running. */
struct lite_dsm_htxn {
	struct kref ref;		/* the home's, and one per ask */
	struct lite_dsm_region *region;	/* holds a reference */
	u64 index;
	u8 kind;
	u32 rseq;			/* the requester's number for it */
	u64 addr;			/* the requester's frame, */
	u32 rkey;			/* and the key that reaches it */
	struct lite_dsm_txn t;		/* home lock */
	struct lite_conn *conn;		/* remote requester: a reference */
	u32 req_id;			/* its request to reply to */
	struct lite_dsm_fetch *local;	/* or the fetch of a local fault */
	struct lite_wire_dsm_grant grant;	/* once granted */
	bool granted;			/* home lock */
	bool ended;			/* home lock: not running any more */
	unsigned long since;		/* home lock: jiffies of the grant */
	struct list_head entry;		/* home->running or ->queued; once
					 * ended, lite_dsm_todo.ended */
	struct list_head asks;		/* lite_dsm_ask; home lock */
	struct list_head reply_entry;	/* home lock: lite_dsm_todo.replies */
	struct work_struct lost_work;	/* lite_dsm_grant_lost(), from an
					 * atomic lite_dsm_todo */
	struct work_struct reply_work;	/* the reply an atomic lite_dsm_todo
					 * cannot send */
	struct work_struct free_work;	/* a last put in the CQ handler */
	int reply_status;		/* home lock */
	u32 reply_gen;			/* home lock: replies decided so far */
	u32 lost_gen;			/* @lost_work's: the reply it ends */
	unsigned long queued;		/* jiffies: when it arrived */
};

/* One question of a transaction to one node. */
struct lite_dsm_ask {
	struct kref ref;		/* its call's, the timer's */
	struct lite_dsm_htxn *x;	/* holds a reference */
	u16 node;
	u8 what;			/* enum lite_dsm_inval_kind */
	bool answered;			/* home lock */
	bool in_call;			/* home lock: @call runs on @conn */
	bool replied;			/* @work handles a failed call */
	int reply_status;
	int tries;
	unsigned long sent;		/* home lock: jiffies of the last send */
	struct lite_conn *conn;		/* a reference while the call runs */
	struct lite_call call;
	struct lite_wire_dsm_inval req;
	struct lite_wire_dsm_held held;
	struct work_struct work;	/* sends it, or answers for this node */
	struct list_head entry;		/* x->asks; home lock */
	struct list_head todo_entry;	/* lite_dsm_todo.asks */
	struct list_head late_entry;	/* lite_dsm_home_tick()'s list */
};

/* What to do once the home lock is dropped. */
struct lite_dsm_todo {
	struct list_head replies;	/* lite_dsm_htxn to answer; each holds
					 * a reference for it */
	struct list_head asks;		/* lite_dsm_ask to send */
	struct list_head ended;		/* lite_dsm_htxn over: drop the home's
					 * reference */
	bool atomic;			/* carried out in the CQ handler */
	struct lite_conn *conn;		/* then: the connection whose CQ it is */
};

static void lite_dsm_todo_init(struct lite_dsm_todo *td)
{
	INIT_LIST_HEAD(&td->replies);
	INIT_LIST_HEAD(&td->asks);
	INIT_LIST_HEAD(&td->ended);
	td->atomic = false;
	td->conn = NULL;
}

static void lite_dsm_htxn_free(struct kref *ref)
{
	struct lite_dsm_htxn *x = container_of(ref, struct lite_dsm_htxn, ref);

	if (x->conn)
		lite_conn_put(x->conn);
	lite_dsm_put(x->region);
	kfree(x);
}

static void lite_dsm_htxn_put(struct lite_dsm_htxn *x)
{
	kref_put(&x->ref, lite_dsm_htxn_free);
}

static void lite_dsm_htxn_free_work(struct work_struct *work)
{
	lite_dsm_htxn_free(&container_of(work, struct lite_dsm_htxn,
					 free_work)->ref);
}

/*
 * Drop a reference @td's holder took: in the CQ handler (@td->atomic) the
 * last one is dropped from a work item (the request's connection, which
 * a resend may have changed, could go with it).
 */
static void lite_dsm_htxn_put_td(struct lite_dsm_htxn *x,
				 const struct lite_dsm_todo *td)
{
	if (!td->atomic)
		lite_dsm_htxn_put(x);
	else if (!refcount_dec_not_one(&x->ref.refcount))
		queue_work(x->region->node->dsm_wq, &x->free_work);
}

static void lite_dsm_ask_free(struct kref *ref)
{
	struct lite_dsm_ask *a = container_of(ref, struct lite_dsm_ask, ref);

	if (a->conn)
		lite_conn_put(a->conn);
	lite_dsm_htxn_put(a->x);
	kfree(a);
}

static void lite_dsm_ask_work(struct work_struct *work);

/* Queue a question for @x; home lock held. */
static bool lite_dsm_ask(struct lite_dsm_home *h, struct lite_dsm_htxn *x,
			 u16 node, u8 what, struct lite_dsm_todo *td)
{
	struct lite_dsm_ask *a;

	lockdep_assert_held(&h->lock);
	a = kzalloc(sizeof(*a), GFP_ATOMIC);
	if (!a) {
		/* As if it failed: the transaction fails, the fault retries. */
		lite_dsm_answer(&h->dir[x->index], &x->t, what, node, -ENOMEM,
				false, 0, 0);
		return false;
	}
	kref_init(&a->ref);
	kref_get(&x->ref);
	a->x = x;
	a->node = node;
	a->what = what;
	a->sent = jiffies;
	a->req.region = cpu_to_le64(x->region->id);
	a->req.page = cpu_to_le64(x->index);
	a->req.what = what;
	INIT_WORK(&a->work, lite_dsm_ask_work);
	INIT_LIST_HEAD(&a->late_entry);
	list_add_tail(&a->entry, &x->asks);
	list_add_tail(&a->todo_entry, &td->asks);
	return true;
}

/*
 * Reply @status to @x's requester once the lock is off, on its request's
 * connection as lite_dsm_send_reply() finds it then. A reply still pending
 * (on another thread's @td) goes with this status instead. Home lock held.
 */
static void lite_dsm_reply_later(struct lite_dsm_todo *td,
				 struct lite_dsm_htxn *x, int status)
{
	lockdep_assert_held(&x->region->dir->lock);
	x->reply_status = status;
	x->reply_gen++;
	if (!list_empty(&x->reply_entry))
		return;
	kref_get(&x->ref);
	list_add_tail(&x->reply_entry, &td->replies);
}

/* @x never ran, or stopped running: drop it once the lock is off. */
static void lite_dsm_drop_later(struct lite_dsm_todo *td,
				struct lite_dsm_htxn *x)
{
	list_del_init(&x->entry);
	x->ended = true;
	list_add_tail(&x->entry, &td->ended);
}

static void lite_dsm_txn_start(struct lite_dsm_home *h, struct lite_dsm_htxn *x,
			   struct lite_dsm_todo *td);
static void lite_dsm_todo_run(struct lite_dsm_region *r,
			      struct lite_dsm_todo *td);

/* Whether a transaction on page @index may start now. Home lock held. */
static bool lite_dsm_page_free(struct lite_dsm_home *h, u64 index)
{
	lockdep_assert_held(&h->lock);
	return !h->dir[index].busy && !h->dir[index].fences;
}

/*
 * Start the next request queued for page @index, if the page is free; one
 * that fails at once, the next. Home lock held.
 */
static void lite_dsm_start_next(struct lite_dsm_home *h, u64 index,
				struct lite_dsm_todo *td)
{
	struct lite_dsm_htxn *next, *tmp;

	lockdep_assert_held(&h->lock);
	while (lite_dsm_page_free(h, index)) {
		next = NULL;
		list_for_each_entry(tmp, &h->queued, entry) {
			if (tmp->index == index) {
				next = tmp;
				break;
			}
		}
		if (!next)
			break;
		list_del_init(&next->entry);
		lite_dsm_txn_start(h, next, td);
	}
}

/* @x is over: unlink it and start the next request for its page. */
static void lite_dsm_end(struct lite_dsm_home *h, struct lite_dsm_htxn *x,
			 struct lite_dsm_todo *td)
{
	lockdep_assert_held(&h->lock);
	lite_dsm_drop_later(td, x);
	lite_dsm_start_next(h, x->index, td);
}

/* Every answer is in: grant, ask a probe, or fail. Home lock held. */
static void lite_dsm_decide_now(struct lite_dsm_home *h,
				struct lite_dsm_htxn *x,
				struct lite_dsm_todo *td)
{
	struct lite_dsm_dir *d = &h->dir[x->index];
	struct lite_dsm_grant g;
	int err;

	err = lite_dsm_decide(d, &x->t, &g);
	if (err == -EAGAIN) {
		if (!lite_dsm_ask(h, x, x->t.probe, LITE_DSM_PROBE, td))
			lite_dsm_decide_now(h, x, td);	/* fails now */
		return;
	}
	if (err) {
		lite_dsm_abort(d, &x->t, false);
		lite_dsm_reply_later(td, x, err);
		lite_dsm_end(h, x, td);
		return;
	}
	x->grant.kind = g.kind;
	x->grant.from = cpu_to_le16(g.from);
	x->grant.from_addr = cpu_to_le64(g.from_addr);
	x->grant.from_rkey = cpu_to_le32(g.from_rkey);
	x->grant.txn = cpu_to_le32(x->t.id);
	x->granted = true;
	x->since = jiffies;
	lite_dsm_reply_later(td, x, 0);
}

/* Start @x on its page, which is not busy. Home lock held. */
static void lite_dsm_txn_start(struct lite_dsm_home *h, struct lite_dsm_htxn *x,
			   struct lite_dsm_todo *td)
{
	struct lite_dsm_dir *d = &h->dir[x->index];
	u16 id;
	int err;

	lockdep_assert_held(&h->lock);
	if (!++h->next_txn)
		h->next_txn = 1;
	err = lite_dsm_begin(d, &x->t, x->kind, x->t.requester, h->next_txn);
	if (err) {
		lite_dsm_reply_later(td, x, err);
		lite_dsm_drop_later(td, x);
		return;
	}
	atomic64_inc(&x->region->node->dsm_stats.home_txns);
	list_add_tail(&x->entry, &h->running);
	for (id = lite_dsm_nodes_next(&x->t.inval, 0); id;
	     id = lite_dsm_nodes_next(&x->t.inval, id))
		lite_dsm_ask(h, x, id, LITE_DSM_INVALIDATE, td);
	if (x->t.downgrade)
		lite_dsm_ask(h, x, x->t.downgrade, LITE_DSM_DOWNGRADE, td);
	if (x->t.probe)
		lite_dsm_ask(h, x, x->t.probe, LITE_DSM_PROBE, td);
	if (lite_dsm_answered(&x->t))
		lite_dsm_decide_now(h, x, td);
}

/*
 * The grant decided as reply number @gen could not be sent (the
 * connection is closing): the requester asks again on a new one, or is
 * gone. Unless it asked again meanwhile (and was answered again, or will
 * be), nothing was written: end the transaction without losing the page.
 */
static void lite_dsm_grant_lost(struct lite_dsm_region *r,
				struct lite_dsm_htxn *x, u32 gen)
{
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_todo td;

	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	if (!x->ended && x->reply_gen == gen) {
		lite_dsm_abort(&h->dir[x->index], &x->t, false);
		lite_dsm_end(h, x, &td);
	}
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
}

static void lite_dsm_lost_work(struct work_struct *work)
{
	struct lite_dsm_htxn *x = container_of(work, struct lite_dsm_htxn,
					       lost_work);

	lite_dsm_grant_lost(x->region, x, READ_ONCE(x->lost_gen));
	lite_dsm_htxn_put(x);
}

/*
 * Send @x's reply number @gen (@status, else its grant) to request @req_id
 * on @conn. If there was no memory for it the connection closes, so that
 * the requester, whose call would otherwise wait, asks again on a new one.
 * A grant that cannot go ends the transaction (lite_dsm_grant_lost(), in
 * process context: from a work item if @atomic).
 */
static void lite_dsm_reply(struct lite_dsm_region *r, struct lite_dsm_htxn *x,
			   struct lite_conn *conn, u32 req_id, int status,
			   u32 gen, bool atomic)
{
	int err;

	err = lite_conn_send_gfp(conn, LITE_MSG_DSM_REQ, true, req_id, status,
				 status ? NULL : &x->grant,
				 status ? 0 : sizeof(x->grant),
				 atomic ? GFP_ATOMIC : GFP_KERNEL);
	if (err == -ENOMEM)
		lite_conn_close(conn);
	if (!err || status)
		return;
	if (!atomic) {
		lite_dsm_grant_lost(r, x, gen);
		return;
	}
	/* The caller's reference on @x keeps this one from being the last. */
	kref_get(&x->ref);
	WRITE_ONCE(x->lost_gen, gen);
	if (!queue_work(r->node->dsm_wq, &x->lost_work))
		lite_dsm_htxn_put(x);
}

/*
 * Send the reply @x has pending, on its request's connection as it is
 * now. With a @td, @x is taken off its list (only the list's owner takes
 * an entry off); @td NULL is process context. In the CQ handler
 * (@td->atomic) the reply goes only on @td->conn, which its CQ keeps
 * (another's last reference could not be dropped there); a reply to
 * another goes from a work item. No lock held.
 */
static void lite_dsm_send_reply(struct lite_dsm_region *r,
				struct lite_dsm_htxn *x,
				const struct lite_dsm_todo *td)
{
	bool atomic = td && td->atomic;
	struct lite_conn *conn;
	u32 req_id, gen;
	int status;

	spin_lock_bh(&r->dir->lock);
	if (td) {
		list_del_init(&x->reply_entry);
	} else if (!list_empty(&x->reply_entry)) {
		/* Pending on a list again: its owner sends the latest. */
		spin_unlock_bh(&r->dir->lock);
		return;
	}
	status = x->reply_status;
	/* Ended since (removed, timed out): no grant may go out; ask again. */
	if (x->ended && !status && !x->local)
		status = -EAGAIN;
	gen = x->reply_gen;
	req_id = x->req_id;
	conn = x->conn;
	if (conn && atomic && conn != td->conn) {
		spin_unlock_bh(&r->dir->lock);
		kref_get(&x->ref);
		if (!queue_work(r->node->dsm_wq, &x->reply_work))
			lite_dsm_htxn_put(x);
		return;
	}
	if (conn && !atomic)
		lite_conn_get(conn);
	spin_unlock_bh(&r->dir->lock);
	if (x->local)
		lite_dsm_granted(x->local, status, &x->grant);
	else if (conn)
		lite_dsm_reply(r, x, conn, req_id, status, gen, atomic);
	if (conn && !atomic)
		lite_conn_put(conn);
}

static void lite_dsm_reply_work(struct work_struct *work)
{
	struct lite_dsm_htxn *x = container_of(work, struct lite_dsm_htxn,
					       reply_work);

	lite_dsm_send_reply(x->region, x, NULL);
	lite_dsm_htxn_put(x);
}

/* Carry out @td: replies, asks, releases. No lock held. */
static void lite_dsm_todo_run(struct lite_dsm_region *r,
			      struct lite_dsm_todo *td)
{
	struct lite_dsm_htxn *x, *xtmp;
	struct lite_dsm_ask *a, *tmp;

	/* Only this thread takes entries off @td (others may add to theirs). */
	list_for_each_entry_safe(x, xtmp, &td->replies, reply_entry) {
		lite_dsm_send_reply(r, x, td);
		lite_dsm_htxn_put_td(x, td);
	}
	list_for_each_entry_safe(a, tmp, &td->asks, todo_entry) {
		list_del_init(&a->todo_entry);
		queue_work(r->node->dsm_wq, &a->work);
	}
	list_for_each_entry_safe(x, xtmp, &td->ended, entry) {
		list_del_init(&x->entry);
		lite_dsm_htxn_put_td(x, td);
	}
	if (READ_ONCE(r->dir->dying))
		wake_up_all(&r->wq);	/* lite_dsm_home_idle() */
}

/* An answer to @a (status -EHOSTDOWN: its node is gone). */
static void lite_dsm_ask_answer(struct lite_dsm_ask *a, int status,
				bool has_frame, u64 addr, u32 rkey)
{
	struct lite_dsm_htxn *x = a->x;
	struct lite_dsm_region *r = x->region;
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_todo td;

	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	list_del_init(&a->entry);
	a->in_call = false;
	if (!a->answered && !x->ended) {
		lite_dsm_answer(&h->dir[x->index], &x->t, a->what, a->node,
				status, has_frame, addr, rkey);
		if (lite_dsm_answered(&x->t) && !x->granted)
			lite_dsm_decide_now(h, x, &td);
	}
	a->answered = true;
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	kref_put(&a->ref, lite_dsm_ask_free);
}

/*
 * The answer (process context, on the receive path), or the call failed
 * (then possibly under the calls' lock, expired by the tick, or on a
 * closing connection): handled by @work.
 */
static void lite_dsm_ask_reply(struct lite_call *call)
{
	struct lite_dsm_ask *a = container_of(call, struct lite_dsm_ask, call);
	struct lite_dsm_home *h = a->x->region->dir;

	spin_lock_bh(&h->lock);
	a->in_call = false;
	spin_unlock_bh(&h->lock);
	if (call->status) {
		a->replied = true;
		a->reply_status = call->status;
		queue_work(a->x->region->node->dsm_wq, &a->work);
		return;
	}
	lite_dsm_ask_answer(a, 0, a->held.has_frame,
			    le64_to_cpu(a->held.addr),
			    le32_to_cpu(a->held.rkey));
}

static void lite_dsm_ask_work(struct work_struct *work)
{
	struct lite_dsm_ask *a = container_of(work, struct lite_dsm_ask, work);
	struct lite_dsm_region *r = a->x->region;
	struct lite_node *node = r->node;
	bool has = false;
	u64 addr = 0;
	u32 rkey = 0;
	int err;

	if (a->node == READ_ONCE(node->self_id)) {
		lite_dsm_inval_local(r, a->x->index, a->what, &has, &addr,
				     &rkey);
		lite_dsm_ask_answer(a, 0, has, addr, rkey);
		return;
	}
	if (a->replied) {
		a->replied = false;
		/* A broken connection may have eaten it: ask again, twice. */
		if (a->reply_status != -ECONNRESET || a->tries++ >= 2) {
			lite_dsm_ask_answer(a, a->reply_status, false, 0, 0);
			return;
		}
	}
	if (a->conn)
		lite_conn_put(a->conn);
	a->conn = a->tries ? lite_node_conn_wait(node, a->node,
					lite_tun_deadline(conn_wait_ms)) :
		  lite_node_conn(node, a->node);
	if (!a->conn) {
		mutex_lock(&node->lock);
		err = lite_mbr_present(&node->mb, a->node) ? -EHOSTUNREACH :
		      -EHOSTDOWN;
		mutex_unlock(&node->lock);
		lite_dsm_ask_answer(a, err, false, 0, 0);
		return;
	}
	spin_lock_bh(&r->dir->lock);
	a->in_call = true;		/* before the reply can clear it */
	a->sent = jiffies;
	spin_unlock_bh(&r->dir->lock);
	err = lite_call_start_async(a->conn, &a->call, lite_dsm_ask_reply,
				    LITE_MSG_DSM_INVAL, &a->req, sizeof(a->req),
				    &a->held, sizeof(a->held));
	if (err)
		lite_dsm_ask_answer(a, err, false, 0, 0);
}

/**
 * lite_dsm_home_tick - late answers fail their transaction; a late DONE
 * ends its one as if the requester died
 * @r: the region, homed here
 *
 * Called by the node's DSM timer about every half second. Process
 * context.
 */
void lite_dsm_home_tick(struct lite_dsm_region *r)
{
	unsigned long answer = msecs_to_jiffies(LITE_DSM_ANSWER_MS);
	unsigned long done = msecs_to_jiffies(LITE_DSM_DONE_MS);
	unsigned long fault = msecs_to_jiffies(LITE_DSM_FAULT_MS);
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_ask *a, *atmp;
	struct lite_dsm_htxn *x, *tmp;
	struct lite_dsm_todo td;
	LIST_HEAD(late);

	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	list_for_each_entry_safe(x, tmp, &h->running, entry) {
		list_for_each_entry(a, &x->asks, entry) {
			if (a->answered || !a->in_call ||
			    !time_after(jiffies, a->sent + answer) ||
			    !list_empty(&a->late_entry))
				continue;
			kref_get(&a->ref);
			list_add_tail(&a->late_entry, &late);
		}
		if (x->granted && time_after(jiffies, x->since + done)) {
			lite_dsm_abort(&h->dir[x->index], &x->t, true);
			lite_dsm_end(h, x, &td);
		}
	}
	/* A request that waited as long as a fault does fails. */
	list_for_each_entry_safe(x, tmp, &h->queued, entry) {
		if (!time_after(jiffies, x->queued + fault))
			continue;
		lite_dsm_reply_later(&td, x, -ETIMEDOUT);
		lite_dsm_drop_later(&td, x);
	}
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	/*
	 * Ends the call (its answer: -ETIMEDOUT) unless it just ended; its
	 * connection is alive while the ask holds it (in_call was set).
	 */
	list_for_each_entry_safe(a, atmp, &late, late_entry) {
		list_del_init(&a->late_entry);
		lite_call_expire(&a->call);
		kref_put(&a->ref, lite_dsm_ask_free);
	}
}

/**
 * lite_dsm_home_create - the directory of a region created here
 * @r: the region, new
 *
 * Every page starts as ZERO: no node holds a copy.
 * Return: 0 or -ENOMEM.
 */
int lite_dsm_home_create(struct lite_dsm_region *r)
{
	struct lite_dsm_home *h;

	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->dir = kvcalloc(r->n_pages, sizeof(*h->dir), GFP_KERNEL_ACCOUNT);
	if (!h->dir) {
		kfree(h);
		return -ENOMEM;
	}
	spin_lock_init(&h->lock);
	INIT_LIST_HEAD(&h->running);
	INIT_LIST_HEAD(&h->queued);
	r->dir = h;
	return 0;
}

/**
 * lite_dsm_home_destroy - free the directory
 * @r: the region, whose last reference is gone
 *
 * No transaction is left: each holds a reference on @r.
 */
void lite_dsm_home_destroy(struct lite_dsm_region *r)
{
	struct lite_dsm_home *h = r->dir;

	kvfree(h->dir);
	kfree(h);
	r->dir = NULL;
}

/* A request from the same requester with the same number, sent again. */
static struct lite_dsm_htxn *lite_dsm_same(struct list_head *list, u64 index,
					   u16 requester, u32 rseq)
{
	struct lite_dsm_htxn *x;

	list_for_each_entry(x, list, entry)
		if (x->index == index && x->t.requester == requester &&
		    x->rseq == rseq)
			return x;
	return NULL;
}

/* A transaction for @req, not yet started; NULL if out of memory. */
static struct lite_dsm_htxn *lite_dsm_htxn_new(struct lite_dsm_region *r,
					       u16 requester,
					       const struct lite_wire_dsm_req *req,
					       struct lite_conn *conn,
					       u32 req_id, gfp_t gfp)
{
	struct lite_dsm_htxn *x;

	x = kzalloc(sizeof(*x), gfp);
	if (!x)
		return NULL;
	kref_init(&x->ref);
	kref_get(&r->ref);
	x->region = r;
	x->index = le64_to_cpu(req->page);
	x->kind = req->kind;
	x->rseq = le32_to_cpu(req->seq);
	x->addr = le64_to_cpu(req->addr);
	x->rkey = le32_to_cpu(req->rkey);
	x->t.requester = requester;
	x->req_id = req_id;
	if (conn) {
		lite_conn_get(conn);
		x->conn = conn;
	}
	INIT_LIST_HEAD(&x->entry);
	INIT_LIST_HEAD(&x->asks);
	INIT_LIST_HEAD(&x->reply_entry);
	INIT_WORK(&x->lost_work, lite_dsm_lost_work);
	INIT_WORK(&x->reply_work, lite_dsm_reply_work);
	INIT_WORK(&x->free_work, lite_dsm_htxn_free_work);
	x->queued = jiffies;
	return x;
}

/* Whether a request for page @index is queued. Home lock held. */
static bool lite_dsm_waiting(struct lite_dsm_home *h, u64 index)
{
	struct lite_dsm_htxn *x;

	lockdep_assert_held(&h->lock);
	list_for_each_entry(x, &h->queued, entry)
		if (x->index == index)
			return true;
	return false;
}

/**
 * lite_dsm_home_request - a node wants a copy of a page
 * @r: the region, homed here
 * @requester: the node
 * @req: the request
 * @conn: a remote requester's connection (the grant is its reply), or NULL
 * @req_id: the request to reply to
 * @local: else the fetch of a fault on this node (lite_dsm_granted())
 *
 * Starts a transaction, or queues the request behind the page's running
 * one; a request sent again after a broken connection gets the grant its
 * transaction made, if any, again. Process context.
 */
void lite_dsm_home_request(struct lite_dsm_region *r, u16 requester,
			   const struct lite_wire_dsm_req *req,
			   struct lite_conn *conn, u32 req_id,
			   struct lite_dsm_fetch *local)
{
	struct lite_dsm_home *h = r->dir;
	u64 index = le64_to_cpu(req->page);
	u32 rseq = le32_to_cpu(req->seq);
	struct lite_dsm_htxn *x, *old;
	struct lite_conn *stale = NULL;
	struct lite_dsm_todo td;
	int err = 0;

	lite_dsm_todo_init(&td);
	if (index >= r->n_pages) {
		err = -EINVAL;
		goto fail;
	}
	x = lite_dsm_htxn_new(r, requester, req, conn, req_id, GFP_KERNEL);
	if (!x) {
		err = -ENOMEM;
		goto fail;
	}
	x->local = local;

	spin_lock_bh(&h->lock);
	old = lite_dsm_same(&h->running, index, requester, rseq) ?:
	      lite_dsm_same(&h->queued, index, requester, rseq);
	/* Removed: only a grant made before, sent again, still goes. */
	if ((h->dying && !(old && old->granted && conn)) ||
	    (conn && !h->users[requester])) {
		err = h->dying ? -ENXIO : -ENOENT;
		spin_unlock_bh(&h->lock);
		lite_dsm_htxn_put(x);
		goto fail;
	}
	if (old && conn) {
		/* Sent again: answer on the new connection. */
		stale = old->conn;
		lite_conn_get(conn);
		old->conn = conn;
		old->req_id = req_id;
		if (old->granted)
			lite_dsm_reply_later(&td, old, 0);
	} else if (!lite_dsm_page_free(h, index)) {
		list_add_tail(&x->entry, &h->queued);
		x = NULL;
	} else {
		lite_dsm_txn_start(h, x, &td);
		x = NULL;
	}
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	if (x)
		lite_dsm_htxn_put(x);
	if (stale)
		lite_conn_put(stale);
	return;

fail:
	if (local)
		lite_dsm_granted(local, err, NULL);
	else if (conn && lite_conn_send(conn, LITE_MSG_DSM_REQ, true, req_id,
					err, NULL, 0) == -ENOMEM)
		lite_conn_close(conn);	/* the requester asks again */
}

/*
 * A remote request for a page no transaction holds, sent once: start its
 * transaction now, in any context (the CQ handler; the home lock is taken
 * with spin_lock_bh() as everywhere). Anything else, or no memory, is left
 * to lite_dsm_home_request(): return false.
 */
static bool lite_dsm_home_request_now(struct lite_dsm_region *r,
				      u16 requester,
				      const struct lite_wire_dsm_req *req,
				      struct lite_conn *conn, u32 req_id)
{
	struct lite_dsm_home *h = r->dir;
	u64 index = le64_to_cpu(req->page);
	u32 rseq = le32_to_cpu(req->seq);
	struct lite_dsm_htxn *x;
	struct lite_dsm_todo td;
	bool now;

	if (index >= r->n_pages)
		return false;
	x = lite_dsm_htxn_new(r, requester, req, conn, req_id, GFP_ATOMIC);
	if (!x)
		return false;
	lite_dsm_todo_init(&td);
	td.atomic = true;
	td.conn = conn;
	spin_lock_bh(&h->lock);
	now = !h->dying && h->users[requester] && lite_dsm_page_free(h, index) &&
	      !lite_dsm_waiting(h, index) &&
	      !lite_dsm_same(&h->running, index, requester, rseq);
	if (now)
		lite_dsm_txn_start(h, x, &td);
	spin_unlock_bh(&h->lock);
	/*
	 * Only @x's reply (to @conn, GFP_ATOMIC) and asks (queued on dsm_wq):
	 * the page was free and nothing was queued for it, so no other
	 * transaction starts. The caller's reference keeps @r and @conn's
	 * CQ keeps @conn: no put here is the last one.
	 */
	lite_dsm_todo_run(r, &td);
	if (!now)
		lite_dsm_htxn_put_td(x, &td);
	return now;
}

/**
 * lite_dsm_home_done - the requester carried its grant out (or failed to)
 * @r: the region, homed here
 * @requester: the node
 * @done: its DONE
 *
 * Commits (or aborts) the transaction and starts the next request for the
 * page. Process context.
 * Return: 0, or -ESTALE for a DONE of no running transaction of
 * @requester's (sent again, or too late).
 */
int lite_dsm_home_done(struct lite_dsm_region *r, u16 requester,
		       const struct lite_wire_dsm_done *done)
{
	struct lite_dsm_home *h = r->dir;
	u64 index = le64_to_cpu(done->page);
	u32 txn = le32_to_cpu(done->txn);
	struct lite_dsm_htxn *x, *found = NULL;
	struct lite_dsm_todo td;

	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	list_for_each_entry(x, &h->running, entry) {
		if (x->index == index && x->t.requester == requester &&
		    x->t.id == txn && x->granted) {
			found = x;
			break;
		}
	}
	if (found) {
		if (!done->status)
			lite_dsm_commit(&h->dir[index], &found->t,
					found->addr, found->rkey);
		else
			lite_dsm_abort(&h->dir[index], &found->t, false);
		lite_dsm_end(h, found, &td);
	}
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	return found ? 0 : -ESTALE;
}

/**
 * lite_dsm_home_member_gone - a member died or left: what it held is gone
 * @r: the region, homed here
 * @id: the member
 *
 * Pages whose only current copy it held are lost; questions to it count
 * as answered by a node without a copy; its own requests end (a write it
 * was granted loses the page). Process context.
 */
void lite_dsm_home_member_gone(struct lite_dsm_region *r, u16 id)
{
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_htxn *x, *tmp;
	struct lite_dsm_todo td;
	struct lite_dsm_ask *a;
	u64 i;

	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	h->users[id] = false;
	for (i = 0; i < r->n_pages; i++) {
		lite_dsm_node_gone(&h->dir[i], id);
		if ((i & 4095) == 4095) {	/* bottom halves back on a while */
			spin_unlock_bh(&h->lock);
			cond_resched();
			spin_lock_bh(&h->lock);
		}
	}
	list_for_each_entry_safe(x, tmp, &h->running, entry) {
		list_for_each_entry(a, &x->asks, entry) {
			if (a->answered || a->node != id)
				continue;
			a->answered = true;
			lite_dsm_answer(&h->dir[x->index], &x->t, a->what, id,
					-EHOSTDOWN, false, 0, 0);
		}
		if (x->t.requester == id) {
			lite_dsm_abort(&h->dir[x->index], &x->t, x->granted);
			lite_dsm_end(h, x, &td);
		} else if (!x->granted && lite_dsm_answered(&x->t)) {
			lite_dsm_decide_now(h, x, &td);
		}
	}
	list_for_each_entry_safe(x, tmp, &h->queued, entry)
		if (x->t.requester == id)
			lite_dsm_drop_later(&td, x);
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
}

/**
 * lite_dsm_home_open - node @user opens the region
 * @r: the region, homed here
 * @user: the node
 *
 * Return: 0, or -ENOENT if the region is being removed.
 */
int lite_dsm_home_open(struct lite_dsm_region *r, u16 user)
{
	struct lite_dsm_home *h = r->dir;
	int err = 0;

	spin_lock_bh(&h->lock);
	if (h->dying || READ_ONCE(r->dead)) {
		err = -ENOENT;
	} else {
		h->users[user] = true;
		h->opens[user]++;
	}
	spin_unlock_bh(&h->lock);
	return err;
}

/*
 * Whether the region is being removed (a region homed here dies only
 * through lite_dsm_home_remove(), which sets dying first): it names
 * nobody's frames then.
 */
static bool lite_dsm_removed(struct lite_dsm_region *r)
{
	return READ_ONCE(r->dir->dying);
}

/*
 * Whether no transaction runs on the region: no grant of a removed region
 * can still read a frame. r->wq is woken when a transaction of a removed
 * region ends (lite_dsm_todo_run()).
 */
static bool lite_dsm_no_txn(struct lite_dsm_home *h)
{
	bool ret;

	spin_lock_bh(&h->lock);
	ret = list_empty(&h->running);
	spin_unlock_bh(&h->lock);
	return ret;
}

/* ... and no fetch of this node's runs either (a pull's READ). */
static bool lite_dsm_home_idle(struct lite_dsm_region *r)
{
	return lite_dsm_no_txn(r->dir) && !atomic_read(&r->fetches);
}

/*
 * Whether page @i's record or its running transaction names @user: only
 * then can it hold a copy, now or once the transaction commits. Home lock
 * held.
 */
static bool lite_dsm_names(struct lite_dsm_home *h, u64 i, u16 user)
{
	const struct lite_dsm_dir *d = &h->dir[i];
	struct lite_dsm_htxn *x;

	lockdep_assert_held(&h->lock);
	if (d->src == user || lite_dsm_nodes_test(&d->holders, user) ||
	    lite_dsm_nodes_test(&d->sharers, user))
		return true;
	if (!d->busy)
		return false;
	list_for_each_entry(x, &h->running, entry)
		if (x->index == i && x->t.requester == user)
			return true;
	return false;
}

/*
 * Wait until page @i is not busy, then forget @user's copy of it, unless
 * @user opened the region again since it left as OPEN number @gen (its
 * copies are new ones then). A page that does not name @user, or a region
 * removed meanwhile, has nothing to forget. While it waits, the page is
 * fenced: requests for it queue (a page other nodes keep asking for would
 * otherwise never be seen free), and start once the forget is done.
 */
static int lite_dsm_forget_copy(struct lite_dsm_region *r, u64 i, u16 user,
				u32 gen, unsigned long deadline)
{
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_todo td;
	bool fenced = false;
	int ret = 0;

	lite_dsm_todo_init(&td);
	for (;;) {
		if (lite_dsm_removed(r))
			break;
		spin_lock_bh(&h->lock);
		if (h->opens[user] != gen || !lite_dsm_names(h, i, user)) {
			spin_unlock_bh(&h->lock);
			break;
		}
		if (!h->dir[i].busy) {
			lite_dsm_node_gone(&h->dir[i], user);
			spin_unlock_bh(&h->lock);
			break;
		}
		if (!fenced) {
			h->dir[i].fences++;
			fenced = true;
		}
		spin_unlock_bh(&h->lock);
		if (time_after(jiffies, deadline)) {
			ret = -ETIMEDOUT;
			break;
		}
		usleep_range(100, 1000);
	}
	if (fenced) {
		spin_lock_bh(&h->lock);
		h->dir[i].fences--;
		lite_dsm_start_next(h, i, &td);
		spin_unlock_bh(&h->lock);
		lite_dsm_todo_run(r, &td);
	}
	return ret;
}

/*
 * Whether @user holds the only current copy of page @i, and has not opened
 * the region again since its OPEN number @gen (its copies are new ones
 * then).
 */
static bool lite_dsm_only_holder(struct lite_dsm_home *h, u64 i, u16 user,
				 u32 gen)
{
	struct lite_dsm_dir *d = &h->dir[i];
	struct lite_dsm_nodes only = {};
	bool ret;

	lite_dsm_nodes_set(&only, user);
	spin_lock_bh(&h->lock);
	ret = h->opens[user] == gen &&
	      (d->state == LITE_DSM_SHARED || d->state == LITE_DSM_EXCL) &&
	      !memcmp(&d->holders, &only, sizeof(only));
	spin_unlock_bh(&h->lock);
	return ret;
}

/*
 * Node @user stops using the region, in the order its messages came: an
 * OPEN it sent earlier (even one it gave up waiting for) counts before
 * this. No new request from it is served: a late one would name freed
 * frames. Return: the number of its last OPEN.
 */
static u32 lite_dsm_home_leave(struct lite_dsm_region *r, u16 user)
{
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_htxn *x, *tmp;
	struct lite_dsm_todo td;
	u32 gen;

	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	h->users[user] = false;
	gen = h->opens[user];
	list_for_each_entry_safe(x, tmp, &h->queued, entry)
		if (x->t.requester == user)
			lite_dsm_drop_later(&td, x);
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	return gen;
}

/*
 * Every page only @user holds (it left as OPEN number @gen,
 * lite_dsm_home_leave()) is fetched here first (a read transaction of this
 * node's), then @user's copies are forgotten; @user keeps its frames until
 * this returns. Sleeps, up to LITE_DSM_CLOSE_MS (+ LITE_DSM_DONE_MS if the
 * region is removed meanwhile). Return: 0 (also if removed: then no grant
 * names @user's frames any more once this returns), -EBUSY (removed, but a
 * grant may still read them), or the failure that lost some of @user's
 * pages.
 */
static int lite_dsm_home_close(struct lite_dsm_region *r, u16 user, u32 gen)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(LITE_DSM_CLOSE_MS);
	struct lite_dsm_home *h = r->dir;
	int err = 0, e;
	u64 i;

	for (i = 0; i < r->n_pages; i++) {
		/* Removed meanwhile: no page of anyone's is named any more. */
		if (lite_dsm_removed(r))
			break;
		if (time_after(jiffies, deadline))
			return err ?: -ETIMEDOUT;
		if (lite_dsm_only_holder(h, i, user, gen)) {
			e = lite_dsm_pull(r, i, deadline);
			err = err ?: e;
		}
		e = lite_dsm_forget_copy(r, i, user, gen, deadline);
		err = err ?: e;
		cond_resched();
	}
	if (!lite_dsm_removed(r))
		return err;
	/*
	 * A READ granted before the removal (to another node, or our pull)
	 * may still read @user's frames: not before those are over.
	 */
	wait_event_timeout(r->wq, lite_dsm_home_idle(r),
			   msecs_to_jiffies(LITE_DSM_DONE_MS));
	return lite_dsm_home_idle(r) ? 0 : -EBUSY;
}

/**
 * lite_dsm_home_unused - whether no node uses the region any more
 * @r: the region, homed here
 *
 * Return: true if no other node has it open and no file here does.
 */
bool lite_dsm_home_unused(struct lite_dsm_region *r)
{
	struct lite_dsm_home *h = r->dir;
	bool used = false;
	int id;

	spin_lock_bh(&h->lock);
	for (id = 1; id <= LITE_MAX_NODES; id++)
		used |= h->users[id];
	spin_unlock_bh(&h->lock);
	spin_lock_bh(&r->lock);
	used |= r->files != 0;
	spin_unlock_bh(&r->lock);
	return !used;
}

/**
 * lite_dsm_home_remove - destroy a region homed here
 * @r: the region; node->dsm_lock held
 * @wait: for the granted requests (false when this node leaves: its
 *	peers drop its regions themselves)
 *
 * Withdraws its name, fails the requests not granted, waits for the
 * granted ones to be carried out if @wait (their READs may read a frame a
 * user frees once it hears the region is gone; at most LITE_DSM_DONE_MS),
 * tells the nodes that use it (their accesses get SIGBUS from then on) and
 * drops node->dsm's reference. Open region files keep the dead region
 * until they close. Sleeps.
 */
void lite_dsm_home_remove(struct lite_dsm_region *r, bool wait)
{
	struct lite_wire_dsm_region gone = { .region = cpu_to_le64(r->id) };
	struct lite_node *node = r->node;
	struct lite_dsm_home *h = r->dir;
	struct lite_dsm_htxn *x, *tmp;
	bool users[LITE_MAX_NODES + 1];
	struct lite_conn *conn;
	struct lite_dsm_todo td;
	int id;

	lockdep_assert_held(&node->dsm_lock);
	if (READ_ONCE(r->dead))
		return;
	lite_share_withdraw(node, r->name);
	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	WRITE_ONCE(h->dying, true);
	memcpy(users, h->users, sizeof(users));
	/* A request not granted fails; a granted one ends with its DONE. */
	list_splice_init(&h->queued, &h->running);
	list_for_each_entry_safe(x, tmp, &h->running, entry) {
		if (x->granted)
			continue;
		lite_dsm_reply_later(&td, x, -ENXIO);
		lite_dsm_drop_later(&td, x);
	}
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	if (wait)
		wait_event_timeout(r->wq, lite_dsm_no_txn(h),
				   msecs_to_jiffies(LITE_DSM_DONE_MS));
	/* A DONE that comes later is stale. */
	lite_dsm_todo_init(&td);
	spin_lock_bh(&h->lock);
	list_for_each_entry_safe(x, tmp, &h->running, entry)
		lite_dsm_drop_later(&td, x);
	spin_unlock_bh(&h->lock);
	lite_dsm_todo_run(r, &td);
	for (id = 1; id <= LITE_MAX_NODES; id++) {
		if (!users[id])
			continue;
		conn = lite_node_conn_wait(node, id,
					   lite_tun_deadline(conn_wait_ms));
		if (!conn)
			continue;	/* gone itself, or it hears at its next
					 * request (ENOENT) */
		/* Destroyed everywhere when this returns (or the node is
		 * unreachable: then it hears at its next request).
		 */
		lite_call(conn, LITE_MSG_DSM_GONE, &gone, sizeof(gone), NULL, 0,
			  NULL, lite_tun_deadline(call_timeout_ms));
		lite_conn_put(conn);
	}
	lite_dsm_kill(r);
	lite_dsm_forget(r);
}

/**
 * lite_dsm_handle_req - DSM_REQ: a node wants a copy of a page
 * @conn: its connection
 * @msg: the request
 *
 * The grant is the reply, now or when the page's transaction gets to it;
 * -ENOENT if the region is not homed here or the node did not open it.
 * Runs on node->cq_wq, for the requests lite_dsm_handle_req_fast() left.
 */
void lite_dsm_handle_req(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_dsm_req *req = msg->payload;
	struct lite_dsm_region *r;

	r = lite_dsm_find(conn->node, le64_to_cpu(req->region));
	if (!r || !r->dir) {
		if (r)
			lite_dsm_put(r);
		lite_reply(conn, msg, -ENOENT, NULL, 0);
		return;
	}
	lite_dsm_home_request(r, conn->peer_id, req, conn, msg->req_id, NULL);
	lite_dsm_put(r);
}

/**
 * lite_dsm_handle_req_fast - DSM_REQ in the CQ handler, if it can be
 * @conn: the requester's connection
 * @msg: the request
 *
 * A request for a page of a region homed here that no transaction holds
 * starts its transaction at once: the grant goes out from the CQ handler,
 * with no wake-up on the way (asks, if the page needs any, go to dsm_wq).
 * Any other request (a busy page, one sent again, a region not homed
 * here) is left to lite_dsm_handle_req(). Any context; does not sleep.
 *
 * Return: true if the request was handled.
 */
bool lite_dsm_handle_req_fast(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_dsm_req *req = msg->payload;
	struct lite_dsm_region *r;
	bool done = false;

	r = lite_dsm_find(conn->node, le64_to_cpu(req->region));
	if (!r)
		return false;
	if (r->dir)
		done = lite_dsm_home_request_now(r, conn->peer_id, req, conn,
						 msg->req_id);
	lite_dsm_put_any(r);
	return done;
}

/**
 * lite_dsm_handle_done - DSM_DONE: a grant was carried out
 * @conn: the requester's connection
 * @msg: the DONE
 *
 * Replies 0, or -ESTALE (lite_dsm_home_done()), -ENOENT for a region not
 * homed here. Runs on the receive path.
 */
void lite_dsm_handle_done(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_dsm_done *done = msg->payload;
	struct lite_dsm_region *r;
	int err = -ENOENT;

	r = lite_dsm_find(conn->node, le64_to_cpu(done->region));
	if (r && r->dir)
		err = lite_dsm_home_done(r, conn->peer_id, done);
	if (r)
		lite_dsm_put(r);
	lite_reply(conn, msg, err, NULL, 0);
}

/**
 * lite_dsm_handle_open - DSM_OPEN: a node opens a region homed here
 * @conn: its connection
 * @msg: the request
 *
 * Replies with the region's size, or -ENOENT. Runs in order on node->wq.
 */
void lite_dsm_handle_open(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_dsm_region *req = msg->payload;
	struct lite_wire_dsm_info info = {};
	struct lite_dsm_region *r;
	int err = -ENOENT;

	r = lite_dsm_find(conn->node, le64_to_cpu(req->region));
	if (r && r->dir)
		err = lite_dsm_home_open(r, conn->peer_id);
	if (!err)
		info.size = cpu_to_le64(r->size);
	if (r)
		lite_dsm_put(r);
	lite_reply(conn, msg, err, &info, sizeof(info));
}

/* A DSM_CLOSE whose pages are being taken back (node->close_wq). */
struct lite_dsm_closing {
	struct work_struct work;
	struct lite_dsm_region *region;	/* a reference */
	struct lite_conn *conn;		/* a reference: the reply goes there */
	u32 req_id;
	u32 gen;			/* the user's last OPEN */
	u16 user;
};

/*
 * Take back the pages only the leaving user holds, reply, and remove the
 * region if nobody uses it any more. The region goes before the
 * connection: the node's teardown waits for the connections only.
 */
static void lite_dsm_close_work(struct work_struct *work)
{
	struct lite_dsm_closing *c = container_of(work, struct lite_dsm_closing,
						  work);
	struct lite_dsm_region *r = c->region;
	struct lite_node *node = r->node;
	int err;

	err = lite_dsm_home_close(r, c->user, c->gen);
	lite_conn_send(c->conn, LITE_MSG_DSM_CLOSE, true, c->req_id, err,
		       NULL, 0);
	mutex_lock(&node->dsm_lock);
	if (lite_dsm_home_unused(r))
		lite_dsm_home_remove(r, true);
	mutex_unlock(&node->dsm_lock);
	lite_dsm_put(r);
	lite_conn_put(c->conn);
	kfree(c);
}

/**
 * lite_dsm_handle_close - DSM_CLOSE: a node stops using a region
 * @conn: its connection
 * @msg: the request
 *
 * The node stops being a user here, in order after its OPEN; taking back
 * the pages only it holds (which waits for the network) and the reply
 * follow on node->close_wq, and a region nobody uses any more is
 * destroyed then. -ENOENT for a region not homed here, -ENOMEM (nothing
 * changed). Runs in order on node->wq.
 */
void lite_dsm_handle_close(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_dsm_region *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_dsm_closing *c;
	struct lite_dsm_region *r;

	r = lite_dsm_find(node, le64_to_cpu(req->region));
	if (!r || !r->dir) {
		if (r)
			lite_dsm_put(r);
		lite_reply(conn, msg, -ENOENT, NULL, 0);
		return;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		/* Nothing changed: the node is still a user, keeps its frames. */
		lite_dsm_put(r);
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		return;
	}
	c->gen = lite_dsm_home_leave(r, conn->peer_id);
	INIT_WORK(&c->work, lite_dsm_close_work);
	c->region = r;
	lite_conn_get(conn);
	c->conn = conn;
	c->req_id = msg->req_id;
	c->user = conn->peer_id;
	queue_work(node->close_wq, &c->work);
}
