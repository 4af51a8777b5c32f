// SPDX-License-Identifier: GPL-2.0
/*
 * The memory node's side of LMRs: allocating zeroed, DMA-mapped chunks of
 * linear-map memory for a node that asked, handing out their DMA addresses,
 * and freeing them again - only after every node that fetched them has
 * dropped its mappings.
 *
 * An allocation may take seconds (zeroing a GiB), so it does not run on the
 * node's ordered request queue, where it would hold up every request behind
 * it: the request is registered as a job there, in order with the
 * requester's later messages, and the job runs on alloc_wq and replies when
 * done. Nothing the requester sends about the LMR can overtake it: LMR_CHUNKS
 * and LMR_FREE name the LMR by the id in the reply. LMR_CANCEL (the
 * requester gave up) finds the job, which then stops between chunks and
 * frees what it made, or the finished LMR, which it frees.
 *
 * Each chunk goes out with the key peers reach it with (mr.c): the node's
 * global key, or in lmr mode a registration of the chunk alone, made
 * before the reply and invalidated before the chunk's pages are freed.
 * In lmr mode the owner gets the LMR's own keys, and nobody else does;
 * the nodes that map it through a name get the keys of the name's grant
 * (core/wire.h: the owner grants a random id and the name's rights with
 * LMR_GRANT before it publishes), registered at the grant's first
 * LMR_CHUNKS with those rights only, and invalidated when the owner says
 * the name was withdrawn (LMR_UNKEY): revoking a name ends what its keys
 * reach, while the owner and the other names keep theirs.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/seq_file.h>

#include "internal.h"

/* Largest chunk: the buddy allocator's biggest block (4 MiB on x86-64). */
#define LITE_CHUNK_ORDER_MAX	(MAX_ORDER - 1)

/* Grants (names with keys of their own) per LMR at a time. */
#define LITE_EXPORT_KEYSETS_MAX	64

/* An LMR_ALLOC from its receipt (node->wq) to its reply (node->alloc_wq). */
struct lite_alloc_job {
	struct list_head entry;		/* node->alloc_jobs; node lock */
	struct work_struct work;	/* on node->alloc_wq */
	struct lite_conn *conn;		/* holds a reference: the reply's way */
	u16 owner;			/* immutable: the requesting node */
	u32 req_id;			/* immutable: its request id */
	u64 size;			/* immutable */
	u32 flags;			/* immutable: LITE_WIRE_LMR_* */
	bool lease;			/* immutable: for the owner's lease */
	bool cancelled;			/* node lock (the allocating loop peeks
					 * with READ_ONCE): the requester gave
					 * up, or its node left */
};

/* Invalidate @ks's keys (if it has any) and free them. */
static void lite_export_keys_drop(struct lite_node *node,
				  struct lite_export *ex,
				  struct lite_export_keys *ks)
{
	if (ks->mrs) {
		lite_mr_release(node, ks->mrs, ex->n_chunks, true);
		kvfree(ks->mrs);
		ks->mrs = NULL;
	}
	kvfree(ks->rkeys);
	ks->rkeys = NULL;
}

/*
 * Void every grant's keys of @ex, which its owner frees: it withdrew every
 * name first (the mappings through them are dropped), so nothing reaches
 * the memory through a grant any more; only the owner's keys are left to
 * the end. @ex is no longer published.
 */
static void lite_export_drop_grants(struct lite_node *node,
				    struct lite_export *ex)
{
	struct lite_export_keys *ks, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&node->lock);
	list_splice_init(&ex->keysets, &gone);
	ex->n_keysets = 0;
	mutex_unlock(&node->lock);
	list_for_each_entry_safe(ks, tmp, &gone, entry) {
		lite_export_keys_drop(node, ex, ks);
		kfree(ks);
	}
}

static void lite_export_free(struct lite_node *node, struct lite_export *ex)
{
	struct ib_device *dev = node->ibdev->dev;
	struct lite_export_keys *ks, *tmp;
	u32 i;

	if (ex->id)	/* it was published: waiters on its words fail */
		lite_sync_drop_export(node, (u64)node->nonce << 32 | ex->id);
	/* No peer reaches the chunks from here on. */
	list_for_each_entry_safe(ks, tmp, &ex->keysets, entry) {
		lite_export_keys_drop(node, ex, ks);
		kfree(ks);
	}
	lite_export_keys_drop(node, ex, &ex->own);

	for (i = 0; i < ex->n_chunks; i++) {
		if (!ex->chunks[i].page)
			break;
		ib_dma_unmap_page(dev, ex->chunks[i].dma,
				  PAGE_SIZE << ex->chunks[i].order,
				  DMA_BIDIRECTIONAL);
		__free_pages(ex->chunks[i].page, ex->chunks[i].order);
	}
	if (ex->leased) {
		atomic64_sub(ex->size, &node->stats.lease_bytes);
		atomic64_dec(&node->stats.lease_lmrs);
	} else {
		atomic64_sub(ex->size, &node->mem_bytes);
		atomic64_dec(&node->mem_lmrs);
	}
	kvfree(ex->chunks);
	kfree(ex);
}

/* One zeroed chunk of up to @want bytes; smaller orders if memory is
 * fragmented.
 */
static int lite_export_chunk(struct lite_node *node,
			     struct lite_export_chunk *c, u64 want)
{
	struct ib_device *dev = node->ibdev->dev;
	unsigned int order = min_t(unsigned int, get_order(want),
				   LITE_CHUNK_ORDER_MAX);

	for (;;) {
		/* Fail rather than OOM-kill on behalf of a remote node. */
		c->page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
				      __GFP_NORETRY, order);
		if (c->page)
			break;
		if (!order)
			return -ENOMEM;
		order--;
	}
	c->order = order;
	c->len = min_t(u64, want, PAGE_SIZE << order);
	c->dma = ib_dma_map_page(dev, c->page, 0, PAGE_SIZE << order,
				 DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, c->dma)) {
		__free_pages(c->page, order);
		c->page = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Whether @job should stop: nobody will take what it makes. */
static bool lite_alloc_job_stopped(const struct lite_alloc_job *job)
{
	return READ_ONCE(job->cancelled) ||
	       lite_conn_state(job->conn) == LITE_CONN_CLOSING;
}

/*
 * lmr mode: register every chunk of @ex into @ks for the peer at the far
 * end of @conn, with @access (IB_ACCESS_REMOTE_*).
 */
static int lite_export_reg(struct lite_export *ex, struct lite_export_keys *ks,
			   struct lite_conn *conn, int access)
{
	struct lite_mr_batch batch;
	u32 i, tries = 0;
	int ret;

	ks->mrs = kvcalloc(ex->n_chunks, sizeof(*ks->mrs), GFP_KERNEL);
	ks->rkeys = kvcalloc(ex->n_chunks, sizeof(*ks->rkeys), GFP_KERNEL);
	if (!ks->mrs || !ks->rkeys) {
		ret = -ENOMEM;
		goto err_free;
	}
	do {
		lite_mr_batch_init(&batch, conn->node, access);
		for (i = 0; i < ex->n_chunks; i++)
			if (lite_mr_batch_add(&batch, ex->chunks[i].dma,
					      ex->chunks[i].len, &ks->mrs[i],
					      &ks->rkeys[i]))
				break;
		ret = lite_mr_batch_wait(&batch, ks->mrs, ex->n_chunks);
	} while (lite_mr_try_again(ret, &tries));
	if (!ret)
		return 0;
err_free:
	kvfree(ks->rkeys);
	ks->rkeys = NULL;
	kvfree(ks->mrs);
	ks->mrs = NULL;
	return ret;
}

/* The owner's keys: reads and writes, atomics for an LMR of NIC atomics. */
static int lite_export_reg_own(struct lite_export *ex, struct lite_conn *conn)
{
	int access = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;

	if (ex->flags & LITE_WIRE_LMR_NIC_ATOMIC)
		access |= IB_ACCESS_REMOTE_ATOMIC;
	return lite_export_reg(ex, &ex->own, conn, access);
}

/* @job's memory, chunk by chunk; stops early if @job is cancelled. */
static struct lite_export *lite_export_alloc(struct lite_node *node,
					     const struct lite_alloc_job *job)
{
	u64 size = job->size, left = size;
	struct lite_export *ex;
	u32 cap;
	int ret;

	/* Worst case every chunk is one page; most are 4 MiB. */
	cap = DIV_ROUND_UP(size, PAGE_SIZE);
	ex = kzalloc(sizeof(*ex), GFP_KERNEL);
	if (!ex)
		return ERR_PTR(-ENOMEM);
	ex->chunks = kvcalloc(cap, sizeof(*ex->chunks), GFP_KERNEL);
	if (!ex->chunks) {
		kfree(ex);
		return ERR_PTR(-ENOMEM);
	}
	INIT_LIST_HEAD(&ex->keysets);
	ex->owner = job->owner;
	ex->alloc_req = job->req_id;
	ex->size = size;
	ex->flags = job->flags;
	ex->leased = job->lease;
	if (ex->leased) {
		atomic64_add(size, &node->stats.lease_bytes);
		atomic64_inc(&node->stats.lease_lmrs);
	} else {
		atomic64_add(size, &node->mem_bytes);
		atomic64_inc(&node->mem_lmrs);
	}
	while (left) {
		ret = lite_export_chunk(node, &ex->chunks[ex->n_chunks], left);
		if (ret)
			goto err;
		ex->chunks[ex->n_chunks].start = size - left;
		left -= ex->chunks[ex->n_chunks++].len;
		if (lite_alloc_job_stopped(job)) {
			ret = -ECANCELED;
			goto err;
		}
		cond_resched();
	}
	if (lite_isolated(node)) {
		ret = lite_export_reg_own(ex, job->conn);
		if (ret)
			goto err;
	}
	return ex;
err:
	lite_export_free(node, ex);
	return ERR_PTR(ret);
}

/* The key of chunk @i in @ks: the node's one key in global mode. */
static u32 lite_export_key(const struct lite_node *node,
			   const struct lite_export_keys *ks, u32 i)
{
	return ks->rkeys ? ks->rkeys[i] : node->rkey;
}

/*
 * Fill a chunk-list reply from chunk @start on, with the keys of @ks;
 * returns its length.
 */
static u32 lite_export_put_chunks(const struct lite_node *node,
				  const struct lite_export *ex,
				  const struct lite_export_keys *ks, u32 start,
				  struct lite_wire_chunks *w, u32 room)
{
	u32 n = min3(ex->n_chunks - start, (u32)LITE_WIRE_MAX_CHUNKS,
		     (room - (u32)sizeof(*w)) / (u32)sizeof(w->chunks[0]));
	u32 i;

	memset(w, 0, sizeof(*w));
	w->start = cpu_to_le32(start);
	w->count = cpu_to_le32(n);
	w->total = cpu_to_le32(ex->n_chunks);
	for (i = 0; i < n; i++) {
		w->chunks[i].addr = cpu_to_le64(ex->chunks[start + i].dma);
		w->chunks[i].len = cpu_to_le32(ex->chunks[start + i].len);
		w->chunks[i].rkey = cpu_to_le32(lite_export_key(node, ks,
								 start + i));
	}
	return sizeof(*w) + n * sizeof(w->chunks[0]);
}

/* Wire LMR ids: our nonce in the high half, so ids of a node that left
 * and came back as the same node id never match.
 */
static u64 lite_export_wire_id(const struct lite_node *node,
			       const struct lite_export *ex)
{
	return (u64)node->nonce << 32 | ex->id;
}

/* The export a wire id names; node->lock held. */
static struct lite_export *lite_export_find(struct lite_node *node, u64 id)
{
	lockdep_assert_held(&node->lock);
	if (id >> 32 != node->nonce)
		return NULL;
	return xa_load(&node->exports, (u32)id);
}

/* Whether anybody can take @job's export: 0, or why not. node->lock held. */
static int lite_alloc_job_verdict(struct lite_node *node,
				  const struct lite_alloc_job *job)
{
	lockdep_assert_held(&node->lock);
	if (job->cancelled)
		return -ECANCELED;	/* the requester gave up or left */
	if (node->dying)
		return -ESHUTDOWN;
	if (lite_conn_state(job->conn) == LITE_CONN_CLOSING)
		return -ECONNRESET;	/* the reply would be lost */
	return 0;
}

/*
 * Take @job off the list and publish its export @ex (or error pointer).
 * Return: 0, or why not; @ex is freed then.
 */
static int lite_alloc_job_end(struct lite_node *node,
			      struct lite_alloc_job *job,
			      struct lite_export *ex)
{
	int ret = PTR_ERR_OR_ZERO(ex);

	mutex_lock(&node->lock);
	list_del(&job->entry);
	if (!ret)
		ret = lite_alloc_job_verdict(node, job);
	if (!ret)
		ret = xa_alloc_cyclic_bh(&node->exports, &ex->id, ex,
					 xa_limit_32b, &node->next_export,
					 GFP_KERNEL);
	if (ret >= 0) {		/* 1: the ids wrapped around */
		ret = 0;
		ex->mappers[job->owner] = true;	/* it gets the chunks */
	}
	mutex_unlock(&node->lock);
	if (ret && !IS_ERR(ex)) {
		ex->id = 0;	/* never published */
		lite_export_free(node, ex);
	}
	return ret;
}

/* alloc_wq: allocate, publish and answer; the reply carries the first
 * chunks.
 */
static void lite_alloc_job_work(struct work_struct *work)
{
	struct lite_alloc_job *job = container_of(work, struct lite_alloc_job,
						  work);
	struct lite_msg req = { .type = LITE_MSG_LMR_ALLOC,
				.req_id = job->req_id };
	u32 room = LITE_MSG_MAX - sizeof(struct lite_wire_hdr);
	struct lite_conn *conn = job->conn;
	struct lite_node *node = conn->node;
	struct lite_wire_lmr *rep;
	struct lite_export *ex;
	u32 len = 0;
	int ret;

	rep = kmalloc(room, GFP_KERNEL);
	ex = rep ? lite_export_alloc(node, job) : ERR_PTR(-ENOMEM);
	ret = lite_alloc_job_end(node, job, ex);
	if (!ret) {
		memset(rep, 0, sizeof(*rep));
		rep->mr_id = cpu_to_le64(lite_export_wire_id(node, ex));
		rep->size = cpu_to_le64(ex->size);
		rep->flags = cpu_to_le32(ex->flags);
		len = offsetof(struct lite_wire_lmr, first) +
		      lite_export_put_chunks(node, ex, &ex->own, 0,
					     &rep->first, room -
					     offsetof(struct lite_wire_lmr,
						      first));
	}
	/* Also when cancelled: the requester's abandoned call ends on it. */
	lite_reply(conn, &req, ret, rep, len);
	kfree(rep);
	kfree(job);
	lite_conn_put(conn);
}

/**
 * lite_export_handle_alloc - LMR_ALLOC: register a job, run it on alloc_wq
 * @conn: the requester's connection
 * @msg: the request, handled in order on node->wq
 *
 * A size over LITE_LMR_MAX is refused with -EINVAL, NIC atomics on a
 * device without remote atomics with -EOPNOTSUPP. The job holds a
 * reference on @conn; it allocates the memory, publishes it and replies
 * with the first chunks, or with why not (also when it was cancelled).
 */
void lite_export_handle_alloc(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_lmr_alloc *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_alloc_job *job;
	u64 size = le64_to_cpu(req->size);
	u32 flags = le32_to_cpu(req->flags);	/* the wire checked them */

	if (size > LITE_LMR_MAX) {	/* the wire checked that it is not 0 */
		lite_reply(conn, msg, -EINVAL, NULL, 0);
		return;
	}
	if (flags & LITE_WIRE_LMR_NIC_ATOMIC && !node->nic_atomic) {
		lite_reply(conn, msg, -EOPNOTSUPP, NULL, 0);
		return;
	}
	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		return;
	}
	INIT_WORK(&job->work, lite_alloc_job_work);
	lite_conn_get(conn);
	job->conn = conn;
	job->owner = conn->peer_id;
	job->req_id = msg->req_id;
	job->size = size;
	job->flags = flags;
	job->lease = le32_to_cpu(req->how) & LITE_WIRE_ALLOC_LEASE;
	mutex_lock(&node->lock);
	list_add_tail(&job->entry, &node->alloc_jobs);
	mutex_unlock(&node->lock);
	queue_work(node->alloc_wq, &job->work);
}

/* @ex's keys of grant @grant, or NULL; node->lock held. */
static struct lite_export_keys *lite_export_keys_find(struct lite_node *node,
						      struct lite_export *ex,
						      u64 grant)
{
	struct lite_export_keys *ks;

	lockdep_assert_held(&node->lock);
	list_for_each_entry(ks, &ex->keysets, entry)
		if (ks->grant == grant)
			return ks;
	return NULL;
}

/* The rights of a grant (LITE_PERM_*) as IB_ACCESS_REMOTE_* for @ex. */
static int lite_export_grant_access(const struct lite_export *ex, u32 perms)
{
	int access = 0;

	if (perms & LITE_PERM_READ)
		access |= IB_ACCESS_REMOTE_READ;
	if (perms & LITE_PERM_WRITE)
		access |= IB_ACCESS_REMOTE_WRITE;
	if (perms & LITE_PERM_ATOMIC && ex->flags & LITE_WIRE_LMR_NIC_ATOMIC)
		access |= IB_ACCESS_REMOTE_ATOMIC;
	return access;
}

/*
 * lmr mode: the keys a fetch from @conn with grant @grant gets: the
 * owner's for grant 0 (the owner only), else the grant's, registered at
 * its first fetch. node->lock held, and dropped while registering; @ex and
 * the grant stay (reap waits while ex->keying is set, and every other
 * path that frees either runs on node->wq, as we do).
 * Return: 0 with *@out set; -EPERM for grant 0 from another node,
 * -EKEYREVOKED for no such grant (never made, or withdrawn), or the
 * registration's error.
 */
static int lite_export_keys_get(struct lite_node *node, struct lite_export *ex,
				u64 grant, struct lite_conn *conn,
				struct lite_export_keys **out)
{
	struct lite_export_keys *ks, made = {};
	int ret;

	lockdep_assert_held(&node->lock);
	if (!grant) {
		*out = &ex->own;
		return conn->peer_id == ex->owner ? 0 : -EPERM;
	}
	ks = lite_export_keys_find(node, ex, grant);
	if (!ks)
		return -EKEYREVOKED;
	*out = ks;
	if (ks->mrs)
		return 0;
	/* Registered aside: readers of ks (debugfs) see all keys or none. */
	ex->keying++;
	mutex_unlock(&node->lock);
	ret = lite_export_reg(ex, &made, conn,
			      lite_export_grant_access(ex, ks->perms));
	mutex_lock(&node->lock);
	ex->keying--;
	ks->mrs = made.mrs;
	ks->rkeys = made.rkeys;
	return ret;
}

/**
 * lite_export_handle_chunks - LMR_CHUNKS: send part of an LMR's chunk list
 * @conn: the requester's connection
 * @msg: the request: the LMR's wire id, the first chunk wanted, and the
 *	 grant of the name the requester maps it through (0: its owner)
 *
 * Replies with as many chunks from there on as fit, with the keys of the
 * grant (lmr mode; registered at its first fetch) or the owner's, or
 * -ENOENT for an LMR we do not hold, -ERANGE for a start past the last
 * chunk, -EPERM for the owner's keys asked by another node, -EKEYREVOKED
 * for a grant withdrawn (or never made), -ENOMEM, or the error of a
 * registration. The requester is noted as a mapper, to be invalidated
 * before the memory goes. Runs in order on node->wq; takes node->lock.
 */
void lite_export_handle_chunks(struct lite_conn *conn,
			       const struct lite_msg *msg)
{
	const struct lite_wire_lmr_ref *req = msg->payload;
	struct lite_node *node = conn->node;
	u32 room = LITE_MSG_MAX - sizeof(struct lite_wire_hdr);
	u32 start = le32_to_cpu(req->start), len = 0;
	struct lite_export_keys *ks;
	struct lite_wire_chunks *rep;
	struct lite_export *ex;
	u64 id = le64_to_cpu(req->mr_id);
	int ret = 0;

	rep = kmalloc(room, GFP_KERNEL);
	if (!rep) {
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		return;
	}
	mutex_lock(&node->lock);
	ex = lite_export_find(node, id);
	ks = ex ? &ex->own : NULL;
	if (!ex)
		ret = -ENOENT;
	else if (start >= ex->n_chunks)
		ret = -ERANGE;
	else if (lite_isolated(node))
		ret = lite_export_keys_get(node, ex, le64_to_cpu(req->grant),
					   conn, &ks);
	/* Its owner left while we registered: no new mapper. */
	if (!ret && lite_export_find(node, id) != ex)
		ret = -ENOENT;
	if (!ret) {
		/* Whoever has the chunks is invalidated before they go. */
		ex->mappers[conn->peer_id] = true;
		len = lite_export_put_chunks(node, ex, ks, start, rep, room);
	}
	mutex_unlock(&node->lock);
	lite_reply(conn, msg, ret, rep, len);
	kfree(rep);
}

/**
 * lite_export_handle_grant - LMR_GRANT: the owner is about to publish a name
 * @conn: the owner's connection
 * @msg: the request: the LMR's wire id, the grant id, the name's rights
 *
 * In lmr mode the grant is noted: fetches with its id get keys of their
 * own, with its rights (registered at the first fetch). Replies 0,
 * -EOPNOTSUPP in global mode (one key for everything: the name needs no
 * grant), -ENOENT for an LMR we do not hold, -EPERM if the sender is not
 * its owner, -EEXIST for a grant id in use, -ENOSPC with
 * LITE_EXPORT_KEYSETS_MAX grants already, -ENOMEM. Runs in order on
 * node->wq; takes node->lock.
 */
void lite_export_handle_grant(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_lmr_ref *req = msg->payload;
	u64 grant = le64_to_cpu(req->grant);
	struct lite_node *node = conn->node;
	struct lite_export_keys *ks;
	struct lite_export *ex;
	int ret = 0;

	if (!lite_isolated(node)) {	/* one key for everything */
		lite_reply(conn, msg, -EOPNOTSUPP, NULL, 0);
		return;
	}
	ks = kzalloc(sizeof(*ks), GFP_KERNEL);
	mutex_lock(&node->lock);
	ex = lite_export_find(node, le64_to_cpu(req->mr_id));
	if (!ks)
		ret = -ENOMEM;
	else if (!ex)
		ret = -ENOENT;
	else if (ex->owner != conn->peer_id)
		ret = -EPERM;	/* only the node that allocated it */
	else if (lite_export_keys_find(node, ex, grant))
		ret = -EEXIST;
	else if (ex->n_keysets >= LITE_EXPORT_KEYSETS_MAX)
		ret = -ENOSPC;
	if (!ret) {
		ks->grant = grant;
		ks->perms = le32_to_cpu(req->perms);
		list_add_tail(&ks->entry, &ex->keysets);
		ex->n_keysets++;
		ks = NULL;
	}
	mutex_unlock(&node->lock);
	kfree(ks);
	lite_reply(conn, msg, ret, NULL, 0);
}

/**
 * lite_export_handle_unkey - LMR_UNKEY: a name of an LMR was withdrawn
 * @conn: the owner's connection
 * @msg: the request: the LMR's wire id and the name's grant
 *
 * The owner sends it once every mapping made through the name is dropped.
 * The grant's keys are invalidated before the reply (IB_WR_LOCAL_INV;
 * their MRs go back to the pool with fresh keys) and the grant is
 * forgotten: a later fetch with it is refused. The owner's keys and other
 * grants' stay. Replies 0 (also for a grant we do not know: nothing
 * reaches the LMR through it), -ENOENT for an LMR we do not hold, or
 * -EPERM if the sender is not its owner. Runs in order on node->wq;
 * sleeps.
 */
void lite_export_handle_unkey(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_lmr_ref *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_export_keys *ks = NULL;
	struct lite_export *ex;
	int ret = 0;

	mutex_lock(&node->lock);
	ex = lite_export_find(node, le64_to_cpu(req->mr_id));
	if (!ex)
		ret = -ENOENT;
	else if (ex->owner != conn->peer_id)
		ret = -EPERM;	/* only the node that allocated it */
	else if (lite_isolated(node))
		ks = lite_export_keys_find(node, ex, le64_to_cpu(req->grant));
	if (ks) {
		list_del(&ks->entry);
		ex->n_keysets--;
		ex->keying++;
	}
	mutex_unlock(&node->lock);
	if (ks) {
		lite_export_keys_drop(node, ex, ks);
		kfree(ks);
		mutex_lock(&node->lock);
		ex->keying--;
		mutex_unlock(&node->lock);
	}
	lite_reply(conn, msg, ret, NULL, 0);
}

static bool lite_node_qp_to(struct lite_node *node, u16 id);

/*
 * Tell every node that fetched @ex's chunks to drop its mappings, and wait
 * (bounded) for them: the pages must not be reused under a live mapping. A
 * mapper is struck off once it confirmed, or once it is no member and its
 * QP to us is gone. One that is reconnecting, or did not confirm in time
 * (and was disconnected), stays: it may come back with the old mapping.
 * Return: true if no mapper is left, so the pages may be freed.
 */
static bool lite_export_invalidate(struct lite_node *node,
				   struct lite_export *ex)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(LITE_INVALIDATE_MS);
	struct lite_wire_invalidate inv = {};
	bool mapped, left = false;
	u16 id;

	inv.mr_id = cpu_to_le64(lite_export_wire_id(node, ex));
	inv.mem_node = cpu_to_le16(READ_ONCE(node->self_id));
	for (id = 1; id <= LITE_MAX_NODES; id++) {
		mutex_lock(&node->lock);
		mapped = ex->mappers[id];
		if (mapped && !lite_mbr_present(&node->mb, id) &&
		    !lite_node_qp_to(node, id))
			mapped = ex->mappers[id] = false;	/* gone */
		mutex_unlock(&node->lock);
		if (!mapped)
			continue;
		if (lite_invalidate_on(node, id, &inv, deadline)) {
			left = true;
			continue;
		}
		mutex_lock(&node->lock);
		ex->mappers[id] = false;
		mutex_unlock(&node->lock);
	}
	return !left;
}

/* Keep @ex's pages until its mappers dropped it (reap_work retries). */
static void lite_export_orphan(struct lite_node *node, struct lite_export *ex)
{
	mutex_lock(&node->lock);
	ex->freed = true;
	list_add_tail(&ex->orphan, &node->orphans);
	mutex_unlock(&node->lock);
	mod_delayed_work(node->close_wq, &node->reap_work, HZ);
}

/* Free an unpublished @ex once no mapper can reach it, or leave it to reap. */
static void lite_export_retire(struct lite_node *node, struct lite_export *ex)
{
	if (lite_export_invalidate(node, ex))
		lite_export_free(node, ex);
	else
		lite_export_orphan(node, ex);
}

/**
 * lite_export_handle_free - LMR_FREE: the owner frees an LMR
 * @conn: the requester's connection
 * @msg: the request: the LMR's wire id
 *
 * Only the node that allocated it may free it. Every mapper is told to
 * drop its mappings first (but the owner, if it says it has none: it
 * never published the LMR), waiting a bounded time; the pages are freed
 * then, or once the mappers that did not confirm are gone (reap_work).
 * Replies 0, -ENOENT for an LMR we do not hold, or -EPERM. Runs in order
 * on node->wq; sleeps.
 */
void lite_export_handle_free(struct lite_conn *conn,
			     const struct lite_msg *msg)
{
	const struct lite_wire_lmr_ref *req = msg->payload;
	struct lite_node *node = conn->node;
	u64 id = le64_to_cpu(req->mr_id);
	struct lite_export *ex;
	int ret = 0;

	mutex_lock(&node->lock);
	ex = lite_export_find(node, id);
	if (!ex)
		ret = -ENOENT;
	else if (ex->owner != conn->peer_id)
		ret = -EPERM;	/* only the node that allocated frees */
	else
		xa_erase_bh(&node->exports, ex->id);
	/* Never published: the owner has no mapping left to drop. */
	if (!ret && le32_to_cpu(req->flags) & LITE_WIRE_FREE_UNMAPPED)
		ex->mappers[conn->peer_id] = false;
	mutex_unlock(&node->lock);
	if (!ret) {
		lite_export_drop_grants(node, ex);
		lite_export_retire(node, ex);
	}
	lite_reply(conn, msg, ret, NULL, 0);
}

/*
 * Cancel @owner's allocation @req_id if it is still running: it frees what
 * it made. Return: whether it was. node->lock held.
 */
static bool lite_alloc_job_cancel(struct lite_node *node, u16 owner,
				  u32 req_id)
{
	struct lite_alloc_job *job;

	lockdep_assert_held(&node->lock);
	list_for_each_entry(job, &node->alloc_jobs, entry) {
		if (job->owner == owner && job->req_id == req_id) {
			job->cancelled = true;
			return true;
		}
	}
	return false;
}

/* Unpublish the export @owner's LMR_ALLOC @req_id made; node->lock held. */
static struct lite_export *lite_export_take_alloc(struct lite_node *node,
						  u16 owner, u32 req_id)
{
	struct lite_export *ex;
	unsigned long id;

	lockdep_assert_held(&node->lock);
	xa_for_each(&node->exports, id, ex) {
		if (ex->owner == owner && ex->alloc_req == req_id) {
			xa_erase_bh(&node->exports, id);
			return ex;
		}
	}
	return NULL;
}

/**
 * lite_export_handle_cancel - LMR_CANCEL: the sender gave up an LMR_ALLOC
 * @conn: the sender's connection
 * @msg: the one-way message: the request id of its LMR_ALLOC
 *
 * Stop the job, or free the LMR it made: the sender ignores (or has lost)
 * the reply, so nobody else knows it. Either may have happened already (a
 * FREE after a late reply, say): then there is nothing to do. Runs in
 * order on node->wq, after the LMR_ALLOC; may sleep.
 */
void lite_export_handle_cancel(struct lite_conn *conn,
			       const struct lite_msg *msg)
{
	const struct lite_wire_lmr_cancel *req = msg->payload;
	u32 req_id = le32_to_cpu(req->req_id);
	struct lite_node *node = conn->node;
	struct lite_export *ex = NULL;

	mutex_lock(&node->lock);
	if (!lite_alloc_job_cancel(node, conn->peer_id, req_id))
		ex = lite_export_take_alloc(node, conn->peer_id, req_id);
	mutex_unlock(&node->lock);
	if (ex)
		lite_export_retire(node, ex);
}

/* The chunk holding byte @off of @ex; *@off becomes the offset in it. */
static struct lite_export_chunk *lite_export_at(struct lite_export *ex,
						u64 *off)
{
	u32 lo = 0, hi = ex->n_chunks - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (ex->chunks[mid].start <= *off)
			lo = mid;
		else
			hi = mid - 1;
	}
	*off -= ex->chunks[lo].start;
	return &ex->chunks[lo];
}

/**
 * lite_export_word - an 8-byte word of an LMR this node holds
 * @node: our node; node->lock held
 * @mr_id: the export's wire id
 * @off: the word's offset in the LMR
 * @err: set on failure
 *
 * For locks and barriers (sync.c).
 *
 * Return: the word, valid while node->lock is held, or NULL with *@err
 * set to -EKEYREVOKED (no such LMR, or freed), -EOPNOTSUPP (its words are
 * the NIC's) or -ERANGE.
 */
atomic64_t *lite_export_word(struct lite_node *node, u64 mr_id, u64 off,
			     int *err)
{
	struct lite_export_chunk *c;
	struct lite_export *ex;

	lockdep_assert_held(&node->lock);
	ex = lite_export_find(node, mr_id);
	if (!ex) {
		*err = -EKEYREVOKED;
		return NULL;
	}
	if (ex->flags & LITE_WIRE_LMR_NIC_ATOMIC) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	if (off >= ex->size || ex->size - off < 8) {
		*err = -ERANGE;
		return NULL;
	}
	c = lite_export_at(ex, &off);
	return page_address(c->page) + off;
}

/**
 * lite_export_atomic - ATOMIC: fetch-and-add or compare-and-swap a word
 * @conn: the requester's connection
 * @msg: the request: LMR wire id, offset, operation and operands
 *
 * Runs on this node's CPU against its own memory, in CQ context (softirq
 * included: never sleeps). The requester checked rights and bounds; we
 * check the LMR and the range again. The exports' xarray lock keeps the
 * export alive: it is freed only after it was erased. Replies with the
 * old value, or -ENOENT, -EOPNOTSUPP (an LMR of NIC atomics: the CPU must
 * not change its words) or -ERANGE.
 */
void lite_export_atomic(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_atomic *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_wire_atomic_result rep = {};
	u64 id = le64_to_cpu(req->mr_id), off = le64_to_cpu(req->offset);
	struct lite_export_chunk *c = NULL;
	struct lite_export *ex;
	atomic64_t *word;
	int ret = 0;

	xa_lock_bh(&node->exports);
	ex = id >> 32 == node->nonce ? xa_load(&node->exports, (u32)id) : NULL;
	if (!ex)
		ret = -ENOENT;
	else if (ex->flags & LITE_WIRE_LMR_NIC_ATOMIC)
		ret = -EOPNOTSUPP;
	else if (off >= ex->size || ex->size - off < 8)
		ret = -ERANGE;
	else
		c = lite_export_at(ex, &off);
	if (c) {
		word = page_address(c->page) + off;
		if (req->op == LITE_ATOMIC_FETCH_ADD)
			rep.value = cpu_to_le64(atomic64_fetch_add(
				le64_to_cpu(req->operand), word));
		else
			rep.value = cpu_to_le64(atomic64_cmpxchg(word,
				le64_to_cpu(req->operand),
				le64_to_cpu(req->swap)));
	}
	xa_unlock_bh(&node->exports);
	lite_reply(conn, msg, ret, &rep, sizeof(rep));
}

/**
 * lite_exports_drop_owner - the node that allocated these is gone
 * @node: our node; node->lock held
 * @owner: the node that left or was lost
 *
 * Its allocations in progress end freed, never published; what it held
 * here is reaped after its mappers dropped their mappings (reap_work).
 */
void lite_exports_drop_owner(struct lite_node *node, u16 owner)
{
	struct lite_alloc_job *job;
	struct lite_export *ex;
	unsigned long id;

	lockdep_assert_held(&node->lock);
	/* Its allocations in progress end freed, never published. */
	list_for_each_entry(job, &node->alloc_jobs, entry)
		if (job->owner == owner)
			job->cancelled = true;
	xa_for_each(&node->exports, id, ex) {
		if (ex->owner != owner)
			continue;
		xa_erase_bh(&node->exports, id);
		list_add_tail(&ex->orphan, &node->orphans);
	}
	if (!list_empty(&node->orphans))
		mod_delayed_work(node->close_wq, &node->reap_work, 0);
}

/* Whether a QP to node @id still exists; node->lock held. */
static bool lite_node_qp_to(struct lite_node *node, u16 id)
{
	struct lite_conn *conn;

	list_for_each_entry(conn, &node->conns, node_entry)
		if (conn->peer_id == id && !conn->qp_gone)
			return true;
	return false;
}

/**
 * lite_exports_reap - free orphaned exports
 * @work: node->reap_work, on node->close_wq
 *
 * Each is freed once its owner freed it or its owner's QP to us is
 * destroyed (its in-flight writes can no longer land), and every mapper
 * dropped it. One pass over what is ready now; the rest waits and the
 * work is queued again.
 */
void lite_exports_reap(struct work_struct *work)
{
	struct lite_node *node = container_of(to_delayed_work(work),
					      struct lite_node, reap_work);
	struct lite_export *ex, *tmp;
	unsigned long delay = 0;
	LIST_HEAD(ready);

	mutex_lock(&node->lock);
	list_for_each_entry_safe(ex, tmp, &node->orphans, orphan) {
		if (!ex->keying &&
		    (ex->freed || !lite_node_qp_to(node, ex->owner)))
			list_move_tail(&ex->orphan, &ready);
		else
			delay = HZ / 10;	/* close_work kicks us too */
	}
	mutex_unlock(&node->lock);

	list_for_each_entry_safe(ex, tmp, &ready, orphan) {
		list_del(&ex->orphan);
		if (lite_export_invalidate(node, ex)) {
			lite_export_free(node, ex);
			continue;
		}
		mutex_lock(&node->lock);	/* a mapper must confirm first */
		list_add_tail(&ex->orphan, &node->orphans);
		mutex_unlock(&node->lock);
		delay = HZ;	/* reconnects kick us earlier */
	}
	if (delay)
		mod_delayed_work(node->close_wq, &node->reap_work, delay);
}

/**
 * lite_exports_conn_closed - a connection's QP is gone
 * @conn: the connection, from its close_work
 *
 * Exports its peer held may be reapable now.
 */
void lite_exports_conn_closed(struct lite_conn *conn)
{
	if (conn->peer_id)
		mod_delayed_work(conn->node->close_wq, &conn->node->reap_work,
				 0);
}

/**
 * lite_exports_conn_ready - a member is connected (again)
 * @conn: its connection; node->lock held
 *
 * Invalidations it did not confirm before are tried again now.
 */
void lite_exports_conn_ready(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;

	lockdep_assert_held(&node->lock);
	if (!list_empty(&node->orphans))
		mod_delayed_work(node->close_wq, &node->reap_work, 0);
}

/**
 * lite_exports_free_all - free everything a node going down holds
 * @node: the node; no connection is left
 */
void lite_exports_free_all(struct lite_node *node)
{
	struct lite_export *ex, *tmp;
	unsigned long id;

	xa_for_each(&node->exports, id, ex) {
		xa_erase_bh(&node->exports, id);
		lite_export_free(node, ex);
	}
	list_for_each_entry_safe(ex, tmp, &node->orphans, orphan)
		lite_export_free(node, ex);
	INIT_LIST_HEAD(&node->orphans);
	xa_destroy(&node->exports);
}

/* One line per chunk of @ex with the keys of @ks (registered). */
static void lite_export_show_keys(struct seq_file *m, struct lite_node *node,
				  struct lite_export *ex,
				  const struct lite_export_keys *ks)
{
	u32 i;

	for (i = 0; i < ex->n_chunks; i++)
		seq_printf(m, "%#llx %u %llu %#x %u %#llx %u %#x %#llx\n",
			   lite_export_wire_id(node, ex), ex->owner, ex->size,
			   ex->flags, i, ex->chunks[i].dma, ex->chunks[i].len,
			   lite_export_key(node, ks, i), ks->grant);
}

/**
 * lite_exports_show - list the node's exports (debugfs "exports")
 * @m: the file
 * @node: the node
 *
 * One line per chunk and holder of keys: the LMR's wire id, its owner,
 * size and flags, the chunk's index, address, length and key, and the
 * grant the key is for (0: the owner's). A grant no node fetched with yet
 * has no keys to list.
 *
 * Return: 0.
 */
int lite_exports_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_export_keys *ks;
	struct lite_export *ex;
	unsigned long id;

	mutex_lock(&node->lock);
	xa_for_each(&node->exports, id, ex) {
		lite_export_show_keys(m, node, ex, &ex->own);
		list_for_each_entry(ks, &ex->keysets, entry)
			if (ks->rkeys)
				lite_export_show_keys(m, node, ex, ks);
	}
	mutex_unlock(&node->lock);
	return 0;
}
