// SPDX-License-Identifier: GPL-2.0
/*
 * The node's face in debugfs: /sys/kernel/debug/lite/lite<instance>/.
 *
 * Read-only state, one file per concern (the table below); the fault
 * injection files of fault.c go in the same directory. What LITE_IOC_NODE_
 * STATUS reports (and `litectl status --json` prints) comes from the same
 * lite_node_status_fill(), one file per JSON object:
 *
 *   status      "KEY VALUE" lines: the status object's scalars (instance,
 *               node_id, manager_id, epoch, device, port, listen, cq_mode,
 *               isolation, expelled, no_manager)
 *   counters    "KEY VALUE": the counters object, then async_inflight and
 *               async_peak
 *   dsm, lease  "KEY VALUE": the dsm and lease objects
 *   members     a header line of the members objects' keys, then one row
 *               per member
 *
 * and what the status does not show:
 *
 *   conns       every connection: peer, direction, state, send credits,
 *               send queue slots, backlog, the RPC rings both ways (conn.c)
 *   lmrs        the LMRs made or mapped here and the bytes they hold
 *               (lmr.c)
 *   exports     the chunks this node holds for others (export.c)
 *   rpc         the RPC services and calls in flight (rpc.c)
 *   locks       the lock and barrier requests the node's memory serves
 *               (sync.c)
 *   dsm_frames  the DSM page frames of the node's regions (dsm.c)
 *
 * Numbers are decimal, ids of memory (mr_id, keys) hexadecimal; a value
 * that does not apply is "-". docs/operating.md describes every column.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "internal.h"

static struct dentry *lite_debugfs_root;

/* The names liblite gives (cq_mode_name() and friends), for the same text. */
static const char *lite_cq_mode_name(u32 mode)
{
	static const char *const names[] = {
		[LITE_CQ_DEFAULT] = "default",
		[LITE_CQ_BUSY] = "busy",
		[LITE_CQ_SOFTIRQ] = "softirq",
		[LITE_CQ_WORKQUEUE] = "workqueue",
		[LITE_CQ_ADAPTIVE] = "adaptive",
		[LITE_CQ_POLL] = "poll",
	};

	return mode < ARRAY_SIZE(names) && names[mode] ? names[mode] :
	       "unknown";
}

static const char *lite_peer_state_name(u32 state)
{
	switch (state) {
	case LITE_PEER_SELF:
		return "self";
	case LITE_PEER_CONNECTING:
		return "connecting";
	case LITE_PEER_CONNECTED:
		return "connected";
	case LITE_PEER_DOWN:
		return "down";
	}
	return "unknown";
}

/* As liblite's Endpoint::to_string(): "a.b.c.d:port" or "[v6]:port". */
static void lite_seq_addr(struct seq_file *m, const struct lite_addr *a)
{
	if (a->family == AF_INET)
		seq_printf(m, "%pI4:%u", a->addr, a->port);
	else if (a->family == AF_INET6)
		seq_printf(m, "[%pI6c]:%u", a->addr, a->port);
	else
		seq_puts(m, "-");
}

static const char *lite_bool(bool b)
{
	return b ? "true" : "false";
}

/* The status, and up to every member when @mi is wanted; NULL on -ENOMEM. */
static struct lite_node_status *lite_dbg_status(struct lite_node *node,
						struct lite_member_info **mi)
{
	struct lite_node_status *st = kzalloc(sizeof(*st), GFP_KERNEL);
	u32 cap = mi ? LITE_MAX_NODES : 0;

	if (!st)
		return NULL;
	if (mi) {
		*mi = kcalloc(cap, sizeof(**mi), GFP_KERNEL);
		if (!*mi) {
			kfree(st);
			return NULL;
		}
	}
	st->instance = node->instance;
	lite_node_status_fill(node, st, mi ? *mi : NULL, cap);
	return st;
}

static int lite_dbg_status_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_node_status *st = lite_dbg_status(node, NULL);

	if (!st)
		return -ENOMEM;
	seq_printf(m, "instance %u\n", st->instance);
	seq_printf(m, "node_id %u\n", st->node_id);
	seq_printf(m, "manager_id %u\n", st->manager_id);
	seq_printf(m, "epoch %u\n", st->epoch);
	seq_printf(m, "device %s\n", st->dev_name);
	seq_printf(m, "port %u\n", st->port_num);
	seq_puts(m, "listen ");
	lite_seq_addr(m, &st->listen);
	seq_printf(m, "\ncq_mode %s\n", lite_cq_mode_name(st->cq_mode));
	seq_printf(m, "isolation %s\n",
		   st->flags & LITE_STATUS_ISOLATED ? "lmr" : "global");
	seq_printf(m, "expelled %s\n",
		   lite_bool(st->flags & LITE_STATUS_EXPELLED));
	seq_printf(m, "no_manager %s\n",
		   lite_bool(st->flags & LITE_STATUS_NO_MANAGER));
	kfree(st);
	return 0;
}

static int lite_dbg_counters_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_node_status *st = lite_dbg_status(node, NULL);
	const struct lite_node_counters *c;

	if (!st)
		return -ENOMEM;
	c = &st->counters;
	seq_printf(m, "joins %llu\nleaves %llu\nlosses %llu\n",
		   c->joins, c->leaves, c->losses);
	seq_printf(m, "auth_failures %llu\nbad_msgs %llu\ntimeouts %llu\n",
		   c->auth_failures, c->bad_msgs, c->timeouts);
	seq_printf(m, "mem_bytes %llu\nmem_lmrs %llu\nreconnects %u\n",
		   c->mem_bytes, c->mem_lmrs, st->reconnects);
	seq_printf(m, "async_inflight %u\nasync_peak %u\n",
		   st->async_inflight, st->async_peak);
	kfree(st);
	return 0;
}

static int lite_dbg_dsm_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_node_status *st = lite_dbg_status(node, NULL);
	const struct lite_dsm_counters *d;

	if (!st)
		return -ENOMEM;
	d = &st->dsm;
	seq_printf(m, "regions %llu\npages %llu\n", d->regions, d->pages);
	seq_printf(m, "read_faults %llu\nwrite_faults %llu\n",
		   d->read_faults, d->write_faults);
	seq_printf(m, "fetches %llu\ninvalidations %llu\n",
		   d->fetches, d->invalidations);
	seq_printf(m, "home_txns %llu\nsigbus %llu\n", d->home_txns, d->sigbus);
	seq_printf(m, "prot_changes %llu\nprot_ns %llu\n",
		   d->prot_changes, d->prot_ns);
	kfree(st);
	return 0;
}

static int lite_dbg_lease_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_node_status *st = lite_dbg_status(node, NULL);
	const struct lite_lease_counters *l;

	if (!st)
		return -ENOMEM;
	l = &st->lease;
	seq_printf(m, "hits %llu\nmisses %llu\n", l->hits, l->misses);
	seq_printf(m, "stock_lmrs %llu\nstock_bytes %llu\n",
		   l->stock_lmrs, l->stock_bytes);
	seq_printf(m, "granted_lmrs %llu\ngranted_bytes %llu\n",
		   l->granted_lmrs, l->granted_bytes);
	kfree(st);
	return 0;
}

static int lite_dbg_members_show(struct seq_file *m, struct lite_node *node)
{
	struct lite_member_info *mi;
	struct lite_node_status *st = lite_dbg_status(node, &mi);
	u32 i;

	if (!st)
		return -ENOMEM;
	seq_puts(m, "node_id state addr tx_msgs rx_msgs tx_bytes rx_bytes last_rtt_ns credits backlog\n");
	for (i = 0; i < min_t(u32, st->n_members, LITE_MAX_NODES); i++) {
		seq_printf(m, "%u %s ", mi[i].node_id,
			   lite_peer_state_name(mi[i].state));
		lite_seq_addr(m, &mi[i].addr);
		seq_printf(m, " %llu %llu %llu %llu %llu %u %u\n",
			   mi[i].tx_msgs, mi[i].rx_msgs, mi[i].tx_bytes,
			   mi[i].rx_bytes, mi[i].last_rtt_ns, mi[i].credits,
			   mi[i].backlog);
	}
	kfree(mi);
	kfree(st);
	return 0;
}

/*
 * One fops per file, from its show function (which takes the node from
 * the inode): debugfs_remove() waits for a show running on the node.
 */
#define LITE_DBG_FILE(fn)						\
static int fn##_seq_show(struct seq_file *m, void *unused)		\
{									\
	return fn(m, m->private);					\
}									\
DEFINE_SHOW_ATTRIBUTE(fn##_seq)

LITE_DBG_FILE(lite_dbg_status_show);
LITE_DBG_FILE(lite_dbg_counters_show);
LITE_DBG_FILE(lite_dbg_dsm_show);
LITE_DBG_FILE(lite_dbg_lease_show);
LITE_DBG_FILE(lite_dbg_members_show);
LITE_DBG_FILE(lite_conns_show);
LITE_DBG_FILE(lite_lmrs_show);
LITE_DBG_FILE(lite_exports_show);
LITE_DBG_FILE(lite_rpc_show);
LITE_DBG_FILE(lite_sync_show);
LITE_DBG_FILE(lite_dsm_frames_show);
LITE_DBG_FILE(lite_mr_show);

static const struct {
	const char *name;
	const struct file_operations *fops;
} lite_dbg_files[] = {
	{ "status", &lite_dbg_status_show_seq_fops },
	{ "counters", &lite_dbg_counters_show_seq_fops },
	{ "dsm", &lite_dbg_dsm_show_seq_fops },
	{ "lease", &lite_dbg_lease_show_seq_fops },
	{ "members", &lite_dbg_members_show_seq_fops },
	{ "conns", &lite_conns_show_seq_fops },			/* conn.c */
	{ "lmrs", &lite_lmrs_show_seq_fops },			/* lmr.c */
	{ "exports", &lite_exports_show_seq_fops },		/* export.c */
	{ "rpc", &lite_rpc_show_seq_fops },			/* rpc.c */
	{ "locks", &lite_sync_show_seq_fops },			/* sync.c */
	{ "dsm_frames", &lite_dsm_frames_show_seq_fops },	/* dsm.c */
	{ "mr", &lite_mr_show_seq_fops },			/* mr.c */
};

/**
 * lite_debugfs_node_init - create the node's debugfs directory and files
 * @node: the node, set up but not yet published; its files go before it
 *	does (lite_debugfs_node_exit())
 *
 * Without debugfs the node has no files (and no fault injection).
 */
void lite_debugfs_node_init(struct lite_node *node)
{
	struct dentry *d = NULL;
	char name[24];
	int i;

	if (lite_debugfs_root) {
		snprintf(name, sizeof(name), "lite%u", node->instance);
		d = debugfs_create_dir(name, lite_debugfs_root);
		if (IS_ERR(d))
			d = NULL;
	}
	node->debugfs = d;
	lite_fault_node_init(node, d);
	if (!d)
		return;
	for (i = 0; i < ARRAY_SIZE(lite_dbg_files); i++)
		debugfs_create_file(lite_dbg_files[i].name, 0400, d, node,
				    lite_dbg_files[i].fops);
}

/**
 * lite_debugfs_node_exit - remove the node's debugfs files
 * @node: the node; returns once no file operation runs on it
 */
void lite_debugfs_node_exit(struct lite_node *node)
{
	debugfs_remove(node->debugfs);
	node->debugfs = NULL;
}

/**
 * lite_debugfs_init - create /sys/kernel/debug/lite
 *
 * Called at module load. If debugfs fails, nodes get no files and every
 * fault stays off.
 */
void lite_debugfs_init(void)
{
	struct dentry *d = debugfs_create_dir("lite", NULL);

	lite_debugfs_root = IS_ERR(d) ? NULL : d;
}

/**
 * lite_debugfs_exit - remove /sys/kernel/debug/lite
 *
 * Called at module unload (or when loading fails), once no node is left.
 */
void lite_debugfs_exit(void)
{
	debugfs_remove(lite_debugfs_root);
	lite_debugfs_root = NULL;
}
