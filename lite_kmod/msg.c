// SPDX-License-Identifier: GPL-2.0
/*
 * lite control calls: requests with ids the requester issued, replies
 * routed back to the call waiting for them, a timeout on every request,
 * and failure of what waits on a connection that closes. Received
 * messages are checked and dispatched in dispatch.c.
 */
#include <linux/slab.h>

#include "internal.h"

/* @call got its reply or failed: wake the waiter, or run its done_fn. */
static void lite_call_done(struct lite_call *call)
{
	if (call->done_fn)
		call->done_fn(call);	/* may free @call */
	else
		complete(&call->done);
}

/**
 * lite_call_complete - deliver a reply to the call waiting for it
 * @node: the node that sent the request
 * @conn: the connection the reply came on
 * @msg: the reply
 *
 * A reply nobody waits for (the call timed out) is dropped.
 */
void lite_call_complete(struct lite_node *node, struct lite_conn *conn,
			const struct lite_msg *msg)
{
	struct lite_call *call;

	xa_lock_bh(&node->calls);
	call = xa_load(&node->calls, msg->req_id);
	if (!call || call->conn != conn || call->type != msg->type) {
		xa_unlock_bh(&node->calls);
		return;		/* late reply to a call that timed out */
	}
	__xa_erase(&node->calls, msg->req_id);
	xa_unlock_bh(&node->calls);

	if (msg->status) {
		call->status = msg->status;
	} else if (msg->len > call->reply_cap) {
		call->status = -EMSGSIZE;
	} else {
		memcpy(call->reply, msg->payload, msg->len);
		call->reply_len = msg->len;
		call->status = call->on_reply ? call->on_reply(call, msg) : 0;
	}
	lite_call_done(call);
}

static int lite_call_send(struct lite_conn *conn, struct lite_call *call,
			  void (*done_fn)(struct lite_call *call), u8 type,
			  const void *payload, u32 len, void *reply,
			  u32 reply_cap)
{
	struct lite_node *node = conn->node;
	u32 id;
	int ret;

	init_completion(&call->done);
	call->done_fn = done_fn;
	call->conn = conn;
	call->type = type;
	call->status = 0;
	call->reply = reply;
	call->reply_cap = reply_cap;
	call->reply_len = 0;

	/* @req_id is set before anyone who takes the lock can see @call. */
	xa_lock_bh(&node->calls);
	ret = __xa_alloc_cyclic(&node->calls, &id, call, XA_LIMIT(1, U32_MAX),
				&node->next_req_id, GFP_KERNEL);
	if (ret >= 0)
		call->req_id = id;
	xa_unlock_bh(&node->calls);
	if (ret < 0)
		return ret;
	/*
	 * From here on an asynchronous @call may be completed and reused by
	 * its owner at any time: only @id names it.
	 */
	ret = lite_conn_send(conn, type, false, id, 0, payload, len);
	if (ret && xa_cmpxchg_bh(&node->calls, id, call, NULL, 0) != call) {
		/*
		 * Failed meanwhile: that failure is the one reported. @call
		 * may be gone already if it was asynchronous.
		 */
		if (done_fn)
			return 0;
		wait_for_completion(&call->done);
	}
	return ret;
}

/**
 * lite_call_start - send a request; its reply lands in @reply
 * @conn: the connection to send it on
 * @call: the call, usually on the caller's stack; set up here
 * @type: the request's message type
 * @payload: the request payload, copied
 * @len: its length
 * @reply: where the reply payload goes
 * @reply_cap: room in @reply
 *
 * The caller holds a reference on @conn until lite_call_wait() returns.
 * May sleep.
 *
 * Return: 0 (wait for the reply with lite_call_wait()), or the error of
 * allocating a request id or of lite_conn_send(); the call is then over.
 */
int lite_call_start(struct lite_conn *conn, struct lite_call *call, u8 type,
		    const void *payload, u32 len, void *reply, u32 reply_cap)
{
	return lite_call_send(conn, call, NULL, type, payload, len, reply,
			      reply_cap);
}

/**
 * lite_call_start_async - send a request without waiting for its reply
 * @conn: the connection to send it on
 * @call: the call; set up here
 * @done_fn: runs once its reply landed in @reply or the call failed
 *	(call->status), in any context; it may free @call
 * @type: the request's message type
 * @payload: the request payload, copied
 * @len: its length
 * @reply: where the reply payload goes
 * @reply_cap: room in @reply
 *
 * The caller keeps @call and a reference on @conn until @done_fn runs,
 * and ends a call that must not wait longer with lite_call_expire().
 * May sleep.
 *
 * Return: 0 (@done_fn will run), or an error (it will not).
 */
int lite_call_start_async(struct lite_conn *conn, struct lite_call *call,
			  void (*done_fn)(struct lite_call *call), u8 type,
			  const void *payload, u32 len, void *reply,
			  u32 reply_cap)
{
	return lite_call_send(conn, call, done_fn, type, payload, len, reply,
			      reply_cap);
}

/**
 * lite_call_expire - time an asynchronous call out
 * @call: a call started with lite_call_start_async()
 *
 * Unless its reply or failure came first, the call fails with -ETIMEDOUT
 * (counted in the node's timeouts) and its done_fn runs here, in the
 * caller's context; else it does nothing.
 */
void lite_call_expire(struct lite_call *call)
{
	struct lite_node *node = call->conn->node;

	if (xa_cmpxchg_bh(&node->calls, call->req_id, call, NULL, 0) != call)
		return;
	lite_count_error(node, call->conn->peer_id, LITE_ERR_TIMEOUT,
			 -ETIMEDOUT);
	call->status = -ETIMEDOUT;
	call->done_fn(call);
}

/**
 * lite_call_wait - wait for the reply of a call
 * @call: a call started with lite_call_start()
 * @deadline: in jiffies
 *
 * Waits as the node's completion mode says; a fatal signal ends the wait.
 * Once this returns the call is over and @call may go. Sleeps.
 *
 * Return: the reply's status (0 with the reply in call->reply and its
 * length in call->reply_len; -EMSGSIZE if it did not fit), -ETIMEDOUT,
 * -EINTR if the caller was killed, or -ECONNRESET if the connection closed
 * first.
 */
int lite_call_wait(struct lite_call *call, unsigned long deadline)
{
	struct lite_node *node = call->conn->node;
	long left;

	left = lite_wait_done(node, call->conn, &call->done,
			      max_t(long, (long)(deadline - jiffies), 1), true);
	if (left > 0)
		return call->status;
	if (xa_cmpxchg_bh(&node->calls, call->req_id, call, NULL, 0) == call) {
		if (left < 0)
			return -EINTR;
		lite_count_error(node, call->conn->peer_id, LITE_ERR_TIMEOUT,
				 -ETIMEDOUT);
		return -ETIMEDOUT;
	}
	/* A reply or a failure took it first: it completes now. */
	wait_for_completion(&call->done);
	return call->status;
}

/**
 * lite_call - send a request and wait for its reply
 * @conn: the connection; the caller holds a reference on it
 * @type: the request's message type
 * @payload: the request payload, copied
 * @len: its length
 * @reply: where the reply payload goes
 * @reply_cap: room in @reply
 * @reply_len: optional: set to the reply's length on success
 * @deadline: in jiffies
 *
 * lite_call_start() and lite_call_wait() with a call on the stack. Sleeps.
 *
 * Return: 0 or a negative errno, as lite_call_start() or lite_call_wait()
 * return it.
 */
int lite_call(struct lite_conn *conn, u8 type, const void *payload, u32 len,
	      void *reply, u32 reply_cap, u32 *reply_len,
	      unsigned long deadline)
{
	struct lite_call call = {};
	int ret;

	ret = lite_call_start(conn, &call, type, payload, len, reply,
			      reply_cap);
	if (ret)
		return ret;
	ret = lite_call_wait(&call, deadline);
	if (!ret && reply_len)
		*reply_len = call.reply_len;
	return ret;
}

/* Fail every call waiting on @conn with @err. */
static void lite_calls_fail(struct lite_node *node, struct lite_conn *conn,
			    int err)
{
	struct lite_call *call;
	unsigned long id;

	xa_lock_bh(&node->calls);
	xa_for_each(&node->calls, id, call) {
		if (call->conn != conn)
			continue;
		__xa_erase(&node->calls, id);
		call->status = err;
		lite_call_done(call);
	}
	xa_unlock_bh(&node->calls);
}

/**
 * lite_calls_conn_closed - fail the calls waiting on a closed connection
 * @conn: the connection, from its close_work (after the drain delivered
 *	the replies that had arrived)
 *
 * They fail with -ECONNRESET (LITE_HOOK_CLOSED).
 */
void lite_calls_conn_closed(struct lite_conn *conn)
{
	lite_calls_fail(conn->node, conn, -ECONNRESET);
}

/**
 * lite_reply - answer a request
 * @conn: the connection it came on
 * @req: the request; the reply carries its type and id
 * @status: 0, or a negative errno: a failed reply carries no payload
 * @payload: the reply payload, copied (ignored if @status)
 * @len: its length
 *
 * A reply that cannot be sent is dropped (the connection closes or is
 * closing). As lite_conn_send(), only ATOMIC replies may be sent from a
 * completion handler.
 */
void lite_reply(struct lite_conn *conn, const struct lite_msg *req,
		int status, const void *payload, u32 len)
{
	lite_conn_send(conn, req->type, true, req->req_id, status,
		       status ? NULL : payload, status ? 0 : len);
}
