// SPDX-License-Identifier: MIT
// Helpers for the guest integration tests (they run inside lite-vm).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <lite/lite.hpp>
#include <ranges>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace lite_guest
{

std::string env(const char* name, const std::string& fallback);

// The checksum the tests compare data by: FNV-1a over 8-byte words (then
// the tail bytes), each step folding the high bits down, so that any
// changed, moved or missing byte changes it; about 8 times faster than
// bytewise FNV-1a, which matters for GiBs under emulation. A stream in
// pieces chains them through @h; every piece but the last must then be a
// multiple of 8 bytes.
constexpr uint64_t kChecksumStart = 0xcbf29ce484222325ULL;
uint64_t checksum(std::span<const std::byte> data, uint64_t h = kChecksumStart);
template <std::ranges::contiguous_range R> uint64_t checksum(const R& data, uint64_t h = kChecksumStart)
{
    return checksum(std::as_bytes(std::span(data)), h);
}

// This guest's address on the rxe netdev ($LITE_ADDR), and an endpoint on it.
std::string addr();
lite::Endpoint endpoint(uint16_t port);

// The test cluster secret, as a file (for litectl) and as bytes.
const std::vector<uint8_t>& secret();
const std::string& secret_file();
std::string write_file(const std::string& name, const std::string& text);

// Bring a node up; join @manager_port unless it is 0.
lite::UpResult up(const lite::Device& dev, uint16_t port, uint16_t manager_port,
                  const std::vector<uint8_t>& key = secret(), uint32_t isolation = LITE_ISOLATION_DEFAULT);

// Take every instance down (test cleanup).
void down_all(const lite::Device& dev);

// From nothing: a manager on @port and two nodes joining it (@port + 1,
// @port + 2); their instances, node 1 first.
std::vector<uint32_t> three_nodes(const lite::Device& dev, uint16_t port);

struct Result {
    int status = -1;    // exit code, or -1 if it did not exit normally
    std::string output; // stdout and stderr
};

// Run a shell command; output captured.
Result run(const std::string& cmd);

// Shape the frames this guest sends on its link (lite-vm --guests N: eth0)
// with tc netem through tools/vm/netem.sh: @args as for tc-netem(8), e.g.
// "loss 5%" or "delay 10ms reorder 25%"; empty removes netem. Check status.
Result netem(const std::string& args);

// The group /dev/lite belongs to once the install step's udev rule applied
// (tools/install-udev.sh), or -1 if there is no such group.
int lite_gid();

// In a forked child: become the unprivileged user nobody (uid and gid
// 65534), a member of group lite if @in_lite_group and nothing else.
// Return: whether that worked.
bool become_nobody(bool in_lite_group);

// A figure for build/check/faults.json: $LITE_OUT/faults/@key holds
// @json_value (tools/check.sh merges them). Nothing outside lite-vm.
void record(const std::string& key, const std::string& json_value);

// Coordination between the guests of one lite-vm run, through the out
// share they all see ($LITE_OUT/sync/$LITE_RUN_ID/KEY.GUEST files):
// publish a value under @key for this guest; read guest @guest's value,
// waiting up to @timeout (empty if none came).
void publish(const std::string& key, const std::string& value);
std::string published(int guest, const std::string& key, std::chrono::milliseconds timeout);

// Every guest in @guests reaches barrier @name (each calls this once with
// the same arguments). Return: false if one did not within @timeout.
bool guest_barrier(const std::string& name, const std::vector<int>& guests, std::chrono::milliseconds timeout);

// This guest's index ($LITE_GUEST_INDEX), the number of guests, and the
// address of guest @index ($LITE_PEERS lists them in guest order; empty if
// there is no such guest).
int guest_index();
int guest_count();
std::string guest_addr(int index);

// Reset this guest at once, as a power cut would (sysrq b, no sync, no
// teardown of anything). lite-vm reads the marker this prints first as a
// deliberate end of this guest, not a failure. Root only; never returns.
[[noreturn]] void reset_this_guest(const std::string& why);

// A parameter of the loaded lite module (/sys/module/lite/parameters/NAME),
// or @fallback if it cannot be read.
unsigned module_param(const std::string& name, unsigned fallback);

// Set module parameter @name to @value (root): 0 or -errno (EINVAL: out of
// its range, or not a number).
int set_module_param(const std::string& name, const std::string& value);

// The file @file of lite instance @instance's debugfs directory.
std::string debugfs_path(uint32_t instance, const std::string& file);

// Write @value to @file of instance @instance's debugfs directory (a fault
// hook of lite_kmod/fault.c): 0 or the write's errno.
int write_debugfs(uint32_t instance, const std::string& file, const std::string& value);

// Puts a module parameter back as it was when this goes out of scope.
class ParamRestore
{
public:
    explicit ParamRestore(std::string name);
    ~ParamRestore();
    ParamRestore(const ParamRestore&) = delete;
    ParamRestore& operator=(const ParamRestore&) = delete;
    ParamRestore(ParamRestore&&) = delete;
    ParamRestore& operator=(ParamRestore&&) = delete;
    [[nodiscard]] const std::string& old() const { return old_; }

private:
    std::string name_;
    std::string old_;
};

// The bound, in seconds, within which a silent member is declared dead with
// the loaded module's heartbeat_ms and dead_ms (the default: 1.7 s), plus
// @slack seconds, plus $LITE_DETECT_SLACK_S (make check-debug: 5 s).
double detect_bound_s(double slack);

// A timeout of @base_ms for one call that moves data, times
// $LITE_TIMEOUT_SCALE (make check-debug: 2; the debug kernel runs large
// calls 10-20x slower), at most the kernel's 60000 ms.
uint32_t call_bound_ms(uint32_t base_ms);

// Path of the litectl built next to this test binary.
std::string litectl();

// This process's pinned memory (VmPin of /proc/self/status), in KiB; throws
// if there is none.
uint64_t vm_pin_kb();

// Poll @pred until it holds or @timeout passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// Up to @n bytes from @fd (a pipe from a child) within @timeout: the bytes
// read, fewer when the time passed or the writer closed it first.
size_t read_within(int fd, void* buf, size_t n, std::chrono::milliseconds timeout);

// One byte from @fd within @timeout: 1, or 0 when the time passed or the
// writer closed it first.
int read_byte_within(int fd, char* c, std::chrono::milliseconds timeout);

// The status of child @pid once it ended, waiting at most @timeout; -1 if
// it is still there then (a process stuck in the kernel, or a child that
// waits for something that never came): it is sent SIGKILL and reaped if
// it ends within 10 s more, so a failed test leaves no child behind.
int wait_child_within(pid_t pid, std::chrono::milliseconds timeout);

// SIGKILL child @pid and reap it, waiting at most 10 s.
void kill_child(pid_t pid);

// Members of an instance that are connected (or self), sorted.
std::vector<uint32_t> live_members(const lite::Device& dev, uint32_t instance);

// Every member in an instance's table, whatever its connection state, sorted.
// A member that left is dropped from the table after its counters moved.
std::vector<uint32_t> member_ids(const lite::Device& dev, uint32_t instance);

// The errno a throwing liblite call failed with, or 0.
template <class F> int err_of(F&& f)
{
    try {
        f();
        return 0;
    } catch (const lite::Error& e) {
        return e.errnum();
    }
}

} // namespace lite_guest
