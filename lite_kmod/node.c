// SPDX-License-Identifier: GPL-2.0
/*
 * lite node instances: creation on a device port, the rdma_cm listener,
 * reference counting and teardown.
 */
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/random.h>

#include "internal.h"

/* How often lite_node_close_conns() says whom it still waits for. */
#define LITE_CONNS_GONE_WARN_S	30

/**
 * lite_sockaddr_to_naddr - convert a socket address to lite's form
 * @sa: an IPv4 or IPv6 socket address
 * @a: the address and port, zeroed first
 *
 * Return: 0, or -EAFNOSUPPORT for another family.
 */
int lite_sockaddr_to_naddr(const struct sockaddr_storage *sa,
			   struct lite_naddr *a)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	memset(a, 0, sizeof(*a));
	switch (sa->ss_family) {
	case AF_INET:
		a->family = LITE_WIRE_AF_INET;
		a->port = ntohs(sin->sin_port);
		memcpy(a->addr, &sin->sin_addr, 4);
		return 0;
	case AF_INET6:
		a->family = LITE_WIRE_AF_INET6;
		a->port = ntohs(sin6->sin6_port);
		memcpy(a->addr, &sin6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/**
 * lite_naddr_to_sockaddr - convert lite's address form to a socket address
 * @a: the address; anything not IPv4 is taken as IPv6
 * @sa: the socket address, zeroed first
 */
void lite_naddr_to_sockaddr(const struct lite_naddr *a,
			    struct sockaddr_storage *sa)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)sa;

	memset(sa, 0, sizeof(*sa));
	if (a->family == LITE_WIRE_AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		memcpy(&sin->sin_addr, a->addr, 4);
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a->port);
		memcpy(&sin6->sin6_addr, a->addr, 16);
	}
}

static void lite_node_release(struct kref *ref)
{
	struct lite_node *node = container_of(ref, struct lite_node, ref);

	WARN_ON(!xa_empty(&node->calls));
	xa_destroy(&node->calls);
	WARN_ON(!xa_empty(&node->rpc_calls));
	WARN_ON(!list_empty(&node->sync_waits));
	WARN_ON(!list_empty(&node->rcalls_async));
	xa_destroy(&node->rpc_calls);
	xa_destroy(&node->rpc_held);
	xa_destroy(&node->services);
	lite_quota_destroy(node);
	lite_lease_node_free(node);
	kfree_sensitive(node->secret);
	kfree(node);
}

/**
 * lite_node_get - take another reference on a node
 * @node: the node; the caller already holds a reference
 */
void lite_node_get(struct lite_node *node)
{
	kref_get(&node->ref);
}

/**
 * lite_node_put - drop a reference on a node
 * @node: the node
 *
 * The last put frees it (and wipes its secret); by then
 * lite_node_destroy() has torn everything else down.
 */
void lite_node_put(struct lite_node *node)
{
	kref_put(&node->ref, lite_node_release);
}

/**
 * lite_node_peer - the connection to a member, with a reference
 * @node: the node
 * @id: the member's id
 *
 * Takes @node->lock: may sleep.
 *
 * Return: a READY connection to member @id with a reference, or NULL if
 * there is none (or @id is out of range).
 */
struct lite_conn *lite_node_peer(struct lite_node *node, u16 id)
{
	struct lite_conn *conn = NULL;

	if (!id || id > LITE_MAX_NODES)
		return NULL;
	mutex_lock(&node->lock);
	if (node->peers[id]) {
		conn = node->peers[id];
		lite_conn_get(conn);
	}
	mutex_unlock(&node->lock);
	return conn;
}

/* The listener only sees connect requests; they become connections. */
static int lite_listen_event(struct lite_node *node, struct rdma_cm_id *id,
			     struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return lite_conn_accept(node, id, ev);
	/*
	 * DEVICE_REMOVAL cannot reach us: our ib_client is removed before
	 * rdma_cm's, and it destroys this id first.
	 */
	return 0;
}

/**
 * lite_cm_handler - one rdma_cm handler for listeners and connections
 * @id: the cm_id; its context says whether it is a node's listener or a
 *	connection's
 * @ev: the event
 *
 * A listener only acts on connect requests (lite_conn_accept()); the rest
 * goes to lite_conn_cm_event(). Context: rdma_cm's handler_mutex of @id.
 *
 * Return: non-zero only when a connect request made no connection:
 * rdma_cm then rejects it and destroys @id. Otherwise 0.
 */
int lite_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	enum lite_cm_kind *kind = id->context;

	if (*kind == LITE_CM_LISTENER)
		return lite_listen_event(container_of(kind, struct lite_node,
						      cm_kind), id, ev);
	return lite_conn_cm_event(container_of(kind, struct lite_conn, cm_kind),
				  id, ev);
}

static int lite_node_listen(struct lite_node *node)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(&init_net, lite_cm_handler, &node->cm_kind,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = rdma_bind_addr(id, (struct sockaddr *)&node->listen_sa);
	/*
	 * rdma_cm says ENODEV when the address is a local one that no RDMA
	 * device serves: as for an address of another device, the address is
	 * the problem (ENODEV is for a device name that does not exist).
	 */
	if (ret == -ENODEV)
		ret = -EADDRNOTAVAIL;
	if (ret)
		goto err_id;
	/* The address must belong to this node's device and port. */
	if (id->device != node->ibdev->dev || id->port_num != node->port_num) {
		ret = -EADDRNOTAVAIL;
		goto err_id;
	}
	ret = rdma_listen(id, LITE_LISTEN_BACKLOG);
	if (ret)
		goto err_id;
	node->listen_id = id;
	return 0;

err_id:
	rdma_destroy_id(id);
	return ret;
}

static int lite_node_alloc_wqs(struct lite_node *node)
{
	node->wq = alloc_ordered_workqueue("lite%u_rx", WQ_MEM_RECLAIM,
					   node->instance);
	if (!node->wq)
		return -ENOMEM;
	node->close_wq = alloc_workqueue("lite%u_close", WQ_UNBOUND, 0,
					 node->instance);
	if (!node->close_wq)
		goto err_wq;
	node->cq_wq = alloc_workqueue("lite%u_cq", WQ_UNBOUND | WQ_HIGHPRI, 0,
				      node->instance);
	if (!node->cq_wq)
		goto err_close_wq;
	/* Heartbeats must not wait behind a reconnect: two at a time. */
	node->heal_wq = alloc_workqueue("lite%u_heal", WQ_UNBOUND, 2,
					node->instance);
	if (!node->heal_wq)
		goto err_cq_wq;
	/* Allocations take long: never on the ordered queue (export.c). */
	node->alloc_wq = alloc_workqueue("lite%u_alloc", WQ_UNBOUND, 0,
					 node->instance);
	if (!node->alloc_wq)
		goto err_heal_wq;
	/* DSM fetches and asks wait for each other: unordered. */
	node->dsm_wq = alloc_workqueue("lite%u_dsm", WQ_UNBOUND, 0,
				       node->instance);
	if (!node->dsm_wq)
		goto err_alloc_wq;
	return 0;

err_alloc_wq:
	destroy_workqueue(node->alloc_wq);
err_heal_wq:
	destroy_workqueue(node->heal_wq);
err_cq_wq:
	destroy_workqueue(node->cq_wq);
err_close_wq:
	destroy_workqueue(node->close_wq);
err_wq:
	destroy_workqueue(node->wq);
	return -ENOMEM;
}

/**
 * lite_node_create - create a node instance listening on @listen
 * @ctx: the module's instance list
 * @ibdev: the device the node lives on
 * @port_num: its port; @listen must be an address of it
 * @listen: the address to listen on
 * @secret: the cluster's shared secret, copied
 * @secret_len: its length
 * @cq_mode: how completions are delivered (LITE_CQ_*, never DEFAULT)
 * @isolation: what peers may reach (LITE_ISOLATION_*, never DEFAULT)
 *
 * Called with @ctx->lock held; sleeps. The node has an instance number
 * but is not visible to lookups and has no cluster role yet; the caller
 * makes it a manager or joins it, then publishes it
 * (lite_node_publish()).
 *
 * Return: the node, holding one reference for the caller, or an ERR_PTR:
 * -ENOMEM, -EAFNOSUPPORT, -EADDRNOTAVAIL if @listen is not an address of
 * @ibdev's port @port_num, or the error of the verbs or rdma_cm call that
 * failed.
 */
struct lite_node *lite_node_create(struct lite_ctx *ctx,
				   struct lite_ibdev *ibdev, u32 port_num,
				   const struct sockaddr_storage *listen,
				   const u8 *secret, u32 secret_len,
				   u32 cq_mode, u32 isolation)
{
	struct lite_node *node;
	u32 instance;
	int ret;

	lockdep_assert_held(&ctx->lock);
	node = kzalloc(sizeof(*node), GFP_KERNEL);
	if (!node)
		return ERR_PTR(-ENOMEM);
	node->cm_kind = LITE_CM_LISTENER;
	kref_init(&node->ref);
	mutex_init(&node->lock);
	spin_lock_init(&node->peers_lock);
	INIT_LIST_HEAD(&node->conns);
	INIT_LIST_HEAD(&node->dev_entry);
	init_waitqueue_head(&node->conns_wq);
	/*
	 * The xarrays set up here share one lockdep class, and some are used
	 * from softirq: all of them take their lock with bh disabled.
	 */
	xa_init_flags(&node->calls, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	xa_init_flags(&node->exports, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	node->cq_mode = cq_mode;
	node->isolation = isolation;
	spin_lock_init(&node->poll_lock);
	INIT_LIST_HEAD(&node->poll_conns);
	xa_init_flags(&node->services, XA_FLAGS_LOCK_BH);
	xa_init_flags(&node->rpc_calls, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
	spin_lock_init(&node->rcall_lock);
	INIT_LIST_HEAD(&node->rcalls_async);
	spin_lock_init(&node->stage_lock);
	xa_init_flags(&node->rpc_held, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
	INIT_LIST_HEAD(&node->sync_waits);
	INIT_LIST_HEAD(&node->orphans);
	INIT_LIST_HEAD(&node->alloc_jobs);
	INIT_LIST_HEAD(&node->lmrs);
	lite_lease_node_init(node);
	lite_quota_init(node);
	node->nonce = get_random_u32();
	INIT_LIST_HEAD(&node->shares);
	INIT_DELAYED_WORK(&node->reap_work, lite_exports_reap);
	lite_health_init(node);
	lite_dsm_node_init(node);
	lite_mbr_init(&node->mb);
	node->ibdev = ibdev;
	strscpy(node->dev_name, dev_name(&ibdev->dev->dev),
		sizeof(node->dev_name));
	node->port_num = port_num;
	node->listen_sa = *listen;
	ret = lite_sockaddr_to_naddr(listen, &node->listen_addr);
	if (ret)
		goto err_free;

	node->secret = kmemdup(secret, secret_len, GFP_KERNEL);
	if (!node->secret) {
		ret = -ENOMEM;
		goto err_free;
	}
	node->secret_len = secret_len;

	/* Reserved now, visible once lite_node_publish() stores it. */
	ret = xa_alloc(&ctx->nodes, &instance, NULL, xa_limit_31b, GFP_KERNEL);
	if (ret)
		goto err_free;
	node->instance = instance;

	ret = lite_node_alloc_wqs(node);
	if (ret)
		goto err_xa;

	node->pd = ib_alloc_pd(ibdev->dev, 0);
	if (IS_ERR(node->pd)) {
		ret = PTR_ERR(node->pd);
		goto err_wq;
	}
	ret = lite_mr_init(node);
	if (ret)
		goto err_pd;

	ret = lite_poller_start(node);
	if (ret)
		goto err_mr;
	ret = lite_node_listen(node);
	if (ret)
		goto err_poller;
	list_add_tail(&node->dev_entry, &ibdev->nodes);
	lite_debugfs_node_init(node);
	lite_dsm_start(node);
	return node;

err_poller:
	lite_poller_stop(node);
err_mr:
	lite_mr_exit(node);
err_pd:
	ib_dealloc_pd(node->pd);
err_wq:
	destroy_workqueue(node->dsm_wq);
	destroy_workqueue(node->alloc_wq);
	destroy_workqueue(node->heal_wq);
	destroy_workqueue(node->cq_wq);
	destroy_workqueue(node->close_wq);
	destroy_workqueue(node->wq);
err_xa:
	xa_erase(&ctx->nodes, node->instance);
err_free:
	lite_node_put(node);
	return ERR_PTR(ret);
}

/* Status: LITE_IOC_NODE_STATUS (chardev.c) and debugfs (debugfs.c). */

static void lite_addr_to_user(const struct lite_naddr *a, struct lite_addr *ua)
{
	memset(ua, 0, sizeof(*ua));
	ua->family = a->family == LITE_WIRE_AF_INET ? AF_INET : AF_INET6;
	ua->port = a->port;
	memcpy(ua->addr, a->addr, a->family == LITE_WIRE_AF_INET ? 4 : 16);
}

static u32 lite_peer_state(struct lite_node *node, u16 id)
{
	struct lite_conn *conn = node->peers[id];

	if (id == node->mb.self)
		return LITE_PEER_SELF;
	if (!conn)
		return LITE_PEER_CONNECTING;
	return lite_conn_state(conn) == LITE_CONN_READY ?
	       LITE_PEER_CONNECTED : LITE_PEER_DOWN;
}

static void lite_member_fill(struct lite_node *node, u16 id,
			     struct lite_member_info *mi)
{
	struct lite_conn *conn = node->peers[id];
	unsigned long flags;

	memset(mi, 0, sizeof(*mi));
	mi->node_id = id;
	mi->state = lite_peer_state(node, id);
	lite_addr_to_user(&node->mb.addr[id], &mi->addr);
	if (!conn)
		return;
	mi->tx_msgs = atomic64_read(&conn->tx_msgs);
	mi->rx_msgs = atomic64_read(&conn->rx_msgs);
	mi->tx_bytes = atomic64_read(&conn->tx_bytes);
	mi->rx_bytes = atomic64_read(&conn->rx_bytes);
	mi->last_rtt_ns = atomic64_read(&conn->last_rtt_ns);
	spin_lock_irqsave(&conn->lock, flags);
	mi->credits = conn->credits.send;
	mi->backlog = conn->n_backlog;
	spin_unlock_irqrestore(&conn->lock, flags);
}

/**
 * lite_node_status_fill - what LITE_IOC_NODE_STATUS and debugfs report
 * @node: the node
 * @st: filled but for the caller's inputs (instance, members_cap/ptr)
 * @mi: room for @cap member entries, or NULL with @cap 0
 * @cap: entries at @mi; st->n_members tells how many there were
 *
 * Takes node->lock; sleeps.
 */
void lite_node_status_fill(struct lite_node *node, struct lite_node_status *st,
			   struct lite_member_info *mi, u32 cap)
{
	struct lite_node_counters *c = &st->counters;
	u32 n = 0;
	u16 id;

	mutex_lock(&node->lock);
	st->node_id = node->mb.self;
	st->manager_id = node->mb.manager;
	st->n_members = node->mb.count;
	st->epoch = node->mb.epoch;
	st->flags = (node->expelled ? LITE_STATUS_EXPELLED : 0) |
		    (node->mb.self && !lite_mbr_present(&node->mb,
							node->mb.manager) ?
		     LITE_STATUS_NO_MANAGER : 0) |
		    (lite_isolated(node) ? LITE_STATUS_ISOLATED : 0);
	for (id = 1; id <= LITE_MAX_NODES && n < cap; id++)
		if (lite_mbr_present(&node->mb, id))
			lite_member_fill(node, id, &mi[n++]);
	mutex_unlock(&node->lock);

	strscpy(st->dev_name, node->dev_name, sizeof(st->dev_name));
	st->port_num = node->port_num;
	st->cq_mode = node->cq_mode;
	lite_addr_to_user(&node->listen_addr, &st->listen);
	c->joins = atomic64_read(&node->stats.joins);
	c->leaves = atomic64_read(&node->stats.leaves);
	c->losses = atomic64_read(&node->stats.losses);
	c->auth_failures = atomic64_read(&node->stats.auth_failures);
	c->bad_msgs = atomic64_read(&node->stats.bad_msgs);
	c->timeouts = atomic64_read(&node->stats.timeouts);
	c->mem_bytes = atomic64_read(&node->mem_bytes);
	c->mem_lmrs = atomic64_read(&node->mem_lmrs);
	st->lease.hits = atomic64_read(&node->stats.lease_hits);
	st->lease.misses = atomic64_read(&node->stats.lease_misses);
	st->lease.stock_lmrs = atomic64_read(&node->stats.lease_stock_lmrs);
	st->lease.stock_bytes = atomic64_read(&node->stats.lease_stock_bytes);
	st->lease.granted_lmrs = atomic64_read(&node->stats.lease_lmrs);
	st->lease.granted_bytes = atomic64_read(&node->stats.lease_bytes);
	st->async_inflight = atomic_read(&node->aops);
	st->async_peak = atomic_read(&node->aops_peak);
	st->reconnects = (u32)atomic64_read(&node->stats.reconnects);
	st->dsm.regions = atomic64_read(&node->dsm_stats.regions);
	st->dsm.pages = atomic64_read(&node->dsm_stats.pages);
	st->dsm.read_faults = atomic64_read(&node->dsm_stats.read_faults);
	st->dsm.write_faults = atomic64_read(&node->dsm_stats.write_faults);
	st->dsm.fetches = atomic64_read(&node->dsm_stats.fetches);
	st->dsm.invalidations = atomic64_read(&node->dsm_stats.invalidations);
	st->dsm.home_txns = atomic64_read(&node->dsm_stats.home_txns);
	st->dsm.sigbus = atomic64_read(&node->dsm_stats.sigbus);
	st->dsm.prot_changes = atomic64_read(&node->dsm_stats.prot_changes);
	st->dsm.prot_ns = atomic64_read(&node->dsm_stats.prot_ns);
}

/**
 * lite_node_publish - make a node that is up visible to lookups
 * @ctx: the module's instance list
 * @node: the node, a manager or joined
 *
 * Also starts its heartbeats and reconnects. Called with @ctx->lock held.
 */
void lite_node_publish(struct lite_ctx *ctx, struct lite_node *node)
{
	lockdep_assert_held(&ctx->lock);
	xa_store(&ctx->nodes, node->instance, node, GFP_KERNEL);
	lite_health_start(node);
}

/* Close every connection and wait until all of them are released. */
static void lite_node_close_conns(struct lite_node *node)
{
	struct lite_conn *conn;

	mutex_lock(&node->lock);
	list_for_each_entry(conn, &node->conns, node_entry)
		lite_conn_close(conn);	/* idempotent, never takes node->lock */
	mutex_unlock(&node->lock);
	/*
	 * close_work and queued requests drop the last references. A
	 * reference nothing drops is a bug: name the connections it holds.
	 */
	while (!wait_event_timeout(node->conns_wq, !atomic_read(&node->n_conns),
				   LITE_CONNS_GONE_WARN_S * HZ)) {
		pr_warn("lite%u: waiting for %d connections to be released\n",
			node->instance, atomic_read(&node->n_conns));
		mutex_lock(&node->lock);
		list_for_each_entry(conn, &node->conns, node_entry)
			pr_warn("lite%u: connection to node %u (state %d): %u references\n",
				node->instance, conn->peer_id, lite_conn_state(conn),
				kref_read(&conn->ref));
		mutex_unlock(&node->lock);
	}
}

/**
 * lite_node_destroy - leave the cluster and free everything
 * @ctx: the module's instance list
 * @node: the node
 *
 * Called with @ctx->lock held, from NODE_DOWN, device removal or rmmod.
 * Sleeps until every connection is released and every work item is done;
 * drops the reference lite_node_create() gave.
 */
void lite_node_destroy(struct lite_ctx *ctx, struct lite_node *node)
{
	lockdep_assert_held(&ctx->lock);

	lite_cluster_leave(node);	/* sets dying, tells the peers */
	lite_lease_node_down(node);	/* before close_wq goes */
	lite_health_stop(node);
	lite_dsm_node_down(node);
	lite_debugfs_node_exit(node);
	rdma_destroy_id(node->listen_id);
	node->listen_id = NULL;
	lite_rpc_node_down(node);	/* what it holds keeps conns alive */
	lite_node_close_conns(node);
	lite_rpc_calls_orphan(node);	/* before the device goes */
	lite_bounce_close(node);	/* a late user frees its own */
	lite_poller_stop(node);
	lite_dsm_node_free(node);	/* after the drain: no fetch runs */

	destroy_workqueue(node->heal_wq);
	destroy_workqueue(node->cq_wq);
	destroy_workqueue(node->wq);
	/* Each job held a connection: none is left, nor any job. */
	destroy_workqueue(node->alloc_wq);
	WARN_ON(!list_empty(&node->alloc_jobs));
	cancel_delayed_work_sync(&node->reap_work);
	destroy_workqueue(node->close_wq);
	lite_exports_free_all(node);
	lite_shares_free_all(node);
	/* Buffers of lmr mode release their keys in process context. */
	wait_event(node->conns_wq, !atomic_read(&node->kbufs_dying));
	lite_mr_exit(node);
	ib_dealloc_pd(node->pd);
	list_del_init(&node->dev_entry);
	xa_erase(&ctx->nodes, node->instance);
	lite_node_put(node);
}
