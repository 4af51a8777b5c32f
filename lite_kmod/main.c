// SPDX-License-Identifier: GPL-2.0
/*
 * lite.ko: module entry, the instance list, and the ib_client that binds
 * lite to RDMA devices and tears nodes down when a device goes away.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "internal.h"

/* The module's only mutable global: its instance list. */
static struct lite_ctx lite_ctx;

/* Set once in lite_init(), destroyed in lite_exit(); see internal.h. */
struct workqueue_struct *lite_wq;

/**
 * lite_find_ibdev - look up an RDMA device lite is bound to, by name
 * @ctx: the module's instance list
 * @name: the device name, as dev_name() gives it
 *
 * Context: @ctx->lock held.
 *
 * Return: the device, valid while @ctx->lock is held, or NULL.
 */
struct lite_ibdev *lite_find_ibdev(struct lite_ctx *ctx, const char *name)
{
	struct lite_ibdev *ibdev;

	lockdep_assert_held(&ctx->lock);
	list_for_each_entry(ibdev, &ctx->devs, entry)
		if (!strcmp(dev_name(&ibdev->dev->dev), name))
			return ibdev;
	return NULL;
}

static int lite_ib_add(struct ib_device *dev)
{
	struct lite_ibdev *ibdev;

	ibdev = kzalloc(sizeof(*ibdev), GFP_KERNEL);
	if (!ibdev)
		return -ENOMEM;
	ibdev->dev = dev;
	INIT_LIST_HEAD(&ibdev->nodes);

	mutex_lock(&lite_ctx.lock);
	list_add_tail(&ibdev->entry, &lite_ctx.devs);
	mutex_unlock(&lite_ctx.lock);
	ib_set_client_data(dev, &lite_ctx.client, ibdev);
	return 0;
}

/*
 * The device is going away (rdma link delete, driver unload, or our own
 * rmmod): every node on it leaves and releases its verbs resources before
 * we return, so the core can finish unregistering without waiting on us.
 */
static void lite_ib_remove(struct ib_device *dev, void *client_data)
{
	struct lite_ibdev *ibdev = client_data;
	struct lite_node *node, *tmp;

	mutex_lock(&lite_ctx.lock);
	list_for_each_entry_safe(node, tmp, &ibdev->nodes, dev_entry) {
		dev_info(&dev->dev, "lite: device removal takes down instance %u\n",
			 node->instance);
		lite_node_destroy(&lite_ctx, node);
	}
	list_del(&ibdev->entry);
	mutex_unlock(&lite_ctx.lock);
	kfree(ibdev);
}

static int __init lite_init(void)
{
	int ret;

	mutex_init(&lite_ctx.lock);
	INIT_LIST_HEAD(&lite_ctx.devs);
	xa_init_flags(&lite_ctx.nodes, XA_FLAGS_ALLOC);
	lite_ctx.client.name = "lite";
	lite_ctx.client.add = lite_ib_add;
	lite_ctx.client.remove = lite_ib_remove;

	lite_wq = alloc_workqueue("lite", WQ_UNBOUND, 0);
	if (!lite_wq)
		return -ENOMEM;
	ret = ib_register_client(&lite_ctx.client);
	if (ret)
		goto err_wq;
	lite_debugfs_init();
	ret = lite_dsm_init();
	if (ret)
		goto err_debugfs;
	ret = lite_chardev_register(&lite_ctx);
	if (ret)
		goto err_dsm;
	pr_info("lite: loaded, ABI %u\n", LITE_ABI_VERSION);
	return 0;

err_dsm:
	lite_dsm_exit();
err_debugfs:
	lite_debugfs_exit();
	ib_unregister_client(&lite_ctx.client);
err_wq:
	destroy_workqueue(lite_wq);
	return ret;
}

static void __exit lite_exit(void)
{
	lite_chardev_unregister(&lite_ctx);
	/* Calls lite_ib_remove() for every device: all nodes go down. */
	ib_unregister_client(&lite_ctx.client);
	/* What the last files and nodes left behind runs to its end. */
	destroy_workqueue(lite_wq);
	WARN_ON(!xa_empty(&lite_ctx.nodes));
	xa_destroy(&lite_ctx.nodes);
	lite_dsm_exit();
	lite_debugfs_exit();
	pr_info("lite: unloaded\n");
}

module_init(lite_init);
module_exit(lite_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The lite authors");
MODULE_DESCRIPTION("lite: a local indirection tier for RDMA");
