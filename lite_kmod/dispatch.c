// SPDX-License-Identifier: GPL-2.0
/*
 * lite dispatch: the one table of message handlers and the one list of
 * connection hooks. A new message type is one row of lite_handlers[]; a
 * concern that keeps per-connection state adds one entry to
 * lite_conn_hooks[]. Nothing else routes messages or tears state down.
 */
#include "internal.h"
#include "lite_trace.h"

/* Where a request or one-way message is handled. */
enum lite_run {
	LITE_RUN_NONE,		/* no handler: refused (replies only) */
	LITE_RUN_CQ,		/* in the CQ handler itself, even in softirq:
				 * never sleeps */
	LITE_RUN_RX,		/* in receive order on the receive path
				 * (CQ handler of a workqueue CQ, else the
				 * connection's defer_work): may take mutexes,
				 * never waits for the network; a row with a
				 * fast handler: in no order, on cq_wq */
	LITE_RUN_ORDERED,	/* node->wq, one at a time in arrival order:
				 * may wait for the network */
	LITE_RUN_UNORDERED,	/* node->close_wq: may wait for other
				 * requests to finish */
};

/* When a message is accepted on a connection. */
#define LITE_WHEN_HANDSHAKE	BIT(0)	/* before the peer is authenticated */
#define LITE_WHEN_READY		BIT(1)	/* from an authenticated member */

struct lite_msg_handler {
	/* Handles a request or one-way message; replies go to their call. */
	void (*fn)(struct lite_conn *conn, const struct lite_msg *msg);
	/* Optional: runs in the CQ handler on receipt, before @fn is queued. */
	void (*receipt)(struct lite_conn *conn, const struct lite_msg *msg);
	u8 run;			/* enum lite_run of @fn */
	u8 when;		/* LITE_WHEN_* */
	bool reply_in_cq;	/* its replies complete in the CQ handler */
	/*
	 * Optional, LITE_RUN_RX rows: handles the request in the CQ handler
	 * if it can without sleeping (true); else (false) @fn runs on
	 * node->cq_wq, in no order against the connection's other messages.
	 */
	bool (*fast)(struct lite_conn *conn, const struct lite_msg *msg);
};

#define LITE_HS		LITE_WHEN_HANDSHAKE
#define LITE_RDY	LITE_WHEN_READY

static const struct lite_msg_handler lite_handlers[LITE_MSG_TYPE_END] = {
	/* Membership (cluster.c) */
	[LITE_MSG_HELLO]	= { lite_cluster_handle_hello, NULL,
				    LITE_RUN_ORDERED, LITE_HS },
	[LITE_MSG_AUTH]		= { lite_cluster_handle_auth, NULL,
				    LITE_RUN_ORDERED, LITE_HS },
	[LITE_MSG_MEMBER_ADD]	= { lite_cluster_handle_member_add, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_MEMBER_DEL]	= { lite_cluster_handle_member_del, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_LEAVE]	= { lite_cluster_handle_leave,
				    lite_cluster_leave_seen,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_PING]		= { lite_cluster_handle_ping, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_HEARTBEAT]	= { lite_cluster_handle_heartbeat, NULL,
				    LITE_RUN_CQ, LITE_HS | LITE_RDY },
	/* Credits only: lite_msg_received() takes them from every message;
	 * where it arrives, so a writer waiting for them wakes at once.
	 */
	[LITE_MSG_CREDIT]	= { NULL, NULL, LITE_RUN_CQ,
				    LITE_HS | LITE_RDY },
	/* The memory node's side of LMRs (export.c) */
	[LITE_MSG_LMR_ALLOC]	= { lite_export_handle_alloc, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_LMR_CHUNKS]	= { lite_export_handle_chunks, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_LMR_FREE]	= { lite_export_handle_free, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_LMR_GRANT]	= { lite_export_handle_grant, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_LMR_UNKEY]	= { lite_export_handle_unkey, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	/* After the LMR_ALLOC it cancels: in order too. */
	[LITE_MSG_LMR_CANCEL]	= { lite_export_handle_cancel, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_ATOMIC]	= { lite_export_atomic, NULL,
				    LITE_RUN_CQ, LITE_RDY, true },
	/* Names (share.c); INVALIDATE waits for accesses in progress, so
	 * it must neither queue behind nor hold up the ordered queue.
	 */
	[LITE_MSG_SHARE]	= { lite_share_handle_share, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_LOOKUP]	= { lite_share_handle_lookup, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_UNSHARE]	= { lite_share_handle_unshare, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_INVALIDATE]	= { lite_share_handle_invalidate, NULL,
				    LITE_RUN_UNORDERED, LITE_RDY },
	/* RPC (rpc.c) and synchronisation (sync.c) */
	[LITE_MSG_RING]		= { lite_rpc_handle_ring, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_RING_ACK]	= { lite_rpc_ack, NULL, LITE_RUN_CQ, LITE_RDY },
	[LITE_MSG_SYNC]		= { lite_sync_handle, NULL, LITE_RUN_RX,
				    LITE_RDY },
	/* DSM (dsm.c: the users' side; dsm_home.c: the home's). A close
	 * counts in order after the OPEN before it; handing the pages back
	 * waits for the network, on node->close_wq. A request for a page no
	 * transaction holds starts its transaction in the CQ handler, and a
	 * grant (the REQ's reply) is carried out there: a read fault's REQ,
	 * grant and RDMA READ go out without a wake-up.
	 */
	[LITE_MSG_DSM_OPEN]	= { lite_dsm_handle_open, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_DSM_CLOSE]	= { lite_dsm_handle_close, NULL,
				    LITE_RUN_ORDERED, LITE_RDY },
	[LITE_MSG_DSM_REQ]	= { lite_dsm_handle_req, NULL, LITE_RUN_RX,
				    LITE_RDY, true, lite_dsm_handle_req_fast },
	[LITE_MSG_DSM_DONE]	= { lite_dsm_handle_done, NULL, LITE_RUN_RX,
				    LITE_RDY },
	[LITE_MSG_DSM_INVAL]	= { lite_dsm_handle_inval, NULL, LITE_RUN_RX,
				    LITE_RDY },
	[LITE_MSG_DSM_GONE]	= { lite_dsm_handle_gone, NULL, LITE_RUN_RX,
				    LITE_RDY },
};

/* lite_wire_parse() admits only types below LITE_MSG_TYPE_END. */
static const struct lite_msg_handler *lite_handler(const struct lite_msg *msg)
{
	return &lite_handlers[msg->type];
}

/* Whether @msg may be handled on @conn in its present state. */
static bool lite_msg_allowed(struct lite_conn *conn,
			     const struct lite_msg_handler *h)
{
	enum lite_conn_state state = lite_conn_state(conn);

	if (state == LITE_CONN_READY)
		return h->when & LITE_WHEN_READY;
	return state == LITE_CONN_HANDSHAKE && (h->when & LITE_WHEN_HANDSHAKE);
}

/**
 * lite_msg_parse - parse a received message into rx->msg
 * @rx: the receive buffer, with byte_len set
 *
 * lite_msg_received() acts on the verdict.
 * Return: whether it can be handled right in the CQ handler (softirq, a
 * thread polling the CQ with bottom halves off, or the busy poller under
 * RCU) rather than in process context; a fast row's request is tried
 * there first. The order of such messages against other control messages
 * does not matter: an atomic's requester holds its LMR access until the
 * reply; a DSM request for a page whose transaction has not ended queues
 * behind it at the home.
 */
bool lite_msg_parse(struct lite_rx *rx)
{
	const struct lite_msg_handler *h;

	rx->parse_err = lite_wire_parse(rx->buf, rx->byte_len, &rx->msg);
	if (rx->parse_err)
		return false;
	h = lite_handler(&rx->msg);
	if (rx->msg.reply)
		return h->reply_in_cq;
	return h->run == LITE_RUN_CQ || h->fast;	/* fast: tried there */
}

/* Queue a request for process context; the work holds a reference. */
static void lite_msg_queue(struct lite_rx *rx, const struct lite_msg_handler *h)
{
	struct lite_conn *conn = rx->conn;
	struct lite_node *node = conn->node;
	struct workqueue_struct *wq = node->wq;

	if (h->run == LITE_RUN_UNORDERED)
		wq = node->close_wq;
	else if (h->run == LITE_RUN_RX)
		wq = node->cq_wq;	/* a fast row's, declined */
	lite_conn_get(conn);
	queue_work(wq, &rx->work);
}

/**
 * lite_msg_received - check a received, parsed message and dispatch it
 * @rx: the receive buffer; given back to the QP when handled
 *
 * Credits are taken from every message; replies go to the call waiting for
 * them; requests and one-way messages go to their handler, in the context
 * its row names. A malformed message, a peer that changes its id, or a
 * message not allowed in the connection's state closes the connection.
 */
void lite_msg_received(struct lite_rx *rx)
{
	struct lite_conn *conn = rx->conn;
	struct lite_node *node = conn->node;
	struct lite_msg *msg = &rx->msg;
	const struct lite_msg_handler *h;
	bool bad;

	if (rx->parse_err)
		goto bad_msg;
	if (msg->credits && lite_conn_grant(conn, msg->credits))
		goto bad_msg;
	if (lite_fault_drop_rx(node, msg)) {
		lite_conn_repost(rx);
		return;
	}
	atomic64_inc(&conn->rx_msgs);
	atomic64_add(rx->byte_len, &conn->rx_bytes);
	/*
	 * A sign of life, except a credit return: the receive path sends
	 * those on its own (one per half ring of our heartbeats), also from a
	 * node whose heartbeats stopped.
	 */
	if (msg->type != LITE_MSG_CREDIT)
		lite_cluster_heard(conn);

	/* Once authenticated, a peer must keep using its own id. */
	spin_lock_bh(&conn->lock);
	bad = conn->state == LITE_CONN_READY && msg->src != conn->peer_id;
	spin_unlock_bh(&conn->lock);
	if (bad)
		goto bad_msg;
	/* The sender's id as it claims it: checked once READY. */
	trace_lite_msg_recv(node->instance, msg->src, msg->type, msg->reply,
			    msg->req_id, rx->byte_len);

	h = lite_handler(msg);
	if (msg->reply) {
		lite_call_complete(node, conn, msg);
		lite_conn_repost(rx);
		return;
	}
	/* Even on a closing connection: a LEAVE is a clean leave. */
	if (h->receipt && lite_conn_state(conn) != LITE_CONN_CONNECTING)
		h->receipt(conn, msg);
	if (lite_conn_state(conn) == LITE_CONN_CLOSING) {
		lite_conn_repost(rx);	/* nothing will answer it */
		return;
	}
	if (!lite_msg_allowed(conn, h) ||
	    (!h->fn && h->run != LITE_RUN_RX && h->run != LITE_RUN_CQ))
		goto bad_msg;
	if (h->fast) {
		if (h->fast(conn, msg)) {
			lite_conn_repost(rx);
			return;
		}
		lite_msg_queue(rx, h);	/* it may sleep: process context */
		return;
	}
	if (h->run == LITE_RUN_ORDERED || h->run == LITE_RUN_UNORDERED) {
		lite_msg_queue(rx, h);
		return;
	}
	if (h->fn)
		h->fn(conn, msg);
	lite_conn_repost(rx);
	return;

bad_msg:
	lite_count_error(node, conn->peer_id, LITE_ERR_BAD_MSG, -EBADMSG);
	pr_info_ratelimited("lite%u: dropping connection after malformed or unexpected message\n",
			    node->instance);
	lite_conn_close(conn);
}

/**
 * lite_msg_work - run a queued request or one-way message
 * @work: rx->work, on node->wq, node->close_wq or (a declined fast row)
 *	  node->cq_wq
 *
 * The connection may have closed meanwhile, or (for the handshake) become
 * READY: the row's conditions are checked again.
 */
void lite_msg_work(struct work_struct *work)
{
	struct lite_rx *rx = container_of(work, struct lite_rx, work);
	const struct lite_msg_handler *h = lite_handler(&rx->msg);
	struct lite_conn *conn = rx->conn;

	if (lite_msg_allowed(conn, h)) {
		h->fn(conn, &rx->msg);
	} else if (lite_conn_state(conn) != LITE_CONN_CLOSING) {
		lite_count_error(conn->node, conn->peer_id, LITE_ERR_BAD_MSG,
				 -EPROTO);
		lite_conn_close(conn);	/* the handshake again, say */
	}
	lite_conn_repost(rx);
	lite_conn_put(conn);
}

/*
 * Per-concern connection hooks, called in the order of the list for:
 *   LITE_HOOK_FAILED   the connection started closing (any context, no node
 *                      lock): fail what waits on it now
 *   LITE_HOOK_CLOSED   close_work, after its QP was drained and destroyed
 *                      (the peer can no longer reach our memory through it)
 *                      and the replies that had arrived were delivered
 *   LITE_HOOK_READY    an authenticated connection to a member was
 *                      installed (the first one, or after a reconnect);
 *                      node->lock held, must not sleep
 *   LITE_HOOK_RELEASE  the last reference is gone: free per-connection memory
 */
typedef void (*lite_conn_hook_fn)(struct lite_conn *conn);

static const lite_conn_hook_fn lite_conn_hooks[][LITE_HOOK_MAX] = {
	{ [LITE_HOOK_FAILED] = lite_rdma_conn_closed },		/* rdma.c */
	{ [LITE_HOOK_CLOSED] = lite_calls_conn_closed },	/* msg.c */
	{ [LITE_HOOK_FAILED] = lite_rpc_conn_failed,
	  [LITE_HOOK_CLOSED] = lite_rpc_conn_closed,
	  [LITE_HOOK_RELEASE] = lite_rpc_conn_release },	/* rpc.c */
	{ [LITE_HOOK_CLOSED] = lite_sync_conn_closed },		/* sync.c */
	{ [LITE_HOOK_CLOSED] = lite_exports_conn_closed,
	  [LITE_HOOK_READY] = lite_exports_conn_ready },	/* export.c */
	{ [LITE_HOOK_CLOSED] = lite_cluster_conn_closed },	/* cluster.c */
};

/**
 * lite_conn_hooks_run - tell every concern what happened to @conn
 * @conn: the connection
 * @ev: what happened (enum lite_conn_hook)
 *
 * Runs the hooks of @ev in list order, in the context the list above
 * lite_conn_hooks[] gives for @ev: LITE_HOOK_READY with node->lock held,
 * and must not sleep then.
 */
void lite_conn_hooks_run(struct lite_conn *conn, enum lite_conn_hook ev)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(lite_conn_hooks); i++)
		if (lite_conn_hooks[i][ev])
			lite_conn_hooks[i][ev](conn);
}
