// SPDX-License-Identifier: GPL-2.0
/* lite lock and barrier words: see sync.h for the layout. */
#include <linux/types.h>

#include "sync.h"

/**
 * lite_word_high - the high half of a lock or barrier word
 * @v: the word
 *
 * Return: the next ticket of a lock word, the generation of a barrier
 * word.
 */
u32 lite_word_high(u64 v)
{
	return (u32)(v >> 32);
}

/**
 * lite_word_low - the low half of a lock or barrier word
 * @v: the word
 *
 * Return: the ticket being served of a lock word, the arrivals of a
 * barrier word.
 */
u32 lite_word_low(u64 v)
{
	return (u32)v;
}

static u64 lite_word(u32 high, u32 low)
{
	return (u64)high << 32 | low;
}

/**
 * lite_lock_free - whether nobody holds the lock
 * @v: the lock word
 *
 * Return: true if the ticket served is the next one.
 */
bool lite_lock_free(u64 v)
{
	return lite_word_high(v) == lite_word_low(v);
}

/**
 * lite_lock_take - take the next ticket
 * @v: the lock word
 * @ticket: set to the ticket that is ours
 * @granted: set to whether it is served at once
 *
 * Return: the new word.
 */
u64 lite_lock_take(u64 v, u32 *ticket, bool *granted)
{
	*ticket = lite_word_high(v);
	*granted = lite_lock_free(v);
	return lite_word(*ticket + 1, lite_word_low(v));
}

/**
 * lite_lock_serve_next - the holder is done: serve the next ticket
 * @v: the lock word
 * @served: set to the ticket now served
 * @idle: set to whether nobody waits
 *
 * Return: the new word, zero if nobody waits (*@idle); else *@served is
 * the ticket now served.
 */
u64 lite_lock_serve_next(u64 v, u32 *served, bool *idle)
{
	*served = lite_word_low(v) + 1;
	*idle = *served == lite_word_high(v);
	return *idle ? 0 : lite_word(lite_word_high(v), *served);
}

/**
 * lite_barrier_arrive - one participant of @count arrives
 * @v: the barrier word
 * @count: participants the barrier waits for
 * @gen: set to the generation it arrived in
 * @release: set to whether it was the last one
 *
 * Return: the new word; when *@release, it starts the next generation
 * with no arrivals.
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

/**
 * lite_barrier_withdraw - a parked participant gives up
 * @v: the barrier word
 *
 * Return: the new word, with one arrival fewer.
 */
u64 lite_barrier_withdraw(u64 v)
{
	return lite_word(lite_word_high(v), lite_word_low(v) - 1);
}
