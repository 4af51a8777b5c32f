// SPDX-License-Identifier: MIT
//
// Small helpers the examples share: option parsing with clear errors, and
// waiting for SIGINT/SIGTERM in a server's main thread.
#pragma once

#include <pthread.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace example
{

// A command line mistake: main prints it with the usage text, exit 2.
struct UsageError {
    std::string msg;
};

// The arguments after the program (and command) name. Options are taken
// out by name wherever they are; what remains must be plain arguments.
class Args
{
public:
    Args(int argc, char** argv, int first)
    {
        for (int i = first; i < argc; i++)
            args_.emplace_back(argv[i]);
    }

    // "--name VALUE"
    std::optional<std::string> take(std::string_view name)
    {
        for (size_t i = 0; i < args_.size(); i++) {
            if (args_[i] != name)
                continue;
            if (i + 1 >= args_.size())
                throw UsageError{std::string(name) + " needs a value"};
            std::string v = std::move(args_[i + 1]);
            args_.erase(args_.begin() + static_cast<std::ptrdiff_t>(i),
                        args_.begin() + static_cast<std::ptrdiff_t>(i) + 2);
            return v;
        }
        return std::nullopt;
    }

    // "--name"
    bool flag(std::string_view name)
    {
        for (size_t i = 0; i < args_.size(); i++) {
            if (args_[i] == name) {
                args_.erase(args_.begin() + static_cast<std::ptrdiff_t>(i));
                return true;
            }
        }
        return false;
    }

    // The plain arguments; an option nobody took is an error.
    [[nodiscard]] std::vector<std::string> rest() const
    {
        for (const auto& a : args_) {
            if (a.starts_with("--"))
                throw UsageError{"unknown option " + a};
        }
        return args_;
    }

private:
    std::vector<std::string> args_;
};

// A decimal number within [min, max], with an optional K, M or G suffix
// (binary: K = 1024).
inline uint64_t to_u64(const std::string& text, std::string_view what, uint64_t min, uint64_t max)
{
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    bool ok = ec == std::errc() && p != text.data();
    if (ok && p != end) {
        unsigned shift = 0;
        switch (*p) {
        case 'K':
        case 'k':
            shift = 10;
            break;
        case 'M':
        case 'm':
            shift = 20;
            break;
        case 'G':
        case 'g':
            shift = 30;
            break;
        default:
            ok = false;
        }
        ok = ok && p + 1 == end && v <= (UINT64_MAX >> shift);
        v <<= shift;
    }
    if (!ok || v < min || v > max) {
        throw UsageError{std::string(what) + " must be a number from " + std::to_string(min) + " to " +
                         std::to_string(max) + ", not '" + text + "'"};
    }
    return v;
}

inline uint32_t to_u32(const std::string& text, std::string_view what, uint32_t min, uint32_t max)
{
    return static_cast<uint32_t>(to_u64(text, what, min, max));
}

// Block SIGINT and SIGTERM in the calling thread, and so in the threads it
// starts afterwards, so that wait_for_stop() can take them. Call it before
// starting any thread.
inline sigset_t block_stop_signals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int err = pthread_sigmask(SIG_BLOCK, &set, nullptr);
    if (err != 0)
        throw std::system_error(err, std::generic_category(), "pthread_sigmask");
    return set;
}

// Wait until SIGINT or SIGTERM arrives (returns it), or @keep_waiting
// (asked every 200 ms) returns false (returns 0).
inline int wait_for_stop(const sigset_t& set, const std::function<bool()>& keep_waiting)
{
    const timespec tick{0, 200L * 1000 * 1000};
    while (keep_waiting()) {
        int sig = sigtimedwait(&set, nullptr, &tick);
        if (sig > 0)
            return sig;
        if (errno != EAGAIN && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "sigtimedwait");
    }
    return 0;
}

} // namespace example
