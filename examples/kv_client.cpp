// SPDX-License-Identifier: MIT
//
// The client of kv_server: put, get and delete keys, or run a self-test.
//   kv_client [--instance N] --node ID [--port P] [--timeout MS] COMMAND
// See --help; the wire format is in kv_wire.hpp.
#include "kv_wire.hpp"
#include "lite_cli.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <lite/session.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace
{

// The command line: the options before the command, then the command's.
struct Options {
    unsigned inst = 0;
    uint32_t node = 0;
    uint32_t port = kv::kDefaultPort;
    uint32_t timeout_ms = 0;
    std::string key;
    std::vector<std::string> value; // put KEY VALUE: one at most
    std::string file;
    std::optional<uint64_t> random_size;
    uint64_t count = 0;
    std::optional<uint64_t> seed;
};

constexpr int kNotFound = 3;

// FNV-1a, 64 bits: enough to tell values apart in a self-test.
uint64_t checksum(std::span<const std::byte> data)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (auto b : data) {
        h ^= std::to_integer<uint64_t>(b);
        h *= 0x100000001b3ULL;
    }
    return h;
}

void fill_random(std::mt19937_64& rng, std::span<std::byte> out)
{
    for (size_t i = 0; i < out.size(); i += 8) {
        uint64_t r = rng();
        for (size_t j = 0; j < 8 && i + j < out.size(); j++)
            out[i + j] = static_cast<std::byte>((r >> (8 * j)) & 0xff);
    }
}

class Client
{
public:
    Client(lite::Session& lite, uint32_t node, uint32_t port, std::chrono::milliseconds timeout)
        : lite_(lite), node_(node), port_(port), timeout_(timeout), reply_(kv::kMaxReply)
    {
    }

    // One operation; the value of a GET is valid until the next one.
    // Throws std::runtime_error if the server's reply is malformed.
    kv::Reply op(kv::Op op, std::string_view key, std::span<const std::byte> value = {})
    {
        auto req = kv::encode_request(op, key, value);
        const size_t len = lite_.call(node_, port_, req, reply_, timeout_);
        auto reply = kv::decode_reply(std::span<const std::byte>(reply_.data(), len), op);
        if (!reply)
            throw std::runtime_error("malformed reply of " + std::to_string(len) + " bytes from the server");
        if (reply->status == kv::Status::bad_request)
            throw std::runtime_error("the server refused the request as malformed (BAD_REQUEST)");
        return *reply;
    }

private:
    lite::Session& lite_;
    uint32_t node_;
    uint32_t port_;
    std::chrono::milliseconds timeout_;
    std::vector<std::byte> reply_;
};

std::vector<std::byte> read_value_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot open '" + path + "'");
    std::vector<std::byte> bytes;
    std::vector<char> chunk(size_t{64} * 1024);
    while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        const auto got = static_cast<size_t>(in.gcount());
        if (bytes.size() + got > kv::kMaxValue)
            throw std::runtime_error("'" + path + "' is larger than the 1 MiB a value may hold");
        for (size_t i = 0; i < got; i++)
            bytes.push_back(static_cast<std::byte>(chunk[i]));
    }
    if (in.bad())
        throw std::runtime_error("cannot read '" + path + "'");
    return bytes;
}

std::string check_key(const std::string& key)
{
    if (key.empty() || key.size() > kv::kMaxKey)
        throw lite_cli::UsageError("KEY must be 1 to 255 bytes, '" + key + "' is " + std::to_string(key.size()));
    return key;
}

// put's arguments: KEY and one of VALUE, --file F or --random-size BYTES.
void check_put(const Options& o)
{
    const size_t sources = (o.file.empty() ? 0 : 1) + (o.random_size ? 1 : 0) + o.value.size();
    if (o.value.size() > 1 || sources != 1)
        throw lite_cli::UsageError("put needs KEY and one of VALUE, --file F or --random-size BYTES");
    if (!o.value.empty() && o.value[0].size() > kv::kMaxValue)
        throw lite_cli::UsageError("VALUE is larger than 1 MiB");
}

int cmd_put(Client& c, const Options& o)
{
    const std::string& key = o.key;
    std::vector<std::byte> value;
    if (!o.file.empty()) {
        value = read_value_file(o.file);
    } else if (o.random_size) {
        value.resize(*o.random_size);
        std::mt19937_64 rng(std::random_device{}());
        fill_random(rng, value);
    } else {
        for (char ch : o.value[0])
            value.push_back(static_cast<std::byte>(ch));
    }
    c.op(kv::Op::put, key, value);
    std::printf("put '%s': %zu bytes, checksum %016llx\n", key.c_str(), value.size(),
                static_cast<unsigned long long>(checksum(value)));
    return 0;
}

int cmd_get(Client& c, const Options& o)
{
    const std::string& key = o.key;
    auto r = c.op(kv::Op::get, key);
    if (r.status == kv::Status::not_found) {
        (void)std::fprintf(stderr, "kv_client get: no key '%s'\n", key.c_str());
        return kNotFound;
    }
    if (!r.value.empty() && std::fwrite(r.value.data(), 1, r.value.size(), stdout) != r.value.size())
        throw std::runtime_error("cannot write the value to stdout");
    if (std::fflush(stdout) != 0)
        throw std::runtime_error("cannot write the value to stdout");
    return 0;
}

int cmd_del(Client& c, const Options& o)
{
    const std::string& key = o.key;
    auto r = c.op(kv::Op::del, key);
    if (r.status == kv::Status::not_found) {
        (void)std::fprintf(stderr, "kv_client del: no key '%s'\n", key.c_str());
        return kNotFound;
    }
    std::printf("deleted '%s'\n", key.c_str());
    return 0;
}

double seconds(std::chrono::steady_clock::duration d)
{
    return std::chrono::duration<double>(d).count();
}

int cmd_selftest(Client& c, const Options& o)
{
    const uint64_t count = o.count;
    const uint64_t seed = o.seed ? *o.seed : std::random_device{}();
    std::mt19937_64 rng(seed);

    struct Item {
        std::string key;
        size_t size;
        uint64_t sum;
    };
    std::vector<Item> items;
    items.reserve(count);
    // Sizes spread over every scale: 0 and 1 MiB first, then 0..2^k with
    // k uniform in 0..20.
    std::uniform_int_distribution<unsigned> scale(0, 20);
    for (uint64_t i = 0; i < count; i++) {
        size_t size = 0;
        if (i == 1) {
            size = kv::kMaxValue;
        } else if (i > 1) {
            std::uniform_int_distribution<size_t> pick(0, size_t{1} << scale(rng));
            size = pick(rng);
        }
        items.push_back({"kv-selftest-" + std::to_string(::getpid()) + "-" + std::to_string(i), size, 0});
    }

    uint64_t errors = 0;
    auto complain = [&errors](const std::string& what) {
        if (errors++ < 10)
            (void)std::fprintf(stderr, "kv_client selftest: %s\n", what.c_str());
    };
    uint64_t total = 0;
    std::vector<std::byte> value;
    using Clock = std::chrono::steady_clock;

    auto t0 = Clock::now();
    for (auto& it : items) {
        value.resize(it.size);
        fill_random(rng, value);
        it.sum = checksum(value);
        total += it.size;
        if (auto r = c.op(kv::Op::put, it.key, value); r.status != kv::Status::ok)
            complain("put '" + it.key + "': " + kv::status_name(r.status));
    }
    auto t1 = Clock::now();
    for (const auto& it : items) {
        auto r = c.op(kv::Op::get, it.key);
        if (r.status != kv::Status::ok) {
            complain("get '" + it.key + "': " + kv::status_name(r.status));
        } else if (r.value.size() != it.size || checksum(r.value) != it.sum) {
            complain("get '" + it.key + "': " + std::to_string(r.value.size()) + " bytes with a wrong checksum, " +
                     "expected " + std::to_string(it.size) + " bytes");
        }
    }
    auto t2 = Clock::now();
    for (const auto& it : items) {
        if (auto r = c.op(kv::Op::del, it.key); r.status != kv::Status::ok)
            complain("del '" + it.key + "': " + kv::status_name(r.status));
    }
    auto t3 = Clock::now();
    for (const auto& it : items) {
        if (auto r = c.op(kv::Op::get, it.key); r.status != kv::Status::not_found)
            complain("get '" + it.key + "' after delete: " + kv::status_name(r.status) + ", expected NOT_FOUND");
    }
    auto t4 = Clock::now();

    const double mib = static_cast<double>(total) / (1024.0 * 1024.0);
    std::printf("selftest: %llu keys, %.1f MiB (seed %llu): put %.3f s (%.1f MiB/s), get %.3f s (%.1f MiB/s), "
                "del %.3f s, gone %.3f s: %s\n",
                static_cast<unsigned long long>(count), mib, static_cast<unsigned long long>(seed), seconds(t1 - t0),
                mib / seconds(t1 - t0), seconds(t2 - t1), mib / seconds(t2 - t1), seconds(t3 - t2), seconds(t4 - t3),
                errors == 0 ? "all ok" : (std::to_string(errors) + " FAILURES").c_str());
    return errors == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("kv_client", [&] {
        lite_cli::App app("kv_client",
                          "Talks to kv_server on port P of node ID. Keys are 1..255 bytes, values at most 1 "
                          "MiB (K and M suffixes are accepted for sizes).");
        app.footer("exit status: 0 ok, 1 error, 2 usage, 3 key not found");
        app.require_subcommand(1, 1);
        Options o;
        lite_cli::add_instance(app, o.inst, "local node instance (default 0)");
        lite_cli::add_node(app, o.node, true, "the server's node (0: this node)")->required();
        lite_cli::add_number(app, "--port", o.port, 1, UINT32_MAX, "the server's RPC port (default 4000)");
        lite_cli::add_number(app, "--timeout", o.timeout_ms, 0, 600000, "limit of each call, ms (0: the default)");

        auto key_arg = [&o](CLI::App* cmd) { cmd->add_option("KEY", o.key, "1 to 255 bytes")->required(); };
        auto* put = app.add_subcommand("put", "store VALUE (the argument's bytes), the contents of file F or BYTES "
                                              "random bytes (prints their checksum) under KEY");
        key_arg(put);
        put->add_option("VALUE", o.value, "the value");
        put->add_option("--file", o.file, "store the contents of file F")->type_name("F");
        put->add_option_function<std::string>(
               "--random-size", [&o](const std::string& n) { o.random_size = lite_cli::parse_u64(n); },
               "store BYTES random bytes")
            ->transform(lite_cli::number(0, kv::kMaxValue))
            ->type_name("BYTES");
        auto* get = app.add_subcommand("get", "write the value of KEY to stdout");
        key_arg(get);
        auto* del = app.add_subcommand("del", "delete KEY");
        key_arg(del);
        auto* selftest =
            app.add_subcommand("selftest", "put N keys with random values of up to 1 MiB, read them back and "
                                           "check them, delete them, check they are gone");
        lite_cli::add_number(*selftest, "--count", o.count, 1, 1000000, "keys")->required();
        selftest
            ->add_option_function<std::string>(
                "--seed", [&o](const std::string& n) { o.seed = lite_cli::parse_u64(n); },
                "of the random values (default: a random one)")
            ->transform(lite_cli::number(0, UINT64_MAX))
            ->type_name("S");
        for (auto* cmd : {put, get, del, selftest})
            cmd->fallthrough();

        return app.run(argc, argv, [&]() -> int {
            int (*fn)(Client&, const Options&) = cmd_selftest;
            if (put->parsed()) {
                fn = cmd_put;
                check_put(o);
            } else if (get->parsed()) {
                fn = cmd_get;
            } else if (del->parsed()) {
                fn = cmd_del;
            }
            if (!selftest->parsed())
                check_key(o.key);
            try {
                auto lite = lite::Session::open(o.inst);
                Client client(lite, o.node, o.port, std::chrono::milliseconds(o.timeout_ms));
                return fn(client, o);
            } catch (const lite::Error& e) {
                if (e.errnum() != ETIMEDOUT)
                    throw;
                (void)std::fprintf(stderr, "kv_client: %s\nkv_client: is kv_server running on that node and port?\n",
                                   e.what());
                return 1;
            }
        });
    });
}
