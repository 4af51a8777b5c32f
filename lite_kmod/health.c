// SPDX-License-Identifier: GPL-2.0
/*
 * lite health: heartbeats, failure detection and reconnects.
 *
 * Members and the manager exchange HEARTBEAT messages every heartbeat_ms;
 * any message counts as a sign of life. The manager declares a member that
 * stayed silent for dead_ms dead and tells every other member (MEMBER_DEL),
 * so all views agree; a member that stops hearing the manager drops it
 * (the cluster then admits nobody new: see docs/architecture.md). A
 * connection that breaks while both ends are members is made again by the
 * newer node of the pair (the higher id), re-authenticated, with backoff
 * from LITE_RECONNECT_MIN_MS to LITE_RECONNECT_MAX_MS with jitter. A node
 * that the manager no longer knows has been expelled: it drops every member
 * and stays alone until it is brought up again.
 */
#include <linux/module.h>
#include <linux/random.h>

#include "internal.h"

static unsigned int heartbeat_ms = LITE_HEARTBEAT_MS;
module_param(heartbeat_ms, uint, 0644);
MODULE_PARM_DESC(heartbeat_ms, "Interval of heartbeats between members and the manager, ms (default 200)");

static unsigned int dead_ms = LITE_DEAD_MS;
module_param(dead_ms, uint, 0644);
MODULE_PARM_DESC(dead_ms, "A member silent this long is declared dead, ms (default 1500; detection within dead_ms + heartbeat_ms)");

static unsigned long lite_hb_jiffies(void)
{
	return msecs_to_jiffies(clamp_val(READ_ONCE(heartbeat_ms), 10, 10000));
}

static unsigned long lite_dead_jiffies(void)
{
	return msecs_to_jiffies(clamp_val(READ_ONCE(dead_ms), 50, 600000));
}

static bool lite_is_manager_locked(struct lite_node *node)
{
	lockdep_assert_held(&node->lock);
	return node->mb.self && node->mb.self == node->mb.manager;
}

/**
 * lite_cluster_heard - note a sign of life from @conn's peer
 * @conn: the connection a message arrived on (receive path, any context)
 */
void lite_cluster_heard(struct lite_conn *conn)
{
	u16 id = READ_ONCE(conn->peer_id);

	if (id && id <= LITE_MAX_NODES &&
	    lite_conn_state(conn) == LITE_CONN_READY)
		WRITE_ONCE(conn->node->last_heard[id], jiffies);
}

/**
 * lite_cluster_handle_heartbeat - HEARTBEAT: the sender is alive
 * @conn: the connection it came on
 * @msg: the message
 *
 * lite_msg_received() noted it already; nothing else is due.
 */
void lite_cluster_handle_heartbeat(struct lite_conn *conn,
				   const struct lite_msg *msg)
{
}

static void lite_health_send(struct lite_node *node, struct lite_conn *conn)
{
	struct lite_wire_heartbeat hb = {
		.epoch = cpu_to_le32(node->mb.epoch),
		.members = cpu_to_le16(node->mb.count),
	};

	lockdep_assert_held(&node->lock);
	lite_conn_send(conn, LITE_MSG_HEARTBEAT, false, 0, 0, &hb, sizeof(hb));
}

/* Heartbeats: the manager to every member, a member to the manager. */
static void lite_health_beat_locked(struct lite_node *node)
{
	u16 id;

	lockdep_assert_held(&node->lock);
	if (READ_ONCE(node->faults.hb_stop))
		return;
	if (!lite_is_manager_locked(node)) {
		if (node->mb.manager && node->peers[node->mb.manager])
			lite_health_send(node, node->peers[node->mb.manager]);
		return;
	}
	for (id = 1; id <= LITE_MAX_NODES; id++)
		if (node->peers[id])
			lite_health_send(node, node->peers[id]);
}

/* Declare silent members dead (manager), or a silent manager (member). */
static void lite_health_check_locked(struct lite_node *node)
{
	unsigned long limit = lite_dead_jiffies(), now = jiffies;
	u16 id;

	lockdep_assert_held(&node->lock);
	/*
	 * If we ourselves did not run for a while (a stalled CPU), what we
	 * missed is not the members' silence: count from now.
	 */
	if (time_after(now, node->hb_last + 3 * lite_hb_jiffies()))
		for (id = 1; id <= LITE_MAX_NODES; id++)
			if (time_before(READ_ONCE(node->last_heard[id]),
					now - lite_hb_jiffies()))
				WRITE_ONCE(node->last_heard[id],
					   now - lite_hb_jiffies());
	node->hb_last = now;
	for (id = 1; id <= LITE_MAX_NODES; id++) {
		if (id == node->mb.self || !lite_mbr_present(&node->mb, id))
			continue;
		if (!lite_is_manager_locked(node) && id != node->mb.manager)
			continue;	/* only the manager judges members */
		if (!time_after(now, READ_ONCE(node->last_heard[id]) + limit))
			continue;
		pr_info("lite%u: node %u silent for %u ms: %s\n",
			node->instance, id,
			jiffies_to_msecs(now - READ_ONCE(node->last_heard[id])),
			id == node->mb.manager ? "the manager is gone" :
			"declaring it dead");
		lite_node_drop_member(node, id, false);
	}
}

/* Whether we connect to @id (0: our loopback) when it has no connection. */
static bool lite_health_ours_locked(struct lite_node *node, u16 id)
{
	lockdep_assert_held(&node->lock);
	if (!id)
		return !node->self_conn;
	return id < node->mb.self && lite_mbr_present(&node->mb, id) &&
	       !node->peers[id];
}

static void lite_health_beat(struct work_struct *work)
{
	struct lite_node *node = container_of(to_delayed_work(work),
					      struct lite_node, hb_work);
	bool stop;

	mutex_lock(&node->lock);
	stop = node->dying || node->expelled;
	if (!stop) {
		lite_health_beat_locked(node);
		lite_health_check_locked(node);
	}
	mutex_unlock(&node->lock);
	if (!stop)
		queue_delayed_work(node->heal_wq, &node->hb_work,
				   lite_hb_jiffies());
}

/* The next connection to make, if one is due; else when one will be. */
static int lite_health_next_locked(struct lite_node *node,
				   struct lite_naddr *addr,
				   unsigned long *next)
{
	unsigned long now = jiffies;
	bool any = false;
	int id;

	lockdep_assert_held(&node->lock);
	for (id = 0; id <= LITE_MAX_NODES; id++) {
		if (!lite_health_ours_locked(node, id))
			continue;
		if (!time_before(now, node->retry_at[id])) {
			*addr = id ? node->mb.addr[id] : node->listen_addr;
			return id;
		}
		if (!any || time_before(node->retry_at[id], *next))
			*next = node->retry_at[id];
		any = true;
	}
	return any ? -EAGAIN : -ENOENT;
}

/* The manager does not know us any more: we were declared dead. */
static void lite_health_expel_locked(struct lite_node *node)
{
	u16 id;

	lockdep_assert_held(&node->lock);
	pr_warn("lite%u: node %u was dropped by the cluster; bring it up again to rejoin\n",
		node->instance, node->mb.self);
	node->expelled = true;
	for (id = 1; id <= LITE_MAX_NODES; id++)
		if (id != node->mb.self && lite_mbr_present(&node->mb, id))
			lite_node_drop_member(node, id, false);
}

/* A reconnect attempt to @id failed with @err: back off, or give up. */
static void lite_health_failed_locked(struct lite_node *node, u16 id, int err)
{
	u32 b;

	lockdep_assert_held(&node->lock);
	if (err == -ENOENT && id &&
	    (id == node->mb.manager ||
	     !lite_mbr_present(&node->mb, node->mb.manager))) {
		lite_health_expel_locked(node);
		return;
	}
	b = node->backoff_ms[id];
	b = clamp_t(u32, b * 2, LITE_RECONNECT_MIN_MS, LITE_RECONNECT_MAX_MS);
	node->backoff_ms[id] = b;
	/* Jitter: between half and all of the backoff. */
	node->retry_at[id] = jiffies + msecs_to_jiffies(b / 2 +
					get_random_u32_below(b / 2 + 1));
}

static void lite_health_reconnect(struct work_struct *work)
{
	struct lite_node *node = container_of(to_delayed_work(work),
					      struct lite_node,
					      reconnect_work);
	unsigned long next = 0;
	struct lite_naddr addr;
	int id, ret;

	for (;;) {
		mutex_lock(&node->lock);
		id = node->dying || node->expelled || !node->healing ? -ENOENT :
		     lite_health_next_locked(node, &addr, &next);
		mutex_unlock(&node->lock);
		if (id < 0)
			break;
		ret = lite_cluster_reconnect(node, id, &addr,
				lite_tun_deadline(call_timeout_ms));
		mutex_lock(&node->lock);
		if (!ret) {
			atomic64_inc(&node->stats.reconnects);
			pr_info("lite%u: reconnected to node %u\n",
				node->instance, id ?: node->mb.self);
		} else if (!node->dying) {
			lite_health_failed_locked(node, id, ret);
		}
		mutex_unlock(&node->lock);
	}
	if (id == -EAGAIN)
		queue_delayed_work(node->heal_wq, &node->reconnect_work,
				   max_t(long, (long)(next - jiffies), 1));
}

/**
 * lite_health_conn_lost - a member's connection broke; it stays a member
 * @node: our node; node->lock held
 * @id: the member (0: our loopback connection)
 *
 * If we are the newer node of the pair, connect again at once (then with
 * backoff); otherwise the peer will.
 */
void lite_health_conn_lost(struct lite_node *node, u16 id)
{
	lockdep_assert_held(&node->lock);
	if (!node->healing || node->expelled)
		return;
	if (id)
		pr_info("lite%u: connection to node %u lost\n",
			node->instance, id);
	if (!lite_health_ours_locked(node, id))
		return;
	node->retry_at[id] = jiffies;
	mod_delayed_work(node->heal_wq, &node->reconnect_work, 0);
}

/**
 * lite_node_conn_wait - a connection to member @id, waiting for a reconnect
 * @node: our node
 * @id: the member (our own id: the loopback connection)
 * @deadline: jiffies; the wait ends earlier on a fatal signal
 *
 * Sleeps; takes node->lock to re-check membership while it waits.
 *
 * Return: the connection with a reference, or NULL if @id is no member or
 * stayed unreachable until @deadline.
 */
struct lite_conn *lite_node_conn_wait(struct lite_node *node, u16 id,
				      unsigned long deadline)
{
	struct lite_conn *conn;
	bool member;
	long left;

	for (;;) {
		conn = lite_node_conn(node, id);
		if (conn && lite_conn_state(conn) != LITE_CONN_CLOSING)
			return conn;
		if (conn)	/* broken: its replacement comes soon */
			lite_conn_put(conn);
		mutex_lock(&node->lock);
		member = node->healing && !node->dying && !node->expelled &&
			 id && id <= LITE_MAX_NODES &&
			 (id == node->mb.self || lite_mbr_present(&node->mb, id));
		mutex_unlock(&node->lock);
		left = (long)(deadline - jiffies);
		if (!member || left <= 0 || fatal_signal_pending(current))
			return NULL;
		/* Re-checks membership at least every 20 ms. */
		wait_event_killable_timeout(node->peers_wq,
					    lite_node_has_conn(node, id),
					    min_t(long, left, HZ / 50));
	}
}

/**
 * lite_health_init - set up a new node's health state (nothing runs yet)
 * @node: the node being created
 */
void lite_health_init(struct lite_node *node)
{
	INIT_DELAYED_WORK(&node->hb_work, lite_health_beat);
	INIT_DELAYED_WORK(&node->reconnect_work, lite_health_reconnect);
	init_waitqueue_head(&node->peers_wq);
}

/**
 * lite_health_start - start heartbeats and reconnects of a node that is up
 * @node: the node, a manager or joined
 *
 * Every member counts as heard from now. Takes node->lock.
 */
void lite_health_start(struct lite_node *node)
{
	unsigned long now = jiffies;
	u16 id;

	mutex_lock(&node->lock);
	node->healing = true;
	node->hb_last = now;
	for (id = 1; id <= LITE_MAX_NODES; id++)
		WRITE_ONCE(node->last_heard[id], now);
	mutex_unlock(&node->lock);
	queue_delayed_work(node->heal_wq, &node->hb_work, lite_hb_jiffies());
}

/**
 * lite_health_stop - stop heartbeats and reconnects
 * @node: the node, already marked dying so neither comes back
 *
 * Takes node->lock; sleeps until a heartbeat or reconnect that runs now
 * is done.
 */
void lite_health_stop(struct lite_node *node)
{
	mutex_lock(&node->lock);
	node->healing = false;
	mutex_unlock(&node->lock);
	cancel_delayed_work_sync(&node->hb_work);
	cancel_delayed_work_sync(&node->reconnect_work);
}
