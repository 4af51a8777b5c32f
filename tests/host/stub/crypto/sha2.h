/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host stub: the kernel's SHA-256 library API, implemented with OpenSSL so
 * the host tests check lite's HMAC against an independent SHA-256.
 */
#ifndef LITE_STUB_CRYPTO_SHA2_H
#define LITE_STUB_CRYPTO_SHA2_H
#include <linux/types.h>
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_BLOCK_SIZE 64

struct sha256_state {
	SHA256_CTX ctx;
};

static inline void sha256_init(struct sha256_state *s)
{
	SHA256_Init(&s->ctx);
}

static inline void sha256_update(struct sha256_state *s, const u8 *d,
				 unsigned int len)
{
	SHA256_Update(&s->ctx, d, len);
}

static inline void sha256_final(struct sha256_state *s, u8 *out)
{
	SHA256_Final(out, &s->ctx);
}

static inline void sha256(const u8 *d, unsigned int len, u8 *out)
{
	SHA256(d, len, out);
}
#endif
