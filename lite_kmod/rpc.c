// SPDX-License-Identifier: GPL-2.0
/*
 * RPC and one-way messages over RDMA write-with-immediate.
 *
 * Each node keeps, per peer, an inbound ring (LITE_RING_SIZE bytes of
 * DMA-mapped pages) that only that peer writes: it asks for it once with a
 * RING request and then writes entries - header, reply-buffer segments,
 * payload - at increasing positions, the last work request of each entry
 * a write with immediate naming the position. One writer at a time per
 * ring keeps ring order equal to posting order, so the receiver checks
 * every entry starts where the previous one ended. Entries wait in their
 * port's queue (still in the ring) until a server thread takes one; the
 * ring space is released in order and the peer learns of it by RING_ACK,
 * so a sender never overwrites what was not consumed: it waits, up to its
 * timeout, for room.
 *
 * A call's reply goes into a buffer the caller's node allocated for that
 * call (its segments travel in the request): a reply header and the
 * payload, the immediate naming the call. The buffer is freed only once
 * nothing can be written to it any more - after the reply, or after the
 * connection's QP is gone - so a late reply never lands in reused memory.
 *
 * Entries and replies are staged in a kernel buffer (inline in the work
 * request when small), except payloads of LITE_RPC_ZCOPY_MIN bytes or more
 * in a buffer the caller's file keeps pinned (pincache.c): those go from
 * the caller's pages in place, behind a header in a mapped stage, and the
 * caller waits for them before it returns.
 *
 * Every request that arrived is answered exactly once: by its server, or
 * with -ENOENT (nobody serves the port), or -ECONNRESET (the serving file
 * unregistered or closed first); a reply that cannot be sent means the
 * connection is closing, which fails the call on the caller's side too.
 *
 * Completion handlers (lite_rpc_arrived) never sleep; the rest runs in
 * process context.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>

#include "internal.h"
#include "lite_trace.h"

#define LITE_RING_CHUNKS	128	/* at least 64 KiB each */
#define LITE_REPLY_HDR		sizeof(struct lite_wire_rpc_reply)
#define LITE_STAGE_MAX		(1U << 20)	/* staging per write step */
#define LITE_RPC_ZCOPY_MIN	4096	/* payloads from kept pages from here */
#define LITE_RPC_ZCOPY_PAGES	17	/* mapped without an allocation: 64 KiB
					 * at any offset */

static_assert(LITE_RPC_PAYLOAD_MAX == LITE_RPC_MAX);
static_assert(LITE_RING_SIZE - LITE_RING_ACK_EVERY >=
	      sizeof(struct lite_wire_rpc) +
	      LITE_RPC_MAX_SEGS * sizeof(struct lite_wire_chunk) +
	      LITE_RPC_MAX + LITE_RPC_ALIGN);
static_assert(LITE_RING_CHUNKS <= LITE_WIRE_MAX_CHUNKS);

/* Receiver: rings */

static void lite_ring_free(struct lite_ring_rx *ring)
{
	struct lite_ring_ent *ent, *tmp;

	list_for_each_entry_safe(ent, tmp, &ring->ents, entry)
		kfree(ent);
	lite_kbuf_free(&ring->buf);
	kfree(ring);
}

static struct lite_ring_rx *lite_ring_alloc(struct lite_conn *conn)
{
	struct lite_ring_rx *ring;

	ring = kzalloc(sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return NULL;
	spin_lock_init(&ring->lock);
	INIT_LIST_HEAD(&ring->ents);
	if (lite_kbuf_alloc(&ring->buf, conn, LITE_RING_SIZE,
			    LITE_RING_CHUNKS)) {
		kfree(ring);
		return NULL;
	}
	return ring;
}

/**
 * lite_rpc_handle_ring - RING: where the sender's ring on this node is
 * @conn: the sender's connection
 * @msg: the request
 *
 * The ring for this peer is made on first use and kept for the
 * connection. Replies with its size and chunks (keys in them), or -ENOMEM. Runs in
 * order on node->wq.
 */
void lite_rpc_handle_ring(struct lite_conn *conn,
			  const struct lite_msg *msg)
{
	struct lite_ring_rx *ring = conn->ring;
	struct lite_wire_ring *w;
	u32 i, len;

	if (!ring) {
		ring = lite_ring_alloc(conn);
		if (!ring) {
			lite_reply(conn, msg, -ENOMEM, NULL, 0);
			return;
		}
		/* Set once, here; the CQ handler reads it with acquire. */
		smp_store_release(&conn->ring, ring);
	}
	len = sizeof(*w) + ring->buf.n_chunks * sizeof(w->chunks.chunks[0]);
	w = kzalloc(len, GFP_KERNEL);
	if (!w) {
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		return;
	}
	w->size = cpu_to_le64(ring->buf.size);
	w->chunks.count = cpu_to_le32(ring->buf.n_chunks);
	w->chunks.total = cpu_to_le32(ring->buf.n_chunks);
	for (i = 0; i < ring->buf.n_chunks; i++) {
		w->chunks.chunks[i].addr = cpu_to_le64(ring->buf.chunks[i].addr);
		w->chunks.chunks[i].len = cpu_to_le32(ring->buf.chunks[i].len);
		w->chunks.chunks[i].rkey =
			cpu_to_le32(ring->buf.chunks[i].rkey);
	}
	lite_reply(conn, msg, 0, w, len);
	kfree(w);
}

/* Queue @conn's rpc_work (error replies, acks). Any context. */
static void lite_rpc_kick(struct lite_conn *conn)
{
	lite_conn_get(conn);
	if (!queue_work(conn->node->cq_wq, &conn->rpc_work))
		lite_conn_put(conn);	/* never the last: the caller has one */
}

/* Release @in's ring space; the peer hears of it in batches. */
static void lite_rpc_consume(struct lite_rpc_in *in)
{
	struct lite_conn *conn = in->conn;
	struct lite_ring_rx *ring = conn->ring;
	struct lite_ring_ent *ent, *tmp;
	bool ack;

	if (!in->ent)
		return;
	spin_lock_bh(&ring->lock);
	in->ent->consumed = true;
	in->ent = NULL;
	list_for_each_entry_safe(ent, tmp, &ring->ents, entry) {
		if (!ent->consumed)
			break;
		ring->tail = ent->pos + ent->size;
		list_del(&ent->entry);
		kfree(ent);
	}
	ack = ring->tail - ring->acked >= LITE_RING_ACK_EVERY;
	spin_unlock_bh(&ring->lock);
	if (ack) {
		spin_lock_bh(&conn->lock);
		conn->ack_due = true;
		spin_unlock_bh(&conn->lock);
		lite_rpc_kick(conn);
	}
}

static void lite_rpc_in_free(struct lite_rpc_in *in)
{
	struct lite_conn *conn = in->conn;

	lite_rpc_consume(in);
	kfree(in);
	lite_conn_put(conn);
}

/* Answer @in with @err (a call) or drop it (a message). Any context. */
static void lite_rpc_fail_in(struct lite_rpc_in *in, int err)
{
	struct lite_conn *conn = in->conn;

	lite_rpc_consume(in);
	if (in->e.kind != LITE_RPC_CALL) {
		lite_rpc_in_free(in);
		return;
	}
	in->err = err;
	spin_lock_bh(&conn->lock);
	list_add_tail(&in->entry, &conn->rpc_errs);
	spin_unlock_bh(&conn->lock);
	lite_rpc_kick(conn);
}

/* Hand @in to its port's queue. Any context. */
static void lite_rpc_deliver(struct lite_node *node, struct lite_rpc_in *in)
{
	struct lite_urecv *u = NULL;
	struct lite_service *svc;
	bool queued = false, more = false;
	u64 now;

	rcu_read_lock();
	svc = xa_load(&node->services, in->e.port);
	if (svc) {
		spin_lock_bh(&svc->lock);
		if (!svc->dead) {
			more = !list_empty(&svc->queue);
			list_add_tail(&in->entry, &svc->queue);
			queued = true;
			now = ktime_get_ns();
			lite_wait_note(&svc->gap_ns, now - svc->last_ns);
			svc->last_ns = now;
			u = list_first_entry_or_null(&svc->urecvs,
						     struct lite_urecv, entry);
			if (u)
				list_del_init(&u->entry);
		}
		spin_unlock_bh(&svc->lock);
		if (u)
			u->ready(u);	/* an io_uring receive takes it */
		/*
		 * A receiver that polls takes it without a wake-up; one that
		 * stops polling decrements pollers before it looks at the
		 * queue (lite_service_take()).
		 */
		smp_mb();
		if (queued && (more || (!u && !atomic_read(&svc->pollers))))
			wake_up(&svc->wq);
	}
	rcu_read_unlock();
	if (!queued)
		lite_rpc_fail_in(in, -ENOENT);
}

/* Read the entry's reply-buffer segments into @in. Ring lock held. */
static int lite_rpc_read_segs(struct lite_ring_rx *ring, u64 pos,
			      struct lite_rpc_in *in)
{
	struct lite_wire_chunk w;
	u64 start = 0;
	u32 i;

	for (i = 0; i < in->e.n_segs; i++) {
		lite_kbuf_read(&ring->buf, pos + sizeof(struct lite_wire_rpc) +
			       i * sizeof(w), &w, sizeof(w));
		if (!le32_to_cpu(w.len))
			return -EBADMSG;
		in->segs[i].addr = le64_to_cpu(w.addr);
		in->segs[i].rkey = le32_to_cpu(w.rkey);
		in->segs[i].start = start;
		in->segs[i].len = le32_to_cpu(w.len);
		start += in->segs[i].len;
	}
	if (in->e.kind == LITE_RPC_CALL &&
	    start < LITE_REPLY_HDR + in->e.reply_cap)
		return -EBADMSG;
	return 0;
}

/* An entry landed in @conn's ring (CQ context). */
static void lite_rpc_entry_arrived(struct lite_conn *conn, u32 imm)
{
	struct lite_ring_rx *ring = smp_load_acquire(&conn->ring);
	struct lite_ring_ent *ent = NULL;
	struct lite_rpc_in *in = NULL;
	struct lite_rpc_entry e;
	struct lite_wire_rpc w;
	u64 pos;
	int ret = -EBADMSG;

	if (lite_conn_state(conn) == LITE_CONN_CLOSING)
		return;		/* in flight when it closed: nobody answers */
	if (!ring || lite_conn_state(conn) != LITE_CONN_READY)
		goto bad;
	spin_lock_bh(&ring->lock);
	pos = ring->head;
	if (((pos / LITE_RPC_ALIGN) & ~LITE_IMM_REPLY) != imm)
		goto unlock;
	lite_kbuf_read(&ring->buf, pos, &w, sizeof(w));
	ret = lite_rpc_entry_parse(&w, pos, conn->peer_id,
				   ring->buf.size - (pos - ring->tail), &e);
	if (ret)
		goto unlock;
	ret = -ENOMEM;
	in = kzalloc(struct_size(in, segs, e.n_segs), GFP_ATOMIC);
	ent = kzalloc(sizeof(*ent), GFP_ATOMIC);
	if (!in || !ent)
		goto unlock;
	in->e = e;
	ret = lite_rpc_read_segs(ring, pos, in);
	if (ret)
		goto unlock;
	ent->pos = pos;
	ent->size = e.size;
	list_add_tail(&ent->entry, &ring->ents);
	ring->head = pos + e.size;
	spin_unlock_bh(&ring->lock);
	trace_lite_rpc_request(conn->node->instance, conn->peer_id, e.port,
			       e.call_id, e.len);

	lite_conn_get(conn);
	in->conn = conn;
	in->ent = ent;
	in->pos = pos;
	lite_rpc_deliver(conn->node, in);
	return;

unlock:
	spin_unlock_bh(&ring->lock);
	kfree(ent);
	kfree(in);
bad:
	if (ret == -EBADMSG)
		lite_count_error(conn->node, conn->peer_id, LITE_ERR_BAD_MSG,
				 ret);
	pr_info_ratelimited("lite%u: dropping connection after bad RPC entry (%d)\n",
			    conn->node->instance, ret);
	lite_conn_close(conn);
}

static void lite_rcall_free(struct lite_rcall *call)
{
	lite_kbuf_free(&call->buf);
	if (call->conn)
		lite_conn_put(call->conn);	/* see lite_rpc_reply_arrived() */
	kfree(call);
}

/*
 * Take the call at @i out of @node's cache. The cache stays in the order
 * the calls were kept, oldest first: lite_rcall_keep() lets the oldest go.
 */
static struct lite_rcall *lite_rcall_take(struct lite_node *node, u32 i)
{
	struct lite_rcall *call = node->rcalls[i];

	lockdep_assert_held(&node->rcall_lock);
	node->n_rcalls--;
	memmove(&node->rcalls[i], &node->rcalls[i + 1],
		(node->n_rcalls - i) * sizeof(node->rcalls[0]));
	return call;
}

/*
 * A reply to call @id that no honest peer sends (@err, @why): the
 * connection closes.
 */
static void lite_rpc_bad_reply(struct lite_conn *conn, u32 id, int err,
			       const char *why)
{
	lite_count_error(conn->node, conn->peer_id, LITE_ERR_BAD_MSG, err);
	pr_info_ratelimited("lite%u: dropping connection to node %u after a reply to call %u, which %s\n",
			    conn->node->instance, conn->peer_id, id, why);
	lite_conn_close(conn);
}

/*
 * A reply landed in the buffer of call @id (CQ context). One that fails
 * its checks fails the call -EBADMSG and closes the connection.
 */
static void lite_rpc_reply_arrived(struct lite_conn *conn, u32 id)
{
	void (*done_fn)(struct lite_rcall *call);
	struct lite_node *node = conn->node;
	struct lite_wire_rpc_reply w;
	struct lite_rcall *call;
	bool abandoned, bad;
	int status;
	u32 len;

	xa_lock_bh(&node->rpc_calls);
	call = id ? xa_load(&node->rpc_calls, id - 1) : NULL;
	if (!call || call->conn != conn) {
		xa_unlock_bh(&node->rpc_calls);
		if (lite_conn_state(conn) == LITE_CONN_CLOSING)
			return;	/* the close failed that call already */
		lite_rpc_bad_reply(conn, id, -ENOENT, "is not waiting");
		return;
	}
	abandoned = call->abandoned;
	lite_kbuf_read(&call->buf, 0, &w, sizeof(w));
	bad = lite_rpc_reply_parse(&w, id, call->cap, &status, &len);
	if (bad && abandoned) {
		/*
		 * Left in the table: freed once the QP is gone, or by a
		 * well-formed reply before (its last write).
		 */
		xa_unlock_bh(&node->rpc_calls);
		lite_rpc_bad_reply(conn, id, -EBADMSG, "is malformed");
		return;
	}
	__xa_erase(&node->rpc_calls, id - 1);
	if (bad) {
		/*
		 * The peer may still write this buffer (the real reply): the
		 * caller waits for the QP to be gone, then frees it.
		 */
		status = -EBADMSG;
		len = 0;
		call->conn_failed = true;
	}
	call->status = status;
	call->len = len;
	done_fn = call->done_fn;
	trace_lite_rpc_done(node->instance, conn->peer_id, id, status, len);
	xa_unlock_bh(&node->rpc_calls);
	/*
	 * Closed before the caller wakes: it waits for the QP to be gone
	 * (conn_failed), and its error paths look for CLOSING.
	 */
	if (bad)
		lite_rpc_bad_reply(conn, id, -EBADMSG, "is malformed");
	/*
	 * The write is complete and no other reply comes: an abandoned call
	 * can go now. Its conn reference is not the last (the CQ is alive).
	 */
	if (abandoned)
		lite_rcall_free(call);
	else if (done_fn)
		done_fn(call);
	else
		complete(&call->done);
}

/**
 * lite_rpc_arrived - an RDMA write with immediate landed
 * @conn: the connection it came on
 * @imm: with LITE_IMM_REPLY, the call whose reply landed in its buffer;
 *	else the ring position, in LITE_RPC_ALIGN units, of a new entry
 *
 * A new entry is checked and queued on its port (a request for a port
 * nobody serves is answered -ENOENT); a reply completes its call, or frees
 * an abandoned one. A malformed entry, or a reply to no call, closes the
 * connection. CQ context: never sleeps.
 */
void lite_rpc_arrived(struct lite_conn *conn, u32 imm)
{
	if (imm & LITE_IMM_REPLY)
		lite_rpc_reply_arrived(conn, imm & ~LITE_IMM_REPLY);
	else
		lite_rpc_entry_arrived(conn, imm);
}

/* Sender: writing into the peer's ring or reply buffer */

struct lite_rpc_out {
	u8 kind;
	u32 port;
	u32 call_id;
	u64 reply_cap;
	const struct lite_kbuf *reply_buf;
	const void __user *data;
	u32 len;
	struct lite_rpc_zc *zc;		/* zero copy for @data, if it can */
};

/*
 * An entry's or reply's staging buffer: its own small one, a kept bounce
 * buffer, or (zero copy) an exact-size mapping of just the header.
 */
struct lite_stage {
	struct lite_bounce b;		/* b.buf is @small if @inl */
	bool inl;			/* sent inline from @small */
	u8 small[LITE_MAX_INLINE] __aligned(8);
};

/*
 * A staging buffer for up to @want bytes: the stage's own small one if the
 * connection can send that much inline (nothing to allocate or map), else
 * a bounce buffer of up to LITE_STAGE_MAX bytes (lite_bounce_get(): fewer
 * round trips for big entries). When memory is short it may be smaller
 * (down to a page, which holds any header): the entry then goes in more
 * steps.
 */
static int lite_stage_get(struct lite_stage *s, struct lite_conn *conn,
			  u64 want)
{
	s->inl = want <= conn->max_inline;
	if (!s->inl)
		return lite_bounce_get(&s->b, conn->node, want, LITE_STAGE_MAX);
	/* Sent inline: posted from its address, never mapped nor put. */
	s->b.buf = s->small;
	s->b.dma = (uintptr_t)s->small;
	s->b.size = want;
	return 0;
}

/*
 * A DMA-mapped staging buffer of just @want bytes, for a header that SGEs
 * of pages follow: not one of the node's kept bounce buffers, which a call
 * would hold until its reply.
 */
static int lite_stage_get_mapped(struct lite_stage *s, struct lite_conn *conn,
				 u32 want)
{
	s->inl = false;
	s->b = (struct lite_bounce) {
		.node = conn->node,
		.dev = conn->node->ibdev->dev,
		.size = want,
	};
	return lite_bounce_map(s->b.dev, want, GFP_KERNEL, &s->b.buf,
			       &s->b.dma);
}

/*
 * Done with @s (its WRs completed): a kept bounce buffer goes back to the
 * node if it has room, anything else is unmapped and freed. Any context.
 */
static void lite_stage_put(struct lite_stage *s)
{
	if (s->b.buf && !s->inl)
		lite_bounce_put(&s->b);
	s->b.buf = NULL;
}

/*
 * Zero copy of one entry or reply: the payload read in place from user
 * pages the file keeps pinned, all of them mapped before anything is
 * posted; the caller's (synchronous callers only: it is on their stack).
 */
struct lite_rpc_zc {
	struct lite_pin_cache *pc;	/* where the pages may be kept */
	struct lite_pin_entry *pin;	/* the payload's pages, or NULL */
	struct lite_pinned pages;	/* mapped, into @ext[1..] */
	struct lite_ext *ext;		/* [0]: the header; @small or kmalloc'd */
	struct lite_ext small[1 + LITE_RPC_ZCOPY_PAGES];
};

/*
 * An entry or reply on its way: its last step may still be in flight.
 * With @zc, the header is in @s and the payload's pages stay pinned and
 * mapped until lite_rpc_tx_finish(), which the poster waits in: the
 * caller's buffer is read until then.
 */
struct lite_rpc_tx {
	struct lite_rdma_op op;
	struct lite_stage s;
	u64 ring_end;			/* an entry: where the next one starts */
	struct lite_rpc_zc *zc;		/* zero copy, or NULL */
};

static void lite_rpc_tx_init(struct lite_rpc_tx *tx, struct lite_conn *conn,
			     void (*done_fn)(struct lite_rdma_op *op))
{
	lite_rdma_op_init(&tx->op, conn, done_fn);
	tx->s.b.buf = NULL;
	tx->zc = NULL;
}

/* Let the pages of @zc go: unmapped, unpinned, nothing reads them now. */
static void lite_rpc_zc_release(struct lite_rpc_zc *zc)
{
	lite_pinned_unmap(&zc->pages, zc->pages.n);
	if (zc->ext != zc->small)
		kfree(zc->ext);
	lite_pin_put(zc->pin);
	zc->pin = NULL;
}

/* Wait for what @tx posted, then free its staging. */
static int lite_rpc_tx_finish(struct lite_rpc_tx *tx, int err)
{
	err = lite_rdma_op_wait(&tx->op, err);
	if (tx->zc)
		lite_rpc_zc_release(tx->zc);
	tx->zc = NULL;
	lite_stage_put(&tx->s);
	return err;
}

/* Asynchronous replies free themselves once their WRs completed. */
static void lite_rpc_tx_free(struct lite_rdma_op *op)
{
	struct lite_rpc_tx *tx = container_of(op, struct lite_rpc_tx, op);

	WARN_ON_ONCE(tx->zc);	/* zero copy is waited for */
	lite_stage_put(&tx->s);
	kfree(tx);
}

/* Map the @len bytes of @zc's pages from @uaddr, behind the header. */
static int lite_rpc_zc_map(struct lite_rpc_zc *zc, struct ib_device *dev,
			   struct page **pages, unsigned long uaddr, u32 len)
{
	u32 first_off = offset_in_page(uaddr);
	int n = DIV_ROUND_UP(first_off + len, PAGE_SIZE), ret;

	zc->ext = zc->small;
	if (n > LITE_RPC_ZCOPY_PAGES) {
		zc->ext = kmalloc_array(1 + n, sizeof(*zc->ext),
					GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!zc->ext)
			return -ENOMEM;
	}
	zc->pages = (struct lite_pinned) {
		.dev = dev,
		.pages = pages,
		.ext = zc->ext + 1,
		.n = n,
		.first_off = first_off,
		.len = len,
		.write = true,
	};
	ret = lite_pinned_map(&zc->pages);
	if (ret && zc->ext != zc->small)
		kfree(zc->ext);
	return ret;
}

/*
 * Zero copy for @len bytes of @data, if @zc's cache keeps its pages
 * pinned and they can be mapped: @tx takes them (the NIC reads them in
 * place) and a mapped stage for the header of @hdr_len bytes. Nothing is
 * posted yet, so whatever fails here leaves the copy path.
 * Return: whether @tx takes this path.
 */
static bool lite_rpc_tx_pin(struct lite_rpc_tx *tx, struct lite_rpc_zc *zc,
			    struct lite_conn *conn, const void __user *data,
			    u32 len, u32 hdr_len)
{
	struct page **pages;

	if (!zc || !zc->pc || len < LITE_RPC_ZCOPY_MIN)
		return false;
	zc->pin = lite_pin_get(zc->pc, (uintptr_t)data, len, false, &pages);
	if (!zc->pin)
		return false;
	if (lite_rpc_zc_map(zc, conn->node->ibdev->dev, pages,
			    (uintptr_t)data, len))
		goto err_put;
	if (lite_stage_get_mapped(&tx->s, conn, hdr_len))
		goto err_release;
	zc->ext[0].dma = tx->s.b.dma;
	zc->ext[0].len = hdr_len;
	tx->zc = zc;
	return true;

err_release:
	lite_rpc_zc_release(zc);	/* puts the pin too */
	return false;
err_put:
	lite_pin_put(zc->pin);
	zc->pin = NULL;
	return false;
}

/*
 * Zero copy (lite_rpc_tx_pin() took the payload): post the header in
 * tx->s and the payload's mapped pages to @pos of layout @l (modulo
 * @wrap), all on tx->op, the last work request carrying @imm. Nothing is
 * waited for here; lite_rpc_tx_finish() waits.
 * Return: 0, or a transport error (the caller closes the connection).
 */
static int lite_stage_write_pinned(struct lite_rpc_tx *tx,
				   const struct lite_layout *l, u64 wrap,
				   u64 pos, u32 imm)
{
	struct lite_rpc_zc *zc = tx->zc;
	struct lite_sgl sgl = { .ext = zc->ext, .n = 1 + zc->pages.n };
	u64 n = zc->ext[0].len + zc->pages.len;
	u64 off = pos % wrap, first = min_t(u64, n, wrap - off);
	int ret;

	ib_dma_sync_single_for_device(tx->s.b.dev, tx->s.b.dma,
				      zc->ext[0].len, DMA_BIDIRECTIONAL);
	if (first == n)
		return lite_rdma_post_sgl(&tx->op, l, off, n, &sgl, true, &imm);
	ret = lite_rdma_post_sgl(&tx->op, l, off, first, &sgl, true, NULL);
	sgl.skip = first;
	if (!ret)
		ret = lite_rdma_post_sgl(&tx->op, l, 0, n - first, &sgl, true,
					 &imm);
	return ret;
}

/*
 * Post the @n bytes staged in @s to @pos of layout @l (modulo @wrap) on
 * @last, its last work request carrying @imm; not waited for: the caller
 * waits when it suits it, or lets it finish by itself.
 */
static int lite_stage_post(struct lite_rdma_op *last, struct lite_stage *s,
			   const struct lite_layout *l, u64 wrap,
			   u64 pos, u32 n, u32 imm)
{
	u64 off = pos % wrap, first = min_t(u64, n, wrap - off);
	int ret;

	if (!s->inl)
		ib_dma_sync_single_for_device(s->b.dev, s->b.dma, n,
					      DMA_BIDIRECTIONAL);
	last->inline_data = s->inl;
	if (first < n) {
		ret = lite_rdma_post_layout(last, l, off, first, s->b.dma,
					    true, NULL);
		if (!ret)
			ret = lite_rdma_post_layout(last, l, 0, n - first,
						    s->b.dma + first, true,
						    &imm);
		return ret;
	}
	return lite_rdma_post_layout(last, l, off, n, s->b.dma, true,
				     &imm);
}

/*
 * Write @hdr_len bytes of header (already in @s) and @len bytes from
 * @data (user memory; or @kdata, kernel memory, if set) to @pos of layout
 * @l (modulo @wrap), staging at most s->b.size at a
 * time; the last work request carries @imm. Every step but the last
 * completes before the next is staged; the last is posted on @last
 * (lite_stage_post()). An inline stage is the only step.
 * Return: 0, -EFAULT (the immediate was not sent: what was written goes
 * unnoticed), or a transport error (the caller closes the connection).
 */
static int lite_stage_write(struct lite_rdma_op *last, struct lite_stage *s,
			    const struct lite_layout *l, u64 wrap,
			    u64 pos, u32 hdr_len, const void __user *data,
			    const void *kdata, u32 len, u32 imm)
{
	u64 total = (u64)hdr_len + len, done, off, first;
	struct lite_conn *conn = last->conn;
	u32 n, skip;
	int ret;

	for (done = 0;; done += n) {
		n = min_t(u64, total - done, s->b.size);
		skip = done ? 0 : hdr_len;
		if (n > skip && kdata)
			memcpy(s->b.buf + skip, kdata + done + skip - hdr_len,
			       n - skip);
		else if (n > skip &&
			 copy_from_user(s->b.buf + skip,
					data + done + skip - hdr_len, n - skip))
			return -EFAULT;
		if (done + n == total)
			break;		/* the last step: posted below */
		ib_dma_sync_single_for_device(s->b.dev, s->b.dma, n,
					      DMA_BIDIRECTIONAL);
		off = (pos + done) % wrap;
		first = min_t(u64, n, wrap - off);
		ret = lite_rdma_write_imm(conn, l, off, first, s->b.dma,
					  NULL);
		if (!ret && first < n)
			ret = lite_rdma_write_imm(conn, l, 0, n - first,
						  s->b.dma + first, NULL);
		if (ret)
			return ret;
		cond_resched();
	}
	return lite_stage_post(last, s, l, wrap, pos + done, n, imm);
}

static u32 lite_rpc_hdr_len(const struct lite_rpc_out *o)
{
	return sizeof(struct lite_wire_rpc) +
	       (o->reply_buf ? o->reply_buf->n_chunks : 0) *
	       sizeof(struct lite_wire_chunk);
}

/* Fill the entry header (and segments) of @o at @pos into @buf. */
static u32 lite_rpc_put_hdr(struct lite_conn *conn,
			    const struct lite_rpc_out *o, u64 pos, void *buf)
{
	struct lite_wire_rpc *w = buf;
	struct lite_wire_chunk *seg = buf + sizeof(*w);
	u32 n = o->reply_buf ? o->reply_buf->n_chunks : 0, i;

	memset(w, 0, sizeof(*w));
	w->magic = cpu_to_le32(LITE_RPC_MAGIC);
	w->kind = o->kind;
	w->src = cpu_to_le16(READ_ONCE(conn->node->self_id));
	w->port = cpu_to_le32(o->port);
	w->call_id = cpu_to_le32(o->call_id);
	w->pos = cpu_to_le64(pos);
	w->len = cpu_to_le32(o->len);
	w->n_segs = cpu_to_le32(n);
	if (o->reply_buf)
		w->reply_cap = cpu_to_le64(o->reply_cap);
	for (i = 0; i < n; i++) {
		memset(&seg[i], 0, sizeof(seg[i]));
		seg[i].addr = cpu_to_le64(o->reply_buf->chunks[i].addr);
		seg[i].len = cpu_to_le32(o->reply_buf->chunks[i].len);
		seg[i].rkey = cpu_to_le32(o->reply_buf->chunks[i].rkey);
	}
	return sizeof(*w) + n * sizeof(*seg);
}

static bool lite_ring_own(void *arg)
{
	struct lite_ring_tx *t = arg;

	return !test_and_set_bit_lock(0, &t->busy);
}

/* Become the ring's one setter-up by @deadline. */
static int lite_ring_lock(struct lite_conn *conn, unsigned long deadline)
{
	long left;

	if (lite_ring_own(&conn->tx_ring))
		return 0;
	left = wait_event_killable_timeout(conn->tx_wq,
					   lite_ring_own(&conn->tx_ring),
		max_t(long, (long)(deadline - jiffies), 1));
	if (left > 0)
		return 0;
	return left ? -EINTR : -ETIMEDOUT;
}

static void lite_ring_unlock(struct lite_conn *conn)
{
	clear_bit_unlock(0, &conn->tx_ring.busy);
	wake_up(&conn->tx_wq);
}

/* Learn where the peer's ring is; the ring owned. */
static int lite_ring_setup(struct lite_conn *conn, unsigned long deadline)
{
	struct lite_ring_tx *t = &conn->tx_ring;
	struct lite_wire_ring *w;
	struct lite_chunk *chunks;
	u32 len, n, i;
	u64 start = 0;
	int ret;

	if (t->ready)
		return 0;
	w = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	ret = lite_call(conn, LITE_MSG_RING, NULL, 0, w, LITE_MSG_MAX, &len,
			deadline);
	if (ret)
		goto out;
	n = le32_to_cpu(w->chunks.count);	/* checked by the parser */
	chunks = kcalloc(n, sizeof(*chunks), GFP_KERNEL);
	ret = -ENOMEM;
	if (!chunks)
		goto out;
	for (i = 0; i < n; i++) {
		chunks[i].addr = le64_to_cpu(w->chunks.chunks[i].addr);
		chunks[i].start = start;
		chunks[i].len = le32_to_cpu(w->chunks.chunks[i].len);
		chunks[i].rkey = le32_to_cpu(w->chunks.chunks[i].rkey);
		start += chunks[i].len;
	}
	t->chunks = chunks;
	t->layout.size = le64_to_cpu(w->size);
	t->layout.n_chunks = n;
	t->layout.chunks = chunks;
	t->size = t->layout.size;
	smp_store_release(&t->ready, true);	/* the fields above first */
	ret = 0;
out:
	kfree(w);
	return ret;
}

/* The peer's ring is known (learnt once, by one writer). */
static int lite_ring_ready(struct lite_conn *conn, unsigned long deadline,
			   bool nowait)
{
	int ret;

	if (smp_load_acquire(&conn->tx_ring.ready))
		return 0;
	if (nowait)
		return -EAGAIN;
	ret = lite_ring_lock(conn, deadline);
	if (ret)
		return ret;
	ret = lite_ring_setup(conn, deadline);
	lite_ring_unlock(conn);
	return ret;
}

/* A writer waiting for room in the peer's ring, in arrival order. */
struct lite_room {
	struct list_head entry;		/* tx_ring.room_q; conn lock */
	struct lite_conn *conn;
	u64 need;
};

/* @need bytes fit the peer's ring now. Conn lock held. */
static bool lite_ring_fits(struct lite_conn *conn, u64 need)
{
	struct lite_ring_tx *t = &conn->tx_ring;

	lockdep_assert_held(&conn->lock);
	return t->head + need - t->tail <= t->size;
}

/* It is @r's turn for room and it fits, or the connection is closing. */
static bool lite_ring_room(void *arg)
{
	struct lite_room *r = arg;
	struct lite_conn *conn = r->conn;
	bool ok;

	spin_lock_bh(&conn->lock);
	ok = conn->state == LITE_CONN_CLOSING ||
	     (list_first_entry(&conn->tx_ring.room_q, struct lite_room,
			       entry) == r && lite_ring_fits(conn, r->need));
	spin_unlock_bh(&conn->lock);
	return ok;
}

/* Take @size bytes at the ring's head. Conn lock held. */
static u64 lite_ring_take(struct lite_conn *conn, u32 size)
{
	struct lite_ring_tx *t = &conn->tx_ring;
	u64 pos = t->head;

	lockdep_assert_held(&conn->lock);
	t->head += size;
	return pos;
}

/*
 * Whether a nowait writer of @size bytes would get its place and its turn
 * at once: there is room, nobody waits for room, and every entry reserved
 * was posted. A hint (the lock is dropped after).
 */
static bool lite_ring_free_now(struct lite_conn *conn, u32 size)
{
	struct lite_ring_tx *t = &conn->tx_ring;
	bool ok;

	spin_lock_bh(&conn->lock);
	ok = conn->state != LITE_CONN_CLOSING && list_empty(&t->room_q) &&
	     lite_ring_fits(conn, size) && READ_ONCE(t->posted) == t->head;
	spin_unlock_bh(&conn->lock);
	return ok;
}

/*
 * Reserve @size bytes of the peer's ring at *@pos, waiting for room by
 * @deadline (killably). Writers that find no room queue for it and get it
 * in arrival order: a large one is not overtaken by a stream of small
 * ones. With @nowait: -EAGAIN unless it gets its place and its turn at
 * once.
 */
static int lite_ring_reserve(struct lite_conn *conn, u32 size,
			     unsigned long deadline, bool nowait, u64 *pos)
{
	struct lite_room r = { .conn = conn, .need = size };
	struct lite_ring_tx *t = &conn->tx_ring;
	long left;
	int ret;

	spin_lock_bh(&conn->lock);
	if (conn->state == LITE_CONN_CLOSING) {
		ret = -ECONNRESET;
	} else if (list_empty(&t->room_q) && lite_ring_fits(conn, size) &&
		   (!nowait || READ_ONCE(t->posted) == t->head)) {
		*pos = lite_ring_take(conn, size);
		ret = 0;
	} else if (nowait) {
		ret = -EAGAIN;
	} else {
		list_add_tail(&r.entry, &t->room_q);
		ret = -EINPROGRESS;
	}
	spin_unlock_bh(&conn->lock);
	if (ret != -EINPROGRESS)
		return ret;

	/* The receiver does not consume fast enough: wait in line. */
	if (!lite_spin(conn->node, conn, lite_ring_room, &r, deadline)) {
		left = wait_event_killable_timeout(conn->tx_wq,
			lite_ring_room(&r),
			max_t(long, (long)(deadline - jiffies), 1));
		if (left <= 0)
			ret = left ? -EINTR : -ETIMEDOUT;
	}
	spin_lock_bh(&conn->lock);
	if (ret == -EINPROGRESS && conn->state == LITE_CONN_CLOSING)
		ret = -ECONNRESET;
	else if (ret == -EINPROGRESS)
		*pos = lite_ring_take(conn, size);	/* its turn, it fits */
	list_del(&r.entry);
	spin_unlock_bh(&conn->lock);
	wake_up(&conn->tx_wq);		/* the next in line may fit now */
	return ret == -EINPROGRESS ? 0 : ret;
}

struct lite_turn {
	struct wait_queue_entry wait;	/* on conn->tx_wq while it sleeps */
	struct lite_conn *conn;
	u64 pos;
};

/*
 * Its turn: every entry before @pos was posted; or the connection closes.
 * Lock-free: lite_ring_turn_wake() runs it under tx_wq's lock.
 */
static bool lite_ring_my_turn(void *arg)
{
	struct lite_turn *tn = arg;

	return smp_load_acquire(&tn->conn->tx_ring.posted) == tn->pos ||
	       lite_conn_state(tn->conn) == LITE_CONN_CLOSING;
}

/*
 * Of the writers waiting for their turn, a wake-up of tx_wq wakes only the
 * one whose turn it is (or all, once the connection closes): a post sets
 * tx_ring.posted, and a close the state, before they wake tx_wq. The
 * others, and every wake-up meant for other waiters (credits, slots,
 * room), leave them asleep.
 */
static int lite_ring_turn_wake(struct wait_queue_entry *wait,
			       unsigned int mode, int sync, void *key)
{
	if (!lite_ring_my_turn(container_of(wait, struct lite_turn, wait)))
		return 0;
	return autoremove_wake_function(wait, mode, sync, key);
}

/*
 * Sleep until it is @tn's turn, for up to @timeout jiffies. Return: 0 if
 * the time ran out first, else what was left of it (at least 1: a turn
 * that came as the time ran out counts).
 */
static long lite_ring_turn_sleep(struct lite_turn *tn, long timeout)
{
	struct lite_conn *conn = tn->conn;

	init_wait_entry(&tn->wait, 0);
	tn->wait.func = lite_ring_turn_wake;
	for (;;) {
		prepare_to_wait(&conn->tx_wq, &tn->wait, TASK_UNINTERRUPTIBLE);
		if (lite_ring_my_turn(tn)) {
			timeout = max(timeout, 1L);
			break;
		}
		if (!timeout)
			break;
		timeout = schedule_timeout(timeout);
	}
	finish_wait(&conn->tx_wq, &tn->wait);
	return timeout;
}

/*
 * Wait until every entry reserved before @pos was posted: immediates must
 * reach the peer in ring order. The writers before it take no page fault
 * (their data is in the kernel, or in user pages pinned and mapped before
 * they reserved) and only post, each within its own bounds;
 * the wait polls briefly, then sleeps until the post just before it (the
 * other wake-ups of tx_wq do not wake it: lite_ring_turn_wake()), and
 * gives up only if no writer before it posted for
 * lite_tun(data_timeout_ms) (it notices within twice that).
 * Return: 0 (post now, then lite_ring_posted()); -ECONNRESET; -ETIMEDOUT
 * (the ring is stuck: the caller closes the connection).
 */
static int lite_ring_turn(struct lite_conn *conn, u64 pos)
{
	struct lite_turn tn = { .conn = conn, .pos = pos };
	unsigned long deadline;
	u64 seen;

	for (;;) {
		seen = smp_load_acquire(&conn->tx_ring.posted);
		if (seen == pos)
			break;
		if (lite_conn_state(conn) == LITE_CONN_CLOSING)
			return -ECONNRESET;
		deadline = lite_tun_deadline(data_timeout_ms);
		if (lite_spin_any(conn->node, LITE_RING_TURN_NS,
				  lite_ring_my_turn, &tn, deadline) ||
		    lite_ring_turn_sleep(&tn, lite_tun_jiffies(data_timeout_ms)))
			continue;
		/* A whole timeout without its turn: stuck if nobody posted. */
		if (smp_load_acquire(&conn->tx_ring.posted) == seen)
			return -ETIMEDOUT;
	}
	return lite_conn_state(conn) == LITE_CONN_CLOSING ? -ECONNRESET : 0;
}

/* The entries before @end are posted: the turn of the writer at @end. */
static void lite_ring_posted(struct lite_conn *conn, u64 end)
{
	smp_store_release(&conn->tx_ring.posted, end);
	wake_up(&conn->tx_wq);
}

/*
 * The entry's WR with immediate is on the QP (conn lock held, bottom halves
 * off): the next writer may post now. Its turn does not wait for the
 * transfer that rxe runs in softirq once this poster lets them on.
 */
static void lite_ring_op_posted(struct lite_rdma_op *op)
{
	struct lite_rpc_tx *tx = container_of(op, struct lite_rpc_tx, op);

	lite_ring_posted(op->conn, tx->ring_end);
}

/*
 * Write one entry into @conn's peer's ring by @deadline. Writers do not
 * hold the ring while they copy: the data is copied into the kernel first
 * (into the stage if the entry takes one staging step, else into a buffer
 * of its own), or its pinned pages mapped (@o->zc: zero copy), so a fault
 * costs the ring nothing; then the entry takes its
 * place (lite_ring_reserve()), waits for its turn (lite_ring_turn()) and
 * posts. With @nowait: -EAGAIN (nothing written) where it would wait for
 * the ring, its room, another writer or a staging step.
 */
static int lite_ring_write(struct lite_conn *conn,
			   const struct lite_rpc_out *o,
			   unsigned long deadline, bool nowait,
			   struct lite_rpc_tx *tx)
{
	struct lite_ring_tx *t = &conn->tx_ring;
	u32 n_segs = o->reply_buf ? o->reply_buf->n_chunks : 0;
	u32 size = lite_rpc_entry_size(n_segs, o->len);
	u32 hdr_len = lite_rpc_hdr_len(o), imm;
	struct lite_stage *s = &tx->s;
	void *kdata = NULL;
	bool one_step, zcopy;
	u64 pos;
	int ret;

	ret = lite_ring_ready(conn, deadline, nowait);
	if (ret)
		return ret;
	if (nowait && !lite_ring_free_now(conn, size))
		return -EAGAIN;	/* before copying anything */
	zcopy = !nowait && lite_rpc_tx_pin(tx, o->zc, conn, o->data, o->len,
					   hdr_len);
	ret = zcopy ? 0 : lite_stage_get(s, conn, size);
	if (ret)
		return ret;
	one_step = zcopy || size <= s->b.size;
	if (nowait && !one_step)
		return -EAGAIN;
	if (zcopy) {
		/* The payload is read in place: nothing to copy. */
	} else if (one_step) {
		if (o->len &&
		    copy_from_user(s->b.buf + hdr_len, o->data, o->len))
			return -EFAULT;
	} else {
		kdata = kvmalloc(o->len, GFP_KERNEL_ACCOUNT);
		if (!kdata)
			return -ENOMEM;
		ret = copy_from_user(kdata, o->data, o->len) ? -EFAULT : 0;
		if (ret)
			goto free;
	}
	ret = lite_ring_reserve(conn, size, deadline, nowait, &pos);
	if (ret)
		goto free;
	lite_rpc_put_hdr(conn, o, pos, s->b.buf);
	imm = (pos / LITE_RPC_ALIGN) & ~LITE_IMM_REPLY;
	ret = lite_ring_turn(conn, pos);
	if (ret == -ETIMEDOUT)
		lite_conn_timed_out(conn, "no RPC ring writer posted");
	if (ret)
		goto free;
	tx->ring_end = pos + size;
	tx->op.posted_fn = lite_ring_op_posted;
	if (zcopy)
		ret = lite_stage_write_pinned(tx, &t->layout, t->size, pos,
					      imm);
	else if (one_step)
		ret = lite_stage_post(&tx->op, s, &t->layout, t->size,
				      pos, hdr_len + o->len, imm);
	else
		ret = lite_stage_write(&tx->op, s, &t->layout, t->size,
				       pos, hdr_len, NULL, kdata,
				       o->len, imm);
	tx->op.posted_fn = NULL;
	if (ret)
		lite_conn_close(conn);	/* the ring is out of step now */
	/*
	 * The next writer's WRs queue behind ours on the QP: order holds. Its
	 * turn came with our last post, or comes now if that was not posted
	 * (only the writer whose turn it is moves tx_ring.posted on).
	 */
	if (smp_load_acquire(&t->posted) == pos)
		lite_ring_posted(conn, pos + size);
free:
	kvfree(kdata);
	return ret;
}

/* Fill the header of a reply to @in in @buf. */
static void lite_rpc_put_reply_hdr(const struct lite_rpc_in *in, void *buf,
				   int status, u32 len, u32 send)
{
	struct lite_wire_rpc_reply *h = buf;

	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le32(LITE_RPC_MAGIC);
	h->call_id = cpu_to_le32(in->e.call_id);
	h->status = cpu_to_le32((u32)status);
	h->len = cpu_to_le32(status == -EMSGSIZE ? len : send);
}

/*
 * A reply of @len bytes from pinned pages (lite_rpc_tx_pin() took them
 * into @tx): written and waited for. Return: 0, or a transport error (the
 * connection is closing).
 */
static int lite_rpc_write_reply_pinned(struct lite_rpc_in *in,
				       const struct lite_layout *l,
				       struct lite_rpc_tx *tx, u32 len)
{
	struct lite_conn *conn = in->conn;
	int ret;

	lite_rpc_put_reply_hdr(in, tx->s.b.buf, 0, len, len);
	ret = lite_stage_write_pinned(tx, l, l->size, 0,
				      LITE_IMM_REPLY | in->e.call_id);
	ret = lite_rpc_tx_finish(tx, ret);
	if (ret)
		lite_conn_close(conn);
	else
		trace_lite_rpc_reply(conn->node->instance, conn->peer_id,
				     in->e.call_id, 0, len);
	return ret;
}

/*
 * Write a reply (or, with @status, just its header) into the reply buffer
 * @in describes; from the caller's pages in place if @pc keeps them.
 * Return: 0, -EMSGSIZE (the caller learns the size), or a transport error.
 */
static int lite_rpc_write_reply(struct lite_rpc_in *in, int status,
				const void __user *data, u32 len,
				struct lite_pin_cache *pc)
{
	struct lite_conn *conn = in->conn;
	struct lite_layout l = {
		.n_chunks = in->e.n_segs,
		.chunks = in->segs,
	};
	struct lite_rpc_zc zc = { .pc = pc };
	struct lite_rpc_tx stx, *tx = &stx;
	u32 send = len;
	bool inl;
	int ret;

	if (!status && len > in->e.reply_cap)
		status = -EMSGSIZE;
	if (status)
		send = 0;
	l.size = in->segs[l.n_chunks - 1].start + in->segs[l.n_chunks - 1].len;
	lite_rpc_tx_init(tx, conn, NULL);
	if (!status &&
	    lite_rpc_tx_pin(tx, &zc, conn, data, len, LITE_REPLY_HDR))
		return lite_rpc_write_reply_pinned(in, &l, tx, len);
	/* Inline, nothing outlives the post: the stack does. */
	inl = LITE_REPLY_HDR + send <= conn->max_inline;
	if (!inl) {
		tx = kmalloc(sizeof(*tx), GFP_KERNEL);
		if (!tx)
			goto nomem;
	}
	lite_rpc_tx_init(tx, conn, inl ? NULL : lite_rpc_tx_free);
	if (lite_stage_get(&tx->s, conn, LITE_REPLY_HDR + send)) {
		if (!inl)
			kfree(tx);
		goto nomem;
	}
	lite_rpc_put_reply_hdr(in, tx->s.b.buf, status, len, send);
	ret = lite_stage_write(&tx->op, &tx->s, &l, l.size, 0,
			       LITE_REPLY_HDR, data, NULL, send,
			       LITE_IMM_REPLY | in->e.call_id);
	if (ret && ret != -EFAULT)
		lite_conn_close(conn);
	if (!ret)
		trace_lite_rpc_reply(conn->node->instance, conn->peer_id,
				     in->e.call_id, status, send);
	/* On its way: a failure from here on closes the connection. */
	if (inl)
		lite_rpc_tx_finish(tx, 0);	/* nothing to wait for */
	else
		lite_rdma_op_release(&tx->op);
	if (ret)
		return ret;
	return status == -EMSGSIZE ? -EMSGSIZE : 0;

nomem:
	/* Every call is answered or its connection closes. */
	lite_conn_close(conn);
	return -ENOMEM;
}

static void lite_rpc_send_ack(struct lite_conn *conn)
{
	struct lite_ring_rx *ring = conn->ring;
	struct lite_wire_ring_ack ack;

	u64 tail;

	spin_lock_bh(&ring->lock);
	tail = ring->tail;
	spin_unlock_bh(&ring->lock);
	ack.tail = cpu_to_le64(tail);
	if (lite_conn_send(conn, LITE_MSG_RING_ACK, false, 0, 0, &ack,
			   sizeof(ack))) {
		/* The sender may wait for this very ack: never lose it. */
		lite_conn_close(conn);
		return;
	}
	spin_lock_bh(&ring->lock);
	ring->acked = max(ring->acked, tail);
	spin_unlock_bh(&ring->lock);
}

/**
 * lite_rpc_work - error replies and ring acks of a connection
 * @work: conn->rpc_work, on node->cq_wq
 *
 * Runs in process context what completion handlers queued; drops the
 * connection reference taken when it was queued.
 */
void lite_rpc_work(struct work_struct *work)
{
	struct lite_conn *conn = container_of(work, struct lite_conn,
					      rpc_work);
	struct lite_rpc_in *in;
	bool ack;

	for (;;) {
		spin_lock_bh(&conn->lock);
		in = list_first_entry_or_null(&conn->rpc_errs,
					      struct lite_rpc_in, entry);
		if (in)
			list_del(&in->entry);
		ack = conn->ack_due;
		conn->ack_due = false;
		spin_unlock_bh(&conn->lock);
		if (ack)
			lite_rpc_send_ack(conn);
		if (!in)
			break;
		if (lite_conn_state(conn) != LITE_CONN_CLOSING)
			lite_rpc_write_reply(in, in->err, NULL, 0, NULL);
		lite_rpc_in_free(in);
	}
	lite_conn_put(conn);	/* the kick's */
}

/**
 * lite_rpc_ack - RING_ACK from the peer: room in its ring
 * @conn: the connection it came on
 * @msg: the one-way message: the peer's new ring tail
 *
 * Wakes writers waiting for room. A tail that goes back, or past what was
 * written, closes the connection. CQ or process context.
 */
void lite_rpc_ack(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_ring_ack *ack = msg->payload;
	u64 tail = le64_to_cpu(ack->tail);
	bool bad;

	spin_lock_bh(&conn->lock);
	bad = tail < conn->tx_ring.tail || tail > conn->tx_ring.head;
	if (!bad)
		conn->tx_ring.tail = tail;
	spin_unlock_bh(&conn->lock);
	if (bad) {
		lite_count_error(conn->node, conn->peer_id, LITE_ERR_BAD_MSG,
				 -ERANGE);
		pr_info_ratelimited("lite%u: dropping connection after bad ring ack\n",
				    conn->node->instance);
		lite_conn_close(conn);
		return;
	}
	wake_up(&conn->tx_wq);
}

/* Teardown */

/**
 * lite_rpc_conn_failed - a connection is closing: its calls fail now
 * @conn: the connection (LITE_HOOK_FAILED)
 *
 * Calls still waiting for a reply on it complete with -ECONNRESET; their
 * buffers stay until the QP is gone. Any context.
 */
void lite_rpc_conn_failed(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;
	struct lite_rcall *call;
	unsigned long id;

	xa_lock_bh(&node->rpc_calls);
	xa_for_each(&node->rpc_calls, id, call) {
		if (call->conn != conn || call->abandoned)
			continue;
		__xa_erase(&node->rpc_calls, id);
		call->status = -ECONNRESET;
		call->conn_failed = true;
		if (call->done_fn)
			call->done_fn(call);
		else
			complete(&call->done);
	}
	xa_unlock_bh(&node->rpc_calls);
}

/*
 * lmr isolation: the peer of @conn, which closed, holds the keys of the
 * reply buffers its calls used. Those the cache keeps are freed (their
 * keys invalidated); those io_uring calls still hold are not kept after.
 * The connection is CLOSING: lite_rcall_keep() keeps none for it after
 * this.
 */
static void lite_rcalls_forget(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;
	struct lite_rcall *gone[LITE_RCALL_CACHE];
	struct lite_rcall *call;
	u32 i, n = 0;

	if (!lite_isolated(node))
		return;
	spin_lock(&node->rcall_lock);
	for (i = 0; i < node->n_rcalls;) {
		if (node->rcalls[i]->keyed_for != conn) {
			i++;
			continue;
		}
		gone[n++] = lite_rcall_take(node, i);
	}
	list_for_each_entry(call, &node->rcalls_async, async)
		if (call->keyed_for == conn)
			call->keyed_for = NULL;
	spin_unlock(&node->rcall_lock);
	while (n)
		lite_rcall_free(gone[--n]);
}

/**
 * lite_rpc_conn_closed - a connection's QP is gone
 * @conn: the connection, from its close_work (LITE_HOOK_CLOSED)
 *
 * Nothing can write our buffers through it now: abandoned calls on it are
 * freed, and requests from its peer that nobody took yet, which cannot be
 * answered, are dropped.
 */
void lite_rpc_conn_closed(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;
	struct lite_service *svc;
	struct lite_rpc_in *in, *tmp;
	struct lite_rcall *call;
	unsigned long id;
	LIST_HEAD(dead);

	lite_rcalls_forget(conn);

	xa_lock_bh(&node->rpc_calls);
	xa_for_each(&node->rpc_calls, id, call) {
		/* The others were failed by lite_rpc_conn_failed(). */
		if (call->conn != conn || !call->abandoned)
			continue;
		__xa_erase(&node->rpc_calls, id);
		/* Its conn reference is not the last: close_work has one. */
		lite_rcall_free(call);
	}
	xa_unlock_bh(&node->rpc_calls);

	/* Requests from this peer nobody took yet cannot be answered. */
	rcu_read_lock();
	xa_for_each(&node->services, id, svc) {
		spin_lock_bh(&svc->lock);
		list_for_each_entry_safe(in, tmp, &svc->queue, entry)
			if (in->conn == conn)
				list_move_tail(&in->entry, &dead);
		spin_unlock_bh(&svc->lock);
	}
	rcu_read_unlock();
	list_for_each_entry_safe(in, tmp, &dead, entry) {
		list_del(&in->entry);
		lite_rpc_in_free(in);
	}
}

/**
 * lite_rpc_conn_release - free its rings
 * @conn: the connection; its last reference is gone (LITE_HOOK_RELEASE)
 */
void lite_rpc_conn_release(struct lite_conn *conn)
{
	if (conn->ring)
		lite_ring_free(conn->ring);
	conn->ring = NULL;
	kfree(conn->tx_ring.chunks);
	conn->tx_ring.chunks = NULL;
}

/* Services */

/* Take the first parked io_uring receive off @svc, if any. */
static struct lite_urecv *lite_service_unpark(struct lite_service *svc)
{
	struct lite_urecv *u;

	spin_lock_bh(&svc->lock);
	u = list_first_entry_or_null(&svc->urecvs, struct lite_urecv, entry);
	if (u)
		list_del_init(&u->entry);
	spin_unlock_bh(&svc->lock);
	return u;
}

static void lite_service_free(struct kref *ref)
{
	struct lite_service *svc = container_of(ref, struct lite_service, ref);

	kfree_rcu(svc, rcu);
}

static void lite_service_put(struct lite_service *svc)
{
	kref_put(&svc->ref, lite_service_free);
}

/* No more arrivals for @svc; what waits in its queue fails. */
static void lite_service_kill(struct lite_node *node, struct lite_service *svc,
			      int err)
{
	struct lite_rpc_in *in, *tmp;
	struct lite_urecv *u;
	LIST_HEAD(queue);

	xa_cmpxchg_bh(&node->services, svc->port, svc, NULL, GFP_KERNEL);
	spin_lock_bh(&svc->lock);
	svc->dead = true;
	list_splice_init(&svc->queue, &queue);
	spin_unlock_bh(&svc->lock);
	wake_up_all(&svc->wq);
	/* One at a time, under the lock: expiry may unpark one meanwhile. */
	while ((u = lite_service_unpark(svc)))
		u->ready(u);		/* it finds the port dead */
	list_for_each_entry_safe(in, tmp, &queue, entry) {
		list_del(&in->entry);
		if (err)
			lite_rpc_fail_in(in, err);
		else
			lite_rpc_in_free(in);
	}
}

/**
 * lite_rpc_register - register @port on @node for file @lf
 * @lf: the file that will receive the port's requests
 * @node: the node it is attached to
 * @port: the port, not 0
 *
 * Takes @lf->lock; may sleep.
 *
 * Return: 0, -EADDRINUSE if the port is registered already, or -ENOMEM.
 */
int lite_rpc_register(struct lite_file *lf, struct lite_node *node, u32 port)
{
	struct lite_service *svc;
	int ret;

	svc = kzalloc(sizeof(*svc), GFP_KERNEL);
	if (!svc)
		return -ENOMEM;
	kref_init(&svc->ref);
	svc->port = port;
	svc->node = node;
	svc->owner = lf;
	spin_lock_init(&svc->lock);
	INIT_LIST_HEAD(&svc->queue);
	INIT_LIST_HEAD(&svc->urecvs);
	init_waitqueue_head(&svc->wq);

	mutex_lock(&lf->lock);
	ret = xa_insert_bh(&node->services, port, svc, GFP_KERNEL);
	if (!ret)
		list_add_tail(&svc->file_entry, &lf->services);
	mutex_unlock(&lf->lock);
	if (ret) {
		kfree(svc);
		return ret == -EBUSY ? -EADDRINUSE : ret;
	}
	return 0;
}

/* The service @lf registered for @port, referenced; or NULL. */
static struct lite_service *lite_file_service(struct lite_file *lf, u32 port,
					      bool remove)
{
	struct lite_service *svc;

	mutex_lock(&lf->lock);
	list_for_each_entry(svc, &lf->services, file_entry) {
		if (svc->port != port)
			continue;
		if (remove)
			list_del(&svc->file_entry);
		else
			kref_get(&svc->ref);
		mutex_unlock(&lf->lock);
		return svc;
	}
	mutex_unlock(&lf->lock);
	return NULL;
}

/**
 * lite_rpc_unregister - close a port @lf registered
 * @lf: the file
 * @port: the port
 *
 * Calls waiting in its queue are answered -ECONNRESET, messages dropped;
 * receivers waiting on it return -ENOENT. Takes @lf->lock; may sleep.
 *
 * Return: 0, or -ENOENT if @lf did not register @port.
 */
int lite_rpc_unregister(struct lite_file *lf, u32 port)
{
	struct lite_service *svc = lite_file_service(lf, port, true);

	if (!svc)
		return -ENOENT;
	lite_service_kill(svc->node, svc, -ECONNRESET);
	lite_service_put(svc);
	return 0;
}

static bool lite_service_ready(void *arg)
{
	struct lite_service *svc = arg;
	bool ready;

	spin_lock_bh(&svc->lock);
	ready = svc->dead || !list_empty(&svc->queue);
	spin_unlock_bh(&svc->lock);
	return ready;
}

/* Wait for a request on @svc and take it off the queue. */
/*
 * Sleep until @svc has a request or died, a signal comes, or @timeout
 * (jiffies) passes: wait_event_interruptible_timeout() with the condition
 * lite_service_ready(), but exclusive: an arrival wakes one receiver, not
 * all of them. A receiver woken for a request it then finds taken sleeps
 * again.
 *
 * Return: the jiffies left (at least 1) if ready, 0 on timeout,
 * -ERESTARTSYS on a signal.
 */
static long lite_service_sleep(struct lite_service *svc, long timeout)
{
	DEFINE_WAIT(wait);
	long left = timeout;

	for (;;) {
		prepare_to_wait_exclusive(&svc->wq, &wait, TASK_INTERRUPTIBLE);
		if (lite_service_ready(svc)) {
			left = max(left, 1L);
			break;
		}
		if (!left)
			break;
		if (signal_pending(current)) {
			left = -ERESTARTSYS;
			break;
		}
		left = schedule_timeout(left);
	}
	finish_wait(&svc->wq, &wait);
	return left;
}

/*
 * Take the request at the head of @svc's queue if it fits @cap bytes (if
 * not: -EMSGSIZE, @len set, it stays queued). With none queued, park @u
 * if given (and not expired: -ETIMEDOUT). Return: 0, -ENOENT if the port
 * died, -EAGAIN if there was none.
 */
static int lite_service_pop(struct lite_service *svc, u64 cap, u64 *len,
			    struct lite_rpc_in **out, struct lite_urecv *u)
{
	struct lite_urecv *other = NULL;
	struct lite_rpc_in *in;
	int ret = 0;

	spin_lock_bh(&svc->lock);
	in = list_first_entry_or_null(&svc->queue, struct lite_rpc_in, entry);
	if (svc->dead) {
		ret = -ENOENT;
	} else if (in && in->e.len > cap) {
		*len = in->e.len;	/* stays queued */
		ret = -EMSGSIZE;
		other = list_first_entry_or_null(&svc->urecvs,
						 struct lite_urecv, entry);
		if (other)
			list_del_init(&other->entry);
	} else if (in) {
		list_del(&in->entry);
		*out = in;
	} else if (u && u->expired) {
		ret = -ETIMEDOUT;
	} else {
		if (u)
			list_add_tail(&u->entry, &svc->urecvs);
		ret = -EAGAIN;
	}
	spin_unlock_bh(&svc->lock);
	/* Not woken for it if we polled (or parked): another may fit it. */
	if (other)
		other->ready(other);
	if (ret == -EMSGSIZE)
		wake_up(&svc->wq);
	return ret;
}

static int lite_service_take(struct lite_service *svc, u32 timeout_ms,
			     u64 cap, u64 *len, struct lite_rpc_in **out)
{
	long timeout = timeout_ms ? (long)msecs_to_jiffies(timeout_ms) :
				    MAX_SCHEDULE_TIMEOUT;
	unsigned long deadline = jiffies + min_t(long, timeout, HZ);
	bool polled;
	long left;
	int ret;

	for (;;) {
		atomic_inc(&svc->pollers);
		polled = lite_spin_any(svc->node, READ_ONCE(svc->gap_ns),
				       lite_service_ready, svc, deadline);
		atomic_dec(&svc->pollers);
		smp_mb__after_atomic();	/* pairs with lite_rpc_deliver()'s */
		if (!polled) {
			left = lite_service_sleep(svc, timeout);
			if (!left)
				return -ETIMEDOUT;
			if (left < 0)
				return -EINTR;
			timeout = left;
		}
		ret = lite_service_pop(svc, cap, len, out, NULL);
		if (ret != -EAGAIN)
			return ret;
		/* Another thread took it. */
	}
}

/*
 * Put @in back at the head of its queue (its copy-out failed, or its file
 * holds all the calls it may); drop it if its connection is closing. The
 * close's sweep of the queues (lite_rpc_conn_closed()) may have passed
 * while @in was out: the state is read under the port's lock, which the
 * sweep takes after the connection became CLOSING, so either the sweep
 * finds @in queued or this sees CLOSING.
 */
static void lite_service_untake(struct lite_service *svc,
				struct lite_rpc_in *in)
{
	struct lite_urecv *u = NULL;
	bool dead, closing;

	spin_lock_bh(&svc->lock);
	dead = svc->dead;
	closing = lite_conn_state(in->conn) == LITE_CONN_CLOSING;
	if (!dead && !closing) {
		list_add(&in->entry, &svc->queue);
		u = list_first_entry_or_null(&svc->urecvs, struct lite_urecv,
					     entry);
		if (u)
			list_del_init(&u->entry);
	}
	spin_unlock_bh(&svc->lock);
	if (closing)
		lite_rpc_in_free(in);	/* cannot be answered */
	else if (dead)
		lite_rpc_fail_in(in, -ECONNRESET);
	else if (u)
		u->ready(u);
	else
		wake_up(&svc->wq);
}


/*
 * Reserve the lowest free slot of rpc_held for a call @lf takes: -EMFILE
 * if @lf holds rpc_held_max calls, -EBUSY if the node holds LITE_HELD_MAX,
 * -ESHUTDOWN once the node is going down. Held calls take slots from the
 * bottom, so one at a time keeps them in the xarray's head and allocates
 * nothing (cyclic indices emptied and rebuilt the tree each time: RCU
 * callbacks per call). Until lite_rpc_hold() fills it, the slot names
 * nothing: a token guessed meanwhile finds no call.
 */
static int lite_rpc_reserve(struct lite_node *node, struct lite_file *lf,
			    u32 *slot)
{
	int ret;

	xa_lock_bh(&node->rpc_held);
	if (node->rpc_down) {
		ret = -ESHUTDOWN;
	} else if (lf->rpc_held >= lite_tun(rpc_held_max)) {
		ret = -EMFILE;
	} else {
		lf->rpc_held++;	/* first: the insert may drop the lock */
		ret = __xa_alloc(&node->rpc_held, slot, NULL,
				 XA_LIMIT(0, LITE_HELD_MAX - 1), GFP_KERNEL);
		if (ret < 0)
			lf->rpc_held--;
	}
	xa_unlock_bh(&node->rpc_held);
	return ret;
}

/* A slot of rpc_held that @lf reserved goes back; the lock held. */
static void lite_rpc_unreserve_locked(struct lite_node *node,
				      struct lite_file *lf, u32 slot)
{
	lockdep_assert_held(&node->rpc_held.xa_lock);
	__xa_erase(&node->rpc_held, slot);
	lf->rpc_held--;
}

static void lite_rpc_unreserve(struct lite_node *node, struct lite_file *lf,
			       u32 slot)
{
	xa_lock_bh(&node->rpc_held);
	lite_rpc_unreserve_locked(node, lf, slot);
	xa_unlock_bh(&node->rpc_held);
}

/*
 * Hold @in, taken for @in->owner, in the @slot it reserved, under a new
 * token. A token is 32 bits (io_uring hands it out beside the sender in
 * one u64): the slot plus 1 in its low 16 bits and a generation in its
 * high ones, so a token used up stays unknown when its slot is taken
 * again (until 65,536 more holds). Return: 0, or -ESHUTDOWN if the node
 * went down since the reservation (the slot is given back).
 */
static int lite_rpc_hold(struct lite_node *node, struct lite_rpc_in *in,
			 u32 slot, u32 *token)
{
	int ret = 0;

	xa_lock_bh(&node->rpc_held);
	if (node->rpc_down) {
		lite_rpc_unreserve_locked(node, in->owner, slot);
		ret = -ESHUTDOWN;
	} else {
		*token = (u32)++node->token_gen << 16 | (slot + 1);
		in->token = *token;
		/* Reserved: the node is there, nothing to allocate. */
		__xa_store(&node->rpc_held, slot, in, GFP_ATOMIC);
	}
	xa_unlock_bh(&node->rpc_held);
	return ret;
}

/*
 * Give @in, taken off @svc's queue, to the receiver: copy its payload out,
 * and hold a call for @lf under a new token. Fills @r. A call @lf has no
 * room to hold goes back to the head of the queue.
 */
static int lite_rpc_hand_out(struct lite_file *lf, struct lite_node *node,
			     struct lite_service *svc, struct lite_rpc_in *in,
			     struct lite_rpc_recv *r)
{
	bool call = in->e.kind == LITE_RPC_CALL;
	u32 slot = 0, token;
	int ret;

	if (call) {
		ret = lite_rpc_reserve(node, lf, &slot);
		if (ret == -ESHUTDOWN) {
			lite_rpc_fail_in(in, -ECONNRESET);
			return ret;
		}
		if (ret < 0) {
			lite_service_untake(svc, in);
			return ret;
		}
	}
	ret = lite_kbuf_to_user(&in->conn->ring->buf, in->pos + in->e.hdr_len,
				u64_to_user_ptr(r->buf_ptr), in->e.len);
	if (ret) {
		if (call)
			lite_rpc_unreserve(node, lf, slot);
		lite_service_untake(svc, in);
		return ret;
	}
	r->len = in->e.len;
	r->src_node = in->e.src;
	r->token = 0;
	if (!call) {
		lite_rpc_in_free(in);
		return 0;
	}
	lite_rpc_consume(in);
	in->owner = lf;
	ret = lite_rpc_hold(node, in, slot, &token);
	if (ret < 0) {
		lite_rpc_fail_in(in, -ECONNRESET);
		return ret;
	}
	r->token = token;
	return 0;
}


/**
 * lite_rpc_recv - take the next request or message of a port
 * @lf: the file that registered the port
 * @node: the node it is attached to
 * @r: the command's arguments: port, buffer, capacity and timeout in;
 *	length, source node and token out
 *
 * Waits up to @r->timeout_ms (0: for ever), interruptibly, then copies
 * the payload to the user buffer. A call is held for @lf under the token
 * it gets, until lite_rpc_reply() (or the file's release) answers it; a
 * message gets token 0. Sleeps.
 *
 * Return: 0; -ENOENT if @lf did not register the port, or it went away;
 * -ETIMEDOUT; -EINTR on a signal; -EMSGSIZE with @r->len the size needed
 * (the request stays queued); -EFAULT (it is put back); -EMFILE if @lf
 * holds rpc_held_max calls already, -EBUSY if the node holds LITE_HELD_MAX
 * (either way a call stays queued: answer one first); -ESHUTDOWN if the
 * node goes down (the call is answered -ECONNRESET).
 */
int lite_rpc_recv(struct lite_file *lf, struct lite_node *node,
		  struct lite_rpc_recv *r)
{
	struct lite_service *svc = lite_file_service(lf, r->port, false);
	struct lite_rpc_in *in;
	int ret;

	if (!svc)
		return -ENOENT;
	ret = lite_service_take(svc, r->timeout_ms, r->buf_cap, &r->len, &in);
	if (!ret) {
		lite_fault_delay_take(node);
		ret = lite_rpc_hand_out(lf, node, svc, in, r);
	}
	lite_service_put(svc);
	return ret;
}

/**
 * lite_rpc_urecv_init - prepare an io_uring receive on a port
 * @lf: the file that registered the port
 * @u: the receive
 * @port: the port
 * @ready: called (any context) when a request arrives for it while it
 *	   is parked, or the port dies
 *
 * Return: 0 (release @u with lite_rpc_urecv_release()), or -ENOENT if @lf
 * did not register @port.
 */
int lite_rpc_urecv_init(struct lite_file *lf, struct lite_urecv *u, u32 port,
			void (*ready)(struct lite_urecv *u))
{
	u->svc = lite_file_service(lf, port, false);
	if (!u->svc)
		return -ENOENT;
	INIT_LIST_HEAD(&u->entry);
	u->expired = false;
	u->ready = ready;
	return 0;
}

/**
 * lite_rpc_urecv_try - take a request for an io_uring receive, or park it
 * @lf: the file that registered the port
 * @node: the node it is attached to
 * @u: the receive, not parked
 * @r: as for lite_rpc_recv() (its timeout is the caller's business)
 *
 * In the receiving task (user memory is written), never waits.
 *
 * Return: what lite_rpc_recv() returns; or -EAGAIN: nothing was queued
 * and @u is parked on the port until @u->ready is called for it;
 * -ETIMEDOUT if lite_rpc_urecv_expire() marked it expired.
 */
int lite_rpc_urecv_try(struct lite_file *lf, struct lite_node *node,
		       struct lite_urecv *u, struct lite_rpc_recv *r)
{
	struct lite_rpc_in *in;
	int ret;

	ret = lite_service_pop(u->svc, r->buf_cap, &r->len, &in, u);
	if (ret)
		return ret;
	return lite_rpc_hand_out(lf, node, u->svc, in, r);
}

/**
 * lite_rpc_urecv_expire - an io_uring receive's time is up
 * @u: the receive
 *
 * Process context.
 *
 * Return: true if it was parked and is not any more (the caller ends it
 * with -ETIMEDOUT); false if it is not parked: whoever tries it next gets
 * -ETIMEDOUT instead of parking it again, unless a request is there.
 */
bool lite_rpc_urecv_expire(struct lite_urecv *u)
{
	bool parked;

	spin_lock_bh(&u->svc->lock);
	u->expired = true;
	parked = !list_empty(&u->entry);
	list_del_init(&u->entry);
	spin_unlock_bh(&u->svc->lock);
	return parked;
}

/**
 * lite_rpc_urecv_cancel - an io_uring receive ends without trying
 * @u: the receive, not parked (its task or ring is going away)
 *
 * It may have been readied for a request that is still queued: that
 * request goes to the next receiver, parked or asleep.
 */
void lite_rpc_urecv_cancel(struct lite_urecv *u)
{
	struct lite_service *svc = u->svc;
	struct lite_urecv *next = NULL;
	bool queued;

	spin_lock_bh(&svc->lock);
	u->expired = true;
	queued = !list_empty(&svc->queue);
	if (queued) {
		next = list_first_entry_or_null(&svc->urecvs,
						struct lite_urecv, entry);
		if (next)
			list_del_init(&next->entry);
	}
	spin_unlock_bh(&svc->lock);
	if (next)
		next->ready(next);
	else if (queued)
		wake_up(&svc->wq);
}

/**
 * lite_rpc_urecv_release - done with an io_uring receive
 * @u: the receive, not parked (ended by its @ready or by expiry)
 */
void lite_rpc_urecv_release(struct lite_urecv *u)
{
	WARN_ON_ONCE(!list_empty(&u->entry));
	lite_service_put(u->svc);
}

/**
 * lite_rpc_reply_recv - answer a call, then take the next request
 * @lf: the open file
 * @node: its node
 * @rr: the command's arguments (checked): reply (a zero token answers
 *	nothing) in; receive as for lite_rpc_recv()
 * @sent: where user space reads the reply's token: cleared once the
 *	  reply went out, before the receive
 *
 * Sleeps.
 *
 * Return: lite_rpc_reply()'s error, with @rr->reply.token still set and
 * nothing received; -EFAULT if @sent could not be cleared (the reply went
 * out, @rr->reply.token is 0, nothing received); else, with
 * @rr->reply.token 0, what lite_rpc_recv() returns.
 */
int lite_rpc_reply_recv(struct lite_file *lf, struct lite_node *node,
			struct lite_rpc_reply_recv *rr, u64 __user *sent)
{
	int ret;

	if (rr->reply.token) {
		ret = lite_rpc_reply(lf, node, &rr->reply, lf->pins);
		if (ret)
			return ret;
		rr->reply.token = 0;	/* sent */
		if (put_user(0ULL, sent))
			return -EFAULT;
	}
	return lite_rpc_recv(lf, node, &rr->recv);
}


/* The call @token names, if @lf took it; removed from the table. */
static struct lite_rpc_in *lite_rpc_take_held(struct lite_node *node,
					      struct lite_file *lf, u64 token)
{
	struct lite_rpc_in *in;

	if (!(u16)token || token > U32_MAX)
		return NULL;
	xa_lock_bh(&node->rpc_held);
	in = xa_load(&node->rpc_held, (u16)token - 1);
	if (in && in->owner == lf && in->token == token) {
		__xa_erase(&node->rpc_held, (u16)token - 1);
		lf->rpc_held--;
	} else {
		in = NULL;
	}
	xa_unlock_bh(&node->rpc_held);
	return in;
}

/**
 * lite_rpc_reply - answer a call this file took
 * @lf: the file that took it with lite_rpc_recv()
 * @node: the node it is attached to
 * @r: the command's arguments: token, buffer and length
 * @pc: the cache of pinned buffers that may keep the buffer's pages (the
 *	reply is then sent from them in place and waited for), or NULL
 *
 * The token is used up in every case; a reply that cannot be copied from
 * user memory is answered -EREMOTEIO. Sleeps.
 *
 * Return: 0; -ENOENT if @lf holds no call under the token; -EMSGSIZE if
 * the reply is longer than the caller can take (the caller learns the
 * size); -EFAULT; or -ECONNRESET if it could not be sent.
 */
int lite_rpc_reply(struct lite_file *lf, struct lite_node *node,
		   const struct lite_rpc_reply *r, struct lite_pin_cache *pc)
{
	struct lite_rpc_in *in = lite_rpc_take_held(node, lf, r->token);
	int ret;

	if (!in)
		return -ENOENT;
	if (r->len > LITE_RPC_MAX)
		ret = lite_rpc_write_reply(in, -EMSGSIZE, NULL,
					   min_t(u64, r->len, U32_MAX), NULL);
	else
		ret = lite_rpc_write_reply(in, 0, u64_to_user_ptr(r->buf_ptr),
					   r->len, pc);
	if (ret == -EFAULT) {
		/* The caller learns that its server failed, not how. */
		if (lite_conn_state(in->conn) != LITE_CONN_CLOSING)
			lite_rpc_write_reply(in, -EREMOTEIO, NULL, 0, NULL);
	} else if (ret && ret != -EMSGSIZE) {
		ret = -ECONNRESET;
	}
	lite_rpc_in_free(in);
	return ret;
}

/* Callers */

/*
 * The size of a reply buffer for @size bytes: rounded up, so that calls
 * whose capacities differ a little can take each other's kept buffers.
 */
static u64 lite_rcall_size(u64 size)
{
	const u64 step = PAGE_SIZE << LITE_RCALL_CACHE_ORDER;

	if (size <= step)
		return PAGE_SIZE << get_order(size);
	return round_up(size, step);
}

/* The bytes of the reply buffers @node keeps. */
static u64 lite_rcall_kept_bytes(struct lite_node *node)
{
	u64 bytes = 0;
	u32 i;

	lockdep_assert_held(&node->rcall_lock);
	for (i = 0; i < node->n_rcalls; i++)
		bytes += node->rcalls[i]->buf.size;
	return bytes;
}

/*
 * A call a previous one on @node left, with the smallest reply buffer of
 * at least @size bytes and at most twice what a new one would take (a
 * small call does not take a large buffer that a large call would then
 * miss); NULL if none. In lmr isolation only one whose keys went to the
 * peer of @conn: another peer's keys would let that peer write this
 * call's reply. Its bytes are those of an earlier reply, but not its
 * header: call ids are reused at once, and a stray reply immediate must
 * not pass an earlier reply's header off as this call's (-EBADMSG). A
 * reply's header says how many of the bytes after it are its own.
 */
static struct lite_rcall *lite_rcall_cached(struct lite_node *node,
					    struct lite_conn *conn, u64 size)
{
	const u64 most = 2 * lite_rcall_size(size);
	struct lite_rcall *call = NULL;
	u32 i, best = 0;

	spin_lock(&node->rcall_lock);
	for (i = 0; i < node->n_rcalls; i++) {
		if ((lite_isolated(node) &&
		     node->rcalls[i]->keyed_for != conn) ||
		    node->rcalls[i]->buf.size < size ||
		    node->rcalls[i]->buf.size > most ||
		    (call && node->rcalls[i]->buf.size >= call->buf.size))
			continue;
		call = node->rcalls[i];
		best = i;
	}
	if (call)
		lite_rcall_take(node, best);
	spin_unlock(&node->rcall_lock);
	if (call) {
		lite_kbuf_clear(&call->buf, 0, LITE_REPLY_HDR);
		for (i = 0; i < call->buf.n_chunks; i++)
			ib_dma_sync_single_for_device(call->buf.dev,
						      call->buf.chunks[i].addr,
						      call->buf.chunks[i].len,
						      DMA_BIDIRECTIONAL);
		reinit_completion(&call->done);
		call->status = 0;
		call->len = 0;
		call->abandoned = false;
		call->conn_failed = false;
		call->done_fn = NULL;
	}
	return call;
}

/* A new call, with a reply buffer the cache can keep. */
static struct lite_rcall *lite_rcall_alloc(struct lite_node *node,
					   struct lite_conn *conn, u64 size)
{
	struct lite_rcall *call;

	call = kzalloc(sizeof(*call), GFP_KERNEL);
	if (!call)
		return NULL;
	call->node = node;
	init_completion(&call->done);
	INIT_LIST_HEAD(&call->async);
	if (lite_kbuf_alloc(&call->buf, conn, lite_rcall_size(size),
			    LITE_RPC_MAX_SEGS)) {
		kfree(call);
		return NULL;
	}
	return call;
}

/*
 * Keep @call for the node's next call; never one whose reply was
 * malformed (its connection was closed). In lmr isolation not one whose
 * keys' holder closed: @conn, the caller's reference to it, is closing,
 * or (an io_uring call's, @conn NULL) the close cleared keyed_for
 * (lite_rpc_conn_closed()). Where the cache is full (LITE_RCALL_CACHE
 * calls or LITE_RCALL_KEEP_BYTES), the calls kept longest are freed: the
 * buffer the last call used is the likelier to serve the next, and in
 * lmr isolation the cache would otherwise stay full of buffers for peers
 * no longer called. Freed under the lock, as lite_rcall_async_done()
 * frees: the node's teardown finds every buffer either here or freed.
 */
static bool lite_rcall_keep(struct lite_node *node, struct lite_rcall *call,
			    struct lite_conn *conn)
{
	lockdep_assert_held(&node->rcall_lock);
	if (lite_isolated(node) &&
	    (!call->keyed_for ||
	     (conn && lite_conn_state(conn) == LITE_CONN_CLOSING)))
		return false;
	if (call->status == -EBADMSG || node->rcalls_closed ||
	    call->buf.size > LITE_RCALL_KEEP_BYTES)
		return false;
	while (node->n_rcalls == LITE_RCALL_CACHE ||
	       lite_rcall_kept_bytes(node) + call->buf.size >
	       LITE_RCALL_KEEP_BYTES)
		lite_rcall_free(lite_rcall_take(node, 0));
	node->rcalls[node->n_rcalls++] = call;
	return true;
}

/*
 * The caller is done with @call and its reply: keep it for the node's next
 * call if there is room, else free it. Not if its connection is closing
 * (unless the call let it go after its QP was gone), or the reply was
 * malformed (its connection was closed; freed, not kept).
 */
static void lite_rcall_recycle(struct lite_rcall *call)
{
	struct lite_node *node = call->node;
	struct lite_conn *conn = call->conn;
	bool kept = false;

	/*
	 * A kept call holds no connection. Cleared before it is in the
	 * cache: from then on another caller may take it and set its own.
	 */
	call->conn = NULL;
	if (!conn)
		call->keyed_for = NULL;	/* lmr: no way to tell its holder */
	if (!conn || lite_conn_state(conn) != LITE_CONN_CLOSING) {
		spin_lock(&node->rcall_lock);
		kept = lite_rcall_keep(node, call, conn);
		spin_unlock(&node->rcall_lock);
	}
	if (!kept)
		lite_rcall_free(call);
	if (conn)
		lite_conn_put(conn);	/* after the buffer is freed */
}

/*
 * io_uring calls: their reply buffers stay mapped until the submitter's
 * task work has copied the reply out, which may be long after the node
 * went down (a DEFER_TASKRUN ring, a stopped process); the node does not
 * wait for that. While a call's task work is to come, the buffer is on
 * node->rcalls_async; the node's teardown unmaps what is there then
 * (lite_rpc_calls_orphan()), and the task work copies from the pages
 * without touching the device (synced when the reply came).
 */

/* @call's buffer is an io_uring call's now. */
static void lite_rcall_async_own(struct lite_rcall *call)
{
	struct lite_node *node = call->node;

	spin_lock(&node->rcall_lock);
	call->orphaned = false;
	call->finished = false;
	/*
	 * lmr: a close whose lite_rcalls_forget() ran before the call was on
	 * the list missed it; CLOSING was set before that ran. (The start
	 * still holds its reference to the connection.)
	 */
	if (lite_conn_state(call->conn) == LITE_CONN_CLOSING)
		call->keyed_for = NULL;
	list_add_tail(&call->async, &node->rcalls_async);
	spin_unlock(&node->rcall_lock);
}

/*
 * The call's task work is done with @call (its connection already let
 * go). Still on the list: recycled or freed under the lock, so that the
 * teardown cannot start unmapping, and the device go, before the free
 * has unmapped it. Else the teardown has it: the later of the two frees.
 */
static void lite_rcall_async_done(struct lite_rcall *call)
{
	struct lite_node *node = call->node;
	bool free_now = false;

	spin_lock(&node->rcall_lock);
	if (!list_empty(&call->async)) {
		list_del_init(&call->async);
		if (!lite_rcall_keep(node, call, NULL))
			lite_rcall_free(call);	/* holds no connection */
	} else if (call->orphaned) {
		free_now = true;
	} else {
		call->finished = true;	/* being unmapped: the teardown frees */
	}
	spin_unlock(&node->rcall_lock);
	if (free_now)
		lite_rcall_free(call);
}

/**
 * lite_rpc_calls_orphan - unmap the reply buffers io_uring calls still hold
 * @node: the node, going down; its connections are gone (so no call
 *	  starts, and none of those buffers is written any more)
 *
 * Their task work copies the replies out later, from the pages, and frees
 * them (or this does, if it came first). Sleeps.
 */
void lite_rpc_calls_orphan(struct lite_node *node)
{
	struct lite_rcall *call;
	bool finished;

	for (;;) {
		spin_lock(&node->rcall_lock);
		call = list_first_entry_or_null(&node->rcalls_async,
						struct lite_rcall, async);
		if (call)
			list_del_init(&call->async);
		spin_unlock(&node->rcall_lock);
		if (!call)
			return;
		lite_kbuf_unmap(&call->buf);
		spin_lock(&node->rcall_lock);
		call->orphaned = true;
		finished = call->finished;
		spin_unlock(&node->rcall_lock);
		if (finished)
			lite_rcall_free(call);
	}
}

static int lite_rcall_start(struct lite_node *node, struct lite_conn *conn,
			    u64 cap, struct lite_rcall **out)
{
	struct lite_rcall *call;
	u32 slot = 0;
	int ret;

	call = lite_rcall_cached(node, conn, LITE_REPLY_HDR + cap);
	if (!call)
		call = lite_rcall_alloc(node, conn, LITE_REPLY_HDR + cap);
	if (!call)
		return -ENOMEM;
	call->cap = cap;
	call->conn = conn;
	call->keyed_for = conn;
	call->keyed_peer = conn->peer_id;
	/*
	 * lite_conn_close() marks the connection CLOSING before it fails the
	 * calls under this lock. The insert may drop the lock to allocate,
	 * so a close can slip in between: lite_ring_write() checks CLOSING
	 * again, and the caller then takes the call out itself.
	 */
	xa_lock_bh(&node->rpc_calls);
	ret = lite_conn_state(conn) == LITE_CONN_CLOSING ? -ECONNRESET :
	      __xa_alloc(&node->rpc_calls, &slot, call,
			 XA_LIMIT(0, LITE_IMM_REPLY - 2), GFP_KERNEL);
	call->id = slot + 1;	/* ids start at 1 */
	xa_unlock_bh(&node->rpc_calls);
	if (ret < 0)
		goto err_free;
	*out = call;
	return 0;
err_free:
	call->conn = NULL;	/* the caller's reference stays the caller's */
	lite_kbuf_free(&call->buf);
	kfree(call);
	return ret;
}

/*
 * The caller is done with @call (the reply came, or it gave up first).
 * Return: whether the caller still owns it; if not, the table does.
 */
static bool lite_rcall_leave(struct lite_node *node, struct lite_rcall *call,
			     bool abandon)
{
	bool pending;

	xa_lock_bh(&node->rpc_calls);
	pending = xa_load(&node->rpc_calls, call->id - 1) == call;
	if (pending && abandon)
		call->abandoned = true;
	else if (pending)
		__xa_erase(&node->rpc_calls, call->id - 1);
	xa_unlock_bh(&node->rpc_calls);
	if (pending && abandon)
		return false;
	if (!pending)
		wait_for_completion(&call->done);	/* completing now */
	return true;
}

/* The entry of a call: its request (call id and reply buffer to come). */
static struct lite_rpc_out lite_rpc_call_out(const struct lite_rpc_call *a)
{
	return (struct lite_rpc_out) {
		.kind = LITE_RPC_CALL,
		.port = a->port,
		.reply_cap = a->reply_cap,
		.data = u64_to_user_ptr(a->req_ptr),
		.len = a->req_len,
	};
}

/**
 * lite_rpc_call - call a port on a node and wait for the reply
 * @node: our node
 * @a: the command's arguments (checked by lite_rpc_call_check()): node
 *	(0: ourselves), port, request, reply buffer and timeout in; reply
 *	length out
 * @pc: the cache of pinned buffers that may keep the request's pages (it
 *	is then sent from them in place), or NULL
 *
 * Writes the request into the peer's ring, then waits (killably) for the
 * reply in a buffer made for this call; a caller that gives up leaves the
 * buffer until nothing can write it any more. Sleeps.
 *
 * Return: 0 with the reply copied out and @a->reply_len set; -EMSGSIZE
 * with @a->reply_len the size the reply needed; -ENOTCONN without a
 * connection; -ETIMEDOUT; -EINTR; -ECONNRESET; -EFAULT; -ENOMEM;
 * -EBADMSG for a malformed reply; or the server side's status (-ENOENT if
 * nobody serves the port, -EREMOTEIO, ...).
 */
int lite_rpc_call(struct lite_node *node, struct lite_rpc_call *a,
		  struct lite_pin_cache *pc)
{
	unsigned long deadline = jiffies +
		msecs_to_jiffies(a->timeout_ms ?: LITE_RPC_TIMEOUT_MS);
	struct lite_rpc_out o = lite_rpc_call_out(a);
	struct lite_rpc_zc zc = { .pc = pc };
	struct lite_rcall *call;
	struct lite_conn *conn;
	struct lite_rpc_tx tx;
	long left;
	u16 peer;
	int ret;

	conn = lite_node_conn_wait(node, a->node_id ?: READ_ONCE(node->self_id),
				   lite_tun_deadline(conn_wait_ms));
	if (!conn)
		return -ENOTCONN;
	peer = conn->peer_id;	/* the call owns @conn's reference below */
	ret = lite_rcall_start(node, conn, a->reply_cap, &call);
	if (ret) {
		lite_conn_put(conn);
		return ret;
	}
	o.call_id = call->id;
	o.reply_buf = &call->buf;
	o.zc = &zc;
	lite_rpc_tx_init(&tx, conn, NULL);
	ret = lite_ring_write(conn, &o, deadline, false, &tx);
	if (!ret)
		trace_lite_rpc_call(node->instance, peer, a->port, o.call_id,
				    a->req_len);
	if (ret) {
		/* Not sent, or the connection is closing. */
		lite_rpc_tx_finish(&tx, ret);
		lite_rcall_leave(node, call, false);
		if (lite_conn_state(conn) == LITE_CONN_CLOSING)
			wait_for_completion(&conn->closed);
		goto free;
	}
	/* The reply first: the request's completion is there by then. */
	left = lite_wait_done(node, call->conn, &call->done,
			      max_t(long, (long)(deadline - jiffies), 1), true);
	lite_rpc_tx_finish(&tx, 0);	/* failures closed the connection */
	if (left <= 0 && !lite_rcall_leave(node, call, true)) {
		lite_count_error(node, peer, LITE_ERR_TIMEOUT,
				 left ? -EINTR : -ETIMEDOUT);
		return left ? -EINTR : -ETIMEDOUT;
	}
	ret = call->status;
	if (call->conn_failed)
		wait_for_completion(&conn->closed);
	if (!ret || ret == -EMSGSIZE)
		a->reply_len = call->len;
	if (!ret && call->len)
		ret = lite_kbuf_to_user(&call->buf, LITE_REPLY_HDR,
					u64_to_user_ptr(a->reply_ptr),
					call->len);
	lite_rcall_recycle(call);
	return ret;
free:
	lite_rcall_free(call);
	return ret;
}

/* Asynchronous calls (io_uring) */

/*
 * A call made through io_uring: started without waiting for anything.
 * Three events end it - the start returning, the request's work requests
 * completing, and the call's outcome (its reply, its connection's failure,
 * or the timer giving up). After the last, the call lets the connection
 * go (lite_acall_event()) and runs @done_fn, which has
 * lite_rpc_acall_finish() run in the caller's task.
 */
struct lite_acall {
	struct lite_node *node;
	struct lite_conn *conn;		/* referenced until the last event */
	struct lite_rcall *call;	/* the table's once timed out */
	struct lite_rpc_tx tx;
	struct completion tx_done;
	struct delayed_work expire;
	struct work_struct work;	/* after the last event, if it failed */
	bool timed_out;			/* set by the timer, before its event */
	atomic_t events;		/* start, request, outcome */
	void (*done_fn)(void *arg);
	void *arg;
};

/*
 * After the last event the call lets its connection go, not in the
 * caller's task work, which a node going down must not wait for; then
 * @done_fn has the rest done there. A reference already dropped by
 * lite_conn_put_not_last() is NULL.
 */
static void lite_acall_release(struct lite_acall *ac)
{
	if (!ac->timed_out && ac->call->conn) {
		lite_conn_put(ac->call->conn);
		ac->call->conn = NULL;
	}
	if (ac->conn) {
		lite_conn_put(ac->conn);
		ac->conn = NULL;
	}
	ac->done_fn(ac->arg);
}

/*
 * A call that timed out, whose connection's close failed it, or whose
 * reference may be the connection's last: in a work item, which may wait
 * for the QP to be gone (nothing writes the reply buffer after) and free
 * the connection.
 */
static void lite_acall_work(struct work_struct *work)
{
	struct lite_acall *ac = container_of(work, struct lite_acall, work);

	if (!ac->timed_out && ac->call->conn_failed)
		wait_for_completion(&ac->conn->closed);
	lite_acall_release(ac);
}

/*
 * One of the three events. After the last, the common case - a reply,
 * its request done - is released at once, in the connection's completion
 * context (or the start's), provided neither reference it drops is the
 * connection's last (that one frees in a work item; it takes a mutex).
 */
static void lite_acall_event(struct lite_acall *ac)
{
	struct lite_rcall *call = ac->call;

	if (!atomic_dec_and_test(&ac->events))
		return;
	/* The reply's bytes, for a copy that touches no device. */
	if (!ac->timed_out && !call->status && call->len)
		lite_kbuf_sync_for_cpu(&call->buf, LITE_REPLY_HDR, call->len);
	if (!ac->timed_out && !ac->call->conn_failed &&
	    lite_conn_put_not_last(&ac->call->conn) &&
	    lite_conn_put_not_last(&ac->conn)) {
		lite_acall_release(ac);
		return;
	}
	queue_work(lite_wq, &ac->work);
}

static void lite_acall_tx_done(struct lite_rdma_op *op)
{
	struct lite_acall *ac = container_of(op, struct lite_acall, tx.op);

	/*
	 * The request's WRs are done with the staging: give it back now, not
	 * at the reply (up to a minute later), while the connection, and so
	 * the device, are certainly there.
	 */
	lite_stage_put(&ac->tx.s);
	complete(&ac->tx_done);
	lite_acall_event(ac);
}

/* The reply came, or the connection failed (rpc_calls lock held). */
static void lite_acall_replied(struct lite_rcall *call)
{
	lite_acall_event(call->arg);
}

/* The call's time is up: leave its buffer to the table. */
static void lite_acall_expire(struct work_struct *work)
{
	struct lite_acall *ac = container_of(to_delayed_work(work),
					     struct lite_acall, expire);
	struct lite_node *node = ac->node;
	struct lite_rcall *call = ac->call;
	bool mine;

	/*
	 * The table may free @call as soon as it is abandoned and the table
	 * unlocked: it leaves node->rcalls_async before (the rcall_lock is
	 * never taken inside the table's lock, which is taken in softirq).
	 */
	spin_lock(&node->rcall_lock);
	xa_lock_bh(&node->rpc_calls);
	mine = xa_load(&node->rpc_calls, call->id - 1) == call &&
	       !call->abandoned;
	if (mine) {
		call->abandoned = true;	/* freed when nothing can write it */
		call->done_fn = NULL;
		list_del_init(&call->async);	/* the table's now */
	}
	xa_unlock_bh(&node->rpc_calls);
	spin_unlock(&node->rcall_lock);
	if (mine) {
		ac->timed_out = true;
		lite_count_error(node, ac->conn->peer_id, LITE_ERR_TIMEOUT,
				 -ETIMEDOUT);
		lite_acall_event(ac);
	}
}

/*
 * From now on the call's outcome is an event of @ac's; if it came already
 * (the call left the table), count it here.
 */
static void lite_acall_arm(struct lite_acall *ac)
{
	struct lite_node *node = ac->node;
	struct lite_rcall *call = ac->call;
	bool pending;

	xa_lock_bh(&node->rpc_calls);
	pending = xa_load(&node->rpc_calls, call->id - 1) == call;
	if (pending && !call->abandoned) {
		call->arg = ac;
		call->done_fn = lite_acall_replied;
	}
	xa_unlock_bh(&node->rpc_calls);
	if (!pending) {
		wait_for_completion(&call->done);	/* completing now */
		lite_acall_event(ac);
	}
	/* Abandoned: the timer counted it. */
}

/* Undo a start whose request was not sent (or the connection closes). */
static void lite_acall_unwind(struct lite_acall *ac)
{
	lite_rdma_op_release(&ac->tx.op);
	wait_for_completion(&ac->tx_done);	/* its staging is back */
	lite_rcall_leave(ac->node, ac->call, false);
	if (lite_conn_state(ac->conn) == LITE_CONN_CLOSING)
		wait_for_completion(&ac->conn->closed);
	lite_rcall_free(ac->call);
}

/**
 * lite_rpc_acall_start - start an RPC call without waiting
 * @node: our node
 * @a: the call's arguments, checked by lite_rpc_call_check()
 * @done_fn: run once (any context) when lite_rpc_acall_finish() can run
 * @arg: for @done_fn
 * @out: the call, for lite_rpc_acall_finish(); set before @done_fn runs
 *
 * Writes the request into the peer's ring if that needs no waiting: a
 * connection and its ring are there, nobody else is writing the ring, it
 * has room and the request fits one staging step. Posting may still wait
 * for a send slot or credit briefly. May sleep (allocations).
 *
 * Return: 0 once started; -EAGAIN if it would have to wait (nothing was
 * sent: make the call with lite_rpc_call()); else what lite_rpc_call()
 * returns for a call that could not be sent.
 */
int lite_rpc_acall_start(struct lite_node *node, const struct lite_rpc_call *a,
			 void (*done_fn)(void *arg), void *arg,
			 struct lite_acall **out)
{
	struct lite_rpc_out o = lite_rpc_call_out(a);
	struct lite_acall *ac;
	struct lite_conn *conn;
	int ret;

	if (lite_rpc_entry_size(LITE_RPC_MAX_SEGS, a->req_len) > LITE_STAGE_MAX)
		return -EAGAIN;
	conn = lite_node_conn(node, a->node_id ?: READ_ONCE(node->self_id));
	if (!conn)
		return -EAGAIN;
	ret = -EAGAIN;
	if (lite_conn_state(conn) != LITE_CONN_READY ||
	    !READ_ONCE(conn->tx_ring.ready))
		goto put_conn;
	ret = -ENOMEM;
	ac = kzalloc(sizeof(*ac), GFP_KERNEL_ACCOUNT);
	if (!ac)
		goto put_conn;
	ac->node = node;
	ac->conn = conn;
	init_completion(&ac->tx_done);
	INIT_DELAYED_WORK(&ac->expire, lite_acall_expire);
	INIT_WORK(&ac->work, lite_acall_work);
	atomic_set(&ac->events, 3);
	ac->done_fn = done_fn;
	ac->arg = arg;
	lite_conn_get(conn);		/* the call's */
	ret = lite_rcall_start(node, conn, a->reply_cap, &ac->call);
	if (ret) {
		lite_conn_put(conn);
		goto free_ac;
	}
	o.call_id = ac->call->id;
	o.reply_buf = &ac->call->buf;
	lite_rpc_tx_init(&ac->tx, conn, lite_acall_tx_done);
	ret = lite_ring_write(conn, &o, 0, true, &ac->tx);
	if (ret) {
		lite_acall_unwind(ac);
		goto free_ac;
	}
	trace_lite_rpc_call(node->instance, conn->peer_id, a->port,
			    o.call_id, a->req_len);
	lite_rcall_async_own(ac->call);
	lite_rdma_op_release(&ac->tx.op);
	*out = ac;
	lite_acall_arm(ac);
	/* After arming: the timer must not abandon a call arming counts. */
	queue_delayed_work(lite_wq, &ac->expire,
			   msecs_to_jiffies(a->timeout_ms ?:
					    LITE_RPC_TIMEOUT_MS));
	lite_acall_event(ac);		/* ours: @ac is not ours any more */
	return 0;

free_ac:
	kfree(ac);
put_conn:
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_rpc_acall_finish - end a call lite_rpc_acall_start() started
 * @ac: the call; freed here
 * @a: its arguments (the reply buffer)
 * @reply_len: set to the reply's length (also on -EMSGSIZE)
 *
 * In the caller's task, after its done_fn ran: copies the reply out (not
 * from an exiting task or a kernel thread: -ECANCELED).
 *
 * Return: as lite_rpc_call().
 */
int lite_rpc_acall_finish(struct lite_acall *ac, const struct lite_rpc_call *a,
			  u64 *reply_len)
{
	struct lite_rcall *call = ac->call;
	int ret = -ETIMEDOUT;

	cancel_delayed_work_sync(&ac->expire);	/* it finds nothing to do */
	if (ac->timed_out)
		goto out;
	ret = call->status;
	if (!ret || ret == -EMSGSIZE)
		*reply_len = call->len;
	if (!ret && call->len) {
		if (current->flags & (PF_EXITING | PF_KTHREAD))
			ret = -ECANCELED;
		else
			ret = lite_kbuf_synced_to_user(&call->buf,
						       LITE_REPLY_HDR,
						       u64_to_user_ptr(a->reply_ptr),
						       call->len);
	}
	lite_rcall_async_done(call);
out:
	kfree(ac);
	return ret;
}

/**
 * lite_rpc_send_msg - send a one-way message to a port on a node
 * @node: our node
 * @m: the command's arguments: node (0: ourselves), port, buffer and
 *	timeout
 *
 * Nobody confirms that a server took it. Sleeps.
 *
 * Return: 0 once it is in the peer's ring; -ENOTCONN without a
 * connection; -ETIMEDOUT if the ring had no room in time; -EINTR; -EFAULT;
 * -ENOMEM; -ECONNRESET; or another transport error.
 */
int lite_rpc_send_msg(struct lite_node *node, const struct lite_msg_send *m)
{
	unsigned long deadline = jiffies +
		msecs_to_jiffies(m->timeout_ms ?: LITE_RPC_TIMEOUT_MS);
	struct lite_rpc_out o = {
		.kind = LITE_RPC_MSG,
		.port = m->port,
		.data = u64_to_user_ptr(m->buf_ptr),
		.len = m->len,
	};
	struct lite_conn *conn;
	struct lite_rpc_tx tx;
	int ret;

	conn = lite_node_conn_wait(node, m->node_id ?: READ_ONCE(node->self_id),
				   lite_tun_deadline(conn_wait_ms));
	if (!conn)
		return -ENOTCONN;
	lite_rpc_tx_init(&tx, conn, NULL);
	tx.op.confirm = true;	/* 0 only once the peer's HCA has it */
	ret = lite_ring_write(conn, &o, deadline, false, &tx);
	ret = lite_rpc_tx_finish(&tx, ret);
	lite_conn_put(conn);
	return ret;
}

/*
 * Take one entry of node->rpc_held that @lf owns (any, if @lf is NULL),
 * at slot *@from or above; *@from moves past it. For a file being
 * released or a node going down: no new entry of theirs comes below.
 */
static struct lite_rpc_in *lite_rpc_take_any(struct lite_node *node,
					     struct lite_file *lf,
					     unsigned long *from)
{
	struct lite_rpc_in *in, *found = NULL;
	unsigned long slot;

	xa_lock_bh(&node->rpc_held);
	xa_for_each_start(&node->rpc_held, slot, in, *from) {
		if (lf && in->owner != lf)
			continue;
		__xa_erase(&node->rpc_held, slot);
		/* Its owner is open: its release takes its calls first. */
		in->owner->rpc_held--;
		found = in;
		*from = slot + 1;
		break;
	}
	xa_unlock_bh(&node->rpc_held);
	return found;
}

/**
 * lite_rpc_file_release - closing a file: its ports close
 * @lf: the file
 *
 * Calls queued on its ports and the calls it took but did not answer are
 * answered -ECONNRESET; queued messages are dropped.
 */
void lite_rpc_file_release(struct lite_file *lf)
{
	struct lite_node *node = lf->node;
	struct lite_service *svc, *tmp;
	struct lite_rpc_in *in;
	unsigned long from = 0;

	list_for_each_entry_safe(svc, tmp, &lf->services, file_entry) {
		list_del(&svc->file_entry);
		lite_service_kill(node, svc, -ECONNRESET);
		lite_service_put(svc);
	}
	if (!node)
		return;
	while ((in = lite_rpc_take_any(node, lf, &from))) {
		lite_rpc_fail_in(in, -ECONNRESET);
		cond_resched();
	}
}

/**
 * lite_rpc_node_down - the node goes down
 * @node: the node
 *
 * No more tokens are given out; what was queued or taken is dropped and
 * every port closes; the reply buffers kept for calls are freed. Called before its connections are closed: what it holds keeps
 * them alive.
 */
void lite_rpc_node_down(struct lite_node *node)
{
	struct lite_rcall *kept[LITE_RCALL_CACHE];
	struct lite_service *svc;
	struct lite_rpc_in *in;
	unsigned long id, from = 0;
	u32 n;

	xa_lock_bh(&node->rpc_held);
	node->rpc_down = true;
	xa_unlock_bh(&node->rpc_held);
	while ((in = lite_rpc_take_any(node, NULL, &from))) {
		lite_rpc_in_free(in);
		cond_resched();
	}
	spin_lock(&node->rcall_lock);
	node->rcalls_closed = true;
	n = node->n_rcalls;
	node->n_rcalls = 0;
	memcpy(kept, node->rcalls, sizeof(kept));
	spin_unlock(&node->rcall_lock);
	while (n)
		lite_rcall_free(kept[--n]);
	for (;;) {
		rcu_read_lock();
		xa_for_each(&node->services, id, svc)
			if (kref_get_unless_zero(&svc->ref))
				break;
		rcu_read_unlock();
		if (!svc)
			break;
		lite_service_kill(node, svc, 0);	/* erases it */
		lite_service_put(svc);
	}
}

/* Entries on @head; its lock held. */
static u32 lite_list_len(const struct list_head *head)
{
	const struct list_head *pos;
	u32 n = 0;

	list_for_each(pos, head)
		n++;
	return n;
}

/* Entries in @xa (RCU: a count that may be stale as soon as it is made). */
static u32 lite_xa_count(struct xarray *xa)
{
	unsigned long id;
	void *entry;
	u32 n = 0;

	xa_for_each(xa, id, entry)
		n++;
	return n;
}

/**
 * lite_rpc_show - the node's RPC state (debugfs "rpc")
 * @m: the file
 * @node: the node
 *
 * "KEY VALUE" lines: calls_in_flight (calls from here waiting for their
 * replies, or abandoned and waiting for the write that would land) and
 * requests_held (taken by a server, not yet answered); then a blank line,
 * a header and one line per port served here: requests queued for a
 * receiver, io_uring receives parked, receivers polling, and whether the
 * port is closing; then a blank line, a header and one line per reply
 * buffer kept for the next calls: the peer its keys went to, its bytes,
 * and its first chunk's address and key.
 *
 * Return: 0.
 */
int lite_rpc_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_service *svc;
	struct lite_rcall *call;
	unsigned long port;
	u32 i;

	seq_printf(m, "calls_in_flight %u\nrequests_held %u\n\n",
		   lite_xa_count(&node->rpc_calls),
		   lite_xa_count(&node->rpc_held));
	seq_puts(m, "port queued urecvs pollers dead\n");
	rcu_read_lock();
	xa_for_each(&node->services, port, svc) {
		spin_lock_bh(&svc->lock);
		seq_printf(m, "%lu %u %u %d %s\n", port,
			   lite_list_len(&svc->queue),
			   lite_list_len(&svc->urecvs),
			   atomic_read(&svc->pollers),
			   svc->dead ? "true" : "false");
		spin_unlock_bh(&svc->lock);
	}
	rcu_read_unlock();
	/* The reply buffers kept for the next calls, and whose keys. */
	seq_puts(m, "\nkept_for bytes addr rkey\n");
	spin_lock(&node->rcall_lock);
	for (i = 0; i < node->n_rcalls; i++) {
		call = node->rcalls[i];
		seq_printf(m, "%u %llu 0x%llx 0x%x\n", call->keyed_peer,
			   call->buf.size, call->buf.chunks[0].addr,
			   call->buf.chunks[0].rkey);
	}
	spin_unlock(&node->rcall_lock);
	return 0;
}
