/* SPDX-License-Identifier: GPL-2.0 */
#ifndef LITE_STUB_LINUX_STDDEF_H
#define LITE_STUB_LINUX_STDDEF_H
#include_next <linux/stddef.h>
#include <stddef.h>
#ifndef __cplusplus
#define fallthrough __attribute__((__fallthrough__))
#endif
#endif
