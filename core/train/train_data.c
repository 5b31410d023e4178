/* train_data.c — every worker must train on the same data set. Each
 * loads its own copy; a copy that differs (a staged copy out of date,
 * bad_images = skip leaving out another file, a class link that resolves
 * on one host only) would make the ranks disagree on shuffles, shards
 * and steps per epoch: a hang, or with equal counts labels silently
 * misaligned. So after loading, the workers compare what they loaded
 * with rank 0's copy (counts, shape, classes and a digest of the labels,
 * class and file names: no pixels, nothing measurable at start), and a
 * rank that differs says what it loaded, where, and fails. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dt/dt.h>
#include <dt/log.h>
#include <dt/store.h>
#include "ps_common.h"
#include "train.h"

/* What the ranks compare (plain words: broadcast as bytes). */
typedef struct data_rec {
    uint64_t train_n, test_n, nclasses, channels, height, width;
    uint64_t digest; /* both splits: labels, class and file names */
} data_rec_t;

#define STORE_KEY "dt/data/rank0" /* async: rank 0's record */
#define VERDICT_KEY "dt/data/agree/" /* async: + rank: "0" same, "1" not */

static data_rec_t rec_of(const dt_trainer_t *t)
{
    data_rec_t r = {
        .train_n = t->train.n, .test_n = t->test.n,
        .nclasses = (uint64_t)t->train.nclasses,
        .channels = (uint64_t)t->train.channels,
        .height = (uint64_t)t->train.height,
        .width = (uint64_t)t->train.width,
    };
    r.digest = dt_dataset_digest(&t->test, dt_dataset_digest(&t->train, 0));
    return r;
}

static int same_rec(const data_rec_t *a, const data_rec_t *b)
{
    return a->train_n == b->train_n && a->test_n == b->test_n &&
           a->nclasses == b->nclasses && a->channels == b->channels &&
           a->height == b->height && a->width == b->width &&
           a->digest == b->digest;
}

/* "60000 training and 10000 test samples (1x28x28, 10 classes)" */
static void describe(const data_rec_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRIu64 " training and %" PRIu64 " test samples "
             "(%" PRIu64 "x%" PRIu64 "x%" PRIu64 ", %" PRIu64 " classes)",
             r->train_n, r->test_n, r->channels, r->height, r->width,
             r->nclasses);
}

/* The directory this rank read ({host} expanded), for the message. */
static void data_dir(const dt_config_t *cfg, char *buf, size_t len)
{
    const char *p = dt_config_get(cfg, "data", "path");
    char *dir = NULL;
    if (!p || !*p) {
        snprintf(buf, len, "[data] path's default");
        return;
    }
    if (dt_data_dir_resolve(p, &dir) == DT_OK && dir)
        p = dir;
    snprintf(buf, len, "%s", p);
    free(dir);
}

/* The host as dtctl names it ({host} in paths), else this machine's. */
static void host_name(char *buf, size_t len)
{
    const char *h = getenv("DT_HOST");
    if (h && *h)
        snprintf(buf, len, "%s", h);
    else if (gethostname(buf, len) != 0)
        snprintf(buf, len, "?");
    buf[len - 1] = '\0';
}

/* This rank differs from rank 0: what it loaded, where, and what to do. */
static void report(const dt_config_t *cfg, int rank, const data_rec_t *me,
                   const data_rec_t *r0)
{
    char host[256], dir[4096], mine[160], theirs[200];
    host_name(host, sizeof host);
    data_dir(cfg, dir, sizeof dir);
    describe(me, mine, sizeof mine);
    data_rec_t counts = *me;
    counts.digest = r0->digest;
    /* Equal counts: only the digest tells (labels silently misaligned). */
    if (same_rec(&counts, r0))
        snprintf(theirs, sizeof theirs, "as many as rank 0 but other "
                 "labels, class or file names (digest %016" PRIx64 ", rank "
                 "0's %016" PRIx64 ")", me->digest, r0->digest);
    else {
        char r0s[160];
        describe(r0, r0s, sizeof r0s);
        snprintf(theirs, sizeof theirs, "rank 0 %s", r0s);
    }
    dt_error("rank %d (host %s) loaded %s from %s, %s: every worker must see "
             "the same data set; compare this host's copy with rank 0's (a "
             "staged copy that differs? bad_images = skip leaving out "
             "different files? a class folder or link on one host only?)",
             rank, host, mine, dir, theirs);
}

/* sync: rank 0's record to every rank, each compares, and all learn how
 * many differ (collective over the workers, who are all the ranks). */
static dt_status_t agree_sync(const dt_config_t *cfg, const dt_trainer_t *t,
                              const data_rec_t *me)
{
    data_rec_t r0 = *me;
    DT_CHECK(dt_trainer_broadcast_host(&r0, sizeof r0));
    int32_t differ = !same_rec(me, &r0);
    if (differ)
        report(cfg, t->rank, me, &r0);
    DT_CHECK(dt_allreduce(&differ, &differ, 1, DT_INT32, DT_SUM));
    if (!differ)
        return DT_OK;
    if (t->rank == 0) {
        char host[256], dir[4096], mine[160];
        host_name(host, sizeof host);
        data_dir(cfg, dir, sizeof dir);
        describe(me, mine, sizeof mine);
        dt_error("%d of %d workers loaded a data set other than rank 0's "
                 "(host %s: %s from %s; each of them names itself): "
                 "stopping before the first step", (int)differ, t->world,
                 host, mine, dir);
    }
    return DT_ERR_INVALID;
}

/* async: every other worker's verdict (it compared its record with rank
 * 0's), so that no step is taken on a data set one of them refused, and
 * no model allocated before every worker measured its host's memory (it
 * did so before its verdict: dt_trainer_measure_memory). */
static dt_status_t await_verdicts(dt_store_t *s, const dt_trainer_t *t,
                                  double timeout)
{
    int differ = 0;
    for (int r = 1; r < t->world; r++) {
        if (r == t->rank)
            continue;
        char key[64];
        snprintf(key, sizeof key, VERDICT_KEY "%d", r);
        void *v = NULL;
        size_t len = 0;
        dt_status_t st;
        while ((st = dt_store_get(s, key, timeout, &v, &len)) ==
               DT_ERR_TIMEOUT)
            dt_debug("rank %d: waiting for rank %d to compare its data "
                     "set", t->rank, r);
        DT_CHECK(st);
        differ += len == 1 && ((const char *)v)[0] == '1';
        free(v);
    }
    if (!differ)
        return DT_OK;
    if (t->rank == 0) /* said once */
        dt_error("%d of %d workers loaded a data set other than rank 0's "
                 "(each of them names itself): stopping before the first "
                 "step", differ, t->world);
    else
        dt_debug("rank %d: %d other worker%s loaded a data set other than "
                 "rank 0's: stopping", t->rank, differ,
                 differ == 1 ? "" : "s");
    return DT_ERR_INVALID;
}

/* async: the servers take no part in collectives (and load no data), so
 * rank 0 leaves its record in the job's store, every other worker
 * compares its own with it and leaves its verdict, and every worker goes
 * on only once all have (a worker that differs fails; dtctl stops the
 * job): as in sync mode, none allocates its model before every worker
 * has measured the memory they share. The wait is as long as the slowest
 * load: the servers hold the workers until rank 0 has started anyway. */
static dt_status_t agree_async(const dt_config_t *cfg, const dt_trainer_t *t,
                               const data_rec_t *me)
{
    ps_live_t live = ps_live_from(cfg);
    dt_store_t *s = ps_store_open(live.timeout);
    if (!s) {
        dt_warn("rank %d: no job store to compare its data set with rank "
                "0's (started without dtctl run?): not compared", t->rank);
        return DT_OK;
    }
    dt_status_t st = DT_OK;
    void *v = NULL;
    size_t len = 0;
    if (t->rank == 0) {
        st = dt_store_set(s, STORE_KEY, me, sizeof *me);
        if (st == DT_OK)
            st = await_verdicts(s, t, live.timeout);
    } else {
        while ((st = dt_store_get(s, STORE_KEY, live.timeout, &v, &len)) ==
               DT_ERR_TIMEOUT)
            dt_debug("rank %d: waiting for rank 0 to load its data set",
                     t->rank);
        if (st == DT_OK && len != sizeof *me)
            dt_warn("rank %d: rank 0's data set record in the store has %zu "
                    "bytes, not %zu (another dt version?): not compared",
                    t->rank, len, sizeof *me);
        else if (st == DT_OK && !same_rec(me, v)) {
            report(cfg, t->rank, me, v);
            st = DT_ERR_INVALID;
        }
        if (st == DT_OK || st == DT_ERR_INVALID) {
            char key[64];
            snprintf(key, sizeof key, VERDICT_KEY "%d", t->rank);
            dt_status_t vs = dt_store_set(s, key, st == DT_OK ? "0" : "1", 1);
            if (st == DT_OK)
                st = vs;
        }
        if (st == DT_OK) {
            dt_trainer_memory_test_held(t);
            st = await_verdicts(s, t, live.timeout);
        }
    }
    free(v);
    dt_store_close(s);
    return st;
}

dt_status_t dt_trainer_agree_data(const dt_config_t *cfg,
                                  const dt_trainer_t *t)
{
    if (t->world <= 1)
        return DT_OK;
    data_rec_t me = rec_of(t);
    return t->async ? agree_async(cfg, t, &me) : agree_sync(cfg, t, &me);
}
