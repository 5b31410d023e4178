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


/* ---- protocol 2: the HELLO that says who the client is ------------------ */

void store_text_put(uint8_t *buf, size_t *off, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    uint8_t *p = buf + *off + 1;
    if (n <= STORE_TEXT_MAX) {
        memcpy(p, s, n);
    } else { /* a path's start (which tree) and end (which file) */
        size_t head = 100, tail = STORE_TEXT_MAX - head - 3;
        memcpy(p, s, head);
        memcpy(p + head, "...", 3);
        memcpy(p + head + 3, s + n - tail, tail);
        n = STORE_TEXT_MAX;
    }
    buf[*off] = (uint8_t)n;
    *off += 1 + n;
}

int store_text_get(const uint8_t *b, size_t len, size_t *off, char *out)
{
    if (*off >= len || len - *off - 1 < b[*off])
        return -1;
    size_t n = b[*off];
    for (size_t i = 0; i < n; i++) {
        uint8_t c = b[*off + 1 + i];
        out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c; /* for log lines */
    }
    out[n] = '\0';
    *off += 1 + n;
    return 0;
}

size_t store_hello_encode(const store_hello_t *h, uint8_t *buf)
{
    size_t off = 0;
    buf[off++] = STORE_HELLO;
    memcpy(buf + off, STORE_MAGIC, STORE_MAGIC_LEN);
    off += STORE_MAGIC_LEN;
    memcpy(buf + off, h->nonce_c, STORE_NONCE_BYTES);
    off += STORE_NONCE_BYTES;
    store_put_u16(buf + off, (uint16_t)h->protocol);
    store_put_u32(buf + off + 2, (uint32_t)(int32_t)h->rank);
    off += 6;
    store_text_put(buf, &off, h->version);
    store_text_put(buf, &off, h->host);
    store_text_put(buf, &off, h->program);
    store_text_put(buf, &off, h->libdt);
    return off;
}

dt_status_t store_hello_decode(const uint8_t *b, size_t len,
                               store_hello_t *h)
{
    size_t off = 1 + STORE_MAGIC_LEN + STORE_NONCE_BYTES + 6;
    if (len < off || b[0] != STORE_HELLO ||
        memcmp(b + 1, STORE_MAGIC, STORE_MAGIC_LEN) != 0)
        return DT_ERR_INVALID;
    memcpy(h->nonce_c, b + 1 + STORE_MAGIC_LEN, STORE_NONCE_BYTES);
    h->protocol = store_get_u16(b + off - 6);
    h->rank = (int32_t)store_get_u32(b + off - 4);
    if (store_text_get(b, len, &off, h->version) ||
        store_text_get(b, len, &off, h->host) ||
        store_text_get(b, len, &off, h->program) ||
        store_text_get(b, len, &off, h->libdt) || off != len)
        return DT_ERR_INVALID;
    return DT_OK;
}

dt_status_t store_proof_hello(const uint8_t token[DT_TOKEN_BYTES],
                              const uint8_t nonce_s[STORE_NONCE_BYTES],
                              const uint8_t *hello, size_t hello_len,
                              uint8_t mac[STORE_MAC_BYTES])
{
    static const char label[] = "dt-store-client-2"; /* with its NUL */
    uint8_t msg[sizeof label + STORE_NONCE_BYTES + STORE_MAX_HANDSHAKE_FRAME];
    if (hello_len > STORE_MAX_HANDSHAKE_FRAME)
        return DT_ERR_INVALID;
    /* label and nonce_s have fixed lengths: the HELLO is the rest. */
    memcpy(msg, label, sizeof label);
    memcpy(msg + sizeof label, nonce_s, STORE_NONCE_BYTES);
    memcpy(msg + sizeof label + STORE_NONCE_BYTES, hello, hello_len);
    unsigned int maclen = 0;
    uint8_t *r = HMAC(EVP_sha256(), token, DT_TOKEN_BYTES, msg,
                      sizeof label + STORE_NONCE_BYTES + hello_len, mac,
                      &maclen);
    OPENSSL_cleanse(msg, sizeof msg);
    return r && maclen == STORE_MAC_BYTES ? DT_OK : DT_ERR_INTERNAL;
}

int store_proof_hello_ok(const uint8_t token[DT_TOKEN_BYTES],
                         const uint8_t nonce_s[STORE_NONCE_BYTES],
                         const uint8_t *hello, size_t hello_len,
                         const uint8_t mac[STORE_MAC_BYTES])
{
    uint8_t want[STORE_MAC_BYTES];
    if (store_proof_hello(token, nonce_s, hello, hello_len, want) != DT_OK)
        return 0;
    int ok = CRYPTO_memcmp(want, mac, STORE_MAC_BYTES) == 0;
    OPENSSL_cleanse(want, sizeof want);
    return ok;
}
