// SPDX-License-Identifier: GPL-2.0
/*
 * Completion delivery, chosen per node (LITE_CQ_*): how completions are
 * noticed (a polling thread, softirq, or a workqueue) and how a thread
 * waiting for one waits (spin, sleep, spin briefly and then sleep, or, in
 * poll mode, poll the CQ itself for a while and then sleep).
 *
 * Completion handlers never sleep, whatever the mode: in softirq, busy and
 * poll modes control messages are handed to node->cq_wq (conn.c), and
 * handlers run with bottom halves off.
 */
#include <linux/kthread.h>
#include <linux/freezer.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/ktime.h>
#include <linux/rculist.h>

#include "internal.h"

/**
 * lite_cq_poll_ctx - how a node's CQs are polled
 * @node: the node
 *
 * Return: IB_POLL_DIRECT in busy and poll modes (lite polls: its busy
 * thread, or the waiters and lite_cq_iop()), IB_POLL_WORKQUEUE in
 * workqueue mode, else IB_POLL_SOFTIRQ.
 */
enum ib_poll_context lite_cq_poll_ctx(const struct lite_node *node)
{
	switch (node->cq_mode) {
	case LITE_CQ_BUSY:
	case LITE_CQ_POLL:
		return IB_POLL_DIRECT;
	case LITE_CQ_WORKQUEUE:
		return IB_POLL_WORKQUEUE;
	default:
		return IB_POLL_SOFTIRQ;
	}
}

/*
 * A CQ that lite polls itself (IB_POLL_DIRECT: busy and poll modes) has one
 * poller at a time, whoever it is: the busy thread, lite_cq_iop() in
 * softirq, or a waiting thread with bottom halves off. Handlers therefore
 * run in completion order, as the ring and the reply ordering need.
 * LITE_CQF_OWNED is that ownership; close_work takes it for good before
 * the drain, which then polls alone. Only lite_cq_iop() arms the CQ, once
 * it polled it empty; a waiter owns it briefly (bottom halves and so
 * preemption off), so lite_cq_iop() finding it owned just runs again.
 */
enum {
	LITE_CQF_OWNED,
	LITE_CQF_STOPPED,
};

static bool lite_cq_own(struct lite_conn *conn)
{
	return !test_and_set_bit_lock(LITE_CQF_OWNED, &conn->cq_flags);
}

static void lite_cq_disown(struct lite_conn *conn)
{
	clear_bit_unlock(LITE_CQF_OWNED, &conn->cq_flags);
}

/*
 * Poll @conn's CQ for up to LITE_BUSY_BUDGET completions unless someone
 * else polls it now (or close_work took it). Bottom halves off.
 */
static void lite_cq_poll_unowned(struct lite_conn *conn)
{
	struct ib_cq *cq;

	if (!lite_cq_own(conn))
		return;
	/* Before close_work stops it, the CQ exists or is NULL. */
	cq = READ_ONCE(conn->cq);
	if (cq)
		ib_process_cq_direct(cq, LITE_BUSY_BUDGET);
	lite_cq_disown(conn);
}

/*
 * Poll mode: the completion event of a CQ (any context the driver calls
 * it in) schedules lite_cq_iop().
 */
static void lite_cq_event(struct ib_cq *cq, void *ctx)
{
	struct lite_conn *conn = ctx;

	irq_poll_sched(&conn->iop);
}

/* Poll mode, softirq: poll the CQ; once it is empty, arm it again. */
static int lite_cq_iop(struct irq_poll *iop, int budget)
{
	struct lite_conn *conn = container_of(iop, struct lite_conn, iop);
	int n;

	if (!lite_cq_own(conn))
		return budget;	/* stay scheduled: polled again soon */
	n = ib_process_cq_direct(conn->cq, budget);
	if (n < budget) {
		irq_poll_complete(iop);
		if (ib_req_notify_cq(conn->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			irq_poll_sched(iop);
	}
	lite_cq_disown(conn);
	return n;
}

/**
 * lite_cq_init - start delivering the completions of @conn's new CQ
 * @conn: the connection; conn->cq was just allocated with
 *	  lite_cq_poll_ctx()
 *
 * Poll mode takes the CQ's completion events (lite_cq_event()) and arms
 * it; busy mode hands it to the node's thread; the other modes leave it
 * to the RDMA core.
 */
void lite_cq_init(struct lite_conn *conn)
{
	if (conn->node->cq_mode == LITE_CQ_POLL) {
		conn->cq->comp_handler = lite_cq_event;
		irq_poll_init(&conn->iop, LITE_POLL_BUDGET, lite_cq_iop);
		ib_req_notify_cq(conn->cq, IB_CQ_NEXT_COMP);
	}
	lite_poll_add(conn);
}

/**
 * lite_cq_stop - leave @conn's CQ to the caller alone
 * @conn: the connection, in close_work
 *
 * In busy and poll modes, stops the busy thread, the completion events and
 * the waiters polling it, and takes it for good: afterwards only the
 * caller polls it (lite_conn_drain() does), and it may be freed. Idempotent.
 * May sleep.
 */
void lite_cq_stop(struct lite_conn *conn)
{
	if (!conn->cq || lite_cq_poll_ctx(conn->node) != IB_POLL_DIRECT ||
	    test_and_set_bit(LITE_CQF_STOPPED, &conn->cq_flags))
		return;
	lite_poll_del(conn);
	if (conn->node->cq_mode == LITE_CQ_POLL)
		irq_poll_disable(&conn->iop);
	/* A waiter owns it for a few completions at most. */
	while (!lite_cq_own(conn))
		usleep_range(10, 50);
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
		list_for_each_entry_rcu(conn, &node->poll_conns, poll_entry) {
			local_bh_disable();
			lite_cq_poll_unowned(conn);
			local_bh_enable();
		}
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
 * lite_poll_add - let pollers see @conn's CQ (busy and poll modes)
 * @conn: the connection whose CQ was just created
 *
 * Takes the node's poll_lock.
 */
void lite_poll_add(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;

	if (lite_cq_poll_ctx(node) != IB_POLL_DIRECT)
		return;
	spin_lock(&node->poll_lock);
	list_add_tail_rcu(&conn->poll_entry, &node->poll_conns);
	spin_unlock(&node->poll_lock);
}

/**
 * lite_poll_del - take @conn's CQ off the node's list of polled CQs
 * @conn: the connection
 *
 * After this no thread finds the CQ on the node's list. Does nothing
 * outside busy and poll modes or if the CQ is not listed. Takes the
 * node's poll_lock and waits for an RCU grace period: may sleep.
 */
void lite_poll_del(struct lite_conn *conn)
{
	struct lite_node *node = conn->node;

	if (lite_cq_poll_ctx(node) != IB_POLL_DIRECT ||
	    list_empty(&conn->poll_entry))
		return;
	spin_lock(&node->poll_lock);
	list_del_rcu(&conn->poll_entry);
	spin_unlock(&node->poll_lock);
	synchronize_rcu();
	INIT_LIST_HEAD(&conn->poll_entry);
}

/*
 * Poll mode: poll @conn's CQ, or every CQ of @node if @conn is NULL, once,
 * where no one else does right now. Bottom halves are off while a handler
 * runs, as they are for the softirq ones; enabling them again runs the
 * softirq work that came meanwhile (rxe's, on this CPU).
 */
static void lite_poll_once(struct lite_node *node, struct lite_conn *conn)
{
	struct lite_conn *c;

	local_bh_disable();
	if (conn) {
		lite_cq_poll_unowned(conn);
	} else {
		rcu_read_lock();
		list_for_each_entry_rcu(c, &node->poll_conns, poll_entry)
			lite_cq_poll_unowned(c);
		rcu_read_unlock();
	}
	local_bh_enable();
}

/*
 * Poll mode: how long a wait polls, from the recent waits of its kind
 * (@avg_ns): twice their average if that is up to LITE_POLL_MAX_US (most
 * then end without a sleep); LITE_POLL_MIN_US, a probe, if they take
 * longer.
 */
static u64 lite_poll_bound_ns(u32 avg_ns)
{
	if (avg_ns >= LITE_POLL_MAX_US * NSEC_PER_USEC)
		return LITE_POLL_MIN_US * NSEC_PER_USEC;
	return clamp_t(u64, 2ULL * avg_ns, LITE_POLL_MIN_US * NSEC_PER_USEC,
		       LITE_POLL_MAX_US * NSEC_PER_USEC);
}

/**
 * lite_wait_note - add one wait's duration to a running average
 * @avg_ns: the average (an exponential one, 1/8 weight per sample); racy
 *	    updates only lose a sample
 * @ns: how long the wait took, in ns
 */
void lite_wait_note(u32 *avg_ns, u64 ns)
{
	u32 avg = READ_ONCE(*avg_ns);

	ns = min_t(u64, ns, 2ULL * LITE_POLL_MAX_US * NSEC_PER_USEC);
	WRITE_ONCE(*avg_ns, avg - avg / 8 + (u32)ns / 8);
}

/* Threads in lite_poll() now, all nodes together: at most one per CPU. */
static atomic_t lite_pollers = ATOMIC_INIT(0);

/*
 * Poll mode: poll until @cond holds, for @bound_ns, as long as this CPU has
 * no other task to run, no signal is pending and there is one CPU per poller.
 * need_resched() is not enough: a task woken here that does not preempt the
 * poller would wait until the poll ends or a tick preempts it, and a writer
 * would poll for its turn while the writer before it waits for this CPU. As
 * in KVM's halt polling, any runnable task stops it, a SCHED_IDLE one too,
 * before the first poll: polling once anyway measured slower
 * (docs/benchmarks.md). The bound is read with ktime_get_ns() although
 * local_clock() is cheaper: on the emulated guest (HPET clocksource) the
 * cheaper clock made the loop poll the CQ more often and calls slower.
 */
static bool lite_poll(struct lite_node *node, struct lite_conn *conn,
		      u64 bound_ns, bool (*cond)(void *), void *arg,
		      unsigned long deadline)
{
	u64 until = ktime_get_ns() + bound_ns;
	bool done = false;

	if (atomic_inc_return(&lite_pollers) > num_online_cpus())
		goto out;
	while (!need_resched() && single_task_running() &&
	       time_before(jiffies, deadline) && !signal_pending(current)) {
		lite_poll_once(node, conn);
		if (cond(arg)) {
			done = true;
			break;
		}
		if (ktime_get_ns() >= until)
			break;
		cpu_relax();
	}
out:
	atomic_dec(&lite_pollers);
	return done || cond(arg);
}

/* lite_spin(), without adding the wait to the average. */
static bool lite_spin_once(struct lite_node *node, struct lite_conn *conn,
			   bool (*cond)(void *), void *arg,
			   unsigned long deadline)
{
	unsigned long stop;
	u64 until;

	if (node->cq_mode == LITE_CQ_POLL) {
		return lite_poll(node, conn,
				 lite_poll_bound_ns(READ_ONCE(node->wait_rtt_ns)),
				 cond, arg, deadline);
	} else if (node->cq_mode == LITE_CQ_ADAPTIVE) {
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

/**
 * lite_spin - spin until @cond(@arg) holds, as the node's mode allows
 * @node: the node whose mode decides
 * @conn: the connection whose completion makes @cond true (poll mode
 *	  polls its CQ)
 * @cond: the condition
 * @arg: its argument
 * @deadline: in jiffies; spinning never goes past it
 *
 * Poll mode polls the CQ (lite_poll()) for twice the node's recent waits
 * for a connection's completion, and adds this one to them if it ended
 * polling (not if @cond held at once); busy mode spins up to
 * LITE_BUSY_SPIN_MS (yielding the CPU when asked, stopping on a signal),
 * adaptive mode for LITE_CQ_SPIN_US (stopping early when the CPU is
 * needed), the others not at all; then the caller sleeps until @deadline.
 *
 * Return: whether @cond held.
 */
bool lite_spin(struct lite_node *node, struct lite_conn *conn,
	       bool (*cond)(void *), void *arg, unsigned long deadline)
{
	u64 start;
	bool done;

	if (cond(arg))
		return true;	/* no wait: nothing to learn from */
	start = ktime_get_ns();	/* not before: the clock is costly (HPET) */
	done = lite_spin_once(node, conn, cond, arg, deadline);
	if (done && node->cq_mode == LITE_CQ_POLL)
		lite_wait_note(&node->wait_rtt_ns, ktime_get_ns() - start);
	return done;
}

/**
 * lite_spin_any - lite_spin() for a condition any connection may make true
 * @node: the node whose mode decides
 * @gap_ns: how far apart such events came recently (lite_wait_note())
 * @cond: the condition
 * @arg: its argument
 * @deadline: in jiffies; spinning never goes past it
 *
 * Poll mode polls every CQ of the node for twice @gap_ns (within
 * LITE_POLL_MIN_US and LITE_POLL_MAX_US); the other modes spin as
 * lite_spin() does.
 *
 * Return: whether @cond held.
 */
bool lite_spin_any(struct lite_node *node, u32 gap_ns, bool (*cond)(void *),
		   void *arg, unsigned long deadline)
{
	if (node->cq_mode == LITE_CQ_POLL)
		return lite_poll(node, NULL, lite_poll_bound_ns(gap_ns), cond,
				 arg, deadline);
	return lite_spin_once(node, NULL, cond, arg, deadline);
}

static bool lite_completion_done(void *c)
{
	return completion_done(c);
}

/**
 * lite_wait_done - wait for a completion as the node's mode says
 * @node: the node whose mode decides (lite_spin(), then sleep)
 * @conn: the connection whose completion completes @c
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
long lite_wait_done(struct lite_node *node, struct lite_conn *conn,
		    struct completion *c, long timeout, bool killable)
{
	unsigned long deadline = jiffies + timeout;
	u64 start = ktime_get_ns();
	long left;

	lite_spin_once(node, conn, lite_completion_done, c, deadline);
	left = max_t(long, (long)(deadline - jiffies), 1);
	if (killable)
		left = wait_for_completion_killable_timeout(c, left);
	else
		left = wait_for_completion_timeout(c, left);
	/* How long it took, slept or not: the next wait polls accordingly. */
	if (left > 0 && node->cq_mode == LITE_CQ_POLL)
		lite_wait_note(&node->wait_rtt_ns, ktime_get_ns() - start);
	return left;
}
