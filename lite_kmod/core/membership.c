// SPDX-License-Identifier: GPL-2.0
/*
 * lite membership table. The manager allocates ids (lowest free first) and
 * sends joiners the whole table; members apply additions and removals.
 */
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <asm/byteorder.h>

#include "membership.h"

void lite_mbr_init(struct lite_membership *mb)
{
	memset(mb, 0, sizeof(*mb));
}

/* Start a new cluster with this node as its manager, id 1. */
int lite_mbr_init_manager(struct lite_membership *mb,
			  const struct lite_naddr *self_addr)
{
	lite_mbr_init(mb);
	mb->self = 1;
	mb->manager = 1;
	return lite_mbr_add(mb, 1, self_addr);
}

/* Return: the lowest free id, or -ENOSPC when the cluster is full. */
int lite_mbr_alloc_id(const struct lite_membership *mb)
{
	int id;

	for (id = 1; id <= LITE_MBR_MAX; id++)
		if (!mb->present[id])
			return id;
	return -ENOSPC;
}

bool lite_mbr_present(const struct lite_membership *mb, u16 id)
{
	return id && id <= LITE_MBR_MAX && mb->present[id];
}

int lite_mbr_add(struct lite_membership *mb, u16 id,
		 const struct lite_naddr *addr)
{
	if (!id || id > LITE_MBR_MAX)
		return -EINVAL;
	if (mb->present[id])
		return -EEXIST;
	if (lite_mbr_find_addr(mb, addr) > 0)
		return -EADDRINUSE;
	mb->present[id] = true;
	mb->addr[id] = *addr;
	mb->count++;
	mb->epoch++;
	return 0;
}

int lite_mbr_remove(struct lite_membership *mb, u16 id)
{
	if (!lite_mbr_present(mb, id))
		return -ENOENT;
	mb->present[id] = false;
	memset(&mb->addr[id], 0, sizeof(mb->addr[id]));
	mb->count--;
	mb->epoch++;
	if (id == mb->manager)
		mb->manager = 0;
	return 0;
}

/* Return: the id of the member listening on @addr, or -ENOENT. */
int lite_mbr_find_addr(const struct lite_membership *mb,
		       const struct lite_naddr *addr)
{
	int id;

	for (id = 1; id <= LITE_MBR_MAX; id++)
		if (mb->present[id] && lite_naddr_equal(&mb->addr[id], addr))
			return id;
	return -ENOENT;
}

size_t lite_mbr_accept_size(const struct lite_membership *mb)
{
	return sizeof(struct lite_wire_accept) +
	       (size_t)mb->count * sizeof(struct lite_wire_member);
}

/*
 * lite_mbr_encode_accept - write the JOIN accept payload for @your_id
 * Return: bytes written, or 0 if @cap is too small.
 */
size_t lite_mbr_encode_accept(const struct lite_membership *mb, u16 your_id,
			      void *buf, size_t cap)
{
	struct lite_wire_accept *acc = buf;
	size_t size = lite_mbr_accept_size(mb);
	u16 id, i = 0;

	if (cap < size)
		return 0;
	memset(acc, 0, size);
	acc->your_id = cpu_to_le16(your_id);
	acc->manager_id = cpu_to_le16(mb->manager);
	acc->n_members = cpu_to_le16(mb->count);
	acc->epoch = cpu_to_le32(mb->epoch);
	for (id = 1; id <= LITE_MBR_MAX; id++) {
		if (!mb->present[id])
			continue;
		acc->members[i].id = cpu_to_le16(id);
		lite_wire_put_addr(&acc->members[i].addr, &mb->addr[id]);
		i++;
	}
	return size;
}

/*
 * lite_mbr_apply_accept - replace the table with a checked JOIN accept
 * (lite_wire_parse() validated ids, addresses and length).
 */
int lite_mbr_apply_accept(struct lite_membership *mb, const void *payload,
			  u32 len)
{
	const struct lite_wire_accept *acc = payload;
	struct lite_naddr a;
	u16 i, n;

	if (len < sizeof(*acc))
		return -EBADMSG;
	n = le16_to_cpu(acc->n_members);
	if (len != sizeof(*acc) + (u32)n * sizeof(acc->members[0]))
		return -EBADMSG;
	lite_mbr_init(mb);
	for (i = 0; i < n; i++) {
		if (lite_wire_get_addr(&acc->members[i].addr, &a) ||
		    lite_mbr_add(mb, le16_to_cpu(acc->members[i].id), &a))
			goto fail;
	}
	mb->self = le16_to_cpu(acc->your_id);
	mb->manager = le16_to_cpu(acc->manager_id);
	if (!lite_mbr_present(mb, mb->self) ||
	    !lite_mbr_present(mb, mb->manager))
		goto fail;
	mb->epoch = le32_to_cpu(acc->epoch);
	return 0;
fail:
	lite_mbr_init(mb);
	return -EBADMSG;
}
