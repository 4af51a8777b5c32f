// SPDX-License-Identifier: GPL-2.0
/*
 * User pages pinned across operations: a small cache per open file of the
 * buffers its LITE_read/LITE_write calls, RPC requests and replies used
 * (rdma.c, rpc.c), so that a buffer used again costs neither a copy
 * through a kernel buffer nor pinning its pages again.
 *
 * An entry pins the pages of one page-aligned range of the opener's
 * address space (FOLL_LONGTERM, charged to the process's pinned memory
 * against RLIMIT_MEMLOCK, as an ib_umem is) and watches the range with an
 * mmu interval notifier: once the range is unmapped, remapped, its pages
 * dropped, protected against what the device does, or otherwise
 * invalidated, the entry is stale: it is unpinned in the background (and
 * never used again), and the next call with the buffer pins its new
 * pages. Pinned pages stay allocated until unpinned, so an operation that
 * raced with an unmap reads or writes the old pages, as if it had run
 * before the unmap.
 *
 * The cache keeps at most pin_cache_kb and, without CAP_IPC_LOCK, half of
 * RLIMIT_MEMLOCK, leaving the rest to the process's own registrations; it
 * drops its oldest entries before charging a new one, so it never stops
 * caching because of what it holds itself.
 *
 * Only private anonymous memory is cached (heap, stacks, anonymous mmap):
 * a file's page written by RDMA while pinned for long could be written
 * back and cleaned under us. Other buffers take the per-operation paths.
 *
 * DMA mappings are made per operation (rdma.c), not kept: an entry
 * outlives no device.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>

#include "internal.h"

#define LITE_PIN_ENTRIES	16	/* entries per file, at most */

/* The cache of one open file. */
struct lite_pin_cache {
	struct mm_struct *mm;		/* the opener's; immutable, mmgrab'd */
	spinlock_t lock;		/* protects @lru, @pages, @n and the
					 * entries' seq */
	struct list_head lru;		/* lite_pin_entry, newest first */
	unsigned long pages;		/* pinned by listed entries */
	unsigned int n;			/* listed entries */
	struct work_struct purge;	/* drops invalidated entries */
};

/* Pages of one range, pinned for as long as the entry lives. */
struct lite_pin_entry {
	struct mmu_interval_notifier mni;
	struct lite_pin_cache *pc;	/* immutable; outlives the entry */
	struct list_head lru;		/* pc->lru; pc lock */
	unsigned long start;		/* page aligned; immutable */
	unsigned long npages;		/* immutable */
	unsigned long seq;		/* pc lock: mni's at pinning time */
	refcount_t ref;			/* the cache's while listed, and one
					 * per operation using it */
	bool writable;			/* pinned for the device to write;
					 * immutable */
	struct page *pages[];		/* immutable */
};

/*
 * Whether @e stays good across @range's change of protection. The range
 * keeps mapping the pages we pinned: private anonymous pages pinned for
 * DMA are exclusive, so a later write fault reuses them, and fork copies
 * them for the child instead (its write protection of the parent is
 * PROTECTION_PAGE). A VMA's new protection must still allow what the
 * entry lets the device do, though, and no write-protect tracking
 * (userfaultfd) may watch it.
 */
static bool lite_pin_still_valid(const struct lite_pin_entry *e,
				 const struct mmu_notifier_range *range)
{
	unsigned long need = e->writable ? VM_READ | VM_WRITE : VM_READ;

	if (range->event == MMU_NOTIFY_PROTECTION_PAGE)
		return true;
	return range->event == MMU_NOTIFY_PROTECTION_VMA && range->vma &&
	       (range->vma->vm_flags & need) == need &&
	       !(range->vma->vm_flags & VM_UFFD_WP);
}

static bool lite_pin_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct lite_pin_entry *e = container_of(mni, struct lite_pin_entry,
						mni);

	if (lite_pin_still_valid(e, range))
		return true;
	spin_lock(&e->pc->lock);
	mmu_interval_set_seq(mni, cur_seq);
	spin_unlock(&e->pc->lock);
	/* Unpin now, not at the next lookup, which may never come. */
	queue_work(lite_wq, &e->pc->purge);
	return true;
}

static const struct mmu_interval_notifier_ops lite_pin_ops = {
	.invalidate = lite_pin_invalidate,
};

static void lite_pin_purge(struct work_struct *work);

/**
 * lite_pin_cache_new - a file's cache of pinned buffers
 *
 * Belongs to the caller's address space; other tasks that use the file
 * (a child it was passed to) take the per-operation paths.
 *
 * Return: the cache, or NULL (no memory, or a kernel thread): the file
 * works without one.
 */
struct lite_pin_cache *lite_pin_cache_new(void)
{
	struct lite_pin_cache *pc;

	if (!current->mm)
		return NULL;
	pc = kzalloc(sizeof(*pc), GFP_KERNEL);
	if (!pc)
		return NULL;
	pc->mm = current->mm;
	mmgrab(pc->mm);
	spin_lock_init(&pc->lock);
	INIT_LIST_HEAD(&pc->lru);
	INIT_WORK(&pc->purge, lite_pin_purge);
	return pc;
}

static void lite_pin_entry_free(struct lite_pin_entry *e)
{
	/* Before the notifier goes: it holds a reference on the mm too. */
	atomic64_sub(e->npages, &e->mni.mm->pinned_vm);
	mmu_interval_notifier_remove(&e->mni);
	unpin_user_pages_dirty_lock(e->pages, e->npages, e->writable);
	kvfree(e);
}

/**
 * lite_pin_put - done with a cached range
 * @e: from lite_pin_get()
 *
 * Sleeps if it was the last user of a dropped entry.
 */
void lite_pin_put(struct lite_pin_entry *e)
{
	if (refcount_dec_and_test(&e->ref))
		lite_pin_entry_free(e);
}

/* Take @e off the list; the caller then drops the list's reference. */
static void lite_pin_unlist(struct lite_pin_cache *pc,
			    struct lite_pin_entry *e, struct list_head *drop)
{
	lockdep_assert_held(&pc->lock);
	list_move(&e->lru, drop);
	pc->pages -= e->npages;
	pc->n--;
}

/* Drop the list's reference of each entry on @drop. */
static void lite_pin_drop(struct list_head *drop)
{
	struct lite_pin_entry *e, *tmp;

	list_for_each_entry_safe(e, tmp, drop, lru) {
		list_del(&e->lru);
		lite_pin_put(e);
	}
}

/*
 * A listed entry covering [start, start + npages) that the device may
 * @write to if asked, referenced; not one whose range was invalidated
 * (lite_pin_purge() unpins those).
 */
static struct lite_pin_entry *lite_pin_find(struct lite_pin_cache *pc,
					    unsigned long start,
					    unsigned long npages, bool write)
{
	struct lite_pin_entry *e;

	lockdep_assert_held(&pc->lock);
	list_for_each_entry(e, &pc->lru, lru) {
		if (start < e->start ||
		    ((start - e->start) >> PAGE_SHIFT) + npages > e->npages ||
		    (write && !e->writable) ||
		    mmu_interval_read_retry(&e->mni, e->seq))
			continue;
		refcount_inc(&e->ref);
		list_move(&e->lru, &pc->lru);
		return e;
	}
	return NULL;
}

/*
 * Unlist the entries whose range was invalidated, then the oldest ones
 * until at most @max_n entries of at most @max_pages pages are left.
 */
static void lite_pin_trim(struct lite_pin_cache *pc, unsigned long max_pages,
			  unsigned int max_n, struct list_head *drop)
{
	struct lite_pin_entry *e, *tmp;

	lockdep_assert_held(&pc->lock);
	list_for_each_entry_safe(e, tmp, &pc->lru, lru)
		if (mmu_interval_read_retry(&e->mni, e->seq))
			lite_pin_unlist(pc, e, drop);
	while (pc->n && (pc->n > max_n || pc->pages > max_pages)) {
		e = list_last_entry(&pc->lru, struct lite_pin_entry, lru);
		lite_pin_unlist(pc, e, drop);
	}
}

/*
 * Unpin the entries whose range was invalidated (unmapped, remapped, the
 * process exited, ...): their pages are no longer the buffer's.
 */
static void lite_pin_purge(struct work_struct *work)
{
	struct lite_pin_cache *pc = container_of(work, struct lite_pin_cache,
						 purge);
	LIST_HEAD(drop);

	spin_lock(&pc->lock);
	lite_pin_trim(pc, ULONG_MAX, UINT_MAX, &drop);
	spin_unlock(&pc->lock);
	lite_pin_drop(&drop);
}

/*
 * Whether [start, start + len) is private anonymous memory throughout, and
 * writable if the device is to @write it, readable if not (else the pin
 * would fail, after the cache made room for it).
 */
static bool lite_pin_anon(struct mm_struct *mm, unsigned long start,
			  unsigned long len, bool write)
{
	struct vm_area_struct *vma;
	unsigned long at = start;
	bool ok = true;

	mmap_read_lock(mm);
	while (ok && at < start + len) {
		vma = vma_lookup(mm, at);
		ok = vma && vma_is_anonymous(vma) &&
		     !(vma->vm_flags & (VM_SHARED | VM_IO | VM_PFNMAP)) &&
		     vma->vm_flags & (write ? VM_WRITE : VM_READ);
		if (ok)
			at = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ok;
}

/* Charge @npages to the process's pinned memory, if RLIMIT_MEMLOCK lets. */
static bool lite_pin_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	/* A cache that may fall back: no audit record either. */
	if (atomic64_add_return(npages, &mm->pinned_vm) <= limit ||
	    ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK))
		return true;
	atomic64_sub(npages, &mm->pinned_vm);
	return false;
}

/*
 * A new entry for [start, start + npages), pinned, with room made for it
 * within @budget pages; NULL if it cannot be (the per-operation paths then
 * report what is wrong with the buffer).
 */
static struct lite_pin_entry *lite_pin_new(struct lite_pin_cache *pc,
					   unsigned long start,
					   unsigned long npages, bool write,
					   unsigned long budget)
{
	struct lite_pin_entry *e;
	LIST_HEAD(drop);
	int pinned;

	e = kvzalloc(struct_size(e, pages, npages), GFP_KERNEL);
	if (!e)
		return NULL;
	e->pc = pc;
	e->start = start;
	e->npages = npages;
	e->writable = write;
	refcount_set(&e->ref, 1);
	if (mmu_interval_notifier_insert(&e->mni, pc->mm, start,
					 npages << PAGE_SHIFT, &lite_pin_ops))
		goto free_entry;
	/*
	 * From here on a change of the range is seen (lite_pin_list()), so
	 * what it maps cannot change between the check and the pinning.
	 */
	e->seq = mmu_interval_read_begin(&e->mni);
	if (!lite_pin_anon(pc->mm, start, npages << PAGE_SHIFT, write))
		goto remove_notifier;
	/*
	 * Make room first: what goes is uncharged before @e is charged
	 * (unless a call still uses it: then when that call ends).
	 */
	spin_lock(&pc->lock);
	lite_pin_trim(pc, budget - npages, LITE_PIN_ENTRIES - 1, &drop);
	spin_unlock(&pc->lock);
	lite_pin_drop(&drop);
	if (!lite_pin_charge(pc->mm, npages))
		goto remove_notifier;
	pinned = pin_user_pages_fast(start, npages, FOLL_LONGTERM |
				     (write ? FOLL_WRITE : 0), e->pages);
	if (pinned != npages) {
		if (pinned > 0)
			unpin_user_pages(e->pages, pinned);
		goto uncharge;
	}
	return e;

uncharge:
	atomic64_sub(npages, &pc->mm->pinned_vm);
remove_notifier:
	mmu_interval_notifier_remove(&e->mni);
free_entry:
	kvfree(e);
	return NULL;
}

/*
 * List @e, newest, unless the range changed while it was pinned; older
 * entries go to keep the cache within @budget pages.
 */
static bool lite_pin_list(struct lite_pin_cache *pc, struct lite_pin_entry *e,
			  unsigned long budget, struct list_head *drop)
{
	lockdep_assert_held(&pc->lock);
	if (mmu_interval_read_retry(&e->mni, e->seq))
		return false;
	lite_pin_trim(pc, budget - e->npages, LITE_PIN_ENTRIES - 1, drop);
	refcount_inc(&e->ref);		/* the list's */
	list_add(&e->lru, &pc->lru);
	pc->pages += e->npages;
	pc->n++;
	return true;
}

/*
 * Pages the cache may keep: pin_cache_kb, and without CAP_IPC_LOCK half
 * of RLIMIT_MEMLOCK, so that the process's own registrations (ibv_reg_mr)
 * always have the other half.
 */
static unsigned long lite_pin_budget(void)
{
	unsigned long max = (unsigned long)lite_tun(pin_cache_kb) >>
			    (PAGE_SHIFT - 10);
	unsigned long half = rlimit(RLIMIT_MEMLOCK) >> (PAGE_SHIFT + 1);

	/* A question of policy, not an attempt: no audit record. */
	if (max > half && !ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK))
		max = half;
	return max;
}

/**
 * lite_pin_get - the pinned pages of a user buffer, from the cache
 * @pc: the file's cache, or NULL
 * @uaddr: the buffer
 * @len: its length
 * @dev_writes: the device will write to it (LITE_read)
 * @pages: set to the pinned pages from @uaddr's on, valid while the
 *	   entry is referenced
 *
 * Pins the buffer's pages and keeps them if the cache has none covering
 * it. Sleeps.
 *
 * Return: the entry, referenced (drop it with lite_pin_put()); or NULL
 * when the cache does not take this buffer: no cache or another address
 * space, off, larger than the cache may keep, not private anonymous
 * memory, over RLIMIT_MEMLOCK with what the process pinned itself, pages
 * that cannot be pinned, or a range that changed while it was pinned, on
 * a second try too. The caller then takes a per-operation path.
 */
struct lite_pin_entry *lite_pin_get(struct lite_pin_cache *pc,
				    unsigned long uaddr, u64 len,
				    bool dev_writes, struct page ***pages)
{
	unsigned long start = uaddr & PAGE_MASK, npages, budget;
	struct lite_pin_entry *e;
	LIST_HEAD(drop);
	unsigned int tries;
	bool listed;

	if (!pc || current->mm != pc->mm || !len)
		return NULL;
	npages = DIV_ROUND_UP(offset_in_page(uaddr) + len, PAGE_SIZE);
	budget = lite_pin_budget();
	spin_lock(&pc->lock);
	/* A lowered budget (pin_cache_kb, the memlock limit) applies now. */
	lite_pin_trim(pc, budget, LITE_PIN_ENTRIES, &drop);
	if (npages > LITE_PIN_PAGES || npages > budget) {
		spin_unlock(&pc->lock);
		lite_pin_drop(&drop);
		return NULL;
	}
	e = lite_pin_find(pc, start, npages, dev_writes);
	spin_unlock(&pc->lock);
	lite_pin_drop(&drop);
	/*
	 * Pinning can itself change the range: a private page still shared
	 * with a parent or child after fork (or, for the device to write,
	 * the zero page) is first copied, so that the pin is exclusive, and
	 * a page in a movable zone is first migrated. The new pages are
	 * exclusive and pinnable, so a second try normally keeps them.
	 */
	for (tries = 0; !e && tries < 2; tries++) {
		if (tries) {
			/* Another call with the buffer may have kept it. */
			spin_lock(&pc->lock);
			e = lite_pin_find(pc, start, npages, dev_writes);
			spin_unlock(&pc->lock);
			if (e)
				break;
		}
		e = lite_pin_new(pc, start, npages, dev_writes, budget);
		if (!e)
			return NULL;
		spin_lock(&pc->lock);
		listed = lite_pin_list(pc, e, budget, &drop);
		spin_unlock(&pc->lock);
		lite_pin_drop(&drop);
		if (!listed) {
			lite_pin_put(e);
			e = NULL;
		}
	}
	if (!e)
		return NULL;
	*pages = e->pages + ((start - e->start) >> PAGE_SHIFT);
	return e;
}

/**
 * lite_pin_cache_free - unpin everything a file's cache holds
 * @pc: the cache, or NULL
 *
 * At the file's release, when no operation of it runs. Sleeps.
 */
void lite_pin_cache_free(struct lite_pin_cache *pc)
{
	struct lite_pin_entry *e, *tmp;
	LIST_HEAD(drop);

	if (!pc)
		return;
	spin_lock(&pc->lock);
	list_for_each_entry_safe(e, tmp, &pc->lru, lru)
		lite_pin_unlist(pc, e, &drop);
	spin_unlock(&pc->lock);
	lite_pin_drop(&drop);
	/* No notifier is left to queue it again. */
	cancel_work_sync(&pc->purge);
	mmdrop(pc->mm);
	kfree(pc);
}
