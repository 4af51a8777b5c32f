/* SPDX-License-Identifier: GPL-2.0 */
#ifndef LITE_STUB_LINUX_STRING_H
#define LITE_STUB_LINUX_STRING_H
#include <string.h>
#define memzero_explicit(p, n) explicit_bzero((p), (n))
#endif
