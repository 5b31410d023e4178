/* test_mpi_command.c — the mpirun command line (plugins/launcher/mpi/
 * mpi_command.c): --host lists each host with its slots, an IPv6 address
 * in brackets (without them mpirun reads "fd00::7:2" as another address
 * with one slot); SIGUSR1 and SIGUSR2 forwarded (the relays of dtctl's
 * stop and of Ctrl-Z) unless extra_args set that parameter. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../plugins/launcher/mpi/mpi_command.h"

/* The argument after --host in the command line for hosts. */
static const char *host_arg(strv_t *argv, dt_host_t *hosts, size_t n)
{
    dt_hostlist_t list = {hosts, n};
    const char *prog[] = {"true", NULL};
    dt_launch_spec_t spec = {.hosts = &list, .np = 1, .argv = prog};
    mpi_conf_t conf = {.mpirun = "mpirun"};
    assert_int_equal(mpi_build_argv(&conf, &spec, NULL, "exec \"$@\"", argv),
                     DT_OK);
    for (size_t i = 0; i + 1 < argv->n; i++)
        if (strcmp(argv->v[i], "--host") == 0)
            return argv->v[i + 1];
    fail_msg("no --host in the mpirun command line");
    return NULL;
}

static void test_hosts_with_slots(void **state)
{
    (void)state;
    dt_host_t hosts[] = {{.name = "node1", .slots = 2},
                         {.name = "10.0.0.5", .slots = 4}};
    strv_t argv = {0};
    assert_string_equal(host_arg(&argv, hosts, 2), "node1:2,10.0.0.5:4");
    strv_free(&argv);
}

static void test_ipv6_in_brackets(void **state)
{
    (void)state;
    dt_host_t hosts[] = {{.name = "fd00::7", .slots = 2},
                         {.name = "node2", .slots = 1},
                         {.name = "fe80::1%eth0", .slots = 3}};
    strv_t argv = {0};
    assert_string_equal(host_arg(&argv, hosts, 3),
                        "[fd00::7]:2,node2:1,[fe80::1%eth0]:3");
    strv_free(&argv);
}

/* How often "--mca ess_base_forward_signals" is in the command line; its
 * (last) value in *value. */
static int forward_params(char **extra, char *value, size_t len)
{
    dt_host_t host = {.name = "node1", .slots = 1};
    dt_hostlist_t list = {&host, 1};
    const char *prog[] = {"true", NULL};
    dt_launch_spec_t spec = {.hosts = &list, .np = 1, .argv = prog};
    mpi_conf_t conf = {.mpirun = "mpirun", .extra_args = extra};
    strv_t argv = {0};
    assert_int_equal(mpi_build_argv(&conf, &spec, NULL, "exec \"$@\"", &argv),
                     DT_OK);
    int n = 0;
    for (size_t i = 1; i + 1 < argv.n; i++)
        if (strcmp(argv.v[i - 1], "--mca") == 0 &&
            strcmp(argv.v[i], "ess_base_forward_signals") == 0) {
            snprintf(value, len, "%s", argv.v[i + 1]);
            n++;
        }
    strv_free(&argv);
    return n;
}

/* mpirun forwards dtctl's stop (SIGUSR1) and Ctrl-Z (SIGUSR2) even where
 * the user's MCA settings say "none" (it died of them then); a parameter
 * the user gives in extra_args is not given twice (mpirun refuses that). */
static void test_forward_signals(void **state)
{
    (void)state;
    char value[64] = "";
    assert_int_equal(forward_params(NULL, value, sizeof value), 1);
    assert_string_equal(value, "SIGUSR1,SIGUSR2");
    char *own[] = {"--mca", "ess_base_forward_signals", "SIGHUP,SIGUSR2",
                   NULL};
    assert_int_equal(forward_params(own, value, sizeof value), 1);
    assert_string_equal(value, "SIGHUP,SIGUSR2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_with_slots),
        cmocka_unit_test(test_ipv6_in_brackets),
        cmocka_unit_test(test_forward_signals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
