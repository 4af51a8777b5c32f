// SPDX-License-Identifier: GPL-2.0
// HMAC-SHA256 and the handshake proofs.
#include <gtest/gtest.h>
#include <openssl/hmac.h>

#include <random>
#include <string>

#include "core.hpp"

namespace
{

std::string hex(const uint8_t* p, size_t n)
{
    static const char* d = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; i++) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

std::string hmac_hex(const std::string& key, const std::string& msg)
{
    uint8_t out[LITE_HMAC_LEN];
    lite_hmac_sha256(reinterpret_cast<const uint8_t*>(key.data()), key.size(),
                     reinterpret_cast<const uint8_t*>(msg.data()), msg.size(), out);
    return hex(out, sizeof(out));
}

lite_auth_ctx ctx_with(uint8_t seed)
{
    lite_auth_ctx c{};
    c.purpose = LITE_PURPOSE_PEER;
    c.node_id = 3;
    for (int i = 0; i < LITE_NONCE_LEN; i++) {
        c.nonce_active[i] = static_cast<uint8_t>(seed + i);
        c.nonce_passive[i] = static_cast<uint8_t>(seed * 3 + i);
    }
    return c;
}

const uint8_t kSecret[] = "correct horse battery staple";
const uint8_t kOther[] = "correct horse battery stapler";

} // namespace

// RFC 4231 test cases 1, 2 and 6 (key longer than a block).
TEST(Auth, HmacSha256Rfc4231)
{
    EXPECT_EQ(hmac_hex(std::string(20, '\x0b'), "Hi There"),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    EXPECT_EQ(hmac_hex("Jefe", "what do ya want for nothing?"),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_EQ(hmac_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Auth, HmacMatchesOpenSsl)
{
    std::mt19937 rng(7);
    for (int i = 0; i < 500; i++) {
        std::vector<uint8_t> key(rng() % 200), msg(rng() % 300);
        for (auto& b : key)
            b = static_cast<uint8_t>(rng());
        for (auto& b : msg)
            b = static_cast<uint8_t>(rng());
        uint8_t ours[32], ref[32];
        unsigned ref_len = 0;
        lite_hmac_sha256(key.data(), key.size(), msg.data(), msg.size(), ours);
        HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), msg.data(), msg.size(), ref, &ref_len);
        ASSERT_EQ(ref_len, 32u);
        ASSERT_EQ(hex(ours, 32), hex(ref, 32)) << "key " << key.size() << " msg " << msg.size();
    }
}

TEST(Auth, ProofVerifiesOnlyWithSameSecretRoleAndContext)
{
    auto ctx = ctx_with(1);
    uint8_t mac[LITE_MAC_LEN];
    lite_auth_mac(kSecret, sizeof(kSecret), &ctx, LITE_ROLE_ACTIVE, mac);
    EXPECT_TRUE(lite_auth_verify(kSecret, sizeof(kSecret), &ctx, LITE_ROLE_ACTIVE, mac));
    EXPECT_FALSE(lite_auth_verify(kOther, sizeof(kOther), &ctx, LITE_ROLE_ACTIVE, mac)) << "wrong secret";
    EXPECT_FALSE(lite_auth_verify(kSecret, sizeof(kSecret), &ctx, LITE_ROLE_PASSIVE, mac))
        << "a proof cannot be reflected to the other role";

    auto other = ctx_with(2);
    EXPECT_FALSE(lite_auth_verify(kSecret, sizeof(kSecret), &other, LITE_ROLE_ACTIVE, mac)) << "replay";

    other = ctx;
    other.node_id = 4;
    EXPECT_FALSE(lite_auth_verify(kSecret, sizeof(kSecret), &other, LITE_ROLE_ACTIVE, mac)) << "node id";

    other = ctx;
    other.purpose = LITE_PURPOSE_JOIN;
    EXPECT_FALSE(lite_auth_verify(kSecret, sizeof(kSecret), &other, LITE_ROLE_ACTIVE, mac)) << "purpose";

    mac[31] ^= 1;
    EXPECT_FALSE(lite_auth_verify(kSecret, sizeof(kSecret), &ctx, LITE_ROLE_ACTIVE, mac)) << "flipped bit";
}

// The connect-request ticket: made with the secret for one nonce and one
// destination; anything else fails.
TEST(Auth, ConnectTicketNamesSecretNonceAndDestination)
{
    const std::string secret = "cluster-secret", other = "another-secret";
    auto key = reinterpret_cast<const uint8_t*>(secret.data());
    uint8_t nonce[LITE_CM_NONCE_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
    lite_naddr dst{};
    dst.family = LITE_WIRE_AF_INET;
    dst.port = 18515;
    dst.addr[0] = 10;
    uint8_t tag[LITE_CM_TAG_LEN];
    lite_auth_cm_tag(key, secret.size(), nonce, &dst, tag);
    EXPECT_TRUE(lite_auth_cm_check(key, secret.size(), nonce, &dst, tag));

    EXPECT_FALSE(lite_auth_cm_check(reinterpret_cast<const uint8_t*>(other.data()), other.size(), nonce, &dst, tag))
        << "another secret";
    uint8_t nonce2[LITE_CM_NONCE_LEN] = {1, 2, 3, 4, 5, 6, 7, 9};
    EXPECT_FALSE(lite_auth_cm_check(key, secret.size(), nonce2, &dst, tag)) << "another nonce";
    lite_naddr dst2 = dst;
    dst2.port = 18516;
    EXPECT_FALSE(lite_auth_cm_check(key, secret.size(), nonce, &dst2, tag)) << "another destination";
    tag[0] ^= 1;
    EXPECT_FALSE(lite_auth_cm_check(key, secret.size(), nonce, &dst, tag)) << "a changed tag";
}
