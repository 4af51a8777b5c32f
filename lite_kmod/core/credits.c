// SPDX-License-Identifier: GPL-2.0
/* lite credits: see credits.h for the scheme. */
#include <linux/types.h>
#include <linux/errno.h>

#include "credits.h"

void lite_credits_init(struct lite_credits *c, u32 depth)
{
	c->depth = depth;
	c->send = depth;
	c->unreturned = 0;
}

/*
 * Spend a credit. Ordinary messages leave the last one for a CREDIT
 * message. Return: true if the message may be posted now.
 */
bool lite_credits_take(struct lite_credits *c, bool credit_msg)
{
	if (c->send < (credit_msg ? 1U : 2U))
		return false;
	c->send--;
	return true;
}

/* Whether an ordinary message could take a credit now. */
bool lite_credits_avail(const struct lite_credits *c)
{
	return c->send >= 2;
}

/* Credits the peer returned. Return: 0, or -EPROTO if it returns more
 * than it could ever owe us (a broken or hostile peer).
 */
int lite_credits_grant(struct lite_credits *c, u32 n)
{
	if (n > c->depth || c->send + n > c->depth)
		return -EPROTO;
	c->send += n;
	return 0;
}

/* We reposted a receive buffer: one more credit to hand back. */
void lite_credits_reposted(struct lite_credits *c)
{
	if (c->unreturned < c->depth)
		c->unreturned++;
}

/* Take the credits to piggyback on an outgoing message. */
u16 lite_credits_collect(struct lite_credits *c)
{
	u16 n = c->unreturned;

	c->unreturned = 0;
	return n;
}

/* Whether enough credits piled up to send an explicit CREDIT message. */
bool lite_credits_update_due(const struct lite_credits *c)
{
	u32 threshold = c->depth / 2 ? c->depth / 2 : 1;

	return c->unreturned >= threshold && c->send >= 1;
}
