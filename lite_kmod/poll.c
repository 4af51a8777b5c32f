// SPDX-License-Identifier: GPL-2.0
/*
 * Completion delivery, chosen per node (LITE_CQ_*): how completions are
 * noticed (a polling thread, softirq, or a workqueue) and how a thread
 * waiting for one waits (spin, sleep, or spin briefly and then sleep).
 *
 * Completion handlers never sleep, whatever the mode: in softirq and busy
 * modes control messages are handed to node->cq_wq (conn.c), and the busy
 * poller runs handlers under rcu_read_lock().
 */
#include <linux/kthread.h>
#include <linux/freezer.h>
#include <linux/sched/signal.h>
#include <linux/ktime.h>
#include <linux/rculist.h>

#include "internal.h"

enum ib_poll_context lite_cq_poll_ctx(const struct lite_node *node)
{
	switch (node->cq_mode) {
	case LITE_CQ_BUSY:
		return IB_POLL_DIRECT;
	case LITE_CQ_WORKQUEUE:
		return IB_POLL_WORKQUEUE;
	default:
		return IB_POLL_SOFTIRQ;
	}
}

/* LITE_CQ_BUSY: poll every connection's CQ until the node goes away. */
static int lite_poller(void *arg)
{
	struct lite_node *node = arg;
	struct lite_conn *conn;

	set_freezable();
	while (!kthread_should_stop()) {
		try_to_freeze();
		rcu_read_lock();
		list_for_each_entry_rcu(conn, &node->poll_conns, poll_entry)
			ib_process_cq_direct(conn->cq, LITE_BUSY_BUDGET);
		rcu_read_unlock();
		cond_resched();
	}
	return 0;
}

int lite_poller_start(struct lite_node *node)
{
	struct task_struct *t;

	if (node->cq_mode != LITE_CQ_BUSY)
		return 0;
	t = kthread_run(lite_poller, node, "lite%u_poll", node->instance);
	if (IS_ERR(t))
		return PTR_ERR(t);
	node->poller = t;
	return 0;
}

void lite_poller_stop(struct lite_node *node)
{
	if (node->poller)
		kthread_stop(node->poller);
	node->poller = NULL;
}

/* Let the poller see @conn's CQ (busy mode only). */
void lite_poll_add(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;

	if (node->cq_mode != LITE_CQ_BUSY)
		return;
	spin_lock(&node->poll_lock);
	list_add_tail_rcu(&conn->poll_entry, &node->poll_conns);
	spin_unlock(&node->poll_lock);
}

/* Take @conn's CQ from the poller; after this only the caller polls it. */
void lite_poll_del(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;

	if (node->cq_mode != LITE_CQ_BUSY || list_empty(&conn->poll_entry))
		return;
	spin_lock(&node->poll_lock);
	list_del_rcu(&conn->poll_entry);
	spin_unlock(&node->poll_lock);
	synchronize_rcu();
	INIT_LIST_HEAD(&conn->poll_entry);
}

/*
 * lite_spin - spin until @cond(@arg) holds, as the node's mode allows
 *
 * Busy mode spins up to LITE_BUSY_SPIN_MS (yielding the CPU when asked),
 * adaptive mode for LITE_CQ_SPIN_US, the others not at all; then the
 * caller sleeps until @deadline.
 * Return: whether @cond held.
 */
bool lite_spin(const struct lite_node *node, bool (*cond)(void *), void *arg,
	       unsigned long deadline)
{
	unsigned long stop;
	u64 until;

	if (node->cq_mode == LITE_CQ_ADAPTIVE) {
		until = ktime_get_ns() + LITE_CQ_SPIN_US * NSEC_PER_USEC;
		/* Stop early for anyone who needs this CPU (rxe's work). */
		while (ktime_get_ns() < until && !need_resched()) {
			if (cond(arg))
				return true;
			cpu_relax();
		}
	} else if (node->cq_mode == LITE_CQ_BUSY) {
		stop = jiffies + msecs_to_jiffies(LITE_BUSY_SPIN_MS);
		if (time_before(stop, deadline))
			deadline = stop;
		while (time_before(jiffies, deadline) &&
		       !signal_pending(current)) {
			if (cond(arg))
				return true;
			cpu_relax();
			cond_resched();
		}
	}
	return cond(arg);
}

static bool lite_completion_done(void *c)
{
	return completion_done(c);
}

/*
 * lite_wait_done - wait for @c as the node's mode says, up to @timeout
 * jiffies; if @killable, a fatal signal ends the wait too.
 * Return: like wait_for_completion_killable_timeout().
 */
long lite_wait_done(const struct lite_node *node, struct completion *c,
		    long timeout, bool killable)
{
	unsigned long deadline = jiffies + timeout;
	long left;

	lite_spin(node, lite_completion_done, c, deadline);
	left = max_t(long, (long)(deadline - jiffies), 1);
	if (killable)
		return wait_for_completion_killable_timeout(c, left);
	return wait_for_completion_timeout(c, left);
}
