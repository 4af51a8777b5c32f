// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel buffers that RDMA moves data through.
 *
 * Buffers that peers write into: RPC rings and reply buffers. Zeroed pages
 * in physically contiguous, DMA-mapped chunks as large as the buddy
 * allocator gives (smaller when memory is fragmented), described as a
 * lite_layout so writers can split accesses by chunk; each chunk carries
 * the node's key for it (mr.c: in lmr mode a registration of its own,
 * remote write only).
 *
 * Bounce buffers that a one-sided copy, an atomic's result or an RPC
 * entry on its way passes through: LITE_BOUNCE_SIZE bytes, mapped
 * (bidirectional) once; a node keeps up to LITE_STAGE_CACHE of them, so a
 * small operation allocates and maps nothing. (The header of an RPC
 * entry sent from user pages in place is an exact-size lite_bounce_map()
 * instead.)
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/uaccess.h>

#include "internal.h"

#define LITE_KBUF_ORDER_MAX	(MAX_ORDER - 1)

/* lmr mode: a buffer's release, taken to process context. */
struct lite_kbuf_rel {
	struct work_struct work;	/* on lite_wq */
	struct lite_kbuf b;		/* what is released */
};

/*
 * Free what @b holds: its chunks' keys first (in lmr mode; @recycle: see
 * lite_mr_release()), then its chunks (also those of a half-built buffer)
 * and arrays. Sleeps if @b has keys.
 */
static void lite_kbuf_release(struct lite_kbuf *b, bool recycle)
{
	u32 i;

	if (b->mrs) {
		lite_mr_release(b->node, b->mrs, b->n_chunks, recycle);
		kfree(b->mrs);
	}
	for (i = 0; i < b->n_chunks; i++) {
		if (b->dev)	/* else lite_kbuf_unmap() did */
			ib_dma_unmap_page(b->dev, b->chunks[i].addr,
					  PAGE_SIZE << b->orders[i],
					  DMA_BIDIRECTIONAL);
		__free_pages(b->pages[i], b->orders[i]);
	}
	kfree(b->pages);
	kfree(b->orders);
	kfree(b->chunks);
	kfree(b->rel);
	memset(b, 0, sizeof(*b));
}

static void lite_kbuf_rel_work(struct work_struct *work)
{
	struct lite_kbuf_rel *rel = container_of(work, struct lite_kbuf_rel,
						 work);
	struct lite_node *node = rel->b.node;

	lite_kbuf_release(&rel->b, true);
	kfree(rel);
	if (atomic_dec_and_test(&node->kbufs_dying))
		wake_up(&node->conns_wq);
	lite_node_put(node);
}

/**
 * lite_kbuf_free - unmap and free a kernel buffer
 * @b: the buffer; all zero afterwards
 *
 * Frees whatever chunks @b has (also those of a half-built buffer) and
 * its arrays. The peer must no longer be able to write into it through
 * its connection. In lmr mode the chunks' keys must be invalidated first,
 * which sleeps: that and the rest of the release move to a work item (the
 * node waits for it before it goes, lite_node_destroy()). Any context but
 * hard irq.
 */
void lite_kbuf_free(struct lite_kbuf *b)
{
	struct lite_kbuf_rel *rel = b->rel;

	if (!b->mrs) {
		lite_kbuf_release(b, false);	/* nothing that sleeps */
		return;
	}
	rel->b = *b;
	rel->b.rel = NULL;
	lite_node_get(b->node);
	atomic_inc(&b->node->kbufs_dying);
	INIT_WORK(&rel->work, lite_kbuf_rel_work);
	queue_work(lite_wq, &rel->work);
	memset(b, 0, sizeof(*b));
}

/**
 * lite_kbuf_unmap - let a kernel buffer outlive its device
 * @b: the buffer; its pages stay, and lite_kbuf_free() frees them
 *
 * For a buffer whose device goes while its bytes are still wanted: the
 * chunks' keys are released (lmr mode) and the chunks unmapped. Nothing
 * can write them after (the QPs are gone), and whoever reads them synced
 * them for the CPU first (lite_kbuf_sync_for_cpu()), so the unmap skips
 * that sync: a reader may be copying them meanwhile. Afterwards @b->dev is
 * NULL and no function here touches a device for @b. Sleeps.
 */
void lite_kbuf_unmap(struct lite_kbuf *b)
{
	struct ib_device *dev = b->dev;
	u32 i;

	if (b->mrs) {
		lite_mr_release(b->node, b->mrs, b->n_chunks, false);
		kfree(b->mrs);
		b->mrs = NULL;
	}
	b->dev = NULL;
	if (ib_uses_virt_dma(dev))
		return;		/* nothing was mapped */
	for (i = 0; i < b->n_chunks; i++)
		dma_unmap_page_attrs(dev->dma_device, b->chunks[i].addr,
				     PAGE_SIZE << b->orders[i],
				     DMA_BIDIRECTIONAL,
				     DMA_ATTR_SKIP_CPU_SYNC);
}

/* One chunk of up to @want bytes, at least 1 << @min_order pages. */
static int lite_kbuf_chunk(struct lite_kbuf *b, u64 want,
			   unsigned int min_order)
{
	unsigned int order = min_t(unsigned int, get_order(want),
				   LITE_KBUF_ORDER_MAX);
	struct lite_chunk *c = &b->chunks[b->n_chunks];
	struct page *page;
	u64 dma;

	min_order = min(min_order, order);
	for (;; order--) {
		page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
				   (order > min_order ? __GFP_NORETRY : 0),
				   order);
		if (page) {
			/* A bounce-buffered DMA layer may map less at once. */
			dma = ib_dma_map_page(b->dev, page, 0,
					      PAGE_SIZE << order,
					      DMA_BIDIRECTIONAL);
			if (!ib_dma_mapping_error(b->dev, dma))
				break;
			__free_pages(page, order);
		}
		if (order == min_order)
			return -ENOMEM;
	}
	b->pages[b->n_chunks] = page;
	b->orders[b->n_chunks] = order;
	c->addr = dma;
	c->rkey = b->node->rkey;	/* global mode; else lite_kbuf_reg() */
	c->start = b->size - want;
	c->len = min_t(u64, want, PAGE_SIZE << order);
	b->n_chunks++;
	return 0;
}

/* lmr mode: register every chunk for remote writes. */
static int lite_kbuf_reg(struct lite_kbuf *b)
{
	struct lite_mr_batch batch;
	u32 i, tries = 0;
	int ret;

	b->rel = kzalloc(sizeof(*b->rel), GFP_KERNEL);
	b->mrs = kcalloc(b->n_chunks, sizeof(*b->mrs), GFP_KERNEL);
	if (!b->rel || !b->mrs) {
		kfree(b->mrs);
		b->mrs = NULL;
		return -ENOMEM;	/* lite_kbuf_free() frees @b->rel */
	}
	do {
		lite_mr_batch_init(&batch, b->node, IB_ACCESS_REMOTE_WRITE);
		for (i = 0; i < b->n_chunks; i++)
			if (lite_mr_batch_add(&batch, b->chunks[i].addr,
					      b->chunks[i].len, &b->mrs[i],
					      &b->chunks[i].rkey))
				break;
		ret = lite_mr_batch_wait(&batch, b->mrs, b->n_chunks);
	} while (lite_mr_try_again(ret, &tries));
	if (ret) {
		kfree(b->mrs);
		b->mrs = NULL;
	}
	return ret;
}

/**
 * lite_kbuf_alloc - @size zeroed bytes in at most @max_chunks chunks
 * @b: the buffer to set up; on failure it is left all zero
 * @conn: the connection of the peer that will write into it (its node's
 *	  device maps the chunks and, in lmr mode, registers them)
 * @size: bytes wanted
 * @max_chunks: most chunks the layout may have (at least 1)
 *
 * Chunks are as large as the buddy allocator gives, but never so small
 * that @max_chunks of them could not cover @size. @b->layout describes
 * them, each with the key the peer writes it with. May sleep.
 *
 * Return: 0, -ENOMEM, or in lmr mode the error of a registration.
 */
int lite_kbuf_alloc(struct lite_kbuf *b, struct lite_conn *conn, u64 size,
		    u32 max_chunks)
{
	unsigned int min_order;
	u64 left = size;
	int ret;

	memset(b, 0, sizeof(*b));
	b->node = conn->node;
	b->dev = conn->node->ibdev->dev;
	b->size = size;
	/* The smallest chunk that still fits in @max_chunks of them. */
	min_order = get_order(DIV_ROUND_UP(size, max_chunks));
	b->pages = kcalloc(max_chunks, sizeof(*b->pages), GFP_KERNEL);
	b->orders = kcalloc(max_chunks, sizeof(*b->orders), GFP_KERNEL);
	b->chunks = kcalloc(max_chunks, sizeof(*b->chunks), GFP_KERNEL);
	if (!b->pages || !b->orders || !b->chunks) {
		ret = -ENOMEM;
		goto err;
	}
	while (left) {
		ret = -ENOMEM;
		if (b->n_chunks == max_chunks)
			goto err;
		ret = lite_kbuf_chunk(b, left, min_order);
		if (ret)
			goto err;
		left -= b->chunks[b->n_chunks - 1].len;
	}
	if (lite_isolated(b->node)) {
		ret = lite_kbuf_reg(b);
		if (ret)
			goto err;
	}
	b->layout.size = size;
	b->layout.n_chunks = b->n_chunks;
	b->layout.chunks = b->chunks;
	return 0;
err:
	lite_kbuf_free(b);
	return ret;
}

/*
 * Where byte @off of @b is; *@n becomes how many of the @want bytes from
 * there are in the same chunk, synced for the CPU if @sync.
 */
static void *lite_kbuf_at(struct lite_kbuf *b, u64 off, u64 want, u32 *n,
			  bool sync)
{
	u32 i = lite_lmr_chunk_index(&b->layout, off);
	u64 in = off - b->chunks[i].start;

	*n = min_t(u64, want, b->chunks[i].len - in);
	if (sync)
		ib_dma_sync_single_for_cpu(b->dev, b->chunks[i].addr + in, *n,
					   DMA_BIDIRECTIONAL);
	return page_address(b->pages[i]) + in;
}

/**
 * lite_kbuf_sync_for_cpu - sync bytes of a kernel buffer for the CPU
 * @b: the buffer
 * @off: where to start (not past the end: no wrap)
 * @len: bytes
 *
 * For bytes read later with lite_kbuf_synced_to_user(), which touches no
 * device. Does not sleep.
 */
void lite_kbuf_sync_for_cpu(struct lite_kbuf *b, u64 off, u64 len)
{
	u32 n;

	while (len) {
		lite_kbuf_at(b, off, len, &n, true);
		off += n;
		len -= n;
	}
}

/**
 * lite_kbuf_read - copy bytes out of a kernel buffer
 * @b: the buffer
 * @off: where to start; taken modulo the size (rings wrap)
 * @dst: destination
 * @len: bytes to copy
 *
 * Syncs the bytes for the CPU first. Does not sleep.
 */
void lite_kbuf_read(struct lite_kbuf *b, u64 off, void *dst, u32 len)
{
	void *src;
	u32 n;

	while (len) {
		off %= b->size;
		src = lite_kbuf_at(b, off, len, &n, true);
		memcpy(dst, src, n);
		dst += n;
		off += n;
		len -= n;
	}
}

/**
 * lite_kbuf_clear - zero bytes of a kernel buffer
 * @b: the buffer
 * @off: where to start; taken modulo the size (rings wrap)
 * @len: bytes to zero
 *
 * Written by the CPU: the caller syncs them for the device before a peer
 * may write the buffer again. Does not sleep.
 */
void lite_kbuf_clear(struct lite_kbuf *b, u64 off, u32 len)
{
	void *dst;
	u32 n;

	while (len) {
		off %= b->size;
		dst = lite_kbuf_at(b, off, len, &n, true);
		memset(dst, 0, n);
		off += n;
		len -= n;
	}
}

static int lite_kbuf_copy_to_user(struct lite_kbuf *b, u64 off,
				  void __user *dst, u64 len, bool sync)
{
	void *src;
	u32 n;

	while (len) {
		off %= b->size;
		src = lite_kbuf_at(b, off, len, &n, sync);
		if (copy_to_user(dst, src, n))
			return -EFAULT;
		dst += n;
		off += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

/**
 * lite_kbuf_to_user - copy bytes out of a kernel buffer to user memory
 * @b: the buffer
 * @off: where to start; taken modulo the size (rings wrap)
 * @dst: user destination
 * @len: bytes to copy
 *
 * As lite_kbuf_read(), but to user memory. May sleep.
 *
 * Return: 0 or -EFAULT (some bytes may have been copied).
 */
int lite_kbuf_to_user(struct lite_kbuf *b, u64 off, void __user *dst,
		      u64 len)
{
	return lite_kbuf_copy_to_user(b, off, dst, len, true);
}

/**
 * lite_kbuf_synced_to_user - copy bytes already synced to user memory
 * @b: the buffer (its device may be gone: lite_kbuf_unmap())
 * @off: where to start; taken modulo the size
 * @dst: user destination
 * @len: bytes to copy, which lite_kbuf_sync_for_cpu() synced
 *
 * As lite_kbuf_to_user(), but it touches no device. May sleep.
 *
 * Return: 0 or -EFAULT (some bytes may have been copied).
 */
int lite_kbuf_synced_to_user(struct lite_kbuf *b, u64 off, void __user *dst,
			     u64 len)
{
	return lite_kbuf_copy_to_user(b, off, dst, len, false);
}

/**
 * lite_bounce_map - a new DMA-mapped (bidirectional) kernel buffer
 * @dev: the device
 * @size: bytes
 * @gfp: allocation flags
 * @buf: set to its kernel address
 * @dma: set to its DMA address
 *
 * Return: 0, or -ENOMEM.
 */
int lite_bounce_map(struct ib_device *dev, u32 size, gfp_t gfp, void **buf,
		    u64 *dma)
{
	*buf = kmalloc(size, gfp);
	if (!*buf)
		return -ENOMEM;
	*dma = ib_dma_map_single(dev, *buf, size, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, *dma)) {
		kfree(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/**
 * lite_bounce_unmap - unmap and free a buffer of lite_bounce_map()
 * @dev: the device
 * @buf: its kernel address
 * @dma: its DMA address
 * @size: its size
 */
void lite_bounce_unmap(struct ib_device *dev, void *buf, u64 dma, u32 size)
{
	ib_dma_unmap_single(dev, dma, size, DMA_BIDIRECTIONAL);
	kfree(buf);
}

/*
 * A DMA-mapped buffer of @size bytes, or, if memory is short, halved down
 * to a page (@size if smaller), which is then allocated as any other; for
 * transfers that go in steps of any size of at least a page. Sleeps.
 */
static int lite_bounce_map_down(struct lite_bounce *b, u32 size)
{
	for (; size > PAGE_SIZE; size = max_t(u32, size / 2, PAGE_SIZE)) {
		if (!lite_bounce_map(b->dev, size, LITE_GFP_TRY, &b->buf,
				     &b->dma)) {
			b->size = size;
			return 0;
		}
	}
	b->size = size;
	return lite_bounce_map(b->dev, size, GFP_KERNEL, &b->buf, &b->dma);
}

/*
 * A mapped LITE_BOUNCE_SIZE buffer into @b, to give back with
 * lite_bounce_keep(): one the node kept, or a new one if the node has fewer
 * than LITE_STAGE_CACHE in all (so that it keeps every one given back, and
 * a transfer allocates only when more than that many run at once). Sleeps
 * if it allocates. Return: true if there is one.
 */
static bool lite_bounce_obtain(struct lite_bounce *b)
{
	struct lite_node *node = b->node;
	bool make = false;

	spin_lock_bh(&node->stage_lock);
	if (node->n_stages) {
		node->n_stages--;
		b->buf = node->stages[node->n_stages].buf;
		b->dma = node->stages[node->n_stages].dma;
		spin_unlock_bh(&node->stage_lock);
		return true;
	}
	if (!node->stages_closed && node->n_bounces < LITE_STAGE_CACHE) {
		node->n_bounces++;	/* a place for it, taken now */
		make = true;
	}
	spin_unlock_bh(&node->stage_lock);
	if (!make)
		return false;
	if (!lite_bounce_map(b->dev, LITE_BOUNCE_SIZE, LITE_GFP_TRY, &b->buf,
			     &b->dma))
		return true;
	spin_lock_bh(&node->stage_lock);
	node->n_bounces--;
	spin_unlock_bh(&node->stage_lock);
	return false;
}

/*
 * Give a buffer of lite_bounce_obtain() back: the node keeps it unless it
 * is going down; then it is freed. Nothing may still move data through
 * it. Any context but hard irq.
 */
static void lite_bounce_keep(struct lite_bounce *b)
{
	struct lite_node *node = b->node;
	bool kept = false;

	spin_lock_bh(&node->stage_lock);
	if (!node->stages_closed &&
	    !WARN_ON_ONCE(node->n_stages >= LITE_STAGE_CACHE)) {
		node->stages[node->n_stages].buf = b->buf;
		node->stages[node->n_stages].dma = b->dma;
		node->n_stages++;
		kept = true;
	} else {
		node->n_bounces--;
	}
	spin_unlock_bh(&node->stage_lock);
	if (!kept)
		lite_bounce_unmap(b->dev, b->buf, b->dma, LITE_BOUNCE_SIZE);
}

/**
 * lite_bounce_close - free the buffers a node kept, and keep none again
 * @node: the node, going down
 */
void lite_bounce_close(struct lite_node *node)
{
	struct lite_stage_buf kept[LITE_STAGE_CACHE];
	u32 n;

	spin_lock_bh(&node->stage_lock);
	node->stages_closed = true;
	n = node->n_stages;
	node->n_stages = 0;
	node->n_bounces -= n;	/* those in use are freed when given back */
	memcpy(kept, node->stages, sizeof(kept));
	spin_unlock_bh(&node->stage_lock);
	while (n--)
		lite_bounce_unmap(node->ibdev->dev, kept[n].buf, kept[n].dma,
				  LITE_BOUNCE_SIZE);
}

/**
 * lite_bounce_get - a bounce buffer for a transfer of @len bytes
 * @b: filled in
 * @node: the node the transfer goes from
 * @len: bytes the whole transfer moves (it may go in steps of b->size)
 * @max: the largest buffer worth having (at least LITE_BOUNCE_SIZE)
 *
 * For more than LITE_BOUNCE_SIZE bytes, first one of up to @max bytes if
 * memory allows, halved down while larger than LITE_BOUNCE_SIZE (fewer,
 * larger steps); then one of LITE_BOUNCE_SIZE the node keeps
 * (lite_bounce_obtain()); else one just large enough, at most
 * LITE_BOUNCE_SIZE (smaller if memory is short). Sleeps.
 *
 * Return: 0, or -ENOMEM.
 */
int lite_bounce_get(struct lite_bounce *b, struct lite_node *node, u64 len,
		    u32 max)
{
	u32 size;

	b->node = node;
	b->dev = node->ibdev->dev;
	b->keep = false;
	for (size = min_t(u64, len, max); size > LITE_BOUNCE_SIZE;
	     size = max_t(u32, size / 2, LITE_BOUNCE_SIZE)) {
		if (!lite_bounce_map(b->dev, size, LITE_GFP_TRY, &b->buf,
				     &b->dma)) {
			b->size = size;
			return 0;
		}
	}
	b->keep = lite_bounce_obtain(b);
	if (b->keep) {
		b->size = LITE_BOUNCE_SIZE;
		return 0;
	}
	return lite_bounce_map_down(b, min_t(u64, max_t(u64, len, 8),
					     LITE_BOUNCE_SIZE));
}

/**
 * lite_bounce_put - done with a bounce buffer (nothing in flight uses it)
 * @b: from lite_bounce_get()
 *
 * Any context but hard irq.
 */
void lite_bounce_put(struct lite_bounce *b)
{
	if (b->keep)
		lite_bounce_keep(b);
	else
		lite_bounce_unmap(b->dev, b->buf, b->dma, b->size);
	b->buf = NULL;
}
