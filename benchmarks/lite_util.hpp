// SPDX-License-Identifier: MIT
//
// Shared by the lite benchmarks: errors that name the liblite call and its
// errno, and an owning handle for a lite_t.
#pragma once

#include <lite/lite.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace bench
{

// An error naming the call that failed and the errno it returned.
inline std::runtime_error lite_error(const std::string& call, int rc)
{
    return std::runtime_error(call + " failed: " + LITE_strerror(rc) + " (" + std::to_string(rc) + ")");
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

} // namespace bench
