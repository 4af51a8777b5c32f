/* SPDX-License-Identifier: MIT */
/*
 * liblite C API. Every function returns 0 (or a count) on success and a
 * negative errno on failure, like liburing; none of them throws or sets
 * errno. LITE_strerror() names an error.
 *
 * A lite_t is an open /dev/lite attached to one local node instance; the
 * LMR handles it hands out belong to it alone and are released when it is
 * closed (memory allocated through it is freed on every node).
 */
#ifndef LITE_LITE_H
#define LITE_LITE_H

#include <stddef.h>
#include <stdint.h>

#include "linux/lite.h" // the uapi header, installed beside this one (lite/linux/lite.h)

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lite_session lite_t;	/* opaque */
typedef uint64_t lite_lmr_t;	/* an LMR handle; 0 is never valid */

/* Open /dev/lite and attach to node instance @instance. */
int LITE_open(unsigned int instance, lite_t **out);
/* Attach to the only instance on this host (-EEXIST if several). */
int LITE_open_default(lite_t **out);
void LITE_close(lite_t *lite);
/* This node's id in the cluster. */
uint32_t LITE_node_id(const lite_t *lite);
/* The open /dev/lite, for io_uring (lite/async.h); owned by @lite. */
int LITE_fd(const lite_t *lite);

/* @size bytes on node @node (0: this node), zeroed. */
int LITE_alloc(lite_t *lite, uint64_t size, uint32_t node, lite_lmr_t *lmr);
/*
 * The same with LITE_LMR_* flags: LITE_LMR_NIC_ATOMIC makes LITE_fetch_add
 * and LITE_cmp_swap on it one-sided NIC atomics, and refuses LITE_lock and
 * LITE_barrier on it (-EOPNOTSUPP): see docs/uapi.md, "Atomic domains".
 */
int LITE_alloc_flags(lite_t *lite, uint64_t size, uint32_t node,
		     uint32_t flags, lite_lmr_t *lmr);
int LITE_free(lite_t *lite, lite_lmr_t lmr);

int LITE_read(lite_t *lite, lite_lmr_t lmr, uint64_t offset, void *buf,
	      uint64_t len);
int LITE_write(lite_t *lite, lite_lmr_t lmr, uint64_t offset,
	       const void *buf, uint64_t len);
/*
 * The same with LITE_RW_* flags: LITE_RW_COPY or LITE_RW_ZCOPY force the
 * copy or the pinned zero-copy path (by default the kernel picks by size).
 */
int LITE_read_flags(lite_t *lite, lite_lmr_t lmr, uint64_t offset, void *buf,
		    uint64_t len, uint32_t flags);
int LITE_write_flags(lite_t *lite, lite_lmr_t lmr, uint64_t offset,
		     const void *buf, uint64_t len, uint32_t flags);

/* On one 8-byte aligned word; *@old receives its previous value. */
int LITE_fetch_add(lite_t *lite, lite_lmr_t lmr, uint64_t offset,
		   uint64_t add, uint64_t *old);
int LITE_cmp_swap(lite_t *lite, lite_lmr_t lmr, uint64_t offset,
		  uint64_t expected, uint64_t desired, uint64_t *old);

int LITE_memset(lite_t *lite, lite_lmr_t lmr, uint64_t offset, int value,
		uint64_t len);
int LITE_memcpy(lite_t *lite, lite_lmr_t dst, uint64_t dst_offset,
		lite_lmr_t src, uint64_t src_offset, uint64_t len);

/*
 * Write @len bytes of the regular file @fd from @file_offset into @lmr at
 * @lmr_offset, straight from the page cache (no copy, no registration).
 * Returns the bytes sent: fewer than @len if the file ended (or was
 * truncated) first, a signal arrived or a read failed after some bytes
 * (call again for the rest; 0 only at the end of the file); or -errno
 * (-ENODEV: not a regular file; -EBADF: not open for reading, or a bad
 * handle).
 */
int64_t LITE_sendfile(lite_t *lite, int fd, uint64_t file_offset,
		      uint64_t len, lite_lmr_t lmr, uint64_t lmr_offset);

/* Publish an LMR this lite_t allocated under @name (LITE_PERM_*). */
int LITE_share(lite_t *lite, lite_lmr_t lmr, const char *name,
	       uint32_t perms);
/* Map a published LMR with @perms (0: all granted); *@size its size. */
int LITE_map(lite_t *lite, const char *name, uint32_t perms,
	     lite_lmr_t *lmr, uint64_t *size);
/* Withdraw a name this lite_t published: every mapping of it fails. */
int LITE_revoke(lite_t *lite, const char *name);

/*
 * DSM regions: create (flags LITE_DSM_OPEN_CREATE, and _EXCL) or open a
 * named region of @size bytes (0 to open only); *fd is the region file to
 * mmap (MAP_SHARED), *size_out its size, *home the node keeping its
 * directory (either may be NULL). LITE_dsm_destroy() on the creating
 * region file destroys the region everywhere.
 */
int LITE_dsm_open(lite_t *lite, const char *name, uint64_t size,
		  uint32_t flags, int *fd, uint64_t *size_out, uint32_t *home);
int LITE_dsm_destroy(int region_fd);

/*
 * RPC and messages. A server registers a port (not 0) on its node and
 * takes calls and one-way messages for it with LITE_rpc_recv, from any
 * number of threads sharing this lite_t; it answers a call with
 * LITE_rpc_reply. Requests, replies and messages are at most LITE_RPC_MAX
 * bytes (-EMSGSIZE above).
 */
int LITE_rpc_register(lite_t *lite, uint32_t port);
int LITE_rpc_unregister(lite_t *lite, uint32_t port);
/*
 * Call @port on @node (0 = this node). *@reply_len gets the reply's length,
 * also on -EMSGSIZE (reply longer than @reply_cap). @timeout_ms 0 = the
 * default (LITE_RPC_TIMEOUT_MS). @reply_len may be NULL.
 */
int LITE_rpc_call(lite_t *lite, uint32_t node, uint32_t port,
		  const void *req, size_t req_len, void *reply,
		  size_t reply_cap, size_t *reply_len, uint32_t timeout_ms);

typedef struct lite_rpc_in {
	uint64_t token;		/* for LITE_rpc_reply; 0 for one-way messages */
	uint32_t src_node;	/* the sender's node id */
	int32_t reply_status;	/* LITE_rpc_reply_recv: 0 or the reply's
				 * -errno */
	uint64_t len;		/* bytes received (or needed, on -EMSGSIZE) */
} lite_rpc_in_t;

/*
 * The next call or message for @port, which this lite_t registered, into
 * @buf. On -EMSGSIZE @in->len is the size needed and the request stays
 * queued. @timeout_ms 0 = wait until a signal (-ETIMEDOUT when it expires).
 */
int LITE_rpc_recv(lite_t *lite, uint32_t port, void *buf, size_t cap,
		  uint32_t timeout_ms, lite_rpc_in_t *in);
/* Answer the call @token with @len bytes (at most the caller's capacity). */
int LITE_rpc_reply(lite_t *lite, uint64_t token, const void *buf, size_t len);
/*
 * LITE_rpc_reply(@token, @reply, @len) unless @token is 0, then
 * LITE_rpc_recv(@port, @buf, @cap, @timeout_ms, @in), in one system call.
 * Returns what the receive returns; @in->reply_status is the reply's
 * result (a failed reply does not stop the receive).
 */
int LITE_rpc_reply_recv(lite_t *lite, uint64_t token, const void *reply,
			size_t len, uint32_t port, void *buf, size_t cap,
			uint32_t timeout_ms, lite_rpc_in_t *in);
/*
 * One-way message to @port on @node (0 = this node). @timeout_ms bounds the
 * wait for ring space (0 = LITE_RPC_TIMEOUT_MS).
 */
int LITE_msg_send(lite_t *lite, uint32_t node, uint32_t port,
		  const void *buf, size_t len, uint32_t timeout_ms);

/*
 * A fair (FIFO) lock in the 8-byte aligned word at @offset of an LMR (zero
 * = free; the handle needs LITE_PERM_ATOMIC). The lock is held by this
 * lite_t (its open file) and released if it is closed. @timeout_ms 0 =
 * LITE_RPC_TIMEOUT_MS.
 */
int LITE_lock(lite_t *lite, lite_lmr_t lmr, uint64_t offset,
	      uint32_t timeout_ms);
/* -EAGAIN if the lock is held. */
int LITE_trylock(lite_t *lite, lite_lmr_t lmr, uint64_t offset);
int LITE_unlock(lite_t *lite, lite_lmr_t lmr, uint64_t offset);
/*
 * Wait until @count (1..65535) participants, on any nodes, arrived at the
 * barrier in the 8-byte aligned word at @offset of an LMR.
 */
int LITE_barrier(lite_t *lite, lite_lmr_t lmr, uint64_t offset,
		 uint32_t count, uint32_t timeout_ms);

const char *LITE_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* LITE_LITE_H */
