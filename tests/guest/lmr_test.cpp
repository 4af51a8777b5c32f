// SPDX-License-Identifier: MIT
// LMRs on the real module, 3 nodes: data checked end to end with
// checksums, every rejection with its own errno, cleanup on process exit,
// exact concurrent atomics, sharing and revocation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <lite/session.hpp>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 18800;
constexpr uint64_t kMiB = 1ULL << 20;

class Lmr : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        inst_ = three_nodes(*dev_, kPort);
    }
    void TearDown() override { down_all(*dev_); }

    [[nodiscard]] uint64_t mem_bytes(size_t i) const { return dev_->status(inst_[i]).counters.mem_bytes; }

    std::unique_ptr<lite::Device> dev_;
    std::vector<uint32_t> inst_;
};

TEST_F(Lmr, RandomRoundTripsAcrossNodes)
{
    std::mt19937_64 rng(2026);
    // Chunks are at most 4 MiB: this spans three, with odd tail bytes.
    const uint64_t size = 8 * kMiB + 12345;
    for (size_t i = 0; i < 3; i++) {
        auto s = lite::Session::open(inst_[i]);
        for (uint32_t node = 1; node <= 3; node++) {
            auto l = s.alloc(size, node);
            std::vector<uint8_t> shadow(size, 0);
            std::vector<std::pair<uint64_t, uint64_t>> spans = {
                {0, 1}, {size - 1, 1}, {4 * kMiB - 1, 2}, {4 * kMiB - 3000, 7000}, {8 * kMiB - 1, 2}};
            for (int k = 0; k < 30; k++) {
                uint64_t max = k % 3 == 0 ? 64 : (k % 3 == 1 ? 64 * uint64_t{1024} : kMiB);
                uint64_t len = 1 + rng() % max;
                spans.emplace_back(rng() % (size - len + 1), len);
            }
            for (auto [off, len] : spans) {
                std::vector<uint8_t> data(len);
                for (auto& b : data)
                    b = static_cast<uint8_t>(rng());
                l.write(off, std::span<const uint8_t>(data));
                std::copy(data.begin(), data.end(), shadow.begin() + static_cast<long>(off));
                std::vector<uint8_t> back(len);
                l.read(off, std::span<uint8_t>(back));
                ASSERT_EQ(checksum(back), checksum(data))
                    << "instance " << i << " node " << node << " off " << off << " len " << len;
            }
            std::vector<uint8_t> all(size);
            l.read(0, std::span<uint8_t>(all));
            ASSERT_EQ(checksum(all), checksum(shadow)) << "whole LMR, instance " << i << " on node " << node;
        }
    }
}

TEST_F(Lmr, OneGiBWrittenAndVerified)
{
    const uint64_t size = 1024 * kMiB, piece = 4 * kMiB;
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(size, 2);
    EXPECT_GE(mem_bytes(1), size) << "node 2 holds it";
    std::vector<uint64_t> buf(piece / 8), back(piece / 8);
    uint64_t sum_out = kChecksumStart, sum_in = kChecksumStart;
    for (uint64_t off = 0; off < size; off += piece) {
        std::mt19937_64 rng(off);
        for (auto& w : buf)
            w = rng();
        l.write(off, std::span<const uint64_t>(buf));
        sum_out = checksum(buf, sum_out);
    }
    for (uint64_t off = 0; off < size; off += piece) {
        l.read(off, std::span<uint64_t>(back));
        sum_in = checksum(back, sum_in);
    }
    EXPECT_EQ(sum_in, sum_out) << "1 GiB checksum";
}

TEST_F(Lmr, HandleOfAnotherProcessIsRejected)
{
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(4096, 2);
    lite_lmr_t h = l.handle();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // Its own open file: the parent's handle number means nothing here.
        lite_t* mine = nullptr;
        if (LITE_open(inst_[0], &mine) != 0)
            _exit(10);
        uint8_t b = 0;
        int ret = LITE_read(mine, h, 0, &b, 1);
        _exit(ret == -EBADF ? 0 : 1);
    }
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "the child could use the parent's handle";
}

TEST_F(Lmr, EachRejectionHasItsOwnErrno)
{
    auto s = lite::Session::open(inst_[1]);
    auto l = s.alloc(8192, 3);
    uint8_t b[16] = {};
    lite_t* c = s.get();
    lite_lmr_t h = l.handle();
    EXPECT_EQ(LITE_read(c, h, 8192, b, 1), -ERANGE) << "out of bounds";
    EXPECT_EQ(LITE_write(c, h, 8190, b, 3), -ERANGE) << "crosses the end";
    EXPECT_EQ(LITE_read(c, h, UINT64_MAX - 2, b, 8), -EOVERFLOW) << "offset + length wraps";
    uint64_t old = 0;
    EXPECT_EQ(LITE_fetch_add(c, h, 4, 1, &old), -EINVAL) << "unaligned atomic";
    EXPECT_EQ(LITE_fetch_add(c, h, 8192, 1, &old), -ERANGE) << "atomic past the end";
    EXPECT_EQ(LITE_read(c, h + 1000, 0, b, 1), -EBADF) << "no such handle";

    // Missing permission: a read-only mapping.
    l.share("ro", LITE_PERM_READ);
    auto other = lite::Session::open(inst_[2]);
    auto ro = other.map("ro", LITE_PERM_READ);
    EXPECT_EQ(ro.size(), 8192u);
    EXPECT_EQ(LITE_write(other.get(), ro.handle(), 0, b, 1), -EACCES);
    EXPECT_EQ(LITE_fetch_add(other.get(), ro.handle(), 0, 1, &old), -EACCES);
    EXPECT_EQ(LITE_read(other.get(), ro.handle(), 0, b, 1), 0);

    // Revoked mapping.
    s.revoke("ro");
    EXPECT_EQ(LITE_read(other.get(), ro.handle(), 0, b, 1), -EKEYREVOKED);
    EXPECT_EQ(LITE_read(c, h, 0, b, 1), 0) << "the owner's handle is unaffected";

    // Freed handle.
    lite_lmr_t freed = 0;
    ASSERT_EQ(LITE_alloc(c, 64, 2, &freed), 0);
    ASSERT_EQ(LITE_free(c, freed), 0);
    EXPECT_EQ(LITE_read(c, freed, 0, b, 1), -EBADF);
    EXPECT_EQ(LITE_free(c, freed), -EBADF) << "double free";
}

TEST_F(Lmr, FreeingTheOwnerRevokesEveryMapping)
{
    auto s = lite::Session::open(inst_[0]);
    lite_lmr_t h = 0;
    ASSERT_EQ(LITE_alloc(s.get(), 4096, 3, &h), 0);
    ASSERT_EQ(LITE_share(s.get(), h, "doomed", LITE_PERM_ALL), 0);
    auto m1 = lite::Session::open(inst_[1]);
    auto m2 = lite::Session::open(inst_[2]);
    auto a = m1.map("doomed");
    auto b = m2.map("doomed");
    uint64_t v = 7;
    a.write(0, std::span<const uint64_t>(&v, 1));
    ASSERT_EQ(LITE_free(s.get(), h), 0);
    uint8_t x = 0;
    EXPECT_EQ(LITE_read(m1.get(), a.handle(), 0, &x, 1), -EKEYREVOKED);
    EXPECT_EQ(LITE_read(m2.get(), b.handle(), 0, &x, 1), -EKEYREVOKED);
    EXPECT_EQ(err_of([&] { (void)m1.map("doomed"); }), ENOENT) << "the name went with it";
}

TEST_F(Lmr, SharingRules)
{
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(4096, 1);
    l.share("rules", LITE_PERM_READ | LITE_PERM_ATOMIC);
    EXPECT_EQ(err_of([&] { l.share("rules", LITE_PERM_READ); }), EEXIST);
    auto o = lite::Session::open(inst_[1]);
    EXPECT_EQ(err_of([&] { (void)o.map("rules", LITE_PERM_WRITE); }), EACCES) << "more than granted";
    EXPECT_EQ(err_of([&] { (void)o.map("nobody-shared-this"); }), ENOENT);
    auto m = o.map("rules");
    EXPECT_EQ(LITE_share(o.get(), m.handle(), "again", LITE_PERM_READ), -EPERM) << "only the allocator shares";
    EXPECT_EQ(err_of([&] { o.revoke("rules"); }), ENOENT) << "not the publisher";
    EXPECT_EQ(m.fetch_add(0, 5), 0u);
    uint64_t v = 0;
    l.read(0, std::span<uint64_t>(&v, 1));
    EXPECT_EQ(v, 5u) << "mapping and owner see the same memory";
}

TEST_F(Lmr, ProcessExitFreesItsMemoryOnEveryNode)
{
    uint64_t before[3] = {mem_bytes(0), mem_bytes(1), mem_bytes(2)};
    int to_parent[2], to_child[2];
    ASSERT_EQ(pipe(to_parent), 0);
    ASSERT_EQ(pipe(to_child), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        lite_t* c = nullptr;
        lite_lmr_t h = 0;
        if (LITE_open(inst_[1], &c) != 0)
            _exit(10);
        for (uint32_t node = 1; node <= 3; node++) {
            if (LITE_alloc(c, kMiB + node, node, &h) != 0) {
                _exit(11);
            }
        }
        if (LITE_alloc(c, 5 * kMiB, 3, &h) != 0 || LITE_share(c, h, "exit-test", LITE_PERM_READ) != 0)
            _exit(12);
        char x = 1;
        if (write(to_parent[1], &x, 1) != 1 || read(to_child[0], &x, 1) != 1)
            _exit(13);
        _exit(0); // no free, no close: the kernel cleans up
    }
    char x = 0;
    ASSERT_EQ(read_byte_within(to_parent[0], &x, 120s), 1) << "the child did not allocate in 120 s";
    EXPECT_EQ(mem_bytes(0), before[0] + kMiB + 1);
    EXPECT_EQ(mem_bytes(1), before[1] + kMiB + 2);
    EXPECT_EQ(mem_bytes(2), before[2] + kMiB + 3 + 5 * kMiB);
    auto s = lite::Session::open(inst_[2]);
    auto mapped = s.map("exit-test");
    ASSERT_EQ(write(to_child[1], &x, 1), 1);
    int st = wait_child_within(pid, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_TRUE(wait_until([&] { return mem_bytes(i) == before[i]; }, 5s))
            << "node " << i + 1 << " holds " << mem_bytes(i) << " bytes, had " << before[i];
    }
    uint8_t b = 0;
    EXPECT_EQ(LITE_read(s.get(), mapped.handle(), 0, &b, 1), -EKEYREVOKED) << "its share died with it";
    for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]})
        close(fd);
}

TEST_F(Lmr, ConcurrentFetchAddFromThreeNodesIsExact)
{
    constexpr int kThreads = 4, kAdds = 300;
    auto s = lite::Session::open(inst_[0]);
    auto ctr = s.alloc(64, 2);
    ctr.share("counter", LITE_PERM_READ | LITE_PERM_ATOMIC);
    std::vector<std::vector<uint64_t>> seen(size_t{3} * kThreads);
    std::atomic<int> failures{0};
    std::vector<std::thread> pool;
    for (size_t i = 0; i < 3; i++) {
        for (int t = 0; t < kThreads; t++) {
            pool.emplace_back([&, i, t] {
                try {
                    auto mine = lite::Session::open(inst_[i]);
                    auto c = mine.map("counter");
                    for (int k = 0; k < kAdds; k++)
                        seen[i * kThreads + t].push_back(c.fetch_add(8, 1));
                } catch (const lite::Error&) {
                    failures++;
                }
            });
        }
    }
    for (auto& th : pool)
        th.join();
    ASSERT_EQ(failures.load(), 0);
    uint64_t total = 0;
    ctr.read(8, std::span<uint64_t>(&total, 1));
    EXPECT_EQ(total, 3u * kThreads * kAdds);
    // Every add saw a different previous value: 0 .. total-1, each once.
    std::set<uint64_t> all;
    for (const auto& v : seen)
        all.insert(v.begin(), v.end());
    EXPECT_EQ(all.size(), total);
    EXPECT_EQ(*all.rbegin(), total - 1);
}

TEST_F(Lmr, CompareAndSwap)
{
    auto s = lite::Session::open(inst_[2]);
    auto l = s.alloc(16, 1);
    EXPECT_EQ(l.cmp_swap(8, 0, 42), 0u) << "matched: swapped";
    EXPECT_EQ(l.cmp_swap(8, 1, 99), 42u) << "no match: unchanged";
    uint64_t v = 0;
    l.read(8, std::span<uint64_t>(&v, 1));
    EXPECT_EQ(v, 42u);
}

TEST_F(Lmr, MemsetAndMemcpyAcrossNodes)
{
    auto s = lite::Session::open(inst_[1]);
    const uint64_t size = 6 * kMiB + 77;
    auto a = s.alloc(size, 1);
    auto b = s.alloc(size, 3);
    std::vector<uint8_t> pat(size);
    std::mt19937 rng(5);
    for (auto& x : pat)
        x = static_cast<uint8_t>(rng());
    a.write(0, std::span<const uint8_t>(pat));
    b.fill(0, std::byte{0xAB}, size);
    b.copy_from(100, a, 4 * kMiB - 50, kMiB + 3); // node 1 -> node 3, crossing chunks
    std::vector<uint8_t> got(size), want(size, 0xAB);
    std::copy(pat.begin() + static_cast<long>(4 * kMiB - 50), pat.begin() + static_cast<long>(5 * kMiB - 47),
              want.begin() + 100);
    b.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(checksum(got), checksum(want));

    // Overlapping copy inside one LMR behaves like memmove.
    a.copy_from(1000, a, 0, 5000);
    std::memmove(pat.data() + 1000, pat.data(), 5000);
    a.read(0, std::span<uint8_t>(got));
    EXPECT_EQ(checksum(got), checksum(pat));
}

// A zero-length read, write, memset or copy is valid at any offset up to
// the LMR's size (the empty range at its end included) and does nothing;
// beyond the end it is ERANGE like any other access.
TEST_F(Lmr, ZeroLengthAccessUpToTheEnd)
{
    auto s = lite::Session::open(inst_[0]);
    const uint64_t size = 8192;
    auto a = s.alloc(size, 2);
    auto b = s.alloc(size, 3);
    lite_t* c = s.get();
    uint8_t x = 0xee;
    for (uint64_t off : {uint64_t{0}, uint64_t{4096}, size}) {
        EXPECT_EQ(LITE_read(c, a.handle(), off, &x, 0), 0) << off;
        EXPECT_EQ(LITE_write(c, a.handle(), off, &x, 0), 0) << off;
        EXPECT_EQ(LITE_memset(c, a.handle(), off, 0xff, 0), 0) << off;
        EXPECT_EQ(LITE_memcpy(c, b.handle(), off, a.handle(), off, 0), 0) << off;
        EXPECT_EQ(LITE_memcpy(c, b.handle(), 0, a.handle(), off, 0), 0) << off;
    }
    for (uint64_t off : {size + 1, uint64_t{1} << 40, UINT64_MAX}) {
        EXPECT_EQ(LITE_read(c, a.handle(), off, &x, 0), -ERANGE) << off;
        EXPECT_EQ(LITE_write(c, a.handle(), off, &x, 0), -ERANGE) << off;
        EXPECT_EQ(LITE_memset(c, a.handle(), off, 0xff, 0), -ERANGE) << off;
        EXPECT_EQ(LITE_memcpy(c, b.handle(), off, a.handle(), 0, 0), -ERANGE) << "destination " << off;
        EXPECT_EQ(LITE_memcpy(c, b.handle(), 0, a.handle(), off, 0), -ERANGE) << "source " << off;
    }
    EXPECT_EQ(x, 0xee) << "nothing was read";
    std::vector<uint8_t> all(size, 1);
    for (auto* l : {&a, &b}) {
        l->read(0, std::span<uint8_t>(all));
        EXPECT_TRUE(std::all_of(all.begin(), all.end(), [](uint8_t v) { return v == 0; })) << "nothing was written";
    }
}

// MAP racing REVOKE: the name is not there yet or any more (ENOENT), or it
// was revoked while the map fetched the chunk list (EKEYREVOKED), or the
// map won (and its reads fail once the revocation lands). Nothing else,
// and the race is real: it shows up in a few hundred rounds.
TEST_F(Lmr, MapRacingRevoke)
{
    auto owner = lite::Session::open(inst_[0]);
    auto l = owner.alloc(64 * kMiB, 3);
    std::atomic<bool> stop{false};
    std::atomic<int> mapped{0}, absent{0}, revoked{0}, other{0}, last_other{0};
    std::vector<std::thread> mappers;
    for (size_t i = 1; i <= 2; i++) {
        for (int t = 0; t < 2; t++) {
            mappers.emplace_back([&, i] {
                lite_t* c = nullptr;
                if (LITE_open(inst_[i], &c) != 0) {
                    other++;
                    return;
                }
                while (!stop) {
                    lite_lmr_t h = 0;
                    uint64_t size = 0;
                    int ret = LITE_map(c, "race", LITE_PERM_READ, &h, &size);
                    if (ret == 0) {
                        mapped++;
                        (void)LITE_free(c, h);
                    } else if (ret == -ENOENT) {
                        absent++;
                    } else if (ret == -EKEYREVOKED) {
                        revoked++;
                    } else {
                        other++;
                        last_other = ret;
                    }
                }
                LITE_close(c);
            });
        }
    }
    std::mt19937 rng(11);
    int rounds = 0, share_err = 0, revoke_err = 0;
    auto end = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < end && (rounds < 50 || revoked == 0 || mapped == 0)) {
        share_err = LITE_share(owner.get(), l.handle(), "race", LITE_PERM_READ);
        if (share_err != 0)
            break;
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 4000));
        revoke_err = LITE_revoke(owner.get(), "race");
        if (revoke_err != 0)
            break;
        rounds++;
    }
    stop = true;
    for (auto& t : mappers)
        t.join();
    std::printf("%d rounds: %d mapped, %d absent, %d revoked while mapping\n", rounds, mapped.load(), absent.load(),
                revoked.load());
    EXPECT_EQ(share_err, 0);
    EXPECT_EQ(revoke_err, 0);
    EXPECT_EQ(other, 0) << "unexpected errno " << last_other;
    EXPECT_GT(revoked, 0) << "MAP never lost the race to REVOKE";
    EXPECT_GT(mapped, 0);
    EXPECT_GT(absent, 0);
}

// Raw ioctls: what the C API never sends, the kernel must still reject.
TEST_F(Lmr, DataUapiRejections)
{
    int fd = open(LITE_DEVICE_PATH, O_RDWR);
    ASSERT_GE(fd, 0);
    auto e = [&](unsigned long cmd, void* arg) { return ioctl(fd, cmd, arg) < 0 ? errno : 0; };
    lite_lmr_alloc al{};
    al.size = 64;
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), EBADFD) << "not attached";
    lite_rw unattached{};
    unattached.handle = 1;
    EXPECT_EQ(e(LITE_IOC_READ, &unattached), EBADFD) << "not attached: no handle to look up";
    lite_attach at{};
    at.instance = 4242;
    EXPECT_EQ(e(LITE_IOC_ATTACH, &at), ENOENT);
    at.instance = inst_[0];
    at.flags = 1;
    EXPECT_EQ(e(LITE_IOC_ATTACH, &at), EINVAL);
    at.flags = 0;
    ASSERT_EQ(e(LITE_IOC_ATTACH, &at), 0);
    EXPECT_EQ(at.node_id, 1u);
    at.node_id = 0;
    EXPECT_EQ(e(LITE_IOC_ATTACH, &at), EBUSY) << "attached already";

    al = {};
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), EINVAL) << "size 0";
    al.size = LITE_LMR_MAX + 1;
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), E2BIG);
    al.size = 64;
    al.node_id = 99;
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), EHOSTUNREACH) << "no such node";
    al.node_id = 0;
    al.flags = 4;
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), EINVAL);
    al.flags = 0;
    al.reserved[1] = 1;
    EXPECT_EQ(e(LITE_IOC_LMR_ALLOC, &al), EINVAL);
    al.reserved[1] = 0;
    ASSERT_EQ(e(LITE_IOC_LMR_ALLOC, &al), 0);

    uint8_t buf[64] = {};
    lite_rw rw{};
    rw.handle = al.handle;
    rw.len = 8;
    rw.buf = reinterpret_cast<uintptr_t>(buf);
    rw.flags = 1U << 5;
    EXPECT_EQ(e(LITE_IOC_READ, &rw), EINVAL) << "unknown flag";
    rw.flags = LITE_RW_COPY | LITE_RW_ZCOPY;
    EXPECT_EQ(e(LITE_IOC_READ, &rw), EINVAL) << "both paths";
    rw.flags = LITE_RW_SPIN;
    EXPECT_EQ(e(LITE_IOC_WRITE, &rw), EINVAL) << "io_uring's flag on the ioctl";
    rw.flags = 0;
    rw.reserved[0] = 1;
    EXPECT_EQ(e(LITE_IOC_WRITE, &rw), EINVAL);
    rw.reserved[0] = 0;
    rw.buf = 8;
    EXPECT_EQ(e(LITE_IOC_READ, &rw), EFAULT) << "bad user buffer";
    rw.buf = reinterpret_cast<uintptr_t>(buf);
    for (uint32_t f : {LITE_RW_COPY, LITE_RW_ZCOPY}) {
        rw.flags = f;
        EXPECT_EQ(e(LITE_IOC_WRITE, &rw), 0) << "path " << f;
    }

    lite_atomic at2{};
    at2.handle = al.handle;
    at2.result = 1;
    EXPECT_EQ(e(LITE_IOC_FETCH_ADD, &at2), EINVAL) << "output not zero";
    at2.result = 0;
    at2.swap = 3;
    EXPECT_EQ(e(LITE_IOC_FETCH_ADD, &at2), EINVAL) << "swap on fetch-add";

    lite_memset ms{};
    ms.handle = al.handle;
    ms.len = 8;
    ms.value = 256;
    EXPECT_EQ(e(LITE_IOC_MEMSET, &ms), EINVAL);

    lite_share sh{};
    sh.handle = al.handle;
    std::strcpy(sh.name, "x");
    EXPECT_EQ(e(LITE_IOC_SHARE, &sh), EINVAL) << "no permissions";
    sh.perms = 8;
    EXPECT_EQ(e(LITE_IOC_SHARE, &sh), EINVAL) << "unknown permission";
    sh.perms = LITE_PERM_READ;
    std::memset(sh.name, 'n', sizeof(sh.name));
    EXPECT_EQ(e(LITE_IOC_SHARE, &sh), EINVAL) << "name not terminated";
    lite_map mp{};
    std::strcpy(mp.name, "x");
    mp.size = 1;
    EXPECT_EQ(e(LITE_IOC_MAP, &mp), EINVAL) << "output not zero";
    lite_revoke rv{};
    EXPECT_EQ(e(LITE_IOC_REVOKE, &rv), EINVAL) << "empty name";
    close(fd);
}

// Private anonymous memory that can be replaced by new pages at the same
// address.
class AnonBuffer
{
public:
    explicit AnonBuffer(size_t len) : len_(len)
    {
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            throw std::system_error(errno, std::generic_category(), "mmap");
        data_ = static_cast<uint8_t*>(p);
    }
    ~AnonBuffer() { munmap(data_, len_); }
    AnonBuffer(const AnonBuffer&) = delete;
    AnonBuffer& operator=(const AnonBuffer&) = delete;
    AnonBuffer(AnonBuffer&&) = delete;
    AnonBuffer& operator=(AnonBuffer&&) = delete;

    [[nodiscard]] std::span<uint8_t> span() const { return {data_, len_}; }
    // Unmap the pages and map fresh (zero) ones in their place.
    void remap() const
    {
        ASSERT_EQ(munmap(data_, len_), 0);
        void* p = mmap(data_, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        ASSERT_EQ(p, static_cast<void*>(data_));
    }

private:
    uint8_t* data_ = nullptr;
    size_t len_;
};

void fill(std::span<uint8_t> s, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    for (auto& b : s)
        b = static_cast<uint8_t>(rng());
}

// A child forked to hold copies of the parent's memory: it waits until the
// parent lets it go, then exits 0 if @check() holds. Let go and reaped at
// the latest when this goes out of scope, whatever failed meanwhile.
class WaitingChild
{
public:
    explicit WaitingChild(const std::function<bool()>& check)
    {
        std::array<int, 2> go{};
        if (pipe(go.data()) != 0)
            return;
        pid_ = fork();
        if (pid_ < 0) {
            close(go[0]);
            close(go[1]);
            return;
        }
        if (pid_ == 0) {
            char c = 0;
            close(go[1]);
            const bool got = read(go[0], &c, 1) == 1;
            _exit(got && check() ? 0 : 1);
        }
        close(go[0]);
        go_ = go[1];
    }
    ~WaitingChild() { release(); }
    WaitingChild(const WaitingChild&) = delete;
    WaitingChild& operator=(const WaitingChild&) = delete;
    WaitingChild(WaitingChild&&) = delete;
    WaitingChild& operator=(WaitingChild&&) = delete;

    [[nodiscard]] bool started() const noexcept { return pid_ > 0; }
    // Let the child check and exit; whether it exited 0.
    bool release()
    {
        if (go_ >= 0) {
            [[maybe_unused]] const ssize_t sent = write(go_, "x", 1); // short: the child sees EOF, fails
            close(go_);
            go_ = -1;
        }
        if (pid_ > 0 && status_ == -1 && waitpid(pid_, &status_, 0) != pid_)
            status_ = -2;
        return status_ >= 0 && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
    }

private:
    pid_t pid_ = -1;
    int go_ = -1;
    int status_ = -1;
};

// Run @body in a child process without CAP_IPC_LOCK and with
// RLIMIT_MEMLOCK of @memlock bytes; whether it returned true without a
// failed expectation.
bool in_unprivileged_child(rlim_t memlock, const std::function<bool()>& body)
{
    pid_t pid = fork();
    if (pid == 0) {
        rlimit lim{memlock, memlock};
        __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
        std::array<__user_cap_data_struct, 2> caps{};
        if (setrlimit(RLIMIT_MEMLOCK, &lim) || syscall(SYS_capget, &hdr, caps.data()))
            _exit(2);
        caps[0].effective &= ~(1U << CAP_IPC_LOCK);
        if (syscall(SYS_capset, &hdr, caps.data()))
            _exit(3);
        _exit(body() && !::testing::Test::HasFailure() ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return false;
    EXPECT_TRUE(WIFEXITED(status)) << "status " << status;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Buffers used again move in place from the pages the file keeps pinned
// (pincache.c); once a buffer's mapping changes (unmapped and mapped
// again, pages dropped), its new pages are the ones that move. A
// protection change or a fork leaves the buffer its pages: they stay kept.
TEST_F(Lmr, PinnedBuffersFollowTheirMappings)
{
    ASSERT_GT(module_param("pin_cache_kb", 0), 0u) << "the default keeps buffers pinned";
    constexpr size_t kLen = size_t{64} * 1024;
    const uint64_t pinned_at_start = vm_pin_kb();
    {
        auto s = lite::Session::open(inst_[0]);
        auto l = s.alloc(kLen, 2);
        AnonBuffer buf(kLen);
        AnonBuffer back(kLen);
        auto round = [&](uint64_t seed, const char* what) {
            fill(buf.span(), seed);
            l.write(0, std::span<const uint8_t>(buf.span()));
            l.read(0, back.span());
            EXPECT_EQ(checksum(back.span()), checksum(buf.span())) << what;
        };
        round(1, "first use");
        EXPECT_GE(vm_pin_kb(), pinned_at_start + 2 * kLen / 1024) << "both buffers stay pinned";
        round(2, "the same pages again");
        const uint64_t pinned = vm_pin_kb();
        buf.remap();
        EXPECT_TRUE(wait_until([&] { return vm_pin_kb() + kLen / 1024 <= pinned; }, 5s))
            << "the old pages are unpinned without another call: VmPin " << vm_pin_kb() << " kB, was " << pinned;
        round(3, "new pages at the same address");
        const uint64_t sum = checksum(buf.span());

        back.remap();
        l.read(0, back.span());
        EXPECT_EQ(checksum(back.span()), sum) << "a read into new pages at the same address";
        ASSERT_EQ(madvise(back.span().data(), kLen, MADV_DONTNEED), 0);
        l.read(0, back.span());
        EXPECT_EQ(checksum(back.span()), sum) << "a read after MADV_DONTNEED";

        round(4, "the new pages kept");
        const uint64_t kept = vm_pin_kb();
        // A fork while the parent keeps using the buffers: the child has
        // copies, the parent's kept pages stay the buffers'.
        const uint64_t before_fork = checksum(buf.span());
        WaitingChild child([&] { return checksum(buf.span()) == before_fork; });
        ASSERT_TRUE(child.started());
        round(5, "while a child shares the pages");
        EXPECT_TRUE(child.release()) << "the child's copy kept the data of the fork";
        ASSERT_EQ(mprotect(buf.span().data(), kLen, PROT_READ), 0);
        ASSERT_EQ(mprotect(buf.span().data(), kLen, PROT_READ | PROT_WRITE), 0);
        // The purge would have run by now; the next call would pin again.
        EXPECT_FALSE(wait_until([&] { return vm_pin_kb() < kept; }, 1s))
            << "a fork or a protection change that allows the access keeps the pages kept";
        round(6, "after a fork and mprotect");
        EXPECT_EQ(vm_pin_kb(), kept);

        // A buffer made read-only is not written in place by a read.
        ASSERT_EQ(mprotect(back.span().data(), kLen, PROT_READ), 0);
        EXPECT_EQ(LITE_read(l.session(), l.handle(), 0, back.span().data(), kLen), -EFAULT)
            << "a read into a buffer made read-only";
        ASSERT_EQ(mprotect(back.span().data(), kLen, PROT_READ | PROT_WRITE), 0);

        // Pieces at odd addresses and lengths, within and across pages.
        std::vector<uint8_t> expect(kLen);
        l.read(0, std::span<uint8_t>(expect));
        fill(buf.span(), 7);
        for (auto [at, len] : {std::pair<size_t, size_t>{1, 5000}, {4095, 2}, {8191, 20000}, {3, 7}}) {
            l.write(at + 100, std::span<const uint8_t>(buf.span().subspan(at, len)));
            std::copy_n(buf.span().begin() + static_cast<long>(at), len, expect.begin() + static_cast<long>(at + 100));
        }
        std::fill(back.span().begin(), back.span().end(), 0);
        for (auto [at, len] : {std::pair<size_t, size_t>{0, 3}, {3, 30000}, {30003, 1}, {30004, kLen - 30004}})
            l.read(at, back.span().subspan(at, len));
        EXPECT_EQ(checksum(back.span()), checksum(expect)) << "unaligned pieces";

        // Shared memory is not kept pinned; it moves by the other paths.
        const uint64_t pinned_before_shared = vm_pin_kb();
        int mfd = memfd_create("lite-pin-test", MFD_CLOEXEC);
        ASSERT_GE(mfd, 0);
        ASSERT_EQ(ftruncate(mfd, kLen), 0);
        void* p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        ASSERT_NE(p, MAP_FAILED);
        std::span<uint8_t> shared(static_cast<uint8_t*>(p), kLen);
        fill(shared, 8);
        l.write(0, std::span<const uint8_t>(shared));
        const uint64_t shared_sum = checksum(shared);
        std::fill(shared.begin(), shared.end(), 0);
        l.read(0, shared);
        EXPECT_EQ(checksum(shared), shared_sum) << "shared memory";
        EXPECT_EQ(vm_pin_kb(), pinned_before_shared) << "shared memory is not kept pinned";
        munmap(p, kLen);
        close(mfd);
    }
    EXPECT_EQ(vm_pin_kb(), pinned_at_start) << "closing the file unpins what it kept";
}

// A buffer whose pinning first copies its pages is kept all the same: pages
// only read so far (the zero page) that a read is to fill, and pages a
// child still shares after fork, whichever way the data moves. The copy
// changes the range while the pin is being made; the pages are the
// buffer's own after it, and a second try keeps them (pincache.c).
TEST_F(Lmr, PinCacheKeepsPagesThePinCopied)
{
    ASSERT_GT(module_param("pin_cache_kb", 0), 0u) << "the default keeps buffers pinned";
    constexpr size_t kLen = size_t{64} * 1024;
    constexpr uint64_t kKb = kLen / 1024;
    const uint64_t pinned_at_start = vm_pin_kb();
    {
        auto s = lite::Session::open(inst_[0]);
        auto l = s.alloc(kLen, 2);
        AnonBuffer src(kLen);
        fill(src.span(), 11);
        l.write(0, std::span<const uint8_t>(src.span()));
        const uint64_t sum = checksum(src.span());

        AnonBuffer zero(kLen);
        ASSERT_EQ(checksum(zero.span()), checksum(std::vector<uint8_t>(kLen))) << "read only: the zero page";
        uint64_t before = vm_pin_kb();
        l.read(0, zero.span());
        EXPECT_EQ(checksum(zero.span()), sum) << "a read into pages that mapped the zero page";
        EXPECT_EQ(vm_pin_kb(), before + kKb) << "pages the pin copied from the zero page are kept";

        // Pages shared with a child: one buffer the device writes, one it
        // reads. The child's copies keep what they held at the fork.
        AnonBuffer in(kLen), out(kLen);
        fill(in.span(), 12);
        fill(out.span(), 13);
        const uint64_t in_at_fork = checksum(in.span());
        const uint64_t out_sum = checksum(out.span());
        WaitingChild child([&] { return checksum(in.span()) == in_at_fork && checksum(out.span()) == out_sum; });
        ASSERT_TRUE(child.started());
        before = vm_pin_kb();
        l.read(0, in.span());
        EXPECT_EQ(checksum(in.span()), sum) << "a read into pages a child shares";
        EXPECT_EQ(vm_pin_kb(), before + kKb) << "pages shared with a child, copied for a read, are kept";
        before = vm_pin_kb();
        l.write(0, std::span<const uint8_t>(out.span()));
        EXPECT_EQ(vm_pin_kb(), before + kKb) << "pages shared with a child, copied for a write, are kept";
        EXPECT_TRUE(child.release()) << "the child's copies kept their data";
        std::vector<uint8_t> back(kLen);
        l.read(0, std::span<uint8_t>(back));
        EXPECT_EQ(checksum(back), out_sum) << "the write moved the parent's data";
    }
    EXPECT_EQ(vm_pin_kb(), pinned_at_start) << "closing the file unpins what it kept";
}

// The cache keeps at most half of RLIMIT_MEMLOCK without CAP_IPC_LOCK,
// giving up its oldest buffers for a new one, and a lowered pin_cache_kb
// applies at the file's next call.
TEST_F(Lmr, PinCacheStaysWithinItsBudget)
{
    constexpr size_t kLen = size_t{256} * 1024;
    constexpr uint64_t kKb = kLen / 1024;
    // Read back into shared memory, which is never kept: only the
    // buffers written count.
    void* shared = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(shared, MAP_FAILED);
    std::span<uint8_t> back(static_cast<uint8_t*>(shared), kLen);
    auto use = [&](lite::Lmr& l, AnonBuffer& buf, uint64_t seed) {
        fill(buf.span(), seed);
        l.write(0, std::span<const uint8_t>(buf.span()));
        l.read(0, back);
        EXPECT_EQ(checksum(back), checksum(buf.span())) << "buffer " << seed;
    };
    // Four new buffers through @l in turn, into @bufs; @after(i) runs after
    // buffer i.
    using Buffers = std::vector<std::unique_ptr<AnonBuffer>>;
    auto use_four = [&](lite::Lmr& l, Buffers& bufs, const std::function<void(uint64_t)>& after) {
        for (uint64_t i = 1; i <= 4; i++) {
            bufs.push_back(std::make_unique<AnonBuffer>(kLen));
            use(l, *bufs.back(), i);
            after(i);
        }
    };

    // A process without CAP_IPC_LOCK and RLIMIT_MEMLOCK of 1 MiB: the
    // cache keeps 512 KiB, the newest buffers.
    EXPECT_TRUE(in_unprivileged_child(rlim_t{4} * kLen, [&] {
        const uint64_t start = vm_pin_kb();
        auto s = lite::Session::open(inst_[0]);
        auto l = s.alloc(kLen, 2);
        Buffers bufs;
        use_four(l, bufs, [&](uint64_t i) {
            const uint64_t pinned = vm_pin_kb() - start;
            EXPECT_LE(pinned, 2 * kKb) << "at most half of RLIMIT_MEMLOCK, after buffer " << i;
            EXPECT_EQ(pinned, std::min<uint64_t>(i, 2) * kKb) << "the newest buffers kept, after buffer " << i;
        });
        // The newest is among the kept: its pages go when it is unmapped.
        bufs.back()->remap();
        EXPECT_TRUE(wait_until([&] { return vm_pin_kb() - start == kKb; }, 5s))
            << "VmPin " << vm_pin_kb() - start << " kB over the start after unmapping the newest buffer";
        return true;
    })) << "without CAP_IPC_LOCK: half of RLIMIT_MEMLOCK, newest buffers kept";

    // Lowering pin_cache_kb shrinks the cache at its next call.
    ParamRestore keep("pin_cache_kb");
    ASSERT_EQ(set_module_param("pin_cache_kb", "1024"), 0);
    const uint64_t start = vm_pin_kb();
    {
        auto s = lite::Session::open(inst_[0]);
        auto l = s.alloc(kLen, 2);
        Buffers bufs;
        use_four(l, bufs, [](uint64_t) {});
        EXPECT_EQ(vm_pin_kb() - start, 4 * kKb) << "pin_cache_kb 1024 keeps four 256 KiB buffers";
        ASSERT_EQ(set_module_param("pin_cache_kb", "256"), 0);
        use(l, *bufs.front(), 5);
        EXPECT_EQ(vm_pin_kb() - start, kKb) << "pin_cache_kb 256: one buffer kept";
        ASSERT_EQ(set_module_param("pin_cache_kb", "0"), 0);
        use(l, *bufs.back(), 6);
        EXPECT_EQ(vm_pin_kb(), start) << "pin_cache_kb 0: nothing kept";
    }
    EXPECT_EQ(vm_pin_kb(), start);
    munmap(shared, kLen);
}

// With pin_cache_kb 0, or over RLIMIT_MEMLOCK, nothing stays pinned and
// the data still moves.
TEST_F(Lmr, PinCacheOffOrOverMemlockPinsNothing)
{
    constexpr size_t kLen = size_t{256} * 1024;
    auto roundtrip = [&](const char* what) {
        auto s = lite::Session::open(inst_[0]);
        auto l = s.alloc(kLen, 2);
        AnonBuffer buf(kLen);
        AnonBuffer back(kLen);
        const uint64_t pinned = vm_pin_kb();
        for (uint64_t seed = 1; seed <= 3; seed++) {
            fill(buf.span(), seed);
            l.write(0, std::span<const uint8_t>(buf.span()));
            l.read(0, back.span());
            EXPECT_EQ(checksum(back.span()), checksum(buf.span())) << what << ", round " << seed;
        }
        return vm_pin_kb() - pinned;
    };
    {
        ParamRestore keep("pin_cache_kb");
        ASSERT_EQ(set_module_param("pin_cache_kb", "0"), 0);
        EXPECT_EQ(roundtrip("pin_cache_kb 0"), 0u) << "pin_cache_kb 0";
    }
    // A process without CAP_IPC_LOCK and a small RLIMIT_MEMLOCK.
    EXPECT_TRUE(in_unprivileged_child(rlim_t{64} * 1024, [&] { return roundtrip("RLIMIT_MEMLOCK 64 KiB") <= 64; }))
        << "without CAP_IPC_LOCK: data and pinned memory within RLIMIT_MEMLOCK";
}

} // namespace
