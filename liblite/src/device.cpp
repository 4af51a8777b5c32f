// SPDX-License-Identifier: MIT
// lite::Device: the control commands of /dev/lite.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <lite/lite.hpp>
#include <utility>

namespace lite
{

Device Device::open(const char* path)
{
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        throw Error(errno, std::string("open ") + path);
    return Device(fd);
}

Device::Device(Device&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

Device& Device::operator=(Device&& other) noexcept
{
    if (this != &other) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

Device::~Device()
{
    if (fd_ >= 0)
        ::close(fd_);
}

int Device::ioctl_raw(unsigned long cmd, void* arg) const noexcept
{
    return ::ioctl(fd_, cmd, arg) < 0 ? -errno : 0;
}

void Device::ioctl_or_throw(unsigned long cmd, void* arg, const char* what) const
{
    int ret = ioctl_raw(cmd, arg);
    if (ret < 0)
        throw Error(-ret, what);
}

uint32_t Device::abi_version() const
{
    lite_info info{};
    ioctl_or_throw(LITE_IOC_GET_INFO, &info, "get info");
    return info.abi_version;
}

std::vector<uint32_t> Device::instances() const
{
    for (;;) {
        lite_info info{};
        ioctl_or_throw(LITE_IOC_GET_INFO, &info, "list instances");
        std::vector<uint32_t> ids(info.n_instances);
        info = {};
        info.instances_ptr = reinterpret_cast<uintptr_t>(ids.data());
        info.instances_cap = static_cast<uint32_t>(ids.size());
        ioctl_or_throw(LITE_IOC_GET_INFO, &info, "list instances");
        if (info.n_instances <= ids.size()) {
            ids.resize(info.n_instances);
            return ids;
        }
        // More appeared meanwhile: ask again.
    }
}

UpResult Device::up(const UpParams& params) const
{
    lite_node_up up{};

    if (params.device.size() >= sizeof(up.dev_name))
        throw Error(EINVAL, "device name '" + params.device + "' is too long");
    std::memcpy(up.dev_name, params.device.data(), params.device.size());
    up.port_num = params.port;
    up.listen = params.listen.addr;
    if (params.join) {
        up.flags |= LITE_UP_JOIN;
        up.join = params.join->addr;
    }
    up.secret_ptr = reinterpret_cast<uintptr_t>(params.secret.data());
    up.secret_len = static_cast<uint32_t>(params.secret.size());
    up.timeout_ms = static_cast<uint32_t>(params.timeout.count());
    up.cq_mode = params.cq_mode;
    up.isolation = params.isolation;
    ioctl_or_throw(LITE_IOC_NODE_UP, &up, params.join ? "join" : "up");
    return {up.instance, up.node_id};
}

void Device::down(uint32_t instance) const
{
    lite_node_down down{};
    down.instance = instance;
    ioctl_or_throw(LITE_IOC_NODE_DOWN, &down, "down");
}

NodeStatus Device::status(uint32_t instance) const
{
    std::vector<lite_member_info> mi(LITE_MAX_NODES);
    lite_node_status st{};

    st.instance = instance;
    st.members_ptr = reinterpret_cast<uintptr_t>(mi.data());
    st.members_cap = static_cast<uint32_t>(mi.size());
    ioctl_or_throw(LITE_IOC_NODE_STATUS, &st, "status");

    NodeStatus out;
    out.instance = instance;
    out.node_id = st.node_id;
    out.manager_id = st.manager_id;
    out.epoch = st.epoch;
    out.device = std::string(st.dev_name, strnlen(st.dev_name, sizeof(st.dev_name)));
    out.port = st.port_num;
    out.cq_mode = st.cq_mode;
    out.isolation = (st.flags & LITE_STATUS_ISOLATED) != 0 ? LITE_ISOLATION_LMR : LITE_ISOLATION_GLOBAL;
    out.async_inflight = st.async_inflight;
    out.async_peak = st.async_peak;
    out.reconnects = st.reconnects;
    out.expelled = (st.flags & LITE_STATUS_EXPELLED) != 0;
    out.no_manager = (st.flags & LITE_STATUS_NO_MANAGER) != 0;
    out.listen.addr = st.listen;
    out.counters = st.counters;
    out.dsm = st.dsm;
    out.lease = st.lease;
    for (uint32_t i = 0; i < st.n_members && i < mi.size(); i++) {
        const auto& m = mi[i];
        Member mem;
        mem.node_id = m.node_id;
        mem.state = static_cast<lite_peer_state>(m.state);
        mem.addr.addr = m.addr;
        mem.tx_msgs = m.tx_msgs;
        mem.rx_msgs = m.rx_msgs;
        mem.tx_bytes = m.tx_bytes;
        mem.rx_bytes = m.rx_bytes;
        mem.last_rtt = std::chrono::nanoseconds(m.last_rtt_ns);
        mem.credits = m.credits;
        mem.backlog = m.backlog;
        out.members.push_back(mem);
    }
    return out;
}

std::chrono::nanoseconds Device::ping(uint32_t instance, uint32_t node_id, std::chrono::milliseconds timeout) const
{
    lite_ping p{};
    p.instance = instance;
    p.node_id = node_id;
    p.timeout_ms = static_cast<uint32_t>(timeout.count());
    ioctl_or_throw(LITE_IOC_PING, &p, "ping");
    return std::chrono::nanoseconds(p.rtt_ns);
}

const char* peer_state_name(lite_peer_state state) noexcept
{
    switch (state) {
    case LITE_PEER_SELF:
        return "self";
    case LITE_PEER_CONNECTING:
        return "connecting";
    case LITE_PEER_CONNECTED:
        return "connected";
    case LITE_PEER_DOWN:
        return "down";
    }
    return "unknown";
}

const char* cq_mode_name(uint32_t mode) noexcept
{
    switch (mode) {
    case LITE_CQ_DEFAULT:
        return "default";
    case LITE_CQ_BUSY:
        return "busy";
    case LITE_CQ_SOFTIRQ:
        return "softirq";
    case LITE_CQ_WORKQUEUE:
        return "workqueue";
    case LITE_CQ_ADAPTIVE:
        return "adaptive";
    case LITE_CQ_POLL:
        return "poll";
    default:
        return "unknown";
    }
}

std::optional<uint32_t> parse_cq_mode(std::string_view name) noexcept
{
    for (uint32_t mode = LITE_CQ_DEFAULT + 1; mode <= LITE_CQ_MODE_MAX; mode++) {
        if (name == cq_mode_name(mode))
            return mode;
    }
    return std::nullopt;
}

const char* isolation_name(uint32_t mode) noexcept
{
    switch (mode) {
    case LITE_ISOLATION_DEFAULT:
        return "default";
    case LITE_ISOLATION_GLOBAL:
        return "global";
    case LITE_ISOLATION_LMR:
        return "lmr";
    default:
        return "unknown";
    }
}

std::optional<uint32_t> parse_isolation(std::string_view name) noexcept
{
    for (uint32_t mode = LITE_ISOLATION_DEFAULT + 1; mode <= LITE_ISOLATION_MAX; mode++) {
        if (name == isolation_name(mode))
            return mode;
    }
    return std::nullopt;
}

std::vector<uint8_t> read_secret_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(errno ? errno : ENOENT, "cannot read secret file '" + path + "'");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!bytes.empty() && bytes.back() == '\n')
        bytes.pop_back();
    if (bytes.size() < LITE_SECRET_MIN || bytes.size() > LITE_SECRET_MAX) {
        throw Error(EINVAL, "secret file '" + path + "' must hold " + std::to_string(LITE_SECRET_MIN) + ".." +
                                std::to_string(LITE_SECRET_MAX) + " bytes, it holds " + std::to_string(bytes.size()));
    }
    return bytes;
}

} // namespace lite
