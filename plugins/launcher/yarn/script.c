/* script.c — the script every YARN container runs (through the
 * distributed-shell AM's shellCommands/shellArgs). YARN places containers
 * itself and numbers nothing the workers could use, so the containers
 * number themselves in the shared job directory:
 *   1. rank: the lowest free R for which `mkdir DIR/rank.R` succeeds
 *      (mkdir is atomic, also on NFS); the host goes to DIR/rank.R/host;
 *   2. wait until every rank has its host (bounded by start_timeout);
 *   3. local rank/size, node rank and node count follow from the ranks'
 *      hosts (nodes in order of their lowest rank), MASTER_ADDR is rank
 *      0's host; rank 0 writes DIR/hosts for dtctl and removes the token
 *      file, which every rank has read by then;
 *   4. run the program with stdout/stderr in DIR/out.R and DIR/err.R,
 *      and write its exit code to DIR/exit.R.
 * The token comes from DIR/token (0600 in a 0700 directory): it is in no
 * argv and not in the application's submission context. */
#define _GNU_SOURCE
#include <string.h>

#include "yarn.h"

static int script_sets(const char *entry)
{
    static const char *const keys[] = {
        "DT_RANK", "DT_LOCAL_RANK", "DT_LOCAL_SIZE", "DT_NODE_RANK",
        "DT_NUM_NODES", "DT_HOST", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "DT_JOB_TOKEN",
        "ROLE_RANK", NULL};
    for (int i = 0; keys[i]; i++) {
        size_t k = strlen(keys[i]);
        if (strncmp(entry, keys[i], k) == 0 && entry[k] == '=')
            return 1;
    }
    return 0;
}

static const char body[] =
    "fail() { echo \"dt: $*\" >&2; exit 1; }\n"
    "IFS= read -r DT_JOB_TOKEN <\"$dir/token\" || fail \"cannot read the "
    "job token from $dir/token (is the job directory shared with this "
    "NodeManager?)\"\n"
    "export DT_JOB_TOKEN\n"
    "r=0\n"
    "until mkdir \"$dir/rank.$r\" 2>/dev/null; do\n"
    "    r=$((r + 1))\n"
    "    [ \"$r\" -lt \"$np\" ] || fail \"more containers than the $np ranks "
    "of the job\"\n"
    "done\n"
    "host=${NM_HOST:-$(hostname)}\n"
    "case $host in ''|*[!A-Za-z0-9._-]*) host=$(hostname);; esac\n"
    "exec >\"$dir/out.$r\" 2>\"$dir/err.$r\"\n"
    "echo \"$host\" >\"$dir/rank.$r/host.tmp\" && "
    "mv -f \"$dir/rank.$r/host.tmp\" \"$dir/rank.$r/host\" || "
    "fail \"cannot write $dir/rank.$r/host\"\n"
    "waited=0\n"
    "while :; do\n"
    "    k=0\n"
    "    while [ \"$k\" -lt \"$np\" ] && [ -f \"$dir/rank.$k/host\" ]; do "
    "k=$((k + 1)); done\n"
    "    [ \"$k\" -lt \"$np\" ] || break\n"
    "    [ \"$waited\" -lt \"$limit\" ] || fail \"only $k of $np containers "
    "started within $((limit / 5)) s ([launcher.yarn] start_timeout)\"\n"
    "    sleep 0.2; waited=$((waited + 1))\n"
    "done\n"
    "seen=' '; nodes=0; lr=0; ls=0; k=0; master=\n"
    "while [ \"$k\" -lt \"$np\" ]; do\n"
    "    read -r h <\"$dir/rank.$k/host\"\n"
    "    [ -n \"$master\" ] || master=$h\n"
    "    case $seen in *\" $h \"*) ;; *) seen=\"$seen$h \"; "
    "nodes=$((nodes + 1));; esac\n"
    "    if [ \"$h\" = \"$host\" ]; then\n"
    "        [ \"$k\" -lt \"$r\" ] && lr=$((lr + 1))\n"
    "        ls=$((ls + 1))\n"
    "    fi\n"
    "    k=$((k + 1))\n"
    "done\n"
    "node=0\n"
    "for h in $seen; do [ \"$h\" = \"$host\" ] && break; node=$((node + 1)); "
    "done\n"
    "if [ \"$r\" -eq 0 ]; then\n"
    "    k=0; : >\"$dir/hosts.tmp\"\n"
    "    while [ \"$k\" -lt \"$np\" ]; do read -r h <\"$dir/rank.$k/host\"; "
    "echo \"$k $h\" >>\"$dir/hosts.tmp\"; k=$((k + 1)); done\n"
    "    mv -f \"$dir/hosts.tmp\" \"$dir/hosts\"\n"
    "    rm -f \"$dir/token\"\n"
    "fi\n"
    "export DT_RANK=$r DT_LOCAL_RANK=$lr DT_LOCAL_SIZE=$ls DT_NODE_RANK=$node "
    "DT_NUM_NODES=$nodes DT_HOST=$host RANK=$r ROLE_RANK=$r LOCAL_RANK=$lr "
    "LOCAL_WORLD_SIZE=$ls GROUP_RANK=$node GROUP_WORLD_SIZE=$nodes "
    "MASTER_ADDR=$master\n"
    "cd \"$wd\" || fail \"cannot change to $wd on $host\"\n"
    "\"$@\" </dev/null\n"
    "code=$?\n"
    "echo \"$code\" >\"$dir/exit.$r.tmp\" && mv -f \"$dir/exit.$r.tmp\" "
    "\"$dir/exit.$r\"\n"
    "exit \"$code\"\n";

dt_status_t yarn_worker_script(const dt_launch_spec_t *spec, const char *dir,
                               const char *workdir, int start_timeout_s,
                               strbuf_t *out)
{
    sb_add(out, "#!/bin/sh\n# Container script written by dtctl (the yarn "
                "launcher); see docs/LAUNCHERS.md.\ndir=");
    sb_quote(out, dir);
    sb_addf(out, "\nnp=%d\nlimit=%d\nwd=", spec->np, start_timeout_s * 5);
    sb_quote(out, workdir);
    sb_add(out, "\n");
    for (size_t i = 0; spec->env && spec->env[i]; i++) {
        if (!strchr(spec->env[i], '=') || script_sets(spec->env[i]))
            continue;
        sb_add(out, "export ");
        sb_quote(out, spec->env[i]);
        sb_add(out, "\n");
    }
    sb_add(out, "set --");
    for (size_t i = 0; spec->argv[i]; i++) {
        sb_add(out, " ");
        sb_quote(out, spec->argv[i]);
    }
    sb_add(out, "\n");
    sb_add(out, body);
    return sb_status(out);
}
