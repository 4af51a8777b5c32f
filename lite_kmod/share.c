// SPDX-License-Identifier: GPL-2.0
/*
 * Sharing LMRs by name. The manager keeps the registry: name -> (memory
 * node, LMR, size, granted permissions, publisher) and which nodes looked
 * each name up. Withdrawing a name (revoke, free, or the publisher leaving)
 * invalidates every mapping made through it before it returns.
 */
#include <linux/slab.h>

#include "internal.h"

/* node->lock held. */
static struct lite_share_ent *lite_share_find(struct lite_node *node,
					      const char *name)
{
	struct lite_share_ent *e;

	list_for_each_entry(e, &node->shares, entry)
		if (!strncmp(e->name, name, LITE_NAME_MAX))
			return e;
	return NULL;
}

static bool lite_is_manager(struct lite_node *node)
{
	return node->mb.self && node->mb.self == node->mb.manager;
}

/**
 * lite_share_handle_share - SHARE: register a name (manager)
 * @conn: the publisher's connection
 * @msg: the request: the name and what it stands for
 *
 * Replies with the new share id, or -EOPNOTSUPP if we are not the
 * manager, -EEXIST if the name is taken, -ENOMEM. Runs in order on
 * node->wq; takes node->lock.
 */
void lite_share_handle_share(struct lite_conn *conn,
			     const struct lite_msg *msg)
{
	const struct lite_wire_share *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_wire_share_id rep = {};
	struct lite_share_ent *e;
	int ret = 0;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		return;
	}
	mutex_lock(&node->lock);
	if (!lite_is_manager(node)) {
		ret = -EOPNOTSUPP;
	} else if (lite_share_find(node, req->name)) {
		ret = -EEXIST;
	} else {
		strscpy(e->name, req->name, sizeof(e->name));
		e->share_id = ++node->next_share_id;
		e->publisher = conn->peer_id;
		e->mem_node = le16_to_cpu(req->mem_node);
		e->mr_id = le64_to_cpu(req->mr_id);
		e->size = le64_to_cpu(req->size);
		e->perms = le32_to_cpu(req->perms);
		e->grant = le64_to_cpu(req->grant);
		e->kind = req->kind;
		e->flags = req->flags;
		list_add_tail(&e->entry, &node->shares);
		rep.share_id = cpu_to_le64(e->share_id);
		e = NULL;
	}
	mutex_unlock(&node->lock);
	kfree(e);
	lite_reply(conn, msg, ret, &rep, sizeof(rep));
}

/**
 * lite_share_handle_lookup - LOOKUP: what a name stands for (manager)
 * @conn: the requester's connection
 * @msg: the request: the name
 *
 * Replies with the registry entry, noting the requester as a mapper to
 * invalidate when the name is withdrawn; or -EOPNOTSUPP if we are not the
 * manager, -ENOENT for an unknown name. Runs in order on node->wq; takes
 * node->lock.
 */
void lite_share_handle_lookup(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_name *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_wire_share rep = {};
	struct lite_share_ent *e;
	int ret = 0;

	mutex_lock(&node->lock);
	e = lite_is_manager(node) ? lite_share_find(node, req->name) : NULL;
	if (!lite_is_manager(node)) {
		ret = -EOPNOTSUPP;
	} else if (!e) {
		ret = -ENOENT;
	} else {
		/* Mappings to invalidate: LMRs only (regions have DSM_GONE). */
		e->mappers[conn->peer_id] = e->kind == LITE_SHARE_LMR;
		strscpy(rep.name, e->name, sizeof(rep.name));
		rep.mr_id = cpu_to_le64(e->mr_id);
		rep.size = cpu_to_le64(e->size);
		rep.share_id = cpu_to_le64(e->share_id);
		rep.mem_node = cpu_to_le16(e->mem_node);
		rep.perms = cpu_to_le32(e->perms);
		rep.grant = cpu_to_le64(e->grant);
		rep.kind = e->kind;
		rep.flags = e->flags;
	}
	mutex_unlock(&node->lock);
	lite_reply(conn, msg, ret, &rep, sizeof(rep));
}

/*
 * Invalidate every node that looked @e up; one that does not confirm in
 * time is disconnected. @e is unlinked.
 */
static void lite_share_invalidate(struct lite_node *node,
				  struct lite_share_ent *e)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(LITE_INVALIDATE_MS);
	struct lite_wire_invalidate inv = {
		.share_id = cpu_to_le64(e->share_id),
	};
	u16 id;

	for (id = 1; id <= LITE_MAX_NODES; id++)
		if (e->mappers[id])
			lite_invalidate_on(node, id, &inv, deadline);
}

/**
 * lite_share_handle_unshare - UNSHARE: withdraw a name (manager)
 * @conn: the publisher's connection
 * @msg: the request: the name
 *
 * Only the publishing node withdraws. Every node that looked the name up
 * is invalidated before the reply; one that does not confirm in time is
 * disconnected. Replies 0, -EOPNOTSUPP if we are not the manager, -ENOENT
 * for an unknown name, or -EPERM. Runs in order on node->wq; sleeps.
 */
void lite_share_handle_unshare(struct lite_conn *conn,
			       const struct lite_msg *msg)
{
	const struct lite_wire_name *req = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_share_ent *e;
	int ret = 0;

	mutex_lock(&node->lock);
	e = lite_is_manager(node) ? lite_share_find(node, req->name) : NULL;
	if (!lite_is_manager(node))
		ret = -EOPNOTSUPP;
	else if (!e)
		ret = -ENOENT;
	else if (e->publisher != conn->peer_id)
		ret = -EPERM;	/* only the publishing node withdraws */
	else
		list_del(&e->entry);
	mutex_unlock(&node->lock);
	if (!ret) {
		lite_share_invalidate(node, e);
		kfree(e);
	}
	lite_reply(conn, msg, ret, NULL, 0);
}

/**
 * lite_share_handle_invalidate - INVALIDATE: drop the mappings
 * @conn: the connection of the manager or memory node that sent it
 * @msg: the request: a share, or an LMR
 *
 * Revokes the matching LMRs and waits until no access to them is in
 * progress (lite_lmr_invalidate()), then replies, unless the sender does
 * not wait (request id 0). Runs on node->close_wq, so that it neither
 * queues behind nor holds up the ordered queue; sleeps.
 */
void lite_share_handle_invalidate(struct lite_conn *conn,
				  const struct lite_msg *msg)
{
	lite_lmr_invalidate(conn->node, msg);
	if (msg->req_id)	/* 0: the sender does not wait */
		lite_reply(conn, msg, 0, NULL, 0);
}

/**
 * lite_shares_drop_publisher - the publisher is gone: withdraw its names
 * @node: our node, the manager; node->lock held
 * @publisher: the node that left or was lost
 *
 * The mappers are told without waiting (their acknowledgements are
 * dropped).
 */
void lite_shares_drop_publisher(struct lite_node *node, u16 publisher)
{
	struct lite_share_ent *e, *tmp;
	struct lite_wire_invalidate inv = {};
	struct lite_conn *conn;
	u16 id;

	lockdep_assert_held(&node->lock);
	list_for_each_entry_safe(e, tmp, &node->shares, entry) {
		if (e->publisher != publisher)
			continue;
		list_del(&e->entry);
		inv.share_id = cpu_to_le64(e->share_id);
		for (id = 1; id <= LITE_MAX_NODES; id++) {
			conn = id == node->mb.self ? node->self_conn :
			       node->peers[id];
			if (e->mappers[id] && conn)
				lite_conn_send(conn, LITE_MSG_INVALIDATE, false,
					       0, 0, &inv, sizeof(inv));
		}
		kfree(e);
	}
}

/*
 * Send a SHARE request to the manager and wait for its reply, which sets
 * *@share_id (if not NULL). Sleeps.
 */
static int lite_share_send(struct lite_node *node,
			   const struct lite_wire_share *req, u64 *share_id)
{
	struct lite_wire_share_id rep;
	struct lite_conn *conn;
	int ret;

	conn = lite_manager_conn(node);
	if (!conn)
		return -EHOSTUNREACH;
	ret = lite_call(conn, LITE_MSG_SHARE, req, sizeof(*req), &rep,
			sizeof(rep), NULL,
			lite_tun_deadline(call_timeout_ms));
	lite_conn_put(conn);
	if (!ret && share_id)
		*share_id = le64_to_cpu(rep.share_id);
	return ret;
}

/**
 * lite_share_publish - ask the manager to register @name for @lmr
 * @node: our node, the publisher
 * @lmr: the LMR the name stands for
 * @name: the name, NUL-terminated
 * @perms: the permissions it grants
 * @grant: set to the name's key grant (lite_lmr_grant()), 0 for none
 *
 * The memory node is told first: mappers fetch with the grant as soon as
 * the name is known. Sleeps.
 *
 * Return: 0; -EHOSTUNREACH without a connection to the manager or the
 * memory node; -EKEYREVOKED if @lmr is being freed; the error of the
 * LMR_GRANT request (lite_lmr_grant(): -ENOSPC, -EHOSTDOWN, ...) or of the
 * SHARE request (-EEXIST if the name is taken, -ETIMEDOUT, ...).
 */
int lite_share_publish(struct lite_node *node, struct lite_lmr *lmr,
		       const char *name, u32 perms, u64 *grant)
{
	struct lite_wire_share req = {};
	bool revoked;
	int ret;

	strscpy(req.name, name, sizeof(req.name));
	req.mr_id = cpu_to_le64(lmr->mr_id);
	req.size = cpu_to_le64(lmr->layout.size);
	req.mem_node = cpu_to_le16(lmr->mem_node);
	req.perms = cpu_to_le32(perms);
	req.kind = LITE_SHARE_LMR;
	req.flags = lmr->flags;
	/*
	 * Others may map it from now on: its free waits for them. A free
	 * that revoked it before it saw this may have told the memory node
	 * that nobody maps it: then no name for it.
	 */
	WRITE_ONCE(lmr->published, true);
	spin_lock_bh(&lmr->lock);
	revoked = lmr->revoked;
	spin_unlock_bh(&lmr->lock);
	if (revoked)
		return -EKEYREVOKED;
	ret = lite_lmr_grant(node, lmr, perms, grant);
	if (ret)
		return ret;
	req.grant = cpu_to_le64(*grant);
	ret = lite_share_send(node, &req, NULL);
	if (ret && *grant) {	/* best effort */
		/* The manager may have it: withdraw it before the keys go. */
		if (ret == -ETIMEDOUT || ret == -ECONNRESET || ret == -EINTR)
			lite_share_withdraw(node, name);
		lite_lmr_unkey(node, lmr->mem_node, lmr->mr_id, *grant);
	}
	return ret;
}

/**
 * lite_share_publish_dsm - ask the manager to register @name for a region
 * @node: our node, the region's home
 * @name: the name, NUL-terminated
 * @region: the region's id
 * @size: its size in bytes
 *
 * Sleeps.
 *
 * Return: as lite_share_publish().
 */
int lite_share_publish_dsm(struct lite_node *node, const char *name,
			   u64 region, u64 size)
{
	struct lite_wire_share req = {};

	strscpy(req.name, name, sizeof(req.name));
	req.mr_id = cpu_to_le64(region);
	req.size = cpu_to_le64(size);
	req.mem_node = cpu_to_le16(READ_ONCE(node->self_id));
	req.kind = LITE_SHARE_DSM;
	return lite_share_send(node, &req, NULL);
}

/**
 * lite_share_lookup - what @name stands for, as the manager says
 * @node: our node
 * @name: the name, NUL-terminated
 * @sh: filled with the registry entry
 *
 * Sleeps.
 *
 * Return: 0; -EHOSTUNREACH without a connection to the manager; -ENOENT
 * for an unknown name; or the error of the LOOKUP request.
 */
int lite_share_lookup(struct lite_node *node, const char *name,
		      struct lite_wire_share *sh)
{
	struct lite_wire_name req;
	struct lite_conn *conn;
	int ret;

	conn = lite_manager_conn(node);
	if (!conn)
		return -EHOSTUNREACH;
	memset(&req, 0, sizeof(req));
	strscpy(req.name, name, sizeof(req.name));
	ret = lite_call(conn, LITE_MSG_LOOKUP, &req, sizeof(req), sh,
			sizeof(*sh), NULL,
			lite_tun_deadline(call_timeout_ms));
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_share_withdraw - withdraw @name
 * @node: our node, the publisher
 * @name: the name, NUL-terminated
 *
 * Returns once every mapping made through it is void. Sleeps.
 *
 * Return: 0; -EHOSTUNREACH without a connection to the manager; or the
 * error of the UNSHARE request (-ENOENT, -EPERM, -ETIMEDOUT, ...).
 */
int lite_share_withdraw(struct lite_node *node, const char *name)
{
	struct lite_wire_name req;
	struct lite_conn *conn;
	int ret;

	conn = lite_manager_conn(node);
	if (!conn)
		return -EHOSTUNREACH;
	memset(&req, 0, sizeof(req));
	strscpy(req.name, name, sizeof(req.name));
	ret = lite_call(conn, LITE_MSG_UNSHARE, &req, sizeof(req), NULL, 0,
			NULL,
			jiffies + msecs_to_jiffies(lite_tun(call_timeout_ms) +
						   LITE_INVALIDATE_MS));
	lite_conn_put(conn);
	return ret;
}

/**
 * lite_shares_free_all - the node goes down: forget its registry
 * @node: the node
 */
void lite_shares_free_all(struct lite_node *node)
{
	struct lite_share_ent *e, *tmp;

	list_for_each_entry_safe(e, tmp, &node->shares, entry)
		kfree(e);
	INIT_LIST_HEAD(&node->shares);
}
