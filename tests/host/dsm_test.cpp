// SPDX-License-Identifier: GPL-2.0
// The DSM directory (lite_kmod/core/dsm.c): each transaction's plan and
// grant, then a randomised model of nodes that fault, write, answer in any
// order and die, checked after every step: one writer or many readers, every
// mapped copy holds the latest write, a fetch never reads stale bytes, and a
// page is declared lost exactly when its only current copy died.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
extern "C" {
#include "core/dsm.h"
}
#pragma GCC diagnostic pop

namespace
{

lite_dsm_nodes nodes(std::initializer_list<uint16_t> ids)
{
    lite_dsm_nodes s{};
    for (uint16_t id : ids)
        lite_dsm_nodes_set(&s, id);
    return s;
}

bool same(const lite_dsm_nodes& a, const lite_dsm_nodes& b)
{
    return a.w[0] == b.w[0] && a.w[1] == b.w[1];
}

// The key that reaches the frame at @addr: a different one per frame, as
// in lmr isolation (global isolation is the case of one key for all).
uint32_t key(uint64_t addr)
{
    return addr ? static_cast<uint32_t>(addr >> 12) * 0x101u + 7 : 0;
}

} // namespace

TEST(DsmNodes, SetTestClearAndIterateOverBothWords)
{
    lite_dsm_nodes s{};
    EXPECT_TRUE(lite_dsm_nodes_empty(&s));
    for (uint16_t id : {1, 64, 65, 128})
        lite_dsm_nodes_set(&s, id);
    lite_dsm_nodes_set(&s, 0);   // not a node id: ignored
    lite_dsm_nodes_set(&s, 129); // neither
    EXPECT_TRUE(lite_dsm_nodes_test(&s, 64));
    EXPECT_TRUE(lite_dsm_nodes_test(&s, 65));
    EXPECT_FALSE(lite_dsm_nodes_test(&s, 0));
    EXPECT_FALSE(lite_dsm_nodes_test(&s, 129));
    EXPECT_EQ(lite_dsm_nodes_next(&s, 0), 1);
    EXPECT_EQ(lite_dsm_nodes_next(&s, 1), 64);
    EXPECT_EQ(lite_dsm_nodes_next(&s, 64), 65);
    EXPECT_EQ(lite_dsm_nodes_next(&s, 65), 128);
    EXPECT_EQ(lite_dsm_nodes_next(&s, 128), 0);
    lite_dsm_nodes_clear(&s, 1);
    lite_dsm_nodes_clear(&s, 64);
    lite_dsm_nodes_clear(&s, 65);
    lite_dsm_nodes_clear(&s, 128);
    EXPECT_TRUE(lite_dsm_nodes_empty(&s));
}

TEST(DsmDir, ReadOfANeverWrittenPageIsAZeroFillWithoutMessages)
{
    lite_dsm_dir d{};
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 2, 7), 0);
    EXPECT_TRUE(lite_dsm_answered(&t));
    EXPECT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 3, 8), -EBUSY) << "one transaction per page";
    lite_dsm_grant g{};
    ASSERT_EQ(lite_dsm_decide(&d, &t, &g), 0);
    EXPECT_EQ(g.kind, LITE_DSM_FILL);
    lite_dsm_commit(&d, &t, 0x1000, key(0x1000));
    EXPECT_EQ(d.state, LITE_DSM_ZERO);
    EXPECT_TRUE(same(d.sharers, nodes({2})));
    EXPECT_EQ(d.busy, 0);
}

TEST(DsmDir, WriteInvalidatesEveryOtherReaderThenReadsFromTheSource)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_SHARED;
    d.src = 1;
    d.src_addr = 0xa000;
    d.src_rkey = key(0xa000);
    d.sharers = nodes({1, 2, 3});
    d.holders = d.sharers;
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_WR, 4, 9), 0);
    EXPECT_TRUE(same(t.inval, nodes({1, 2, 3})));
    EXPECT_TRUE(t.need_data);
    EXPECT_FALSE(lite_dsm_answered(&t));
    EXPECT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_DOWNGRADE, 1, 0, true, 0xa000, key(0xa000)), -EPROTO) << "not asked";
    EXPECT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 3, 0, true, 0xc000, key(0xc000)), 0);
    EXPECT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 3, 0, true, 0xc000, key(0xc000)), -EPROTO) << "twice";
    EXPECT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 1, 0, true, 0xa000, key(0xa000)), 0);
    EXPECT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 2, 0, true, 0xb000, key(0xb000)), 0);
    ASSERT_TRUE(lite_dsm_answered(&t));
    lite_dsm_grant g{};
    ASSERT_EQ(lite_dsm_decide(&d, &t, &g), 0);
    EXPECT_EQ(g.kind, LITE_DSM_DATA);
    EXPECT_EQ(g.from, 1) << "the source's frame keeps its bytes after it was invalidated";
    EXPECT_EQ(g.from_addr, 0xa000u);
    EXPECT_EQ(g.from_rkey, key(0xa000)) << "the key travels with the address";
    lite_dsm_commit(&d, &t, 0xd000, key(0xd000));
    EXPECT_EQ(d.state, LITE_DSM_EXCL);
    EXPECT_EQ(d.src, 4);
    EXPECT_EQ(d.src_addr, 0xd000u);
    EXPECT_EQ(d.src_rkey, key(0xd000));
    EXPECT_TRUE(lite_dsm_nodes_empty(&d.sharers));
}

TEST(DsmDir, UpgradeOfAReaderNeedsNoData)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_SHARED;
    d.src = 1;
    d.src_addr = 0xa000;
    d.src_rkey = key(0xa000);
    d.sharers = nodes({1, 2});
    d.holders = d.sharers;
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_WR, 2, 1), 0);
    EXPECT_TRUE(same(t.inval, nodes({1})));
    EXPECT_FALSE(t.need_data);
    ASSERT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 1, 0, true, 0xa000, key(0xa000)), 0);
    lite_dsm_grant g{};
    ASSERT_EQ(lite_dsm_decide(&d, &t, &g), 0);
    EXPECT_EQ(g.kind, LITE_DSM_KEEP);
}

TEST(DsmDir, ReadOfAWrittenPageDowngradesTheWriter)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_EXCL;
    d.src = 3;
    d.src_addr = 0x3000;
    d.src_rkey = key(0x3000);
    d.holders = nodes({3});
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 2, 1), 0);
    EXPECT_EQ(t.downgrade, 3);
    ASSERT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_DOWNGRADE, 3, 0, true, 0x3000, key(0x3000)), 0);
    lite_dsm_grant g{};
    ASSERT_EQ(lite_dsm_decide(&d, &t, &g), 0);
    EXPECT_EQ(g.kind, LITE_DSM_DATA);
    EXPECT_EQ(g.from, 3);
    lite_dsm_commit(&d, &t, 0x2000, key(0x2000));
    EXPECT_EQ(d.state, LITE_DSM_SHARED);
    EXPECT_TRUE(same(d.sharers, nodes({2, 3})));
}

TEST(DsmDir, AWriterThatDiesLosesThePageAndTheNextFaultIsRefused)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_EXCL;
    d.src = 3;
    d.holders = nodes({3});
    lite_dsm_node_gone(&d, 3);
    EXPECT_EQ(d.state, LITE_DSM_LOST);
    lite_dsm_txn t{};
    EXPECT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 2, 1), -EHOSTDOWN);
    EXPECT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_WR, 2, 1), -EHOSTDOWN);
}

TEST(DsmDir, ASourceThatDiesIsReplacedByAProbedReader)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_SHARED;
    d.src = 1;
    d.src_addr = 0x1000;
    d.src_rkey = key(0x1000);
    d.sharers = nodes({1, 2, 3});
    d.holders = d.sharers;
    lite_dsm_node_gone(&d, 1);
    EXPECT_EQ(d.state, LITE_DSM_SHARED) << "readers still hold the bytes";
    EXPECT_EQ(d.src, 0);
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 4, 1), 0);
    EXPECT_EQ(t.probe, 2);
    // Node 2 is gone too before it answers: the probe moves on to 3.
    lite_dsm_node_gone(&d, 2);
    ASSERT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_PROBE, 2, -EHOSTDOWN, false, 0, key(0)), 0);
    EXPECT_EQ(t.probe, 3);
    ASSERT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_PROBE, 3, 0, true, 0x3000, key(0x3000)), 0);
    lite_dsm_grant g{};
    ASSERT_EQ(lite_dsm_decide(&d, &t, &g), 0);
    EXPECT_EQ(g.kind, LITE_DSM_DATA);
    EXPECT_EQ(g.from, 3);
    EXPECT_EQ(g.from_addr, 0x3000u);
    EXPECT_EQ(g.from_rkey, key(0x3000)) << "the key travels with the address";
}

TEST(DsmDir, AFailedAnswerFailsTheTransactionAndKeepsTheReader)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_SHARED;
    d.src = 1;
    d.sharers = nodes({1, 2});
    d.holders = d.sharers;
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_WR, 3, 1), 0);
    ASSERT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 1, 0, true, 0x1000, key(0x1000)), 0);
    ASSERT_EQ(lite_dsm_answer(&d, &t, LITE_DSM_INVALIDATE, 2, -ETIMEDOUT, false, 0, key(0)), 0);
    lite_dsm_grant g{};
    EXPECT_EQ(lite_dsm_decide(&d, &t, &g), -ETIMEDOUT);
    lite_dsm_abort(&d, &t, false);
    EXPECT_EQ(d.busy, 0);
    EXPECT_TRUE(same(d.sharers, nodes({2}))) << "2 may still map it: it stays a reader";
    EXPECT_EQ(d.src, 1) << "1's frame still holds the bytes";
}

TEST(DsmDir, AWriterGoneAfterItsGrantLosesThePage)
{
    lite_dsm_dir d{};
    d.state = LITE_DSM_SHARED;
    d.src = 1;
    d.sharers = nodes({1});
    d.holders = d.sharers;
    lite_dsm_txn t{};
    ASSERT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_WR, 1, 1), 0);
    lite_dsm_grant g{};
    ASSERT_EQ(lite_dsm_decide(&d, &t, &g), 0);
    EXPECT_EQ(g.kind, LITE_DSM_KEEP);
    lite_dsm_node_gone(&d, 1);
    lite_dsm_abort(&d, &t, true);
    EXPECT_EQ(d.state, LITE_DSM_LOST);
}

TEST(DsmDir, BadRequestsAreRefused)
{
    lite_dsm_dir d{};
    lite_dsm_txn t{};
    EXPECT_EQ(lite_dsm_begin(&d, &t, 0, 1, 1), -EINVAL);
    EXPECT_EQ(lite_dsm_begin(&d, &t, 3, 1, 1), -EINVAL);
    EXPECT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 0, 1), -EINVAL);
    EXPECT_EQ(lite_dsm_begin(&d, &t, LITE_DSM_RD, 129, 1), -EINVAL);
    EXPECT_EQ(d.busy, 0);
}

// --- The model: nodes with local copies, one page, random schedules. ---
namespace
{

enum class Local { Invalid, Shared, Excl, Dead };

struct Node {
    Local state = Local::Invalid;
    bool has_frame = false;
    uint64_t frame = 0; // the bytes: a version number
};

struct Model {
    explicit Model(unsigned seed, int n) : rng(seed), node(n + 1) {}

    std::mt19937 rng;
    std::vector<Node> node; // [0] unused
    lite_dsm_dir dir{};
    uint64_t latest = 0;  // the value of the last write
    uint64_t writes = 0;  // versions handed out
    bool lost_ok = false; // a current copy died: LOST is allowed
    std::string trace;
    // Coverage of the schedules, summed over models.
    static inline uint64_t probes = 0;
    static inline uint64_t data_grants = 0;
    static inline uint64_t downgrades = 0;

    int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
    [[nodiscard]] uint64_t addr(uint16_t id) const { return 0x1000ULL * id; }

    // What a node does with an INVAL message (dsm.c's handler).
    void handle(uint8_t what, uint16_t id, bool& has, uint64_t& a)
    {
        Node& n = node[id];
        // Its frame holds what it last held: unmapping keeps the bytes.
        has = n.has_frame;
        a = addr(id);
        if (what == LITE_DSM_INVALIDATE) {
            n.state = Local::Invalid;
        } else if (what == LITE_DSM_DOWNGRADE && n.state == Local::Excl) {
            n.state = Local::Shared;
        }
    }

    void check(const char* when)
    {
        int writers = 0;
        int readers = 0;
        for (size_t i = 1; i < node.size(); i++) {
            const Node& n = node[i];
            if (n.state == Local::Excl)
                writers++;
            if (n.state == Local::Shared)
                readers++;
            if (n.state == Local::Shared || n.state == Local::Excl) {
                ASSERT_EQ(n.frame, latest) << when << ": node " << i << " maps a stale copy\n" << trace;
            }
        }
        ASSERT_LE(writers, 1) << when << "\n" << trace;
        ASSERT_TRUE(writers == 0 || readers == 0) << when << ": a writer beside readers\n" << trace;
        if (dir.state == LITE_DSM_LOST) {
            ASSERT_TRUE(lost_ok) << when << ": lost although a current copy lives\n" << trace;
        }
        if (dir.state == LITE_DSM_SHARED || dir.state == LITE_DSM_EXCL) {
            for (uint16_t i = 1; i < static_cast<uint16_t>(node.size()); i++) {
                if (lite_dsm_nodes_test(&dir.sharers, i)) {
                    ASSERT_TRUE(lite_dsm_nodes_test(&dir.holders, i)) << when << "\n" << trace;
                }
                if (lite_dsm_nodes_test(&dir.holders, i)) {
                    ASSERT_NE(node[i].state, Local::Dead) << when << "\n" << trace;
                    ASSERT_EQ(node[i].frame, latest) << when << ": holder " << i << " is stale\n" << trace;
                }
            }
            if (dir.src) {
                ASSERT_TRUE(lite_dsm_nodes_test(&dir.holders, dir.src)) << when << "\n" << trace;
            }
        }
    }

    // A live node other than @not.
    uint16_t live(uint16_t not_this = 0)
    {
        std::vector<uint16_t> ids;
        for (uint16_t i = 1; i < static_cast<uint16_t>(node.size()); i++) {
            if (node[i].state != Local::Dead && i != not_this) {
                ids.push_back(i);
            }
        }
        return ids.empty() ? 0 : ids[static_cast<size_t>(pick(static_cast<int>(ids.size())))];
    }

    void kill(uint16_t id)
    {
        Node& n = node[id];
        trace += "kill " + std::to_string(id) + "\n";
        // A writer may have written what nobody else has; otherwise the
        // page may be lost only if no other frame the home knows of holds
        // the latest bytes.
        bool other = false;
        for (uint16_t i = 1; i < static_cast<uint16_t>(node.size()); i++) {
            if (i != id && node[i].state != Local::Dead && node[i].has_frame && node[i].frame == latest &&
                lite_dsm_nodes_test(&dir.holders, i)) {
                other = true;
            }
        }
        if (n.state == Local::Excl || !other)
            lost_ok = true;
        n.state = Local::Dead;
        lite_dsm_node_gone(&dir, id);
    }

    // One fault of node @r, with writes, answers and deaths interleaved.
    void transaction(uint16_t r, uint8_t kind, uint32_t id)
    {
        lite_dsm_txn t{};
        trace += std::string(kind == LITE_DSM_RD ? "RD " : "WR ") + std::to_string(r) + "\n";
        int err = lite_dsm_begin(&dir, &t, kind, r, id);
        if (err == -EHOSTDOWN) {
            ASSERT_TRUE(lost_ok) << trace;
            return;
        }
        ASSERT_EQ(err, 0) << trace;
        bool requester_gone = false;
        lite_dsm_grant g{};
    again:
        while (!lite_dsm_answered(&t)) {
            // Meanwhile the writer (if any) keeps writing.
            for (uint16_t i = 1; i < static_cast<uint16_t>(node.size()); i++) {
                if (node[i].state == Local::Excl && pick(2) == 0) {
                    node[i].frame = latest = ++writes;
                    trace += "write " + std::to_string(i) + " v" + std::to_string(latest) + "\n";
                }
            }
            // Sometimes somebody dies.
            if (pick(12) == 0) {
                uint16_t victim = live();
                if (victim) {
                    kill(victim);
                    if (victim == r)
                        requester_gone = true;
                    uint16_t gone = victim;
                    if (lite_dsm_nodes_test(&t.inval, gone)) {
                        ASSERT_EQ(lite_dsm_answer(&dir, &t, LITE_DSM_INVALIDATE, gone, -EHOSTDOWN, false, 0, 0), 0);
                    }
                    if (t.downgrade == gone) {
                        ASSERT_EQ(lite_dsm_answer(&dir, &t, LITE_DSM_DOWNGRADE, gone, -EHOSTDOWN, false, 0, 0), 0);
                    }
                    if (t.probe == gone) {
                        ASSERT_EQ(lite_dsm_answer(&dir, &t, LITE_DSM_PROBE, gone, -EHOSTDOWN, false, 0, 0), 0);
                    }
                    check("after a death");
                    continue;
                }
            }
            // One outstanding question, answered.
            std::vector<std::pair<uint8_t, uint16_t>> open;
            for (uint16_t i = lite_dsm_nodes_next(&t.inval, 0); i; i = lite_dsm_nodes_next(&t.inval, i))
                open.emplace_back(LITE_DSM_INVALIDATE, i);
            if (t.downgrade)
                open.emplace_back(LITE_DSM_DOWNGRADE, t.downgrade);
            if (t.probe)
                open.emplace_back(LITE_DSM_PROBE, t.probe);
            auto [what, who] = open[static_cast<size_t>(pick(static_cast<int>(open.size())))];
            bool has = false;
            uint64_t a = 0;
            handle(what, who, has, a);
            downgrades += what == LITE_DSM_DOWNGRADE ? 1 : 0;
            int status = pick(40) == 0 ? -ETIMEDOUT : 0;
            if (status)
                has = false, trace += "timeout at " + std::to_string(who) + "\n";
            if (status && what == LITE_DSM_INVALIDATE) {
                // A timed-out invalidation may or may not have happened:
                // the node undid nothing, so assume it did not.
            }
            ASSERT_EQ(lite_dsm_answer(&dir, &t, what, who, status, has, a, key(a)), 0);
            check("after an answer");
        }
        if (requester_gone) { // nobody to send the grant to
            lite_dsm_abort(&dir, &t, true);
            check("after the requester died");
            return;
        }
        err = lite_dsm_decide(&dir, &t, &g);
        if (err == -EAGAIN) {
            trace += "probe " + std::to_string(t.probe) + "\n";
            probes++;
            goto again;
        }
        if (err) {
            if (err == -EHOSTDOWN) {
                ASSERT_TRUE(lost_ok) << trace;
            }
            lite_dsm_abort(&dir, &t, false);
            check("after an abort");
            return;
        }
        Node& n = node[r];
        switch (g.kind) {
        case LITE_DSM_KEEP:
            ASSERT_TRUE(n.has_frame) << trace;
            ASSERT_EQ(n.frame, latest) << "KEEP of a stale frame\n" << trace;
            break;
        case LITE_DSM_FILL:
            ASSERT_EQ(latest, 0u) << "zero fill of a written page\n" << trace;
            n.frame = 0;
            break;
        case LITE_DSM_DATA:
            data_grants++;
            ASSERT_NE(g.from, r) << trace;
            ASSERT_EQ(g.from_addr, addr(g.from)) << trace;
            ASSERT_EQ(g.from_rkey, key(addr(g.from))) << "the key of another frame\n" << trace;
            ASSERT_NE(node[g.from].state, Local::Dead) << "read from a dead node\n" << trace;
            ASSERT_TRUE(node[g.from].has_frame) << trace;
            ASSERT_EQ(node[g.from].frame, latest) << "the source is stale\n" << trace;
            n.frame = node[g.from].frame;
            break;
        default:
            FAIL() << "grant kind " << int{g.kind};
        }
        n.has_frame = true;
        n.state = kind == LITE_DSM_WR ? Local::Excl : (n.state == Local::Excl ? Local::Excl : Local::Shared);
        check("after a grant");
        lite_dsm_commit(&dir, &t, addr(r), key(addr(r)));
        check("after a commit");
    }
};

} // namespace

TEST(DsmModel, RandomSchedulesKeepOneWriterOrManyReadersOfTheLatestWrite)
{
    uint64_t transactions = 0;
    uint64_t lost = 0;
    for (unsigned seed = 1; seed <= 3000; seed++) {
        Model m(seed, 2 + static_cast<int>(seed % 5));
        for (uint32_t step = 1; step <= 60; step++) {
            uint16_t r = m.live();
            if (!r)
                break;
            uint8_t kind = m.pick(2) == 0 ? LITE_DSM_RD : LITE_DSM_WR;
            ASSERT_NO_FATAL_FAILURE(m.transaction(r, kind, step)) << "seed " << seed;
            transactions++;
            // The writer writes between faults too.
            for (size_t i = 1; i < m.node.size(); i++) {
                if (m.node[i].state == Local::Excl) {
                    m.node[i].frame = m.latest = ++m.writes;
                }
            }
            if (m.dir.state == LITE_DSM_LOST) {
                lost++;
                break;
            }
        }
    }
    EXPECT_GT(transactions, 100000u);
    EXPECT_GT(lost, 0u) << "the schedules never killed an only copy: the model is too gentle";
    EXPECT_GT(Model::data_grants, 10000u);
    EXPECT_GT(Model::downgrades, 1000u);
    EXPECT_GT(Model::probes, 10u) << "a source that died mid-transaction was never replaced";
    std::printf("transactions %llu, lost %llu, data grants %llu, downgrades %llu, probes %llu\n",
                static_cast<unsigned long long>(transactions), static_cast<unsigned long long>(lost),
                static_cast<unsigned long long>(Model::data_grants), static_cast<unsigned long long>(Model::downgrades),
                static_cast<unsigned long long>(Model::probes));
}
