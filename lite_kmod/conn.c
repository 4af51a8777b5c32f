// SPDX-License-Identifier: GPL-2.0
/*
 * lite connections: one RC QP per pair of nodes, set up with rdma_cm, with
 * a ring of receive buffers, credit-based sends, and deferred teardown
 * (disconnect, drain, destroy) on the node's close workqueue.
 *
 * Lifetime: a connection starts with one reference for its existence,
 * dropped by close_work after the cm_id is destroyed. Posted sends, queued
 * requests and callers hold more. It is released only after it reached
 * LITE_CONN_CLOSING.
 */
#include <linux/slab.h>

#include "internal.h"

static void lite_conn_release(struct kref *ref)
{
	struct lite_conn *conn = container_of(ref, struct lite_conn, ref);
	struct lite_node *node = conn->node;
	struct ib_device *dev = node->ibdev->dev;
	int i;

	WARN_ON(conn->state != LITE_CONN_CLOSING);
	for (i = 0; conn->rx && i < LITE_RX_DEPTH; i++) {
		if (conn->rx[i].dma)
			ib_dma_unmap_single(dev, conn->rx[i].dma, LITE_MSG_MAX,
					    DMA_FROM_DEVICE);
		kfree(conn->rx[i].buf);
	}
	kfree(conn->rx);

	mutex_lock(&node->lock);
	list_del(&conn->node_entry);
	mutex_unlock(&node->lock);
	kfree(conn);

	if (atomic_dec_and_test(&node->n_conns))
		wake_up(&node->conns_wq);
	lite_node_put(node);
}

void lite_conn_get(struct lite_conn *conn)
{
	kref_get(&conn->ref);
}

void lite_conn_put(struct lite_conn *conn)
{
	kref_put(&conn->ref, lite_conn_release);
}

enum lite_conn_state lite_conn_state(struct lite_conn *conn)
{
	enum lite_conn_state state;
	unsigned long flags;

	spin_lock_irqsave(&conn->lock, flags);
	state = conn->state;
	spin_unlock_irqrestore(&conn->lock, flags);
	return state;
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

static struct lite_conn *lite_conn_alloc(struct lite_node *node, bool active)
{
	struct lite_conn *conn;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return ERR_PTR(-ENOMEM);
	conn->cm_kind = LITE_CM_CONN;
	kref_init(&conn->ref);
	conn->active = active;
	spin_lock_init(&conn->lock);
	conn->state = LITE_CONN_CONNECTING;
	lite_credits_init(&conn->credits, LITE_RX_DEPTH);
	INIT_LIST_HEAD(&conn->backlog);
	init_waitqueue_head(&conn->tx_wq);
	init_completion(&conn->cm_done);
	INIT_WORK(&conn->close_work, lite_conn_close_work);
	INIT_DELAYED_WORK(&conn->handshake_timer, lite_conn_handshake_timeout);
	atomic64_set(&conn->last_rtt_ns, 0);

	mutex_lock(&node->lock);
	if (node->dying) {
		mutex_unlock(&node->lock);
		kfree(conn);
		return ERR_PTR(-ESHUTDOWN);
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

static void lite_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_rx *rx = container_of(wc->wr_cqe, struct lite_rx, cqe);
	struct lite_conn *conn = rx->conn;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_info("lite%u: receive failed: %s\n",
				conn->node->instance,
				ib_wc_status_msg(wc->status));
		lite_conn_close(conn);
		return;
	}
	rx->byte_len = wc->byte_len;
	ib_dma_sync_single_for_cpu(conn->node->ibdev->dev, rx->dma,
				   LITE_MSG_MAX, DMA_FROM_DEVICE);
	lite_msg_received(rx);
}

/* Give a processed receive buffer back to the QP and return its credit. */
void lite_conn_repost(struct lite_rx *rx)
{
	struct lite_conn *conn = rx->conn;
	unsigned long flags;
	bool update = false;
	int ret = 0;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state != LITE_CONN_CLOSING) {
		ib_dma_sync_single_for_device(conn->node->ibdev->dev, rx->dma,
					      LITE_MSG_MAX, DMA_FROM_DEVICE);
		ret = lite_rx_post(conn, rx);
		if (!ret) {
			lite_credits_reposted(&conn->credits);
			update = lite_credits_update_due(&conn->credits);
		}
	}
	spin_unlock_irqrestore(&conn->lock, flags);

	if (ret)
		lite_conn_close(conn);
	else if (update)
		lite_conn_send(conn, LITE_MSG_CREDIT, false, 0, 0, NULL, 0);
}

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
		if (ib_dma_mapping_error(dev, rx->dma)) {
			rx->dma = 0;
			return -ENOMEM;
		}
		ret = lite_rx_post(conn, rx);
		if (ret)
			return ret;
	}
	return 0;
}

static void lite_qp_event(struct ib_event *ev, void *ctx)
{
	struct lite_conn *conn = ctx;

	pr_info("lite%u: QP event %s\n", conn->node->instance,
		ib_event_msg(ev->event));
}

/* Create the CQ and QP for @id and post the receive ring. */
static int lite_conn_create_qp(struct lite_conn *conn, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr attr = {};
	int ret;

	if (id->device != conn->node->ibdev->dev)
		return -ENETUNREACH;	/* routed through another device */

	conn->cq = ib_alloc_cq(id->device, conn,
			       LITE_RX_DEPTH + LITE_TX_DEPTH + 2, 0,
			       IB_POLL_WORKQUEUE);
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		conn->cq = NULL;
		return ret;
	}
	attr.event_handler = lite_qp_event;
	attr.qp_context = conn;
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->cq;
	attr.cap.max_send_wr = LITE_TX_DEPTH + 1;	/* + drain */
	attr.cap.max_recv_wr = LITE_RX_DEPTH + 1;	/* + drain */
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_ALL_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, conn->node->pd, &attr);
	if (ret)
		return ret;
	conn->has_qp = true;
	return lite_conn_alloc_rx(conn);
}

static void lite_conn_pdata(struct lite_cm_pdata *pd)
{
	memset(pd, 0, sizeof(*pd));
	pd->magic = cpu_to_le32(LITE_WIRE_MAGIC);
	pd->version = LITE_WIRE_VERSION;
	pd->rx_depth = cpu_to_le16(LITE_RX_DEPTH);
}

static int lite_conn_check_pdata(const void *data, u8 len)
{
	const struct lite_cm_pdata *pd = data;

	if (!pd || len < sizeof(*pd))
		return -EPROTO;
	if (le32_to_cpu(pd->magic) != LITE_WIRE_MAGIC ||
	    pd->version != LITE_WIRE_VERSION ||
	    le16_to_cpu(pd->rx_depth) != LITE_RX_DEPTH)
		return -EPROTO;
	return 0;
}

static void lite_conn_param(struct lite_conn *conn,
			    struct rdma_conn_param *param,
			    struct lite_cm_pdata *pd)
{
	const struct ib_device_attr *attrs = &conn->node->ibdev->dev->attrs;

	lite_conn_pdata(pd);
	memset(param, 0, sizeof(*param));
	param->private_data = pd;
	param->private_data_len = sizeof(*pd);
	param->responder_resources = min_t(u32, attrs->max_qp_rd_atom, 16);
	param->initiator_depth = min_t(u32, attrs->max_qp_init_rd_atom, 16);
	param->retry_count = 7;
	param->rnr_retry_count = 7;
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
	lite_conn_param(conn, &param, &pd);
	return rdma_connect_locked(id, &param);	/* in the handler */
}

static void lite_conn_established(struct lite_conn *conn,
				  struct rdma_cm_event *ev)
{
	unsigned long flags;
	int ret;

	if (!conn->active)
		return;
	ret = lite_conn_check_pdata(ev->param.conn.private_data,
				    ev->param.conn.private_data_len);
	if (ret) {
		lite_conn_fail(conn, ret);
		return;
	}
	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state == LITE_CONN_CONNECTING)
		conn->state = LITE_CONN_HANDSHAKE;
	spin_unlock_irqrestore(&conn->lock, flags);
	complete_all(&conn->cm_done);
}

/* rdma_cm events of a connection (never the listener). Always returns 0:
 * ids are destroyed by close_work, never by rdma_cm on our behalf.
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
		lite_conn_fail(conn, -ECONNREFUSED);
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

/*
 * lite_conn_accept - take a connect request from the listener
 *
 * Return: 0 if accepted; otherwise non-zero, and rdma_cm rejects the
 * request and destroys @id.
 */
int lite_conn_accept(struct lite_node *node, struct rdma_cm_id *id,
		     struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct lite_cm_pdata pd;
	struct lite_conn *conn;
	unsigned long flags;
	int ret;

	ret = lite_conn_check_pdata(ev->param.conn.private_data,
				    ev->param.conn.private_data_len);
	if (ret)
		return ret;
	conn = lite_conn_alloc(node, false);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	conn->cm_id = id;
	id->context = &conn->cm_kind;

	ret = lite_conn_create_qp(conn, id);
	if (ret)
		goto err;
	spin_lock_irqsave(&conn->lock, flags);
	conn->state = LITE_CONN_HANDSHAKE;
	spin_unlock_irqrestore(&conn->lock, flags);
	lite_conn_param(conn, &param, &pd);
	ret = rdma_accept(id, &param);
	if (ret)
		goto err;
	queue_delayed_work(node->close_wq, &conn->handshake_timer,
			   msecs_to_jiffies(LITE_HANDSHAKE_MS));
	return 0;

err:
	/* rdma_cm destroys @id when we return an error; we own the rest. */
	if (conn->has_qp) {
		rdma_destroy_qp(id);
		conn->has_qp = false;
	}
	conn->cm_id = NULL;
	lite_conn_close(conn);
	return ret;
}

/*
 * lite_conn_connect - connect to the node listening on @dst
 *
 * Return: a connection in LITE_CONN_HANDSHAKE state holding a reference
 * for the caller, or an ERR_PTR.
 */
struct lite_conn *lite_conn_connect(struct lite_node *node,
				    const struct lite_naddr *dst,
				    unsigned long timeout_ms)
{
	struct sockaddr_storage src = node->listen_sa, dsa;
	struct lite_conn *conn;
	struct rdma_cm_id *id;
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

	if (!wait_for_completion_timeout(&conn->cm_done,
					 msecs_to_jiffies(timeout_ms)))
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

/* Post @tx now; conn->lock held and a credit taken. */
static int lite_tx_post_locked(struct lite_conn *conn, struct lite_tx *tx)
{
	struct ib_device *dev = conn->node->ibdev->dev;
	struct lite_wire_hdr *h = (struct lite_wire_hdr *)tx->buf;
	struct ib_sge sge;
	struct ib_send_wr wr = {};
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

	kref_get(&conn->ref);	/* dropped by lite_tx_done(); never the last */
	conn->tx_inflight++;
	ret = ib_post_send(conn->cm_id->qp, &wr, NULL);
	if (ret) {
		conn->tx_inflight--;
		ib_dma_unmap_single(dev, tx->dma, tx->len, DMA_TO_DEVICE);
		kref_put(&conn->ref, lite_conn_release);
		return ret;
	}
	atomic64_inc(&conn->tx_msgs);
	atomic64_add(tx->len, &conn->tx_bytes);
	return 0;
}

static void lite_tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct lite_tx *tx = container_of(wc->wr_cqe, struct lite_tx, cqe);
	struct lite_conn *conn = tx->conn;
	unsigned long flags;

	ib_dma_unmap_single(conn->node->ibdev->dev, tx->dma, tx->len,
			    DMA_TO_DEVICE);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_info("lite%u: send failed: %s\n",
				conn->node->instance,
				ib_wc_status_msg(wc->status));
		lite_conn_close(conn);
	}
	spin_lock_irqsave(&conn->lock, flags);
	conn->tx_inflight--;
	spin_unlock_irqrestore(&conn->lock, flags);
	wake_up(&conn->tx_wq);
	kfree(tx);
	lite_conn_put(conn);
}

/* Post what the backlog can now afford; conn->lock held. */
static int lite_conn_flush_locked(struct lite_conn *conn)
{
	struct lite_tx *tx;
	int ret;

	while (!list_empty(&conn->backlog)) {
		tx = list_first_entry(&conn->backlog, struct lite_tx, entry);
		if (!lite_credits_take(&conn->credits, tx->credit_msg))
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

/* Credits returned by the peer. Return: 0 or -EPROTO (too many). */
int lite_conn_grant(struct lite_conn *conn, u16 n)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&conn->lock, flags);
	ret = lite_credits_grant(&conn->credits, n);
	if (!ret && conn->state != LITE_CONN_CLOSING)
		ret = lite_conn_flush_locked(conn);
	spin_unlock_irqrestore(&conn->lock, flags);
	if (ret)
		lite_conn_close(conn);
	return ret;
}

/*
 * lite_conn_send - send one message, now or when credits allow
 *
 * Messages leave in the order they were sent. A CREDIT message that finds
 * no credit is dropped: the credits ride on the next message instead.
 * Return: 0 if posted or queued, -ENOTCONN if the connection is closing.
 */
int lite_conn_send(struct lite_conn *conn, u8 type, bool reply, u32 req_id,
		   int status, const void *payload, u32 len)
{
	struct lite_tx *tx;
	unsigned long flags;
	size_t hdr;
	int ret = 0;

	if (len > LITE_MSG_MAX - sizeof(struct lite_wire_hdr))
		return -EMSGSIZE;
	tx = kmalloc(struct_size(tx, buf, sizeof(struct lite_wire_hdr) + len),
		     GFP_KERNEL);
	if (!tx)
		return -ENOMEM;
	hdr = lite_wire_put_hdr(tx->buf, type, reply,
				READ_ONCE(conn->node->self_id), 0, req_id,
				status, len);
	if (len)
		memcpy(tx->buf + hdr, payload, len);
	tx->len = hdr + len;
	tx->conn = conn;
	tx->cqe.done = lite_tx_done;
	tx->credit_msg = type == LITE_MSG_CREDIT;

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state == LITE_CONN_CLOSING ||
	    conn->state == LITE_CONN_CONNECTING) {
		ret = -ENOTCONN;
	} else if (tx->credit_msg) {
		/* Carries no content: may pass the backlog on the last credit. */
		if (lite_credits_take(&conn->credits, true)) {
			ret = lite_tx_post_locked(conn, tx);
			if (!ret)
				tx = NULL;
		}
	} else if (!list_empty(&conn->backlog) ||
		   !lite_credits_take(&conn->credits, false)) {
		list_add_tail(&tx->entry, &conn->backlog);
		conn->n_backlog++;
		tx = NULL;
	} else {
		ret = lite_tx_post_locked(conn, tx);
		if (!ret)
			tx = NULL;
	}
	spin_unlock_irqrestore(&conn->lock, flags);
	kfree(tx);
	if (ret && ret != -ENOTCONN)
		lite_conn_close(conn);
	return ret;
}

static bool lite_conn_sent(struct lite_conn *conn)
{
	unsigned long flags;
	bool done;

	spin_lock_irqsave(&conn->lock, flags);
	done = conn->state == LITE_CONN_CLOSING ||
	       (!conn->tx_inflight && list_empty(&conn->backlog));
	spin_unlock_irqrestore(&conn->lock, flags);
	return done;
}

/* Wait until everything sent so far was acknowledged by the peer's HCA. */
int lite_conn_wait_sent(struct lite_conn *conn, unsigned long timeout_ms)
{
	if (!wait_event_timeout(conn->tx_wq, lite_conn_sent(conn),
				msecs_to_jiffies(timeout_ms)))
		return -ETIMEDOUT;
	return 0;
}

/*
 * lite_conn_close - start tearing a connection down; idempotent
 *
 * Fails its pending requests at once; close_work does the rest. Never takes
 * node->lock, so it may be called with it held.
 */
void lite_conn_close(struct lite_conn *conn)
{
	struct lite_tx *tx, *tmp;
	unsigned long flags;
	LIST_HEAD(backlog);

	spin_lock_irqsave(&conn->lock, flags);
	if (conn->state == LITE_CONN_CLOSING) {
		spin_unlock_irqrestore(&conn->lock, flags);
		return;
	}
	conn->state = LITE_CONN_CLOSING;
	list_splice_init(&conn->backlog, &backlog);
	conn->n_backlog = 0;
	spin_unlock_irqrestore(&conn->lock, flags);
	wake_up(&conn->tx_wq);

	list_for_each_entry_safe(tx, tmp, &backlog, entry)
		kfree(tx);
	if (!completion_done(&conn->cm_done)) {
		conn->cm_status = -ECONNABORTED;
		complete_all(&conn->cm_done);
	}
	lite_calls_fail(conn->node, conn, -ECONNRESET);
	/* close_work inherits the existence reference. */
	queue_work(conn->node->close_wq, &conn->close_work);
}

static void lite_conn_close_work(struct work_struct *work)
{
	struct lite_conn *conn = container_of(work, struct lite_conn,
					      close_work);
	struct rdma_cm_id *id = conn->cm_id;

	cancel_delayed_work_sync(&conn->handshake_timer);
	if (id) {
		/* No handler runs meanwhile, so has_qp cannot change. */
		rdma_lock_handler(id);
		rdma_disconnect(id);
		if (conn->has_qp) {
			ib_drain_qp(id->qp);
			rdma_destroy_qp(id);
			conn->has_qp = false;
		}
		rdma_unlock_handler(id);
		rdma_destroy_id(id);
		conn->cm_id = NULL;
	}
	if (conn->cq)
		ib_free_cq(conn->cq);
	conn->cq = NULL;
	lite_cluster_conn_closed(conn);
	lite_conn_put(conn);
}
