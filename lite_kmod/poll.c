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

/**
 * lite_cq_poll_ctx - how a node's CQs are polled
 * @node: the node
 *
 * Return: IB_POLL_DIRECT in busy mode (the node's poller thread polls),
 * IB_POLL_WORKQUEUE in workqueue mode, else IB_POLL_SOFTIRQ.
 */
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

/**
 * lite_poller_start - start the busy poller of a node in busy mode
 * @node: the node being created
 *
 * Does nothing in the other modes. May sleep.
 *
 * Return: 0, or the error of creating the thread.
 */
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

/**
 * lite_poller_stop - stop a node's busy poller, if it has one
 * @node: the node
 *
 * Returns once the thread exited. May sleep.
 */
void lite_poller_stop(struct lite_node *node)
{
	if (node->poller)
		kthread_stop(node->poller);
	node->poller = NULL;
}

/**
 * lite_poll_add - let the poller see @conn's CQ (busy mode only)
 * @conn: the connection whose CQ was just created
 *
 * Takes the node's poll_lock.
 */
void lite_poll_add(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;

	if (node->cq_mode != LITE_CQ_BUSY)
		return;
	spin_lock(&node->poll_lock);
	list_add_tail_rcu(&conn->poll_entry, &node->poll_conns);
	spin_unlock(&node->poll_lock);
}

/**
 * lite_poll_del - take @conn's CQ from the poller
 * @conn: the connection
 *
 * After this only the caller polls the CQ. Does nothing outside busy mode
 * or if the CQ is not polled. Takes the node's poll_lock and waits for an
 * RCU grace period: may sleep.
 */
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

/**
 * lite_spin - spin until @cond(@arg) holds, as the node's mode allows
 * @node: the node whose mode decides
 * @cond: the condition
 * @arg: its argument
 * @deadline: in jiffies; spinning never goes past it
 *
 * Busy mode spins up to LITE_BUSY_SPIN_MS (yielding the CPU when asked,
 * stopping on a signal), adaptive mode for LITE_CQ_SPIN_US (stopping early
 * when the CPU is needed), the others not at all; then the caller sleeps
 * until @deadline.
 *
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

/**
 * lite_wait_done - wait for a completion as the node's mode says
 * @node: the node whose mode decides (lite_spin(), then sleep)
 * @c: the completion
 * @timeout: in jiffies
 * @killable: a fatal signal ends the wait too
 *
 * May sleep.
 *
 * Return: like wait_for_completion_killable_timeout(): the jiffies left
 * (at least 1) if @c completed, 0 on timeout, -ERESTARTSYS on a fatal
 * signal (only if @killable).
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
