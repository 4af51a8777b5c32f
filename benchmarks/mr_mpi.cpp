// SPDX-License-Identifier: MIT
//
// The MapReduce peer: word count, byte histogram and inverted index
// written against MapReduce-MPI's documented C++ API (Sandia's MR-MPI,
// Debian's libmrmpi-dev, over Open MPI), the way its manual describes a
// job: map, compress (its local combiner), collate, reduce, then gather to
// rank 0 and sort the keys so that rank 0 holds the output in order, as
// lite-MapReduce's master does. Each run checks its output against the
// same single-process reference lite-MapReduce is held to, and prints one
// CSV row per job (the label, the application, ranks, input bytes, job
// seconds and the time of each step).
//
//   mpirun -np 3 --mca btl tcp,self mr-mpi --app wordcount FILE...
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mrmpi/keyvalue.h>
#include <mrmpi/mapreduce.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "lite_cli.hpp"
#include "mapreduce/apps.hpp"
#include "mapreduce/input.hpp"

namespace
{

using MAPREDUCE_NS::KeyValue;
using MAPREDUCE_NS::MapReduce;

bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The words of @text as lite-MapReduce's word count cuts them: runs of
// ASCII letters, lower-cased.
template <class F> void each_word(const char* text, size_t n, F fn)
{
    std::string w;
    for (size_t i = 0; i < n; i++) {
        const char c = text[i];
        if (is_letter(c)) {
            w.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
        } else if (!w.empty()) {
            fn(w);
            w.clear();
        }
    }
    if (!w.empty()) {
        fn(w);
    }
}

// Word count: each chunk's words with an empty value; compress and reduce
// turn a key's values into one count.
void wc_map(int /*task*/, char* chunk, int size, KeyValue* kv, void* /*ptr*/)
{
    each_word(chunk, static_cast<size_t>(size), [&](const std::string& w) {
        kv->add(const_cast<char*>(w.data()), static_cast<int>(w.size()), nullptr, 0);
    });
}

// Values are empty (one occurrence each) or 8-byte counts from compress.
void count_values(char* key, int keybytes, char* multivalue, int nvalues, int* valuebytes, KeyValue* kv, void* /*ptr*/)
{
    int64_t n = 0;
    const char* v = multivalue;
    for (int i = 0; i < nvalues; i++) {
        if (valuebytes[i] == 0) {
            n++;
        } else {
            int64_t c = 0;
            std::memcpy(&c, v, sizeof(c));
            n += c;
        }
        v += valuebytes[i];
    }
    kv->add(key, keybytes, reinterpret_cast<char*>(&n), sizeof(n)); // NOLINT(*-reinterpret-cast)
}

// Histogram: task i counts the bytes of the i-th byte range of the input
// and emits each byte value that occurs with its count.
struct Ranges {
    std::vector<std::string> files;
    std::vector<std::array<uint64_t, 3>> ranges; // file, offset, length
};

void hist_map(int task, KeyValue* kv, void* ptr)
{
    const auto& r = *static_cast<Ranges*>(ptr);
    const auto [file, off, len] = r.ranges.at(static_cast<size_t>(task));
    const int fd = ::open(r.files.at(file).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        std::perror(r.files.at(file).c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::vector<char> buf(len);
    size_t got = 0;
    while (got < len) {
        const ssize_t n = ::pread(fd, buf.data() + got, len - got, static_cast<off_t>(off + got));
        if (n <= 0) {
            std::perror("pread");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        got += static_cast<size_t>(n);
    }
    ::close(fd);
    std::array<int64_t, 256> counts{};
    for (const char c : buf) {
        counts.at(static_cast<unsigned char>(c))++;
    }
    for (int b = 0; b < 256; b++) {
        int64_t n = counts.at(static_cast<size_t>(b));
        if (n != 0) {
            kv->add(reinterpret_cast<char*>(&b), sizeof(b), reinterpret_cast<char*>(&n), sizeof(n)); // NOLINT
        }
    }
}

// Inverted index: each file's distinct words with the file's name; the
// reduce makes the sorted list of names.
void ii_map(int /*task*/, char* file, KeyValue* kv, void* /*ptr*/)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    const std::string text = s.str();
    // Each distinct word of the file once, as lite-MapReduce's map does.
    std::unordered_set<std::string> seen;
    seen.reserve(1U << 14);
    const auto len = static_cast<int>(std::strlen(file));
    each_word(text.data(), text.size(), [&](const std::string& w) {
        if (seen.insert(w).second) {
            kv->add(const_cast<char*>(w.data()), static_cast<int>(w.size()), file, len);
        }
    });
}

// Values are names or '\n'-joined lists of names (from compress).
void union_names(char* key, int keybytes, char* multivalue, int nvalues, int* valuebytes, KeyValue* kv, void* /*ptr*/)
{
    std::vector<std::string_view> names;
    const char* v = multivalue;
    for (int i = 0; i < nvalues; i++) {
        std::string_view list(v, static_cast<size_t>(valuebytes[i]));
        size_t at = 0;
        while (at <= list.size()) {
            size_t end = list.find('\n', at);
            if (end == std::string_view::npos) {
                end = list.size();
            }
            names.push_back(list.substr(at, end - at));
            at = end + 1;
        }
        v += valuebytes[i];
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string out;
    for (const auto n : names) {
        if (!out.empty()) {
            out += '\n';
        }
        out += n;
    }
    kv->add(key, keybytes, out.data(), static_cast<int>(out.size()));
}

// The output rank 0 holds after gather and sort, as strings.
struct Collected {
    std::string app;
    std::vector<mr::Pair> pairs;
};

void collect(char* key, int keybytes, char* value, int valuebytes, void* ptr)
{
    auto& c = *static_cast<Collected*>(ptr);
    std::string v;
    if (c.app == "invindex") {
        v.assign(value, static_cast<size_t>(valuebytes));
    } else {
        int64_t n = 0;
        std::memcpy(&n, value, sizeof(n));
        v = std::to_string(n);
    }
    std::string k;
    if (c.app == "histogram") {
        int b = 0;
        std::memcpy(&b, key, sizeof(b));
        k = std::to_string(b);
    } else {
        k.assign(key, static_cast<size_t>(keybytes));
    }
    c.pairs.emplace_back(std::move(k), std::move(v));
}

int compare_bytes(char* a, int alen, char* b, int blen)
{
    const int c = std::memcmp(a, b, static_cast<size_t>(std::min(alen, blen)));
    return c != 0 ? c : (alen < blen ? -1 : (alen > blen ? 1 : 0));
}

int compare_int(char* a, int /*alen*/, char* b, int /*blen*/)
{
    int x = 0;
    int y = 0;
    std::memcpy(&x, a, sizeof(x));
    std::memcpy(&y, b, sizeof(y));
    return x < y ? -1 : (x > y ? 1 : 0);
}

} // namespace

namespace
{

int mr_mpi(int argc, char** argv)
{
    int me = 0;
    int nprocs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    lite_cli::App cli("mr-mpi", "MapReduce-MPI peer of lite-MapReduce: wordcount, histogram, invindex");
    std::string app = "wordcount";
    std::string label;
    uint64_t split_mb = 8;
    int page_mb = 64;
    bool check = false;
    std::string fpath = "/tmp";
    std::string output;
    std::vector<std::string> inputs;
    cli.add_option("--app", app, "wordcount, histogram or invindex")->capture_default_str();
    cli.add_option("--label", label, "the first CSV column");
    cli.add_option("--split-mb", split_mb, "map chunk size")->capture_default_str();
    cli.add_option("--page-mb", page_mb, "MR-MPI's page size (memsize)")->capture_default_str();
    cli.add_option("--fpath", fpath, "where MR-MPI spills pages that do not fit in memory")->capture_default_str();
    cli.add_option("--output", output, "rank 0 writes every pair to this file, key<TAB>value");
    cli.add_flag("--check", check, "compare rank 0's output with the single-process reference");
    cli.add_option("inputs", inputs, "input files or directories")->required();
    if (auto rc = cli.parse_or_exit(argc, argv, me == 0)) { // --help: 0; a usage error: 2
        MPI_Finalize();
        return *rc;
    }
    if (app != "wordcount" && app != "histogram" && app != "invindex") {
        if (me == 0) {
            std::cerr << "mr-mpi: no application '" << app << "' (wordcount, histogram, invindex)\n";
        }
        MPI_Finalize();
        return 2;
    }

    const auto files = mr::list_inputs(inputs);
    uint64_t total = 0;
    for (const auto& f : files) {
        total += std::filesystem::file_size(f);
    }
    std::vector<char*> names;
    names.reserve(files.size());
    for (const auto& f : files) {
        names.push_back(const_cast<char*>(f.c_str()));
    }
    Ranges ranges;
    ranges.files = files;
    for (size_t i = 0; i < files.size(); i++) {
        const uint64_t size = std::filesystem::file_size(files[i]);
        for (uint64_t off = 0; off < size; off += split_mb << 20) {
            ranges.ranges.push_back({i, off, std::min(split_mb << 20, size - off)});
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    auto* mr = new MapReduce(MPI_COMM_WORLD); // NOLINT(cppcoreguidelines-owning-memory): MR-MPI's own API
    mr->memsize = page_mb;
    mr->verbosity = 0;
    mr->timer = 0;
    mr->set_fpath(fpath.c_str());
    if (app == "wordcount") {
        const int nmap =
            static_cast<int>(std::max<uint64_t>(files.size(), (total + (split_mb << 20) - 1) / (split_mb << 20)));
        mr->map(nmap, static_cast<int>(names.size()), names.data(), 0, 0, '\n', 1024, wc_map, nullptr);
    } else if (app == "histogram") {
        mr->map(static_cast<int>(ranges.ranges.size()), hist_map, &ranges);
    } else {
        mr->map(static_cast<int>(names.size()), names.data(), 0, 0, 0, ii_map, nullptr);
    }
    const double t_map = MPI_Wtime();
    auto* fold = app == "invindex" ? union_names : count_values;
    mr->compress(fold, nullptr);
    const double t_compress = MPI_Wtime();
    mr->collate(nullptr);
    const double t_collate = MPI_Wtime();
    mr->reduce(fold, nullptr);
    const double t_reduce = MPI_Wtime();
    mr->gather(1);
    mr->sort_keys(app == "histogram" ? compare_int : compare_bytes);
    Collected out{app, {}};
    mr->scan(collect, &out);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t_end = MPI_Wtime();
    delete mr; // NOLINT(cppcoreguidelines-owning-memory)

    int rc = 0;
    if (me == 0) {
        // label,app,ranks,input_bytes,total_s,map_s,compress_s,collate_s,reduce_s,gather_sort_s,output_pairs
        std::printf("%s,%s,%d,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%zu\n", label.c_str(), app.c_str(), nprocs,
                    static_cast<unsigned long long>(total), t_end - t0, t_map - t0, t_compress - t_map,
                    t_collate - t_compress, t_reduce - t_collate, t_end - t_reduce, out.pairs.size());
        if (!output.empty()) {
            std::ofstream f(output, std::ios::trunc);
            for (const auto& [k, v] : out.pairs) {
                f << k << '\t' << v << '\n';
            }
            if (!f.flush()) {
                std::cerr << "mr-mpi: cannot write " << output << "\n";
                rc = 1;
            }
        }
        if (check) {
            std::vector<std::string> store;
            std::vector<mr::Split> splits;
            for (const auto& f : files) {
                std::ifstream in(f, std::ios::binary);
                std::ostringstream s;
                s << in.rdbuf();
                store.push_back(s.str());
            }
            for (size_t i = 0; i < files.size(); i++) {
                splits.push_back({store[i], files[i], 0});
            }
            const auto want = mr::apps::reference(app, "", splits);
            if (out.pairs != want) {
                std::cerr << "mr-mpi: CHECK FAILED: " << out.pairs.size() << " pairs, the reference has " << want.size()
                          << "\n";
                rc = 1;
            } else {
                std::cerr << "mr-mpi: check: the output equals the single-process reference (" << want.size()
                          << " pairs)\n";
            }
        }
    }
    MPI_Finalize();
    return rc;
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    try {
        return mr_mpi(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "mr-mpi: " << e.what() << "\n";
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}
