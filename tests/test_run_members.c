/* test_run_members.c — elastic membership (core/cli/run_members.c): a
 * root failure counts against the host its rank was placed on, whatever
 * name the launcher reported (mpirun's "on node H" is the node's own
 * name, not the host list's spelling); a name that matches no host is
 * said, not silently dropped. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/run_members.h"
#include "stderr_capture.h"

typedef struct fixture {
    dt_config_t *cfg;
    dt_hostlist_t all;
    run_members_t mb;
} fixture_t;

/* Hosts 10.0.0.1:2, 10.0.0.2:2; min_np 1, host_failures 1. */
static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(dt_config_new(&f->cfg), DT_OK);
    assert_int_equal(dt_config_set(f->cfg, "cluster", "min_np", "1",
                                   DT_SRC_CLI, "--min-np"), DT_OK);
    assert_int_equal(dt_config_set(f->cfg, "cluster", "host_failures", "1",
                                   DT_SRC_CLI, "--set"), DT_OK);
    assert_int_equal(dt_hosts_parse("10.0.0.1:2,10.0.0.2:2", &f->all),
                     DT_OK);
    assert_int_equal(run_members_init(f->cfg, &f->all, 4, 3, &f->mb), DT_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    run_members_free(&f->mb);
    dt_hostlist_free(&f->all);
    dt_config_free(f->cfg);
    free(f);
    return 0;
}

/* The attempt's hosts and placement, as cmd_run.c makes them. */
static int select_hosts(fixture_t *f, int attempt, dt_placement_t **place)
{
    /* No run_on_host: every host counts as reachable. */
    static const dt_launcher_ops_t ops = {.size = sizeof ops};
    const dt_hostlist_t *hosts;
    int np;
    assert_int_equal(run_members_select(&f->mb, attempt, 3, &ops, NULL,
                                        &hosts, &np), DT_OK);
    assert_int_equal(dt_place_ranks(hosts, np, place), DT_OK);
    return np;
}

static void fail_rank(fixture_t *f, int rank, const char *host,
                      const dt_placement_t *place, int np)
{
    supervise_result_t res = {.root_rank = rank};
    snprintf(res.root_host, sizeof res.root_host, "%s", host);
    snprintf(res.cause, sizeof res.cause, "rank %d on %s was killed", rank,
             host);
    run_members_failed(&f->mb, &res, place, np);
}

/* Rank 2 runs on 10.0.0.2; mpirun names the node "node2". */
static void test_failure_counts_by_placement(void **state)
{
    fixture_t *f = *state;
    dt_placement_t *place = NULL;
    int np = select_hosts(f, 0, &place);
    assert_int_equal(np, 4);
    fail_rank(f, 2, "node2", place, np);
    free(place);
    assert_false(f->mb.m[0].excluded);
    assert_true(f->mb.m[1].excluded);
    /* The next attempt runs without it, on 10.0.0.1's 2 slots. */
    capture_t c;
    capture_begin(&c);
    np = select_hosts(f, 1, &place);
    char *err = capture_end(&c);
    assert_int_equal(np, 2);
    assert_non_null(strstr(err, "host 10.0.0.2 excluded (1 failure"));
    free(err);
    /* Rank 1 of that attempt is on 10.0.0.1 (index 0 of the smaller
     * list, host 0 of all). */
    fail_rank(f, 1, "node1", place, np);
    free(place);
    assert_true(f->mb.m[0].excluded);
}

/* Without a rank: the launcher's name, whatever its case. */
static void test_failure_by_name(void **state)
{
    fixture_t *f = *state;
    dt_placement_t *place = NULL;
    int np = select_hosts(f, 0, &place);
    fail_rank(f, -1, "10.0.0.1", place, np);
    free(place);
    assert_true(f->mb.m[0].excluded);
    assert_false(f->mb.m[1].excluded);
}

/* No rank and a name not in the list: said, not silently ignored. */
static void test_unknown_host_warns(void **state)
{
    fixture_t *f = *state;
    dt_placement_t *place = NULL;
    int np = select_hosts(f, 0, &place);
    capture_t c;
    capture_begin(&c);
    fail_rank(f, -1, "node9.example.com", place, np);
    char *err = capture_end(&c);
    free(place);
    assert_non_null(strstr(err, "on host 'node9.example.com', which is not "
                                "in the host list"));
    assert_false(f->mb.m[0].excluded);
    assert_false(f->mb.m[1].excluded);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failure_counts_by_placement,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_by_name, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_host_warns, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
