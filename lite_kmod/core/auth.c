// SPDX-License-Identifier: GPL-2.0
/* lite authentication: HMAC-SHA256 (RFC 2104) over the kernel's SHA-256. */
#include <linux/types.h>
#include <linux/string.h>
#include <crypto/sha2.h>
#include <crypto/algapi.h>

#include "auth.h"

/**
 * lite_hmac_sha256 - HMAC-SHA256 (RFC 2104) of a message
 * @key: the key
 * @key_len: its length in bytes; keys longer than a SHA-256 block are
 *	hashed first
 * @msg: the message
 * @msg_len: its length in bytes
 * @out: the LITE_HMAC_LEN-byte MAC
 *
 * Built on the kernel's SHA-256 library; the padded key and the inner
 * hash are wiped from the stack before returning. Any context.
 */
void lite_hmac_sha256(const u8 *key, size_t key_len, const u8 *msg,
		      size_t msg_len, u8 out[LITE_HMAC_LEN])
{
	u8 k[SHA256_BLOCK_SIZE] = { 0 };
	u8 pad[SHA256_BLOCK_SIZE];
	u8 inner[SHA256_DIGEST_SIZE];
	struct sha256_state st;
	size_t i;

	if (key_len > SHA256_BLOCK_SIZE)
		sha256(key, key_len, k);
	else
		memcpy(k, key, key_len);

	for (i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&st);
	sha256_update(&st, pad, sizeof(pad));
	sha256_update(&st, msg, msg_len);
	sha256_final(&st, inner);

	for (i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&st);
	sha256_update(&st, pad, sizeof(pad));
	sha256_update(&st, inner, sizeof(inner));
	sha256_final(&st, out);

	memzero_explicit(k, sizeof(k));
	memzero_explicit(pad, sizeof(pad));
	memzero_explicit(inner, sizeof(inner));
}

static u8 *lite_auth_put_addr(u8 *p, const struct lite_naddr *a)
{
	*p++ = a->family;
	*p++ = a->port & 0xff;
	*p++ = a->port >> 8;
	memcpy(p, a->addr, sizeof(a->addr));
	return p + sizeof(a->addr);
}

/**
 * lite_auth_mac - the MAC one side of a handshake proves the secret with
 * @secret: the cluster's shared secret
 * @secret_len: its length
 * @ctx: what the handshake binds: purpose, claimed node id, both nonces
 *	and both listen addresses
 * @role: the side that sends the MAC (&enum lite_auth_role)
 * @out: the LITE_MAC_LEN-byte MAC
 *
 * The MAC input is: label, role, purpose, node id (LE), active nonce,
 * passive nonce, active listen address, passive listen address.
 */
void lite_auth_mac(const u8 *secret, size_t secret_len,
		   const struct lite_auth_ctx *ctx, u8 role,
		   u8 out[LITE_MAC_LEN])
{
	static const char label[8] = "lite-v1";
	u8 msg[sizeof(label) + 4 + 2 * LITE_NONCE_LEN + 2 * 19];
	u8 *p = msg;

	memcpy(p, label, sizeof(label));
	p += sizeof(label);
	*p++ = role;
	*p++ = ctx->purpose;
	*p++ = ctx->node_id & 0xff;
	*p++ = ctx->node_id >> 8;
	memcpy(p, ctx->nonce_active, LITE_NONCE_LEN);
	p += LITE_NONCE_LEN;
	memcpy(p, ctx->nonce_passive, LITE_NONCE_LEN);
	p += LITE_NONCE_LEN;
	p = lite_auth_put_addr(p, &ctx->active_listen);
	lite_auth_put_addr(p, &ctx->passive_listen);
	lite_hmac_sha256(secret, secret_len, msg, sizeof(msg), out);
}

/* Constant-time compare of what we computed with what came; @want wiped. */
static bool lite_auth_matches(u8 *want, const u8 *got, size_t len)
{
	bool ok = !crypto_memneq(want, got, len);

	memzero_explicit(want, len);
	return ok;
}

/**
 * lite_auth_verify - check the MAC the other side of a handshake sent
 * @secret: the cluster's shared secret
 * @secret_len: its length
 * @ctx: what the handshake binds (as for lite_auth_mac())
 * @role: the side that sent @mac
 * @mac: the MAC that came
 *
 * Compares in constant time and wipes the MAC it computed.
 *
 * Return: true if @mac is lite_auth_mac() of @ctx and @role with @secret.
 */
bool lite_auth_verify(const u8 *secret, size_t secret_len,
		      const struct lite_auth_ctx *ctx, u8 role,
		      const u8 mac[LITE_MAC_LEN])
{
	u8 want[LITE_MAC_LEN];

	lite_auth_mac(secret, secret_len, ctx, role, want);
	return lite_auth_matches(want, mac, sizeof(want));
}

/**
 * lite_auth_cm_tag - the ticket a connect request carries
 * @secret: the cluster's shared secret
 * @secret_len: its length
 * @nonce: fresh random bytes of the requester
 * @dst: the listen address the request goes to
 * @out: the tag, a truncated HMAC over label, nonce and @dst
 *
 * It lets a listener refuse a stranger before it allocates anything for
 * the connection; the full challenge-response (lite_auth_mac()) follows.
 */
void lite_auth_cm_tag(const u8 *secret, size_t secret_len,
		      const u8 nonce[LITE_CM_NONCE_LEN],
		      const struct lite_naddr *dst, u8 out[LITE_CM_TAG_LEN])
{
	static const char label[8] = "lite-cm";
	u8 msg[sizeof(label) + LITE_CM_NONCE_LEN + 19];
	u8 mac[LITE_HMAC_LEN];
	u8 *p = msg;

	memcpy(p, label, sizeof(label));
	p += sizeof(label);
	memcpy(p, nonce, LITE_CM_NONCE_LEN);
	p += LITE_CM_NONCE_LEN;
	lite_auth_put_addr(p, dst);
	lite_hmac_sha256(secret, secret_len, msg, sizeof(msg), mac);
	memcpy(out, mac, LITE_CM_TAG_LEN);
	memzero_explicit(mac, sizeof(mac));
}

/**
 * lite_auth_cm_check - whether a connect request's ticket is right
 * @secret: the cluster's shared secret
 * @secret_len: its length
 * @nonce: the nonce the request carries
 * @dst: our listen address
 * @tag: the tag the request carries
 *
 * Return: true if @tag was made with @secret for @nonce and @dst.
 */
bool lite_auth_cm_check(const u8 *secret, size_t secret_len,
			const u8 nonce[LITE_CM_NONCE_LEN],
			const struct lite_naddr *dst,
			const u8 tag[LITE_CM_TAG_LEN])
{
	u8 want[LITE_CM_TAG_LEN];

	lite_auth_cm_tag(secret, secret_len, nonce, dst, want);
	return lite_auth_matches(want, tag, sizeof(want));
}
