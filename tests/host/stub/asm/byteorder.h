/* SPDX-License-Identifier: GPL-2.0 */
/* Host stub: the kernel's byte-order helpers over <endian.h>. */
#ifndef LITE_STUB_ASM_BYTEORDER_H
#define LITE_STUB_ASM_BYTEORDER_H
#include <endian.h>
#define cpu_to_le16(x) htole16(x)
#define cpu_to_le32(x) htole32(x)
#define cpu_to_le64(x) htole64(x)
#define le16_to_cpu(x) le16toh(x)
#define le32_to_cpu(x) le32toh(x)
#define le64_to_cpu(x) le64toh(x)
#define cpu_to_be16(x) htobe16(x)
#define be16_to_cpu(x) be16toh(x)
#endif
