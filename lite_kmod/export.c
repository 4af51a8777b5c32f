// SPDX-License-Identifier: GPL-2.0
/*
 * The memory node's side of LMRs: allocating zeroed, DMA-mapped chunks of
 * linear-map memory for a node that asked, handing out their DMA addresses,
 * and freeing them again - only after every node that fetched them has
 * dropped its mappings.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>

#include "internal.h"

/* Largest chunk: the buddy allocator's biggest block (4 MiB on x86-64). */
#define LITE_CHUNK_ORDER_MAX	(MAX_ORDER - 1)

static void lite_export_free(struct lite_node *node, struct lite_export *ex)
{
	struct ib_device *dev = node->ibdev->dev;
	u32 i;

	if (ex->id)	/* it was published: waiters on its words fail */
		lite_sync_drop_export(node, (u64)node->nonce << 32 | ex->id);

	for (i = 0; i < ex->n_chunks; i++) {
		if (!ex->chunks[i].page)
			break;
		ib_dma_unmap_page(dev, ex->chunks[i].dma,
				  PAGE_SIZE << ex->chunks[i].order,
				  DMA_BIDIRECTIONAL);
		__free_pages(ex->chunks[i].page, ex->chunks[i].order);
	}
	atomic64_sub(ex->size, &node->mem_bytes);
	atomic64_dec(&node->mem_lmrs);
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

static struct lite_export *lite_export_alloc(struct lite_node *node,
					     u16 owner, u64 size)
{
	struct lite_export *ex;
	u64 left = size;
	u32 cap;
	int ret;

	if (!size || size > LITE_LMR_MAX)
		return ERR_PTR(-EINVAL);
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
	ex->owner = owner;
	ex->size = size;
	atomic64_add(size, &node->mem_bytes);
	atomic64_inc(&node->mem_lmrs);
	while (left) {
		ret = lite_export_chunk(node, &ex->chunks[ex->n_chunks], left);
		if (ret)
			goto err;
		ex->chunks[ex->n_chunks].start = size - left;
		left -= ex->chunks[ex->n_chunks++].len;
		cond_resched();
	}
	return ex;
err:
	lite_export_free(node, ex);
	return ERR_PTR(ret);
}

/* Fill a chunk-list reply from chunk @start on; returns its length. */
static u32 lite_export_put_chunks(const struct lite_export *ex, u32 start,
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
		w->chunks[i].reserved = 0;
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

void lite_export_handle_alloc(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_lmr_alloc *req = msg->payload;
	struct lite_node *node = conn->node;
	u32 room = LITE_MSG_MAX - sizeof(struct lite_wire_hdr);
	struct lite_wire_lmr *rep;
	struct lite_export *ex;
	u32 len = 0;
	int ret;

	rep = kmalloc(room, GFP_KERNEL);
	if (!rep) {
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		return;
	}
	ex = lite_export_alloc(node, conn->peer_id, le64_to_cpu(req->size));
	ret = PTR_ERR_OR_ZERO(ex);
	if (!ret) {
		mutex_lock(&node->lock);
		ex->mappers[conn->peer_id] = true;	/* has the chunks */
		ret = node->dying ? -ESHUTDOWN :
		      xa_alloc_cyclic_bh(&node->exports, &ex->id, ex,
					 xa_limit_32b, &node->next_export,
					 GFP_KERNEL);
		mutex_unlock(&node->lock);
		if (ret < 0)
			lite_export_free(node, ex);
		else
			ret = 0;
	}
	if (!ret) {
		memset(rep, 0, sizeof(*rep));
		rep->mr_id = cpu_to_le64(lite_export_wire_id(node, ex));
		rep->size = cpu_to_le64(ex->size);
		rep->rkey = cpu_to_le32(node->rkey);
		len = offsetof(struct lite_wire_lmr, first) +
		      lite_export_put_chunks(ex, 0, &rep->first, room -
					     offsetof(struct lite_wire_lmr,
						      first));
	}
	lite_reply(conn, msg, ret, rep, len);
	kfree(rep);
}

void lite_export_handle_chunks(struct lite_conn *conn,
			       const struct lite_msg *msg)
{
	const struct lite_wire_lmr_ref *req = msg->payload;
	struct lite_node *node = conn->node;
	u32 room = LITE_MSG_MAX - sizeof(struct lite_wire_hdr);
	u32 start = le32_to_cpu(req->start), len = 0;
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
	if (!ex)
		ret = -ENOENT;
	else if (start >= ex->n_chunks)
		ret = -ERANGE;
	if (!ret) {
		/* Whoever has the chunks is invalidated before they go. */
		ex->mappers[conn->peer_id] = true;
		len = lite_export_put_chunks(ex, start, rep, room);
	}
	mutex_unlock(&node->lock);
	lite_reply(conn, msg, ret, rep, len);
	kfree(rep);
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
	mutex_unlock(&node->lock);
	if (!ret) {
		if (lite_export_invalidate(node, ex))
			lite_export_free(node, ex);
		else
			lite_export_orphan(node, ex);
	}
	lite_reply(conn, msg, ret, NULL, 0);
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

/*
 * The 8-byte word at @off of the export wire id @mr_id names, for locks and
 * barriers (sync.c); node->lock held. Return: the word, or NULL with *@err.
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
	if (off >= ex->size || ex->size - off < 8) {
		*err = -ERANGE;
		return NULL;
	}
	c = lite_export_at(ex, &off);
	return page_address(c->page) + off;
}

/*
 * ATOMIC: run on this node's CPU against its own memory, in CQ context
 * (softirq included: never sleeps). The requester checked rights and
 * bounds; we check the LMR and the range again. The exports' xarray lock
 * keeps the export alive: it is freed only after it was erased.
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

/* LMR requests from a READY connection; node workqueue context. */
/*
 * The node that allocated these is gone: reap what it held here, after its
 * mappers dropped their mappings (reap_work). node->lock held.
 */
void lite_exports_drop_owner(struct lite_node *node, u16 owner)
{
	struct lite_export *ex;
	unsigned long id;

	lockdep_assert_held(&node->lock);
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

/*
 * Free orphaned exports, each once its owner freed it or its owner's QP to
 * us is destroyed (its in-flight writes can no longer land), and every
 * mapper dropped it. One pass over what is ready now; the rest waits.
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
		if (ex->freed || !lite_node_qp_to(node, ex->owner))
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

/* The node goes down (no connections left): free everything it holds. */
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
