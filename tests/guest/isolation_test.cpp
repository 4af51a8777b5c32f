// SPDX-License-Identifier: MIT
// Isolation (lite_kmod/mr.c), proved the way an attacker would try it: a
// member kernel posting raw RDMA (the raw_rdma debugfs file, module
// parameter raw_rdma=1) at addresses and keys of its choosing, in both
// modes. global: the key a node was given for its own LMR reads another
// node's LMR and the bytes past its LMR's end. lmr: each
// chunk has its own key, and all of that fails with a remote access error;
// the target node stays a member, its LMRs intact; a freed LMR's key no
// longer works, nor a revoked share's. DSM page frames likewise, with
// read-only keys.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <lite/dsm.hpp>
#include <lite/rpc.hpp>
#include <lite/session.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dsm_util.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 19500;
constexpr uint64_t kSize = (2ULL << 20) + 8192; // above the lease classes: one chunk

// The lines of a node's debugfs file @file, split into fields.
std::vector<std::vector<std::string>> debugfs_lines(uint32_t instance, const char* file)
{
    std::ifstream in(debugfs_path(instance, file));
    std::vector<std::vector<std::string>> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::vector<std::string> fields;
        for (std::string w; f >> w;)
            fields.push_back(w);
        out.push_back(std::move(fields));
    }
    return out;
}

// A number as the kernel prints it: hex with "0x", else decimal.
uint64_t number(const std::string& field)
{
    return std::stoull(field, nullptr, 0);
}

// One line of a node's "exports" file: a chunk it holds for a peer, with
// the key of one holder (grant 0: the owner's; else a name's grant).
struct ExportChunk {
    uint64_t id = 0;
    uint32_t owner = 0;
    uint64_t size = 0;
    uint32_t index = 0;
    uint64_t addr = 0;
    uint32_t len = 0;
    uint32_t rkey = 0;
    uint64_t grant = 0;
};

std::vector<ExportChunk> exports(uint32_t instance)
{
    std::vector<ExportChunk> out;
    for (const auto& f : debugfs_lines(instance, "exports")) {
        // "ID OWNER SIZE FLAGS INDEX ADDR LEN KEY GRANT"
        if (f.size() != 9)
            continue;
        out.push_back({number(f[0]), static_cast<uint32_t>(number(f[1])), number(f[2]),
                       static_cast<uint32_t>(number(f[4])), number(f[5]), static_cast<uint32_t>(number(f[6])),
                       static_cast<uint32_t>(number(f[7])), number(f[8])});
    }
    return out;
}

// The only chunk of the LMR of @size that node @owner holds on @instance.
std::optional<ExportChunk> find_export(uint32_t instance, uint32_t owner, uint64_t size)
{
    std::optional<ExportChunk> found;
    for (const auto& c : exports(instance)) {
        if (c.owner == owner && c.size == size && c.grant == 0) {
            if (found)
                return std::nullopt; // ambiguous
            found = c;
        }
    }
    return found;
}

struct RawResult {
    int status = 1; // 0, a negative errno, or 1 if the file said nothing
    std::vector<uint8_t> data;
};

// One raw RDMA op from @instance to member @node; retries while the
// connection is closing or being made again (after an earlier op broke
// it), so that the op reaches the NIC.
RawResult raw(uint32_t instance, const std::string& cmd)
{
    RawResult r;
    auto deadline = std::chrono::steady_clock::now() + 5s;
    for (;;) {
        int fd = ::open(debugfs_path(instance, "raw_rdma").c_str(), O_RDWR);
        if (fd < 0) {
            r.status = -errno;
            return r;
        }
        if (::write(fd, cmd.data(), cmd.size()) != static_cast<ssize_t>(cmd.size())) {
            r.status = -errno;
            ::close(fd);
            return r;
        }
        char buf[512] = {};
        ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
        ::close(fd);
        if (n <= 0)
            return r;
        std::istringstream in(buf);
        std::string word, hex;
        in >> word >> r.status >> word >> hex;
        r.data.clear();
        for (size_t i = 0; i + 1 < hex.size(); i += 2)
            r.data.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
        if ((r.status != -ENOTCONN && r.status != -ECONNRESET) || std::chrono::steady_clock::now() > deadline)
            return r;
        std::this_thread::sleep_for(50ms);
    }
}

std::string read_cmd(uint32_t node, uint64_t addr, uint32_t rkey, uint32_t len)
{
    std::ostringstream cmd;
    cmd << "read " << node << std::hex << ' ' << addr << ' ' << rkey << std::dec << ' ' << len;
    return cmd.str();
}

std::string write_cmd(uint32_t node, uint64_t addr, uint32_t rkey, uint32_t len, uint8_t byte)
{
    std::ostringstream cmd;
    cmd << "write " << node << std::hex << ' ' << addr << ' ' << rkey << std::dec << ' ' << len << std::hex << ' '
        << unsigned{byte};
    return cmd.str();
}

std::vector<uint8_t> bytes_of(uint64_t v)
{
    std::vector<uint8_t> b(8);
    std::memcpy(b.data(), &v, 8);
    return b;
}

class Isolation : public ::testing::TestWithParam<uint32_t>
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        down_all(*dev_);
        inst_ = {up(*dev_, kPort, 0, secret(), GetParam()).instance,
                 up(*dev_, kPort + 1, kPort, secret(), GetParam()).instance,
                 up(*dev_, kPort + 2, kPort, secret(), GetParam()).instance};
    }
    void TearDown() override { down_all(*dev_); }

    [[nodiscard]] bool lmr_mode() const { return GetParam() == LITE_ISOLATION_LMR; }

    std::unique_ptr<lite::Device> dev_;
    std::vector<uint32_t> inst_;
};

TEST_P(Isolation, WhatARawAccessReaches)
{
    for (auto i : inst_)
        ASSERT_EQ(dev_->status(i).isolation, GetParam());
    const uint64_t pa = 0xa11ce5a11ce5a11cULL, pb = 0xb0bb0bb0bb0bb0b1ULL;
    auto s1 = lite::Session::open(inst_[0]);
    auto s3 = lite::Session::open(inst_[2]);
    std::optional<lite::Lmr> a = s1.alloc(kSize, 2); // node 1's LMR on node 2
    auto b = s3.alloc(kSize, 2);                     // node 3's LMR on node 2
    a->write(0, std::span<const uint8_t>(bytes_of(pa)));
    b.write(0, std::span<const uint8_t>(bytes_of(pb)));

    auto ca = find_export(inst_[1], 1, kSize);
    auto cb = find_export(inst_[1], 3, kSize);
    ASSERT_TRUE(ca && cb) << "node 2 lists both LMRs in its exports";
    ASSERT_EQ(ca->len, kSize);
    if (lmr_mode()) {
        EXPECT_NE(ca->rkey, cb->rkey) << "lmr: each chunk has its own key";
    } else {
        EXPECT_EQ(ca->rkey, cb->rkey) << "global: one key for all";
    }

    // The control: A's own address and key read A's bytes, in both modes.
    auto r = raw(inst_[0], read_cmd(2, ca->addr, ca->rkey, 8));
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.data, bytes_of(pa)) << "raw read of the LMR it was given";

    // Node 1 reads node 3's LMR with the key it was given for its own.
    r = raw(inst_[0], read_cmd(2, cb->addr, ca->rkey, 8));
    if (lmr_mode()) {
        EXPECT_EQ(r.status, -EIO) << "lmr: A's key does not reach B (remote access error)";
        EXPECT_TRUE(r.data.empty());
    } else {
        EXPECT_EQ(r.status, 0) << "global: the key reaches another node's LMR";
        EXPECT_EQ(r.data, bytes_of(pb));
    }

    // The bytes past A's end (the rest of its 4 MiB block).
    r = raw(inst_[0], read_cmd(2, ca->addr + ca->len, ca->rkey, 8));
    if (lmr_mode()) {
        EXPECT_EQ(r.status, -EIO) << "lmr: nothing past the chunk";
    } else {
        EXPECT_EQ(r.status, 0) << "global: memory outside any LMR";
    }

    // A write past A's end, in lmr mode only (in global mode it would
    // scribble on the target's kernel: that is the threat).
    if (lmr_mode()) {
        r = raw(inst_[0], write_cmd(2, ca->addr + ca->len, ca->rkey, 8, 0x5a));
        EXPECT_EQ(r.status, -EIO) << "lmr: no write past the chunk";
    }

    // The target is unharmed: still a member of everyone, both LMRs intact
    // through the ordinary path (which waits for healed connections).
    std::vector<uint8_t> got(8);
    a->read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pa));
    b.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pb));
    for (auto i : inst_)
        EXPECT_EQ(member_ids(*dev_, i), (std::vector<uint32_t>{1, 2, 3}));

    // A freed LMR's key: A goes back to node 2, which invalidates its key.
    const ExportChunk old = *ca;
    a.reset();
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (find_export(inst_[1], 1, kSize) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    ASSERT_FALSE(find_export(inst_[1], 1, kSize)) << "A freed on node 2";
    // In global mode the key still reaches the freed pages: a read there
    // is a use-after-free of the target's kernel (KASAN reports it in the
    // debug kernel), so only lmr mode tries.
    if (lmr_mode()) {
        r = raw(inst_[0], read_cmd(2, old.addr, old.rkey, 8));
        EXPECT_EQ(r.status, -EIO) << "lmr: the freed LMR's key is dead";
        r = raw(inst_[0], write_cmd(2, old.addr, old.rkey, 8, 0x5a));
        EXPECT_EQ(r.status, -EIO) << "lmr: no write through it either";
    }
    b.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pb)) << "B intact after all of it";
}

// The keys node @instance gave out for node @owner's LMR of @size through
// names (not the owner's own), in the order the names were published.
std::vector<ExportChunk> share_keys(uint32_t instance, uint32_t owner, uint64_t size)
{
    std::vector<ExportChunk> out;
    for (const auto& c : exports(instance)) {
        if (c.owner == owner && c.size == size && c.grant != 0)
            out.push_back(c);
    }
    return out;
}

// Revoking a name ends what the keys given out through it reach. lmr: a
// share's mappers get keys of their own with the share's rights (a
// read-only share's key writes nothing); after LITE_revoke that key fails
// with a remote access error, while the owner's keys and another share's
// still work. global: the mappers hold the node's one key, which still
// reads the LMR after the revoke (the threat).
TEST_P(Isolation, RevokeEndsWhatTheSharesKeysReach)
{
    const uint64_t pa = 0x5eed5eed5eed5eedULL;
    auto s1 = lite::Session::open(inst_[0]);
    auto s3 = lite::Session::open(inst_[2]);
    auto a = s1.alloc(kSize, 2); // node 1's LMR on node 2
    a.write(0, std::span<const uint8_t>(bytes_of(pa)));
    a.share("iso-rv", LITE_PERM_READ);
    a.share("iso-keep", LITE_PERM_READ | LITE_PERM_WRITE);
    auto rv = s3.map("iso-rv");
    auto keep = s3.map("iso-keep");
    std::vector<uint8_t> got(8);
    rv.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pa));
    keep.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pa));

    auto own = find_export(inst_[1], 1, kSize);
    ASSERT_TRUE(own);
    auto keys = share_keys(inst_[1], 1, kSize);
    if (!lmr_mode()) {
        EXPECT_TRUE(keys.empty()) << "global: one key for all, nothing per name";
        s1.revoke("iso-rv");
        EXPECT_EQ(err_of([&] { rv.read(0, std::span<uint8_t>(got)); }), EKEYREVOKED);
        auto r = raw(inst_[2], read_cmd(2, own->addr, own->rkey, 8));
        EXPECT_EQ(r.status, 0) << "global: the key still reads the revoked share's LMR";
        EXPECT_EQ(r.data, bytes_of(pa));
        return;
    }
    ASSERT_EQ(keys.size(), 2u) << "lmr: a key per name mapped through";
    const ExportChunk krv = keys[0], kkeep = keys[1];
    EXPECT_NE(krv.grant, kkeep.grant);
    EXPECT_EQ(krv.addr, own->addr);
    EXPECT_NE(krv.rkey, own->rkey);
    EXPECT_NE(krv.rkey, kkeep.rkey);

    // The read-only share's key reads and does not write.
    auto r = raw(inst_[2], read_cmd(2, krv.addr, krv.rkey, 8));
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.data, bytes_of(pa));
    r = raw(inst_[2], write_cmd(2, krv.addr, krv.rkey, 8, 0x5a));
    EXPECT_EQ(r.status, -EIO) << "lmr: a read-only share's key writes nothing";
    r = raw(inst_[2], read_cmd(2, kkeep.addr, kkeep.rkey, 8));
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.data, bytes_of(pa)) << "the write did not land";

    s1.revoke("iso-rv");
    EXPECT_EQ(err_of([&] { rv.read(0, std::span<uint8_t>(got)); }), EKEYREVOKED);
    keys = share_keys(inst_[1], 1, kSize);
    ASSERT_EQ(keys.size(), 1u) << "the revoked share's keys are gone from the list";
    EXPECT_EQ(keys[0].grant, kkeep.grant);
    r = raw(inst_[2], read_cmd(2, krv.addr, krv.rkey, 8));
    EXPECT_EQ(r.status, -EIO) << "lmr: the revoked share's key is dead";
    EXPECT_TRUE(r.data.empty());

    // The rest keeps working: the other share's key, its mapping, the owner.
    r = raw(inst_[2], read_cmd(2, kkeep.addr, kkeep.rkey, 8));
    EXPECT_EQ(r.status, 0) << "the other share keeps its key";
    EXPECT_EQ(r.data, bytes_of(pa));
    keep.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pa));
    a.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pa)) << "the owner's handle is unaffected";
    r = raw(inst_[0], read_cmd(2, own->addr, own->rkey, 8));
    EXPECT_EQ(r.status, 0) << "the owner's key is unaffected";

    // Published again, the LMR gets a new share and new keys.
    a.share("iso-rv", LITE_PERM_READ);
    auto again = s3.map("iso-rv");
    again.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(got, bytes_of(pa));
    keys = share_keys(inst_[1], 1, kSize);
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_NE(keys[1].rkey, krv.rkey) << "not the dead key back";
    EXPECT_NE(keys[1].grant, krv.grant) << "a new grant";
}

// lmr: an LMR has keys for at most 64 names at a time (each may cost an
// MR per chunk); the 65th SHARE fails with ENOSPC, and a revoke frees a
// place. global: names cost no keys, there is no such bound.
TEST_P(Isolation, NamesWithKeysPerLmrAreBounded)
{
    auto s1 = lite::Session::open(inst_[0]);
    auto a = s1.alloc(kSize, 2);
    auto name = [](int i) { return "iso-n" + std::to_string(i); };
    for (int i = 0; i < 64; i++)
        a.share(name(i), LITE_PERM_READ);
    const int err = err_of([&] { a.share(name(64), LITE_PERM_READ); });
    if (!lmr_mode()) {
        EXPECT_EQ(err, 0) << "global: no bound";
        return;
    }
    EXPECT_EQ(err, ENOSPC) << "lmr: 64 names with keys at most";
    EXPECT_EQ(err_of([&] { (void)lite::Session::open(inst_[2]).map(name(64)); }), ENOENT)
        << "the refused name was not published";
    s1.revoke(name(3));
    a.share(name(64), LITE_PERM_READ);
    auto m = lite::Session::open(inst_[2]).map(name(64));
    EXPECT_EQ(m.size(), kSize);
}

// One line of a node's "dsm_frames" file: a page frame of a DSM region.
struct DsmFrame {
    uint64_t region = 0;
    uint64_t index = 0;
    uint64_t addr = 0;
    uint32_t rkey = 0;
};

std::vector<DsmFrame> dsm_frames(uint32_t instance)
{
    std::vector<DsmFrame> out;
    for (const auto& f : debugfs_lines(instance, "dsm_frames")) {
        // "REGION PAGE ADDR KEY STATE INTACT"
        if (f.size() < 4)
            continue;
        out.push_back({number(f[0]), number(f[1]), number(f[2]), static_cast<uint32_t>(number(f[3]))});
    }
    return out;
}

std::optional<DsmFrame> find_frame(uint32_t instance, uint64_t index)
{
    for (const auto& d : dsm_frames(instance)) {
        if (d.index == index)
            return d;
    }
    return std::nullopt;
}

// DSM pages move by one-sided RDMA reads from the frame of the node that
// holds the current copy. In lmr mode each frame has a read-only key of
// its own: a frame's key reads that page and nothing else, writes nothing,
// and dies with the region. The region works the same in both modes.
TEST_P(Isolation, DsmFramesHaveKeysOfTheirOwn)
{
    constexpr uint64_t kPage = 4096;
    const uint64_t p0 = 0x0dd5ba11d0d0cafeULL, p1 = 0x5ca1ab1ec0ffee11ULL;
    auto s1 = lite::Session::open(inst_[0]);
    auto s2 = lite::Session::open(inst_[1]);
    std::optional<lite::Dsm> mine = lite::Dsm::create(s2, "iso-dsm", 16 * kPage);
    store(mine->data(), p0);
    store(mine->data() + kPage, p1);
    {
        // Node 1 reads both pages: RDMA reads from node 2's frames.
        auto other = lite::Dsm::open(s1, "iso-dsm");
        EXPECT_EQ(load(other.data()), p0);
        EXPECT_EQ(load(other.data() + kPage), p1);
    }
    auto f0 = find_frame(inst_[1], 0);
    auto f1 = find_frame(inst_[1], 1);
    ASSERT_TRUE(f0 && f1) << "node 2 lists the frames of pages 0 and 1";
    if (lmr_mode()) {
        EXPECT_NE(f0->rkey, f1->rkey) << "lmr: a key per frame";
    } else {
        EXPECT_EQ(f0->rkey, f1->rkey) << "global: one key for all";
    }

    // The control: page 0's address and key read page 0, in both modes.
    auto r = raw(inst_[0], read_cmd(2, f0->addr, f0->rkey, 8));
    ASSERT_EQ(r.status, 0);
    EXPECT_EQ(r.data, bytes_of(p0));
    // Page 1 with page 0's key.
    r = raw(inst_[0], read_cmd(2, f1->addr, f0->rkey, 8));
    if (lmr_mode()) {
        EXPECT_EQ(r.status, -EIO) << "lmr: page 0's key does not reach page 1";
        // Peers only read frames: no write through the frame's own key.
        r = raw(inst_[0], write_cmd(2, f0->addr, f0->rkey, 8, 0x5a));
        EXPECT_EQ(r.status, -EIO) << "lmr: frame keys are read-only";
    } else {
        EXPECT_EQ(r.status, 0) << "global: the key reaches every frame";
        EXPECT_EQ(r.data, bytes_of(p1));
    }
    EXPECT_EQ(load(mine->data()), p0) << "page 0 intact";
    EXPECT_EQ(load(mine->data() + kPage), p1) << "page 1 intact";
    for (auto i : inst_)
        EXPECT_EQ(member_ids(*dev_, i), (std::vector<uint32_t>{1, 2, 3}));

    // The region goes: its frames and, in lmr mode, their keys with it.
    mine->destroy();
    mine.reset();
    // Every frame of node 2's (dsm_frames lists open regions only).
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (dev_->status(inst_[1]).dsm.pages != 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    ASSERT_EQ(dev_->status(inst_[1]).dsm.pages, 0u) << "no frame left on node 2";
    EXPECT_TRUE(dsm_frames(inst_[1]).empty());
    if (lmr_mode()) {
        r = raw(inst_[0], read_cmd(2, f0->addr, f0->rkey, 8));
        EXPECT_EQ(r.status, -EIO) << "lmr: a freed frame's key is dead";
    }
}

// A member's stray write with immediate, naming a call of ours as replied
// to without writing its reply: call ids are reused at once (the lowest
// free one) and reply buffers are kept for the next calls, so the buffer
// still holds the previous call's reply, with the same call id. The call
// must fail EBADMSG, never return that earlier reply as its own; node 1
// drops the connection (the buffer is freed once node 2 can no longer
// write it: KASAN in make check-debug), and it heals.
TEST_P(Isolation, AStrayReplyImmediateNeverReturnsAnEarlierReply)
{
    constexpr uint32_t kRpcPort = 77;
    auto s1 = lite::Session::open(inst_[0]);
    auto s2 = lite::Session::open(inst_[1]);
    auto target = s2.alloc(kSize, 1); // node 2's LMR on node 1: a place node 2 may write
    auto chunk = find_export(inst_[0], 2, kSize);
    ASSERT_TRUE(chunk) << "node 1 lists node 2's LMR";
    auto srv = s2.serve(kRpcPort);

    const std::string first = "the first call's reply, kept";
    std::vector<std::byte> reply(64), req(16, std::byte{1}), in(64);
    std::thread server([&] {
        auto inc = srv.recv(std::span<std::byte>(in), 10s);
        srv.reply(inc.token, std::as_bytes(std::span(first)));
    });
    size_t n = s1.call(2, kRpcPort, req, reply, 10s);
    server.join();
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(reply.data()), n), first);

    // The same call again: call id 1 (nothing else calls from node 1), the
    // same kept buffer. Node 2 takes it and, instead of replying, posts a
    // write of one byte into its LMR with the reply immediate of call 1.
    std::fill(reply.begin(), reply.end(), std::byte{0});
    int status = 1;
    size_t got = 0;
    std::thread caller([&] {
        try {
            got = s1.call(2, kRpcPort, req, reply, 10s);
            status = 0;
        } catch (const lite::Error& e) {
            status = -e.errnum();
        }
    });
    auto inc = srv.recv(std::span<std::byte>(in), 10s);
    std::ostringstream cmd;
    cmd << "writeimm 1" << std::hex << ' ' << chunk->addr << ' ' << chunk->rkey << " 1 a5 " << ((1U << 31) | 1U);
    auto r = raw(inst_[1], cmd.str());
    EXPECT_EQ(r.status, 0) << cmd.str();
    caller.join();
    EXPECT_EQ(status, -EBADMSG) << "the call fails (got " << got << " bytes: \""
                                << std::string(reinterpret_cast<const char*>(reply.data()), got) << "\")";
    EXPECT_TRUE(std::all_of(reply.begin(), reply.end(), [](std::byte b) { return b == std::byte{0}; }))
        << "nothing of the earlier reply reaches the caller";
    // The real reply would name a call that waits no more, on a connection
    // that is gone: refused, or dropped by node 1.
    try {
        srv.reply(inc.token, std::as_bytes(std::span(first)));
    } catch (const lite::Error&) {
    }

    // The connection comes back; a call goes through whole.
    const std::string again = "after the reconnect";
    std::thread server2([&] {
        try {
            auto next = srv.recv(std::span<std::byte>(in), 40s);
            srv.reply(next.token, std::as_bytes(std::span(again)));
        } catch (const lite::Error&) {
        }
    });
    std::fill(reply.begin(), reply.end(), std::byte{0});
    EXPECT_TRUE(wait_until([&] { return live_members(*dev_, inst_[0]).size() == 3; }, 30s));
    auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
        try {
            n = s1.call(2, kRpcPort, req, reply, 20s);
            break;
        } catch (const lite::Error& e) {
            // Before the reconnect: nothing reached node 2.
            if (e.errnum() != ENOTCONN || std::chrono::steady_clock::now() > deadline) {
                ADD_FAILURE() << e.what();
                srv.close(); // ends server2's receive
                break;
            }
            std::this_thread::sleep_for(100ms);
        }
    }
    server2.join();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(reply.data()), n), again);
    for (auto i : inst_)
        EXPECT_EQ(member_ids(*dev_, i), (std::vector<uint32_t>{1, 2, 3}));
}

// The reply buffers node @instance keeps for its next calls: "kept_for
// bytes addr rkey" rows of its debugfs "rpc" (the first chunk of each).
struct KeptReply {
    uint32_t peer = 0;
    uint64_t bytes = 0;
    uint64_t addr = 0;
    uint32_t rkey = 0;
};
std::vector<KeptReply> kept_replies(uint32_t instance)
{
    std::vector<KeptReply> out;
    bool in_table = false;
    for (const auto& f : debugfs_lines(instance, "rpc")) {
        if (!in_table) {
            in_table = !f.empty() && f[0] == "kept_for";
            continue;
        }
        if (f.size() == 4) {
            out.push_back(
                {static_cast<uint32_t>(number(f[0])), number(f[1]), number(f[2]), static_cast<uint32_t>(number(f[3]))});
        }
    }
    return out;
}

size_t echo_reply(const lite::Incoming& /*in*/, std::span<const std::byte> req, std::vector<std::byte>& reply)
{
    reply.assign(req.begin(), req.end());
    return reply.size();
}

// Reply buffers are kept for the next calls with their keys. lmr: a
// buffer whose key went to one peer is never given to another (that peer
// could write the other's replies), and when the connection to its peer
// closes it is freed and its key dies. global: one buffer serves every
// peer (the node's one key reaches it anyway).
TEST_P(Isolation, ReplyBuffersAreKeptForThePeerTheirKeysWentTo)
{
    constexpr uint32_t kEchoPort = 78;
    auto s1 = lite::Session::open(inst_[0]);
    auto s2 = lite::Session::open(inst_[1]);
    auto s3 = lite::Session::open(inst_[2]);
    lite::Server srv2(s2, kEchoPort, echo_reply);
    std::optional<lite::Server> srv3(std::in_place, s3, kEchoPort, echo_reply);
    auto call = [&](uint32_t node, unsigned seed) {
        std::vector<std::byte> req(200), reply(200);
        for (size_t i = 0; i < req.size(); i++)
            req[i] = static_cast<std::byte>(i * 7 + seed);
        ASSERT_EQ(s1.call(node, kEchoPort, req, reply, 10s), req.size());
        EXPECT_EQ(reply, req) << "the reply from node " << node;
    };

    call(2, 1);
    auto kept = kept_replies(inst_[0]);
    ASSERT_EQ(kept.size(), 1u) << "node 1 keeps the buffer of its call to node 2";
    const KeptReply for2 = kept[0];
    EXPECT_EQ(for2.peer, 2u);

    call(3, 2);
    kept = kept_replies(inst_[0]);
    if (lmr_mode()) {
        ASSERT_EQ(kept.size(), 2u) << "lmr: the call to node 3 got a buffer of its own";
        auto k2 = std::find_if(kept.begin(), kept.end(), [](const KeptReply& k) { return k.peer == 2; });
        auto k3 = std::find_if(kept.begin(), kept.end(), [](const KeptReply& k) { return k.peer == 3; });
        ASSERT_TRUE(k2 != kept.end() && k3 != kept.end());
        EXPECT_EQ(k2->addr, for2.addr) << "node 2's buffer still waits for node 2";
        EXPECT_EQ(k2->rkey, for2.rkey);
        EXPECT_NE(k3->rkey, for2.rkey) << "node 3 never holds node 2's key";
        EXPECT_NE(k3->addr, for2.addr);
        const KeptReply for3 = *k3;

        call(2, 3); // node 2's buffer again
        call(3, 4);
        EXPECT_EQ(kept_replies(inst_[0]).size(), 2u);

        // Node 3 goes: its connection closes, its buffer is freed, its key
        // dead (node 2 tries it), node 2's buffer stays.
        srv3.reset();
        dev_->down(inst_[2]);
        EXPECT_TRUE(wait_until(
            [&] {
                auto k = kept_replies(inst_[0]);
                return k.size() == 1 && k[0].peer == 2;
            },
            10s))
            << "node 3's buffer left the cache";
        // The key is invalidated before the pages go (a work item): until
        // then the read still reaches the buffer, never freed memory.
        RawResult r;
        const auto until = std::chrono::steady_clock::now() + 10s;
        while ((r = raw(inst_[1], read_cmd(1, for3.addr, for3.rkey, 8))).status == 0 &&
               std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(20ms);
        EXPECT_EQ(r.status, -EIO) << "lmr: the key node 3 had is dead";
        // The refused read broke the connection of nodes 1 and 2: node 2's
        // kept buffer went with it, and the next call keys a new one.
        EXPECT_TRUE(wait_until([&] { return live_members(*dev_, inst_[0]).size() == 2; }, 30s));
        std::vector<std::byte> req(200, std::byte{9}), reply(200);
        size_t n = 0;
        EXPECT_TRUE(wait_until(
            [&] {
                try {
                    n = s1.call(2, kEchoPort, req, reply, 10s);
                    return true;
                } catch (const lite::Error& e) {
                    return e.errnum() != ENOTCONN && e.errnum() != ECONNRESET;
                }
            },
            30s));
        EXPECT_EQ(n, req.size());
        EXPECT_EQ(reply, req);
        kept = kept_replies(inst_[0]);
        ASSERT_EQ(kept.size(), 1u);
        EXPECT_EQ(kept[0].peer, 2u);
        EXPECT_NE(kept[0].rkey, for2.rkey) << "lmr: the closed connection's key was not kept";
    } else {
        ASSERT_EQ(kept.size(), 1u) << "global: one buffer for every peer";
        EXPECT_EQ(kept[0].peer, 3u);
        EXPECT_EQ(kept[0].addr, for2.addr) << "global: node 2's buffer served node 3";
    }
}

// A node keeps at most 8 reply buffers (LITE_RCALL_CACHE), in the order
// they were kept. When the cache is full, the buffer kept longest goes for
// the one the last call used: in lmr isolation a cache full of node 2's
// buffers still keeps one for node 3 (and the next call to node 3 takes
// it); in global isolation node 3's call takes the oldest of them.
TEST_P(Isolation, AFullReplyCacheLetsTheBufferKeptLongestGo)
{
    constexpr uint32_t kPort2 = 79;
    constexpr uint32_t kEchoPort = 80;
    constexpr size_t kCache = 8; // LITE_RCALL_CACHE
    constexpr size_t kCalls = kCache + 2;
    constexpr size_t kLen = 200;
    auto s1 = lite::Session::open(inst_[0]);
    auto s2 = lite::Session::open(inst_[1]);
    auto s3 = lite::Session::open(inst_[2]);
    lite::Server srv3(s3, kEchoPort, echo_reply);

    // Node 2 answers only once all kCalls calls arrived: each is in flight
    // with a reply buffer of its own, and all come back at once.
    auto svc = s2.serve(kPort2);
    std::thread server([&] {
        std::vector<std::pair<uint64_t, std::vector<std::byte>>> held;
        for (size_t i = 0; i < kCalls; i++) {
            std::vector<std::byte> buf(kLen);
            lite::Incoming in;
            try {
                in = svc.recv(buf, 20s);
            } catch (const lite::Error&) {
                break;
            }
            buf.resize(in.len);
            held.emplace_back(in.token, std::move(buf));
        }
        for (const auto& [token, data] : held)
            svc.reply(token, data);
    });
    std::vector<std::thread> callers;
    std::atomic<size_t> good{0};
    callers.reserve(kCalls);
    for (size_t c = 0; c < kCalls; c++) {
        callers.emplace_back([&, c] {
            std::vector<std::byte> req(kLen), reply(kLen);
            for (size_t i = 0; i < kLen; i++)
                req[i] = static_cast<std::byte>(i * 13 + c);
            try {
                good += s1.call(2, kPort2, req, reply, 20s) == kLen && reply == req;
            } catch (const lite::Error&) {
            }
        });
    }
    for (auto& t : callers)
        t.join();
    server.join();
    ASSERT_EQ(good.load(), kCalls) << "every call to node 2 echoed";

    auto kept = kept_replies(inst_[0]);
    ASSERT_EQ(kept.size(), kCache) << "the cache is full";
    for (const auto& k : kept)
        EXPECT_EQ(k.peer, 2u);
    const KeptReply oldest = kept.front();
    auto addrs = [](const std::vector<KeptReply>& ks) {
        std::vector<uint64_t> a;
        a.reserve(ks.size());
        for (const auto& k : ks)
            a.push_back(k.addr);
        std::sort(a.begin(), a.end());
        return a;
    };
    const auto before = addrs(kept);

    std::vector<std::byte> req(kLen, std::byte{0x5a}), reply(kLen);
    ASSERT_EQ(s1.call(3, kEchoPort, req, reply, 10s), kLen);
    EXPECT_EQ(reply, req);
    kept = kept_replies(inst_[0]);
    ASSERT_EQ(kept.size(), kCache);
    EXPECT_EQ(kept.back().peer, 3u) << "the last call's buffer is kept, newest last";
    if (lmr_mode()) {
        EXPECT_NE(kept.back().addr, oldest.addr) << "lmr: node 3's call got a buffer of its own";
        EXPECT_EQ(std::count_if(kept.begin(), kept.end(), [&](const KeptReply& k) { return k.addr == oldest.addr; }), 0)
            << "lmr: node 2's oldest buffer left the cache";
        for (size_t i = 0; i + 1 < kept.size(); i++)
            EXPECT_EQ(kept[i].peer, 2u);
        const KeptReply for3 = kept.back();
        std::fill(reply.begin(), reply.end(), std::byte{0});
        ASSERT_EQ(s1.call(3, kEchoPort, req, reply, 10s), kLen);
        EXPECT_EQ(reply, req);
        kept = kept_replies(inst_[0]);
        ASSERT_EQ(kept.size(), kCache);
        EXPECT_EQ(kept.back().addr, for3.addr) << "lmr: the next call to node 3 took its buffer again";
        EXPECT_EQ(kept.back().rkey, for3.rkey);
    } else {
        EXPECT_EQ(kept.back().addr, oldest.addr) << "global: node 3's call took the oldest buffer";
        EXPECT_EQ(addrs(kept), before) << "global: no buffer made or freed";
    }
}

// A value of node @instance's debugfs "mr" file (mr.c), or -1 if it is
// not there.
int64_t mr_value(uint32_t instance, const std::string& name)
{
    for (const auto& f : debugfs_lines(instance, "mr")) {
        if (f.size() == 2 && f[0] == name)
            return std::stoll(f[1]);
    }
    return -1;
}

// lmr isolation registers on a QP of its own (mr.c). A registration the
// device refuses (the break_regs fault hook posts a key of another MR's
// index) fails that one allocation with EIO and no other: the peers'
// connections stay up (no reconnect anywhere), the LMR registered before
// still holds its data, and the next allocation, on a registration QP
// made again, gets fresh keys that work.
TEST(LmrRegistration, ARefusedRegistrationFailsOneAllocAndBreaksNoConnection)
{
    auto dev = lite::Device::open();
    down_all(dev);
    const std::vector<uint32_t> inst = {up(dev, kPort + 20, 0, secret(), LITE_ISOLATION_LMR).instance,
                                        up(dev, kPort + 21, kPort + 20, secret(), LITE_ISOLATION_LMR).instance};
    auto s1 = lite::Session::open(inst[0]);
    std::vector<uint8_t> data(kSize);
    for (size_t i = 0; i < data.size(); i++)
        data[i] = static_cast<uint8_t>(i * 131 + 7);
    auto before = s1.alloc(kSize, 2); // node 1's LMR on node 2
    before.write(0, std::span<const uint8_t>(data));

    const int64_t resets = mr_value(inst[1], "reg_qp_resets");
    ASSERT_GE(resets, 0) << "node 2's mr file lists reg_qp_resets";
    const uint32_t rc1 = dev.status(inst[0]).reconnects, rc2 = dev.status(inst[1]).reconnects;

    ASSERT_EQ(write_debugfs(inst[1], "break_regs", "1"), 0);
    EXPECT_EQ(err_of([&] { (void)s1.alloc(kSize, 2); }), EIO) << "the refused registration fails its allocation";
    std::ifstream left(debugfs_path(inst[1], "break_regs"));
    int armed = -1;
    ASSERT_TRUE(left >> armed);
    EXPECT_EQ(armed, 0) << "the fault was used";

    auto after = s1.alloc(kSize, 2);
    EXPECT_EQ(mr_value(inst[1], "reg_qp_resets"), resets + 1) << "the registration QP was made again";
    std::vector<uint8_t> rev(data.rbegin(), data.rend());
    after.write(0, std::span<const uint8_t>(rev));
    std::vector<uint8_t> got(kSize);
    after.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(checksum(got), checksum(rev)) << "the LMR keyed after the remake";
    before.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(checksum(got), checksum(data)) << "the LMR keyed before the failure";

    // Concurrent allocations, one registration refused: exactly that
    // allocation fails; a batch flushed behind it is made again.
    ASSERT_EQ(write_debugfs(inst[1], "break_regs", "1"), 0);
    constexpr int kThreads = 4;
    std::vector<int> errs(kThreads, -1);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            auto s = lite::Session::open(inst[0]);
            errs[t] = err_of([&] {
                auto l = s.alloc(kSize, 2);
                std::vector<uint8_t> mine(data.begin(), data.begin() + 4096);
                mine[0] = static_cast<uint8_t>(t);
                l.write(0, std::span<const uint8_t>(mine));
                std::vector<uint8_t> back(mine.size());
                l.read(0, std::span<uint8_t>(back));
                if (back != mine)
                    throw lite::Error(EBADMSG, "data");
            });
        });
    }
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(std::count(errs.begin(), errs.end(), EIO), 1) << "one allocation had the refused registration";
    EXPECT_EQ(std::count(errs.begin(), errs.end(), 0), kThreads - 1) << "the others worked, data checked";
    (void)s1.alloc(kSize, 2); // the QP is made again by the post after a failure
    EXPECT_EQ(mr_value(inst[1], "reg_qp_resets"), resets + 2);

    EXPECT_EQ(dev.status(inst[0]).reconnects, rc1) << "no connection of node 1 broke";
    EXPECT_EQ(dev.status(inst[1]).reconnects, rc2) << "no connection of node 2 broke";
    for (auto i : inst)
        EXPECT_EQ(member_ids(dev, i), (std::vector<uint32_t>{1, 2}));
    down_all(dev);
}

// The file is there only with the module parameter.
TEST(IsolationKnob, RawRdmaNeedsTheModuleParameter)
{
    auto dev = lite::Device::open();
    down_all(dev);
    auto n = up(dev, kPort + 10, 0);
    std::ifstream param("/sys/module/lite/parameters/raw_rdma");
    char on = 'N';
    ASSERT_TRUE(param >> on);
    auto r = raw(n.instance, read_cmd(1, 0x1000, 1, 8));
    if (on == 'Y') {
        EXPECT_NE(r.status, -EPERM);
    } else {
        EXPECT_EQ(r.status, -EPERM) << "raw_rdma is refused without raw_rdma=1";
    }
    EXPECT_EQ(raw(n.instance, "read 1 1000 1 65").status, on == 'Y' ? -EINVAL : -EPERM) << "more than 64 bytes";
    EXPECT_EQ(raw(n.instance, "jump 1 1000 1 8").status, on == 'Y' ? -EINVAL : -EPERM) << "unknown op";
    EXPECT_EQ(raw(n.instance, "writeimm 1 1000 1 8 5a").status, on == 'Y' ? -EINVAL : -EPERM) << "no immediate";
    EXPECT_EQ(raw(n.instance, "write 1 1000 1 8 5a 1").status, on == 'Y' ? -EINVAL : -EPERM)
        << "an immediate for a plain write";
    down_all(dev);
}

INSTANTIATE_TEST_SUITE_P(Modes, Isolation, ::testing::Values(LITE_ISOLATION_GLOBAL, LITE_ISOLATION_LMR),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                             return std::string(lite::isolation_name(info.param));
                         });

} // namespace
