// SPDX-License-Identifier: GPL-2.0
/*
 * What peers may reach on this node, and the keys that say so.
 *
 * A node runs in one of two isolation modes, chosen at LITE_IOC_NODE_UP:
 *
 *   global  one DMA MR over all memory (as the PD's unsafe global rkey,
 *           plus remote atomics where the device has them): every chunk a
 *           peer is given carries that MR's key, and the key reaches every
 *           byte of this kernel. Nothing is registered per allocation.
 *   lmr     no such MR. Each chunk a peer may reach - an LMR's chunk on its
 *           memory node, a chunk of an RPC ring or of a reply buffer, a
 *           DSM frame (read only) - is registered by itself with fast
 *           registration (IB_WR_REG_MR) and carries its own key; the NIC
 *           refuses every access outside the chunks a peer was given, and
 *           keys die with the memory.
 *
 * Fast registration needs a work request. Every REG_MR and LOCAL_INV of
 * a node goes on its registration QP, an RC QP of the node's PD connected
 * to itself that carries nothing else: it never sends a packet, so no
 * retransmission ever runs it again. (On a QP that also carries RDMA, a
 * retransmission rewinds the send queue to the oldest unacknowledged
 * request, and rxe runs the local requests after it a second time: a
 * REG_MR of an MR already registered fails and puts that QP, a peer's
 * connection, in error.) The key is valid on every QP of the PD, and the
 * registration is waited for before the key leaves the node. A failed
 * work request puts the QP in error; the next post waits for the rest to
 * be flushed and makes it again (RESET, then INIT, RTR, RTS).
 *
 * An MR covers one chunk: chunks are naturally aligned blocks of 2^order
 * pages, so one page entry of the chunk's size describes it where the
 * device takes that page size. Freed LMR memory is invalidated with
 * IB_WR_LOCAL_INV before its pages go back, the MR gets a fresh key
 * (ib_update_fast_reg_key()) and waits at the end of the node's pool for
 * a later registration; buffers freed on a completion path do that from a
 * work item (buf.c). Where an invalidation fails or a registration did,
 * the MR is deregistered instead: that invalidates it too.
 *
 * A key is valid on every QP of the node's PD: the NIC keeps a member to
 * the chunks that exist and were registered, not to the chunks it was
 * given (docs/security.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/log2.h>
#include <linux/bottom_half.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "internal.h"

static unsigned int lite_isolation = LITE_ISOLATION_GLOBAL;

static int lite_isolation_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, LITE_ISOLATION_GLOBAL,
				     LITE_ISOLATION_MAX);
}

static const struct kernel_param_ops lite_isolation_ops = {
	.set = lite_isolation_set,
	.get = param_get_uint,
};
module_param_cb(isolation, &lite_isolation_ops, &lite_isolation, 0644);
MODULE_PARM_DESC(isolation,
		 "isolation of nodes brought up without one: 1 = global (default: one key reaches all memory), 2 = lmr (a key per chunk peers were given)");

/**
 * lite_mr_isolation - the isolation mode a node brought up with @asked gets
 * @asked: LITE_ISOLATION_* from LITE_IOC_NODE_UP (checked)
 *
 * Return: @asked, or for LITE_ISOLATION_DEFAULT the module parameter.
 */
u32 lite_mr_isolation(u32 asked)
{
	return asked ?: READ_ONCE(lite_isolation);
}

/* Idle MRs a node keeps for reuse. */
#define LITE_MR_POOL_MAX	1024

/* Page entries an MR is allocated with (a chunk needs few, see above). */
#define LITE_MR_MAX_PAGES	16

/* An MR of the pool: registered for one chunk at a time. */
struct lite_mr {
	struct list_head entry;		/* node->mr_pool while idle; mr_lock */
	struct ib_mr *mr;
};

/*
 * The DMA MR through which peers reach every LMR of ours in global mode:
 * remote read and write and, where the device has them, remote atomics.
 * The PD's own global rkey (IB_PD_UNSAFE_GLOBAL_RKEY) carries no atomic
 * right, so the MR is made as __ib_alloc_pd() makes that one, with the
 * right added. Unlike the PD's internal MR it counts as a user of the PD
 * and goes through ib_dereg_mr(); the resource tracker
 * (rdma_restrack_add()) is core-private, so `rdma res` does not list it.
 */
static int lite_mr_global(struct lite_node *node)
{
	int access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
		     IB_ACCESS_REMOTE_WRITE;
	struct ib_device *dev = node->pd->device;
	struct ib_mr *mr;

	if (!dev->ops.get_dma_mr)
		return -EOPNOTSUPP;
	if (node->nic_atomic)
		access |= IB_ACCESS_REMOTE_ATOMIC;
	mr = dev->ops.get_dma_mr(node->pd, access);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	mr->device = dev;
	mr->pd = node->pd;
	mr->type = IB_MR_TYPE_DMA;
	mr->uobject = NULL;
	mr->need_inval = false;
	mr->dm = NULL;
	mr->sig_attrs = NULL;
	atomic_inc(&node->pd->usecnt);
	node->global_mr = mr;
	node->rkey = mr->rkey;
	pr_warn_once("global rkeys: peers may read, write%s any memory of a node in global mode\n",
		     node->nic_atomic ? " and atomically change" : "");
	return 0;
}

/* Work requests in flight on the registration QP. */
#define LITE_REG_DEPTH		128

/* How long a registration's waiter spins before it sleeps. */
#define LITE_REG_SPIN_NS	(20 * NSEC_PER_USEC)

/* Batches a caller makes again when another's failure flushed them. */
#define LITE_REG_TRIES		3

/* Where the registration QP sends: to itself (it never does). */
static int lite_reg_self_av(struct lite_node *node, struct rdma_ah_attr *ah)
{
	struct ib_device *dev = node->pd->device;
	struct ib_port_attr port;
	union ib_gid gid;
	int ret;

	memset(ah, 0, sizeof(*ah));
	ah->type = rdma_ah_find_type(dev, node->port_num);
	rdma_ah_set_port_num(ah, node->port_num);
	switch (ah->type) {
	case RDMA_AH_ATTR_TYPE_IB:
	case RDMA_AH_ATTR_TYPE_OPA:
		ret = ib_query_port(dev, node->port_num, &port);
		if (!ret)
			rdma_ah_set_dlid(ah, port.lid);
		return ret;
	case RDMA_AH_ATTR_TYPE_ROCE:
		/* GID 0 is the port's link-local one, made from its MAC. */
		ret = rdma_query_gid(dev, node->port_num, 0, &gid);
		if (ret)
			return ret;
		rdma_ah_set_grh(ah, &gid, 0, 0, 1, 0);
		rdma_get_ll_mac((struct in6_addr *)gid.raw, ah->roce.dmac);
		return 0;
	default:
		return -EOPNOTSUPP;	/* iWARP: no QP connects without a CM */
	}
}

/*
 * Bring the registration QP from RESET to RTS, connected to itself. Its
 * access flags allow no remote access: nothing may arrive on it.
 */
static int lite_reg_qp_connect(struct lite_node *node)
{
	struct ib_port_attr port;
	struct ib_qp_attr attr;
	int ret;

	ret = ib_query_port(node->pd->device, node->port_num, &port);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_INIT;
	attr.port_num = node->port_num;
	ret = ib_modify_qp(node->reg_qp, &attr, IB_QP_STATE |
			   IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = port.active_mtu;
	attr.dest_qp_num = node->reg_qp->qp_num;
	ret = lite_reg_self_av(node, &attr.ah_attr);
	if (ret)
		return ret;
	ret = ib_modify_qp(node->reg_qp, &attr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	return ib_modify_qp(node->reg_qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_TIMEOUT);
}

/* lmr mode: make the registration QP and its CQ. */
static int lite_reg_qp_create(struct lite_node *node)
{
	struct ib_qp_init_attr init;
	int ret;

	mutex_init(&node->reg_lock);
	init_waitqueue_head(&node->reg_wq);
	atomic_set(&node->reg_inflight, 0);
	node->reg_broken = false;
	node->reg_in_reset = false;
	node->reg_cq = ib_alloc_cq(node->pd->device, node, LITE_REG_DEPTH + 2,
				   0, IB_POLL_SOFTIRQ);
	if (IS_ERR(node->reg_cq)) {
		ret = PTR_ERR(node->reg_cq);
		goto err_mutex;
	}

	memset(&init, 0, sizeof(init));
	init.send_cq = node->reg_cq;
	init.recv_cq = node->reg_cq;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_ALL_WR;
	init.cap.max_send_wr = LITE_REG_DEPTH + 1;	/* + drain */
	init.cap.max_recv_wr = 1;			/* the drain's */
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	node->reg_qp = ib_create_qp(node->pd, &init);
	if (IS_ERR(node->reg_qp)) {
		ret = PTR_ERR(node->reg_qp);
		goto err_cq;
	}
	ret = lite_reg_qp_connect(node);
	if (ret)
		goto err_qp;
	return 0;

err_qp:
	ib_destroy_qp(node->reg_qp);
err_cq:
	ib_free_cq(node->reg_cq);
err_mutex:
	mutex_destroy(&node->reg_lock);
	node->reg_qp = NULL;
	node->reg_cq = NULL;
	return ret;
}

/*
 * Nothing is posted any more: flush, then free the QP and its CQ. A QP
 * in RESET holds nothing and cannot go to ERR, so it is not drained;
 * ib_free_cq() waits for a completion handler still running.
 */
static void lite_reg_qp_destroy(struct lite_node *node)
{
	if (!node->reg_qp)
		return;
	if (!node->reg_in_reset)
		ib_drain_qp(node->reg_qp);
	ib_destroy_qp(node->reg_qp);
	ib_free_cq(node->reg_cq);
	mutex_destroy(&node->reg_lock);
	node->reg_qp = NULL;
	node->reg_cq = NULL;
}

/* Move the registration QP to @state (RESET or ERR: no attributes). */
static int lite_reg_qp_state(struct lite_node *node, enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };

	lockdep_assert_held(&node->reg_lock);
	return ib_modify_qp(node->reg_qp, &attr, IB_QP_STATE);
}

/*
 * Make the registration QP again after a failed work request put it in
 * error: once the rest were flushed, RESET and connect. On failure it
 * stays broken and the next post tries again.
 */
static int lite_reg_qp_remake(struct lite_node *node)
{
	int ret;

	lockdep_assert_held(&node->reg_lock);
	if (!wait_event_timeout(node->reg_wq,
				!atomic_read(&node->reg_inflight),
				lite_tun_jiffies(data_timeout_ms)))
		return -ETIMEDOUT;
	if (!node->reg_in_reset) {
		ret = lite_reg_qp_state(node, IB_QPS_RESET);
		if (ret)
			goto err;
		node->reg_in_reset = true;
	}
	ret = lite_reg_qp_connect(node);
	if (ret) {
		/* Back to RESET whatever step failed: a known state. */
		lite_reg_qp_state(node, IB_QPS_RESET);
		goto err;
	}
	node->reg_in_reset = false;
	WRITE_ONCE(node->reg_broken, false);
	atomic64_inc(&node->stats.reg_qp_resets);
	return 0;

err:
	pr_err_ratelimited("lite%u: registration QP not made again: %d\n",
			   node->instance, ret);
	return ret;
}

/* A registration or invalidation completed (softirq). */
static void lite_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_mr_batch *b = container_of(wc->wr_cqe,
					       struct lite_mr_batch, cqe);
	struct lite_node *node = b->node;

	if (wc->status != IB_WC_SUCCESS) {
		/* Flushed: another request failed before this one ran. */
		cmpxchg(&b->status, 0, wc->status == IB_WC_WR_FLUSH_ERR ?
			-EAGAIN : -EIO);
		WRITE_ONCE(node->reg_broken, true);
	}
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
	/* After @b: the remake waits for no WR in flight, then may go. */
	atomic_dec(&node->reg_inflight);
	wake_up(&node->reg_wq);
}

/*
 * Post one work request of @b on the registration QP: waits for a free
 * slot, and remakes the QP first if a request failed on it.
 *
 * A LOCAL_INV waits until nothing is in flight. rxe fences every
 * LOCAL_INV until the requests before it have completed, and its
 * completer can miss the requester waiting on that fence (Debian 6.1:
 * rxe_requester() reads the send queue's consumer index, then sets
 * req.wait_fence; do_complete() advances the index, then reads
 * wait_fence; neither locks), after which nothing runs the requester
 * until the next post: the invalidation stalls for data_timeout_ms. With
 * every earlier request completed (their completions were handled, which
 * comes after the index moved), the fence is clear when it is checked.
 */
static int lite_reg_post(struct lite_mr_batch *b, struct ib_send_wr *wr)
{
	int most = wr->opcode == IB_WR_LOCAL_INV ? 1 : LITE_REG_DEPTH;
	struct lite_node *node = b->node;
	int ret = 0;

	wr->wr_cqe = &b->cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	if (mutex_lock_killable(&node->reg_lock))
		return -EINTR;
	if (READ_ONCE(node->reg_broken)) {
		ret = lite_reg_qp_remake(node);
		if (ret)
			goto out_unlock;
	}
	if (!wait_event_timeout(node->reg_wq,
				atomic_read(&node->reg_inflight) < most,
				lite_tun_jiffies(data_timeout_ms))) {
		ret = -ETIMEDOUT;
		goto out_unlock;
	}
	atomic_inc(&node->reg_inflight);
	atomic_inc(&b->pending);
	/*
	 * Bottom halves off across the post: rxe schedules its tasklets
	 * for the request, and enabling them again runs those here (the
	 * request, its completion, this CQ's softirq handler) instead of
	 * waking ksoftirqd, a wake-up per registration.
	 */
	local_bh_disable();
	ret = ib_post_send(node->reg_qp, wr, NULL);
	local_bh_enable();
	if (ret) {
		atomic_dec(&b->pending);
		atomic_dec(&node->reg_inflight);
		wake_up(&node->reg_wq);
	}
out_unlock:
	mutex_unlock(&node->reg_lock);
	return ret;
}

/*
 * Wait until every request of @b completed: a short spin first (local
 * work completes within microseconds), then sleep. A request not done in
 * time means a stuck QP, which is put in error so that it flushes what
 * it holds (@b's requests point at @b), and made again by the next post.
 */
static int lite_reg_await(struct lite_mr_batch *b)
{
	u64 until = ktime_get_ns() + LITE_REG_SPIN_NS;
	struct lite_node *node = b->node;
	bool late = false;
	int ret;

	while (!completion_done(&b->done) && !need_resched() &&
	       ktime_get_ns() < until)
		cpu_relax();
	if (wait_for_completion_timeout(&b->done,
					lite_tun_jiffies(data_timeout_ms)))
		return 0;
	mutex_lock(&node->reg_lock);
	/* Completed meanwhile: the QP is fine, leave it be. */
	if (!completion_done(&b->done)) {
		late = true;
		WRITE_ONCE(node->reg_broken, true);
		ret = lite_reg_qp_state(node, IB_QPS_ERR);
		pr_err_ratelimited("lite%u: a registration did not complete (QP to error: %d)\n",
				   node->instance, ret);
	}
	mutex_unlock(&node->reg_lock);
	wait_for_completion(&b->done);
	return late ? -ETIMEDOUT : 0;
}

/**
 * lite_mr_init - set up the node's keys for its isolation mode
 * @node: the node being created; node->pd and node->isolation are set
 *
 * Return: 0; -EOPNOTSUPP if the device cannot do what the mode needs
 * (a DMA MR for global, fast registration for lmr), or the error of
 * making the registration QP (lmr) or an allocation.
 */
int lite_mr_init(struct lite_node *node)
{
	struct ib_device *dev = node->pd->device;

	spin_lock_init(&node->mr_lock);
	INIT_LIST_HEAD(&node->mr_pool);
	node->nic_atomic = dev->attrs.atomic_cap != IB_ATOMIC_NONE;
	if (node->isolation == LITE_ISOLATION_GLOBAL)
		return lite_mr_global(node);
	if (!(dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    !dev->attrs.max_fast_reg_page_list_len)
		return -EOPNOTSUPP;
	node->mr_max_pages = min_t(u32, LITE_MR_MAX_PAGES,
				   dev->attrs.max_fast_reg_page_list_len);
	return lite_reg_qp_create(node);
}

static void lite_mr_free(struct lite_node *node, struct lite_mr *m)
{
	int ret = ib_dereg_mr(m->mr);

	if (ret)
		pr_err("lite%u: MR not released: %d\n", node->instance, ret);
	atomic64_dec(&node->stats.mrs);
	kfree(m);
}

/**
 * lite_mr_exit - release the node's keys
 * @node: the node; nothing is registered through it any more
 */
void lite_mr_exit(struct lite_node *node)
{
	struct lite_mr *m, *tmp;
	LIST_HEAD(idle);

	lite_reg_qp_destroy(node);
	spin_lock(&node->mr_lock);
	list_splice_init(&node->mr_pool, &idle);
	node->mr_idle = 0;
	spin_unlock(&node->mr_lock);
	list_for_each_entry_safe(m, tmp, &idle, entry)
		lite_mr_free(node, m);
	/* Every chunk was freed before: an MR left is a leak. */
	WARN_ON_ONCE(atomic64_read(&node->stats.mrs));
	if (node->global_mr) {
		int ret = ib_dereg_mr(node->global_mr);

		if (ret)
			pr_err("lite%u: global MR not released: %d\n",
			       node->instance, ret);
		node->global_mr = NULL;
	}
}

/* An idle MR from the pool, or a new one. */
static struct lite_mr *lite_mr_get(struct lite_node *node)
{
	struct lite_mr *m;

	spin_lock(&node->mr_lock);
	m = list_first_entry_or_null(&node->mr_pool, struct lite_mr, entry);
	if (m) {
		list_del(&m->entry);
		node->mr_idle--;
	}
	spin_unlock(&node->mr_lock);
	if (m)
		return m;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->mr = ib_alloc_mr(node->pd, IB_MR_TYPE_MEM_REG, node->mr_max_pages);
	if (IS_ERR(m->mr)) {
		int ret = PTR_ERR(m->mr);

		kfree(m);
		return ERR_PTR(ret);
	}
	atomic64_inc(&node->stats.mrs);
	return m;
}

/* Back to the pool, invalidated and with a fresh key; or freed. */
static void lite_mr_idle(struct lite_node *node, struct lite_mr *m)
{
	bool kept = false;

	ib_update_fast_reg_key(m->mr, ib_inc_rkey(m->mr->rkey));
	spin_lock(&node->mr_lock);
	if (node->mr_idle < LITE_MR_POOL_MAX) {
		/* Last in line: a key comes back after 256 uses of the
		 * whole pool, not of one MR. */
		list_add_tail(&m->entry, &node->mr_pool);
		node->mr_idle++;
		kept = true;
	}
	spin_unlock(&node->mr_lock);
	if (!kept)
		lite_mr_free(node, m);
}

/*
 * The page size one MR entry covers for a chunk at @dma of @len bytes:
 * the chunk itself where the device takes that size, else the largest
 * size it takes that the chunk is aligned to, with few enough entries.
 */
static int lite_mr_page_size(struct lite_node *node, u64 dma, u32 len,
			     unsigned int *page_size)
{
	u64 caps = node->pd->device->attrs.page_size_cap;
	u64 span = max_t(u64, roundup_pow_of_two(len), PAGE_SIZE);
	unsigned int shift;

	/* Chunks are naturally aligned blocks of 2^order pages. */
	for (shift = ilog2(span); shift >= PAGE_SHIFT; shift--) {
		if (!(caps & BIT_ULL(shift)) || dma & (BIT_ULL(shift) - 1))
			continue;
		if (DIV_ROUND_UP_ULL(len, BIT_ULL(shift)) > node->mr_max_pages)
			return -EINVAL;
		*page_size = BIT(shift);
		return 0;
	}
	return -EINVAL;
}

/**
 * lite_mr_batch_init - start registering chunks
 * @b: the batch
 * @node: the node that registers them (lmr mode)
 * @access: IB_ACCESS_* the peers get
 */
void lite_mr_batch_init(struct lite_mr_batch *b, struct lite_node *node,
			int access)
{
	b->cqe.done = lite_reg_done;
	b->node = node;
	init_completion(&b->done);
	atomic_set(&b->pending, 1);
	b->status = 0;
	b->access = access | IB_ACCESS_LOCAL_WRITE;
	b->ret = 0;
}

/**
 * lite_mr_batch_add - register one chunk (lmr mode)
 * @b: the batch
 * @dma: the chunk's DMA address, aligned to its size rounded up to a power
 *	 of two
 * @len: its bytes
 * @out: the MR, set whenever a registration was tried (release it with
 *	 lite_mr_release() also if the batch fails)
 * @rkey: the chunk's key, valid once lite_mr_batch_wait() returned 0
 *
 * Posts IB_WR_REG_MR on the node's registration QP; sleeps for a free
 * slot. After a failure (to post, or of a request of the batch already
 * completed) the rest of the batch is not posted.
 *
 * Return: 0, or the error the batch failed with.
 */
int lite_mr_batch_add(struct lite_mr_batch *b, u64 dma, u32 len,
		      struct lite_mr **out, u32 *rkey)
{
	struct lite_node *node = b->node;
	struct scatterlist sg;
	struct ib_reg_wr wr;
	unsigned int page_size;
	struct lite_mr *m;
	int n;

	/* A request of the batch failed already: the rest would too. */
	if (!b->ret)
		b->ret = READ_ONCE(b->status);
	if (b->ret)
		return b->ret;
	b->ret = lite_mr_page_size(node, dma, len, &page_size);
	if (b->ret)
		return b->ret;
	m = lite_mr_get(node);
	if (IS_ERR(m)) {
		b->ret = PTR_ERR(m);
		return b->ret;
	}
	*out = m;
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = dma;
	sg_dma_len(&sg) = len;
	n = ib_map_mr_sg(m->mr, &sg, 1, NULL, page_size);
	if (n != 1) {
		b->ret = n < 0 ? n : -EINVAL;
		return b->ret;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr.opcode = IB_WR_REG_MR;
	wr.mr = m->mr;
	wr.key = m->mr->rkey;
	/* Fault injection: a key of another MR's index, which fails. */
	if (lite_fault_break_reg(node))
		wr.key ^= 0x100;
	wr.access = b->access;
	*rkey = m->mr->rkey;
	b->ret = lite_reg_post(b, &wr.wr);
	return b->ret;
}

/**
 * lite_mr_batch_wait - wait until a batch's registrations are done
 * @b: the batch
 * @mrs: the MRs lite_mr_batch_add() gave out for it
 * @n: entries at @mrs (NULL ones are skipped)
 *
 * Return: 0 once every chunk added is registered; else an error, and the
 * MRs are deregistered (whether each registration took effect is unknown)
 * and @mrs all NULL: -EIO if the device refused a registration of the
 * batch, -EAGAIN if another one failed first and flushed this batch's
 * (lite_mr_try_again()), -ETIMEDOUT if the QP did not complete them in
 * time, -EINTR on a fatal signal, or what adding failed with.
 */
int lite_mr_batch_wait(struct lite_mr_batch *b, struct lite_mr **mrs, u32 n)
{
	int ret = 0;

	if (!atomic_dec_and_test(&b->pending))
		ret = lite_reg_await(b);
	ret = b->ret ?: ret ?: b->status;
	if (ret && mrs)
		lite_mr_release(b->node, mrs, n, false);
	return ret;
}

/**
 * lite_mr_try_again - whether to make a failed batch again
 * @ret: what lite_mr_batch_wait() returned
 * @tries: batches made so far for the same chunks (counted here)
 *
 * A batch flushed because another registration failed before it (-EAGAIN)
 * is made again, with fresh MRs, up to LITE_REG_TRIES batches in all.
 *
 * Return: true to make the batch again.
 */
bool lite_mr_try_again(int ret, u32 *tries)
{
	return ret == -EAGAIN && ++*tries < LITE_REG_TRIES;
}

/**
 * lite_mr_register - register one chunk that is for no peer in particular
 * @node: the node (lmr mode)
 * @dma: the chunk's DMA address, aligned as lite_mr_batch_add() says
 * @len: its bytes
 * @access: IB_ACCESS_* the peers get
 * @out: set to the MR (release it with lite_mr_release()), or NULL on
 *	 failure
 * @rkey: set to its key
 *
 * Posts IB_WR_REG_MR on the registration QP and waits for it: the key is
 * valid on every QP of the node's PD; a registration flushed by another's
 * failure is made again (lite_mr_try_again()). Sleeps; not on a
 * completion path.
 *
 * Return: 0, or an error as lite_mr_batch_wait() says.
 */
int lite_mr_register(struct lite_node *node, u64 dma, u32 len, int access,
		     struct lite_mr **out, u32 *rkey)
{
	struct lite_mr_batch b;

	u32 tries = 0;
	int ret;

	do {
		*out = NULL;
		lite_mr_batch_init(&b, node, access);
		lite_mr_batch_add(&b, dma, len, out, rkey);
		ret = lite_mr_batch_wait(&b, out, 1);
	} while (lite_mr_try_again(ret, &tries));
	return ret;
}

/* Invalidate @n MRs with LOCAL_INV on the registration QP. */
static int lite_mr_invalidate(struct lite_node *node, struct lite_mr **mrs,
			      u32 n)
{
	struct lite_mr_batch b;
	struct ib_send_wr wr;
	u32 i;

	lite_mr_batch_init(&b, node, 0);
	for (i = 0; !b.ret && i < n; i++) {
		if (!mrs[i])
			continue;
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IB_WR_LOCAL_INV;
		wr.ex.invalidate_rkey = mrs[i]->mr->rkey;
		b.ret = lite_reg_post(&b, &wr);
	}
	return lite_mr_batch_wait(&b, NULL, 0);
}

/**
 * lite_mr_release - end the registrations of chunks about to be freed
 * @node: the node that registered them
 * @mrs: their MRs (NULL entries are skipped); all NULL afterwards
 * @n: how many
 * @recycle: invalidate on the registration QP and keep the MRs for
 *	     reuse; false (or if that fails) deregisters them. Only where
 *	     waiting for a completion is safe (not on a completion path).
 *
 * When this returns, no peer can reach the chunks through those keys.
 * Sleeps.
 */
void lite_mr_release(struct lite_node *node, struct lite_mr **mrs, u32 n,
		     bool recycle)
{
	u32 i;

	if (recycle)
		recycle = !lite_mr_invalidate(node, mrs, n);
	for (i = 0; i < n; i++) {
		if (!mrs[i])
			continue;
		if (recycle)
			lite_mr_idle(node, mrs[i]);
		else
			lite_mr_free(node, mrs[i]);
		mrs[i] = NULL;
	}
}

/**
 * lite_mr_show - the node's keys, for debugfs ("mr")
 * @m: the file
 * @node: the node
 *
 * Return: 0.
 */
int lite_mr_show(struct seq_file *m, struct lite_node *node)
{
	u32 idle;

	seq_printf(m, "isolation %s\n", lite_isolated(node) ? "lmr" : "global");
	if (!lite_isolated(node))
		return 0;
	spin_lock(&node->mr_lock);
	idle = node->mr_idle;
	spin_unlock(&node->mr_lock);
	seq_printf(m, "mrs %lld\nmrs_idle %u\n",
		   atomic64_read(&node->stats.mrs), idle);
	seq_printf(m, "reg_inflight %d\nreg_broken %d\nreg_qp_resets %lld\n",
		   atomic_read(&node->reg_inflight),
		   READ_ONCE(node->reg_broken),
		   atomic64_read(&node->stats.reg_qp_resets));
	return 0;
}
