// SPDX-License-Identifier: GPL-2.0
/*
 * LMRs as their users see them: allocating on a node (this one or a peer),
 * mapping by name, fetching the chunk list, guarding accesses against free
 * and revocation, and releasing.
 */
#include <linux/slab.h>
#include <linux/mm.h>

#include "internal.h"

/* A connection to node @id (the loopback one for ourselves), referenced. */
struct lite_conn *lite_node_conn(struct lite_node *node, u16 id)
{
	struct lite_conn *conn;

	if (!id || id > LITE_MAX_NODES)
		return NULL;
	mutex_lock(&node->lock);
	conn = id == node->mb.self ? node->self_conn : node->peers[id];
	if (conn)
		lite_conn_get(conn);
	mutex_unlock(&node->lock);
	return conn;
}

void lite_lmr_get(struct lite_lmr *lmr)
{
	kref_get(&lmr->ref);
}

static void lite_lmr_free(struct kref *ref)
{
	struct lite_lmr *lmr = container_of(ref, struct lite_lmr, ref);

	kvfree(lmr->chunks);
	lite_node_put(lmr->node);
	kfree(lmr);
}

void lite_lmr_put(struct lite_lmr *lmr)
{
	kref_put(&lmr->ref, lite_lmr_free);
}

/* Start an access. Return: 0, or -EKEYREVOKED once freed or revoked. */
int lite_lmr_begin(struct lite_lmr *lmr)
{
	int ret = 0;

	spin_lock(&lmr->lock);
	if (lmr->revoked)
		ret = -EKEYREVOKED;
	else
		lmr->active++;
	spin_unlock(&lmr->lock);
	return ret;
}

void lite_lmr_end(struct lite_lmr *lmr)
{
	bool idle;

	spin_lock(&lmr->lock);
	idle = !--lmr->active;
	spin_unlock(&lmr->lock);
	if (idle)
		wake_up(&lmr->idle_wq);
}

/* No new access from now on; wait for those in progress to finish. */
static void lite_lmr_revoke(struct lite_lmr *lmr)
{
	spin_lock(&lmr->lock);
	lmr->revoked = true;
	spin_unlock(&lmr->lock);
	wait_event(lmr->idle_wq, ({
		bool idle;

		spin_lock(&lmr->lock);
		idle = !lmr->active;
		spin_unlock(&lmr->lock);
		idle;
	}));
}

static struct lite_lmr *lite_lmr_new(struct lite_node *node, u16 mem_node,
				     u64 mr_id, u64 size, u32 rkey,
				     u32 n_chunks)
{
	struct lite_lmr *lmr;

	lmr = kzalloc(sizeof(*lmr), GFP_KERNEL);
	if (!lmr)
		return NULL;
	lmr->chunks = kvcalloc(n_chunks, sizeof(*lmr->chunks), GFP_KERNEL);
	if (!lmr->chunks) {
		kfree(lmr);
		return NULL;
	}
	kref_init(&lmr->ref);
	lite_node_get(node);
	lmr->node = node;
	lmr->mem_node = mem_node;
	lmr->mr_id = mr_id;
	lmr->rkey = rkey;
	lmr->layout.size = size;
	lmr->layout.n_chunks = n_chunks;
	lmr->layout.chunks = lmr->chunks;
	INIT_LIST_HEAD(&lmr->map_entry);
	spin_lock_init(&lmr->lock);
	init_waitqueue_head(&lmr->idle_wq);
	return lmr;
}

/* Copy one chunk-list message into @lmr; chunks arrive in order. */
static int lite_lmr_take_chunks(struct lite_lmr *lmr,
				const struct lite_wire_chunks *w, u32 *have)
{
	u32 start = le32_to_cpu(w->start), count = le32_to_cpu(w->count), i;
	u64 off = *have ? lmr->chunks[*have - 1].start +
		  lmr->chunks[*have - 1].len : 0;

	if (start != *have || le32_to_cpu(w->total) != lmr->layout.n_chunks ||
	    count > lmr->layout.n_chunks - start)
		return -EPROTO;
	for (i = 0; i < count; i++) {
		lmr->chunks[start + i].addr = le64_to_cpu(w->chunks[i].addr);
		lmr->chunks[start + i].len = le32_to_cpu(w->chunks[i].len);
		lmr->chunks[start + i].start = off;
		off += lmr->chunks[start + i].len;
	}
	*have += count;
	return 0;
}

/* Fetch chunks @have.. of @lmr from its memory node over @conn. */
static int lite_lmr_fetch(struct lite_conn *conn, struct lite_lmr *lmr,
			  u32 have, unsigned long deadline)
{
	struct lite_wire_lmr_ref req = { .mr_id = cpu_to_le64(lmr->mr_id) };
	struct lite_wire_chunks *rep;
	int ret = 0;

	rep = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	while (!ret && have < lmr->layout.n_chunks) {
		req.start = cpu_to_le32(have);
		ret = lite_call(conn, LITE_MSG_LMR_CHUNKS, &req, sizeof(req),
				rep, LITE_MSG_MAX, NULL, deadline);
		if (!ret)
			ret = lite_lmr_take_chunks(lmr, rep, &have);
	}
	kfree(rep);
	if (!ret && lite_layout_check(&lmr->layout))
		ret = -EPROTO;	/* chunks do not add up to the LMR */
	return ret;
}

/* A mapping: learn the chunk count from the first batch, then the rest. */
static int lite_lmr_fetch_new(struct lite_conn *conn, struct lite_node *node,
			      const struct lite_wire_share *sh,
			      unsigned long deadline, struct lite_lmr **out)
{
	struct lite_wire_lmr_ref req = { .mr_id = sh->mr_id };
	struct lite_wire_chunks *rep;
	struct lite_lmr *lmr = NULL;
	u32 have = 0;
	int ret;

	rep = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	ret = lite_call(conn, LITE_MSG_LMR_CHUNKS, &req, sizeof(req), rep,
			LITE_MSG_MAX, NULL, deadline);
	if (!ret) {
		lmr = lite_lmr_new(node, le16_to_cpu(sh->mem_node),
				   le64_to_cpu(sh->mr_id),
				   le64_to_cpu(sh->size), le32_to_cpu(sh->rkey),
				   le32_to_cpu(rep->total));
		ret = lmr ? 0 : -ENOMEM;
	}
	if (!ret) {
		lmr->share_id = le64_to_cpu(sh->share_id);
		ret = lite_lmr_take_chunks(lmr, rep, &have);
	}
	if (!ret)
		ret = lite_lmr_fetch(conn, lmr, have, deadline);
	kfree(rep);
	if (ret) {
		if (lmr)
			lite_lmr_put(lmr);
		return ret;
	}
	*out = lmr;
	return 0;
}

static void lite_lmr_remote_free(struct lite_conn *conn, u64 mr_id)
{
	struct lite_wire_lmr_ref req = { .mr_id = cpu_to_le64(mr_id) };

	lite_call(conn, LITE_MSG_LMR_FREE, &req, sizeof(req), NULL, 0, NULL,
		  jiffies + msecs_to_jiffies(LITE_CALL_TIMEOUT_MS));
}

/*
 * lite_lmr_alloc - allocate @size bytes on node @mem_node
 * Return: 0 with *@out holding the LMR, or an error.
 */
int lite_lmr_alloc(struct lite_node *node, u16 mem_node, u64 size,
		   struct lite_lmr **out)
{
	/* Zeroing a GiB under emulation takes a while: allow for it. */
	unsigned long deadline = jiffies + msecs_to_jiffies(
		LITE_CALL_TIMEOUT_MS + (size >> 20) * 50);
	struct lite_wire_lmr_alloc req = { .size = cpu_to_le64(size) };
	struct lite_wire_lmr *rep;
	struct lite_lmr *lmr = NULL;
	struct lite_conn *conn;
	u32 have = 0;
	int ret;

	conn = lite_node_conn(node, mem_node);
	if (!conn)
		return mem_node == READ_ONCE(node->self_id) ? -ENOTCONN :
		       -EHOSTUNREACH;
	rep = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!rep) {
		ret = -ENOMEM;
		goto out;
	}
	ret = lite_call(conn, LITE_MSG_LMR_ALLOC, &req, sizeof(req), rep,
			LITE_MSG_MAX, NULL, deadline);
	if (ret)
		goto out;
	lmr = lite_lmr_new(node, mem_node, le64_to_cpu(rep->mr_id),
			   le64_to_cpu(rep->size), le32_to_cpu(rep->rkey),
			   le32_to_cpu(rep->first.total));
	if (!lmr) {
		ret = -ENOMEM;
	} else if (le64_to_cpu(rep->size) != size) {
		ret = -EPROTO;
	} else {
		ret = lite_lmr_take_chunks(lmr, &rep->first, &have);
		if (!ret)
			ret = lite_lmr_fetch(conn, lmr, have, deadline);
	}
	if (ret) {
		lite_lmr_remote_free(conn, le64_to_cpu(rep->mr_id));
		if (lmr)
			lite_lmr_put(lmr);
		goto out;
	}
	*out = lmr;
out:
	kfree(rep);
	lite_conn_put(conn);
	return ret;
}

/*
 * lite_lmr_map - map the LMR published as @name with *@perms (0: all that
 * was granted; on return, what the mapping holds).
 */
int lite_lmr_map(struct lite_node *node, const char *name, u32 *perms,
		 struct lite_lmr **out)
{
	unsigned long deadline = jiffies +
				 msecs_to_jiffies(LITE_CALL_TIMEOUT_MS * 2);
	struct lite_wire_share sh;
	struct lite_wire_name req;
	struct lite_conn *conn;
	struct lite_lmr *lmr;
	u32 granted;
	u16 mgr;
	int ret;

	mutex_lock(&node->lock);
	mgr = node->mb.manager;
	mutex_unlock(&node->lock);
	conn = lite_node_conn(node, mgr);
	if (!conn)
		return -EHOSTUNREACH;	/* no manager, no registry */
	memset(&req, 0, sizeof(req));
	strscpy(req.name, name, sizeof(req.name));
	ret = lite_call(conn, LITE_MSG_LOOKUP, &req, sizeof(req), &sh,
			sizeof(sh), NULL, deadline);
	lite_conn_put(conn);
	if (ret)
		return ret;

	granted = le32_to_cpu(sh.perms);
	if (*perms & ~granted)
		return -EACCES;
	if (!*perms)
		*perms = granted;
	conn = lite_node_conn(node, le16_to_cpu(sh.mem_node));
	if (!conn)
		return -EHOSTUNREACH;
	ret = lite_lmr_fetch_new(conn, node, &sh, deadline, &lmr);
	lite_conn_put(conn);
	if (ret)
		return ret;
	mutex_lock(&node->lock);
	list_add_tail(&lmr->map_entry, &node->maps);
	mutex_unlock(&node->lock);
	*out = lmr;
	return 0;
}

/*
 * Drop a handle's LMR. The owner's drop frees the memory: no access may
 * be in progress or start afterwards, then the memory node frees it (after
 * invalidating any node that mapped it).
 */
void lite_lmr_release(struct lite_lmr *lmr, bool owner)
{
	struct lite_node *node = lmr->node;
	struct lite_conn *conn;

	if (lmr->share_id) {
		mutex_lock(&node->lock);
		list_del_init(&lmr->map_entry);
		mutex_unlock(&node->lock);
	}
	if (owner) {
		lite_lmr_revoke(lmr);
		conn = lite_node_conn(node, lmr->mem_node);
		if (conn) {
			lite_lmr_remote_free(conn, lmr->mr_id);
			lite_conn_put(conn);
		}
	}
	lite_lmr_put(lmr);
}

static bool lite_lmr_matches(const struct lite_lmr *lmr, u64 share_id,
			     u16 mem_node, u64 mr_id)
{
	if (share_id)
		return lmr->share_id == share_id;
	return lmr->mem_node == mem_node && lmr->mr_id == mr_id;
}

/* INVALIDATE from the manager or a memory node: revoke matching maps, and
 * return only when no access to them is in progress any more.
 */
void lite_lmr_invalidate(struct lite_node *node, const struct lite_msg *msg)
{
	const struct lite_wire_invalidate *inv = msg->payload;
	u64 share_id = le64_to_cpu(inv->share_id);
	u64 mr_id = le64_to_cpu(inv->mr_id);
	u16 mem_node = le16_to_cpu(inv->mem_node);
	struct lite_lmr *lmr, **hit;
	u32 n = 0, cap = 0, i;

	mutex_lock(&node->lock);
	list_for_each_entry(lmr, &node->maps, map_entry) {
		if (!lite_lmr_matches(lmr, share_id, mem_node, mr_id))
			continue;
		spin_lock(&lmr->lock);
		lmr->revoked = true;	/* no new access from here on */
		spin_unlock(&lmr->lock);
		cap++;
	}
	mutex_unlock(&node->lock);
	if (!cap)
		return;

	/* Wait outside node->lock: accesses take it to find connections. */
	hit = kcalloc(cap, sizeof(*hit), GFP_KERNEL);
	mutex_lock(&node->lock);
	list_for_each_entry(lmr, &node->maps, map_entry) {
		if (hit && n < cap &&
		    lite_lmr_matches(lmr, share_id, mem_node, mr_id)) {
			lite_lmr_get(lmr);
			hit[n++] = lmr;
		}
	}
	mutex_unlock(&node->lock);
	for (i = 0; i < n; i++) {
		lite_lmr_revoke(hit[i]);
		lite_lmr_put(hit[i]);
	}
	kfree(hit);
}

/*
 * Have node @id drop the mappings @inv names and wait (until @deadline)
 * for it. Our own mappings are dropped here directly: the request would
 * queue behind the caller on our own ordered workqueue.
 */
void lite_invalidate_on(struct lite_node *node, u16 id,
			const struct lite_wire_invalidate *inv,
			unsigned long deadline)
{
	struct lite_msg msg = { .payload = inv, .len = sizeof(*inv) };
	struct lite_conn *conn;
	struct lite_call call = {};

	if (id == READ_ONCE(node->self_id)) {
		lite_lmr_invalidate(node, &msg);
		return;
	}
	conn = lite_node_conn(node, id);
	if (!conn)
		return;		/* gone: nothing maps it there any more */
	if (!lite_call_start(conn, &call, LITE_MSG_INVALIDATE, inv,
			     sizeof(*inv), NULL, 0))
		lite_call_wait(&call, deadline);
	lite_conn_put(conn);
}
