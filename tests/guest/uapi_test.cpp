// SPDX-License-Identifier: MIT
// The ioctl uapi: every rejection, with its own errno, and nothing created.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <lite/async.h>
#include <lite/lite.h>
#include <string>

#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 18700;

class Uapi : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        down_all(*dev_);
    }
    void TearDown() override { down_all(*dev_); }

    // A NODE_UP request that would succeed as a new manager.
    lite_node_up good_up(uint16_t port = kPort)
    {
        lite_node_up u{};
        // Bounded copy; u is zeroed, so dev_name stays NUL-terminated.
        env("LITE_RXE", "rxe0").copy(u.dev_name, sizeof(u.dev_name) - 1);
        u.listen = endpoint(port).addr;
        u.secret_ptr = reinterpret_cast<uintptr_t>(secret().data());
        u.secret_len = static_cast<uint32_t>(secret().size());
        return u;
    }

    int up_errno(lite_node_up u) { return -dev_->ioctl_raw(LITE_IOC_NODE_UP, &u); }

    std::unique_ptr<lite::Device> dev_;
};

TEST_F(Uapi, GoodRequestWorks)
{
    auto u = good_up();
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0);
    EXPECT_EQ(u.node_id, 1u);
    EXPECT_EQ(dev_->abi_version(), static_cast<uint32_t>(LITE_ABI_VERSION));
}

TEST_F(Uapi, UnknownCommandIsEnotty)
{
    lite_info info{};
    EXPECT_EQ(dev_->ioctl_raw(_IOWR(LITE_IOC_MAGIC, 0x7f, lite_info), &info), -ENOTTY);
    EXPECT_EQ(dev_->ioctl_raw(_IOWR('x', 0x00, lite_info), &info), -ENOTTY);
}

TEST_F(Uapi, BadPointerIsEfault)
{
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, reinterpret_cast<void*>(8)), -EFAULT);
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_GET_INFO, nullptr), -EFAULT);
    auto u = good_up();
    u.secret_ptr = 8;
    EXPECT_EQ(up_errno(u), EFAULT) << "secret pointer";
}

TEST_F(Uapi, NodeUpRejections)
{
    auto u = good_up();
    u.flags = 1u << 7;
    EXPECT_EQ(up_errno(u), EINVAL) << "unknown flag";

    u = good_up();
    u.reserved[1] = 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "reserved";

    u = good_up();
    u.instance = 3;
    EXPECT_EQ(up_errno(u), EINVAL) << "output field not zero";

    u = good_up();
    std::memset(u.dev_name, 'x', sizeof(u.dev_name));
    EXPECT_EQ(up_errno(u), EINVAL) << "device name not terminated";

    u = good_up();
    u.dev_name[0] = 0;
    EXPECT_EQ(up_errno(u), EINVAL) << "empty device name";

    u = good_up();
    u.join = endpoint(kPort + 1).addr;
    EXPECT_EQ(up_errno(u), EINVAL) << "join address without LITE_UP_JOIN";

    u = good_up();
    u.timeout_ms = 3600 * 1000;
    EXPECT_EQ(up_errno(u), EINVAL) << "timeout too long";

    u = good_up();
    u.secret_len = 0;
    EXPECT_EQ(up_errno(u), ENOKEY) << "no secret";

    u = good_up();
    u.secret_len = LITE_SECRET_MIN - 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "secret too short";

    u = good_up();
    u.secret_len = LITE_SECRET_MAX + 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "secret too long";

    u = good_up();
    u.listen.family = 77;
    EXPECT_EQ(up_errno(u), EAFNOSUPPORT) << "family";

    u = good_up();
    u.listen.port = 0;
    EXPECT_EQ(up_errno(u), EINVAL) << "port 0";

    u = good_up();
    u.listen.reserved = 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "address reserved";

    u = good_up();
    u.listen.addr[8] = 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "IPv4 address with trailing bytes";

    u = good_up();
    std::memset(u.listen.addr, 0, sizeof(u.listen.addr));
    EXPECT_EQ(up_errno(u), EINVAL) << "wildcard address";

    u = good_up();
    std::strcpy(u.dev_name, "nosuchdev");
    EXPECT_EQ(up_errno(u), ENODEV) << "no such device";

    u = good_up();
    u.port_num = 9;
    EXPECT_EQ(up_errno(u), ENXIO) << "no such port";

    u = good_up();
    u.flags = LITE_UP_JOIN;
    u.join.family = AF_INET;
    u.join.port = 0;
    EXPECT_EQ(up_errno(u), EINVAL) << "join address invalid";

    EXPECT_TRUE(dev_->instances().empty()) << "no rejected request left a node behind";
}

// The address is the problem when no RDMA device serves it, whether it is
// an address of this host (veth1's, which has no rxe device on it; see
// tools/vm/guest-init.sh) or of none: EADDRNOTAVAIL, as for an address of
// another device. ENODEV is for a device name that does not exist.
TEST_F(Uapi, NodeUpOnAnAddressNoRdmaDeviceServes)
{
    if (env("LITE_GUESTS", "1") != "1")
        GTEST_SKIP() << "needs the one-guest network";
    auto u = good_up();
    u.listen = lite::Endpoint::parse("10.99.0.2:" + std::to_string(kPort)).addr;
    EXPECT_EQ(up_errno(u), EADDRNOTAVAIL) << "an address of this host without an RDMA device";
    u = good_up();
    u.listen = lite::Endpoint::parse("10.99.0.77:" + std::to_string(kPort)).addr;
    EXPECT_EQ(up_errno(u), EADDRNOTAVAIL) << "an address of no interface";
    EXPECT_TRUE(dev_->instances().empty());
}

// A file never attached to a node: every command that needs one fails with
// EBADFD, through ioctl and through io_uring, whatever handle it names.
TEST_F(Uapi, UnattachedFileIsEbadfd)
{
    int fd = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto e = [&](unsigned long cmd, void* arg) { return ioctl(fd, cmd, arg) < 0 ? errno : 0; };
    std::vector<uint8_t> buf(64);
    lite_lmr_alloc al{};
    al.size = 64;
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), EBADFD) << "alloc";
    lite_lmr_free fr{};
    fr.handle = 1;
    EXPECT_EQ(e(LITE_IOC_LMR_FREE, &fr), EBADFD) << "free";
    lite_rw rw{};
    rw.handle = 1;
    rw.len = 8;
    rw.buf = reinterpret_cast<uintptr_t>(buf.data());
    EXPECT_EQ(e(LITE_IOC_READ, &rw), EBADFD) << "read";
    EXPECT_EQ(e(LITE_IOC_WRITE, &rw), EBADFD) << "write";
    lite_atomic at{};
    at.handle = 1;
    EXPECT_EQ(e(LITE_IOC_FETCH_ADD, &at), EBADFD) << "fetch_add";
    EXPECT_EQ(e(LITE_IOC_CMP_SWAP, &at), EBADFD) << "cmp_swap";
    lite_memset ms{};
    ms.handle = 1;
    ms.len = 8;
    EXPECT_EQ(e(LITE_IOC_MEMSET, &ms), EBADFD) << "memset";
    lite_memcpy mc{};
    mc.dst_handle = 1;
    mc.src_handle = 2;
    mc.len = 8;
    EXPECT_EQ(e(LITE_IOC_MEMCPY, &mc), EBADFD) << "memcpy";
    lite_share sh{};
    sh.handle = 1;
    sh.perms = LITE_PERM_READ;
    std::strcpy(sh.name, "x");
    EXPECT_EQ(e(LITE_IOC_SHARE, &sh), EBADFD) << "share";
    lite_map mp{};
    std::strcpy(mp.name, "x");
    EXPECT_EQ(e(LITE_IOC_MAP, &mp), EBADFD) << "map";
    lite_revoke rv{};
    std::strcpy(rv.name, "x");
    EXPECT_EQ(e(LITE_IOC_REVOKE, &rv), EBADFD) << "revoke";
    lite_lock lk{};
    lk.handle = 1;
    EXPECT_EQ(e(LITE_IOC_LOCK, &lk), EBADFD) << "lock";
    EXPECT_EQ(e(LITE_IOC_UNLOCK, &lk), EBADFD) << "unlock";
    lite_barrier br{};
    br.handle = 1;
    br.count = 2;
    EXPECT_EQ(e(LITE_IOC_BARRIER, &br), EBADFD) << "barrier";
    lite_rpc_port rp{};
    rp.port = 5;
    EXPECT_EQ(e(LITE_IOC_RPC_REGISTER, &rp), EBADFD) << "rpc register";

    io_uring r{};
    ASSERT_EQ(io_uring_queue_init(8, &r, IORING_SETUP_SQE128 | IORING_SETUP_CQE32), 0);
    auto one = [&](const std::function<void(io_uring_sqe*)>& prep) {
        io_uring_sqe* sqe = io_uring_get_sqe(&r);
        prep(sqe);
        if (io_uring_submit(&r) != 1)
            return -9999;
        io_uring_cqe* cqe = nullptr;
        if (io_uring_wait_cqe(&r, &cqe) < 0)
            return -9998;
        int res = cqe->res;
        io_uring_cqe_seen(&r, cqe);
        return res;
    };
    EXPECT_EQ(one([&](io_uring_sqe* q) { LITE_prep_read(q, fd, 1, 0, buf.data(), 8); }), -EBADFD) << "async read";
    EXPECT_EQ(one([&](io_uring_sqe* q) { LITE_prep_write(q, fd, 1, 0, buf.data(), 8); }), -EBADFD) << "async write";
    EXPECT_EQ(one([&](io_uring_sqe* q) { LITE_prep_atomic(q, fd, 0, 1, 0, 1, 0); }), -EBADFD) << "async atomic";
    EXPECT_EQ(one([&](io_uring_sqe* q) { LITE_prep_call(q, fd, 2, 5, buf.data(), 8, buf.data(), 8, 0); }), -EBADFD)
        << "async call";
    io_uring_queue_exit(&r);
    ::close(fd);
}

TEST_F(Uapi, NodeDownRejections)
{
    auto u = good_up();
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0);
    lite_node_down d{};
    d.instance = u.instance;
    d.flags = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_DOWN, &d), -EINVAL) << "flags";
    d.flags = 0;
    d.reserved[1] = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_DOWN, &d), -EINVAL) << "reserved";
    d.reserved[1] = 0;
    d.instance = 4242;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_DOWN, &d), -ENOENT) << "no such instance";
    EXPECT_EQ(dev_->instances().size(), 1u);
}

TEST_F(Uapi, StatusRejections)
{
    auto u = good_up();
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0);
    lite_node_status st{};
    st.instance = u.instance;
    st.flags = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "flags is an output";
    st = {};
    st.instance = u.instance;
    st.reconnects = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "reconnects is an output";
    st = {};
    st.instance = u.instance;
    st.cq_mode = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "output field not zero";
    st = {};
    st.instance = u.instance;
    st.async_inflight = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "async_inflight is an output";
    st = {};
    st.instance = u.instance;
    st.async_peak = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "async_peak is an output";
    st = {};
    st.instance = u.instance;
    st.dsm.prot_ns = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "the DSM counters are outputs";
    st = {};
    st.instance = u.instance;
    st.members_cap = 4;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EINVAL) << "capacity without buffer";
    st = {};
    st.instance = 4242;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -ENOENT);
    st = {};
    st.instance = u.instance;
    st.members_cap = 4;
    st.members_ptr = 8;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), -EFAULT) << "bad member buffer";
    st = {};
    st.instance = u.instance;
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), 0) << "no buffer: counts only";
    EXPECT_EQ(st.n_members, 1u);
}

TEST_F(Uapi, CqModeIsCheckedAndReported)
{
    auto u = good_up();
    u.cq_mode = LITE_CQ_MODE_MAX + 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "unknown completion mode";
    EXPECT_TRUE(dev_->instances().empty());
    for (uint32_t mode = LITE_CQ_DEFAULT; mode <= LITE_CQ_MODE_MAX; mode++) {
        u = good_up();
        u.cq_mode = mode;
        ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0) << "mode " << mode;
        lite_node_status st{};
        st.instance = u.instance;
        ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), 0);
        if (mode == LITE_CQ_DEFAULT) {
            EXPECT_GE(st.cq_mode, 1u) << "the default resolves to a real mode";
            EXPECT_LE(st.cq_mode, static_cast<uint32_t>(LITE_CQ_MODE_MAX));
        } else {
            EXPECT_EQ(st.cq_mode, mode);
        }
        lite_node_down d{};
        d.instance = u.instance;
        ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_DOWN, &d), 0);
    }
}

TEST_F(Uapi, IsolationIsCheckedAndReported)
{
    auto u = good_up();
    u.isolation = LITE_ISOLATION_MAX + 1;
    EXPECT_EQ(up_errno(u), EINVAL) << "unknown isolation mode";
    EXPECT_TRUE(dev_->instances().empty());
    // The default is the module's parameter (global unless the run set it).
    std::ifstream param("/sys/module/lite/parameters/isolation");
    uint32_t dflt = 0;
    ASSERT_TRUE(param >> dflt) << "the isolation module parameter";
    for (uint32_t mode = LITE_ISOLATION_DEFAULT; mode <= LITE_ISOLATION_MAX; mode++) {
        u = good_up();
        u.isolation = mode;
        ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0) << "mode " << mode;
        lite_node_status st{};
        st.instance = u.instance;
        ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_STATUS, &st), 0);
        uint32_t want = mode == LITE_ISOLATION_DEFAULT ? dflt : mode;
        EXPECT_EQ((st.flags & LITE_STATUS_ISOLATED) != 0, want == LITE_ISOLATION_LMR) << "mode " << mode;
        lite_node_down d{};
        d.instance = u.instance;
        ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_DOWN, &d), 0);
    }
}

TEST_F(Uapi, PingAndInfoRejections)
{
    auto u = good_up();
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0);
    lite_ping p{};
    p.instance = u.instance;
    p.node_id = 1;
    p.flags = 2;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_PING, &p), -EINVAL) << "flags";
    p.flags = 0;
    p.reserved[0] = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_PING, &p), -EINVAL) << "reserved";
    p.reserved[0] = 0;
    p.rtt_ns = 5;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_PING, &p), -EINVAL) << "output not zero";
    p.rtt_ns = 0;
    p.timeout_ms = 10 * 60 * 1000 + 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_PING, &p), -EINVAL) << "timeout too long";

    lite_info info{};
    info.reserved[0] = 1;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_GET_INFO, &info), -EINVAL) << "reserved";
    info = {};
    info.instances_cap = 2;
    EXPECT_EQ(dev_->ioctl_raw(LITE_IOC_GET_INFO, &info), -EINVAL) << "capacity without buffer";
}

TEST_F(Uapi, ControlNeedsCapNetAdmin)
{
    auto u = good_up();
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // An unprivileged user of lite with the device open.
        if (!become_nobody(true))
            _exit(100);
        auto up2 = good_up(kPort + 1);
        if (ioctl(dev_->fd(), LITE_IOC_NODE_UP, &up2) == 0 || errno != EPERM)
            _exit(1);
        lite_node_down d{};
        d.instance = u.instance;
        if (ioctl(dev_->fd(), LITE_IOC_NODE_DOWN, &d) == 0 || errno != EPERM)
            _exit(2);
        lite_node_status st{};
        st.instance = u.instance;
        if (ioctl(dev_->fd(), LITE_IOC_NODE_STATUS, &st) != 0)
            _exit(3); // reading status is allowed
        _exit(0);
    }
    int status = wait_child_within(pid, 120s);
    ASSERT_NE(status, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: NODE_UP allowed, 2: NODE_DOWN allowed, 3: STATUS refused";
    EXPECT_EQ(dev_->instances().size(), 1u);
}

// /dev/lite belongs to root and group lite, mode 0660 (the install step's
// udev rule): a user outside the group cannot open it; a member can, and
// uses lite (allocate, write, read back) without any privilege.
TEST_F(Uapi, DeviceIsForGroupLiteOnly)
{
    const int gid = lite_gid();
    ASSERT_GE(gid, 0) << "no group lite: run make install-udev (tools/install-udev.sh)";
    struct stat st {
    };
    // udev applies the rule shortly after the module created the node.
    bool applied = wait_until(
        [&] {
            return stat(LITE_DEVICE_PATH, &st) == 0 && st.st_gid == static_cast<gid_t>(gid) &&
                   (st.st_mode & 07777) == 0660;
        },
        std::chrono::seconds(5));
    ASSERT_TRUE(applied) << "/dev/lite is " << std::oct << (st.st_mode & 07777) << std::dec << " gid " << st.st_gid
                         << ", not 0660 gid " << gid;
    EXPECT_EQ(st.st_uid, 0u);

    auto u = good_up();
    ASSERT_EQ(dev_->ioctl_raw(LITE_IOC_NODE_UP, &u), 0);
    auto child = [&](bool in_group) {
        pid_t pid = fork();
        if (pid == 0) {
            if (!become_nobody(in_group))
                _exit(100);
            int fd = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
            if (!in_group)
                _exit(fd < 0 && errno == EACCES ? 0 : 1);
            if (fd < 0)
                _exit(2);
            ::close(fd);
            lite_t* l = nullptr;
            if (LITE_open(u.instance, &l) != 0)
                _exit(3);
            lite_lmr_t h = 0;
            std::array<uint8_t, 4096> out{}, in{};
            for (size_t i = 0; i < out.size(); i++)
                out[i] = static_cast<uint8_t>(i * 7 + 3);
            if (LITE_alloc(l, out.size(), 0, &h) != 0) // on this node
                _exit(4);
            if (LITE_write(l, h, 0, out.data(), out.size()) != 0 || LITE_read(l, h, 0, in.data(), in.size()) != 0 ||
                in != out)
                _exit(5);
            if (LITE_free(l, h) != 0)
                _exit(6);
            LITE_close(l);
            _exit(0);
        }
        if (pid < 0)
            return -1;
        int status = wait_child_within(pid, 120s);
        if (status == -1 || !WIFEXITED(status))
            return -1;
        return WEXITSTATUS(status);
    };
    EXPECT_EQ(child(false), 0) << "outside the group: 1: opened, or not EACCES";
    EXPECT_EQ(child(true), 0) << "in group lite: 2: open, 3: attach, 4: alloc, 5: data, 6: free";
}

} // namespace
