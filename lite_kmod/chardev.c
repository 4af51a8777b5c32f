// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/lite: the misc device and its ioctl commands, one handler each.
 * Every command checks reserved fields and flags before acting.
 */
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>

#include "internal.h"

static bool lite_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

static struct lite_ctx *lite_file_ctx(struct file *file)
{
	return ((struct lite_file *)file->private_data)->ctx;
}

/* Validate a uapi address and convert it. @port_required for listen. */
static int lite_addr_from_user(const struct lite_addr *ua,
			       struct sockaddr_storage *sa)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)sa;

	if (ua->reserved || !ua->port)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	switch (ua->family) {
	case AF_INET:
		if (!lite_zero(ua->addr + 4, sizeof(ua->addr) - 4))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(ua->port);
		memcpy(&sin->sin_addr, ua->addr, 4);
		if (ipv4_is_zeronet(sin->sin_addr.s_addr) ||
		    ipv4_is_multicast(sin->sin_addr.s_addr))
			return -EINVAL;	/* a node needs a real address */
		return 0;
	case AF_INET6:
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ua->port);
		memcpy(&sin6->sin6_addr, ua->addr, 16);
		if (ipv6_addr_any(&sin6->sin6_addr))
			return -EINVAL;
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* Find an instance and take a reference; NULL if there is none. */
static struct lite_node *lite_node_lookup(struct lite_ctx *ctx, u32 instance)
{
	struct lite_node *node;

	xa_lock(&ctx->nodes);
	node = xa_load(&ctx->nodes, instance);
	if (node)
		lite_node_get(node);
	xa_unlock(&ctx->nodes);
	return node;
}

static long lite_ioc_get_info(struct lite_ctx *ctx, void __user *argp)
{
	struct lite_info info, in;
	struct lite_node *node;
	unsigned long idx;
	u32 *ids = NULL, n = 0;
	long ret = 0;

	if (copy_from_user(&info, argp, sizeof(info)))
		return -EFAULT;
	memset(&in, 0, sizeof(in));
	in.instances_ptr = info.instances_ptr;
	in.instances_cap = info.instances_cap;
	if (memcmp(&in, &info, sizeof(info)))
		return -EINVAL;		/* outputs and reserved must be 0 */
	if (info.instances_cap && !info.instances_ptr)
		return -EINVAL;
	if (info.instances_cap) {
		ids = kcalloc(min_t(u32, info.instances_cap, LITE_MAX_NODES * 4),
			      sizeof(*ids), GFP_KERNEL);
		if (!ids)
			return -ENOMEM;
	}

	/* Snapshot under the lock, copy out after: no faults under it. */
	mutex_lock(&ctx->lock);
	xa_for_each(&ctx->nodes, idx, node) {
		if (ids && n < min_t(u32, info.instances_cap, LITE_MAX_NODES * 4))
			ids[n] = idx;
		n++;
	}
	mutex_unlock(&ctx->lock);

	if (ids && copy_to_user(u64_to_user_ptr(info.instances_ptr), ids,
				min(n, info.instances_cap) * sizeof(*ids)))
		ret = -EFAULT;
	kfree(ids);
	if (ret)
		return ret;
	info.abi_version = LITE_ABI_VERSION;
	info.n_instances = n;
	return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
}

static int lite_up_check(const struct lite_node_up *up)
{
	if (!lite_zero(up->reserved, sizeof(up->reserved)))
		return -EINVAL;
	if (up->flags & ~LITE_UP_FLAGS_ALL)
		return -EINVAL;
	if (up->instance || up->node_id)
		return -EINVAL;		/* outputs must come in zeroed */
	if (!memchr(up->dev_name, 0, sizeof(up->dev_name)) ||
	    !up->dev_name[0])
		return -EINVAL;
	if (!(up->flags & LITE_UP_JOIN) &&
	    !lite_zero(&up->join, sizeof(up->join)))
		return -EINVAL;
	if (up->timeout_ms > LITE_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (up->cq_mode > LITE_CQ_MODE_MAX ||
	    up->isolation > LITE_ISOLATION_MAX)
		return -EINVAL;
	if (!up->secret_len)
		return -ENOKEY;		/* no cluster without a secret */
	if (up->secret_len < LITE_SECRET_MIN ||
	    up->secret_len > LITE_SECRET_MAX || !up->secret_ptr)
		return -EINVAL;
	return 0;
}

/* Become the manager of a new cluster, or join one. ctx->lock held. */
static int lite_node_start(struct lite_ctx *ctx, struct lite_node_up *up,
			   const struct sockaddr_storage *listen,
			   const struct sockaddr_storage *join, u8 *secret)
{
	struct lite_ibdev *ibdev;
	struct lite_node *node;
	struct lite_naddr mgr;
	u32 port = up->port_num;
	int ret;

	ibdev = lite_find_ibdev(ctx, up->dev_name);
	if (!ibdev)
		return -ENODEV;
	if (!port)
		port = rdma_start_port(ibdev->dev);
	if (!rdma_is_port_valid(ibdev->dev, port))
		return -ENXIO;

	node = lite_node_create(ctx, ibdev, port, listen, secret,
				up->secret_len,
				up->cq_mode ?: lite_tun(cq_mode),
				lite_mr_isolation(up->isolation));
	if (IS_ERR(node))
		return PTR_ERR(node);

	if (up->flags & LITE_UP_JOIN) {
		lite_sockaddr_to_naddr(join, &mgr);
		ret = lite_cluster_join(node, &mgr, jiffies +
			msecs_to_jiffies(up->timeout_ms ?: LITE_JOIN_TIMEOUT_MS));
		if (ret) {
			lite_node_destroy(ctx, node);
			return ret;
		}
	} else {
		mutex_lock(&node->lock);
		lite_mbr_init_manager(&node->mb, &node->listen_addr);
		WRITE_ONCE(node->self_id, node->mb.self);
		mutex_unlock(&node->lock);
		pr_info("lite%u: manager of a new cluster, node 1\n",
			node->instance);
	}
	ret = lite_cluster_self(node, lite_tun_deadline(call_timeout_ms));
	if (ret) {
		lite_node_destroy(ctx, node);
		return ret;
	}
	lite_node_publish(ctx, node);
	up->instance = node->instance;
	up->node_id = node->self_id;
	return 0;
}

static long lite_ioc_node_up(struct lite_ctx *ctx, void __user *argp)
{
	struct sockaddr_storage listen, join;
	struct lite_node_up up;
	u8 *secret;
	int ret;

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	if (copy_from_user(&up, argp, sizeof(up)))
		return -EFAULT;
	ret = lite_up_check(&up);
	if (ret)
		return ret;
	ret = lite_addr_from_user(&up.listen, &listen);
	if (ret)
		return ret;
	if (up.flags & LITE_UP_JOIN) {
		ret = lite_addr_from_user(&up.join, &join);
		if (ret)
			return ret;
	}
	secret = memdup_user(u64_to_user_ptr(up.secret_ptr), up.secret_len);
	if (IS_ERR(secret))
		return PTR_ERR(secret);

	ret = mutex_lock_killable(&ctx->lock);
	if (ret)
		goto out;
	ret = lite_node_start(ctx, &up, &listen, &join, secret);
	if (!ret && copy_to_user(argp, &up, sizeof(up))) {
		/* The caller could never name it: take it down again. */
		lite_node_destroy(ctx, xa_load(&ctx->nodes, up.instance));
		ret = -EFAULT;
	}
	mutex_unlock(&ctx->lock);
out:
	kfree_sensitive(secret);
	return ret;
}

static long lite_ioc_node_down(struct lite_ctx *ctx, void __user *argp)
{
	struct lite_node_down down;
	struct lite_node *node;
	int ret = 0;

	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	if (copy_from_user(&down, argp, sizeof(down)))
		return -EFAULT;
	if (down.flags || !lite_zero(down.reserved, sizeof(down.reserved)))
		return -EINVAL;

	ret = mutex_lock_killable(&ctx->lock);
	if (ret)
		return ret;
	node = xa_load(&ctx->nodes, down.instance);
	if (node)
		lite_node_destroy(ctx, node);
	else
		ret = -ENOENT;
	mutex_unlock(&ctx->lock);
	return ret;
}

static long lite_ioc_node_status(struct lite_ctx *ctx, void __user *argp)
{
	struct lite_member_info *mi = NULL;
	struct lite_node_status st, in;
	struct lite_node *node;
	u32 cap;
	long ret = 0;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	memset(&in, 0, sizeof(in));
	in.instance = st.instance;
	in.members_cap = st.members_cap;
	in.members_ptr = st.members_ptr;
	if (memcmp(&in, &st, sizeof(st)))
		return -EINVAL;		/* outputs and reserved must be 0 */
	if (st.members_cap && !st.members_ptr)
		return -EINVAL;
	cap = min_t(u32, st.members_cap, LITE_MAX_NODES);
	node = lite_node_lookup(ctx, st.instance);
	if (!node)
		return -ENOENT;
	if (cap) {
		mi = kcalloc(cap, sizeof(*mi), GFP_KERNEL);
		if (!mi) {
			ret = -ENOMEM;
			goto out;
		}
	}
	lite_node_status_fill(node, &st, mi, cap);
	if (cap && copy_to_user(u64_to_user_ptr(st.members_ptr), mi,
				min(cap, st.n_members) * sizeof(*mi)))
		ret = -EFAULT;
	else if (copy_to_user(argp, &st, sizeof(st)))
		ret = -EFAULT;
out:
	kfree(mi);
	lite_node_put(node);
	return ret;
}

static long lite_ioc_ping(struct lite_ctx *ctx, void __user *argp)
{
	struct lite_ping ping, in;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&ping, argp, sizeof(ping)))
		return -EFAULT;
	memset(&in, 0, sizeof(in));
	in.instance = ping.instance;
	in.node_id = ping.node_id;
	in.timeout_ms = ping.timeout_ms;
	if (memcmp(&in, &ping, sizeof(ping)))
		return -EINVAL;		/* flags, outputs, reserved must be 0 */
	if (ping.timeout_ms > LITE_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (!ping.node_id || ping.node_id > LITE_MAX_NODES)
		return -EINVAL;
	node = lite_node_lookup(ctx, ping.instance);
	if (!node)
		return -ENOENT;
	ret = lite_cluster_ping(node, ping.node_id, jiffies +
		msecs_to_jiffies(ping.timeout_ms ?: lite_tun(call_timeout_ms)),
		&ping.rtt_ns);
	lite_node_put(node);
	if (ret)
		return ret;
	return copy_to_user(argp, &ping, sizeof(ping)) ? -EFAULT : 0;
}

static long lite_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct lite_ctx *ctx = lite_file_ctx(file);
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case LITE_IOC_GET_INFO:
		return lite_ioc_get_info(ctx, argp);
	case LITE_IOC_NODE_UP:
		return lite_ioc_node_up(ctx, argp);
	case LITE_IOC_NODE_DOWN:
		return lite_ioc_node_down(ctx, argp);
	case LITE_IOC_NODE_STATUS:
		return lite_ioc_node_status(ctx, argp);
	case LITE_IOC_PING:
		return lite_ioc_ping(ctx, argp);
	}
	return lite_file_ioctl(file->private_data, cmd, argp);
}

static int lite_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return lite_file_open(container_of(misc, struct lite_ctx, misc), file);
}

static int lite_release(struct inode *inode, struct file *file)
{
	lite_file_release(file->private_data);
	return 0;
}

static const struct file_operations lite_fops = {
	.owner = THIS_MODULE,
	.open = lite_open,
	.release = lite_release,
	.unlocked_ioctl = lite_ioctl,
	.uring_cmd = lite_uring_cmd,
	.uring_cmd_iopoll = lite_uring_iopoll,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/**
 * lite_chardev_register - create /dev/lite
 * @ctx: the module's instance list, which the device serves
 *
 * The device is created 0600, root only, until udev gives it to group
 * lite, 0660 (tools/udev). Called at module load.
 *
 * Return: 0, or the error of misc_register().
 */
int lite_chardev_register(struct lite_ctx *ctx)
{
	ctx->misc.minor = MISC_DYNAMIC_MINOR;
	ctx->misc.name = "lite";
	ctx->misc.fops = &lite_fops;
	/* Root only until udev gives it to group lite, 0660 (tools/udev). */
	ctx->misc.mode = 0600;
	return misc_register(&ctx->misc);
}

/**
 * lite_chardev_unregister - remove /dev/lite
 * @ctx: the module's instance list
 *
 * Called at module unload; files still open keep working until released.
 */
void lite_chardev_unregister(struct lite_ctx *ctx)
{
	misc_deregister(&ctx->misc);
}
