/* test_config.c — the layered configuration: typed parsers, precedence,
 * origins, environment mapping, --set syntax and every error path. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dt/config.h>
#include "config/config_internal.h"
#include "stderr_capture.h"

/* A temporary ini file with the given text; path in buf (unlinked by the
 * caller). */
static char *ini_file(char *buf, size_t len, const char *text)
{
    snprintf(buf, len, "/tmp/dt-test-config-XXXXXX.ini");
    char *p = write_temp(buf, 4, text);
    assert_non_null(p);
    return p;
}

static dt_config_t *new_config(void)
{
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_non_null(cfg);
    return cfg;
}

/* ---- typed parsers -------------------------------------------------------- */

static void test_parse_int(void **state)
{
    (void)state;
    long long v;
    assert_int_equal(dt_parse_int("42", &v), DT_OK);
    assert_int_equal(v, 42);
    assert_int_equal(dt_parse_int("-7", &v), DT_OK);
    assert_int_equal(v, -7);
    assert_int_equal(dt_parse_int(" 12 ", &v), DT_OK);
    assert_int_equal(v, 12);
    assert_int_equal(dt_parse_int("9223372036854775807", &v), DT_OK);
    assert_true(v == INT64_MAX);
    assert_int_equal(dt_parse_int("9223372036854775808", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_int("-9223372036854775809", &v),
                     DT_ERR_INVALID);
    assert_int_equal(dt_parse_int("abc", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_int("12abc", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_int("0x10", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_int("1.5", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_int("", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_int(NULL, &v), DT_ERR_INVALID);
}

static void test_parse_bool(void **state)
{
    (void)state;
    const char *yes[] = {"yes", "true", "on", "1", "YES", "True", "On"};
    const char *no[] = {"no", "false", "off", "0", "NO", "False", "OFF"};
    const char *bad[] = {"", "y", "2", "maybe", "truee", "-1"};
    bool b;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        b = false;
        assert_int_equal(dt_parse_bool(yes[i], &b), DT_OK);
        assert_true(b);
        b = true;
        assert_int_equal(dt_parse_bool(no[i], &b), DT_OK);
        assert_false(b);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(dt_parse_bool(bad[i], &b), DT_ERR_INVALID);
}

static void test_parse_size(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(dt_parse_size("0", &v), DT_OK);
    assert_true(v == 0);
    assert_int_equal(dt_parse_size("512", &v), DT_OK);
    assert_true(v == 512);
    assert_int_equal(dt_parse_size("4K", &v), DT_OK);
    assert_true(v == 4096);
    assert_int_equal(dt_parse_size("25M", &v), DT_OK);
    assert_true(v == 25ull << 20);
    assert_int_equal(dt_parse_size("2g", &v), DT_OK);
    assert_true(v == 2ull << 30);
    assert_int_equal(dt_parse_size("3T", &v), DT_OK);
    assert_true(v == 3ull << 40);
    assert_int_equal(dt_parse_size("8MiB", &v), DT_OK);
    assert_true(v == 8ull << 20);
    assert_int_equal(dt_parse_size("8MB", &v), DT_OK);
    assert_true(v == 8ull << 20);
    assert_int_equal(dt_parse_size("16 K", &v), DT_OK);
    assert_true(v == 16384);
    assert_int_equal(dt_parse_size("18446744073709551615", &v), DT_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(dt_parse_size("18446744073709551616", &v),
                     DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("16777216T", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("16777215T", &v), DT_OK);
    assert_int_equal(dt_parse_size("-1", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("-1M", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("1.5G", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("5X", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("M", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_size("", &v), DT_ERR_INVALID);
}

static void test_parse_duration(void **state)
{
    (void)state;
    double s;
    assert_int_equal(dt_parse_duration("500ms", &s), DT_OK);
    assert_true(s > 0.4999 && s < 0.5001);
    assert_int_equal(dt_parse_duration("500ns", &s), DT_OK);
    assert_true(s > 499e-9 && s < 501e-9);
    assert_int_equal(dt_parse_duration("30us", &s), DT_OK);
    assert_true(s > 29e-6 && s < 31e-6);
    assert_int_equal(dt_parse_duration("30s", &s), DT_OK);
    assert_true(s == 30.0);
    assert_int_equal(dt_parse_duration("5m", &s), DT_OK);
    assert_true(s == 300.0);
    assert_int_equal(dt_parse_duration("2h", &s), DT_OK);
    assert_true(s == 7200.0);
    assert_int_equal(dt_parse_duration("45", &s), DT_OK);
    assert_true(s == 45.0);
    assert_int_equal(dt_parse_duration("1.5", &s), DT_OK);
    assert_true(s == 1.5);
    assert_int_equal(dt_parse_duration("0.25s", &s), DT_OK);
    assert_true(s == 0.25);
    assert_int_equal(dt_parse_duration("10 s", &s), DT_OK);
    assert_true(s == 10.0);
    assert_int_equal(dt_parse_duration("-5s", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("5x", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("5sec", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("inf", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("nan", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("0x10", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("1e999", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("s", &s), DT_ERR_INVALID);
    assert_int_equal(dt_parse_duration("", &s), DT_ERR_INVALID);
}

static void test_parse_double(void **state)
{
    (void)state;
    double v = -1;
    assert_int_equal(dt_parse_double("0.05", &v), DT_OK);
    assert_true(v == 0.05);
    assert_int_equal(dt_parse_double("-1", &v), DT_OK);
    assert_true(v == -1.0);
    assert_int_equal(dt_parse_double("1e-4", &v), DT_OK);
    assert_true(v == 1e-4);
    assert_int_equal(dt_parse_double(" .5 ", &v), DT_OK);
    assert_true(v == 0.5);
    assert_int_equal(dt_parse_double("+3", &v), DT_OK);
    assert_true(v == 3.0);
    v = 7;
    assert_int_equal(dt_parse_double("", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("  ", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("nan", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("inf", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("-inf", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("0x10", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("1e999", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("1.5x", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("1,5", &v), DT_ERR_INVALID);
    assert_int_equal(dt_parse_double("e", &v), DT_ERR_INVALID);
    assert_true(v == 7.0); /* untouched on error */
}

/* The variable of a key: what the workers read and what dtctl forwards
 * (core/cli/run_rendezvous.c) are the same name. */
static void test_env_name(void **state)
{
    (void)state;
    char n[128];
    dt_config_env_name("transport.my-net", "timeout", n, sizeof n);
    assert_string_equal(n, "DT_TRANSPORT_MY_NET_TIMEOUT");
    dt_config_env_name("cluster", "np", n, sizeof n);
    assert_string_equal(n, "DT_CLUSTER_NP");
    dt_config_env_name("optimizer.sgd", NULL, n, sizeof n);
    assert_string_equal(n, "DT_OPTIMIZER_SGD");
    dt_config_env_name("train", "max_steps", n, 8);
    assert_string_equal(n, "DT_TRAI"); /* cut, still a string */
}

static void test_parse_list(void **state)
{
    (void)state;
    char **items;
    size_t n;
    assert_int_equal(dt_parse_list("eth0, eth1 ^docker0,,10.0.0.0/24 ",
                                   &items, &n),
                     DT_OK);
    assert_int_equal(n, 4);
    assert_string_equal(items[0], "eth0");
    assert_string_equal(items[1], "eth1");
    assert_string_equal(items[2], "^docker0");
    assert_string_equal(items[3], "10.0.0.0/24");
    assert_null(items[4]);
    dt_strv_free(items);
    assert_int_equal(dt_parse_list(" , ", &items, &n), DT_OK);
    assert_int_equal(n, 0);
    assert_null(items[0]);
    dt_strv_free(items);
    assert_int_equal(dt_parse_list("one", &items, &n), DT_OK);
    assert_int_equal(n, 1);
    assert_string_equal(items[0], "one");
    dt_strv_free(items);
}

static char *validate_file(const char *text, dt_schema_lookup_fn lookup,
                           dt_status_t expect_load, dt_status_t expect,
                           char *path, size_t len);

static void test_parse_words(void **state)
{
    (void)state;
    char **w;
    size_t n;
    /* Commas stay; quotes group; backslashes escape; empty words kept. */
    assert_int_equal(dt_parse_words("  --mca btl self,tcp -x 'a b' \"c \\\" d\" e\\ f '' \"$x\"",
                                    &w, &n),
                     DT_OK);
    assert_int_equal(n, 9);
    assert_string_equal(w[0], "--mca");
    assert_string_equal(w[1], "btl");
    assert_string_equal(w[2], "self,tcp");
    assert_string_equal(w[3], "-x");
    assert_string_equal(w[4], "a b");
    assert_string_equal(w[5], "c \" d");
    assert_string_equal(w[6], "e f");
    assert_string_equal(w[7], "");
    assert_string_equal(w[8], "$x");
    assert_null(w[9]);
    dt_strv_free(w);
    /* Quotes join with the text around them: --opt='a b' is one word. */
    assert_int_equal(dt_parse_words("--opt='a b'c \"x\\y\"", &w, &n), DT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(w[0], "--opt=a bc");
    assert_string_equal(w[1], "x\\y"); /* \y is not an escape in "" */
    dt_strv_free(w);
    assert_int_equal(dt_parse_words(" \t ", &w, &n), DT_OK);
    assert_int_equal(n, 0);
    dt_strv_free(w);
    w = NULL;
    assert_int_equal(dt_parse_words("a 'b", &w, &n), DT_ERR_INVALID);
    assert_int_equal(dt_parse_words("a \"b", &w, &n), DT_ERR_INVALID);
    assert_int_equal(dt_parse_words("a b\\", &w, &n), DT_ERR_INVALID);
    assert_null(w);
}

/* A DT_KEY_WORDS key: read as words, and an open quote refused with its
 * file:line. */
static const dt_key_spec_t words_keys[] = {
    {"args", DT_KEY_WORDS, NULL, "test"}, {NULL, 0, NULL, NULL}};

static const dt_key_spec_t *words_lookup(const char *section, void *arg)
{
    (void)arg;
    return strcmp(section, "w") == 0 ? words_keys : NULL;
}

static void test_words_key(void **state)
{
    (void)state;
    char path[64], expect[256];
    ini_file(path, sizeof path, "[w]\nargs = --mca btl self,tcp\n");
    dt_config_t *cfg = new_config();
    assert_int_equal(dt_config_load_file(cfg, path, DT_SRC_JOB_FILE), DT_OK);
    assert_int_equal(dt_config_validate(cfg, words_lookup, NULL), DT_OK);
    char **w;
    size_t n;
    assert_int_equal(dt_config_get_words(cfg, "w", "args", &w, &n), DT_OK);
    assert_int_equal(n, 3);
    assert_string_equal(w[2], "self,tcp");
    dt_strv_free(w);
    dt_config_free(cfg);
    unlink(path);
    char *err = validate_file("[w]\n\nargs = -x 'open\n", words_lookup, DT_OK,
                              DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect,
             "%s:3: [w] args = '-x 'open' has a quote left open", path);
    assert_non_null(strstr(err, expect));
    free(err);
}

/* ---- defaults, precedence, origins ------------------------------------------ */

static void test_defaults(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "local");
    assert_string_equal(dt_config_get(cfg, "cluster", "transport"), "tcp");
    assert_string_equal(dt_config_get(cfg, "cluster", "storage"), "local");
    long long np;
    assert_int_equal(dt_config_get_int(cfg, "cluster", "np", &np), DT_OK);
    assert_int_equal(np, 1);
    double t;
    assert_int_equal(dt_config_get_duration(cfg, "cluster", "timeout", &t),
                     DT_OK);
    assert_true(t == 60.0);
    assert_int_equal(
        dt_config_get_duration(cfg, "cluster", "kill_grace", &t), DT_OK);
    assert_true(t == 5.0);
    assert_int_equal(dt_config_get_int(cfg, "train", "batch_size", &np),
                     DT_OK);
    assert_int_equal(np, 64);
    assert_string_equal(dt_config_get(cfg, "data", "dataset"),
                        "fashion-mnist");
    const char *s;
    assert_int_equal(dt_config_get_string(cfg, "cluster", "hosts", &s),
                     DT_ERR_NOT_FOUND);
    assert_null(dt_config_get(cfg, "cluster", "hostfile"));
    assert_null(dt_config_get(cfg, "nosuch", "key"));
    dt_config_source_t src = DT_SRC_CLI;
    const char *where = NULL;
    assert_int_equal(dt_config_origin(cfg, "cluster", "np", &src, &where),
                     DT_OK);
    assert_int_equal(src, DT_SRC_DEFAULT);
    assert_string_equal(where, "default");
    assert_int_equal(dt_config_origin(cfg, "cluster", "hosts", &src, &where),
                     DT_ERR_NOT_FOUND);
    /* The built-in defaults themselves pass validation. */
    assert_int_equal(dt_config_validate(cfg, NULL, NULL), DT_OK);
    dt_config_free(cfg);
}

static long long get_np(dt_config_t *cfg, dt_config_source_t *src,
                        const char **where)
{
    long long np = -1;
    assert_int_equal(dt_config_get_int(cfg, "cluster", "np", &np), DT_OK);
    assert_int_equal(dt_config_origin(cfg, "cluster", "np", src, where),
                     DT_OK);
    return np;
}

static void test_precedence_each_layer(void **state)
{
    (void)state;
    char cpath[64], jpath[64];
    ini_file(cpath, sizeof cpath,
             "# cluster\n\n[cluster]\nnp = 2\nlauncher = ssh\n");
    ini_file(jpath, sizeof jpath, "[cluster]\n; job\nnp = 3\n");
    char *envp[] = {"DT_CLUSTER_NP=4", "PATH=/bin", NULL};
    dt_config_t *cfg = new_config();
    dt_config_source_t src;
    const char *where;
    char expect[96];

    assert_int_equal(get_np(cfg, &src, &where), 1);
    assert_int_equal(src, DT_SRC_DEFAULT);

    assert_int_equal(dt_config_load_file(cfg, cpath, DT_SRC_CLUSTER_FILE),
                     DT_OK);
    assert_int_equal(get_np(cfg, &src, &where), 2);
    assert_int_equal(src, DT_SRC_CLUSTER_FILE);
    snprintf(expect, sizeof expect, "%s:4", cpath);
    assert_string_equal(where, expect);

    assert_int_equal(dt_config_load_file(cfg, jpath, DT_SRC_JOB_FILE), DT_OK);
    assert_int_equal(get_np(cfg, &src, &where), 3);
    assert_int_equal(src, DT_SRC_JOB_FILE);
    snprintf(expect, sizeof expect, "%s:3", jpath);
    assert_string_equal(where, expect);

    assert_int_equal(dt_config_load_env(cfg, envp), DT_OK);
    assert_int_equal(get_np(cfg, &src, &where), 4);
    assert_int_equal(src, DT_SRC_ENV);
    assert_string_equal(where, "DT_CLUSTER_NP");

    assert_int_equal(dt_config_set_assignment(cfg, "cluster.np=5",
                                              DT_SRC_CLI),
                     DT_OK);
    assert_int_equal(get_np(cfg, &src, &where), 5);
    assert_int_equal(src, DT_SRC_CLI);
    assert_string_equal(where, "--set");

    /* Untouched keys keep their own layer. */
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "ssh");
    assert_int_equal(dt_config_origin(cfg, "cluster", "launcher", &src,
                                      &where),
                     DT_OK);
    assert_int_equal(src, DT_SRC_CLUSTER_FILE);
    snprintf(expect, sizeof expect, "%s:5", cpath);
    assert_string_equal(where, expect);
    dt_config_free(cfg);
    unlink(cpath);
    unlink(jpath);
}

static void test_precedence_order_independent(void **state)
{
    (void)state;
    char cpath[64], jpath[64];
    ini_file(cpath, sizeof cpath, "[cluster]\nnp = 2\ntransport = ucx\n");
    ini_file(jpath, sizeof jpath, "[cluster]\nnp = 3\ntransport = nccl\n");
    char *envp[] = {"DT_CLUSTER_NP=4", NULL};
    dt_config_t *cfg = new_config();
    dt_config_source_t src;
    const char *where;
    /* Highest first: lower layers must not replace anything. */
    assert_int_equal(dt_config_set(cfg, "cluster", "np", "5", DT_SRC_CLI,
                                   "-n/--np"),
                     DT_OK);
    assert_int_equal(dt_config_load_env(cfg, envp), DT_OK);
    assert_int_equal(dt_config_load_file(cfg, jpath, DT_SRC_JOB_FILE), DT_OK);
    assert_int_equal(dt_config_load_file(cfg, cpath, DT_SRC_CLUSTER_FILE),
                     DT_OK);
    assert_int_equal(get_np(cfg, &src, &where), 5);
    assert_int_equal(src, DT_SRC_CLI);
    assert_string_equal(where, "-n/--np");
    /* transport: the job file beats the cluster file loaded after it. */
    assert_string_equal(dt_config_get(cfg, "cluster", "transport"), "nccl");
    assert_int_equal(dt_config_origin(cfg, "cluster", "transport", &src,
                                      NULL),
                     DT_OK);
    assert_int_equal(src, DT_SRC_JOB_FILE);
    dt_config_free(cfg);
    unlink(cpath);
    unlink(jpath);
}

static void test_file_lines_and_comments(void **state)
{
    (void)state;
    char path[64], expect[96];
    ini_file(path, sizeof path,
             "# comment\n"
             "; other comment\n"
             "\n"
             "[cluster]\n"
             "    np = 6   # indented, trailing comment\n"
             "workdir = /data/#1\n"
             "launcher = ssh ; semicolon comment\n"
             "[ train ]\n"
             "lr: 0.5\n");
    dt_config_t *cfg = new_config();
    assert_int_equal(dt_config_load_file(cfg, path, DT_SRC_CLUSTER_FILE),
                     DT_OK);
    const char *where;
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "6");
    dt_config_origin(cfg, "cluster", "np", NULL, &where);
    snprintf(expect, sizeof expect, "%s:5", path);
    assert_string_equal(where, expect);
    /* '#' only starts a comment after a blank. */
    assert_string_equal(dt_config_get(cfg, "cluster", "workdir"),
                        "/data/#1");
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "ssh");
    assert_string_equal(dt_config_get(cfg, "train", "lr"), "0.5");
    dt_config_origin(cfg, "train", "lr", NULL, &where);
    snprintf(expect, sizeof expect, "%s:9", path);
    assert_string_equal(where, expect);
    assert_int_equal(dt_config_validate(cfg, NULL, NULL), DT_OK);
    dt_config_free(cfg);
    unlink(path);
}

static void test_same_key_twice_in_file(void **state)
{
    (void)state;
    char path[64];
    ini_file(path, sizeof path, "[cluster]\nnp = 2\nnp = 3\n");
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_CLUSTER_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "3");
    assert_non_null(strstr(err, "set again"));
    assert_non_null(strstr(err, ":3:"));
    free(err);
    dt_config_free(cfg);
    unlink(path);
}

/* ---- environment -------------------------------------------------------------- */

static const dt_key_spec_t tcp_keys[] = {
    {"timeout", DT_KEY_DURATION, "30s", "peer timeout"},
    {"buffer", DT_KEY_SIZE, "4M", "socket buffer"},
    {"nodelay", DT_KEY_BOOL, "yes", "TCP_NODELAY"},
    {"port_range", DT_KEY_LIST, NULL, "ports"},
    {"retries", DT_KEY_INT, "3", "connect retries"},
    {"backoff", DT_KEY_DOUBLE, "1.5", "retry backoff factor"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static void test_env_mapping(void **state)
{
    (void)state;
    char *envp[] = {"DT_TRANSPORT=ucx",
                    "DT_LAUNCHER=ssh",
                    "DT_CLUSTER_LAUNCHER=mpi", /* long form wins */
                    "DT_INTERFACE=eth0,eth1",
                    "DT_STORAGE=",             /* empty: unset */
                    "DT_TRANSPORT_TCP_TIMEOUT=5s",
                    "DT_CLUSTER_KILL_GRACE=2s",
                    "DT_TRAIN_BATCH_SIZE=32",
                    "DT_LAUNCHER_SSH_PORT=22", /* no such schema: ignored */
                    "dt_cluster_np=9",         /* case matters */
                    NULL};
    dt_config_t *cfg = new_config();
    assert_int_equal(dt_config_add_schema(cfg, "transport.tcp", tcp_keys),
                     DT_OK);
    assert_int_equal(dt_config_load_env(cfg, envp), DT_OK);
    const char *where;
    dt_config_source_t src;
    assert_string_equal(dt_config_get(cfg, "cluster", "transport"), "ucx");
    dt_config_origin(cfg, "cluster", "transport", &src, &where);
    assert_int_equal(src, DT_SRC_ENV);
    assert_string_equal(where, "DT_TRANSPORT");
    assert_string_equal(dt_config_get(cfg, "cluster", "launcher"), "mpi");
    dt_config_origin(cfg, "cluster", "launcher", NULL, &where);
    assert_string_equal(where, "DT_CLUSTER_LAUNCHER");
    assert_string_equal(dt_config_get(cfg, "cluster", "storage"), "local");
    char **items;
    size_t n;
    assert_int_equal(
        dt_config_get_list(cfg, "cluster", "interface", &items, &n), DT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(items[1], "eth1");
    dt_strv_free(items);
    double t;
    assert_int_equal(
        dt_config_get_duration(cfg, "transport.tcp", "timeout", &t), DT_OK);
    assert_true(t == 5.0);
    dt_config_origin(cfg, "transport.tcp", "timeout", NULL, &where);
    assert_string_equal(where, "DT_TRANSPORT_TCP_TIMEOUT");
    assert_int_equal(
        dt_config_get_duration(cfg, "cluster", "kill_grace", &t), DT_OK);
    assert_true(t == 2.0);
    assert_string_equal(dt_config_get(cfg, "train", "batch_size"), "32");
    assert_null(dt_config_get(cfg, "launcher.ssh", "port"));
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "1");
    dt_config_free(cfg);
}

static void test_env_typo_warning(void **state)
{
    (void)state;
    char *envp[] = {"DT_CLUSTER_NPP=3", "DT_TRANSPORT_TCP_TIMEOUT=1s",
                    "DT_TRANSPORT_TCP_TIMEOT=1s", "DT_RANK=0", NULL};
    dt_config_t *cfg = new_config();
    dt_config_add_schema(cfg, "transport.tcp", tcp_keys);
    capture_t c;
    capture_begin(&c);
    dt_config_check_env(cfg, envp);
    char *err = capture_end(&c);
    assert_non_null(strstr(err, "DT_CLUSTER_NPP matches no key of [cluster]"));
    assert_non_null(strstr(err, "valid keys: launcher, transport"));
    assert_non_null(strstr(err, "DT_TRANSPORT_TCP_TIMEOT matches no key of "
                                "[transport.tcp]"));
    assert_null(strstr(err, "DT_TRANSPORT_TCP_TIMEOUT "));
    assert_null(strstr(err, "DT_RANK"));
    free(err);
    dt_config_free(cfg);
}

/* ---- --set ---------------------------------------------------------------------- */

static void test_set_assignment(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    dt_config_add_schema(cfg, "transport.tcp", tcp_keys);
    assert_int_equal(dt_config_set_assignment(
                         cfg, "transport.tcp.timeout=5s", DT_SRC_CLI),
                     DT_OK);
    assert_string_equal(dt_config_get(cfg, "transport.tcp", "timeout"), "5s");
    assert_int_equal(dt_config_set_assignment(cfg, " cluster.np = 3 ",
                                              DT_SRC_CLI),
                     DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "3");
    assert_int_equal(dt_config_set_assignment(cfg, "model.layers=a=b,c",
                                              DT_SRC_CLI),
                     DT_OK);
    assert_string_equal(dt_config_get(cfg, "model", "layers"), "a=b,c");
    assert_int_equal(dt_config_set_assignment(cfg, "cluster.workdir=",
                                              DT_SRC_CLI),
                     DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "workdir"), "");
    /* Later --set of the same key wins. */
    assert_int_equal(dt_config_set_assignment(cfg, "cluster.np=4",
                                              DT_SRC_CLI),
                     DT_OK);
    assert_string_equal(dt_config_get(cfg, "cluster", "np"), "4");
    const char *bad[] = {"noequals", "nodot=3", ".np=3", "cluster.=3",
                         "=3", "clu ster.np=3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        capture_t c;
        capture_begin(&c);
        dt_status_t st = dt_config_set_assignment(cfg, bad[i], DT_SRC_CLI);
        char *err = capture_end(&c);
        if (i == sizeof bad / sizeof *bad - 1) {
            /* "clu ster" is a section with a blank: validation rejects. */
            assert_int_equal(st, DT_OK);
        } else {
            assert_int_equal(st, DT_ERR_CONFIG);
            assert_non_null(strstr(err, "want SECTION.KEY=VALUE"));
            assert_non_null(strstr(err, bad[i]));
        }
        free(err);
    }
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_validate(cfg, NULL, NULL);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "option --set: unknown section [clu ster]"));
    free(err);
    dt_config_free(cfg);
}

/* ---- validation errors --------------------------------------------------------- */

static char *validate_file(const char *text, dt_schema_lookup_fn lookup,
                           dt_status_t expect_load, dt_status_t expect,
                           char *path, size_t len)
{
    ini_file(path, len, text);
    dt_config_t *cfg = new_config();
    dt_config_add_schema(cfg, "transport.tcp", tcp_keys);
    capture_t c;
    capture_begin(&c);
    dt_status_t lst = dt_config_load_file(cfg, path, DT_SRC_JOB_FILE);
    dt_status_t st = dt_config_validate(cfg, lookup, NULL);
    char *err = capture_end(&c);
    assert_int_equal(lst, expect_load);
    assert_int_equal(st, expect);
    dt_config_free(cfg);
    unlink(path);
    return err;
}

static void test_unknown_section(void **state)
{
    (void)state;
    char path[64], expect[256];
    char *err = validate_file("[cluster]\nnp = 2\n\n[clustre]\nnp = 3\n",
                              NULL, DT_OK, DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect,
             "%s:5: unknown section [clustre]; known sections: cluster, "
             "train, model, data, collectives, transport.tcp",
             path);
    assert_non_null(strstr(err, expect));
    free(err);
}

static void test_unknown_key(void **state)
{
    (void)state;
    char path[64], expect[256];
    char *err = validate_file("[cluster]\nnp = 2\nlaunchr = ssh\n", NULL,
                              DT_OK, DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect,
             "%s:3: unknown key 'launchr' in [cluster]; valid keys: "
             "launcher, transport, storage, np, hosts, hostfile, interface, "
             "timeout, kill_grace, master_port, workdir",
             path);
    assert_non_null(strstr(err, expect));
    free(err);
}

static void test_key_outside_section(void **state)
{
    (void)state;
    char path[64], expect[160];
    char *err = validate_file("np = 2\n[cluster]\n", NULL, DT_OK,
                              DT_ERR_CONFIG, path, sizeof path);
    snprintf(expect, sizeof expect, "%s:1: 'np' is not under any [section]",
             path);
    assert_non_null(strstr(err, expect));
    free(err);
}

static void test_wrong_types(void **state)
{
    (void)state;
    char path[64], expect[200];
    char *err = validate_file("[cluster]\n"
                              "np = abc\n"
                              "timeout = 10x\n"
                              "[transport.tcp]\n"
                              "buffer = 4Q\n"
                              "nodelay = maybe\n"
                              "retries = 1.5\n"
                              "timeout = -1s\n",
                              NULL, DT_OK, DT_ERR_CONFIG, path, sizeof path);
    const char *lines[] = {
        "%s:2: [cluster] np = 'abc' is not an integer",
        "%s:3: [cluster] timeout = '10x' is not a duration",
        "%s:5: [transport.tcp] buffer = '4Q' is not a size",
        "%s:6: [transport.tcp] nodelay = 'maybe' is not a boolean",
        "%s:7: [transport.tcp] retries = '1.5' is not an integer",
        "%s:8: [transport.tcp] timeout = '-1s' is not a duration",
        "6 configuration problems found"};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        snprintf(expect, sizeof expect, lines[i], path);
        assert_non_null(strstr(err, expect));
    }
    free(err);
}

static void test_malformed_line(void **state)
{
    (void)state;
    char path[64], expect[200];
    char *err = validate_file("[cluster]\nnp = 2\nthis is not ini\n"
                              "launcher = ssh\n",
                              NULL, DT_ERR_CONFIG, DT_ERR_CONFIG, path,
                              sizeof path);
    snprintf(expect, sizeof expect,
             "%s:3: cannot parse 'this is not ini'; want 'key = value'",
             path);
    assert_non_null(strstr(err, expect));
    assert_non_null(strstr(err, "1 configuration problem found"));
    free(err);
}

/* Every unparsable line is named, not only the first (inih's own
 * count); the keys under a '[section' without ']' are filed nowhere
 * (inih put 'lr' into [cluster] above it: a second, wrong message). */
static void test_every_malformed_line(void **state)
{
    (void)state;
    char path[64], expect[200];
    char *err = validate_file("[cluster]\nnp = 2\n[train\nlr = 0.1\n"
                              "this is not ini\n[model]\n"
                              "layers = flatten linear(10)\n",
                              NULL, DT_ERR_CONFIG, DT_ERR_CONFIG, path,
                              sizeof path);
    snprintf(expect, sizeof expect, "%s:3: cannot parse '[train'", path);
    assert_non_null(strstr(err, expect));
    assert_non_null(strstr(err, "the keys below it belong to no section"));
    snprintf(expect, sizeof expect, "%s:5: cannot parse 'this is not ini'",
             path);
    assert_non_null(strstr(err, expect));
    assert_null(strstr(err, "'lr'")); /* not filed under [cluster] */
    assert_non_null(strstr(err, "2 configuration problems found"));
    free(err);
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

/* A file whose bytes include an escape sequence, a bell and bytes that
 * are not UTF-8: the errors show them as \xNN (the terminal never gets
 * them), UTF-8 text stays as it is, and the summary counts every error
 * printed, the unparsable line included (it once said "1 configuration
 * problem found" under 2 errors). */
static void test_errors_escape_and_count(void **state)
{
    (void)state;
    char path[64], expect[256];
    char *err = validate_file("[cluster]\n"
                              "np = \x1b[31mred\x07\n"
                              "k\x1b]0;title\x07" "ey = 1\n"
                              "this \x1b[2J is not ini\n"
                              "workdir = caf\xc3\xa9\n"
                              "[transport.tcp]\n"
                              "nodelay = \xff\xc2\x9b\n",
                              NULL, DT_ERR_CONFIG, DT_ERR_CONFIG, path,
                              sizeof path);
    assert_null(strchr(err, '\x1b'));
    assert_null(strchr(err, '\x07'));
    assert_null(strchr(err, '\xff'));
    assert_null(strstr(err, "\xc2\x9b"));
    snprintf(expect, sizeof expect,
             "%s:2: [cluster] np = '\\x1b[31mred\\x07' is not an integer",
             path);
    assert_non_null(strstr(err, expect));
    snprintf(expect, sizeof expect,
             "%s:3: unknown key 'k\\x1b]0;title\\x07ey' in [cluster]", path);
    assert_non_null(strstr(err, expect));
    snprintf(expect, sizeof expect, "%s:4: cannot parse 'this \\x1b[2J is not ini'",
             path);
    assert_non_null(strstr(err, expect));
    snprintf(expect, sizeof expect,
             "%s:7: [transport.tcp] nodelay = '\\xff\\xc2\\x9b' is not a "
             "boolean",
             path);
    assert_non_null(strstr(err, expect));
    /* 4 errors, 4 in the summary */
    assert_int_equal(count_of(err, "error: "), 5);
    assert_non_null(strstr(err, "4 configuration problems found"));
    free(err);
}

static void test_printable(void **state)
{
    (void)state;
    char buf[16];
    assert_string_equal(dt_config_printable("plain", buf, sizeof buf), "plain");
    assert_string_equal(dt_config_printable("a\tb\x7f", buf, sizeof buf),
                        "a\\x09b\\x7f");
    assert_string_equal(dt_config_printable("\xc3\xa9\xe2\x82\xac", buf, sizeof buf),
                        "\xc3\xa9\xe2\x82\xac");
    /* overlong and cut sequences are not UTF-8 */
    char big[64];
    assert_string_equal(dt_config_printable("\xc0\xaf\xe2\x82", big, sizeof big),
                        "\\xc0\\xaf\\xe2\\x82");
    assert_string_equal(dt_config_printable("0123456789abcdefgh", buf, sizeof buf),
                        "0123456789ab...");
}

/* A value longer than inih's line buffer (a ResNet's [model] layers) is
 * read whole, with its file:line; a long line that is no 'key = value'
 * is refused naming its line, and lines after it keep their numbers. */
static void test_long_line(void **state)
{
    (void)state;
    char path[64], expect[200], text[1400], want[600];
    snprintf(want, sizeof want, "/%0400d", 0);
    snprintf(text, sizeof text,
             "[cluster]\nworkdir = %s  ; where the job runs\n; %0400d\n"
             "np = 2\n", want, 0);
    ini_file(path, sizeof path, text);
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_CLUSTER_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_OK);
    assert_string_equal(err, "");
    const char *v, *where;
    assert_int_equal(dt_config_get_string(cfg, "cluster", "workdir", &v), DT_OK);
    assert_string_equal(v, want);
    dt_config_origin(cfg, "cluster", "workdir", NULL, &where);
    snprintf(expect, sizeof expect, "%s:2", path);
    assert_string_equal(where, expect);
    dt_config_origin(cfg, "cluster", "np", NULL, &where);
    snprintf(expect, sizeof expect, "%s:4", path);
    assert_string_equal(where, expect);
    free(err);
    dt_config_free(cfg);
    unlink(path);
    /* A long section line has no value to hold: said, with its line. */
    snprintf(text, sizeof text, "[c%0300d]\nnp = 2\n", 0);
    ini_file(path, sizeof path, text);
    cfg = new_config();
    capture_begin(&c);
    st = dt_config_load_file(cfg, path, DT_SRC_CLUSTER_FILE);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    snprintf(expect, sizeof expect, "%s:1: line is longer than", path);
    assert_non_null(strstr(err, expect));
    free(err);
    dt_config_free(cfg);
    unlink(path);
}

/* A UTF-8 byte order mark (Notepad's) before the first line is no text. */
static void test_byte_order_mark(void **state)
{
    (void)state;
    char path[64];
    ini_file(path, sizeof path, "\xef\xbb\xbf# a comment\n[cluster]\nnp = 3\n");
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_JOB_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_OK);
    assert_string_equal(err, "");
    long long np = 0;
    assert_int_equal(dt_config_get_int(cfg, "cluster", "np", &np), DT_OK);
    assert_int_equal(np, 3);
    free(err);
    dt_config_free(cfg);
    unlink(path);
}

/* UTF-16 text (Notepad's "Unicode"): one error naming the encoding and
 * what to do, not a parse error per line. The text is cut at its first
 * NUL here, which the check does not need. */
static void test_utf16_file(void **state)
{
    (void)state;
    static const char *const marks[] = {"\xff\xfe[", "\xfe\xff\n[cluster]\n"};
    for (int i = 0; i < 2; i++) {
        char path[64];
        ini_file(path, sizeof path, marks[i]);
        dt_config_t *cfg = new_config();
        capture_t c;
        capture_begin(&c);
        dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_JOB_FILE);
        char *err = capture_end(&c);
        assert_int_equal(st, DT_ERR_CONFIG);
        assert_non_null(strstr(err, "the file is UTF-16 text"));
        assert_non_null(strstr(err, "save it as UTF-8"));
        assert_null(strstr(err, "cannot parse"));
        assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
        free(err);
        dt_config_free(cfg);
        unlink(path);
    }
}

/* A directory named as the file: said as such, not "read error". */
static void test_directory_as_file(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, "/tmp", DT_SRC_JOB_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_IO);
    assert_non_null(strstr(err, "cannot read job file '/tmp': it is a directory"));
    free(err);
    dt_config_free(cfg);
}

/* `len` bytes of `data` (NULs too) in a fresh file; its path in buf. */
static void bytes_file(char *buf, size_t len, const char *data,
                       size_t data_len)
{
    snprintf(buf, len, "/tmp/dt-test-config-XXXXXX.ini");
    int fd = mkstemps(buf, 4);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, data_len), (ssize_t)data_len);
    close(fd);
}

/* A program or data file named by mistake: one error at its first NUL,
 * not one per line, and nothing after the NUL taken (np = 2 was read
 * from "np = 2\0junk" as if the line ended there). */
static void test_binary_file(void **state)
{
    (void)state;
    static const char data[] = "[cluster]\nnp = 2\0junk\nnp = 3\n\1\2\n";
    char path[64];
    bytes_file(path, sizeof path, data, sizeof data - 1);
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_JOB_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, ":2: a NUL byte (binary data): not an ini "
                                "file"));
    assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
    dt_config_source_t src = DT_SRC_DEFAULT;
    dt_config_origin(cfg, "cluster", "np", &src, NULL);
    assert_int_not_equal(src, DT_SRC_JOB_FILE);
    free(err);
    dt_config_free(cfg);
    unlink(path);
}

/* A line without end (/dev/zero, a huge file with no newline) is read
 * only so far: getline held all of it, /dev/zero until memory ran out. */
static void test_endless_line(void **state)
{
    (void)state;
    size_t n = ((size_t)16 << 20) + 4096;
    char *data = malloc(n);
    assert_non_null(data);
    memcpy(data, "[cluster]\nlauncher = ", 21);
    memset(data + 21, 'a', n - 21);
    char path[64];
    bytes_file(path, sizeof path, data, n);
    free(data);
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, path, DT_SRC_JOB_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, ":2: a line longer than 16 MiB: not an "
                                "ini file"));
    assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
    free(err);
    dt_config_free(cfg);
    unlink(path);
}

static void test_missing_file(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_load_file(cfg, "/nonexistent/dt/job.ini",
                                         DT_SRC_JOB_FILE);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_NOT_FOUND);
    assert_non_null(
        strstr(err, "cannot read job file '/nonexistent/dt/job.ini'"));
    free(err);
    dt_config_free(cfg);
}

/* A plugin lookup: knows launcher.fake only. */
static int lookups;
static const dt_key_spec_t fake_keys[] = {
    {"port", DT_KEY_INT, "22", "ssh port"},
    {"agent", DT_KEY_STRING, "ssh", "command"},
    {NULL, DT_KEY_STRING, NULL, NULL}};
static const dt_key_spec_t *fake_lookup(const char *section, void *arg)
{
    (void)arg;
    lookups++;
    return strcmp(section, "launcher.fake") == 0 ? fake_keys : NULL;
}

static void test_plugin_lookup(void **state)
{
    (void)state;
    char path[64];
    ini_file(path, sizeof path, "[launcher.fake]\nport = 2222\n");
    dt_config_t *cfg = new_config();
    assert_int_equal(dt_config_load_file(cfg, path, DT_SRC_CLUSTER_FILE),
                     DT_OK);
    lookups = 0;
    assert_int_equal(dt_config_validate(cfg, fake_lookup, NULL), DT_OK);
    assert_int_equal(lookups, 1);
    /* The looked-up schema is registered: its defaults apply now. */
    assert_string_equal(dt_config_get(cfg, "launcher.fake", "agent"), "ssh");
    long long port;
    assert_int_equal(dt_config_get_int(cfg, "launcher.fake", "port", &port),
                     DT_OK);
    assert_int_equal(port, 2222);
    assert_ptr_equal(dt_config_schema(cfg, "launcher.fake"), fake_keys);
    dt_config_set(cfg, "launcher.fake", "prot", "1", DT_SRC_CLI, "--set");
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_validate(cfg, fake_lookup, NULL);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "option --set: unknown key 'prot' in "
                                "[launcher.fake]; valid keys: port, agent"));
    free(err);
    dt_config_free(cfg);
    unlink(path);
}

static void test_getters_type_errors(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    dt_config_add_schema(cfg, "transport.tcp", tcp_keys);
    char *envp[] = {"DT_TRANSPORT_TCP_RETRIES=many", NULL};
    dt_config_load_env(cfg, envp);
    long long v;
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_get_int(cfg, "transport.tcp", "retries", &v);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "environment variable DT_TRANSPORT_TCP_RETRIES"
                                ": [transport.tcp] retries = 'many' is not "
                                "an integer"));
    free(err);
    uint64_t sz;
    assert_int_equal(dt_config_get_size(cfg, "transport.tcp", "buffer", &sz),
                     DT_OK);
    assert_true(sz == 4u << 20);
    bool b = false;
    assert_int_equal(dt_config_get_bool(cfg, "transport.tcp", "nodelay", &b),
                     DT_OK);
    assert_true(b);
    /* A double key: its default, then a bad value named where it was set. */
    double d = 0;
    assert_int_equal(dt_config_get_double(cfg, "transport.tcp", "backoff",
                                          &d),
                     DT_OK);
    assert_true(d == 1.5);
    dt_config_set(cfg, "transport.tcp", "backoff", "nan", DT_SRC_CLI,
                  "--set");
    capture_begin(&c);
    st = dt_config_get_double(cfg, "transport.tcp", "backoff", &d);
    err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "option --set: [transport.tcp] backoff = "
                                "'nan' is not a number"));
    free(err);
    char **items;
    size_t n;
    assert_int_equal(dt_config_get_list(cfg, "transport.tcp", "port_range",
                                        &items, &n),
                     DT_ERR_NOT_FOUND);
    dt_config_free(cfg);
}

static const dt_key_spec_t v2_keys[] = {
    {"timeout", DT_KEY_DURATION, "90s", "longer"},
    {NULL, DT_KEY_STRING, NULL, NULL}};

static void test_replace_schema(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    dt_config_add_schema(cfg, "transport.tcp", tcp_keys);
    dt_config_set(cfg, "transport.tcp", "retries", "7", DT_SRC_JOB_FILE,
                  "job.ini:2");
    assert_int_equal(dt_config_add_schema(cfg, "transport.tcp", v2_keys),
                     DT_OK);
    assert_string_equal(dt_config_get(cfg, "transport.tcp", "timeout"),
                        "90s");
    assert_null(dt_config_get(cfg, "transport.tcp", "buffer"));
    /* A real value survives and is now an unknown key. */
    assert_string_equal(dt_config_get(cfg, "transport.tcp", "retries"), "7");
    capture_t c;
    capture_begin(&c);
    dt_status_t st = dt_config_validate(cfg, NULL, NULL);
    char *err = capture_end(&c);
    assert_int_equal(st, DT_ERR_CONFIG);
    assert_non_null(strstr(err, "job.ini:2: unknown key 'retries'"));
    free(err);
    dt_config_free(cfg);
}

typedef struct visit {
    char seen[2048];
    int count, stop_after;
} visit_t;

static int visit_cb(const char *section, const char *key, const char *value,
                    dt_config_source_t src, const char *where, void *arg)
{
    visit_t *v = arg;
    size_t len = strlen(v->seen);
    snprintf(v->seen + len, sizeof v->seen - len, "%s.%s=%s(%d,%s);",
             section, key, value, (int)src, where);
    return ++v->count == v->stop_after;
}

static void test_foreach(void **state)
{
    (void)state;
    dt_config_t *cfg = new_config();
    dt_config_set(cfg, "cluster", "zzz", "1", DT_SRC_CLI, "--set");
    dt_config_set(cfg, "cluster", "np", "8", DT_SRC_ENV, "DT_CLUSTER_NP");
    visit_t v = {.stop_after = -1};
    dt_config_foreach(cfg, visit_cb, &v);
    /* Schema order, then unknown keys; sections in registration order. */
    const char *np = strstr(v.seen, "cluster.np=8(3,DT_CLUSTER_NP);");
    const char *launcher = strstr(v.seen, "cluster.launcher=local(0,default)");
    const char *zzz = strstr(v.seen, "cluster.zzz=1(4,--set);");
    const char *train = strstr(v.seen, "train.seed=0");
    assert_non_null(np);
    assert_non_null(launcher);
    assert_non_null(zzz);
    assert_non_null(train);
    assert_true(launcher < np && np < zzz && zzz < train);
    assert_null(strstr(v.seen, "cluster.hosts"));
    visit_t two = {.stop_after = 2};
    dt_config_foreach(cfg, visit_cb, &two);
    assert_int_equal(two.count, 2);
    dt_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_int),
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_env_name),
        cmocka_unit_test(test_parse_list),
        cmocka_unit_test(test_parse_words),
        cmocka_unit_test(test_words_key),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_precedence_each_layer),
        cmocka_unit_test(test_precedence_order_independent),
        cmocka_unit_test(test_file_lines_and_comments),
        cmocka_unit_test(test_same_key_twice_in_file),
        cmocka_unit_test(test_env_mapping),
        cmocka_unit_test(test_env_typo_warning),
        cmocka_unit_test(test_set_assignment),
        cmocka_unit_test(test_unknown_section),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_key_outside_section),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_malformed_line),
        cmocka_unit_test(test_every_malformed_line),
        cmocka_unit_test(test_errors_escape_and_count),
        cmocka_unit_test(test_printable),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_utf16_file),
        cmocka_unit_test(test_binary_file),
        cmocka_unit_test(test_endless_line),
        cmocka_unit_test(test_directory_as_file),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_plugin_lookup),
        cmocka_unit_test(test_getters_type_errors),
        cmocka_unit_test(test_replace_schema),
        cmocka_unit_test(test_foreach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
