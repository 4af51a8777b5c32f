// SPDX-License-Identifier: MIT
//
// The command line of lite's programs (the examples, the benchmarks): CLI11
// (Debian's libcli11-dev, as litectl and lite-mr use it) and what they have
// in common, defined once here:
//
//   - exit codes: --help (or -h) prints the help on stdout, exit 0; a usage
//     error prints "PROGRAM: message" (naming the option) and a hint on
//     stderr, exit 2; any other error "PROGRAM: message", exit 1;
//   - numbers in a range, optionally with a K, M or G suffix (binary:
//     K = 1024), and comma-separated lists of them; an out-of-range or
//     malformed value is a usage error naming the option and the range;
//   - choices from a fixed set of words ("busy" or "event");
//   - --instance (a local node instance) and --node (a node id).
//
// An option given twice takes its last value. --opt VALUE and --opt=VALUE
// are the same. Header-only: meson's lite_cli_dep (tools/cli/meson.build).
#pragma once

#include <CLI/CLI.hpp>
#include <linux/lite.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace lite_cli
{

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A mistake in the arguments found after parsing (options that do not go
// together, say): the program exits 2 with its message.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A decimal number with an optional K, M or G suffix (binary: K = 1024);
// nothing if @text is not one or overflows.
inline std::optional<uint64_t> parse_u64(std::string_view text)
{
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p == text.data())
        return std::nullopt;
    if (p == end)
        return v;
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
        return std::nullopt;
    }
    if (p + 1 != end || v > (std::numeric_limits<uint64_t>::max() >> shift))
        return std::nullopt;
    return v << shift;
}

// "must be a number from 1 to 128, not 'x'": what a bad number is told.
inline std::string range_message(std::string_view text, uint64_t lo, uint64_t hi)
{
    return "must be a number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not '" + std::string(text) +
           "'";
}

// @text as a number in [@lo, @hi]; throws UsageError naming @what.
inline uint64_t to_number(std::string_view text, std::string_view what, uint64_t lo, uint64_t hi)
{
    const auto v = parse_u64(text);
    if (!v || *v < lo || *v > hi)
        throw UsageError(std::string(what) + ": " + range_message(text, lo, hi));
    return *v;
}

// "4G" for 4294967296: a bound as the help shows it.
inline std::string short_number(uint64_t v)
{
    const char* suffix = "KMG";
    int i = -1;
    while (i < 2 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        i++;
    }
    return std::to_string(v) + (i >= 0 ? std::string(1, suffix[i]) : std::string());
}

// "1..128" for the help; nothing for a bound that is no real limit.
inline std::string range_text(uint64_t lo, uint64_t hi)
{
    return hi == UINT32_MAX || hi >= INT64_MAX ? std::string() : short_number(lo) + ".." + short_number(hi);
}

// A CLI11 transform: a number in [@lo, @hi] (K, M, G suffixes allowed),
// rewritten in decimal for CLI11 to store.
inline CLI::Validator number(uint64_t lo, uint64_t hi)
{
    return {[lo, hi](std::string& text) -> std::string {
                const auto v = parse_u64(text);
                if (!v || *v < lo || *v > hi)
                    return range_message(text, lo, hi);
                text = std::to_string(*v);
                return {};
            },
            range_text(lo, hi)};
}

// The same for "a,b,c": every item a number in [@lo, @hi].
inline CLI::Validator number_list(uint64_t lo, uint64_t hi)
{
    return {[lo, hi](std::string& text) -> std::string {
                std::string out;
                std::string_view rest = text;
                while (true) {
                    const size_t comma = rest.find(',');
                    const std::string_view item = rest.substr(0, comma);
                    const auto v = parse_u64(item);
                    if (!v || *v < lo || *v > hi) {
                        return "every item " + range_message(item, lo, hi) +
                               (text.find(',') != std::string::npos ? " (in '" + text + "')" : std::string());
                    }
                    out += std::to_string(*v);
                    if (comma == std::string_view::npos)
                        break;
                    out += ',';
                    rest.remove_prefix(comma + 1);
                }
                text = std::move(out);
                return {};
            },
            range_text(lo, hi)};
}

// --@name N into @into: a number in [@lo, @hi] (K, M, G suffixes allowed).
template <typename T>
CLI::Option* add_number(CLI::App& app, const std::string& name, T& into, uint64_t lo, uint64_t hi,
                        const std::string& help)
{
    return app.add_option(name, into, help)->transform(number(lo, hi))->type_name("N");
}

// --@name A,B,C into @into: one or more numbers, each in [@lo, @hi].
template <typename T>
CLI::Option* add_list(CLI::App& app, const std::string& name, std::vector<T>& into, uint64_t lo, uint64_t hi,
                      const std::string& help)
{
    return app
        .add_option_function<std::string>(
            name,
            [&into](const std::string& text) { // checked and in decimal by now
                into.clear();
                std::string_view rest = text;
                while (true) {
                    const size_t comma = rest.find(',');
                    into.push_back(static_cast<T>(parse_u64(rest.substr(0, comma)).value_or(0)));
                    if (comma == std::string_view::npos)
                        break;
                    rest.remove_prefix(comma + 1);
                }
            },
            help)
        ->transform(number_list(lo, hi))
        ->type_name("LIST");
}

// "8,64,512": @items as a --LIST option's help shows a default.
template <typename T> std::string join(const std::vector<T>& items)
{
    std::string s;
    for (const auto& v : items)
        s += (s.empty() ? "" : ",") + short_number(static_cast<uint64_t>(v));
    return s;
}

// "a, b or c"
inline std::string or_list(const std::vector<std::string>& words)
{
    std::string s;
    for (size_t i = 0; i < words.size(); i++) {
        if (i > 0)
            s += i + 1 == words.size() ? " or " : ", ";
        s += words[i];
    }
    return s;
}

// --@name WORD into @into: the value of the word among @choices.
template <typename T>
CLI::Option* add_choice(CLI::App& app, const std::string& name, T& into, std::vector<std::pair<std::string, T>> choices,
                        const std::string& help)
{
    std::vector<std::string> words;
    words.reserve(choices.size());
    for (const auto& c : choices)
        words.push_back(c.first);
    std::string type;
    for (const auto& w : words)
        type += (type.empty() ? "" : "|") + w;
    return app
        .add_option_function<std::string>(
            name,
            [&into, choices](const std::string& word) {
                for (const auto& c : choices) {
                    if (c.first == word)
                        into = c.second;
                }
            },
            help)
        ->check(CLI::Validator(
            [words](std::string& word) -> std::string {
                for (const auto& w : words) {
                    if (w == word)
                        return {};
                }
                return "must be " + or_list(words) + ", not '" + word + "'";
            },
            ""))
        ->type_name(type);
}

// --instance N: the local node instance a program attaches to.
template <typename T>
CLI::Option* add_instance(CLI::App& app, T& into, const std::string& help, const std::string& name = "--instance")
{
    return add_number(app, name, into, 0, UINT32_MAX, help);
}

// --node ID: a node id, 1..LITE_MAX_NODES, or 0 too (this node) if
// @zero_is_this_node.
template <typename T>
CLI::Option* add_node(CLI::App& app, T& into, bool zero_is_this_node, const std::string& help,
                      const std::string& name = "--node")
{
    return add_number(app, name, into, zero_is_this_node ? 0 : 1, LITE_MAX_NODES, help);
}

// @fn()'s value, for main(): what escapes @fn (building the command line,
// say) ends the program with "@name: message", exit 1.
template <typename Fn> int guard(const char* name, const Fn& fn) noexcept
{
    try {
        return fn();
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "%s: %s\n", name, e.what());
    } catch (...) {
        (void)std::fprintf(stderr, "%s: an unknown exception\n", name);
    }
    return kExitError;
}

// A program's command line: CLI11's App with the conventions above.
class App : public CLI::App
{
public:
    App(std::string name, std::string description) : CLI::App(std::move(description), std::move(name))
    {
        option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        get_formatter()->column_width(26);
    }

    // Parses argv, then returns @body()'s exit status. --help: the help on
    // stdout, 0. A parse error or a UsageError (from @body too): exit 2,
    // "NAME: message" on stderr. Another exception: "NAME: message", 1.
    template <typename Body> int run(int argc, const char* const* argv, const Body& body)
    {
        if (auto status = parse_or_exit(argc, argv))
            return *status;
        try {
            return body();
        } catch (const UsageError& e) {
            return usage_error(e.what());
        } catch (const std::exception& e) {
            (void)std::fprintf(stderr, "%s: %s\n", get_name().c_str(), e.what());
            return kExitError;
        }
    }

    // Parses argv: nothing if the program is to go on, else its exit status
    // (--help: 0, the help printed; a parse error: 2, the message printed).
    // Nothing is printed unless @speak (an MPI rank other than 0, say).
    std::optional<int> parse_or_exit(int argc, const char* const* argv, bool speak = true)
    {
        try {
            parse(argc, argv);
        } catch (const CLI::ParseError& e) {
            if (e.get_exit_code() == 0) {
                if (speak)
                    std::cout << help();
                return kExitOk;
            }
            std::string msg = e.what();
            // A word that is no command, where one is required: name it.
            const bool has_commands = !get_subcommands([](const CLI::App*) { return true; }).empty();
            if (has_commands && get_subcommands().empty() && !remaining().empty())
                msg = "unknown command '" + remaining().front() + "'";
            return speak ? usage_error(msg) : kExitUsage;
        }
        return std::nullopt;
    }

    // Parses @args, the arguments after the program's name (for tests).
    int run(const std::vector<std::string>& args, const std::function<int()>& body)
    {
        std::vector<const char*> argv{get_name().c_str()};
        for (const auto& a : args)
            argv.push_back(a.c_str());
        return run(static_cast<int>(argv.size()), argv.data(), body);
    }

    // Whether the option @name was given.
    [[nodiscard]] bool given(const std::string& name) const { return count(name) > 0; }

private:
    [[nodiscard]] int usage_error(const std::string& msg) const
    {
        (void)std::fprintf(stderr, "%s: %s\n(%s --help lists the options)\n", get_name().c_str(), msg.c_str(),
                           get_name().c_str());
        return kExitUsage;
    }
};

} // namespace lite_cli
