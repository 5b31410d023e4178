/* test_cli_config.c — dtctl's configuration setup (core/cli/config_setup.c):
 * which cluster file is read, options as the top layer, and the job's host
 * list and worker count. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "stderr_capture.h"

static char *ini_file(char *buf, size_t len, const char *dir,
                      const char *text)
{
    snprintf(buf, len, "%s/dt-test-cli-XXXXXX.ini", dir ? dir : "/tmp");
    char *p = write_temp(buf, 4, text);
    assert_non_null(p);
    return p;
}

static int clear_env(void **state)
{
    (void)state;
    unsetenv("DT_CONFIG");
    unsetenv("DT_CLUSTER_NP");
    unsetenv("DT_TRANSPORT");
    return 0;
}

static void test_builtin_only(void **state)
{
    (void)state;
    char dir[] = "/tmp/dt-test-cwd-XXXXXX";
    char old[4096];
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(dir), 0);
    dt_cli_t cli = {.np = -1};
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "local");
    dt_config_free(cfg);

    /* ./conf/cluster.ini is picked up when it exists. */
    assert_int_equal(mkdir("conf", 0700), 0);
    FILE *f = fopen("conf/cluster.ini", "w");
    assert_non_null(f);
    fputs("[cluster]\nlauncher = ssh\n", f);
    fclose(f);
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "ssh");
    const char *where;
    dt_config_origin(cfg, "cluster", "launcher", NULL, &where);
    assert_string_equal(where, "conf/cluster.ini:2");
    dt_config_free(cfg);

    /* $DT_CONFIG beats ./conf/cluster.ini, --config beats both. */
    char envfile[96], optfile[96];
    ini_file(envfile, sizeof envfile, NULL, "[cluster]\nlauncher = mpi\n");
    ini_file(optfile, sizeof optfile, NULL, "[cluster]\nlauncher = slurm\n");
    setenv("DT_CONFIG", envfile, 1);
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "mpi");
    dt_config_free(cfg);
    cli.config = optfile;
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "slurm");
    dt_config_free(cfg);
    unsetenv("DT_CONFIG");

    unlink("conf/cluster.ini");
    rmdir("conf");
    assert_int_equal(chdir(old), 0);
    rmdir(dir);
    unlink(envfile);
    unlink(optfile);
}

static void test_missing_files(void **state)
{
    (void)state;
    dt_cli_t cli = {.np = -1, .config = "/nonexistent/cluster.ini"};
    dt_config_t *cfg = NULL;
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_cli_load_config(&cli, NULL, &cfg);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_null(cfg);
    assert_non_null(strstr(err, "/nonexistent/cluster.ini"));
    assert_non_null(strstr(err, "--config"));
    free(err);

    cli.config = NULL;
    capture_begin(&c);
    st = dt_cli_load_config(&cli, "/nonexistent/job.ini", &cfg);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "job file /nonexistent/job.ini does not "
                                "exist"));
    free(err);
}

static void test_options_on_top(void **state)
{
    (void)state;
    char job[96];
    ini_file(job, sizeof job, NULL,
             "[cluster]\nnp = 3\ntransport = nccl\nhosts = x:4\n");
    setenv("DT_CLUSTER_NP", "2", 1);
    setenv("DT_TRANSPORT", "ucx", 1);
    char *sets[] = {"train.epochs=7", "cluster.np=6"};
    dt_cli_t cli = {.np = -1, .sets = sets, .nsets = 2,
                    .hosts = "a:2,b:4", .launcher = "ssh"};
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_cli_load_config(&cli, job, &cfg), DT_OK);
    const char *where;
    dt_config_source_t src;
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "6");
    dt_config_origin(cfg, "cluster", "np", &src, &where);
    assert_int_equal(src, DT_SRC_CLI);
    assert_string_equal(where, "--set");
    assert_string_equal(dt_config_get(cfg, "cluster", "transport"), "ucx");
    assert_string_equal(dt_config_get(cfg, "cluster", "hosts"), "a:2,b:4");
    dt_config_origin(cfg, "cluster", "hosts", NULL, &where);
    assert_string_equal(where, "-H/--hosts");
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "ssh");
    assert_string_equal(dt_config_get(cfg, "train", "epochs"), "7");
    dt_config_free(cfg);

    /* -n beats the environment too. */
    cli.nsets = 0;
    cli.np = 5;
    assert_int_equal(dt_cli_load_config(&cli, job, &cfg), DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "5");
    dt_config_free(cfg);
    unlink(job);
}

static void test_bad_values_fail(void **state)
{
    (void)state;
    char job[96], expect[160];
    ini_file(job, sizeof job, NULL, "[train]\nepochs = 2\nepoch = 3\n");
    char *sets[] = {"cluster.timeout=soon", "broken"};
    dt_cli_t cli = {.np = -1, .sets = sets, .nsets = 2};
    dt_config_t *cfg = NULL;
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_cli_load_config(&cli, job, &cfg);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    snprintf(expect, sizeof expect, "%s:3: unknown key 'epoch' in [train]",
             job);
    assert_non_null(strstr(err, expect));
    assert_non_null(strstr(err, "--set 'broken'"));
    assert_non_null(strstr(err, "option --set: [cluster] timeout = 'soon' "
                                "is not a duration"));
    free(err);
    unlink(job);
}

static void test_job_hosts(void **state)
{
    (void)state;
    dt_cli_t cli = {.np = -1};
    dt_config_t *cfg = NULL;
    dt_hostlist_t hosts;
    int np = 0;

    /* Nothing given: localhost with np slots. */
    cli.np = 3;
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_int_equal(dt_cli_job_hosts(cfg, &hosts, &np), DT_OK);
    assert_int_equal(np, 3);
    assert_int_equal(hosts.n, 1);
    assert_string_equal(hosts.hosts[0].name, "localhost");
    assert_int_equal(hosts.hosts[0].slots, 3);
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);

    /* Hosts without np: every slot. */
    cli.np = -1;
    cli.hosts = "a:2,b:4";
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_int_equal(dt_cli_job_hosts(cfg, &hosts, &np), DT_OK);
    assert_int_equal(np, 6);
    assert_int_equal(hosts.n, 2);
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);

    /* Hosts and np: np as given (placement checks it fits). */
    cli.np = 2;
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    assert_int_equal(dt_cli_job_hosts(cfg, &hosts, &np), DT_OK);
    assert_int_equal(np, 2);
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);
}

static void test_job_hostfile_relative_to_ini(void **state)
{
    (void)state;
    char dir[] = "/tmp/dt-test-hf-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char hf[128], job[128];
    snprintf(hf, sizeof hf, "%s/hosts", dir);
    FILE *f = fopen(hf, "w");
    assert_non_null(f);
    fputs("n1 slots=2\nn2:3\n", f);
    fclose(f);
    ini_file(job, sizeof job, dir, "[cluster]\nhostfile = hosts\n");
    dt_cli_t cli = {.np = -1};
    dt_config_t *cfg = NULL;
    dt_hostlist_t hosts;
    int np = 0;
    assert_int_equal(dt_cli_load_config(&cli, job, &cfg), DT_OK);
    assert_int_equal(dt_cli_job_hosts(cfg, &hosts, &np), DT_OK);
    assert_int_equal(np, 5);
    assert_int_equal(hosts.n, 2);
    assert_string_equal(hosts.hosts[1].name, "n2");
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);

    /* -H on the command line beats the job file's hostfile. */
    cli.hosts = "z:1";
    assert_int_equal(dt_cli_load_config(&cli, job, &cfg), DT_OK);
    assert_int_equal(dt_cli_job_hosts(cfg, &hosts, &np), DT_OK);
    assert_int_equal(hosts.n, 1);
    assert_string_equal(hosts.hosts[0].name, "z");
    dt_hostlist_free(&hosts);
    dt_config_free(cfg);

    /* Both from the same layer: ambiguous, an error. */
    cli.hostfile = hf;
    capture_t c;
    assert_int_equal(dt_cli_load_config(&cli, job, &cfg), DT_OK);
    capture_begin(&c);
    dt_status_t st = dt_cli_job_hosts(cfg, &hosts, &np);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "both hosts (-H/--hosts) and hostfile "
                                "(--hostfile) are set"));
    free(err);
    dt_config_free(cfg);

    /* A bad -H names where it came from. */
    cli.hostfile = NULL;
    cli.hosts = "a:0";
    assert_int_equal(dt_cli_load_config(&cli, NULL, &cfg), DT_OK);
    capture_begin(&c);
    st = dt_cli_job_hosts(cfg, &hosts, &np);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "'a:0' has 0 slots"));
    assert_non_null(strstr(err, "hosts is set by -H/--hosts"));
    free(err);
    dt_config_free(cfg);

    unlink(hf);
    unlink(job);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_builtin_only, clear_env,
                                        clear_env),
        cmocka_unit_test_setup_teardown(test_missing_files, clear_env,
                                        clear_env),
        cmocka_unit_test_setup_teardown(test_options_on_top, clear_env,
                                        clear_env),
        cmocka_unit_test_setup_teardown(test_bad_values_fail, clear_env,
                                        clear_env),
        cmocka_unit_test_setup_teardown(test_job_hosts, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_job_hostfile_relative_to_ini,
                                        clear_env, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
