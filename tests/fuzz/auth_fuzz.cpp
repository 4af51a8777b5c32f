// SPDX-License-Identifier: GPL-2.0
// Handshake authentication (lite_kmod/core/auth.c). lite_hmac_sha256()
// against OpenSSL's HMAC for any key and message (keys longer than a block
// included); lite_auth_verify() accepts a MAC exactly when it is the one
// lite_auth_mac() computes, so a proof from the wire passes only if it is
// right; and the MAC binds everything: another role, another secret or any
// one bit of the context gives another MAC.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <vector>

#include "fuzz.hpp"

namespace
{

constexpr uint64_t SHA256_BLOCK = 64;

lite_naddr naddr(fuzz::Reader& in)
{
    lite_naddr a{};
    a.family = in.u8();
    a.port = in.u16();
    in.bytes(a.addr, sizeof(a.addr));
    return a;
}

void mac(const std::vector<uint8_t>& secret, const lite_auth_ctx& ctx, uint8_t role, uint8_t out[LITE_MAC_LEN])
{
    lite_auth_mac(secret.data(), secret.size(), &ctx, role, out);
}

// Flip bit @bit of one of the context's fields (never its padding).
void flip(lite_auth_ctx& ctx, unsigned bit)
{
    struct Field {
        void* p;
        size_t n;
    };
    const Field fields[] = {
        {&ctx.purpose, sizeof(ctx.purpose)},
        {&ctx.node_id, sizeof(ctx.node_id)},
        {ctx.nonce_active, sizeof(ctx.nonce_active)},
        {ctx.nonce_passive, sizeof(ctx.nonce_passive)},
        {&ctx.active_listen.family, sizeof(ctx.active_listen.family)},
        {&ctx.active_listen.port, sizeof(ctx.active_listen.port)},
        {ctx.active_listen.addr, sizeof(ctx.active_listen.addr)},
        {&ctx.passive_listen.family, sizeof(ctx.passive_listen.family)},
        {&ctx.passive_listen.port, sizeof(ctx.passive_listen.port)},
        {ctx.passive_listen.addr, sizeof(ctx.passive_listen.addr)},
    };
    size_t total = 0;
    for (const auto& f : fields)
        total += f.n * 8;
    bit %= total;
    for (const auto& f : fields) {
        if (bit < f.n * 8) {
            static_cast<uint8_t*>(f.p)[bit / 8] ^= static_cast<uint8_t>(1U << (bit % 8));
            return;
        }
        bit -= f.n * 8;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    fuzz::Reader in(data, size);

    // Any key (up to three blocks) over any message, against OpenSSL.
    // (Never a null pointer, even for empty ones: OpenSSL reads a null key
    // as "the previous key".)
    std::vector<uint8_t> key(in.range(0, uint64_t{3} * SHA256_BLOCK) + 1), msg(in.range(0, 300) + 1);
    size_t key_len = key.size() - 1, msg_len = msg.size() - 1;
    in.bytes(key.data(), key_len);
    in.bytes(msg.data(), msg_len);
    uint8_t ours[LITE_HMAC_LEN], theirs[EVP_MAX_MD_SIZE];
    unsigned int theirs_len = 0;
    lite_hmac_sha256(key.data(), key_len, msg.data(), msg_len, ours);
    FUZZ_CHECK(HMAC(EVP_sha256(), key.data(), static_cast<int>(key_len), msg.data(), msg_len, theirs, &theirs_len) !=
               nullptr);
    FUZZ_CHECK(theirs_len == LITE_HMAC_LEN && std::memcmp(ours, theirs, LITE_HMAC_LEN) == 0);

    // A handshake context and a proof as they could arrive.
    std::vector<uint8_t> secret(in.range(1, 100));
    in.bytes(secret.data(), secret.size());
    lite_auth_ctx ctx{};
    ctx.purpose = in.u8();
    ctx.node_id = in.u16();
    in.bytes(ctx.nonce_active, sizeof(ctx.nonce_active));
    in.bytes(ctx.nonce_passive, sizeof(ctx.nonce_passive));
    ctx.active_listen = naddr(in);
    ctx.passive_listen = naddr(in);
    uint8_t role = in.flag() ? LITE_ROLE_ACTIVE : LITE_ROLE_PASSIVE;
    uint8_t other = role == LITE_ROLE_ACTIVE ? LITE_ROLE_PASSIVE : LITE_ROLE_ACTIVE;
    uint8_t proof[LITE_MAC_LEN];
    in.bytes(proof, sizeof(proof));

    uint8_t right[LITE_MAC_LEN], tmp[LITE_MAC_LEN];
    mac(secret, ctx, role, right);
    FUZZ_CHECK(lite_auth_verify(secret.data(), secret.size(), &ctx, role, right));
    bool same = std::memcmp(proof, right, sizeof(right)) == 0;
    FUZZ_CHECK(lite_auth_verify(secret.data(), secret.size(), &ctx, role, proof) == same);

    // One bit anywhere in the proof is enough to refuse it.
    std::memcpy(tmp, right, sizeof(tmp));
    unsigned bit = in.u16();
    tmp[(bit / 8) % LITE_MAC_LEN] ^= static_cast<uint8_t>(1U << (bit % 8));
    FUZZ_CHECK(!lite_auth_verify(secret.data(), secret.size(), &ctx, role, tmp));

    // The other side's proof is not ours (no reflection).
    mac(secret, ctx, other, tmp);
    FUZZ_CHECK(std::memcmp(tmp, right, sizeof(tmp)) != 0);
    FUZZ_CHECK(!lite_auth_verify(secret.data(), secret.size(), &ctx, other, right));

    // Another secret, or any one bit of the context, changes the MAC.
    std::vector<uint8_t> wrong = secret;
    unsigned sbit = in.u16();
    wrong[(sbit / 8) % wrong.size()] ^= static_cast<uint8_t>(1U << (sbit % 8));
    FUZZ_CHECK(!lite_auth_verify(wrong.data(), wrong.size(), &ctx, role, right));
    lite_auth_ctx changed = ctx;
    flip(changed, in.u16());
    FUZZ_CHECK(!lite_auth_verify(secret.data(), secret.size(), &changed, role, right));
    return 0;
}
