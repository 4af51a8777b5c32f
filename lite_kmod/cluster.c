// SPDX-License-Identifier: GPL-2.0
/*
 * lite cluster protocol: the authenticated handshake, joining through the
 * manager, member announcements and removals, leaving, and ping.
 *
 * Joining: the joiner connects to the manager and proves the secret
 * (HELLO/AUTH, a mutual HMAC challenge-response); the manager assigns the
 * lowest free id, announces the newcomer to every member and waits (within
 * one deadline) for their acknowledgements, then returns the member table.
 * The joiner then connects to every other member with the same handshake.
 * Newer nodes always connect to older ones, so each pair ends up with
 * exactly one connection. The manager's table is authoritative: when it
 * drops a member it tells everyone (MEMBER_DEL).
 *
 * A connection that breaks does not end a membership: the newer node of
 * the pair connects again (health.c) with the PEER handshake, and only the
 * manager decides, by heartbeats, that a member is gone.
 */
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/ktime.h>

#include "internal.h"

/* How long a joiner waits before asking a member that did not know it. */
#define LITE_JOIN_RETRY	msecs_to_jiffies(20)

/* How long the manager announces a new member: well inside its join. */
static unsigned long lite_announce_jiffies(void)
{
	return msecs_to_jiffies(min_t(unsigned int, lite_tun(call_timeout_ms),
				      LITE_JOIN_TIMEOUT_MS / 2));
}

struct lite_handshake {
	struct lite_call call;
	struct lite_auth_ctx auth;
	u16 peer_id;		/* PEER: the member we connect to */
};

/*
 * Install the READY @conn as the connection to member @id and run the
 * READY hooks; node->lock held.
 */
static void lite_node_install_peer(struct lite_node *node, u16 id,
				   struct lite_conn *conn)
{
	lockdep_assert_held(&node->lock);
	if (node->peers[id] && node->peers[id] != conn)
		lite_conn_close(node->peers[id]);	/* a stale one */
	lite_node_set_conn(node, id, conn);
	node->backoff_ms[id] = 0;
	WRITE_ONCE(node->last_heard[id], jiffies);
	lite_conn_hooks_run(conn, LITE_HOOK_READY);
}

/*
 * Install @conn as the READY connection to member @id (the active side,
 * which does so on the AUTH reply: nothing can precede it on the wire);
 * node->lock held. Return: 0, or -ECONNRESET if @conn is already closing.
 */
static int lite_node_set_peer(struct lite_node *node, u16 id,
			      struct lite_conn *conn)
{
	int ret;

	lockdep_assert_held(&node->lock);
	ret = lite_conn_set_ready(conn, id);
	if (!ret)
		lite_node_install_peer(node, id, conn);
	return ret;
}

/* Manager: tell every member that @id is gone; node->lock held, so the
 * message is ordered before any later MEMBER_ADD reusing the id.
 */
static void lite_broadcast_del(struct lite_node *node, u16 id, bool left)
{
	struct lite_wire_member_del del = {
		.id = cpu_to_le16(id),
		.flags = cpu_to_le16(left ? LITE_DEL_LEFT : 0),
	};
	u16 p;

	lockdep_assert_held(&node->lock);
	if (!node->mb.self || node->mb.self != node->mb.manager)
		return;
	for (p = 1; p <= LITE_MAX_NODES; p++)
		if (node->peers[p] && p != id)
			lite_conn_send(node->peers[p], LITE_MSG_MEMBER_DEL,
				       false, 0, 0, &del, sizeof(del));
}

/**
 * lite_node_drop_member - drop member @id (and its connection)
 * @node: our node; node->lock held
 * @id: the member
 * @left: it left cleanly (else it was lost)
 *
 * The manager tells every other member. What @id allocated here and
 * published goes with it; what we had on it is unreachable now.
 */
void lite_node_drop_member(struct lite_node *node, u16 id, bool left)
{
	lockdep_assert_held(&node->lock);
	if (lite_mbr_remove(&node->mb, id))
		return;
	if (node->peers[id]) {
		lite_conn_close(node->peers[id]);
		lite_node_set_conn(node, id, NULL);
	}
	if (left)
		atomic64_inc(&node->stats.leaves);
	else
		lite_count_error(node, id, LITE_ERR_LOST, 0);
	pr_info("lite%u: node %u %s\n", node->instance, id,
		left ? "left" : "lost");
	lite_broadcast_del(node, id, left);
	/* What it allocated here, and what it published, goes with it;
	 * what we had on it is unreachable now.
	 */
	lite_exports_drop_owner(node, id);
	lite_sync_drop_peer(node, id);
	lite_lmrs_mem_gone(node, id);
	lite_lease_peer_gone(node, id);
	lite_dsm_member_gone(node, id);
	if (node->mb.self == node->mb.manager)
		lite_shares_drop_publisher(node, id);
}

/*
 * The AUTH reply of our own handshake, applied in CQ context so that it
 * takes effect before any later message on this connection is handled.
 */
static int lite_auth_reply(struct lite_call *call, const struct lite_msg *msg)
{
	struct lite_handshake *hs = container_of(call, struct lite_handshake,
						 call);
	const struct lite_wire_auth *proof = msg->payload;
	const void *accept = proof + 1;
	u32 accept_len = msg->len - sizeof(*proof);
	struct lite_conn *conn = call->conn;
	struct lite_node *node = conn->node;
	int ret = 0;

	/* Mutual: the other side must hold the secret too. */
	if (!lite_auth_verify(node->secret, node->secret_len, &hs->auth,
			      LITE_ROLE_PASSIVE, proof->mac)) {
		lite_count_error(node, msg->src, LITE_ERR_AUTH, -EACCES);
		return -EKEYREJECTED;
	}
	mutex_lock(&node->lock);
	if (node->dying) {
		ret = -ESHUTDOWN;
	} else if (hs->auth.purpose == LITE_PURPOSE_JOIN) {
		ret = accept_len ? lite_mbr_apply_accept(&node->mb, accept,
							 accept_len) : -EPROTO;
		if (!ret)
			ret = lite_node_set_peer(node, node->mb.manager, conn);
		if (!ret)
			WRITE_ONCE(node->self_id, node->mb.self);
	} else if (accept_len) {
		ret = -EPROTO;
	} else if (hs->auth.purpose == LITE_PURPOSE_SELF) {
		ret = lite_conn_set_ready(conn, node->mb.self);
		if (!ret)
			lite_node_set_conn(node, 0, conn);
	} else if (!lite_mbr_present(&node->mb, hs->peer_id) ||
		   !lite_naddr_equal(&node->mb.addr[hs->peer_id],
				     &hs->auth.passive_listen)) {
		/*
		 * We dropped it while we were connecting, or its id is
		 * another member's now (which listens elsewhere): the
		 * connection must not pass for one to that member.
		 */
		ret = -ESRCH;
	} else {
		ret = lite_node_set_peer(node, hs->peer_id, conn);
	}
	mutex_unlock(&node->lock);
	return ret;
}

/*
 * Run the active side of the handshake on a fresh connection to @dst:
 * HELLO (our nonce) -> challenge (theirs) -> AUTH (our proof) -> their
 * proof and, for a JOIN, the member table. @buf receives the AUTH reply.
 * Return: 0 once the connection is READY, -EKEYREJECTED if either side
 * does not hold the secret, or another error.
 */
static int lite_handshake(struct lite_conn *conn,
			  const struct lite_naddr *dst, u8 purpose,
			  u16 peer_id, void *buf, u32 cap,
			  unsigned long deadline)
{
	struct lite_node *node = conn->node;
	struct lite_wire_challenge ch;
	struct lite_wire_hello hello;
	struct lite_wire_auth auth;
	struct lite_handshake hs = {};
	int ret;

	hs.peer_id = peer_id;
	hs.auth.purpose = purpose;
	hs.auth.node_id = purpose == LITE_PURPOSE_JOIN ? 0 : node->self_id;
	hs.auth.active_listen = node->listen_addr;
	hs.auth.passive_listen = *dst;
	get_random_bytes(hs.auth.nonce_active, LITE_NONCE_LEN);

	memset(&hello, 0, sizeof(hello));
	memcpy(hello.nonce, hs.auth.nonce_active, LITE_NONCE_LEN);
	hello.purpose = purpose;
	hello.node_id = cpu_to_le16(hs.auth.node_id);
	lite_wire_put_addr(&hello.listen, &node->listen_addr);
	ret = lite_call(conn, LITE_MSG_HELLO, &hello, sizeof(hello), &ch,
			sizeof(ch), NULL, deadline);
	if (ret)
		return ret;

	memcpy(hs.auth.nonce_passive, ch.nonce, LITE_NONCE_LEN);
	lite_auth_mac(node->secret, node->secret_len, &hs.auth,
		      LITE_ROLE_ACTIVE, auth.mac);
	hs.call.on_reply = lite_auth_reply;
	ret = lite_call_start(conn, &hs.call, LITE_MSG_AUTH, &auth,
			      sizeof(auth), buf, cap);
	if (ret)
		return ret;
	return lite_call_wait(&hs.call, deadline);
}

/* Connect and authenticate to @addr. @buf receives the AUTH reply. */
static int lite_connect_auth(struct lite_node *node,
			     const struct lite_naddr *addr, u8 purpose,
			     u16 peer_id, void *buf, u32 cap,
			     unsigned long deadline)
{
	struct lite_conn *conn;
	int ret;

	conn = lite_conn_connect(node, addr, deadline);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	ret = lite_handshake(conn, addr, purpose, peer_id, buf, cap, deadline);
	if (ret)
		lite_conn_close(conn);
	lite_conn_put(conn);
	return ret;
}

/*
 * The PEER handshake of a joiner with member @id at @addr. The manager's
 * MEMBER_ADD about us and its accept to us race: a member that has not
 * heard of us yet refuses us with ENOENT, so ask again, every 20 ms,
 * until @deadline or a fatal signal.
 */
static int lite_join_peer(struct lite_node *node,
			  const struct lite_naddr *addr, u16 id,
			  struct lite_wire_auth *proof, unsigned long deadline)
{
	int ret;

	for (;;) {
		ret = lite_connect_auth(node, addr, LITE_PURPOSE_PEER, id,
					proof, sizeof(*proof), deadline);
		if (ret != -ENOENT || fatal_signal_pending(current) ||
		    time_after(jiffies + LITE_JOIN_RETRY, deadline))
			return ret;
		schedule_timeout_killable(LITE_JOIN_RETRY);
	}
}

/* Snapshot the members we must connect to after joining. */
static int lite_join_targets(struct lite_node *node, struct lite_naddr *addrs,
			     u16 *ids)
{
	int n = 0;
	u16 id;

	mutex_lock(&node->lock);
	for (id = 1; id <= LITE_MAX_NODES; id++) {
		if (!lite_mbr_present(&node->mb, id) || node->peers[id] ||
		    id == node->mb.self)
			continue;
		ids[n] = id;
		addrs[n++] = node->mb.addr[id];
	}
	mutex_unlock(&node->lock);
	return n;
}

/**
 * lite_cluster_join - join the cluster whose manager listens on @mgr
 * @node: our node, not yet a member of anything
 * @mgr: the manager's listen address
 * @deadline: in jiffies; all of the join happens before it
 *
 * Runs the JOIN handshake with the manager, which admits us and sends the
 * member table; starts our heartbeats; then connects to every other
 * member with the PEER handshake. Sleeps.
 *
 * Return: 0 with node->self_id set, or an error (-ENOMEM, or why the
 * manager or a member could not be reached or refused us, -EKEYREJECTED
 * if either side does not hold the secret); the caller then destroys the
 * node.
 */
int lite_cluster_join(struct lite_node *node, const struct lite_naddr *mgr,
		      unsigned long deadline)
{
	struct lite_wire_auth proof;
	struct lite_naddr *addrs;
	void *accept;
	u16 *ids;
	int n, i, ret;

	accept = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	addrs = kcalloc(LITE_MAX_NODES, sizeof(*addrs), GFP_KERNEL);
	ids = kcalloc(LITE_MAX_NODES, sizeof(*ids), GFP_KERNEL);
	if (!accept || !addrs || !ids) {
		ret = -ENOMEM;
		goto out;
	}

	ret = lite_connect_auth(node, mgr, LITE_PURPOSE_JOIN, 0, accept,
				LITE_MSG_MAX, deadline);
	if (ret)
		goto out;
	/* Heartbeats to the manager from now on, while we meet the others. */
	lite_health_start(node);

	n = lite_join_targets(node, addrs, ids);
	for (i = 0; i < n; i++) {
		ret = lite_join_peer(node, &addrs[i], ids[i], &proof,
				     deadline);
		if (ret) {
			pr_info("lite%u: cannot reach member %u: %d\n",
				node->instance, ids[i], ret);
			goto out;
		}
	}
	pr_info("lite%u: joined as node %u (%d members)\n", node->instance,
		node->self_id, n + 2);
out:
	kfree(ids);
	kfree(addrs);
	kfree(accept);
	return ret;
}

/**
 * lite_cluster_self - open the node's loopback connection
 * @node: our node, a member
 * @deadline: in jiffies
 *
 * The loopback connection carries its own processes' accesses to memory
 * it holds and requests to itself. Sleeps.
 *
 * Return: 0 once it is READY and installed, or an error.
 */
int lite_cluster_self(struct lite_node *node, unsigned long deadline)
{
	struct lite_wire_auth proof;

	return lite_connect_auth(node, &node->listen_addr, LITE_PURPOSE_SELF,
				 READ_ONCE(node->self_id), &proof,
				 sizeof(proof), deadline);
}

/* Whether @conn comes from the IP of @listen. */
static bool lite_conn_from(struct lite_conn *conn,
			   const struct lite_naddr *listen)
{
	struct lite_naddr remote = conn->remote;

	remote.port = listen->port;
	return lite_naddr_equal(&remote, listen);
}

/* HELLO's verdict before any secret is involved. */
static int lite_hello_verdict(struct lite_conn *conn,
			      const struct lite_wire_hello *hello,
			      const struct lite_naddr *listen)
{
	struct lite_node *node = conn->node;
	bool manager;
	int ret = 0;

	if (!lite_conn_from(conn, listen))
		return -EADDRNOTAVAIL;	/* claims someone else's address */
	mutex_lock(&node->lock);
	manager = node->mb.self && node->mb.self == node->mb.manager;
	if (node->dying)
		ret = -ESHUTDOWN;
	else if (hello->purpose == LITE_PURPOSE_JOIN && !manager)
		ret = -EOPNOTSUPP;	/* only the manager admits nodes */
	mutex_unlock(&node->lock);
	return ret;
}

/**
 * lite_cluster_handle_hello - HELLO: a connecting node starts the handshake
 * @conn: the passive connection it came on, in the handshake
 * @msg: the HELLO: its nonce, purpose, claimed id and listen address
 *
 * Records the handshake context and answers with our nonce, or with the
 * verdict that refuses it before any secret is involved: -EADDRNOTAVAIL
 * if it does not come from the address it claims, -ESHUTDOWN if we leave,
 * -EOPNOTSUPP for a JOIN to a node that is not the manager; a refused
 * connection closes once the reply is sent. A HELLO on an active
 * connection, or a second one, closes the connection. Runs on node->wq.
 */
void lite_cluster_handle_hello(struct lite_conn *conn,
			       const struct lite_msg *msg)
{
	const struct lite_wire_hello *hello = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_wire_challenge ch;
	struct lite_naddr listen;
	int status;

	if (conn->active || conn->got_hello ||
	    lite_wire_get_addr(&hello->listen, &listen)) {
		lite_conn_close(conn);	/* out-of-order handshake */
		return;
	}
	conn->got_hello = true;
	conn->auth.purpose = hello->purpose;
	conn->auth.node_id = le16_to_cpu(hello->node_id);
	memcpy(conn->auth.nonce_active, hello->nonce, LITE_NONCE_LEN);
	get_random_bytes(conn->auth.nonce_passive, LITE_NONCE_LEN);
	conn->auth.active_listen = listen;
	conn->auth.passive_listen = node->listen_addr;
	conn->peer_listen = listen;

	status = lite_hello_verdict(conn, hello, &listen);
	conn->hello_status = status;
	memcpy(ch.nonce, conn->auth.nonce_passive, LITE_NONCE_LEN);
	lite_reply(conn, msg, status, &ch, sizeof(ch));
	if (status)
		lite_conn_close_when_sent(conn);
}

/*
 * Tell every member about @id and wait, within one deadline, for their
 * acknowledgements. Return: 0, or the first failure.
 */
static int lite_announce(struct lite_node *node, u16 id,
			 const struct lite_naddr *addr)
{
	unsigned long deadline = jiffies + lite_announce_jiffies();
	struct lite_wire_member m = {};
	struct lite_conn **to;
	struct lite_call *calls;
	int n = 0, i, ret = 0, err;
	u16 p;

	to = kcalloc(LITE_MAX_NODES, sizeof(*to), GFP_KERNEL);
	calls = kcalloc(LITE_MAX_NODES, sizeof(*calls), GFP_KERNEL);
	if (!to || !calls) {
		ret = -ENOMEM;
		goto out;
	}

	m.id = cpu_to_le16(id);
	lite_wire_put_addr(&m.addr, addr);
	mutex_lock(&node->lock);
	for (p = 1; p <= LITE_MAX_NODES; p++) {
		if (node->peers[p]) {
			to[n] = node->peers[p];
			lite_conn_get(to[n++]);
		}
	}
	mutex_unlock(&node->lock);

	for (i = 0; i < n; i++)
		if (lite_call_start(to[i], &calls[i], LITE_MSG_MEMBER_ADD, &m,
				    sizeof(m), NULL, 0))
			calls[i].conn = NULL;
	for (i = 0; i < n; i++) {
		err = calls[i].conn ? lite_call_wait(&calls[i], deadline) :
		      -ECONNRESET;
		if (err) {
			pr_info("lite%u: member %u did not take node %u: %d\n",
				node->instance, to[i]->peer_id, id, err);
			ret = ret ?: err;
		}
		lite_conn_put(to[i]);
	}
out:
	kfree(calls);
	kfree(to);
	return ret;
}

/* Manager: admit an authenticated joiner. Return: its id or an error. */
static int lite_admit(struct lite_conn *conn, void *buf, size_t cap,
		      size_t *len)
{
	struct lite_node *node = conn->node;
	int id, ret;

	mutex_lock(&node->lock);
	if (node->dying || node->mb.self != node->mb.manager)
		id = -EOPNOTSUPP;
	else if (lite_mbr_find_addr(&node->mb, &conn->peer_listen) > 0)
		id = -EADDRINUSE;
	else
		id = lite_mbr_alloc_id(&node->mb);
	if (id > 0)
		id = lite_mbr_add(&node->mb, id, &conn->peer_listen) ?: id;
	if (id > 0) {
		/* Judged by heartbeats once admitted (it sends them from
		 * its AUTH reply on), not while we announce it.
		 */
		WRITE_ONCE(node->last_heard[id],
			   jiffies + lite_announce_jiffies());
		node->backoff_ms[id] = 0;
		node->retry_at[id] = jiffies;
	}
	mutex_unlock(&node->lock);
	if (id < 0)
		return id;

	/* A member that cannot take the newcomer would refuse it later. */
	ret = lite_announce(node, id, &conn->peer_listen);

	mutex_lock(&node->lock);
	if (!ret && node->dying)
		ret = -ESHUTDOWN;
	if (!ret)	/* installed once the AUTH reply is on its way */
		ret = lite_conn_set_ready(conn, id);
	if (ret) {
		lite_mbr_remove(&node->mb, id);
		lite_broadcast_del(node, id, false);
		mutex_unlock(&node->lock);
		return ret == -ETIMEDOUT ? -EAGAIN : ret;
	}
	*len = lite_mbr_encode_accept(&node->mb, id, buf, cap);
	mutex_unlock(&node->lock);
	atomic64_inc(&node->stats.joins);
	pr_info("lite%u: admitted node %d\n", node->instance, id);
	return id;
}

/* A member connects to us: it must be in our table at that address. */
static int lite_accept_peer(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;
	u16 id = conn->auth.node_id;
	int ret;

	mutex_lock(&node->lock);
	if (node->dying)
		ret = -ESHUTDOWN;
	else if (conn->auth.purpose == LITE_PURPOSE_SELF)
		ret = id == node->mb.self &&
		      lite_naddr_equal(&conn->peer_listen, &node->listen_addr) ?
		      lite_conn_set_ready(conn, id) : -ENOENT;
	else if (id == node->mb.self || !lite_mbr_present(&node->mb, id) ||
		 !lite_naddr_equal(&node->mb.addr[id], &conn->peer_listen))
		ret = -ENOENT;
	else	/* installed once the AUTH reply is on its way */
		ret = lite_conn_set_ready(conn, id);
	mutex_unlock(&node->lock);
	return ret;
}

/*
 * Passive side: the AUTH reply was sent; only now may anything else be
 * sent on @conn (the peer is READY once it handled that reply), so only
 * now is @conn installed for member @id.
 */
static void lite_publish_peer(struct lite_conn *conn, u16 id)
{
	struct lite_node *node = conn->node;

	mutex_lock(&node->lock);
	if (!node->dying && lite_conn_state(conn) == LITE_CONN_READY &&
	    id != node->mb.self && lite_mbr_present(&node->mb, id))
		lite_node_install_peer(node, id, conn);
	else
		lite_conn_close(conn);
	mutex_unlock(&node->lock);
}

/**
 * lite_cluster_handle_auth - AUTH: the connecting node's proof
 * @conn: the passive connection it came on, after HELLO
 * @msg: the AUTH request, with its MAC
 *
 * A wrong proof is answered with -EKEYREJECTED and the connection closes
 * once that is sent: one guess each. Otherwise the manager admits a
 * joiner (assigns an id, announces it to every member and waits for their
 * acknowledgements) and any node accepts a member it knows at that address
 * (or its own loopback); the reply carries our proof and, for a JOIN, the
 * member table. Only after the reply is on its way is the connection of
 * a joiner or member installed. Runs on node->wq; may wait for the
 * network.
 */
void lite_cluster_handle_auth(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	const struct lite_wire_auth *auth = msg->payload;
	struct lite_node *node = conn->node;
	struct lite_wire_auth *proof;
	size_t len = 0;
	int ret;

	if (conn->active || !conn->got_hello || conn->hello_status) {
		lite_conn_close(conn);
		return;
	}
	if (!lite_auth_verify(node->secret, node->secret_len, &conn->auth,
			      LITE_ROLE_ACTIVE, auth->mac)) {
		lite_count_error(node, msg->src, LITE_ERR_AUTH, -EACCES);
		pr_info("lite%u: refused a node with the wrong secret\n",
			node->instance);
		lite_reply(conn, msg, -EKEYREJECTED, NULL, 0);
		lite_conn_close_when_sent(conn);	/* one guess each */
		return;
	}
	proof = kmalloc(LITE_MSG_MAX, GFP_KERNEL);
	if (!proof) {
		lite_reply(conn, msg, -ENOMEM, NULL, 0);
		lite_conn_close_when_sent(conn);
		return;
	}
	lite_auth_mac(node->secret, node->secret_len, &conn->auth,
		      LITE_ROLE_PASSIVE, proof->mac);
	if (conn->auth.purpose != LITE_PURPOSE_JOIN)
		ret = lite_accept_peer(conn);
	else
		ret = lite_admit(conn, proof + 1,
				 LITE_MSG_MAX - sizeof(struct lite_wire_hdr) -
				 sizeof(*proof), &len);
	lite_reply(conn, msg, ret < 0 ? ret : 0, proof, sizeof(*proof) + len);
	if (ret < 0)
		lite_conn_close_when_sent(conn);
	else if (conn->auth.purpose == LITE_PURPOSE_JOIN)
		lite_publish_peer(conn, ret);
	else if (conn->auth.purpose == LITE_PURPOSE_PEER)
		lite_publish_peer(conn, conn->auth.node_id);
	kfree(proof);
}

/**
 * lite_cluster_handle_member_add - MEMBER_ADD: the manager announces a node
 * @conn: the connection it came on
 * @msg: the request: the new member's id and listen address
 *
 * The manager's table is authoritative: an entry it announces replaces
 * whatever we had for that id or address (such members are dropped as
 * lost, even one at the same address: each announce is a new member). Replies 0, -EPERM if the sender is not the manager or the id is
 * ours, or why the member could not be added. Takes node->lock; runs on
 * node->wq.
 */
void lite_cluster_handle_member_add(struct lite_conn *conn,
				    const struct lite_msg *msg)
{
	const struct lite_wire_member *m = msg->payload;
	struct lite_node *node = conn->node;
	u16 id = le16_to_cpu(m->id);
	struct lite_naddr addr;
	int old, ret;

	if (lite_wire_get_addr(&m->addr, &addr)) {
		lite_conn_close(conn);
		return;
	}
	mutex_lock(&node->lock);
	if (conn->peer_id != node->mb.manager || id == node->mb.self) {
		ret = -EPERM;	/* only the manager announces, never us */
	} else {
		/*
		 * The manager announces each admission once, with an id free
		 * in its table: one we still have names an earlier member
		 * whose removal we missed, even at the same address.
		 */
		if (lite_mbr_present(&node->mb, id))
			lite_node_drop_member(node, id, false);
		old = lite_mbr_find_addr(&node->mb, &addr);
		if (old > 0 && old != id)
			lite_node_drop_member(node, old, false);
		ret = lite_mbr_add(&node->mb, id, &addr);
		if (!ret)
			atomic64_inc(&node->stats.joins);
	}
	mutex_unlock(&node->lock);
	lite_reply(conn, msg, ret, NULL, 0);
}

/**
 * lite_cluster_handle_member_del - MEMBER_DEL: the manager dropped a member
 * @conn: the connection it came on
 * @msg: the one-way message: the member's id and whether it left
 *
 * Ignored unless it comes from the manager and names another node than
 * us. Takes node->lock; runs on node->wq.
 */
void lite_cluster_handle_member_del(struct lite_conn *conn,
				    const struct lite_msg *msg)
{
	const struct lite_wire_member_del *del = msg->payload;
	struct lite_node *node = conn->node;
	u16 id = le16_to_cpu(del->id);

	mutex_lock(&node->lock);
	if (conn->peer_id == node->mb.manager && id != node->mb.self)
		lite_node_drop_member(node, id, le16_to_cpu(del->flags) &
					      LITE_DEL_LEFT);
	mutex_unlock(&node->lock);
}

/**
 * lite_cluster_leave_seen - LEAVE on receipt
 * @conn: the connection it came on
 * @msg: the LEAVE
 *
 * Runs in the CQ handler, before the disconnect that follows closes the
 * connection: marks that the peer left, so that the close drops it as a
 * member that left rather than one that was lost.
 */
void lite_cluster_leave_seen(struct lite_conn *conn,
			     const struct lite_msg *msg)
{
	spin_lock_bh(&conn->lock);
	conn->peer_left = true;
	spin_unlock_bh(&conn->lock);
}

/**
 * lite_cluster_handle_leave - LEAVE in order
 * @conn: the connection it came on
 * @msg: the LEAVE
 *
 * What the peer sent before it was handled; now close the connection
 * (lite_cluster_conn_closed() drops the member). Runs on node->wq.
 */
void lite_cluster_handle_leave(struct lite_conn *conn,
			       const struct lite_msg *msg)
{
	lite_conn_close(conn);
}

/**
 * lite_cluster_handle_ping - PING: echo the payload back
 * @conn: the connection it came on
 * @msg: the request
 *
 * Runs on node->wq.
 */
void lite_cluster_handle_ping(struct lite_conn *conn,
			      const struct lite_msg *msg)
{
	lite_reply(conn, msg, 0, msg->payload, msg->len);
}

/**
 * lite_cluster_conn_closed - a connection to a member went away
 * @conn: the connection, from its close_work
 *
 * A member that said LEAVE is dropped. Any other stays a member: the pair
 * reconnect (health.c), and the manager's heartbeats decide whether it is
 * gone.
 */
void lite_cluster_conn_closed(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;
	u16 id = conn->peer_id;
	bool lost = false;

	mutex_lock(&node->lock);
	if (node->self_conn == conn) {
		lite_node_set_conn(node, 0, NULL);
		lost = !node->dying;
		id = 0;
	} else if (id && node->peers[id] == conn) {
		lite_node_set_conn(node, id, NULL);
		if (READ_ONCE(conn->peer_left) && !node->dying)
			lite_node_drop_member(node, id, true);
		else
			lost = !node->dying;
	}
	if (lost)
		lite_health_conn_lost(node, id);
	mutex_unlock(&node->lock);
}

/**
 * lite_cluster_reconnect - connect again to member @id (0: our loopback)
 * @node: our node
 * @id: the member, which must be older than us
 * @addr: where it listens
 * @deadline: in jiffies
 *
 * Return: 0 once the connection is READY and installed, or an error;
 * -ENOENT if the member no longer knows us (it dropped us).
 */
int lite_cluster_reconnect(struct lite_node *node, u16 id,
			   const struct lite_naddr *addr,
			   unsigned long deadline)
{
	struct lite_wire_auth proof;

	if (!id)
		return lite_cluster_self(node, deadline);
	return lite_connect_auth(node, addr, LITE_PURPOSE_PEER, id, &proof,
				 sizeof(proof), deadline);
}

/**
 * lite_cluster_leave - tell every peer we leave
 * @node: our node
 *
 * Marks the node dying (new connections are refused from now on), sends
 * LEAVE on every member connection and waits, within one deadline of
 * LITE_LEAVE_MS, until they got it (their HCAs acknowledged it). Sleeps.
 */
void lite_cluster_leave(struct lite_node *node)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(LITE_LEAVE_MS);
	struct lite_conn **to;
	int n = 0, i;
	u16 id;

	to = kcalloc(LITE_MAX_NODES, sizeof(*to), GFP_KERNEL);
	mutex_lock(&node->lock);
	node->dying = true;
	for (id = 1; to && id <= LITE_MAX_NODES; id++) {
		if (node->peers[id]) {
			to[n] = node->peers[id];
			lite_conn_get(to[n++]);
		}
	}
	mutex_unlock(&node->lock);

	for (i = 0; i < n; i++)
		lite_conn_send(to[i], LITE_MSG_LEAVE, false, 0, 0, NULL, 0);
	for (i = 0; i < n; i++) {
		lite_conn_wait_sent(to[i], deadline);
		lite_conn_put(to[i]);
	}
	kfree(to);
}

/**
 * lite_cluster_ping - measure the round trip to a member
 * @node: our node
 * @id: the member
 * @deadline: in jiffies
 * @rtt_ns: set to the time the PING took, once it was sent
 *
 * On success the round trip is also kept as the connection's last_rtt_ns.
 * Sleeps.
 *
 * Return: 0; -EINVAL if @id is us; -ENOENT if it is not a member;
 * -ENOTCONN without a connection to it; -EBADMSG if the echo differs; or
 * the error of the call (-ETIMEDOUT, -EINTR, -ECONNRESET, ...).
 */
int lite_cluster_ping(struct lite_node *node, u16 id, unsigned long deadline,
		      u64 *rtt_ns)
{
	struct lite_wire_ping ping = {}, pong;
	struct lite_conn *conn;
	bool member;
	u64 t0;
	int ret;

	mutex_lock(&node->lock);
	member = lite_mbr_present(&node->mb, id);
	if (member && id == node->mb.self)
		ret = -EINVAL;
	else
		ret = member ? 0 : -ENOENT;
	mutex_unlock(&node->lock);
	if (ret)
		return ret;
	conn = lite_node_peer(node, id);
	if (!conn)
		return -ENOTCONN;

	t0 = ktime_get_ns();
	ping.t0 = cpu_to_le64(t0);
	ret = lite_call(conn, LITE_MSG_PING, &ping, sizeof(ping), &pong,
			sizeof(pong), NULL, deadline);
	*rtt_ns = ktime_get_ns() - t0;
	if (!ret && pong.t0 != ping.t0)
		ret = -EBADMSG;
	if (!ret)
		atomic64_set(&conn->last_rtt_ns, *rtt_ns);
	lite_conn_put(conn);
	return ret;
}
