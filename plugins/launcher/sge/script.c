/* script.c — the job script qsub runs on the first host of the job. It
 * reads $PE_HOSTFILE, numbers the ranks host by host by slots (as dtctl
 * does for a host list), writes DIR/hosts, then starts every worker with
 * `qrsh -inherit HOST CMD` (tight integration: SGE accounts for the
 * workers and kills them on qdel). Each worker's stdout/stderr go to
 * DIR/out.R and DIR/err.R and its exit code to DIR/exit.R; the script
 * exits with the first failing rank's code.
 *
 * The job token is not in this script: it reads DIR/token (0600, in a
 * 0700 directory), deletes it, and hands the token to each worker on
 * qrsh's stdin, so it is in no argv, no SGE environment list (qstat -j)
 * and no spool file. qrsh runs its command through the remote user's
 * shell, so every word of it is quoted for that shell here, and quoted
 * once more as a value of this script. */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include "sge.h"

/* The worker's own start: take the token from stdin, read dtctl's
 * environment when export_env wrote it (DT_SGE_ENV names the file), then
 * become the program with stdin on /dev/null. */
static const char starter[] =
    "/bin/sh -c 'IFS= read -r DT_JOB_TOKEN || { echo \"dt: the job token "
    "did not arrive on stdin\" >&2; exit 1; }; export DT_JOB_TOKEN; "
    "if [ -n \"${DT_SGE_ENV:-}\" ]; then [ -r \"$DT_SGE_ENV\" ] || { echo "
    "\"dt: cannot read the job environment $DT_SGE_ENV on $(hostname) "
    "([launcher.sge] export_env; shared_dir must be visible on every "
    "host)\" >&2; exit 1; }; . \"$DT_SGE_ENV\"; unset DT_SGE_ENV; fi; "
    "exec \"$@\" </dev/null' dt-worker";

/* Variables the script sets per rank (or from $PE_HOSTFILE); the ones
 * dtctl computed from its own host list do not apply under SGE. */
int sge_script_sets(const char *entry)
{
    static const char *const keys[] = {
        "DT_RANK", "DT_LOCAL_RANK", "DT_LOCAL_SIZE", "DT_NODE_RANK",
        "DT_NUM_NODES", "DT_HOST", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "DT_JOB_TOKEN",
        "ROLE_RANK", "DT_SGE_ENV", NULL};
    for (int i = 0; keys[i]; i++) {
        size_t k = strlen(keys[i]);
        if (strncmp(entry, keys[i], k) == 0 && entry[k] == '=')
            return 1;
    }
    return 0;
}

static void assign(strbuf_t *out, const char *var, const strbuf_t *words)
{
    sb_addf(out, "%s=", var);
    sb_quote(out, words->s ? words->s : "");
    sb_add(out, "\n");
}

static const char body[] =
    "fail() { echo \"dt: $*\" >&2; exit 1; }\n"
    "[ -n \"${PE_HOSTFILE:-}\" ] && [ -r \"$PE_HOSTFILE\" ] ||\n"
    "    fail \"no readable \\$PE_HOSTFILE: the job must run in a parallel "
    "environment (qsub -pe)\"\n"
    "IFS= read -r tok <\"$dir/token\" || fail \"cannot read the job token "
    "from $dir/token\"\n"
    "rm -f \"$dir/token\"\n"
    "qrsh=qrsh\n"
    "[ -n \"${SGE_ROOT:-}\" ] && [ -n \"${ARC:-}\" ] && "
    "[ -x \"$SGE_ROOT/bin/$ARC/qrsh\" ] && qrsh=$SGE_ROOT/bin/$ARC/qrsh\n"
    "# Ranks host by host, as many on each host as it has slots.\n"
    "rank=0; node=0; master=\n"
    ": >\"$dir/hosts.tmp\" || fail \"cannot write $dir/hosts.tmp\"\n"
    "while read -r h s rest; do\n"
    "    [ \"$rank\" -lt \"$np\" ] || break\n"
    "    case $h in ''|*[!A-Za-z0-9._-]*) fail \"unexpected host name '$h' "
    "in $PE_HOSTFILE\";; esac\n"
    "    case $s in ''|*[!0-9]*) fail \"unexpected slot count '$s' for $h "
    "in $PE_HOSTFILE\";; esac\n"
    "    [ -n \"$master\" ] || master=$h\n"
    "    n=$s; [ $((np - rank)) -lt \"$n\" ] && n=$((np - rank))\n"
    "    l=0\n"
    "    while [ \"$l\" -lt \"$n\" ]; do\n"
    "        echo \"$rank $h $l $n $node\" >>\"$dir/hosts.tmp\"\n"
    "        rank=$((rank + 1)); l=$((l + 1))\n"
    "    done\n"
    "    node=$((node + 1))\n"
    "done <\"$PE_HOSTFILE\"\n"
    "[ \"$rank\" -eq \"$np\" ] || fail \"SGE granted $rank slots in "
    "$PE_HOSTFILE; the job needs $np\"\n"
    "nodes=$node\n"
    "mv -f \"$dir/hosts.tmp\" \"$dir/hosts\" || fail \"cannot write "
    "$dir/hosts\"\n"
    "run_rank() { # rank host local_rank local_size node_rank\n"
    "    printf '%s\\n' \"$tok\" | \"$qrsh\" -inherit \"$2\" \"cd $wd && exec "
    "env DT_RANK=$1 DT_LOCAL_RANK=$3 DT_LOCAL_SIZE=$4 DT_NODE_RANK=$5 "
    "DT_NUM_NODES=$nodes DT_HOST=$2 RANK=$1 ROLE_RANK=$1 LOCAL_RANK=$3 "
    "LOCAL_WORLD_SIZE=$4 GROUP_RANK=$5 GROUP_WORLD_SIZE=$nodes "
    "MASTER_ADDR=$master $common $starter $prog\" "
    ">\"$dir/out.$1\" 2>\"$dir/err.$1\"\n"
    "    code=$?\n"
    "    echo \"$code\" >\"$dir/exit.$1.tmp\" && mv -f \"$dir/exit.$1.tmp\" "
    "\"$dir/exit.$1\"\n"
    "    if [ \"$code\" -ne 0 ] && mkdir \"$dir/failed\" 2>/dev/null; then\n"
    "        echo \"$code\" >\"$dir/failed/code\"\n"
    "    fi\n"
    "}\n"
    "while read -r r h l n k; do\n"
    "    run_rank \"$r\" \"$h\" \"$l\" \"$n\" \"$k\" &\n"
    "done <\"$dir/hosts\"\n"
    "wait\n"
    "code=0\n"
    "[ -f \"$dir/failed/code\" ] && read -r code <\"$dir/failed/code\"\n"
    "exit \"$code\"\n";

dt_status_t sge_script(const dt_launch_spec_t *spec, const char *dir,
                       const char *workdir, int env_file, strbuf_t *out)
{
    strbuf_t common = {0}, prog = {0}, wd = {0}, st = {0}, ef = {0};
    for (size_t i = 0; spec->env && spec->env[i]; i++) {
        if (!strchr(spec->env[i], '=') || sge_script_sets(spec->env[i]))
            continue;
        sb_quote(&common, spec->env[i]);
        sb_add(&common, " ");
    }
    if (env_file) {
        sb_addf(&ef, "DT_SGE_ENV=%s/%s", dir, SGE_ENV_FILE);
        sb_quote(&common, ef.s ? ef.s : "");
        sb_add(&common, " ");
        sb_free(&ef);
    }
    for (size_t i = 0; spec->argv[i]; i++) {
        if (i)
            sb_add(&prog, " ");
        sb_quote(&prog, spec->argv[i]);
    }
    sb_quote(&wd, workdir);
    sb_add(&st, starter);
    sb_add(out, "#!/bin/sh\n"
                "# Job script written by dtctl (the sge launcher). It starts "
                "the workers\n# with qrsh -inherit on the hosts in "
                "$PE_HOSTFILE; see docs/LAUNCHERS.md.\n");
    sb_add(out, "dir=");
    sb_quote(out, dir);
    sb_addf(out, "\nnp=%d\n", spec->np);
    assign(out, "wd", &wd);
    assign(out, "common", &common);
    assign(out, "starter", &st);
    assign(out, "prog", &prog);
    sb_add(out, body);
    dt_status_t s = DT_OK;
    if (sb_status(&common) || sb_status(&prog) || sb_status(&wd) ||
        sb_status(&st) || sb_status(out))
        s = DT_ERR_NOMEM;
    sb_free(&common);
    sb_free(&prog);
    sb_free(&wd);
    sb_free(&st);
    return s;
}
