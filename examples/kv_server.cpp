// SPDX-License-Identifier: MIT
//
// An RPC key-value store: GET, PUT and DELETE (kv_wire.hpp) on an
// in-memory map, served by several threads until SIGINT or SIGTERM.
//   kv_server [--instance N] [--port P] [--threads T]
// Clients: kv_client --node <this node> ...
#include "kv_wire.hpp"
#include "lite_cli.hpp"
#include "util.hpp"

#include <atomic>
#include <cstdio>
#include <exception>
#include <lite/rpc.hpp>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace
{

class Store
{
public:
    // The Server's handler: one request in, one reply out.
    size_t handle(const lite::Incoming& in, std::span<const std::byte> msg, std::vector<std::byte>& reply)
    {
        if (!in.is_call()) { // one-way messages mean nothing here
            ignored_.fetch_add(1);
            return 0;
        }
        auto req = kv::decode_request(msg);
        if (!req) {
            bad_.fetch_add(1);
            return kv::encode_reply(reply, kv::Status::bad_request);
        }
        switch (req->op) {
        case kv::Op::get: {
            gets_.fetch_add(1);
            const std::string key(req->key);
            const std::lock_guard<std::mutex> guard(mutex_);
            auto it = map_.find(key);
            if (it == map_.end())
                return kv::encode_reply(reply, kv::Status::not_found);
            return kv::encode_reply(reply, kv::Status::ok, it->second);
        }
        case kv::Op::put: {
            puts_.fetch_add(1);
            std::string key(req->key);
            std::vector<std::byte> value(req->value.begin(), req->value.end()); // copied outside the lock
            const std::lock_guard<std::mutex> guard(mutex_);
            map_.insert_or_assign(std::move(key), std::move(value));
            return kv::encode_reply(reply, kv::Status::ok);
        }
        case kv::Op::del: {
            dels_.fetch_add(1);
            const std::string key(req->key);
            const std::lock_guard<std::mutex> guard(mutex_);
            const bool erased = map_.erase(key) != 0;
            return kv::encode_reply(reply, erased ? kv::Status::ok : kv::Status::not_found);
        }
        }
        bad_.fetch_add(1);
        return kv::encode_reply(reply, kv::Status::bad_request);
    }

    void print_summary() const
    {
        size_t keys = 0;
        {
            const std::lock_guard<std::mutex> guard(mutex_);
            keys = map_.size();
        }
        std::printf("kv_server: %llu gets, %llu puts, %llu deletes, %llu bad requests, %llu messages ignored; "
                    "%zu keys held\n",
                    static_cast<unsigned long long>(gets_.load()), static_cast<unsigned long long>(puts_.load()),
                    static_cast<unsigned long long>(dels_.load()), static_cast<unsigned long long>(bad_.load()),
                    static_cast<unsigned long long>(ignored_.load()), keys);
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::vector<std::byte>> map_; // guarded by mutex_
    std::atomic<uint64_t> gets_{0}, puts_{0}, dels_{0}, bad_{0}, ignored_{0};
};

int run(unsigned inst, uint32_t port, unsigned threads)
{
    const sigset_t stop_signals = example::block_stop_signals(); // before any thread starts
    auto lite = lite::Session::open(inst);
    Store store;
    lite::Server server(
        lite, port,
        [&store](const lite::Incoming& in, std::span<const std::byte> req, std::vector<std::byte>& reply) {
            return store.handle(in, req, reply);
        },
        threads);
    std::printf("kv_server: node %u serving port %u with %u threads (SIGINT or SIGTERM stops)\n", lite.node_id(), port,
                threads);
    (void)std::fflush(stdout);

    const int sig = example::wait_for_stop(stop_signals, [&server] { return server.running(); });
    server.stop();
    const auto st = server.stats();
    if (sig != 0)
        std::printf("kv_server: stopping on signal %d\n", sig);
    store.print_summary();
    if (st.handler_errors != 0 || st.reply_errors != 0) {
        std::printf("kv_server: %llu handler errors, %llu replies refused (callers gone)\n",
                    static_cast<unsigned long long>(st.handler_errors),
                    static_cast<unsigned long long>(st.reply_errors));
    }
    if (auto err = server.error())
        std::rethrow_exception(err);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    return lite_cli::guard("kv_server", [&] {
        lite_cli::App app("kv_server", "Serve a key-value store until SIGINT or SIGTERM.");
        unsigned inst = 0;
        uint32_t port = kv::kDefaultPort;
        unsigned threads = 4;
        lite_cli::add_instance(app, inst, "local node instance (default 0)");
        lite_cli::add_number(app, "--port", port, 1, UINT32_MAX, "RPC port (default 4000)");
        lite_cli::add_number(app, "--threads", threads, 1, 1024, "server threads (default 4)");
        return app.run(argc, argv, [&] { return run(inst, port, threads); });
    });
}
