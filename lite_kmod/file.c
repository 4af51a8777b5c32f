// SPDX-License-Identifier: GPL-2.0
/*
 * An open /dev/lite: the node it is attached to, and the LMR handles it
 * holds. Handles belong to this file only; closing it frees the LMRs it
 * allocated (on whichever node holds them) and withdraws what it shared.
 * One handler per data command; each checks its whole argument first.
 */
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/cred.h>
#include <linux/file.h>

#include "internal.h"

static bool lite_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

/* A NUL-terminated, non-empty name with zeroes after the NUL. */
static bool lite_name_ok(const char *name)
{
	size_t n = strnlen(name, LITE_NAME_MAX);

	return n && n < LITE_NAME_MAX &&
	       lite_zero(name + n, LITE_NAME_MAX - n);
}

/**
 * lite_file_open - set up an open /dev/lite
 * @ctx: the module's instance list
 * @file: the file; its private_data becomes the &struct lite_file
 *
 * The file is not attached to a node yet; its allocations will be charged
 * to the opener's euid.
 *
 * Return: 0, or -ENOMEM.
 */
int lite_file_open(struct lite_ctx *ctx, struct file *file)
{
	struct lite_file *lf;

	lf = kzalloc(sizeof(*lf), GFP_KERNEL);
	if (!lf)
		return -ENOMEM;
	lf->ctx = ctx;
	lf->uid = file->f_cred->euid;
	mutex_init(&lf->lock);
	INIT_LIST_HEAD(&lf->pubs);
	INIT_LIST_HEAD(&lf->services);
	INIT_LIST_HEAD(&lf->locks);
	xa_init_flags(&lf->handles, XA_FLAGS_ALLOC1);
	lite_uring_file_init(lf);
	lf->pins = lite_pin_cache_new();
	file->private_data = lf;
	return 0;
}

/**
 * lite_file_node - the node a file is attached to, with a reference
 * @lf: the file
 *
 * Takes @lf->lock: may sleep.
 *
 * Return: the attached node, referenced (drop it with lite_node_put()),
 * or ERR_PTR(-EBADFD) if the file is not attached.
 */
struct lite_node *lite_file_node(struct lite_file *lf)
{
	struct lite_node *node;

	mutex_lock(&lf->lock);
	node = lf->node;
	if (node)
		lite_node_get(node);
	mutex_unlock(&lf->lock);
	return node ?: ERR_PTR(-EBADFD);
}

/*
 * The errno for a handle this file does not hold: -EBADF, or -EBADFD if
 * the file is not attached to a node (and so can hold none).
 */
static int lite_file_bad_handle(struct lite_file *lf)
{
	bool attached;

	mutex_lock(&lf->lock);
	attached = lf->node;
	mutex_unlock(&lf->lock);
	return attached ? -EBADF : -EBADFD;
}

/*
 * Look a handle up, without a lock: handles and LMRs are freed after an
 * RCU grace period, and an LMR whose last reference is going counts as
 * gone (its handle was just freed). Return: 0 with a reference on *@lmr;
 * -EBADF if the file has no such handle, -EBADFD if it is not even
 * attached.
 */
static int lite_file_lmr(struct lite_file *lf, u64 handle,
			 struct lite_lmr **lmr, u32 *perms, bool *owner)
{
	struct lite_handle *h;

	if (!handle || handle > U32_MAX)
		return lite_file_bad_handle(lf);
	rcu_read_lock();
	h = xa_load(&lf->handles, handle);
	if (h && !kref_get_unless_zero(&h->lmr->ref))
		h = NULL;
	if (h) {
		*lmr = h->lmr;
		*perms = h->perms;
		if (owner)
			*owner = h->owner;
	}
	rcu_read_unlock();
	if (!h)
		return lite_file_bad_handle(lf);
	return 0;
}

/*
 * Everything an access checks before a work request is posted: the handle
 * is this file's, the LMR is not freed or revoked, the permission is held,
 * the range is inside the LMR (overflow-safe), atomics are aligned. Each
 * transfer step then re-checks revocation (lite_lmr_begin() in rdma.c).
 */
static int lite_file_access(struct lite_file *lf, u64 handle, u32 need,
			    u64 off, u64 len, struct lite_lmr **out)
{
	struct lite_lmr *lmr;
	u32 perms;
	int ret;

	ret = lite_file_lmr(lf, handle, &lmr, &perms, NULL);
	if (ret)
		return ret;
	if (READ_ONCE(lmr->mem_gone))
		ret = -EHOSTDOWN;	/* its memory node is gone */
	else if (READ_ONCE(lmr->revoked))
		ret = -EKEYREVOKED;
	else
		ret = lite_lmr_check(lmr->layout.size, perms, need, off, len);
	if (ret) {
		lite_lmr_put(lmr);
		return ret;
	}
	*out = lmr;
	return 0;
}

static void lite_file_done(struct lite_lmr *lmr)
{
	lite_lmr_put(lmr);
}

static int lite_file_add(struct lite_file *lf, struct lite_lmr *lmr,
			 u32 perms, bool owner, u64 *handle)
{
	struct lite_handle *h;
	u32 id;
	int ret;

	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->lmr = lmr;
	h->perms = perms;
	h->owner = owner;
	ret = xa_alloc_cyclic(&lf->handles, &id, h, xa_limit_32b,
			      &lf->next_handle, GFP_KERNEL);
	if (ret < 0) {
		kfree(h);
		return ret;
	}
	*handle = id;
	return 0;
}

static long lite_ioc_attach(struct lite_file *lf, void __user *argp)
{
	struct lite_attach at;
	struct lite_node *node;
	unsigned long idx;
	long ret = 0;

	if (copy_from_user(&at, argp, sizeof(at)))
		return -EFAULT;
	if (at.flags || at.node_id || at.reserved)
		return -EINVAL;
	xa_lock(&lf->ctx->nodes);
	node = xa_load(&lf->ctx->nodes, at.instance);
	if (node)
		lite_node_get(node);
	xa_unlock(&lf->ctx->nodes);
	if (!node)
		return -ENOENT;
	idx = READ_ONCE(node->self_id);
	mutex_lock(&lf->lock);
	if (lf->node)
		ret = -EBUSY;	/* one node per open file */
	else
		lf->node = node;
	mutex_unlock(&lf->lock);
	if (ret) {
		lite_node_put(node);
		return ret;
	}
	at.node_id = idx;
	return copy_to_user(argp, &at, sizeof(at)) ? -EFAULT : 0;
}

static long lite_ioc_lmr_alloc(struct lite_file *lf, void __user *argp)
{
	struct lite_lmr_alloc req;
	struct lite_node *node;
	struct lite_lmr *lmr;
	u16 mem;
	long ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~LITE_LMR_FLAGS_ALL || req.handle ||
	    !lite_zero(req.reserved, sizeof(req.reserved)))
		return -EINVAL;
	if (!req.size)
		return -EINVAL;
	if (req.size > LITE_LMR_MAX)
		return -E2BIG;
	if (req.node_id > LITE_MAX_NODES)
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	mem = req.node_id ?: READ_ONCE(node->self_id);
	mutex_lock(&node->lock);
	ret = lite_mbr_present(&node->mb, mem) ? 0 : -EHOSTUNREACH;
	mutex_unlock(&node->lock);
	if (!ret && req.flags & LITE_LMR_NIC_ATOMIC && !node->nic_atomic)
		ret = -EOPNOTSUPP;
	if (!ret)
		ret = lite_lmr_alloc(node, mem, req.size, req.flags, lf->uid,
				     &lmr);
	if (!ret) {
		ret = lite_file_add(lf, lmr, LITE_PERM_ALL, true, &req.handle);
		if (ret)
			lite_lmr_release(lmr, true);
	}
	if (!ret && copy_to_user(argp, &req, sizeof(req)))
		ret = -EFAULT;	/* the handle stays; close frees it */
	lite_node_put(node);
	return ret;
}

/*
 * Withdraw @p's name (every mapping made through it is dropped before the
 * manager answers), then void the keys its grant had. @p is off the list.
 * Return: 0, or the error of the step that failed; p->withdrawn says
 * whether the first one is done.
 */
static int lite_pub_end(struct lite_node *node, struct lite_pub *p)
{
	int ret;

	if (!p->withdrawn) {
		ret = lite_share_withdraw(node, p->name);
		if (ret && ret != -ENOENT)	/* -ENOENT: not published now */
			return ret;
		p->withdrawn = true;
	}
	if (!p->grant)
		return 0;
	return lite_lmr_unkey(node, p->mem_node, p->mr_id, p->grant);
}

/* Withdraw the names this file published for @handle (all if 0). */
static void lite_file_unpublish(struct lite_file *lf, struct lite_node *node,
				u64 handle)
{
	struct lite_pub *p, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&lf->lock);
	list_for_each_entry_safe(p, tmp, &lf->pubs, entry)
		if (!handle || p->handle == handle)
			list_move(&p->entry, &gone);
	mutex_unlock(&lf->lock);
	list_for_each_entry_safe(p, tmp, &gone, entry) {
		if (node)	/* best effort: freeing the LMR ends the rest */
			lite_pub_end(node, p);
		kfree(p);
	}
}

static long lite_ioc_lmr_free(struct lite_file *lf, void __user *argp)
{
	struct lite_lmr_free req;
	struct lite_handle *h;
	struct lite_node *node;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.flags || !lite_zero(req.reserved, sizeof(req.reserved)))
		return -EINVAL;
	if (!req.handle || req.handle > U32_MAX)
		return lite_file_bad_handle(lf);
	h = xa_erase(&lf->handles, req.handle);
	if (!h)
		return lite_file_bad_handle(lf);
	node = lite_file_node(lf);
	if (h->owner)
		lite_file_unpublish(lf, IS_ERR(node) ? NULL : node,
				    req.handle);
	if (!IS_ERR(node))
		lite_node_put(node);
	lite_lmr_release(h->lmr, h->owner);
	kfree_rcu(h, rcu);	/* a lookup may still hold it */
	return 0;
}

/**
 * lite_file_rw_access - check a read or write (ioctl or io_uring)
 * @lf: the file
 * @rw: the command's arguments, copied from user space
 * @write: it is a write
 * @lmr: set to the LMR on success
 *
 * Checks its arguments, then the access: the handle is this file's, the
 * LMR is usable, the permission is held and the range is inside it.
 *
 * Return: 0 with a reference on *@lmr, or the error: -EINVAL for bad
 * flags or reserved fields, -EFAULT for a bad user buffer, -EBADF or
 * -EBADFD for a handle the file does not hold, -EHOSTDOWN if the LMR's
 * memory node is gone, -EKEYREVOKED if it was revoked, or what
 * lite_lmr_check() returns.
 */
int lite_file_rw_access(struct lite_file *lf, const struct lite_rw *rw,
			bool write, struct lite_lmr **lmr)
{
	if ((rw->flags & ~LITE_RW_FLAGS_ALL) ||
	    (rw->flags & LITE_RW_COPY && rw->flags & LITE_RW_ZCOPY) ||
	    !lite_zero(rw->reserved, sizeof(rw->reserved)))
		return -EINVAL;
	if (rw->len && !access_ok(u64_to_user_ptr(rw->buf), rw->len))
		return -EFAULT;
	return lite_file_access(lf, rw->handle, write ? LITE_LMR_WRITE :
				LITE_LMR_READ, rw->offset, rw->len, lmr);
}

static long lite_ioc_rw(struct lite_file *lf, void __user *argp, bool write)
{
	struct lite_lmr *lmr;
	struct lite_rw rw;
	long ret;

	if (copy_from_user(&rw, argp, sizeof(rw)))
		return -EFAULT;
	if (rw.flags & LITE_RW_SPIN)
		return -EINVAL;		/* io_uring's: an ioctl always waits */
	ret = lite_file_rw_access(lf, &rw, write, &lmr);
	if (ret)
		return ret;
	ret = lite_rdma_rw(lmr, rw.offset, rw.len, u64_to_user_ptr(rw.buf),
			   write, rw.flags, lf->pins);
	lite_file_done(lmr);
	return ret;
}

/**
 * lite_file_atomic_access - check an atomic (ioctl or io_uring)
 * @lf: the file
 * @at: the command's arguments, copied from user space
 * @cmp_swap: compare-and-swap; else fetch-and-add, which has no swap value
 * @lmr: set to the LMR on success
 *
 * Checks its arguments, then the access to the 8-byte word.
 *
 * Return: 0 with a reference on *@lmr, or the error: -EINVAL for bad
 * arguments (or an unaligned word), else as lite_file_rw_access().
 */
int lite_file_atomic_access(struct lite_file *lf, const struct lite_atomic *at,
			    bool cmp_swap, struct lite_lmr **lmr)
{
	if (at->flags || at->result ||
	    !lite_zero(at->reserved, sizeof(at->reserved)))
		return -EINVAL;
	if (!cmp_swap && at->swap)
		return -EINVAL;
	return lite_file_access(lf, at->handle, LITE_LMR_ATOMIC, at->offset, 8,
				lmr);
}

static long lite_ioc_atomic(struct lite_file *lf, void __user *argp,
			    bool cmp_swap)
{
	struct lite_atomic at;
	struct lite_lmr *lmr;
	long ret;

	if (copy_from_user(&at, argp, sizeof(at)))
		return -EFAULT;
	ret = lite_file_atomic_access(lf, &at, cmp_swap, &lmr);
	if (ret)
		return ret;
	ret = lite_rdma_atomic(lmr, at.offset, cmp_swap, at.operand, at.swap,
			       &at.result);
	lite_file_done(lmr);
	if (ret)
		return ret;
	return copy_to_user(argp, &at, sizeof(at)) ? -EFAULT : 0;
}

static long lite_ioc_memset(struct lite_file *lf, void __user *argp)
{
	struct lite_memset ms;
	struct lite_lmr *lmr;
	long ret;

	if (copy_from_user(&ms, argp, sizeof(ms)))
		return -EFAULT;
	if (ms.flags || ms.value > 0xff ||
	    !lite_zero(ms.reserved, sizeof(ms.reserved)))
		return -EINVAL;
	ret = lite_file_access(lf, ms.handle, LITE_LMR_WRITE, ms.offset,
			       ms.len, &lmr);
	if (ret)
		return ret;
	ret = lite_rdma_memset(lmr, ms.offset, ms.len, ms.value);
	lite_file_done(lmr);
	return ret;
}

static long lite_ioc_memcpy(struct lite_file *lf, void __user *argp)
{
	struct lite_lmr *dst, *src;
	struct lite_memcpy mc;
	long ret;

	if (copy_from_user(&mc, argp, sizeof(mc)))
		return -EFAULT;
	if (mc.flags || !lite_zero(mc.reserved, sizeof(mc.reserved)))
		return -EINVAL;
	ret = lite_file_access(lf, mc.src_handle, LITE_LMR_READ,
			       mc.src_offset, mc.len, &src);
	if (ret)
		return ret;
	ret = lite_file_access(lf, mc.dst_handle, LITE_LMR_WRITE,
			       mc.dst_offset, mc.len, &dst);
	if (ret)
		goto src_done;
	ret = lite_rdma_memcpy(dst, mc.dst_offset, src, mc.src_offset, mc.len);
	lite_file_done(dst);
src_done:
	lite_file_done(src);
	return ret;
}

/**
 * lite_file_sendfile_access - check a send of a file (ioctl or io_uring)
 * @lf: the file
 * @sf: the command's arguments, copied from user space
 * @lmr: set to the LMR on success
 *
 * The LMR is checked as for a write of @sf->len bytes at @sf->lmr_offset;
 * the file itself is checked by lite_sendfile().
 *
 * Return: 0 with a reference on *@lmr; -EINVAL for flags or reserved
 * fields, else as lite_file_rw_access().
 */
int lite_file_sendfile_access(struct lite_file *lf,
			      const struct lite_sendfile *sf,
			      struct lite_lmr **lmr)
{
	if (sf->flags || !lite_zero(sf->reserved, sizeof(sf->reserved)))
		return -EINVAL;
	return lite_file_access(lf, sf->handle, LITE_LMR_WRITE, sf->lmr_offset,
				sf->len, lmr);
}

static long lite_ioc_sendfile(struct lite_file *lf, void __user *argp)
{
	struct lite_sendfile __user *usf = argp;
	struct lite_sendfile sf;
	struct lite_lmr *lmr;
	long ret;

	if (copy_from_user(&sf, argp, sizeof(sf)))
		return -EFAULT;
	ret = lite_file_sendfile_access(lf, &sf, &lmr);
	if (ret)
		return ret;
	ret = lite_sendfile(lf, lmr, sf.lmr_offset, sf.fd, sf.file_offset,
			    sf.len, &sf.sent);
	lite_file_done(lmr);
	if (!ret && put_user(sf.sent, &usf->sent))
		ret = -EFAULT;
	return ret;
}

static long lite_ioc_share(struct lite_file *lf, void __user *argp)
{
	struct lite_share sh;
	struct lite_node *node;
	struct lite_lmr *lmr;
	struct lite_pub *pub;
	u32 perms;
	bool owner;
	long ret;

	if (copy_from_user(&sh, argp, sizeof(sh)))
		return -EFAULT;
	if (sh.flags || !lite_zero(sh.reserved, sizeof(sh.reserved)))
		return -EINVAL;
	if (!sh.perms || (sh.perms & ~LITE_PERM_ALL) || !lite_name_ok(sh.name))
		return -EINVAL;
	ret = lite_file_lmr(lf, sh.handle, &lmr, &perms, &owner);
	if (ret)
		return ret;
	pub = kzalloc(sizeof(*pub), GFP_KERNEL);
	node = lite_file_node(lf);
	if (!owner)
		ret = -EPERM;	/* only the file that allocated it shares */
	else if (!pub)
		ret = -ENOMEM;
	else if (IS_ERR(node))
		ret = PTR_ERR(node);
	else
		ret = lite_share_publish(node, lmr, sh.name, sh.perms,
					 &pub->grant);
	if (!ret) {
		strscpy(pub->name, sh.name, sizeof(pub->name));
		pub->handle = sh.handle;
		pub->mr_id = lmr->mr_id;
		pub->mem_node = lmr->mem_node;
		mutex_lock(&lf->lock);
		list_add_tail(&pub->entry, &lf->pubs);
		mutex_unlock(&lf->lock);
		pub = NULL;
	}
	kfree(pub);
	if (!IS_ERR(node))
		lite_node_put(node);
	lite_lmr_put(lmr);
	return ret;
}

static long lite_ioc_map(struct lite_file *lf, void __user *argp)
{
	struct lite_node *node;
	struct lite_lmr *lmr;
	struct lite_map m;
	long ret;

	if (copy_from_user(&m, argp, sizeof(m)))
		return -EFAULT;
	if (m.flags || m.handle || m.size || m.node_id ||
	    !lite_zero(m.reserved, sizeof(m.reserved)))
		return -EINVAL;
	if ((m.perms & ~LITE_PERM_ALL) || !lite_name_ok(m.name))
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_lmr_map(node, m.name, &m.perms, &lmr);
	if (!ret) {
		ret = lite_file_add(lf, lmr, m.perms, false, &m.handle);
		if (ret) {
			lite_lmr_release(lmr, false);
		} else {
			m.size = lmr->layout.size;
			m.node_id = lmr->mem_node;
		}
	}
	lite_node_put(node);
	if (!ret && copy_to_user(argp, &m, sizeof(m)))
		ret = -EFAULT;
	return ret;
}

static long lite_ioc_revoke(struct lite_file *lf, void __user *argp)
{
	struct lite_pub *p, *found = NULL;
	struct lite_revoke rv;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&rv, argp, sizeof(rv)))
		return -EFAULT;
	if (rv.flags || !lite_zero(rv.reserved, sizeof(rv.reserved)) ||
	    !lite_name_ok(rv.name))
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	mutex_lock(&lf->lock);
	/* The name as published now, else one whose revoke failed. */
	list_for_each_entry(p, &lf->pubs, entry) {
		if (!strncmp(p->name, rv.name, LITE_NAME_MAX) &&
		    (!found || found->withdrawn))
			found = p;
	}
	if (found)
		list_del(&found->entry);
	mutex_unlock(&lf->lock);
	if (!found) {
		lite_node_put(node);
		return -ENOENT;	/* not a name this file published */
	}
	ret = lite_pub_end(node, found);
	if (ret) {	/* a revoke, or the file's close, tries again */
		mutex_lock(&lf->lock);
		list_add_tail(&found->entry, &lf->pubs);
		mutex_unlock(&lf->lock);
	} else {
		kfree(found);
	}
	lite_node_put(node);
	return ret;
}

static long lite_ioc_rpc_port(struct lite_file *lf, void __user *argp,
			      bool reg)
{
	struct lite_rpc_port rp;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&rp, argp, sizeof(rp)))
		return -EFAULT;
	if (!rp.port || rp.flags || !lite_zero(rp.reserved, sizeof(rp.reserved)))
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = reg ? lite_rpc_register(lf, node, rp.port) :
		    lite_rpc_unregister(lf, rp.port);
	lite_node_put(node);
	return ret;
}

/**
 * lite_rpc_call_check - check the arguments of an RPC call
 * @rc: the arguments, copied from user space (ioctl or io_uring)
 *
 * Return: 0; -EINVAL for a zero port, flags, outputs or reserved fields
 * set, a node id or timeout out of range; -EMSGSIZE if the request or the
 * reply capacity exceeds LITE_RPC_MAX.
 */
int lite_rpc_call_check(const struct lite_rpc_call *rc)
{
	if (!rc->port || rc->flags || rc->reply_len ||
	    !lite_zero(rc->reserved, sizeof(rc->reserved)) ||
	    rc->node_id > LITE_MAX_NODES ||
	    rc->timeout_ms > LITE_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (rc->req_len > LITE_RPC_MAX || rc->reply_cap > LITE_RPC_MAX)
		return -EMSGSIZE;
	return 0;
}

static long lite_ioc_rpc_call(struct lite_file *lf, void __user *argp)
{
	struct lite_rpc_call rc;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&rc, argp, sizeof(rc)))
		return -EFAULT;
	ret = lite_rpc_call_check(&rc);
	if (ret)
		return ret;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_rpc_call(node, &rc, lf->pins);
	lite_node_put(node);
	if (ret && ret != -EMSGSIZE)
		return ret;
	if (copy_to_user(argp, &rc, sizeof(rc)))
		return -EFAULT;
	return ret;
}

/**
 * lite_rpc_recv_ok - check the arguments of an RPC receive
 * @rr: the arguments, copied from user space (ioctl or io_uring)
 *
 * Return: whether the port is set, and flags, outputs and reserved fields
 * are zero.
 */
bool lite_rpc_recv_ok(const struct lite_rpc_recv *rr)
{
	return rr->port && !rr->flags && !rr->len && !rr->token &&
	       !rr->src_node && lite_zero(rr->reserved, sizeof(rr->reserved));
}

/**
 * lite_rpc_reply_ok - check the arguments of an RPC reply
 * @rp: the arguments, copied from user space (ioctl or io_uring)
 *
 * Return: whether flags and reserved fields are zero.
 */
bool lite_rpc_reply_ok(const struct lite_rpc_reply *rp)
{
	return !rp->flags && lite_zero(rp->reserved, sizeof(rp->reserved));
}

static long lite_ioc_rpc_recv(struct lite_file *lf, void __user *argp)
{
	struct lite_rpc_recv rr;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&rr, argp, sizeof(rr)))
		return -EFAULT;
	if (!lite_rpc_recv_ok(&rr))
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_rpc_recv(lf, node, &rr);
	lite_node_put(node);
	if (ret && ret != -EMSGSIZE)
		return ret;
	if (copy_to_user(argp, &rr, sizeof(rr)))
		return -EFAULT;	/* a call taken stays with this file */
	return ret;
}

static long lite_ioc_rpc_reply(struct lite_file *lf, void __user *argp)
{
	struct lite_rpc_reply rp;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&rp, argp, sizeof(rp)))
		return -EFAULT;
	if (!lite_rpc_reply_ok(&rp))
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_rpc_reply(lf, node, &rp, lf->pins);
	lite_node_put(node);
	return ret;
}

static long lite_ioc_rpc_reply_recv(struct lite_file *lf, void __user *argp)
{
	struct lite_rpc_reply_recv rr;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&rr, argp, sizeof(rr)))
		return -EFAULT;
	if (!lite_rpc_reply_ok(&rr.reply) || !lite_rpc_recv_ok(&rr.recv))
		return -EINVAL;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_rpc_reply_recv(lf, node, &rr,
				  &((struct lite_rpc_reply_recv __user *)
				    argp)->reply.token);
	lite_node_put(node);
	if (rr.reply.token)
		return ret;	/* no reply went out: nothing received */
	if (copy_to_user(argp, &rr, sizeof(rr)))
		return -EFAULT;	/* a call taken stays with this file */
	return ret;
}

static long lite_ioc_msg_send(struct lite_file *lf, void __user *argp)
{
	struct lite_msg_send ms;
	struct lite_node *node;
	long ret;

	if (copy_from_user(&ms, argp, sizeof(ms)))
		return -EFAULT;
	if (!ms.port || ms.flags || !lite_zero(ms.reserved, sizeof(ms.reserved)) ||
	    ms.node_id > LITE_MAX_NODES || ms.timeout_ms > LITE_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (ms.len > LITE_RPC_MAX)
		return -EMSGSIZE;
	node = lite_file_node(lf);
	if (IS_ERR(node))
		return PTR_ERR(node);
	ret = lite_rpc_send_msg(node, &ms);
	lite_node_put(node);
	return ret;
}

/* Locks and barriers change the word on the memory node's CPU. */
static int lite_file_sync_access(struct lite_file *lf, u64 handle, u64 off,
				 struct lite_lmr **out)
{
	int ret;

	ret = lite_file_access(lf, handle, LITE_LMR_ATOMIC, off, 8, out);
	if (ret)
		return ret;
	if ((*out)->flags & LITE_WIRE_LMR_NIC_ATOMIC) {
		lite_lmr_put(*out);
		return -EOPNOTSUPP;	/* its words are the NIC's */
	}
	return 0;
}

static long lite_ioc_lock(struct lite_file *lf, void __user *argp, bool lock)
{
	struct lite_lmr *lmr;
	struct lite_lock lk;
	u32 perms;
	long ret;

	if (copy_from_user(&lk, argp, sizeof(lk)))
		return -EFAULT;
	if (lk.flags & ~(lock ? LITE_LOCK_FLAGS_ALL : 0) ||
	    !lite_zero(lk.reserved, sizeof(lk.reserved)) ||
	    lk.timeout_ms > LITE_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (lock) {
		ret = lite_file_sync_access(lf, lk.handle, lk.offset, &lmr);
		if (ret)
			return ret;
		ret = lite_sync_lock(lf, lmr, lk.offset,
				     lk.flags & LITE_LOCK_TRY, lk.timeout_ms);
	} else {
		/* Releasing is no access: allowed on a revoked LMR too. */
		ret = lite_file_lmr(lf, lk.handle, &lmr, &perms, NULL);
		if (ret)
			return ret;
		ret = lite_sync_unlock(lf, lmr, lk.offset);
	}
	lite_file_done(lmr);
	return ret;
}

static long lite_ioc_barrier(struct lite_file *lf, void __user *argp)
{
	struct lite_barrier br;
	struct lite_lmr *lmr;
	long ret;

	if (copy_from_user(&br, argp, sizeof(br)))
		return -EFAULT;
	if (br.flags || !lite_zero(br.reserved, sizeof(br.reserved)) ||
	    !br.count || br.count > U16_MAX ||
	    br.timeout_ms > LITE_MAX_TIMEOUT_MS)
		return -EINVAL;
	ret = lite_file_sync_access(lf, br.handle, br.offset, &lmr);
	if (ret)
		return ret;
	ret = lite_sync_barrier(lmr, br.offset, br.count, br.timeout_ms);
	lite_file_done(lmr);
	return ret;
}

static long lite_ioc_dsm_open(struct lite_file *lf, void __user *argp)
{
	struct lite_dsm_open o;
	struct file *file;
	long ret;

	if (copy_from_user(&o, argp, sizeof(o)))
		return -EFAULT;
	ret = lite_dsm_open(lf, &o, &file);
	if (ret)
		return ret;
	if (copy_to_user(argp, &o, sizeof(o))) {
		fput(file);
		put_unused_fd(o.fd);
		return -EFAULT;
	}
	fd_install(o.fd, file);
	return 0;
}

/**
 * lite_file_ioctl - run a data command of an open /dev/lite
 * @lf: the file
 * @cmd: the ioctl command
 * @argp: its user-space argument
 *
 * The node commands are handled in chardev.c; the rest come here, one
 * handler each. Process context; may sleep.
 *
 * Return: the command's result (0 or a negative errno), or -ENOTTY for
 * an unknown command.
 */
long lite_file_ioctl(struct lite_file *lf, unsigned int cmd,
		     void __user *argp)
{
	switch (cmd) {
	case LITE_IOC_ATTACH:
		return lite_ioc_attach(lf, argp);
	case LITE_IOC_LMR_ALLOC:
		return lite_ioc_lmr_alloc(lf, argp);
	case LITE_IOC_LMR_FREE:
		return lite_ioc_lmr_free(lf, argp);
	case LITE_IOC_READ:
		return lite_ioc_rw(lf, argp, false);
	case LITE_IOC_WRITE:
		return lite_ioc_rw(lf, argp, true);
	case LITE_IOC_FETCH_ADD:
		return lite_ioc_atomic(lf, argp, false);
	case LITE_IOC_CMP_SWAP:
		return lite_ioc_atomic(lf, argp, true);
	case LITE_IOC_MEMSET:
		return lite_ioc_memset(lf, argp);
	case LITE_IOC_MEMCPY:
		return lite_ioc_memcpy(lf, argp);
	case LITE_IOC_SENDFILE:
		return lite_ioc_sendfile(lf, argp);
	case LITE_IOC_SHARE:
		return lite_ioc_share(lf, argp);
	case LITE_IOC_MAP:
		return lite_ioc_map(lf, argp);
	case LITE_IOC_REVOKE:
		return lite_ioc_revoke(lf, argp);
	case LITE_IOC_RPC_REGISTER:
		return lite_ioc_rpc_port(lf, argp, true);
	case LITE_IOC_RPC_UNREGISTER:
		return lite_ioc_rpc_port(lf, argp, false);
	case LITE_IOC_RPC_CALL:
		return lite_ioc_rpc_call(lf, argp);
	case LITE_IOC_RPC_RECV:
		return lite_ioc_rpc_recv(lf, argp);
	case LITE_IOC_RPC_REPLY:
		return lite_ioc_rpc_reply(lf, argp);
	case LITE_IOC_RPC_REPLY_RECV:
		return lite_ioc_rpc_reply_recv(lf, argp);
	case LITE_IOC_MSG_SEND:
		return lite_ioc_msg_send(lf, argp);
	case LITE_IOC_LOCK:
		return lite_ioc_lock(lf, argp, true);
	case LITE_IOC_UNLOCK:
		return lite_ioc_lock(lf, argp, false);
	case LITE_IOC_BARRIER:
		return lite_ioc_barrier(lf, argp);
	case LITE_IOC_DSM_OPEN:
		return lite_ioc_dsm_open(lf, argp);
	}
	return -ENOTTY;
}

/**
 * lite_file_release - close an open /dev/lite
 * @lf: the file; freed
 *
 * Drops its RPC ports and the calls it took, releases the locks it holds,
 * withdraws the names it published, frees the LMRs it allocated (on
 * whichever node holds them), drops its mappings, unpins the buffers it
 * kept pinned and drops its node reference.
 * Sleeps.
 */
void lite_file_release(struct lite_file *lf)
{
	struct lite_handle *h;
	unsigned long id;

	lite_rpc_file_release(lf);
	lite_sync_file_release(lf);
	lite_file_unpublish(lf, lf->node, 0);
	xa_for_each(&lf->handles, id, h) {
		xa_erase(&lf->handles, id);
		lite_lmr_release(h->lmr, h->owner);
		kfree_rcu(h, rcu);
	}
	xa_destroy(&lf->handles);
	lite_uring_file_release(lf);
	lite_sendfile_release(lf);
	lite_pin_cache_free(lf->pins);
	if (lf->node)
		lite_node_put(lf->node);
	kfree(lf);
}
