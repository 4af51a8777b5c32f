// SPDX-License-Identifier: GPL-2.0
/*
 * lite DSM, the side of every node that uses a region: the region files
 * processes mmap, their page faults, the frames that hold this node's
 * copies, the fetch of a granted copy and the answers to a home's INVAL.
 * The home's side (directory, transactions) is dsm_home.c; the per-page
 * record is core/dsm.c.
 *
 * Every process on a node maps one inode per region (a pseudo filesystem
 * of ours), so one unmap_mapping_range() drops a page from all of them.
 * Pages are mapped as PFNs of our own frames (VM_PFNMAP): read copies
 * read-only, the writable copy writable; a store to a read copy comes back
 * through pfn_mkwrite. A fault that needs a copy starts one request for its
 * page (a fetch) and waits for it with a bound; the fetch belongs to the
 * node, not to the thread: a thread killed meanwhile leaves it to finish
 * and report to the home (DONE), so nothing is left half done. Faults of
 * several threads on one page wait for the same fetch.
 *
 * Installing a page and dropping it are ordered by region->zap_sem: a
 * fault installs only under the read side after checking the frame's
 * state; an invalidation changes the state and unmaps under the write
 * side. So no mapping outlives the copy it maps.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/highmem.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <linux/ktime.h>
#include <linux/cpumask.h>
#include <linux/seq_file.h>

#include "internal.h"

#define LITE_DSM_FS_MAGIC	0x4c44534dU	/* "LDSM" */
#define LITE_DSM_FREE_BATCH	64	/* frames freed per round */
#define LITE_DSM_SHOW_BATCH	64	/* frames listed per region lock */

static_assert(PAGE_SIZE == LITE_DSM_PAGE_SIZE);

/* A request for a copy of one page, from start to the home's DONE. */
struct lite_dsm_fetch {
	struct lite_dsm_region *region;	/* holds a reference */
	struct lite_dsm_frame *frame;
	u64 index;
	u8 kind;			/* LITE_DSM_RD or LITE_DSM_WR */
	u8 stage;			/* what @work does next */
	bool granted;			/* the home runs a transaction for it */
	int status;
	int tries;			/* REQ sent again after broken connections */
	int reply_status;		/* a failed call, handled by @work */
	unsigned long done_by;		/* jiffies: give up telling the home */
	unsigned long deadline;		/* for connections to come back */
	struct lite_conn *conn;		/* the call's connection; a reference */
	struct lite_call call;		/* DSM_REQ, then DSM_DONE */
	struct lite_wire_dsm_req req;
	struct lite_wire_dsm_grant grant;
	struct lite_wire_dsm_done done;
	struct lite_conn *data_conn;	/* DATA: to the source; a reference */
	struct lite_rdma_op op;
	union lite_wr wr;
	struct ib_sge sge;
	struct work_struct work;	/* on the node's dsm work queue */
};

enum lite_dsm_stage {
	LITE_DSM_ST_REQ,	/* send the request (again) */
	LITE_DSM_ST_REQ_FAILED,	/* the request's call failed */
	LITE_DSM_ST_GRANTED,	/* carry a grant out in process context */
	LITE_DSM_ST_DONE,	/* tell the home how the grant went (again) */
	LITE_DSM_ST_DONE_LOST,	/* the home never heard: drop the copy */
	LITE_DSM_ST_FREE,	/* release it */
};

static struct vfsmount *lite_dsm_mnt;

static void lite_dsm_timer(struct work_struct *work);

static int lite_dsm_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, LITE_DSM_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type lite_dsm_fs = {
	.name = "lite_dsm",
	.init_fs_context = lite_dsm_init_fs_context,
	.kill_sb = kill_anon_super,
};

/**
 * lite_dsm_init - mount the pseudo filesystem of region inodes
 *
 * Return: 0 or a negative errno.
 */
int lite_dsm_init(void)
{
	lite_dsm_mnt = kern_mount(&lite_dsm_fs);
	return PTR_ERR_OR_ZERO(lite_dsm_mnt);
}

/**
 * lite_dsm_exit - unmount it; every region is gone
 */
void lite_dsm_exit(void)
{
	kern_unmount(lite_dsm_mnt);
}

/**
 * lite_dsm_node_init - a node's DSM state
 * @node: the node being created
 */
void lite_dsm_node_init(struct lite_node *node)
{
	/*
	 * Both xarrays of this file share one lock class, and the frames'
	 * lock nests in the region lock, which the CQ handler takes: every
	 * change takes it with bottom halves off (the _bh calls).
	 */
	xa_init_flags(&node->dsm, XA_FLAGS_LOCK_BH);
	mutex_init(&node->dsm_lock);
	spin_lock_init(&node->dsm_all_lock);
	INIT_LIST_HEAD(&node->dsm_all);
	INIT_DELAYED_WORK(&node->dsm_timer, lite_dsm_timer);
}

/**
 * lite_dsm_find - the region @id opened on @node, with a reference
 * @node: the node
 * @id: the region id
 *
 * Any context.
 * Return: the region (drop it with lite_dsm_put()), or NULL.
 */
struct lite_dsm_region *lite_dsm_find(struct lite_node *node, u64 id)
{
	struct lite_dsm_region *r;

	rcu_read_lock();
	r = xa_load(&node->dsm, (unsigned long)id);
	if (r && !kref_get_unless_zero(&r->ref))
		r = NULL;
	rcu_read_unlock();
	return r;
}

/*
 * Count a frame about to be allocated, unless the node goes down
 * (lite_dsm_node_free() waits for the count to drop to zero).
 */
static bool lite_dsm_frames_get(struct lite_node *node)
{
	atomic_inc(&node->dsm_frames);
	smp_mb__after_atomic();	/* pairs with lite_dsm_node_free() */
	if (!READ_ONCE(node->dsm_frames_off))
		return true;
	if (atomic_dec_and_test(&node->dsm_frames))
		wake_up_all(&node->conns_wq);
	return false;
}

/* @n frames are freed: their pages, DMA mappings and keys. */
static void lite_dsm_frames_put(struct lite_node *node, int n)
{
	if (n && atomic_sub_and_test(n, &node->dsm_frames))
		wake_up_all(&node->conns_wq);
}

/*
 * Free every frame of @r. Nothing maps them: the region is dead (no fault
 * installs one) and was unmapped, or no file is left. Fetches are over.
 */
static void lite_dsm_free_frames(struct lite_dsm_region *r)
{
	struct lite_dsm_frame *batch[LITE_DSM_FREE_BATCH];
	struct lite_mr *mrs[LITE_DSM_FREE_BATCH];
	struct lite_dsm_frame *frame;
	struct ib_device *dev;
	unsigned long index;
	int n, i;

	/* No fault is installing one (zap_sem), none allocates one. */
	down_write(&r->zap_sem);
	spin_lock_bh(&r->lock);
	WRITE_ONCE(r->no_frames, true);
	spin_unlock_bh(&r->lock);
	if (xa_empty(&r->frames)) {
		up_write(&r->zap_sem);
		return;	/* the device may be gone: do not look at it */
	}
	dev = r->node->ibdev->dev;
	do {
		n = 0;
		spin_lock_bh(&r->lock);
		xa_for_each(&r->frames, index, frame) {
			xa_erase_bh(&r->frames, index);
			batch[n++] = frame;
			if (n == ARRAY_SIZE(batch))
				break;
		}
		spin_unlock_bh(&r->lock);
		/*
		 * Keys first: no peer reads the pages once they are free.
		 * Deregistered, not invalidated and kept: the node goes.
		 */
		for (i = 0; i < n; i++)
			mrs[i] = batch[i]->mr;
		lite_mr_release(r->node, mrs, n, false);
		for (i = 0; i < n; i++) {
			ib_dma_unmap_page(dev, batch[i]->dma, PAGE_SIZE,
					  DMA_BIDIRECTIONAL);
			__free_page(batch[i]->page);
			kfree(batch[i]);
		}
		atomic64_sub(n, &r->node->dsm_stats.pages);
		lite_dsm_frames_put(r->node, n);
		cond_resched();
	} while (n);
	up_write(&r->zap_sem);
}

static void lite_dsm_release(struct kref *ref)
{
	struct lite_dsm_region *r = container_of(ref, struct lite_dsm_region,
						 ref);
	struct lite_node *node = r->node;

	if (r->dir)
		lite_dsm_home_destroy(r);
	lite_dsm_free_frames(r);
	spin_lock(&node->dsm_all_lock);
	list_del(&r->all_entry);
	spin_unlock(&node->dsm_all_lock);
	iput(r->inode);
	atomic64_dec(&node->dsm_stats.regions);
	kfree_rcu(r, rcu);
	lite_node_put(node);
}

/**
 * lite_dsm_put - drop a reference on a region
 * @r: the region
 *
 * The last one frees its frames (nothing maps them any more: every
 * mapping holds a file, and every file a reference) and, at the home, the
 * directory. Process context.
 */
void lite_dsm_put(struct lite_dsm_region *r)
{
	kref_put(&r->ref, lite_dsm_release);
}

static void lite_dsm_put_work(struct work_struct *work)
{
	lite_dsm_put(container_of(work, struct lite_dsm_region, put_work));
}

/**
 * lite_dsm_put_any - drop a reference on a region, in any context
 * @r: the region
 *
 * For the CQ handler: the last reference is dropped on the node's dsm_wq
 * (which the node destroys, draining it, only once its connections are
 * gone). Only the holder of the last reference can queue @r->put_work, so
 * it is never queued twice.
 *
 * Context: any; does not sleep.
 */
void lite_dsm_put_any(struct lite_dsm_region *r)
{
	if (!refcount_dec_not_one(&r->ref.refcount))
		queue_work(r->node->dsm_wq, &r->put_work);
}

static struct lite_dsm_region *lite_dsm_alloc(struct lite_node *node, u64 id,
					      u16 home, u64 size,
					      const char *name)
{
	struct lite_dsm_region *r;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	r->inode = alloc_anon_inode(lite_dsm_mnt->mnt_sb);
	if (IS_ERR(r->inode)) {
		long err = PTR_ERR(r->inode);

		kfree(r);
		return ERR_PTR(err);
	}
	r->inode->i_size = size;
	kref_init(&r->ref);
	lite_node_get(node);
	r->node = node;
	r->id = id;
	r->home = home;
	r->size = size;
	r->n_pages = size >> PAGE_SHIFT;
	strscpy(r->name, name, sizeof(r->name));
	init_rwsem(&r->zap_sem);
	spin_lock_init(&r->lock);
	xa_init_flags(&r->frames, XA_FLAGS_LOCK_BH);
	init_waitqueue_head(&r->wq);
	atomic_set(&r->fetches, 0);
	INIT_WORK(&r->put_work, lite_dsm_put_work);
	spin_lock(&node->dsm_all_lock);
	list_add_tail(&r->all_entry, &node->dsm_all);
	spin_unlock(&node->dsm_all_lock);
	atomic64_inc(&node->dsm_stats.regions);
	return r;
}

/**
 * lite_dsm_kill - the region is gone: nothing is served any more
 * @r: the region
 *
 * Every mapping on this node is dropped and every fault, waiting or to
 * come, gets SIGBUS. Process context.
 */
void lite_dsm_kill(struct lite_dsm_region *r)
{
	spin_lock_bh(&r->lock);
	WRITE_ONCE(r->dead, true);
	spin_unlock_bh(&r->lock);
	down_write(&r->zap_sem);
	unmap_mapping_range(r->inode->i_mapping, 0, 0, 1);
	up_write(&r->zap_sem);
	wake_up_all(&r->wq);
}

/**
 * lite_dsm_forget - unlink @r from node->dsm: no new user finds it
 * @r: the region
 *
 * Drops node->dsm's reference if this call unlinked it.
 */
void lite_dsm_forget(struct lite_dsm_region *r)
{
	if (xa_cmpxchg_bh(&r->node->dsm, (unsigned long)r->id, r, NULL, 0) == r)
		lite_dsm_put(r);
}

/* --- Frames ----------------------------------------------------------- */

/* Whether a failed request is worth another one before the deadline. */
static bool lite_dsm_transient(int err)
{
	return err == -ETIMEDOUT || err == -ECONNRESET || err == -EAGAIN ||
	       err == -EHOSTUNREACH || err == -EBUSY || err == -ENOTCONN;
}

/*
 * The key peers read @frame with (a copy's source is read with one RDMA
 * read): the node's one key in global isolation; in lmr isolation the
 * frame is registered by itself, read-only, so a key given out for a DSM
 * page reaches that page and nothing else. A registration that failed
 * for a transient reason (flushed by another's failure, -EAGAIN) is tried
 * again; the device out of MRs is -ENOSPC (the fault's SIGBUS), not an
 * out-of-memory fault retried forever.
 */
static int lite_dsm_frame_key(struct lite_node *node,
			      struct lite_dsm_frame *frame)
{
	unsigned long deadline = lite_tun_deadline(conn_wait_ms);
	int err;

	if (!lite_isolated(node)) {
		frame->rkey = node->rkey;
		return 0;
	}
	for (;;) {
		err = lite_mr_register(node, frame->dma, PAGE_SIZE,
				       IB_ACCESS_REMOTE_READ, &frame->mr,
				       &frame->rkey);
		if (!lite_dsm_transient(err) || time_after(jiffies, deadline))
			break;
		/* Not in a tight loop; a fatal signal ends it. */
		if (schedule_timeout_killable(msecs_to_jiffies(5)) ||
		    fatal_signal_pending(current))
			break;
	}
	return err == -ENOMEM ? -ENOSPC : err;
}

/* Free a frame no one else ever saw, its key first. */
static void lite_dsm_frame_drop(struct lite_node *node,
				struct lite_dsm_frame *frame)
{
	if (frame->mr)
		lite_mr_release(node, &frame->mr, 1, true);
	ib_dma_unmap_page(node->ibdev->dev, frame->dma, PAGE_SIZE,
			  DMA_BIDIRECTIONAL);
	__free_page(frame->page);
	kfree(frame);
	lite_dsm_frames_put(node, 1);
}

static struct lite_dsm_frame *lite_dsm_frame(struct lite_dsm_region *r,
					     u64 index)
{
	struct ib_device *dev = r->node->ibdev->dev;
	struct lite_dsm_frame *frame, *old;
	int err = -ENOMEM;

	frame = xa_load(&r->frames, (unsigned long)index);
	if (frame)
		return frame;
	if (READ_ONCE(r->no_frames) || !lite_dsm_frames_get(r->node))
		return ERR_PTR(-ENXIO);
	frame = kzalloc(sizeof(*frame), GFP_KERNEL_ACCOUNT);
	if (!frame)
		goto uncount;
	frame->page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!frame->page)
		goto free_frame;
	frame->dma = ib_dma_map_page(dev, frame->page, 0, PAGE_SIZE,
				     DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, frame->dma)) {
		err = -EIO;	/* not memory: no out-of-memory fault */
		goto free_page;
	}
	err = lite_dsm_frame_key(r->node, frame);
	if (err)
		goto unmap_page;
	spin_lock_bh(&r->lock);
	old = r->no_frames ? ERR_PTR(-ENXIO) :
	      xa_cmpxchg_bh(&r->frames, (unsigned long)index, NULL, frame,
			 GFP_ATOMIC);
	spin_unlock_bh(&r->lock);
	if (IS_ERR(old) || xa_is_err(old) || old) {
		lite_dsm_frame_drop(r->node, frame);
		/* (An xarray error entry passes IS_ERR() too: test it first.) */
		if (xa_is_err(old))
			return ERR_PTR(xa_err(old));
		return old;
	}
	atomic64_inc(&r->node->dsm_stats.pages);
	return frame;

unmap_page:
	ib_dma_unmap_page(dev, frame->dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
free_page:
	__free_page(frame->page);
free_frame:
	kfree(frame);
uncount:
	lite_dsm_frames_put(r->node, 1);
	return ERR_PTR(err);
}

/* Whether @frame's copy serves an access of @kind. Region lock held. */
static bool lite_dsm_frame_serves(const struct lite_dsm_frame *frame, u8 kind)
{
	if (kind == LITE_DSM_WR)
		return frame->state == LITE_DSM_L_EXCL;
	return frame->state != LITE_DSM_L_INVALID;
}

/* --- Fetches ---------------------------------------------------------- */

static void lite_dsm_fetch_queue(struct lite_dsm_fetch *f, u8 stage)
{
	f->stage = stage;
	queue_work(f->region->node->dsm_wq, &f->work);
}

/*
 * Take page @index away from every mapping of @r on this node (its next
 * access faults), timed for the DSM counters: this is the DSM's protection
 * change, done in the kernel with no system call. Caller holds
 * @r->zap_sem for write.
 */
static void lite_dsm_zap_page(struct lite_dsm_region *r, u64 index)
{
	struct lite_dsm_stats *st = &r->node->dsm_stats;
	u64 t0 = ktime_get_ns();

	lockdep_assert_held_write(&r->zap_sem);
	unmap_mapping_range(r->inode->i_mapping, (loff_t)index << PAGE_SHIFT,
			    PAGE_SIZE, 1);
	atomic64_add(ktime_get_ns() - t0, &st->prot_ns);
	atomic64_inc(&st->prot_changes);
}

/*
 * Unmap our copy: before new bytes go into the frame, or when the home may
 * never have heard our DONE (it may forget that we hold the page: we must
 * not keep using it). The frame keeps its bytes: if the home did hear, it
 * still names them.
 */
static void lite_dsm_drop_copy(struct lite_dsm_region *r,
			       struct lite_dsm_frame *frame, u64 index)
{
	down_write(&r->zap_sem);
	spin_lock_bh(&r->lock);
	frame->state = LITE_DSM_L_INVALID;
	spin_unlock_bh(&r->lock);
	lite_dsm_zap_page(r, index);
	up_write(&r->zap_sem);
}

/*
 * The request ended (@status 0: the copy is in place). Wakes the faults
 * waiting for it; then the home hears how its grant went. Any context.
 */
static void lite_dsm_fetch_end(struct lite_dsm_fetch *f, int status)
{
	struct lite_dsm_region *r = f->region;
	struct lite_dsm_frame *frame = f->frame;

	spin_lock_bh(&r->lock);
	if (!status) {
		if (f->kind == LITE_DSM_WR)
			frame->state = LITE_DSM_L_EXCL;
		else if (frame->state == LITE_DSM_L_INVALID)
			frame->state = LITE_DSM_L_SHARED;
		frame->intact = true;
	}
	frame->fetch = NULL;
	frame->err = status;
	frame->gen++;
	WRITE_ONCE(r->fetch_ends, r->fetch_ends + 1);
	spin_unlock_bh(&r->lock);
	wake_up_all(&r->wq);
	f->status = status;
	lite_dsm_fetch_queue(f, f->granted ? LITE_DSM_ST_DONE :
			     LITE_DSM_ST_FREE);
}

static void lite_dsm_read_done(struct lite_rdma_op *op)
{
	struct lite_dsm_fetch *f = container_of(op, struct lite_dsm_fetch, op);

	if (!op->status)
		atomic64_inc(&f->region->node->dsm_stats.fetches);
	lite_dsm_fetch_end(f, op->status);
}

/* DATA: one RDMA READ of the page from the source's frame into ours. */
static void lite_dsm_fetch_data(struct lite_dsm_fetch *f)
{
	struct lite_dsm_region *r = f->region;
	struct lite_node *node = r->node;

	f->data_conn = lite_node_conn(node, le16_to_cpu(f->grant.from));
	if (!f->data_conn) {
		lite_dsm_fetch_end(f, -EHOSTUNREACH);
		return;
	}
	spin_lock_bh(&r->lock);
	f->frame->intact = false;	/* until the read is complete */
	spin_unlock_bh(&r->lock);
	f->sge.addr = f->frame->dma;
	f->sge.length = PAGE_SIZE;
	f->sge.lkey = node->pd->local_dma_lkey;
	memset(&f->wr, 0, sizeof(f->wr));
	f->wr.wr.opcode = IB_WR_RDMA_READ;
	f->wr.wr.sg_list = &f->sge;
	f->wr.wr.num_sge = 1;
	f->wr.rdma.remote_addr = le64_to_cpu(f->grant.from_addr);
	f->wr.rdma.rkey = le32_to_cpu(f->grant.from_rkey);
	lite_rdma_op_init(&f->op, f->data_conn, lite_dsm_read_done);
	lite_rdma_submit(&f->op, &f->wr, 1);
	lite_rdma_op_release(&f->op);
}

/**
 * lite_dsm_granted - the home answered a request
 * @f: the request
 * @status: 0, or why the home refused it (-EHOSTDOWN: the page is lost)
 * @g: the grant (status 0)
 *
 * Carries the grant out: nothing to fetch, a zero page, or one RDMA READ.
 * Any context if the frame is not mapped or the grant is a KEEP (the
 * completion handler calls it then); else process context.
 */
void lite_dsm_granted(struct lite_dsm_fetch *f, int status,
		      const struct lite_wire_dsm_grant *g)
{
	struct lite_dsm_region *r = f->region;
	bool intact, mapped;

	if (status) {
		lite_dsm_fetch_end(f, status);
		return;
	}
	f->grant = *g;
	f->granted = true;
	if (g->kind == LITE_DSM_KEEP) {
		spin_lock_bh(&r->lock);
		intact = f->frame->intact;
		spin_unlock_bh(&r->lock);
		/* The home thinks we hold it; we do not: it must forget. */
		lite_dsm_fetch_end(f, intact ? 0 : -ESTALE);
		return;
	}
	/* Nothing maps the frame while new bytes go in (none should). */
	spin_lock_bh(&r->lock);
	mapped = f->frame->state != LITE_DSM_L_INVALID;
	spin_unlock_bh(&r->lock);
	if (mapped)
		lite_dsm_drop_copy(r, f->frame, f->index);
	if (g->kind == LITE_DSM_FILL) {
		clear_highpage(f->frame->page);
		lite_dsm_fetch_end(f, 0);
	} else {
		lite_dsm_fetch_data(f);
	}
}

/*
 * The grant arrived, in the completion handler (even in softirq): a grant
 * that needs nothing unmapped (the usual one: the frame is not mapped, or
 * it is kept) is carried out right here, which posts the RDMA READ at
 * once; the others, and a failed call (then possibly under the calls'
 * lock), go to @work.
 */
static void lite_dsm_req_reply(struct lite_call *call)
{
	struct lite_dsm_fetch *f = container_of(call, struct lite_dsm_fetch,
						call);
	struct lite_dsm_region *r = f->region;
	bool now;

	if (call->status) {
		f->reply_status = call->status;
		lite_dsm_fetch_queue(f, LITE_DSM_ST_REQ_FAILED);
		return;
	}
	spin_lock_bh(&r->lock);
	now = f->grant.kind == LITE_DSM_KEEP ||
	      f->frame->state == LITE_DSM_L_INVALID;
	spin_unlock_bh(&r->lock);
	if (now)
		lite_dsm_granted(f, 0, &f->grant);
	else
		lite_dsm_fetch_queue(f, LITE_DSM_ST_GRANTED);
}

static void lite_dsm_done_reply(struct lite_call *call)
{
	struct lite_dsm_fetch *f = container_of(call, struct lite_dsm_fetch,
						call);

	if (!call->status) {
		lite_dsm_fetch_queue(f, LITE_DSM_ST_FREE);
		return;
	}
	/* The home keeps the page busy until it hears: tell it again. */
	if (call->status == -ECONNRESET && time_before(jiffies, f->done_by)) {
		lite_dsm_fetch_queue(f, LITE_DSM_ST_DONE);
		return;
	}
	lite_dsm_fetch_queue(f, LITE_DSM_ST_DONE_LOST);
}

/* Send @f's request or DONE to the home; 0, or the call did not start. */
static int lite_dsm_fetch_send(struct lite_dsm_fetch *f, bool done)
{
	struct lite_node *node = f->region->node;

	if (f->conn)
		lite_conn_put(f->conn);
	f->conn = lite_node_conn_wait(node, f->region->home, f->deadline);
	if (!f->conn)
		return -EHOSTUNREACH;
	if (done)
		return lite_call_start_async(f->conn, &f->call,
					     lite_dsm_done_reply,
					     LITE_MSG_DSM_DONE, &f->done,
					     sizeof(f->done), NULL, 0);
	return lite_call_start_async(f->conn, &f->call, lite_dsm_req_reply,
				     LITE_MSG_DSM_REQ, &f->req, sizeof(f->req),
				     &f->grant, sizeof(f->grant));
}

static void lite_dsm_fetch_free(struct lite_dsm_fetch *f)
{
	struct lite_dsm_region *r = f->region;

	if (f->conn)
		lite_conn_put(f->conn);
	if (f->data_conn)
		lite_conn_put(f->data_conn);
	if (atomic_dec_and_test(&r->fetches))
		wake_up_all(&r->wq);
	lite_dsm_put(r);
	kfree(f);
}


static void lite_dsm_fetch_work(struct work_struct *work)
{
	struct lite_dsm_fetch *f = container_of(work, struct lite_dsm_fetch,
						work);
	struct lite_dsm_region *r = f->region;
	bool local = r->home == READ_ONCE(r->node->self_id);
	int err;

	switch (f->stage) {
	case LITE_DSM_ST_REQ:
		if (local) {
			lite_dsm_home_request(r, r->home, &f->req, NULL, 0, f);
			return;
		}
		err = lite_dsm_fetch_send(f, false);
		if (err)
			lite_dsm_granted(f, err, NULL);
		return;
	case LITE_DSM_ST_REQ_FAILED:
		/* A broken connection may have eaten the grant: ask again. */
		if (f->reply_status == -ECONNRESET && f->tries++ < 3) {
			f->deadline = lite_tun_deadline(conn_wait_ms);
			lite_dsm_fetch_queue(f, LITE_DSM_ST_REQ);
			return;
		}
		lite_dsm_granted(f, f->reply_status, NULL);
		return;
	case LITE_DSM_ST_GRANTED:
		lite_dsm_granted(f, 0, &f->grant);
		return;
	case LITE_DSM_ST_DONE:
		if (!f->done_by)
			f->done_by = jiffies +
				     msecs_to_jiffies(LITE_DSM_DONE_MS / 2);
		f->done.region = cpu_to_le64(r->id);
		f->done.page = cpu_to_le64(f->index);
		f->done.addr = cpu_to_le64(f->frame->dma);
		f->done.txn = f->grant.txn;
		f->done.status = cpu_to_le32((u32)f->status);
		if (local) {
			lite_dsm_home_done(r, r->home, &f->done);
			break;
		}
		f->deadline = lite_tun_deadline(conn_wait_ms);
		if (!lite_dsm_fetch_send(f, true))
			return;
		fallthrough;
	case LITE_DSM_ST_DONE_LOST:
		/* Before the home's DONE deadline forgets us (and the page
		 * stays busy until then): no stale copy survives that.
		 */
		if (!f->status)
			lite_dsm_drop_copy(r, f->frame, f->index);
		break;
	}
	lite_dsm_fetch_free(f);
}

/*
 * Start a request of @kind for @frame unless one is in flight. Region lock
 * not held. Return: 0 if the frame serves @kind now, -EINPROGRESS with
 * *gen to wait past, or -ENXIO if the region is gone, -ENOMEM.
 */
static int lite_dsm_want(struct lite_dsm_region *r,
			 struct lite_dsm_frame *frame, u64 index, u8 kind,
			 u32 *gen)
{
	struct lite_dsm_fetch *f = NULL;
	int ret;

	for (;;) {
		spin_lock_bh(&r->lock);
		if (r->dead) {
			spin_unlock_bh(&r->lock);
			kfree(f);
			return -ENXIO;
		}
		*gen = frame->gen;
		if (frame->fetch)
			ret = -EINPROGRESS;	/* wait for it, look again */
		else if (lite_dsm_frame_serves(frame, kind))
			ret = 0;
		else if (f)
			break;			/* start ours */
		else
			ret = -EAGAIN;
		spin_unlock_bh(&r->lock);
		if (ret != -EAGAIN) {
			kfree(f);
			return ret;
		}
		f = kzalloc(sizeof(*f), GFP_KERNEL);
		if (!f)
			return -ENOMEM;
	}
	frame->fetch = f;
	f->req.seq = cpu_to_le32(++frame->seq);
	atomic_inc(&r->fetches);
	spin_unlock_bh(&r->lock);

	kref_get(&r->ref);
	f->region = r;
	f->frame = frame;
	f->index = index;
	f->kind = kind;
	f->deadline = lite_tun_deadline(conn_wait_ms);
	INIT_WORK(&f->work, lite_dsm_fetch_work);
	f->req.region = cpu_to_le64(r->id);
	f->req.page = cpu_to_le64(index);
	f->req.addr = cpu_to_le64(frame->dma);
	f->req.rkey = cpu_to_le32(frame->rkey);
	f->req.kind = kind;
	/* The first request goes from the faulting thread: no wake-up. */
	f->stage = LITE_DSM_ST_REQ;
	lite_dsm_fetch_work(&f->work);
	return -EINPROGRESS;
}

static bool lite_dsm_moved(struct lite_dsm_region *r,
			   struct lite_dsm_frame *frame, u32 gen)
{
	bool moved;

	spin_lock_bh(&r->lock);
	moved = r->dead || frame->gen != gen;
	spin_unlock_bh(&r->lock);
	return moved;
}

/* Faulting threads polling now, on all nodes (lite_dsm_poll()). */
static atomic_t lite_dsm_pollers = ATOMIC_INIT(0);

/*
 * Poll for the end of the fetch @gen names, for up to LITE_DSM_SPIN_US
 * and never past @deadline, before the caller sleeps: the fetch is mostly
 * the network's and other CPUs' work (softirq), and waking a sleeper
 * costs more than most fetches on small machines. At most half the CPUs
 * poll (the others sleep at once: the fetches need CPUs too; a single CPU
 * never polls); whoever needs this CPU gets it (cond_resched()); a fatal
 * signal ends the polling. The frame itself is read only under the lock
 * (lite_dsm_moved()): it may be freed once the region is dead.
 * Return: whether the fetch ended or the region died.
 */
static bool lite_dsm_poll(struct lite_dsm_region *r,
			  struct lite_dsm_frame *frame, u32 gen,
			  unsigned long deadline)
{
	int limit = num_online_cpus() / 2;
	bool moved = false;
	u32 ends;
	u64 until;

	if (atomic_inc_return(&lite_dsm_pollers) > limit)
		goto out;
	until = ktime_get_ns() + LITE_DSM_SPIN_US * NSEC_PER_USEC;
	ends = READ_ONCE(r->fetch_ends);
	/*
	 * The fetch may have ended before this (its whole chain can run in
	 * the softirq work of the post that started it): look once, after
	 * the snapshot, so that an end from here on still changes it.
	 */
	moved = lite_dsm_moved(r, frame, gen);
	while (!moved) {
		/* Some request ended: ours? */
		if (READ_ONCE(r->fetch_ends) != ends || READ_ONCE(r->dead)) {
			ends = READ_ONCE(r->fetch_ends);	/* then look */
			moved = lite_dsm_moved(r, frame, gen);
			if (moved)
				break;
		}
		cpu_relax();
		cond_resched();
		if (ktime_get_ns() >= until || !time_before(jiffies, deadline) ||
		    fatal_signal_pending(current))
			break;
	}
out:
	atomic_dec(&lite_dsm_pollers);
	return moved;
}

/*
 * Make @frame serve an access of @kind: request a copy and wait for it.
 * Return: 0; -EINTR on a fatal signal; -EHOSTDOWN (lost), -ENXIO (region
 * gone), -ETIMEDOUT, or another failure of the request.
 */
static int lite_dsm_acquire(struct lite_dsm_region *r,
			    struct lite_dsm_frame *frame, u64 index, u8 kind,
			    unsigned long deadline)
{
	long left;
	u32 gen;
	int err;

	for (;;) {
		err = lite_dsm_want(r, frame, index, kind, &gen);
		if (err != -EINPROGRESS)
			return err;
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		if (!lite_dsm_poll(r, frame, gen, deadline)) {
			left = max_t(long, (long)(deadline - jiffies), 1);
			left = wait_event_killable_timeout(r->wq,
							   lite_dsm_moved(r, frame, gen),
							   left);
			if (left < 0)
				return -EINTR;
			if (!left)
				return -ETIMEDOUT;
		}
		spin_lock_bh(&r->lock);
		err = r->dead ? -ENXIO : frame->err;
		spin_unlock_bh(&r->lock);
		/* Ours or another thread's request ended: look again. */
		if (err && !lite_dsm_transient(err))
			return err;
		/* A reconnect or a busy peer: not in a tight loop. */
		if (err && schedule_timeout_killable(msecs_to_jiffies(5)))
			return -EINTR;
	}
}

/* --- Faults ----------------------------------------------------------- */

static vm_fault_t lite_dsm_access(struct vm_fault *vmf, bool write,
				  bool mkwrite)
{
	struct vm_area_struct *vma = vmf->vma;
	struct lite_dsm_file *df = vma->vm_file->private_data;
	struct lite_dsm_region *r = df->region;
	struct lite_dsm_stats *st = &r->node->dsm_stats;
	unsigned long deadline = jiffies + msecs_to_jiffies(LITE_DSM_FAULT_MS);
	u8 kind = write ? LITE_DSM_WR : LITE_DSM_RD;
	struct lite_dsm_frame *frame;
	unsigned long pfn;
	vm_fault_t ret;
	pgprot_t prot;
	bool ok, excl;
	int err;

	if (vmf->pgoff >= r->n_pages || READ_ONCE(r->dead)) {
		atomic64_inc(&st->sigbus);
		return VM_FAULT_SIGBUS;
	}
	atomic64_inc(write ? &st->write_faults : &st->read_faults);
	frame = lite_dsm_frame(r, vmf->pgoff);
	if (IS_ERR(frame)) {
		if (PTR_ERR(frame) == -ENOMEM)
			return VM_FAULT_OOM;
		atomic64_inc(&st->sigbus);
		return VM_FAULT_SIGBUS;
	}
	for (;;) {
		err = lite_dsm_acquire(r, frame, vmf->pgoff, kind, deadline);
		if (err)
			break;
		down_read(&r->zap_sem);
		spin_lock_bh(&r->lock);
		ok = !r->dead && lite_dsm_frame_serves(frame, kind);
		excl = ok && frame->state == LITE_DSM_L_EXCL;
		pfn = ok ? page_to_pfn(frame->page) : 0;
		spin_unlock_bh(&r->lock);
		if (!ok) {		/* invalidated meanwhile */
			up_read(&r->zap_sem);
			continue;
		}
		prot = excl && (vma->vm_flags & VM_WRITE) ?
		       vm_get_page_prot(vma->vm_flags) : vma->vm_page_prot;
		/*
		 * An upgrade replaces the read-only PTE here, under zap_sem:
		 * the core's own upgrade after pfn_mkwrite() would only check
		 * that the PTE is the same, which a read copy mapped again
		 * after an invalidation also is.
		 */
		if (mkwrite)
			zap_vma_ptes(vma, vmf->address & PAGE_MASK, PAGE_SIZE);
		ret = vmf_insert_pfn_prot(vma, vmf->address, pfn, prot);
		up_read(&r->zap_sem);
		return ret;
	}
	if (err == -ENOMEM)
		return VM_FAULT_OOM;
	if (err != -EINTR) {
		atomic64_inc(&st->sigbus);
		pr_info_ratelimited("lite%u: region %s, page %lu: %s access refused (%d): SIGBUS\n",
				    r->node->instance, r->name, vmf->pgoff,
				    write ? "write" : "read", err);
	}
	return VM_FAULT_SIGBUS;
}

static vm_fault_t lite_dsm_fault(struct vm_fault *vmf)
{
	return lite_dsm_access(vmf, vmf->flags & FAULT_FLAG_WRITE, false);
}

static vm_fault_t lite_dsm_pfn_mkwrite(struct vm_fault *vmf)
{
	return lite_dsm_access(vmf, true, true);
}

static const struct vm_operations_struct lite_dsm_vm_ops = {
	.fault = lite_dsm_fault,
	.pfn_mkwrite = lite_dsm_pfn_mkwrite,
};

static int lite_dsm_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct lite_dsm_file *df = file->private_data;
	u64 pages = vma_pages(vma);

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;		/* a private copy would not be shared */
	if (vma->vm_pgoff >= df->region->n_pages ||
	    pages > df->region->n_pages - vma->vm_pgoff)
		return -ENXIO;
	vma->vm_flags |= VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_ops = &lite_dsm_vm_ops;
	return 0;
}

/* --- Answers to the home ---------------------------------------------- */

/**
 * lite_dsm_inval_local - do what a home asks with this node's copy
 * @r: the region
 * @index: the page
 * @what: enum lite_dsm_inval_kind
 * @has_frame: set if our frame holds the bytes of its last grant
 * @addr: set to the frame's address
 * @rkey: set to its key
 *
 * INVALIDATE unmaps the page everywhere on this node; DOWNGRADE unmaps a
 * writable copy, which stays a read copy (the next load maps it read-only
 * without asking anyone); PROBE only answers. The frame keeps its bytes.
 * Process context.
 */
void lite_dsm_inval_local(struct lite_dsm_region *r, u64 index, u8 what,
			  bool *has_frame, u64 *addr, u32 *rkey)
{
	struct lite_dsm_frame *frame;
	bool zap = false;

	*has_frame = false;
	*addr = 0;
	*rkey = 0;
	down_write(&r->zap_sem);
	spin_lock_bh(&r->lock);
	frame = xa_load(&r->frames, (unsigned long)index);
	if (!frame) {
		spin_unlock_bh(&r->lock);
		up_write(&r->zap_sem);
		return;
	}
	*has_frame = frame->intact;
	*addr = frame->dma;
	*rkey = frame->rkey;
	if (what == LITE_DSM_INVALIDATE) {
		zap = frame->state != LITE_DSM_L_INVALID;
		frame->state = LITE_DSM_L_INVALID;
	} else if (what == LITE_DSM_DOWNGRADE) {
		zap = frame->state == LITE_DSM_L_EXCL;
		if (zap)
			frame->state = LITE_DSM_L_SHARED;
	}
	spin_unlock_bh(&r->lock);
	if (zap)
		lite_dsm_zap_page(r, index);
	up_write(&r->zap_sem);
	if (zap)
		atomic64_inc(&r->node->dsm_stats.invalidations);
}

/**
 * lite_dsm_handle_inval - DSM_INVAL: a home wants our copy of a page
 * @conn: the home's connection
 * @msg: the request
 *
 * Replies where our frame is and whether it holds its bytes; a region we
 * do not have is no error (we hold nothing). Only the region's home may
 * ask (-EPERM). Runs on the receive path; sleeps on the region's
 * zap_sem.
 */
void lite_dsm_handle_inval(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_dsm_inval *req = msg->payload;
	struct lite_wire_dsm_held rep = {};
	struct lite_dsm_region *r;
	bool has = false;
	u64 addr = 0;
	u32 rkey = 0;

	r = lite_dsm_find(conn->node, le64_to_cpu(req->region));
	if (r && r->home != conn->peer_id) {
		lite_dsm_put(r);
		lite_reply(conn, msg, -EPERM, NULL, 0);
		return;
	}
	if (r && le64_to_cpu(req->page) < r->n_pages)
		lite_dsm_inval_local(r, le64_to_cpu(req->page), req->what,
				     &has, &addr, &rkey);
	if (r)
		lite_dsm_put(r);
	rep.addr = cpu_to_le64(addr);
	rep.rkey = cpu_to_le32(rkey);
	rep.has_frame = has;
	lite_reply(conn, msg, 0, &rep, sizeof(rep));
}

/**
 * lite_dsm_handle_gone - DSM_GONE: the home destroyed a region
 * @conn: the home's connection
 * @msg: the request
 *
 * Every access to it from now on gets SIGBUS; replies once no mapping on
 * this node is left (0, also for a region we do not have). Runs on the
 * receive path.
 */
void lite_dsm_handle_gone(struct lite_conn *conn, const struct lite_msg *msg)
{
	const struct lite_wire_dsm_region *req = msg->payload;
	struct lite_dsm_region *r;

	r = lite_dsm_find(conn->node, le64_to_cpu(req->region));
	if (r && r->home == conn->peer_id) {
		lite_dsm_kill(r);
		lite_dsm_forget(r);
	}
	if (r)
		lite_dsm_put(r);
	lite_reply(conn, msg, 0, NULL, 0);
}

/* --- Region files ----------------------------------------------------- */

/*
 * The last file of @r on this node closed: hand our pages back to the home
 * (it keeps what only we held) and forget the region; at the home, destroy
 * it once no node uses it. node->dsm_lock held.
 */
static void lite_dsm_last_close(struct lite_dsm_region *r)
{
	struct lite_node *node = r->node;
	struct lite_wire_dsm_region req = {
		.region = cpu_to_le64(r->id),
	};
	unsigned long close_by;
	struct lite_conn *conn;
	int err;

	lockdep_assert_held(&node->dsm_lock);
	if (r->dir) {
		if (lite_dsm_home_unused(r))
			lite_dsm_home_remove(r, true);
		return;
	}
	if (READ_ONCE(r->dead)) {	/* destroyed, or its home is gone */
		lite_dsm_forget(r);
		return;
	}
	/* Fetches of killed faults finish first: no request follows CLOSE. */
	wait_event_timeout(r->wq, !atomic_read(&r->fetches) ||
			   READ_ONCE(r->dead),
			   msecs_to_jiffies(LITE_DSM_FAULT_MS +
					    LITE_DSM_DONE_MS));
	if (READ_ONCE(r->dead)) {
		err = 0;	/* DSM_GONE, or the home left: it names none
				 * of our frames */
	} else if (atomic_read(&r->fetches)) {
		err = -EBUSY;	/* a fetch still runs: the home may grant it */
	} else {
		conn = lite_node_conn_wait(node, r->home,
					   lite_tun_deadline(conn_wait_ms));
		/* The home hands back our pages before it replies. */
		close_by = lite_tun_deadline(call_timeout_ms) +
			   msecs_to_jiffies(LITE_DSM_CLOSE_MS +
					    LITE_DSM_DONE_MS);
		err = conn ? lite_call(conn, LITE_MSG_DSM_CLOSE, &req,
				       sizeof(req), NULL, 0, NULL, close_by) :
			     -EHOSTUNREACH;
		if (conn)
			lite_conn_put(conn);
		if (err == -ENOENT)
			err = 0;	/* the home removed it: names nothing */
	}
	lite_dsm_kill(r);
	if (err && !READ_ONCE(r->home_gone)) {
		/*
		 * The home may still name our frames: keep them (and answer
		 * for them) until the home or this node goes.
		 */
		pr_info_ratelimited("lite%u: region %s: handing pages back to node %u failed (%d); keeping them until it or we leave\n",
				    node->instance, r->name, r->home, err);
		return;
	}
	lite_dsm_forget(r);
}

static int lite_dsm_file_release(struct inode *inode, struct file *file)
{
	struct lite_dsm_file *df = file->private_data;
	struct lite_dsm_region *r = df->region;
	struct lite_node *node = r->node;
	bool last;

	mutex_lock(&node->dsm_lock);
	spin_lock_bh(&r->lock);
	last = !--r->files;
	if (df->creator)
		r->creator_open = false;
	spin_unlock_bh(&r->lock);
	if (last)
		lite_dsm_last_close(r);
	mutex_unlock(&node->dsm_lock);
	lite_dsm_put(r);
	kfree(df);
	return 0;
}

static long lite_dsm_destroy(struct lite_dsm_file *df,
			     struct lite_dsm_destroy __user *argp)
{
	struct lite_dsm_region *r = df->region;
	struct lite_node *node = r->node;
	struct lite_dsm_destroy d;

	if (copy_from_user(&d, argp, sizeof(d)))
		return -EFAULT;
	if (d.flags || memchr_inv(d.reserved, 0, sizeof(d.reserved)))
		return -EINVAL;
	if (!df->creator)
		return -EPERM;
	mutex_lock(&node->dsm_lock);
	if (READ_ONCE(r->dead)) {
		mutex_unlock(&node->dsm_lock);
		return -ENXIO;
	}
	lite_dsm_home_remove(r, true);
	mutex_unlock(&node->dsm_lock);
	return 0;
}

static long lite_dsm_file_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	if (cmd == LITE_IOC_DSM_DESTROY)
		return lite_dsm_destroy(file->private_data,
					(void __user *)arg);
	return -ENOTTY;
}

static const struct file_operations lite_dsm_fops = {
	.owner = THIS_MODULE,
	.mmap = lite_dsm_mmap,
	.release = lite_dsm_file_release,
	.unlocked_ioctl = lite_dsm_file_ioctl,
	.llseek = noop_llseek,
};

/*
 * A new region file of @r, and a free descriptor for it (not installed);
 * takes a reference on @r. node->dsm_lock held.
 */
static int lite_dsm_new_file(struct lite_dsm_region *r, bool creator,
			     struct file **out)
{
	struct lite_dsm_file *df;
	struct file *file;
	int fd;

	lockdep_assert_held(&r->node->dsm_lock);
	df = kzalloc(sizeof(*df), GFP_KERNEL);
	if (!df)
		return -ENOMEM;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		goto free_df;
	/* The file's release puts the fops' module, as for any open. */
	if (!try_module_get(THIS_MODULE)) {
		put_unused_fd(fd);
		fd = -ENOENT;
		goto free_df;
	}
	ihold(r->inode);
	file = alloc_file_pseudo(r->inode, lite_dsm_mnt, "[lite-dsm]",
				 O_RDWR, &lite_dsm_fops);
	if (IS_ERR(file)) {
		iput(r->inode);
		module_put(THIS_MODULE);
		put_unused_fd(fd);
		fd = PTR_ERR(file);
		goto free_df;
	}
	kref_get(&r->ref);
	df->region = r;
	df->creator = creator;
	file->private_data = df;
	spin_lock_bh(&r->lock);
	r->files++;
	if (creator)
		r->creator_open = true;
	spin_unlock_bh(&r->lock);
	*out = file;
	return fd;

free_df:
	kfree(df);
	return fd;
}

static bool lite_dsm_name_ok(const char *name)
{
	size_t n = strnlen(name, LITE_NAME_MAX);

	return n && n < LITE_NAME_MAX;
}

static int lite_dsm_open_check(const struct lite_dsm_open *o)
{
	if (o->flags & ~LITE_DSM_OPEN_FLAGS || o->reserved0 ||
	    memchr_inv(o->reserved, 0, sizeof(o->reserved)))
		return -EINVAL;
	if ((o->flags & LITE_DSM_OPEN_EXCL) && !(o->flags & LITE_DSM_OPEN_CREATE))
		return -EINVAL;
	if (!lite_dsm_name_ok(o->name))
		return -EINVAL;
	if (!(o->flags & LITE_DSM_OPEN_CREATE))
		return o->size ? -EINVAL : 0;
	if (!o->size || o->size % LITE_DSM_PAGE || o->size > LITE_DSM_MAX_SIZE)
		return -EINVAL;
	return 0;
}

/* Create a region homed here and publish its name. node->dsm_lock held. */
static struct lite_dsm_region *lite_dsm_create(struct lite_node *node,
					       const struct lite_dsm_open *o)
{
	struct lite_dsm_region *r;
	u64 id;
	int err;

	mutex_lock(&node->lock);
	id = (u64)node->nonce << 32 | ++node->next_dsm;
	mutex_unlock(&node->lock);
	r = lite_dsm_alloc(node, id, READ_ONCE(node->self_id), o->size,
			   o->name);
	if (IS_ERR(r))
		return r;
	err = lite_dsm_home_create(r);
	if (err)
		goto put;
	err = xa_insert_bh(&node->dsm, (unsigned long)id, r, GFP_KERNEL);
	if (err)
		goto put;
	err = lite_share_publish_dsm(node, o->name, id, o->size);
	if (err)
		goto unlink;
	return r;

unlink:
	lite_dsm_forget(r);
	return ERR_PTR(err);
put:
	lite_dsm_put(r);
	return ERR_PTR(err);
}

/*
 * The home may count us as a user of region @req (an OPEN whose reply we
 * did not get, or one we could not use): undo it. The home handles the
 * CLOSE in order after the OPEN, so it is undone even if the OPEN is
 * still queued there.
 */
static void lite_dsm_attach_undo(struct lite_node *node, u16 home,
				 const struct lite_wire_dsm_region *req)
{
	struct lite_conn *conn;
	int tries, err;

	/* A connection that closes may lose the CLOSE: once more then. */
	for (tries = 0; tries < 2; tries++) {
		conn = lite_node_conn_wait(node, home,
					   lite_tun_deadline(conn_wait_ms));
		if (!conn)
			return;	/* the home forgets us when one of us goes */
		err = lite_call(conn, LITE_MSG_DSM_CLOSE, req, sizeof(*req),
				NULL, 0, NULL,
				lite_tun_deadline(call_timeout_ms));
		lite_conn_put(conn);
		if (err != -ECONNRESET && err != -ENOTCONN)
			return;
	}
}

/* Open a region homed elsewhere (or here) by what the registry says. */
static struct lite_dsm_region *lite_dsm_attach(struct lite_node *node,
					       const struct lite_wire_share *sh)
{
	struct lite_wire_dsm_region req = {};
	struct lite_wire_dsm_info info;
	u16 home = le16_to_cpu(sh->mem_node);
	u64 id = le64_to_cpu(sh->mr_id);
	struct lite_dsm_region *r;
	struct lite_conn *conn;
	int err;

	r = lite_dsm_find(node, id);
	if (r && READ_ONCE(r->dead)) {
		lite_dsm_put(r);
		return ERR_PTR(-EBUSY);	/* still handing its pages back */
	}
	if (r)
		return r;
	if (home == READ_ONCE(node->self_id))
		return ERR_PTR(-ENOENT);	/* destroyed meanwhile */
	conn = lite_node_conn_wait(node, home, lite_tun_deadline(conn_wait_ms));
	if (!conn)
		return ERR_PTR(-EHOSTUNREACH);
	req.region = cpu_to_le64(id);
	err = lite_call(conn, LITE_MSG_DSM_OPEN, &req, sizeof(req), &info,
			sizeof(info), NULL,
			lite_tun_deadline(call_timeout_ms));
	lite_conn_put(conn);
	if (err) {
		/* -ENOENT is the home's answer; the rest leave it unknown. */
		if (err != -ENOENT)
			lite_dsm_attach_undo(node, home, &req);
		return ERR_PTR(err);
	}
	r = lite_dsm_alloc(node, id, home, le64_to_cpu(info.size), sh->name);
	err = PTR_ERR_OR_ZERO(r);
	if (!err) {
		err = xa_insert_bh(&node->dsm, (unsigned long)id, r, GFP_KERNEL);
		if (err)
			lite_dsm_put(r);
	}
	if (err) {
		lite_dsm_attach_undo(node, home, &req);	/* it counts us */
		return ERR_PTR(err);
	}
	kref_get(&r->ref);		/* the caller's */
	return r;
}

/**
 * lite_dsm_pull - fetch a read copy of a page to this node
 * @r: the region
 * @index: the page
 * @deadline: in jiffies
 *
 * The home takes back a page only a leaving node holds. Sleeps.
 * Return: 0 or the failure of the request.
 */
int lite_dsm_pull(struct lite_dsm_region *r, u64 index, unsigned long deadline)
{
	struct lite_dsm_frame *frame;

	frame = lite_dsm_frame(r, index);
	if (IS_ERR(frame))
		return PTR_ERR(frame);
	return lite_dsm_acquire(r, frame, index, LITE_DSM_RD, deadline);
}

/* The next region in node->dsm from *@id on, with a reference; or NULL. */
static struct lite_dsm_region *lite_dsm_next(struct lite_node *node,
					     unsigned long *id)
{
	struct lite_dsm_region *r;

	rcu_read_lock();
	for (;;) {
		r = xa_find(&node->dsm, id, ULONG_MAX, XA_PRESENT);
		if (!r || kref_get_unless_zero(&r->ref))
			break;
		(*id)++;
	}
	rcu_read_unlock();
	if (r)
		(*id)++;
	return r;
}

/**
 * lite_dsm_frames_show - list the frames of the node's regions (debugfs
 * "dsm_frames")
 * @m: the file
 * @node: the node
 *
 * One line per frame of the regions open on the node (node->dsm): the
 * region's id, the page, the frame's address and key, its local state
 * (enum lite_dsm_local) and whether it holds the bytes of its last grant.
 *
 * Return: 0.
 */
int lite_dsm_frames_show(struct seq_file *m, struct lite_node *node)
{
	unsigned long index, start;
	struct lite_dsm_frame *frame;
	struct lite_dsm_region *r;
	unsigned long id = 0;
	int n;

	while ((r = lite_dsm_next(node, &id))) {
		/* In rounds: bottom halves stay off for a few frames only. */
		start = 0;
		do {
			n = 0;
			spin_lock_bh(&r->lock);
			xa_for_each_start(&r->frames, index, frame, start) {
				seq_printf(m, "%#llx %lu %#llx %#x %u %u\n",
					   r->id, index, frame->dma,
					   frame->rkey, frame->state,
					   frame->intact);
				if (++n == LITE_DSM_SHOW_BATCH)
					break;
			}
			spin_unlock_bh(&r->lock);
			start = index + 1;
			cond_resched();
		} while (n == LITE_DSM_SHOW_BATCH);
		lite_dsm_put(r);
	}
	return 0;
}

/* Every half second: the homes' deadlines (lite_dsm_home_tick()). */
static void lite_dsm_timer(struct work_struct *work)
{
	struct lite_node *node = container_of(to_delayed_work(work),
					      struct lite_node, dsm_timer);
	struct lite_dsm_region *r;
	unsigned long id = 0;

	while ((r = lite_dsm_next(node, &id))) {
		if (r->dir)
			lite_dsm_home_tick(r);
		lite_dsm_put(r);
	}
	queue_delayed_work(node->dsm_wq, &node->dsm_timer, HZ / 2);
}

/**
 * lite_dsm_start - start the DSM timer of a new node
 * @node: the node, with its dsm_wq
 */
void lite_dsm_start(struct lite_node *node)
{
	queue_delayed_work(node->dsm_wq, &node->dsm_timer, HZ / 2);
}

struct lite_dsm_gone {
	struct work_struct work;
	struct lite_node *node;		/* holds a reference */
	u16 id;
};

static void lite_dsm_gone_work(struct work_struct *work)
{
	struct lite_dsm_gone *g = container_of(work, struct lite_dsm_gone,
					       work);
	struct lite_node *node = g->node;
	struct lite_dsm_region *r;
	unsigned long id = 0;

	/*
	 * Every region first, then the removals: a removal waits for the
	 * grants in progress, some of which only the member's end ends.
	 */
	while ((r = lite_dsm_next(node, &id))) {
		if (r->home == g->id) {
			WRITE_ONCE(r->home_gone, true);
			lite_dsm_kill(r);
			lite_dsm_forget(r);
		} else if (r->dir) {
			lite_dsm_home_member_gone(r, g->id);
		}
		lite_dsm_put(r);
	}
	id = 0;
	while ((r = lite_dsm_next(node, &id))) {
		if (r->dir) {
			mutex_lock(&node->dsm_lock);
			if (lite_dsm_home_unused(r))
				lite_dsm_home_remove(r, true);
			mutex_unlock(&node->dsm_lock);
		}
		lite_dsm_put(r);
	}
	lite_node_put(node);
	kfree(g);
}

/**
 * lite_dsm_member_gone - a member died or left
 * @node: our node; node->lock held
 * @id: the member
 *
 * Regions homed there die here (SIGBUS from now on); regions homed here
 * forget its copies (lite_dsm_home_member_gone()). Done from a work item,
 * off node->lock.
 */
void lite_dsm_member_gone(struct lite_node *node, u16 id)
{
	struct lite_dsm_gone *g;

	lockdep_assert_held(&node->lock);
	if (!node->dsm_wq || xa_empty(&node->dsm))
		return;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g) {
		pr_warn_ratelimited("lite%u: no memory to drop node %u's DSM pages\n",
				    node->instance, id);
		return;
	}
	INIT_WORK(&g->work, lite_dsm_gone_work);
	lite_node_get(node);
	g->node = node;
	g->id = id;
	queue_work(node->dsm_wq, &g->work);
}

/**
 * lite_dsm_node_down - the node goes down: every region dies here
 * @node: the node, leaving; its connections are still up
 *
 * Regions homed here are removed (their users hear DSM_GONE); the others
 * die here. Region files still open keep dead regions. Sleeps.
 */
void lite_dsm_node_down(struct lite_node *node)
{
	struct lite_dsm_region *r;
	unsigned long id = 0;

	mutex_lock(&node->dsm_lock);
	node->dsm_down = true;		/* no region opens from now on */
	mutex_unlock(&node->dsm_lock);
	cancel_delayed_work_sync(&node->dsm_timer);
	while ((r = lite_dsm_next(node, &id))) {
		mutex_lock(&node->dsm_lock);
		if (r->dir) {
			lite_dsm_home_remove(r, false);	/* peers drop it */
		} else {
			lite_dsm_kill(r);
			lite_dsm_forget(r);
		}
		mutex_unlock(&node->dsm_lock);
		lite_dsm_put(r);
	}
}

static bool lite_dsm_busy(struct lite_dsm_region *r)
{
	return atomic_read(&r->fetches);
}

static bool lite_dsm_has_frames(struct lite_dsm_region *r)
{
	return !READ_ONCE(r->no_frames);
}

/* A region of @node's for which @want() holds, with a reference; or NULL. */
static struct lite_dsm_region *
lite_dsm_pick(struct lite_node *node, bool (*want)(struct lite_dsm_region *r))
{
	struct lite_dsm_region *r, *found = NULL;

	spin_lock(&node->dsm_all_lock);
	list_for_each_entry(r, &node->dsm_all, all_entry) {
		if (want(r) && kref_get_unless_zero(&r->ref)) {
			found = r;
			break;
		}
	}
	spin_unlock(&node->dsm_all_lock);
	return found;
}

/**
 * lite_dsm_node_free - free every frame once the connections are gone
 * @node: the node; its QPs are drained, so no fetch writes a frame
 *
 * Finishes the DSM work queue first. The frames' keys and DMA mappings go
 * before the node's PD (lite_mr_exit()) and the device may. Sleeps.
 */
void lite_dsm_node_free(struct lite_node *node)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(LITE_DSM_FAULT_MS);
	struct lite_dsm_region *r;
	long left;

	WRITE_ONCE(node->dsm_frames_off, true);	/* no new frame */
	smp_mb();	/* pairs with lite_dsm_frames_get() */
	/*
	 * A fault may have started a request just before the node went down
	 * (its first step runs in the faulting thread): with no connection
	 * left it ends at once, through dsm_wq. Wait for those first.
	 */
	while ((r = lite_dsm_pick(node, lite_dsm_busy))) {
		left = (long)(deadline - jiffies);
		wait_event_timeout(r->wq, !atomic_read(&r->fetches),
				   max(left, 1L));
		lite_dsm_put(r);
		if (time_after(jiffies, deadline))
			break;
	}
	destroy_workqueue(node->dsm_wq);
	node->dsm_wq = NULL;
	/* Only open region files hold regions now: a few, dead ones. */
	while ((r = lite_dsm_pick(node, lite_dsm_has_frames))) {
		lite_dsm_free_frames(r);
		lite_dsm_put(r);
	}
	/*
	 * A region whose last file closes meanwhile frees its frames in that
	 * thread, and a fault may still be making one: their keys and DMA
	 * mappings must go before the node's PD and device may. Neither waits
	 * for anything of the node's any more (no connection is left), so
	 * this ends; it says so if it takes long.
	 */
	while (!wait_event_timeout(node->conns_wq,
				   !atomic_read(&node->dsm_frames),
				   msecs_to_jiffies(LITE_DSM_FAULT_MS)))
		pr_warn("lite%u: waiting for %d DSM frames to be freed\n",
			node->instance, atomic_read(&node->dsm_frames));
}

/**
 * lite_dsm_open - LITE_IOC_DSM_OPEN: create or open a region
 * @lf: the /dev/lite file, attached to a node
 * @o: the request; size, fd and home are filled in
 * @file: set to the new region file, for the caller to install in o->fd
 *	(fd_install()) or drop (fput(), then put_unused_fd())
 *
 * Return: 0 with the region file and its descriptor; -EINVAL for bad
 * flags, name, size (or a size other than the existing region's) or
 * non-zero reserved fields; -EBADFD if @lf is not attached; -ENOENT if
 * there is no such region and no CREATE; -EEXIST if it exists and EXCL
 * was asked, or CREATE names an LMR's name; -EMEDIUMTYPE if the name
 * stands for an LMR; -EHOSTUNREACH without the manager or the home;
 * -ENOMEM, -EMFILE, or the error of a request.
 */
int lite_dsm_open(struct lite_file *lf, struct lite_dsm_open *o,
		  struct file **file)
{
	struct lite_dsm_region *r = NULL;
	struct lite_wire_share sh;
	struct lite_node *node;
	bool created = false;
	int err, fd;

	err = lite_dsm_open_check(o);
	if (err)
		return err;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	mutex_lock(&node->dsm_lock);
	if (node->dsm_down) {
		err = -ENODEV;		/* the node is going down */
		goto unlock;
	}
	err = lite_share_lookup(node, o->name, &sh);
	if (!err && sh.kind != LITE_SHARE_DSM) {
		err = o->flags & LITE_DSM_OPEN_CREATE ? -EEXIST : -EMEDIUMTYPE;
	} else if (!err && (o->flags & LITE_DSM_OPEN_EXCL)) {
		err = -EEXIST;
	} else if (!err) {
		r = lite_dsm_attach(node, &sh);
		err = PTR_ERR_OR_ZERO(r);
	} else if (err == -ENOENT && (o->flags & LITE_DSM_OPEN_CREATE)) {
		r = lite_dsm_create(node, o);
		err = PTR_ERR_OR_ZERO(r);
		created = !err;
	}
	if (err)
		goto unlock;
	if (!created && o->size && o->size != r->size) {
		err = -EINVAL;		/* it exists with another size */
		goto put;
	}
	fd = lite_dsm_new_file(r, created, file);
	if (fd < 0) {
		err = fd;
		goto put;
	}
	o->fd = fd;
	o->size = r->size;
	o->home = r->home;
	if (!created)
		lite_dsm_put(r);	/* (created: node->dsm's reference) */
	mutex_unlock(&node->dsm_lock);
	lite_node_put(node);
	return 0;

put:
	if (!r->files)
		lite_dsm_last_close(r);	/* drops node->dsm's reference */
	if (!created)
		lite_dsm_put(r);
unlock:
	mutex_unlock(&node->dsm_lock);
	lite_node_put(node);
	return err;
}
