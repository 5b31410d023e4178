/* coll_barrier.c — the dissemination barrier: ceil(log2(n)) rounds of
 * empty messages; in round k rank r signals r + 2^k and waits for r - 2^k.
 * No rank leaves before every rank has entered. */
#include <dt/log.h>
#include "coll.h"
#include "coll_host.h"
#include "coll_internal.h"
#include "transport_call.h"

dt_status_t dt_coll_barrier(dt_comm_t *c)
{
    dt_coll_begin(c, DT_FLOAT32, DT_SUM, 0);
    if (DT_OPS_HAS(c->ops, dt_transport_ops_t, barrier)) {
        dt_status_t st = dt_transport_barrier(c);
        if (st != DT_DECLINED)
            return st;
    }
    if (dt_coll_host_whole(c))
        return dt_shm_barrier(c->host->shm);
    const int n = c->size, r = c->rank;
    for (int d = 1; d < n; d <<= 1) {
        char none = 0;
        DT_CHECK(dt_coll_sendrecv(c, (r + d) % n, &none, 0,
                                  dt_mod(r - d, n), &none, 0,
                                  DT_TAG_BARRIER));
    }
    return DT_OK;
}
