// SPDX-License-Identifier: GPL-2.0
/*
 * lite's tracepoints (lite_trace.h), and the one place errors are counted:
 * every error counter goes up through lite_count_error(), which also fires
 * the lite_error event.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "internal.h"

#define CREATE_TRACE_POINTS
#include "lite_trace.h"

/* The numbers lite_trace.h prints by name. */
static_assert(LITE_CONN_CONNECTING == 0 && LITE_CONN_HANDSHAKE == 1 &&
	      LITE_CONN_READY == 2 && LITE_CONN_CLOSING == 3);
static_assert(LITE_MSG_TYPE_END == LITE_MSG_LMR_UNKEY + 1,
	      "a new message type needs its name in lite_trace.h");
static_assert(LITE_ERR_BAD_MSG == 0 && LITE_ERR_TIMEOUT == 1 &&
	      LITE_ERR_AUTH == 2 && LITE_ERR_LOST == 3);

/**
 * lite_count_error - count an error in the node's counters and trace it
 * @node: the node
 * @peer: the member it concerns (0: none, or not yet known)
 * @kind: which counter (bad_msgs, timeouts, auth_failures, losses)
 * @err: the error it ends in (a negative errno), or 0
 *
 * Any context.
 */
void lite_count_error(struct lite_node *node, u16 peer,
		      enum lite_err_kind kind, int err)
{
	switch (kind) {
	case LITE_ERR_BAD_MSG:
		atomic64_inc(&node->stats.bad_msgs);
		break;
	case LITE_ERR_TIMEOUT:
		atomic64_inc(&node->stats.timeouts);
		break;
	case LITE_ERR_AUTH:
		atomic64_inc(&node->stats.auth_failures);
		break;
	case LITE_ERR_LOST:
		atomic64_inc(&node->stats.losses);
		break;
	}
	trace_lite_error(node->instance, peer, kind, err);
}
