// SPDX-License-Identifier: GPL-2.0
// Seed corpora for the fuzz targets, written with the core's own encoders:
// a well-formed message of every type in each direction it travels (each
// checked with lite_wire_parse() here, so a seed that stopped being valid
// fails the build of the corpus), JOIN accepts from real tables, ring
// entries and replies, and a few operation sequences for the others.
//   fuzz-seeds DIR   writes DIR/<target>/<name>
#include <endian.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz.hpp"

namespace
{

using Bytes = std::vector<uint8_t>;
std::filesystem::path out_dir;

void put(const std::string& target, const std::string& name, const Bytes& b)
{
    auto dir = out_dir / target;
    std::filesystem::create_directories(dir);
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!f)
        fuzz::fail(__FILE__, __LINE__, "cannot write a seed");
}

template <typename T> Bytes raw(const T& v)
{
    Bytes b(sizeof(v));
    std::memcpy(b.data(), &v, sizeof(v));
    return b;
}

void append(Bytes& b, const Bytes& more)
{
    b.insert(b.end(), more.begin(), more.end());
}

lite_naddr v4(uint8_t last, uint16_t port)
{
    lite_naddr a{};
    a.family = LITE_WIRE_AF_INET;
    a.port = port;
    a.addr[0] = 10;
    a.addr[1] = 99;
    a.addr[3] = last;
    return a;
}

lite_naddr v6(uint8_t last, uint16_t port)
{
    lite_naddr a{};
    a.family = LITE_WIRE_AF_INET6;
    a.port = port;
    a.addr[0] = 0xfd;
    a.addr[15] = last;
    return a;
}

// A message of @type carrying @payload; it must parse.
void message(const std::string& name, uint8_t type, bool reply, const Bytes& payload, int status = 0)
{
    Bytes b(sizeof(lite_wire_hdr));
    lite_wire_put_hdr(b.data(), type, reply, 2, 3, 7, status, static_cast<uint32_t>(payload.size()));
    append(b, payload);
    lite_msg m{};
    if (lite_wire_parse(b.data(), b.size(), &m))
        fuzz::fail(__FILE__, __LINE__, ("seed " + name + " does not parse").c_str());
    put("wire_parse", name, b);
}

// A one-way message: no request id.
void one_way(const std::string& name, uint8_t type, const Bytes& payload)
{
    Bytes b(sizeof(lite_wire_hdr));
    lite_wire_put_hdr(b.data(), type, false, 2, 3, 0, 0, static_cast<uint32_t>(payload.size()));
    append(b, payload);
    lite_msg m{};
    if (lite_wire_parse(b.data(), b.size(), &m))
        fuzz::fail(__FILE__, __LINE__, ("seed " + name + " does not parse").c_str());
    put("wire_parse", name, b);
}

Bytes chunks(uint32_t start, uint32_t count, uint32_t total, uint32_t len)
{
    Bytes b(sizeof(lite_wire_chunks) + count * sizeof(lite_wire_chunk));
    auto* c = reinterpret_cast<lite_wire_chunks*>(b.data());
    c->start = htole32(start);
    c->count = htole32(count);
    c->total = htole32(total);
    for (uint32_t i = 0; i < count; i++) {
        c->chunks[i].addr = htole64(0x100000000ULL + (start + i) * uint64_t{len});
        c->chunks[i].len = htole32(len);
        c->chunks[i].rkey = htole32(0x1200 + start + i);
    }
    return b;
}

lite_membership table(int n, bool ipv6)
{
    lite_membership mb{};
    lite_naddr first = ipv6 ? v6(1, 18515) : v4(1, 18515);
    lite_mbr_init_manager(&mb, &first);
    for (int id = 2; id <= n; id++) {
        lite_naddr a = ipv6 ? v6(static_cast<uint8_t>(id), 18515) : v4(static_cast<uint8_t>(id), 18515);
        lite_mbr_add(&mb, static_cast<uint16_t>(id), &a);
    }
    return mb;
}

Bytes accept(const lite_membership& mb, uint16_t you)
{
    Bytes b(lite_mbr_accept_size(&mb));
    lite_mbr_encode_accept(&mb, you, b.data(), b.size());
    return b;
}

lite_wire_share share(const char* name, uint64_t share_id)
{
    lite_wire_share s{};
    std::strncpy(s.name, name, sizeof(s.name) - 1);
    s.mr_id = htole64(3);
    s.size = htole64(4096);
    s.share_id = htole64(share_id);
    s.mem_node = htole16(2);
    s.perms = htole32(LITE_WIRE_PERMS);
    return s;
}

void wire_parse()
{
    lite_wire_hello hello{};
    for (int i = 0; i < LITE_NONCE_LEN; i++)
        hello.nonce[i] = static_cast<uint8_t>(i);
    hello.purpose = LITE_PURPOSE_JOIN;
    lite_naddr a = v4(1, 18515);
    lite_wire_put_addr(&hello.listen, &a);
    message("hello-join", LITE_MSG_HELLO, false, raw(hello));
    hello.purpose = LITE_PURPOSE_PEER;
    hello.node_id = htole16(3);
    a = v6(3, 18516);
    lite_wire_put_addr(&hello.listen, &a);
    message("hello-peer6", LITE_MSG_HELLO, false, raw(hello));
    message("hello-reply", LITE_MSG_HELLO, true, raw(lite_wire_challenge{}));

    lite_wire_auth auth{};
    std::memset(auth.mac, 0xa5, sizeof(auth.mac));
    message("auth", LITE_MSG_AUTH, false, raw(auth));
    message("auth-reply", LITE_MSG_AUTH, true, raw(auth));
    Bytes join = raw(auth);
    append(join, accept(table(3, false), 3));
    message("auth-reply-accept3", LITE_MSG_AUTH, true, join);
    join = raw(auth);
    append(join, accept(table(LITE_MBR_MAX, true), 77));
    message("auth-reply-accept128", LITE_MSG_AUTH, true, join);
    message("auth-refused", LITE_MSG_AUTH, true, {}, -EACCES);

    lite_wire_member mbr{};
    mbr.id = htole16(4);
    a = v4(4, 18515);
    lite_wire_put_addr(&mbr.addr, &a);
    message("member-add", LITE_MSG_MEMBER_ADD, false, raw(mbr));
    message("member-add-reply", LITE_MSG_MEMBER_ADD, true, {});
    one_way("leave", LITE_MSG_LEAVE, {});
    lite_wire_ping ping{};
    ping.t0 = htole64(123456789);
    message("ping", LITE_MSG_PING, false, raw(ping));
    message("ping-reply", LITE_MSG_PING, true, raw(ping));
    one_way("credit", LITE_MSG_CREDIT, {});
    lite_wire_member_del del{};
    del.id = htole16(4);
    del.flags = htole16(LITE_DEL_LEFT);
    one_way("member-del", LITE_MSG_MEMBER_DEL, raw(del));

    lite_wire_lmr_alloc alloc{};
    alloc.size = htole64(uint64_t{3} * 4096);
    message("lmr-alloc", LITE_MSG_LMR_ALLOC, false, raw(alloc));
    lite_wire_lmr lmr{};
    lmr.mr_id = htole64(5);
    lmr.size = htole64(uint64_t{3} * 4096);
    Bytes rep = raw(lmr);
    rep.resize(offsetof(lite_wire_lmr, first));
    append(rep, chunks(0, 2, 3, 4096));
    message("lmr-alloc-reply", LITE_MSG_LMR_ALLOC, true, rep);
    lite_wire_lmr_ref ref{};
    ref.mr_id = htole64(5);
    ref.start = htole32(2);
    message("lmr-chunks", LITE_MSG_LMR_CHUNKS, false, raw(ref));
    message("lmr-chunks-reply", LITE_MSG_LMR_CHUNKS, true, chunks(2, 1, 3, 4096));
    message("lmr-chunks-reply-full", LITE_MSG_LMR_CHUNKS, true,
            chunks(0, LITE_WIRE_MAX_CHUNKS, LITE_WIRE_MAX_CHUNKS + 1, 4096));
    ref.start = 0;
    message("lmr-free", LITE_MSG_LMR_FREE, false, raw(ref));
    message("lmr-free-reply", LITE_MSG_LMR_FREE, true, {});
    ref.grant = htole64(0x9e3779b97f4a7c15ULL);
    message("lmr-unkey", LITE_MSG_LMR_UNKEY, false, raw(ref));
    message("lmr-unkey-reply", LITE_MSG_LMR_UNKEY, true, {});
    ref.perms = htole32(LITE_WIRE_PERMS);
    message("lmr-grant", LITE_MSG_LMR_GRANT, false, raw(ref));
    message("lmr-grant-reply", LITE_MSG_LMR_GRANT, true, {});

    message("share", LITE_MSG_SHARE, false, raw(share("counter", 0)));
    lite_wire_share_id sid{};
    sid.share_id = htole64(9);
    message("share-reply", LITE_MSG_SHARE, true, raw(sid));
    lite_wire_name name{};
    std::strncpy(name.name, "counter", sizeof(name.name) - 1);
    message("lookup", LITE_MSG_LOOKUP, false, raw(name));
    message("lookup-reply", LITE_MSG_LOOKUP, true, raw(share("counter", 9)));
    message("unshare", LITE_MSG_UNSHARE, false, raw(name));
    message("unshare-reply", LITE_MSG_UNSHARE, true, {});
    lite_wire_invalidate inv{};
    inv.share_id = htole64(9);
    inv.mem_node = htole16(2);
    message("invalidate", LITE_MSG_INVALIDATE, false, raw(inv));
    message("invalidate-reply", LITE_MSG_INVALIDATE, true, {});

    lite_wire_atomic atom{};
    atom.mr_id = htole64(5);
    atom.offset = htole64(64);
    atom.operand = htole64(1);
    atom.op = LITE_ATOMIC_FETCH_ADD;
    message("atomic-add", LITE_MSG_ATOMIC, false, raw(atom));
    atom.op = LITE_ATOMIC_CMP_SWAP;
    atom.swap = htole64(2);
    message("atomic-cas", LITE_MSG_ATOMIC, false, raw(atom));
    message("atomic-reply", LITE_MSG_ATOMIC, true, raw(lite_wire_atomic_result{}));

    message("ring", LITE_MSG_RING, false, {});
    lite_wire_ring ring{};
    ring.size = htole64(uint64_t{2} * 65536);
    Bytes rr = raw(ring);
    rr.resize(offsetof(lite_wire_ring, chunks));
    append(rr, chunks(0, 2, 2, 65536));
    message("ring-reply", LITE_MSG_RING, true, rr);
    lite_wire_ring_ack ack{};
    ack.tail = htole64(4096);
    one_way("ring-ack", LITE_MSG_RING_ACK, raw(ack));

    lite_wire_sync sync{};
    sync.mr_id = htole64(5);
    sync.offset = htole64(8);
    sync.op = LITE_SYNC_LOCK;
    message("sync-lock", LITE_MSG_SYNC, false, raw(sync));
    sync.op = LITE_SYNC_TRYLOCK;
    message("sync-trylock", LITE_MSG_SYNC, false, raw(sync));
    sync.op = LITE_SYNC_UNLOCK;
    sync.ticket = htole32(4);
    sync.owner = htole32(17);
    message("sync-unlock", LITE_MSG_SYNC, false, raw(sync));
    sync.op = LITE_SYNC_BARRIER;
    sync.owner = 0;
    sync.count = htole16(3);
    message("sync-barrier", LITE_MSG_SYNC, false, raw(sync));
    sync.op = LITE_SYNC_CANCEL;
    sync.count = 0;
    sync.kind = LITE_SYNC_BARRIER;
    message("sync-cancel", LITE_MSG_SYNC, false, raw(sync));
    message("sync-reply", LITE_MSG_SYNC, true, raw(lite_wire_sync_result{}));

    lite_wire_heartbeat hb{};
    hb.epoch = htole32(4);
    hb.members = htole16(3);
    one_way("heartbeat", LITE_MSG_HEARTBEAT, raw(hb));
    lite_wire_lmr_cancel cancel{};
    cancel.req_id = htole32(12);
    one_way("lmr-cancel", LITE_MSG_LMR_CANCEL, raw(cancel));

    // DSM
    lite_wire_dsm_region reg{};
    reg.region = htole64(0x1234'0000'0001ULL);
    message("dsm-open", LITE_MSG_DSM_OPEN, false, raw(reg));
    lite_wire_dsm_info info{};
    info.size = htole64(uint64_t{64} << 20);
    message("dsm-open-reply", LITE_MSG_DSM_OPEN, true, raw(info));
    message("dsm-close", LITE_MSG_DSM_CLOSE, false, raw(reg));
    message("dsm-close-reply", LITE_MSG_DSM_CLOSE, true, {});
    message("dsm-gone", LITE_MSG_DSM_GONE, false, raw(reg));
    message("dsm-gone-reply", LITE_MSG_DSM_GONE, true, {});
    lite_wire_dsm_req req{};
    req.region = reg.region;
    req.page = htole64(77);
    req.addr = htole64(0xffff888012345000ULL);
    req.seq = htole32(3);
    req.rkey = htole32(0x1122);
    req.kind = LITE_DSM_WR;
    message("dsm-req", LITE_MSG_DSM_REQ, false, raw(req));
    lite_wire_dsm_grant grant{};
    grant.kind = LITE_DSM_DATA;
    grant.from = htole16(3);
    grant.from_addr = htole64(0xffff888000042000ULL);
    grant.from_rkey = htole32(0x3344);
    grant.txn = htole32(9);
    message("dsm-grant-data", LITE_MSG_DSM_REQ, true, raw(grant));
    grant = {};
    grant.kind = LITE_DSM_FILL;
    grant.txn = htole32(10);
    message("dsm-grant-fill", LITE_MSG_DSM_REQ, true, raw(grant));
    lite_wire_dsm_done done{};
    done.region = reg.region;
    done.page = htole64(77);
    done.addr = req.addr;
    done.txn = htole32(9);
    message("dsm-done", LITE_MSG_DSM_DONE, false, raw(done));
    message("dsm-done-reply", LITE_MSG_DSM_DONE, true, {});
    lite_wire_dsm_inval dinv{};
    dinv.region = reg.region;
    dinv.page = htole64(77);
    dinv.what = LITE_DSM_DOWNGRADE;
    message("dsm-inval", LITE_MSG_DSM_INVAL, false, raw(dinv));
    lite_wire_dsm_held held{};
    held.addr = req.addr;
    held.rkey = htole32(0x1122);
    held.has_frame = 1;
    message("dsm-inval-reply", LITE_MSG_DSM_INVAL, true, raw(held));
}

void wire_addr()
{
    lite_wire_addr w[4]{};
    lite_naddr a[4] = {v4(1, 18515), v4(1, 18516), v6(1, 18515), v6(2, 18515)};
    for (int i = 0; i < 4; i++)
        lite_wire_put_addr(&w[i], &a[i]);
    for (int i = 0; i < 4; i++) {
        Bytes b = raw(w[i]);
        append(b, raw(w[(i + 1) % 4]));
        b.push_back(static_cast<uint8_t>(i & 1)); // second one: a changed copy
        b.push_back(static_cast<uint8_t>(i * 5));
        b.push_back(1);
        put("wire_addr", "pair" + std::to_string(i), b);
    }
}

void rpc()
{
    lite_wire_rpc w{};
    w.magic = htole32(LITE_RPC_MAGIC);
    w.kind = LITE_RPC_CALL;
    w.src = htole16(2);
    w.port = htole32(7);
    w.call_id = htole32(11);
    w.pos = htole64(4096);
    w.len = htole32(100);
    w.n_segs = htole32(2);
    w.reply_cap = htole64(8192);
    // position and source from the header, a room of 64 KiB
    const Bytes tail = {1, 1, 1, 0x00, 0x00, 0x01, 0x00, 2, 0, 0, 0, 100, 0, 0, 0};
    Bytes b = raw(w);
    append(b, tail);
    put("rpc_entry", "call", b);
    w.kind = LITE_RPC_MSG;
    w.call_id = 0;
    w.n_segs = 0;
    w.reply_cap = 0;
    b = raw(w);
    append(b, tail);
    put("rpc_entry", "msg", b);

    lite_wire_rpc_reply r{};
    r.magic = htole32(LITE_RPC_MAGIC);
    r.call_id = htole32(11);
    r.len = htole32(100);
    b = raw(r);
    append(b, {1, 1, 0x00, 0x10, 0x00});
    put("rpc_reply", "ok", b);
    r.status = htole32(static_cast<uint32_t>(-EMSGSIZE));
    r.len = htole32(1 << 20);
    b = raw(r);
    append(b, {1, 1, 0x00, 0x10, 0x00});
    put("rpc_reply", "too-big", b);
    r.status = htole32(static_cast<uint32_t>(-ENOENT));
    r.len = 0;
    b = raw(r);
    append(b, {1, 1, 0x00, 0x10, 0x00});
    put("rpc_reply", "error", b);
}

void membership()
{
    put("mbr_accept", "three", accept(table(3, false), 2));
    put("mbr_accept", "two6", accept(table(2, true), 2));
    put("mbr_accept", "full", accept(table(LITE_MBR_MAX, false), 100));
    // init_manager, add ids 2..5, remove 3, alloc, find, accept for 4
    put("mbr_ops", "grow", {4, 1, 0, 2, 2, 0, 3, 3, 0, 4, 4, 0, 5, 5, 1, 3, 2, 3, 2, 5, 3, 1, 4, 0, 2, 0xff, 5, 3});
}

void lmr()
{
    // kmod-style layout of three chunks, size = their sum, then accesses:
    // read inside, write across chunks, an atomic, one past the end
    Bytes b = {1, 3};
    for (int i = 0; i < 3; i++) {
        append(b, {2, 0, 0x10, 0, 0}); // page-aligned address
        append(b, {0x10, 0x00});       // length 4096
    }
    b.push_back(1);
    append(b, {1, 1, 0, 0x00, 0x10, 0x00, 0x10});
    append(b, {3, 3, 0, 0x0f, 0xf0, 0x10, 0x20});
    append(b, {7, 4, 0, 0x00, 0x08, 0x00, 0x08});
    append(b, {7, 1, 0, 0x30, 0x00, 0x00, 0x01});
    put("lmr", "three-chunks", b);
}

void sequences()
{
    // any-word probe, then take, take, try, unlock, give up, arrivals
    put("sync", "lock-barrier",
        {0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 2, 3, 0, 2, 2, 4, 4, 5, 4, 4});
    // depth 32; both ends send, deliver, repost, write with immediate
    put("credits", "chatter", {1, 0, 1, 0, 4, 6, 4, 2, 3, 5, 7, 6, 0, 0, 0, 4, 4, 4, 6, 6, 6, 2, 2});
    Bytes a(200);
    for (size_t i = 0; i < a.size(); i++)
        a[i] = static_cast<uint8_t>(i * 7 + 1);
    put("auth", "bytes", a);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        (void)std::fprintf(stderr, "usage: fuzz-seeds DIR\n");
        return 2;
    }
    out_dir = argv[1];
    wire_parse();
    wire_addr();
    rpc();
    membership();
    lmr();
    sequences();
    return 0;
}
