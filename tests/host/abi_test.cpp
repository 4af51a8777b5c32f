// SPDX-License-Identifier: MIT
// liblite's ABI (liblite/liblite.map, docs/uapi.md "liblite's ABI"): `nm -D`
// of the built library lists the public API and nothing else, every
// function the C headers declare among it, each symbol in version LITE_0.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace
{

// Lines of a command's standard output.
std::vector<std::string> lines_of(const std::string& cmd)
{
    std::vector<std::string> out;
    // A fixed command: nm on the library just built.
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose); // NOLINT(cert-env33-c)
    if (!p)
        return out;
    std::string line;
    for (int c = std::fgetc(p.get()); c != EOF; c = std::fgetc(p.get())) {
        if (c == '\n') {
            out.push_back(line);
            line.clear();
        } else {
            line.push_back(static_cast<char>(c));
        }
    }
    return out;
}

// The names liblite exports (demangled, without the version).
std::vector<std::string> exported(bool demangle)
{
    std::vector<std::string> names;
    const std::string cmd = std::string("nm -D --defined-only") + (demangle ? " -C " : " ") + LITE_LIBLITE_PATH;
    for (const auto& l : lines_of(cmd)) {
        // "ADDRESS TYPE NAME"
        auto second = l.find(' ', l.find(' ') + 1);
        if (second != std::string::npos)
            names.push_back(l.substr(second + 1));
    }
    return names;
}

TEST(Abi, OnlyThePublicApiIsExported)
{
    const std::regex allowed(
        // The C API.
        "LITE_[a-z_]+(@@LITE_0)?"
        // The C++ API: its classes and free functions.
        "|lite::(Device|Endpoint|Error|MessageSizeError|Result|Ring|Server)::(~?[A-Za-z_]+|operator=)"
        "(\\[abi:cxx11\\])?\\(.*"
        "|lite::(cq_mode_name|parse_cq_mode|isolation_name|parse_isolation|peer_state_name|read_secret_file|"
        "detail::fail)\\(.*"
        // What its exceptions need across the boundary.
        "|(typeinfo|typeinfo name|vtable) for lite::(Error|MessageSizeError)(@@LITE_0)?"
        // The version node itself.
        "|LITE_0");
    auto names = exported(true);
    ASSERT_GT(names.size(), 50u) << "nm -D " << LITE_LIBLITE_PATH << " listed too little";
    for (const auto& n : names) {
        EXPECT_TRUE(std::regex_match(n, allowed)) << "exported but not public API: " << n;
        EXPECT_EQ(n.find("::Impl"), std::string::npos) << n;
    }
}

TEST(Abi, EveryCFunctionIsExportedInItsVersion)
{
    std::set<std::string> raw;
    for (const auto& n : exported(false))
        raw.insert(n);
    std::set<std::string> declared;
    std::set<std::string> inline_helpers;
    const std::regex decl("\\b(LITE_[a-z_]+)\\(");
    for (const char* h : {LITE_INCLUDE_DIR "/lite.h", LITE_INCLUDE_DIR "/async.h"}) {
        std::ifstream in(h);
        ASSERT_TRUE(in) << h;
        std::string line;
        while (std::getline(in, line)) {
            // The header's own helpers (io_uring SQE preparation) are not
            // the library's.
            auto& into = line.find("static inline") != std::string::npos ? inline_helpers : declared;
            for (std::sregex_iterator it(line.begin(), line.end(), decl), end; it != end; ++it)
                into.insert((*it)[1]);
        }
    }
    for (const auto& f : inline_helpers)
        declared.erase(f);
    ASSERT_GT(declared.size(), 30u);
    for (const auto& f : declared) {
        EXPECT_TRUE(raw.count(f + "@@LITE_0"))
            << f << " is declared in a C header but not exported as " << f << "@@LITE_0";
    }
}

} // namespace
