/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite LMR layout and access checks: how an LMR's bytes map onto the
 * chunks its memory node allocated, and the checks every access passes
 * before a work request is posted. Verb-free; the caller provides locking.
 */
#ifndef LITE_CORE_LMR_H
#define LITE_CORE_LMR_H

#include <linux/types.h>

/* Access rights (match LITE_PERM_* in the uapi). */
#define LITE_LMR_READ		(1U << 0)
#define LITE_LMR_WRITE		(1U << 1)
#define LITE_LMR_ATOMIC		(1U << 2)
#define LITE_LMR_PERMS		(LITE_LMR_READ | LITE_LMR_WRITE | LITE_LMR_ATOMIC)

/* One physically contiguous, DMA-mapped piece of an LMR. */
struct lite_chunk {
	u64 addr;		/* address on the memory node under @rkey */
	u64 start;		/* offset of its first byte in the LMR */
	u32 len;
	u32 rkey;		/* the memory node's key for it */
};

/* The part of one access that falls into one chunk. */
struct lite_seg {
	u64 addr;		/* remote address under @rkey */
	u64 off;		/* offset into the caller's buffer */
	u32 len;
	u32 rkey;		/* its chunk's key */
};

struct lite_layout {
	u64 size;
	u32 n_chunks;
	const struct lite_chunk *chunks;	/* sorted by start */
};

int lite_layout_check(const struct lite_layout *l);
int lite_layout_fit(struct lite_layout *l, struct lite_chunk *chunks, u64 size);
int lite_lmr_check(u64 size, u32 held, u32 need, u64 off, u64 len);
int lite_lmr_segments(const struct lite_layout *l, u64 off, u64 len,
		      struct lite_seg *segs, u32 max_segs, u64 *done);
u32 lite_lmr_chunk_index(const struct lite_layout *l, u64 off);

#endif /* LITE_CORE_LMR_H */
