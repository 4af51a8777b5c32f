// SPDX-License-Identifier: GPL-2.0
/*
 * Files into LMRs without a copy or a registration (LITE_IOC_SENDFILE).
 *
 * The file's page-cache pages come through the kernel's splice machinery
 * (splice_direct_to_actor(): the task's internal pipe, filled by the file
 * system's ->splice_read, which takes references on page-cache pages
 * rather than copying them and reads them in as needed, with readahead).
 * Each page piece is taken out of the pipe with a reference of its own,
 * DMA-mapped and becomes an SGE of an RDMA WRITE to the LMR under the
 * global key; the pipe is free again at once.
 *
 * Two stages: pieces gather in one batch while the other batch's writes
 * are in flight, so reading the next pages (from disk, for a cold file)
 * overlaps the writes of the current ones. A full batch is posted
 * asynchronously (lite_rdma_submit()); then the older one is waited for
 * and its pages released. Each posted batch holds one lite_lmr_begin()
 * step until its last completion (ended there, not here, so revocation
 * never waits for a disk read).
 *
 * A page truncated away after it was read stays referenced until its
 * write completed: the LMR receives the file's data of some moment of the
 * send, never foreign memory. Truncation before the read shows as end of
 * file: a short count.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fsnotify.h>
#include <linux/pipe_fs_i.h>
#include <linux/splice.h>
#include <linux/slab.h>
#include <linux/mm.h>

#include "internal.h"

#define LITE_SF_BYTES	(256 * 1024)	/* a batch posts from here on */
#define LITE_SF_PAGES	64		/* page pieces held by a batch */
#define LITE_SF_WRS	32		/* WRs of a batch */
#define LITE_SF_SGES	128		/* SGEs of a batch */

struct lite_sf;

/* A page piece a batch holds: referenced and DMA-mapped. */
struct lite_sf_page {
	struct page *page;
	u64 dma;
	u32 len;			/* mapped bytes */
};

/* The writes of one stage; touched by the sending task only, but @op. */
struct lite_sf_batch {
	struct lite_rdma_op op;		/* done_fn: lite_sf_batch_done() */
	struct lite_sf *sf;
	u64 bytes;			/* in the batch */
	u64 wr_bytes;			/* in its last WR */
	u32 n_pages;
	u32 n_wrs;
	u32 n_sges;
	bool posted;			/* @op is in flight until op.done */
	bool full;			/* out of WRs or SGEs */
	struct lite_sf_page pages[LITE_SF_PAGES];
	union lite_wr wrs[LITE_SF_WRS];
	struct ib_sge sges[LITE_SF_SGES];
};

/* One LITE_IOC_SENDFILE in progress. */
struct lite_sf {
	struct lite_lmr *lmr;
	struct lite_conn *conn;		/* to the LMR's memory node, held */
	struct ib_device *dev;
	u64 lmr_pos;			/* where the next piece lands */
	u64 sent;			/* bytes of completed batches */
	int err;			/* the first failure */
	struct lite_sf_batch *cur;	/* gathering */
	struct lite_sf_batch batch[2];
};

/* Completion context: every WR of the batch completed (or never posts). */
static void lite_sf_batch_done(struct lite_rdma_op *op)
{
	struct lite_sf_batch *b = container_of(op, struct lite_sf_batch, op);

	lite_lmr_end(b->sf->lmr);
	complete(&op->done);
}

/* Release the batch's pages; count its bytes if its writes all landed. */
static void lite_sf_reap(struct lite_sf *sf, struct lite_sf_batch *b)
{
	int ret;
	u32 i;

	if (b->posted) {
		ret = lite_rdma_op_await(&b->op) ?: b->op.status;
		if (!ret)
			sf->sent += b->bytes;
		else if (!sf->err)
			sf->err = ret;
	}
	for (i = 0; i < b->n_pages; i++) {
		ib_dma_unmap_page(sf->dev, b->pages[i].dma, b->pages[i].len,
				  DMA_TO_DEVICE);
		put_page(b->pages[i].page);
	}
	b->posted = false;
	b->full = false;
	b->bytes = 0;
	b->n_pages = 0;
	b->n_wrs = 0;
	b->n_sges = 0;
}

/* Post the batch's WRs; they end its step of the LMR on completion. */
static int lite_sf_post(struct lite_sf *sf, struct lite_sf_batch *b)
{
	int ret;

	ret = lite_lmr_begin(sf->lmr);
	if (ret)
		return ret;
	lite_rdma_op_init(&b->op, sf->conn, lite_sf_batch_done);
	lite_rdma_submit(&b->op, b->wrs, b->n_wrs);
	b->posted = true;
	lite_rdma_op_release(&b->op);
	return 0;
}

/*
 * The gathering batch is full (or the send ends): post it, wait for the
 * other one, which then gathers. A batch is not posted once an earlier one
 * failed (the send ends with that error). Return: sf->err or the post's
 * failure.
 */
static int lite_sf_flush(struct lite_sf *sf)
{
	struct lite_sf_batch *b = sf->cur;
	struct lite_sf_batch *older = b == &sf->batch[0] ? &sf->batch[1] :
							    &sf->batch[0];
	int ret = 0;

	if (sf->err)
		ret = sf->err;	/* its pages go back below */
	else if (b->n_wrs)
		ret = lite_sf_post(sf, b);
	lite_sf_reap(sf, older);
	if (ret) {
		lite_sf_reap(sf, b);
		sf->err = sf->err ?: ret;
	}
	sf->cur = older;
	return sf->err;
}

static bool lite_sf_full(const struct lite_sf_batch *b)
{
	return b->full || b->bytes >= LITE_SF_BYTES ||
	       b->n_pages == LITE_SF_PAGES;
}

/*
 * Add the mapped piece at @dma to the batch's WRs, one remote segment at a
 * time: it extends the last SGE where both the local and the LMR's
 * addresses go on, becomes a new SGE of the last WR where only the LMR's
 * do, else starts a new WR.
 * Return: the bytes placed; fewer than @len if the batch ran out of WRs or
 * SGEs (it is full then).
 */
static u32 lite_sf_place(struct lite_sf *sf, struct lite_sf_batch *b,
			 u64 dma, u32 len)
{
	u32 lkey = sf->lmr->node->pd->local_dma_lkey, placed = 0;
	struct ib_sge *sge = NULL;
	union lite_wr *wr = NULL;
	struct lite_seg seg;
	bool follows;
	u64 step;

	while (placed < len) {
		lite_lmr_segments(&sf->lmr->layout, sf->lmr_pos, len - placed,
				  &seg, 1, &step);
		if (b->n_wrs) {
			wr = &b->wrs[b->n_wrs - 1];
			sge = &b->sges[b->n_sges - 1];
		}
		follows = wr && wr->rdma.remote_addr + b->wr_bytes == seg.addr &&
			  wr->rdma.rkey == seg.rkey;
		if (follows && sge->addr + sge->length == dma + placed) {
			sge->length += seg.len;
		} else if (follows && wr->wr.num_sge < sf->conn->max_sge &&
			   b->n_sges < LITE_SF_SGES) {
			wr->wr.num_sge++;
			sge = &b->sges[b->n_sges++];
			sge->addr = dma + placed;
			sge->length = seg.len;
			sge->lkey = lkey;
		} else if (b->n_wrs < LITE_SF_WRS && b->n_sges < LITE_SF_SGES) {
			wr = &b->wrs[b->n_wrs++];
			memset(wr, 0, sizeof(*wr));
			wr->wr.opcode = IB_WR_RDMA_WRITE;
			sge = &b->sges[b->n_sges++];
			sge->addr = dma + placed;
			sge->length = seg.len;
			sge->lkey = lkey;
			wr->wr.sg_list = sge;
			wr->wr.num_sge = 1;
			wr->rdma.remote_addr = seg.addr;
			wr->rdma.rkey = seg.rkey;
			b->wr_bytes = 0;
		} else {
			b->full = true;
			break;
		}
		b->wr_bytes += seg.len;
		b->bytes += seg.len;
		sf->lmr_pos += seg.len;
		placed += seg.len;
	}
	return placed;
}

/*
 * splice_actor: take @sd->len bytes of one pipe buffer (a page-cache page,
 * confirmed up to date by the splice core) into the gathering batch, with
 * a reference and a mapping of its own, flushing full batches.
 * Return: the bytes taken, or an error.
 */
static int lite_sf_pipe_actor(struct pipe_inode_info *pipe,
			      struct pipe_buffer *buf, struct splice_desc *sd)
{
	struct lite_sf *sf = sd->u.data;
	u32 off = buf->offset, left = sd->len, placed;
	struct lite_sf_batch *b;
	struct lite_sf_page *p;
	int ret;

	while (left) {
		if (lite_sf_full(sf->cur)) {
			ret = lite_sf_flush(sf);
			if (ret)
				return ret;
		}
		b = sf->cur;
		p = &b->pages[b->n_pages];
		p->dma = ib_dma_map_page(sf->dev, buf->page, off, left,
					 DMA_TO_DEVICE);
		if (ib_dma_mapping_error(sf->dev, p->dma)) {
			sf->err = sf->err ?: -ENOMEM;
			return -ENOMEM;
		}
		get_page(buf->page);
		p->page = buf->page;
		p->len = left;
		b->n_pages++;
		placed = lite_sf_place(sf, b, p->dma, left);
		off += placed;
		left -= placed;
	}
	return sd->len;
}

/* splice_direct_actor: empty the internal pipe into batches. */
static int lite_sf_direct_actor(struct pipe_inode_info *pipe,
				struct splice_desc *sd)
{
	struct splice_desc inner = {
		.total_len = sd->total_len,
		.flags = sd->flags,
		.pos = sd->pos,
		.u.data = sd->u.data,
	};

	return __splice_from_pipe(pipe, &inner, lite_sf_pipe_actor);
}

/* The file a send may read: regular, open for reading, spliceable. */
static int lite_sf_file_ok(struct file *file)
{
	if (!file || !(file->f_mode & FMODE_READ))
		return -EBADF;
	if (!S_ISREG(file_inode(file)->i_mode) || !file->f_op->splice_read ||
	    !(file->f_mode & FMODE_LSEEK))
		return -ENODEV;
	return 0;
}

/*
 * Splice rounds until @len bytes went, the file ended (a round of 0), the
 * file's read failed, or a signal (or task work) is pending: one round
 * stops short of what it was asked for whenever a read comes up short.
 * Then post what gathered and wait for both stages.
 */
static int lite_sf_run(struct lite_sf *sf, struct file *file, u64 pos,
		       u64 len)
{
	struct lite_sf_batch *last;
	ssize_t spliced = 0;
	u64 done = 0;

	while (done < len && !sf->err) {
		struct splice_desc sd = {
			.total_len = len - done,
			.pos = pos + done,
			.u.data = sf,
		};

		spliced = splice_direct_to_actor(file, &sd,
						 lite_sf_direct_actor);
		if (spliced <= 0)
			break;
		done += spliced;
		if (signal_pending(current))
			break;
	}
	last = sf->cur;
	lite_sf_flush(sf);
	lite_sf_reap(sf, last);
	if (sf->err)
		return sf->err;
	/* A read error after some bytes: the short count; the next call sees it. */
	return spliced < 0 && !done ? spliced : 0;
}

/*
 * The file's idle send state, or a new one; one send at a time uses it. Not
 * zeroed: a reaped batch is empty, and the rest is set per send.
 */
static struct lite_sf *lite_sf_get(struct lite_file *lf)
{
	struct lite_sf *sf = xchg(&lf->sf_spare, NULL);
	int i;

	if (sf)
		return sf;
	sf = kvmalloc(sizeof(*sf), GFP_KERNEL_ACCOUNT);
	if (!sf)
		return NULL;
	for (i = 0; i < 2; i++) {
		sf->batch[i].sf = sf;
		sf->batch[i].posted = false;
		sf->batch[i].full = false;
		sf->batch[i].bytes = 0;
		sf->batch[i].n_pages = 0;
		sf->batch[i].n_wrs = 0;
		sf->batch[i].n_sges = 0;
	}
	return sf;
}

/* Keep @sf for the file's next send, unless it already keeps one. */
static void lite_sf_put(struct lite_file *lf, struct lite_sf *sf)
{
	if (cmpxchg(&lf->sf_spare, NULL, sf))
		kvfree(sf);
}

/**
 * lite_sendfile_release - free the send state a closing file kept
 * @lf: the file, released: no send runs any more
 */
void lite_sendfile_release(struct lite_file *lf)
{
	kvfree(xchg(&lf->sf_spare, NULL));
}

/**
 * lite_sendfile - write a file range into an LMR from the page cache
 * @lf: the /dev/lite file the send comes through (keeps its state)
 * @lmr: the LMR; the write access to [@lmr_off, @lmr_off + @len) was
 *	 checked
 * @lmr_off: where in it the file's bytes go
 * @fd: the file's descriptor in the calling task
 * @pos: the offset in the file
 * @len: bytes
 * @sent: set to the bytes that landed: fewer than @len at end of file,
 *	  when a signal (or task work) is pending, or when the file's read
 *	  failed after some bytes (the next call returns the error)
 *
 * Sleeps; stops between pipe buffers when a signal arrives.
 *
 * Return: 0; -EBADF if @fd is not a file open for reading, -ENODEV if it
 * is not a regular file that can be spliced, -EOVERFLOW if @pos + @len
 * does not fit a file offset, -ENOTCONN, -EHOSTDOWN, -EKEYREVOKED,
 * -ETIMEDOUT, -ECONNRESET, -EIO or -ENOMEM as a transfer fails, or the
 * file's read error before the first byte (-ERESTARTSYS for a signal).
 */
int lite_sendfile(struct lite_file *lf, struct lite_lmr *lmr, u64 lmr_off,
		  int fd, u64 pos, u64 len, u64 *sent)
{
	struct lite_sf *sf;
	struct fd f;
	u64 end;
	int ret;

	*sent = 0;
	f = fdget(fd);
	ret = lite_sf_file_ok(f.file);
	if (ret)
		goto put_file;
	if (check_add_overflow(pos, len, &end) || end > (u64)MAX_LFS_FILESIZE) {
		ret = -EOVERFLOW;
		goto put_file;
	}
	if (!len)
		goto put_file;
	sf = lite_sf_get(lf);
	if (!sf) {
		ret = -ENOMEM;
		goto put_file;
	}
	sf->conn = lite_node_conn_wait(lmr->node, lmr->mem_node,
				       lite_tun_deadline(conn_wait_ms));
	if (!sf->conn) {
		ret = lite_lmr_conn_err(lmr);
		goto put_sf;
	}
	sf->lmr = lmr;
	sf->dev = lmr->node->ibdev->dev;
	sf->lmr_pos = lmr_off;
	sf->sent = 0;
	sf->err = 0;
	sf->cur = &sf->batch[0];
	ret = lite_sf_run(sf, f.file, pos, len);
	if (!ret)
		*sent = sf->sent;
	if (sf->sent)
		fsnotify_access(f.file);
	lite_conn_put(sf->conn);
put_sf:
	lite_sf_put(lf, sf);
put_file:
	fdput(f);
	return ret;
}
