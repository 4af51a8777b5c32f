/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite DSM directory: the home node's record of one page of a DSM region
 * and the transactions that move the page between nodes. Verb-free and
 * lock-free: the caller (dsm.c) holds the region's directory lock around
 * every call, sends the messages a transaction names and feeds the answers
 * back.
 *
 * A page is in one of four states:
 *   ZERO    never written: every copy is zeros; @sharers map a zero copy
 *   SHARED  @holders' frames hold the current bytes, @sharers of them map
 *           them read-only; @src is a holder whose frame address is known
 *           (0: ask a holder with a PROBE)
 *   EXCL    @src is the one writer and the one holder
 *   LOST    the only current copy was on a node that died or left
 *
 * One transaction per page at a time (@busy). A read (RD) or write (WR)
 * request from node r starts one: lite_dsm_begin() says whom to invalidate
 * (a writer needs all other copies gone), whom to downgrade (a reader needs
 * the writer to stop writing) and whom to ask for the address of its frame
 * (a reader of a page whose source is not known). Each answer goes to
 * lite_dsm_answer(); when none is outstanding lite_dsm_decide() says what r
 * gets: nothing to fetch (KEEP: r's frame is current), zeros (ZERO), or the
 * bytes to read with one RDMA read (DATA: node, frame address and the key
 * that reaches that frame: the node's one key in global isolation, the
 * frame's own in lmr isolation, so it travels with every address). r
 * reports the fetch with a DONE, and lite_dsm_commit() records r's new copy.
 * A transaction that fails ends with lite_dsm_abort(); the answers already
 * applied keep the record true. An answer with status -EHOSTDOWN means the
 * node is gone (lite_dsm_node_gone() was called for it): it has no copy.
 *
 * Frames of a node that was invalidated keep their bytes until that node
 * fetches the page again, which takes a transaction of its own: so a
 * source's frame stays valid to read while the transaction that named it
 * runs, even if the source was just invalidated, and an invalidated node
 * stays a holder until a write makes its bytes old.
 */
#ifndef LITE_CORE_DSM_H
#define LITE_CORE_DSM_H

#include <linux/types.h>

#define LITE_DSM_NODE_WORDS	2	/* 128 node ids, bit id - 1 */
#define LITE_DSM_PAGE_SIZE	4096ULL	/* == LITE_DSM_PAGE (uapi) */

enum lite_dsm_state {
	LITE_DSM_ZERO = 0,
	LITE_DSM_SHARED = 1,
	LITE_DSM_EXCL = 2,
	LITE_DSM_LOST = 3,
};

enum lite_dsm_kind {
	LITE_DSM_RD = 1,	/* a read-only copy */
	LITE_DSM_WR = 2,	/* the only, writable copy */
};

/* What the requester gets (the grant). */
enum lite_dsm_grant_kind {
	LITE_DSM_KEEP = 1,	/* its own frame is current: map it */
	LITE_DSM_FILL = 2,	/* zero its frame */
	LITE_DSM_DATA = 3,	/* RDMA-read the page from @from's frame */
};

/* What a node is asked to do with its copy (the INVAL message). */
enum lite_dsm_inval_kind {
	LITE_DSM_INVALIDATE = 1,	/* unmap it, keep the frame's bytes */
	LITE_DSM_DOWNGRADE = 2,		/* unmap it; it stays a read copy */
	LITE_DSM_PROBE = 3,		/* only say where the frame is */
};

struct lite_dsm_nodes {
	u64 w[LITE_DSM_NODE_WORDS];
};

/* One page's record at its home. 56 bytes: a 1 GiB region takes 14 MiB. */
struct lite_dsm_dir {
	u8 state;		/* enum lite_dsm_state */
	u8 busy;		/* a transaction runs */
	u16 src;		/* SHARED, EXCL: a holder whose frame address
				 * is known (@src_addr); 0 if none is */
	u32 txn;		/* busy: the running transaction's id */
	u64 src_addr;		/* frame address of @src's copy */
	u32 src_rkey;		/* the key that reaches that frame */
	u16 fences;		/* the home's: forgets of a leaving node's
				 * copy waiting for the page; no transaction
				 * starts meanwhile */
	u16 reserved;
	struct lite_dsm_nodes sharers;	/* read copies mapped */
	struct lite_dsm_nodes holders;	/* SHARED, EXCL: frames that hold the
					 * current bytes, mapped or not (a
					 * superset of @sharers and @src) */
};

/* A running transaction, as lite_dsm_begin() planned it. */
struct lite_dsm_txn {
	u8 kind;		/* enum lite_dsm_kind */
	u16 requester;
	u32 id;
	struct lite_dsm_nodes inval;	/* to invalidate: not yet answered */
	u16 downgrade;		/* to downgrade (RD of an EXCL page), or 0 */
	u16 probe;		/* to ask for its frame address, or 0 */
	bool need_data;		/* the requester has no current copy */
	bool granted;		/* lite_dsm_decide() succeeded */
	int status;		/* first failure of an answer, or 0 */
};

/* The grant sent to the requester. */
struct lite_dsm_grant {
	u8 kind;		/* enum lite_dsm_grant_kind */
	u16 from;		/* DATA: node to read from */
	u64 from_addr;		/* DATA: its frame address */
	u32 from_rkey;		/* DATA: that frame's key */
};

bool lite_dsm_nodes_test(const struct lite_dsm_nodes *s, u16 id);
void lite_dsm_nodes_set(struct lite_dsm_nodes *s, u16 id);
void lite_dsm_nodes_clear(struct lite_dsm_nodes *s, u16 id);
bool lite_dsm_nodes_empty(const struct lite_dsm_nodes *s);
u16 lite_dsm_nodes_next(const struct lite_dsm_nodes *s, u16 after);

int lite_dsm_begin(struct lite_dsm_dir *d, struct lite_dsm_txn *t, u8 kind,
		   u16 requester, u32 id);
int lite_dsm_answer(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		    u8 what, u16 node, int status, bool has_frame, u64 addr,
		    u32 rkey);
bool lite_dsm_answered(const struct lite_dsm_txn *t);
int lite_dsm_decide(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		   struct lite_dsm_grant *g);
void lite_dsm_commit(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		     u64 addr, u32 rkey);
void lite_dsm_abort(struct lite_dsm_dir *d, struct lite_dsm_txn *t,
		    bool requester_gone);
void lite_dsm_node_gone(struct lite_dsm_dir *d, u16 node);

#endif /* LITE_CORE_DSM_H */
