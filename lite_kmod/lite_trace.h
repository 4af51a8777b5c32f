/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite's tracepoints (events/lite/ in tracefs): connection state changes,
 * control messages sent and received, RPC calls and replies, and errors.
 * docs/operating.md shows how to turn them on. trace.c defines them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM lite

#if !defined(_LITE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _LITE_TRACE_H

#include <linux/tracepoint.h>

#include "core/wire.h"

/* enum lite_conn_state (internal.h) */
#define lite_trace_conn_states				\
	EM(0, "connecting")				\
	EM(1, "handshake")				\
	EM(2, "ready")					\
	EMe(3, "closing")

/* enum lite_msg_type (core/wire.h) */
#define lite_trace_msg_types				\
	EM(LITE_MSG_HELLO, "hello")			\
	EM(LITE_MSG_AUTH, "auth")			\
	EM(LITE_MSG_MEMBER_ADD, "member_add")		\
	EM(LITE_MSG_LEAVE, "leave")			\
	EM(LITE_MSG_PING, "ping")			\
	EM(LITE_MSG_CREDIT, "credit")			\
	EM(LITE_MSG_MEMBER_DEL, "member_del")		\
	EM(LITE_MSG_LMR_ALLOC, "lmr_alloc")		\
	EM(LITE_MSG_LMR_CHUNKS, "lmr_chunks")		\
	EM(LITE_MSG_LMR_FREE, "lmr_free")		\
	EM(LITE_MSG_SHARE, "share")			\
	EM(LITE_MSG_LOOKUP, "lookup")			\
	EM(LITE_MSG_UNSHARE, "unshare")			\
	EM(LITE_MSG_INVALIDATE, "invalidate")		\
	EM(LITE_MSG_ATOMIC, "atomic")			\
	EM(LITE_MSG_RING, "ring")			\
	EM(LITE_MSG_RING_ACK, "ring_ack")		\
	EM(LITE_MSG_SYNC, "sync")			\
	EM(LITE_MSG_HEARTBEAT, "heartbeat")		\
	EM(LITE_MSG_LMR_CANCEL, "lmr_cancel")		\
	EM(LITE_MSG_DSM_OPEN, "dsm_open")		\
	EM(LITE_MSG_DSM_CLOSE, "dsm_close")		\
	EM(LITE_MSG_DSM_REQ, "dsm_req")			\
	EM(LITE_MSG_DSM_DONE, "dsm_done")		\
	EM(LITE_MSG_DSM_INVAL, "dsm_inval")		\
	EM(LITE_MSG_DSM_GONE, "dsm_gone")		\
	EM(LITE_MSG_LMR_GRANT, "lmr_grant")		\
	EMe(LITE_MSG_LMR_UNKEY, "lmr_unkey")

/* enum lite_err_kind (internal.h) */
#define lite_trace_err_kinds				\
	EM(0, "bad_msg")				\
	EM(1, "timeout")				\
	EM(2, "auth_failure")				\
	EMe(3, "member_lost")

/* The values, for user space (perf, trace-cmd) to print the names. */
#undef EM
#undef EMe
#define EM(a, b)	TRACE_DEFINE_ENUM(a);
#define EMe(a, b)	TRACE_DEFINE_ENUM(a);
lite_trace_msg_types

#undef EM
#undef EMe
#define EM(a, b)	{ a, b },
#define EMe(a, b)	{ a, b }

/* A connection of node @instance to @peer (0: not yet known) changed state. */
TRACE_EVENT(lite_conn_state,
	TP_PROTO(u32 instance, u16 peer, bool active, int from, int to),
	TP_ARGS(instance, peer, active, from, to),
	TP_STRUCT__entry(
		__field(u32, instance)
		__field(u16, peer)
		__field(bool, active)
		__field(int, from)
		__field(int, to)
	),
	TP_fast_assign(
		__entry->instance = instance;
		__entry->peer = peer;
		__entry->active = active;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("lite%u peer=%u %s %s -> %s", __entry->instance,
		  __entry->peer, __entry->active ? "active" : "passive",
		  __print_symbolic(__entry->from, lite_trace_conn_states),
		  __print_symbolic(__entry->to, lite_trace_conn_states))
);

DECLARE_EVENT_CLASS(lite_msg_class,
	TP_PROTO(u32 instance, u16 peer, u8 type, bool reply, u32 req_id,
		 u32 len),
	TP_ARGS(instance, peer, type, reply, req_id, len),
	TP_STRUCT__entry(
		__field(u32, instance)
		__field(u16, peer)
		__field(u8, type)
		__field(bool, reply)
		__field(u32, req_id)
		__field(u32, len)
	),
	TP_fast_assign(
		__entry->instance = instance;
		__entry->peer = peer;
		__entry->type = type;
		__entry->reply = reply;
		__entry->req_id = req_id;
		__entry->len = len;
	),
	TP_printk("lite%u peer=%u type=%s%s req_id=%u len=%u",
		  __entry->instance, __entry->peer,
		  __print_symbolic(__entry->type, lite_trace_msg_types),
		  __entry->reply ? " reply" : "", __entry->req_id,
		  __entry->len)
);

/* A control message was posted to @peer; @len counts the header. */
DEFINE_EVENT(lite_msg_class, lite_msg_send,
	TP_PROTO(u32 instance, u16 peer, u8 type, bool reply, u32 req_id,
		 u32 len),
	TP_ARGS(instance, peer, type, reply, req_id, len)
);

/*
 * A control message arrived from @peer (its id as the message gives it;
 * checked against the connection's once READY); the handler's row may
 * still refuse it (then lite_error bad_msg follows).
 */
DEFINE_EVENT(lite_msg_class, lite_msg_recv,
	TP_PROTO(u32 instance, u16 peer, u8 type, bool reply, u32 req_id,
		 u32 len),
	TP_ARGS(instance, peer, type, reply, req_id, len)
);

DECLARE_EVENT_CLASS(lite_call_class,
	TP_PROTO(u32 instance, u16 peer, u32 port, u32 call_id, u32 len),
	TP_ARGS(instance, peer, port, call_id, len),
	TP_STRUCT__entry(
		__field(u32, instance)
		__field(u16, peer)
		__field(u32, port)
		__field(u32, call_id)
		__field(u32, len)
	),
	TP_fast_assign(
		__entry->instance = instance;
		__entry->peer = peer;
		__entry->port = port;
		__entry->call_id = call_id;
		__entry->len = len;
	),
	TP_printk("lite%u peer=%u port=%u call_id=%u len=%u",
		  __entry->instance, __entry->peer, __entry->port,
		  __entry->call_id, __entry->len)
);

/* Call @call_id's request for @port on @peer was posted (sync or io_uring). */
DEFINE_EVENT(lite_call_class, lite_rpc_call,
	TP_PROTO(u32 instance, u16 peer, u32 port, u32 call_id, u32 len),
	TP_ARGS(instance, peer, port, call_id, len)
);

/* A request (or, with call_id 0, a one-way message) for @port arrived. */
DEFINE_EVENT(lite_call_class, lite_rpc_request,
	TP_PROTO(u32 instance, u16 peer, u32 port, u32 call_id, u32 len),
	TP_ARGS(instance, peer, port, call_id, len)
);

DECLARE_EVENT_CLASS(lite_reply_class,
	TP_PROTO(u32 instance, u16 peer, u32 call_id, int status, u32 len),
	TP_ARGS(instance, peer, call_id, status, len),
	TP_STRUCT__entry(
		__field(u32, instance)
		__field(u16, peer)
		__field(u32, call_id)
		__field(int, status)
		__field(u32, len)
	),
	TP_fast_assign(
		__entry->instance = instance;
		__entry->peer = peer;
		__entry->call_id = call_id;
		__entry->status = status;
		__entry->len = len;
	),
	TP_printk("lite%u peer=%u call_id=%u status=%d len=%u",
		  __entry->instance, __entry->peer, __entry->call_id,
		  __entry->status, __entry->len)
);

/*
 * A server's answer to call @call_id of @peer (status 0 or -errno) was
 * posted. A caller whose call failed otherwise (timeout: lite_error;
 * connection lost: lite_conn_state) gets no lite_rpc_done.
 */
DEFINE_EVENT(lite_reply_class, lite_rpc_reply,
	TP_PROTO(u32 instance, u16 peer, u32 call_id, int status, u32 len),
	TP_ARGS(instance, peer, call_id, status, len)
);

/* Call @call_id's reply from @peer landed (status 0 or -errno). */
DEFINE_EVENT(lite_reply_class, lite_rpc_done,
	TP_PROTO(u32 instance, u16 peer, u32 call_id, int status, u32 len),
	TP_ARGS(instance, peer, call_id, status, len)
);

/* Something counted in the node's error counters (lite_count_error()). */
TRACE_EVENT(lite_error,
	TP_PROTO(u32 instance, u16 peer, int kind, int err),
	TP_ARGS(instance, peer, kind, err),
	TP_STRUCT__entry(
		__field(u32, instance)
		__field(u16, peer)
		__field(int, kind)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->instance = instance;
		__entry->peer = peer;
		__entry->kind = kind;
		__entry->err = err;
	),
	TP_printk("lite%u peer=%u %s err=%d", __entry->instance,
		  __entry->peer,
		  __print_symbolic(__entry->kind, lite_trace_err_kinds),
		  __entry->err)
);

#endif /* _LITE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE lite_trace
#include <trace/define_trace.h>
