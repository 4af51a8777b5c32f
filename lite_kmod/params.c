// SPDX-License-Identifier: GPL-2.0
/*
 * lite's general tunables, as module parameters: `modinfo lite` lists
 * them, /sys/module/lite/parameters/NAME shows them and root may change
 * them at run time (a new value holds for what starts afterwards; a value
 * out of range is refused with EINVAL). Each is read where it is used
 * with lite_tun(). Defaults are the measured ones (docs/operating.md).
 *
 * The tunables of one concern live with it: heartbeat_ms and dead_ms
 * (health.c), ack_timeout (conn.c), isolation (mr.c), lease_kb and
 * lease_idle_ms (lease.c), quota_mb (quota.c), raw_rdma (fault.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>

#include "internal.h"

struct lite_tunables lite_tunables __read_mostly = {
	.call_timeout_ms = 3000,
	.data_timeout_ms = 10000,
	.conn_wait_ms = 2000,
	.zcopy_min_kb = 256,
	.pin_cache_kb = 16384,
	.cq_mode = LITE_CQ_MODE_BEST,
	.rpc_held_max = 4096,
};

/* A parameter of lite_tunables taking @min..@max. */
#define LITE_TUNABLE(name, min, max, desc)				\
static int lite_set_##name(const char *val,				\
			   const struct kernel_param *kp)		\
{									\
	return param_set_uint_minmax(val, kp, min, max);		\
}									\
static const struct kernel_param_ops lite_ops_##name = {		\
	.set = lite_set_##name,						\
	.get = param_get_uint,						\
};									\
module_param_cb(name, &lite_ops_##name, &lite_tunables.name, 0644);	\
MODULE_PARM_DESC(name, desc)

LITE_TUNABLE(call_timeout_ms, 1000, LITE_MAX_TIMEOUT_MS,
	     "control requests (allocations, maps, locks, DSM messages) wait this long for their reply, ms (default 3000; 1000..60000; the same on every node)");
LITE_TUNABLE(data_timeout_ms, 9000, LITE_MAX_TIMEOUT_MS,
	     "one transfer step (RDMA op, RPC delivery) waits this long before the connection is given up, ms (default 10000; 9000..60000: above the RC retry budget of any ack_timeout)");
LITE_TUNABLE(conn_wait_ms, 0, LITE_MAX_TIMEOUT_MS,
	     "a new operation waits this long for a member that is reconnecting, ms (default 2000; 0..60000)");
LITE_TUNABLE(zcopy_min_kb, 4, 1U << 20,
	     "LITE_read/LITE_write from this size on pin the user pages instead of copying through a kernel buffer, KiB (default 256, measured; 4..1048576)");
LITE_TUNABLE(pin_cache_kb, 0, 1U << 20,
	     "LITE_read/LITE_write keep up to this much of each open file's private anonymous buffers pinned for reuse, KiB, and without CAP_IPC_LOCK at most half of RLIMIT_MEMLOCK (default 16384; 0 off; 0..1048576)");
LITE_TUNABLE(cq_mode, LITE_CQ_BUSY, LITE_CQ_MODE_MAX,
	     "completion mode of nodes brought up without one: 1 busy, 2 softirq, 3 workqueue, 4 adaptive, 5 poll (default 5, measured best: docs/benchmarks.md)");
LITE_TUNABLE(rpc_held_max, 1, LITE_HELD_MAX,
	     "calls one open file may hold, taken and not answered; one more RPC_RECV fails with EMFILE and leaves the call queued (default 4096; 1..65535, the node's table)");

MODULE_VERSION(LITE_VERSION);
