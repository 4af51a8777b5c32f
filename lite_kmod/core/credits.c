// SPDX-License-Identifier: GPL-2.0
/* lite credits: see credits.h for the scheme. */
#include <linux/types.h>
#include <linux/errno.h>

#include "credits.h"

/**
 * lite_credits_init - start a connection's credit accounting
 * @c: the credits
 * @depth: receive buffers each side posts (at least
 *	LITE_CREDITS_MIN_DEPTH, at most U16_MAX)
 *
 * We may send @depth messages and owe the peer nothing. The caller
 * provides locking, as for every lite_credits_*() function.
 */
void lite_credits_init(struct lite_credits *c, u32 depth)
{
	c->depth = depth;
	c->send = depth;
	c->unreturned = 0;
}

/**
 * lite_credits_take - spend a credit
 * @c: the credits
 * @credit_msg: the message is a CREDIT message
 *
 * Ordinary messages leave the last credit for a CREDIT message.
 *
 * Return: true if the message may be posted now (a credit was spent),
 * false if it must wait for credits.
 */
bool lite_credits_take(struct lite_credits *c, bool credit_msg)
{
	if (c->send < (credit_msg ? 1U : 2U))
		return false;
	c->send--;
	return true;
}

/**
 * lite_credits_avail - whether an ordinary message could take a credit now
 * @c: the credits
 *
 * Return: true if lite_credits_take() would succeed for an ordinary
 * message (two credits or more left).
 */
bool lite_credits_avail(const struct lite_credits *c)
{
	return c->send >= 2;
}

/**
 * lite_credits_grant - credits the peer returned
 * @c: the credits
 * @n: how many it returned
 *
 * Return: 0, or -EPROTO if it returns more than it could ever owe us (a
 * broken or hostile peer); @c is then unchanged.
 */
int lite_credits_grant(struct lite_credits *c, u32 n)
{
	if (n > c->depth || c->send + n > c->depth)
		return -EPROTO;
	c->send += n;
	return 0;
}

/**
 * lite_credits_reposted - we reposted a receive buffer
 * @c: the credits
 *
 * One more credit to hand back to the peer (never more than @c->depth).
 */
void lite_credits_reposted(struct lite_credits *c)
{
	if (c->unreturned < c->depth)
		c->unreturned++;
}

/**
 * lite_credits_collect - take the credits to piggyback on a message
 * @c: the credits
 *
 * Return: the credits owed to the peer; they count as returned from now.
 */
u16 lite_credits_collect(struct lite_credits *c)
{
	u16 n = c->unreturned;

	c->unreturned = 0;
	return n;
}

/**
 * lite_credits_update_due - whether to send an explicit CREDIT message
 * @c: the credits
 *
 * Return: true if at least half the depth (at least one) piled up
 * unreturned and a credit is left to send the CREDIT message with.
 */
bool lite_credits_update_due(const struct lite_credits *c)
{
	u32 threshold = c->depth / 2 ? c->depth / 2 : 1;

	return c->unreturned >= threshold && c->send >= 1;
}
