// SPDX-License-Identifier: MIT
// LITE_sendfile on the real module, 3 nodes: file ranges of every shape
// land byte-identical in local and remote LMRs (checksummed), from tmpfs
// and from the 9p host root; short files and a truncation during a send
// give a short count of the file's own bytes; every rejection has its
// errno; the io_uring form.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <lite/async.hpp>
#include <lite/session.hpp>
#include <random>
#include <thread>

#include "util.hpp"

using namespace lite_guest;
using namespace std::chrono_literals;

namespace
{

constexpr uint16_t kPort = 19400;
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// A file in the guest's tmpfs, removed with the object.
class TempFile
{
public:
    TempFile()
    {
        char name[] = "/tmp/lite-sendfile-XXXXXX";
        fd_ = mkstemp(name);
        path_ = name;
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    TempFile(TempFile&&) = delete;
    TempFile& operator=(TempFile&&) = delete;
    ~TempFile()
    {
        if (fd_ >= 0)
            close(fd_);
        unlink(path_.c_str());
    }
    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] const std::string& path() const { return path_; }

    // @size bytes of a pattern seeded by @seed, written in 1 MiB pieces.
    void fill(uint64_t size, uint64_t seed) const
    {
        std::mt19937_64 rng(seed);
        std::vector<uint64_t> piece(kMiB / 8);
        for (uint64_t off = 0; off < size; off += kMiB) {
            uint64_t n = std::min<uint64_t>(kMiB, size - off);
            for (auto& w : piece)
                w = rng();
            ASSERT_EQ(pwrite(fd_, piece.data(), n, static_cast<off_t>(off)), static_cast<ssize_t>(n));
        }
        ASSERT_EQ(ftruncate(fd_, static_cast<off_t>(size)), 0);
    }

private:
    int fd_ = -1;
    std::string path_;
};

// The checksum of @len bytes of @fd from @off, read with pread.
uint64_t file_sum(int fd, uint64_t off, uint64_t len)
{
    std::vector<uint8_t> buf(4 * kMiB);
    uint64_t h = kChecksumStart;
    for (uint64_t done = 0; done < len;) {
        size_t n = std::min<uint64_t>(buf.size(), len - done);
        ssize_t got = pread(fd, buf.data(), n, static_cast<off_t>(off + done));
        if (got <= 0)
            return 0;
        h = checksum(std::span<const uint8_t>(buf.data(), static_cast<size_t>(got)), h);
        done += static_cast<uint64_t>(got);
    }
    return h;
}

// The checksum of @len bytes of @l from @off, read with LITE_read.
uint64_t lmr_sum(const lite::Lmr& l, uint64_t off, uint64_t len)
{
    std::vector<uint8_t> buf(4 * kMiB);
    uint64_t h = kChecksumStart;
    for (uint64_t done = 0; done < len;) {
        size_t n = std::min<uint64_t>(buf.size(), len - done);
        l.read(off + done, std::span<uint8_t>(buf.data(), n));
        h = checksum(std::span<const uint8_t>(buf.data(), n), h);
        done += n;
    }
    return h;
}

class Sendfile : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        inst_ = three_nodes(*dev_, kPort);
    }
    void TearDown() override { down_all(*dev_); }

    std::unique_ptr<lite::Device> dev_;
    std::vector<uint32_t> inst_;
};

struct Shape {
    uint64_t file_size;
    uint64_t file_off;
    uint64_t len;
    uint64_t lmr_off;
    const char* what;
};

TEST_F(Sendfile, RangesLandByteIdenticalOnLocalAndRemoteNodes)
{
    // LMR chunks are at most 4 MiB: 4 MiB - 5000 + 9 MiB crosses two.
    const std::vector<Shape> shapes = {
        {0, 0, 0, 0, "empty file"},
        {1, 0, 1, 7, "one byte"},
        {3 * 4096 + 100, 4000, 200, 4090, "page-crossing, unaligned both sides"},
        {64 * kKiB, 0, 64 * kKiB, 0, "64 KiB aligned"},
        {5 * kMiB + 333, 1234, 5 * kMiB - 1000, 4 * kMiB - 5000, "chunk-crossing"},
        {9 * kMiB, 4096, 9 * kMiB - 4096, 3 * kMiB, "several batches, two chunk boundaries"},
    };
    auto s = lite::Session::open(inst_[0]);
    uint64_t seed = 1;
    for (const auto& sh : shapes) {
        TempFile f;
        ASSERT_GE(f.fd(), 0);
        f.fill(sh.file_size, seed++);
        for (uint32_t node : {1U, 2U}) {
            auto l = s.alloc(16 * kMiB, node);
            uint64_t sent = l.send_file(sh.lmr_off, f.fd(), sh.file_off, sh.len);
            ASSERT_EQ(sent, sh.len) << sh.what << ", node " << node;
            EXPECT_EQ(lmr_sum(l, sh.lmr_off, sh.len), file_sum(f.fd(), sh.file_off, sh.len))
                << sh.what << ", node " << node;
            // Nothing outside the range was touched (the LMR starts zeroed).
            std::vector<uint8_t> edge(2, 0xff);
            if (sh.lmr_off > 0) {
                l.read(sh.lmr_off - 1, std::span<uint8_t>(edge.data(), 1));
                EXPECT_EQ(edge[0], 0) << sh.what << ": byte before the range";
            }
            l.read(sh.lmr_off + sh.len, std::span<uint8_t>(edge.data(), 1));
            EXPECT_EQ(edge[0], 0) << sh.what << ": byte after the range";
        }
    }
}

TEST_F(Sendfile, QuarterGiBFileIntoLocalAndRemoteLmrs)
{
    const uint64_t size = 256 * kMiB;
    TempFile f;
    ASSERT_GE(f.fd(), 0);
    f.fill(size, 256);
    const uint64_t want = file_sum(f.fd(), 0, size);
    auto s = lite::Session::open(inst_[1]);
    for (uint32_t node : {3U, 2U}) { // remote, then this node's own
        auto l = s.alloc(size, node);
        EXPECT_EQ(l.send_file(0, f.fd(), 0, size), size) << "node " << node;
        EXPECT_EQ(lmr_sum(l, 0, size), want) << "256 MiB checksum, node " << node;
    }
}

TEST_F(Sendfile, FileOnTheHostRootOver9p)
{
    // A file of another file system (9p, read-only): this test program.
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct stat st = {};
    ASSERT_EQ(fstat(fd, &st), 0);
    auto size = static_cast<uint64_t>(st.st_size);
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(size, 2);
    EXPECT_EQ(l.send_file(0, fd, 0, size), size);
    EXPECT_EQ(lmr_sum(l, 0, size), file_sum(fd, 0, size));
    close(fd);
}

TEST_F(Sendfile, ShortFileGivesAShortCount)
{
    TempFile f;
    ASSERT_GE(f.fd(), 0);
    f.fill(10000, 7);
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(64 * kKiB, 2);
    EXPECT_EQ(l.send_file(0, f.fd(), 1000, 20000), 9000u) << "stops at the end of the file";
    EXPECT_EQ(lmr_sum(l, 0, 9000), file_sum(f.fd(), 1000, 9000));
    std::vector<uint8_t> after(20000 - 9000, 0xff);
    l.read(9000, std::span<uint8_t>(after));
    EXPECT_TRUE(std::all_of(after.begin(), after.end(), [](uint8_t b) { return b == 0; }))
        << "nothing past the end of the file was written";
    EXPECT_EQ(l.send_file(0, f.fd(), 10000, 100), 0u) << "at the end";
    EXPECT_EQ(l.send_file(0, f.fd(), 1 << 30, 100), 0u) << "past the end";
}

TEST_F(Sendfile, TruncationDuringASendGivesTheFilesOwnBytes)
{
    const uint64_t size = 32 * kMiB, cut = kMiB;
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(size, 2);
    std::string counts;
    for (int round = 0; round < 4; round++) {
        TempFile f;
        ASSERT_GE(f.fd(), 0);
        f.fill(size, 100 + static_cast<uint64_t>(round));
        uint64_t want = file_sum(f.fd(), 0, cut);
        l.fill(0, std::byte{0}, size);
        std::atomic<bool> go{false};
        std::thread cutter([&] {
            while (!go.load())
                std::this_thread::yield();
            std::this_thread::sleep_for(std::chrono::milliseconds(round * round * 50));
            EXPECT_EQ(ftruncate(f.fd(), static_cast<off_t>(cut)), 0);
        });
        go = true;
        auto t0 = std::chrono::steady_clock::now();
        int64_t sent = LITE_sendfile(s.get(), f.fd(), 0, size, l.handle(), 0);
        auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
        cutter.join();
        ASSERT_GE(sent, static_cast<int64_t>(cut)) << "round " << round << ": " << strerror(static_cast<int>(-sent));
        ASSERT_LE(sent, static_cast<int64_t>(size));
        // What was sent is the file's content of before the cut (the cut
        // removes pages past 1 MiB but changes none of its bytes).
        TempFile again;
        again.fill(size, 100 + static_cast<uint64_t>(round));
        EXPECT_EQ(lmr_sum(l, 0, static_cast<uint64_t>(sent)), file_sum(again.fd(), 0, static_cast<uint64_t>(sent)))
            << "round " << round << ", " << sent << " bytes sent";
        EXPECT_EQ(lmr_sum(l, 0, cut), want);
        counts += " " + std::to_string(sent) + " (" + std::to_string(us) + " us)";
    }
    RecordProperty("sent", counts);
    std::printf("bytes sent while the file was cut:%s\n", counts.c_str());
}

TEST_F(Sendfile, EachRejectionHasItsOwnErrno)
{
    TempFile f;
    ASSERT_GE(f.fd(), 0);
    f.fill(8192, 3);
    auto s = lite::Session::open(inst_[1]);
    auto l = s.alloc(8192, 3);
    lite_t* c = s.get();
    lite_lmr_t h = l.handle();
    EXPECT_EQ(LITE_sendfile(c, f.fd(), 0, 1, h, 8192), -ERANGE) << "out of bounds";
    EXPECT_EQ(LITE_sendfile(c, f.fd(), 0, 3, h, 8190), -ERANGE) << "crosses the end";
    EXPECT_EQ(LITE_sendfile(c, f.fd(), 0, 8, h, UINT64_MAX - 2), -EOVERFLOW) << "LMR offset + length wraps";
    EXPECT_EQ(LITE_sendfile(c, f.fd(), UINT64_MAX - 2, 8, h, 0), -EOVERFLOW) << "file offset + length wraps";
    EXPECT_EQ(LITE_sendfile(c, f.fd(), 0, 1, h + 1000, 0), -EBADF) << "no such handle";

    // The file: closed, write-only, not regular.
    EXPECT_EQ(LITE_sendfile(c, 1000, 0, 1, h, 0), -EBADF) << "fd not open";
    int wo = open(f.path().c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(wo, 0);
    EXPECT_EQ(LITE_sendfile(c, wo, 0, 1, h, 0), -EBADF) << "fd not open for reading";
    close(wo);
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir, 0);
    EXPECT_EQ(LITE_sendfile(c, dir, 0, 1, h, 0), -ENODEV) << "a directory";
    close(dir);
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    ASSERT_EQ(write(pipefd[1], "x", 1), 1);
    EXPECT_EQ(LITE_sendfile(c, pipefd[0], 0, 1, h, 0), -ENODEV) << "a pipe";
    close(pipefd[0]);
    close(pipefd[1]);
    int null = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(null, 0);
    EXPECT_EQ(LITE_sendfile(c, null, 0, 1, h, 0), -ENODEV) << "a character device";
    close(null);

    // Flags and reserved fields.
    lite_sendfile raw{};
    raw.handle = h;
    raw.len = 1;
    raw.fd = f.fd();
    raw.flags = 1;
    EXPECT_EQ(ioctl(LITE_fd(c), LITE_IOC_SENDFILE, &raw), -1);
    EXPECT_EQ(errno, EINVAL) << "unknown flag";
    raw.flags = 0;
    raw.reserved[1] = 1;
    EXPECT_EQ(ioctl(LITE_fd(c), LITE_IOC_SENDFILE, &raw), -1);
    EXPECT_EQ(errno, EINVAL) << "reserved field";
    raw.reserved[1] = 0;
    EXPECT_EQ(ioctl(LITE_fd(c), LITE_IOC_SENDFILE, &raw), 0);
    EXPECT_EQ(raw.sent, 1u);

    // No write permission, then revoked.
    l.share("sf-ro", LITE_PERM_READ);
    auto other = lite::Session::open(inst_[2]);
    auto ro = other.map("sf-ro", LITE_PERM_READ);
    EXPECT_EQ(LITE_sendfile(other.get(), f.fd(), 0, 1, ro.handle(), 0), -EACCES);
    l.share("sf-rw", LITE_PERM_READ | LITE_PERM_WRITE);
    auto rw = other.map("sf-rw");
    EXPECT_EQ(LITE_sendfile(other.get(), f.fd(), 0, 8192, rw.handle(), 0), 8192);
    s.revoke("sf-rw");
    EXPECT_EQ(LITE_sendfile(other.get(), f.fd(), 0, 1, rw.handle(), 0), -EKEYREVOKED);
    EXPECT_EQ(lmr_sum(l, 0, 8192), file_sum(f.fd(), 0, 8192)) << "the sends before were whole";

    // Its memory node leaves: the memory is gone (the access check says so;
    // a leave between that check and the connection wait gives the same).
    dev_->down(inst_[2]);
    ASSERT_TRUE(wait_until([&] { return member_ids(*dev_, inst_[1]) == std::vector<uint32_t>{1, 2}; }, 5s));
    EXPECT_EQ(LITE_sendfile(c, f.fd(), 0, 1, h, 0), -EHOSTDOWN) << "the memory node left";
}

TEST_F(Sendfile, ThroughARing)
{
    TempFile f;
    ASSERT_GE(f.fd(), 0);
    f.fill(3 * kMiB + 17, 11);
    auto s = lite::Session::open(inst_[0]);
    auto l = s.alloc(4 * kMiB, 2);
    for (auto how : {lite::Completion::events, lite::Completion::polled}) {
        lite::Ring ring(s, 8, how);
        l.fill(0, std::byte{0}, 4 * kMiB);
        uint64_t got = 0;
        int err = -1;
        ring.send_file(l, 100, f.fd(), 5, 3 * kMiB + 12, [&](const lite::Result& r) {
            err = r.error();
            got = r.ok() ? r.value() : 0;
        });
        int over = -1;
        ring.send_file(l, 0, f.fd(), 0, uint64_t{INT_MAX} + 1, [&](const lite::Result& r) { over = r.error(); });
        int bad = -1;
        ring.send_file(l, 0, 1000, 0, 1, [&](const lite::Result& r) { bad = r.error(); });
        ring.drain();
        EXPECT_EQ(err, 0);
        EXPECT_EQ(got, 3 * kMiB + 12);
        EXPECT_EQ(lmr_sum(l, 100, got), file_sum(f.fd(), 5, got));
        EXPECT_EQ(over, EOVERFLOW) << "more than a CQE can count";
        EXPECT_EQ(bad, EBADF);
    }
}

TEST_F(Sendfile, ExampleFileServerServesIntoClientLmrs)
{
    // file_server on node 3 serves /tmp/lite-files-XXXXXX; file_client on
    // node 1 fetches into LMRs on node 1 and node 2.
    char root[] = "/tmp/lite-files-XXXXXX";
    ASSERT_NE(mkdtemp(root), nullptr);
    const std::string file = std::string(root) + "/data.bin";
    {
        int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0);
        std::vector<uint8_t> bytes(3 * kMiB + 4321);
        std::mt19937_64 rng(15);
        for (auto& b : bytes)
            b = static_cast<uint8_t>(rng());
        ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
        close(fd);
    }
    const std::string secret_outside = "/tmp/lite-outside-" + std::to_string(getpid());
    ASSERT_EQ(run("echo private > " + secret_outside).status, 0);

    pid_t server = fork();
    ASSERT_GE(server, 0);
    if (server == 0) {
        execl(LITE_FILE_SERVER, LITE_FILE_SERVER, "--root", root, "--instance", std::to_string(inst_[2]).c_str(),
              "--port", "4100", static_cast<char*>(nullptr));
        _exit(127);
    }
    const std::string client = std::string(LITE_FILE_CLIENT) + " --node 3 --instance " + std::to_string(inst_[0]);
    Result r;
    for (int i = 0; i < 50; i++) { // until the server registered its port
        r = run(client + " --len 4K data.bin");
        if (r.status == 0)
            break;
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(r.status, 0) << r.output;

    const std::string out = std::string(root) + "/copy.bin";
    for (const char* lmr_node : {"1", "2"}) {
        std::string cmd = client;
        cmd += " --lmr-node ";
        cmd += lmr_node;
        cmd += " --len 4M --out " + out + " data.bin";
        r = run(cmd);
        EXPECT_EQ(r.status, 0) << r.output;
        EXPECT_NE(r.output.find("3150049 bytes"), std::string::npos) << "short at the end of the file: " << r.output;
        EXPECT_NE(r.output.find("matches the server's"), std::string::npos) << r.output;
        std::string cmp = "cmp " + file;
        cmp += " " + out;
        EXPECT_EQ(run(cmp).status, 0) << "the LMR's bytes differ from the file";
    }
    r = run(client + " --offset 1000000 --len 100000 data.bin");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("100000 bytes"), std::string::npos) << r.output;

    // Paths stay beneath the root; a missing file is named.
    r = run(client + " ../" + secret_outside.substr(5));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("could not send"), std::string::npos) << r.output;
    r = run(client + " " + secret_outside);
    EXPECT_EQ(r.status, 1) << "an absolute path: " << r.output;
    r = run(client + " missing.bin");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("No such file"), std::string::npos) << r.output;

    kill(server, SIGTERM);
    int st = wait_child_within(server, 120s);
    ASSERT_NE(st, -1) << "the child did not exit in 120 s";
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "file_server exit status " << st;
    run("rm -rf " + std::string(root) + " " + secret_outside);
}

} // namespace
