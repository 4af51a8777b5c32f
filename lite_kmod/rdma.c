// SPDX-License-Identifier: GPL-2.0
/*
 * One-sided operations on LMRs: RDMA READ/WRITE between a kernel buffer
 * (user data is copied through it) and the LMR's chunks on its memory
 * node, atomics on one 8-byte word, memset and LMR-to-LMR copy. The caller
 * has checked handle, permission and bounds. Each transfer step holds
 * lite_lmr_begin() while its work requests are posted and in flight, and
 * never across a user page fault: revocation waits one step at most.
 * Asynchronous operations (uring.c) queue behind a connection's free data
 * slots (lite_rdma_submit()) and end their access on completion.
 *
 * Every work request posted here has its own completion through one shared
 * ib_cqe; a transfer step waits for all of them. The exception is inline
 * data (small RPC entries and replies): nothing of the poster's is read
 * after the post, so those go unsignaled and one in LITE_FF_EVERY gives
 * the data slots back (lite_rdma_ff_prep()). A step that does not
 * complete in time closes the connection: the drain then completes every
 * request (flushed) before the buffers go away.
 *
 * Long operations stop between steps on a fatal signal (-EINTR): a step's
 * posted work requests use its buffers until they complete, so the step in
 * progress is waited for - at most LITE_BOUNCE_SIZE or LITE_PIN_PAGES
 * pages, milliseconds - but no new one starts.
 */
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <linux/mm.h>

#include "internal.h"

#define LITE_MAX_SEGS	32

/*
 * Post the WRs of the asynchronous operations queued on @conn, in order,
 * while data slots last beyond the LITE_DATA_SYNC_SLOTS kept for
 * synchronous posters (RPC ring writes, ioctls), which would otherwise
 * starve behind a long queue. Operations whose WR failed to post move to
 * @failed. Caller holds conn->lock; the connection is not closing.
 */
static void lite_rdma_kick(struct lite_conn *conn, struct list_head *failed)
{
	struct lite_rdma_op *op;
	int ret;

	while ((op = list_first_entry_or_null(&conn->aops, struct lite_rdma_op,
					      entry))) {
		ret = 0;
		while (op->n_posted < op->n_wrs &&
		       conn->data_avail > LITE_DATA_SYNC_SLOTS) {
			ret = lite_fault_fail_post(conn->node) ? -EIO :
			      ib_post_send(conn->cm_id->qp,
					   &op->wrs[op->n_posted].wr, NULL);
			if (ret)
				break;
			conn->data_avail--;
			op->n_posted++;
		}
		if (ret) {
			cmpxchg(&op->status, 0, ret);
			list_move_tail(&op->entry, failed);
			continue;
		}
		if (op->n_posted < op->n_wrs)
			break;		/* out of slots: the next completion */
		list_del_init(&op->entry);
	}
}

/* Account the WRs that operations on @failed will never post. */
static void lite_rdma_fail(struct list_head *failed)
{
	struct lite_rdma_op *op, *tmp;

	list_for_each_entry_safe(op, tmp, failed, entry) {
		list_del_init(&op->entry);
		if (atomic_sub_and_test(op->n_wrs - op->n_posted,
					&op->pending))
			op->done_fn(op);
	}
}

/**
 * lite_rdma_aop_work - post a connection's queued asynchronous operations
 * @work: conn->aop_work, on node->cq_wq
 *
 * Kicks @conn's queue in process context (see lite_rdma_done()); the
 * operations whose WR failed to post are failed.
 */
void lite_rdma_aop_work(struct work_struct *work)
{
	struct lite_conn *conn = container_of(work, struct lite_conn,
					      aop_work);
	LIST_HEAD(failed);

	spin_lock_bh(&conn->lock);
	if (conn->state != LITE_CONN_CLOSING)
		lite_rdma_kick(conn, &failed);
	spin_unlock_bh(&conn->lock);
	lite_rdma_fail(&failed);
}

/*
 * @n data slots are free again: post what is queued. Not from the CQ
 * workqueue, whose poll loop has no budget it yields at: on a device that
 * completes inline (rxe) each post would feed that loop again.
 */
static void lite_rdma_slots_back(struct lite_conn *conn, struct ib_cq *cq,
				 u32 n)
{
	bool defer = false;
	LIST_HEAD(failed);

	spin_lock_bh(&conn->lock);
	conn->data_avail += n;
	if (conn->state != LITE_CONN_CLOSING && !list_empty(&conn->aops)) {
		if (cq->poll_ctx == IB_POLL_WORKQUEUE)
			defer = true;
		else
			lite_rdma_kick(conn, &failed);
	}
	spin_unlock_bh(&conn->lock);
	if (defer)
		queue_work(conn->node->cq_wq, &conn->aop_work);
	lite_rdma_fail(&failed);
	wake_up(&conn->tx_wq);
}

static void lite_rdma_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_rdma_op *op = container_of(wc->wr_cqe, struct lite_rdma_op,
					       cqe);
	struct lite_conn *conn = op->conn;

	if (wc->status != IB_WC_SUCCESS) {
		cmpxchg(&op->status, 0, wc->status == IB_WC_WR_FLUSH_ERR ?
			-ECONNRESET : -EIO);
		/* The QP is in error now: nothing more goes through it. */
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			lite_conn_close(conn);
	}
	lite_rdma_slots_back(conn, cq, 1);
	if (atomic_dec_and_test(&op->pending)) {
		if (op->done_fn)
			op->done_fn(op);	/* may free @op */
		else
			complete(&op->done);
	}
}

/*
 * A signaled inline WR completed: the unsignaled ones before it did too.
 * A failed one (signaled or not: errors always complete) leaves a QP in
 * error, whose slots nobody needs any more.
 */
static void lite_rdma_ff_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_rdma_ff *ff = container_of(wc->wr_cqe, struct lite_rdma_ff,
					       cqe);

	if (wc->status == IB_WC_SUCCESS)
		lite_rdma_slots_back(ff->conn, cq, ff->n);
	else if (wc->status != IB_WC_WR_FLUSH_ERR)
		lite_conn_close(ff->conn);
}

/**
 * lite_rdma_conn_init - a new connection's data slots
 * @conn: the connection, not yet visible to anyone
 */
void lite_rdma_conn_init(struct lite_conn *conn)
{
	u32 i;

	conn->data_avail = LITE_DATA_WRS;
	for (i = 0; i < LITE_DATA_WRS; i++) {
		conn->ff[i].cqe.done = lite_rdma_ff_done;
		conn->ff[i].conn = conn;
	}
}

/*
 * An inline WR goes unsignaled, its completion the connection's: nothing
 * of the poster's is read after the post. One in LITE_FF_EVERY, or any
 * when data slots run short, is signaled and gives back the slots of
 * those before it. Returns whether it is signaled (for the undo).
 */
static bool lite_rdma_ff_prep(struct lite_conn *conn, struct ib_send_wr *wr)
{
	struct lite_rdma_ff *ff = &conn->ff[conn->ff_next];

	lockdep_assert_held(&conn->lock);
	wr->wr_cqe = &ff->cqe;
	if (++conn->ff_unsig < LITE_FF_EVERY &&
	    conn->data_avail > LITE_DATA_SYNC_SLOTS) {
		wr->send_flags &= ~IB_SEND_SIGNALED;
		return false;
	}
	wr->send_flags |= IB_SEND_SIGNALED;
	ff->n = conn->ff_unsig;
	conn->ff_unsig = 0;
	conn->ff_next = (conn->ff_next + 1) % LITE_DATA_WRS;
	return true;
}

/* The WR lite_rdma_ff_prep() prepared was not posted. */
static void lite_rdma_ff_undo(struct lite_conn *conn, bool signaled)
{
	lockdep_assert_held(&conn->lock);
	if (!signaled) {
		conn->ff_unsig--;
		return;
	}
	conn->ff_next = (conn->ff_next + LITE_DATA_WRS - 1) % LITE_DATA_WRS;
	conn->ff_unsig = conn->ff[conn->ff_next].n - 1;
}

/**
 * lite_rdma_op_init - start an operation on @conn
 * @op: the operation
 * @conn: the connection its WRs go on; the caller keeps a reference until
 *	the operation is over
 * @done_fn: for an asynchronous operation, else NULL
 *
 * With @done_fn it is asynchronous: the function runs once every posted
 * WR completed (in completion context), or once the rest can never be
 * posted (wherever that is found: submission, a completion,
 * lite_conn_close()), at the latest in lite_rdma_op_release(); else
 * lite_rdma_op_wait() waits for them.
 */
void lite_rdma_op_init(struct lite_rdma_op *op, struct lite_conn *conn,
		       void (*done_fn)(struct lite_rdma_op *op))
{
	op->cqe.done = lite_rdma_done;
	op->conn = conn;
	op->done_fn = done_fn;
	init_completion(&op->done);
	atomic_set(&op->pending, 1);
	op->status = 0;
	op->inline_data = false;
	op->confirm = false;
	op->posted_fn = NULL;
	INIT_LIST_HEAD(&op->entry);
	op->wrs = NULL;
	op->n_wrs = 0;
	op->n_posted = 0;
}

/**
 * lite_rdma_submit - post the @n prepared WRs of asynchronous @op
 * @op: the operation, with a done_fn
 * @wrs: the WRs; completion fields are filled in here
 * @n: how many
 *
 * Never waits: what finds no free data slot is queued on the connection
 * and posted, in submission order, as earlier work requests complete. A
 * failure (the connection closing, a post error) lands in op->status; the
 * op's done_fn runs in every case once the caller released the op and the
 * posted WRs completed. @wrs must live until then. Takes conn->lock.
 */
void lite_rdma_submit(struct lite_rdma_op *op, union lite_wr *wrs, u32 n)
{
	struct lite_conn *conn = op->conn;
	LIST_HEAD(failed);
	u32 i;

	for (i = 0; i < n; i++) {
		wrs[i].wr.wr_cqe = &op->cqe;
		wrs[i].wr.send_flags = IB_SEND_SIGNALED;
		wrs[i].wr.next = NULL;
	}
	op->wrs = wrs;
	op->n_wrs = n;
	op->n_posted = 0;
	atomic_add(n, &op->pending);
	spin_lock_bh(&conn->lock);
	if (conn->state == LITE_CONN_CLOSING) {
		cmpxchg(&op->status, 0, -ECONNRESET);
		list_add_tail(&op->entry, &failed);
	} else {
		list_add_tail(&op->entry, &conn->aops);
		lite_rdma_kick(conn, &failed);
	}
	spin_unlock_bh(&conn->lock);
	lite_rdma_fail(&failed);
}

/**
 * lite_rdma_conn_closed - fail the asynchronous operations not yet posted
 * @conn: the connection, which is closing (LITE_HOOK_FAILED)
 *
 * They fail with -ECONNRESET; the done_fn of those with nothing left in
 * flight runs here. Any context.
 */
void lite_rdma_conn_closed(struct lite_conn *conn)
{
	struct lite_rdma_op *op;
	LIST_HEAD(failed);

	spin_lock_bh(&conn->lock);
	list_splice_init(&conn->aops, &failed);
	spin_unlock_bh(&conn->lock);
	list_for_each_entry(op, &failed, entry)
		cmpxchg(&op->status, 0, -ECONNRESET);
	lite_rdma_fail(&failed);
}

/**
 * lite_rdma_op_release - an asynchronous operation is fully submitted
 * @op: the operation; posted (or failed to be)
 *
 * Drops the submitter's hold on @op: its done_fn runs here if every WR
 * already completed, else with the last completion.
 */
void lite_rdma_op_release(struct lite_rdma_op *op)
{
	if (atomic_dec_and_test(&op->pending))
		op->done_fn(op);
}

static bool lite_rdma_slot(struct lite_conn *conn, bool credit)
{
	bool ok;

	spin_lock_bh(&conn->lock);
	ok = conn->state == LITE_CONN_CLOSING ||
	     (conn->data_avail && (!credit ||
				   lite_credits_avail(&conn->credits)));
	spin_unlock_bh(&conn->lock);
	return ok;
}

/*
 * Post one WR of @op, waiting for a free data slot if needed. A write with
 * immediate consumes a receive buffer of the peer's: it takes a credit too.
 * An inline WR of @op->inline_data is the connection's once posted
 * (lite_rdma_ff_prep()) unless @op->confirm: @op does not wait for it; if
 * it fails, the connection closes. Once a write with immediate is posted,
 * @op->posted_fn (if any) runs before the conn lock and bottom halves are
 * let go: rxe runs the transfer in softirq when they are.
 */
static int lite_rdma_post(struct lite_rdma_op *op, struct ib_send_wr *wr)
{
	struct lite_conn *conn = op->conn;
	bool credit = wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM;
	bool ff = op->inline_data && !op->confirm, signaled = true;
	int ret;

	wr->wr_cqe = &op->cqe;
	wr->send_flags |= IB_SEND_SIGNALED;
	for (;;) {
		spin_lock_bh(&conn->lock);
		if (conn->state == LITE_CONN_CLOSING) {
			ret = -ECONNRESET;
		} else if (!conn->data_avail ||
			   (credit && !lite_credits_take(&conn->credits,
							 false))) {
			ret = -EAGAIN;	/* wait for a slot or a credit */
		} else {
			conn->data_avail--;
			if (ff)
				signaled = lite_rdma_ff_prep(conn, wr);
			else
				atomic_inc(&op->pending);
			ret = lite_fault_fail_post(conn->node) ? -EIO :
			      ib_post_send(conn->cm_id->qp, wr, NULL);
			if (!ret && credit && op->posted_fn)
				op->posted_fn(op);
			if (ret) {
				conn->data_avail++;
				if (ff)
					lite_rdma_ff_undo(conn, signaled);
				else
					atomic_dec(&op->pending);
				if (credit)
					lite_credits_grant(&conn->credits, 1);
			}
		}
		spin_unlock_bh(&conn->lock);
		if (ret != -EAGAIN)
			return ret;
		if (!wait_event_timeout(conn->tx_wq,
					lite_rdma_slot(conn, credit),
					lite_tun_jiffies(data_timeout_ms)))
			return -ETIMEDOUT;
	}
}

/**
 * lite_rdma_op_await - wait until @op->done completes
 * @op: an operation whose last WR completes @op->done (a synchronous one,
 *	or an asynchronous one whose done_fn does)
 *
 * Waits as the node's completion mode says, up to lite_tun(data_timeout_ms);
 * if the peer stopped answering, the connection is closed and the drain
 * flushes what is in flight before this returns. Sleeps.
 *
 * Return: 0 once @op->done completed in time, else -ETIMEDOUT.
 */
int lite_rdma_op_await(struct lite_rdma_op *op)
{
	if (lite_wait_done(op->conn->node, op->conn, &op->done,
			   lite_tun_jiffies(data_timeout_ms), false))
		return 0;
	/* The peer stopped answering: the drain flushes. */
	lite_conn_timed_out(op->conn, "an RDMA step did not complete");
	wait_for_completion(&op->done);
	return -ETIMEDOUT;
}

/**
 * lite_rdma_op_wait - stop posting and wait for what was posted
 * @op: a synchronous operation (no done_fn)
 * @post_err: how posting ended: 0, or the error that stopped it
 *
 * Waits as the node's completion mode says, up to lite_tun(data_timeout_ms);
 * if the peer stopped answering, the connection is closed and the drain
 * flushes what is in flight before this returns. Sleeps.
 *
 * Return: -ETIMEDOUT if what was posted did not complete in time; else
 * @post_err if set; else 0 or the first failure of a WR (-ECONNRESET if
 * flushed, -EIO).
 */
int lite_rdma_op_wait(struct lite_rdma_op *op, int post_err)
{
	int ret;

	if (!atomic_dec_and_test(&op->pending)) {
		ret = lite_rdma_op_await(op);
		if (ret)
			return ret;
	}
	return post_err ?: op->status;
}

/* Where a transfer's source offset is in its extents: @i, @at bytes in. */
struct lite_sgl_pos {
	u32 i;
	u32 at;
	u64 base;		/* source bytes before extent @i */
};

/* Move @c to source offset @off of @sgl (forward, or again from 0). */
static void lite_sgl_seek(const struct lite_sgl *sgl, struct lite_sgl_pos *c,
			  u64 off)
{
	if (off < c->base)
		*c = (struct lite_sgl_pos){};
	while (c->i < sgl->n && off >= c->base + sgl->ext[c->i].len) {
		c->base += sgl->ext[c->i].len;
		c->i++;
	}
	c->at = off - c->base;
}

/**
 * lite_rdma_post_sgl - post the WRs of one transfer to a remote layout
 * @op: the operation they belong to
 * @l: the remote layout
 * @off: where in @l the transfer starts
 * @len: bytes
 * @sgl: the local memory, from @sgl->skip bytes into its extents (DMA
 *	 addresses; with @op->inline_data one extent at a kernel address:
 *	 writes of at most conn->max_inline bytes, copied into the WRs as they
 *	 are posted, which go unsignaled and which @op does not wait for
 *	 unless @op->confirm)
 * @write: RDMA WRITE to @l, else RDMA READ from it
 * @imm: if not NULL, the last WR is a write with this immediate (which
 *	takes a credit: it consumes a receive buffer of the peer's)
 *
 * Moves @len bytes between @sgl and @off of @l: one work request per
 * remote segment, or more where it spans more local extents than a WR
 * takes SGEs. Waits for free data slots as needed (sleeps). End with
 * lite_rdma_op_wait().
 *
 * Return: 0 once all are posted; -ETIMEDOUT if no slot came free in
 * lite_tun(data_timeout_ms), -ECONNRESET if the connection is closing,
 * -EIO if @sgl is shorter than @len, or the error of a post.
 */
int lite_rdma_post_sgl(struct lite_rdma_op *op, const struct lite_layout *l,
		       u64 off, u64 len, const struct lite_sgl *sgl,
		       bool write, const u32 *imm)
{
	struct lite_conn *conn = op->conn;
	struct lite_seg segs[LITE_MAX_SEGS];
	struct ib_sge sge[LITE_MAX_SGE];
	struct lite_sgl_pos c = {};
	struct ib_rdma_wr wr;
	u64 done = 0, step, in_seg;
	u32 ns, piece, max_sge;
	int n, i, ret = 0;

	max_sge = write ? conn->max_sge : conn->max_sge_rd;
	while (!ret && done < len) {
		n = lite_lmr_segments(l, off + done, len - done, segs,
				      LITE_MAX_SEGS, &step);
		for (i = 0; !ret && i < n; i++) {
			for (in_seg = 0; !ret && in_seg < segs[i].len;) {
				memset(&wr, 0, sizeof(wr));
				wr.remote_addr = segs[i].addr + in_seg;
				lite_sgl_seek(sgl, &c, sgl->skip + done +
					      segs[i].off + in_seg);
				for (ns = 0; ns < max_sge && c.i < sgl->n &&
				     in_seg < segs[i].len; ns++) {
					piece = min_t(u64,
						      sgl->ext[c.i].len - c.at,
						      segs[i].len - in_seg);
					sge[ns].addr = sgl->ext[c.i].dma + c.at;
					sge[ns].length = piece;
					sge[ns].lkey = conn->node->pd->local_dma_lkey;
					in_seg += piece;
					lite_sgl_seek(sgl, &c, sgl->skip + done +
						      segs[i].off + in_seg);
				}
				if (WARN_ON_ONCE(!ns))
					return -EIO;	/* @sgl too short */
				if (op->inline_data)
					wr.wr.send_flags = IB_SEND_INLINE;
				wr.wr.opcode = write ? IB_WR_RDMA_WRITE :
						       IB_WR_RDMA_READ;
				if (imm && i == n - 1 && done + step == len &&
				    in_seg == segs[i].len) {
					wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
					wr.wr.ex.imm_data = cpu_to_be32(*imm);
				}
				wr.wr.sg_list = sge;
				wr.wr.num_sge = ns;
				wr.rkey = segs[i].rkey;
				ret = lite_rdma_post(op, &wr.wr);
			}
		}
		done += step;
	}
	return ret;
}

/**
 * lite_rdma_post_layout - post the WRs of one transfer to a remote layout
 * @op: the operation they belong to
 * @l: the remote layout
 * @off: where in @l the transfer starts
 * @len: bytes
 * @dma: the kernel buffer's DMA address (its kernel address if
 *	 @op->inline_data, as for lite_rdma_post_sgl())
 * @write: RDMA WRITE to @l, else RDMA READ from it
 * @imm: if not NULL, the last WR is a write with this immediate
 *
 * lite_rdma_post_sgl() from one contiguous buffer.
 *
 * Return: as lite_rdma_post_sgl().
 */
int lite_rdma_post_layout(struct lite_rdma_op *op, const struct lite_layout *l,
			  u64 off, u32 len, u64 dma, bool write,
			  const u32 *imm)
{
	struct lite_ext ext = { .dma = dma, .len = len };
	struct lite_sgl sgl = { .ext = &ext, .n = 1 };

	return lite_rdma_post_sgl(op, l, off, len, &sgl, write, imm);
}

static int lite_rdma_xfer_layout(struct lite_conn *conn,
				 const struct lite_layout *l,
				 u64 off, u32 len, u64 dma, bool write,
				 const u32 *imm)
{
	struct lite_rdma_op op;

	lite_rdma_op_init(&op, conn, NULL);
	return lite_rdma_op_wait(&op, lite_rdma_post_layout(&op, l, off, len,
							     dma, write, imm));
}

/**
 * lite_rdma_write_imm - RDMA WRITE to a peer's layout, with an immediate
 * @conn: the connection to the peer
 * @l: the peer's layout
 * @off: where in @l to write
 * @len: bytes, more than 0
 * @dma: the kernel buffer's DMA address
 * @imm: if not NULL, the immediate the last work request carries
 *
 * Sleeps until all of it completed.
 *
 * Return: 0 once the peer's HCA has the bytes, or an error (as
 * lite_rdma_post_layout() and lite_rdma_op_wait() return it).
 */
int lite_rdma_write_imm(struct lite_conn *conn,
			const struct lite_layout *l, u64 off,
			u32 len, u64 dma, const u32 *imm)
{
	return lite_rdma_xfer_layout(conn, l, off, len, dma, true, imm);
}

static int lite_rdma_xfer(struct lite_conn *conn, struct lite_lmr *lmr,
			  u64 off, u32 len, u64 dma, bool write)
{
	int ret;

	ret = lite_lmr_begin(lmr);
	if (ret)
		return ret;
	ret = lite_rdma_xfer_layout(conn, &lmr->layout, off, len, dma, write,
				    NULL);
	lite_lmr_end(lmr);
	return ret;
}

/* Before each transfer step: -EINTR if the caller was killed, else 0. */
static int lite_rdma_killed(void)
{
	return fatal_signal_pending(current) ? -EINTR : 0;
}

/* A referenced connection to @lmr's memory node. */
static struct lite_conn *lite_rdma_conn(struct lite_lmr *lmr)
{
	return lite_node_conn_wait(lmr->node, lmr->mem_node,
				   lite_tun_deadline(conn_wait_ms));
}

/*
 * A write the QP takes inline: from a buffer on the stack, copied into the
 * work request as it is posted; nothing allocated or mapped. Still waited
 * for (@op.confirm): the write returns once the peer's HCA has the bytes.
 */
static int lite_rdma_write_inline(struct lite_conn *conn, struct lite_lmr *lmr,
				  u64 off, u32 len, const void __user *buf)
{
	u8 data[LITE_MAX_INLINE] __aligned(8);
	struct lite_rdma_op op;
	int ret;

	if (copy_from_user(data, buf, len))
		return -EFAULT;
	ret = lite_lmr_begin(lmr);
	if (ret)
		return ret;
	lite_rdma_op_init(&op, conn, NULL);
	op.inline_data = true;
	op.confirm = true;
	ret = lite_rdma_op_wait(&op, lite_rdma_post_layout(&op, &lmr->layout,
							   off, len,
							   (uintptr_t)data,
							   true, NULL));
	lite_lmr_end(lmr);
	return ret;
}

/*
 * Copy path: through a kernel buffer, b.size (LITE_BOUNCE_SIZE or less) at
 * a time.
 */
static int lite_rdma_rw_copy(struct lite_conn *conn, struct lite_lmr *lmr,
			     u64 off, u64 len, void __user *buf, bool write)
{
	struct lite_bounce b;
	u64 done;
	u32 n;
	int ret;

	ret = lite_bounce_get(&b, conn->node, len, LITE_BOUNCE_SIZE);
	if (ret)
		return ret;
	for (done = 0; !ret && done < len; done += n) {
		n = min_t(u64, len - done, b.size);
		ret = lite_rdma_killed();
		if (ret)
			break;
		if (write && copy_from_user(b.buf, buf + done, n)) {
			ret = -EFAULT;
			break;
		}
		ib_dma_sync_single_for_device(b.dev, b.dma, n,
					      DMA_BIDIRECTIONAL);
		ret = lite_rdma_xfer(conn, lmr, off + done, n, b.dma, write);
		ib_dma_sync_single_for_cpu(b.dev, b.dma, n, DMA_BIDIRECTIONAL);
		if (!ret && !write && copy_to_user(buf + done, b.buf, n))
			ret = -EFAULT;
		cond_resched();
	}
	lite_bounce_put(&b);
	return ret;
}

/* The part of page @i of @p the step moves: its offset and length. */
static void lite_pinned_piece(const struct lite_pinned *p, int i, u32 *off,
			      u32 *len)
{
	u64 page = (u64)i * PAGE_SIZE;
	u64 from = max_t(u64, page, p->first_off);
	u64 to = min_t(u64, page + PAGE_SIZE, p->first_off + p->len);

	*off = from - page;
	*len = to - from;
}

/**
 * lite_pinned_unmap - unmap the first @n pages of a step
 * @p: the step, mapped by lite_pinned_map()
 * @n: how many of its pages
 *
 * Only the bytes moved were mapped: a bounce buffer (swiotlb) or a cache
 * invalidation at unmap must not touch the rest of a page, which may be
 * other data of the process.
 */
void lite_pinned_unmap(struct lite_pinned *p, int n)
{
	enum dma_data_direction dir = p->write ? DMA_TO_DEVICE :
						 DMA_FROM_DEVICE;
	int i;

	for (i = 0; i < n; i++)
		ib_dma_unmap_page(p->dev, p->ext[i].dma, p->ext[i].len, dir);
}

/**
 * lite_pinned_map - map the part of each pinned page a step moves
 * @p: the step: its p->n pages, from p->first_off, p->len bytes
 *
 * Fills p->ext, one extent per page.
 *
 * Return: 0, or -ENOMEM (nothing stays mapped).
 */
int lite_pinned_map(struct lite_pinned *p)
{
	enum dma_data_direction dir = p->write ? DMA_TO_DEVICE :
						 DMA_FROM_DEVICE;
	u32 off, len;
	u64 dma;
	int i;

	for (i = 0; i < p->n; i++) {
		lite_pinned_piece(p, i, &off, &len);
		dma = ib_dma_map_page(p->dev, p->pages[i], off, len, dir);
		if (ib_dma_mapping_error(p->dev, dma)) {
			lite_pinned_unmap(p, i);
			return -ENOMEM;
		}
		p->ext[i].dma = dma;
		p->ext[i].len = len;
	}
	return 0;
}

/* Post one pinned step to the LMR and wait for it. */
static int lite_rdma_xfer_pinned(struct lite_conn *conn, struct lite_lmr *lmr,
				 u64 off, u64 len, struct lite_pinned *p)
{
	struct lite_sgl sgl = { .ext = p->ext, .n = p->n };
	struct lite_rdma_op op;
	int ret;

	ret = lite_lmr_begin(lmr);
	if (ret)
		return ret;
	lite_rdma_op_init(&op, conn, NULL);
	ret = lite_rdma_op_wait(&op, lite_rdma_post_sgl(&op, &lmr->layout, off,
							len, &sgl, p->write,
							NULL));
	lite_lmr_end(lmr);
	return ret;
}

/*
 * Move [uaddr, uaddr + len) between its pinned @pages (from uaddr's page
 * on) and the LMR, DMA-mapping @max_map pages at a time into @ext.
 */
static int lite_rdma_rw_pages(struct lite_conn *conn, struct lite_lmr *lmr,
			      u64 off, u64 len, unsigned long uaddr,
			      bool write, struct page **pages,
			      struct lite_ext *ext, u32 max_map)
{
	struct lite_pinned p = {
		.dev = conn->node->ibdev->dev,
		.ext = ext,
		.write = write,
	};
	u64 done, n;
	int ret = 0;

	for (done = 0; !ret && done < len; done += n) {
		p.first_off = offset_in_page(uaddr + done);
		n = min_t(u64, len - done, (u64)max_map * PAGE_SIZE -
			  p.first_off);
		ret = lite_rdma_killed();
		if (ret)
			break;
		p.pages = pages + ((offset_in_page(uaddr) + done) >> PAGE_SHIFT);
		p.len = n;
		p.n = DIV_ROUND_UP(p.first_off + n, PAGE_SIZE);
		ret = lite_pinned_map(&p);
		if (ret)
			break;
		ret = lite_rdma_xfer_pinned(conn, lmr, off + done, n, &p);
		lite_pinned_unmap(&p, p.n);
		cond_resched();
	}
	return ret;
}

/*
 * Cached path: the NIC reads or writes pages the file's cache keeps pinned
 * (pincache.c), mapped LITE_PIN_MAP_PAGES at a time.
 */
static int lite_rdma_rw_cached(struct lite_conn *conn, struct lite_lmr *lmr,
			       u64 off, u64 len, unsigned long uaddr,
			       bool write, struct page **pages)
{
	struct lite_ext ext[LITE_PIN_MAP_PAGES];

	return lite_rdma_rw_pages(conn, lmr, off, len, uaddr, write, pages,
				  ext, LITE_PIN_MAP_PAGES);
}

/*
 * Zero-copy path: the user pages are pinned for the call, LITE_PIN_PAGES
 * at a time, and the NIC reads or writes them in place.
 */
static int lite_rdma_rw_zcopy(struct lite_conn *conn, struct lite_lmr *lmr,
			      u64 off, u64 len, void __user *buf, bool write)
{
	unsigned long uaddr = (unsigned long)buf, at;
	struct lite_ext *ext;
	struct page **pages;
	int want, pinned;
	u64 done, n;
	int ret = 0;

	pages = kvmalloc_array(LITE_PIN_PAGES, sizeof(*pages), GFP_KERNEL);
	ext = kvmalloc_array(LITE_PIN_PAGES, sizeof(*ext), GFP_KERNEL);
	if (!pages || !ext) {
		ret = -ENOMEM;
		goto free_arrays;
	}
	for (done = 0; !ret && done < len; done += n) {
		at = uaddr + done;
		n = min_t(u64, len - done, LITE_PIN_PAGES * PAGE_SIZE -
			  offset_in_page(at));
		want = DIV_ROUND_UP(offset_in_page(at) + n, PAGE_SIZE);
		ret = lite_rdma_killed();
		if (ret)
			break;
		pinned = pin_user_pages_fast(at & PAGE_MASK, want,
					     write ? 0 : FOLL_WRITE, pages);
		if (pinned != want) {
			if (pinned > 0)
				unpin_user_pages(pages, pinned);
			/* Pinning stops for a fatal signal too. */
			ret = lite_rdma_killed() ?: -EFAULT;
			break;
		}
		ret = lite_rdma_rw_pages(conn, lmr, off + done, n, at, write,
					 pages, ext, LITE_PIN_PAGES);
		unpin_user_pages_dirty_lock(pages, want, !write);
	}
free_arrays:
	kvfree(ext);
	kvfree(pages);
	return ret;
}

/**
 * lite_dma_aligned - whether the device may write a buffer in place
 * @addr: its address
 * @len: its length
 *
 * Return: whether it starts and ends on the DMA cache alignment, so that
 * mapping its pages for the device shares no cache line with other data
 * (always on cache-coherent machines such as x86).
 */
bool lite_dma_aligned(u64 addr, u64 len)
{
	return !((addr | len) & (dma_get_cache_alignment() - 1));
}

/* The user buffer's pages from the file's cache, if it takes them. */
static struct lite_pin_entry *lite_rdma_cached(struct lite_conn *conn,
					       struct lite_pin_cache *pc,
					       u64 len, void __user *buf,
					       bool write, u32 flags,
					       struct page ***pages)
{
	if (flags & LITE_RW_COPY || (write && len <= conn->max_inline) ||
	    (!write && !lite_dma_aligned((uintptr_t)buf, len)))
		return NULL;
	return lite_pin_get(pc, (uintptr_t)buf, len, !write, pages);
}

/**
 * lite_rdma_rw - move bytes between a user buffer and an LMR
 * @lmr: the LMR; the access was checked
 * @off: offset in it
 * @len: bytes
 * @buf: the user buffer
 * @write: to the LMR (else from it)
 * @flags: LITE_RW_*: force the copy or the zero-copy path
 * @pc: the calling file's cache of pinned buffers, or NULL
 *
 * A buffer the cache keeps pinned (or takes now) moves in place; others
 * are copied through a kernel buffer below zcopy_min_kb, pinned for the
 * operation from there. Writes the QP takes inline are copied into the
 * work request. Sleeps.
 *
 * Return: 0; -EINTR if the caller was killed (it stops between steps);
 * -EFAULT, -ENOTCONN (-EHOSTDOWN if the memory node left), -EKEYREVOKED,
 * -ETIMEDOUT or the error of a step.
 */
int lite_rdma_rw(struct lite_lmr *lmr, u64 off, u64 len, void __user *buf,
		 bool write, u32 flags, struct lite_pin_cache *pc)
{
	struct lite_pin_entry *e;
	struct lite_conn *conn;
	struct page **pages;
	int ret;

	if (!len)
		return 0;
	conn = lite_rdma_conn(lmr);
	if (!conn)
		return lite_lmr_conn_err(lmr);
	e = lite_rdma_cached(conn, pc, len, buf, write, flags, &pages);
	if (e) {
		ret = lite_rdma_rw_cached(conn, lmr, off, len, (uintptr_t)buf,
					  write, pages);
		lite_pin_put(e);
	} else if (flags & LITE_RW_ZCOPY ||
		   (!(flags & LITE_RW_COPY) &&
		    len >= (u64)lite_tun(zcopy_min_kb) * 1024)) {
		ret = lite_rdma_rw_zcopy(conn, lmr, off, len, buf, write);
	} else if (write && len <= conn->max_inline) {
		ret = lite_rdma_write_inline(conn, lmr, off, len, buf);
	} else {
		ret = lite_rdma_rw_copy(conn, lmr, off, len, buf, write);
	}
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_rdma_atomic_wr - prepare a NIC atomic on a word of an LMR
 * @wr: filled in: one fetch-and-add or compare-and-swap
 * @sge: filled in: the 8-byte buffer at @dma that gets the old value
 * @lmr: the LMR, of LITE_WIRE_LMR_NIC_ATOMIC; the access was checked (one
 *	 aligned word inside it)
 * @off: the word's offset in it
 * @cmp_swap: compare-and-swap, else fetch-and-add
 * @operand: what to add, or the value to compare with
 * @swap: the new value of a compare-and-swap
 * @dma: the result buffer's DMA address
 *
 * Return: 0, or -EIO if the layout has no chunk under the word.
 */
int lite_rdma_atomic_wr(union lite_wr *wr, struct ib_sge *sge,
			const struct lite_lmr *lmr, u64 off, bool cmp_swap,
			u64 operand, u64 swap, u64 dma)
{
	struct lite_seg seg;
	u64 done;

	if (lite_lmr_segments(&lmr->layout, off, 8, &seg, 1, &done) != 1 ||
	    done != 8)
		return -EIO;
	memset(wr, 0, sizeof(*wr));
	sge->addr = dma;
	sge->length = 8;
	sge->lkey = lmr->node->pd->local_dma_lkey;
	wr->wr.opcode = cmp_swap ? IB_WR_ATOMIC_CMP_AND_SWP :
				   IB_WR_ATOMIC_FETCH_AND_ADD;
	wr->wr.sg_list = sge;
	wr->wr.num_sge = 1;
	wr->atomic.remote_addr = seg.addr;
	wr->atomic.compare_add = operand;
	wr->atomic.swap = cmp_swap ? swap : 0;
	wr->atomic.rkey = seg.rkey;
	return 0;
}

/* One NIC atomic, its old value through a small mapped buffer. */
static int lite_rdma_atomic_nic(struct lite_conn *conn, struct lite_lmr *lmr,
				u64 off, bool cmp_swap, u64 operand, u64 swap,
				u64 *result)
{
	struct lite_rdma_op op;
	struct lite_bounce b;
	union lite_wr wr;
	struct ib_sge sge;
	int ret;

	ret = lite_bounce_get(&b, conn->node, 8, LITE_BOUNCE_SIZE);
	if (ret)
		return ret;
	ret = lite_rdma_atomic_wr(&wr, &sge, lmr, off, cmp_swap, operand, swap,
				  b.dma);
	if (!ret)
		ret = lite_lmr_begin(lmr);
	if (!ret) {
		ib_dma_sync_single_for_device(b.dev, b.dma, 8,
					      DMA_BIDIRECTIONAL);
		lite_rdma_op_init(&op, conn, NULL);
		ret = lite_rdma_op_wait(&op, lite_rdma_post(&op, &wr.wr));
		lite_lmr_end(lmr);
	}
	if (!ret) {
		ib_dma_sync_single_for_cpu(b.dev, b.dma, 8, DMA_BIDIRECTIONAL);
		*result = *(u64 *)b.buf;
	}
	lite_bounce_put(&b);
	return ret;
}

/* One CPU atomic: a request the memory node's CPU carries out. */
static int lite_rdma_atomic_cpu(struct lite_conn *conn, struct lite_lmr *lmr,
				u64 off, bool cmp_swap, u64 operand, u64 swap,
				u64 *result)
{
	struct lite_wire_atomic_result rep;
	struct lite_wire_atomic req = {};
	int ret;

	req.mr_id = cpu_to_le64(lmr->mr_id);
	req.offset = cpu_to_le64(off);
	req.operand = cpu_to_le64(operand);
	req.swap = cpu_to_le64(cmp_swap ? swap : 0);
	req.op = cmp_swap ? LITE_ATOMIC_CMP_SWAP : LITE_ATOMIC_FETCH_ADD;
	ret = lite_lmr_begin(lmr);
	if (ret)
		return ret;
	ret = lite_call(conn, LITE_MSG_ATOMIC, &req, sizeof(req), &rep,
			sizeof(rep), NULL, lite_tun_deadline(data_timeout_ms));
	lite_lmr_end(lmr);
	if (!ret)
		*result = le64_to_cpu(rep.value);
	return ret;
}

/**
 * lite_rdma_atomic - fetch-and-add or compare-and-swap an LMR's word
 * @lmr: the LMR; the access was checked (one aligned 8-byte word)
 * @off: the word's offset in it
 * @cmp_swap: compare-and-swap, else fetch-and-add
 * @operand: what to add, or the value to compare with
 * @swap: the new value of a compare-and-swap
 * @result: set to the word's old value on success
 *
 * The LMR's flags pick the domain of its words: an LMR of
 * LITE_WIRE_LMR_NIC_ATOMIC takes a one-sided RDMA atomic; any other a
 * request that the memory node's CPU carries out (struct lite_wire_atomic),
 * atomic with the locks and barriers on that LMR. Sleeps.
 *
 * Return: 0; -ENOTCONN without a connection to the memory node
 * (-EHOSTDOWN if it left);
 * -EOPNOTSUPP for NIC atomics on a device without them; -EHOSTDOWN or
 * -EKEYREVOKED (lite_lmr_begin()); the WR's failure (-ETIMEDOUT,
 * -ECONNRESET, -EIO) or the ATOMIC request's (-ETIMEDOUT, -EINTR,
 * -ECONNRESET, or the memory node's -ENOENT or -ERANGE).
 */
int lite_rdma_atomic(struct lite_lmr *lmr, u64 off, bool cmp_swap,
		     u64 operand, u64 swap, u64 *result)
{
	bool nic = lmr->flags & LITE_WIRE_LMR_NIC_ATOMIC;
	struct lite_conn *conn;
	int ret;

	if (nic && !lmr->node->nic_atomic)
		return -EOPNOTSUPP;
	conn = lite_rdma_conn(lmr);
	if (!conn)
		return lite_lmr_conn_err(lmr);
	if (nic)
		ret = lite_rdma_atomic_nic(conn, lmr, off, cmp_swap, operand,
					   swap, result);
	else
		ret = lite_rdma_atomic_cpu(conn, lmr, off, cmp_swap, operand,
					   swap, result);
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_rdma_memset - fill a range of an LMR with one byte
 * @lmr: the LMR; the access was checked
 * @off: offset in it
 * @len: bytes
 * @value: the byte
 *
 * Sleeps.
 *
 * Return: 0; -EINTR if the caller was killed (it stops between steps);
 * -ENOTCONN without a connection to the memory node (-EHOSTDOWN if it
 * left); -ENOMEM; or the
 * error of a step.
 */
int lite_rdma_memset(struct lite_lmr *lmr, u64 off, u64 len, u8 value)
{
	struct lite_bounce b;
	struct lite_conn *conn;
	u32 n, fill;
	u64 done;
	int ret;

	if (!len)
		return 0;
	conn = lite_rdma_conn(lmr);
	if (!conn)
		return lite_lmr_conn_err(lmr);
	ret = lite_bounce_get(&b, conn->node, len, LITE_BOUNCE_SIZE);
	if (ret)
		goto out;
	fill = min_t(u64, len, b.size);		/* what the steps use of it */
	memset(b.buf, value, fill);
	ib_dma_sync_single_for_device(b.dev, b.dma, fill, DMA_BIDIRECTIONAL);
	for (done = 0; !ret && done < len; done += n) {
		n = min_t(u64, len - done, fill);
		ret = lite_rdma_killed() ?:
		      lite_rdma_xfer(conn, lmr, off + done, n, b.dma, true);
		cond_resched();
	}
	lite_bounce_put(&b);
out:
	lite_conn_put(conn);
	return ret;
}

static bool lite_lmr_same(const struct lite_lmr *a, const struct lite_lmr *b)
{
	return a->mem_node == b->mem_node && a->mr_id == b->mr_id;
}

/**
 * lite_rdma_memcpy - copy between LMRs, through a kernel buffer
 * @dst: destination LMR; the access was checked
 * @doff: offset in it
 * @src: source LMR; the access was checked
 * @soff: offset in it
 * @len: bytes
 *
 * READ from @src's node, WRITE to @dst's; overlapping ranges of the same
 * memory copy like memmove. Sleeps.
 *
 * Return: 0; -EINTR if the caller was killed (it stops between steps);
 * -ENOTCONN without a connection to a memory node (-EHOSTDOWN if it
 * left); -ENOMEM; or the error
 * of a step.
 */
int lite_rdma_memcpy(struct lite_lmr *dst, u64 doff, struct lite_lmr *src,
		     u64 soff, u64 len)
{
	struct lite_conn *dconn, *sconn;
	bool backwards;
	struct lite_bounce b;
	u64 done, at;
	u32 n;
	int ret;

	if (!len)
		return 0;
	backwards = lite_lmr_same(dst, src) && doff > soff && doff < soff + len;
	sconn = lite_rdma_conn(src);
	dconn = lite_rdma_conn(dst);
	ret = 0;
	if (!sconn || !dconn)	/* a side whose node left says so first */
		ret = lite_lmr_conn_err(src) == -EHOSTDOWN ? -EHOSTDOWN :
		      lite_lmr_conn_err(dst);
	if (!ret)
		ret = lite_bounce_get(&b, sconn->node, len, LITE_BOUNCE_SIZE);
	if (ret)
		goto out;
	for (done = 0; !ret && done < len; done += n) {
		n = min_t(u64, len - done, b.size);
		at = backwards ? len - done - n : done;
		/* A kept buffer: no CPU line of it may land on the data. */
		ib_dma_sync_single_for_device(b.dev, b.dma, n,
					      DMA_BIDIRECTIONAL);
		ret = lite_rdma_killed() ?:
		      lite_rdma_xfer(sconn, src, soff + at, n, b.dma, false);
		if (!ret)
			ret = lite_rdma_xfer(dconn, dst, doff + at, n, b.dma,
					     true);
		cond_resched();
	}
	lite_bounce_put(&b);
out:
	if (sconn)
		lite_conn_put(sconn);
	if (dconn)
		lite_conn_put(dconn);
	return ret;
}
