/* store_version.c — who this process is in the store's handshake (dt's
 * version and protocol, rank, host, program, libdt), and the messages that
 * say two dt installations met: a job whose hosts run different builds
 * must stop at the first contact, naming both, never train on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include <dt/log.h>
#include "store_proto.h"

#define INSTALL_SAME                                                         \
    "install the same dt on every host (and rebuild programs that link "    \
    "libdt against it), then run the job again"

/* The library this code is in: the one that speaks the protocol. */
static void libdt_path(char *out, size_t len)
{
    Dl_info info;
    if (dladdr((void *)store_hello_self, &info) && info.dli_fname)
        snprintf(out, len, "%s", info.dli_fname);
    else
        snprintf(out, len, "?");
}

void store_hello_self(store_hello_t *h)
{
    memset(h, 0, sizeof *h);
    h->protocol = DT_PROTOCOL_VERSION;
    const char *r = getenv("DT_RANK");
    char *end;
    long v = r && *r ? strtol(r, &end, 10) : -1;
    h->rank = r && *r && !*end && v >= 0 && v < 1L << 30 ? (int)v : -1;
    snprintf(h->version, sizeof h->version, "%s", PACKAGE_VERSION);
    if (gethostname(h->host, sizeof h->host) != 0)
        snprintf(h->host, sizeof h->host, "?");
    h->host[STORE_TEXT_MAX] = '\0';
    ssize_t n = readlink("/proc/self/exe", h->program, STORE_TEXT_MAX);
    if (n <= 0)
        snprintf(h->program, sizeof h->program, "?");
    else
        h->program[n] = '\0';
    libdt_path(h->libdt, sizeof h->libdt);
}

int store_test_protocol(void)
{
    const char *t = getenv("DT_TEST_PROTO_VERSION");
    if (!t || !*t)
        return DT_PROTOCOL_VERSION;
    char *end;
    long v = strtol(t, &end, 10);
    if (*end || v < 0 || v > 65535) {
        dt_warn("DT_TEST_PROTO_VERSION='%s' is not 0-65535 (a test hook); "
                "ignored", t);
        return DT_PROTOCOL_VERSION;
    }
    return (int)v;
}

void store_refusal_text(const store_hello_t *h, const char *addr, char *buf,
                        size_t len)
{
    store_hello_t me;
    store_hello_self(&me);
    if (!h) {
        snprintf(buf, len,
                 "refused a worker at %s: it has this job's token but runs "
                 "an older dt, from before protocol versions (it sends "
                 "none, nor its rank; its own lines blame the job token), "
                 "while this dtctl runs dt %s of protocol %d (%s); " INSTALL_SAME,
                 addr, me.version, DT_PROTOCOL_VERSION, me.program);
        return;
    }
    char who[64] = "a client";
    if (h->rank >= 0)
        snprintf(who, sizeof who, "rank %d", h->rank);
    snprintf(buf, len,
             "refused %s on %s (%s): it runs dt %s of protocol %u (program "
             "%s, libdt %s), while this dtctl runs dt %s of protocol %d "
             "(%s); %s",
             who, h->host, addr, h->version, h->protocol, h->program,
             h->libdt, me.version, DT_PROTOCOL_VERSION, me.program,
             h->protocol > DT_PROTOCOL_VERSION
                 ? "the worker's dt is newer: " INSTALL_SAME
                 : "the worker's dt is older: " INSTALL_SAME);
}

void store_refused_text(const char *where, const uint8_t *b, size_t len,
                        int advertised, char *buf, size_t blen)
{
    store_hello_t me;
    char version[STORE_TEXT_MAX + 1] = "?", program[STORE_TEXT_MAX + 1] = "?";
    size_t off = 3;
    unsigned theirs = len >= 3 ? store_get_u16(b + 1) : 0;
    if (len < 3 || store_text_get(b, len, &off, version) ||
        store_text_get(b, len, &off, program))
        snprintf(version, sizeof version, "?");
    store_hello_self(&me);
    snprintf(buf, blen,
             "rendezvous store at %s refused this worker: dtctl there runs "
             "dt %s of protocol %u (%s), this worker dt %s of protocol %d "
             "(program %s, libdt %s); " INSTALL_SAME,
             where, version, theirs, program, me.version, advertised,
             me.program, me.libdt);
}

void store_closed_at_hello_text(const char *where, int advertised,
                                char *buf, size_t blen)
{
    store_hello_t me;
    store_hello_self(&me);
    snprintf(buf, blen,
             "rendezvous store at %s closed the connection at this worker's "
             "greeting: either dtctl there is an older dt, from before "
             "protocol versions, which takes no other greeting, or it "
             "dropped this connection for a reason its log gives (too many "
             "connections at once, the job stopping) (this worker: dt %s of "
             "protocol %d, program %s, libdt %s; an older dtctl's log names "
             "the connection 'not a dt store client' or 'too large'); when "
             "it is the version: " INSTALL_SAME,
             where, me.version, advertised, me.program, me.libdt);
}
