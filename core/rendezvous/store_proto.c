/* store_proto.c — the challenge-response proofs of the store handshake
 * (HMAC-SHA256 over both nonces, one label per direction). */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <time.h>

#include "store_proto.h"
#include <dt/clock.h>

static const char *const role_label[] = {"dt-store-server", "dt-store-client"};

dt_status_t store_proof(const uint8_t token[DT_TOKEN_BYTES], store_role_t role,
                        const uint8_t nonce_c[STORE_NONCE_BYTES],
                        const uint8_t nonce_s[STORE_NONCE_BYTES],
                        uint8_t mac[STORE_MAC_BYTES])
{
    /* label, its NUL, then both nonces: fixed lengths, so no ambiguity. */
    uint8_t msg[16 + 2 * STORE_NONCE_BYTES];
    const char *label = role_label[role];
    size_t llen = strlen(label) + 1;
    memcpy(msg, label, llen);
    memcpy(msg + llen, nonce_c, STORE_NONCE_BYTES);
    memcpy(msg + llen + STORE_NONCE_BYTES, nonce_s, STORE_NONCE_BYTES);
    unsigned int maclen = 0;
    uint8_t *r = HMAC(EVP_sha256(), token, DT_TOKEN_BYTES, msg,
                      llen + 2 * STORE_NONCE_BYTES, mac, &maclen);
    OPENSSL_cleanse(msg, sizeof msg);
    return r && maclen == STORE_MAC_BYTES ? DT_OK : DT_ERR_INTERNAL;
}

int store_proof_ok(const uint8_t token[DT_TOKEN_BYTES], store_role_t role,
                   const uint8_t nonce_c[STORE_NONCE_BYTES],
                   const uint8_t nonce_s[STORE_NONCE_BYTES],
                   const uint8_t mac[STORE_MAC_BYTES])
{
    uint8_t want[STORE_MAC_BYTES];
    if (store_proof(token, role, nonce_c, nonce_s, want) != DT_OK)
        return 0;
    int ok = CRYPTO_memcmp(want, mac, STORE_MAC_BYTES) == 0;
    OPENSSL_cleanse(want, sizeof want);
    return ok;
}

