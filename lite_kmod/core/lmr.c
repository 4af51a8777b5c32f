// SPDX-License-Identifier: GPL-2.0
/* lite LMR layout and access checks; see lmr.h. */
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/overflow.h>

#include "lmr.h"

/*
 * The bytes @l's chunks cover, if they are non-empty, contiguous from
 * offset 0 and no chunk's DMA range wraps; else -EINVAL.
 */
static int lite_layout_cover(const struct lite_layout *l, u64 *cover)
{
	u64 next = 0, end;
	u32 i;

	if (!l->n_chunks || !l->chunks)
		return -EINVAL;
	for (i = 0; i < l->n_chunks; i++) {
		if (!l->chunks[i].len || l->chunks[i].start != next)
			return -EINVAL;
		if (check_add_overflow(l->chunks[i].addr,
				       (u64)l->chunks[i].len - 1, &end))
			return -EINVAL;
		next += l->chunks[i].len;
	}
	*cover = next;
	return 0;
}

/**
 * lite_layout_check - check a layout that arrived
 * @l: the layout
 *
 * A layout is valid if its chunks are non-empty, contiguous from offset 0
 * and cover exactly @l->size bytes, and no chunk's DMA range wraps.
 * Checked once when a layout arrives.
 *
 * Return: 0 if @l is valid, else -EINVAL.
 */
int lite_layout_check(const struct lite_layout *l)
{
	u64 cover;

	if (!l->size || lite_layout_cover(l, &cover))
		return -EINVAL;
	return cover == l->size ? 0 : -EINVAL;
}

/**
 * lite_layout_fit - cut a layout that arrived down to @size bytes
 * @l: the layout; its chunk array is @chunks
 * @chunks: the same array as @l->chunks, writable
 * @size: the bytes the LMR has, at least 1
 *
 * An LMR may live in a larger piece of memory than it has bytes (a leased
 * one, cut from a size class). Its chunks must be valid as for
 * lite_layout_check() and cover at least @size bytes; the chunks past
 * @size are dropped and the last one kept is shortened, so that @l covers
 * exactly @size bytes afterwards.
 *
 * Return: 0, or -EINVAL if the chunks are invalid or cover less (@l is
 * left as it was then).
 */
int lite_layout_fit(struct lite_layout *l, struct lite_chunk *chunks, u64 size)
{
	u64 cover;
	u32 last;

	if (!size || l->chunks != chunks || lite_layout_cover(l, &cover) ||
	    cover < size)
		return -EINVAL;
	last = lite_lmr_chunk_index(l, size - 1);
	chunks[last].len = size - chunks[last].start;
	l->n_chunks = last + 1;
	l->size = size;
	return 0;
}

/**
 * lite_lmr_check - may this access go ahead?
 * @size: LMR size
 * @held: permissions the handle holds
 * @need: permissions the access needs
 * @off: the first byte of the range
 * @len: the length of the range
 *
 * An empty access is valid (and does nothing).
 *
 * Return: 0; -EACCES without the permission; -EOVERFLOW if @off + @len
 * wraps; -ERANGE if the range leaves the LMR; -EINVAL for an atomic that
 * is not one aligned 8-byte word.
 */
int lite_lmr_check(u64 size, u32 held, u32 need, u64 off, u64 len)
{
	u64 end;

	if ((held & need) != need)
		return -EACCES;
	if (check_add_overflow(off, len, &end))
		return -EOVERFLOW;
	if (end > size)
		return -ERANGE;
	if ((need & LITE_LMR_ATOMIC) && (len != 8 || (off & 7)))
		return -EINVAL;
	return 0;
}

/**
 * lite_lmr_chunk_index - the chunk holding a byte, by binary search
 * @l: a checked layout (lite_layout_check() or lite_layout_fit())
 * @off: the byte's offset in the LMR; must be below @l->size
 *
 * Return: the index in @l->chunks of the chunk that holds byte @off.
 */
u32 lite_lmr_chunk_index(const struct lite_layout *l, u64 off)
{
	u32 lo = 0, hi = l->n_chunks - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (l->chunks[mid].start <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/**
 * lite_lmr_segments - split a checked access into per-chunk segments
 * @l: layout
 * @off: the start of the access (already passed lite_lmr_check())
 * @len: its length
 * @segs: output, up to @max_segs entries
 * @max_segs: room in @segs
 * @done: bytes of the access the returned segments cover
 *
 * Return: the number of segments written. If the access needs more than
 * @max_segs, *@done is less than @len: call again for the rest.
 */
int lite_lmr_segments(const struct lite_layout *l, u64 off, u64 len,
		      struct lite_seg *segs, u32 max_segs, u64 *done)
{
	u32 i = lite_lmr_chunk_index(l, off), n = 0;
	const struct lite_chunk *c;
	u64 in_chunk, take;

	*done = 0;
	while (*done < len && n < max_segs && i < l->n_chunks) {
		c = &l->chunks[i];
		in_chunk = off + *done - c->start;
		take = c->len - in_chunk;
		if (take > len - *done)
			take = len - *done;
		segs[n].addr = c->addr + in_chunk;
		segs[n].off = *done;
		segs[n].len = (u32)take;
		segs[n].rkey = c->rkey;
		n++;
		*done += take;
		i++;
	}
	return n;
}
