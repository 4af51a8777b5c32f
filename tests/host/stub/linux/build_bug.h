/* SPDX-License-Identifier: GPL-2.0 */
#ifndef LITE_STUB_LINUX_BUILD_BUG_H
#define LITE_STUB_LINUX_BUILD_BUG_H
#ifndef __cplusplus
#undef static_assert
#define static_assert(expr, ...) _Static_assert(expr, #expr)
#endif
#endif
