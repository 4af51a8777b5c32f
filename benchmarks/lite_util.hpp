// SPDX-License-Identifier: MIT
//
// Shared by the lite benchmarks: errors that name the liblite call and its
// errno, an owning handle for a lite_t and one for an LMR.
#pragma once

#include <lite/lite.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace bench
{

// An error naming the liblite call that failed and the errno it returned
// (kept in @rc, negative, for callers that handle some errors).
struct LiteError : std::runtime_error {
    LiteError(const std::string& call, int ret)
        : std::runtime_error(call + " failed: " + LITE_strerror(ret) + " (" + std::to_string(ret) + ")"), rc(ret)
    {
    }
    int rc;
};

inline LiteError lite_error(const std::string& call, int rc)
{
    return {call, rc};
}

struct LiteCloser {
    void operator()(lite_t* lite) const noexcept { LITE_close(lite); }
};
using Lite = std::unique_ptr<lite_t, LiteCloser>;

inline Lite open_lite(unsigned instance)
{
    lite_t* raw = nullptr;
    if (int rc = LITE_open(instance, &raw); rc < 0)
        throw lite_error("LITE_open(instance " + std::to_string(instance) + ")", rc);
    return Lite(raw);
}

// An LMR allocated through a lite_t: freed on its node by free(), which
// throws on failure, or else by the destructor (a failure there is reported
// on stderr). The lite_t must outlive it.
class Lmr
{
public:
    Lmr(lite_t* lite, uint64_t size, uint32_t node, uint32_t flags = 0) : lite_(lite)
    {
        if (int rc = LITE_alloc_flags(lite, size, node, flags, &handle_); rc < 0)
            throw lite_error("LITE_alloc(" + std::to_string(size) + " bytes on node " + std::to_string(node) + ")", rc);
    }
    Lmr(Lmr&& other) noexcept : lite_(other.lite_), handle_(std::exchange(other.handle_, 0)) {}
    Lmr(const Lmr&) = delete;
    Lmr& operator=(const Lmr&) = delete;
    Lmr& operator=(Lmr&&) = delete;
    ~Lmr()
    {
        if (handle_ == 0)
            return;
        if (int rc = LITE_free(lite_, handle_); rc < 0) {
            (void)std::fprintf(stderr, "%s: warning: LITE_free failed: %s\n", program_invocation_short_name,
                               LITE_strerror(rc));
        }
    }

    void free()
    {
        const lite_lmr_t h = std::exchange(handle_, 0);
        if (h == 0)
            return;
        if (int rc = LITE_free(lite_, h); rc < 0)
            throw lite_error("LITE_free", rc);
    }

    [[nodiscard]] lite_lmr_t handle() const noexcept { return handle_; }

private:
    lite_t* lite_;
    lite_lmr_t handle_ = 0;
};

} // namespace bench
