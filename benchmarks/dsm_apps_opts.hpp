// SPDX-License-Identifier: MIT
//
// The options both drivers of the DSM programs take (dsm-apps on the DSM,
// dsm-apps-ga on Global Arrays): which programs, their scale, how many
// timed runs.
#pragma once

#include <apps.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "lat.hpp"

namespace bench
{

struct AppOptions {
    std::vector<std::string> apps; // dsm_apps::app_names() order
    unsigned scale = 1;
    unsigned runs = 1;
};

// Takes --app NAME|all, --scale S or --runs R with its value @v into @o;
// false if @a is none of them. Throws UsageError (an unknown program's
// names the known ones).
inline bool parse_app_option(AppOptions& o, const std::string& a, const std::string& v)
{
    if (a == "--app") {
        if (v == "all") {
            o.apps = dsm_apps::app_names();
        } else {
            try {
                (void)dsm_apps::make_app(v);
            } catch (const std::invalid_argument& e) {
                throw UsageError(std::string("--app: ") + e.what());
            }
            o.apps = {v};
        }
    } else if (a == "--scale") {
        o.scale = static_cast<unsigned>(parse_number(v, a, 1, 64));
    } else if (a == "--runs") {
        o.runs = static_cast<unsigned>(parse_number(v, a, 1, 1000));
    } else {
        return false;
    }
    return true;
}

// Calls @fn(option, value) for each "--option value" pair of argv; --help
// (or -h) throws the empty UsageError that prints the usage.
template <class Fn> void for_each_option(int argc, char** argv, const Fn& fn)
{
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h")
            throw UsageError("");
        if (i + 1 >= argc)
            throw UsageError(a + " needs a value");
        fn(a, std::string(argv[++i]));
    }
}

} // namespace bench
