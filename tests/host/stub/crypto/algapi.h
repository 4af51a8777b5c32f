/* SPDX-License-Identifier: GPL-2.0 */
#ifndef LITE_STUB_CRYPTO_ALGAPI_H
#define LITE_STUB_CRYPTO_ALGAPI_H
#include <linux/types.h>
#include <openssl/crypto.h>
/* Constant-time: non-zero when the buffers differ. */
static inline int crypto_memneq(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) != 0;
}
#endif
