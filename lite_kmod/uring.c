// SPDX-License-Identifier: GPL-2.0
/*
 * Asynchronous operations through io_uring (IORING_OP_URING_CMD): the
 * command area of a 128-byte SQE carries the ioctl's structure, the result
 * comes back in the CQE (see the uapi header).
 *
 * A read or write of up to LITE_AOP_MAX_LEN bytes never waits for the
 * network (it may sleep allocating memory or faulting the user's buffer
 * in): it is checked like the ioctl, its data goes through a kernel buffer
 * of its own (a write copies the user's bytes in at submission) or, from a
 * buffer registered with the ring (IORING_URING_CMD_FIXED), straight
 * between the buffer's pinned pages and the NIC, and its
 * work requests are posted at once or, when the connection has no free
 * data slot, queued behind earlier ones (lite_rdma_submit()). The last
 * completion ends the LMR access - so that freeing or revoking the LMR
 * never waits for task work, which the freeing thread may be the one to
 * run - and hands the operation to the issuer's task (io_uring task work),
 * which copies a read out and posts the CQE. Atomics on an LMR of NIC
 * atomics are one such work request (its old value lands in an 8-byte
 * buffer); on any other LMR a control-message call to the memory node (see
 * rdma.c) with a timer for its timeout, completed the same way. What has
 * to wait -
 * longer or zero-copy transfers, RPC calls - returns -EAGAIN when issued
 * with IO_URING_F_NONBLOCK; io_uring then issues it again from one of its
 * worker threads, where it runs the synchronous path.
 *
 * Every operation completes by itself: data work requests complete, or
 * fail when the RC transport gives up and the connection closes (which
 * flushes them); calls time out. io_uring's exit work, which on this
 * kernel cannot cancel a started command, therefore waits a bounded time;
 * and since io_uring holds a file reference per request, the lite_file
 * outlives each operation on it. Kernel memory an operation holds is
 * charged to the caller's memory cgroup and limited per file
 * (LITE_AOP_FILE_BYTES). A file keeps up to LITE_AOP_POOL finished
 * operations, each with its small-transfer buffer, for the next ones: no
 * allocation per operation once a file's queue depth was reached.
 */
#include <linux/io_uring.h>
#include <linux/io_uring_types.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>

#include "internal.h"

/* A registered buffer's pieces: the used part of each page, mapped once. */
struct lite_aop_fixed {
	struct ib_sge sges[LITE_AOP_SGES];
	struct lite_aop_map {
		u64 dma;
		u32 len;
	} maps[LITE_AOP_PAGES];
	u32 n_maps;
};

/*
 * An asynchronous operation. Its file keeps up to LITE_AOP_POOL idle ones
 * for reuse: what comes before @kbuf is cleared for each operation, the
 * rest is kept.
 */
struct lite_aop {
	struct io_uring_cmd *cmd;
	struct lite_file *lf;		/* alive: io_uring holds the file */
	struct lite_lmr *lmr;		/* referenced */
	struct lite_conn *conn;		/* referenced until the completion lets
					 * it go (lite_aop_complete()), or NULL */
	bool active;			/* lite_lmr_begin() held; ended by the
					 * completion, before the task work */
	u64 accounted;			/* bytes in lf->aop_bytes */
	bool polled;			/* its ring polls (IORING_SETUP_IOPOLL):
					 * completion sets @done, no task work */
	atomic_t spin;			/* LITE_AOP_*: LITE_RW_SPIN's hand-off */
	bool done;			/* polled: complete (release/acquire) */
	struct work_struct put_conn;	/* drops @conn's last ref, then hands
					 * the operation over */
	struct mm_struct *mm;		/* polled read: the issuer's, grabbed;
					 * only it may take the bytes */

	/* A read or write. */
	struct lite_rdma_op op;
	bool write;
	void *buf;
	bool mapped;			/* @dma maps @buf until the completion */
	u64 dma;
	u32 len;
	u64 ubuf;
	union lite_wr wrs[LITE_AOP_SEGS];
	struct ib_sge sges[LITE_AOP_SEGS];
	struct lite_aop_fixed *fixed;	/* a registered buffer, or NULL */

	/* An atomic: a NIC atomic (@op, one WR, 8 bytes of @buf), or a call. */
	bool nic_atomic;
	bool is_call;
	struct lite_call call;
	struct lite_wire_atomic_result rep;
	struct delayed_work expire;

	/* Kept across operations, allocated when first needed. */
	void *kbuf;			/* LITE_AOP_KBUF bytes, or NULL */
	struct lite_aop_fixed *fixed_kept;	/* @fixed when used, or NULL */
	struct list_head pool_entry;	/* lf->aop_pool while idle; its lock */
};

/*
 * A read or write with LITE_RW_SPIN: its issuer polls for the completion
 * at submission (SPINNING). Whichever of the completion and the issuer
 * giving up moves the state on first decides who finishes it: the issuer
 * (SPUN), or the usual path (GAVE_UP).
 */
enum {
	LITE_AOP_NO_SPIN,
	LITE_AOP_SPINNING,
	LITE_AOP_SPUN,
	LITE_AOP_GAVE_UP,
};

static struct lite_aop **lite_aop_slot(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct lite_aop *) > sizeof(cmd->pdu));
	return (struct lite_aop **)cmd->pdu;
}

/*
 * Complete @cmd here, with no operation behind it (nothing for
 * lite_uring_iopoll() on a polled ring); the caller returns what this does.
 */
static int lite_uring_done_now(struct io_uring_cmd *cmd, int ret, u64 res2,
			       unsigned int issue_flags)
{
	*lite_aop_slot(cmd) = NULL;
	io_uring_cmd_done(cmd, ret, res2, issue_flags);
	return -EIOCBQUEUED;
}

/* One more operation in flight on @node; keep the high-water mark. */
static void lite_aop_count(struct lite_node *node)
{
	int now = atomic_inc_return(&node->aops);
	int peak = atomic_read(&node->aops_peak);

	while (now > peak && !atomic_try_cmpxchg(&node->aops_peak, &peak, now))
		;
}

/* Charge @bytes to @lf's asynchronous operations, within the limit. */
static int lite_aop_account(struct lite_aop *a, u64 bytes)
{
	if (atomic64_add_return(bytes, &a->lf->aop_bytes) >
	    LITE_AOP_FILE_BYTES) {
		atomic64_sub(bytes, &a->lf->aop_bytes);
		return -EBUSY;
	}
	a->accounted += bytes;
	return 0;
}

/* An idle operation of @lf's, cleared; or a new one. */
static struct lite_aop *lite_aop_get(struct lite_file *lf)
{
	struct lite_aop *a;

	spin_lock(&lf->aop_lock);
	a = list_first_entry_or_null(&lf->aop_pool, struct lite_aop,
				     pool_entry);
	if (a) {
		list_del(&a->pool_entry);
		lf->aop_idle--;
	}
	spin_unlock(&lf->aop_lock);
	if (!a)
		return kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
	memset(a, 0, offsetof(struct lite_aop, kbuf));
	return a;
}

static void lite_aop_destroy(struct lite_aop *a)
{
	kfree(a->fixed_kept);
	kfree(a->kbuf);
	kfree(a);
}

/* Keep @a for @lf's next operation, or free it if enough are idle. */
static void lite_aop_put(struct lite_file *lf, struct lite_aop *a)
{
	spin_lock(&lf->aop_lock);
	if (lf->aop_idle < LITE_AOP_POOL) {
		list_add(&a->pool_entry, &lf->aop_pool);
		lf->aop_idle++;
		a = NULL;
	}
	spin_unlock(&lf->aop_lock);
	if (a)
		lite_aop_destroy(a);
}

/**
 * lite_uring_file_init - set up a new file's pool of async operations
 * @lf: the file
 */
void lite_uring_file_init(struct lite_file *lf)
{
	spin_lock_init(&lf->aop_lock);
	INIT_LIST_HEAD(&lf->aop_pool);
}

/**
 * lite_uring_file_release - free a closing file's idle async operations
 * @lf: the file; none of its operations is in flight any more (io_uring
 *	holds the file until each one completed)
 */
void lite_uring_file_release(struct lite_file *lf)
{
	struct lite_aop *a, *tmp;

	list_for_each_entry_safe(a, tmp, &lf->aop_pool, pool_entry) {
		list_del(&a->pool_entry);
		lite_aop_destroy(a);
	}
	lf->aop_idle = 0;
}

/* A new operation on @lmr, whose reference it takes over. */
static struct lite_aop *lite_aop_new(struct lite_file *lf,
				     struct io_uring_cmd *cmd,
				     unsigned int issue_flags,
				     struct lite_lmr *lmr, int *err)
{
	struct lite_aop *a;

	a = lite_aop_get(lf);
	if (!a) {
		lite_lmr_put(lmr);
		*err = -ENOMEM;
		return NULL;
	}
	a->cmd = cmd;
	a->lf = lf;
	a->lmr = lmr;
	a->polled = issue_flags & IO_URING_F_IOPOLL;
	lite_aop_count(lmr->node);
	*lite_aop_slot(cmd) = a;
	*err = lite_aop_account(a, sizeof(*a));
	return a;
}

/* The access is over (any context): revocation may go on. */
static void lite_aop_end(struct lite_aop *a)
{
	if (a->active) {
		a->active = false;
		lite_lmr_end(a->lmr);
	}
}

/*
 * Give the device's mappings of the operation's buffers back (any context;
 * on completion the unmap also makes what the NIC wrote visible to the
 * CPU). Done as the operation completes, while the device certainly
 * exists: its task work or reaper may run after the node is gone.
 */
static void lite_aop_unmap(struct lite_aop *a)
{
	enum dma_data_direction dir = a->write ? DMA_TO_DEVICE :
						 DMA_FROM_DEVICE;
	struct ib_device *dev;
	u32 i;

	/* Nothing mapped: the device may be gone (a node destroyed since). */
	if (!a->mapped && !(a->fixed && a->fixed->n_maps))
		return;
	dev = a->lmr->node->ibdev->dev;
	for (i = 0; a->fixed && i < a->fixed->n_maps; i++)
		ib_dma_unmap_page(dev, a->fixed->maps[i].dma,
				  a->fixed->maps[i].len, dir);
	if (a->fixed)
		a->fixed->n_maps = 0;
	if (a->mapped)
		ib_dma_unmap_single(dev, a->dma, a->len, dir);
	a->mapped = false;
}

/* End the operation and give back what it holds; @a goes back to its file. */
static void lite_aop_free(struct lite_aop *a)
{
	struct lite_node *node = a->lmr->node;

	lite_aop_unmap(a);
	if (a->buf != a->kbuf)
		kfree(a->buf);
	if (a->accounted)
		atomic64_sub(a->accounted, &a->lf->aop_bytes);
	if (a->conn)
		lite_conn_put(a->conn);
	if (a->mm)
		mmdrop(a->mm);
	lite_aop_end(a);
	atomic_dec(&node->aops);
	lite_lmr_put(a->lmr);
	lite_aop_put(a->lf, a);
}

/* The memory node's connection; then the access (revocation waits). */
static int lite_aop_begin(struct lite_aop *a)
{
	int ret;

	a->conn = lite_node_conn(a->lmr->node, a->lmr->mem_node);
	if (!a->conn)
		return lite_lmr_conn_err(a->lmr);
	ret = lite_lmr_begin(a->lmr);
	if (ret)
		return ret;
	a->active = true;
	return 0;
}

/* A read's bytes to the issuer; the completion unmapped the buffer. */
static int lite_aop_copy_out(struct lite_aop *a)
{
	/*
	 * An exiting task, io_uring's fallback or exit worker, or (a polled
	 * ring) another process reaping it: nobody to copy to.
	 */
	if (current->flags & (PF_EXITING | PF_KTHREAD) ||
	    (a->mm && current->mm != a->mm))
		return -ECANCELED;
	if (copy_to_user(u64_to_user_ptr(a->ubuf), a->buf, a->len))
		return -EFAULT;
	return 0;
}

/*
 * Task work: in the issuer's context (or io_uring's fallback worker); for
 * a polled ring, in whoever polls it (lite_uring_iopoll()).
 */
static void lite_aop_finish(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct lite_aop *a = *lite_aop_slot(cmd);
	u64 res2 = 0;
	int ret;

	if (a->is_call) {
		cancel_delayed_work_sync(&a->expire);
		ret = a->call.status;
		if (!ret)
			res2 = le64_to_cpu(a->rep.value);
	} else {
		ret = a->op.status;
		if (!ret && a->nic_atomic) {
			res2 = *(u64 *)a->buf;	/* unmapped: visible */
		} else if (!ret && !a->write && !a->fixed) {
			ret = lite_aop_copy_out(a);
		}
	}
	lite_aop_free(a);
	io_uring_cmd_done(cmd, ret, res2, issue_flags);
}

/* A polled operation is over: from the store of @done on, @a may be gone. */
static void lite_aop_polled_done(struct lite_aop *a)
{
	smp_store_release(&a->done, true);
}

/*
 * What is left of a completed operation goes to whoever finishes it: the
 * issuer's task work, or (a polled ring) whoever polls next.
 */
static void lite_aop_hand_over(struct lite_aop *a)
{
	if (a->polled)
		lite_aop_polled_done(a);
	else
		io_uring_cmd_complete_in_task(a->cmd, lite_aop_finish);
}

/*
 * A completed operation's connection reference, let go in a process: the
 * last one (it may take node->lock), or an atomic's, whose timer may still
 * run and look at the connection.
 */
static void lite_aop_put_conn(struct work_struct *work)
{
	struct lite_aop *a = container_of(work, struct lite_aop, put_conn);

	if (a->is_call)
		cancel_delayed_work_sync(&a->expire);
	if (a->conn)
		lite_conn_put(a->conn);
	a->conn = NULL;
	lite_aop_hand_over(a);
}

/*
 * Any context: the operation is over. Its issuer's task work finishes it,
 * or, on a polled ring, whoever polls next; either may be much later (a
 * ring with deferred task work runs it only when its owner waits for
 * completions). So the buffers are unmapped and the connection let go
 * now: a node going down, which waits for its connections, never waits
 * for anyone's task work or reaping, and the device may go with it (as
 * the RPC calls do, lite_acall_release()).
 */
static void lite_aop_complete(struct lite_aop *a)
{
	lite_aop_end(a);
	lite_aop_unmap(a);
	if (atomic_cmpxchg(&a->spin, LITE_AOP_SPINNING, LITE_AOP_SPUN) ==
	    LITE_AOP_SPINNING)
		return;		/* its issuer finishes it (lite_aop_spin()) */
	if (a->is_call || (a->conn && !lite_conn_put_not_last(&a->conn))) {
		INIT_WORK(&a->put_conn, lite_aop_put_conn);
		queue_work(lite_wq, &a->put_conn);
	} else {
		lite_aop_hand_over(a);
	}
}

/* Completion context: every work request of the access completed. */
static void lite_aop_rw_done(struct lite_rdma_op *op)
{
	lite_aop_complete(container_of(op, struct lite_aop, op));
}

/* Any context: the atomic's reply came, or it failed or timed out. */
static void lite_aop_call_done(struct lite_call *call)
{
	lite_aop_complete(container_of(call, struct lite_aop, call));
}

/**
 * lite_uring_iopoll - reap a command of a polled ring (IORING_SETUP_IOPOLL)
 * @cmd: a read, write or atomic that lite_uring_cmd() started
 * @iob: unused (lite completes its commands one by one)
 * @poll_flags: unused: lite does not spin here itself
 *
 * Called by io_uring, with its ring lock held, in the task that waits for
 * completions (or io_uring's exit work) until the command completed: the
 * completion only marks it done, and this finishes it as the task work
 * would (a read's copy-out, the CQE) - no wake-up in between. Sleeps only
 * as that does (a fault in the user's buffer, an atomic's timer being
 * cancelled, releasing what the operation held). Only commands that
 * returned -EIOCBQUEUED without being completed come here.
 *
 * Return: 1 if it was finished now, 0 if it is still in flight.
 */
int lite_uring_iopoll(struct io_uring_cmd *cmd, struct io_comp_batch *iob,
		      unsigned int poll_flags)
{
	struct lite_aop *a = *lite_aop_slot(cmd);

	if (!smp_load_acquire(&a->done))
		return 0;
	lite_aop_finish(cmd, 0);
	return 1;
}

static void lite_aop_expire(struct work_struct *work)
{
	struct lite_aop *a = container_of(to_delayed_work(work),
					  struct lite_aop, expire);

	lite_call_expire(&a->call);
}

/* The asynchronous path takes short transfers in few remote pieces. */
static bool lite_aop_rw_fits(const struct lite_lmr *lmr,
			     const struct lite_rw *rw, struct lite_seg *segs,
			     int *n)
{
	u64 done;

	if (rw->len > LITE_AOP_MAX_LEN || (rw->flags & LITE_RW_ZCOPY))
		return false;
	*n = lite_lmr_segments(&lmr->layout, rw->offset, rw->len, segs,
			       LITE_AOP_SEGS, &done);
	return done == rw->len;
}

/*
 * The operation's kernel buffer of @len bytes, charged to the file (up to
 * LITE_AOP_KBUF bytes the one it keeps, allocated once); a write's bytes
 * copied in from @ubuf; mapped for the NIC (unmapped at the completion,
 * freed if not kept by lite_aop_free()).
 */
static int lite_aop_kbuf(struct lite_aop *a, u32 len, u64 ubuf)
{
	struct ib_device *dev = a->lmr->node->ibdev->dev;
	u64 dma;
	int ret;

	ret = lite_aop_account(a, len);
	if (ret)
		return ret;
	a->len = len;
	a->ubuf = ubuf;
	if (len > LITE_AOP_KBUF)
		a->buf = kmalloc(len, GFP_KERNEL_ACCOUNT);
	else if (a->kbuf)
		a->buf = a->kbuf;
	else
		a->buf = a->kbuf = kmalloc(LITE_AOP_KBUF, GFP_KERNEL_ACCOUNT);
	if (!a->buf)
		return -ENOMEM;
	if (a->write && copy_from_user(a->buf, u64_to_user_ptr(ubuf), len))
		return -EFAULT;
	dma = ib_dma_map_single(dev, a->buf, len,
				a->write ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, dma))
		return -ENOMEM;
	a->dma = dma;
	a->mapped = true;
	return 0;
}

/* Post (or queue) the operation's @n prepared WRs; their end completes it. */
static void lite_aop_post(struct lite_aop *a, u32 n)
{
	lite_rdma_op_init(&a->op, a->conn, lite_aop_rw_done);
	lite_rdma_submit(&a->op, a->wrs, n);
	lite_rdma_op_release(&a->op);
}

/* Buffer the data, then post (or queue) one WR per remote segment. */
static int lite_aop_rw_start(struct lite_aop *a, const struct lite_rw *rw,
			     const struct lite_seg *segs, int n)
{
	u32 lkey = a->lmr->node->pd->local_dma_lkey;
	u64 dma;
	int i, ret;

	ret = lite_aop_begin(a) ?: lite_aop_kbuf(a, rw->len, rw->buf);
	if (ret)
		return ret;
	dma = a->dma;
	for (i = 0; i < n; i++) {
		a->sges[i].addr = dma + segs[i].off;
		a->sges[i].length = segs[i].len;
		a->sges[i].lkey = lkey;
		a->wrs[i].wr.opcode = a->write ? IB_WR_RDMA_WRITE :
						 IB_WR_RDMA_READ;
		a->wrs[i].wr.sg_list = &a->sges[i];
		a->wrs[i].wr.num_sge = 1;
		a->wrs[i].rdma.remote_addr = segs[i].addr;
		a->wrs[i].rdma.rkey = segs[i].rkey;
	}
	lite_aop_post(a, n);
	return 0;
}

/*
 * Where the walk over a registered buffer's pages is: each page's used part
 * is mapped once (pieces of one page never get mappings that overlap).
 */
struct lite_bvec_walk {
	const struct bio_vec *bv;
	size_t off;			/* into *bv */
	u64 left;			/* bytes of the transfer not yet taken */
	bool mapped;			/* *bv's used part is the last map */
	size_t map_start;		/* its offset in *bv */
};

/* The DMA address of the walk's next byte, mapping its page's part. */
static int lite_bvec_walk_dma(struct lite_aop *a, struct lite_bvec_walk *w,
			      u64 *dma)
{
	struct ib_device *dev = a->lmr->node->ibdev->dev;
	struct lite_aop_fixed *f = a->fixed;
	struct lite_aop_map *m;
	u32 len;

	while (w->off == w->bv->bv_len) {
		w->bv++;
		w->off = 0;
		w->mapped = false;
	}
	if (!w->mapped) {
		if (f->n_maps == LITE_AOP_PAGES)
			return -EAGAIN;
		m = &f->maps[f->n_maps];
		len = min_t(u64, w->bv->bv_len - w->off, w->left);
		m->dma = ib_dma_map_page(dev, w->bv->bv_page,
					 w->bv->bv_offset + w->off, len,
					 a->write ? DMA_TO_DEVICE :
						    DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(dev, m->dma))
			return -ENOMEM;
		m->len = len;
		f->n_maps++;
		w->mapped = true;
		w->map_start = w->off;
	}
	*dma = f->maps[f->n_maps - 1].dma + (w->off - w->map_start);
	return 0;
}

/* One WR over the next pieces of @seg; the walk goes on. */
static int lite_aop_fixed_wr(struct lite_aop *a, struct lite_bvec_walk *w,
			     const struct lite_seg *seg, u64 *in_seg,
			     u32 max_sge, u32 *n_sges, union lite_wr *wr)
{
	u32 first = *n_sges, piece;
	u64 start = *in_seg, dma;
	int ret;

	while (*n_sges - first < max_sge && *in_seg < seg->len) {
		if (*n_sges == LITE_AOP_SGES)
			return -EAGAIN;
		ret = lite_bvec_walk_dma(a, w, &dma);
		if (ret)
			return ret;
		piece = min_t(u64, w->bv->bv_len - w->off, seg->len - *in_seg);
		a->fixed->sges[*n_sges].addr = dma;
		a->fixed->sges[*n_sges].length = piece;
		a->fixed->sges[*n_sges].lkey = a->lmr->node->pd->local_dma_lkey;
		(*n_sges)++;
		w->off += piece;
		w->left -= piece;
		*in_seg += piece;
	}
	memset(wr, 0, sizeof(*wr));
	wr->wr.opcode = a->write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
	wr->wr.sg_list = &a->fixed->sges[first];
	wr->wr.num_sge = *n_sges - first;
	wr->rdma.remote_addr = seg->addr + start;
	wr->rdma.rkey = seg->rkey;
	return 0;
}

/*
 * A read or write on a registered buffer (IORING_URING_CMD_FIXED): the NIC
 * moves the bytes straight to or from its pages, which io_uring keeps
 * pinned until the command completes; each piece is mapped for this
 * transfer only. No copy, no bounce buffer.
 * Return: 0; -EAGAIN if it needs more WRs or SGEs than an operation holds
 * (the caller takes the synchronous path); or an error.
 */
static int lite_aop_fixed_start(struct lite_aop *a, const struct lite_rw *rw,
				const struct lite_seg *segs, int n)
{
	u32 max_sge, nwr = 0, n_sges = 0;
	struct lite_bvec_walk w;
	struct iov_iter it;
	u64 in_seg;
	int i, ret;

	ret = io_uring_cmd_import_fixed(rw->buf, rw->len,
					a->write ? WRITE : READ, &it, a->cmd);
	if (ret)
		return ret;
	if (!iov_iter_is_bvec(&it))
		return -EFAULT;
	ret = lite_aop_begin(a);
	if (ret)
		return ret;
	ret = lite_aop_account(a, sizeof(*a->fixed));
	if (ret)
		return ret;
	if (!a->fixed_kept)
		a->fixed_kept = kmalloc(sizeof(*a->fixed), GFP_KERNEL_ACCOUNT);
	if (!a->fixed_kept)
		return -ENOMEM;
	a->fixed = a->fixed_kept;
	a->fixed->n_maps = 0;
	max_sge = a->write ? a->conn->max_sge : a->conn->max_sge_rd;
	w.bv = it.bvec;
	w.off = it.iov_offset;
	w.left = rw->len;
	w.mapped = false;
	/* The segments tile the buffer in order. */
	for (i = 0; i < n; i++) {
		for (in_seg = 0; in_seg < segs[i].len;) {
			if (nwr == LITE_AOP_SEGS)
				return -EAGAIN;
			ret = lite_aop_fixed_wr(a, &w, &segs[i], &in_seg,
						max_sge, &n_sges,
						&a->wrs[nwr++]);
			if (ret)
				return ret;
		}
	}
	lite_aop_post(a, nwr);
	return 0;
}

static bool lite_aop_spun(void *arg)
{
	struct lite_aop *a = arg;

	return atomic_read_acquire(&a->spin) == LITE_AOP_SPUN;
}

/*
 * LITE_RW_SPIN: the operation is posted; poll for its completion as a
 * synchronous one would (lite_spin(), which stops for any other task this
 * CPU should run), in the modes whose polling has a bound in microseconds
 * (poll: twice the recent waits, at most LITE_POLL_MAX_US; adaptive:
 * LITE_CQ_SPIN_US) - io_uring may hold its ring lock meanwhile. If it
 * came, finish it here: its CQE is posted before the submission returns,
 * no task work and no wake-up (on a polled ring io_uring then finds it
 * completed and never polls it). Else it completes as any other.
 */
static int lite_aop_spin(struct lite_aop *a, unsigned int issue_flags)
{
	struct lite_node *node = a->lmr->node;

	if (node->cq_mode == LITE_CQ_POLL || node->cq_mode == LITE_CQ_ADAPTIVE)
		lite_spin(node, a->conn, lite_aop_spun, a,
			  jiffies + 1 + usecs_to_jiffies(LITE_POLL_MAX_US));
	if (atomic_cmpxchg(&a->spin, LITE_AOP_SPINNING, LITE_AOP_GAVE_UP) ==
	    LITE_AOP_SPINNING)
		return -EIOCBQUEUED;
	/* SPUN: the completion is done with @a; what it saw is visible. */
	smp_acquire__after_ctrl_dep();
	lite_aop_finish(a->cmd, issue_flags);
	return -EIOCBQUEUED;
}

/*
 * What the asynchronous path does not take runs synchronously in an
 * io_uring worker (a registered buffer's address is the caller's too).
 * Drops the caller's reference on @lmr.
 */
static int lite_uring_rw_sync(struct lite_file *lf, struct lite_lmr *lmr,
			      const struct lite_rw *rw, bool write,
			      unsigned int issue_flags)
{
	int ret;

	if (issue_flags & IO_URING_F_NONBLOCK) {
		ret = -EAGAIN;	/* again from an io_uring worker */
	} else {
		lite_aop_count(lmr->node);
		ret = lite_rdma_rw(lmr, rw->offset, rw->len,
				   u64_to_user_ptr(rw->buf), write, rw->flags,
				   lf->pins);
		atomic_dec(&lmr->node->aops);
	}
	lite_lmr_put(lmr);
	return ret;
}

/*
 * A registered buffer's range: -EFAULT unless the registered buffer holds
 * it (whichever path then moves the data); 1 if the NIC may move it
 * straight, 0 for the synchronous path (a read not aligned to the DMA
 * cache line: its pages' mappings would share lines with others').
 */
static int lite_uring_fixed_check(struct io_uring_cmd *cmd,
				  const struct lite_rw *rw, bool write)
{
	struct iov_iter it;
	int ret;

	ret = io_uring_cmd_import_fixed(rw->buf, rw->len, write ? WRITE : READ,
					&it, cmd);
	if (ret)
		return ret;
	return write || lite_dma_aligned(rw->buf, rw->len);
}

static int lite_uring_rw(struct lite_file *lf, struct io_uring_cmd *cmd,
			 unsigned int issue_flags, bool write)
{
	bool fixed = cmd->flags & IORING_URING_CMD_FIXED;
	struct lite_seg segs[LITE_AOP_SEGS];
	struct lite_lmr *lmr;
	struct lite_aop *a;
	struct lite_rw rw;
	int n, ret;

	memcpy(&rw, cmd->cmd, sizeof(rw));
	if (fixed && (rw.flags & ~LITE_RW_SPIN))
		return -EINVAL;		/* no path to pick: the NIC's */
	ret = lite_file_rw_access(lf, &rw, write, &lmr);
	if (ret)
		return ret;
	if (!rw.len) {
		lite_lmr_put(lmr);
		return 0;
	}
	if (fixed) {
		ret = lite_uring_fixed_check(cmd, &rw, write);
		if (ret < 0) {
			lite_lmr_put(lmr);
			return ret;
		}
		if (!ret)
			return lite_uring_rw_sync(lf, lmr, &rw, write, issue_flags);
	}
	if (!lite_aop_rw_fits(lmr, &rw, segs, &n))
		return lite_uring_rw_sync(lf, lmr, &rw, write, issue_flags);
	a = lite_aop_new(lf, cmd, issue_flags, lmr, &ret);
	if (!a)
		return ret;
	a->write = write;
	if (rw.flags & LITE_RW_SPIN)
		atomic_set(&a->spin, LITE_AOP_SPINNING);
	if (a->polled && !write && !fixed) {
		a->mm = current->mm;	/* the copy-out's address space */
		mmgrab(a->mm);
	}
	if (!ret && fixed)
		ret = lite_aop_fixed_start(a, &rw, segs, n);
	else if (!ret)
		ret = lite_aop_rw_start(a, &rw, segs, n);
	if (ret == -EAGAIN) {
		/* Too many pieces: the LMR reference goes to the sync path. */
		lite_lmr_get(lmr);
		lite_aop_free(a);
		return lite_uring_rw_sync(lf, lmr, &rw, write, issue_flags);
	}
	if (ret) {
		lite_aop_free(a);
		return ret;
	}
	if (rw.flags & LITE_RW_SPIN)
		return lite_aop_spin(a, issue_flags);
	return -EIOCBQUEUED;
}

/* A NIC atomic: one WR whose old value lands in an 8-byte buffer. */
static int lite_aop_nic_atomic_start(struct lite_aop *a,
				     const struct lite_atomic *at,
				     bool cmp_swap)
{
	int ret;

	if (!a->lmr->node->nic_atomic)
		return -EOPNOTSUPP;
	a->nic_atomic = true;	/* a->write stays false: the NIC writes it */
	ret = lite_aop_begin(a) ?: lite_aop_kbuf(a, 8, 0) ?:
	      lite_rdma_atomic_wr(&a->wrs[0], &a->sges[0], a->lmr, at->offset,
				  cmp_swap, at->operand, at->swap, a->dma);
	if (ret)
		return ret;
	lite_aop_post(a, 1);
	return 0;
}

static int lite_uring_atomic(struct lite_file *lf, struct io_uring_cmd *cmd,
			     unsigned int issue_flags, bool cmp_swap)
{
	struct lite_wire_atomic req = {};
	struct lite_atomic at;
	struct lite_lmr *lmr;
	struct lite_aop *a;
	int ret;

	if (!(issue_flags & IO_URING_F_CQE32))
		return -EINVAL;		/* the old value needs the big CQE */
	memcpy(&at, cmd->cmd, sizeof(at));
	ret = lite_file_atomic_access(lf, &at, cmp_swap, &lmr);
	if (ret)
		return ret;
	a = lite_aop_new(lf, cmd, issue_flags, lmr, &ret);
	if (!a)
		return ret;
	if (lmr->flags & LITE_WIRE_LMR_NIC_ATOMIC) {
		if (!ret)
			ret = lite_aop_nic_atomic_start(a, &at, cmp_swap);
		if (ret) {
			lite_aop_free(a);
			return ret;
		}
		return -EIOCBQUEUED;
	}
	a->is_call = true;
	INIT_DELAYED_WORK(&a->expire, lite_aop_expire);
	if (!ret)
		ret = lite_aop_begin(a);
	if (ret)
		goto free;
	req.mr_id = cpu_to_le64(lmr->mr_id);
	req.offset = cpu_to_le64(at.offset);
	req.operand = cpu_to_le64(at.operand);
	req.swap = cpu_to_le64(at.swap);
	req.op = cmp_swap ? LITE_ATOMIC_CMP_SWAP : LITE_ATOMIC_FETCH_ADD;
	/* Armed first: the reply may come before the start returns. */
	queue_delayed_work(lite_wq, &a->expire,
			   lite_tun_jiffies(data_timeout_ms));
	ret = lite_call_start_async(a->conn, &a->call, lite_aop_call_done,
				    LITE_MSG_ATOMIC, &req, sizeof(req),
				    &a->rep, sizeof(a->rep));
	if (!ret)
		return -EIOCBQUEUED;
	cancel_delayed_work_sync(&a->expire);
free:
	lite_aop_free(a);
	return ret;
}

/* RPC: calls, and a server's receives and replies */

/* An RPC call or receive in flight. */
struct lite_urpc {
	struct io_uring_cmd *cmd;
	struct lite_file *lf;		/* alive: io_uring holds the file */
	struct lite_node *node;		/* referenced */
	union {
		struct lite_rpc_call call;
		struct lite_rpc_recv recv;
	} a;				/* the command's arguments */
	struct lite_acall *acall;	/* a call */
	struct lite_urecv urecv;	/* a receive: */
	struct delayed_work tick;
	unsigned long deadline;		/* jiffies; 0: none */
	u64 accounted;			/* bytes in lf->aop_bytes */
};

static struct lite_urpc **lite_urpc_slot(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct lite_urpc *) > sizeof(cmd->pdu));
	return (struct lite_urpc **)cmd->pdu;
}

/*
 * The state of an RPC command, with @extra bytes of kernel memory it will
 * hold (a call's reply buffer and staging) charged to the file's limit.
 */
static struct lite_urpc *lite_urpc_new(struct lite_file *lf,
				       struct io_uring_cmd *cmd, u64 extra)
{
	u64 bytes = sizeof(struct lite_urpc) + extra;
	struct lite_node *node;
	struct lite_urpc *ur;

	if (atomic64_add_return(bytes, &lf->aop_bytes) > LITE_AOP_FILE_BYTES) {
		atomic64_sub(bytes, &lf->aop_bytes);
		return ERR_PTR(-EBUSY);
	}
	node = lite_file_node(lf);
	if (IS_ERR(node)) {
		atomic64_sub(bytes, &lf->aop_bytes);
		return ERR_CAST(node);
	}
	ur = kzalloc(sizeof(*ur), GFP_KERNEL_ACCOUNT);
	if (!ur) {
		atomic64_sub(bytes, &lf->aop_bytes);
		lite_node_put(node);
		return ERR_PTR(-ENOMEM);
	}
	ur->cmd = cmd;
	ur->lf = lf;
	ur->node = node;
	ur->accounted = bytes;
	lite_aop_count(node);
	*lite_urpc_slot(cmd) = ur;
	return ur;
}

static void lite_urpc_free(struct lite_urpc *ur)
{
	atomic64_sub(ur->accounted, &ur->lf->aop_bytes);
	atomic_dec(&ur->node->aops);
	lite_node_put(ur->node);
	kfree(ur);
}

/* A call that would wait for its ring: in an io_uring worker. */
static int lite_uring_call_sync(struct lite_urpc *ur, unsigned int issue_flags)
{
	struct lite_rpc_call *rc = &ur->a.call;
	int ret;

	ret = lite_rpc_call(ur->node, rc, NULL);
	if (!ret)
		ret = rc->reply_len;
	io_uring_cmd_done(ur->cmd, ret, ret >= 0 || ret == -EMSGSIZE ?
			  rc->reply_len : 0, issue_flags);
	lite_urpc_free(ur);
	return -EIOCBQUEUED;
}

/* Task work: the call's reply came, or it failed or timed out. */
static void lite_uring_call_finish(struct io_uring_cmd *cmd,
				   unsigned int issue_flags)
{
	struct lite_urpc *ur = *lite_urpc_slot(cmd);
	u64 len = 0;
	int ret;

	ret = lite_rpc_acall_finish(ur->acall, &ur->a.call, &len);
	lite_urpc_free(ur);
	io_uring_cmd_done(cmd, ret ?: (int)len, len, issue_flags);
}

static void lite_uring_call_done(void *arg)
{
	struct lite_urpc *ur = arg;

	io_uring_cmd_complete_in_task(ur->cmd, lite_uring_call_finish);
}

/*
 * An RPC call: started here when its ring needs no waiting, completed in
 * task work when its reply comes; else made synchronously by a worker.
 */
static int lite_uring_rpc_call(struct lite_file *lf, struct io_uring_cmd *cmd,
			       unsigned int issue_flags)
{
	struct lite_rpc_call rc;
	struct lite_urpc *ur;
	int ret;

	memcpy(&rc, cmd->cmd, sizeof(rc));
	ret = lite_rpc_call_check(&rc);
	if (ret)
		return ret;
	ur = lite_urpc_new(lf, cmd, rc.req_len + rc.reply_cap);
	if (IS_ERR(ur))
		return PTR_ERR(ur);
	ur->a.call = rc;
	ret = lite_rpc_acall_start(ur->node, &ur->a.call, lite_uring_call_done,
				   ur, &ur->acall);
	if (!ret)
		return -EIOCBQUEUED;
	if (ret != -EAGAIN)
		goto free;
	if (!(issue_flags & IO_URING_F_NONBLOCK))
		return lite_uring_call_sync(ur, issue_flags);
free:
	lite_urpc_free(ur);
	return ret;		/* -EAGAIN: again from an io_uring worker */
}

/* A receive ends: the CQE carries its length, token and sender. */
static void lite_uring_recv_end(struct lite_urpc *ur, int ret,
				unsigned int issue_flags)
{
	struct io_uring_cmd *cmd = ur->cmd;
	struct lite_rpc_recv *r = &ur->a.recv;
	u64 res2 = 0;

	cancel_delayed_work_sync(&ur->tick);
	lite_rpc_urecv_release(&ur->urecv);
	if (!ret)
		res2 = r->token | (u64)r->src_node << 32;
	else if (ret == -EMSGSIZE)
		res2 = r->len;
	if (!ret)
		ret = r->len;
	lite_urpc_free(ur);
	io_uring_cmd_done(cmd, ret, res2, issue_flags);
}

/*
 * Take a request, or park until one comes (or the time is up). Not for an
 * exiting task or io_uring's fallback worker (nobody to copy to), nor for
 * a task waiting for its io_uring requests to end (exec), nor for a ring
 * being torn down (its buffers may be gone).
 */
static void lite_uring_recv_try(struct lite_urpc *ur, unsigned int issue_flags)
{
	struct io_kiocb *req = cmd_to_io_kiocb(ur->cmd);
	struct io_uring_task *tctx = req->task->io_uring;
	int ret = -ECANCELED;

	if (!(current->flags & (PF_EXITING | PF_KTHREAD)) &&
	    !(tctx && atomic_read(&tctx->in_idle)) &&
	    !percpu_ref_is_dying(&req->ctx->refs))
		ret = lite_rpc_urecv_try(ur->lf, ur->node, &ur->urecv,
					 &ur->a.recv);
	else
		lite_rpc_urecv_cancel(&ur->urecv);	/* passes a request on */
	if (ret != -EAGAIN)
		lite_uring_recv_end(ur, ret, issue_flags);
}

static void lite_uring_recv_again(struct io_uring_cmd *cmd,
				  unsigned int issue_flags)
{
	lite_uring_recv_try(*lite_urpc_slot(cmd), issue_flags);
}

static void lite_uring_recv_expired(struct io_uring_cmd *cmd,
				    unsigned int issue_flags)
{
	struct lite_urpc *ur = *lite_urpc_slot(cmd);

	lite_uring_recv_end(ur, ur->deadline &&
			    time_after_eq(jiffies, ur->deadline) ?
			    -ETIMEDOUT : -ECANCELED, issue_flags);
}

/* A request arrived for the parked receive, or its port died. */
static void lite_uring_recv_ready(struct lite_urecv *u)
{
	struct lite_urpc *ur = container_of(u, struct lite_urpc, urecv);

	io_uring_cmd_complete_in_task(ur->cmd, lite_uring_recv_again);
}

/*
 * Whether the receive should end although nothing came: its time is up,
 * its task is exiting or waits for its io_uring requests to end (exec,
 * io_uring's cancellation: in_idle), or its ring is being torn down. This
 * kernel's io_uring cannot cancel a command, and all of those wait for
 * every command to end; so, like ublk's monitor, look.
 */
static bool lite_uring_recv_over(struct lite_urpc *ur)
{
	struct io_kiocb *req = cmd_to_io_kiocb(ur->cmd);
	struct io_uring_task *tctx = req->task->io_uring;

	return (ur->deadline && time_after_eq(jiffies, ur->deadline)) ||
	       (req->task->flags & PF_EXITING) ||
	       (tctx && atomic_read(&tctx->in_idle)) ||
	       percpu_ref_is_dying(&req->ctx->refs);
}

static void lite_uring_recv_tick(struct work_struct *work)
{
	struct lite_urpc *ur = container_of(to_delayed_work(work),
					    struct lite_urpc, tick);
	unsigned long next = msecs_to_jiffies(LITE_URING_TICK_MS);

	if (!lite_uring_recv_over(ur)) {
		if (ur->deadline)
			next = min_t(unsigned long, next,
				     ur->deadline - jiffies);
		queue_delayed_work(lite_wq, &ur->tick, next);
		return;
	}
	/* Parked: it ends now; else the next try sees it expired. */
	if (lite_rpc_urecv_expire(&ur->urecv))
		io_uring_cmd_complete_in_task(ur->cmd,
					      lite_uring_recv_expired);
}

/*
 * A server's receive: completes at once if a request is queued, else
 * waits parked on the port (no thread waits) until one comes.
 */
static int lite_uring_rpc_recv(struct lite_file *lf, struct io_uring_cmd *cmd,
			       unsigned int issue_flags)
{
	struct lite_rpc_recv *r;
	struct lite_urpc *ur;
	int ret;

	if (!(issue_flags & IO_URING_F_CQE32))
		return -EINVAL;		/* the token needs the big CQE */
	ur = lite_urpc_new(lf, cmd, 0);
	if (IS_ERR(ur))
		return PTR_ERR(ur);
	r = &ur->a.recv;
	memcpy(r, cmd->cmd, sizeof(*r));
	ret = lite_rpc_recv_ok(r) ? 0 : -EINVAL;
	if (!ret)
		ret = lite_rpc_urecv_init(lf, &ur->urecv, r->port,
					  lite_uring_recv_ready);
	if (ret) {
		lite_urpc_free(ur);
		return ret;
	}
	if (r->timeout_ms)
		ur->deadline = (jiffies + msecs_to_jiffies(r->timeout_ms)) ?: 1;
	/* Armed first: the receive may park and be taken at once. */
	INIT_DELAYED_WORK(&ur->tick, lite_uring_recv_tick);
	queue_delayed_work(lite_wq, &ur->tick,
			   msecs_to_jiffies(min_t(u32, r->timeout_ms ?:
						  LITE_URING_TICK_MS,
						  LITE_URING_TICK_MS)));
	lite_uring_recv_try(ur, issue_flags);
	return -EIOCBQUEUED;
}

/* A reply goes out without waiting, unless it takes several steps. */
static int lite_uring_rpc_reply(struct lite_file *lf, struct io_uring_cmd *cmd,
				unsigned int issue_flags)
{
	struct lite_rpc_reply rp;
	struct lite_node *node;
	int ret;

	memcpy(&rp, cmd->cmd, sizeof(rp));
	if (!lite_rpc_reply_ok(&rp))
		return -EINVAL;
	if (rp.len > LITE_URING_REPLY_MAX && rp.len <= LITE_RPC_MAX &&
	    (issue_flags & IO_URING_F_NONBLOCK))
		return -EAGAIN;	/* again from an io_uring worker */
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_rpc_reply(lf, node, &rp, NULL);
	lite_node_put(node);
	return ret;
}

/*
 * A file into an LMR: from an io_uring worker, synchronously (it reads the
 * file). The CQE carries the bytes sent (also in the big CQE's first
 * word), so a send is at most INT_MAX.
 */
static int lite_uring_sendfile(struct lite_file *lf, struct io_uring_cmd *cmd,
			       unsigned int issue_flags)
{
	struct lite_sendfile sf;
	struct lite_lmr *lmr;
	u64 sent = 0;
	int ret;

	memcpy(&sf, cmd->cmd, sizeof(sf));
	if (sf.len > INT_MAX)
		return -EOVERFLOW;
	ret = lite_file_sendfile_access(lf, &sf, &lmr);
	if (ret)
		return ret;
	if (issue_flags & IO_URING_F_NONBLOCK) {
		lite_lmr_put(lmr);
		return -EAGAIN;	/* again from an io_uring worker */
	}
	ret = lite_sendfile(lf, lmr, sf.lmr_offset, sf.fd, sf.file_offset,
			    sf.len, &sent);
	lite_lmr_put(lmr);
	if (ret == -ERESTARTSYS)
		ret = -EINTR;
	return lite_uring_done_now(cmd, ret ?: (int)sent, sent, issue_flags);
}

/* One handler per command. */
static int lite_uring_issue(struct lite_file *lf, struct io_uring_cmd *cmd,
			    unsigned int issue_flags)
{
	switch (cmd->cmd_op) {
	case LITE_IOC_READ:
		return lite_uring_rw(lf, cmd, issue_flags, false);
	case LITE_IOC_WRITE:
		return lite_uring_rw(lf, cmd, issue_flags, true);
	case LITE_IOC_FETCH_ADD:
		return lite_uring_atomic(lf, cmd, issue_flags, false);
	case LITE_IOC_CMP_SWAP:
		return lite_uring_atomic(lf, cmd, issue_flags, true);
	case LITE_IOC_RPC_CALL:
		return lite_uring_rpc_call(lf, cmd, issue_flags);
	case LITE_IOC_RPC_RECV:
		return lite_uring_rpc_recv(lf, cmd, issue_flags);
	case LITE_IOC_RPC_REPLY:
		return lite_uring_rpc_reply(lf, cmd, issue_flags);
	case LITE_IOC_SENDFILE:
		return lite_uring_sendfile(lf, cmd, issue_flags);
	}
	return -ENOTTY;
}

/*
 * A ring that polls for completions (IORING_SETUP_IOPOLL) takes reads,
 * writes and atomics, not RPC (a receive may wait for ever, and the ring
 * would spin all that time). What finishes at once is completed through
 * io_uring_cmd_done() as well: 6.1 puts a command that returned 0 on its
 * poll list after completing it.
 */
static int lite_uring_polled(struct lite_file *lf, struct io_uring_cmd *cmd,
			     unsigned int issue_flags)
{
	int ret;

	if (cmd->cmd_op == LITE_IOC_RPC_CALL ||
	    cmd->cmd_op == LITE_IOC_RPC_RECV ||
	    cmd->cmd_op == LITE_IOC_RPC_REPLY)
		return -EOPNOTSUPP;
	ret = lite_uring_issue(lf, cmd, issue_flags);
	/*
	 * Started, again from a worker, or failed; but io_uring would issue
	 * a command that a worker finds busy again and again: it fails.
	 */
	if (ret < 0 && (ret != -EAGAIN || issue_flags & IO_URING_F_NONBLOCK))
		return ret;
	return lite_uring_done_now(cmd, ret, 0, issue_flags);
}

/**
 * lite_uring_cmd - issue an io_uring command on an open /dev/lite
 * @cmd: the command; its 128-byte SQE carries the ioctl's structure
 * @issue_flags: IO_URING_F_*: SQE128 is required, CQE32 for atomics
 *
 * Reads, writes and atomics that fit the asynchronous path start here and
 * complete later through io_uring task work (or, on a ring with
 * IORING_SETUP_IOPOLL, through lite_uring_iopoll()); longer or zero-copy
 * transfers and RPC calls return -EAGAIN when issued with
 * IO_URING_F_NONBLOCK, and run synchronously when io_uring issues them
 * again from a worker thread.
 *
 * Return: -EIOCBQUEUED once the command was started (or was completed
 * with io_uring_cmd_done()); 0 or a negative errno for one that finished
 * at once; -EAGAIN (see above); -EINVAL without a 128-byte SQE, or for an
 * atomic without a 32-byte CQE; -EOPNOTSUPP for an RPC command on a
 * polled ring; -ENOTTY for an unknown command.
 */
int lite_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct lite_file *lf = cmd->file->private_data;

	/* The structures fit the 80-byte command area of a 128-byte SQE. */
	BUILD_BUG_ON(sizeof(struct lite_rw) > 80);
	BUILD_BUG_ON(sizeof(struct lite_atomic) > 80);
	BUILD_BUG_ON(sizeof(struct lite_rpc_call) > 80);
	BUILD_BUG_ON(sizeof(struct lite_rpc_recv) > 80);
	BUILD_BUG_ON(sizeof(struct lite_rpc_reply) > 80);
	BUILD_BUG_ON(sizeof(struct lite_sendfile) > 80);
	if (!(issue_flags & IO_URING_F_SQE128))
		return -EINVAL;		/* the structures need the big SQE */
	/* Registered buffers: reads and writes only. */
	if (cmd->flags & IORING_URING_CMD_FIXED &&
	    cmd->cmd_op != LITE_IOC_READ && cmd->cmd_op != LITE_IOC_WRITE)
		return -EINVAL;
	if (issue_flags & IO_URING_F_IOPOLL)
		return lite_uring_polled(lf, cmd, issue_flags);
	return lite_uring_issue(lf, cmd, issue_flags);
}
