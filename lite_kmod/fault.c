// SPDX-License-Identifier: GPL-2.0
/*
 * lite fault injection, so that one guest can drive every recovery path.
 * Off by default; root sets it per node in debugfs, under
 * /sys/kernel/debug/lite/lite<instance>/ (debugfs.c makes the directory
 * and the read-only files beside these):
 *
 *   fail_posts        the next N posts (control sends and one-sided work
 *                     requests) fail with -EIO, as a broken QP would
 *   drop_rx_permille  drop this share of received control messages (their
 *                     credits still count): lost requests, replies and
 *                     heartbeats
 *   delay_rx_ms       hold each control message this long before it is
 *                     handled (process-context receive path only)
 *   delay_lmr_ms      hold each LMR a memory node allocated for us this
 *                     long between its answer and its record (a member
 *                     may leave, and its id come back, meanwhile)
 *   delay_take_ms     hold each request a blocking receive (RPC_RECV,
 *                     RPC_REPLY_RECV) took off its port this long before
 *                     it is copied out: its connection may close
 *                     meanwhile (the ring it came in frees no room past
 *                     it while it is held)
 *   break_regs        lmr isolation: the next N registrations (REG_MR) are
 *                     posted with a key of another MR's index, which rxe
 *                     refuses as a device fault would: the registration
 *                     QP goes in error and is made again (mr.c)
 *   hb_stop           send no heartbeats: the manager declares us dead
 *   break_conn        write a member id (0: the loopback connection): the
 *                     connection closes as on a transport error
 *   raw_rdma          only with the module parameter raw_rdma=1 (tests):
 *                     write "read NODE ADDR KEY LEN" or "write NODE ADDR
 *                     KEY LEN BYTE" to post one RDMA READ or WRITE of LEN
 *                     bytes (at most 64) to member NODE at any address
 *                     and key, as a hostile member kernel could, or
 *                     "writeimm NODE ADDR KEY LEN BYTE IMM" for a write
 *                     with immediate IMM (hex), which the target takes
 *                     as an RPC entry or reply; read back "status ERRNO
 *                     data HEX" - what isolation (mr.c) and the RPC
 *                     checks let through
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "internal.h"

#define LITE_RAW_MAX	64
static_assert(sizeof_field(struct lite_faults, raw_data) == LITE_RAW_MAX);

static bool lite_raw_rdma;
module_param_named(raw_rdma, lite_raw_rdma, bool, 0444);
MODULE_PARM_DESC(raw_rdma,
		 "tests only: a raw_rdma file in each node's debugfs directory posts RDMA to any address and key (default off)");

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

/**
 * lite_fault_delay_lmr - hold an allocation's answer (delay_lmr_ms)
 * @node: the requesting node; process context
 *
 * Sleeps delay_lmr_ms, at most 10 s, or until a fatal signal; returns at
 * once when it is 0.
 */
void lite_fault_delay_lmr(struct lite_node *node)
{
	u32 ms = READ_ONCE(node->faults.delay_lmr_ms);

	if (ms)
		schedule_timeout_killable(msecs_to_jiffies(min_t(u32, ms,
								 10000)));
}

/**
 * lite_fault_delay_take - hold a request a receive took (delay_take_ms)
 * @node: the receiving node; process context, no lock held
 *
 * Sleeps delay_take_ms, at most 10 s, or until a fatal signal; returns at
 * once when it is 0.
 */
void lite_fault_delay_take(struct lite_node *node)
{
	u32 ms = READ_ONCE(node->faults.delay_take_ms);

	if (ms)
		schedule_timeout_killable(msecs_to_jiffies(min_t(u32, ms,
								 10000)));
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

/* One raw RDMA op to member @id; node->faults.raw_lock held. */
static int lite_raw_post(struct lite_node *node, u16 id, u64 addr, u32 rkey,
			 u32 len, bool write, u8 byte, const u32 *imm)
{
	struct lite_chunk chunk = { .addr = addr, .len = len, .rkey = rkey };
	struct lite_layout l = { .size = len, .n_chunks = 1, .chunks = &chunk };
	struct ib_device *dev = node->ibdev->dev;
	struct lite_rdma_op op;
	struct lite_conn *conn;
	void *buf;
	u64 dma;
	int ret;

	lockdep_assert_held(&node->faults.raw_lock);
	conn = lite_node_conn(node, id);
	if (!conn)
		return -ENOTCONN;
	ret = lite_bounce_map(dev, LITE_RAW_MAX, GFP_KERNEL, &buf, &dma);
	if (ret)
		goto put;
	memset(buf, byte, LITE_RAW_MAX);
	ib_dma_sync_single_for_device(dev, dma, LITE_RAW_MAX,
				      DMA_BIDIRECTIONAL);
	lite_rdma_op_init(&op, conn, NULL);
	ret = lite_rdma_op_wait(&op, lite_rdma_post_layout(&op, &l, 0, len,
							   dma, write, imm));
	ib_dma_sync_single_for_cpu(dev, dma, LITE_RAW_MAX, DMA_BIDIRECTIONAL);
	if (!ret && !write)
		memcpy(node->faults.raw_data, buf, len);
	node->faults.raw_len = !ret && !write ? len : 0;
	lite_bounce_unmap(dev, buf, dma, LITE_RAW_MAX);
put:
	lite_conn_put(conn);
	return ret;
}

static ssize_t lite_raw_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	struct seq_file *m = file->private_data;
	struct lite_node *node = m->private;
	char cmd[96], op[9];
	unsigned int id, rkey, len, byte = 0, imm = 0;
	unsigned long long addr;
	bool write, with_imm;
	int n, ret;

	if (count >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, count))
		return -EFAULT;
	cmd[count] = 0;
	n = sscanf(cmd, "%8s %u %llx %x %u %x %x", op, &id, &addr, &rkey, &len,
		   &byte, &imm);
	with_imm = n == 7 && !strcmp(op, "writeimm");
	write = with_imm || (n == 6 && !strcmp(op, "write"));
	if (!(write || (n == 5 && !strcmp(op, "read"))) || !id ||
	    id > LITE_MAX_NODES || !len || len > LITE_RAW_MAX || byte > 0xff)
		return -EINVAL;
	mutex_lock(&node->faults.raw_lock);
	ret = lite_raw_post(node, id, addr, rkey, len, write, byte,
			    with_imm ? &imm : NULL);
	node->faults.raw_status = ret;
	mutex_unlock(&node->faults.raw_lock);
	pr_info("lite%u: raw_rdma: %s of %u bytes to node %u at %#llx key %#x: %d\n",
		node->instance, op, len, id, addr, rkey, ret);
	return count;
}

static int lite_raw_show(struct seq_file *m, void *unused)
{
	struct lite_node *node = m->private;

	mutex_lock(&node->faults.raw_lock);
	seq_printf(m, "status %d data %*phN\n", node->faults.raw_status,
		   (int)node->faults.raw_len, node->faults.raw_data);
	mutex_unlock(&node->faults.raw_lock);
	return 0;
}

static int lite_raw_open(struct inode *inode, struct file *file)
{
	if (!lite_raw_rdma)
		return -EPERM;	/* not without the module parameter */
	return single_open(file, lite_raw_show, inode->i_private);
}

static const struct file_operations lite_raw_fops = {
	.owner = THIS_MODULE,
	.open = lite_raw_open,
	.read = seq_read,
	.write = lite_raw_write,
	.llseek = seq_lseek,
	.release = single_release,
};

/**
 * lite_fault_break_reg - whether to break this registration (break_regs)
 * @node: the node registering
 *
 * Return: true if the REG_MR must be posted with a key the device refuses.
 */
bool lite_fault_break_reg(struct lite_node *node)
{
	return atomic_read(&node->faults.break_regs) > 0 &&
	       atomic_dec_if_positive(&node->faults.break_regs) >= 0;
}

/**
 * lite_fault_node_init - set up the node's fault injection
 * @node: the node
 * @dir: its debugfs directory (debugfs.c), or NULL: no faults then
 */
void lite_fault_node_init(struct lite_node *node, struct dentry *dir)
{
	mutex_init(&node->faults.raw_lock);
	if (!dir)
		return;
	debugfs_create_atomic_t("fail_posts", 0600, dir,
				&node->faults.fail_posts);
	debugfs_create_u32("drop_rx_permille", 0600, dir,
			   &node->faults.drop_rx_permille);
	debugfs_create_u32("delay_rx_ms", 0600, dir,
			   &node->faults.delay_rx_ms);
	debugfs_create_u32("delay_lmr_ms", 0600, dir,
			   &node->faults.delay_lmr_ms);
	debugfs_create_u32("delay_take_ms", 0600, dir,
			   &node->faults.delay_take_ms);
	debugfs_create_atomic_t("break_regs", 0600, dir,
				&node->faults.break_regs);
	debugfs_create_bool("hb_stop", 0600, dir, &node->faults.hb_stop);
	debugfs_create_file_unsafe("break_conn", 0200, dir, node,
				   &lite_fault_break_fops);
	debugfs_create_file("raw_rdma", 0600, dir, node, &lite_raw_fops);
}
