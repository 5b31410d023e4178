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

/* HELLO's magic. "DTSTORE1": dt before protocol versions (its HELLO is
 * magic and nonce only); "DTSTORE2": a HELLO that says who the client is
 * and which DT_PROTOCOL_VERSION it speaks. The handshake frames of
 * DTSTORE2 (HELLO, CHALLENGE, PROOF, WELCOME, REFUSED) never change, so
 * every later dt can authenticate and refuse a client of another protocol
 * by name; DT_PROTOCOL_VERSION versions everything after them. */
#define STORE_MAGIC_V1 "DTSTORE1"
#define STORE_MAGIC "DTSTORE2"
#define STORE_MAGIC_LEN 8
/* The v1 HELLO: type, magic, nonce. */
#define STORE_HELLO_V1_LEN (1 + STORE_MAGIC_LEN + STORE_NONCE_BYTES)
#define STORE_NONCE_BYTES 32
#define STORE_MAC_BYTES 32                 /* HMAC-SHA256                  */
#define STORE_MAX_KEY 1024                 /* bytes in a key or a name     */
#define STORE_MAX_VALUE (1u << 20)         /* bytes in a value: 1 MiB      */
/* Largest request body: type, key length, key, value. */
#define STORE_MAX_FRAME (1 + 2 + STORE_MAX_KEY + STORE_MAX_VALUE + 16)
/* A text field of HELLO or REFUSED: u8 length, then that many bytes. */
#define STORE_TEXT_MAX 255
/* Before authentication only small frames are accepted (a HELLO with
 * four texts fits). */
#define STORE_MAX_HANDSHAKE_FRAME 1280
/* A connection that has not authenticated within this many seconds is
 * dropped, so a silent client cannot hold a slot forever. */
#define STORE_HANDSHAKE_SECONDS 10.0

enum store_msg {
    /* handshake */
    STORE_HELLO = 0x01,     /* C->S: magic, client nonce                     */
    STORE_CHALLENGE = 0x02, /* S->C: server nonce, server proof              */
    STORE_PROOF = 0x03,     /* C->S: client proof                            */
    STORE_WELCOME = 0x04,   /* S->C: authenticated                           */
    STORE_REFUSED = 0x05,   /* S->C: authenticated, of another protocol:
                               u16 protocol, texts version, program       */
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

/* What a DTSTORE2 HELLO says about its client:
 *   01 | "DTSTORE2" | nonce_c (32) | u16 protocol | i32 rank |
 *   text version | text host | text program | text libdt
 * rank is DT_RANK (-1: none, e.g. dtctl's own connection); program is the
 * executable, libdt the library that speaks the protocol. */
typedef struct store_hello {
    uint8_t nonce_c[STORE_NONCE_BYTES];
    unsigned protocol;
    int rank;
    char version[STORE_TEXT_MAX + 1], host[STORE_TEXT_MAX + 1],
        program[STORE_TEXT_MAX + 1], libdt[STORE_TEXT_MAX + 1];
} store_hello_t;

/* The HELLO body of h into buf (STORE_MAX_HANDSHAKE_FRAME bytes); its
 * length. Texts longer than STORE_TEXT_MAX keep their start and end. */
size_t store_hello_encode(const store_hello_t *h, uint8_t *buf);
/* A DTSTORE2 HELLO body into h; DT_ERR_INVALID when malformed. */
dt_status_t store_hello_decode(const uint8_t *b, size_t len,
                               store_hello_t *h);
/* A text field at *off of b[0..len) into out (STORE_TEXT_MAX + 1 bytes),
 * NUL and control bytes as '?'; -1 when it runs past len. */
int store_text_get(const uint8_t *b, size_t len, size_t *off, char *out);
/* s as a text field at buf + *off (STORE_TEXT_MAX + 1 bytes of room). */
void store_text_put(uint8_t *buf, size_t *off, const char *s);

/* The client proof of a DTSTORE2 handshake covers its whole HELLO, so
 * what the server reports about a client it refuses (rank, host,
 * protocol, paths) is as authentic as the client:
 *   proof_c = HMAC(token, "dt-store-client-2" 0 nonce_s HELLO-body) */
dt_status_t store_proof_hello(const uint8_t token[DT_TOKEN_BYTES],
                              const uint8_t nonce_s[STORE_NONCE_BYTES],
                              const uint8_t *hello, size_t hello_len,
                              uint8_t mac[STORE_MAC_BYTES]);
int store_proof_hello_ok(const uint8_t token[DT_TOKEN_BYTES],
                         const uint8_t nonce_s[STORE_NONCE_BYTES],
                         const uint8_t *hello, size_t hello_len,
                         const uint8_t mac[STORE_MAC_BYTES]);

/* store_version.c: this process as a HELLO says it (DT_RANK, gethostname,
 * /proc/self/exe, the libdt this code is in, DT_PROTOCOL_VERSION). */
void store_hello_self(store_hello_t *h);
/* The protocol a client advertises: DT_PROTOCOL_VERSION, or a test's
 * DT_TEST_PROTO_VERSION (0: the HELLO of a dt before protocol versions). */
int store_test_protocol(void);
/* dtctl's line for a client of this job it refuses (h NULL: a DTSTORE1
 * client, from addr). */
void store_refusal_text(const store_hello_t *h, const char *addr, char *buf,
                        size_t len);
/* A worker's line for the REFUSED frame b[0..len) from the store at where. */
void store_refused_text(const char *where, const uint8_t *b, size_t len,
                        int advertised, char *buf, size_t blen);
/* A worker's line when the store closed the connection at its HELLO. */
void store_closed_at_hello_text(const char *where, int advertised,
                                char *buf, size_t blen);

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
