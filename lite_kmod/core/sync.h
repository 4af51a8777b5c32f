/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite lock and barrier words: the arithmetic of the 8-byte LMR words that
 * sync.c keeps locks and barriers in. Verb-free and lock-free: the caller
 * applies the new value atomically (cmpxchg) and handles waiters.
 *
 * A lock word holds the next ticket (high half) and the ticket being
 * served (low half); it is zero when the lock is free and nobody waits.
 * A barrier word holds its generation (high half) and the arrivals of this
 * generation (low half). Halves wrap without carrying into each other.
 */
#ifndef LITE_CORE_SYNC_H
#define LITE_CORE_SYNC_H

#include <linux/types.h>

u32 lite_word_high(u64 v);
u32 lite_word_low(u64 v);
bool lite_lock_free(u64 v);
u64 lite_lock_take(u64 v, u32 *ticket, bool *granted);
u64 lite_lock_serve_next(u64 v, u32 *served, bool *idle);
u64 lite_barrier_arrive(u64 v, u16 count, u32 *gen, bool *release);
u64 lite_barrier_withdraw(u64 v);

#endif /* LITE_CORE_SYNC_H */
