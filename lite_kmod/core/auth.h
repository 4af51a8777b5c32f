/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lite authentication: HMAC-SHA256 challenge-response on the cluster's
 * shared secret. The secret never travels; each side proves it with a MAC
 * over both nonces, both listen addresses, the role, the purpose and the
 * claimed node id.
 * Verb-free.
 */
#ifndef LITE_CORE_AUTH_H
#define LITE_CORE_AUTH_H

#include <linux/types.h>
#include "wire.h"

#define LITE_HMAC_LEN	32
#define LITE_CM_NONCE_LEN	8	/* connect request ticket */
#define LITE_CM_TAG_LEN		16

enum lite_auth_role {
	LITE_ROLE_PASSIVE = 'P',	/* the side that accepted */
	LITE_ROLE_ACTIVE = 'A',		/* the side that connected */
};

struct lite_auth_ctx {
	u8 purpose;
	u16 node_id;
	u8 nonce_active[LITE_NONCE_LEN];
	u8 nonce_passive[LITE_NONCE_LEN];
	struct lite_naddr active_listen;	/* where the active side listens */
	struct lite_naddr passive_listen;	/* where it connected to */
};

void lite_hmac_sha256(const u8 *key, size_t key_len, const u8 *msg,
		      size_t msg_len, u8 out[LITE_HMAC_LEN]);
void lite_auth_mac(const u8 *secret, size_t secret_len,
		   const struct lite_auth_ctx *ctx, u8 role,
		   u8 out[LITE_MAC_LEN]);
bool lite_auth_verify(const u8 *secret, size_t secret_len,
		      const struct lite_auth_ctx *ctx, u8 role,
		      const u8 mac[LITE_MAC_LEN]);

void lite_auth_cm_tag(const u8 *secret, size_t secret_len,
		      const u8 nonce[LITE_CM_NONCE_LEN],
		      const struct lite_naddr *dst, u8 out[LITE_CM_TAG_LEN]);
bool lite_auth_cm_check(const u8 *secret, size_t secret_len,
			const u8 nonce[LITE_CM_NONCE_LEN],
			const struct lite_naddr *dst,
			const u8 tag[LITE_CM_TAG_LEN]);

#endif /* LITE_CORE_AUTH_H */
