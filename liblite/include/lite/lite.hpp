// SPDX-License-Identifier: MIT
//
// liblite: the C++20 interface to /dev/lite.
//
// Error scheme: every failing call throws lite::Error, a std::system_error
// carrying the errno the kernel returned and the operation that failed.
// (The C API in lite/lite.h returns negative errno values instead.)
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "linux/lite.h" // the uapi header, installed beside this one (lite/linux/lite.h)

namespace lite
{

class Error : public std::system_error
{
public:
    Error(int err, const std::string& what);
    [[nodiscard]] int errnum() const noexcept { return code().value(); }
};

// An IPv4 or IPv6 endpoint, "10.0.0.1:18515" or "[fe80::1]:18515".
struct Endpoint {
    lite_addr addr{};

    // Throws Error(EINVAL) naming the text if it does not parse.
    static Endpoint parse(std::string_view text);
    [[nodiscard]] std::string to_string() const;
    [[nodiscard]] bool empty() const noexcept { return addr.family == 0; }
};

struct UpParams {
    std::string device; // RDMA device, e.g. "rxe0"
    uint32_t port = 0;  // 0 = first port
    Endpoint listen;
    std::optional<Endpoint> join;                // manager to join; none = new cluster
    std::vector<uint8_t> secret;                 // LITE_SECRET_MIN..LITE_SECRET_MAX bytes
    std::chrono::milliseconds timeout{0};        // 0 = kernel default
    uint32_t cq_mode = LITE_CQ_DEFAULT;          // LITE_CQ_*: completion delivery
    uint32_t isolation = LITE_ISOLATION_DEFAULT; // LITE_ISOLATION_*: what peers reach
};

struct UpResult {
    uint32_t instance = 0;
    uint32_t node_id = 0;
};

struct Member {
    uint32_t node_id = 0;
    lite_peer_state state = LITE_PEER_DOWN;
    Endpoint addr;
    uint64_t tx_msgs = 0;
    uint64_t rx_msgs = 0;
    uint64_t tx_bytes = 0;
    uint64_t rx_bytes = 0;
    std::chrono::nanoseconds last_rtt{0};
    uint32_t credits = 0;
    uint32_t backlog = 0;
};

struct NodeStatus {
    uint32_t instance = 0;
    uint32_t node_id = 0;
    uint32_t manager_id = 0;
    uint32_t epoch = 0;
    std::string device;
    uint32_t port = 0;
    uint32_t cq_mode = LITE_CQ_DEFAULT;         // LITE_CQ_* in effect
    uint32_t isolation = LITE_ISOLATION_GLOBAL; // LITE_ISOLATION_* in effect
    Endpoint listen;
    lite_node_counters counters{};
    lite_dsm_counters dsm{};     // DSM regions, pages, faults
    lite_lease_counters lease{}; // allocation leases: hits, stock, granted
    uint32_t async_inflight = 0; // io_uring operations in flight
    uint32_t async_peak = 0;     // the most in flight at once
    uint32_t reconnects = 0;     // connections to members made again
    bool expelled = false;       // the cluster dropped this node
    bool no_manager = false;     // the manager is gone: no joins
    std::vector<Member> members;
};

const char* peer_state_name(lite_peer_state state) noexcept;

// LITE_CQ_* by name: "default", "busy", "softirq", "workqueue", "adaptive",
// "poll"
// ("unknown" for anything else).
const char* cq_mode_name(uint32_t mode) noexcept;
// The LITE_CQ_* a name (other than "default") stands for, if any.
std::optional<uint32_t> parse_cq_mode(std::string_view name) noexcept;

// LITE_ISOLATION_* by name: "default", "global", "lmr" ("unknown" else).
const char* isolation_name(uint32_t mode) noexcept;
// The LITE_ISOLATION_* a name (other than "default") stands for, if any.
std::optional<uint32_t> parse_isolation(std::string_view name) noexcept;

// Read a secret file: its bytes, without one trailing newline.
// Throws Error naming the file and the problem.
std::vector<uint8_t> read_secret_file(const std::string& path);

// An open /dev/lite. Move-only; closes on destruction.
class Device
{
public:
    // Throws Error(ENOENT) if the module is not loaded.
    static Device open(const char* path = LITE_DEVICE_PATH);

    Device(Device&& other) noexcept;
    Device& operator=(Device&& other) noexcept;
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    ~Device();

    [[nodiscard]] int fd() const noexcept { return fd_; }

    [[nodiscard]] uint32_t abi_version() const;
    [[nodiscard]] std::vector<uint32_t> instances() const;
    [[nodiscard]] UpResult up(const UpParams& params) const;
    void down(uint32_t instance) const;
    [[nodiscard]] NodeStatus status(uint32_t instance) const;
    [[nodiscard]] std::chrono::nanoseconds ping(uint32_t instance, uint32_t node_id,
                                                std::chrono::milliseconds timeout = {}) const;

    // The raw ioctl, for tests of the uapi's rejections: -errno or 0.
    int ioctl_raw(unsigned long cmd, void* arg) const noexcept;

private:
    explicit Device(int fd) noexcept : fd_(fd) {}
    void ioctl_or_throw(unsigned long cmd, void* arg, const char* what) const;
    int fd_ = -1;
};

} // namespace lite
