/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite wire format: the control messages nodes exchange over their reliable
 * connections. Verb-free: compiled into lite.ko and into the host tests.
 *
 * Every message is a 32-byte header followed by a type-specific payload, all
 * little-endian. Nothing from the wire is used before lite_wire_parse() has
 * checked it.
 */
#ifndef LITE_CORE_WIRE_H
#define LITE_CORE_WIRE_H

#include <linux/types.h>

#define LITE_WIRE_MAGIC		0x4554494cU	/* "LITE" read little-endian */
#define LITE_WIRE_VERSION	9	/* 2: HEARTBEAT, 3: LMR_CANCEL, 4: DSM,
				 * 5: LMR flags, 6: leases,
				 * 7: a key per chunk,
				 * 8: a key per DSM frame,
				 * 9: keys per share: LMR_GRANT,
				 * LMR_UNKEY */
#define LITE_MSG_MAX		8192		/* bytes, header included */
#define LITE_WIRE_MAX_CHUNKS	((LITE_MSG_MAX - 32 - 40) / 16)	/* per msg */
#define LITE_NONCE_LEN		16
#define LITE_MAC_LEN		32
#define LITE_WIRE_MAX_NODES	128		/* == LITE_MAX_NODES (uapi) */

enum lite_msg_type {
	LITE_MSG_HELLO = 1,	/* req: start a handshake; reply: challenge */
	LITE_MSG_AUTH,		/* req: prove the secret; reply: proof back */
	LITE_MSG_MEMBER_ADD,	/* req: the manager announces a member */
	LITE_MSG_LEAVE,		/* one-way: the sender leaves the cluster */
	LITE_MSG_PING,		/* req: round trip */
	LITE_MSG_CREDIT,	/* one-way: returns receive credits only */
	LITE_MSG_MEMBER_DEL,	/* one-way: the manager drops a member */
	LITE_MSG_LMR_ALLOC,	/* req: allocate an LMR on the receiver */
	LITE_MSG_LMR_CHUNKS,	/* req: part of an LMR's chunk list */
	LITE_MSG_LMR_FREE,	/* req: free an LMR the sender allocated */
	LITE_MSG_SHARE,		/* req to the manager: publish a name */
	LITE_MSG_LOOKUP,	/* req to the manager: resolve a name */
	LITE_MSG_UNSHARE,	/* req to the manager: withdraw a name */
	LITE_MSG_INVALIDATE,	/* req from the manager: a share is void */
	LITE_MSG_ATOMIC,	/* req: an atomic on the receiver's memory */
	LITE_MSG_RING,		/* req: where to write RPC entries for us */
	LITE_MSG_RING_ACK,	/* one-way: ring bytes consumed so far */
	LITE_MSG_SYNC,		/* req: lock/unlock/barrier on a word */
	LITE_MSG_HEARTBEAT,	/* one-way: the sender is alive */
	LITE_MSG_LMR_CANCEL,	/* one-way: the sender gave up an LMR_ALLOC */
	LITE_MSG_DSM_OPEN,	/* req to a home: the sender uses a region */
	LITE_MSG_DSM_CLOSE,	/* req to a home: the sender stops using it */
	LITE_MSG_DSM_REQ,	/* req to a home: a copy of a page */
	LITE_MSG_DSM_DONE,	/* req to a home: the copy is in place */
	LITE_MSG_DSM_INVAL,	/* req from a home: drop/downgrade/locate */
	LITE_MSG_DSM_GONE,	/* req from a home: the region is gone */
	LITE_MSG_LMR_GRANT,	/* req: the owner lets a share have keys */
	LITE_MSG_LMR_UNKEY,	/* req: void the keys of a withdrawn share */
	LITE_MSG_TYPE_END
};

#define LITE_MSGF_REPLY		(1U << 0)
#define LITE_MSGF_ALL		LITE_MSGF_REPLY

/* Handshake purposes (hello.purpose). */
enum lite_purpose {
	LITE_PURPOSE_JOIN = 1,	/* a new node asks the manager for an id */
	LITE_PURPOSE_PEER = 2,	/* a member connects to another member */
	LITE_PURPOSE_SELF = 3,	/* a node's loopback connection */
};

/* Address families on the wire, independent of the host's AF_* values. */
#define LITE_WIRE_AF_INET	4
#define LITE_WIRE_AF_INET6	6

struct lite_wire_hdr {
	__le32 magic;
	__u8 version;
	__u8 type;		/* enum lite_msg_type */
	__le16 flags;		/* LITE_MSGF_* */
	__le16 src;		/* sender's node id, 0 before it has one */
	__le16 credits;		/* receive buffers returned to the peer */
	__le32 len;		/* payload bytes after the header */
	__le32 req_id;		/* requester's id; 0 for one-way messages */
	__le32 status;		/* replies: 0 or a negative errno */
	__le32 reserved[2];	/* must be zero */
};

struct lite_wire_addr {
	__u8 family;		/* LITE_WIRE_AF_* */
	__u8 reserved0;
	__be16 port;
	__le32 reserved;
	__u8 addr[16];
};

struct lite_wire_hello {
	__u8 nonce[LITE_NONCE_LEN];
	__u8 purpose;		/* enum lite_purpose */
	__u8 reserved0;
	__le16 node_id;		/* PEER: the connecting member's id */
	__le32 reserved;
	struct lite_wire_addr listen;	/* where the sender listens */
};

struct lite_wire_challenge {
	__u8 nonce[LITE_NONCE_LEN];
};

/*
 * AUTH request: the active side's proof. AUTH reply: the passive side's
 * proof, followed for a JOIN by a struct lite_wire_accept.
 */
struct lite_wire_auth {
	__u8 mac[LITE_MAC_LEN];
};

struct lite_wire_member {
	__le16 id;
	__le16 reserved0;
	__le32 reserved;
	struct lite_wire_addr addr;
};

/* Reply to a successful JOIN handshake. */
struct lite_wire_accept {
	__le16 your_id;
	__le16 manager_id;
	__le16 n_members;
	__le16 reserved0;
	__le32 epoch;
	__le32 reserved;
	struct lite_wire_member members[];
};

#define LITE_DEL_LEFT		(1U << 0)	/* it left; else it was lost */

struct lite_wire_member_del {
	__le16 id;
	__le16 flags;		/* LITE_DEL_* */
	__le32 reserved;
};

/* HEARTBEAT: members to the manager and back, every few hundred ms. */
struct lite_wire_heartbeat {
	__le32 epoch;		/* the sender's membership epoch */
	__le16 members;		/* members the sender counts, itself included */
	__le16 reserved0;
	__le64 reserved;
};

struct lite_wire_ping {
	__le64 t0;
	__le64 reserved;
};

#define LITE_WIRE_NAME_MAX	64
#define LITE_WIRE_PERMS		7U	/* read | write | atomic */

/*
 * An LMR's flags, fixed at allocation. NIC_ATOMIC: its words belong to the
 * NIC's atomics (one-sided fetch-and-add and compare-and-swap); the memory
 * node's CPU never changes them atomically, so it refuses ATOMIC and SYNC.
 */
#define LITE_WIRE_LMR_NIC_ATOMIC	(1U << 0)
#define LITE_WIRE_LMR_FLAGS		LITE_WIRE_LMR_NIC_ATOMIC

/*
 * Why an LMR_ALLOC is made. LEASE: ahead of demand, for the requester's
 * lease (lease.c); the memory node counts it as lease memory.
 */
#define LITE_WIRE_ALLOC_LEASE		(1U << 0)
#define LITE_WIRE_ALLOC_HOW		LITE_WIRE_ALLOC_LEASE

struct lite_wire_lmr_alloc {
	__le64 size;
	__le32 flags;		/* LITE_WIRE_LMR_* */
	__le32 how;		/* LITE_WIRE_ALLOC_* */
};

/*
 * A chunk of memory a peer may reach: its address under @rkey, the
 * memory node's key for it (its global key, or in isolation mode the key
 * of the chunk's own registration).
 */
struct lite_wire_chunk {
	__le64 addr;
	__le32 len;
	__le32 rkey;
};

/* Reply to LMR_CHUNKS, and the tail of the reply to LMR_ALLOC. */
struct lite_wire_chunks {
	__le32 start;		/* index of chunks[0] */
	__le32 count;
	__le32 total;		/* chunks in the LMR */
	__le32 reserved;
	struct lite_wire_chunk chunks[];
};

/* Reply to LMR_ALLOC: the LMR, then its first chunks. */
struct lite_wire_lmr {
	__le64 mr_id;
	__le64 size;
	__le32 reserved;
	__le32 flags;		/* LITE_WIRE_LMR_*: those it was allocated with */
	struct lite_wire_chunks first;
};

/*
 * LMR_FREE: UNMAPPED, the requester (the owner) maps the LMR nowhere (it
 * was never published): the memory node need not invalidate it.
 */
#define LITE_WIRE_FREE_UNMAPPED		(1U << 0)

/*
 * LMR_CHUNKS, LMR_FREE, LMR_GRANT and LMR_UNKEY requests.
 *
 * Keys per share (a memory node in lmr mode): before it publishes a name,
 * the owner sends LMR_GRANT with a random 64-bit grant id and the rights
 * the name gives; the grant id travels with the name (SHARE, LOOKUP), and
 * a node that maps the LMR through the name fetches the chunks with it.
 * The memory node registers the chunks for the grant at its first fetch,
 * with the grant's rights, and LMR_UNKEY from the owner, once the name is
 * withdrawn, invalidates those keys and forgets the grant. A fetch with
 * grant 0 gets the LMR's own keys: the owner's only. A memory node in
 * global mode answers LMR_GRANT with -EOPNOTSUPP (one key for everything):
 * the name then carries grant 0.
 */
struct lite_wire_lmr_ref {
	__le64 mr_id;
	__le32 start;		/* LMR_CHUNKS: first chunk wanted; else 0 */
	__le32 flags;		/* LMR_FREE: LITE_WIRE_FREE_*; else 0 */
	__le64 grant;		/* LMR_CHUNKS: 0 or the name's; LMR_GRANT,
				 * LMR_UNKEY: not 0; LMR_FREE: 0 */
	__le32 perms;		/* LMR_GRANT: LITE_PERM_*, not 0; else 0 */
	__le32 reserved;
};

/*
 * LMR_CANCEL (one-way): the sender stopped waiting for its LMR_ALLOC
 * request @req_id. The memory node stops the allocation if it is still
 * running, or frees the LMR it made for that request; either way its reply
 * (if any) is one the sender ignores.
 */
struct lite_wire_lmr_cancel {
	__le32 req_id;		/* the LMR_ALLOC's request id; not 0 */
	__le32 reserved;
};

/* What a registered name stands for. */
enum lite_share_kind {
	LITE_SHARE_LMR = 0,	/* an LMR: mem_node, mr_id, perms */
	LITE_SHARE_DSM = 1,	/* a DSM region: its home, id (mr_id), size */
	LITE_SHARE_KIND_MAX = LITE_SHARE_DSM,
};

/* SHARE request (share_id 0) and LOOKUP reply. */
struct lite_wire_share {
	char name[LITE_WIRE_NAME_MAX];
	__le64 mr_id;
	__le64 size;
	__le64 share_id;
	__le16 mem_node;
	__u8 kind;		/* enum lite_share_kind */
	__u8 flags;		/* LITE_WIRE_LMR_* of the LMR (0 for DSM) */
	__le32 perms;
	__le64 grant;		/* the LMR's grant for the name (struct
				 * lite_wire_lmr_ref); 0 for none */
};

struct lite_wire_name {		/* LOOKUP, UNSHARE requests */
	char name[LITE_WIRE_NAME_MAX];
};

struct lite_wire_share_id {	/* SHARE reply */
	__le64 share_id;
};

/*
 * INVALIDATE request: drop every mapping made through share @share_id or,
 * if it is 0, every mapping of LMR @mr_id on node @mem_node.
 */
struct lite_wire_invalidate {
	__le64 share_id;
	__le64 mr_id;
	__le16 mem_node;
	__le16 reserved0;
	__le32 reserved;
};

enum lite_atomic_op {
	LITE_ATOMIC_FETCH_ADD = 1,
	LITE_ATOMIC_CMP_SWAP = 2,
};

/*
 * ATOMIC request: executed by the memory node's CPU, for an LMR without
 * LITE_WIRE_LMR_NIC_ATOMIC (whose words locks and barriers may use). The
 * reply carries the word's previous value.
 */
struct lite_wire_atomic {
	__le64 mr_id;
	__le64 offset;		/* 8-byte aligned */
	__le64 operand;		/* value to add, or value to compare */
	__le64 swap;
	__u8 op;		/* enum lite_atomic_op */
	__u8 reserved0[7];
};

struct lite_wire_atomic_result {
	__le64 value;
};

/* RING reply: the receiver's ring for the sender's RPC entries. */
struct lite_wire_ring {
	__le64 size;		/* bytes; a multiple of LITE_RPC_ALIGN */
	__le32 reserved0;
	__le32 reserved;
	struct lite_wire_chunks chunks;	/* all of them: start 0 */
};

/* RING_ACK: the receiver consumed the ring up to this position. */
struct lite_wire_ring_ack {
	__le64 tail;
};

enum lite_sync_op {
	LITE_SYNC_LOCK = 1,	/* take a ticket; reply when it is served */
	LITE_SYNC_TRYLOCK = 2,	/* the lock only if free now, else -EAGAIN */
	LITE_SYNC_UNLOCK = 3,	/* serve the next ticket */
	LITE_SYNC_BARRIER = 4,	/* arrive; reply when @count arrived */
	LITE_SYNC_CANCEL = 5,	/* the requester of @ticket gave up */
	LITE_SYNC_OP_MAX = LITE_SYNC_CANCEL,
};

/*
 * SYNC request, executed by the memory node's CPU on an 8-byte word of an
 * LMR. A lock word holds the next ticket (high half) and the ticket being
 * served (low half); a barrier word the generation (high) and arrivals
 * (low). The reply carries the ticket (locks) or generation (barriers).
 */
struct lite_wire_sync {
	__le64 mr_id;
	__le64 offset;		/* 8-byte aligned */
	__le32 ticket;		/* UNLOCK, CANCEL: the requester's ticket */
	__le16 count;		/* BARRIER: participants */
	__u8 op;		/* enum lite_sync_op */
	__u8 kind;		/* CANCEL: LITE_SYNC_LOCK or _BARRIER */
	__le32 owner;		/* UNLOCK: what the grant said */
	__le32 reserved;
};

/* The reply: a lock's ticket and owner token, or a barrier generation. */
struct lite_wire_sync_result {
	__le32 ticket;
	__le32 owner;		/* locks: names this holding, never 0 */
};

/*
 * RPC entries are not control messages: the sender RDMA-writes them into
 * the receiver's ring (or, for replies, into the caller's reply buffer)
 * and the write-with-immediate's immediate data tells the receiver. An
 * immediate with LITE_IMM_REPLY set names a call (the caller's call id);
 * otherwise its low 31 bits are the entry's ring position / LITE_RPC_ALIGN.
 */
#define LITE_RPC_MAGIC		0x43505254U	/* "TRPC" little-endian */
#define LITE_RPC_ALIGN		64
#define LITE_IMM_REPLY		(1U << 31)
#define LITE_RPC_MAX_SEGS	128	/* reply buffer pieces per call */
#define LITE_RPC_PAYLOAD_MAX	(4U << 20)	/* == LITE_RPC_MAX (uapi) */

enum lite_rpc_kind {
	LITE_RPC_CALL = 1,	/* expects a reply */
	LITE_RPC_MSG = 2,	/* one-way */
};

/* A ring entry: this header, @n_segs segments, @len payload bytes. */
struct lite_wire_rpc {
	__le32 magic;
	__u8 kind;		/* enum lite_rpc_kind */
	__u8 reserved0;
	__le16 src;		/* the sender's node id */
	__le32 port;
	__le32 call_id;		/* CALL: for the reply's immediate */
	__le64 pos;		/* the entry's ring position */
	__le32 len;		/* payload bytes */
	__le32 n_segs;		/* CALL: reply buffer segments, keys in them */
	__le32 reserved2;
	__le32 reserved1;
	__le64 reply_cap;	/* CALL: payload bytes the caller takes */
	__le64 reserved[2];
	/* struct lite_wire_chunk segs[n_segs]; payload */
};

/* What a reply writes at the start of the caller's reply buffer. */
struct lite_wire_rpc_reply {
	__le32 magic;
	__le32 call_id;
	__le32 status;		/* 0 or a negative errno */
	__le32 len;		/* payload bytes that follow */
	__le64 reserved[2];
};

/* Checked view of a ring entry's header. */
struct lite_rpc_entry {
	u8 kind;
	u16 src;
	u32 port;
	u32 call_id;
	u32 len;
	u32 n_segs;
	u64 reply_cap;
	u32 hdr_len;		/* header and segments */
	u32 size;		/* whole entry, aligned */
};

u32 lite_rpc_entry_size(u32 n_segs, u32 len);
int lite_rpc_entry_parse(const struct lite_wire_rpc *w, u64 pos, u16 src,
			 u64 room, struct lite_rpc_entry *e);
int lite_rpc_reply_parse(const struct lite_wire_rpc_reply *w, u32 call_id,
			 u64 cap, int *status, u32 *len);

/*
 * DSM (dsm.c, dsm_home.c; the directory in core/dsm.h). A region is named
 * by its home's id for it; pages by their index. The kinds and grants are
 * enum lite_dsm_kind, lite_dsm_grant_kind and lite_dsm_inval_kind.
 */
#define LITE_WIRE_DSM_MAX_PAGES	(1ULL << 24)	/* 64 GiB of 4 KiB pages */

/* DSM_OPEN, DSM_CLOSE requests; DSM_GONE. */
struct lite_wire_dsm_region {
	__le64 region;
	__le64 reserved;
};

/* DSM_OPEN reply. */
struct lite_wire_dsm_info {
	__le64 size;		/* bytes */
	__le64 reserved;
};

/*
 * DSM_REQ: a copy of page @page for @kind, into the requester's frame at
 * @addr. @seq numbers the requester's requests for the page: a request
 * sent again after a broken connection has the same one.
 */
struct lite_wire_dsm_req {
	__le64 region;
	__le64 page;
	__le64 addr;
	__le32 seq;
	__le32 rkey;		/* the key of the requester's frame */
	__u8 kind;		/* enum lite_dsm_kind */
	__u8 reserved0[7];
};

/* DSM_REQ reply: the grant. */
struct lite_wire_dsm_grant {
	__le64 from_addr;	/* DATA: the frame to read */
	__le32 from_rkey;	/* DATA: that frame's key */
	__le32 txn;		/* the DONE names it */
	__le16 from;		/* DATA: the node to read from */
	__u8 kind;		/* enum lite_dsm_grant_kind */
	__u8 reserved0[5];
};

/* DSM_DONE: the grant of transaction @txn is carried out (or failed). */
struct lite_wire_dsm_done {
	__le64 region;
	__le64 page;
	__le64 addr;		/* the requester's frame (the home keeps the
				 * one of the DSM_REQ) */
	__le32 txn;
	__le32 status;		/* 0 or a negative errno */
};

/* DSM_INVAL: do @what with the copy of page @page. */
struct lite_wire_dsm_inval {
	__le64 region;
	__le64 page;
	__u8 what;		/* enum lite_dsm_inval_kind */
	__u8 reserved0[7];
};

/* DSM_INVAL reply: where the frame is and whether it holds its bytes. */
struct lite_wire_dsm_held {
	__le64 addr;
	__le32 rkey;		/* that frame's key */
	__u8 has_frame;		/* 0 or 1 */
	__u8 reserved0[3];
};

/* Core-side view of an address (host byte order port). */
struct lite_naddr {
	u8 family;		/* LITE_WIRE_AF_* */
	u16 port;
	u8 addr[16];
};

/* A checked message: header fields in host order, payload pointer. */
struct lite_msg {
	u8 type;
	bool reply;
	u16 src;
	u16 credits;
	u32 req_id;
	int status;
	u32 len;		/* payload length */
	const void *payload;
};

int lite_wire_parse(const void *buf, size_t n, struct lite_msg *msg);
size_t lite_wire_put_hdr(void *buf, u8 type, bool reply, u16 src,
			 u16 credits, u32 req_id, int status, u32 len);

void lite_wire_put_addr(struct lite_wire_addr *w, const struct lite_naddr *a);
int lite_wire_get_addr(const struct lite_wire_addr *w, struct lite_naddr *a);
bool lite_naddr_equal(const struct lite_naddr *a, const struct lite_naddr *b);

#endif /* LITE_CORE_WIRE_H */
