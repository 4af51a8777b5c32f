// SPDX-License-Identifier: GPL-2.0
/* lite lock and barrier words: see sync.h for the layout. */
#include <linux/types.h>

#include "sync.h"

u32 lite_word_high(u64 v)
{
	return (u32)(v >> 32);
}

u32 lite_word_low(u64 v)
{
	return (u32)v;
}

static u64 lite_word(u32 high, u32 low)
{
	return (u64)high << 32 | low;
}

/* Whether nobody holds the lock (the ticket served is the next one). */
bool lite_lock_free(u64 v)
{
	return lite_word_high(v) == lite_word_low(v);
}

/*
 * Take the next ticket. Return: the new word; *@ticket is ours, *@granted
 * whether it is served at once.
 */
u64 lite_lock_take(u64 v, u32 *ticket, bool *granted)
{
	*ticket = lite_word_high(v);
	*granted = lite_lock_free(v);
	return lite_word(*ticket + 1, lite_word_low(v));
}

/*
 * The holder is done: serve the next ticket. Return: the new word, zero
 * if nobody waits (*@idle); else *@served is the ticket now served.
 */
u64 lite_lock_serve_next(u64 v, u32 *served, bool *idle)
{
	*served = lite_word_low(v) + 1;
	*idle = *served == lite_word_high(v);
	return *idle ? 0 : lite_word(lite_word_high(v), *served);
}

/*
 * One participant of @count arrives. Return: the new word; *@gen is the
 * generation it arrived in, *@release whether it was the last one (the
 * word then starts the next generation with no arrivals).
 */
u64 lite_barrier_arrive(u64 v, u16 count, u32 *gen, bool *release)
{
	*gen = lite_word_high(v);
	/* In 64 bits: a word that says 2^32 - 1 arrivals is past @count too. */
	*release = (u64)lite_word_low(v) + 1 >= count;
	if (*release)
		return lite_word(*gen + 1, 0);
	return lite_word(*gen, lite_word_low(v) + 1);
}

/* A parked participant gives up: one arrival fewer. */
u64 lite_barrier_withdraw(u64 v)
{
	return lite_word(lite_word_high(v), lite_word_low(v) - 1);
}
