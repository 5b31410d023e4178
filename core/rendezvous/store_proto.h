/* store_proto.h — the wire protocol of the rendezvous store, shared by the
 * client (store_client.c) and the server (store_server.c). Internal to
 * libdt; docs/RENDEZVOUS.md describes it for humans.
 *
 * Every message is a frame: a 4-byte big-endian body length, then the body,
 * whose first byte is the message type. Lengths are bounded so that no peer
 * can make the other side allocate more than STORE_MAX_FRAME bytes. */
#ifndef DT_STORE_PROTO_H
#define DT_STORE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <dt/status.h>
#include <dt/store.h>
#include <dt/clock.h>

#define STORE_MAGIC "DTSTORE1"             /* 8 bytes, in HELLO            */
#define STORE_MAGIC_LEN 8
#define STORE_NONCE_BYTES 32
#define STORE_MAC_BYTES 32                 /* HMAC-SHA256                  */
#define STORE_MAX_KEY 1024                 /* bytes in a key or a name     */
#define STORE_MAX_VALUE (1u << 20)         /* bytes in a value: 1 MiB      */
/* Largest request body: type, key length, key, value. */
#define STORE_MAX_FRAME (1 + 2 + STORE_MAX_KEY + STORE_MAX_VALUE + 16)
/* Before authentication only small frames are accepted. */
#define STORE_MAX_HANDSHAKE_FRAME 128
/* A connection that has not authenticated within this many seconds is
 * dropped, so a silent client cannot hold a slot forever. */
#define STORE_HANDSHAKE_SECONDS 10.0

enum store_msg {
    /* handshake */
    STORE_HELLO = 0x01,     /* C->S: magic, client nonce                     */
    STORE_CHALLENGE = 0x02, /* S->C: server nonce, server proof              */
    STORE_PROOF = 0x03,     /* C->S: client proof                            */
    STORE_WELCOME = 0x04,   /* S->C: authenticated                           */
    /* requests (C->S), only after WELCOME */
    STORE_SET = 0x10,       /* key, value                                    */
    STORE_GET = 0x11,       /* u32 timeout_ms, key                           */
    STORE_ADD = 0x12,       /* i64 delta, key                                */
    STORE_BARRIER = 0x13,   /* u32 n, u32 timeout_ms, name                   */
    /* reply (S->C): i32 status, then the payload (GET: value; ADD: i64)  */
    STORE_REPLY = 0x20
};

/* Domain-separated proofs: the two directions can never be swapped.
 *   server proof = HMAC(token, "dt-store-server" 0 nonce_c nonce_s)
 *   client proof = HMAC(token, "dt-store-client" 0 nonce_c nonce_s) */
typedef enum store_role { STORE_ROLE_SERVER, STORE_ROLE_CLIENT } store_role_t;

dt_status_t store_proof(const uint8_t token[DT_TOKEN_BYTES],
                           store_role_t role,
                           const uint8_t nonce_c[STORE_NONCE_BYTES],
                           const uint8_t nonce_s[STORE_NONCE_BYTES],
                           uint8_t mac[STORE_MAC_BYTES]);
/* Constant-time check of a received proof. 1 when it matches. */
int store_proof_ok(const uint8_t token[DT_TOKEN_BYTES], store_role_t role,
                      const uint8_t nonce_c[STORE_NONCE_BYTES],
                      const uint8_t nonce_s[STORE_NONCE_BYTES],
                      const uint8_t mac[STORE_MAC_BYTES]);

/* Big-endian helpers. */
static inline void store_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void store_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static inline void store_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint16_t store_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t store_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t store_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Seconds on the monotonic clock. */

#endif /* DT_STORE_PROTO_H */
