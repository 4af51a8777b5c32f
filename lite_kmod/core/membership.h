/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite membership: which node ids exist in the cluster and where they
 * listen, as one node sees it. Verb-free; the caller provides locking.
 */
#ifndef LITE_CORE_MEMBERSHIP_H
#define LITE_CORE_MEMBERSHIP_H

#include <linux/types.h>
#include "wire.h"

#define LITE_MBR_MAX	LITE_WIRE_MAX_NODES

struct lite_membership {
	u16 self;		/* this node's id, 0 until it has one */
	u16 manager;		/* the manager's id, 0 if none */
	u32 epoch;		/* bumped on every change */
	u16 count;		/* members present, self included */
	u32 joins;		/* members added since init; an accept keeps it */
	bool present[LITE_MBR_MAX + 1];
	u32 since[LITE_MBR_MAX + 1];	/* @joins when each was added: tells
					 * a member from an earlier holder of
					 * its id */
	struct lite_naddr addr[LITE_MBR_MAX + 1];
};

void lite_mbr_init(struct lite_membership *mb);
int lite_mbr_init_manager(struct lite_membership *mb,
			  const struct lite_naddr *self_addr);
int lite_mbr_alloc_id(const struct lite_membership *mb);
int lite_mbr_add(struct lite_membership *mb, u16 id,
		 const struct lite_naddr *addr);
int lite_mbr_remove(struct lite_membership *mb, u16 id);
bool lite_mbr_present(const struct lite_membership *mb, u16 id);
u32 lite_mbr_since(const struct lite_membership *mb, u16 id);
int lite_mbr_find_addr(const struct lite_membership *mb,
		       const struct lite_naddr *addr);
size_t lite_mbr_accept_size(const struct lite_membership *mb);
size_t lite_mbr_encode_accept(const struct lite_membership *mb, u16 your_id,
			      void *buf, size_t cap);
int lite_mbr_apply_accept(struct lite_membership *mb, const void *payload,
			  u32 len);

#endif /* LITE_CORE_MEMBERSHIP_H */
