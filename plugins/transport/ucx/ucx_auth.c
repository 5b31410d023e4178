/* ucx_auth.c — every pair of ranks proves the job token over its new UCP
 * endpoints before any user message moves.
 *
 * The store already admits only token holders, so the addresses a rank
 * reads were written by members of this job. The handshake adds that the
 * worker answering at each address is the rank that published it, holding
 * the token now (not a stale address from an earlier job reused by another
 * process):
 *
 *   round 1  each rank sends every peer a fresh 32-byte nonce
 *   round 2  each rank answers HMAC-SHA256(token, "dt-ucx" | peer's nonce |
 *            prover rank | verifier rank) and checks the peer's answer
 *
 * The token never crosses the wire; a wrong answer names the rank. */
#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "ucx.h"

#define NONCE_BYTES 32
#define MAC_BYTES 32
enum { KIND_NONCE = 1, KIND_PROOF = 2 };

static uint64_t auth_tag(int src, int kind)
{
    return UCX_TAG_INTERNAL | ((uint64_t)(uint32_t)src << 32) |
           (uint32_t)kind;
}

static int proof(const uint8_t *token, size_t token_len,
                 const uint8_t *nonce, int prover, int verifier,
                 uint8_t out[MAC_BYTES])
{
    uint8_t msg[8 + NONCE_BYTES + 8];
    uint32_t ids[2] = {htonl((uint32_t)prover), htonl((uint32_t)verifier)};
    memcpy(msg, "dt-ucx\0\0", 8);
    memcpy(msg + 8, nonce, NONCE_BYTES);
    memcpy(msg + 8 + NONCE_BYTES, ids, sizeof ids);
    unsigned int outlen = 0;
    return HMAC(EVP_sha256(), token, (int)token_len, msg, sizeof msg, out,
                &outlen) != NULL &&
           outlen == MAC_BYTES;
}

static int all_zero(const uint8_t *b, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= b[i];
    return acc == 0;
}

/* One round: send out[p] to and receive in[p] from every peer. */
static dt_status_t exchange(ucx_ctx_t *c, uint8_t (*out)[32],
                            uint8_t (*in)[32], int kind, double deadline,
                            dt_request_t **reqs)
{
    size_t n = 0;
    dt_status_t st = DT_OK;
    for (int p = 0; p < c->size && st == DT_OK; p++) {
        if (p == c->rank)
            continue;
        st = ucx_post(c, 1, p, in[p], 32, DT_MEM_HOST, auth_tag(p, kind),
                      kind, &reqs[n]);
        if (st == DT_OK)
            n++;
        if (st == DT_OK)
            st = ucx_post(c, 0, p, out[p], 32, DT_MEM_HOST,
                          auth_tag(c->rank, kind), kind, &reqs[n]);
        if (st == DT_OK)
            n++;
    }
    dt_status_t wst = ucx_wait_until(c, reqs, n, deadline);
    if (st != DT_OK)
        return st;
    if (wst == DT_ERR_TIMEOUT) {
        char ranks[256] = "";
        size_t off = 0;
        for (int p = 0; p < c->size && off < 200; p++)
            if (p != c->rank && all_zero(in[p], 32))
                off += (size_t)snprintf(ranks + off, sizeof ranks - off,
                                        " %d", p);
        dt_error("ucx: rank %d: rank(s)%s did not answer the token "
                 "handshake within %.0f s: they are hung, did not start, or "
                 "cannot reach this host over the UCX transports chosen",
                 c->rank, ranks, c->timeout);
        return DT_ERR_PEER;
    }
    return wst;
}

dt_status_t ucx_authenticate(ucx_ctx_t *c, const uint8_t *token,
                             size_t token_len, double deadline)
{
    size_t n = (size_t)c->size;
    uint8_t(*mine)[32] = calloc(n, 32), (*theirs)[32] = calloc(n, 32);
    uint8_t(*ans)[32] = calloc(n, 32), (*got)[32] = calloc(n, 32);
    dt_request_t **reqs = calloc(2 * n, sizeof *reqs);
    dt_status_t st = DT_OK;
    if (!mine || !theirs || !ans || !got || !reqs) {
        st = DT_ERR_NOMEM;
        goto out;
    }
    for (size_t p = 0; p < n; p++)
        if (RAND_bytes(mine[p], NONCE_BYTES) != 1) {
            st = DT_ERR_INTERNAL;
            goto out;
        }
    if ((st = exchange(c, mine, theirs, KIND_NONCE, deadline, reqs)) != DT_OK)
        goto out;
    for (int p = 0; p < c->size; p++)
        if (p != c->rank &&
            !proof(token, token_len, theirs[p], c->rank, p, ans[p])) {
            st = DT_ERR_INTERNAL;
            goto out;
        }
    if ((st = exchange(c, ans, got, KIND_PROOF, deadline, reqs)) != DT_OK)
        goto out;
    for (int p = 0; p < c->size; p++) {
        uint8_t want[MAC_BYTES];
        if (p == c->rank)
            continue;
        if (!proof(token, token_len, mine[p], p, c->rank, want)) {
            st = DT_ERR_INTERNAL;
            goto out;
        }
        if (CRYPTO_memcmp(want, got[p], MAC_BYTES) != 0) {
            dt_error("ucx: rank %d: the UCX worker at rank %d's address did "
                     "not prove the job token: it belongs to another job or "
                     "its DT_JOB_TOKEN differs; restart the job with dtctl "
                     "run",
                     c->rank, p);
            st = DT_ERR_AUTH;
            goto out;
        }
    }
    dt_debug("ucx: rank %d: all %d peers proved the job token", c->rank,
             c->size - 1);
out:
    if (mine)
        OPENSSL_cleanse(mine, n * 32);
    free(mine);
    free(theirs);
    free(ans);
    free(got);
    free(reqs);
    return st;
}
