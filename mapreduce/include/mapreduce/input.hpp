// SPDX-License-Identifier: MIT
//
// Reading a map task's input: a byte range of a file that every node sees
// at the same path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mr
{

// The bytes of the map task [@off, @off + @len) of @path: of a binary
// input exactly those; of text, the lines that start in that range (a
// split owns a line if the line starts in it), so that splits that tile a
// file map each line exactly once and never cut one. Sets @start to the
// file offset of the first byte returned. Throws std::system_error naming
// the file if it cannot be read, std::runtime_error if a binary input is
// shorter than the range.
std::string read_split(const std::string& path, uint64_t off, uint64_t len, bool binary, uint64_t& start);

// The regular files @inputs name: files as given, directories walked
// (recursively) in name order. Throws std::invalid_argument naming an
// input that does not exist or is neither.
std::vector<std::string> list_inputs(const std::vector<std::string>& inputs);

} // namespace mr
