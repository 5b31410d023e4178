/* test_storage_parts.c — the text the storage plugins make and read:
 * /proc/self/mountinfo lines (recorded: nfs4, nfs with a bind mount,
 * escaped spaces), mount commands for NFS and EFS (a real NFS/EFS mount
 * cannot be made on a test machine, so the command itself is checked),
 * EFS DNS names, rsync's -e ssh command and argv, its --stats report,
 * "{host}" in paths, and the workers' dt_data_path. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <dt/config.h>
#include <dt/log.h>
#include <dt/staging.h>
#include "mountinfo.h"
#include "nfs_cmd.h"
#include "rsync_cmd.h"
#include "stg.h"

/* Recorded from real machines (an EFS client, an NFS client with a bind
 * mount of a subdirectory, this test machine with a bind mount whose name
 * has spaces). */
static const char mountinfo_text[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "88 27 0:52 / /mnt/efs rw,relatime shared:45 - nfs4 "
    "fs-0123abcd.efs.us-east-1.amazonaws.com:/ rw,vers=4.1,rsize=1048576,"
    "wsize=1048576,namlen=255,hard,noresvport,proto=tcp,timeo=600,retrans=2,"
    "sec=sys,clientaddr=172.31.5.10,local_lock=none,addr=172.31.9.4\n"
    "95 27 0:60 / /shared rw,relatime shared:50 - nfs 10.0.0.5:/export/home "
    "rw,vers=3,rsize=65536,wsize=65536,hard,proto=tcp,timeo=600\n"
    "96 27 0:60 /datasets /data rw,relatime shared:50 - nfs "
    "10.0.0.5:/export/home rw,vers=3,hard\n"
    "43 27 254:0 /tmp/dtst/data /tmp/dtst/dir\\040with\\040space rw,relatime "
    "- ext4 /dev/vda rw,discard\n"
    "this line is not a mount\n"
    "97 27 0:61 / /mnt/efs rw,relatime - tmpfs tmpfs rw\n";

static void test_mountinfo_nfs4_efs(void **state)
{
    (void)state;
    mi_entry_t e;
    /* /mnt/efs is mounted twice: the later tmpfs hides EFS. */
    assert_int_equal(mi_find(mountinfo_text, "/mnt/efs/data/x", &e), DT_OK);
    assert_string_equal(e.fstype, "tmpfs");
    const char *only_efs = mountinfo_text; /* first 4 lines */
    char buf[4096];
    const char *cut = strstr(only_efs, "95 27");
    snprintf(buf, sizeof buf, "%.*s", (int)(cut - only_efs), only_efs);
    assert_int_equal(mi_find(buf, "/mnt/efs/data/x", &e), DT_OK);
    assert_string_equal(e.fstype, "nfs4");
    assert_string_equal(e.mount_point, "/mnt/efs");
    assert_string_equal(e.source, "fs-0123abcd.efs.us-east-1.amazonaws.com:/");
    assert_string_equal(e.root, "/");
    /* A sibling whose name starts the same is not under the mount. */
    assert_int_equal(mi_find(buf, "/mnt/efsx/data", &e), DT_OK);
    assert_string_equal(e.mount_point, "/");
    assert_string_equal(e.fstype, "ext4");
}

static void test_mountinfo_bind_and_nfs3(void **state)
{
    (void)state;
    mi_entry_t e;
    assert_int_equal(mi_find(mountinfo_text, "/data/fashion", &e), DT_OK);
    assert_string_equal(e.fstype, "nfs");
    assert_string_equal(e.root, "/datasets"); /* a bind of a subdirectory */
    assert_string_equal(e.source, "10.0.0.5:/export/home");
    assert_int_equal(mi_find(mountinfo_text, "/shared", &e), DT_OK);
    assert_string_equal(e.mount_point, "/shared");
    assert_string_equal(e.source, "10.0.0.5:/export/home");
    assert_non_null(strstr(e.options, "relatime"));
}

static void test_mountinfo_escapes(void **state)
{
    (void)state;
    mi_entry_t e;
    assert_int_equal(
        mi_find(mountinfo_text, "/tmp/dtst/dir with space/a", &e), DT_OK);
    assert_string_equal(e.mount_point, "/tmp/dtst/dir with space");
    assert_string_equal(e.root, "/tmp/dtst/data");
    assert_int_equal(mi_find(mountinfo_text, "/tmp/dtst/dir", &e), DT_OK);
    assert_string_equal(e.mount_point, "/");
    char out[64];
    mi_unescape("a\\011b\\134c\\012", 15, out, sizeof out);
    assert_string_equal(out, "a\tb\\c\n");
    mi_unescape("end\\04", 6, out, sizeof out); /* cut escape stays text */
    assert_string_equal(out, "end\\04");
}

static void test_mountinfo_errors(void **state)
{
    (void)state;
    mi_entry_t e;
    assert_int_equal(mi_find(mountinfo_text, "relative/path", &e),
                     DT_ERR_INVALID);
    assert_int_equal(mi_find("garbage\n1 2 3\n", "/x", &e), DT_ERR_NOT_FOUND);
    const char *no_dash = "1 2 0:1 / /x rw shared:1 ext4 /dev/a rw";
    assert_int_equal(mi_parse_line(no_dash, strlen(no_dash), &e),
                     DT_ERR_INVALID);
}

static char *joined(char **argv)
{
    static char buf[2048];
    buf[0] = '\0';
    for (char **a = argv; *a; a++) {
        strcat(buf, a == argv ? "" : " ");
        strcat(buf, *a);
    }
    return buf;
}

static void test_mount_nfs(void **state)
{
    (void)state;
    char **argv = NULL;
    nfs_mount_spec_t s = {.server = "nfs1", .export_path = "/export/data",
                          .mount_point = "/mnt/data",
                          .options = "hard,timeo=600"};
    assert_int_equal(nfs_mount_argv("storage.nfs", &s, &argv), DT_OK);
    assert_string_equal(joined(argv),
                        "mount -t nfs4 -o hard,timeo=600 nfs1:/export/data "
                        "/mnt/data");
    dt_strv_free(argv);
    /* IPv6 server bracketed; no options: no -o. */
    nfs_mount_spec_t v6 = {.server = "fd00::5", .export_path = NULL,
                           .mount_point = "/mnt/d"};
    assert_int_equal(nfs_mount_argv("storage.nfs", &v6, &argv), DT_OK);
    assert_string_equal(joined(argv), "mount -t nfs4 [fd00::5]:/ /mnt/d");
    dt_strv_free(argv);
}

static void test_mount_efs(void **state)
{
    (void)state;
    char dns[256], **argv = NULL;
    assert_int_equal(efs_dns_name("storage.efs", "fs-0123abcd", "us-east-1",
                                  dns, sizeof dns),
                     DT_OK);
    assert_string_equal(dns, "fs-0123abcd.efs.us-east-1.amazonaws.com");
    nfs_mount_spec_t s = {.server = dns, .mount_point = "/mnt/efs",
                          .options = EFS_DEFAULT_OPTIONS};
    assert_int_equal(nfs_mount_argv("storage.efs", &s, &argv), DT_OK);
    assert_string_equal(
        joined(argv),
        "mount -t nfs4 -o nfsvers=4.1,rsize=1048576,wsize=1048576,hard,"
        "timeo=600,retrans=2,noresvport "
        "fs-0123abcd.efs.us-east-1.amazonaws.com:/ /mnt/efs");
    dt_strv_free(argv);
    /* amazon-efs-utils: mount -t efs FS_ID:/ with the region added. */
    nfs_mount_spec_t u = {.fs_id = "fs-0123abcd", .region = "eu-west-1",
                          .mount_point = "/mnt/efs", .options = "tls",
                          .efs_utils = 1};
    assert_int_equal(nfs_mount_argv("storage.efs", &u, &argv), DT_OK);
    assert_string_equal(joined(argv), "mount -t efs -o tls,region=eu-west-1 "
                                      "fs-0123abcd:/ /mnt/efs");
    dt_strv_free(argv);
}

static void test_mount_refuses_bad_input(void **state)
{
    (void)state;
    char dns[256], **argv = NULL;
    assert_int_equal(efs_dns_name("storage.efs", "fs-XYZ", "us-east-1", dns,
                                  sizeof dns),
                     DT_ERR_INVALID);
    assert_int_equal(efs_dns_name("storage.efs", "fs-0123abcd", "US East",
                                  dns, sizeof dns),
                     DT_ERR_INVALID);
    nfs_mount_spec_t inject = {.server = "nfs1", .mount_point = "/mnt/x",
                               .options = "hard -o remount"};
    assert_int_equal(nfs_mount_argv("storage.nfs", &inject, &argv),
                     DT_ERR_INVALID);
    nfs_mount_spec_t rel = {.server = "nfs1", .mount_point = "mnt"};
    assert_int_equal(nfs_mount_argv("storage.nfs", &rel, &argv),
                     DT_ERR_INVALID);
    nfs_mount_spec_t opt = {.server = "-oexec", .mount_point = "/m"};
    assert_int_equal(nfs_mount_argv("storage.nfs", &opt, &argv),
                     DT_ERR_INVALID);
    assert_null(argv);
}

static void test_ssh_command(void **state)
{
    (void)state;
    char *cmd = NULL;
    char *ids[] = {"/tmp/k dir/id_ed25519", NULL};
    rs_ssh_t o = {.user = "root", .port = 22, .identity = ids,
                  .known_hosts = "/tmp/kh", .use_agent = false,
                  .connect_timeout = 10};
    assert_int_equal(rs_ssh_command(&o, 2222, &cmd), DT_OK);
    assert_string_equal(cmd, "ssh -p 2222 -l root -i '/tmp/k dir/id_ed25519' "
                             "-o IdentitiesOnly=yes -o IdentityAgent=none "
                             "-o UserKnownHostsFile=/tmp/kh "
                             "-o StrictHostKeyChecking=yes -o BatchMode=yes "
                             "-o ConnectTimeout=10");
    free(cmd);
    /* accept_new_host_keys is accept-new: host keys are never unchecked. */
    rs_ssh_t n = {.accept_new = true, .use_agent = true};
    assert_int_equal(rs_ssh_command(&n, 0, &cmd), DT_OK);
    assert_string_equal(cmd, "ssh -p 22 -o StrictHostKeyChecking=accept-new "
                             "-o BatchMode=yes");
    assert_null(strstr(cmd, "=no"));
    free(cmd);
    char *w = NULL;
    assert_int_equal(rs_e_word("it's", &w), DT_OK);
    assert_string_equal(w, "\"it's\"");
    free(w);
    assert_int_equal(rs_e_word("a'b\"c", &w), DT_ERR_INVALID);
}

static void test_rsync_argv(void **state)
{
    (void)state;
    char **argv = NULL;
    rs_args_t a = {.ssh_cmd = "ssh -p 22", .src = "/data/set", .host = "h1",
                   .dst = "/scratch/set/", .bwlimit = "10M", .timeout_s = 60,
                   .progress = true, .delete_extra = true,
                   .rsync_path = "/opt/bin/rsync"};
    assert_int_equal(rs_argv(&a, &argv), DT_OK);
    assert_string_equal(
        joined(argv),
        "rsync -a --delay-updates -s --chmod=Dgo-w --delete-delay "
        "--exclude=/.dt-staged --exclude=/.dt-staging "
        "--exclude=/.dt-lock* --stats "
        "--info=progress2 --no-inc-recursive --bwlimit=10M --timeout=60 "
        "-e ssh -p 22 --rsync-path=/opt/bin/rsync -- /data/set/ "
        "h1:/scratch/set/");
    dt_strv_free(argv);
    rs_args_t l = {.src = "/d/", .host = "localhost", .dst = "/e"};
    assert_int_equal(rs_argv(&l, &argv), DT_OK);
    assert_string_equal(joined(argv),
                        "rsync -a --delay-updates -s --chmod=Dgo-w "
                        "--exclude=/.dt-staged --exclude=/.dt-staging "
                        "--exclude=/.dt-lock* --stats -- /d/ /e/");
    dt_strv_free(argv);
    /* Relative paths: never an option ("-x") nor a remote "host:path". */
    rs_args_t r = {.src = "-set", .host = "localhost", .dst = "x:e"};
    assert_int_equal(rs_argv(&r, &argv), DT_OK);
    assert_string_equal(joined(argv),
                        "rsync -a --delay-updates -s --chmod=Dgo-w "
                        "--exclude=/.dt-staged --exclude=/.dt-staging "
                        "--exclude=/.dt-lock* --stats -- ./-set/ ./x:e/");
    dt_strv_free(argv);
}

/* Recorded from rsync 3.2.7 / 3.5.0: a first copy and an unchanged re-run. */
static const char stats_first[] =
    "\rNumber of files: 3 (reg: 2, dir: 1)\n"
    "Number of created files: 3 (reg: 2, dir: 1)\n"
    "Number of deleted files: 0\n"
    "Number of regular files transferred: 2\n"
    "Total file size: 300,003 bytes\n"
    "Total transferred file size: 300,003 bytes\n"
    "Literal data: 300,003 bytes\n"
    "Matched data: 0 bytes\n"
    "File list size: 0\n"
    "Total bytes sent: 300,249\n"
    "Total bytes received: 60\n\n"
    "sent 300,249 bytes  received 60 bytes  600,618.00 bytes/sec\n";
static const char stats_again[] =
    "Number of regular files transferred: 0\n"
    "Total file size: 300,003 bytes\n"
    "Total transferred file size: 0 bytes\n"
    "Total bytes sent: 81\n"
    "Total bytes received: 12\n";

/* rsync's own verdicts (3.5.0, --bwlimit=V --dry-run): accepted, or
 * "invalid", "too small" (under 512 bytes/s, 0 aside), "too large". */
static void test_rsync_bwlimit(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "8M", "8m", "8MB", "8MiB", "8mib", "8K", "1.5M", "8T", "8P", "8G",
        "0", "8", "512", "1", "8M+1", "8M-1", ".5M", "5.", "8kb", "0.5",
        "3.2K", "1024P", "8MB+1", NULL};
    static const char *const bad[] = {
        "8 M", "1,5M", "8X", "8b", "8B", "-1", "8e3", "0x10", " 8M", "8M ",
        "9999999P", "0.1", "M", "", "8MiBs", NULL};
    for (const char *const *v = ok; *v; v++)
        if (rs_bwlimit_problem(*v))
            fail_msg("bwlimit '%s' refused: %s", *v, rs_bwlimit_problem(*v));
    for (const char *const *v = bad; *v; v++)
        if (!rs_bwlimit_problem(*v))
            fail_msg("bwlimit '%s' accepted", *v);
    assert_non_null(strstr(rs_bwlimit_problem("8 M"), "space"));
    assert_non_null(strstr(rs_bwlimit_problem("8b"), "512"));
}

static void test_rsync_stats(void **state)
{
    (void)state;
    rs_stats_t s;
    rs_parse_stats(stats_first, &s);
    assert_int_equal(s.have, 1);
    assert_int_equal(s.bytes_sent, 300249);
    assert_int_equal(s.bytes_received, 60);
    assert_int_equal(s.files, 2);
    assert_int_equal(s.data, 300003);
    rs_parse_stats(stats_again, &s);
    assert_int_equal(s.bytes_sent, 81);
    assert_int_equal(s.files, 0);
    assert_int_equal(s.data, 0);
    rs_parse_stats("rsync: connection unexpectedly closed\n", &s);
    assert_int_equal(s.have, 0);
}

static void test_expand_host(void **state)
{
    (void)state;
    char *p = stg_expand_host("/scratch/{host}/d/{host}", "10.0.0.2");
    assert_string_equal(p, "/scratch/10.0.0.2/d/10.0.0.2");
    free(p);
    p = stg_expand_host("/plain", "h");
    assert_string_equal(p, "/plain");
    free(p);
}

static void test_data_path(void **state)
{
    (void)state;
    char dir[] = "/tmp/dt-datapath-XXXXXX", sub[128], busy[160];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/h7", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s/{host}", dir);
    setenv("DT_DATA_PATH", pattern, 1);
    setenv("DT_HOST", "h7", 1);
    char *p = NULL;
    assert_int_equal(dt_data_path(NULL, &p), DT_OK);
    assert_string_equal(p, sub);
    free(p);
    /* An interrupted copy is refused. */
    snprintf(busy, sizeof busy, "%s/.dt-staging", sub);
    FILE *f = fopen(busy, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(dt_data_path(NULL, &p), DT_ERR_IO);
    assert_null(p);
    unlink(busy);
    rmdir(sub);
    rmdir(dir);
    /* No env: [data] path of the config. */
    unsetenv("DT_DATA_PATH");
    dt_config_t *cfg = NULL;
    assert_int_equal(dt_config_new(&cfg), DT_OK);
    assert_int_equal(dt_data_path(cfg, &p), DT_ERR_NOT_FOUND);
    assert_int_equal(dt_config_set(cfg, "data", "path", "/d/x", DT_SRC_CLI,
                                   "test"),
                     DT_OK);
    assert_int_equal(dt_data_path(cfg, &p), DT_OK);
    assert_string_equal(p, "/d/x");
    free(p);
    dt_config_free(cfg);
    unsetenv("DT_SHARED_DIR");
    assert_int_equal(dt_shared_dir(&p), DT_ERR_NOT_FOUND);
    setenv("DT_SHARED_DIR", "/mnt/efs/dt", 1);
    assert_int_equal(dt_shared_dir(&p), DT_OK);
    assert_string_equal(p, "/mnt/efs/dt");
    free(p);
}

int main(void)
{
    dt_log_set_level(DT_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mountinfo_nfs4_efs),
        cmocka_unit_test(test_mountinfo_bind_and_nfs3),
        cmocka_unit_test(test_mountinfo_escapes),
        cmocka_unit_test(test_mountinfo_errors),
        cmocka_unit_test(test_mount_nfs),
        cmocka_unit_test(test_mount_efs),
        cmocka_unit_test(test_mount_refuses_bad_input),
        cmocka_unit_test(test_ssh_command),
        cmocka_unit_test(test_rsync_argv),
        cmocka_unit_test(test_rsync_bwlimit),
        cmocka_unit_test(test_rsync_stats),
        cmocka_unit_test(test_expand_host),
        cmocka_unit_test(test_data_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
