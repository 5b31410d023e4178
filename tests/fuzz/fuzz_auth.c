/* fuzz_auth.c — a transport's peer handshake (dt/auth.h) against any
 * bytes from the other end: the accepting side (first input byte even) or
 * the connecting side (odd). A forged or malformed peer is refused, never
 * accepted, and the handshake ends within its timeout. */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dt/auth.h>
#include "fuzz.h"

static const uint8_t token[32] = "fuzz-token-fuzz-token-fuzz-toke";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 0;
    /* The peer's bytes wait in the socket; then it hangs up. */
    size_t off = 0;
    while (off < size - 1) {
        ssize_t n = send(sv[1], data + 1 + off, size - 1 - off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(sv[1], SHUT_WR);
    dt_auth_t a = {.proto = "fuzz", .token = token, .token_len = sizeof token,
                   .rank = 1, .size = 4, .timeout = 0.2};
    dt_status_t st;
    if (data[0] % 2 == 0) {
        int peer = -1;
        uint32_t channel = 0;
        st = dt_auth_accept(sv[0], &a, 2, 4, 2, &peer, &channel);
        /* Nobody here holds the token's proofs: acceptance is a bug. */
        if (st == DT_OK)
            abort();
    } else {
        st = dt_auth_connect(sv[0], &a, 0, 1);
        if (st == DT_OK)
            abort();
    }
    close(sv[0]);
    close(sv[1]);
    return 0;
}
