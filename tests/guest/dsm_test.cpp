// SPDX-License-Identifier: MIT
// DSM regions on the real module, 3 nodes in one guest: one process maps
// a region through each node (each mapping is that node's copies), so the
// protocol runs between nodes for every access. Data, sequential
// consistency (litmus tests), locks, failures (SIGBUS on lost pages
// only), cleanup after exit and kill, and every rejection's errno.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cerrno>
#include <cstring>
#include <lite/dsm.hpp>
#include <lite/session.hpp>
#include <random>
#include <thread>
#include <vector>

#include "dsm_util.hpp"
#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 19100;
constexpr uint64_t kPage = 4096;

// Rounds of each litmus test: 10,000 (make check), fewer on the debug
// kernel (make check-debug sets LITE_DSM_ROUNDS).
int litmus_rounds()
{
    const int n = std::stoi(env("LITE_DSM_ROUNDS", "10000"));
    ::testing::Test::RecordProperty("rounds", n);
    return n;
}

// Run @f in a child process; its exit status, or 128 + the signal.
template <class F> int in_child(F&& f)
{
    pid_t pid = ::fork();
    if (pid == 0) {
        int rc = 1;
        try {
            rc = f();
        } catch (...) {
            rc = 2;
        }
        ::_exit(rc);
    }
    int status = wait_child_within(pid, 120s);
    if (status == -1)
        return -1; // still there after 120 s (then killed)
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

class Dsm : public ThreeSessions<kPort>
{
protected:
    [[nodiscard]] lite_dsm_counters dsm(size_t i) const { return dev_->status(inst_[i]).dsm; }
};

TEST_F(Dsm, WritesOnOneNodeAreReadOnTheOthers)
{
    const uint64_t size = 64 * kPage;
    auto a = lite::Dsm::create(s_[0], "dsm-rw", size);
    auto b = lite::Dsm::open(s_[1], "dsm-rw");
    auto c = lite::Dsm::open(s_[2], "dsm-rw");
    ASSERT_EQ(b.size(), size);
    EXPECT_EQ(a.home(), s_[0].node_id());
    EXPECT_EQ(c.home(), s_[0].node_id());
    for (uint64_t off = 0; off < size; off += 512)
        EXPECT_EQ(load(b.data() + off), 0U) << "a new region reads as zeros";

    std::mt19937_64 rng(11);
    std::vector<uint64_t> shadow(size / 8, 0);
    lite::Dsm* maps[] = {&a, &b, &c};
    for (int k = 0; k < 3000; k++) {
        uint64_t word = rng() % (size / 8);
        lite::Dsm* w = maps[rng() % 3];
        lite::Dsm* r = maps[rng() % 3];
        uint64_t v = rng();
        store(w->data() + word * 8, v);
        shadow[word] = v;
        uint64_t probe = rng() % (size / 8);
        ASSERT_EQ(load(r->data() + probe * 8), shadow[probe]) << "round " << k << ", word " << probe;
    }
    auto st = dsm(1);
    EXPECT_GT(st.fetches, 0U) << "node 2 never fetched a page: the test did not cross nodes";
    EXPECT_GT(dsm(0).invalidations + dsm(1).invalidations + dsm(2).invalidations, 0U);
    for (size_t i = 0; i < 3; i++) {
        // Every copy dropped or downgraded was a page-table change, timed.
        const auto d = dsm(i);
        EXPECT_GE(d.prot_changes, d.invalidations) << "node " << i + 1;
        EXPECT_EQ(d.prot_changes == 0, d.prot_ns == 0) << "node " << i + 1;
    }
}

TEST_F(Dsm, CountersUnderALockAreExact)
{
    constexpr int kPages = 8;
    constexpr int kThreads = 4;
    constexpr int kIncrements = 150;
    auto region = lite::Dsm::create(s_[0], "dsm-count", kPages * kPage);
    auto lock_lmr = s_[0].alloc(64, 1);
    lock_lmr.share("dsm-count-lock", LITE_PERM_ALL);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (size_t n = 0; n < 3; n++) {
        for (int t = 0; t < kThreads; t++) {
            threads.emplace_back([&, n, t] {
                try {
                    // Each thread its own session: the lock is per file.
                    auto s = lite::Session::open(inst_[n]);
                    auto map = lite::Dsm::open(s, "dsm-count");
                    auto lk = s.map("dsm-count-lock");
                    std::mt19937 rng(static_cast<unsigned>(n * 100 + t));
                    for (int k = 0; k < kIncrements; k++) {
                        int page = static_cast<int>(rng() % kPages);
                        auto held = lk.lock(0);
                        std::byte* p = map.data() + page * kPage;
                        store(p, load(p) + 1);
                    }
                } catch (const std::exception& e) {
                    ADD_FAILURE() << e.what();
                    failures++;
                }
            });
        }
    }
    for (auto& t : threads)
        t.join();
    ASSERT_EQ(failures.load(), 0);
    uint64_t total = 0;
    auto check = lite::Dsm::open(s_[2], "dsm-count");
    for (int p = 0; p < kPages; p++)
        total += load(check.data() + p * kPage);
    EXPECT_EQ(total, uint64_t{3} * kThreads * kIncrements);
}

// Message passing: if the flag is seen, so is the data written before it.
TEST_F(Dsm, MessagePassingIsNeverReordered)
{
    const int rounds = litmus_rounds();
    auto w = lite::Dsm::create(s_[0], "dsm-mp", uint64_t{2} * rounds * kPage);
    auto r = lite::Dsm::open(s_[1], "dsm-mp");
    std::barrier sync(2);
    std::vector<uint8_t> seen(static_cast<size_t>(rounds), 0);
    int bad = 0;
    std::thread writer([&] {
        for (int i = 0; i < rounds; i++) {
            sync.arrive_and_wait();
            store(w.data() + uint64_t{2} * i * kPage, 1);       // data
            store(w.data() + (uint64_t{2} * i + 1) * kPage, 1); // flag
        }
    });
    for (int i = 0; i < rounds; i++) {
        sync.arrive_and_wait();
        uint64_t flag = load(r.data() + (uint64_t{2} * i + 1) * kPage);
        uint64_t data = load(r.data() + uint64_t{2} * i * kPage);
        seen[i] = static_cast<uint8_t>(flag);
        bad += flag == 1 && data == 0 ? 1 : 0;
    }
    writer.join();
    EXPECT_EQ(bad, 0) << "flag seen without the data written before it";
    int flags = 0;
    for (uint8_t s : seen)
        flags += s;
    RecordProperty("flag_seen_rounds", flags);
}

// Store buffering: two nodes each store, then load the other's word; both
// loads returning the old value is not sequentially consistent.
TEST_F(Dsm, StoreBufferingNeverLosesBothStores)
{
    const int rounds = litmus_rounds();
    auto a = lite::Dsm::create(s_[0], "dsm-sb", uint64_t{2} * rounds * kPage);
    auto b = lite::Dsm::open(s_[2], "dsm-sb");
    std::barrier sync(2);
    std::vector<uint64_t> r1(static_cast<size_t>(rounds)), r2(static_cast<size_t>(rounds));
    std::thread t1([&] {
        for (int i = 0; i < rounds; i++) {
            sync.arrive_and_wait();
            store(a.data() + uint64_t{2} * i * kPage, 1);           // x
            r1[i] = load(a.data() + (uint64_t{2} * i + 1) * kPage); // y
        }
    });
    for (int i = 0; i < rounds; i++) {
        sync.arrive_and_wait();
        store(b.data() + (uint64_t{2} * i + 1) * kPage, 1); // y
        r2[i] = load(b.data() + uint64_t{2} * i * kPage);   // x
    }
    t1.join();
    int both_old = 0;
    for (int i = 0; i < rounds; i++)
        both_old += r1[i] == 0 && r2[i] == 0 ? 1 : 0;
    EXPECT_EQ(both_old, 0) << "rounds in which both loads missed the other store";
}

TEST_F(Dsm, APageWrittenBeforeABarrierIsReadEverywhereAfterIt)
{
    auto a = lite::Dsm::create(s_[0], "dsm-barrier", 16 * kPage);
    auto bar = s_[0].alloc(64, 1);
    bar.share("dsm-barrier-word", LITE_PERM_ALL);
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (size_t n = 0; n < 3; n++) {
        threads.emplace_back([&, n] {
            auto s = lite::Session::open(inst_[n]);
            auto map = lite::Dsm::open(s, "dsm-barrier");
            auto word = s.map("dsm-barrier-word");
            for (uint64_t round = 1; round <= 20; round++) {
                if (n == 0) {
                    for (uint64_t p = 0; p < 16; p++) {
                        store(map.data() + p * kPage + 8 * (round % 8), round * 1000 + p);
                    }
                }
                word.barrier(0, 3);
                for (uint64_t p = 0; p < 16; p++) {
                    if (load(map.data() + p * kPage + 8 * (round % 8)) != round * 1000 + p) {
                        wrong++;
                    }
                }
                word.barrier(0, 3);
            }
        });
    }
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(wrong.load(), 0);
}

TEST_F(Dsm, ANodeLeavingTakesOnlyItsPagesWithItAsSigbus)
{
    auto a = lite::Dsm::create(s_[0], "dsm-leave", 8 * kPage);
    {
        auto c = lite::Dsm::open(s_[2], "dsm-leave");
        store(a.data() + 0 * kPage, 100); // page 0: on node 1
        store(c.data() + 1 * kPage, 200); // page 1: only node 3 has it
        store(a.data() + 2 * kPage, 300);
        EXPECT_EQ(load(c.data() + 2 * kPage), 300U); // page 2: both read it
        s_.pop_back();                               // (c's session)
        dev_->down(inst_[2]);                        // node 3 leaves
        // node 3's own mapping dies with it
        EXPECT_EQ(in_child([&] { return static_cast<int>(load(c.data() + 2 * kPage)); }), 128 + SIGBUS);
    }
    ASSERT_TRUE(wait_until([&] { return live_members(*dev_, inst_[0]).size() == 2; }, 10s));
    EXPECT_EQ(in_child([&] { return static_cast<int>(load(a.data() + 1 * kPage) / 100); }), 128 + SIGBUS)
        << "the page only node 3 held";
    EXPECT_EQ(load(a.data() + 0 * kPage), 100U);
    EXPECT_EQ(load(a.data() + 2 * kPage), 300U);
    store(a.data() + 3 * kPage, 400);
    auto b = lite::Dsm::open(s_[1], "dsm-leave");
    EXPECT_EQ(load(b.data() + 3 * kPage), 400U);
    EXPECT_GT(dsm(0).sigbus, 0U);
}

TEST_F(Dsm, ExitAndKillLeaveTheCountersWhereTheyWere)
{
    auto base = lite::Dsm::create(s_[0], "dsm-exit", 256 * kPage);
    store(base.data(), 1);
    auto before1 = dsm(1);
    auto before0 = dsm(0);
    // A child maps through node 2, writes every page, and exits.
    EXPECT_EQ(in_child([&] {
                  auto s = lite::Session::open(inst_[1]);
                  auto m = lite::Dsm::open(s, "dsm-exit");
                  for (uint64_t p = 0; p < 256; p++)
                      store(m.data() + p * kPage, p + 1);
                  return 0;
              }),
              0);
    EXPECT_TRUE(wait_until([&] { return dsm(1).pages == before1.pages && dsm(1).regions == before1.regions; }, 10s))
        << "node 2 keeps " << dsm(1).pages << " pages";
    for (uint64_t p = 0; p < 256; p++)
        ASSERT_EQ(load(base.data() + p * kPage), p + 1) << "page " << p << " was handed back to its home";
    // Children killed at random points of their faults.
    std::mt19937 rng(7);
    for (int k = 0; k < 8; k++) {
        pid_t pid = ::fork();
        if (pid == 0) {
            auto s = lite::Session::open(inst_[1 + k % 2]);
            auto m = lite::Dsm::open(s, "dsm-exit");
            for (uint64_t i = 0;; i++)
                store(m.data() + (i % 256) * kPage + 8, i);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 200));
        ::kill(pid, SIGKILL);
        ASSERT_NE(wait_child_within(pid, 60s), -1) << "a child killed mid-fault did not exit in 60 s";
    }
    EXPECT_TRUE(wait_until(
        [&] { return dsm(1).pages == before1.pages && dsm(2).regions == 0 && dsm(1).regions == before1.regions; }, 15s))
        << "node 2: " << dsm(1).pages << " pages, node 3: " << dsm(2).regions << " regions";
    EXPECT_EQ(dsm(0).regions, before0.regions);
    // The home still serves every page.
    auto again = lite::Dsm::open(s_[2], "dsm-exit");
    EXPECT_EQ(load(again.data() + 5 * kPage), 6U);
}

TEST_F(Dsm, TheCreatorDestroysItEverywhere)
{
    auto a = lite::Dsm::create(s_[0], "dsm-destroy", 4 * kPage);
    auto b = lite::Dsm::open(s_[1], "dsm-destroy");
    store(b.data(), 5);
    EXPECT_EQ(err_of([&] { b.destroy(); }), EPERM) << "only the creating handle destroys";
    a.destroy();
    EXPECT_EQ(in_child([&] { return static_cast<int>(load(b.data())); }), 128 + SIGBUS);
    EXPECT_EQ(in_child([&] { return static_cast<int>(load(a.data())); }), 128 + SIGBUS);
    EXPECT_EQ(err_of([&] { (void)lite::Dsm::open(s_[2], "dsm-destroy"); }), ENOENT) << "the name is gone";
    EXPECT_EQ(err_of([&] { a.destroy(); }), ENXIO) << "destroyed already";
}

// A user's last close hands its pages back (the home fetches every page
// only that user holds); the creator destroying the region meanwhile must
// leave nothing on either node. Several delays, to land inside the hand-back.
TEST_F(Dsm, ADestroyDuringARemoteCloseLeavesNothingBehind)
{
    constexpr uint64_t kPages = 256;
    const auto before0 = dsm(0);
    for (int delay_ms : {0, 10, 30, 60, 120}) {
        SCOPED_TRACE("destroy " + std::to_string(delay_ms) + " ms into the close");
        auto a = lite::Dsm::create(s_[0], "dsm-close-race", kPages * kPage);
        int ready[2];
        ASSERT_EQ(::pipe(ready), 0);
        pid_t pid = ::fork();
        if (pid == 0) {
            ::close(ready[0]);
            int rc = 1;
            try {
                auto s = lite::Session::open(inst_[2]);
                auto m = lite::Dsm::open(s, "dsm-close-race");
                for (uint64_t p = 0; p < kPages; p++)
                    store(m.data() + p * kPage, p + 7); // node 3 holds the only copies
                rc = ::write(ready[1], "x", 1) == 1 ? 0 : 1;
            } catch (...) {
                rc = 2;
            }
            ::_exit(rc); // the last close: every page goes back to node 1
        }
        ::close(ready[1]);
        char x = 0;
        const int got = read_byte_within(ready[0], &x, 120s);
        ::close(ready[0]);
        if (got != 1) {
            kill_child(pid);
            FAIL() << "the child did not write its pages in 120 s";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        a.destroy();
        int status = wait_child_within(pid, 120s);
        EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "child status " << status << " (-1: still there after 120 s)";
        EXPECT_TRUE(wait_until([&] { return dsm(2).regions == 0 && dsm(2).pages == 0; }, 15s))
            << "node 3 keeps " << dsm(2).regions << " regions, " << dsm(2).pages << " pages";
    }
    EXPECT_TRUE(wait_until([&] { return dsm(0).regions == before0.regions && dsm(0).pages == before0.pages; }, 15s))
        << "node 1 keeps " << dsm(0).regions << " regions, " << dsm(0).pages << " pages";
}

TEST_F(Dsm, BadRequestsAreRefusedEachWithItsErrno)
{
    auto raw = [&](lite_dsm_open o) {
        int ret = ::ioctl(LITE_fd(s_[0].get()), LITE_IOC_DSM_OPEN, &o);
        if (ret == 0)
            ::close(o.fd);
        return ret < 0 ? errno : 0;
    };
    auto req = [](const char* name, uint64_t size, uint32_t flags) {
        lite_dsm_open o{};
        std::strncpy(o.name, name, sizeof(o.name) - 1);
        o.size = size;
        o.flags = flags;
        return o;
    };
    const uint32_t create = LITE_DSM_OPEN_CREATE;
    EXPECT_EQ(raw(req("dsm-bad", kPage, 1U << 7 | create)), EINVAL) << "unknown flag";
    EXPECT_EQ(raw(req("dsm-bad", kPage, LITE_DSM_OPEN_EXCL)), EINVAL) << "EXCL without CREATE";
    EXPECT_EQ(raw(req("dsm-bad", 0, create)), EINVAL) << "size 0";
    EXPECT_EQ(raw(req("dsm-bad", kPage + 1, create)), EINVAL) << "not whole pages";
    EXPECT_EQ(raw(req("dsm-bad", LITE_DSM_MAX_SIZE + kPage, create)), EINVAL) << "too large";
    EXPECT_EQ(raw(req("dsm-bad", kPage, 0)), EINVAL) << "a size to open only";
    EXPECT_EQ(raw(req("", kPage, create)), EINVAL) << "empty name";
    auto o = req("dsm-bad", kPage, create);
    o.reserved[1] = 1;
    EXPECT_EQ(raw(o), EINVAL) << "reserved field";
    o = req("dsm-bad", kPage, create);
    o.reserved0 = 1;
    EXPECT_EQ(raw(o), EINVAL) << "reserved0";
    EXPECT_EQ(raw(req("dsm-none", 0, 0)), ENOENT);

    auto lmr = s_[0].alloc(kPage, 1);
    lmr.share("dsm-an-lmr", LITE_PERM_ALL);
    EXPECT_EQ(raw(req("dsm-an-lmr", 0, 0)), EMEDIUMTYPE) << "an LMR's name";
    EXPECT_EQ(raw(req("dsm-an-lmr", kPage, create)), EEXIST) << "creating over an LMR's name";
    EXPECT_EQ(err_of([&] { (void)s_[1].map("dsm-good"); }), ENOENT);

    auto good = lite::Dsm::create(s_[0], "dsm-good", 2 * kPage);
    EXPECT_EQ(raw(req("dsm-good", 2 * kPage, create | LITE_DSM_OPEN_EXCL)), EEXIST);
    EXPECT_EQ(raw(req("dsm-good", 4 * kPage, create)), EINVAL) << "another size";
    EXPECT_EQ(raw(req("dsm-good", 2 * kPage, create)), 0) << "same size: opened";
    EXPECT_EQ(err_of([&] { (void)s_[1].map("dsm-good"); }), EMEDIUMTYPE) << "mapping a region as an LMR";

    void* p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, good.fd(), 0);
    EXPECT_EQ(p, MAP_FAILED);
    EXPECT_EQ(errno, EINVAL) << "a private mapping";
    p = ::mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, good.fd(), 0);
    EXPECT_EQ(p, MAP_FAILED);
    EXPECT_EQ(errno, ENXIO) << "past the end";
    p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, good.fd(), 2 * kPage);
    EXPECT_EQ(p, MAP_FAILED);
    EXPECT_EQ(errno, ENXIO) << "offset past the end";

    lite_dsm_destroy d{};
    d.flags = 1;
    EXPECT_EQ(::ioctl(good.fd(), LITE_IOC_DSM_DESTROY, &d), -1);
    EXPECT_EQ(errno, EINVAL);
    d = {};
    d.reserved[2] = 1;
    EXPECT_EQ(::ioctl(good.fd(), LITE_IOC_DSM_DESTROY, &d), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(::ioctl(good.fd(), LITE_IOC_LMR_ALLOC, &d), -1);
    EXPECT_EQ(errno, ENOTTY) << "a region file takes no /dev/lite command";

    int unattached = ::open(LITE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
    ASSERT_GE(unattached, 0);
    auto o2 = req("dsm-good", 0, 0);
    EXPECT_EQ(::ioctl(unattached, LITE_IOC_DSM_OPEN, &o2), -1);
    EXPECT_EQ(errno, EBADFD);
    ::close(unattached);
}

} // namespace
