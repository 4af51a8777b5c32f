/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite credits: flow control for a connection's message channel.
 *
 * Each side posts @depth receive buffers. A sender holds one credit per
 * buffer the peer has free for it and spends one per message; the receiver
 * returns credits as it reposts buffers, piggybacked on any message it sends
 * or, when enough pile up, in an explicit CREDIT message. The last credit is
 * kept for CREDIT messages so the two sides can never both run dry.
 * Verb-free; the caller provides locking.
 */
#ifndef LITE_CORE_CREDITS_H
#define LITE_CORE_CREDITS_H

#include <linux/types.h>

/*
 * The depth the scheme needs: below 4 the threshold for a CREDIT message is
 * one credit, and the buffer a CREDIT message takes on the other side earns
 * one straight back, so two idle ends would trade CREDIT messages for ever.
 * At most U16_MAX: credits travel in a 16-bit header field.
 */
#define LITE_CREDITS_MIN_DEPTH	4

struct lite_credits {
	u32 depth;		/* receive buffers each side posts */
	u32 send;		/* messages we may still send */
	u32 unreturned;		/* reposted buffers not yet advertised */
};

void lite_credits_init(struct lite_credits *c, u32 depth);
bool lite_credits_take(struct lite_credits *c, bool credit_msg);
bool lite_credits_avail(const struct lite_credits *c);
int lite_credits_grant(struct lite_credits *c, u32 n);
void lite_credits_reposted(struct lite_credits *c);
u16 lite_credits_collect(struct lite_credits *c);
bool lite_credits_update_due(const struct lite_credits *c);

#endif /* LITE_CORE_CREDITS_H */
