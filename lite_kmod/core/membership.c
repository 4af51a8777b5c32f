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

/**
 * lite_mbr_init - empty a membership table
 * @mb: the table
 *
 * No members, no self or manager id, epoch 0. The caller provides
 * locking, as for every lite_mbr_*() function.
 */
void lite_mbr_init(struct lite_membership *mb)
{
	memset(mb, 0, sizeof(*mb));
}

/* Empty the table, but @joins goes on: no since[] value comes twice. */
static void lite_mbr_clear(struct lite_membership *mb)
{
	u32 joins = mb->joins;

	lite_mbr_init(mb);
	mb->joins = joins;
}

/**
 * lite_mbr_init_manager - start a new cluster with this node as manager
 * @mb: the table, emptied first
 * @self_addr: where this node listens
 *
 * This node becomes member 1, the manager.
 *
 * Return: 0 (the result of adding member 1 to the empty table).
 */
int lite_mbr_init_manager(struct lite_membership *mb,
			  const struct lite_naddr *self_addr)
{
	lite_mbr_init(mb);
	mb->self = 1;
	mb->manager = 1;
	return lite_mbr_add(mb, 1, self_addr);
}

/**
 * lite_mbr_alloc_id - pick an id for a joining node
 * @mb: the table
 *
 * Return: the lowest free id, or -ENOSPC when the cluster is full.
 */
int lite_mbr_alloc_id(const struct lite_membership *mb)
{
	int id;

	for (id = 1; id <= LITE_MBR_MAX; id++)
		if (!mb->present[id])
			return id;
	return -ENOSPC;
}

/**
 * lite_mbr_present - whether a node id is a member
 * @mb: the table
 * @id: the id; 0 and ids above LITE_MBR_MAX are never members
 *
 * Return: true if @id is in the table.
 */
bool lite_mbr_present(const struct lite_membership *mb, u16 id)
{
	return id && id <= LITE_MBR_MAX && mb->present[id];
}

/**
 * lite_mbr_add - add a member
 * @mb: the table
 * @id: its id
 * @addr: where it listens
 *
 * Counts it and bumps the epoch.
 *
 * Return: 0; -EINVAL if @id is 0 or above LITE_MBR_MAX; -EEXIST if @id is
 * already a member; -EADDRINUSE if another member listens on @addr.
 */
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
	mb->since[id] = ++mb->joins;
	mb->addr[id] = *addr;
	mb->count++;
	mb->epoch++;
	return 0;
}

/**
 * lite_mbr_since - which holder of an id a member is
 * @mb: the table
 * @id: the id
 *
 * Return: a number that differs for every time @id was added to @mb (an
 * id that comes back is another member), or 0 if @id is not a member.
 */
u32 lite_mbr_since(const struct lite_membership *mb, u16 id)
{
	return lite_mbr_present(mb, id) ? mb->since[id] : 0;
}

/**
 * lite_mbr_remove - remove a member
 * @mb: the table
 * @id: its id
 *
 * Bumps the epoch; if @id was the manager, the table has none any more.
 *
 * Return: 0, or -ENOENT if @id is not a member.
 */
int lite_mbr_remove(struct lite_membership *mb, u16 id)
{
	if (!lite_mbr_present(mb, id))
		return -ENOENT;
	mb->present[id] = false;
	mb->since[id] = 0;
	memset(&mb->addr[id], 0, sizeof(mb->addr[id]));
	mb->count--;
	mb->epoch++;
	if (id == mb->manager)
		mb->manager = 0;
	return 0;
}

/**
 * lite_mbr_find_addr - the member that listens on an address
 * @mb: the table
 * @addr: the listen address
 *
 * Return: the id of the member listening on @addr, or -ENOENT.
 */
int lite_mbr_find_addr(const struct lite_membership *mb,
		       const struct lite_naddr *addr)
{
	int id;

	for (id = 1; id <= LITE_MBR_MAX; id++)
		if (mb->present[id] && lite_naddr_equal(&mb->addr[id], addr))
			return id;
	return -ENOENT;
}

/**
 * lite_mbr_accept_size - the size of a JOIN accept payload for the table
 * @mb: the table
 *
 * Return: bytes lite_mbr_encode_accept() needs: the accept header and
 * one entry per member.
 */
size_t lite_mbr_accept_size(const struct lite_membership *mb)
{
	return sizeof(struct lite_wire_accept) +
	       (size_t)mb->count * sizeof(struct lite_wire_member);
}

/**
 * lite_mbr_encode_accept - write the JOIN accept payload for @your_id
 * @mb: the table, every member of which is listed
 * @your_id: the id given to the joining node
 * @buf: where to write
 * @cap: room in @buf
 *
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

/**
 * lite_mbr_apply_accept - replace the table with a checked JOIN accept
 * @mb: the table
 * @payload: the accept payload (lite_wire_parse() validated ids, addresses
 *	and length)
 * @len: its length
 *
 * Return: 0, or -EBADMSG if the payload is short, its length does not
 * match its member count, a member cannot be added, or our id or the
 * manager's is not among the members; the table is then left empty.
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
	lite_mbr_clear(mb);
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
	lite_mbr_clear(mb);
	return -EBADMSG;
}
