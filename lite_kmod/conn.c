// SPDX-License-Identifier: GPL-2.0
/*
 * lite connections: one RC QP per pair of nodes, set up with rdma_cm, with
 * a ring of receive buffers, credit-based sends, and deferred teardown
 * (disconnect, drain, destroy) on the node's close workqueue.
 *
 * Lifetime: a connection starts with one reference for its existence,
 * dropped by close_work after the cm_id is destroyed. Posted sends, queued
 * requests and callers hold more. It is released only after it reached
 * LITE_CONN_CLOSING, and close_work is the only place that destroys its
 * cm_id: once a lite_conn exists, the rdma_cm handler always returns 0.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/seq_file.h>

#include "internal.h"
#include "lite_trace.h"

static unsigned int ack_timeout = LITE_ACK_TIMEOUT;
module_param(ack_timeout, uint, 0644);
MODULE_PARM_DESC(ack_timeout, "RC local ACK timeout exponent of new connections: 4.096 us * 2^N, 7 retries (default 15: 134 ms; 12..18)");

/* The ACK timeout for a new connection, kept inside the data step timeout. */
static u8 lite_ack_timeout(void)
{
	return clamp_val(READ_ONCE(ack_timeout), 12, 18);
}

static_assert(LITE_RX_DEPTH >= LITE_CREDITS_MIN_DEPTH &&
	      LITE_RX_DEPTH <= U16_MAX);

static void lite_conn_defer_work(struct work_struct *work);

static void lite_conn_free_rx(struct lite_conn *conn)
{
	struct ib_device *dev = conn->node->ibdev->dev;
	int i;

	for (i = 0; conn->rx && i < LITE_RX_DEPTH; i++) {
		if (conn->rx[i].mapped)
			ib_dma_unmap_single(dev, conn->rx[i].dma, LITE_MSG_MAX,
					    DMA_FROM_DEVICE);
		kfree(conn->rx[i].buf);
	}
	kfree(conn->rx);
	conn->rx = NULL;
}

static void lite_conn_release(struct kref *ref)
{
	struct lite_conn *conn = container_of(ref, struct lite_conn, ref);
	struct lite_node *node = conn->node;

	WARN_ON(conn->state != LITE_CONN_CLOSING);
	/* Off the list first: debugfs readers (node lock) see it whole. */
	mutex_lock(&node->lock);
	list_del(&conn->node_entry);
	mutex_unlock(&node->lock);
	lite_conn_hooks_run(conn, LITE_HOOK_RELEASE);
	lite_conn_free_rx(conn);
	kfree(conn);

	if (atomic_dec_and_test(&node->n_conns))
		wake_up(&node->conns_wq);
	lite_node_put(node);
}

/**
 * lite_conn_get - take another reference on a connection
 * @conn: the connection; the caller already holds a reference
 */
void lite_conn_get(struct lite_conn *conn)
{
	kref_get(&conn->ref);
}

/**
 * lite_conn_put - drop a reference on a connection
 * @conn: the connection
 *
 * The last put (only ever after the connection reached
 * LITE_CONN_CLOSING) runs the LITE_HOOK_RELEASE hooks, frees it and drops
 * its node reference. Never called with node->lock held: the last put
 * takes it, and may sleep.
 */
void lite_conn_put(struct lite_conn *conn)
{
	kref_put(&conn->ref, lite_conn_release);
}

/**
 * lite_conn_put_not_last - drop a reference if it is not the last
 * @conn: where the reference is kept; set to NULL if it was dropped
 *
 * For atomic context, where lite_conn_release() (it takes the node's
 * mutex) must not run.
 *
 * Return: true if the reference was dropped.
 */
bool lite_conn_put_not_last(struct lite_conn **conn)
{
	if (!refcount_dec_not_one(&(*conn)->ref.refcount))
		return false;
	*conn = NULL;
	return true;
}

/**
 * lite_conn_state - a connection's state, read without its lock
 * @conn: the connection
 *
 * Return: the &enum lite_conn_state it was in; it may change at any time
 * after, except that LITE_CONN_CLOSING is final.
 */
enum lite_conn_state lite_conn_state(struct lite_conn *conn)
{
	return READ_ONCE(conn->state);
}

static void lite_conn_set_state(struct lite_conn *conn,
				enum lite_conn_state state)
{
	lockdep_assert_held(&conn->lock);
	trace_lite_conn_state(conn->node->instance, conn->peer_id, conn->active,
			      conn->state, state);
	WRITE_ONCE(conn->state, state);
}

/**
 * lite_conn_set_ready - publish an authenticated connection
 * @conn: the connection, in the handshake
 * @peer_id: the member it leads to; its messages must carry this id
 *
 * Takes @conn->lock.
 *
 * Return: 0, or -ECONNRESET if it is already closing.
 */
int lite_conn_set_ready(struct lite_conn *conn, u16 peer_id)
{
	int ret = -ECONNRESET;

	spin_lock_bh(&conn->lock);
	if (conn->state == LITE_CONN_HANDSHAKE) {
		conn->peer_id = peer_id;	/* first: the trace names it */
		lite_conn_set_state(conn, LITE_CONN_READY);
		ret = 0;
	}
	spin_unlock_bh(&conn->lock);
	return ret;
}

static void lite_conn_close_work(struct work_struct *work);

static void lite_conn_handshake_timeout(struct work_struct *work)
{
	struct lite_conn *conn = container_of(to_delayed_work(work),
					      struct lite_conn,
					      handshake_timer);

	if (lite_conn_state(conn) != LITE_CONN_READY)
		lite_conn_close(conn);
}

static void lite_conn_event_work(struct work_struct *work)
{
	lite_conn_close(container_of(work, struct lite_conn, event_work));
}

/* Passive connections still in the handshake; node->lock held. */
static u32 lite_node_unauth(struct lite_node *node)
{
	struct lite_conn *conn;
	u32 n = 0;

	list_for_each_entry(conn, &node->conns, node_entry)
		if (!conn->active && lite_conn_state(conn) < LITE_CONN_READY)
			n++;
	return n;
}

static struct lite_conn *lite_conn_alloc(struct lite_node *node, bool active)
{
	struct lite_conn *conn;
	int ret = 0;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	conn->cm_kind = LITE_CM_CONN;
	kref_init(&conn->ref);
	conn->active = active;
	spin_lock_init(&conn->lock);
	conn->state = LITE_CONN_CONNECTING;
	lite_credits_init(&conn->credits, LITE_RX_DEPTH);
	conn->sq_avail = LITE_TX_DEPTH;
	lite_rdma_conn_init(conn);
	INIT_LIST_HEAD(&conn->backlog);
	init_waitqueue_head(&conn->tx_wq);
	init_completion(&conn->cm_done);
	init_completion(&conn->closed);
	INIT_WORK(&conn->close_work, lite_conn_close_work);
	INIT_WORK(&conn->event_work, lite_conn_event_work);
	INIT_DELAYED_WORK(&conn->handshake_timer, lite_conn_handshake_timeout);
	INIT_LIST_HEAD(&conn->poll_entry);
	INIT_LIST_HEAD(&conn->rx_deferred);
	INIT_WORK(&conn->defer_work, lite_conn_defer_work);
	INIT_LIST_HEAD(&conn->rpc_errs);
	INIT_LIST_HEAD(&conn->tx_ring.room_q);
	INIT_WORK(&conn->rpc_work, lite_rpc_work);
	INIT_LIST_HEAD(&conn->aops);
	INIT_WORK(&conn->aop_work, lite_rdma_aop_work);

	mutex_lock(&node->lock);
	if (node->dying)
		ret = -ESHUTDOWN;
	else if (!active && lite_node_unauth(node) >= LITE_MAX_UNAUTH)
		ret = -EBUSY;	/* too many strangers at once */
	if (ret) {
		mutex_unlock(&node->lock);
		kfree(conn);
		return ERR_PTR(ret);
	}
	lite_node_get(node);
	conn->node = node;
	atomic_inc(&node->n_conns);
	list_add_tail(&conn->node_entry, &node->conns);
	mutex_unlock(&node->lock);
	return conn;
}

static int lite_rx_post(struct lite_conn *conn, struct lite_rx *rx)
{
	struct ib_sge sge = {
		.addr = rx->dma,
		.length = LITE_MSG_MAX,
		.lkey = conn->node->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &rx->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return ib_post_recv(conn->cm_id->qp, &wr, NULL);
}

/* Control messages taken off a softirq or busy-polled CQ, in order. */
static void lite_conn_defer_work(struct work_struct *work)
{
	struct lite_conn *conn = container_of(work, struct lite_conn,
					      defer_work);
	struct lite_rx *rx;

	for (;;) {
		spin_lock_bh(&conn->lock);
		rx = list_first_entry_or_null(&conn->rx_deferred,
					      struct lite_rx, defer_entry);
		if (rx)
			list_del(&rx->defer_entry);
		spin_unlock_bh(&conn->lock);
		if (!rx)
			return;
		lite_fault_delay_rx(conn->node);
		lite_msg_received(rx);
	}
}

static void lite_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_rx *rx = container_of(wc->wr_cqe, struct lite_rx, cqe);
	struct lite_conn *conn = rx->conn;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_info_ratelimited("lite%u: receive failed: %s\n",
					    conn->node->instance,
					    ib_wc_status_msg(wc->status));
		/*
		 * A refused connect: rdma_cm moves the QP to the error state
		 * before it reports why (REJECTED, CONNECT_ERROR), and that
		 * event fails the connect with the reason.
		 */
		if (wc->status == IB_WC_WR_FLUSH_ERR &&
		    lite_conn_state(conn) == LITE_CONN_CONNECTING)
			return;
		lite_conn_close(conn);
		return;
	}
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM) {
		/* An RPC entry or reply was written; the buffer is unused. */
		lite_rpc_arrived(conn, be32_to_cpu(wc->ex.imm_data));
		lite_conn_repost(rx);
		return;
	}
	rx->byte_len = wc->byte_len;
	ib_dma_sync_single_for_cpu(conn->node->ibdev->dev, rx->dma,
				   LITE_MSG_MAX, DMA_FROM_DEVICE);
	/* The fast path only once READY: before, order decides (the AUTH
	 * reply makes the connection READY on the receive path).
	 */
	if ((lite_msg_parse(rx) && lite_conn_state(conn) == LITE_CONN_READY) ||
	    cq->poll_ctx == IB_POLL_WORKQUEUE) {
		lite_msg_received(rx);
		return;
	}
	/* Control handlers may sleep: run them in process context. */
	spin_lock_bh(&conn->lock);
	list_add_tail(&rx->defer_entry, &conn->rx_deferred);
	spin_unlock_bh(&conn->lock);
	queue_work(conn->node->cq_wq, &conn->defer_work);
}

/**
 * lite_conn_repost - give a processed receive buffer back to the QP
 * @rx: the buffer; its message must no longer be used
 *
 * Returns its credit to the peer, in an explicit CREDIT message when
 * enough piled up. On a closing connection the buffer stays unposted; if
 * posting fails, the connection is closed. Any context.
 */
void lite_conn_repost(struct lite_rx *rx)
{
	struct lite_conn *conn = rx->conn;
	bool update = false;
	int ret = 0;

	spin_lock_bh(&conn->lock);
	if (conn->state != LITE_CONN_CLOSING) {
		ib_dma_sync_single_for_device(conn->node->ibdev->dev, rx->dma,
					      LITE_MSG_MAX, DMA_FROM_DEVICE);
		ret = lite_rx_post(conn, rx);
		if (!ret) {
			lite_credits_reposted(&conn->credits);
			update = lite_credits_update_due(&conn->credits);
		}
	}
	spin_unlock_bh(&conn->lock);

	if (ret)
		lite_conn_close(conn);
	else if (update)
		lite_conn_send(conn, LITE_MSG_CREDIT, false, 0, 0, NULL, 0);
}

/* The buffers belong to the connection: lite_conn_free_rx() frees them. */
static int lite_conn_alloc_rx(struct lite_conn *conn)
{
	struct ib_device *dev = conn->node->ibdev->dev;
	struct lite_rx *rx;
	int i, ret;

	conn->rx = kcalloc(LITE_RX_DEPTH, sizeof(*conn->rx), GFP_KERNEL);
	if (!conn->rx)
		return -ENOMEM;
	for (i = 0; i < LITE_RX_DEPTH; i++) {
		rx = &conn->rx[i];
		rx->conn = conn;
		rx->cqe.done = lite_rx_done;
		INIT_WORK(&rx->work, lite_msg_work);
		rx->buf = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
		if (!rx->buf)
			return -ENOMEM;
		rx->dma = ib_dma_map_single(dev, rx->buf, LITE_MSG_MAX,
					    DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(dev, rx->dma))
			return -ENOMEM;
		rx->mapped = true;
		ret = lite_rx_post(conn, rx);
		if (ret)
			return ret;
	}
	return 0;
}

/* QP events may come in atomic context: act from a work item. */
static void lite_qp_event(struct ib_event *ev, void *ctx)
{
	struct lite_conn *conn = ctx;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		/* A message beat the RTU: tell the CM it is established. */
		rdma_notify(conn->cm_id, IB_EVENT_COMM_EST);
		break;
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
	case IB_EVENT_PATH_MIG_ERR:
		pr_info_ratelimited("lite%u: QP event %s\n",
				    conn->node->instance,
				    ib_event_msg(ev->event));
		queue_work(conn->node->close_wq, &conn->event_work);
		break;
	default:
		break;
	}
}

/*
 * Create the CQ and QP for @id and post the receive ring. What this
 * creates belongs to the connection; close_work and release free it.
 */
static int lite_conn_create_qp(struct lite_conn *conn, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {};
	struct ib_cq *cq;
	int ret;

	if (id->device != conn->node->ibdev->dev)
		return -ENETUNREACH;	/* routed through another device */

	cq = ib_alloc_cq(id->device, conn,
			 LITE_RX_DEPTH + LITE_TX_DEPTH + LITE_DATA_WRS + 2, 0,
			 lite_cq_poll_ctx(conn->node));
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	WRITE_ONCE(conn->cq, cq);	/* waiters poll it (poll.c) */
	lite_cq_init(conn);

	attr.event_handler = lite_qp_event;
	attr.qp_context = conn;
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.cap.max_send_wr = LITE_TX_DEPTH + LITE_DATA_WRS + 1; /* + drain */
	attr.cap.max_recv_wr = LITE_RX_DEPTH + 1;	/* + drain */
	conn->max_sge = min_t(u32, id->device->attrs.max_send_sge,
			      LITE_MAX_SGE);
	/* RDMA READ may take fewer SGEs than a send. */
	conn->max_sge_rd = clamp_t(u32, id->device->attrs.max_sge_rd, 1,
				   conn->max_sge);
	attr.cap.max_send_sge = conn->max_sge;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = LITE_MAX_INLINE;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;	/* inline RPC WRs: rdma.c */
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, conn->node->pd, &attr);
	if (ret == -EINVAL) {
		/* A device without inline sends (or fewer bytes of them). */
		attr.cap.max_inline_data = 0;
		ret = rdma_create_qp(id, conn->node->pd, &attr);
	}
	if (ret)
		return ret;
	/* What the device granted (it may round up). */
	conn->max_inline = min_t(u32, attr.cap.max_inline_data,
				 LITE_MAX_INLINE);
	conn->has_qp = true;
	return lite_conn_alloc_rx(conn);
}

/* Our private data; a request to @dst carries the ticket for it. */
static void lite_conn_pdata(struct lite_node *node, struct lite_cm_pdata *pd,
			    const struct lite_naddr *dst)
{
	memset(pd, 0, sizeof(*pd));
	pd->magic = cpu_to_le32(LITE_WIRE_MAGIC);
	pd->version = LITE_WIRE_VERSION;
	pd->rx_depth = cpu_to_le16(LITE_RX_DEPTH);
	if (!dst)
		return;
	get_random_bytes(pd->nonce, sizeof(pd->nonce));
	lite_auth_cm_tag(node->secret, node->secret_len, pd->nonce, dst,
			 pd->tag);
}

/*
 * Check the peer's private data; a request (@node set) must carry a ticket
 * for our listen address. Return: 0, -EPROTO for another protocol or
 * version, -EKEYREJECTED for a request without the secret.
 */
static int lite_conn_check_pdata(struct lite_node *node, const void *data,
				 u8 len)
{
	const struct lite_cm_pdata *pd = data;

	if (!pd || len < sizeof(*pd))
		return -EPROTO;
	if (le32_to_cpu(pd->magic) != LITE_WIRE_MAGIC ||
	    pd->version != LITE_WIRE_VERSION ||
	    le16_to_cpu(pd->rx_depth) != LITE_RX_DEPTH || pd->status)
		return -EPROTO;
	if (node && !lite_auth_cm_check(node->secret, node->secret_len,
					pd->nonce, &node->listen_addr,
					pd->tag)) {
		lite_count_error(node, 0, LITE_ERR_AUTH, -EACCES);
		return -EKEYREJECTED;
	}
	return 0;
}

/* @dst: where an active connection goes; NULL when accepting. */
static void lite_conn_param(struct lite_conn *conn,
			    struct rdma_conn_param *param,
			    struct lite_cm_pdata *pd,
			    const struct lite_naddr *dst)
{
	const struct ib_device_attr *attrs = &conn->node->ibdev->dev->attrs;

	lite_conn_pdata(conn->node, pd, dst);
	memset(param, 0, sizeof(*param));
	param->private_data = pd;
	param->private_data_len = sizeof(*pd);
	param->responder_resources = min_t(u32, attrs->max_qp_rd_atom,
					   LITE_MAX_RD_ATOM);
	param->initiator_depth = min_t(u32, attrs->max_qp_init_rd_atom,
				       LITE_MAX_RD_ATOM);
	param->retry_count = LITE_RETRY_COUNT;
	param->rnr_retry_count = LITE_RNR_RETRY;
}

/* An active connect failed: tell the waiter, then tear down. */
static void lite_conn_fail(struct lite_conn *conn, int err)
{
	if (!completion_done(&conn->cm_done)) {
		conn->cm_status = err;
		complete_all(&conn->cm_done);
	}
	lite_conn_close(conn);
}

static int lite_conn_route_resolved(struct lite_conn *conn,
				    struct rdma_cm_id *id)
{
	struct rdma_conn_param param;
	struct lite_cm_pdata pd;
	int ret;

	ret = lite_conn_create_qp(conn, id);
	if (ret)
		return ret;
	lite_conn_param(conn, &param, &pd, &conn->dst);
	return rdma_connect_locked(id, &param);	/* in the handler */
}

/* Why we were rejected: lite's status in the private data, if any. */
static int lite_conn_reject_status(const struct rdma_cm_event *ev)
{
	const struct lite_cm_pdata *pd = ev->param.conn.private_data;
	int status;

	if (!pd || ev->param.conn.private_data_len < sizeof(*pd) ||
	    le32_to_cpu(pd->magic) != LITE_WIRE_MAGIC)
		return -ECONNREFUSED;
	status = (int)le32_to_cpu(pd->status);
	return status == -EKEYREJECTED ? status : -ECONNREFUSED;
}

static void lite_conn_established(struct lite_conn *conn,
				  struct rdma_cm_event *ev)
{
	int ret;

	if (!conn->active)
		return;
	ret = lite_conn_check_pdata(NULL, ev->param.conn.private_data,
				    ev->param.conn.private_data_len);
	if (ret) {
		lite_conn_fail(conn, ret);
		return;
	}
	spin_lock_bh(&conn->lock);
	if (conn->state == LITE_CONN_CONNECTING)
		lite_conn_set_state(conn, LITE_CONN_HANDSHAKE);
	spin_unlock_bh(&conn->lock);
	complete_all(&conn->cm_done);
}

/**
 * lite_conn_cm_event - handle an rdma_cm event of a connection
 * @conn: the connection (never the listener)
 * @id: its cm_id
 * @ev: the event
 *
 * Drives an active connect (resolve route, create the QP, connect) and
 * fails the connection on errors and disconnects; events of a closing
 * connection are ignored. Context: the rdma_cm handler (its handler_mutex
 * held).
 *
 * Return: 0, always: ids are destroyed by close_work, never by rdma_cm on
 * our behalf.
 */
int lite_conn_cm_event(struct lite_conn *conn, struct rdma_cm_id *id,
		       struct rdma_cm_event *ev)
{
	int ret;

	if (lite_conn_state(conn) == LITE_CONN_CLOSING)
		return 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, LITE_CM_TIMEOUT_MS);
		if (ret)
			lite_conn_fail(conn, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = lite_conn_route_resolved(conn, id);
		if (ret)
			lite_conn_fail(conn, ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		lite_conn_established(conn, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		lite_conn_fail(conn, -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		lite_conn_fail(conn, -ENETUNREACH);
		break;
	case RDMA_CM_EVENT_REJECTED:
		lite_conn_fail(conn, lite_conn_reject_status(ev));
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		lite_conn_fail(conn, -ECONNABORTED);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		lite_conn_fail(conn, -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
}

/* Accept a connect request on @conn's fresh id; in the handler. */
static int lite_conn_do_accept(struct lite_conn *conn, struct rdma_cm_id *id,
			       const struct rdma_conn_param *req)
{
	struct rdma_conn_param param;
	struct lite_cm_pdata pd;

	spin_lock_bh(&conn->lock);
	lite_conn_set_state(conn, LITE_CONN_HANDSHAKE);
	spin_unlock_bh(&conn->lock);
	lite_conn_param(conn, &param, &pd, NULL);
	/* Never more RDMA READ depth than the requester can use. */
	param.responder_resources = min(param.responder_resources,
					req->initiator_depth);
	param.initiator_depth = min(param.initiator_depth,
				    req->responder_resources);
	return rdma_accept(id, &param);	/* rejects by itself on failure */
}

/**
 * lite_conn_accept - take a connect request from the listener
 * @node: the node whose listener got the request
 * @id: the request's new cm_id
 * @ev: the CONNECT_REQUEST event, with the requester's private data
 *
 * A request without a valid ticket for our listen address is rejected
 * before anything is allocated for it. Context: the listener's rdma_cm
 * handler; may sleep.
 *
 * Return: non-zero only if no connection was created (-EPROTO,
 * -EKEYREJECTED, -ENOMEM, -ESHUTDOWN while the node leaves, -EBUSY with
 * too many connections in the handshake): rdma_cm then rejects the request
 * and destroys @id. Once a connection exists it owns @id, and a failure
 * rejects the request and closes the connection instead.
 */
int lite_conn_accept(struct lite_node *node, struct rdma_cm_id *id,
		     struct rdma_cm_event *ev)
{
	struct lite_conn *conn;
	int ret;

	/* Strangers are refused here, before they cost anything. */
	ret = lite_conn_check_pdata(node, ev->param.conn.private_data,
				    ev->param.conn.private_data_len);
	if (ret == -EKEYREJECTED) {
		struct lite_cm_pdata rej;

		lite_conn_pdata(node, &rej, NULL);
		rej.status = cpu_to_le32((u32)ret);
		rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
	}
	if (ret)
		return ret;
	conn = lite_conn_alloc(node, false);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	conn->cm_id = id;
	id->context = &conn->cm_kind;
	rdma_set_ack_timeout(id, lite_ack_timeout());	/* RC: cannot fail */
	lite_sockaddr_to_naddr(&id->route.addr.dst_addr, &conn->remote);
	/* Armed before anything can close it; close_work cancels it. */
	queue_delayed_work(node->close_wq, &conn->handshake_timer,
			   msecs_to_jiffies(LITE_HANDSHAKE_MS));

	ret = lite_conn_create_qp(conn, id);
	if (ret) {
		rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		goto close;
	}
	ret = lite_conn_do_accept(conn, id, &ev->param.conn);
	if (ret)
		goto close;
	return 0;

close:
	lite_conn_close(conn);
	return 0;
}

/**
 * lite_conn_connect - connect to the node listening on @dst by @deadline
 * @node: our node; the connection leaves from its address
 * @dst: the listen address to connect to
 * @deadline: in jiffies
 *
 * Sleeps until rdma_cm established the connection or gave up; a fatal
 * signal ends the wait.
 *
 * Return: a connection in LITE_CONN_HANDSHAKE state holding a reference
 * for the caller, or an ERR_PTR: -ENOMEM, -ESHUTDOWN if @node is leaving,
 * -EINTR, -ETIMEDOUT, or why rdma_cm or the peer refused (-EHOSTUNREACH,
 * -ENETUNREACH, -ECONNREFUSED, -EKEYREJECTED, -EPROTO, ...).
 */
struct lite_conn *lite_conn_connect(struct lite_node *node,
				    const struct lite_naddr *dst,
				    unsigned long deadline)
{
	struct sockaddr_storage src = node->listen_sa, dsa;
	struct lite_conn *conn;
	struct rdma_cm_id *id;
	long left;
	int ret;

	conn = lite_conn_alloc(node, true);
	if (IS_ERR(conn))
		return conn;
	lite_conn_get(conn);	/* the caller's reference */

	id = rdma_create_id(&init_net, lite_cm_handler, &conn->cm_kind,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto err;
	}
	conn->cm_id = id;
	conn->dst = *dst;
	rdma_set_ack_timeout(id, lite_ack_timeout());	/* RC: cannot fail */

	/* Leave from our own address so the route uses our device. */
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	lite_naddr_to_sockaddr(dst, &dsa);
	ret = rdma_resolve_addr(id, (struct sockaddr *)&src,
				(struct sockaddr *)&dsa, LITE_CM_TIMEOUT_MS);
	if (ret)
		goto err;

	left = wait_for_completion_killable_timeout(&conn->cm_done,
		max_t(long, (long)(deadline - jiffies), 1));
	if (left < 0)
		ret = -EINTR;
	else if (!left)
		ret = -ETIMEDOUT;
	else
		ret = conn->cm_status;
	if (ret)
		goto err;
	return conn;

err:
	lite_conn_close(conn);
	lite_conn_put(conn);
	return ERR_PTR(ret);
}

/* Whether @tx may be posted now; takes its credit and send slot. */
static bool lite_tx_admit_locked(struct lite_conn *conn, bool credit_msg)
{
	if (!conn->sq_avail || !lite_credits_take(&conn->credits, credit_msg))
		return false;
	conn->sq_avail--;
	return true;
}

/* Post @tx now; conn->lock held, credit and slot taken. */
static int lite_tx_post_locked(struct lite_conn *conn, struct lite_tx *tx)
{
	struct ib_device *dev = conn->node->ibdev->dev;
	struct lite_wire_hdr *h = (struct lite_wire_hdr *)tx->buf;
	struct ib_send_wr wr = {};
	struct ib_sge sge;
	int ret;

	h->credits = cpu_to_le16(lite_credits_collect(&conn->credits));
	tx->dma = ib_dma_map_single(dev, tx->buf, tx->len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(dev, tx->dma))
		return -ENOMEM;
	sge.addr = tx->dma;
	sge.length = tx->len;
	sge.lkey = conn->node->pd->local_dma_lkey;
	wr.wr_cqe = &tx->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;

	ret = lite_fault_fail_post(conn->node) ? -EIO :
	      ib_post_send(conn->cm_id->qp, &wr, NULL);
	if (ret) {
		ib_dma_unmap_single(dev, tx->dma, tx->len, DMA_TO_DEVICE);
		return ret;
	}
	lite_conn_get(conn);	/* dropped by lite_tx_done(); never the last */
	conn->tx_inflight++;
	atomic64_inc(&conn->tx_msgs);
	atomic64_add(tx->len, &conn->tx_bytes);
	trace_lite_msg_send(conn->node->instance, conn->peer_id, h->type,
			    le16_to_cpu(h->flags) & LITE_MSGF_REPLY,
			    le32_to_cpu(h->req_id), tx->len);
	return 0;
}

/* Post what the backlog can now afford; conn->lock held. */
static int lite_conn_flush_locked(struct lite_conn *conn)
{
	struct lite_tx *tx;
	int ret;

	while (!list_empty(&conn->backlog)) {
		tx = list_first_entry(&conn->backlog, struct lite_tx, entry);
		if (!lite_tx_admit_locked(conn, false))
			break;
		list_del(&tx->entry);
		conn->n_backlog--;
		ret = lite_tx_post_locked(conn, tx);
		if (ret) {
			kfree(tx);
			return ret;
		}
	}
	return 0;
}

static void lite_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_tx *tx = container_of(wc->wr_cqe, struct lite_tx, cqe);
	struct lite_conn *conn = tx->conn;
	bool close = false;

	ib_dma_unmap_single(conn->node->ibdev->dev, tx->dma, tx->len,
			    DMA_TO_DEVICE);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_info_ratelimited("lite%u: send failed: %s\n",
					    conn->node->instance,
					    ib_wc_status_msg(wc->status));
		close = true;
	}
	spin_lock_bh(&conn->lock);
	conn->tx_inflight--;
	conn->sq_avail++;
	if (!close && conn->state != LITE_CONN_CLOSING)
		close = lite_conn_flush_locked(conn) != 0;
	if (conn->close_when_sent && !conn->tx_inflight &&
	    list_empty(&conn->backlog))
		close = true;
	spin_unlock_bh(&conn->lock);
	wake_up(&conn->tx_wq);
	if (close)
		lite_conn_close(conn);
	kfree(tx);
	lite_conn_put(conn);
}

/**
 * lite_conn_grant - credits returned by the peer
 * @conn: the connection
 * @n: how many
 *
 * Posts what of the backlog the credits now allow and wakes writers that
 * wait for credits. Takes @conn->lock; any context.
 *
 * Return: 0; -EPROTO if the peer returned too many, or the error of
 * posting the backlog: the connection is then closed.
 */
int lite_conn_grant(struct lite_conn *conn, u16 n)
{
	int ret;

	spin_lock_bh(&conn->lock);
	ret = lite_credits_grant(&conn->credits, n);
	if (!ret && conn->state != LITE_CONN_CLOSING)
		ret = lite_conn_flush_locked(conn);
	spin_unlock_bh(&conn->lock);
	wake_up(&conn->tx_wq);	/* writers with immediate wait for credits */
	if (ret)
		lite_conn_close(conn);
	return ret;
}

static struct lite_tx *lite_tx_alloc(struct lite_conn *conn, u8 type,
				     bool reply, u32 req_id, int status,
				     const void *payload, u32 len, gfp_t gfp)
{
	struct lite_tx *tx;
	size_t hdr;

	tx = kmalloc(struct_size(tx, buf, sizeof(struct lite_wire_hdr) + len),
		     gfp);
	if (!tx)
		return NULL;
	hdr = lite_wire_put_hdr(tx->buf, type, reply,
				READ_ONCE(conn->node->self_id), 0, req_id,
				status, len);
	if (len)
		memcpy(tx->buf + hdr, payload, len);
	tx->len = hdr + len;
	tx->conn = conn;
	tx->cqe.done = lite_tx_done;
	tx->credit_msg = type == LITE_MSG_CREDIT;
	return tx;
}

/**
 * lite_conn_send_gfp - send one message, now or when credits and slots allow
 * @conn: the connection
 * @type: message type
 * @reply: it is a reply
 * @req_id: request id; 0 for one-way messages
 * @status: 0 or a negative errno (replies only)
 * @payload: @len bytes, copied
 * @len: payload length
 * @gfp: how to allocate the message: GFP_ATOMIC from completion handlers
 *
 * Messages leave in the order they were sent. A CREDIT message goes out
 * only if there are credits to return and a credit to spend, and may pass
 * the backlog (it carries no content). With GFP_ATOMIC it does not sleep.
 * Takes @conn->lock.
 *
 * Return: 0 if posted or queued; -ENOTCONN if the connection is closing
 * or not yet connected; -EMSGSIZE if @len does not fit in a message;
 * -ENOMEM; or the error of posting, after which the connection is closed.
 */
int lite_conn_send_gfp(struct lite_conn *conn, u8 type, bool reply,
		       u32 req_id, int status, const void *payload, u32 len,
		       gfp_t gfp)
{
	struct lite_tx *tx;
	int ret = 0;

	if (len > LITE_MSG_MAX - sizeof(struct lite_wire_hdr))
		return -EMSGSIZE;
	tx = lite_tx_alloc(conn, type, reply, req_id, status, payload, len,
			   gfp);
	if (!tx)
		return -ENOMEM;

	spin_lock_bh(&conn->lock);
	if (conn->state == LITE_CONN_CLOSING ||
	    conn->state == LITE_CONN_CONNECTING) {
		ret = -ENOTCONN;
	} else if (tx->credit_msg) {
		if (conn->credits.unreturned && lite_tx_admit_locked(conn, true)) {
			ret = lite_tx_post_locked(conn, tx);
			if (!ret)
				tx = NULL;
		}
	} else if (!list_empty(&conn->backlog) ||
		   !lite_tx_admit_locked(conn, false)) {
		list_add_tail(&tx->entry, &conn->backlog);
		conn->n_backlog++;
		tx = NULL;
	} else {
		ret = lite_tx_post_locked(conn, tx);
		if (!ret)
			tx = NULL;
	}
	spin_unlock_bh(&conn->lock);
	kfree(tx);
	if (ret && ret != -ENOTCONN)
		lite_conn_close(conn);
	return ret;
}

/**
 * lite_conn_send - lite_conn_send_gfp() as the message type allows
 * @conn: the connection
 * @type: message type
 * @reply: it is a reply
 * @req_id: request id; 0 for one-way messages
 * @status: 0 or a negative errno (replies only)
 * @payload: @len bytes, copied
 * @len: payload length
 *
 * CREDIT messages and ATOMIC replies are allocated with GFP_ATOMIC (they go
 * from completion handlers); other messages may sleep.
 *
 * Return: as lite_conn_send_gfp().
 */
int lite_conn_send(struct lite_conn *conn, u8 type, bool reply, u32 req_id,
		   int status, const void *payload, u32 len)
{
	gfp_t gfp = type == LITE_MSG_CREDIT || type == LITE_MSG_ATOMIC ?
		    GFP_ATOMIC : GFP_KERNEL;

	return lite_conn_send_gfp(conn, type, reply, req_id, status, payload,
				  len, gfp);
}

static bool lite_conn_sent(struct lite_conn *conn)
{
	bool done;

	spin_lock_bh(&conn->lock);
	done = conn->state == LITE_CONN_CLOSING ||
	       (!conn->tx_inflight && list_empty(&conn->backlog));
	spin_unlock_bh(&conn->lock);
	return done;
}

/**
 * lite_conn_wait_sent - wait until everything sent so far was acknowledged
 * @conn: the connection
 * @deadline: in jiffies
 *
 * Acknowledged by the peer's HCA: nothing is in flight or in the backlog
 * (or the connection is closing). Sleeps.
 *
 * Return: 0, or -ETIMEDOUT.
 */
int lite_conn_wait_sent(struct lite_conn *conn, unsigned long deadline)
{
	long left = (long)(deadline - jiffies);

	if (left <= 0 ||
	    !wait_event_timeout(conn->tx_wq, lite_conn_sent(conn), left))
		return lite_conn_sent(conn) ? 0 : -ETIMEDOUT;
	return 0;
}

/**
 * lite_conn_close_when_sent - close once what was sent so far has left
 * @conn: the connection (after a final reply, say)
 *
 * Closes it now if nothing is in flight or in the backlog, else the
 * completion of the last send does. Takes @conn->lock.
 */
void lite_conn_close_when_sent(struct lite_conn *conn)
{
	bool now;

	spin_lock_bh(&conn->lock);
	conn->close_when_sent = true;
	now = !conn->tx_inflight && list_empty(&conn->backlog);
	spin_unlock_bh(&conn->lock);
	if (now)
		lite_conn_close(conn);
}

/**
 * lite_conn_close - start tearing a connection down; idempotent
 * @conn: the connection
 *
 * Fails its pending requests at once (the LITE_HOOK_FAILED hooks); queued
 * sends are dropped and close_work, on the node's close_wq, does the rest
 * with the existence reference. Any context. Never takes node->lock, so it
 * may be called with it held.
 *
 * Return: true if this call started the teardown, false if it had begun.
 */
bool lite_conn_close(struct lite_conn *conn)
{
	struct lite_tx *tx, *tmp;
	LIST_HEAD(backlog);

	spin_lock_bh(&conn->lock);
	if (conn->state == LITE_CONN_CLOSING) {
		spin_unlock_bh(&conn->lock);
		return false;
	}
	lite_conn_set_state(conn, LITE_CONN_CLOSING);
	list_splice_init(&conn->backlog, &backlog);
	conn->n_backlog = 0;
	spin_unlock_bh(&conn->lock);
	wake_up(&conn->tx_wq);

	list_for_each_entry_safe(tx, tmp, &backlog, entry)
		kfree(tx);
	if (!completion_done(&conn->cm_done)) {
		conn->cm_status = -ECONNABORTED;
		complete_all(&conn->cm_done);
	}
	lite_conn_hooks_run(conn, LITE_HOOK_FAILED);
	/* close_work inherits the existence reference. */
	queue_work(conn->node->close_wq, &conn->close_work);
	return true;
}

/**
 * lite_conn_timed_out - close a connection whose peer stopped answering
 * @conn: the connection; the caller holds a reference on it
 * @what: what did not happen in time, for the log
 *
 * Closes @conn (its drain flushes what is in flight); if this call started
 * the teardown, counts a timeout against the peer and logs it, ratelimited,
 * so one stalled peer is counted and logged once. Any context.
 */
void lite_conn_timed_out(struct lite_conn *conn, const char *what)
{
	if (!lite_conn_close(conn))
		return;
	lite_count_error(conn->node, conn->peer_id, LITE_ERR_TIMEOUT,
			 -ETIMEDOUT);
	pr_info_ratelimited("lite%u: node %u: %s in time (data_timeout_ms): connection closed\n",
			    conn->node->instance, conn->peer_id, what);
}

/* A marker work request of lite_conn_drain(). */
struct lite_drain {
	struct ib_cqe cqe;
	bool done;
};

static void lite_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_drain *d = container_of(wc->wr_cqe, struct lite_drain,
					    cqe);

	WRITE_ONCE(d->done, true);
}

/*
 * Flush every work request of @conn's QP through the CQ, so that each
 * one's handler ran: ib_drain_qp() for the CQs the RDMA core polls. The
 * ones lite polls (lite_cq_stop() made the caller their only poller) get
 * the same in a loop that polls at once instead of every 100 ms: the QP
 * goes to the error state, and a send and a receive posted after every
 * other complete last. Like ib_drain_qp(), it waits as long as that
 * takes (a handler that never ran would leave a waiter and the
 * connection's references behind), saying so after lite_tun(data_timeout_ms).
 */
static void lite_conn_drain(struct lite_conn *conn)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_qp *qp = conn->cm_id->qp;
	struct lite_drain sd = { .cqe.done = lite_drain_done };
	struct lite_drain rd = { .cqe.done = lite_drain_done };
	struct ib_rdma_wr swr = {
		.wr = {
			.wr_cqe = &sd.cqe,
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	struct ib_recv_wr rwr = { .wr_cqe = &rd.cqe };
	unsigned long deadline;
	int ret;

	if (lite_cq_poll_ctx(conn->node) != IB_POLL_DIRECT) {
		ib_drain_qp(qp);
		return;
	}
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE);
	if (ret) {
		pr_warn("lite%u: cannot drain a QP: error %d\n",
			conn->node->instance, ret);
		return;
	}
	if (ib_post_send(qp, &swr.wr, NULL))
		sd.done = true;
	if (ib_post_recv(qp, &rwr, NULL))
		rd.done = true;
	deadline = lite_tun_deadline(data_timeout_ms);
	while (!READ_ONCE(sd.done) || !READ_ONCE(rd.done)) {
		local_bh_disable();	/* as for every handler */
		ret = ib_process_cq_direct(conn->cq, -1);
		local_bh_enable();
		if (ret)
			continue;
		if (deadline && time_after(jiffies, deadline)) {
			pr_warn("lite%u: a QP is still draining after %u ms\n",
				conn->node->instance,
				lite_tun(data_timeout_ms));
			deadline = 0;
		}
		usleep_range(50, 200);
	}
}

static void lite_conn_close_work(struct work_struct *work)
{
	struct lite_conn *conn = container_of(work, struct lite_conn,
					      close_work);
	struct rdma_cm_id *id = conn->cm_id;

	if (id) {
		/*
		 * Wait out a handler that is running now; later ones see
		 * CLOSING and return at once, so has_qp is stable after this.
		 */
		rdma_lock_handler(id);
		rdma_unlock_handler(id);
		rdma_disconnect(id);
		if (conn->has_qp) {
			lite_cq_stop(conn);	/* the drain polls it now */
			lite_conn_drain(conn);
			rdma_destroy_qp(id);
			conn->has_qp = false;
		}
		rdma_destroy_id(id);
		conn->cm_id = NULL;
	}
	/* No handler, QP event or CQ callback can queue these any more. */
	cancel_delayed_work_sync(&conn->handshake_timer);
	cancel_work_sync(&conn->event_work);
	lite_cq_stop(conn);
	flush_work(&conn->defer_work);	/* what the CQ handed over */
	flush_work(&conn->aop_work);
	if (conn->cq)
		ib_free_cq(conn->cq);
	conn->cq = NULL;
	mutex_lock(&conn->node->lock);
	conn->qp_gone = true;	/* the peer cannot reach our memory now */
	mutex_unlock(&conn->node->lock);
	complete_all(&conn->closed);
	/*
	 * Only now: a reply that arrived before the close (say, the verdict
	 * of a peer that then disconnected) was delivered by the drain and
	 * the flush above, and must win over ECONNRESET.
	 */
	lite_conn_hooks_run(conn, LITE_HOOK_CLOSED);
	lite_conn_put(conn);
}

static const char *lite_conn_state_name(enum lite_conn_state state)
{
	switch (state) {
	case LITE_CONN_CONNECTING:
		return "connecting";
	case LITE_CONN_HANDSHAKE:
		return "handshake";
	case LITE_CONN_READY:
		return "ready";
	case LITE_CONN_CLOSING:
		return "closing";
	}
	return "unknown";
}

/* The inbound RPC ring's size and positions, or dashes before RING. */
static void lite_conn_show_rx_ring(struct seq_file *m, struct lite_conn *conn)
{
	struct lite_ring_rx *ring = smp_load_acquire(&conn->ring);

	if (!ring) {
		seq_puts(m, " - - - -");
		return;
	}
	spin_lock_bh(&ring->lock);
	seq_printf(m, " %llu %llu %llu %llu", ring->buf.size, ring->head,
		   ring->tail, ring->acked);
	spin_unlock_bh(&ring->lock);
}

/**
 * lite_conns_show - list the node's connections (debugfs "conns")
 * @m: the file
 * @node: the node
 *
 * A header, then one line per connection, installed or not: the peer's
 * id (0 before the handshake named it), who connected (active: we did),
 * the state, send credits, free send-queue slots, messages waiting for
 * either, control sends in flight, free one-sided slots, and the RPC
 * rings: ours (size, head, tail, the tail last told to the peer) and the
 * peer's as we write it (size, head, posted, tail), "-" before they exist.
 *
 * Return: 0.
 */
int lite_conns_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_conn *conn;
	u64 tx[4];
	bool tx_ready;

	seq_puts(m, "peer dir state credits sq_avail backlog tx_inflight data_avail rx_size rx_head rx_tail rx_acked tx_size tx_head tx_posted tx_tail\n");
	mutex_lock(&node->lock);
	list_for_each_entry(conn, &node->conns, node_entry) {
		tx_ready = smp_load_acquire(&conn->tx_ring.ready);
		spin_lock_bh(&conn->lock);
		seq_printf(m, "%u %s %s %u %u %u %u %u", conn->peer_id,
			   conn->active ? "active" : "passive",
			   lite_conn_state_name(conn->state),
			   conn->credits.send, conn->sq_avail, conn->n_backlog,
			   conn->tx_inflight, conn->data_avail);
		if (tx_ready) {
			tx[0] = conn->tx_ring.size;
			tx[1] = conn->tx_ring.head;
			tx[2] = smp_load_acquire(&conn->tx_ring.posted);
			tx[3] = conn->tx_ring.tail;
		}
		spin_unlock_bh(&conn->lock);
		lite_conn_show_rx_ring(m, conn);
		if (tx_ready)
			seq_printf(m, " %llu %llu %llu %llu\n", tx[0], tx[1],
				   tx[2], tx[3]);
		else
			seq_puts(m, " - - - -\n");
	}
	mutex_unlock(&node->lock);
	return 0;
}
