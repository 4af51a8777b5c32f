// SPDX-License-Identifier: MIT
#include "mapreduce/input.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace mr
{

namespace
{

class FileReader
{
public:
    explicit FileReader(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC))
    {
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(), "open input " + path);
        }
    }
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;
    FileReader(FileReader&&) = delete;
    FileReader& operator=(FileReader&&) = delete;
    ~FileReader() { ::close(fd_); }

    // Appends up to @len bytes at @off to @out; returns how many (fewer
    // only at the end of the file).
    size_t read(uint64_t off, size_t len, std::string& out) const
    {
        const size_t at = out.size();
        out.resize(at + len);
        size_t got = 0;
        while (got < len) {
            const ssize_t n = ::pread(fd_, out.data() + at + got, len - got, static_cast<off_t>(off + got));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                throw std::system_error(errno, std::generic_category(), "read input " + path_);
            }
            if (n == 0) {
                break;
            }
            got += static_cast<size_t>(n);
        }
        out.resize(at + got);
        return got;
    }

private:
    std::string path_;
    int fd_;
};

} // namespace

std::string read_split(const std::string& path, uint64_t off, uint64_t len, bool binary, uint64_t& start)
{
    const FileReader f(path);
    std::string data;
    start = off;
    if (binary) {
        if (f.read(off, len, data) != len) {
            throw std::runtime_error("input " + path + " is shorter than when the job started");
        }
        return data;
    }
    const uint64_t from = off == 0 ? 0 : off - 1; // to see whether a line starts at off
    f.read(from, len + (off - from), data);
    size_t begin = 0;
    if (off > 0) {
        const size_t nl = data.find('\n');
        if (nl == std::string::npos) {
            return {}; // one line runs through: the split where it starts has it
        }
        begin = nl + 1;
    }
    // Extend to the end of the line that crosses off + len.
    const size_t last = len + (off - from) - 1; // index of byte off + len - 1
    if (begin > last) {
        return {}; // the only line that starts here starts past the range
    }
    size_t end = std::string::npos;
    if (data.size() > last && (end = data.find('\n', std::max(begin, last))) == std::string::npos) {
        for (;;) {
            const size_t had = data.size();
            if (f.read(from + had, 65536, data) == 0) {
                break;
            }
            end = data.find('\n', had);
            if (end != std::string::npos) {
                break;
            }
        }
    }
    data.resize(end == std::string::npos ? data.size() : end + 1);
    start = from + begin;
    return data.substr(begin);
}

std::vector<std::string> list_inputs(const std::vector<std::string>& inputs)
{
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    for (const auto& in : inputs) {
        try {
            const auto st = fs::status(in);
            if (fs::is_directory(st)) {
                std::vector<std::string> names;
                for (const auto& e : fs::recursive_directory_iterator(in)) {
                    if (e.is_regular_file()) {
                        names.push_back(e.path().string());
                    }
                }
                std::sort(names.begin(), names.end());
                out.insert(out.end(), names.begin(), names.end());
            } else if (fs::is_regular_file(st)) {
                out.push_back(in);
            } else if (!fs::exists(st)) {
                throw std::invalid_argument("mapreduce: input '" + in + "' does not exist");
            } else {
                throw std::invalid_argument("mapreduce: input '" + in + "' is not a file or a directory");
            }
        } catch (const fs::filesystem_error& e) {
            throw std::invalid_argument("mapreduce: input '" + in + "': " + e.code().message());
        }
    }
    return out;
}

} // namespace mr
