// SPDX-License-Identifier: MIT
// A program of the tree run from a host test: its exit status and output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace lite_host
{

struct Ran {
    int status = -1;
    std::string output; // stdout and stderr
};

// @path @args through the shell, stdout and stderr together.
inline Ran run_program(const std::string& path, const std::string& args)
{
    Ran r;
    const std::string cmd = path + " " + args + " 2>&1";
    // A program of the build with the test's fixed arguments.
    FILE* p = ::popen(cmd.c_str(), "r"); // NOLINT(cert-env33-c)
    if (p == nullptr)
        return r;
    for (int c = std::fgetc(p); c != EOF; c = std::fgetc(p))
        r.output.push_back(static_cast<char>(c));
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

inline bool has(const Ran& r, const std::string& text)
{
    return r.output.find(text) != std::string::npos;
}

} // namespace lite_host
