/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite.ko internals shared by the glue files. The verb-free logic lives in
 * core/; this header ties it to verbs, rdma_cm and the char device.
 *
 * Object model:
 *   lite_ctx   the module's one instance list (devices and nodes)
 *   lite_ibdev an RDMA device seen through our ib_client
 *   lite_node  a cluster node bound to one device port (several per kernel)
 *   lite_conn  a reliable connection (RC QP via rdma_cm) to another node
 */
#ifndef LITE_INTERNAL_H
#define LITE_INTERNAL_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <linux/workqueue.h>
#include <linux/completion.h>
#include <linux/wait.h>
#include <linux/atomic.h>
#include <linux/socket.h>
#include <linux/miscdevice.h>
#include <linux/hashtable.h>
#include <linux/uidgid.h>
#include <linux/irq_poll.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/ib_cm.h>

#include "uapi/linux/lite.h"
#include "core/wire.h"
#include "core/membership.h"
#include "core/credits.h"
#include "core/auth.h"
#include "core/lmr.h"
#include "core/dsm.h"

#define LITE_RX_DEPTH		32	/* receive buffers per connection */
#define LITE_TX_DEPTH		(LITE_RX_DEPTH + 2)	/* control sends */
#define LITE_DATA_WRS		64	/* one-sided WRs in flight per conn */
#define LITE_DATA_SYNC_SLOTS	16	/* of them, never taken by async ops */
#define LITE_FF_EVERY		8	/* unsignaled inline WRs: one in this
					 * many is signaled (rdma.c) */
#define LITE_BOUNCE_SIZE	(128 * 1024)	/* kernel buffer per transfer
					 * step: an RPC entry of 64 KiB
					 * and its header fit */
/* Memory worth having only if it comes at once: no reclaim, no warning. */
#define LITE_GFP_TRY		(GFP_KERNEL | __GFP_NORETRY | __GFP_NOWARN)
#define LITE_PIN_PAGES		256		/* pinned per transfer step, and
						 * per cached buffer at most */
#define LITE_PIN_MAP_PAGES	32		/* mapped per cached step */
#define LITE_MAX_SGE		16		/* SGEs per one-sided WR */
#define LITE_MAX_INLINE		256		/* inline bytes we ask a QP for:
						 * small RPC entries and replies */
#define LITE_INVALIDATE_MS	3000	/* mappers must drop a share by then */
#define LITE_JOIN_TIMEOUT_MS	15000	/* default join timeout */
#define LITE_CM_TIMEOUT_MS	3000	/* address and route resolution */
#define LITE_MAX_TIMEOUT_MS	60000	/* longest timeout a caller may ask */
#define LITE_HANDSHAKE_MS	10000	/* unauthenticated connections die */
#define LITE_LEAVE_MS		1000	/* wait for LEAVE to be acknowledged */
#define LITE_MAX_UNAUTH		16	/* connections still in the handshake */
/*
 * RC transport: local ACK timeout 4.096 us * 2^15 = 134 ms, 7 retries: a
 * peer that stops acknowledging errors the QP after about 1.1 s (rxe's
 * default, from the path record, retransmits only every 2.1 s). RNR NAKs
 * cannot happen while credits are honoured; 6 RNR retries bound a peer that
 * stopped reposting receives. Module parameter ack_timeout (12..18: up to
 * 1.07 s, 8.6 s for all retries, still inside data_timeout_ms, at least 9 s).
 */
#define LITE_ACK_TIMEOUT	15
#define LITE_RETRY_COUNT	7
#define LITE_RNR_RETRY		6
/* Health (health.c); module parameters heartbeat_ms and dead_ms. */
#define LITE_HEARTBEAT_MS	200	/* members <-> manager */
#define LITE_DEAD_MS		1500	/* silent this long: declared dead */
#define LITE_RECONNECT_MIN_MS	1	/* backoff between reconnect attempts, */
#define LITE_RECONNECT_MAX_MS	1000	/* doubling, with jitter */
#define LITE_LISTEN_BACKLOG	64
#define LITE_MAX_RD_ATOM	16	/* RDMA READ/atomic depth we ask for */
#define LITE_RING_SIZE		(8U << 20)	/* RPC ring per sending peer */
#define LITE_RING_ACK_EVERY	(LITE_RING_SIZE / 8)	/* consumed bytes */
#define LITE_RCALL_CACHE	8	/* reply buffers a node keeps, */
#define LITE_RCALL_KEEP_BYTES	(8U << 20)	/* ... this many bytes
						 * of them in all */
#define LITE_RCALL_CACHE_ORDER	5	/* reply buffer sizes: a power of
					 * two pages up to this order, a
					 * multiple of it above */
#define LITE_STAGE_CACHE	8	/* bounce buffers a node keeps,
					 * LITE_BOUNCE_SIZE each (buf.c) */
#define LITE_RING_TURN_NS	10000	/* a writer polls about twice this
					 * for the one before it to post */
#define LITE_BUSY_BUDGET	16	/* completions per CQ per poll pass */
#define LITE_BUSY_SPIN_MS	10	/* busy mode: longest spin of a wait */
#define LITE_POLL_BUDGET	64	/* poll mode: completions per softirq
					 * pass */
#define LITE_POLL_MIN_US	20	/* poll mode: shortest poll of a wait */
#define LITE_POLL_MAX_US	1000	/* ... longest (waits that take longer
					 * on average poll the shortest) */
#define LITE_CQ_MODE_BEST	LITE_CQ_POLL	/* measured: see
					 * docs/benchmarks.md */

/*
 * Module parameters of general use (params.c), read with lite_tun(): a
 * value may change at any time, each use reads it once.
 */
struct lite_tunables {
	unsigned int call_timeout_ms;	/* a control request's reply */
	unsigned int data_timeout_ms;	/* one transfer step: longer than the
					 * RC retry budget (ack_timeout) */
	unsigned int conn_wait_ms;	/* a new operation waits this long for
					 * a member that is reconnecting */
	unsigned int zcopy_min_kb;	/* pin user pages from here on */
	unsigned int pin_cache_kb;	/* pinned kept per file (pincache.c) */
	unsigned int cq_mode;		/* of nodes brought up without one */
	unsigned int rpc_held_max;	/* calls one file may hold (rpc.c) */
};
extern struct lite_tunables lite_tunables __read_mostly;
#define lite_tun(name)	READ_ONCE(lite_tunables.name)
#define lite_tun_jiffies(name)	msecs_to_jiffies(lite_tun(name))
#define lite_tun_deadline(name)	(jiffies + lite_tun_jiffies(name))
/* io_uring reads/writes up to this run asynchronously, longer ones in
 * io_uring's workers
 */
#define LITE_AOP_MAX_LEN	(64 * 1024)
#define LITE_URING_TICK_MS	100	/* a parked io_uring receive looks
						 * whether its task or ring went */
#define LITE_URING_REPLY_MAX	(512 * 1024)	/* longer replies go to an
						 * io_uring worker */
#define LITE_AOP_SEGS		8	/* remote segments of an async access */
#define LITE_AOP_POOL		64	/* idle async operations a file keeps */
#define LITE_AOP_KBUF		4096	/* the kernel buffer a kept operation
					 * keeps for transfers up to this size */
#define LITE_AOP_PAGES		(LITE_AOP_MAX_LEN / PAGE_SIZE + 1)
#define LITE_AOP_SGES		(LITE_AOP_PAGES + LITE_AOP_SEGS)
					/* local pieces of one (registered
					 * buffers: page by page) */
#define LITE_AOP_FILE_BYTES	(64ULL << 20)	/* kernel memory of a file's
						 * async operations */
/* DSM (dsm.c, dsm_home.c). */
#define LITE_DSM_FAULT_MS	10000	/* a fault waits this long at most */
#define LITE_DSM_SPIN_US	2000	/* ... polling its fetch this long first
					 * (a wake-up costs more than most
					 * fetches) */
#define LITE_DSM_ANSWER_MS	3000	/* a home waits for an INVAL answer */
#define LITE_DSM_DONE_MS	30000	/* ... and for a DONE: far beyond a
					 * member's death being declared */
#define LITE_DSM_CLOSE_MS	120000	/* a node hands its pages back */

/*
 * rdma_cm private data of a connect request and its accept (at most 56
 * bytes). A request carries a ticket (lite_auth_cm_tag()) proving the
 * secret, so strangers are refused before anything is allocated for them.
 */
struct lite_cm_pdata {
	__le32 magic;
	u8 version;
	u8 reserved0;
	__le16 rx_depth;
	__le32 status;			/* reject: a negative errno; else 0 */
	u8 nonce[LITE_CM_NONCE_LEN];	/* request: random; accept: zero */
	u8 tag[LITE_CM_TAG_LEN];	/* request: the ticket; accept: zero */
};

/*
 * The module's workqueue for work that may outlive what holds the module:
 * the last steps of an operation, a call or a buffer after its file or
 * node let it go, and their timers. lite_exit() drains it, so no such work
 * runs after the module is gone. Set once in lite_init().
 */
extern struct workqueue_struct *lite_wq;

struct lite_ctx {
	struct mutex lock;		/* serialises control commands */
	struct list_head devs;		/* lite_ibdev; @lock */
	struct xarray nodes;		/* instance -> lite_node; @lock */
	struct ib_client client;
	struct miscdevice misc;
};

struct lite_ibdev {
	struct ib_device *dev;
	struct list_head entry;		/* in lite_ctx.devs; ctx lock */
	struct list_head nodes;		/* lite_node.dev_entry; ctx lock */
};

enum lite_cm_kind {
	LITE_CM_LISTENER,
	LITE_CM_CONN,
};

enum lite_conn_state {
	LITE_CONN_CONNECTING,	/* rdma_cm still working */
	LITE_CONN_HANDSHAKE,	/* connected, not yet authenticated */
	LITE_CONN_READY,	/* authenticated member connection */
	LITE_CONN_CLOSING,	/* being torn down; no more posts */
};

/* What lite_count_error() counts (trace.c): one counter each. */
enum lite_err_kind {
	LITE_ERR_BAD_MSG,	/* stats.bad_msgs: malformed or unexpected */
	LITE_ERR_TIMEOUT,	/* stats.timeouts: a wait ran out */
	LITE_ERR_AUTH,		/* stats.auth_failures: a handshake failed */
	LITE_ERR_LOST,		/* stats.losses: a member died */
};

struct lite_node_stats {
	atomic64_t joins;
	atomic64_t leaves;
	atomic64_t losses;
	atomic64_t auth_failures;
	atomic64_t bad_msgs;
	atomic64_t timeouts;
	atomic64_t reconnects;		/* connections to members re-made */
	atomic64_t lease_hits;		/* allocations from a lease's stock */
	atomic64_t lease_misses;	/* allocations a lease had no stock for */
	atomic64_t lease_stock_lmrs;	/* in our leases' stock */
	atomic64_t lease_stock_bytes;
	atomic64_t lease_lmrs;		/* exports we made for peers' leases */
	atomic64_t lease_bytes;
	atomic64_t mrs;			/* lmr mode: MRs allocated (mr.c) */
	atomic64_t reg_qp_resets;	/* lmr mode: registration QP remade */
};

/* Fault injection (fault.c), set through debugfs; all zero = off. */
struct lite_faults {
	atomic_t fail_posts;		/* fail the next N posts (-EIO) */
	u32 drop_rx_permille;		/* READ_ONCE: drop received messages */
	u32 delay_rx_ms;		/* READ_ONCE: delay control messages */
	u32 delay_lmr_ms;		/* READ_ONCE: delay recording an LMR */
	u32 delay_take_ms;		/* READ_ONCE: delay a taken request */
	atomic_t break_regs;		/* the next N registrations fail on
					 * the device (a wrong key index) */
	bool hb_stop;			/* READ_ONCE: send no heartbeats */
	struct mutex raw_lock;		/* protects the raw_rdma state below */
	int raw_status;			/* the last raw op's result */
	u32 raw_len;			/* bytes it read into @raw_data */
	u8 raw_data[64];
};

struct lite_dsm_stats {
	atomic64_t regions;
	atomic64_t pages;
	atomic64_t read_faults;
	atomic64_t write_faults;
	atomic64_t fetches;
	atomic64_t invalidations;
	atomic64_t home_txns;
	atomic64_t sigbus;
	atomic64_t prot_changes;
	atomic64_t prot_ns;
};

/*
 * A lease: LMRs a memory node allocated for us ahead of demand, by size
 * class (lease.c). Class c holds LMRs of PAGE_SIZE << c bytes.
 */
#define LITE_LEASE_CLASSES	9		/* 4 KiB .. 1 MiB */
#define LITE_LEASE_MAX		(PAGE_SIZE << (LITE_LEASE_CLASSES - 1))

struct lite_lease_class {
	struct list_head stock;		/* lite_lmr.lease_entry; the node's
					 * lease_lock, as the fields below */
	u32 have;			/* LMRs in @stock */
	u32 target;			/* how many to keep */
	u32 pending;			/* refill requests under way */
	unsigned long used;		/* jiffies of the last claim */
};

struct lite_lease {
	struct lite_node *node;		/* immutable; it owns the lease */
	u16 mem_node;			/* immutable */
	struct work_struct refill;	/* on close_wq */
	struct lite_lease_class cls[LITE_LEASE_CLASSES];	/* node's
					 * lease_lock */
};

/* A DMA-mapped bounce buffer of LITE_BOUNCE_SIZE a node keeps (buf.c). */
struct lite_stage_buf {
	void *buf;
	u64 dma;
};

struct lite_node {
	enum lite_cm_kind cm_kind;	/* immutable: LITE_CM_LISTENER */
	struct kref ref;		/* atomic */

	/* Immutable after lite_node_create(). */
	u32 instance;
	struct lite_ibdev *ibdev;	/* valid until lite_node_destroy() */
	char dev_name[IB_DEVICE_NAME_MAX];	/* outlives the device */
	u32 port_num;
	struct ib_pd *pd;
	struct lite_naddr listen_addr;
	struct sockaddr_storage listen_sa;
	u8 *secret;
	u32 secret_len;
	struct workqueue_struct *wq;		/* ordered: incoming requests */
	struct workqueue_struct *close_wq;	/* connection teardown */
	struct workqueue_struct *alloc_wq;	/* LMR_ALLOC jobs, unordered */

	struct list_head dev_entry;	/* in lite_ibdev.nodes; ctx lock */
	struct rdma_cm_id *listen_id;	/* ctx lock */

	struct mutex lock;		/* protects the fields below */
	struct lite_membership mb;
	struct lite_conn *peers[LITE_MAX_NODES + 1];	/* READY conns only;
							 * also peers_lock */
	struct list_head conns;		/* every lite_conn of this node */
	bool dying;			/* leaving: refuse new connections */
	u16 self_id;			/* also read with READ_ONCE */

	atomic_t n_conns;		/* conns not yet released */
	wait_queue_head_t conns_wq;	/* woken when n_conns drops */

	struct xarray calls;		/* req_id -> lite_call; xa lock */
	u32 next_req_id;		/* xa lock */

	struct lite_node_stats stats;	/* atomics */

	/* What peers may reach, and the keys (mr.c). */
	u32 isolation;			/* immutable: LITE_ISOLATION_GLOBAL or
					 * _LMR */
	struct ib_mr *global_mr;	/* immutable: global mode's DMA MR */
	u32 rkey;			/* immutable: @global_mr's rkey */
	bool nic_atomic;		/* immutable: the device does remote
					 * atomics (@global_mr allows them) */
	u32 mr_max_pages;		/* immutable: lmr mode, entries per MR */
	spinlock_t mr_lock;		/* protects the two below */
	struct list_head mr_pool;	/* idle struct lite_mr, fresh keys */
	u32 mr_idle;			/* entries on @mr_pool */
	/* lmr mode: the QP that registers and invalidates (local work
	 * requests only, never a packet: nothing is ever retransmitted) */
	struct ib_cq *reg_cq;		/* set by lite_mr_init(), cleared
					 * by lite_mr_exit() */
	struct ib_qp *reg_qp;		/* as @reg_cq; its state: reg_lock */
	struct mutex reg_lock;		/* posts to @reg_qp, and remakes it */
	bool reg_broken;		/* READ_ONCE; set by a failed WR (any
					 * context) or a stuck one, cleared
					 * under reg_lock */
	bool reg_in_reset;		/* reg_lock: @reg_qp left in RESET by
					 * a remake that failed */
	atomic_t reg_inflight;		/* WRs posted and not completed */
	wait_queue_head_t reg_wq;	/* a WR of @reg_qp completed */
	atomic_t kbufs_dying;		/* lmr mode: kbuf releases queued;
					 * lite_node_destroy() waits on
					 * @conns_wq for none */
	struct lite_conn *self_conn;	/* node lock and peers_lock: loopback,
					 * active end */
	spinlock_t peers_lock;		/* writers of @peers and @self_conn hold
					 * it with @lock; lite_node_conn() (the
					 * data path) only it */
	struct xarray exports;		/* id -> lite_export; changed under node
					 * lock, read by atomics under its xa
					 * lock (bh) */
	u32 next_export;		/* node lock */
	struct list_head alloc_jobs;	/* LMR_ALLOC being served; node lock */
	struct list_head orphans;	/* exports to reap; node lock */
	struct delayed_work reap_work;	/* on close_wq: frees orphans */
	struct list_head lmrs;		/* every lite_lmr of this node; node lock */
	u32 nonce;			/* immutable: high half of our mr_ids */
	struct list_head shares;	/* manager: lite_share_ent; node lock */
	u64 next_share_id;		/* node lock */
	atomic64_t mem_bytes;		/* held in exports, but leases' */
	atomic64_t mem_lmrs;

	/* Leases and frees that do not wait (lease.c). */
	spinlock_t lease_lock;		/* protects the fields below up to
					 * @frees_queued, and the classes of
					 * every lite_lease */
	struct lite_lease *leases[LITE_MAX_NODES + 1];	/* by memory node;
					 * made on first use, freed with us */
	bool lease_down;		/* the node left: queue nothing, send
					 * no FREE */
	struct list_head lease_dead;	/* stock of members that left */
	struct list_head frees;		/* LMRs whose FREE waits for free_work */
	u64 frees_pending;		/* the memory they hold */
	u32 frees_queued;		/* how many */
	wait_queue_head_t lease_wq;	/* claims waiting for a refill */
	struct delayed_work lease_work;	/* on close_wq: lite_lease_scan() */
	struct work_struct free_work;	/* on close_wq: sends @frees, one at
					 * a time (FREEs must not take every
					 * credit: the memory node's
					 * INVALIDATEs need replies) */

	/* Per-user LMR quota of the allocations made from here (quota.c). */
	spinlock_t quota_lock;		/* protects @quota */
	DECLARE_HASHTABLE(quota, 4);	/* lite_quota by kuid */

	/* Completion delivery (poll.c). */
	u32 cq_mode;			/* immutable: LITE_CQ_*, never DEFAULT */
	struct workqueue_struct *cq_wq;	/* control messages taken off the CQ */
	struct task_struct *poller;	/* immutable: LITE_CQ_BUSY's thread */
	spinlock_t poll_lock;		/* serialises changes to poll_conns */
	struct list_head poll_conns;	/* RCU; conns whose CQs lite polls
					 * (busy and poll modes) */
	u32 wait_rtt_ns;		/* LITE_CQ_POLL: recent waits for a
					 * connection's completion, averaged
					 * (lite_wait_note(): racy, a hint) */

	/* RPC (rpc.c) and synchronisation (sync.c). */
	struct xarray services;		/* port -> lite_service; xa lock (bh) */
	struct xarray rpc_calls;	/* id - 1 -> lite_rcall, lowest free
					 * slot first; xa lock (bh) */
	struct xarray rpc_held;		/* low 16 bits of the token, less 1
					 * -> lite_rpc_in (or reserved for
					 * one: lite_rpc_reserve()); xa lock
					 * (bh) */
	u16 token_gen;			/* xa lock of rpc_held: the high
					 * 16 bits of the next token */
	bool rpc_down;			/* rpc_held lock: no more tokens */
	spinlock_t rcall_lock;		/* protects the four fields below
					 * and the kept calls' keyed_for;
					 * process context only; taken
					 * before the rpc_calls lock, never
					 * inside it */
	struct lite_rcall *rcalls[LITE_RCALL_CACHE];	/* reply buffers that
					 * calls left for the next ones,
					 * kept longest first */
	u32 n_rcalls;
	bool rcalls_closed;		/* the node went down: free, not keep */
	struct list_head rcalls_async;	/* lite_rcall.async: io_uring calls'
					 * mapped reply buffers */
	spinlock_t stage_lock;		/* (bh) protects the four fields below */
	struct lite_stage_buf stages[LITE_STAGE_CACHE];	/* mapped bounce
					 * buffers transfers left (buf.c) */
	u32 n_stages;
	u32 n_bounces;			/* keepable ones, kept or in use: at
					 * most LITE_STAGE_CACHE */
	bool stages_closed;		/* the node went down: free, not keep */
	struct list_head sync_waits;	/* lite_sync_wait parked here; node lock */
	u32 next_owner;			/* node lock: lock owner tokens */

	atomic_t aops;			/* atomic: io_uring ops in flight */
	atomic_t aops_peak;		/* atomic: the most @aops has been */

	/* Health (health.c): heartbeats, failure detection, reconnects. */
	struct workqueue_struct *heal_wq;	/* heartbeats, reconnects */
	struct delayed_work hb_work;	/* on heal_wq, every heartbeat_ms */
	struct delayed_work reconnect_work;	/* on heal_wq */
	bool healing;			/* node lock: heartbeats and reconnects
					 * run (between start and stop) */
	unsigned long last_heard[LITE_MAX_NODES + 1];	/* jiffies of the last
					 * message from each member; READ_ONCE */
	unsigned long retry_at[LITE_MAX_NODES + 1];	/* node lock: next
					 * reconnect attempt; [0] the loopback */
	u32 backoff_ms[LITE_MAX_NODES + 1];	/* node lock */
	bool expelled;			/* node lock: the manager dropped us */
	unsigned long hb_last;		/* node lock: last failure check */
	wait_queue_head_t peers_wq;	/* woken when a connection is installed */

	/* DSM (dsm.c, dsm_home.c). */
	struct xarray dsm;		/* region id -> lite_dsm_region (holds a
					 * reference); xa lock; RCU lookups */
	struct mutex dsm_lock;		/* serialises opening, closing and
					 * removing regions */
	bool dsm_down;			/* dsm_lock: the node goes down */
	u32 next_dsm;			/* node lock: low half of region ids */
	spinlock_t dsm_all_lock;	/* protects @dsm_all */
	struct list_head dsm_all;	/* every lite_dsm_region of the node */
	struct workqueue_struct *dsm_wq;	/* fetches, asks, the timer */
	struct delayed_work dsm_timer;	/* on dsm_wq: the homes' deadlines */
	struct lite_dsm_stats dsm_stats;	/* atomics */
	atomic_t dsm_frames;		/* frames allocated and not yet freed
					 * (their DMA mappings and keys) */
	bool dsm_frames_off;		/* no new frame: the node goes down;
					 * a full barrier against @dsm_frames */

	/* Fault injection (fault.c). */
	struct lite_faults faults;
	struct dentry *debugfs;		/* immutable: lite/lite<instance> */
};

/* Kernel memory a peer writes into: pages in DMA-mapped chunks. */
struct lite_kbuf_rel;

struct lite_kbuf {
	struct lite_node *node;		/* whose keys the chunks carry */
	struct ib_device *dev;
	u64 size;
	u32 n_chunks;
	struct page **pages;		/* one per chunk */
	u8 *orders;
	struct lite_chunk *chunks;	/* DMA addresses, as a layout */
	struct lite_mr **mrs;		/* lmr mode: one per chunk */
	struct lite_kbuf_rel *rel;	/* lmr mode: for the release work */
	struct lite_layout layout;
};

/* The inbound RPC ring a node keeps for one peer (on that connection). */
struct lite_ring_rx {
	struct lite_kbuf buf;
	spinlock_t lock;		/* protects the fields below */
	u64 head;			/* where the next entry must start */
	u64 tail;			/* everything before is consumed */
	u64 acked;			/* tail the peer was last told */
	struct list_head ents;		/* lite_ring_ent, in ring order */
};

struct lite_ring_ent {
	struct list_head entry;		/* lite_ring_rx.ents; ring lock */
	u64 pos;
	u32 size;
	bool consumed;			/* ring lock */
};

/* The peer's ring, as this node writes into it. */
struct lite_ring_tx {
	unsigned long busy;		/* bit 0: the writer that learns where
					 * the ring is; waiters sleep on
					 * conn->tx_wq */
	bool ready;			/* release: the four below are set */
	u64 size;
	struct lite_chunk *chunks;
	struct lite_layout layout;
	u64 head;			/* conn lock: next place to reserve */
	u64 posted;			/* release: the entries before it were
					 * posted; whose entry starts here
					 * posts next (ring order is posting
					 * order); waiters sleep on tx_wq */
	u64 tail;			/* conn lock: consumed, per the peer */
	struct list_head room_q;	/* conn lock: writers waiting for room,
					 * in arrival order (rpc.c) */
};

/* A call or message that arrived, until it is consumed (and answered). */
struct lite_rpc_in {
	struct list_head entry;		/* service queue, or conn->rpc_errs */
	struct lite_conn *conn;		/* holds a reference */
	struct lite_ring_ent *ent;	/* its ring space until consumed */
	struct lite_rpc_entry e;	/* the checked header */
	u64 pos;			/* ring position of the entry */
	struct lite_file *owner;	/* held: the file that took it */
	u32 token;			/* held: its token (rpc_held lock) */
	int err;			/* rpc_errs: the status to reply */
	struct lite_chunk segs[];	/* CALL: the caller's reply buffer */
};

/* A registered port. */
struct lite_service {
	struct kref ref;		/* atomic; freed after an RCU grace */
	u32 port;			/* immutable */
	struct lite_node *node;		/* immutable */
	struct lite_file *owner;	/* immutable */
	spinlock_t lock;		/* protects the fields below */
	struct list_head queue;		/* lite_rpc_in waiting for RECV */
	struct list_head urecvs;	/* lite_urecv parked: io_uring
					 * receives waiting for a request */
	bool dead;			/* unregistered: no more arrivals */
	wait_queue_head_t wq;		/* receivers */
	atomic_t pollers;		/* receivers polling, not asleep: an
					 * arrival wakes no one for them */
	u64 last_ns;			/* lock: when the last request came */
	u32 gap_ns;			/* lock (read without it): how far
					 * apart requests came recently; how
					 * long a receiver polls (poll mode) */
	struct list_head file_entry;	/* lite_file.services; file lock */
	struct rcu_head rcu;
};

/*
 * An io_uring receive (uring.c) on a port that had no request for it: it
 * waits on the service's urecvs list, off any thread. An arrival (or the
 * port's end) takes it off the list and calls @ready, in any context;
 * @ready arranges for lite_rpc_urecv_try() to run again in the task.
 */
struct lite_urecv {
	struct list_head entry;		/* svc->urecvs while parked; svc lock */
	struct lite_service *svc;	/* referenced until released */
	bool expired;			/* svc lock: its time is up; do not
					 * park it again */
	void (*ready)(struct lite_urecv *u);
};

/* Calls a node's files may hold (taken, not yet answered) at once. */
#define LITE_HELD_MAX		0xffff

/* A call this node made, until its reply buffer can be freed. */
struct lite_rcall {
	u32 id;				/* id - 1 is its key in node->rpc_calls */
	struct lite_node *node;		/* immutable */
	struct lite_conn *conn;		/* holds a reference; NULL once an
					 * asynchronous call let it go */
	struct lite_kbuf buf;		/* the reply lands here */
	/* The connection whose peer was given @buf's keys, compared and
	 * never followed (no reference); in lmr isolation a close takes
	 * the calls kept for it out of the cache (rcall_lock while kept
	 * or on rcalls_async; NULL there: never kept again).
	 */
	struct lite_conn *keyed_for;
	u16 keyed_peer;			/* its peer's id, for debugfs */
	u64 cap;			/* payload bytes wanted (set per call) */
	struct completion done;
	/* Written before @done completes, under the rpc_calls lock: */
	int status;
	u32 len;
	bool abandoned;			/* the caller left; free on reply */
	bool conn_failed;		/* failed by close: wait for the QP */
	/* rpc_calls lock: an asynchronous call's (lite_acall) completion,
	 * run (any context) instead of completing @done.
	 */
	void (*done_fn)(struct lite_rcall *call);
	void *arg;			/* for @done_fn */
	/* node->rcall_lock: an io_uring call's, from its start until its
	 * submitter's task work is done with it (or the call times out):
	 * on node->rcalls_async; taken off by the node's teardown, which
	 * unmaps the buffer then (lite_rpc_calls_orphan()).
	 */
	struct list_head async;
	bool orphaned;			/* rcall_lock: unmapped by teardown */
	bool finished;			/* rcall_lock: its task work is done */
};

/* Memory this node holds for an LMR (the memory node's side). */
struct lite_export_chunk {
	struct page *page;
	unsigned int order;
	u64 dma;
	u64 start;			/* offset of its first byte in the LMR */
	u32 len;
};

/*
 * lmr mode: the keys of an LMR's chunks for one kind of holder - the
 * owner (grant 0), or the nodes that map it through one name, with the
 * rights the owner granted it (LMR_GRANT; core/wire.h).
 */
struct lite_export_keys {
	struct list_head entry;		/* lite_export.keysets; node lock */
	u64 grant;			/* immutable: the grant id; 0: own */
	u32 perms;			/* immutable: LITE_PERM_* granted */
	struct lite_mr **mrs;		/* node lock: one per chunk, once
					 * registered (the first fetch) */
	u32 *rkeys;			/* node lock: one per chunk; likewise */
};

struct lite_export {
	u32 id;				/* immutable: key in node->exports */
	u16 owner;			/* immutable: the node that allocated */
	u32 alloc_req;			/* immutable: the owner's LMR_ALLOC
					 * request id (LMR_CANCEL names it) */
	u64 size;			/* immutable */
	u32 flags;			/* immutable: LITE_WIRE_LMR_* */
	bool leased;			/* immutable: made for the owner's
					 * lease (counted as lease memory) */
	u32 n_chunks;			/* immutable */
	struct lite_export_chunk *chunks;	/* immutable */
	struct lite_export_keys own;	/* lmr mode: the owner's keys (grant
					 * 0), immutable once published */
	struct list_head keysets;	/* lmr mode: lite_export_keys of the
					 * names granted; node lock */
	u32 n_keysets;			/* node lock: entries of keysets */
	u32 keying;			/* node lock: LMR_CHUNKS or LMR_UNKEY
					 * registering or invalidating keys
					 * with the lock dropped: not reaped */
	bool mappers[LITE_MAX_NODES + 1];	/* node lock: fetched by, and
						 * not yet confirmed dropping */
	struct list_head orphan;	/* node->orphans: freed, or its owner
					 * left; node lock */
	bool freed;			/* node lock: its owner freed it */
};

/* The manager's name registry. */
struct lite_share_ent {
	struct list_head entry;		/* node->shares; node lock */
	char name[LITE_NAME_MAX];
	u64 share_id;
	u16 publisher;
	u16 mem_node;
	u64 mr_id;
	u64 size;
	u32 perms;
	u64 grant;			/* the LMR's key grant for it, or 0 */
	u8 kind;			/* enum lite_share_kind */
	u8 flags;			/* LITE_WIRE_LMR_* of the LMR */
	bool mappers[LITE_MAX_NODES + 1];
};

/* An LMR as a user of it sees it: where its bytes are. */
struct lite_lmr {
	struct kref ref;		/* atomic */
	struct lite_node *node;		/* immutable; holds a node ref */
	u16 mem_node;			/* immutable */
	u64 mr_id;			/* immutable */
	u32 flags;			/* immutable: LITE_WIRE_LMR_* */
	u64 share_id;			/* mapped via; 0 if own. Set once, after
					 * it is on node->lmrs (WRITE_ONCE) */
	u64 grant;			/* immutable: the share's key grant
					 * (core/wire.h); 0 if own or none */
	kuid_t uid;			/* immutable: the user charged for it */
	u64 charged;			/* immutable: bytes charged to @uid's
					 * quota (0: a mapping, nothing) */
	u64 held;			/* bytes its memory node holds for it (a
					 * lease's: the class). Set once, after
					 * it is on node->lmrs (WRITE_ONCE) */
	struct lite_layout layout;	/* immutable once handed out (a
					 * lease's stock is cut to size) */
	struct lite_chunk *chunks;	/* immutable, layout's array */
	struct list_head map_entry;	/* node->lmrs; node lock */
	struct list_head lease_entry;	/* a lease's stock, or node->frees;
					 * node->lease_lock */
	bool published;			/* READ_ONCE: shared under a name once
					 * (others may have mapped it) */

	spinlock_t lock;		/* protects the two flags below */
	bool revoked;			/* freed or revoked: no new access;
					 * READ_ONCE outside @lock */
	bool mem_gone;			/* its memory node left: nothing to free;
					 * READ_ONCE outside @lock */
	atomic_t steps;			/* atomic, no lock: transfer steps in
					 * progress, plus LITE_LMR_CLOSED once
					 * revoked (lite_lmr_begin()) */
	wait_queue_head_t idle_wq;	/* woken when the last step of a
					 * revoked LMR ends */
	struct rcu_head rcu;		/* freed after a grace period: handle
					 * lookups run under rcu_read_lock() */
};

/* What an open file of /dev/lite holds; immutable, freed after RCU. */
struct lite_handle {
	struct lite_lmr *lmr;		/* holds a reference */
	u32 perms;
	bool owner;			/* allocated by this file */
	struct rcu_head rcu;
};

struct lite_pub {			/* a name this file published */
	struct list_head entry;		/* lite_file.pubs; file lock */
	char name[LITE_NAME_MAX];
	u64 handle;
	u64 grant;			/* the name's key grant; 0: none */
	u64 mr_id;			/* the LMR's wire id */
	u16 mem_node;			/* and its memory node */
	bool withdrawn;			/* off lite_file.pubs only: the name
					 * is withdrawn, its keys not yet */
};

struct lite_file {
	struct lite_ctx *ctx;		/* immutable */
	kuid_t uid;			/* immutable: the opener's euid, whose
					 * quota its allocations count against */
	struct mutex lock;		/* protects @node, @pubs */
	struct lite_node *node;		/* attached node; holds a ref */
	struct list_head pubs;
	struct xarray handles;		/* id -> lite_handle; xa lock to
					 * change, RCU to look up */
	u32 next_handle;		/* xa lock */
	struct list_head services;	/* lite_service it registered; @lock */
	u32 rpc_held;			/* node->rpc_held's xa lock: calls it
					 * took and holds (slots reserved for
					 * them included) */
	struct list_head locks;		/* lite_held_lock; @lock */
	atomic64_t aop_bytes;		/* atomic: kernel memory that its async
					 * operations hold */
	spinlock_t aop_lock;		/* protects @aop_pool, @aop_idle */
	struct list_head aop_pool;	/* idle lite_aops kept for reuse */
	u32 aop_idle;			/* how many; at most LITE_AOP_POOL */
	struct lite_sf *sf_spare;	/* xchg(): an idle send's state,
					 * kept for the next (sendfile.c) */
	struct lite_pin_cache *pins;	/* immutable, or NULL: buffers kept
					 * pinned (pincache.c) */
};

/* A lock this file holds. */
struct lite_held_lock {
	struct list_head entry;		/* lite_file.locks; file lock */
	struct lite_lmr *lmr;		/* holds a reference */
	u64 offset;
	u32 ticket;
	u32 owner;			/* the memory node's token for it */
};

struct lite_rx {
	struct ib_cqe cqe;
	struct lite_conn *conn;
	void *buf;			/* owned by the QP while posted */
	u64 dma;
	bool mapped;
	u32 byte_len;			/* set by the completion */
	struct lite_msg msg;		/* parsed view of @buf, same owner */
	int parse_err;			/* lite_msg_parse()'s verdict on @buf */
	struct work_struct work;	/* runs requests on node->wq */
	struct list_head defer_entry;	/* conn->rx_deferred; conn lock */
};

struct lite_tx {
	struct ib_cqe cqe;
	struct list_head entry;		/* conn->backlog; conn lock */
	struct lite_conn *conn;		/* holds a reference once posted */
	u64 dma;
	u32 len;
	bool credit_msg;
	u8 buf[];
};

/*
 * The completion of a signaled inline WR (rdma.c): it gives back the data
 * slots of the unsignaled ones posted before it, and its own.
 */
struct lite_rdma_ff {
	struct ib_cqe cqe;
	struct lite_conn *conn;
	u32 n;				/* slots it gives back; conn lock */
};

/*
 * Fields marked "handshake" are written only by the node's ordered
 * workqueue (HELLO/AUTH handlers) before the connection becomes READY, and
 * read there or after READY was published under conn->lock.
 */
struct lite_conn {
	enum lite_cm_kind cm_kind;	/* immutable: LITE_CM_CONN */
	struct kref ref;		/* atomic */
	struct lite_node *node;		/* immutable; holds a node reference */
	bool active;			/* immutable: we initiated */

	/* Set up in the rdma_cm handler (serialised by its handler_mutex);
	 * torn down by close_work after the handler can no longer run.
	 */
	struct rdma_cm_id *cm_id;
	struct ib_cq *cq;
	struct lite_rx *rx;		/* LITE_RX_DEPTH buffers */
	bool has_qp;

	spinlock_t lock;		/* protects the fields below */
	enum lite_conn_state state;	/* also read with READ_ONCE */
	struct lite_credits credits;
	u32 sq_avail;			/* free send queue slots */
	struct list_head backlog;	/* lite_tx waiting for credits/slots */
	u32 n_backlog;
	u32 tx_inflight;		/* posted, not completed */
	bool close_when_sent;		/* close once tx_inflight drops to 0 */
	u16 peer_id;			/* set when READY */
	bool peer_left;			/* the peer said LEAVE */
	u32 peer_since;			/* node lock: lite_mbr_since() of the
					 * peer when it was installed */

	bool got_hello;			/* handshake */
	int hello_status;		/* handshake: verdict sent with HELLO */
	struct lite_auth_ctx auth;	/* handshake */
	struct lite_naddr peer_listen;	/* handshake: from HELLO */
	struct lite_naddr remote;	/* passive: the connecting address */
	struct lite_naddr dst;		/* active: immutable, where it goes */
	bool qp_gone;			/* node lock: close_work destroyed the QP */
	struct completion closed;	/* close_work is done with the QP */
	u32 data_avail;			/* conn lock: free one-sided WR slots */
	u32 ff_unsig;			/* conn lock: inline WRs posted since the
					 * last signaled one */
	u32 ff_next;			/* conn lock: the @ff the next signaled
					 * inline WR takes (they complete in
					 * order) */
	struct lite_rdma_ff ff[LITE_DATA_WRS];	/* immutable but ->n */
	u32 max_sge;			/* immutable once the QP exists */
	u32 max_sge_rd;			/* immutable once the QP exists: SGEs
					 * an RDMA READ may take (<= max_sge) */
	u32 max_inline;			/* immutable once the QP exists: bytes a
					 * WR may carry inline (IB_SEND_INLINE) */

	wait_queue_head_t tx_wq;	/* woken when tx_inflight drops */
	struct completion cm_done;	/* active connect finished */
	int cm_status;			/* its result; written before cm_done */
	struct work_struct close_work;	/* on node->close_wq */
	struct work_struct event_work;	/* fatal QP event -> close */
	struct delayed_work handshake_timer;	/* on node->close_wq */
	struct list_head node_entry;	/* node->conns; node lock */

	atomic64_t tx_msgs;
	atomic64_t rx_msgs;
	atomic64_t tx_bytes;
	atomic64_t rx_bytes;
	atomic64_t last_rtt_ns;

	struct list_head poll_entry;	/* node->poll_conns; node poll_lock */
	unsigned long cq_flags;		/* LITE_CQF_* bits (poll.c) */
	struct irq_poll iop;		/* LITE_CQ_POLL: completion events */
	struct list_head rx_deferred;	/* lite_rx for defer_work; conn lock */
	struct work_struct defer_work;	/* on node->cq_wq */
	struct lite_ring_rx *ring;	/* inbound ring; set once by the RING
					 * handler (node->wq), read with acquire */
	struct lite_ring_tx tx_ring;	/* the peer's ring */
	struct list_head rpc_errs;	/* lite_rpc_in to fail; conn lock */
	bool ack_due;			/* conn lock: send a RING_ACK */
	struct work_struct rpc_work;	/* sends error replies and acks */
	struct list_head aops;		/* conn lock: asynchronous
					 * lite_rdma_op waiting for data slots,
					 * posted in order as slots free up */
	struct work_struct aop_work;	/* posts from @aops (workqueue CQs) */
};

/* A one-sided work request: transfer or atomic (rdma.c). */
union lite_wr {
	struct ib_send_wr wr;		/* the common part, first in each */
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
};

/* One-sided work requests that complete together (rdma.c). */
struct lite_rdma_op {
	struct ib_cqe cqe;
	struct lite_conn *conn;
	void (*done_fn)(struct lite_rdma_op *op);	/* NULL: @done */
	struct completion done;
	atomic_t pending;	/* posted WRs + 1 while posting */
	int status;		/* first failure */
	bool inline_data;	/* lite_rdma_post_layout(): the buffer is a
				 * kernel address, its bytes sent inline, its
				 * WRs not counted in @pending (lite_rdma_post())
				 * unless @confirm */
	bool confirm;		/* wait for inline WRs too */
	/* If set: runs once each WR with immediate of the op is posted (one
	 * per op: the last), in the poster, conn lock held and bottom halves
	 * off, before the transfer's softirq work (rxe's) runs on this CPU
	 * (lite_rdma_post()). Must not sleep.
	 */
	void (*posted_fn)(struct lite_rdma_op *op);
	/* lite_rdma_submit(): prepared WRs, queued on conn->aops if no slot */
	struct list_head entry;		/* conn->aops; conn lock */
	union lite_wr *wrs;		/* immutable once submitted */
	u32 n_wrs;			/* immutable once submitted */
	u32 n_posted;			/* conn lock while on conn->aops; the
					 * one that took the op off after */
};

/* A request waiting for its reply; lives on the requester's stack (or in
 * a lite_aop). Until it is erased from node->calls (under the xa lock) the
 * completer may write @status and the reply; after that only the waiter,
 * or whoever erased it and runs @done_fn, touches it.
 */
struct lite_call {
	struct lite_conn *conn;
	/* Optional: runs in CQ context on a successful reply, in order with
	 * the messages that follow it on the connection. Returns the status.
	 */
	int (*on_reply)(struct lite_call *call, const struct lite_msg *msg);
	/* Optional: asynchronous; runs (any context) instead of completing
	 * @done, once, when the reply or a failure came.
	 */
	void (*done_fn)(struct lite_call *call);
	u8 type;
	u32 req_id;
	struct completion done;
	int status;
	void *reply;
	u32 reply_cap;
	u32 reply_len;
};

/*
 * DSM. A region as one node sees it: the frames of the pages it holds, the
 * inode whose mapping every process on the node maps, and at the home the
 * directory (dsm_home.c). Frames keep their bytes when unmapped.
 */
enum lite_dsm_local {
	LITE_DSM_L_INVALID = 0,	/* not mapped; the bytes may be old */
	LITE_DSM_L_SHARED = 1,	/* a read copy: mapped read-only */
	LITE_DSM_L_EXCL = 2,	/* the writable copy */
};

struct lite_dsm_fetch;

struct lite_dsm_frame {
	struct page *page;		/* immutable */
	u64 dma;			/* immutable: its DMA address */
	u32 rkey;			/* immutable: the key peers read it
					 * with (its own in lmr isolation) */
	struct lite_mr *mr;		/* immutable: lmr isolation's MR */
	/* region->lock: */
	u8 state;			/* enum lite_dsm_local */
	bool intact;			/* holds the bytes of its last grant */
	u32 seq;			/* requests made for the page */
	struct lite_dsm_fetch *fetch;	/* the request in flight, or NULL */
	int err;			/* how the last request ended */
	u32 gen;			/* bumped when a request ends */
};

struct lite_dsm_home;

struct lite_dsm_region {
	struct kref ref;		/* atomic; freed after an RCU grace */
	struct lite_node *node;		/* immutable; holds a node reference */
	u64 id;				/* immutable: key in node->dsm */
	u16 home;			/* immutable: the directory's node */
	u64 size;			/* immutable: bytes */
	u64 n_pages;			/* immutable */
	char name[LITE_NAME_MAX];	/* immutable */
	struct inode *inode;		/* immutable: mapped by every process */
	struct lite_dsm_home *dir;	/* immutable: at the home, else NULL */

	struct rw_semaphore zap_sem;	/* write: unmapping a page; read:
					 * installing one, so that a fault never
					 * maps a copy an invalidation dropped */
	spinlock_t lock;		/* protects the fields below and the
					 * frames' state (bh: grants complete in
					 * CQ context) */
	struct xarray frames;		/* page index -> lite_dsm_frame */
	u32 files;			/* open region files on this node */
	bool creator_open;		/* the creating file is open */
	bool dead;			/* destroyed, closed, or its home is gone */
	bool home_gone;			/* its home left or died */
	bool no_frames;			/* frames freed: none is allocated */
	u32 fetch_ends;			/* bumped when any request ends (a hint
					 * polling faults read without the lock:
					 * frames may be freed under them) */
	atomic_t fetches;		/* requests not yet over */
	wait_queue_head_t wq;		/* faults waiting for a frame */
	struct list_head all_entry;	/* node->dsm_all; its dsm_all_lock */
	struct work_struct put_work;	/* lite_dsm_put_any()'s last put */
	struct rcu_head rcu;
};

/* An open region file. */
struct lite_dsm_file {
	struct lite_dsm_region *region;	/* holds a reference */
	bool creator;			/* immutable: created the region */
};

/* poll.c: completion delivery */
enum ib_poll_context lite_cq_poll_ctx(const struct lite_node *node);
int lite_poller_start(struct lite_node *node);
void lite_poller_stop(struct lite_node *node);
void lite_poll_add(struct lite_conn *conn);
void lite_poll_del(struct lite_conn *conn);
void lite_cq_init(struct lite_conn *conn);
void lite_cq_stop(struct lite_conn *conn);
bool lite_spin(struct lite_node *node, struct lite_conn *conn,
	       bool (*cond)(void *), void *arg, unsigned long deadline);
bool lite_spin_any(struct lite_node *node, u32 gap_ns, bool (*cond)(void *),
		   void *arg, unsigned long deadline);
void lite_wait_note(u32 *avg_ns, u64 ns);
long lite_wait_done(struct lite_node *node, struct lite_conn *conn,
		    struct completion *c, long timeout, bool killable);

/* mr.c: what peers may reach, and the keys */
struct lite_mr;
struct lite_mr_batch {
	struct ib_cqe cqe;
	struct lite_node *node;
	struct completion done;
	atomic_t pending;	/* posted WRs + 1 while adding */
	int status;		/* first WR that failed (cmpxchg) */
	int access;
	int ret;		/* first failure to post */
};
u32 lite_mr_isolation(u32 asked);
int lite_mr_init(struct lite_node *node);
void lite_mr_exit(struct lite_node *node);
void lite_mr_batch_init(struct lite_mr_batch *b, struct lite_node *node,
			int access);
int lite_mr_batch_add(struct lite_mr_batch *b, u64 dma, u32 len,
		      struct lite_mr **out, u32 *rkey);
int lite_mr_batch_wait(struct lite_mr_batch *b, struct lite_mr **mrs, u32 n);
bool lite_mr_try_again(int ret, u32 *tries);
int lite_mr_register(struct lite_node *node, u64 dma, u32 len, int access,
		     struct lite_mr **out, u32 *rkey);
void lite_mr_release(struct lite_node *node, struct lite_mr **mrs, u32 n,
		     bool recycle);
int lite_mr_show(struct seq_file *m, struct lite_node *node);

/* Whether @node registers each chunk peers may reach (lmr mode). */
static inline bool lite_isolated(const struct lite_node *node)
{
	return node->isolation == LITE_ISOLATION_LMR;
}

/* buf.c: kernel buffers peers write into */
int lite_kbuf_alloc(struct lite_kbuf *b, struct lite_conn *conn, u64 size,
		    u32 max_chunks);
void lite_kbuf_free(struct lite_kbuf *b);
void lite_kbuf_unmap(struct lite_kbuf *b);

/* A kernel buffer a transfer goes through (buf.c). */
struct lite_bounce {
	struct lite_node *node;
	struct ib_device *dev;
	void *buf;
	u64 dma;		/* mapped DMA_BIDIRECTIONAL */
	u32 size;
	bool keep;		/* one of node->n_bounces: goes back to it */
};

int lite_bounce_map(struct ib_device *dev, u32 size, gfp_t gfp, void **buf,
		    u64 *dma);
void lite_bounce_unmap(struct ib_device *dev, void *buf, u64 dma, u32 size);
void lite_bounce_close(struct lite_node *node);
int lite_bounce_get(struct lite_bounce *b, struct lite_node *node, u64 len,
		    u32 max);
void lite_bounce_put(struct lite_bounce *b);
void lite_kbuf_read(struct lite_kbuf *b, u64 off, void *dst, u32 len);
void lite_kbuf_clear(struct lite_kbuf *b, u64 off, u32 len);
int lite_kbuf_to_user(struct lite_kbuf *b, u64 off, void __user *dst,
		      u64 len);
void lite_kbuf_sync_for_cpu(struct lite_kbuf *b, u64 off, u64 len);
int lite_kbuf_synced_to_user(struct lite_kbuf *b, u64 off, void __user *dst,
			     u64 len);

/* dispatch.c: the message handler table and the connection hooks */
bool lite_msg_parse(struct lite_rx *rx);
void lite_msg_received(struct lite_rx *rx);
void lite_msg_work(struct work_struct *work);
enum lite_conn_hook {
	LITE_HOOK_FAILED,	/* started closing */
	LITE_HOOK_CLOSED,	/* its QP is gone */
	LITE_HOOK_READY,	/* installed as a member's connection */
	LITE_HOOK_RELEASE,	/* last reference */
	LITE_HOOK_MAX
};
void lite_conn_hooks_run(struct lite_conn *conn, enum lite_conn_hook ev);

/* health.c: heartbeats, failure detection, reconnects */
void lite_health_init(struct lite_node *node);
void lite_health_start(struct lite_node *node);
void lite_health_stop(struct lite_node *node);
void lite_cluster_heard(struct lite_conn *conn);
void lite_cluster_handle_heartbeat(struct lite_conn *conn,
				   const struct lite_msg *msg);
void lite_health_conn_lost(struct lite_node *node, u16 id);
struct lite_conn *lite_node_conn_wait(struct lite_node *node, u16 id,
				      unsigned long deadline);

/* dsm.c: regions as a node uses them; dsm_home.c: the home's directory */
int lite_dsm_init(void);
void lite_dsm_exit(void);
void lite_dsm_node_init(struct lite_node *node);
void lite_dsm_node_down(struct lite_node *node);
void lite_dsm_member_gone(struct lite_node *node, u16 id);
int lite_dsm_open(struct lite_file *lf, struct lite_dsm_open *o,
		  struct file **file);
void lite_dsm_handle_inval(struct lite_conn *conn, const struct lite_msg *msg);
void lite_dsm_handle_gone(struct lite_conn *conn, const struct lite_msg *msg);
struct lite_dsm_region *lite_dsm_find(struct lite_node *node, u64 id);
void lite_dsm_put(struct lite_dsm_region *r);
void lite_dsm_put_any(struct lite_dsm_region *r);
int lite_dsm_frames_show(struct seq_file *m, struct lite_node *node);
void lite_dsm_inval_local(struct lite_dsm_region *r, u64 index, u8 what,
			  bool *has_frame, u64 *addr, u32 *rkey);
void lite_dsm_granted(struct lite_dsm_fetch *f, int status,
		      const struct lite_wire_dsm_grant *g);
void lite_dsm_kill(struct lite_dsm_region *r);
void lite_dsm_forget(struct lite_dsm_region *r);
void lite_dsm_start(struct lite_node *node);
void lite_dsm_node_free(struct lite_node *node);
int lite_dsm_pull(struct lite_dsm_region *r, u64 index,
		  unsigned long deadline);
void lite_dsm_home_tick(struct lite_dsm_region *r);
void lite_dsm_home_remove(struct lite_dsm_region *r, bool wait);
int lite_dsm_home_create(struct lite_dsm_region *r);
void lite_dsm_home_destroy(struct lite_dsm_region *r);
void lite_dsm_home_request(struct lite_dsm_region *r, u16 requester,
			   const struct lite_wire_dsm_req *req,
			   struct lite_conn *conn, u32 req_id,
			   struct lite_dsm_fetch *local);
int lite_dsm_home_done(struct lite_dsm_region *r, u16 requester,
		       const struct lite_wire_dsm_done *done);
int lite_dsm_home_open(struct lite_dsm_region *r, u16 user);
void lite_dsm_home_member_gone(struct lite_dsm_region *r, u16 id);
bool lite_dsm_home_unused(struct lite_dsm_region *r);
void lite_dsm_handle_open(struct lite_conn *conn, const struct lite_msg *msg);
void lite_dsm_handle_close(struct lite_conn *conn, const struct lite_msg *msg);
void lite_dsm_handle_req(struct lite_conn *conn, const struct lite_msg *msg);
bool lite_dsm_handle_req_fast(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_dsm_handle_done(struct lite_conn *conn, const struct lite_msg *msg);

/* trace.c */
void lite_count_error(struct lite_node *node, u16 peer,
		      enum lite_err_kind kind, int err);

/* debugfs.c: the node's directory, read-only state */
void lite_debugfs_node_init(struct lite_node *node);
void lite_debugfs_node_exit(struct lite_node *node);
void lite_debugfs_init(void);
void lite_debugfs_exit(void);

/* fault.c: fault injection through debugfs */
void lite_fault_node_init(struct lite_node *node, struct dentry *dir);
bool lite_fault_fail_post(struct lite_node *node);
bool lite_fault_drop_rx(struct lite_node *node, const struct lite_msg *msg);
void lite_fault_delay_rx(struct lite_node *node);
void lite_fault_delay_lmr(struct lite_node *node);
void lite_fault_delay_take(struct lite_node *node);
bool lite_fault_break_reg(struct lite_node *node);

/* rpc.c */
void lite_rpc_arrived(struct lite_conn *conn, u32 imm);
void lite_rpc_handle_ring(struct lite_conn *conn, const struct lite_msg *msg);
void lite_rpc_ack(struct lite_conn *conn, const struct lite_msg *msg);
void lite_rpc_conn_failed(struct lite_conn *conn);
void lite_rpc_conn_closed(struct lite_conn *conn);
void lite_rpc_conn_release(struct lite_conn *conn);
void lite_rpc_work(struct work_struct *work);
void lite_rpc_node_down(struct lite_node *node);
void lite_rpc_calls_orphan(struct lite_node *node);
int lite_rpc_register(struct lite_file *lf, struct lite_node *node, u32 port);
int lite_rpc_unregister(struct lite_file *lf, u32 port);
int lite_rpc_call(struct lite_node *node, struct lite_rpc_call *a,
		  struct lite_pin_cache *pc);
int lite_rpc_recv(struct lite_file *lf, struct lite_node *node,
		  struct lite_rpc_recv *r);
int lite_rpc_reply_recv(struct lite_file *lf, struct lite_node *node,
			struct lite_rpc_reply_recv *rr, u64 __user *sent);
int lite_rpc_reply(struct lite_file *lf, struct lite_node *node,
		   const struct lite_rpc_reply *r, struct lite_pin_cache *pc);
int lite_rpc_urecv_init(struct lite_file *lf, struct lite_urecv *u, u32 port,
			void (*ready)(struct lite_urecv *u));
int lite_rpc_urecv_try(struct lite_file *lf, struct lite_node *node,
		       struct lite_urecv *u, struct lite_rpc_recv *r);
bool lite_rpc_urecv_expire(struct lite_urecv *u);
void lite_rpc_urecv_cancel(struct lite_urecv *u);
void lite_rpc_urecv_release(struct lite_urecv *u);
struct lite_acall;
int lite_rpc_acall_start(struct lite_node *node, const struct lite_rpc_call *a,
			 void (*done_fn)(void *arg), void *arg,
			 struct lite_acall **out);
int lite_rpc_acall_finish(struct lite_acall *ac, const struct lite_rpc_call *a,
			  u64 *reply_len);
int lite_rpc_send_msg(struct lite_node *node, const struct lite_msg_send *m);
void lite_rpc_file_release(struct lite_file *lf);

/* sync.c: locks and barriers */
void lite_sync_handle(struct lite_conn *conn, const struct lite_msg *msg);
void lite_sync_conn_closed(struct lite_conn *conn);
void lite_sync_drop_export(struct lite_node *node, u64 mr_id);
void lite_sync_drop_peer(struct lite_node *node, u16 peer);
int lite_sync_lock(struct lite_file *lf, struct lite_lmr *lmr, u64 off,
		   bool try, u32 timeout_ms);
int lite_sync_unlock(struct lite_file *lf, struct lite_lmr *lmr, u64 off);
int lite_sync_barrier(struct lite_lmr *lmr, u64 off, u32 count,
		      u32 timeout_ms);
void lite_sync_file_release(struct lite_file *lf);

/* main.c */
struct lite_ibdev *lite_find_ibdev(struct lite_ctx *ctx, const char *name);

/* chardev.c */
int lite_chardev_register(struct lite_ctx *ctx);
void lite_chardev_unregister(struct lite_ctx *ctx);

/* node.c */
struct lite_node *lite_node_create(struct lite_ctx *ctx,
				   struct lite_ibdev *ibdev, u32 port_num,
				   const struct sockaddr_storage *listen,
				   const u8 *secret, u32 secret_len,
				   u32 cq_mode, u32 isolation);
void lite_node_publish(struct lite_ctx *ctx, struct lite_node *node);
void lite_node_status_fill(struct lite_node *node, struct lite_node_status *st,
			   struct lite_member_info *mi, u32 cap);
void lite_node_destroy(struct lite_ctx *ctx, struct lite_node *node);
void lite_node_get(struct lite_node *node);
void lite_node_put(struct lite_node *node);
struct lite_conn *lite_node_peer(struct lite_node *node, u16 id);
int lite_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int lite_sockaddr_to_naddr(const struct sockaddr_storage *sa,
			   struct lite_naddr *a);
void lite_naddr_to_sockaddr(const struct lite_naddr *a,
			    struct sockaddr_storage *sa);

/* conn.c */
struct lite_conn *lite_conn_connect(struct lite_node *node,
				    const struct lite_naddr *dst,
				    unsigned long deadline);
int lite_conn_accept(struct lite_node *node, struct rdma_cm_id *id,
		     struct rdma_cm_event *ev);
int lite_conn_cm_event(struct lite_conn *conn, struct rdma_cm_id *id,
		       struct rdma_cm_event *ev);
bool lite_conn_close(struct lite_conn *conn);
void lite_conn_timed_out(struct lite_conn *conn, const char *what);
void lite_conn_get(struct lite_conn *conn);
void lite_conn_put(struct lite_conn *conn);
bool lite_conn_put_not_last(struct lite_conn **conn);
int lite_conn_send(struct lite_conn *conn, u8 type, bool reply, u32 req_id,
		   int status, const void *payload, u32 len);
int lite_conn_send_gfp(struct lite_conn *conn, u8 type, bool reply,
		       u32 req_id, int status, const void *payload, u32 len,
		       gfp_t gfp);
int lite_conn_wait_sent(struct lite_conn *conn, unsigned long deadline);
void lite_conn_close_when_sent(struct lite_conn *conn);
int lite_conn_set_ready(struct lite_conn *conn, u16 peer_id);
void lite_conn_repost(struct lite_rx *rx);
int lite_conn_grant(struct lite_conn *conn, u16 n);
enum lite_conn_state lite_conn_state(struct lite_conn *conn);

/* msg.c */
void lite_call_complete(struct lite_node *node, struct lite_conn *conn,
			const struct lite_msg *msg);
void lite_calls_conn_closed(struct lite_conn *conn);
int lite_call_start(struct lite_conn *conn, struct lite_call *call, u8 type,
		    const void *payload, u32 len, void *reply, u32 reply_cap);
int lite_call_start_async(struct lite_conn *conn, struct lite_call *call,
			  void (*done_fn)(struct lite_call *call), u8 type,
			  const void *payload, u32 len, void *reply,
			  u32 reply_cap);
void lite_call_expire(struct lite_call *call);
int lite_call_wait(struct lite_call *call, unsigned long deadline);
int lite_call(struct lite_conn *conn, u8 type, const void *payload, u32 len,
	      void *reply, u32 reply_cap, u32 *reply_len,
	      unsigned long deadline);

void lite_reply(struct lite_conn *conn, const struct lite_msg *req,
		int status, const void *payload, u32 len);

/* export.c: the memory node's side of LMRs */
void lite_export_handle_alloc(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_export_handle_chunks(struct lite_conn *conn,
			       const struct lite_msg *msg);
void lite_export_handle_grant(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_export_handle_unkey(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_export_handle_free(struct lite_conn *conn,
			     const struct lite_msg *msg);
void lite_export_handle_cancel(struct lite_conn *conn,
			       const struct lite_msg *msg);
void lite_exports_conn_closed(struct lite_conn *conn);
void lite_exports_conn_ready(struct lite_conn *conn);
void lite_export_atomic(struct lite_conn *conn, const struct lite_msg *msg);
void lite_exports_drop_owner(struct lite_node *node, u16 owner);
void lite_exports_free_all(struct lite_node *node);
void lite_exports_reap(struct work_struct *work);
int lite_exports_show(struct seq_file *m, struct lite_node *node);
int lite_conns_show(struct seq_file *m, struct lite_node *node);
int lite_lmrs_show(struct seq_file *m, struct lite_node *node);
int lite_rpc_show(struct seq_file *m, struct lite_node *node);
int lite_sync_show(struct seq_file *m, struct lite_node *node);
atomic64_t *lite_export_word(struct lite_node *node, u64 mr_id, u64 off,
			     int *err);
void lite_lmrs_mem_gone(struct lite_node *node, u16 mem_node);

/* lmr.c: LMRs as their users see them */
struct lite_conn *lite_node_conn(struct lite_node *node, u16 id);
bool lite_node_has_conn(struct lite_node *node, u16 id);
void lite_node_set_conn(struct lite_node *node, u16 id, struct lite_conn *conn);
struct lite_conn *lite_manager_conn(struct lite_node *node);
int lite_lmr_alloc(struct lite_node *node, u16 mem_node, u64 size,
		   u32 flags, kuid_t uid, struct lite_lmr **out);
void lite_lmr_free_queued(struct lite_lmr *lmr, bool send);
struct lite_alloc_req;
struct lite_alloc_req *lite_lmr_request_start(struct lite_node *node,
					      u16 mem_node, u64 size,
					      u32 flags, u32 how, kuid_t uid,
					      u64 charged);
int lite_lmr_request_finish(struct lite_alloc_req *ar, struct lite_lmr **out);
int lite_lmr_map(struct lite_node *node, const char *name, u32 *perms,
		 struct lite_lmr **out);
void lite_lmr_release(struct lite_lmr *lmr, bool owner);
int lite_lmr_grant(struct lite_node *node, struct lite_lmr *lmr, u32 perms,
		   u64 *grant);
int lite_lmr_unkey(struct lite_node *node, u16 mem_node, u64 mr_id,
		   u64 grant);
void lite_lmr_get(struct lite_lmr *lmr);
void lite_lmr_put(struct lite_lmr *lmr);
int lite_lmr_begin(struct lite_lmr *lmr);
int lite_lmr_closed_err(struct lite_lmr *lmr);
void lite_lmr_end(struct lite_lmr *lmr);

/*
 * Why an access to @lmr found no connection to its memory node: that node
 * left, or the connection is down. Exact after lite_node_conn_wait(),
 * which decides under node->lock, where the leave marks the LMRs gone; a
 * bare lite_node_conn() may come between the two and see -ENOTCONN.
 */
static inline int lite_lmr_conn_err(const struct lite_lmr *lmr)
{
	return READ_ONCE(lmr->mem_gone) ? -EHOSTDOWN : -ENOTCONN;
}
void lite_lmr_invalidate(struct lite_node *node, const struct lite_msg *msg);
int lite_invalidate_on(struct lite_node *node, u16 id,
		       const struct lite_wire_invalidate *inv,
		       unsigned long deadline);

/* lease.c: memory usable without a round trip, frees that do not wait */
struct lite_lmr *lite_lease_claim(struct lite_node *node, u16 mem_node,
				  u64 size, u32 flags);
void lite_lease_peer_gone(struct lite_node *node, u16 id);
u64 lite_lease_charge(u64 size, u32 flags);
int lite_lease_free_later(struct lite_lmr *lmr, bool may_queue);
void lite_lease_node_init(struct lite_node *node);
void lite_lease_node_down(struct lite_node *node);
void lite_lease_node_free(struct lite_node *node);

/* quota.c: per-user LMR quotas of the allocations made from a node */
void lite_quota_init(struct lite_node *node);
int lite_quota_charge(struct lite_node *node, kuid_t uid, u64 bytes);
void lite_quota_uncharge(struct lite_node *node, kuid_t uid, u64 bytes);
void lite_quota_destroy(struct lite_node *node);

/* share.c: the manager's name registry */
void lite_share_handle_share(struct lite_conn *conn,
			     const struct lite_msg *msg);
void lite_share_handle_lookup(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_share_handle_unshare(struct lite_conn *conn,
			       const struct lite_msg *msg);
void lite_share_handle_invalidate(struct lite_conn *conn,
				  const struct lite_msg *msg);
void lite_shares_drop_publisher(struct lite_node *node, u16 publisher);
void lite_shares_free_all(struct lite_node *node);
int lite_share_publish(struct lite_node *node, struct lite_lmr *lmr,
		       const char *name, u32 perms, u64 *grant);
int lite_share_withdraw(struct lite_node *node, const char *name);
int lite_share_publish_dsm(struct lite_node *node, const char *name,
			   u64 region, u64 size);
int lite_share_lookup(struct lite_node *node, const char *name,
		      struct lite_wire_share *sh);

/* pincache.c: user buffers kept pinned */
struct lite_pin_cache;
struct lite_pin_entry;
struct lite_pin_cache *lite_pin_cache_new(void);
void lite_pin_cache_free(struct lite_pin_cache *pc);
struct lite_pin_entry *lite_pin_get(struct lite_pin_cache *pc,
				    unsigned long uaddr, u64 len,
				    bool dev_writes, struct page ***pages);
void lite_pin_put(struct lite_pin_entry *e);

/* rdma.c: one-sided operations */

/* One piece of local memory a transfer moves: a DMA address and a length. */
struct lite_ext {
	u64 dma;
	u32 len;
};

/* The local memory of a transfer: its extents in order, @skip bytes in. */
struct lite_sgl {
	const struct lite_ext *ext;
	u32 n;
	u64 skip;
};

/* Pinned user pages of one transfer step, DMA-mapped (lite_pinned_map()). */
struct lite_pinned {
	struct ib_device *dev;
	struct page **pages;
	struct lite_ext *ext;	/* per page: the part moved, mapped */
	int n;
	u32 first_off;		/* offset of the first byte in pages[0] */
	u64 len;		/* bytes from there */
	bool write;		/* pages are the source (RDMA WRITE) */
};

void lite_rdma_op_init(struct lite_rdma_op *op, struct lite_conn *conn,
		       void (*done_fn)(struct lite_rdma_op *op));
void lite_rdma_op_release(struct lite_rdma_op *op);
int lite_rdma_op_await(struct lite_rdma_op *op);
int lite_rdma_op_wait(struct lite_rdma_op *op, int post_err);
int lite_rdma_post_layout(struct lite_rdma_op *op, const struct lite_layout *l,
			  u64 off, u32 len, u64 dma, bool write,
			  const u32 *imm);
int lite_rdma_post_sgl(struct lite_rdma_op *op, const struct lite_layout *l,
		       u64 off, u64 len, const struct lite_sgl *sgl,
		       bool write, const u32 *imm);
int lite_pinned_map(struct lite_pinned *p);
void lite_pinned_unmap(struct lite_pinned *p, int n);
int lite_rdma_write_imm(struct lite_conn *conn,
			const struct lite_layout *l, u64 off,
			u32 len, u64 dma, const u32 *imm);
void lite_rdma_submit(struct lite_rdma_op *op, union lite_wr *wrs,
		      u32 n);
void lite_rdma_conn_closed(struct lite_conn *conn);
void lite_rdma_aop_work(struct work_struct *work);
void lite_rdma_conn_init(struct lite_conn *conn);
bool lite_dma_aligned(u64 addr, u64 len);
int lite_rdma_rw(struct lite_lmr *lmr, u64 off, u64 len, void __user *buf,
		 bool write, u32 flags, struct lite_pin_cache *pc);
int lite_rdma_atomic_wr(union lite_wr *wr, struct ib_sge *sge,
			const struct lite_lmr *lmr, u64 off, bool cmp_swap,
			u64 operand, u64 swap, u64 dma);
int lite_rdma_atomic(struct lite_lmr *lmr, u64 off, bool cmp_swap,
		     u64 operand, u64 swap, u64 *result);
int lite_rdma_memset(struct lite_lmr *lmr, u64 off, u64 len, u8 value);
int lite_rdma_memcpy(struct lite_lmr *dst, u64 doff, struct lite_lmr *src,
		     u64 soff, u64 len);

/* sendfile.c: file ranges into LMRs from the page cache */
struct lite_sf;
int lite_sendfile(struct lite_file *lf, struct lite_lmr *lmr, u64 lmr_off,
		  int fd, u64 pos, u64 len, u64 *sent);
void lite_sendfile_release(struct lite_file *lf);

/* uring.c: asynchronous operations through io_uring */
struct io_uring_cmd;
struct io_comp_batch;
int lite_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
int lite_uring_iopoll(struct io_uring_cmd *cmd, struct io_comp_batch *iob,
		      unsigned int poll_flags);
void lite_uring_file_init(struct lite_file *lf);
void lite_uring_file_release(struct lite_file *lf);

/* file.c: an open /dev/lite */
int lite_file_open(struct lite_ctx *ctx, struct file *file);
struct lite_node *lite_file_node(struct lite_file *lf);
int lite_file_rw_access(struct lite_file *lf, const struct lite_rw *rw,
			bool write, struct lite_lmr **lmr);
int lite_file_sendfile_access(struct lite_file *lf,
			      const struct lite_sendfile *sf,
			      struct lite_lmr **lmr);
int lite_file_atomic_access(struct lite_file *lf, const struct lite_atomic *at,
			    bool cmp_swap, struct lite_lmr **lmr);
int lite_rpc_call_check(const struct lite_rpc_call *rc);
bool lite_rpc_recv_ok(const struct lite_rpc_recv *rr);
bool lite_rpc_reply_ok(const struct lite_rpc_reply *rp);
void lite_file_release(struct lite_file *lf);
long lite_file_ioctl(struct lite_file *lf, unsigned int cmd,
		     void __user *argp);

/* cluster.c */
int lite_cluster_join(struct lite_node *node, const struct lite_naddr *mgr,
		      unsigned long deadline);
void lite_cluster_leave(struct lite_node *node);
int lite_cluster_self(struct lite_node *node, unsigned long deadline);
void lite_cluster_handle_hello(struct lite_conn *conn,
			       const struct lite_msg *msg);
void lite_cluster_handle_auth(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_cluster_handle_member_add(struct lite_conn *conn,
				    const struct lite_msg *msg);
void lite_cluster_handle_member_del(struct lite_conn *conn,
				    const struct lite_msg *msg);
void lite_cluster_leave_seen(struct lite_conn *conn,
			     const struct lite_msg *msg);
void lite_cluster_handle_leave(struct lite_conn *conn,
			       const struct lite_msg *msg);
void lite_cluster_handle_ping(struct lite_conn *conn,
			      const struct lite_msg *msg);
void lite_cluster_conn_closed(struct lite_conn *conn);
void lite_node_drop_member(struct lite_node *node, u16 id, bool left);
int lite_cluster_reconnect(struct lite_node *node, u16 id,
			   const struct lite_naddr *addr,
			   unsigned long deadline);
int lite_cluster_ping(struct lite_node *node, u16 id,
		      unsigned long deadline, u64 *rtt_ns);

#endif /* LITE_INTERNAL_H */
