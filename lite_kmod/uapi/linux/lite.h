/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * lite: the user-space interface of /dev/lite.
 *
 * Rules for every command structure:
 *  - fixed-width fields only, explicit padding, 8-byte aligned size;
 *  - "reserved" and padding fields must be zero (else -EINVAL);
 *  - unknown flag bits are rejected with -EINVAL;
 *  - pointers travel as __u64.
 * A change that breaks these layouts bumps LITE_ABI_VERSION.
 */
#ifndef _UAPI_LINUX_LITE_H
#define _UAPI_LINUX_LITE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define LITE_ABI_VERSION	4
#define LITE_DEVICE_PATH	"/dev/lite"

#define LITE_DEVNAME_MAX	64	/* RDMA device name, NUL-terminated */
#define LITE_SECRET_MIN		8	/* bytes */
#define LITE_SECRET_MAX		256	/* bytes */
#define LITE_MAX_NODES		128	/* node ids are 1..LITE_MAX_NODES */

/* An IPv4 or IPv6 endpoint. */
struct lite_addr {
	__u16 family;		/* AF_INET or AF_INET6 */
	__u16 port;		/* host byte order */
	__u32 reserved;
	__u8 addr[16];		/* IPv4 uses the first 4 bytes, network order */
};

/* LITE_IOC_GET_INFO: ABI version and the node instances of this kernel. */
struct lite_info {
	__u32 abi_version;	/* out */
	__u32 n_instances;	/* out: instances that exist */
	__u64 instances_ptr;	/* in: __u32 array for instance numbers, or 0 */
	__u32 instances_cap;	/* in: entries at instances_ptr */
	__u32 reserved[3];
};

/*
 * Completion delivery: how a node learns that work requests completed, and
 * how a thread waiting for one waits. docs/benchmarks.md has the measured
 * comparison; LITE_CQ_DEFAULT picks the best of it.
 */
#define LITE_CQ_DEFAULT		0	/* the module parameter cq_mode
					 * (by default the measured best) */
#define LITE_CQ_BUSY		1	/* a kernel thread per node polls all
					 * completion queues; waiters spin */
#define LITE_CQ_SOFTIRQ		2	/* interrupt-driven, handled in softirq;
					 * waiters sleep */
#define LITE_CQ_WORKQUEUE	3	/* interrupt-driven, handled in a
					 * workqueue (process context); waiters
					 * sleep */
#define LITE_CQ_ADAPTIVE	4	/* softirq delivery; waiters spin up to
					 * LITE_CQ_SPIN_US, then sleep */
#define LITE_CQ_POLL		5	/* interrupt-driven, handled in softirq;
					 * a waiter polls the completion queue
					 * itself for a bounded time that
					 * follows recent waits, then sleeps */
#define LITE_CQ_MODE_MAX	LITE_CQ_POLL
#define LITE_CQ_SPIN_US		250

/*
 * Isolation: what a node's peers may reach of its memory, enforced by its
 * NIC. docs/security.md has the threat model of each.
 */
#define LITE_ISOLATION_DEFAULT	0	/* the module's `isolation`
					 * parameter: GLOBAL unless set */
#define LITE_ISOLATION_GLOBAL	1	/* one key reaches all of the node's
					 * memory (LITE's design): nothing to
					 * register per allocation */
#define LITE_ISOLATION_LMR	2	/* each chunk of an LMR, RPC ring or
					 * reply buffer has its own key, made
					 * with fast registration and
					 * invalidated when it is freed */
#define LITE_ISOLATION_MAX	LITE_ISOLATION_LMR

/* LITE_IOC_NODE_UP flags */
#define LITE_UP_JOIN		(1U << 0)	/* join the cluster at @join */
#define LITE_UP_FLAGS_ALL	LITE_UP_JOIN

/*
 * LITE_IOC_NODE_UP: create a node instance on @dev_name/@port_num that
 * listens on @listen. Without LITE_UP_JOIN it becomes the manager of a new
 * cluster (node id 1); with it, it joins the manager at @join.
 * Needs CAP_NET_ADMIN.
 */
struct lite_node_up {
	char dev_name[LITE_DEVNAME_MAX];	/* in */
	__u32 port_num;				/* in: 0 = first port */
	__u32 flags;				/* in: LITE_UP_* */
	struct lite_addr listen;		/* in */
	struct lite_addr join;			/* in: with LITE_UP_JOIN */
	__u64 secret_ptr;			/* in: cluster secret */
	__u32 secret_len;			/* in: LITE_SECRET_MIN..MAX */
	__u32 timeout_ms;			/* in: join timeout, 0 = default */
	__u32 instance;				/* out */
	__u32 node_id;				/* out */
	__u32 cq_mode;				/* in: LITE_CQ_*, 0 = default */
	__u32 isolation;			/* in: LITE_ISOLATION_* */
	__u32 reserved[2];
};

/* LITE_IOC_NODE_DOWN: leave the cluster and destroy the instance. */
struct lite_node_down {
	__u32 instance;		/* in */
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 reserved[2];
};

/* Connection state of a member, as seen from the node asked. */
enum lite_peer_state {
	LITE_PEER_SELF = 1,
	LITE_PEER_CONNECTING = 2,
	LITE_PEER_CONNECTED = 3,
	LITE_PEER_DOWN = 4,
};

struct lite_member_info {
	__u32 node_id;
	__u32 state;		/* enum lite_peer_state */
	struct lite_addr addr;	/* the member's listen address */
	__u64 tx_msgs;
	__u64 rx_msgs;
	__u64 tx_bytes;
	__u64 rx_bytes;
	__u64 last_rtt_ns;	/* last ping round trip, 0 if none */
	__u32 credits;		/* send credits towards this peer */
	__u32 backlog;		/* messages waiting for credits */
};

struct lite_node_counters {
	__u64 joins;		/* members added */
	__u64 leaves;		/* members that left cleanly */
	__u64 losses;		/* members declared dead or dropped */
	__u64 auth_failures;	/* handshakes refused */
	__u64 bad_msgs;		/* malformed messages dropped */
	__u64 timeouts;		/* requests that timed out */
	__u64 mem_bytes;	/* LMR memory this node holds for the cluster */
	__u64 mem_lmrs;		/* LMRs this node holds */
};

/* DSM activity of a node (see LITE_IOC_DSM_OPEN). */
struct lite_dsm_counters {
	__u64 regions;		/* regions open on this node */
	__u64 pages;		/* page frames this node holds for them */
	__u64 read_faults;	/* faults that needed a read copy */
	__u64 write_faults;	/* faults that needed the writable copy */
	__u64 fetches;		/* pages read from another node */
	__u64 invalidations;	/* copies dropped or downgraded for another */
	__u64 home_txns;	/* transactions run as a region's home */
	__u64 sigbus;		/* faults refused: page lost, region gone */
	__u64 prot_changes;	/* pages unmapped on this node for the
				 * protocol (invalidations, downgrades,
				 * new bytes) */
	__u64 prot_ns;		/* wall time those unmaps took, ns */
};

/*
 * Allocation leases (see docs/uapi.md, "Leases"): memory that memory nodes
 * allocated ahead for this node's LITE_alloc, and that this node allocated
 * ahead for others.
 */
struct lite_lease_counters {
	__u64 hits;		/* allocations served from a lease's stock */
	__u64 misses;		/* allocations a lease could have served
				 * (up to 1 MiB, no flags) that asked the
				 * memory node */
	__u64 stock_lmrs;	/* LMRs in this node's leases, unclaimed */
	__u64 stock_bytes;	/* their memory (whole size classes) */
	__u64 granted_lmrs;	/* LMRs this node allocated for leases of
				 * any node, claimed or not (not in
				 * mem_lmrs) */
	__u64 granted_bytes;	/* their memory (not in mem_bytes) */
};

/* LITE_IOC_NODE_STATUS */
struct lite_node_status {
	__u32 instance;		/* in */
	__u32 members_cap;	/* in: entries at members_ptr */
	__u64 members_ptr;	/* in: struct lite_member_info array, or 0 */
	__u32 node_id;		/* out */
	__u32 manager_id;	/* out */
	__u32 n_members;	/* out: including this node */
	__u32 epoch;		/* out: membership epoch */
	char dev_name[LITE_DEVNAME_MAX];	/* out */
	__u32 port_num;		/* out */
	__u32 cq_mode;		/* out: LITE_CQ_* in effect (never DEFAULT) */
	struct lite_addr listen;		/* out */
	struct lite_node_counters counters;	/* out */
	__u32 async_inflight;	/* out: io_uring operations in flight */
	__u32 async_peak;	/* out: the most that were in flight at once */
	__u32 reconnects;	/* out: connections to members made again */
	__u32 flags;		/* out: LITE_STATUS_* */
	struct lite_dsm_counters dsm;		/* out */
	struct lite_lease_counters lease;	/* out */
};

#define LITE_STATUS_EXPELLED	(1U << 0)	/* the cluster dropped this
						 * node: bring it up again */
#define LITE_STATUS_NO_MANAGER	(1U << 1)	/* the manager is gone: no
						 * joins */
#define LITE_STATUS_ISOLATED	(1U << 2)	/* LITE_ISOLATION_LMR */

/* LITE_IOC_PING: one control-plane round trip to @node_id. */
struct lite_ping {
	__u32 instance;		/* in */
	__u32 node_id;		/* in */
	__u32 timeout_ms;	/* in: 0 = default */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 rtt_ns;		/* out */
	__u64 reserved[2];
};

/*
 * LMRs: memory on any node, named by handles that belong to the open file
 * that got them. A file must be attached to a local node instance first.
 */
#define LITE_PERM_READ		(1U << 0)
#define LITE_PERM_WRITE		(1U << 1)
#define LITE_PERM_ATOMIC	(1U << 2)
#define LITE_PERM_ALL		(LITE_PERM_READ | LITE_PERM_WRITE | LITE_PERM_ATOMIC)

#define LITE_NAME_MAX		64	/* share names, NUL-terminated */

/* LITE_IOC_ATTACH: bind this open file to node instance @instance. */
struct lite_attach {
	__u32 instance;		/* in */
	__u32 node_id;		/* out: the node's id */
	__u32 flags;		/* in: none defined */
	__u32 reserved;
};

/*
 * LITE_LMR_NIC_ATOMIC: the LMR's words belong to the NIC's atomics.
 * FETCH_ADD and CMP_SWAP on it are one-sided RDMA atomics, which the memory
 * node's CPU takes no part in; LOCK and BARRIER on it are refused
 * (EOPNOTSUPP), because the CPU's atomics are not atomic with the NIC's.
 * Without it, every atomic, lock and barrier on the LMR runs on the memory
 * node's CPU. Fixed for the LMR's life; mappings inherit it.
 */
#define LITE_LMR_NIC_ATOMIC	(1U << 0)
#define LITE_LMR_FLAGS_ALL	LITE_LMR_NIC_ATOMIC

/* LITE_IOC_LMR_ALLOC: @size bytes on node @node_id (0: this node). */
struct lite_lmr_alloc {
	__u64 size;		/* in: 1 .. LITE_LMR_MAX */
	__u32 node_id;		/* in */
	__u32 flags;		/* in: LITE_LMR_* */
	__u64 handle;		/* out */
	__u64 reserved[2];
};

#define LITE_LMR_MAX		(1ULL << 32)	/* 4 GiB */

/* LITE_IOC_LMR_FREE: free an LMR this file allocated, or drop a mapping. */
struct lite_lmr_free {
	__u64 handle;		/* in */
	__u32 flags;		/* in: none defined */
	__u32 reserved[3];
};

/*
 * LITE_IOC_READ, LITE_IOC_WRITE: between a user buffer and an LMR. Below
 * the module parameter zcopy_min_kb (256 KiB by default) the data is
 * copied through a kernel buffer, from there on the user pages are pinned
 * and the NIC moves them directly; the flags force one path (for
 * measurements).
 */
#define LITE_RW_COPY		(1U << 0)	/* always copy */
#define LITE_RW_ZCOPY		(1U << 1)	/* always pin (zero copy) */
/*
 * io_uring only (the ioctl returns -EINVAL): the submitting thread polls
 * for the completion, within the node's polling bound, and if it comes
 * the CQE is posted before the submission returns (no task work, no
 * wake-up). For an operation with nothing else in flight.
 */
#define LITE_RW_SPIN		(1U << 2)
#define LITE_RW_FLAGS_ALL	(LITE_RW_COPY | LITE_RW_ZCOPY | LITE_RW_SPIN)

struct lite_rw {
	__u64 handle;		/* in */
	__u64 offset;		/* in: into the LMR */
	__u64 len;		/* in: bytes */
	__u64 buf;		/* in: user buffer */
	__u32 flags;		/* in: LITE_RW_* (COPY or ZCOPY, not both) */
	__u32 reserved[3];
};

/* LITE_IOC_FETCH_ADD, LITE_IOC_CMP_SWAP: on one aligned 8-byte word. */
struct lite_atomic {
	__u64 handle;		/* in */
	__u64 offset;		/* in: 8-byte aligned */
	__u64 operand;		/* in: value to add, or value to compare */
	__u64 swap;		/* in: CMP_SWAP: new value; else 0 */
	__u64 result;		/* out: the word's value before */
	__u32 flags;		/* in: none defined */
	__u32 reserved[3];
};

/* LITE_IOC_MEMSET: fill a range with one byte. */
struct lite_memset {
	__u64 handle;		/* in */
	__u64 offset;		/* in */
	__u64 len;		/* in */
	__u32 value;		/* in: 0..255 */
	__u32 flags;		/* in: none defined */
	__u64 reserved[2];
};

/* LITE_IOC_MEMCPY: copy between two LMRs, possibly on different nodes. */
struct lite_memcpy {
	__u64 dst_handle;	/* in */
	__u64 dst_offset;	/* in */
	__u64 src_handle;	/* in */
	__u64 src_offset;	/* in */
	__u64 len;		/* in */
	__u32 flags;		/* in: none defined */
	__u32 reserved[3];
};

/*
 * LITE_IOC_SENDFILE: write @len bytes of the regular file @fd, from
 * @file_offset, into an LMR at @lmr_offset, straight from the file's page
 * cache (pages are read in as needed; no user copy, no registration). The
 * LMR is checked as for LITE_IOC_WRITE, for the whole of @len. On success
 * @sent says how many bytes landed: less than @len if the file ended first
 * (also when it was truncated during the send), a signal arrived, or the
 * file's read failed after some bytes; 0 only at the end of the file. Call
 * again for the rest. The bytes after @sent in the LMR are then as they
 * were or hold file data of the range, never anything else. The file
 * position is not used or changed.
 */
struct lite_sendfile {
	__u64 handle;		/* in: the LMR, with LITE_PERM_WRITE */
	__u64 lmr_offset;	/* in */
	__u64 file_offset;	/* in */
	__u64 len;		/* in: bytes */
	__u64 sent;		/* out: bytes written into the LMR */
	__s32 fd;		/* in: a regular file open for reading */
	__u32 flags;		/* in: none defined */
	__u64 reserved[2];
};

/*
 * LITE_IOC_SHARE: publish an LMR this file allocated under @name with
 * permissions @perms; LITE_IOC_MAP: get a handle for a published name with
 * @perms (at most what was granted); LITE_IOC_REVOKE: withdraw a name this
 * file published: every mapping of it fails from then on.
 */
struct lite_share {
	__u64 handle;			/* in */
	char name[LITE_NAME_MAX];	/* in */
	__u32 perms;			/* in: LITE_PERM_* */
	__u32 flags;			/* in: none defined */
	__u64 reserved[2];
};

struct lite_map {
	char name[LITE_NAME_MAX];	/* in */
	__u32 perms;			/* in: LITE_PERM_* wanted */
	__u32 flags;			/* in: none defined */
	__u64 handle;			/* out */
	__u64 size;			/* out: LMR size */
	__u32 node_id;			/* out: node holding the memory */
	__u32 reserved[3];
};

struct lite_revoke {
	char name[LITE_NAME_MAX];	/* in */
	__u32 flags;			/* in: none defined */
	__u32 reserved[3];
};

/*
 * RPC and messaging. A server registers a port on its node and takes calls
 * and one-way messages for it with LITE_IOC_RPC_RECV (from any number of
 * threads); a call is answered with LITE_IOC_RPC_REPLY. Requests and
 * messages travel by RDMA write-with-immediate into a ring the server's
 * node keeps for the caller's node, replies the same way into a buffer the
 * caller's node set aside for that call. Messages from one sender node to
 * one port are received in the order they were sent.
 */
#define LITE_RPC_MAX		(4U << 20)	/* request, reply, message bytes */
#define LITE_RPC_TIMEOUT_MS	10000		/* default call timeout */

/* LITE_IOC_RPC_REGISTER, LITE_IOC_RPC_UNREGISTER: serve @port (not 0). */
struct lite_rpc_port {
	__u32 port;		/* in */
	__u32 flags;		/* in: none defined */
	__u64 reserved[2];
};

/* LITE_IOC_RPC_CALL: call @port on @node_id and wait for the reply. */
struct lite_rpc_call {
	__u32 node_id;		/* in: 0 = this node */
	__u32 port;		/* in */
	__u64 req_ptr;		/* in: request bytes */
	__u64 req_len;		/* in: 0 .. LITE_RPC_MAX */
	__u64 reply_ptr;	/* in: reply buffer */
	__u64 reply_cap;	/* in: 0 .. LITE_RPC_MAX */
	__u64 reply_len;	/* out: reply bytes (also on -EMSGSIZE) */
	__u32 timeout_ms;	/* in: 0 = LITE_RPC_TIMEOUT_MS */
	__u32 flags;		/* in: none defined */
	__u64 reserved[2];
};

/*
 * LITE_IOC_RPC_RECV: take the next call or message for @port, which this
 * file registered. @token is non-zero for a call (pass it to RPC_REPLY)
 * and 0 for a one-way message. If @buf_cap is too small the ioctl fails
 * with -EMSGSIZE, sets @len and leaves the request queued.
 */
struct lite_rpc_recv {
	__u32 port;		/* in */
	__u32 timeout_ms;	/* in: 0 = wait until a signal */
	__u64 buf_ptr;		/* in */
	__u64 buf_cap;		/* in */
	__u64 len;		/* out */
	__u64 token;		/* out */
	__u32 src_node;		/* out: the sender's node id */
	__u32 flags;		/* in: none defined */
	__u64 reserved[2];
};

/* LITE_IOC_RPC_REPLY: answer the call @token with @len bytes. */
struct lite_rpc_reply {
	__u64 token;		/* in */
	__u64 buf_ptr;		/* in */
	__u64 len;		/* in: at most the caller's reply_cap */
	__u32 flags;		/* in: none defined */
	__u32 reserved[3];
};

/*
 * LITE_IOC_RPC_REPLY_RECV: answer a call and take the next one in one
 * system call. @reply is LITE_IOC_RPC_REPLY's (a zero token answers
 * nothing); @recv is LITE_IOC_RPC_RECV's. The reply goes first: if it
 * fails, its error is returned and nothing is received or written back.
 * Once it is sent the kernel clears @reply.token in user memory first, and
 * writes the struct back also when the receive then fails.
 */
struct lite_rpc_reply_recv {
	struct lite_rpc_reply reply;	/* in; token out: 0 once sent */
	struct lite_rpc_recv recv;	/* as for LITE_IOC_RPC_RECV */
};

/* LITE_IOC_MSG_SEND: one-way message to @port on @node_id. */
struct lite_msg_send {
	__u32 node_id;		/* in: 0 = this node */
	__u32 port;		/* in */
	__u64 buf_ptr;		/* in */
	__u64 len;		/* in: 0 .. LITE_RPC_MAX */
	__u32 timeout_ms;	/* in: for ring space; 0 = LITE_RPC_TIMEOUT_MS */
	__u32 flags;		/* in: none defined */
	__u64 reserved[2];
};

/*
 * LITE_IOC_LOCK, LITE_IOC_UNLOCK: a fair (FIFO) lock kept in the 8-byte
 * word at @offset of an LMR (zero = free; needs LITE_PERM_ATOMIC). Waiters
 * sleep on their own node until the memory node hands them the lock. A
 * lock is held by the open file that took it and released if it closes.
 */
#define LITE_LOCK_TRY		(1U << 0)	/* -EAGAIN instead of waiting */
#define LITE_LOCK_FLAGS_ALL	LITE_LOCK_TRY

struct lite_lock {
	__u64 handle;		/* in */
	__u64 offset;		/* in: 8-byte aligned */
	__u32 timeout_ms;	/* in: 0 = LITE_RPC_TIMEOUT_MS */
	__u32 flags;		/* in: LITE_LOCK_* (LOCK only) */
	__u64 reserved[2];
};

/*
 * LITE_IOC_BARRIER: wait until @count participants (on any nodes) arrived
 * at the barrier kept in the 8-byte word at @offset of an LMR.
 */
struct lite_barrier {
	__u64 handle;		/* in */
	__u64 offset;		/* in: 8-byte aligned */
	__u32 count;		/* in: 1 .. 65535 */
	__u32 timeout_ms;	/* in: 0 = LITE_RPC_TIMEOUT_MS */
	__u32 flags;		/* in: none defined */
	__u32 reserved[3];
};

/*
 * Asynchronous operations through io_uring (IORING_OP_URING_CMD on an open
 * /dev/lite; the ring must be set up with IORING_SETUP_SQE128, else
 * -EINVAL). The SQE's cmd_op is the ioctl number of the operation and its
 * 80-byte command area holds the ioctl's structure, with the same rules:
 *
 *   cmd_op               structure             cqe->res       cqe->big_cqe[0]
 *   LITE_IOC_READ        struct lite_rw        0              0
 *   LITE_IOC_WRITE       struct lite_rw        0              0
 *   LITE_IOC_FETCH_ADD   struct lite_atomic    0              the old value
 *   LITE_IOC_CMP_SWAP    struct lite_atomic    0              the old value
 *   LITE_IOC_RPC_CALL    struct lite_rpc_call  reply bytes    reply bytes
 *   LITE_IOC_RPC_RECV    struct lite_rpc_recv  request bytes  token | src << 32
 *   LITE_IOC_RPC_REPLY   struct lite_rpc_reply 0              0
 *   LITE_IOC_SENDFILE    struct lite_sendfile  bytes sent     0
 *
 * or -errno in cqe->res (a send of more than INT_MAX bytes: -EOVERFLOW;
 * it runs in an io_uring worker, as it reads the file). Atomics and receives need IORING_SETUP_CQE32
 * (the old value, the token travel in the big CQE), else -EINVAL. Output
 * fields of the structure are not written back: results arrive in the CQE
 * only (an RPC reply or request that does not fit fails with -EMSGSIZE
 * and its length in big_cqe[0]; see LITE_CQE_TOKEN, LITE_CQE_SRC). Other
 * commands fail with -ENOTTY. User buffers must stay valid until the
 * completion arrives. A call whose ring needs no waiting is sent at once
 * and completes when its reply comes, without a thread; a receive with no
 * request queued waits without a thread, up to its timeout (0: until a
 * request comes), and ends with -ECANCELED once its task exits or its ring
 * is closed. Every other operation completes by itself in bounded time
 * (calls by their timeout, transfers when the transport delivers or gives
 * up); io_uring cannot cancel one that was started, and after the ring is
 * closed or its task exited the kernel still finishes them in the
 * background.
 */
#define LITE_CQE_TOKEN(big)	((__u64)(__u32)(big))	/* RECV: the token */
#define LITE_CQE_SRC(big)	((__u32)((big) >> 32))	/* RECV: the sender */

/*
 * DSM regions: named, page-granular distributed shared memory, sequentially
 * consistent, used with ordinary loads and stores. LITE_IOC_DSM_OPEN on a
 * file attached to a node creates or opens a region and returns a new file
 * for it; mmap() that file (MAP_SHARED, offsets and lengths in whole pages
 * inside the region). Closing the region file (and unmapping) releases the
 * process's use; the region lives until its creator destroys it
 * (LITE_IOC_DSM_DESTROY on the creating region file) or its last user
 * anywhere leaves. An access to a page that cannot be served (its only
 * current copy died with a node, the region is gone) raises SIGBUS.
 */
#define LITE_DSM_OPEN_CREATE	(1U << 0)	/* create it if it does not exist */
#define LITE_DSM_OPEN_EXCL	(1U << 1)	/* with CREATE: fail if it exists */
#define LITE_DSM_OPEN_FLAGS	(LITE_DSM_OPEN_CREATE | LITE_DSM_OPEN_EXCL)
#define LITE_DSM_PAGE		4096ULL
#define LITE_DSM_MAX_SIZE	(64ULL << 30)

/* LITE_IOC_DSM_OPEN */
struct lite_dsm_open {
	char name[LITE_NAME_MAX];	/* in */
	__u64 size;		/* in: CREATE: bytes, a multiple of LITE_DSM_PAGE
				 * (0 to open only); out: the region's size */
	__u32 flags;		/* in: LITE_DSM_* */
	__s32 fd;		/* out: the region file (close-on-exec) */
	__u32 home;		/* out: the node that keeps its directory */
	__u32 reserved0;	/* must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

/* LITE_IOC_DSM_DESTROY: on the region file that created the region. */
struct lite_dsm_destroy {
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 reserved[3];	/* must be 0 */
};

#define LITE_IOC_MAGIC		0xE1
#define LITE_IOC_GET_INFO	_IOWR(LITE_IOC_MAGIC, 0x00, struct lite_info)
#define LITE_IOC_NODE_UP	_IOWR(LITE_IOC_MAGIC, 0x01, struct lite_node_up)
#define LITE_IOC_NODE_DOWN	_IOWR(LITE_IOC_MAGIC, 0x02, struct lite_node_down)
#define LITE_IOC_NODE_STATUS	_IOWR(LITE_IOC_MAGIC, 0x03, struct lite_node_status)
#define LITE_IOC_PING		_IOWR(LITE_IOC_MAGIC, 0x04, struct lite_ping)
#define LITE_IOC_ATTACH		_IOWR(LITE_IOC_MAGIC, 0x10, struct lite_attach)
#define LITE_IOC_LMR_ALLOC	_IOWR(LITE_IOC_MAGIC, 0x11, struct lite_lmr_alloc)
#define LITE_IOC_LMR_FREE	_IOWR(LITE_IOC_MAGIC, 0x12, struct lite_lmr_free)
#define LITE_IOC_READ		_IOWR(LITE_IOC_MAGIC, 0x13, struct lite_rw)
#define LITE_IOC_WRITE		_IOWR(LITE_IOC_MAGIC, 0x14, struct lite_rw)
#define LITE_IOC_FETCH_ADD	_IOWR(LITE_IOC_MAGIC, 0x15, struct lite_atomic)
#define LITE_IOC_CMP_SWAP	_IOWR(LITE_IOC_MAGIC, 0x16, struct lite_atomic)
#define LITE_IOC_MEMSET		_IOWR(LITE_IOC_MAGIC, 0x17, struct lite_memset)
#define LITE_IOC_MEMCPY		_IOWR(LITE_IOC_MAGIC, 0x18, struct lite_memcpy)
#define LITE_IOC_SHARE		_IOWR(LITE_IOC_MAGIC, 0x19, struct lite_share)
#define LITE_IOC_MAP		_IOWR(LITE_IOC_MAGIC, 0x1a, struct lite_map)
#define LITE_IOC_REVOKE		_IOWR(LITE_IOC_MAGIC, 0x1b, struct lite_revoke)
#define LITE_IOC_SENDFILE	_IOWR(LITE_IOC_MAGIC, 0x1c, struct lite_sendfile)
#define LITE_IOC_RPC_REGISTER	_IOWR(LITE_IOC_MAGIC, 0x20, struct lite_rpc_port)
#define LITE_IOC_RPC_UNREGISTER	_IOWR(LITE_IOC_MAGIC, 0x21, struct lite_rpc_port)
#define LITE_IOC_RPC_CALL	_IOWR(LITE_IOC_MAGIC, 0x22, struct lite_rpc_call)
#define LITE_IOC_RPC_RECV	_IOWR(LITE_IOC_MAGIC, 0x23, struct lite_rpc_recv)
#define LITE_IOC_RPC_REPLY	_IOWR(LITE_IOC_MAGIC, 0x24, struct lite_rpc_reply)
#define LITE_IOC_MSG_SEND	_IOWR(LITE_IOC_MAGIC, 0x25, struct lite_msg_send)
#define LITE_IOC_LOCK		_IOWR(LITE_IOC_MAGIC, 0x26, struct lite_lock)
#define LITE_IOC_UNLOCK		_IOWR(LITE_IOC_MAGIC, 0x27, struct lite_lock)
#define LITE_IOC_BARRIER	_IOWR(LITE_IOC_MAGIC, 0x28, struct lite_barrier)
#define LITE_IOC_RPC_REPLY_RECV	_IOWR(LITE_IOC_MAGIC, 0x29, \
				      struct lite_rpc_reply_recv)
#define LITE_IOC_DSM_OPEN	_IOWR(LITE_IOC_MAGIC, 0x30, struct lite_dsm_open)
#define LITE_IOC_DSM_DESTROY	_IOWR(LITE_IOC_MAGIC, 0x31, struct lite_dsm_destroy)

#endif /* _UAPI_LINUX_LITE_H */
