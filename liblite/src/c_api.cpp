// SPDX-License-Identifier: MIT
// The C API (lite/lite.h): thin ioctl wrappers returning -errno.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <lite/lite.h>
#include <memory>
#include <new>

struct lite_session {
    int fd = -1;
    uint32_t node_id = 0;
};

namespace
{

int do_ioctl(const lite_t* l, unsigned long cmd, void* arg) noexcept
{
    if (l == nullptr)
        return -EINVAL;
    return ::ioctl(l->fd, cmd, arg) < 0 ? -errno : 0;
}

// Copy a name into a fixed, zero-padded uapi field.
int put_name(char (&dst)[LITE_NAME_MAX], const char* name) noexcept
{
    if (name == nullptr)
        return -EINVAL;
    size_t n = strnlen(name, LITE_NAME_MAX);
    if (n == 0 || n >= LITE_NAME_MAX)
        return -ENAMETOOLONG;
    std::memset(dst, 0, sizeof(dst));
    std::memcpy(dst, name, n);
    return 0;
}

// LOCK, UNLOCK: one word of an LMR.
int lock_ioctl(const lite_t* l, unsigned long cmd, lite_lmr_t lmr, uint64_t offset, uint32_t timeout_ms,
               uint32_t flags) noexcept
{
    lite_lock k{};
    k.handle = lmr;
    k.offset = offset;
    k.timeout_ms = timeout_ms;
    k.flags = flags;
    return do_ioctl(l, cmd, &k);
}

} // namespace

extern "C" {

int LITE_open(unsigned int instance, lite_t** out)
{
    if (out == nullptr)
        return -EINVAL;
    auto l = std::unique_ptr<lite_session>(new (std::nothrow) lite_session);
    if (!l)
        return -ENOMEM;
    l->fd = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    if (l->fd < 0)
        return -errno;
    lite_attach at{};
    at.instance = instance;
    int ret = do_ioctl(l.get(), LITE_IOC_ATTACH, &at);
    if (ret < 0) {
        ::close(l->fd);
        return ret;
    }
    l->node_id = at.node_id;
    *out = l.release();
    return 0;
}

int LITE_open_default(lite_t** out)
{
    int fd = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    uint32_t ids[2] = {};
    lite_info info{};
    info.instances_ptr = reinterpret_cast<uintptr_t>(ids);
    info.instances_cap = 2;
    int ret = ::ioctl(fd, LITE_IOC_GET_INFO, &info) < 0 ? -errno : 0;
    ::close(fd);
    if (ret < 0)
        return ret;
    if (info.n_instances == 0)
        return -ENOENT;
    if (info.n_instances > 1)
        return -EEXIST;
    return LITE_open(ids[0], out);
}

void LITE_close(lite_t* l)
{
    // Take back what LITE_open released to the caller.
    const std::unique_ptr<lite_session> owned(l);
    if (owned)
        ::close(owned->fd);
}

uint32_t LITE_node_id(const lite_t* l)
{
    return l != nullptr ? l->node_id : 0;
}

int LITE_fd(const lite_t* l)
{
    return l != nullptr ? l->fd : -EINVAL;
}

int LITE_alloc(lite_t* l, uint64_t size, uint32_t node, lite_lmr_t* lmr)
{
    return LITE_alloc_flags(l, size, node, 0, lmr);
}

int LITE_alloc_flags(lite_t* l, uint64_t size, uint32_t node, uint32_t flags, lite_lmr_t* lmr)
{
    if (lmr == nullptr)
        return -EINVAL;
    lite_lmr_alloc a{};
    a.size = size;
    a.node_id = node;
    a.flags = flags;
    int ret = do_ioctl(l, LITE_IOC_LMR_ALLOC, &a);
    if (ret == 0)
        *lmr = a.handle;
    return ret;
}

int LITE_free(lite_t* l, lite_lmr_t lmr)
{
    lite_lmr_free f{};
    f.handle = lmr;
    return do_ioctl(l, LITE_IOC_LMR_FREE, &f);
}

int LITE_read_flags(lite_t* l, lite_lmr_t lmr, uint64_t offset, void* buf, uint64_t len, uint32_t flags)
{
    lite_rw rw{};
    rw.handle = lmr;
    rw.offset = offset;
    rw.len = len;
    rw.buf = reinterpret_cast<uintptr_t>(buf);
    rw.flags = flags;
    return do_ioctl(l, LITE_IOC_READ, &rw);
}

int LITE_write_flags(lite_t* l, lite_lmr_t lmr, uint64_t offset, const void* buf, uint64_t len, uint32_t flags)
{
    lite_rw rw{};
    rw.handle = lmr;
    rw.offset = offset;
    rw.len = len;
    rw.buf = reinterpret_cast<uintptr_t>(buf);
    rw.flags = flags;
    return do_ioctl(l, LITE_IOC_WRITE, &rw);
}

int LITE_read(lite_t* l, lite_lmr_t lmr, uint64_t offset, void* buf, uint64_t len)
{
    return LITE_read_flags(l, lmr, offset, buf, len, 0);
}

int LITE_write(lite_t* l, lite_lmr_t lmr, uint64_t offset, const void* buf, uint64_t len)
{
    return LITE_write_flags(l, lmr, offset, buf, len, 0);
}

int LITE_fetch_add(lite_t* l, lite_lmr_t lmr, uint64_t offset, uint64_t add, uint64_t* old)
{
    lite_atomic a{};
    a.handle = lmr;
    a.offset = offset;
    a.operand = add;
    int ret = do_ioctl(l, LITE_IOC_FETCH_ADD, &a);
    if (ret == 0 && old != nullptr)
        *old = a.result;
    return ret;
}

int LITE_cmp_swap(lite_t* l, lite_lmr_t lmr, uint64_t offset, uint64_t expected, uint64_t desired, uint64_t* old)
{
    lite_atomic a{};
    a.handle = lmr;
    a.offset = offset;
    a.operand = expected;
    a.swap = desired;
    int ret = do_ioctl(l, LITE_IOC_CMP_SWAP, &a);
    if (ret == 0 && old != nullptr)
        *old = a.result;
    return ret;
}

int LITE_memset(lite_t* l, lite_lmr_t lmr, uint64_t offset, int value, uint64_t len)
{
    if (value < 0 || value > 255)
        return -EINVAL;
    lite_memset m{};
    m.handle = lmr;
    m.offset = offset;
    m.len = len;
    m.value = static_cast<uint32_t>(value);
    return do_ioctl(l, LITE_IOC_MEMSET, &m);
}

int LITE_memcpy(lite_t* l, lite_lmr_t dst, uint64_t dst_offset, lite_lmr_t src, uint64_t src_offset, uint64_t len)
{
    lite_memcpy m{};
    m.dst_handle = dst;
    m.dst_offset = dst_offset;
    m.src_handle = src;
    m.src_offset = src_offset;
    m.len = len;
    return do_ioctl(l, LITE_IOC_MEMCPY, &m);
}

int64_t LITE_sendfile(lite_t* l, int fd, uint64_t file_offset, uint64_t len, lite_lmr_t lmr, uint64_t lmr_offset)
{
    lite_sendfile s{};
    s.handle = lmr;
    s.lmr_offset = lmr_offset;
    s.file_offset = file_offset;
    s.len = len;
    s.fd = fd;
    int ret = do_ioctl(l, LITE_IOC_SENDFILE, &s);
    return ret < 0 ? ret : static_cast<int64_t>(s.sent);
}

int LITE_share(lite_t* l, lite_lmr_t lmr, const char* name, uint32_t perms)
{
    lite_share s{};
    s.handle = lmr;
    s.perms = perms;
    int ret = put_name(s.name, name);
    return ret < 0 ? ret : do_ioctl(l, LITE_IOC_SHARE, &s);
}

int LITE_map(lite_t* l, const char* name, uint32_t perms, lite_lmr_t* lmr, uint64_t* size)
{
    if (lmr == nullptr)
        return -EINVAL;
    lite_map m{};
    m.perms = perms;
    int ret = put_name(m.name, name);
    if (ret == 0)
        ret = do_ioctl(l, LITE_IOC_MAP, &m);
    if (ret == 0) {
        *lmr = m.handle;
        if (size != nullptr)
            *size = m.size;
    }
    return ret;
}

int LITE_revoke(lite_t* l, const char* name)
{
    lite_revoke r{};
    int ret = put_name(r.name, name);
    return ret < 0 ? ret : do_ioctl(l, LITE_IOC_REVOKE, &r);
}

int LITE_dsm_open(lite_t* l, const char* name, uint64_t size, uint32_t flags, int* fd, uint64_t* size_out,
                  uint32_t* home)
{
    if (fd == nullptr)
        return -EINVAL;
    lite_dsm_open o{};
    o.size = size;
    o.flags = flags;
    int ret = put_name(o.name, name);
    if (ret == 0)
        ret = do_ioctl(l, LITE_IOC_DSM_OPEN, &o);
    if (ret == 0) {
        *fd = o.fd;
        if (size_out != nullptr)
            *size_out = o.size;
        if (home != nullptr)
            *home = o.home;
    }
    return ret;
}

int LITE_dsm_destroy(int region_fd)
{
    lite_dsm_destroy d{};
    return ::ioctl(region_fd, LITE_IOC_DSM_DESTROY, &d) < 0 ? -errno : 0;
}

int LITE_rpc_register(lite_t* l, uint32_t port)
{
    lite_rpc_port p{};
    p.port = port;
    return do_ioctl(l, LITE_IOC_RPC_REGISTER, &p);
}

int LITE_rpc_unregister(lite_t* l, uint32_t port)
{
    lite_rpc_port p{};
    p.port = port;
    return do_ioctl(l, LITE_IOC_RPC_UNREGISTER, &p);
}

int LITE_rpc_call(lite_t* l, uint32_t node, uint32_t port, const void* req, size_t req_len, void* reply,
                  size_t reply_cap, size_t* reply_len, uint32_t timeout_ms)
{
    lite_rpc_call c{};
    c.node_id = node;
    c.port = port;
    c.req_ptr = reinterpret_cast<uintptr_t>(req);
    c.req_len = req_len;
    c.reply_ptr = reinterpret_cast<uintptr_t>(reply);
    c.reply_cap = reply_cap;
    c.timeout_ms = timeout_ms;
    int ret = do_ioctl(l, LITE_IOC_RPC_CALL, &c);
    if (reply_len != nullptr)
        *reply_len = ret == 0 || ret == -EMSGSIZE ? static_cast<size_t>(c.reply_len) : 0;
    return ret;
}

namespace
{

// (static: extern "C" names keep external linkage in an unnamed namespace)
static lite_rpc_recv recv_args(uint32_t port, void* buf, size_t cap, uint32_t timeout_ms)
{
    lite_rpc_recv r{};
    r.port = port;
    r.timeout_ms = timeout_ms;
    r.buf_ptr = reinterpret_cast<uintptr_t>(buf);
    r.buf_cap = cap;
    return r;
}

// What LITE_IOC_RPC_RECV (alone or after a reply) returned, into @in.
static void recv_result(int ret, const lite_rpc_recv& r, lite_rpc_in_t* in)
{
    if (ret == 0) {
        in->token = r.token;
        in->src_node = r.src_node;
        in->len = r.len;
    } else if (ret == -EMSGSIZE) {
        in->src_node = r.src_node;
        in->len = r.len;
    }
}

} // namespace

int LITE_rpc_recv(lite_t* l, uint32_t port, void* buf, size_t cap, uint32_t timeout_ms, lite_rpc_in_t* in)
{
    if (in == nullptr)
        return -EINVAL;
    lite_rpc_recv r = recv_args(port, buf, cap, timeout_ms);
    int ret = do_ioctl(l, LITE_IOC_RPC_RECV, &r);
    *in = lite_rpc_in_t{};
    recv_result(ret, r, in);
    return ret;
}

int LITE_rpc_reply_recv(lite_t* l, uint64_t token, const void* reply, size_t len, uint32_t port, void* buf, size_t cap,
                        uint32_t timeout_ms, lite_rpc_in_t* in)
{
    if (in == nullptr)
        return -EINVAL;
    lite_rpc_reply_recv rr{};
    rr.reply.token = token;
    rr.reply.buf_ptr = reinterpret_cast<uintptr_t>(reply);
    rr.reply.len = len;
    rr.recv = recv_args(port, buf, cap, timeout_ms);
    int ret = do_ioctl(l, LITE_IOC_RPC_REPLY_RECV, &rr);
    *in = lite_rpc_in_t{};
    if (rr.reply.token != 0) {
        // The reply failed, and the kernel received nothing: receive now
        // (a module without the combined call sends the reply first).
        in->reply_status = ret == -ENOTTY ? LITE_rpc_reply(l, token, reply, len) : ret;
        lite_rpc_recv r = recv_args(port, buf, cap, timeout_ms);
        ret = do_ioctl(l, LITE_IOC_RPC_RECV, &r);
        recv_result(ret, r, in);
        return ret;
    }
    recv_result(ret, rr.recv, in);
    return ret;
}

int LITE_rpc_reply(lite_t* l, uint64_t token, const void* buf, size_t len)
{
    lite_rpc_reply r{};
    r.token = token;
    r.buf_ptr = reinterpret_cast<uintptr_t>(buf);
    r.len = len;
    return do_ioctl(l, LITE_IOC_RPC_REPLY, &r);
}

int LITE_msg_send(lite_t* l, uint32_t node, uint32_t port, const void* buf, size_t len, uint32_t timeout_ms)
{
    lite_msg_send m{};
    m.node_id = node;
    m.port = port;
    m.buf_ptr = reinterpret_cast<uintptr_t>(buf);
    m.len = len;
    m.timeout_ms = timeout_ms;
    return do_ioctl(l, LITE_IOC_MSG_SEND, &m);
}

int LITE_lock(lite_t* l, lite_lmr_t lmr, uint64_t offset, uint32_t timeout_ms)
{
    return lock_ioctl(l, LITE_IOC_LOCK, lmr, offset, timeout_ms, 0);
}

int LITE_trylock(lite_t* l, lite_lmr_t lmr, uint64_t offset)
{
    return lock_ioctl(l, LITE_IOC_LOCK, lmr, offset, 0, LITE_LOCK_TRY);
}

int LITE_unlock(lite_t* l, lite_lmr_t lmr, uint64_t offset)
{
    return lock_ioctl(l, LITE_IOC_UNLOCK, lmr, offset, 0, 0);
}

int LITE_barrier(lite_t* l, lite_lmr_t lmr, uint64_t offset, uint32_t count, uint32_t timeout_ms)
{
    lite_barrier b{};
    b.handle = lmr;
    b.offset = offset;
    b.count = count;
    b.timeout_ms = timeout_ms;
    return do_ioctl(l, LITE_IOC_BARRIER, &b);
}

const char* LITE_strerror(int err)
{
    switch (-err) {
    case EBADF:
        return "no such LMR handle in this lite_t";
    case EKEYREVOKED:
        return "the LMR was freed or its mapping revoked";
    case EACCES:
        return "the handle lacks the permission";
    case ERANGE:
        return "the range leaves the LMR";
    case EOVERFLOW:
        return "offset + length overflows";
    case EBADFD:
        return "not attached to a node";
    case ENOTCONN:
        return "no connection to the node holding the memory";
    case EHOSTUNREACH:
        return "no such node, or no manager to ask";
    case E2BIG:
        return "LMR larger than LITE_LMR_MAX";
    case EDQUOT:
        return "this user's LMR quota on the node is used up (quota_mb)";
    case EMSGSIZE:
        return "message larger than the buffer or LITE_RPC_MAX";
    default:
        return std::strerror(-err);
    }
}

} // extern "C"
