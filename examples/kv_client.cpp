// SPDX-License-Identifier: MIT
//
// The client of kv_server: put, get and delete keys, or run a self-test.
//   kv_client [--instance N] --node ID [--port P] [--timeout MS] COMMAND
// See kUsage below; the wire format is in kv_wire.hpp.
#include "kv_wire.hpp"
#include "util.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <lite/session.hpp>
#include <random>
#include <string>
#include <vector>

namespace
{

constexpr const char* kUsage = R"(usage: kv_client [--instance N] --node ID [--port P] [--timeout MS] COMMAND
commands:
  put KEY VALUE                 store VALUE (the argument's bytes) under KEY
  put KEY --file F              store the contents of file F
  put KEY --random-size BYTES   store BYTES random bytes (prints their checksum)
  get KEY                       write the value to stdout
  del KEY                       delete KEY
  selftest --count N [--seed S] put N keys with random values of up to 1 MiB,
                                read them back and check them, delete them,
                                check they are gone
Talks to kv_server on port P (default 4000) of node ID (0: this node)
through node instance N (default 0). Keys are 1..255 bytes, values at most
1 MiB (K and M suffixes are accepted for sizes). MS 0: the default timeout.
exit status: 0 ok, 1 error, 2 usage, 3 key not found
)";

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
        throw example::UsageError{"KEY must be 1 to 255 bytes, '" + key + "' is " + std::to_string(key.size())};
    return key;
}

int cmd_put(Client& c, example::Args& args)
{
    auto file = args.take("--file");
    auto random_size = args.take("--random-size");
    auto rest = args.rest();
    const size_t sources = (file ? 1 : 0) + (random_size ? 1 : 0) + (rest.size() == 2 ? 1 : 0);
    if (rest.empty() || rest.size() > 2 || sources != 1)
        throw example::UsageError{"put needs KEY and one of VALUE, --file F or --random-size BYTES"};
    const std::string key = check_key(rest[0]);

    std::vector<std::byte> value;
    if (file) {
        value = read_value_file(*file);
    } else if (random_size) {
        value.resize(example::to_u64(*random_size, "--random-size", 0, kv::kMaxValue));
        std::mt19937_64 rng(std::random_device{}());
        fill_random(rng, value);
    } else {
        if (rest[1].size() > kv::kMaxValue)
            throw example::UsageError{"VALUE is larger than 1 MiB"};
        for (char ch : rest[1])
            value.push_back(static_cast<std::byte>(ch));
    }
    c.op(kv::Op::put, key, value);
    std::printf("put '%s': %zu bytes, checksum %016llx\n", key.c_str(), value.size(),
                static_cast<unsigned long long>(checksum(value)));
    return 0;
}

int cmd_get(Client& c, example::Args& args)
{
    auto rest = args.rest();
    if (rest.size() != 1)
        throw example::UsageError{"get needs exactly one KEY"};
    const std::string key = check_key(rest[0]);
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

int cmd_del(Client& c, example::Args& args)
{
    auto rest = args.rest();
    if (rest.size() != 1)
        throw example::UsageError{"del needs exactly one KEY"};
    const std::string key = check_key(rest[0]);
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

int cmd_selftest(Client& c, example::Args& args)
{
    auto count_text = args.take("--count");
    auto seed_text = args.take("--seed");
    if (!args.rest().empty())
        throw example::UsageError{"unexpected argument '" + args.rest()[0] + "'"};
    if (!count_text)
        throw example::UsageError{"selftest needs --count N"};
    const uint64_t count = example::to_u64(*count_text, "--count", 1, 1000000);
    const uint64_t seed = seed_text ? example::to_u64(*seed_text, "--seed", 0, UINT64_MAX) : std::random_device{}();
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

int run(int argc, char** argv)
{
    // Options before the command; the command's own follow it.
    int cmd_at = 1;
    while (cmd_at < argc && std::string_view(argv[cmd_at]).starts_with("-"))
        cmd_at += std::string_view(argv[cmd_at]) == "-h" || std::string_view(argv[cmd_at]) == "--help" ? 1 : 2;
    example::Args global(cmd_at < argc ? cmd_at : argc, argv, 1);
    if (global.flag("--help") || global.flag("-h")) {
        (void)std::fputs(kUsage, stdout);
        return 0;
    }
    auto instance = global.take("--instance");
    auto node_text = global.take("--node");
    auto port_text = global.take("--port");
    auto timeout_text = global.take("--timeout");
    if (!global.rest().empty())
        throw example::UsageError{"unexpected argument '" + global.rest()[0] + "'"};
    if (cmd_at >= argc)
        throw example::UsageError{"no command"};
    if (!node_text)
        throw example::UsageError{"--node ID is required"};
    const std::string cmd = argv[cmd_at];
    example::Args args(argc, argv, cmd_at + 1);

    const unsigned inst = instance ? example::to_u32(*instance, "--instance", 0, UINT32_MAX) : 0;
    const uint32_t node = example::to_u32(*node_text, "--node", 0, LITE_MAX_NODES);
    const uint32_t port = port_text ? example::to_u32(*port_text, "--port", 1, UINT32_MAX) : kv::kDefaultPort;
    const std::chrono::milliseconds timeout(timeout_text ? example::to_u32(*timeout_text, "--timeout", 0, 600000) : 0);

    int (*fn)(Client&, example::Args&) = nullptr;
    if (cmd == "put") {
        fn = cmd_put;
    } else if (cmd == "get") {
        fn = cmd_get;
    } else if (cmd == "del") {
        fn = cmd_del;
    } else if (cmd == "selftest") {
        fn = cmd_selftest;
    } else {
        throw example::UsageError{"unknown command '" + cmd + "'"};
    }
    auto lite = lite::Session::open(inst);
    Client client(lite, node, port, timeout);
    return fn(client, args);
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const example::UsageError& e) {
        (void)std::fprintf(stderr, "kv_client: %s\n%s", e.msg.c_str(), kUsage);
        return 2;
    } catch (const lite::Error& e) {
        (void)std::fprintf(stderr, "kv_client: %s\n", e.what());
        if (e.errnum() == ETIMEDOUT)
            (void)std::fprintf(stderr, "kv_client: is kv_server running on that node and port?\n");
        return 1;
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "kv_client: %s\n", e.what());
        return 1;
    }
}
