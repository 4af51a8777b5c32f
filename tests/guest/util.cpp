// SPDX-License-Identifier: MIT
#include "util.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace lite_guest
{

uint64_t checksum(std::span<const std::byte> data, uint64_t h)
{
    constexpr uint64_t kPrime = 0x100000001b3ULL;
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= data.size(); i += sizeof(uint64_t)) {
        uint64_t w = 0;
        std::memcpy(&w, data.data() + i, sizeof(w));
        h = (h ^ w) * kPrime;
        h ^= h >> 29;
    }
    for (; i < data.size(); i++)
        h = (h ^ std::to_integer<uint64_t>(data[i])) * kPrime;
    return h;
}

std::string env(const char* name, const std::string& fallback)
{
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

std::string addr()
{
    return env("LITE_ADDR", "10.99.0.1");
}

lite::Endpoint endpoint(uint16_t port)
{
    return lite::Endpoint::parse(addr() + ":" + std::to_string(port));
}

const std::vector<uint8_t>& secret()
{
    static const std::vector<uint8_t> key = [] {
        std::string s = "lite-guest-test-secret";
        return std::vector<uint8_t>(s.begin(), s.end());
    }();
    return key;
}

std::string write_file(const std::string& name, const std::string& text)
{
    std::string path = "/tmp/" + name;
    std::ofstream(path) << text;
    return path;
}

const std::string& secret_file()
{
    static const std::string path = write_file("lite-secret", std::string(secret().begin(), secret().end()) + "\n");
    return path;
}

lite::UpResult up(const lite::Device& dev, uint16_t port, uint16_t manager_port, const std::vector<uint8_t>& key,
                  uint32_t isolation)
{
    lite::UpParams p;
    p.device = env("LITE_RXE", "rxe0");
    p.listen = endpoint(port);
    if (manager_port)
        p.join = endpoint(manager_port);
    p.secret = key;
    p.isolation = isolation;
    return dev.up(p);
}

std::vector<uint32_t> three_nodes(const lite::Device& dev, uint16_t port)
{
    down_all(dev);
    return {up(dev, port, 0).instance, up(dev, port + 1, port).instance, up(dev, port + 2, port).instance};
}

void down_all(const lite::Device& dev)
{
    for (auto id : dev.instances()) {
        try {
            dev.down(id);
        } catch (const lite::Error&) {
            // already gone
        }
    }
}

Result run(const std::string& cmd)
{
    Result r;
    std::string full = cmd + " 2>&1";
    // The tests run litectl and system tools through the shell on purpose.
    // NOLINTNEXTLINE(cert-env33-c)
    FILE* p = popen(full.c_str(), "r");
    if (!p)
        return r;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
        r.output.append(buf.data(), n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

Result netem(const std::string& args)
{
    std::string script = env("LITE_REPO", ".") + "/tools/vm/netem.sh";
    return run("'" + script + "' " + (args.empty() ? std::string("clear") : "set " + args));
}

void record(const std::string& key, const std::string& json_value)
{
    std::string dir = env("LITE_OUT", "");
    if (dir.empty())
        return;
    dir += "/faults";
    ::mkdir(dir.c_str(), 0755);
    std::ofstream(dir + "/" + key) << json_value << "\n";
}

namespace
{

std::filesystem::path sync_dir()
{
    auto dir = std::filesystem::path(env("LITE_OUT", "/run/lite-out")) / "sync" / env("LITE_RUN_ID", "no-run-id");
    std::filesystem::create_directories(dir);
    return dir;
}

} // namespace

int guest_index()
{
    return std::stoi(env("LITE_GUEST_INDEX", "0"));
}

int guest_count()
{
    return std::stoi(env("LITE_GUESTS", "1"));
}

std::string guest_addr(int index)
{
    std::istringstream peers(env("LITE_PEERS", ""));
    std::string a;
    for (int i = 0; peers >> a; i++) {
        if (i == index)
            return a;
    }
    return "";
}

void publish(const std::string& key, const std::string& value)
{
    auto dir = sync_dir();
    auto name = key + "." + std::to_string(guest_index());
    auto tmp = dir / (name + ".tmp");
    std::ofstream(tmp) << value;
    std::filesystem::rename(tmp, dir / name); // readers see all of it or nothing
}

std::string published(int guest, const std::string& key, std::chrono::milliseconds timeout)
{
    auto file = sync_dir() / (key + "." + std::to_string(guest));
    std::string value;
    wait_until(
        [&] {
            std::ifstream in(file);
            if (!in)
                return false;
            std::getline(in, value);
            return true;
        },
        timeout);
    return value;
}

bool guest_barrier(const std::string& name, const std::vector<int>& guests, std::chrono::milliseconds timeout)
{
    publish("barrier-" + name, "1");
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int g : guests) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (published(g, "barrier-" + name, std::max(left, std::chrono::milliseconds(1))).empty())
            return false;
    }
    return true;
}

void reset_this_guest(const std::string& why)
{
    std::printf("LITE-VM-RESET: %s\n", why.c_str());
    (void)std::fflush(stdout);
    std::ofstream("/proc/sysrq-trigger") << "b" << std::flush;
    for (;;)
        ::pause(); // the reset takes the process with it
}

namespace
{
std::string param_path(const std::string& name)
{
    return "/sys/module/lite/parameters/" + name;
}
} // namespace

unsigned module_param(const std::string& name, unsigned fallback)
{
    std::ifstream in(param_path(name));
    unsigned v = 0;
    return in >> v ? v : fallback;
}

int set_module_param(const std::string& name, const std::string& value)
{
    int fd = ::open(param_path(name).c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int ret = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size()) ? 0 : -errno;
    ::close(fd);
    return ret;
}

std::string debugfs_path(uint32_t instance, const std::string& file)
{
    return "/sys/kernel/debug/lite/lite" + std::to_string(instance) + "/" + file;
}

int write_debugfs(uint32_t instance, const std::string& file, const std::string& value)
{
    int fd = ::open(debugfs_path(instance, file).c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = ::write(fd, value.data(), value.size()) < 0 ? errno : 0;
    ::close(fd);
    return err;
}

ParamRestore::ParamRestore(std::string name) : name_(std::move(name))
{
    std::ifstream in(param_path(name_));
    std::getline(in, old_);
}

ParamRestore::~ParamRestore()
{
    (void)set_module_param(name_, old_);
}

double detect_bound_s(double slack)
{
    // $LITE_DETECT_SLACK_S: more under the debug kernel (make check-debug),
    // where a loaded host stalls guests for seconds.
    const double extra = std::stod(env("LITE_DETECT_SLACK_S", "0"));
    return (module_param("dead_ms", 1500) + module_param("heartbeat_ms", 200)) / 1000.0 + slack + extra;
}

uint32_t call_bound_ms(uint32_t base_ms)
{
    constexpr uint64_t kMaxMs = 60000; // LITE_MAX_TIMEOUT_MS
    const uint64_t scale = std::stoul(env("LITE_TIMEOUT_SCALE", "1"));
    return static_cast<uint32_t>(std::min(kMaxMs, uint64_t{base_ms} * std::max<uint64_t>(scale, 1)));
}

int lite_gid()
{
    const group* g = getgrnam("lite");
    return g != nullptr ? static_cast<int>(g->gr_gid) : -1;
}

bool become_nobody(bool in_lite_group)
{
    constexpr uid_t kNobody = 65534;
    int gid = lite_gid();
    if (in_lite_group && gid < 0)
        return false;
    const auto lite = static_cast<gid_t>(gid);
    if (setgroups(in_lite_group ? 1 : 0, in_lite_group ? &lite : nullptr) != 0)
        return false;
    return setgid(kNobody) == 0 && setuid(kNobody) == 0;
}

std::string litectl()
{
    std::array<char, PATH_MAX> self{};
    ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    std::string dir = n > 0 ? std::string(self.data(), static_cast<size_t>(n)) : std::string(".");
    dir = dir.substr(0, dir.rfind('/'));
    return dir + "/../tools/litectl/litectl";
}

uint64_t vm_pin_kb()
{
    std::ifstream in("/proc/self/status");
    std::string key;
    uint64_t kb = 0;
    while (in >> key) {
        if (key == "VmPin:" && in >> kb)
            return kb;
        in.ignore(1 << 20, '\n');
    }
    throw std::runtime_error("no VmPin in /proc/self/status");
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout)
{
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (pred())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

size_t read_within(int fd, void* buf, size_t n, std::chrono::milliseconds timeout)
{
    auto end = std::chrono::steady_clock::now() + timeout;
    auto* at = static_cast<char*>(buf);
    size_t got = 0;
    while (got < n) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            break;
        pollfd pfd{.fd = fd, .events = POLLIN, .revents = 0};
        int ready = poll(&pfd, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            break;
        ssize_t r = read(fd, at + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += static_cast<size_t>(r);
    }
    return got;
}

int read_byte_within(int fd, char* c, std::chrono::milliseconds timeout)
{
    return read_within(fd, c, 1, timeout) == 1 ? 1 : 0;
}

int wait_child_within(pid_t pid, std::chrono::milliseconds timeout)
{
    int st = 0;
    if (wait_until([&] { return waitpid(pid, &st, WNOHANG) == pid; }, timeout))
        return st;
    kill_child(pid);
    return -1;
}

void kill_child(pid_t pid)
{
    kill(pid, SIGKILL);
    (void)wait_until([&] { return waitpid(pid, nullptr, WNOHANG) == pid; }, std::chrono::seconds(10));
}

std::vector<uint32_t> live_members(const lite::Device& dev, uint32_t instance)
{
    std::vector<uint32_t> ids;
    for (const auto& m : dev.status(instance).members) {
        if (m.state == LITE_PEER_SELF || m.state == LITE_PEER_CONNECTED) {
            ids.push_back(m.node_id);
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::vector<uint32_t> member_ids(const lite::Device& dev, uint32_t instance)
{
    std::vector<uint32_t> ids;
    for (const auto& m : dev.status(instance).members)
        ids.push_back(m.node_id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

} // namespace lite_guest
