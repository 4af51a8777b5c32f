// SPDX-License-Identifier: MIT
//
// lite-fuzz-ioctl: a fuzzer for the /dev/lite ioctl and io_uring uapi, run
// inside a lite-vm guest against the real module.
//
// As root it only sets up: three node instances (a manager and two that
// join it, as the guest tests' up() does), a per-user LMR quota. Then it
// forks workers that become nobody in group lite (no capabilities), open
// /dev/lite, attach to an instance and issue random commands: every ioctl of
// lite.h (NODE_UP and NODE_DOWN must fail with EPERM), unknown command
// numbers, and IORING_OP_URING_CMD submissions; DSM regions too: DSM_OPEN
// of a few shared and private names (and bad ones), DSM_DESTROY, mmap() of
// the region files with loads and stores (a SIGBUS is counted, not fatal),
// close(). Each argument is either
// valid (handles, names, ports and tokens the worker got from earlier calls,
// node ids 1..3, ranges inside or at the bounds, good buffers) or mutated
// (bit flips, reserved and flag bits, huge and off-by-one lengths and
// offsets, bad pointers, stale and foreign handles, random node ids, bad SQE
// fields). Waits are always bounded by short timeouts.
//
// Findings (any of them makes the exit status 1):
//  - an errno that docs/uapi.md names nowhere, or a return other than 0/-1;
//  - a control command (NODE_UP, NODE_DOWN) that does not fail with EPERM;
//  - LMR bytes that differ from what this worker's calls put there (each
//    worker keeps a shadow copy of its private LMRs up to 256 KiB: written,
//    set, copied, added to; a fresh LMR must read as zeros; a rejected
//    command must change nothing), an RPC or message payload whose checksum
//    is wrong, an atomic whose old value is wrong, a handle handed out twice,
//    a token or handle that works after it was used up or freed;
//  - DSM: a region file that is not a new close-on-exec file, or reports
//    another size or home than the region has; DSM_DESTROY that does not
//    answer 0, EPERM or ENXIO as the file's part in the region says; an
//    mmap() result other than the documented one; a word of a mapping that
//    does not read what this worker stored there (its own 8 bytes of each
//    page of a shared region, any byte of a region only it uses; a new
//    region reads as zeros); an access to a region it destroyed that does
//    not raise SIGBUS;
//  - a worker killed by a signal or stuck in one call for --hang-seconds;
//  - node memory, LMR, DSM and in-flight counters that do not return to
//    zero after the workers exited, or a cluster that fell apart.
// An errno that the uapi documents, but not for that command, is a "note":
// printed once per command and errno, counted, not failing.
//
//   lite-fuzz-ioctl [--calls N | --seconds S] [--workers W] [--seed S]
//                   [--quota-mb Q] [--wait-ms MS] [--hang-seconds S]
//                   [--port-base P] [--verbose]
// Prints "lite-fuzz-ioctl: N calls (I ioctl, U io_uring, D DSM mmap and
// close) in T s, W workers, seed S, F findings"; with $LITE_OUT set also writes
// $LITE_OUT/fuzz-ioctl.json.
#include <csignal>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <lite/async.h>
#include <lite/lite.h>
#include <lite/lite.hpp>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "util.hpp"

namespace
{

using Clock = std::chrono::steady_clock;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kPage = 4096;

// Per-worker user memory: [valid buffers | serve buffers | scratch] with a
// PROT_NONE page on each side. Valid calls use disjoint buffers in the first
// part; mutated calls only ever point into the scratch part (or nowhere
// valid), so what the kernel writes for them never lands on data a check
// reads.
constexpr uint64_t kArenaSize = 32 * kMiB;
constexpr uint64_t kValidOff = 0;
constexpr uint64_t kValidSize = 10 * kMiB;
constexpr uint64_t kServeOff = 10 * kMiB; // receive buffer, then reply buffer
constexpr uint64_t kServeRecvCap = LITE_RPC_MAX + 64 * kKiB;
constexpr uint64_t kServeReplyOff = kServeOff + kServeRecvCap;
constexpr uint64_t kScratchOff = 16 * kMiB;
constexpr uint64_t kScratchSize = 16 * kMiB;
constexpr uint64_t kRoSize = 64 * kKiB;
constexpr uint64_t kAbandonSize = 256 * kKiB;

constexpr uint64_t kAllocMax = 4 * kMiB;   // the largest LMR a worker makes
constexpr uint64_t kTrackMax = 256 * kKiB; // LMRs with a shadow copy
constexpr size_t kMaxOwned = 12;
constexpr size_t kMaxMapped = 12;
constexpr size_t kMaxTokens = 16;
constexpr int kMaxWorkers = 16;
constexpr int kNodes = 3;
constexpr uint32_t kPortsPerWorker = 8;
constexpr uint32_t kRpcPortBase = 4000;
constexpr int kMaxAbandons = 32;
constexpr int kErrMax = 256;
constexpr uint32_t kMagic = 0x6c7a6675U;
constexpr size_t kArgMax = 512;

// DSM regions: each worker keeps at most kMaxRegions region files open (the
// oldest is closed for a new one) and makes regions of at most
// kDsmMaxPages pages. All workers open the shared names "dz0".. (each with
// its own size, so that opens find them); "dp<worker>.K" and odd names are
// one worker's. In a page of a shared region, worker W loads and stores
// its own word at 8 * W, anyone anything from kDsmSlotArea on.
constexpr size_t kMaxRegions = 4;
constexpr uint64_t kDsmMaxPages = 64;
constexpr uint64_t kDsmSlotArea = 256;
constexpr std::array<uint64_t, 6> kDsmPoolPages = {1, 2, 3, 8, 16, kDsmMaxPages};
constexpr std::array<uint64_t, 3> kDsmPrivPages = {2, 5, kDsmMaxPages};
static_assert(uint64_t{8} * kMaxWorkers <= kDsmSlotArea);

// ---------------------------------------------------------------------------
// Random numbers (xoshiro256**, seeded through splitmix64).

uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
}

class Rng
{
public:
    explicit Rng(uint64_t seed)
    {
        for (auto& s : s_) {
            seed = mix64(seed);
            s = seed;
        }
    }
    uint64_t next()
    {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17U;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    uint64_t below(uint64_t n) { return n != 0 ? next() % n : 0; }
    uint64_t range(uint64_t lo, uint64_t hi) { return hi <= lo ? lo : lo + below(hi - lo + 1); }
    bool one_in(uint64_t n) { return below(n) == 0; }
    bool percent(unsigned p) { return below(100) < p; }
    template <class T> const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
    template <class T> T pick(std::initializer_list<T> v) { return *(v.begin() + below(v.size())); }

private:
    static uint64_t rotl(uint64_t x, unsigned k) { return (x << k) | (x >> (64U - k)); }
    std::array<uint64_t, 4> s_{};
};

// Bytes of a pattern, the same for the same seed and offset.
void fill_pattern(uint8_t* p, uint64_t len, uint64_t seed)
{
    uint64_t i = 0;
    for (uint64_t w = 0; i < len; w++) {
        uint64_t v = mix64(seed ^ (w * 0x2545f4914f6cdd1dULL));
        for (int b = 0; b < 8 && i < len; b++, i++) {
            p[i] = static_cast<uint8_t>(v);
            v >>= 8U;
        }
    }
}

uint64_t checksum(const uint8_t* p, uint64_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ len;
    uint64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = 0;
        std::memcpy(&w, p + i, 8);
        h = mix64(h ^ w);
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

// RPC requests, replies and messages carry this header when they are long
// enough: the receiver checks the checksum of what follows.
struct PayloadHdr {
    uint32_t magic;
    uint32_t worker;
    uint64_t seq;
    uint64_t len;
    uint64_t sum;
};

void make_payload(uint8_t* p, uint64_t len, uint32_t worker, uint64_t seq)
{
    if (len < sizeof(PayloadHdr)) {
        fill_pattern(p, len, seq);
        return;
    }
    fill_pattern(p + sizeof(PayloadHdr), len - sizeof(PayloadHdr), seq);
    PayloadHdr h{kMagic, worker, seq, len, checksum(p + sizeof(PayloadHdr), len - sizeof(PayloadHdr))};
    std::memcpy(p, &h, sizeof(h));
}

// Whether a received payload is intact (true also when it is not ours or its
// length is not the one it was sent with: nothing to check then).
bool payload_ok(const uint8_t* p, uint64_t len, PayloadHdr* hdr_out = nullptr)
{
    if (len < sizeof(PayloadHdr))
        return true;
    PayloadHdr h{};
    std::memcpy(&h, p, sizeof(h));
    if (hdr_out != nullptr)
        *hdr_out = h;
    if (h.magic != kMagic || h.len != len)
        return true;
    return checksum(p + sizeof(PayloadHdr), len - sizeof(PayloadHdr)) == h.sum;
}

// ---------------------------------------------------------------------------
// errnos

using ErrSet = std::bitset<kErrMax>;

ErrSet errs(std::initializer_list<int> list)
{
    ErrSet s;
    for (int e : list)
        s.set(static_cast<size_t>(e));
    return s;
}

std::string ename(int e)
{
    const char* n = strerrorname_np(e);
    return n != nullptr ? n : "errno " + std::to_string(e);
}

// Every errno docs/uapi.md names, for any command.
const ErrSet& documented()
{
    static const ErrSet s =
        errs({EPERM,         EINVAL,       ENOKEY,     EAFNOSUPPORT, EFAULT,     ENODEV,       ENXIO,       EADDRINUSE,
              EADDRNOTAVAIL, EKEYREJECTED, EOPNOTSUPP, ECONNREFUSED, ETIMEDOUT,  EHOSTUNREACH, ENETUNREACH, ENOSPC,
              EAGAIN,        EINTR,        ENOENT,     ENOTCONN,     ECONNRESET, ENOTTY,       EBADFD,      EBADF,
              EHOSTDOWN,     EKEYREVOKED,  EACCES,     EOVERFLOW,    ERANGE,     EBUSY,        E2BIG,       EDQUOT,
              ENOMEM,        ESHUTDOWN,    EEXIST,     EIO,          EMSGSIZE,   EREMOTEIO,    EDEADLK,     ECANCELED,
              EALREADY,      EMEDIUMTYPE,  EMFILE});
    return s;
}

// Failures after which a command must have changed nothing: its arguments
// or the access were refused before any work request was posted.
bool no_effect(int e)
{
    return e == EBADFD || e == EBADF || e == EACCES || e == EOVERFLOW || e == ERANGE || e == EINVAL || e == ENOTTY ||
           e == EPERM || e == EOPNOTSUPP || e == EKEYREVOKED || e == EHOSTDOWN;
}

// ---------------------------------------------------------------------------
// The commands and the fields of their structures.

enum Cmd : int {
    C_GET_INFO,
    C_NODE_UP,
    C_NODE_DOWN,
    C_NODE_STATUS,
    C_PING,
    C_ATTACH,
    C_ALLOC,
    C_FREE,
    C_READ,
    C_WRITE,
    C_FETCH_ADD,
    C_CMP_SWAP,
    C_MEMSET,
    C_MEMCPY,
    C_SHARE,
    C_MAP,
    C_REVOKE,
    C_RPC_REGISTER,
    C_RPC_UNREGISTER,
    C_RPC_CALL,
    C_RPC_RECV,
    C_RPC_REPLY,
    C_MSG_SEND,
    C_LOCK,
    C_UNLOCK,
    C_BARRIER,
    C_DSM_OPEN,
    C_DSM_DESTROY,
    C_RPC_REPLY_RECV,
    C_SENDFILE,
    C_UNKNOWN,
    // Not ioctls, counted as commands: mmap() of a region file (with loads
    // and stores, then munmap()), close() of one.
    C_DSM_MMAP,
    C_DSM_CLOSE,
    C_COUNT
};

enum Kind : uint8_t {
    K_HANDLE,
    K_OFF,
    K_LEN,
    K_PTR,
    K_FLAGS,
    K_RSV,
    K_OUT,
    K_NODE,
    K_PORT,
    K_TMO,
    K_NAME,
    K_COUNT,
    K_SIZE,
    K_TOKEN,
    K_PERMS,
    K_VAL,
    K_INST,
    K_CAP,
    K_BYTES,
    K_DSIZE, // a DSM region's size
    K_FD,    // a file descriptor of the worker's (SENDFILE's file)
};

struct Field {
    uint16_t off;
    uint16_t width;
    Kind kind;
};

template <class S, class T> Field fld(T S::*member, Kind kind)
{
    static const S probe{};
    const auto off = reinterpret_cast<const char*>(&(probe.*member)) - reinterpret_cast<const char*>(&probe);
    return Field{static_cast<uint16_t>(off), static_cast<uint16_t>(sizeof(T)), kind};
}

// @fields of a structure that sits at @base in the command's structure.
std::vector<Field> fields_at(size_t base, std::vector<Field> fields)
{
    for (Field& f : fields)
        f.off = static_cast<uint16_t>(f.off + base);
    return fields;
}

struct CmdInfo {
    const char* name;
    unsigned long nr;
    size_t size;
    std::vector<Field> fields;
    ErrSet ioctl_errs; // documented for the command
    bool uring;        // an io_uring command
};

const std::vector<CmdInfo>& cmds()
{
    static const std::vector<CmdInfo> table = [] {
        const ErrSet base = errs({EFAULT, EINVAL, ENOMEM});
        const ErrSet access = errs({EBADFD, EBADF, EHOSTDOWN, EKEYREVOKED, EACCES, EOVERFLOW, ERANGE, EINVAL});
        const ErrSet data = errs({ENOTCONN, ECONNRESET, EIO, ETIMEDOUT});
        std::vector<CmdInfo> t(C_COUNT);
        using I = lite_info;
        t[C_GET_INFO] = {"GET_INFO",
                         LITE_IOC_GET_INFO,
                         sizeof(I),
                         {fld(&I::abi_version, K_OUT), fld(&I::n_instances, K_OUT), fld(&I::instances_ptr, K_PTR),
                          fld(&I::instances_cap, K_CAP), fld(&I::reserved, K_RSV)},
                         base,
                         false};
        using U = lite_node_up;
        t[C_NODE_UP] = {"NODE_UP",
                        LITE_IOC_NODE_UP,
                        sizeof(U),
                        {fld(&U::dev_name, K_NAME), fld(&U::port_num, K_VAL), fld(&U::flags, K_FLAGS),
                         fld(&U::listen, K_BYTES), fld(&U::join, K_BYTES), fld(&U::secret_ptr, K_PTR),
                         fld(&U::secret_len, K_CAP), fld(&U::timeout_ms, K_TMO), fld(&U::instance, K_OUT),
                         fld(&U::node_id, K_OUT), fld(&U::cq_mode, K_VAL), fld(&U::reserved, K_RSV)},
                        errs({EPERM}),
                        false};
        using D = lite_node_down;
        t[C_NODE_DOWN] = {"NODE_DOWN",   LITE_IOC_NODE_DOWN,
                          sizeof(D),     {fld(&D::instance, K_INST), fld(&D::flags, K_FLAGS), fld(&D::reserved, K_RSV)},
                          errs({EPERM}), false};
        using St = lite_node_status;
        t[C_NODE_STATUS] = {"NODE_STATUS",
                            LITE_IOC_NODE_STATUS,
                            sizeof(St),
                            {fld(&St::instance, K_INST), fld(&St::members_cap, K_CAP), fld(&St::members_ptr, K_PTR),
                             fld(&St::node_id, K_OUT), fld(&St::n_members, K_OUT), fld(&St::dev_name, K_OUT),
                             fld(&St::cq_mode, K_OUT), fld(&St::counters, K_OUT), fld(&St::async_inflight, K_OUT),
                             fld(&St::reconnects, K_OUT), fld(&St::flags, K_OUT), fld(&St::dsm, K_OUT)},
                            base | errs({ENOENT}),
                            false};
        using P = lite_ping;
        t[C_PING] = {"PING",
                     LITE_IOC_PING,
                     sizeof(P),
                     {fld(&P::instance, K_INST), fld(&P::node_id, K_NODE), fld(&P::timeout_ms, K_TMO),
                      fld(&P::flags, K_FLAGS), fld(&P::rtt_ns, K_OUT), fld(&P::reserved, K_RSV)},
                     base | errs({ENOENT, ENOTCONN, ETIMEDOUT, ECONNRESET}),
                     false};
        using A = lite_attach;
        t[C_ATTACH] = {
            "ATTACH",
            LITE_IOC_ATTACH,
            sizeof(A),
            {fld(&A::instance, K_INST), fld(&A::node_id, K_OUT), fld(&A::flags, K_FLAGS), fld(&A::reserved, K_RSV)},
            base | errs({ENOENT, EBUSY}),
            false};
        using Al = lite_lmr_alloc;
        t[C_ALLOC] = {
            "LMR_ALLOC",
            LITE_IOC_LMR_ALLOC,
            sizeof(Al),
            {fld(&Al::size, K_SIZE), fld(&Al::node_id, K_NODE), fld(&Al::flags, K_FLAGS), fld(&Al::handle, K_OUT),
             fld(&Al::reserved, K_RSV)},
            base | errs({EBADFD, E2BIG, EDQUOT, EHOSTUNREACH, ENOTCONN, ESHUTDOWN, ECONNRESET, ETIMEDOUT, EINTR}),
            false};
        using F = lite_lmr_free;
        t[C_FREE] = {"LMR_FREE",
                     LITE_IOC_LMR_FREE,
                     sizeof(F),
                     {fld(&F::handle, K_HANDLE), fld(&F::flags, K_FLAGS), fld(&F::reserved, K_RSV)},
                     base | errs({EBADFD, EBADF}),
                     false};
        using R = lite_rw;
        const std::vector<Field> rw = {fld(&R::handle, K_HANDLE), fld(&R::offset, K_OFF),  fld(&R::len, K_LEN),
                                       fld(&R::buf, K_PTR),       fld(&R::flags, K_FLAGS), fld(&R::reserved, K_RSV)};
        t[C_READ] = {"READ", LITE_IOC_READ, sizeof(R), rw, base | access | data | errs({EINTR}), true};
        t[C_WRITE] = {"WRITE", LITE_IOC_WRITE, sizeof(R), rw, base | access | data | errs({EINTR}), true};
        using At = lite_atomic;
        const std::vector<Field> at = {fld(&At::handle, K_HANDLE), fld(&At::offset, K_OFF), fld(&At::operand, K_VAL),
                                       fld(&At::swap, K_VAL),      fld(&At::result, K_OUT), fld(&At::flags, K_FLAGS),
                                       fld(&At::reserved, K_RSV)};
        t[C_FETCH_ADD] = {"FETCH_ADD", LITE_IOC_FETCH_ADD, sizeof(At), at, base | access | data, true};
        t[C_CMP_SWAP] = {"CMP_SWAP", LITE_IOC_CMP_SWAP, sizeof(At), at, base | access | data, true};
        using Ms = lite_memset;
        t[C_MEMSET] = {"MEMSET",
                       LITE_IOC_MEMSET,
                       sizeof(Ms),
                       {fld(&Ms::handle, K_HANDLE), fld(&Ms::offset, K_OFF), fld(&Ms::len, K_LEN),
                        fld(&Ms::value, K_VAL), fld(&Ms::flags, K_FLAGS), fld(&Ms::reserved, K_RSV)},
                       base | access | data | errs({EINTR}),
                       false};
        using Mc = lite_memcpy;
        t[C_MEMCPY] = {"MEMCPY",
                       LITE_IOC_MEMCPY,
                       sizeof(Mc),
                       {fld(&Mc::dst_handle, K_HANDLE), fld(&Mc::dst_offset, K_OFF), fld(&Mc::src_handle, K_HANDLE),
                        fld(&Mc::src_offset, K_OFF), fld(&Mc::len, K_LEN), fld(&Mc::flags, K_FLAGS),
                        fld(&Mc::reserved, K_RSV)},
                       base | access | data | errs({EINTR}),
                       false};
        using Sh = lite_share;
        t[C_SHARE] = {"SHARE",
                      LITE_IOC_SHARE,
                      sizeof(Sh),
                      {fld(&Sh::handle, K_HANDLE), fld(&Sh::name, K_NAME), fld(&Sh::perms, K_PERMS),
                       fld(&Sh::flags, K_FLAGS), fld(&Sh::reserved, K_RSV)},
                      base | errs({EBADFD, EBADF, EPERM, EEXIST}),
                      false};
        using Mp = lite_map;
        t[C_MAP] = {"MAP",
                    LITE_IOC_MAP,
                    sizeof(Mp),
                    {fld(&Mp::name, K_NAME), fld(&Mp::perms, K_PERMS), fld(&Mp::flags, K_FLAGS),
                     fld(&Mp::handle, K_OUT), fld(&Mp::size, K_OUT), fld(&Mp::node_id, K_OUT),
                     fld(&Mp::reserved, K_RSV)},
                    base | data | errs({EBADFD, ENOENT, EACCES, EKEYREVOKED, EHOSTUNREACH, EMEDIUMTYPE}),
                    false};
        using Rv = lite_revoke;
        t[C_REVOKE] = {"REVOKE",
                       LITE_IOC_REVOKE,
                       sizeof(Rv),
                       {fld(&Rv::name, K_NAME), fld(&Rv::flags, K_FLAGS), fld(&Rv::reserved, K_RSV)},
                       base | errs({EBADFD, ENOENT}),
                       false};
        using Rp = lite_rpc_port;
        const std::vector<Field> port = {fld(&Rp::port, K_PORT), fld(&Rp::flags, K_FLAGS), fld(&Rp::reserved, K_RSV)};
        t[C_RPC_REGISTER] = {"RPC_REGISTER", LITE_IOC_RPC_REGISTER, sizeof(Rp), port, base | errs({EBADFD, EADDRINUSE}),
                             false};
        t[C_RPC_UNREGISTER] = {
            "RPC_UNREGISTER", LITE_IOC_RPC_UNREGISTER, sizeof(Rp), port, base | errs({EBADFD, ENOENT}), false};
        using Rc = lite_rpc_call;
        t[C_RPC_CALL] = {"RPC_CALL",
                         LITE_IOC_RPC_CALL,
                         sizeof(Rc),
                         {fld(&Rc::node_id, K_NODE), fld(&Rc::port, K_PORT), fld(&Rc::req_ptr, K_PTR),
                          fld(&Rc::req_len, K_LEN), fld(&Rc::reply_ptr, K_PTR), fld(&Rc::reply_cap, K_LEN),
                          fld(&Rc::reply_len, K_OUT), fld(&Rc::timeout_ms, K_TMO), fld(&Rc::flags, K_FLAGS),
                          fld(&Rc::reserved, K_RSV)},
                         base | errs({EBADFD, EMSGSIZE, ENOENT, ENOTCONN, ETIMEDOUT, ECONNRESET, EREMOTEIO, EINTR}),
                         true};
        using Rr = lite_rpc_recv;
        t[C_RPC_RECV] = {"RPC_RECV",
                         LITE_IOC_RPC_RECV,
                         sizeof(Rr),
                         {fld(&Rr::port, K_PORT), fld(&Rr::timeout_ms, K_TMO), fld(&Rr::buf_ptr, K_PTR),
                          fld(&Rr::buf_cap, K_LEN), fld(&Rr::len, K_OUT), fld(&Rr::token, K_OUT),
                          fld(&Rr::src_node, K_OUT), fld(&Rr::flags, K_FLAGS), fld(&Rr::reserved, K_RSV)},
                         base | errs({EBADFD, ENOENT, EMSGSIZE, ETIMEDOUT, EINTR}),
                         true};
        using Ry = lite_rpc_reply;
        t[C_RPC_REPLY] = {"RPC_REPLY",
                          LITE_IOC_RPC_REPLY,
                          sizeof(Ry),
                          {fld(&Ry::token, K_TOKEN), fld(&Ry::buf_ptr, K_PTR), fld(&Ry::len, K_LEN),
                           fld(&Ry::flags, K_FLAGS), fld(&Ry::reserved, K_RSV)},
                          base | errs({EBADFD, ENOENT, EMSGSIZE, ECONNRESET}),
                          true};
        using Sd = lite_msg_send;
        t[C_MSG_SEND] = {"MSG_SEND",
                         LITE_IOC_MSG_SEND,
                         sizeof(Sd),
                         {fld(&Sd::node_id, K_NODE), fld(&Sd::port, K_PORT), fld(&Sd::buf_ptr, K_PTR),
                          fld(&Sd::len, K_LEN), fld(&Sd::timeout_ms, K_TMO), fld(&Sd::flags, K_FLAGS),
                          fld(&Sd::reserved, K_RSV)},
                         base | errs({EBADFD, EMSGSIZE, ENOTCONN, ETIMEDOUT}),
                         false};
        using L = lite_lock;
        const std::vector<Field> lk = {fld(&L::handle, K_HANDLE), fld(&L::offset, K_OFF), fld(&L::timeout_ms, K_TMO),
                                       fld(&L::flags, K_FLAGS), fld(&L::reserved, K_RSV)};
        t[C_LOCK] = {"LOCK",
                     LITE_IOC_LOCK,
                     sizeof(L),
                     lk,
                     base | errs({EBADFD, EBADF, EACCES, ERANGE, EAGAIN, EDEADLK, ETIMEDOUT, EKEYREVOKED, ENOTCONN,
                                  EINTR, EOVERFLOW, EHOSTDOWN, EOPNOTSUPP}),
                     false};
        t[C_UNLOCK] = {
            "UNLOCK", LITE_IOC_UNLOCK, sizeof(L), lk, base | errs({EBADFD, EBADF, EPERM, ENOTCONN, EKEYREVOKED}),
            false};
        using B = lite_barrier;
        t[C_BARRIER] = {"BARRIER",
                        LITE_IOC_BARRIER,
                        sizeof(B),
                        {fld(&B::handle, K_HANDLE), fld(&B::offset, K_OFF), fld(&B::count, K_COUNT),
                         fld(&B::timeout_ms, K_TMO), fld(&B::flags, K_FLAGS), fld(&B::reserved, K_RSV)},
                        base | errs({EBADFD, EBADF, EACCES, ERANGE, ETIMEDOUT, EKEYREVOKED, ENOTCONN, EINTR, EOVERFLOW,
                                     EHOSTDOWN, EOPNOTSUPP}),
                        false};
        using Do = lite_dsm_open;
        t[C_DSM_OPEN] = {
            "DSM_OPEN",
            LITE_IOC_DSM_OPEN,
            sizeof(Do),
            {fld(&Do::name, K_NAME), fld(&Do::size, K_DSIZE), fld(&Do::flags, K_FLAGS), fld(&Do::fd, K_OUT),
             fld(&Do::home, K_OUT), fld(&Do::reserved0, K_RSV), fld(&Do::reserved, K_RSV)},
            base | errs({EBADFD, ENOENT, EEXIST, EMEDIUMTYPE, EHOSTUNREACH, EMFILE, ETIMEDOUT, ECONNRESET}),
            false};
        using Dd = lite_dsm_destroy;
        // ENOTTY and EBADF: aimed at other files on purpose.
        t[C_DSM_DESTROY] = {"DSM_DESTROY",
                            LITE_IOC_DSM_DESTROY,
                            sizeof(Dd),
                            {fld(&Dd::flags, K_FLAGS), fld(&Dd::reserved, K_RSV)},
                            base | errs({EPERM, ENXIO, ENOTTY, EBADF}),
                            false};
        using Rrr = lite_rpc_reply_recv;
        std::vector<Field> rrr = fields_at(offsetof(Rrr, reply), t[C_RPC_REPLY].fields);
        for (const Field& f : fields_at(offsetof(Rrr, recv), t[C_RPC_RECV].fields))
            rrr.push_back(f);
        t[C_RPC_REPLY_RECV] = {"RPC_REPLY_RECV",
                               LITE_IOC_RPC_REPLY_RECV,
                               sizeof(Rrr),
                               rrr,
                               t[C_RPC_REPLY].ioctl_errs | t[C_RPC_RECV].ioctl_errs,
                               false};
        using Sf = lite_sendfile;
        t[C_SENDFILE] = {"SENDFILE",
                         LITE_IOC_SENDFILE,
                         sizeof(Sf),
                         {fld(&Sf::handle, K_HANDLE), fld(&Sf::lmr_offset, K_OFF), fld(&Sf::file_offset, K_OFF),
                          fld(&Sf::len, K_LEN), fld(&Sf::sent, K_OUT), fld(&Sf::fd, K_FD), fld(&Sf::flags, K_FLAGS),
                          fld(&Sf::reserved, K_RSV)},
                         base | access | data | errs({EINTR, ENODEV, EBADF}),
                         true};
        t[C_UNKNOWN] = {"UNKNOWN", 0, 64, {fld(&R::handle, K_HANDLE), fld(&R::buf, K_PTR)}, errs({ENOTTY}), false};
        // What mmap() of a region file may answer: EINVAL without MAP_SHARED
        // (and for what mmap() refuses anyway), ENXIO past the end; ENOMEM,
        // EOVERFLOW for huge ranges, EPERM for PROT_EXEC.
        t[C_DSM_MMAP] = {"DSM_MMAP", 0, 0, {}, errs({EINVAL, ENXIO, ENOMEM, EOVERFLOW, EPERM}), false};
        t[C_DSM_CLOSE] = {"DSM_CLOSE", 0, 0, {}, ErrSet{}, false};
        return t;
    }();
    return table;
}

// What io_uring itself may answer for a submission, besides the command.
const ErrSet& uring_errs()
{
    static const ErrSet s = errs({EINVAL, EBADF, EOPNOTSUPP, EFAULT, ECANCELED, EBUSY, EINTR, ENOTTY});
    return s;
}

// Whether a cmd_op is one of the io_uring commands (docs/uapi.md).
bool uring_nr(unsigned long nr)
{
    return nr == LITE_IOC_READ || nr == LITE_IOC_WRITE || nr == LITE_IOC_FETCH_ADD || nr == LITE_IOC_CMP_SWAP ||
           nr == LITE_IOC_RPC_CALL || nr == LITE_IOC_RPC_RECV || nr == LITE_IOC_RPC_REPLY || nr == LITE_IOC_SENDFILE;
}

bool is_control(int c)
{
    return c == C_NODE_UP || c == C_NODE_DOWN;
}

// Whether a command may change LMR contents.
bool modifies(int c)
{
    return c == C_WRITE || c == C_FETCH_ADD || c == C_CMP_SWAP || c == C_MEMSET || c == C_MEMCPY || c == C_SENDFILE ||
           c == C_LOCK || c == C_UNLOCK || c == C_BARRIER;
}

// ---------------------------------------------------------------------------
// State shared between the parent and the workers (MAP_SHARED memory).

struct Slot {
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> ioctls{0};
    std::atomic<uint64_t> urings{0};
    std::atomic<uint64_t> findings{0};
    std::atomic<uint64_t> notes{0};
    std::atomic<uint64_t> verified_bytes{0};
    std::atomic<uint64_t> payloads{0};
    std::atomic<uint64_t> dsm_calls{0}; // mmap(), munmap(), close() of region files
    std::atomic<uint64_t> dsm_maps{0};  // successful mmap()s
    std::atomic<uint64_t> dsm_loads{0};
    std::atomic<uint64_t> dsm_stores{0};
    std::atomic<uint64_t> dsm_sigbus{0};
    std::atomic<uint64_t> dsm_sigbus_dead{0}; // in a region this worker destroyed
    std::atomic<uint64_t> dsm_sigbus_odd{0};  // in a region of its own name it did not destroy
    std::atomic<uint64_t> dsm_verified{0};    // words that read what they must
    std::atomic<uint32_t> node_id{0};
    std::atomic<uint32_t> instance{0};
    std::atomic<uint32_t> share_seq{0};
    std::atomic<uint32_t> handle_pos{0};
    std::array<std::atomic<uint64_t>, 16> handles{};
    std::atomic<int64_t> busy_since_ms{0}; // start of the current call, 0 if none
    // The current call: command, io_uring or not, mutated, number, argument.
    int cur_cmd = 0;
    bool cur_uring = false;
    bool cur_mutated = false;
    unsigned long cur_nr = 0;
    uint64_t cur_argv = 0;
    size_t cur_size = 0;
    std::array<uint8_t, kArgMax> cur_arg{};
    std::array<char, 96> cur_label{}; // instead of a call: what else it is doing
    // [command][0 ioctl, 1 io_uring][errno, 0 = success]
    std::array<std::array<std::array<uint32_t, kErrMax>, 2>, C_COUNT> results{};
};

struct Shared {
    std::array<Slot, kMaxWorkers> slot{};
    std::array<uint32_t, kNodes> instances{};
    std::array<uint32_t, kNodes> node_ids{};
    std::atomic<int> printed{0};
    std::atomic<int> stop{0};
};

std::string hexdump(const uint8_t* p, size_t n);
std::string hex(uint64_t v);

// What a worker is doing (for the parent, when it is stuck or died).
std::string current(const Slot& s)
{
    if (s.cur_label[0] != 0)
        return {s.cur_label.data(), strnlen(s.cur_label.data(), s.cur_label.size())};
    return std::string(s.cur_uring ? "io_uring " : "ioctl ") + cmds()[static_cast<size_t>(s.cur_cmd)].name + " nr " +
           hex(s.cur_nr) + (s.cur_mutated ? " (mutated)" : " (valid)") + " arg at " + hex(s.cur_argv) + "\n" +
           hexdump(s.cur_arg.data(), std::min(s.cur_size, kArgMax));
}

// User pointers travel as numbers (__u64) and become pointers only here.
template <class T = uint8_t> T* ptr(uint64_t v)
{
    return reinterpret_cast<T*>(v); // NOLINT(performance-no-int-to-ptr)
}

int64_t now_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

void say(const std::string& s)
{
    std::string line = s;
    if (line.empty() || line.back() != '\n')
        line += '\n';
    size_t done = 0;
    while (done < line.size()) {
        ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
        if (n <= 0)
            break;
        done += static_cast<size_t>(n);
    }
}

std::string hexdump(const uint8_t* p, size_t n)
{
    std::string s;
    std::array<char, 32> b{};
    for (size_t i = 0; i < n; i++) {
        if (i % 16 == 0) {
            (void)std::snprintf(b.data(), b.size(), "%s%04zx:", i != 0 ? "\n    " : "    ", i);
            s += b.data();
        }
        (void)std::snprintf(b.data(), b.size(), " %02x", p[i]);
        s += b.data();
    }
    return s;
}

std::string hex(uint64_t v)
{
    std::array<char, 24> b{};
    (void)std::snprintf(b.data(), b.size(), "0x%" PRIx64, v);
    return b.data();
}

struct Options {
    uint64_t calls = 0;
    double seconds = 0;
    int workers = 4;
    uint64_t seed = 0;
    uint32_t quota_mb = 64;
    uint32_t wait_ms = 5;
    uint32_t hang_seconds = 120;
    uint16_t port_base = 18960;
    bool verbose = false;
    unsigned uring_permille = 240; // steps that are io_uring batches
};

void on_alarm(int /*sig*/) {}

// ---------------------------------------------------------------------------
// A worker.

struct Shadow {
    std::vector<uint8_t> data;
    std::vector<uint8_t> known;
    std::deque<std::string> hist;
    // Words that held a lock or a barrier: the memory node may still change
    // them after the call returned (a withdrawn waiter), so never known.
    std::set<uint64_t> volatile_words;

    explicit Shadow(uint64_t size) : data(size, 0), known(size, 1) {}
    void note(std::string s)
    {
        hist.push_back(std::move(s));
        if (hist.size() > 24)
            hist.pop_front();
    }
    // Clip [off, off + len) to the LMR.
    [[nodiscard]] bool clip(uint64_t off, uint64_t& len) const
    {
        if (off >= data.size())
            return false;
        len = std::min(len, data.size() - off);
        return len != 0;
    }
    void forget(uint64_t off, uint64_t len)
    {
        if (clip(off, len))
            std::fill_n(known.begin() + static_cast<ptrdiff_t>(off), len, 0);
    }
    void set(uint64_t off, const uint8_t* src, uint64_t len)
    {
        if (!clip(off, len))
            return;
        std::memcpy(data.data() + off, src, len);
        std::fill_n(known.begin() + static_cast<ptrdiff_t>(off), len, 1);
        unknow_volatile();
    }
    void fill(uint64_t off, uint64_t len, uint8_t v)
    {
        if (!clip(off, len))
            return;
        std::fill_n(data.begin() + static_cast<ptrdiff_t>(off), len, v);
        std::fill_n(known.begin() + static_cast<ptrdiff_t>(off), len, 1);
        unknow_volatile();
    }
    // Whether [off, off + n) lies inside (offsets come from mutated calls:
    // off + n may wrap).
    [[nodiscard]] bool inside(uint64_t off, uint64_t n) const { return off <= data.size() && data.size() - off >= n; }
    void make_volatile(uint64_t off)
    {
        if (!inside(off, 8))
            return;
        volatile_words.insert(off);
        forget(off, 8);
    }
    void unknow_volatile()
    {
        for (uint64_t w : volatile_words)
            std::fill_n(known.begin() + static_cast<ptrdiff_t>(w), 8, 0);
    }
    [[nodiscard]] bool word_known(uint64_t off) const
    {
        if (!inside(off, 8))
            return false;
        return std::all_of(known.begin() + static_cast<ptrdiff_t>(off), known.begin() + static_cast<ptrdiff_t>(off + 8),
                           [](uint8_t k) { return k != 0; });
    }
    [[nodiscard]] uint64_t word(uint64_t off) const
    {
        uint64_t v = 0;
        std::memcpy(&v, data.data() + off, 8);
        return v;
    }
    void set_word(uint64_t off, uint64_t v)
    {
        std::array<uint8_t, 8> b{};
        std::memcpy(b.data(), &v, 8);
        set(off, b.data(), 8);
    }
};

struct Lmr {
    uint64_t handle = 0;
    uint64_t size = 0;
    uint32_t node = 0;
    uint32_t perms = 0;
    bool owner = false;
    bool nic = false;               // allocated with LITE_LMR_NIC_ATOMIC (owner)
    std::vector<std::string> names; // published (owner)
    std::unique_ptr<Shadow> shadow; // private LMRs up to kTrackMax
};

// A DSM region file this worker holds.
struct Region {
    int fd = -1;
    std::string name;
    uint64_t size = 0;
    uint32_t home = 0;
    uint64_t ino = 0;  // one inode per region and node: the same region object
    int creator = -1;  // 1: this file created the region; 0: it did not; -1: unknown
    bool dead = false; // this worker destroyed the region
    bool priv = false; // a name no other worker uses
    bool gone = false; // priv: this worker destroyed the region of this name (on any node)
};

// What a worker stored in a region of its own name: the region read as
// zeros when it was created, and only this worker writes it. Dropped when
// the region may hold anything else.
struct DsmShadow {
    uint64_t ino = 0;
    std::unordered_map<uint64_t, uint64_t> words; // by offset in the region
};

// SIGBUS is how the kernel refuses a DSM access it cannot serve (the region
// was destroyed, its page is lost): a load or store of a mapping runs with
// a jump buffer armed, and the handler jumps back. Any other SIGBUS (and any
// SIGSEGV) still kills the worker.
thread_local sigjmp_buf t_bus_env; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
thread_local volatile sig_atomic_t t_bus_armed = 0;

void on_sigbus(int sig)
{
    if (t_bus_armed != 0) {
        t_bus_armed = 0;
        siglongjmp(t_bus_env, 1); // NOLINT(cert-err52-cpp)
    }
    signal(sig, SIG_DFL); // NOLINT(cert-err33-c)
    raise(sig);           // NOLINT(cert-err33-c)
}

// One 8-byte load (into *@val) or store (of *@val) at @p. Return: false if
// it raised SIGBUS.
bool guarded_access(volatile uint64_t* p, bool store, uint64_t* val)
{
    if (sigsetjmp(t_bus_env, 1) != 0) // NOLINT(cert-err52-cpp)
        return false;
    t_bus_armed = 1;
    if (store) {
        *p = *val;
    } else {
        *val = *p;
    }
    t_bus_armed = 0;
    return true;
}

struct HeldLock {
    uint64_t handle;
    uint64_t offset;
    bool clean; // nothing wrote to the LMR since it was taken
};

// One call's argument and how it was made.
struct Call {
    int cmd = C_UNKNOWN;
    unsigned long nr = 0;
    size_t size = 0;
    bool mutated = false;
    std::string how; // the mutations
    alignas(8) std::array<uint8_t, kArgMax> arg{};
    uint8_t* argp = nullptr; // where the argument and the outputs are (nullptr: out of reach)
    uint64_t argv = 0;       // the pointer passed
    bool arg_seen = true;    // the kernel could read the argument, and it is arg
    bool arg_other = false;  // the kernel read something else (mutated pointer)
    int fd = -1;
    bool side_fd = false;   // the second, unattached file
    bool region_fd = false; // a DSM region file of this worker
    int expect = 0;         // an errno a valid sequence must get (0: none)
    int must = -1;          // the only result a valid ioctl may have (0: success; -1: none)
    const char* expect_why = "";

    template <class S> [[nodiscard]] S get() const
    {
        S s{};
        std::memcpy(&s, arg.data(), sizeof(S));
        return s;
    }
    template <class S> void put(const S& s)
    {
        static_assert(sizeof(S) <= kArgMax);
        arg.fill(0);
        std::memcpy(arg.data(), &s, sizeof(S));
        size = sizeof(S);
    }
};

struct Ring {
    io_uring r{};
    bool live = false;
    bool sqe128 = false;
    bool cqe32 = false;
    bool polled = false; // IORING_SETUP_IOPOLL: lite refuses RPC commands
    unsigned flags = 0;
};

// An io_uring submission of one batch.
struct UOp {
    Call c;
    uint8_t sqe_flags = 0;
    bool sqe_mutated = false;
    bool sqe_fixed = false; // IORING_URING_CMD_FIXED set by the mutation
    bool self_call = false; // an RPC call this worker serves itself
    uint64_t self_seq = 0;
    int res = 0;
    uint64_t big = 0;
    bool done = false;
    std::array<uint8_t, 128> sqe{}; // as submitted
};

// A command of an earlier io_uring batch.
struct PastOp {
    int cmd = 0;
    unsigned long nr = 0;
    int fd = -1;
    uint8_t sqe_flags = 0;
    bool mutated = false;
    int res = 0;
    unsigned ring_flags = 0;
    std::array<uint8_t, 80> arg{};
};

class Worker
{
public:
    Worker(int index, const Options& opt, Shared* sh, uint64_t quota)
        : idx_(index), opt_(opt), sh_(sh), slot_(sh->slot[static_cast<size_t>(index)]),
          rng_(mix64(opt.seed) ^ mix64(static_cast<uint64_t>(index) + 1)), quota_bytes_(quota)
    {
    }

    int run(uint64_t calls, Clock::time_point deadline);

private:
    // --- setup
    bool setup();
    void open_main();
    void close_main();
    void open_side();
    bool open_sendfile_files();
    void make_rings();
    void close_rings();
    void reopen();

    // --- buffers
    uint8_t* arena(uint64_t off) { return arena_ + off; }
    [[nodiscard]] uint64_t addr(const uint8_t* p) const { return reinterpret_cast<uintptr_t>(p); }
    uint8_t* valid_buf(uint64_t len);
    [[nodiscard]] bool in_scratch(uint64_t p, uint64_t len) const;
    [[nodiscard]] bool readable(uint64_t p, uint64_t len) const;
    uint64_t bad_ptr(uint64_t valid, uint64_t len);

    // --- pool
    Lmr* live(uint64_t h);
    Lmr* pick_lmr(uint32_t perm, bool tracked_first = false);
    Lmr* pick_owned();
    uint64_t stale_handle();
    uint64_t foreign_handle();
    void publish_handle(uint64_t h);
    void drop_lmr(uint64_t h, bool freed = true);
    std::string share_name(uint32_t worker, uint32_t seq) const;
    std::string other_name();
    uint32_t own_port(uint32_t k) const { return kRpcPortBase + static_cast<uint32_t>(idx_) * kPortsPerWorker + k; }
    std::pair<uint32_t, uint32_t> other_port(); // node, port
    uint32_t wait_ms() { return static_cast<uint32_t>(rng_.range(1, opt_.wait_ms)); }
    std::pair<uint64_t, uint64_t> pick_range(uint64_t size, uint64_t max_len);

    // --- building calls
    int pick_cmd();
    void build(Call& c, int cmd, bool for_uring);
    void build_rw(Call& c, bool write, bool for_uring);
    void mutate(Call& c, bool for_uring);
    void mutate_field(Call& c, const Field& f);
    void remap_pointers(Call& c);
    void sanitize(Call& c);
    uint64_t read_field(const Call& c, const Field& f) const;
    void write_field(Call& c, const Field& f, uint64_t v);

    // --- issuing and checking
    void step();
    long do_ioctl(Call& c);
    void ioctl_step();
    void check(const Call& c, bool uring, long res);
    void apply(const Call& c, int err, const uint8_t* out, bool uring, bool exact);
    void after_read(const Call& c, const uint8_t* buf, bool exact);
    void finding(const Call& c, bool uring, const std::string& what);
    void note(const Call& c, bool uring, int err);
    void busy(const Call& c, bool uring);
    void idle()
    {
        if (!in_batch_)
            slot_.busy_since_ms.store(0);
    }
    // Busy with something that is no call (it may block in the kernel too).
    void busy_label(const char* what)
    {
        if (in_batch_)
            return;
        const size_t n = std::min(std::strlen(what), slot_.cur_label.size() - 1);
        std::memcpy(slot_.cur_label.data(), what, n);
        slot_.cur_label[n] = 0;
        slot_.busy_since_ms.store(now_ms());
    }
    void report_hang(const std::vector<UOp>& ops, const Ring& ring, int64_t since_ms);
    void remember_batch(const std::vector<UOp>& ops, const Ring& ring);
    void stray_cqe(const io_uring_cqe& cqe, const std::vector<UOp>& ops);
    void count(bool uring, int n = 1);
    void serve(int rounds, uint32_t max_wait_ms = 3);
    void checked_rw();
    void msg_roundtrip();
    void self_call();
    bool uring_batch(bool abandon, bool self_calls);
    void prep_sqe(Ring& ring, io_uring_sqe* sqe, UOp& op, uint64_t user_data);
    void trim_pool();

    // --- DSM regions
    static std::string dsm_pool_name(size_t k) { return "dz" + std::to_string(k); }
    std::string dsm_priv_name(size_t k) const { return "dp" + std::to_string(idx_) + "." + std::to_string(k); }
    std::string lmr_name();
    Region* region_of(int fd);
    const Region* live_creator(const std::string& name) const;
    void build_dsm_open(Call& c);
    void build_dsm_destroy(Call& c);
    void dsm_apply(const Call& c, int err, const uint8_t* out);
    void adopt_region(const Call& c, const uint8_t* out);
    void close_region(size_t i);
    void dsm_issue(Call& c);
    void dsm_mmap_step();
    void dsm_touch(const Region& g, uint8_t* base, uint64_t pages, uint64_t first, int prot);
    void dsm_kernel_access(const Region& g, uint8_t* base, uint64_t pages, int prot);
    void dsm_close_step();
    void count_dsm(int cmd, int err);
    void dsm_finding(const std::string& what);

    int idx_;
    const Options& opt_;
    Shared* sh_;
    Slot& slot_;
    Rng rng_;
    uint64_t quota_bytes_;

    int fd_ = -1;
    int side_fd_ = -1;
    // SENDFILE's files: a regular one whose bytes are sf_data_ (unlinked),
    // the same open write-only, and a directory.
    int sf_fd_ = -1;
    int sf_wo_fd_ = -1;
    int sf_dir_fd_ = -1;
    std::vector<uint8_t> sf_data_;
    bool side_attached_ = false;
    uint32_t side_node_ = 0; // the node the second file attached to (0: none or unknown)
    uint32_t instance_ = 0;
    uint32_t node_ = 0;
    uint8_t* arena_ = nullptr;
    uint8_t* argpage_ = nullptr;      // one page, then PROT_NONE
    uint8_t* ro_arg_ = nullptr;       // one read-only page
    uint8_t* ro_buf_ = nullptr;       // kRoSize read-only zeros
    uint64_t unmapped_ = 0;           // a PROT_NONE page, never unmapped
    uint8_t* abandon_zone_ = nullptr; // current abandoned batch's buffers
    uint64_t bump_ = 0;
    Ring main_;
    Ring alt_;   // no CQE32
    Ring small_; // 64-byte SQEs
    int abandons_ = 0;
    int hidden_ = 0; // LMRs and mappings whose handle the kernel could not return

    std::vector<Lmr> lmrs_;
    std::vector<uint64_t> stale_;
    std::unordered_set<uint64_t> issued_; // every handle of this file so far
    std::vector<uint32_t> ports_;
    std::vector<uint64_t> tokens_;
    std::vector<uint64_t> used_tokens_;
    std::unordered_map<uint64_t, std::string> token_hist_; // what happened to each token
    std::vector<HeldLock> locks_;
    uint32_t share_seq_ = 0;
    uint64_t seq_ = 0;
    uint64_t done_ = 0;
    uint64_t budget_ = 0;
    std::set<std::pair<int, int>> noted_;
    bool poisoned_ = false;  // a call hung: stop
    bool in_batch_ = false;  // an io_uring batch is in flight (it owns busy_since_ms)
    uint64_t batch_seq_ = 0; // user_data = batch_seq_ << 8 | index in the batch
    std::deque<std::pair<uint64_t, std::vector<PastOp>>> recent_batches_; // what they were
    std::vector<Region> regions_;                                         // oldest first
    std::unordered_map<std::string, DsmShadow> dsm_shadow_;               // by name
    uint64_t dsm_seq_ = 0;
    bool dsm_hidden_said_ = false;
};

// --- setup -------------------------------------------------------------------

uint8_t* map_or_die(size_t len, int prot)
{
    void* p = mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        say("lite-fuzz-ioctl: mmap: " + std::string(std::strerror(errno)));
        _exit(2);
    }
    return static_cast<uint8_t*>(p);
}

// SENDFILE's files: a regular file of a few hundred KiB of random bytes
// (remembered in sf_data_ to check what lands), opened for reading and
// write-only, then unlinked; and /tmp, a directory.
bool Worker::open_sendfile_files()
{
    const std::string path = "/tmp/lite-fuzz-sf." + std::to_string(getpid()) + "." + std::to_string(idx_);
    sf_data_.resize(rng_.range(1, 300 * kKiB));
    for (auto& b : sf_data_)
        b = static_cast<uint8_t>(rng_.next());
    const int w = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (w < 0)
        return false;
    const bool wrote = write(w, sf_data_.data(), sf_data_.size()) == static_cast<ssize_t>(sf_data_.size());
    sf_wo_fd_ = w;
    sf_fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    unlink(path.c_str());
    sf_dir_fd_ = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return wrote && sf_fd_ >= 0 && sf_dir_fd_ >= 0;
}

bool Worker::setup()
{
    // The arena, aligned to its size inside a PROT_NONE reservation so that
    // a flipped pointer bit stays inside it, with guard pages around.
    uint8_t* res = map_or_die(3 * kArenaSize, PROT_NONE);
    uint64_t start = (addr(res) + kArenaSize) & ~(kArenaSize - 1);
    arena_ = ptr(start);
    if (mprotect(arena_, kArenaSize, PROT_READ | PROT_WRITE) != 0)
        return false;
    argpage_ = map_or_die(2 * kPage, PROT_READ | PROT_WRITE);
    if (mprotect(argpage_ + kPage, kPage, PROT_NONE) != 0)
        return false;
    ro_arg_ = map_or_die(kPage, PROT_READ);
    ro_buf_ = map_or_die(kRoSize, PROT_READ);
    // An address nothing is mapped at, for good: a page that was unmapped
    // would come back as a later mapping (an io_uring ring, say) and a
    // mutated call would write into it.
    unmapped_ = addr(map_or_die(kPage, PROT_NONE));

    instance_ = sh_->instances[static_cast<size_t>(idx_ % kNodes)];
    node_ = sh_->node_ids[static_cast<size_t>(idx_ % kNodes)];
    open_main();
    if (fd_ < 0)
        return false;
    open_side();
    make_rings();
    if (!open_sendfile_files())
        return false;
    struct sigaction sa {
    };
    sa.sa_handler = on_alarm; // no SA_RESTART: waits see EINTR
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
    struct sigaction bus {
    };
    bus.sa_handler = on_sigbus;
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, nullptr);
    return true;
}

void Worker::open_main()
{
    busy_label("open(/dev/lite) and ATTACH");
    fd_ = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    idle();
    if (fd_ < 0) {
        say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": open " + LITE_DEVICE_PATH + ": " +
            std::strerror(errno));
        return;
    }
    lite_attach at{};
    at.instance = instance_;
    if (ioctl(fd_, LITE_IOC_ATTACH, &at) != 0) {
        say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": attach: " + std::strerror(errno));
        ::close(fd_);
        fd_ = -1;
        return;
    }
    slot_.node_id.store(at.node_id);
    slot_.instance.store(instance_);
    lmrs_.clear();
    issued_.clear();
    ports_.clear();
    tokens_.clear();
    used_tokens_.clear();
    token_hist_.clear();
    locks_.clear();
    hidden_ = 0;
}

void Worker::open_side()
{
    if (side_fd_ >= 0) {
        busy_label("close() of the second file (unattached, or attached by a call)");
        ::close(side_fd_);
        idle();
    }
    side_fd_ = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    side_attached_ = false;
    side_node_ = 0;
}

void Worker::make_rings()
{
    close_rings();
    auto init = [&](Ring& ring, unsigned flags) {
        io_uring_params p{};
        p.flags = flags | IORING_SETUP_SUBMIT_ALL;
        int r = io_uring_queue_init_params(32, &ring.r, &p);
        ring.live = r == 0;
        ring.flags = p.flags;
        ring.sqe128 = (flags & IORING_SETUP_SQE128) != 0;
        ring.cqe32 = (flags & IORING_SETUP_CQE32) != 0;
        ring.polled = (flags & IORING_SETUP_IOPOLL) != 0;
        if (!ring.live) {
            say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": io_uring_queue_init: " + ename(-r));
            return;
        }
        std::array<unsigned, 2> max_workers{4, 4};
        io_uring_register_iowq_max_workers(&ring.r, max_workers.data());
    };
    unsigned extra = 0;
    switch (rng_.below(5)) {
    case 1:
        extra = IORING_SETUP_COOP_TASKRUN;
        break;
    case 2:
        extra = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
        break;
    case 3:
        // Completions polled for (uring_cmd_iopoll), sometimes deferred.
        extra = IORING_SETUP_IOPOLL | (rng_.one_in(2) ? IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN : 0U);
        break;
    default:
        break;
    }
    init(main_, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | extra);
    init(alt_, IORING_SETUP_SQE128);
    init(small_, 0);
}

void Worker::close_rings()
{
    busy_label("io_uring_queue_exit() of the rings");
    for (Ring* ring : {&main_, &alt_, &small_}) {
        if (ring->live)
            io_uring_queue_exit(&ring->r);
        ring->live = false;
    }
    idle();
}

// Close the file with everything it holds (the kernel frees the LMRs,
// withdraws the names, unregisters the ports, fails the calls taken) and
// start again on a new one.
void Worker::reopen()
{
    close_rings();
    for (auto& l : lmrs_)
        stale_.push_back(l.handle);
    busy_label("close(/dev/lite) to start on a new file");
    ::close(fd_);
    idle();
    open_main();
    if (fd_ < 0) {
        poisoned_ = true;
        return;
    }
    make_rings();
}

// --- buffers -------------------------------------------------------------------

// A buffer for a valid call: disjoint from the others of this step.
uint8_t* Worker::valid_buf(uint64_t len)
{
    uint64_t at = (bump_ + 63) & ~uint64_t{63};
    if (rng_.one_in(4))
        at += rng_.below(8); // misaligned buffers are valid too
    if (at + len > kValidSize) {
        at = 0; // a new step: the caller keeps lengths small enough
        bump_ = 0;
    }
    bump_ = at + len;
    return arena(kValidOff + at);
}

bool Worker::in_scratch(uint64_t p, uint64_t len) const
{
    const uint64_t s = addr(arena_) + kScratchOff;
    return p >= s && p - s <= kScratchSize && len <= kScratchSize - (p - s);
}

bool Worker::readable(uint64_t p, uint64_t len) const
{
    auto inside = [&](const uint8_t* base, uint64_t size) {
        const uint64_t b = addr(base);
        return p >= b && p - b <= size && len <= size - (p - b);
    };
    return inside(arena_, kArenaSize) || inside(ro_buf_, kRoSize) ||
           (abandon_zone_ != nullptr && inside(abandon_zone_, kAbandonSize));
}

// A pointer for a mutated call: bad, or somewhere in the scratch part.
uint64_t Worker::bad_ptr(uint64_t valid, uint64_t len)
{
    const uint64_t scratch = addr(arena_) + kScratchOff;
    const uint64_t zone = abandon_zone_ != nullptr ? addr(abandon_zone_) : scratch;
    const uint64_t zone_size = abandon_zone_ != nullptr ? kAbandonSize : kScratchSize;
    const uint64_t rel = valid - addr(arena_) - kValidOff;
    switch (rng_.below(13)) {
    case 0:
        return 0;
    case 1:
        return rng_.pick<uint64_t>({1, 8, 4095, 4096, 0xfff0}); // below mmap_min_addr
    case 2:
        return rng_.pick<uint64_t>(
                   {0xffff888000000000ULL, 0xffffffff81000000ULL, 0xffffc90000000000ULL, 0xffffea0000000000ULL}) +
               rng_.below(kMiB);
    case 3:
        return rng_.pick<uint64_t>({0x0000800000000000ULL, 0x8000000000000000ULL, 0x00007ffffffff000ULL});
    case 4:
        return ~uint64_t{0} - rng_.below(kPage);
    case 5:
        return unmapped_ + rng_.below(kPage);
    case 6: // ending just inside the zone: the rest is a guard page
        return zone + zone_size - std::min<uint64_t>(zone_size, rng_.range(1, std::max<uint64_t>(len, 2) - 1));
    case 7:
        return addr(arena_) - rng_.range(1, kPage); // the guard page before
    case 8:
        return addr(ro_buf_) + rng_.below(kRoSize);
    case 9:
        return zone + (rel % zone_size) + rng_.range(1, 7);
    case 10:
        return zone + ((rel ^ (uint64_t{1} << rng_.below(24))) % zone_size);
    default:
        return zone + rng_.below(zone_size);
    }
}

// --- pool ----------------------------------------------------------------------

Lmr* Worker::live(uint64_t h)
{
    for (auto& l : lmrs_) {
        if (l.handle == h)
            return &l;
    }
    return nullptr;
}

Lmr* Worker::pick_lmr(uint32_t perm, bool tracked_first)
{
    std::vector<Lmr*> c;
    for (auto& l : lmrs_) {
        if ((l.perms & perm) == perm && (!tracked_first || l.shadow))
            c.push_back(&l);
    }
    if (c.empty() && tracked_first)
        return pick_lmr(perm, false);
    return c.empty() ? nullptr : c[rng_.below(c.size())];
}

Lmr* Worker::pick_owned()
{
    std::vector<Lmr*> c;
    for (auto& l : lmrs_) {
        if (l.owner)
            c.push_back(&l);
    }
    return c.empty() ? nullptr : c[rng_.below(c.size())];
}

uint64_t Worker::stale_handle()
{
    if (stale_.empty())
        return rng_.range(1, 64);
    return stale_[rng_.below(stale_.size())];
}

uint64_t Worker::foreign_handle()
{
    const auto w = static_cast<size_t>(rng_.below(static_cast<uint64_t>(opt_.workers)));
    return sh_->slot[w].handles[rng_.below(16)].load();
}

void Worker::publish_handle(uint64_t h)
{
    uint32_t pos = slot_.handle_pos.fetch_add(1);
    slot_.handles[pos % 16].store(h);
}

// Forget an LMR; @freed: the kernel freed it (its handle is stale now).
void Worker::drop_lmr(uint64_t h, bool freed)
{
    for (auto it = lmrs_.begin(); it != lmrs_.end(); ++it) {
        if (it->handle == h) {
            lmrs_.erase(it);
            break;
        }
    }
    if (freed)
        stale_.push_back(h);
    if (stale_.size() > 64)
        stale_.erase(stale_.begin());
    std::erase_if(locks_, [&](const HeldLock& l) { return l.handle == h; });
}

std::string Worker::share_name(uint32_t worker, uint32_t seq) const
{
    return "fz" + std::to_string(worker) + "." + std::to_string(seq);
}

std::string Worker::other_name()
{
    const auto w = static_cast<uint32_t>(rng_.below(static_cast<uint64_t>(opt_.workers)));
    const uint32_t top = sh_->slot[w].share_seq.load();
    const uint32_t lo = top > 16 ? top - 16 : 0;
    return share_name(w, static_cast<uint32_t>(rng_.range(lo, top)));
}

std::pair<uint32_t, uint32_t> Worker::other_port()
{
    const auto w = static_cast<size_t>(rng_.below(static_cast<uint64_t>(opt_.workers)));
    const uint32_t node = sh_->slot[w].node_id.load();
    const uint32_t port =
        kRpcPortBase + static_cast<uint32_t>(w) * kPortsPerWorker + static_cast<uint32_t>(rng_.below(kPortsPerWorker));
    return {node, port};
}

// A range of an LMR of @size bytes: inside, at the edges, or empty at the end.
std::pair<uint64_t, uint64_t> Worker::pick_range(uint64_t size, uint64_t max_len)
{
    const uint64_t cap = std::min(size, max_len);
    switch (rng_.below(8)) {
    case 0:
        return {size, 0}; // the empty range at the end
    case 1:
        return {0, cap};
    case 2: {
        const uint64_t len = rng_.range(1, cap);
        return {size - len, len}; // up to the last byte
    }
    case 3:
        return {rng_.below(size), 0};
    default: {
        uint64_t len = rng_.range(1, std::min<uint64_t>(cap, rng_.one_in(3) ? cap : 4096));
        return {rng_.below(size - len + 1), len};
    }
    }
}

// --- building ------------------------------------------------------------------

int Worker::pick_cmd()
{
    static const std::array<std::pair<int, int>, C_COUNT> weights = {{
        {C_GET_INFO, 2},  {C_NODE_UP, 1},   {C_NODE_DOWN, 1},    {C_NODE_STATUS, 2},    {C_PING, 2},
        {C_ATTACH, 1},    {C_ALLOC, 9},     {C_FREE, 6},         {C_READ, 10},          {C_WRITE, 10},
        {C_FETCH_ADD, 4}, {C_CMP_SWAP, 4},  {C_MEMSET, 5},       {C_MEMCPY, 5},         {C_SHARE, 4},
        {C_MAP, 5},       {C_REVOKE, 3},    {C_RPC_REGISTER, 3}, {C_RPC_UNREGISTER, 2}, {C_RPC_CALL, 3},
        {C_RPC_RECV, 4},  {C_RPC_REPLY, 3}, {C_MSG_SEND, 4},     {C_LOCK, 4},           {C_UNLOCK, 4},
        {C_BARRIER, 3},   {C_DSM_OPEN, 5},  {C_DSM_DESTROY, 2},  {C_RPC_REPLY_RECV, 4}, {C_UNKNOWN, 2},
        {C_DSM_MMAP, 5},  {C_DSM_CLOSE, 2}, {C_SENDFILE, 4},
    }};
    int total = 0;
    for (const auto& w : weights)
        total += w.second;
    auto r = static_cast<int>(rng_.below(static_cast<uint64_t>(total)));
    for (const auto& w : weights) {
        if (r < w.second)
            return w.first;
        r -= w.second;
    }
    return C_GET_INFO;
}

void Worker::build_rw(Call& c, bool write, bool for_uring)
{
    lite_rw rw{};
    Lmr* l = pick_lmr(write ? LITE_PERM_WRITE : LITE_PERM_READ, rng_.percent(70));
    if (l == nullptr) {
        rw.handle = stale_handle();
        rw.len = rng_.range(1, 4096);
        c.expect = stale_.empty() ? 0 : EBADF;
        c.expect_why = "a freed handle";
    } else {
        rw.handle = l->handle;
        uint64_t max = rng_.one_in(8) ? kMiB : 64 * kKiB;
        if (for_uring && rng_.one_in(3))
            max = 64 * kKiB + 1; // just past the non-blocking path
        auto [off, len] = pick_range(l->size, max);
        rw.offset = off;
        rw.len = len;
    }
    uint8_t* buf = valid_buf(rw.len);
    if (write)
        fill_pattern(buf, rw.len, rng_.next());
    rw.buf = addr(buf);
    if (rng_.one_in(6))
        rw.flags = rng_.pick<uint32_t>({LITE_RW_COPY, LITE_RW_ZCOPY});
    if (for_uring && rng_.one_in(4))
        rw.flags |= LITE_RW_SPIN; // polled for at submission
    c.put(rw);
}

void Worker::build(Call& c, int cmd, bool for_uring)
{
    const CmdInfo& info = cmds()[static_cast<size_t>(cmd)];
    c.cmd = cmd;
    c.nr = info.nr;
    c.size = info.size;
    c.fd = fd_;
    c.expect = 0;
    c.must = -1;
    c.region_fd = false;
    switch (cmd) {
    case C_GET_INFO: {
        lite_info in{};
        in.instances_cap = static_cast<uint32_t>(rng_.below(5));
        if (in.instances_cap != 0)
            in.instances_ptr = addr(valid_buf(in.instances_cap * sizeof(uint32_t)));
        c.put(in);
        break;
    }
    case C_NODE_UP: {
        lite_node_up u{};
        std::string dev = lite_guest::env("LITE_RXE", "rxe0");
        dev.copy(u.dev_name, sizeof(u.dev_name) - 1);
        u.listen = lite_guest::endpoint(static_cast<uint16_t>(opt_.port_base + 10 + rng_.below(10))).addr;
        if (rng_.one_in(2)) {
            u.flags = LITE_UP_JOIN;
            u.join = lite_guest::endpoint(opt_.port_base).addr;
        }
        const auto& key = lite_guest::secret();
        uint8_t* s = valid_buf(key.size());
        std::memcpy(s, key.data(), key.size());
        u.secret_ptr = addr(s);
        u.secret_len = static_cast<uint32_t>(key.size());
        u.timeout_ms = wait_ms();
        c.put(u);
        c.expect = EPERM;
        c.expect_why = "control needs CAP_NET_ADMIN";
        break;
    }
    case C_NODE_DOWN: {
        lite_node_down d{};
        d.instance = sh_->instances[rng_.below(kNodes)];
        c.put(d);
        c.expect = EPERM;
        c.expect_why = "control needs CAP_NET_ADMIN";
        break;
    }
    case C_NODE_STATUS: {
        lite_node_status st{};
        st.instance = sh_->instances[rng_.below(kNodes)];
        st.members_cap = static_cast<uint32_t>(rng_.below(5));
        if (st.members_cap != 0)
            st.members_ptr = addr(valid_buf(st.members_cap * sizeof(lite_member_info)));
        c.put(st);
        break;
    }
    case C_PING: {
        lite_ping p{};
        p.instance = instance_;
        p.node_id = static_cast<uint32_t>(rng_.range(1, kNodes));
        p.timeout_ms = static_cast<uint32_t>(rng_.range(1, 300));
        c.put(p);
        break;
    }
    case C_ATTACH: {
        lite_attach at{};
        at.instance = sh_->instances[rng_.below(kNodes)];
        if (!side_attached_ && side_fd_ >= 0 && rng_.one_in(2)) {
            c.fd = side_fd_;
            c.side_fd = true;
        } else {
            c.expect = EBUSY;
            c.expect_why = "the file is attached already";
        }
        c.put(at);
        break;
    }
    case C_ALLOC: {
        if (std::count_if(lmrs_.begin(), lmrs_.end(), [](const Lmr& l) { return l.owner; }) >=
            static_cast<ptrdiff_t>(kMaxOwned)) {
            build(c, C_FREE, for_uring);
            return;
        }
        lite_lmr_alloc al{};
        switch (rng_.below(10)) {
        case 0:
        case 1:
        case 2:
            al.size = rng_.range(1, 4096);
            break;
        case 3:
        case 4:
        case 5:
            al.size = rng_.range(4097, 64 * kKiB);
            break;
        case 6:
            al.size = rng_.pick<uint64_t>({8, 4096, 64 * kKiB, 256 * kKiB, kMiB});
            break;
        case 7:
        case 8:
            al.size = rng_.range(64 * kKiB, kTrackMax);
            break;
        default:
            al.size = rng_.range(kTrackMax, kAllocMax);
            break;
        }
        al.node_id = rng_.one_in(3) ? 0 : static_cast<uint32_t>(rng_.range(1, kNodes));
        al.flags = rng_.one_in(4) ? LITE_LMR_NIC_ATOMIC : 0;
        c.put(al);
        break;
    }
    case C_FREE: {
        lite_lmr_free fr{};
        if (!lmrs_.empty() && !rng_.one_in(6)) {
            fr.handle = lmrs_[rng_.below(lmrs_.size())].handle;
        } else {
            fr.handle = stale_handle();
            if (!stale_.empty() && issued_.contains(fr.handle) && live(fr.handle) == nullptr) {
                c.expect = EBADF;
                c.expect_why = "the handle was freed already";
            }
        }
        c.put(fr);
        break;
    }
    case C_READ:
    case C_WRITE:
        build_rw(c, cmd == C_WRITE, for_uring);
        break;
    case C_FETCH_ADD:
    case C_CMP_SWAP: {
        lite_atomic at{};
        Lmr* l = pick_lmr(LITE_PERM_ATOMIC, rng_.percent(70));
        if (l == nullptr || l->size < 8) {
            at.handle = stale_handle();
        } else {
            at.handle = l->handle;
            at.offset = 8 * rng_.below(std::min<uint64_t>(l->size / 8, rng_.one_in(2) ? 4 : 1024));
            if (cmd == C_CMP_SWAP && l->shadow && l->shadow->word_known(at.offset) && rng_.one_in(2)) {
                at.operand = l->shadow->word(at.offset);
            } else {
                at.operand = rng_.one_in(2) ? rng_.below(16) : rng_.next();
            }
        }
        if (cmd == C_CMP_SWAP)
            at.swap = rng_.next();
        c.put(at);
        break;
    }
    case C_MEMSET: {
        lite_memset ms{};
        Lmr* l = pick_lmr(LITE_PERM_WRITE, rng_.percent(70));
        if (l == nullptr) {
            ms.handle = stale_handle();
            ms.len = 8;
        } else {
            ms.handle = l->handle;
            auto [off, len] = pick_range(l->size, rng_.one_in(4) ? kAllocMax : 64 * kKiB);
            ms.offset = off;
            ms.len = len;
        }
        ms.value = static_cast<uint32_t>(rng_.below(256));
        c.put(ms);
        break;
    }
    case C_MEMCPY: {
        lite_memcpy mc{};
        Lmr* d = pick_lmr(LITE_PERM_WRITE, rng_.percent(70));
        Lmr* s = rng_.one_in(3) ? d : pick_lmr(LITE_PERM_READ, rng_.percent(70));
        if (d == nullptr || s == nullptr) {
            mc.dst_handle = stale_handle();
            mc.src_handle = stale_handle();
            mc.len = 8;
        } else {
            mc.dst_handle = d->handle;
            mc.src_handle = s->handle;
            const uint64_t max = std::min(d->size, s->size);
            auto [off, len] = pick_range(max, rng_.one_in(4) ? kAllocMax : 64 * kKiB);
            mc.len = len;
            mc.dst_offset = rng_.one_in(3) ? off : rng_.below(d->size - len + 1);
            mc.src_offset = rng_.one_in(3) ? off : rng_.below(s->size - len + 1);
        }
        c.put(mc);
        break;
    }
    case C_SENDFILE: {
        lite_sendfile sf{};
        Lmr* l = pick_lmr(LITE_PERM_WRITE, rng_.percent(70));
        sf.fd = sf_fd_;
        if (l == nullptr) {
            sf.handle = stale_handle();
            sf.len = 8;
        } else {
            sf.handle = l->handle;
            auto [off, len] = pick_range(l->size, rng_.one_in(4) ? kAllocMax : 64 * kKiB);
            sf.lmr_offset = off;
            sf.len = len;
            sf.file_offset = rng_.one_in(4) ? 0 : rng_.below(sf_data_.size() + 4096);
        }
        c.put(sf);
        break;
    }
    case C_SHARE: {
        lite_share sh{};
        Lmr* l = rng_.one_in(8) ? pick_lmr(0) : pick_owned();
        sh.handle = l != nullptr ? l->handle : stale_handle();
        std::string name = share_name(static_cast<uint32_t>(idx_), share_seq_);
        if (l != nullptr && l->owner && !l->names.empty() && rng_.one_in(6)) {
            name = l->names[rng_.below(l->names.size())];
            c.expect = EEXIST;
            c.expect_why = "the name is published already";
        } else if (l != nullptr && !l->owner) {
            c.expect = EPERM;
            c.expect_why = "sharing a mapping";
        }
        name.copy(sh.name, sizeof(sh.name) - 1);
        sh.perms = static_cast<uint32_t>(rng_.range(1, LITE_PERM_ALL));
        c.put(sh);
        break;
    }
    case C_MAP: {
        lite_map mp{};
        std::string name;
        std::vector<std::string> mine;
        for (const auto& l : lmrs_) {
            for (const auto& n : l.names)
                mine.push_back(n);
        }
        if (rng_.one_in(12)) {
            name = dsm_pool_name(rng_.below(kDsmPoolPages.size()));
            c.expect = EMEDIUMTYPE;
            c.expect_why = "a DSM region's name, or none";
        } else if (!mine.empty() && rng_.one_in(2)) {
            name = mine[rng_.below(mine.size())];
        } else {
            name = other_name();
        }
        name.copy(mp.name, sizeof(mp.name) - 1);
        mp.perms = static_cast<uint32_t>(rng_.below(LITE_PERM_ALL + 1));
        c.put(mp);
        break;
    }
    case C_REVOKE: {
        lite_revoke rv{};
        std::vector<std::string> mine;
        for (const auto& l : lmrs_) {
            for (const auto& n : l.names)
                mine.push_back(n);
        }
        std::string name;
        if (!mine.empty() && !rng_.one_in(6)) {
            name = mine[rng_.below(mine.size())];
        } else {
            name = share_name(static_cast<uint32_t>(idx_), share_seq_ + 1000);
            c.expect = ENOENT;
            c.expect_why = "a name this file never published";
        }
        name.copy(rv.name, sizeof(rv.name) - 1);
        c.put(rv);
        break;
    }
    case C_RPC_REGISTER: {
        lite_rpc_port p{};
        p.port = own_port(static_cast<uint32_t>(rng_.below(kPortsPerWorker)));
        if (std::find(ports_.begin(), ports_.end(), p.port) != ports_.end()) {
            c.expect = EADDRINUSE;
            c.expect_why = "this file serves the port already";
        }
        c.put(p);
        break;
    }
    case C_RPC_UNREGISTER: {
        lite_rpc_port p{};
        if (!ports_.empty() && !rng_.one_in(5)) {
            p.port = ports_[rng_.below(ports_.size())];
        } else {
            p.port = own_port(static_cast<uint32_t>(rng_.below(kPortsPerWorker)));
            if (std::find(ports_.begin(), ports_.end(), p.port) == ports_.end()) {
                c.expect = ENOENT;
                c.expect_why = "this file does not serve the port";
            }
        }
        c.put(p);
        break;
    }
    case C_RPC_CALL: {
        lite_rpc_call rc{};
        auto [node, port] = other_port();
        rc.node_id = rng_.one_in(5) ? 0 : node;
        rc.port = rng_.one_in(6) ? own_port(kPortsPerWorker - 1) + 1000 : port;
        rc.req_len = rng_.one_in(10) ? rng_.range(64 * kKiB, kMiB) : rng_.below(4096);
        uint8_t* req = valid_buf(rc.req_len);
        make_payload(req, rc.req_len, static_cast<uint32_t>(idx_), ++seq_);
        rc.req_ptr = addr(req);
        rc.reply_cap = rng_.below(8192);
        rc.reply_ptr = addr(valid_buf(rc.reply_cap));
        rc.timeout_ms = for_uring ? static_cast<uint32_t>(rng_.range(1, 200)) : wait_ms();
        c.put(rc);
        break;
    }
    case C_RPC_RECV: {
        lite_rpc_recv rv{};
        rv.port = !ports_.empty() ? ports_[rng_.below(ports_.size())] : own_port(0);
        rv.timeout_ms = wait_ms();
        rv.buf_cap = rng_.one_in(8) ? 0 : rng_.range(1, kServeRecvCap);
        rv.buf_ptr = addr(arena(kServeOff));
        c.put(rv);
        break;
    }
    case C_RPC_REPLY_RECV: {
        // An answer (or none: token 0) and the next receive, each built as
        // its own command is.
        Call y;
        Call v;
        build(y, C_RPC_REPLY, for_uring);
        build(v, C_RPC_RECV, for_uring);
        lite_rpc_reply_recv x{};
        x.reply = y.get<lite_rpc_reply>();
        if (rng_.one_in(3))
            x.reply.token = 0;
        x.recv = v.get<lite_rpc_recv>();
        c.put(x);
        break;
    }
    case C_RPC_REPLY: {
        lite_rpc_reply ry{};
        if (!tokens_.empty() && !rng_.one_in(6)) {
            ry.token = tokens_[rng_.below(tokens_.size())];
        } else if (!used_tokens_.empty()) {
            ry.token = used_tokens_[rng_.below(used_tokens_.size())];
            c.expect = ENOENT;
            c.expect_why = "the token was used already";
        } else {
            ry.token = rng_.next();
        }
        ry.len = rng_.below(8192);
        uint8_t* b = arena(kServeReplyOff);
        make_payload(b, ry.len, static_cast<uint32_t>(idx_), ++seq_);
        ry.buf_ptr = addr(b);
        c.put(ry);
        break;
    }
    case C_MSG_SEND: {
        lite_msg_send m{};
        auto [node, port] = other_port();
        m.node_id = rng_.one_in(4) ? 0 : node;
        m.port = rng_.one_in(4) && !ports_.empty() ? ports_[rng_.below(ports_.size())] : port;
        if (m.node_id == 0 && std::find(ports_.begin(), ports_.end(), m.port) == ports_.end())
            m.node_id = node;
        m.len = rng_.one_in(10) ? rng_.range(64 * kKiB, kMiB) : rng_.below(4096);
        uint8_t* b = valid_buf(m.len);
        make_payload(b, m.len, static_cast<uint32_t>(idx_), ++seq_);
        m.buf_ptr = addr(b);
        m.timeout_ms = wait_ms();
        c.put(m);
        break;
    }
    case C_LOCK: {
        lite_lock lk{};
        if (!locks_.empty() && rng_.one_in(5)) {
            const HeldLock& h = locks_[rng_.below(locks_.size())];
            lk.handle = h.handle;
            lk.offset = h.offset;
            if (h.clean) {
                c.expect = EDEADLK;
                c.expect_why = "this file holds the lock";
            }
        } else {
            Lmr* l = pick_lmr(LITE_PERM_ATOMIC);
            lk.handle = l != nullptr ? l->handle : stale_handle();
            if (l != nullptr && l->size >= 8)
                lk.offset = 8 * rng_.below(std::min<uint64_t>(l->size / 8, 4));
        }
        lk.flags = rng_.one_in(2) ? LITE_LOCK_TRY : 0;
        lk.timeout_ms = wait_ms();
        c.put(lk);
        break;
    }
    case C_UNLOCK: {
        lite_lock lk{};
        if (!locks_.empty() && !rng_.one_in(5)) {
            const HeldLock& h = locks_[rng_.below(locks_.size())];
            lk.handle = h.handle;
            lk.offset = h.offset;
        } else {
            Lmr* l = pick_lmr(0);
            lk.handle = l != nullptr ? l->handle : stale_handle();
            if (l != nullptr && l->size >= 8)
                lk.offset = 8 * rng_.below(std::min<uint64_t>(l->size / 8, 4));
        }
        c.put(lk);
        break;
    }
    case C_DSM_OPEN:
    case C_DSM_MMAP: // (not ioctls: issued elsewhere)
    case C_DSM_CLOSE:
        build_dsm_open(c);
        break;
    case C_DSM_DESTROY:
        build_dsm_destroy(c);
        break;
    case C_BARRIER: {
        lite_barrier br{};
        Lmr* l = pick_lmr(LITE_PERM_ATOMIC);
        br.handle = l != nullptr ? l->handle : stale_handle();
        if (l != nullptr && l->size >= 8)
            br.offset = 8 * rng_.below(std::min<uint64_t>(l->size / 8, 4));
        br.count = rng_.percent(60) ? 1 : static_cast<uint32_t>(rng_.range(2, 3));
        br.timeout_ms = wait_ms();
        c.put(br);
        break;
    }
    default: { // an unknown command number, with a plausible argument
        lite_rw rw{};
        rw.handle = lmrs_.empty() ? 1 : lmrs_[rng_.below(lmrs_.size())].handle;
        rw.len = 8;
        rw.buf = addr(valid_buf(64));
        c.put(rw);
        c.size = 64;
        std::set<unsigned long> known;
        for (const auto& i : cmds())
            known.insert(i.nr);
        do {
            const auto dir = static_cast<unsigned>(rng_.below(4));
            const auto type = rng_.one_in(8) ? static_cast<unsigned>(rng_.pick<unsigned>({'x', 0xe0, 0xe2, 0x01}))
                                             : static_cast<unsigned>(LITE_IOC_MAGIC);
            const auto nr = static_cast<unsigned>(rng_.below(256));
            const auto size = static_cast<unsigned>(rng_.one_in(2) ? rng_.below(512) : rng_.below(1U << 14U));
            c.nr = _IOC(dir, type, nr, size);
        } while (known.contains(c.nr));
        c.expect = ENOTTY;
        c.expect_why = "an unknown command";
        break;
    }
    }
}

uint64_t Worker::read_field(const Call& c, const Field& f) const
{
    uint64_t v = 0;
    std::memcpy(&v, c.arg.data() + f.off, std::min<size_t>(f.width, 8));
    return v;
}

void Worker::write_field(Call& c, const Field& f, uint64_t v)
{
    std::memcpy(c.arg.data() + f.off, &v, std::min<size_t>(f.width, 8));
}

// Valid pointers of a call that is going to be mutated move to the scratch
// part (their bytes with them), so that whatever the mutated call makes the
// kernel write lands there.
void Worker::remap_pointers(Call& c)
{
    const CmdInfo& info = cmds()[static_cast<size_t>(c.cmd)];
    const uint64_t valid = addr(arena_) + kValidOff;
    const uint64_t serve = addr(arena_) + kServeOff;
    for (const Field& f : info.fields) {
        if (f.kind != K_PTR)
            continue;
        const uint64_t p = read_field(c, f);
        uint64_t rel = 0;
        if (p >= valid && p < valid + kValidSize) {
            rel = p - valid;
        } else if (p >= serve && p < serve + (kScratchOff - kServeOff)) {
            rel = p - serve;
        } else {
            continue;
        }
        const uint64_t zone = abandon_zone_ != nullptr ? addr(abandon_zone_) : addr(arena_) + kScratchOff;
        const uint64_t zone_size = abandon_zone_ != nullptr ? kAbandonSize : kScratchSize;
        const uint64_t to = zone + rel % zone_size;
        const uint64_t n = std::min<uint64_t>(zone + zone_size - to, kPage);
        std::memmove(ptr(to), ptr<const uint8_t>(p),
                     std::min<uint64_t>(n, valid + kValidSize - std::min(p, valid + kValidSize)));
        // Only a part was copied: no header, so no receiver checks it.
        if (n >= 4)
            std::memset(ptr(to), 0, 4);
        write_field(c, f, to);
    }
}

void Worker::mutate_field(Call& c, const Field& f)
{
    const uint64_t v = read_field(c, f);
    uint64_t size = 4096;
    if (Lmr* l = live(read_field(c, cmds()[static_cast<size_t>(c.cmd)].fields[0])))
        size = l->size;
    auto bytes = [&](uint8_t val) {
        const size_t at = f.off + rng_.below(f.width);
        c.arg[at] = val != 0 ? val : static_cast<uint8_t>(rng_.range(1, 255));
    };
    switch (f.kind) {
    case K_HANDLE:
        switch (rng_.below(8)) {
        case 0:
            write_field(c, f, stale_handle());
            break;
        case 1:
            write_field(c, f, foreign_handle());
            break;
        case 2:
            write_field(c, f, 0);
            break;
        case 3:
            write_field(c, f,
                        rng_.pick<uint64_t>({~uint64_t{0}, uint64_t{1} << 32U, (uint64_t{1} << 32U) | v, 0xffffffffULL,
                                             uint64_t{1} << 63U}));
            break;
        case 4:
            write_field(c, f, v + rng_.pick<uint64_t>({1, ~uint64_t{0}}));
            break;
        case 5:
            if (!lmrs_.empty())
                write_field(c, f, lmrs_[rng_.below(lmrs_.size())].handle);
            break;
        default:
            write_field(c, f, rng_.range(1, 256));
            break;
        }
        break;
    case K_OFF:
        write_field(c, f,
                    rng_.pick<uint64_t>({size - 1, size, size + 1, size - 8, size + 8, v + 1, v + 4, v + 7,
                                         ~uint64_t{0}, ~uint64_t{0} - 7, uint64_t{1} << 63U, rng_.next(),
                                         v ^ (uint64_t{1} << rng_.below(64)), uint64_t{1} << 32U, 0}));
        break;
    case K_LEN:
        write_field(
            c, f,
            rng_.pick<uint64_t>({0, 1, size, size + 1, v + 1, v - 1, ~uint64_t{0}, ~uint64_t{0} - 7, LITE_RPC_MAX,
                                 LITE_RPC_MAX + 1ULL, 64 * kKiB, 64 * kKiB + 1, 256 * kKiB - 1, 256 * kKiB, kAllocMax,
                                 uint64_t{1} << 32U, v ^ (uint64_t{1} << rng_.below(64)), rng_.below(kMiB)}));
        break;
    case K_SIZE:
        write_field(c, f,
                    rng_.pick<uint64_t>({0, 1, LITE_LMR_MAX, LITE_LMR_MAX + 1, ~uint64_t{0}, kAllocMax + 1,
                                         v ^ (uint64_t{1} << rng_.below(64)), rng_.next()}));
        break;
    case K_PTR:
        write_field(c, f, bad_ptr(v, 64));
        break;
    case K_NODE:
        write_field(c, f, rng_.pick<uint64_t>({0, 1, 2, 3, 4, 127, 128, 129, 255, 65535, 0xffffffff, rng_.below(300)}));
        break;
    case K_PORT:
        write_field(c, f, rng_.pick<uint64_t>({0, 1, 65535, 65536, 0xffffffff, v + 1, rng_.next()}));
        break;
    case K_TMO:
        write_field(c, f, rng_.pick<uint64_t>({60001, 0xffffffff, 600001, uint64_t{1} << 31U, rng_.next()}));
        break;
    case K_COUNT:
        write_field(c, f, rng_.pick<uint64_t>({0, 1, 2, 65535, 65536, 0xffffffff, rng_.next()}));
        break;
    case K_TOKEN:
        write_field(c, f,
                    rng_.pick<uint64_t>(
                        {0, v + 1, v - 1, ~uint64_t{0}, rng_.next(), used_tokens_.empty() ? 7 : used_tokens_.back()}));
        break;
    case K_PERMS:
    case K_FLAGS:
        write_field(c, f, rng_.one_in(2) ? v | (uint64_t{1} << rng_.below(32)) : rng_.next());
        break;
    case K_VAL:
    case K_INST:
    case K_CAP:
        write_field(c, f,
                    rng_.pick<uint64_t>({0, 1, 255, 256, 4096, 0xffffffff, ~uint64_t{0}, v + 1,
                                         v ^ (uint64_t{1} << rng_.below(64)), rng_.next()}));
        break;
    case K_NAME: {
        char* n = reinterpret_cast<char*>(c.arg.data() + f.off);
        switch (rng_.below(6)) {
        case 0:
            std::memset(n, 'a' + static_cast<int>(rng_.below(26)), f.width); // not terminated
            break;
        case 1:
            std::memset(n, 0, f.width); // empty
            break;
        case 2: { // garbage after the NUL
            const size_t at = std::strlen(n) + 1 + rng_.below(8);
            if (at < f.width)
                n[at] = static_cast<char>(rng_.range(1, 255));
            break;
        }
        case 3:
            other_name().copy(n, f.width - 1);
            break;
        default:
            bytes(0);
            break;
        }
        break;
    }
    case K_RSV:
    case K_OUT:
    case K_BYTES:
        bytes(0);
        break;
    case K_FD:
        write_field(c, f, static_cast<uint32_t>(rng_.pick<int>({-1, 0, 1 << 20, sf_dir_fd_, sf_wo_fd_, fd_, sf_fd_})));
        break;
    case K_DSIZE: // sanitize() keeps what would be accepted small
        write_field(c, f,
                    rng_.pick<uint64_t>({0, 1, kPage - 1, kPage + 1, v + 1, v - 1, v + kPage, LITE_DSM_MAX_SIZE,
                                         LITE_DSM_MAX_SIZE + 1, LITE_DSM_MAX_SIZE + kPage, ~uint64_t{0},
                                         ~uint64_t{0} & ~(kPage - 1), uint64_t{1} << 63U,
                                         v ^ (uint64_t{1} << rng_.below(64)), rng_.next()}));
        break;
    }
}

void Worker::mutate(Call& c, bool for_uring)
{
    c.mutated = true;
    c.expect = 0;
    c.must = -1;
    remap_pointers(c);
    const CmdInfo& info = cmds()[static_cast<size_t>(c.cmd)];
    const int n = rng_.one_in(2) ? 1 : static_cast<int>(rng_.range(2, 4));
    for (int i = 0; i < n && !info.fields.empty(); i++) {
        std::vector<const Field*> pick;
        const auto how = rng_.below(10);
        for (const Field& f : info.fields) {
            if ((how < 2 && (f.kind == K_RSV || f.kind == K_OUT)) || (how == 2 && f.kind == K_FLAGS) ||
                (how == 3 && f.kind == K_PTR) || how > 3)
                pick.push_back(&f);
        }
        if (pick.empty())
            continue;
        const Field& f = *pick[rng_.below(pick.size())];
        if (how == 9 && f.kind != K_PTR && f.kind != K_NAME) {
            // one random bit anywhere in a field that holds no pointer
            const size_t bit = rng_.below(uint64_t{f.width} * 8U);
            c.arg[f.off + bit / 8] ^= static_cast<uint8_t>(1U << (bit % 8));
            c.how += std::string(" flip@") + std::to_string(f.off);
        } else {
            mutate_field(c, f);
            c.how += " field@" + std::to_string(f.off);
        }
    }
    if (for_uring && c.size < 80 && rng_.one_in(8)) {
        c.arg[c.size + rng_.below(80 - c.size)] = static_cast<uint8_t>(rng_.range(1, 255));
        c.how += " tail";
    }
    sanitize(c);
}

// Keep mutated calls bounded: short waits, no allocations that could take
// the guest's memory (the quota refuses the big ones).
void Worker::sanitize(Call& c)
{
    const CmdInfo& info = cmds()[static_cast<size_t>(c.cmd)];
    for (const Field& f : info.fields) {
        if (f.kind == K_TMO) {
            // Above 60000 ms the commands refuse a timeout, except RPC_RECV
            // (and RPC_REPLY_RECV), which take any.
            const uint64_t v = read_field(c, f) & 0xffffffffULL;
            if (v <= 60000 || c.cmd == C_RPC_RECV || c.cmd == C_RPC_REPLY_RECV)
                write_field(c, f, c.cmd == C_PING ? rng_.range(1, 300) : wait_ms());
        } else if (f.kind == K_SIZE) {
            const uint64_t v = read_field(c, f);
            if (v > kAllocMax && v <= LITE_LMR_MAX) {
                if (quota_bytes_ != 0 && rng_.one_in(4)) {
                    write_field(c, f, quota_bytes_ + rng_.range(1, quota_bytes_));
                } else {
                    write_field(c, f, v % kAllocMax + 1);
                }
            }
        } else if (f.kind == K_DSIZE) {
            // A region size the kernel would take (whatever the flags say)
            // stays at kDsmMaxPages pages: its directory and frames are
            // kernel memory no quota limits.
            const uint64_t v = read_field(c, f);
            if (v != 0 && v % kPage == 0 && v <= LITE_DSM_MAX_SIZE && v > kDsmMaxPages * kPage)
                write_field(c, f, (v / kPage % kDsmMaxPages + 1) * kPage);
        }
    }
    if (c.cmd == C_BARRIER) {
        auto br = c.get<lite_barrier>();
        if (br.count > 1 && br.timeout_ms > 60000)
            br.count = 1; // still refused for the timeout
        c.put(br);
    }
}

// --- issuing --------------------------------------------------------------------

void Worker::busy(const Call& c, bool uring)
{
    if (in_batch_)
        return;
    slot_.cur_label[0] = 0;
    slot_.cur_cmd = c.cmd;
    slot_.cur_uring = uring;
    slot_.cur_mutated = c.mutated;
    slot_.cur_nr = c.nr;
    slot_.cur_argv = c.argv;
    slot_.cur_size = c.size;
    std::memcpy(slot_.cur_arg.data(), c.arg.data(), c.size);
    slot_.busy_since_ms.store(now_ms());
}

void Worker::count(bool uring, int n)
{
    slot_.calls.fetch_add(static_cast<uint64_t>(n));
    (uring ? slot_.urings : slot_.ioctls).fetch_add(static_cast<uint64_t>(n));
    done_ += static_cast<uint64_t>(n);
}

long Worker::do_ioctl(Call& c)
{
    // Where the argument goes.
    c.argp = argpage_;
    if (c.mutated && rng_.one_in(8)) {
        switch (rng_.below(5)) {
        case 0: { // the struct runs into a PROT_NONE page
            c.argp = argpage_ + kPage - rng_.range(1, std::max<size_t>(c.size, 2) - 1);
            c.arg_seen = false;
            break;
        }
        case 1: // read-only: the kernel cannot write the outputs back
            if (quota_bytes_ != 0 || (c.cmd != C_ALLOC && c.cmd != C_MAP)) {
                mprotect(ro_arg_, kPage, PROT_READ | PROT_WRITE);
                std::memcpy(ro_arg_, c.arg.data(), c.size);
                mprotect(ro_arg_, kPage, PROT_READ);
                c.argv = addr(ro_arg_);
                c.argp = nullptr;
                if (c.cmd == C_ALLOC || c.cmd == C_MAP)
                    hidden_++;
            }
            break;
        case 2:
            c.argp = arena(kScratchOff + rng_.below(kScratchSize - kPage));
            break;
        default:
            c.argv = bad_ptr(addr(argpage_), c.size);
            c.argp = nullptr;
            if (in_scratch(c.argv, c.size)) {
                c.argp = ptr(c.argv); // the argument goes there
            } else if (readable(c.argv, c.size)) {
                c.arg_seen = false; // the kernel reads other bytes
                c.arg_other = true;
            } else {
                c.arg_seen = false;
            }
            break;
        }
    } else if (rng_.one_in(8)) {
        c.argp = argpage_ + rng_.range(1, 7); // misaligned is fine
    }
    if (c.argp != nullptr) {
        const uint64_t room = argpage_ + kPage - c.argp;
        const bool in_page = c.argp >= argpage_ && c.argp < argpage_ + kPage;
        std::memcpy(c.argp, c.arg.data(), in_page ? std::min<uint64_t>(room, c.size) : c.size);
        c.argv = addr(c.argp);
        if (in_page && room < c.size)
            c.argp = nullptr; // straddles the guard page
    }
    if (c.mutated && !c.side_fd && side_fd_ >= 0 && rng_.one_in(30)) {
        c.fd = side_fd_;
        c.side_fd = true;
    } else if (c.mutated && !c.side_fd && !c.region_fd && !regions_.empty() && rng_.one_in(40)) {
        c.fd = regions_[rng_.below(regions_.size())].fd; // ENOTTY, but for DSM_DESTROY
        c.region_fd = true;
    }
    // A short timer now and then: waits must end with EINTR, the rest go on.
    const bool timer = rng_.one_in(100);
    if (timer) {
        itimerval it{};
        it.it_value.tv_usec = static_cast<suseconds_t>(rng_.range(200, 3000));
        setitimer(ITIMER_REAL, &it, nullptr);
    }
    busy(c, false);
    errno = 0;
    long r = ::ioctl(c.fd, c.nr, c.argv);
    const int e = errno;
    idle();
    if (timer) {
        itimerval it{};
        setitimer(ITIMER_REAL, &it, nullptr);
    }
    count(false);
    if (r == -1)
        return -e;
    return r == 0 ? 0 : (r > 0 ? r : LONG_MIN);
}

void Worker::finding(const Call& c, bool uring, const std::string& what)
{
    slot_.findings.fetch_add(1);
    if (sh_->printed.fetch_add(1) >= 40)
        return;
    say("lite-fuzz-ioctl: FINDING: worker " + std::to_string(idx_) + ", call " + std::to_string(done_) + ": " +
        (uring ? "io_uring " : "ioctl ") + cmds()[static_cast<size_t>(c.cmd)].name + " (nr " + hex(c.nr) + ", " +
        (c.mutated ? "mutated:" + c.how : std::string("valid")) + (c.side_fd ? ", unattached file" : "") + ", arg at " +
        hex(c.argv) + "): " + what + "\n  argument:\n" + hexdump(c.arg.data(), c.size));
}

void Worker::note(const Call& c, bool uring, int err)
{
    slot_.notes.fetch_add(1);
    if (!noted_.insert({c.cmd * 2 + (uring ? 1 : 0), err}).second)
        return;
    say("lite-fuzz-ioctl: note: worker " + std::to_string(idx_) + ": " + (uring ? "io_uring " : "ioctl ") +
        cmds()[static_cast<size_t>(c.cmd)].name + " failed with " + ename(err) +
        ", which docs/uapi.md documents, but not for this command (" +
        (c.mutated ? "mutated:" + c.how : std::string("valid")) + ")\n" + hexdump(c.arg.data(), c.size));
}

void Worker::check(const Call& c, bool uring, long res)
{
    const CmdInfo& info = cmds()[static_cast<size_t>(c.cmd)];
    if (res == LONG_MIN ||
        (res > 0 && !(uring && (c.cmd == C_RPC_CALL || c.cmd == C_RPC_RECV || c.cmd == C_SENDFILE)))) {
        finding(c, uring, "returned " + std::to_string(res) + ", neither 0 nor -1 with errno");
        return;
    }
    const int err = res < 0 ? static_cast<int>(-res) : 0;
    auto& cell = slot_.results[static_cast<size_t>(c.cmd)][uring ? 1 : 0];
    cell[static_cast<size_t>(std::min(err, kErrMax - 1))]++;
    if (err >= kErrMax || (err != 0 && !documented().test(static_cast<size_t>(err)))) {
        finding(c, uring,
                "errno " + ename(err) + " (" + std::to_string(err) + "), which docs/uapi.md does not document");
        return;
    }
    if (is_control(c.cmd) && !uring && !c.region_fd && err != EPERM) { // (a region file: ENOTTY, below)
        finding(c, uring,
                err != 0 ? "a control command failed with " + ename(err) + " instead of EPERM for an unprivileged user"
                         : "a control command succeeded for an unprivileged user");
        return;
    }
    if (c.region_fd && !uring && c.nr != LITE_IOC_DSM_DESTROY && err != ENOTTY) {
        finding(c, uring,
                "a DSM region file answered " + (err != 0 ? ename(err) : std::string("success")) +
                    " instead of ENOTTY");
        return;
    }
    if (c.must >= 0 && !uring && !c.mutated && c.arg_seen && err != c.must) {
        finding(c, uring,
                std::string(err != 0 ? "failed with " + ename(err) : std::string("succeeded")) + " where it must " +
                    (c.must != 0 ? "fail with " + ename(c.must) : std::string("succeed")) + " (" + c.expect_why + ")");
        return;
    }
    if (c.expect != 0 && !c.mutated && !c.side_fd && err == 0 && c.arg_seen) {
        std::string hist;
        if (c.cmd == C_RPC_REPLY) {
            const auto it = token_hist_.find(c.get<lite_rpc_reply>().token);
            hist = "; the token's history:" + (it != token_hist_.end() ? it->second : std::string(" none"));
        }
        finding(c, uring,
                std::string("succeeded where it must fail with ") + ename(c.expect) + " (" + c.expect_why + ")" + hist);
        return;
    }
    if (err != 0) {
        ErrSet allowed = info.ioctl_errs;
        if (uring)
            allowed |= uring_errs();
        if (c.side_fd)
            allowed |= errs({EBADFD});
        if (c.region_fd)
            allowed |= errs({ENOTTY});
        if (!allowed.test(static_cast<size_t>(err)))
            note(c, uring, err);
    }
}

void Worker::ioctl_step()
{
    const int cmd = pick_cmd();
    if (cmd == C_DSM_MMAP) {
        dsm_mmap_step();
        return;
    }
    if (cmd == C_DSM_CLOSE) {
        dsm_close_step();
        return;
    }
    Call c;
    build(c, cmd, false);
    if (!rng_.percent(55))
        mutate(c, false);
    const long res = do_ioctl(c);
    check(c, false, res);
    const int err = res < 0 ? static_cast<int>(-res) : 0;
    apply(c, err, c.argp, false, true);
    bump_ = 0;
}

// Check what a successful read brought against the shadow copy.
void Worker::after_read(const Call& c, const uint8_t* buf, bool exact)
{
    const auto rw = c.get<lite_rw>();
    Lmr* l = live(rw.handle);
    if (l == nullptr || !l->shadow || rw.len == 0 || !exact || !readable(addr(buf), rw.len))
        return;
    Shadow& s = *l->shadow;
    uint64_t len = rw.len;
    if (!s.clip(rw.offset, len))
        return;
    for (uint64_t i = 0; i < len; i++) {
        const uint64_t o = rw.offset + i;
        if (s.known[o] != 0 && s.data[o] != buf[i]) {
            std::string hist;
            for (const auto& h : s.hist)
                hist += "\n    " + h;
            finding(c, false,
                    "LMR handle " + std::to_string(l->handle) + " (" + std::to_string(l->size) + " bytes on node " +
                        std::to_string(l->node) + ") byte " + std::to_string(o) + " reads " + hex(buf[i]) +
                        ", expected " + hex(s.data[o]) + "; its last operations:" + hist);
            s.forget(0, s.data.size());
            return;
        }
    }
    slot_.verified_bytes.fetch_add(len);
}

// The effect of a finished call on this worker's pool and shadow copies.
// @exact: the call ran alone, so its effect on LMR data is known.
void Worker::apply(const Call& c, int err, const uint8_t* out, bool uring, bool exact)
{
    if (c.cmd == C_DSM_OPEN || c.cmd == C_DSM_DESTROY)
        dsm_apply(c, err, out);
    if (c.region_fd)
        return; // nothing ran on /dev/lite
    if (c.side_fd) {
        if (c.cmd == C_ATTACH && err == EFAULT) {
            // The kernel may have attached it before the node id could not
            // be written back (docs/uapi.md): go on with a file known to
            // be unattached.
            open_side();
            return;
        }
        if (c.cmd == C_ATTACH && err == 0) {
            side_attached_ = true;
            if (out != nullptr) {
                lite_attach at{};
                std::memcpy(&at, out, sizeof(at));
                side_node_ = at.node_id;
            }
        }
        if (side_attached_ && rng_.one_in(4))
            open_side(); // a fresh unattached file for later calls
        return;
    }
    if (!c.arg_seen) {
        // The kernel could not read the argument (nothing happened) or read
        // bytes that are not it: zeros, which no command here acts on.
        if (c.arg_other && err == 0 && modifies(c.cmd)) {
            for (auto& l : lmrs_)
                l.shadow.reset();
        }
        return;
    }
    const bool good = err == 0;
    auto desc = [&](const std::string& what) {
        return std::to_string(done_) + (uring ? " uring " : " ") + what + (good ? " ok" : " " + ename(err)) +
               (c.mutated ? " (mutated)" : "");
    };
    // Shadow effects on one LMR range.
    auto touch = [&](uint64_t h, uint64_t off, uint64_t len, const std::function<void(Shadow&)>& done) {
        Lmr* l = live(h);
        if (l == nullptr)
            return;
        for (auto& lk : locks_) {
            if (lk.handle == h)
                lk.clean = false;
        }
        if (!l->shadow)
            return;
        if (good && exact) {
            done(*l->shadow);
        } else if (!(err != 0 && no_effect(err))) {
            l->shadow->forget(off, len);
        }
        l->shadow->note(desc(std::string(cmds()[static_cast<size_t>(c.cmd)].name) + " off " + std::to_string(off) +
                             " len " + std::to_string(len)));
    };
    switch (c.cmd) {
    case C_ALLOC: {
        if (!good || out == nullptr)
            break;
        lite_lmr_alloc al{};
        std::memcpy(&al, out, sizeof(al));
        if (al.handle == 0 || issued_.contains(al.handle)) {
            finding(c, uring, "LMR_ALLOC returned handle " + std::to_string(al.handle) + ", used before");
            break;
        }
        issued_.insert(al.handle);
        Lmr l;
        l.handle = al.handle;
        l.size = al.size;
        l.node = al.node_id != 0 ? al.node_id : node_;
        l.perms = LITE_PERM_ALL;
        l.owner = true;
        l.nic = (al.flags & LITE_LMR_NIC_ATOMIC) != 0;
        if (al.size <= kTrackMax) {
            l.shadow = std::make_unique<Shadow>(al.size); // a new LMR is zeroed
            l.shadow->note(desc("ALLOC " + std::to_string(al.size)));
        }
        lmrs_.push_back(std::move(l));
        publish_handle(al.handle);
        break;
    }
    case C_MAP: {
        if (!good || out == nullptr)
            break;
        lite_map mp{};
        std::memcpy(&mp, out, sizeof(mp));
        if (mp.handle == 0 || issued_.contains(mp.handle)) {
            finding(c, uring, "MAP returned handle " + std::to_string(mp.handle) + ", used before");
            break;
        }
        issued_.insert(mp.handle);
        std::string name(mp.name, strnlen(mp.name, sizeof(mp.name)));
        for (const auto& o : lmrs_) {
            if (o.owner && std::find(o.names.begin(), o.names.end(), name) != o.names.end() &&
                (o.size != mp.size || o.node != mp.node_id)) {
                finding(c, uring,
                        "MAP of this file's own name '" + name + "' reports " + std::to_string(mp.size) +
                            " bytes on node " + std::to_string(mp.node_id) + ", the LMR has " + std::to_string(o.size) +
                            " on node " + std::to_string(o.node));
            }
        }
        if (mp.size == 0 || mp.size > LITE_LMR_MAX || mp.node_id < 1 || mp.node_id > LITE_MAX_NODES)
            finding(c, uring, "MAP reports size " + std::to_string(mp.size) + " on node " + std::to_string(mp.node_id));
        Lmr l;
        l.handle = mp.handle;
        l.size = mp.size;
        l.node = mp.node_id;
        l.perms = mp.perms;
        lmrs_.push_back(std::move(l));
        publish_handle(mp.handle);
        break;
    }
    case C_FREE: {
        const auto fr = c.get<lite_lmr_free>();
        if (good)
            drop_lmr(fr.handle);
        break;
    }
    case C_READ: {
        const auto rw = c.get<lite_rw>();
        if (good)
            after_read(c, ptr<const uint8_t>(rw.buf), exact);
        break;
    }
    case C_WRITE: {
        const auto rw = c.get<lite_rw>();
        const bool src_ok = rw.len == 0 || readable(rw.buf, rw.len);
        touch(rw.handle, rw.offset, rw.len, [&](Shadow& s) {
            if (src_ok) {
                s.set(rw.offset, ptr<const uint8_t>(rw.buf), rw.len);
            } else {
                s.forget(rw.offset, rw.len);
            }
        });
        break;
    }
    case C_FETCH_ADD:
    case C_CMP_SWAP: {
        auto at = c.get<lite_atomic>();
        if (good && !uring && out != nullptr)
            std::memcpy(&at.result, out + offsetof(lite_atomic, result), sizeof(at.result));
        if (good && uring)
            at.result = c.get<lite_atomic>().result; // filled in by the caller
        touch(at.handle, at.offset, 8, [&](Shadow& s) {
            if (!s.inside(at.offset, 8))
                return;
            if (s.word_known(at.offset) && s.word(at.offset) != at.result) {
                finding(c, uring,
                        std::string(cmds()[static_cast<size_t>(c.cmd)].name) + " on handle " +
                            std::to_string(at.handle) + " offset " + std::to_string(at.offset) + " returned " +
                            hex(at.result) + ", the word held " + hex(s.word(at.offset)));
            }
            if (c.cmd == C_FETCH_ADD) {
                s.set_word(at.offset, at.result + at.operand);
            } else {
                s.set_word(at.offset, at.result == at.operand ? at.swap : at.result);
            }
        });
        break;
    }
    case C_MEMSET: {
        const auto ms = c.get<lite_memset>();
        touch(ms.handle, ms.offset, ms.len,
              [&](Shadow& s) { s.fill(ms.offset, ms.len, static_cast<uint8_t>(ms.value)); });
        break;
    }
    case C_MEMCPY: {
        const auto mc = c.get<lite_memcpy>();
        Lmr* src = live(mc.src_handle);
        std::vector<uint8_t> bytes;
        std::vector<uint8_t> known;
        if (src != nullptr && src->shadow && mc.src_offset <= src->size && mc.len <= src->size - mc.src_offset) {
            const auto* b = src->shadow->data.data() + mc.src_offset;
            const auto* k = src->shadow->known.data() + mc.src_offset;
            bytes.assign(b, b + mc.len);
            known.assign(k, k + mc.len);
        }
        touch(mc.dst_handle, mc.dst_offset, mc.len, [&](Shadow& s) {
            if (bytes.size() != mc.len) {
                s.forget(mc.dst_offset, mc.len);
                return;
            }
            s.set(mc.dst_offset, bytes.data(), mc.len);
            for (uint64_t i = 0; i < mc.len && s.inside(mc.dst_offset, i + 1); i++) {
                if (known[i] == 0)
                    s.known[mc.dst_offset + i] = 0;
            }
        });
        break;
    }
    case C_SENDFILE: {
        auto sf = c.get<lite_sendfile>();
        if (good && out != nullptr)
            std::memcpy(&sf.sent, out + offsetof(lite_sendfile, sent), sizeof(sf.sent));
        const uint64_t size = sf_data_.size();
        const uint64_t avail = sf.file_offset < size ? size - sf.file_offset : 0;
        const bool ours = sf.fd == sf_fd_;
        if (good && ours && sf.sent > std::min<uint64_t>(sf.len, avail)) {
            finding(c, uring,
                    "SENDFILE sent " + std::to_string(sf.sent) + " bytes of a " + std::to_string(size) +
                        "-byte file from offset " + std::to_string(sf.file_offset) + ", len " + std::to_string(sf.len));
        }
        touch(sf.handle, sf.lmr_offset, sf.len, [&](Shadow& s) {
            if (ours && sf.sent <= avail) {
                s.set(sf.lmr_offset, sf_data_.data() + sf.file_offset, sf.sent); // the rest is as it was
            } else {
                s.forget(sf.lmr_offset, sf.len);
            }
        });
        break;
    }
    case C_SHARE: {
        const auto sh = c.get<lite_share>();
        Lmr* l = live(sh.handle);
        if (l == nullptr)
            break;
        if (good || !no_effect(err)) {
            l->shadow.reset(); // others may write it from now on
            for (auto& lk : locks_) {
                if (lk.handle == sh.handle)
                    lk.clean = false;
            }
        }
        if (good) {
            std::string name(sh.name, strnlen(sh.name, sizeof(sh.name)));
            l->names.push_back(name);
            const std::string mine = share_name(static_cast<uint32_t>(idx_), share_seq_);
            if (name == mine) {
                share_seq_++;
                slot_.share_seq.store(share_seq_);
            }
        }
        break;
    }
    case C_REVOKE: {
        if (!good)
            break;
        const auto rv = c.get<lite_revoke>();
        std::string name(rv.name, strnlen(rv.name, sizeof(rv.name)));
        for (auto& l : lmrs_)
            std::erase(l.names, name);
        break;
    }
    case C_RPC_REGISTER: {
        const auto p = c.get<lite_rpc_port>();
        if (good)
            ports_.push_back(p.port);
        break;
    }
    case C_RPC_UNREGISTER: {
        const auto p = c.get<lite_rpc_port>();
        if (good)
            std::erase(ports_, p.port);
        break;
    }
    case C_RPC_CALL: {
        if (!good || uring || out == nullptr)
            break;
        lite_rpc_call rc{};
        std::memcpy(&rc, out, sizeof(rc));
        if (rc.reply_len > rc.reply_cap) {
            finding(c, uring,
                    "RPC_CALL reply of " + std::to_string(rc.reply_len) + " bytes, the cap was " +
                        std::to_string(rc.reply_cap));
        } else if (!c.mutated && readable(rc.reply_ptr, rc.reply_len)) {
            if (!payload_ok(ptr<const uint8_t>(rc.reply_ptr), rc.reply_len))
                finding(c, uring, "RPC_CALL reply payload checksum mismatch");
            slot_.payloads.fetch_add(1);
        }
        if (c.mutated && in_scratch(rc.reply_ptr, 8))
            std::memset(ptr<void>(rc.reply_ptr), 0, std::min<uint64_t>(rc.reply_len, 8));
        break;
    }
    case C_RPC_RECV: {
        if (out == nullptr)
            break;
        lite_rpc_recv rv{};
        std::memcpy(&rv, out, sizeof(rv));
        if (err == EMSGSIZE && rv.len <= rv.buf_cap && c.argp != nullptr) {
            finding(c, uring,
                    "RPC_RECV: EMSGSIZE with len " + std::to_string(rv.len) + " within buf_cap " +
                        std::to_string(rv.buf_cap));
        }
        if (!good)
            break;
        if (rv.len > rv.buf_cap) {
            finding(c, uring,
                    "RPC_RECV: len " + std::to_string(rv.len) + " above buf_cap " + std::to_string(rv.buf_cap));
        }
        if (rv.src_node < 1 || rv.src_node > kNodes)
            finding(c, uring, "RPC_RECV: src_node " + std::to_string(rv.src_node) + " is no member");
        if (rv.token != 0) {
            if (token_hist_.size() > 4096)
                token_hist_.clear();
            token_hist_[rv.token] += " recv@" + std::to_string(done_) + (c.mutated ? "(mutated)" : "");
            tokens_.push_back(rv.token);
            if (tokens_.size() > kMaxTokens)
                tokens_.erase(tokens_.begin());
        }
        if (readable(rv.buf_ptr, rv.len) && rv.len <= rv.buf_cap) {
            if (!c.mutated) {
                if (!payload_ok(ptr<const uint8_t>(rv.buf_ptr), rv.len))
                    finding(c, uring, "RPC_RECV payload checksum mismatch (" + std::to_string(rv.len) + " bytes)");
                slot_.payloads.fetch_add(1);
            }
            if (in_scratch(rv.buf_ptr, 8))
                std::memset(ptr<void>(rv.buf_ptr), 0, std::min<uint64_t>(rv.len, 8));
        }
        break;
    }
    case C_RPC_REPLY_RECV: {
        // The reply half as RPC_REPLY: its error is the command's unless
        // the kernel cleared the token (sent); then the receive half's.
        const auto x = c.get<lite_rpc_reply_recv>();
        lite_rpc_reply_recv back = x;
        if (out != nullptr)
            std::memcpy(&back, out, sizeof(back));
        const bool sent = x.reply.token != 0 && (good || back.reply.token == 0);
        Call half = c;
        if (x.reply.token != 0) {
            half.cmd = C_RPC_REPLY;
            half.put(x.reply);
            apply(half, sent ? 0 : err, nullptr, uring, exact);
        }
        if (x.reply.token == 0 || sent) {
            half.cmd = C_RPC_RECV;
            half.put(x.recv);
            apply(half, err, out != nullptr ? out + offsetof(lite_rpc_reply_recv, recv) : nullptr, uring, exact);
        }
        break;
    }
    case C_RPC_REPLY: {
        const auto ry = c.get<lite_rpc_reply>();
        const bool used = good || err == EMSGSIZE || err == ENOENT || err == EFAULT; // the kernel read it
        if (auto it = token_hist_.find(ry.token); it != token_hist_.end()) {
            it->second += " reply@" + std::to_string(done_) + (uring ? "(io_uring)" : "") +
                          (good ? ":ok" : ":" + ename(err)) + (c.mutated ? "(mutated)" : "") +
                          (c.argp == nullptr ? "(arg out of reach)" : "");
        }
        if (used && std::find(tokens_.begin(), tokens_.end(), ry.token) != tokens_.end()) {
            std::erase(tokens_, ry.token);
            used_tokens_.push_back(ry.token);
            if (used_tokens_.size() > 32)
                used_tokens_.erase(used_tokens_.begin());
        }
        break;
    }
    case C_LOCK: {
        const auto lk = c.get<lite_lock>();
        if (const Lmr* l = live(lk.handle); good && l != nullptr && l->nic)
            finding(c, uring, "LOCK succeeded on an LMR of NIC atomics");
        touch(lk.handle, lk.offset, 8, [&](Shadow& s) { s.forget(lk.offset, 8); });
        if (Lmr* l = live(lk.handle); l != nullptr && l->shadow && !(err != 0 && no_effect(err)))
            l->shadow->make_volatile(lk.offset);
        if (good && live(lk.handle) != nullptr) // EDEADLK is certain only for private LMRs
            locks_.push_back({lk.handle, lk.offset, live(lk.handle)->shadow != nullptr});
        break;
    }
    case C_UNLOCK: {
        const auto lk = c.get<lite_lock>();
        touch(lk.handle, lk.offset, 8, [&](Shadow& s) { s.forget(lk.offset, 8); });
        if (Lmr* l = live(lk.handle); l != nullptr && l->shadow && !(err != 0 && no_effect(err)))
            l->shadow->make_volatile(lk.offset);
        if (good || err == EKEYREVOKED) { // revoked: the lock went with the LMR
            for (auto it = locks_.begin(); it != locks_.end(); ++it) {
                if (it->handle == lk.handle && it->offset == lk.offset) {
                    locks_.erase(it);
                    break;
                }
            }
        }
        break;
    }
    case C_BARRIER: {
        const auto br = c.get<lite_barrier>();
        if (const Lmr* l = live(br.handle); good && l != nullptr && l->nic)
            finding(c, uring, "BARRIER succeeded on an LMR of NIC atomics");
        touch(br.handle, br.offset, 8, [&](Shadow& s) { s.forget(br.offset, 8); });
        if (Lmr* l = live(br.handle); l != nullptr && l->shadow && !(err != 0 && no_effect(err)))
            l->shadow->make_volatile(br.offset);
        break;
    }
    case C_GET_INFO: {
        if (!good || out == nullptr || c.mutated)
            break;
        lite_info in{};
        std::memcpy(&in, out, sizeof(in));
        if (in.abi_version != LITE_ABI_VERSION || in.n_instances != kNodes) {
            finding(c, uring,
                    "GET_INFO: ABI " + std::to_string(in.abi_version) + ", " + std::to_string(in.n_instances) +
                        " instances (expected " + std::to_string(LITE_ABI_VERSION) + ", 3)");
        }
        break;
    }
    default:
        break;
    }
}

// --- sequences --------------------------------------------------------------------

// Take what arrived at this file's ports and answer the calls.
void Worker::serve(int rounds, uint32_t max_wait_ms)
{
    for (int i = 0; i < rounds && !ports_.empty() && !poisoned_; i++) {
        Call c;
        build(c, C_RPC_RECV, false);
        auto rv = c.get<lite_rpc_recv>();
        rv.port = ports_[rng_.below(ports_.size())];
        rv.timeout_ms = static_cast<uint32_t>(rng_.range(1, max_wait_ms));
        rv.buf_cap = kServeRecvCap;
        c.put(rv);
        std::memcpy(argpage_, c.arg.data(), c.size);
        c.argp = argpage_;
        c.argv = addr(argpage_);
        busy(c, false);
        long r = ::ioctl(fd_, LITE_IOC_RPC_RECV, argpage_);
        const int e = r < 0 ? errno : 0;
        idle();
        count(false);
        check(c, false, r < 0 ? -e : r);
        apply(c, e, argpage_, false, true);
        if (r != 0)
            continue;
        std::memcpy(&rv, argpage_, sizeof(rv));
        if (rv.token == 0)
            continue;
        // Answer: the request's header echoed with our payload.
        Call y;
        build(y, C_RPC_REPLY, false);
        auto ry = y.get<lite_rpc_reply>();
        ry.token = rv.token;
        y.expect = 0;
        ry.len = rng_.below(8192);
        PayloadHdr hdr{};
        payload_ok(arena(kServeOff), rv.len, &hdr);
        make_payload(arena(kServeReplyOff), ry.len, static_cast<uint32_t>(idx_), hdr.magic == kMagic ? hdr.seq : 0);
        ry.buf_ptr = addr(arena(kServeReplyOff));
        y.put(ry);
        if (rng_.one_in(5))
            mutate(y, false);
        const long yr = do_ioctl(y);
        check(y, false, yr);
        apply(y, yr < 0 ? static_cast<int>(-yr) : 0, y.argp, false, true);
    }
}

// A write and a read-back of a private LMR, back to back, through ioctls or
// io_uring.
void Worker::checked_rw()
{
    Lmr* l = pick_lmr(LITE_PERM_ALL, true);
    if (l == nullptr || !l->shadow) {
        Call c;
        build(c, C_ALLOC, false);
        const long r = do_ioctl(c);
        check(c, false, r);
        apply(c, r < 0 ? static_cast<int>(-r) : 0, c.argp, false, true);
        return;
    }
    const uint64_t h = l->handle;
    const uint64_t size = l->size;
    auto [off, len] = pick_range(size, 64 * kKiB);
    if (len == 0)
        len = std::min<uint64_t>(size - std::min(off, size), 1);
    for (int i = 0; i < 2; i++) {
        Call c;
        build(c, i == 0 ? C_WRITE : C_READ, false);
        auto rw = c.get<lite_rw>();
        rw.handle = h;
        rw.offset = off;
        rw.len = len;
        uint8_t* buf = valid_buf(len);
        if (i == 0)
            fill_pattern(buf, len, rng_.next());
        rw.buf = addr(buf);
        rw.flags = 0;
        c.put(rw);
        c.expect = 0;
        const long r = do_ioctl(c);
        check(c, false, r);
        apply(c, r < 0 ? static_cast<int>(-r) : 0, c.argp, false, true);
    }
    bump_ = 0;
}

// A message to one of this file's own ports, then receiving it.
void Worker::msg_roundtrip()
{
    if (ports_.empty()) {
        Call c;
        build(c, C_RPC_REGISTER, false);
        const long r = do_ioctl(c);
        check(c, false, r);
        apply(c, r < 0 ? static_cast<int>(-r) : 0, c.argp, false, true);
        return;
    }
    Call c;
    build(c, C_MSG_SEND, false);
    auto m = c.get<lite_msg_send>();
    m.node_id = rng_.one_in(2) ? 0 : node_;
    m.port = ports_[rng_.below(ports_.size())];
    c.put(m);
    c.expect = 0;
    const long r = do_ioctl(c);
    check(c, false, r);
    apply(c, r < 0 ? static_cast<int>(-r) : 0, c.argp, false, true);
    serve(2);
    bump_ = 0;
}

// An RPC call through io_uring to one of this file's own ports, served here
// while it is in flight.
void Worker::self_call()
{
    if (ports_.empty() || !main_.live) {
        msg_roundtrip();
        return;
    }
    uring_batch(false, true);
}

void Worker::prep_sqe(Ring& ring, io_uring_sqe* sqe, UOp& op, uint64_t user_data)
{
    if (ring.sqe128) {
        std::memset(sqe, 0, 128);
        std::memcpy(sqe->cmd, op.c.arg.data(), 80);
    } else {
        std::memset(sqe, 0, 64);
        std::memcpy(sqe->cmd, op.c.arg.data(), 16);
    }
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = op.c.fd;
    sqe->cmd_op = static_cast<uint32_t>(op.c.nr);
    sqe->flags = op.sqe_flags;
    sqe->user_data = user_data;
    if (op.sqe_mutated) {
        switch (rng_.below(8)) {
        case 0:
            sqe->__pad1 = static_cast<uint32_t>(rng_.range(1, 0xffffffff));
            break;
        case 1:
            sqe->uring_cmd_flags = static_cast<uint32_t>(rng_.one_in(2) ? IORING_URING_CMD_FIXED : rng_.next());
            sqe->buf_index = static_cast<uint16_t>(rng_.below(4));
            op.sqe_fixed = (sqe->uring_cmd_flags & IORING_URING_CMD_FIXED) != 0;
            break;
        case 2:
            sqe->personality = static_cast<uint16_t>(rng_.range(1, 65535));
            break;
        case 3:
            sqe->ioprio = static_cast<uint16_t>(rng_.next());
            break;
        case 4:
            sqe->addr = rng_.next();
            sqe->len = static_cast<uint32_t>(rng_.next());
            break;
        case 5:
            sqe->file_index = static_cast<uint32_t>(rng_.next());
            break;
        case 6:
            // Not IOSQE_IO_DRAIN: on Debian's 6.1 io_uring a drained SQE
            // waits for an exact CQ tail, which a later SQE failing in
            // io_init_req plus two batched inline completions jump over,
            // and the drain and everything queued behind it never run
            // (reproduced with NOPs alone, no lite; newer kernels do not).
            sqe->flags = static_cast<uint8_t>(rng_.pick<unsigned>(
                {IOSQE_FIXED_FILE, IOSQE_BUFFER_SELECT, 1U << 7U, IOSQE_IO_LINK, IOSQE_IO_HARDLINK}));
            break;
        default:
            // Not 0: /dev/null answers every uring_cmd with 0 (uring_cmd_null).
            sqe->fd = rng_.pick<int>(
                {-1, 1000, side_fd_, ring.r.ring_fd, regions_.empty() ? -1 : regions_[rng_.below(regions_.size())].fd});
            op.c.fd = sqe->fd;
            break;
        }
        op.sqe_flags = sqe->flags;
    }
    std::memcpy(op.sqe.data(), sqe, ring.sqe128 ? 128 : 64);
}

// What an io_uring batch that does not complete is waiting for.
void Worker::report_hang(const std::vector<UOp>& ops, const Ring& ring, int64_t since_ms)
{
    slot_.findings.fetch_add(1);
    std::string s = "lite-fuzz-ioctl: FINDING: worker " + std::to_string(idx_) + ", call " + std::to_string(done_) +
                    ": io_uring commands pending for " + std::to_string((now_ms() - since_ms) / 1000) +
                    " s, past their timeouts (ring flags " + hex(ring.flags) + "):";
    for (size_t i = 0; i < ops.size(); i++) {
        const UOp& op = ops[i];
        s += "\n  " + std::to_string(i) + (op.done ? " done " + std::to_string(op.res) : " PENDING") + ": " +
             cmds()[static_cast<size_t>(op.c.cmd)].name + " cmd_op " + hex(op.c.nr) + " fd " + std::to_string(op.c.fd) +
             (op.c.fd == fd_ ? " (attached)" : "") + " sqe flags " + hex(op.sqe_flags) +
             (op.sqe_mutated ? " sqe-mutated" : "") + (op.c.mutated ? " mutated:" + op.c.how : " valid") +
             (op.self_call ? " self-call" : "") + "\n" + hexdump(op.c.arg.data(), 80);
    }
    for (uint32_t inst : sh_->instances) {
        lite_node_status st{};
        st.instance = inst;
        if (ioctl(fd_, LITE_IOC_NODE_STATUS, &st) == 0) {
            s += "\n  node " + std::to_string(st.node_id) + ": async in flight " + std::to_string(st.async_inflight) +
                 " (peak " + std::to_string(st.async_peak) + "), timeouts " + std::to_string(st.counters.timeouts) +
                 ", reconnects " + std::to_string(st.reconnects) + ", LMRs " + std::to_string(st.counters.mem_lmrs);
        }
    }
    say(s);
}

// Keep what the last batches were, to name the command behind a completion
// that comes late or twice.
void Worker::remember_batch(const std::vector<UOp>& ops, const Ring& ring)
{
    std::vector<PastOp> past(ops.size());
    for (size_t i = 0; i < ops.size(); i++) {
        PastOp& p = past[i];
        p.cmd = ops[i].c.cmd;
        p.nr = ops[i].c.nr;
        p.fd = ops[i].c.fd;
        p.sqe_flags = ops[i].sqe_flags;
        p.mutated = ops[i].c.mutated || ops[i].sqe_mutated;
        p.res = ops[i].res;
        p.ring_flags = ring.flags;
        std::memcpy(p.arg.data(), ops[i].c.arg.data(), p.arg.size());
    }
    recent_batches_.emplace_back(batch_seq_, std::move(past));
    if (recent_batches_.size() > 64)
        recent_batches_.pop_front();
}

// A completion that is not one of the batch in flight: a command completed
// twice, or late, or one nobody submitted.
void Worker::stray_cqe(const io_uring_cqe& cqe, const std::vector<UOp>& ops)
{
    const uint64_t seq = cqe.user_data >> 8U;
    const uint64_t i = cqe.user_data & 0xffU;
    std::string what = "a completion (res " + std::to_string(cqe.res) + ", flags " + hex(cqe.flags) + ") for ";
    if (seq == batch_seq_) {
        what += "command " + std::to_string(i) + " of the batch in flight, which " +
                (i < ops.size() ? "completed already with " + std::to_string(ops[i].res) : std::string("is not in it"));
    } else {
        what += "command " + std::to_string(i) + " of batch " + std::to_string(seq) + ", " +
                std::to_string(batch_seq_ - seq) + " batches ago";
        for (const auto& [s, d] : recent_batches_) {
            if (s == seq && i < d.size()) {
                const PastOp& p = d[i];
                what += ", which completed already with " + std::to_string(p.res) + ": " +
                        cmds()[static_cast<size_t>(p.cmd)].name + " cmd_op " + hex(p.nr) + " fd " +
                        std::to_string(p.fd) + " sqe flags " + hex(p.sqe_flags) + (p.mutated ? " mutated" : " valid") +
                        ", ring flags " + hex(p.ring_flags) + "\n" + hexdump(p.arg.data(), p.arg.size());
            }
        }
    }
    finding(ops[0].c, true, what);
}

// A batch of io_uring commands on one ring: submitted together, completed
// in any order. @abandon: close the ring with them in flight. @self_calls:
// include RPC calls to this file's own ports and serve them meanwhile.
bool Worker::uring_batch(bool abandon, bool self_calls)
{
    Ring* ring = &main_;
    if (!self_calls) {
        const auto r = rng_.below(100);
        if (r < 8) {
            ring = &alt_;
        } else if (r < 12) {
            ring = &small_;
        }
    }
    if (!ring->live)
        return true;
    if (abandon) {
        abandon_zone_ = map_or_die(kAbandonSize + kPage, PROT_READ | PROT_WRITE);
        mprotect(abandon_zone_ + kAbandonSize, kPage, PROT_NONE);
    }
    const auto n = static_cast<size_t>(rng_.range(1, 8));
    std::vector<UOp> ops(n);
    batch_seq_++;
    bool any_self = false;
    for (size_t i = 0; i < n; i++) {
        UOp& op = ops[i];
        const auto pick = rng_.below(100);
        // Mostly the io_uring commands; now and then another (ENOTTY).
        int cmd = C_UNKNOWN;
        if (self_calls && i == 0) {
            cmd = C_RPC_CALL;
        } else if (pick < 92) {
            // No receives beside calls to this file's own ports: one could
            // take the request the worker serves them with.
            cmd = pick < 28   ? C_READ
                  : pick < 56 ? C_WRITE
                  : pick < 67 ? C_FETCH_ADD
                  : pick < 77 ? C_CMP_SWAP
                  : pick < 84 ? C_RPC_CALL
                  : pick < 88 ? (self_calls ? C_RPC_CALL : C_RPC_RECV)
                              : C_RPC_REPLY;
        } else if (pick < 96) {
            cmd = static_cast<int>(rng_.below(C_UNKNOWN));
        }
        build(op.c, cmd, true);
        if (abandon_zone_ != nullptr) {
            // Buffers of calls nobody waits for: in a zone never used again;
            // the LMRs they name may change at any time from now on.
            remap_pointers(op.c);
            const uint64_t h = op.c.get<lite_rw>().handle; // the first field of each
            if (Lmr* l = live(h); l != nullptr)
                l->shadow.reset();
            for (auto& lk : locks_) {
                if (lk.handle == h)
                    lk.clean = false;
            }
        }
        if (cmd == C_RPC_CALL && (self_calls || rng_.one_in(3)) && !ports_.empty() && abandon_zone_ == nullptr) {
            auto rc = op.c.get<lite_rpc_call>();
            rc.node_id = rng_.one_in(2) ? 0 : node_;
            rc.port = ports_[rng_.below(ports_.size())];
            rc.timeout_ms = static_cast<uint32_t>(rng_.range(500, 3000));
            rc.reply_cap = 8192;
            rc.reply_ptr = addr(valid_buf(rc.reply_cap));
            op.c.put(rc);
            op.c.expect = 0;
            op.self_call = true;
            any_self = true;
        }
        if (!op.self_call && !rng_.percent(55)) {
            mutate(op.c, true);
            if (rng_.one_in(4))
                op.sqe_mutated = true;
        }
        if (!op.c.mutated && rng_.one_in(5))
            op.sqe_flags = IOSQE_ASYNC; // straight to an io_uring worker
        if (cmd == C_UNKNOWN) {
            op.c.nr = rng_.one_in(2) ? rng_.next() & 0xffffffffU : op.c.nr;
            op.c.expect = ENOTTY;
        } else if (!cmds()[static_cast<size_t>(cmd)].uring) {
            op.c.expect = ENOTTY;
            op.c.expect_why = "not an io_uring command";
        } else if (!ring->sqe128) {
            op.c.expect = EINVAL;
            op.c.expect_why = "64-byte SQEs";
        } else if (!ring->cqe32 && (cmd == C_FETCH_ADD || cmd == C_CMP_SWAP)) {
            op.c.expect = EINVAL;
            op.c.expect_why = "an atomic without 32-byte CQEs";
        } else if (!ring->cqe32 && cmd == C_RPC_RECV) {
            op.c.expect = EINVAL;
            op.c.expect_why = "an RPC receive without 32-byte CQEs";
        }
        if (uring_nr(op.c.nr))
            op.c.expect = op.c.expect == ENOTTY ? 0 : op.c.expect;
        op.c.argv = 0;
        op.c.argp = op.c.arg.data();
    }
    for (size_t i = 0; i < n; i++) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring->r);
        if (sqe == nullptr) {
            say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": no free SQE for command " + std::to_string(i) +
                ": sqe_head " + std::to_string(ring->r.sq.sqe_head) + " sqe_tail " +
                std::to_string(ring->r.sq.sqe_tail) + " khead " + std::to_string(*ring->r.sq.khead) + " ktail " +
                std::to_string(*ring->r.sq.ktail) + " flags " + hex(ring->flags));
            break;
        }
        prep_sqe(*ring, sqe, ops[i], (batch_seq_ << 8U) | i);
    }
    busy(ops[0].c, true);
    int submitted = 0;
    while (submitted < static_cast<int>(n)) {
        const int r = io_uring_submit(&ring->r);
        if (r == -EINTR)
            continue;
        if (r <= 0) {
            say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": io_uring_submit: " + ename(-r));
            idle();
            make_rings();
            return false;
        }
        submitted += r;
    }
    count(true, submitted);
    if (abandon) {
        // Closed with everything in flight: the kernel finishes them.
        idle();
        make_rings();
        abandon_zone_ = nullptr; // left mapped: the calls may still use it
        abandons_++;
        bump_ = 0;
        return true;
    }
    int64_t max_wait = 0;
    for (const auto& op : ops) {
        if (op.c.cmd == C_RPC_CALL)
            max_wait = std::max<int64_t>(max_wait, op.c.get<lite_rpc_call>().timeout_ms);
    }
    // Every command completes by itself in bounded time. Past half the hang
    // limit this worker reports what is pending and goes on waiting; the
    // parent dumps the stacks and ends it at the limit.
    const int64_t t0 = now_ms();
    const int64_t report_at = t0 + max_wait + int64_t{opt_.hang_seconds} * 500;
    bool reported = false;
    in_batch_ = true;
    size_t pending = n;
    while (pending > 0) {
        io_uring_cqe* cqe = nullptr;
        __kernel_timespec ts{0, any_self ? 1'000'000 : 50'000'000};
        const int r = io_uring_wait_cqe_timeout(&ring->r, &cqe, &ts);
        if (r == -ETIME || r == -EINTR || r == -EAGAIN) {
            if (!reported && now_ms() > report_at) {
                report_hang(ops, *ring, t0);
                reported = true;
            }
            if (any_self)
                serve(1, 20); // returns as soon as the call arrives
            continue;
        }
        if (r < 0) {
            say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": io_uring_wait_cqe: " + ename(-r));
            poisoned_ = true; // their buffers stay in use: stop here
            in_batch_ = false;
            idle();
            return false;
        }
        const uint64_t i = cqe->user_data & 0xffU;
        if (cqe->user_data >> 8U == batch_seq_ && i < n && !ops[i].done) {
            ops[i].res = cqe->res;
            ops[i].big = ring->cqe32 ? cqe->big_cqe[0] : 0;
            ops[i].done = true;
            pending--;
        } else {
            stray_cqe(*cqe, ops);
        }
        io_uring_cqe_seen(&ring->r, cqe);
    }
    in_batch_ = false;
    idle();
    remember_batch(ops, *ring);
    if (reported) {
        say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": the late io_uring batch completed after " +
            std::to_string((now_ms() - t0) / 1000) + " s");
    }
    // Which tracked LMRs more than one command of the batch named: their
    // order is unknown.
    std::vector<uint64_t> named;
    std::set<uint64_t> shared_handles;
    for (const auto& op : ops) {
        if (!cmds()[static_cast<size_t>(op.c.cmd)].uring || op.c.cmd == C_RPC_CALL || op.c.cmd == C_RPC_RECV ||
            op.c.cmd == C_RPC_REPLY)
            continue;
        const uint64_t h = op.c.get<lite_rw>().handle; // the first field of both structures
        if (std::find(named.begin(), named.end(), h) != named.end())
            shared_handles.insert(h);
        named.push_back(h);
    }
    for (auto& op : ops) {
        const auto nr = static_cast<uint32_t>(op.c.nr);
        if (op.res >= 0 && (op.c.fd == fd_ || op.c.fd == side_fd_) && !uring_nr(nr)) {
            finding(op.c, true,
                    "cmd_op " + hex(nr) + " is no io_uring command, yet it completed with " + std::to_string(op.res) +
                        "; the SQE:\n" + hexdump(op.sqe.data(), 128));
            continue;
        }
        check(op.c, true, op.res);
        const int err = op.res < 0 ? -op.res : 0;
        const bool real_cmd = op.c.nr == cmds()[static_cast<size_t>(op.c.cmd)].nr;
        // Nothing ran on this file's LMRs, tokens or names: another command
        // number or file, or a command with no io_uring form (lite never
        // saw it; io_uring itself may have failed it, e.g. EFAULT for a
        // fixed-buffer flag without registered buffers).
        if (!real_cmd || !cmds()[static_cast<size_t>(op.c.cmd)].uring || op.c.fd != fd_ ||
            (op.sqe_flags & IOSQE_FIXED_FILE) != 0)
            continue;
        // The fixed-buffer flag: io_uring fails a buffer index it has no
        // buffer for with EFAULT before lite sees the command (nothing ran:
        // no token used, no LMR touched); lite itself refuses the flag on
        // all but reads and writes (EINVAL).
        if (op.sqe_fixed && err == EFAULT && op.c.cmd != C_READ && op.c.cmd != C_WRITE)
            continue;
        // A polled ring takes no RPC command (EOPNOTSUPP, or an earlier
        // check's error): nothing ran.
        if (ring->polled && (op.c.cmd == C_RPC_CALL || op.c.cmd == C_RPC_RECV || op.c.cmd == C_RPC_REPLY)) {
            if (err == 0)
                finding(op.c, true, "an RPC command succeeded on a polled ring (IORING_SETUP_IOPOLL)");
            continue;
        }
        const bool alone = !op.sqe_mutated;
        if (op.c.cmd == C_FETCH_ADD || op.c.cmd == C_CMP_SWAP) {
            auto at = op.c.get<lite_atomic>();
            at.result = op.big;
            Call copy = op.c;
            copy.put(at);
            if (err == 0 && !ring->cqe32)
                finding(op.c, true, "an atomic succeeded on a ring without 32-byte CQEs");
            apply(copy, err, nullptr, true, alone && !shared_handles.contains(at.handle));
        } else if (op.c.cmd == C_SENDFILE) {
            // The count comes in the CQE (and its big part).
            auto sf = op.c.get<lite_sendfile>();
            sf.sent = op.res >= 0 ? static_cast<uint64_t>(op.res) : 0;
            if (op.res >= 0 && ring->cqe32 && op.big != sf.sent) {
                finding(op.c, true,
                        "SENDFILE: big_cqe[0] " + std::to_string(op.big) + ", res " + std::to_string(op.res));
            }
            std::array<uint8_t, sizeof(sf)> out{};
            std::memcpy(out.data(), &sf, sizeof(sf));
            apply(op.c, err, out.data(), true, alone && !shared_handles.contains(sf.handle) && !op.c.mutated);
        } else if (op.c.cmd == C_RPC_RECV) {
            // No output fields through io_uring: the CQE has them.
            auto rv = op.c.get<lite_rpc_recv>();
            rv.len = op.res >= 0 ? static_cast<uint64_t>(op.res) : err == EMSGSIZE ? op.big : 0;
            rv.token = op.res >= 0 ? LITE_CQE_TOKEN(op.big) : 0;
            rv.src_node = op.res >= 0 ? LITE_CQE_SRC(op.big) : 0;
            if (op.res >= 0 && !ring->cqe32)
                finding(op.c, true, "an RPC receive succeeded on a ring without 32-byte CQEs");
            std::array<uint8_t, sizeof(rv)> out{};
            std::memcpy(out.data(), &rv, sizeof(rv));
            apply(op.c, err, out.data(), true, alone && !op.c.mutated);
        } else if (op.c.cmd == C_RPC_CALL) {
            const auto rc = op.c.get<lite_rpc_call>();
            if (op.res >= 0) {
                if (static_cast<uint64_t>(op.res) > rc.reply_cap) {
                    finding(op.c, true,
                            "RPC_CALL completed with " + std::to_string(op.res) + " reply bytes, the cap was " +
                                std::to_string(rc.reply_cap));
                } else if (ring->cqe32 && op.big != static_cast<uint64_t>(op.res)) {
                    finding(op.c, true,
                            "RPC_CALL: big_cqe[0] " + std::to_string(op.big) + ", res " + std::to_string(op.res));
                } else if (!op.c.mutated &&
                           !payload_ok(ptr<const uint8_t>(rc.reply_ptr), static_cast<uint64_t>(op.res))) {
                    finding(op.c, true, "RPC_CALL reply payload checksum mismatch");
                } else if (!op.c.mutated) {
                    slot_.payloads.fetch_add(1);
                }
            }
            if (op.c.mutated && op.res > 0 && in_scratch(rc.reply_ptr, 8))
                std::memset(ptr<void>(rc.reply_ptr), 0, 8);
        } else {
            apply(op.c, err, nullptr, true,
                  alone && !shared_handles.contains(op.c.get<lite_rw>().handle) && !op.c.mutated);
        }
    }
    bump_ = 0;
    return true;
}

// Keep the pool within bounds: free what is beyond the caps, reply to old
// calls, drop locks.
void Worker::trim_pool()
{
    auto owned = [&] { return std::count_if(lmrs_.begin(), lmrs_.end(), [](const Lmr& l) { return l.owner; }); };
    auto mapped = [&] { return std::count_if(lmrs_.begin(), lmrs_.end(), [](const Lmr& l) { return !l.owner; }); };
    while (owned() > static_cast<ptrdiff_t>(kMaxOwned) || mapped() > static_cast<ptrdiff_t>(kMaxMapped)) {
        const bool own = owned() > static_cast<ptrdiff_t>(kMaxOwned);
        uint64_t h = 0;
        for (const auto& l : lmrs_) {
            if (l.owner == own)
                h = l.handle;
        }
        Call c;
        build(c, C_FREE, false);
        lite_lmr_free fr{};
        fr.handle = h;
        c.put(fr);
        c.expect = 0;
        const long r = do_ioctl(c);
        check(c, false, r);
        apply(c, r < 0 ? static_cast<int>(-r) : 0, c.argp, false, true);
        if (r != 0)
            drop_lmr(h, false); // forget it either way
    }
    if (hidden_ > 8)
        reopen();
}

// --- DSM regions -------------------------------------------------------------------

// A name another worker published for an LMR (not its next one: a region
// must not take that from it), or a shared region's name if there is none.
std::string Worker::lmr_name()
{
    const auto w = static_cast<uint32_t>(rng_.below(static_cast<uint64_t>(opt_.workers)));
    const uint32_t top = sh_->slot[w].share_seq.load();
    if (top == 0)
        return dsm_pool_name(0);
    const uint32_t lo = top > 16 ? top - 16 : 0;
    return share_name(w, static_cast<uint32_t>(rng_.range(lo, top - 1)));
}

Region* Worker::region_of(int fd)
{
    for (auto& g : regions_) {
        if (g.fd == fd)
            return &g;
    }
    return nullptr;
}

// This worker's file that created the region @name, while it lives.
const Region* Worker::live_creator(const std::string& name) const
{
    for (const auto& g : regions_) {
        if (g.creator == 1 && !g.dead && g.name == name)
            return &g;
    }
    return nullptr;
}

void Worker::build_dsm_open(Call& c)
{
    lite_dsm_open o{};
    std::string name;
    uint64_t pages = 1;
    const auto pick = rng_.below(100);
    if (pick < 55) {
        const auto k = static_cast<size_t>(rng_.below(kDsmPoolPages.size()));
        name = dsm_pool_name(k);
        pages = kDsmPoolPages[k];
    } else if (pick < 85) {
        const auto k = static_cast<size_t>(rng_.below(kDsmPrivPages.size()));
        name = dsm_priv_name(k);
        pages = kDsmPrivPages[k];
    } else if (pick < 91) { // any bytes up to the NUL make a name
        name = dsm_priv_name(kDsmPrivPages.size()) +
               rng_.pick<const char*>({"/x", " y", "\x01", "\xff\xfe", "..", "\n", "*?", "%s"});
    } else if (pick < 95) { // the longest name there is
        name = dsm_priv_name(kDsmPrivPages.size() + 1);
        name.resize(LITE_NAME_MAX - 1, 'L');
    } else {
        name = lmr_name(); // EMEDIUMTYPE, or EEXIST with CREATE
    }
    name.copy(o.name, sizeof(o.name) - 1);
    const auto f = pick < 95 ? rng_.below(10) : rng_.below(5);
    o.flags = f < 3 ? 0U : (f < 7 ? LITE_DSM_OPEN_CREATE : LITE_DSM_OPEN_CREATE | LITE_DSM_OPEN_EXCL);
    if ((o.flags & LITE_DSM_OPEN_CREATE) != 0)
        o.size = (rng_.one_in(6) ? rng_.range(1, kDsmMaxPages) : pages) * kPage;
    if (side_fd_ >= 0 && rng_.one_in(8)) {
        c.fd = side_fd_; // attached to any node, or not at all
        c.side_fd = true;
    }
    if (rng_.one_in(8)) {
        // Invalid on purpose: these checks come before anything else.
        switch (rng_.below(9)) {
        case 0:
            std::memset(o.name, 0, sizeof(o.name));
            c.expect_why = "an empty name";
            break;
        case 1:
            std::memset(o.name, 'q', sizeof(o.name));
            c.expect_why = "an unterminated name";
            break;
        case 2:
            o.flags = LITE_DSM_OPEN_EXCL;
            o.size = 0;
            c.expect_why = "EXCL without CREATE";
            break;
        case 3:
            o.flags |= LITE_DSM_OPEN_CREATE;
            o.size = 0;
            c.expect_why = "CREATE with size 0";
            break;
        case 4:
            o.flags |= LITE_DSM_OPEN_CREATE;
            o.size = pages * kPage + rng_.range(1, kPage - 1);
            c.expect_why = "a size that is no multiple of 4096";
            break;
        case 5:
            o.flags |= LITE_DSM_OPEN_CREATE;
            o.size = rng_.pick<uint64_t>(
                {LITE_DSM_MAX_SIZE + kPage, 2 * LITE_DSM_MAX_SIZE, ~uint64_t{0} & ~(kPage - 1), uint64_t{1} << 63U});
            c.expect_why = "a size above LITE_DSM_MAX_SIZE";
            break;
        case 6:
            o.flags = 0;
            o.size = pages * kPage;
            c.expect_why = "a size without CREATE";
            break;
        case 7:
            o.flags |= 1U << static_cast<unsigned>(rng_.range(2, 31));
            c.expect_why = "an unknown flag";
            break;
        default:
            if (rng_.one_in(2)) {
                o.reserved0 = static_cast<uint32_t>(rng_.range(1, 0xffffffff));
            } else {
                o.reserved[rng_.below(2)] = uint64_t{1} << rng_.below(64);
            }
            c.expect_why = "reserved fields not zero";
            break;
        }
        c.must = EINVAL;
        c.expect = EINVAL;
    } else if (c.side_fd && !side_attached_) {
        c.must = EBADFD;
        c.expect_why = "the file is not attached to a node";
    }
    c.put(o);
}

void Worker::build_dsm_destroy(Call& c)
{
    c.put(lite_dsm_destroy{});
    if (!regions_.empty() && !rng_.one_in(5)) {
        const Region& g = regions_[rng_.below(regions_.size())];
        c.fd = g.fd;
        c.region_fd = true;
        if (g.creator == 1) {
            c.must = g.dead ? ENXIO : 0;
            c.expect = c.must;
            c.expect_why = g.dead ? "the file created the region, which this worker destroyed"
                                  : "the file created the region, which lives";
        } else if (g.creator == 0) {
            c.must = EPERM;
            c.expect = EPERM;
            c.expect_why = "the file did not create the region";
        }
        return;
    }
    switch (rng_.below(4)) {
    case 0:
        c.must = ENOTTY;
        c.expect_why = "/dev/lite is no region file";
        break;
    case 1:
        c.fd = side_fd_ >= 0 ? side_fd_ : fd_;
        c.must = ENOTTY;
        c.expect_why = "/dev/lite is no region file";
        break;
    case 2:
        c.fd = main_.live ? main_.r.ring_fd : fd_;
        c.must = ENOTTY;
        c.expect_why = "an io_uring (or /dev/lite) is no region file";
        break;
    default:
        c.fd = -1;
        c.must = EBADF;
        c.expect_why = "no file";
        break;
    }
    c.expect = c.must;
}

// What DSM_OPEN and DSM_DESTROY did to the regions this worker holds.
void Worker::dsm_apply(const Call& c, int err, const uint8_t* out)
{
    if (c.cmd == C_DSM_OPEN) {
        if (err == 0)
            adopt_region(c, out);
        return;
    }
    Region* g = region_of(c.fd);
    if (g == nullptr || (err != 0 && err != EPERM && err != ENXIO))
        return;
    // Past its arguments, DSM_DESTROY answers EPERM on a file that did not
    // create the region, ENXIO on one that did if the region is dead.
    const int creator = err == EPERM ? 0 : 1;
    std::string why;
    if (g->creator >= 0 && g->creator != creator) {
        why = g->creator == 1 ? "the file created the region" : "the file did not create the region";
    } else if (err == 0 && g->dead) {
        why = "this worker destroyed the region already";
    } else if (err == ENXIO && !g->dead) {
        why = "this worker did not destroy the region";
    }
    if (!why.empty() && (c.mutated || c.must < 0)) { // else check() reported it
        finding(c, false,
                "DSM_DESTROY answered " + (err != 0 ? ename(err) : std::string("success")) + " on region file " +
                    std::to_string(g->fd) + " ('" + g->name + "'), but " + why);
    }
    g->creator = creator;
    if (creator == 0)
        return;
    const uint64_t ino = g->ino;
    const int fd = g->fd;
    const std::string name = g->name;
    const bool priv = g->priv;
    for (auto& r : regions_) {
        if (r.ino == ino) {
            r.dead = true; // the same region object: its accesses get SIGBUS
            if (r.fd != fd)
                r.creator = 0;
        }
        // Only one region of a name of this worker's own lives at a time:
        // every file of the name is of this one or of one it destroyed.
        if (priv && r.name == name)
            r.gone = true;
    }
    dsm_shadow_.erase(name);
}

// A region file DSM_OPEN returned: check it and keep it.
void Worker::adopt_region(const Call& c, const uint8_t* out)
{
    const uint8_t* src = out;
    if (src == nullptr && c.arg_other && readable(c.argv, sizeof(lite_dsm_open)))
        src = ptr<const uint8_t>(c.argv); // the kernel read (and wrote back) other bytes
    if (src == nullptr) {
        // Its number never reached this worker: the file stays open until
        // the worker exits.
        if (!dsm_hidden_said_) {
            say("lite-fuzz-ioctl: worker " + std::to_string(idx_) +
                ": a DSM_OPEN succeeded whose output it could not read; its region file stays open");
        }
        dsm_hidden_said_ = true;
        return;
    }
    lite_dsm_open o{};
    std::memcpy(&o, src, sizeof(o));
    const lite_dsm_open in = c.arg_seen ? c.get<lite_dsm_open>() : o;
    const std::string name(in.name, strnlen(in.name, sizeof(in.name)));
    const int fdflags = o.fd >= 0 ? fcntl(o.fd, F_GETFD) : -1;
    if (fdflags < 0 || region_of(o.fd) != nullptr || o.fd == fd_ || o.fd == side_fd_) {
        finding(c, false,
                "DSM_OPEN of '" + name + "' returned fd " + std::to_string(o.fd) +
                    (fdflags < 0 ? ", which is not open" : ", which was open already"));
        return;
    }
    struct stat st {
    };
    fstat(o.fd, &st);
    const uint64_t ino = st.st_ino;
    const bool excl = (in.flags & LITE_DSM_OPEN_EXCL) != 0;
    const uint32_t file_node = c.fd == fd_ ? node_ : (c.fd == side_fd_ ? side_node_ : 0);
    std::string bad;
    if ((static_cast<unsigned>(fdflags) & FD_CLOEXEC) == 0)
        bad += " not close-on-exec;";
    if (o.size == 0 || o.size % kPage != 0 || o.size > LITE_DSM_MAX_SIZE) {
        bad += " size " + std::to_string(o.size) + ";";
    } else if (in.size != 0 && o.size != in.size) {
        bad += " size " + std::to_string(o.size) + ", " + std::to_string(in.size) + " asked for;";
    }
    if (std::find(sh_->node_ids.begin(), sh_->node_ids.end(), o.home) == sh_->node_ids.end())
        bad += " home " + std::to_string(o.home) + " is no node;";
    if (excl && file_node != 0 && o.home != file_node)
        bad += " created through node " + std::to_string(file_node) + ", homed on " + std::to_string(o.home) + ";";
    if (const Region* mine = live_creator(name); mine != nullptr) {
        if (excl) {
            bad += " CREATE|EXCL succeeded while this worker holds the file that created it (fd " +
                   std::to_string(mine->fd) + ");";
        } else if (o.size != mine->size || o.home != mine->home) {
            bad += " the region has " + std::to_string(mine->size) + " bytes, home " + std::to_string(mine->home) + ";";
        }
    }
    for (const auto& r : regions_) {
        if (r.ino == ino && r.dead)
            bad += " it is region file " + std::to_string(r.fd) + "'s, which this worker destroyed;";
    }
    if (!bad.empty())
        finding(c, false, "DSM_OPEN of '" + name + "' returned region file " + std::to_string(o.fd) + ":" + bad);

    Region g;
    g.fd = o.fd;
    g.name = name;
    g.size = o.size;
    g.home = o.home;
    g.ino = ino;
    if (excl) {
        g.creator = 1;
    } else if (in.flags == 0 || (file_node != 0 && o.home != file_node)) {
        g.creator = 0;
    }
    for (const auto& r : regions_) {
        if (r.ino == ino && r.creator == 1 && !excl)
            g.creator = 0;
    }
    g.priv = name.starts_with("dp" + std::to_string(idx_) + ".");
    if (g.priv) {
        const auto it = dsm_shadow_.find(name);
        if (excl) {
            dsm_shadow_[name] = DsmShadow{ino, {}}; // new: zeros
        } else if (it != dsm_shadow_.end() && it->second.ino != ino) {
            dsm_shadow_.erase(it); // another node's copies, or another region
        }
    }
    regions_.push_back(std::move(g));
    if (regions_.size() > kMaxRegions)
        close_region(0);
}

void Worker::close_region(size_t i)
{
    const Region g = regions_[i];
    regions_.erase(regions_.begin() + static_cast<ptrdiff_t>(i));
    busy_label("close() of a DSM region file");
    errno = 0;
    const int r = ::close(g.fd);
    const int e = r == 0 ? 0 : errno;
    idle();
    count_dsm(C_DSM_CLOSE, e);
    if (r != 0)
        dsm_finding("close() of DSM region file " + std::to_string(g.fd) + " ('" + g.name + "') failed: " + ename(e));
    // The last file of the region object: a region of this worker's own
    // name is gone (or was never only this worker's).
    if (std::none_of(regions_.begin(), regions_.end(), [&](const Region& o) { return o.ino == g.ino; })) {
        const auto it = dsm_shadow_.find(g.name);
        if (it != dsm_shadow_.end() && it->second.ino == g.ino)
            dsm_shadow_.erase(it);
    }
}

void Worker::dsm_issue(Call& c)
{
    const long res = do_ioctl(c);
    check(c, false, res);
    apply(c, res < 0 ? static_cast<int>(-res) : 0, c.argp, false, true);
    bump_ = 0;
}

void Worker::count_dsm(int cmd, int err)
{
    slot_.calls.fetch_add(1);
    slot_.dsm_calls.fetch_add(1);
    done_++;
    if (cmd >= 0)
        slot_.results[static_cast<size_t>(cmd)][0][static_cast<size_t>(std::min(err, kErrMax - 1))]++;
}

void Worker::dsm_finding(const std::string& what)
{
    slot_.findings.fetch_add(1);
    if (sh_->printed.fetch_add(1) >= 40)
        return;
    say("lite-fuzz-ioctl: FINDING: worker " + std::to_string(idx_) + ", call " + std::to_string(done_) + ": " + what);
}

// mmap() of a region file: inside the region or not, shared or private,
// any protection; then loads and stores in a mapping that must work, and
// munmap().
void Worker::dsm_mmap_step()
{
    if (regions_.empty()) {
        Call c;
        build(c, C_DSM_OPEN, false);
        dsm_issue(c);
        return;
    }
    const Region g = regions_[rng_.below(regions_.size())];
    const uint64_t pages = std::max<uint64_t>(g.size / kPage, 1);
    uint64_t first = rng_.below(pages);
    uint64_t len = rng_.range(1, pages - first) * kPage;
    uint64_t off = first * kPage;
    int flags = MAP_SHARED;
    int must = 0;
    const char* why = "inside the region, MAP_SHARED";
    const auto kind = rng_.below(100);
    if (kind < 70) {
        if (rng_.one_in(6))
            len -= rng_.below(kPage); // mmap() rounds it up
    } else if (kind < 80) {
        flags = MAP_PRIVATE;
        must = EINVAL;
        why = "MAP_PRIVATE";
    } else if (kind < 92) {
        must = ENXIO;
        why = "past the region's end";
        if (rng_.one_in(2)) {
            first = pages + rng_.below(3);
            len = rng_.range(1, 4) * kPage;
        } else {
            len = (pages - first + rng_.range(1, 3)) * kPage;
        }
        off = first * kPage;
    } else {
        switch (rng_.below(4)) {
        case 0:
            len = 0;
            must = EINVAL;
            why = "length 0";
            break;
        case 1:
            off += rng_.range(1, kPage - 1);
            must = EINVAL;
            why = "an offset inside a page";
            break;
        case 2:
            off = uint64_t{1} << rng_.range(40, 62);
            must = -1; // ENXIO, EOVERFLOW
            why = "a huge offset";
            break;
        default:
            len = uint64_t{1} << rng_.range(44, 62);
            must = -1; // ENOMEM, ENXIO
            why = "a huge length";
            break;
        }
    }
    const auto pr = rng_.below(20);
    const int prot = pr < 12   ? PROT_READ | PROT_WRITE
                     : pr < 16 ? PROT_READ
                     : pr < 17 ? PROT_WRITE
                     : pr < 18 ? PROT_NONE
                               : PROT_READ | PROT_EXEC;
    const bool exec = (static_cast<unsigned>(prot) & PROT_EXEC) != 0;
    busy_label("mmap() of a DSM region file");
    void* p = ::mmap(nullptr, len, prot, flags, g.fd, static_cast<off_t>(off));
    const int err = p == MAP_FAILED ? errno : 0;
    idle();
    count_dsm(C_DSM_MMAP, err);
    auto desc = [&] {
        return "mmap(len " + hex(len) + ", prot " + std::to_string(prot) +
               (flags == MAP_SHARED ? ", MAP_SHARED" : ", MAP_PRIVATE") + ", offset " + hex(off) +
               ") of DSM region file " + std::to_string(g.fd) + " ('" + g.name + "', " + std::to_string(pages) +
               " pages)";
    };
    const ErrSet& allowed = cmds()[C_DSM_MMAP].ioctl_errs;
    if (err != 0 && (err >= kErrMax || !allowed.test(static_cast<size_t>(err)) || (err == EPERM && !exec))) {
        dsm_finding(desc() + " failed with " + ename(err) + ", which mmap() of a region file does not give");
    } else if (must >= 0 && err != must && !(exec && err == EPERM) && !(must == 0 && err == ENOMEM)) {
        dsm_finding(desc() + (err != 0 ? " failed with " + ename(err) : std::string(" succeeded")) + " where it must " +
                    (must != 0 ? "fail with " + ename(must) : std::string("succeed")) + " (" + why + ")");
    }
    if (p == MAP_FAILED)
        return;
    slot_.dsm_maps.fetch_add(1);
    if (must == 0 && (static_cast<unsigned>(prot) & (PROT_READ | PROT_WRITE)) != 0)
        dsm_touch(g, static_cast<uint8_t*>(p), (len + kPage - 1) / kPage, first, prot);
    busy_label("munmap() of a DSM region mapping");
    const int r = ::munmap(p, len);
    const int e = r == 0 ? 0 : errno;
    idle();
    count_dsm(-1, 0);
    if (r != 0)
        dsm_finding(desc() + ": munmap() failed with " + ename(e));
}

// Loads and stores in a mapping of @pages pages of region @g from its page
// @first, checked where this worker knows what they must read.
void Worker::dsm_touch(const Region& g, uint8_t* base, uint64_t pages, uint64_t first, int prot)
{
    const bool can_read = (static_cast<unsigned>(prot) & PROT_READ) != 0;
    const bool can_write = (static_cast<unsigned>(prot) & PROT_WRITE) != 0;
    const auto it = dsm_shadow_.find(g.name);
    DsmShadow* sh = g.priv && it != dsm_shadow_.end() && it->second.ino == g.ino ? &it->second : nullptr;
    std::map<uint64_t, uint64_t> slots; // page of the mapping: what this worker stored in its word there
    const uint64_t own = 8 * static_cast<uint64_t>(idx_);
    bool bus = false;
    std::string bad;
    auto where = [&](uint64_t pg, uint64_t in_page) {
        return "DSM region '" + g.name + "' (fd " + std::to_string(g.fd) + ", inode " + std::to_string(g.ino) +
               ", home " + std::to_string(g.home) + (g.priv ? ", this worker's" : ", shared") + ") page " +
               std::to_string(first + pg) + " offset " + std::to_string(in_page);
    };
    // One access; false if it raised SIGBUS or must have.
    auto access = [&](uint64_t pg, uint64_t in_page, bool store, uint64_t& v) {
        auto* w = ptr<volatile uint64_t>(addr(base) + pg * kPage + in_page);
        if (!guarded_access(w, store, &v)) {
            bus = true;
            return false;
        }
        (store ? slot_.dsm_stores : slot_.dsm_loads).fetch_add(1);
        if (g.dead) {
            bad = where(pg, in_page) + ": a " + (store ? "store" : "load") +
                  " went through, but this worker destroyed the region (SIGBUS expected)";
            return false;
        }
        return true;
    };
    auto same = [&](uint64_t pg, uint64_t in_page, uint64_t got, uint64_t want, const char* what) {
        if (got == want) {
            slot_.dsm_verified.fetch_add(1);
            return true;
        }
        bad = where(pg, in_page) + " reads " + hex(got) + ", expected " + hex(want) + " (" + what + ")";
        return false;
    };
    busy_label(("loads and stores in a mapping of DSM region " + g.name).c_str());
    const int64_t t0 = now_ms();
    const auto n = rng_.range(1, 8);
    for (uint64_t i = 0; i < n && now_ms() - t0 < 3000; i++) {
        const bool store = can_write && (!can_read || rng_.one_in(2));
        uint64_t pg = rng_.below(pages);
        if (!store && !slots.empty() && rng_.one_in(2))
            pg = std::next(slots.begin(), static_cast<ptrdiff_t>(rng_.below(slots.size())))->first;
        uint64_t in_page = own;
        if (sh != nullptr) {
            in_page = 8 * rng_.below(kPage / 8);
        } else if (rng_.one_in(2)) {
            in_page = kDsmSlotArea + 8 * rng_.below((kPage - kDsmSlotArea) / 8);
        }
        uint64_t v = store ? mix64(++dsm_seq_ ^ (static_cast<uint64_t>(idx_) << 56U)) : 0;
        if (!access(pg, in_page, store, v))
            break;
        const uint64_t at = (first + pg) * kPage + in_page;
        if (store) {
            if (sh != nullptr) {
                sh->words[at] = v;
            } else if (in_page == own) {
                slots[pg] = v;
            }
            continue;
        }
        if (sh != nullptr) {
            const auto w = sh->words.find(at);
            const bool ok = w != sh->words.end() ? same(pg, in_page, v, w->second, "what this worker stored there")
                                                 : same(pg, in_page, v, 0, "a new region reads as zeros");
            if (!ok)
                break;
        } else if (in_page == own && slots.contains(pg) &&
                   !same(pg, in_page, v, slots[pg], "what this worker stored in its word")) {
            break;
        }
    }
    // This worker's words once more: other nodes may have taken the pages
    // meanwhile.
    for (const auto& [pg, want] : slots) {
        uint64_t v = 0;
        if (!can_read || bus || !bad.empty() || !access(pg, own, false, v) ||
            !same(pg, own, v, want, "what this worker stored in its word"))
            break;
    }
    idle();
    if (sh != nullptr && (bus || !bad.empty() || sh->words.size() > 4096))
        dsm_shadow_.erase(g.name);
    if (bus) {
        slot_.dsm_sigbus.fetch_add(1);
        if (g.dead) {
            slot_.dsm_sigbus_dead.fetch_add(1);
        } else if (g.priv && !g.gone && slot_.dsm_sigbus_odd.fetch_add(1) < 5) {
            // Only this worker uses the region and it lives: a fault the
            // cluster did not serve in time (the kernel logs why).
            say("lite-fuzz-ioctl: worker " + std::to_string(idx_) + ": SIGBUS in DSM region '" + g.name + "' (fd " +
                std::to_string(g.fd) + ", home " + std::to_string(g.home) +
                "), which only this worker uses and did not destroy");
        }
    }
    if (!bad.empty()) {
        dsm_finding(bad);
        return;
    }
    if (!bus && rng_.one_in(4))
        dsm_kernel_access(g, base, pages, prot);
}

// A READ into the mapping or a WRITE from it: the kernel's own access to
// DSM memory (EFAULT where a user's would get SIGBUS). Only bytes from
// kDsmSlotArea on, inside one page.
void Worker::dsm_kernel_access(const Region& g, uint8_t* base, uint64_t pages, int prot)
{
    const bool can_read = (static_cast<unsigned>(prot) & PROT_READ) != 0;
    const bool into = (static_cast<unsigned>(prot) & PROT_WRITE) != 0 && (!can_read || rng_.one_in(2));
    if (!into && !can_read)
        return;
    Call c;
    build(c, into ? C_READ : C_WRITE, false);
    auto rw = c.get<lite_rw>();
    if (live(rw.handle) == nullptr)
        return; // no LMR to move bytes to or from
    const uint64_t in_page = kDsmSlotArea + rng_.below(kPage - kDsmSlotArea);
    rw.len = std::min<uint64_t>(rw.len, kPage - in_page);
    rw.buf = addr(base) + rng_.below(pages) * kPage + in_page;
    c.put(rw);
    if (g.dead && rw.len != 0) {
        c.expect = EFAULT;
        c.expect_why = "the buffer is in a DSM region this worker destroyed";
    }
    if (into)
        dsm_shadow_.erase(g.name);
    dsm_issue(c);
}

void Worker::dsm_close_step()
{
    if (regions_.empty()) {
        Call c;
        build(c, C_DSM_OPEN, false);
        dsm_issue(c);
        return;
    }
    close_region(rng_.below(regions_.size()));
}

void Worker::step()
{
    const auto r = rng_.below(1000);
    if (r < 900 - opt_.uring_permille) {
        ioctl_step();
    } else if (r < 900) {
        uring_batch(false, false);
    } else if (r < 930) {
        checked_rw();
    } else if (r < 950) {
        self_call();
    } else if (r < 970) {
        msg_roundtrip();
    } else if (r < 990) {
        serve(2);
    } else if (r < 994) {
        make_rings();
    } else if (r < 997 && abandons_ < kMaxAbandons) {
        uring_batch(true, false);
    } else if (r >= 999) {
        reopen();
    }
    trim_pool();
}

int Worker::run(uint64_t calls, Clock::time_point deadline)
{
    if (!setup())
        return 2;
    budget_ = calls;
    while (!poisoned_ && (budget_ == 0 || done_ < budget_) && Clock::now() < deadline && sh_->stop.load() == 0)
        step();
    if (poisoned_)
        _exit(1); // calls may be in flight on our buffers: do not unmap them
    close_rings();
    while (!regions_.empty())
        close_region(regions_.size() - 1);
    busy_label("close() of the files at the end");
    ::close(fd_);
    if (side_fd_ >= 0)
        ::close(side_fd_);
    idle();
    return slot_.findings.load() != 0 ? 1 : 0;
}

// ---------------------------------------------------------------------------
// The parent.

void usage()
{
    std::printf("usage: lite-fuzz-ioctl [OPTION...]\n"
                "Fuzzes the ioctls and io_uring commands of /dev/lite and its DSM region files\n"
                "(docs/architecture.md, Fuzzing). Start it as root in a lite-vm guest: it brings three nodes up,\n"
                "then its workers run as nobody in group lite.\n"
                "  --calls N         calls in all, over the workers (default 100000 without --seconds)\n"
                "  --seconds S       stop after S seconds (with --calls: whichever comes first)\n"
                "  --workers W       worker processes (default 4, at most 16)\n"
                "  --seed S          seed of the random choices (default: from the clock; printed)\n"
                "  --quota-mb Q      quota_mb while fuzzing (default 64; 0 leaves it alone)\n"
                "  --wait-ms MS      the longest timeout a waiting call gets (default 5)\n"
                "  --hang-seconds S  a call stuck this long is a finding (default 120)\n"
                "  --port-base P     the nodes listen on ports P..P+2 (default 18960)\n"
                "  --verbose         progress every 10 s\n"
                "  --uring-permille N  steps out of 1000 that are io_uring batches (default 240, at most 900)\n"
                "Prints one line of results, and writes $LITE_OUT/fuzz-ioctl.json if LITE_OUT is set.\n"
                "Exit status 0 only without findings.\n");
}

bool parse(int argc, char** argv, Options& o)
{
    static const std::array<option, 12> longopts = {{
        {"calls", required_argument, nullptr, 'c'},
        {"seconds", required_argument, nullptr, 's'},
        {"workers", required_argument, nullptr, 'w'},
        {"seed", required_argument, nullptr, 'S'},
        {"quota-mb", required_argument, nullptr, 'q'},
        {"wait-ms", required_argument, nullptr, 't'},
        {"hang-seconds", required_argument, nullptr, 'H'},
        {"port-base", required_argument, nullptr, 'p'},
        {"verbose", no_argument, nullptr, 'v'},
        {"uring-permille", required_argument, nullptr, 'u'},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    }};
    bool seeded = false;
    int ch = 0;
    auto num = [](const char* s, uint64_t& out) {
        char* end = nullptr;
        errno = 0;
        out = std::strtoull(s, &end, 0);
        return errno == 0 && end != s && *end == 0;
    };
    while ((ch = getopt_long(argc, argv, "c:s:w:S:q:t:H:p:vu:h", longopts.data(), nullptr)) != -1) {
        uint64_t v = 0;
        switch (ch) {
        case 'c':
            if (!num(optarg, o.calls))
                return false;
            break;
        case 's': {
            char* end = nullptr;
            o.seconds = std::strtod(optarg, &end);
            if (end == optarg || *end != 0 || o.seconds <= 0)
                return false;
            break;
        }
        case 'w':
            if (!num(optarg, v) || v < 1 || v > kMaxWorkers)
                return false;
            o.workers = static_cast<int>(v);
            break;
        case 'S':
            if (!num(optarg, o.seed))
                return false;
            seeded = true;
            break;
        case 'q':
            if (!num(optarg, v) || v > 65536)
                return false;
            o.quota_mb = static_cast<uint32_t>(v);
            break;
        case 't':
            if (!num(optarg, v) || v < 1 || v > 10000)
                return false;
            o.wait_ms = static_cast<uint32_t>(v);
            break;
        case 'H':
            if (!num(optarg, v) || v < 5 || v > 3600)
                return false;
            o.hang_seconds = static_cast<uint32_t>(v);
            break;
        case 'p':
            if (!num(optarg, v) || v < 1024 || v > 65000)
                return false;
            o.port_base = static_cast<uint16_t>(v);
            break;
        case 'v':
            o.verbose = true;
            break;
        case 'u':
            if (!num(optarg, v) || v > 900)
                return false;
            o.uring_permille = static_cast<unsigned>(v);
            break;
        case 'h':
            usage();
            std::exit(0);
        default:
            return false;
        }
    }
    if (optind != argc)
        return false;
    if (o.calls == 0 && o.seconds == 0)
        o.calls = 100000;
    if (!seeded)
        o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ULL;
    return true;
}

std::string read_text(const std::string& path)
{
    std::ifstream f(path);
    std::string s;
    std::getline(f, s);
    return s;
}

bool write_text(const std::string& path, const std::string& text)
{
    std::ofstream f(path);
    f << text << "\n";
    return static_cast<bool>(f);
}

std::string slurp(const std::filesystem::path& path)
{
    std::ifstream f(path);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Where a stuck worker's threads (io_uring's workers among them) and every
// task in uninterruptible sleep are in the kernel.
void dump_stacks(pid_t pid)
{
    namespace fs = std::filesystem;
    std::string out = "lite-fuzz-ioctl: kernel stacks of worker " + std::to_string(pid) + " and of tasks in D state:";
    auto one = [&](const fs::path& task, const std::string& why) {
        std::string comm = slurp(task / "comm");
        if (!comm.empty() && comm.back() == '\n')
            comm.pop_back();
        out += "\n  " + why + " " + task.filename().string() + " (" + comm + "):\n" + slurp(task / "stack");
    };
    std::error_code ec;
    for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
        one(t.path(), "thread");
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
        std::error_code lec;
        const auto target = fs::read_symlink(fd.path(), lec).string();
        if (target.find("io_uring") != std::string::npos) {
            std::string info = slurp("/proc/" + std::to_string(pid) + "/fdinfo/" + fd.path().filename().string());
            if (info.size() > 2000)
                info.resize(2000);
            out += "\n  io_uring fd " + fd.path().filename().string() + ":\n" + info;
        }
    }
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
        const std::string name = p.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const std::string stat = slurp(p.path() / "stat");
        const auto close = stat.rfind(')');
        if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'D')
            one(p.path(), "D-state task");
    }
    say(out);
}

// The nodes' memory, DSM and in-flight counters once every worker's file
// closed.
bool counters_back(const lite::Device& dev, const std::array<uint32_t, kNodes>& inst, std::string& why)
{
    why.clear();
    bool ok = true;
    for (uint32_t i : inst) {
        const auto st = dev.status(i);
        if (st.counters.mem_lmrs != 0 || st.counters.mem_bytes != 0 || st.async_inflight != 0 || st.dsm.regions != 0 ||
            st.dsm.pages != 0) {
            ok = false;
            why += " node " + std::to_string(st.node_id) + ": " + std::to_string(st.counters.mem_lmrs) + " LMRs, " +
                   std::to_string(st.counters.mem_bytes) + " bytes, " + std::to_string(st.async_inflight) +
                   " in flight, " + std::to_string(st.dsm.regions) + " DSM regions with " +
                   std::to_string(st.dsm.pages) + " pages;";
        }
    }
    return ok;
}

// Root uses the cluster after the campaign: every node, memory on another.
std::string sanity(const std::array<uint32_t, kNodes>& inst, const std::array<uint32_t, kNodes>& ids)
{
    for (size_t i = 0; i < kNodes; i++) {
        lite_t* l = nullptr;
        if (int r = LITE_open(inst[i], &l); r != 0)
            return "open instance " + std::to_string(inst[i]) + ": " + ename(-r);
        lite_lmr_t h = 0;
        std::vector<uint8_t> out(8192);
        std::vector<uint8_t> in(out.size());
        fill_pattern(out.data(), out.size(), i + 1);
        std::string err;
        if (int r = LITE_alloc(l, out.size(), ids[(i + 1) % kNodes], &h); r != 0) {
            err = "alloc: " + ename(-r);
        } else if (int w = LITE_write(l, h, 0, out.data(), out.size()); w != 0) {
            err = "write: " + ename(-w);
        } else if (int rd = LITE_read(l, h, 0, in.data(), in.size()); rd != 0) {
            err = "read: " + ename(-rd);
        } else if (in != out) {
            err = "read back other bytes than written";
        }
        if (h != 0)
            LITE_free(l, h);
        LITE_close(l);
        if (!err.empty())
            return "node " + std::to_string(ids[i]) + ": " + err;
    }
    return "";
}

int parent(const Options& opt)
{
    using lite_guest::up;
    const auto start = Clock::now();
    say("lite-fuzz-ioctl: seed " + std::to_string(opt.seed) + ", " + std::to_string(opt.workers) + " workers, " +
        (opt.calls != 0 ? std::to_string(opt.calls) + " calls" : "") +
        (opt.calls != 0 && opt.seconds != 0 ? " or " : "") +
        (opt.seconds != 0 ? std::to_string(opt.seconds) + " s" : ""));
    if (geteuid() != 0) {
        say("lite-fuzz-ioctl: must start as root (it brings nodes up, then drops to nobody)");
        return 2;
    }
    if (lite_guest::lite_gid() < 0) {
        say("lite-fuzz-ioctl: no group lite: run make install-udev (tools/install-udev.sh)");
        return 2;
    }
    auto dev = lite::Device::open();
    lite_guest::down_all(dev);
    // udev gives /dev/lite to group lite shortly after the module loaded.
    lite_guest::wait_until(
        [] {
            struct stat st {
            };
            return stat(LITE_DEVICE_PATH, &st) == 0 && (st.st_mode & 0060) == 0060;
        },
        std::chrono::seconds(5));

    auto* sh =
        static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (sh == MAP_FAILED) {
        say("lite-fuzz-ioctl: mmap: " + std::string(std::strerror(errno)));
        return 2;
    }
    new (sh) Shared();

    std::array<uint32_t, kNodes> inst{};
    std::array<uint32_t, kNodes> ids{};
    try {
        for (size_t i = 0; i < kNodes; i++) {
            const auto r = up(dev, static_cast<uint16_t>(opt.port_base + i), i == 0 ? 0 : opt.port_base);
            inst[i] = r.instance;
            ids[i] = r.node_id;
        }
    } catch (const lite::Error& e) {
        say(std::string("lite-fuzz-ioctl: bringing the nodes up: ") + e.what());
        lite_guest::down_all(dev);
        return 2;
    }
    const bool formed = lite_guest::wait_until(
        [&] {
            return std::all_of(inst.begin(), inst.end(),
                               [&](uint32_t i) { return lite_guest::live_members(dev, i).size() == kNodes; });
        },
        std::chrono::seconds(15));
    if (!formed) {
        say("lite-fuzz-ioctl: the three nodes did not all connect");
        lite_guest::down_all(dev);
        return 2;
    }
    sh->instances = inst;
    sh->node_ids = ids;
    say("lite-fuzz-ioctl: nodes 1..3 up (instances " + std::to_string(inst[0]) + " " + std::to_string(inst[1]) + " " +
        std::to_string(inst[2]) + ")");

    const std::string quota_path = "/sys/module/lite/parameters/quota_mb";
    const std::string old_quota = read_text(quota_path);
    uint64_t quota_bytes = 0;
    if (opt.quota_mb != 0) {
        if (write_text(quota_path, std::to_string(opt.quota_mb))) {
            quota_bytes = uint64_t{opt.quota_mb} * kMiB;
        } else {
            say("lite-fuzz-ioctl: cannot set " + quota_path + ": huge allocations are clamped instead");
        }
    }

    const uint64_t per = opt.calls / static_cast<uint64_t>(opt.workers);
    const auto deadline = opt.seconds != 0
                              ? Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(opt.seconds * 1000))
                              : Clock::time_point::max();
    std::vector<pid_t> pids;
    (void)std::fflush(nullptr);
    for (int w = 0; w < opt.workers; w++) {
        const pid_t pid = fork();
        if (pid < 0) {
            say("lite-fuzz-ioctl: fork: " + std::string(std::strerror(errno)));
            break;
        }
        if (pid == 0) {
            if (!lite_guest::become_nobody(true)) {
                say("lite-fuzz-ioctl: worker " + std::to_string(w) + ": cannot become nobody in group lite");
                _exit(2);
            }
            int rc = 3;
            try {
                const uint64_t mine =
                    opt.calls == 0
                        ? 0
                        : per + (static_cast<uint64_t>(w) < opt.calls % static_cast<uint64_t>(opt.workers) ? 1 : 0);
                Worker worker(w, opt, sh, quota_bytes);
                rc = worker.run(mine, deadline);
            } catch (const std::exception& e) {
                say("lite-fuzz-ioctl: worker " + std::to_string(w) + ": " + e.what());
            }
            _exit(rc);
        }
        pids.push_back(pid);
    }

    // Wait, watching for calls that do not end.
    uint64_t findings = 0;
    int failed = 0;
    std::vector<bool> reaped(pids.size(), false);
    std::vector<bool> killed(pids.size(), false); // by the watchdog
    std::vector<uint64_t> last_calls(pids.size(), 0);
    std::vector<int64_t> last_change(pids.size(), now_ms());
    size_t left = pids.size();
    int64_t last_report = now_ms();
    while (left > 0) {
        for (size_t w = 0; w < pids.size(); w++) {
            if (reaped[w])
                continue;
            int st = 0;
            const pid_t r = waitpid(pids[w], &st, WNOHANG);
            if (r != pids[w])
                continue;
            reaped[w] = true;
            left--;
            if (WIFSIGNALED(st) && !killed[w]) {
                findings++;
                say("lite-fuzz-ioctl: FINDING: worker " + std::to_string(w) + " was killed by signal " +
                    std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + "); its last call:\n" +
                    current(sh->slot[w]));
            } else if (WEXITSTATUS(st) >= 2) {
                failed++;
                say("lite-fuzz-ioctl: worker " + std::to_string(w) + " failed (exit " +
                    std::to_string(WEXITSTATUS(st)) + ")");
            }
        }
        const int64_t now = now_ms();
        for (size_t w = 0; w < pids.size(); w++) {
            const uint64_t calls = sh->slot[w].calls.load();
            if (calls != last_calls[w]) {
                last_calls[w] = calls;
                last_change[w] = now;
            }
            const int64_t since = sh->slot[w].busy_since_ms.load();
            const int64_t limit = int64_t{opt.hang_seconds} * 1000;
            const bool stuck = since != 0 && now - since >= limit;
            const bool stalled = now - last_change[w] >= limit; // also outside a call
            if (reaped[w] || killed[w] || (!stuck && !stalled))
                continue;
            findings++;
            say("lite-fuzz-ioctl: FINDING: worker " + std::to_string(w) + " made no call for " +
                std::to_string((now - last_change[w]) / 1000) + " s" +
                (since != 0 ? ", busy for " + std::to_string((now - since) / 1000) + " s with: " : ", last: ") +
                current(sh->slot[w]));
            dump_stacks(pids[w]);
            sh->slot[w].busy_since_ms.store(0);
            killed[w] = true;
            kill(pids[w], SIGKILL);
        }
        if (opt.verbose && now - last_report >= 10000) {
            uint64_t calls = 0;
            for (int w = 0; w < opt.workers; w++)
                calls += sh->slot[static_cast<size_t>(w)].calls.load();
            say("lite-fuzz-ioctl: " + std::to_string(calls) + " calls so far");
            last_report = now;
        }
        if (left > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();

    uint64_t calls = 0;
    uint64_t ioctls = 0;
    uint64_t urings = 0;
    uint64_t notes = 0;
    uint64_t verified = 0;
    uint64_t payloads = 0;
    uint64_t dsm_calls = 0;
    uint64_t dsm_maps = 0;
    uint64_t dsm_loads = 0;
    uint64_t dsm_stores = 0;
    uint64_t dsm_sigbus = 0;
    uint64_t dsm_sigbus_dead = 0;
    uint64_t dsm_sigbus_odd = 0;
    uint64_t dsm_verified = 0;
    std::array<std::array<std::array<uint64_t, kErrMax>, 2>, C_COUNT> results{};
    for (int w = 0; w < opt.workers; w++) {
        const Slot& s = sh->slot[static_cast<size_t>(w)];
        calls += s.calls.load();
        ioctls += s.ioctls.load();
        urings += s.urings.load();
        findings += s.findings.load();
        notes += s.notes.load();
        verified += s.verified_bytes.load();
        payloads += s.payloads.load();
        dsm_calls += s.dsm_calls.load();
        dsm_maps += s.dsm_maps.load();
        dsm_loads += s.dsm_loads.load();
        dsm_stores += s.dsm_stores.load();
        dsm_sigbus += s.dsm_sigbus.load();
        dsm_sigbus_dead += s.dsm_sigbus_dead.load();
        dsm_sigbus_odd += s.dsm_sigbus_odd.load();
        dsm_verified += s.dsm_verified.load();
        for (size_t c = 0; c < C_COUNT; c++) {
            for (size_t u = 0; u < 2; u++) {
                for (size_t e = 0; e < kErrMax; e++)
                    results[c][u][e] += s.results[c][u][e];
            }
        }
    }

    // What the commands answered, most frequent first.
    for (size_t c = 0; c < C_COUNT; c++) {
        for (size_t u = 0; u < 2; u++) {
            uint64_t total = 0;
            std::vector<std::pair<uint64_t, size_t>> by;
            for (size_t e = 0; e < kErrMax; e++) {
                total += results[c][u][e];
                if (results[c][u][e] != 0)
                    by.emplace_back(results[c][u][e], e);
            }
            if (total == 0)
                continue;
            std::sort(by.rbegin(), by.rend());
            const bool syscall = c == C_DSM_MMAP || c == C_DSM_CLOSE;
            std::string line = std::string("  ") + (u != 0 ? "io_uring " : (syscall ? "syscall  " : "ioctl    ")) +
                               cmds()[c].name + ": " + std::to_string(total);
            for (size_t k = 0; k < by.size() && k < 8; k++) {
                line += (k == 0 ? " (" : ", ") +
                        (by[k].second == 0 ? std::string("ok") : ename(static_cast<int>(by[k].second))) + " " +
                        std::to_string(by[k].first);
            }
            say(line + (by.empty() ? "" : ")"));
        }
    }
    say("lite-fuzz-ioctl: " + std::to_string(verified) + " LMR bytes verified against shadow copies, " +
        std::to_string(payloads) + " RPC payloads checked, " + std::to_string(notes) +
        " errnos documented only for other commands");
    say("lite-fuzz-ioctl: DSM: " + std::to_string(dsm_maps) + " mappings, " + std::to_string(dsm_loads) + " loads, " +
        std::to_string(dsm_stores) + " stores, " + std::to_string(dsm_sigbus) + " accesses ended by SIGBUS (" +
        std::to_string(dsm_sigbus_dead) + " in regions the worker had destroyed, " + std::to_string(dsm_sigbus_odd) +
        " in live regions only the worker used), " + std::to_string(dsm_verified) + " words read as expected");

    // Everything the workers held must be gone, the cluster whole.
    std::string why;
    if (!lite_guest::wait_until([&] { return counters_back(dev, inst, why); }, std::chrono::seconds(30))) {
        findings++;
        say("lite-fuzz-ioctl: FINDING: 30 s after the workers exited, memory or in-flight counters are not back to "
            "zero:" +
            why);
    }
    const bool whole = lite_guest::wait_until(
        [&] {
            return std::all_of(inst.begin(), inst.end(),
                               [&](uint32_t i) { return lite_guest::live_members(dev, i).size() == kNodes; });
        },
        std::chrono::seconds(30));
    if (!whole) {
        findings++;
        say("lite-fuzz-ioctl: FINDING: the cluster lost members during the campaign");
    }
    if (std::string s = sanity(inst, ids); !s.empty()) {
        findings++;
        say("lite-fuzz-ioctl: FINDING: after the campaign, root cannot use the cluster: " + s);
    }
    if (!old_quota.empty() && opt.quota_mb != 0)
        write_text(quota_path, old_quota);
    for (size_t i = kNodes; i-- > 0;) {
        try {
            dev.down(inst[i]);
        } catch (const lite::Error& e) {
            findings++;
            say(std::string("lite-fuzz-ioctl: FINDING: taking node down: ") + e.what());
        }
    }

    std::array<char, 512> line{};
    (void)std::snprintf(line.data(), line.size(),
                        "lite-fuzz-ioctl: %" PRIu64 " calls (%" PRIu64 " ioctl, %" PRIu64 " io_uring, %" PRIu64
                        " DSM mmap and close) in %.1f s, %d workers, seed %" PRIu64 ", %" PRIu64 " findings",
                        calls, ioctls, urings, dsm_calls, secs, opt.workers, opt.seed, findings);
    std::printf("%s\n", line.data());
    (void)std::fflush(stdout);
    if (const char* out = std::getenv("LITE_OUT"); out != nullptr && *out != 0) {
        std::array<char, 512> js{};
        (void)std::snprintf(js.data(), js.size(),
                            "{\"calls\": %" PRIu64 ", \"ioctl\": %" PRIu64 ", \"uring\": %" PRIu64
                            ", \"dsm_calls\": %" PRIu64 ", \"dsm_maps\": %" PRIu64 ", \"dsm_accesses\": %" PRIu64
                            ", \"dsm_sigbus\": %" PRIu64 ", \"seconds\": %.1f, \"findings\": %" PRIu64
                            ", \"seed\": %" PRIu64 ", \"workers\": %d, \"notes\": %" PRIu64 ", \"failed_workers\": %d}",
                            calls, ioctls, urings, dsm_calls, dsm_maps, dsm_loads + dsm_stores, dsm_sigbus, secs,
                            findings, opt.seed, opt.workers, notes, failed);
        if (!write_text(std::string(out) + "/fuzz-ioctl.json", js.data()))
            say("lite-fuzz-ioctl: cannot write " + std::string(out) + "/fuzz-ioctl.json");
    }
    return findings != 0 || failed != 0 ? 1 : 0;
}

} // namespace

int main(int argc, char** argv)
{
    Options opt;
    if (!parse(argc, argv, opt)) {
        usage();
        return 2;
    }
    try {
        return parent(opt);
    } catch (const std::exception& e) {
        say(std::string("lite-fuzz-ioctl: ") + e.what());
        return 2;
    }
}
