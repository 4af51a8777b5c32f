// SPDX-License-Identifier: MIT
#include <lite/lite.hpp>

namespace lite
{

Error::Error(int err, const std::string& what) : std::system_error(err, std::generic_category(), what) {}

} // namespace lite
