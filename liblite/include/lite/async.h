/* SPDX-License-Identifier: MIT */
/*
 * liblite asynchronous operations, C: fill an io_uring SQE with a lite
 * command (IORING_OP_URING_CMD on an open /dev/lite, see LITE_fd()), for
 * use with liburing or any io_uring code. The ring must be set up with
 * IORING_SETUP_SQE128 (and IORING_SETUP_CQE32 for atomics and RPC, whose
 * value comes in cqe->big_cqe[0]). cqe->res is 0, the reply length for a
 * call, the request length for a receive, or -errno. Buffers must stay valid until the completion arrives.
 * lite/async.hpp wraps this in lite::Ring.
 */
#ifndef LITE_ASYNC_H
#define LITE_ASYNC_H

#include <stdint.h>
#include <string.h>

#include <linux/io_uring.h>
#include "linux/lite.h" // the uapi header, installed beside this one (lite/linux/lite.h)

#ifdef __cplusplus
extern "C" {
#endif

/* The SQE and its 80-byte command area, cleared, for @cmd_op on @fd. */
static inline void *LITE_prep_cmd(struct io_uring_sqe *sqe, int fd,
				  uint32_t cmd_op)
{
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	return sqe->cmd;
}

static inline void LITE_prep_rw(struct io_uring_sqe *sqe, int fd, int write,
				uint64_t lmr, uint64_t offset, void *buf,
				uint64_t len, uint32_t flags)
{
	struct lite_rw rw;

	memset(&rw, 0, sizeof(rw));
	rw.handle = lmr;
	rw.offset = offset;
	rw.len = len;
	rw.buf = (uint64_t)(uintptr_t)buf;
	rw.flags = flags;
	memcpy(LITE_prep_cmd(sqe, fd, write ? LITE_IOC_WRITE : LITE_IOC_READ),
	       &rw, sizeof(rw));
}

static inline void LITE_prep_read(struct io_uring_sqe *sqe, int fd,
				  uint64_t lmr, uint64_t offset, void *buf,
				  uint64_t len)
{
	LITE_prep_rw(sqe, fd, 0, lmr, offset, buf, len, 0);
}

static inline void LITE_prep_write(struct io_uring_sqe *sqe, int fd,
				   uint64_t lmr, uint64_t offset,
				   const void *buf, uint64_t len)
{
	LITE_prep_rw(sqe, fd, 1, lmr, offset, (void *)(uintptr_t)buf, len, 0);
}

/*
 * A read or write on a buffer registered with the ring
 * (io_uring_register_buffers(), index @buf_index; @buf and @len inside
 * it): the NIC moves the bytes to or from its pages directly, no copy.
 */
static inline void LITE_prep_rw_fixed(struct io_uring_sqe *sqe, int fd,
				      int write, uint64_t lmr,
				      uint64_t offset, const void *buf,
				      uint64_t len, uint16_t buf_index)
{
	LITE_prep_rw(sqe, fd, write, lmr, offset, (void *)(uintptr_t)buf, len,
		     0);
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = buf_index;
}

/* FETCH_ADD (@cmp_swap 0: adds @operand) or CMP_SWAP. */
static inline void LITE_prep_atomic(struct io_uring_sqe *sqe, int fd,
				    int cmp_swap, uint64_t lmr,
				    uint64_t offset, uint64_t operand,
				    uint64_t swap)
{
	struct lite_atomic at;

	memset(&at, 0, sizeof(at));
	at.handle = lmr;
	at.offset = offset;
	at.operand = operand;
	at.swap = swap;
	memcpy(LITE_prep_cmd(sqe, fd, cmp_swap ? LITE_IOC_CMP_SWAP :
					       LITE_IOC_FETCH_ADD),
	       &at, sizeof(at));
}

static inline void LITE_prep_call(struct io_uring_sqe *sqe, int fd,
				  uint32_t node, uint32_t port,
				  const void *req, uint64_t req_len,
				  void *reply, uint64_t reply_cap,
				  uint32_t timeout_ms)
{
	struct lite_rpc_call rc;

	memset(&rc, 0, sizeof(rc));
	rc.node_id = node;
	rc.port = port;
	rc.req_ptr = (uint64_t)(uintptr_t)req;
	rc.req_len = req_len;
	rc.reply_ptr = (uint64_t)(uintptr_t)reply;
	rc.reply_cap = reply_cap;
	rc.timeout_ms = timeout_ms;
	memcpy(LITE_prep_cmd(sqe, fd, LITE_IOC_RPC_CALL), &rc, sizeof(rc));
}

/*
 * A server's receive on @port (registered through this fd), into @buf:
 * cqe->res is the request's length (or -errno; -EMSGSIZE with the size
 * needed in big_cqe[0]); LITE_CQE_TOKEN(cqe->big_cqe[0]) the token to
 * reply to (0 for a one-way message), LITE_CQE_SRC() the sender's node.
 * With no request queued it waits in the kernel, without a thread, up to
 * @timeout_ms (0: until one comes, the port closes, or the ring does).
 */
static inline void LITE_prep_recv(struct io_uring_sqe *sqe, int fd,
				  uint32_t port, void *buf, uint64_t cap,
				  uint32_t timeout_ms)
{
	struct lite_rpc_recv r;

	memset(&r, 0, sizeof(r));
	r.port = port;
	r.buf_ptr = (uint64_t)(uintptr_t)buf;
	r.buf_cap = cap;
	r.timeout_ms = timeout_ms;
	memcpy(LITE_prep_cmd(sqe, fd, LITE_IOC_RPC_RECV), &r, sizeof(r));
}

/* Answer the call @token with @len bytes at @buf: cqe->res 0 or -errno. */
static inline void LITE_prep_reply(struct io_uring_sqe *sqe, int fd,
				   uint64_t token, const void *buf,
				   uint64_t len)
{
	struct lite_rpc_reply r;

	memset(&r, 0, sizeof(r));
	r.token = token;
	r.buf_ptr = (uint64_t)(uintptr_t)buf;
	r.len = len;
	memcpy(LITE_prep_cmd(sqe, fd, LITE_IOC_RPC_REPLY), &r, sizeof(r));
}

/*
 * @len bytes (at most INT_MAX) of the regular file @file_fd from
 * @file_offset into @lmr at @offset, from the page cache (LITE_sendfile()):
 * cqe->res is the bytes sent (also in big_cqe[0]) or -errno. It runs in
 * an io_uring worker, as it reads the file.
 */
static inline void LITE_prep_sendfile(struct io_uring_sqe *sqe, int fd,
				      uint64_t lmr, uint64_t offset,
				      int file_fd, uint64_t file_offset,
				      uint64_t len)
{
	struct lite_sendfile s;

	memset(&s, 0, sizeof(s));
	s.handle = lmr;
	s.lmr_offset = offset;
	s.file_offset = file_offset;
	s.len = len;
	s.fd = file_fd;
	memcpy(LITE_prep_cmd(sqe, fd, LITE_IOC_SENDFILE), &s, sizeof(s));
}

#ifdef __cplusplus
}
#endif

#endif /* LITE_ASYNC_H */
