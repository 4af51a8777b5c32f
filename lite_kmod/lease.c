// SPDX-License-Identifier: GPL-2.0
/*
 * Memory usable without a round trip: leases, and frees that do not wait.
 *
 * A node keeps, per memory node (itself included), a lease: LMRs that the
 * memory node allocated, zeroed and published as ours ahead of demand, in
 * power-of-two size classes from one page to LITE_LEASE_MAX. An allocation
 * of a size its lease has in stock takes one and cuts its layout to the
 * size asked for: local bookkeeping, no message. A class is stocked once
 * an allocation found it empty (LITE_LEASE_BATCH LMRs); every later miss
 * doubles how many LMRs it keeps, up to lease_kb of memory (and LITE_LEASE_DEPTH_MAX LMRs) per class
 * and memory node. One work item per lease refills it in the background,
 * LITE_LEASE_BATCH requests at a time, with LMR_ALLOC requests marked
 * LITE_WIRE_ALLOC_LEASE (the memory node
 * counts that memory apart, as lease memory). A class nobody claimed from
 * for lease_idle_ms gives its stock back; the stock of a memory node that
 * left is dropped; when this node goes down, its stock goes with it (a
 * memory node frees what a node that left held).
 *
 * Stock is memory nobody is charged for: the user who claims an LMR is
 * charged its class then (lite_lease_charge()). Claimed LMRs are ordinary LMRs: shared, mapped
 * (a mapper cuts the chunk list to the size it was published with),
 * revoked and freed as any other.
 *
 * The owner's free of an LMR nobody else can have mapped (never published
 * under a name) does not wait for the memory node either: its FREE goes
 * out from close_wq, one at a time per node, for at most
 * LITE_FREE_QUEUE_MAX LMRs and LITE_FREE_PENDING_MAX bytes of memory
 * queued: beyond that (a loop that frees faster than the memory node
 * answers) and for published LMRs, free waits as before. The quota charge
 * is returned once the FREE is queued or answered. The FREE of an LMR never published
 * tells the memory node so (LITE_WIRE_FREE_UNMAPPED): it does not ask the
 * owner to drop a mapping it cannot have.
 */
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>

#include "internal.h"

static unsigned int lite_lease_kb = 8192;
module_param_named(lease_kb, lite_lease_kb, uint, 0644);
MODULE_PARM_DESC(lease_kb,
		 "memory allocated ahead per size class and memory node for LITE_alloc, KiB (0: no leases)");

static unsigned int lite_lease_idle_ms = 10000;
module_param_named(lease_idle_ms, lite_lease_idle_ms, uint, 0644);
MODULE_PARM_DESC(lease_idle_ms,
		 "a size class nobody allocated from for this long gives its stock back, ms");

#define LITE_LEASE_DEPTH_MAX	64		/* LMRs one class keeps */
#define LITE_LEASE_BATCH	8		/* refill requests at once */
#define LITE_LEASE_SCAN_MS	1000		/* idle stock checked this often */
#define LITE_FREE_PENDING_MAX	(16ULL << 20)	/* bytes of FREEs queued */
#define LITE_FREE_QUEUE_MAX	32		/* FREEs queued */

/* The class of an allocation of @size bytes (1 .. LITE_LEASE_MAX). */
static u32 lite_lease_class(u64 size)
{
	return order_base_2(DIV_ROUND_UP(size, PAGE_SIZE));
}

static u64 lite_lease_class_bytes(u32 c)
{
	return (u64)PAGE_SIZE << c;
}

/**
 * lite_lease_charge - what an allocation of @size bytes counts for a quota
 * @size: bytes asked for, at least 1
 * @flags: LITE_WIRE_LMR_* asked for
 *
 * An allocation a lease may serve takes a whole size class there (and is
 * charged that, whether it came from the lease or not); any other its
 * size.
 *
 * Return: the bytes to charge.
 */
u64 lite_lease_charge(u64 size, u32 flags)
{
	if (flags || !size || size > LITE_LEASE_MAX)
		return size;
	return lite_lease_class_bytes(lite_lease_class(size));
}

/* The most LMRs class @c may keep. */
static u32 lite_lease_depth_max(u32 c)
{
	u64 budget = (u64)READ_ONCE(lite_lease_kb) << 10;

	return min_t(u64, budget / lite_lease_class_bytes(c),
		     LITE_LEASE_DEPTH_MAX);
}

static void lite_lease_count(struct lite_node *node, u32 c, int n)
{
	atomic64_add(n, &node->stats.lease_stock_lmrs);
	atomic64_add(n * (s64)lite_lease_class_bytes(c),
		     &node->stats.lease_stock_bytes);
}

/* Check the stock now and then while there is some; node->lease_lock. */
static void lite_lease_scan_soon(struct lite_node *node, unsigned long delay)
{
	lockdep_assert_held(&node->lease_lock);
	if (!node->lease_down)
		mod_delayed_work(node->close_wq, &node->lease_work, delay);
}

/* Take class @cl's stock onto @to; node->lease_lock held. */
static void lite_lease_empty(struct lite_node *node, struct lite_lease *l,
			     u32 c, struct list_head *to)
{
	struct lite_lease_class *cl = &l->cls[c];

	lockdep_assert_held(&node->lease_lock);
	lite_lease_count(node, c, -(int)cl->have);
	list_splice_tail_init(&cl->stock, to);
	cl->have = 0;
	cl->target = 0;
}

/*
 * How many LMRs to ask for (at most LITE_LEASE_BATCH), of the first class
 * of @l that lacks some (in *@c); 0 for none.
 */
static u32 lite_lease_wanted(struct lite_node *node, struct lite_lease *l,
			     u32 *c)
{
	u32 n = 0;

	spin_lock(&node->lease_lock);
	for (*c = 0; *c < LITE_LEASE_CLASSES && !node->lease_down; (*c)++) {
		if (l->cls[*c].have < l->cls[*c].target) {
			n = min_t(u32, l->cls[*c].target - l->cls[*c].have,
				  LITE_LEASE_BATCH);
			l->cls[*c].pending += n;
			break;
		}
	}
	spin_unlock(&node->lease_lock);
	return n;
}

/*
 * @n refill requests of class @c ended, the last with @lmr (or NULL: it
 * failed). @lmr goes into the stock if it is still wanted: then true.
 * Wakes claims waiting for the class.
 */
static bool lite_lease_landed(struct lite_node *node, struct lite_lease *l,
			      u32 c, u32 n, struct lite_lmr *lmr)
{
	struct lite_lease_class *cl = &l->cls[c];
	bool wanted;

	spin_lock(&node->lease_lock);
	cl->pending -= n;
	wanted = lmr && !node->lease_down && cl->have < cl->target;
	if (wanted) {
		list_add_tail(&lmr->lease_entry, &cl->stock);
		cl->have++;
		lite_lease_count(node, c, 1);
		if (!delayed_work_pending(&node->lease_work))
			lite_lease_scan_soon(node, msecs_to_jiffies(
						     LITE_LEASE_SCAN_MS));
	}
	spin_unlock(&node->lease_lock);
	wake_up_all(&node->lease_wq);
	return wanted;
}

/* A failed refill: keep what there is, grow again on the next miss. */
static void lite_lease_failed(struct lite_node *node, struct lite_lease *l,
			      u32 c)
{
	spin_lock(&node->lease_lock);
	l->cls[c].target = l->cls[c].have;
	spin_unlock(&node->lease_lock);
}

/*
 * close_wq: bring @l's classes up to their targets, up to LITE_LEASE_BATCH
 * requests under way at once (the memory node zeroes them in parallel).
 */
static void lite_lease_refill(struct work_struct *work)
{
	struct lite_lease *l = container_of(work, struct lite_lease, refill);
	struct lite_alloc_req *reqs[LITE_LEASE_BATCH];
	struct lite_node *node = l->node;
	u32 c, n, started, i;
	struct lite_lmr *lmr;
	bool failed;

	while ((n = lite_lease_wanted(node, l, &c))) {
		for (started = 0; started < n; started++) {
			reqs[started] = lite_lmr_request_start(node,
					l->mem_node, lite_lease_class_bytes(c),
					0, LITE_WIRE_ALLOC_LEASE,
					GLOBAL_ROOT_UID, 0);
			if (IS_ERR(reqs[started]))
				break;
		}
		failed = started < n;
		if (failed)
			lite_lease_landed(node, l, c, n - started, NULL);
		for (i = 0; i < started; i++) {
			if (lite_lmr_request_finish(reqs[i], &lmr)) {
				lite_lease_landed(node, l, c, 1, NULL);
				failed = true;
				continue;
			}
			if (!lite_lease_landed(node, l, c, 1, lmr))
				lite_lmr_release(lmr, true);	/* not wanted */
		}
		if (failed) {
			/* Unreachable, or out of memory: the next miss asks. */
			lite_lease_failed(node, l, c);
			return;
		}
	}
}

/* Refill @l in the background; node->lease_lock held. */
static void lite_lease_kick(struct lite_node *node, struct lite_lease *l)
{
	lockdep_assert_held(&node->lease_lock);
	if (!node->lease_down)
		queue_work(node->close_wq, &l->refill);
}

/* Node @mem_node's lease, made on first use; NULL once we go down. */
static struct lite_lease *lite_lease_get(struct lite_node *node, u16 mem_node)
{
	struct lite_lease *l, *fresh;
	u32 c;

	spin_lock(&node->lease_lock);
	l = node->lease_down ? NULL : node->leases[mem_node];
	spin_unlock(&node->lease_lock);
	if (l)
		return l;
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return NULL;
	fresh->node = node;
	fresh->mem_node = mem_node;
	INIT_WORK(&fresh->refill, lite_lease_refill);
	for (c = 0; c < LITE_LEASE_CLASSES; c++)
		INIT_LIST_HEAD(&fresh->cls[c].stock);
	spin_lock(&node->lease_lock);
	if (!node->lease_down && !node->leases[mem_node]) {
		node->leases[mem_node] = fresh;
		fresh = NULL;
	}
	l = node->lease_down ? NULL : node->leases[mem_node];
	spin_unlock(&node->lease_lock);
	kfree(fresh);
	return l;
}

/* Whether a claim waiting for class @cl should look again. */
static bool lite_lease_ready(struct lite_node *node,
			     const struct lite_lease_class *cl)
{
	return READ_ONCE(cl->have) || !READ_ONCE(cl->pending) ||
	       READ_ONCE(node->lease_down);
}

/**
 * lite_lease_claim - an LMR from this node's lease of @mem_node's memory
 * @node: our node
 * @mem_node: the memory node (1 .. LITE_MAX_NODES; may be ourselves)
 * @size: bytes wanted
 * @flags: LITE_WIRE_LMR_*: leases hold LMRs without flags only
 *
 * Takes an LMR of @size's class from the stock and cuts it to @size
 * bytes; either way, refills the class in the background (an empty class
 * keeps more from now on). If the stock is empty while refill requests
 * for the class are under way, waits (killably, bounded) for one of them:
 * it comes sooner than a request of our own would. Takes
 * node->lease_lock; sleeps.
 *
 * Return: the LMR, on node->lmrs, with a reference and nobody charged for
 * it (the caller sets uid and charge); NULL: ask the memory node; or
 * ERR_PTR(-EINTR) if the caller was killed while waiting.
 */
struct lite_lmr *lite_lease_claim(struct lite_node *node, u16 mem_node,
				  u64 size, u32 flags)
{
	struct lite_lease_class *cl;
	bool usable, waited = false;
	struct lite_lmr *lmr;
	struct lite_lease *l;
	long left;
	u32 c;

	if (flags || !size || size > LITE_LEASE_MAX || !mem_node ||
	    mem_node > LITE_MAX_NODES || !READ_ONCE(lite_lease_kb))
		return NULL;
	c = lite_lease_class(size);
	l = lite_lease_get(node, mem_node);
	if (!l)
		return NULL;
	cl = &l->cls[c];
	spin_lock(&node->lease_lock);
again:
	lmr = list_first_entry_or_null(&cl->stock, struct lite_lmr,
				       lease_entry);
	if (lmr) {
		list_del_init(&lmr->lease_entry);
		cl->have--;
		lite_lease_count(node, c, -1);
	} else if (!waited) {
		cl->target = min_t(u32, max_t(u32, cl->target * 2,
					      LITE_LEASE_BATCH),
				   lite_lease_depth_max(c));
	}
	cl->used = jiffies;
	if (cl->have < cl->target)
		lite_lease_kick(node, l);
	if (!lmr && !waited && cl->pending && !node->lease_down) {
		/* Requests for the class are under way: sooner than ours. */
		spin_unlock(&node->lease_lock);
		left = wait_event_killable_timeout(node->lease_wq,
				lite_lease_ready(node, cl),
				lite_tun_jiffies(call_timeout_ms));
		if (left < 0)
			return ERR_PTR(-EINTR);
		waited = true;
		spin_lock(&node->lease_lock);
		goto again;
	}
	spin_unlock(&node->lease_lock);
	if (!lmr) {
		atomic64_inc(&node->stats.lease_misses);
		return NULL;
	}

	spin_lock_bh(&lmr->lock);
	usable = !lmr->revoked && !lmr->mem_gone;
	spin_unlock_bh(&lmr->lock);
	/* Its memory node left since: asking it fails properly. */
	if (!usable || lite_layout_fit(&lmr->layout, lmr->chunks, size)) {
		lite_lmr_release(lmr, usable);
		atomic64_inc(&node->stats.lease_misses);
		return NULL;
	}
	atomic64_inc(&node->stats.lease_hits);
	return lmr;
}

/*
 * Give back the stock on @list: each FREE is queued, or sent; none for a
 * memory node that left, nor once we left (lite_lease_free_later()).
 */
static void lite_lease_release(struct list_head *list)
{
	struct lite_lmr *lmr, *tmp;

	list_for_each_entry_safe(lmr, tmp, list, lease_entry) {
		list_del_init(&lmr->lease_entry);
		lite_lmr_release(lmr, true);
	}
}

/* close_wq: give back stock unclaimed for lease_idle_ms, drop dead stock. */
static void lite_lease_scan(struct work_struct *work)
{
	struct lite_node *node = container_of(to_delayed_work(work),
					      struct lite_node, lease_work);
	unsigned long idle = msecs_to_jiffies(READ_ONCE(lite_lease_idle_ms));
	bool stocked = false;
	struct lite_lease *l;
	LIST_HEAD(back);
	u32 id, c;

	spin_lock(&node->lease_lock);
	list_splice_init(&node->lease_dead, &back);
	for (id = 1; id <= LITE_MAX_NODES; id++) {
		l = node->leases[id];
		for (c = 0; l && c < LITE_LEASE_CLASSES; c++) {
			if (l->cls[c].have &&
			    time_after(jiffies, l->cls[c].used + idle))
				lite_lease_empty(node, l, c, &back);
			stocked |= l->cls[c].have > 0;
		}
	}
	if (stocked)
		lite_lease_scan_soon(node, msecs_to_jiffies(LITE_LEASE_SCAN_MS));
	spin_unlock(&node->lease_lock);

	lite_lease_release(&back);
}

/**
 * lite_lease_peer_gone - member @id left: its lease is worthless
 * @node: our node; node->lock held
 * @id: the member that left
 *
 * Its stock (already marked gone by lite_lmrs_mem_gone()) is dropped in
 * the background; allocations on @id ask it from now on, and fail.
 */
void lite_lease_peer_gone(struct lite_node *node, u16 id)
{
	struct lite_lease *l;
	u32 c;

	lockdep_assert_held(&node->lock);
	spin_lock(&node->lease_lock);
	l = node->leases[id];
	for (c = 0; l && c < LITE_LEASE_CLASSES; c++)
		lite_lease_empty(node, l, c, &node->lease_dead);
	if (!list_empty(&node->lease_dead))
		lite_lease_scan_soon(node, 0);
	spin_unlock(&node->lease_lock);
}

/**
 * lite_lease_free_later - have the memory node free @lmr in the background
 * @lmr: an LMR its owner let go of, revoked
 * @may_queue: it was never published (nobody else can have mapped it)
 *
 * Queues it for free_work, which sends the FREEs one at a time. Takes
 * node->lease_lock; does not sleep.
 *
 * Return: 0 if it was queued (the queue takes over the caller's
 * reference); -EBUSY if it may not be, or while too much waits: the caller
 * sends the FREE itself; -ESHUTDOWN once our node left the cluster: no
 * FREE is needed (each memory node frees what a node that left held).
 */
int lite_lease_free_later(struct lite_lmr *lmr, bool may_queue)
{
	struct lite_node *node = lmr->node;
	int ret = -EBUSY;

	spin_lock(&node->lease_lock);
	if (node->lease_down) {
		ret = -ESHUTDOWN;
	} else if (may_queue && node->frees_queued < LITE_FREE_QUEUE_MAX &&
		   node->frees_pending + lmr->held <= LITE_FREE_PENDING_MAX) {
		node->frees_pending += lmr->held;
		node->frees_queued++;
		list_add_tail(&lmr->lease_entry, &node->frees);
		queue_work(node->close_wq, &node->free_work);
		ret = 0;
	}
	spin_unlock(&node->lease_lock);
	return ret;
}

/* close_wq: the FREEs of LMRs whose owners did not wait, in turn. */
static void lite_lease_free_work(struct work_struct *work)
{
	struct lite_node *node = container_of(work, struct lite_node,
					      free_work);
	struct lite_lmr *lmr;
	bool send;

	for (;;) {
		spin_lock(&node->lease_lock);
		lmr = list_first_entry_or_null(&node->frees, struct lite_lmr,
					       lease_entry);
		if (lmr) {
			list_del_init(&lmr->lease_entry);
			node->frees_pending -= lmr->held;
			node->frees_queued--;
		}
		send = !node->lease_down;
		spin_unlock(&node->lease_lock);
		if (!lmr)
			return;
		lite_lmr_free_queued(lmr, send);
	}
}

/**
 * lite_lease_node_init - set up a new node's leases (none yet)
 * @node: the node being created
 */
void lite_lease_node_init(struct lite_node *node)
{
	spin_lock_init(&node->lease_lock);
	INIT_LIST_HEAD(&node->lease_dead);
	INIT_DELAYED_WORK(&node->lease_work, lite_lease_scan);
	INIT_LIST_HEAD(&node->frees);
	INIT_WORK(&node->free_work, lite_lease_free_work);
	init_waitqueue_head(&node->lease_wq);
}

/**
 * lite_lease_node_down - the node goes down: no refills, no stock
 * @node: the node, dying (lite_cluster_leave() told the members)
 *
 * Waits for a refill in progress (its request fails once the members
 * drop us, or times out) and for a FREE being sent; queued FREEs and the
 * stock are dropped without one: each memory node frees what a node that
 * left held. Sleeps.
 */
void lite_lease_node_down(struct lite_node *node)
{
	struct lite_lease *l;
	LIST_HEAD(gone);
	u32 id, c;

	spin_lock(&node->lease_lock);
	node->lease_down = true;	/* nothing is queued from now on */
	spin_unlock(&node->lease_lock);
	wake_up_all(&node->lease_wq);	/* claims waiting for a refill */
	cancel_delayed_work_sync(&node->lease_work);
	for (id = 1; id <= LITE_MAX_NODES; id++)
		if (node->leases[id])	/* fixed now: lease_down */
			cancel_work_sync(&node->leases[id]->refill);
	flush_work(&node->free_work);	/* nothing joins the queue now */

	spin_lock(&node->lease_lock);
	list_splice_init(&node->lease_dead, &gone);
	for (id = 1; id <= LITE_MAX_NODES; id++) {
		l = node->leases[id];
		for (c = 0; l && c < LITE_LEASE_CLASSES; c++)
			lite_lease_empty(node, l, c, &gone);
	}
	spin_unlock(&node->lease_lock);
	lite_lease_release(&gone);
}

/**
 * lite_lease_node_free - free a node's lease structures
 * @node: the node, after lite_lease_node_down() (or never up)
 */
void lite_lease_node_free(struct lite_node *node)
{
	u32 id;

	for (id = 1; id <= LITE_MAX_NODES; id++)
		kfree(node->leases[id]);
}
