// SPDX-License-Identifier: GPL-2.0
/*
 * Per-user LMR quotas. Each node counts, per local user (the euid that
 * opened the /dev/lite file), the bytes of the LMRs allocated through it,
 * on whichever node the memory is (an LMR of up to LITE_LEASE_MAX counts as
 * its whole size class: lite_lease_charge()); quota_mb caps that count. A
 * charge is taken before the allocation and returned when the LMR is freed
 * (once the memory node freed it, or once its FREE is queued:
 * lite_lease_free_later() bounds what may wait), or when an allocation
 * fails - for one whose requester gave up, only once
 * the memory node answered (the memory is gone) or the connection closed.
 * Usage is counted even while the quota is off (0), so that switching it
 * on takes what users already hold into account.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "internal.h"

static unsigned int lite_quota_mb;
module_param_named(quota_mb, lite_quota_mb, uint, 0644);
MODULE_PARM_DESC(quota_mb,
		 "LMR memory (MiB) each local user may hold through allocations made from one node, on any node; 0 = unlimited (default)");

/* One user's usage on one node. */
struct lite_quota {
	struct hlist_node entry;	/* node->quota; node quota_lock */
	kuid_t uid;			/* immutable */
	u64 bytes;			/* node quota_lock */
};

/* @uid's entry; node->quota_lock held. */
static struct lite_quota *lite_quota_find(struct lite_node *node, kuid_t uid)
{
	struct lite_quota *q;

	lockdep_assert_held(&node->quota_lock);
	hash_for_each_possible(node->quota, q, entry, __kuid_val(uid))
		if (uid_eq(q->uid, uid))
			return q;
	return NULL;
}

/**
 * lite_quota_init - set up @node's quota table
 * @node: the node being created
 */
void lite_quota_init(struct lite_node *node)
{
	spin_lock_init(&node->quota_lock);
	hash_init(node->quota);
}

/**
 * lite_quota_charge - count @bytes more against @uid's quota on @node
 * @node: the node the allocation is made from
 * @uid: the user it is charged to
 * @bytes: the LMR's size
 *
 * Takes @node->quota_lock. May sleep (allocates @uid's entry).
 *
 * Return: 0, -EDQUOT if that would take @uid above quota_mb, or -ENOMEM.
 */
int lite_quota_charge(struct lite_node *node, kuid_t uid, u64 bytes)
{
	u64 limit = (u64)READ_ONCE(lite_quota_mb) << 20;
	struct lite_quota *q, *fresh;
	int ret = 0;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	spin_lock(&node->quota_lock);
	q = lite_quota_find(node, uid);
	if (!q) {
		q = fresh;
		fresh = NULL;
		q->uid = uid;
		hash_add(node->quota, &q->entry, __kuid_val(uid));
	}
	if (limit && (bytes > limit || q->bytes > limit - bytes))
		ret = -EDQUOT;
	else
		q->bytes += bytes;
	if (!q->bytes) {	/* a new entry that took nothing */
		hash_del(&q->entry);
		fresh = q;
	}
	spin_unlock(&node->quota_lock);
	kfree(fresh);
	return ret;
}

/**
 * lite_quota_uncharge - return @bytes of @uid's usage on @node
 * @node: the node the allocation was made from
 * @uid: the user it was charged to
 * @bytes: what lite_quota_charge() took for it (0: nothing to do)
 *
 * Takes @node->quota_lock; frees @uid's entry when its usage drops to 0.
 */
void lite_quota_uncharge(struct lite_node *node, kuid_t uid, u64 bytes)
{
	struct lite_quota *q, *gone = NULL;

	if (!bytes)
		return;
	spin_lock(&node->quota_lock);
	q = lite_quota_find(node, uid);
	if (WARN_ON_ONCE(!q || q->bytes < bytes)) {
		spin_unlock(&node->quota_lock);
		return;
	}
	q->bytes -= bytes;
	if (!q->bytes) {
		hash_del(&q->entry);
		gone = q;
	}
	spin_unlock(&node->quota_lock);
	kfree(gone);
}

/**
 * lite_quota_destroy - free @node's quota table
 * @node: the node, with no LMR left (every charge was returned)
 */
void lite_quota_destroy(struct lite_node *node)
{
	struct hlist_node *tmp;
	struct lite_quota *q;
	int bkt;

	hash_for_each_safe(node->quota, bkt, tmp, q, entry) {
		WARN_ON_ONCE(q->bytes);
		hash_del(&q->entry);
		kfree(q);
	}
}
