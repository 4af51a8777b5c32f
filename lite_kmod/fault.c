// SPDX-License-Identifier: GPL-2.0
/*
 * lite fault injection, so that one guest can drive every recovery path.
 * Off by default; root sets it per node in debugfs, under
 * /sys/kernel/debug/lite/lite<instance>/:
 *
 *   fail_posts        the next N posts (control sends and one-sided work
 *                     requests) fail with -EIO, as a broken QP would
 *   drop_rx_permille  drop this share of received control messages (their
 *                     credits still count): lost requests, replies and
 *                     heartbeats
 *   delay_rx_ms       hold each control message this long before it is
 *                     handled (process-context receive path only)
 *   hb_stop           send no heartbeats: the manager declares us dead
 *   break_conn        write a member id (0: the loopback connection): the
 *                     connection closes as on a transport error
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/random.h>

#include "internal.h"

static struct dentry *lite_debugfs_root;

/**
 * lite_fault_fail_post - whether to fail this post (fail_posts)
 * @node: the node posting
 *
 * Return: true if the post must fail with -EIO instead of being made.
 */
bool lite_fault_fail_post(struct lite_node *node)
{
	return atomic_read(&node->faults.fail_posts) > 0 &&
	       atomic_dec_if_positive(&node->faults.fail_posts) >= 0;
}

/**
 * lite_fault_drop_rx - whether to drop this received message
 * @node: the receiving node
 * @msg: the message; CREDIT messages carry nothing else and are kept
 *
 * Return: true if the message must be ignored (drop_rx_permille).
 */
bool lite_fault_drop_rx(struct lite_node *node, const struct lite_msg *msg)
{
	u32 permille = READ_ONCE(node->faults.drop_rx_permille);

	if (!permille || msg->type == LITE_MSG_CREDIT)
		return false;
	return get_random_u32_below(1000) < permille;
}

/**
 * lite_fault_delay_rx - hold a control message (delay_rx_ms)
 * @node: the receiving node; process context
 *
 * Sleeps delay_rx_ms, at most 10 s; returns at once when it is 0.
 */
void lite_fault_delay_rx(struct lite_node *node)
{
	u32 ms = READ_ONCE(node->faults.delay_rx_ms);

	if (ms)
		msleep(min_t(u32, ms, 10000));
}

/* break_conn: close the connection to a member as a transport error. */
static int lite_fault_break_set(void *data, u64 val)
{
	struct lite_node *node = data;
	struct lite_conn *conn;

	if (val > LITE_MAX_NODES)
		return -EINVAL;
	conn = lite_node_conn(node, val ?: READ_ONCE(node->self_id));
	if (!conn)
		return -ENOTCONN;
	pr_info("lite%u: fault injection: breaking the connection to node %llu\n",
		node->instance, val);
	lite_conn_close(conn);
	lite_conn_put(conn);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(lite_fault_break_fops, NULL, lite_fault_break_set,
			 "%llu\n");

/**
 * lite_fault_node_init - create the node's fault injection files
 * @node: the node; its files go before it does (lite_fault_node_exit())
 */
void lite_fault_node_init(struct lite_node *node)
{
	char name[24];
	struct dentry *d;

	if (!lite_debugfs_root)
		return;
	snprintf(name, sizeof(name), "lite%u", node->instance);
	d = debugfs_create_dir(name, lite_debugfs_root);
	node->debugfs = d;
	debugfs_create_atomic_t("fail_posts", 0600, d,
				&node->faults.fail_posts);
	debugfs_create_u32("drop_rx_permille", 0600, d,
			   &node->faults.drop_rx_permille);
	debugfs_create_u32("delay_rx_ms", 0600, d, &node->faults.delay_rx_ms);
	debugfs_create_bool("hb_stop", 0600, d, &node->faults.hb_stop);
	debugfs_create_file_unsafe("break_conn", 0200, d, node,
				   &lite_fault_break_fops);
}

/**
 * lite_fault_node_exit - remove the node's fault injection files
 * @node: the node; returns once no file operation runs on it
 */
void lite_fault_node_exit(struct lite_node *node)
{
	debugfs_remove(node->debugfs);
	node->debugfs = NULL;
}

/**
 * lite_fault_init - create /sys/kernel/debug/lite
 *
 * Called at module load. If debugfs fails, nodes get no fault injection
 * files and every fault stays off.
 */
void lite_fault_init(void)
{
	struct dentry *d = debugfs_create_dir("lite", NULL);

	lite_debugfs_root = IS_ERR(d) ? NULL : d;
}

/**
 * lite_fault_exit - remove /sys/kernel/debug/lite
 *
 * Called at module unload (or when loading fails), once no node is left.
 */
void lite_fault_exit(void)
{
	debugfs_remove(lite_debugfs_root);
	lite_debugfs_root = NULL;
}
