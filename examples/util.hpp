// SPDX-License-Identifier: MIT
//
// Small helpers the examples share: waiting for SIGINT/SIGTERM in a
// server's main thread. (Their command lines: tools/cli/lite_cli.hpp.)
#pragma once

#include <pthread.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <functional>
#include <system_error>

namespace example
{

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
