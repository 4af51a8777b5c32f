/* SPDX-License-Identifier: MIT */
/*
 * liblite asynchronous operations, C: fill an io_uring SQE with a lite
 * command (IORING_OP_URING_CMD on an open /dev/lite, see LITE_fd()), for
 * use with liburing or any io_uring code. The ring must be set up with
 * IORING_SETUP_SQE128 (and IORING_SETUP_CQE32 for atomics and RPC, whose
 * value comes in cqe->big_cqe[0]). cqe->res is 0, the reply length for a
 * call, or -errno. Buffers must stay valid until the completion arrives.
 * lite/async.hpp wraps this in lite::Ring.
 */
#ifndef LITE_ASYNC_H
#define LITE_ASYNC_H

#include <stdint.h>
#include <string.h>

#include <linux/io_uring.h>
#include <linux/lite.h>

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

#ifdef __cplusplus
}
#endif

#endif /* LITE_ASYNC_H */
