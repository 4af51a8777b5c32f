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

#include "lite_cli.hpp"

namespace bench
{

struct AppOptions {
    std::vector<std::string> apps; // dsm_apps::app_names() order
    unsigned scale = 1;
    unsigned runs = 1;
};

// --app NAME|all, --scale S and --runs R into @o (--app: an unknown
// program's message names the known ones).
inline void add_app_options(CLI::App& app, AppOptions& o)
{
    std::string names;
    for (const auto& n : dsm_apps::app_names())
        names += n + "|";
    app.add_option_function<std::string>(
           "--app",
           [&o](const std::string& v) {
               if (v == "all") {
                   o.apps = dsm_apps::app_names();
               } else {
                   o.apps = {v};
               }
           },
           "which program, or all of them")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                if (v == "all")
                    return {};
                try {
                    (void)dsm_apps::make_app(v);
                } catch (const std::invalid_argument& e) {
                    return e.what();
                }
                return {};
            },
            ""))
        ->type_name(names + "all")
        ->required();
    lite_cli::add_number(app, "--scale", o.scale, 1, 64, "problem size, 1 = the default (larger runs longer)");
    lite_cli::add_number(app, "--runs", o.runs, 1, 1000, "timed runs per program (default 1)");
}

} // namespace bench
