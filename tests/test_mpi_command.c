/* test_mpi_command.c — the mpirun command line (plugins/launcher/mpi/
 * mpi_command.c): --host lists each host with its slots, an IPv6 address
 * in brackets (without them mpirun reads "fd00::7:2" as another address
 * with one slot). */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_with_slots),
        cmocka_unit_test(test_ipv6_in_brackets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
