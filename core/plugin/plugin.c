/* plugin.c — the plugin loader: search path, libltdl loading, ABI checks.
 * See plugin_loader.h for the contract. */
#define _GNU_SOURCE
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <ltdl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dt/log.h>
#include "config/config_internal.h"
#include "config/key_table.h"
#include "plugin_crash.h"
#include "plugin_isolate.h"
#include "plugin_loader.h"

#define PLUGIN_PREFIX "dt_"
#define PLUGIN_SUFFIX ".so"

/* Every file we loaded, kept open until dt_plugins_unload_all(): plugin
 * structs and key tables point into them. */
typedef struct loaded {
    char *path;
    lt_dlhandle handle;
    const dt_plugin_t *plugin;
    char *broken; /* how its `available` crashed or hung: never run again */
    int available_ok; /* its isolated check passed: no fork for it again */
    struct loaded *next;
} loaded_t;

static loaded_t *loaded_list;
static int ltdl_ready;
static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;

static int ltdl_init(void)
{
    if (!ltdl_ready && lt_dlinit() == 0)
        ltdl_ready = 1;
    return ltdl_ready;
}

/* The build tree's module dir, used only when this very libdt was loaded
 * from inside the build tree (an installed libdt never looks there). */
static const char *build_tree_plugin_dir(void)
{
#ifdef DT_BUILD_DIR
    Dl_info info;
    if (dladdr((void *)&build_tree_plugin_dir, &info) && info.dli_fname) {
        size_t n = strlen(DT_BUILD_DIR);
        if (strncmp(info.dli_fname, DT_BUILD_DIR, n) == 0 &&
            info.dli_fname[n] == '/')
            return DT_BUILD_DIR "/plugins/modules";
    }
#endif
    return NULL;
}

static int strv_push(char ***v, size_t *n, const char *s)
{
    char **nv = realloc(*v, (*n + 2) * sizeof *nv);
    if (!nv)
        return -1;
    *v = nv;
    if (!(nv[*n] = strdup(s)))
        return -1;
    nv[++*n] = NULL;
    return 0;
}

char **dt_plugin_search_path(void)
{
    char **dirs = calloc(1, sizeof *dirs);
    size_t n = 0;
    if (!dirs)
        return NULL;
    const char *env = getenv("DT_PLUGIN_PATH");
    if (env && *env) {
        char *copy = strdup(env), *save = NULL;
        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d;
             d = strtok_r(NULL, ":", &save))
            strv_push(&dirs, &n, d);
        free(copy);
    }
    const char *build = build_tree_plugin_dir();
    if (build)
        strv_push(&dirs, &n, build);
    /* <dir of this libdt>/dt: an installation staged with DESTDIR or moved
     * whole finds its own plugins (the same as DT_PLUGIN_DIR when
     * installed where configured). */
    Dl_info info;
    if (!build && dladdr((void *)&dt_plugin_search_path, &info) &&
        info.dli_fname && strchr(info.dli_fname, '/')) {
        char beside[4096];
        const char *slash = strrchr(info.dli_fname, '/');
        snprintf(beside, sizeof beside, "%.*s/dt",
                 (int)(slash - info.dli_fname), info.dli_fname);
        char *real = realpath(beside, NULL), *conf = realpath(DT_PLUGIN_DIR, NULL);
        if (real && (!conf || strcmp(real, conf) != 0))
            strv_push(&dirs, &n, beside);
        free(real);
        free(conf);
    }
    strv_push(&dirs, &n, DT_PLUGIN_DIR);
    return dirs;
}

static char *join_dirs(char **dirs)
{
    size_t len = 1;
    for (char **d = dirs; d && *d; d++)
        len += strlen(*d) + 1;
    char *s = calloc(1, len);
    for (char **d = dirs; s && d && *d; d++) {
        if (d != dirs)
            strcat(s, ":");
        strcat(s, *d);
    }
    return s;
}

/* Split "dt_<kind>_<name>.so"; 0 on success. name is malloc'd. */
static int parse_file_name(const char *base, dt_kind_t *kind, char **name)
{
    size_t len = strlen(base), pre = strlen(PLUGIN_PREFIX),
           suf = strlen(PLUGIN_SUFFIX);
    if (len <= pre + suf || strncmp(base, PLUGIN_PREFIX, pre) != 0 ||
        strcmp(base + len - suf, PLUGIN_SUFFIX) != 0)
        return -1;
    for (int k = 0; k < DT_KIND_COUNT; k++) {
        const char *kn = dt_kind_name((dt_kind_t)k);
        size_t kl = strlen(kn);
        if (strncmp(base + pre, kn, kl) == 0 && base[pre + kl] == '_' &&
            pre + kl + 1 < len - suf) {
            *kind = (dt_kind_t)k;
            *name = strndup(base + pre + kl + 1, len - suf - pre - kl - 1);
            return *name ? 0 : -1;
        }
    }
    return -1;
}

/* The one name rule, for file names (scan, load) and looked-up names
 * alike: a name that could not be a file's is never searched, and a file
 * whose name breaks it is refused, so listing and lookup agree. */
#define PLUGIN_NAME_MAX 64
#define PLUGIN_NAME_RULE                                                      \
    "plugin names are lower case letters, digits, '_' and '-' (1 to 64)"
/* A name in a message: 64 characters, then "..." (dt_config_printable
 * keeps 4 bytes for "..." and the NUL). */
#define PLUGIN_NAME_SHOWN (64 + 4)

static int valid_plugin_name(const char *name)
{
    if (!name || !*name || strlen(name) > PLUGIN_NAME_MAX)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return 0;
    return 1;
}

/* The ops each kind must have (dt/plugin.h): the core calls them without
 * asking, so a plugin lacking one is refused at load, where `dtctl
 * plugins` and dtctl run see it, not in every worker later. Each writes
 * the names of those NULL or beyond the table's size into out. */
static void launcher_missing(const void *table, char *out, size_t len)
{
    const dt_launcher_ops_t *ops = table;
    char missing[128] = "";
    DT_OPS_REQUIRE(missing, ops, dt_launcher_ops_t, init);
    DT_OPS_REQUIRE(missing, ops, dt_launcher_ops_t, launch);
    DT_OPS_REQUIRE(missing, ops, dt_launcher_ops_t, wait);
    DT_OPS_REQUIRE(missing, ops, dt_launcher_ops_t, signal);
    DT_OPS_REQUIRE(missing, ops, dt_launcher_ops_t, fini);
    snprintf(out, len, "%s", missing);
}

static void transport_missing(const void *table, char *out, size_t len)
{
    const dt_transport_ops_t *ops = table;
    char missing[128] = "";
    DT_OPS_REQUIRE(missing, ops, dt_transport_ops_t, init);
    DT_OPS_REQUIRE(missing, ops, dt_transport_ops_t, isend);
    DT_OPS_REQUIRE(missing, ops, dt_transport_ops_t, irecv);
    DT_OPS_REQUIRE(missing, ops, dt_transport_ops_t, test);
    DT_OPS_REQUIRE(missing, ops, dt_transport_ops_t, wait);
    DT_OPS_REQUIRE(missing, ops, dt_transport_ops_t, fini);
    snprintf(out, len, "%s", missing);
}

static void storage_missing(const void *table, char *out, size_t len)
{
    const dt_storage_ops_t *ops = table;
    char missing[128] = "";
    DT_OPS_REQUIRE(missing, ops, dt_storage_ops_t, init);
    DT_OPS_REQUIRE(missing, ops, dt_storage_ops_t, stage);
    DT_OPS_REQUIRE(missing, ops, dt_storage_ops_t, fini);
    snprintf(out, len, "%s", missing);
}

static void optimizer_missing(const void *table, char *out, size_t len)
{
    const dt_optimizer_ops_t *ops = table;
    char missing[128] = "";
    DT_OPS_REQUIRE(missing, ops, dt_optimizer_ops_t, create);
    DT_OPS_REQUIRE(missing, ops, dt_optimizer_ops_t, step);
    DT_OPS_REQUIRE(missing, ops, dt_optimizer_ops_t, state_size);
    DT_OPS_REQUIRE(missing, ops, dt_optimizer_ops_t, save);
    DT_OPS_REQUIRE(missing, ops, dt_optimizer_ops_t, load);
    DT_OPS_REQUIRE(missing, ops, dt_optimizer_ops_t, destroy);
    snprintf(out, len, "%s", missing);
}

/* 0 when p's ops table has every op its kind requires; else the refusal,
 * naming each op it lacks, in why. */
static int check_required_ops(const char *path, const dt_plugin_t *p,
                              char *why, size_t why_len)
{
    static const struct {
        void (*missing)(const void *table, char *out, size_t len);
        size_t size; /* the table as this dt knows it */
    } by_kind[DT_KIND_COUNT] = {
        [DT_KIND_LAUNCHER] = {launcher_missing, sizeof(dt_launcher_ops_t)},
        [DT_KIND_TRANSPORT] = {transport_missing, sizeof(dt_transport_ops_t)},
        [DT_KIND_STORAGE] = {storage_missing, sizeof(dt_storage_ops_t)},
        [DT_KIND_OPTIMIZER] = {optimizer_missing, sizeof(dt_optimizer_ops_t)},
    };
    char missing[128] = "";
    by_kind[p->kind].missing(p->ops, missing, sizeof missing);
    if (!*missing)
        return 0;
    /* Both sizes: a short one points at `size` (or an old header). */
    snprintf(why, why_len,
             "%s: %s plugin '%s' lacks the required op%s %s (NULL, or past "
             "its ops table's size: %zu bytes, of %zu in this dt); rebuild "
             "or fix the plugin (dt/plugin.h says which ops a %s plugin must "
             "have)",
             path, dt_kind_name(p->kind), p->name,
             strchr(missing, ',') ? "s" : "", missing,
             *(const size_t *)p->ops, by_kind[p->kind].size,
             dt_kind_name(p->kind));
    return -1;
}

/* The DT_KIND_* constant's suffix, for messages that say what to write. */
static const char *kind_upper(dt_kind_t kind)
{
    static const char *const names[DT_KIND_COUNT] = {
        [DT_KIND_LAUNCHER] = "LAUNCHER", [DT_KIND_TRANSPORT] = "TRANSPORT",
        [DT_KIND_STORAGE] = "STORAGE", [DT_KIND_OPTIMIZER] = "OPTIMIZER"};
    return (unsigned)kind < DT_KIND_COUNT ? names[kind] : "?";
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* lt_dlopen a file, or NULL with the reason in why. libltdl opens lazily
 * and reports only "file not found" when a library the file needs is
 * missing. Probe with RTLD_NOW first: it resolves every symbol now (no
 * crash later at first call) and dlerror() names the missing library or
 * symbol. The probe handle is held across lt_dlopen so the object is
 * mapped once; keep_probe (may be NULL) receives it instead of closing it.
 * Caller holds the lock. */
static lt_dlhandle open_probed(const char *path, void **keep_probe, char *why,
                               size_t why_len)
{
    if (!ltdl_init()) {
        snprintf(why, why_len, "libltdl failed to initialize: %s",
                 lt_dlerror());
        return NULL;
    }
    void *probe = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        const char *err = dlerror();
        snprintf(why, why_len, "%s: cannot be loaded: %s", path,
                 err ? err : "unknown error");
        return NULL;
    }
    lt_dlhandle h = lt_dlopen(path);
    if (!h) {
        const char *err = lt_dlerror();
        snprintf(why, why_len, "%s: cannot be loaded: %s", path,
                 err ? err : "unknown error");
    }
    if (h && keep_probe)
        *keep_probe = probe;
    else
        dlclose(probe);
    return h;
}

dt_status_t dt_module_open_resident(const char *path, const char *symbol,
                                    void **sym, char *why, size_t why_len)
{
    *sym = NULL;
    pthread_mutex_lock(&loader_lock);
    void *probe = NULL;
    dt_status_t st = DT_ERR_PLUGIN;
    lt_dlhandle h = open_probed(path, &probe, why, why_len);
    if (h) {
        /* Never unloaded: neither by lt_dlclose/lt_dlexit (resident) nor
         * by dlclose (the probe reference is kept). */
        lt_dlmakeresident(h);
        *sym = lt_dlsym(h, symbol);
        if (*sym)
            st = DT_OK;
        else
            snprintf(why, why_len, "%s: has no symbol '%s': not the file dt "
                     "expects there", path, symbol);
    }
    pthread_mutex_unlock(&loader_lock);
    return st;
}

/* Load one file and check the struct against its name. Caller holds lock. */
static dt_status_t load_file_locked(const char *path, const dt_plugin_t **out,
                                    char *why, size_t why_len)
{
    for (loaded_t *l = loaded_list; l; l = l->next)
        if (strcmp(l->path, path) == 0) {
            *out = l->plugin;
            return DT_OK;
        }
    dt_kind_t kind;
    char *name = NULL;
    if (parse_file_name(base_name(path), &kind, &name) != 0) {
        snprintf(why, why_len,
                 "%s: not a plugin file name (want dt_<kind>_<name>.so)",
                 path);
        return DT_ERR_PLUGIN;
    }
    if (!valid_plugin_name(name)) {
        snprintf(why, why_len,
                 "%s: '%s' is not a plugin name: " PLUGIN_NAME_RULE
                 "; rename the file and the plugin's .name",
                 path, name);
        free(name);
        return DT_ERR_PLUGIN;
    }
    dt_status_t st = DT_ERR_PLUGIN;
    lt_dlhandle h = open_probed(path, NULL, why, why_len);
    if (!h)
        goto out;
    const dt_plugin_t *p = lt_dlsym(h, DT_PLUGIN_SYMBOL);
    if (!p) {
        snprintf(why, why_len,
                 "%s: has no symbol '%s': not a dt plugin, or built without "
                 "DT_PLUGIN_EXPORT",
                 path, DT_PLUGIN_SYMBOL);
        goto close;
    }
    if (p->abi != DT_PLUGIN_ABI) {
        snprintf(why, why_len,
                 "%s: plugin ABI mismatch: found ABI %u, this dt needs ABI "
                 "%u; rebuild the plugin against this dt's headers",
                 path, (unsigned)p->abi, (unsigned)DT_PLUGIN_ABI);
        goto close;
    }
    if ((unsigned)p->kind >= DT_KIND_COUNT) { /* dt_kind_name: "invalid" */
        snprintf(why, why_len,
                 "%s: the plugin's .kind is %d, which is no dt_kind_t; set "
                 "it to DT_KIND_%s (dt/plugin.h), as the file name says",
                 path, (int)p->kind, kind_upper(kind));
        goto close;
    }
    if (p->kind != kind || !p->name || strcmp(p->name, name) != 0) {
        snprintf(why, why_len,
                 "%s: file name says %s '%s' but the plugin says it is %s "
                 "'%s'; rename the file or fix the plugin's struct",
                 path, dt_kind_name(kind), name, dt_kind_name(p->kind),
                 p->name ? p->name : "(null)");
        goto close;
    }
    if (!p->ops) {
        snprintf(why, why_len,
                 "%s: the plugin's .ops is NULL; point it at the plugin's "
                 "dt_%s_ops_t (dt/plugin.h)",
                 path, dt_kind_name(kind));
        goto close;
    }
    /* A size that cannot hold one op: most likely `.size` left out. */
    if (*(const size_t *)p->ops < sizeof(size_t) * 2) {
        snprintf(why, why_len,
                 "%s: the plugin's ops table says its size is %zu bytes, too "
                 "small for any op; set its .size = sizeof (the table) "
                 "(dt/plugin.h)",
                 path, *(const size_t *)p->ops);
        goto close;
    }
    if (check_required_ops(path, p, why, why_len) != 0)
        goto close;
    char problem[512], section[160];
    snprintf(section, sizeof section, "%s.%s", dt_kind_name(p->kind),
             p->name);
    if (cfg_key_table_problem(section, p->keys, problem, sizeof problem) !=
        0) {
        snprintf(why, why_len,
                 "%s: %s plugin '%s' has a bad key table: %s; fix the "
                 "plugin's .keys (dt/config.h, dt_key_spec_t)",
                 path, dt_kind_name(p->kind), p->name, problem);
        goto close;
    }
    loaded_t *l = calloc(1, sizeof *l);
    if (!l || !(l->path = strdup(path))) {
        free(l);
        snprintf(why, why_len, "out of memory");
        st = DT_ERR_NOMEM;
        goto close;
    }
    l->handle = h;
    l->plugin = p;
    l->next = loaded_list;
    loaded_list = l;
    *out = p;
    st = DT_OK;
    goto out;
close:
    lt_dlclose(h);
out:
    free(name);
    return st;
}

dt_status_t dt_plugin_load_file(const char *path, const dt_plugin_t **out,
                                char *why, size_t why_len)
{
    pthread_mutex_lock(&loader_lock);
    dt_status_t st = load_file_locked(path, out, why, why_len);
    pthread_mutex_unlock(&loader_lock);
    return st;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* First file for kind/name on the search path, malloc'd, or NULL. */
static char *find_plugin_file(dt_kind_t kind, const char *name, char **dirs)
{
    for (char **d = dirs; d && *d; d++) {
        char *path = NULL;
        if (asprintf(&path, "%s/" PLUGIN_PREFIX "%s_%s" PLUGIN_SUFFIX, *d,
                     dt_kind_name(kind), name) < 0)
            return NULL;
        if (file_exists(path))
            return path;
        free(path);
    }
    return NULL;
}

/* Why this build left out the in-tree plugin KIND NAME (DT_NOT_BUILT,
 * configure), as "; not built here: <why>", or "". */
static void not_built_hint(dt_kind_t kind, const char *name, char *buf,
                           size_t len)
{
    char key[96];
    snprintf(key, sizeof key, "%s %s: ", dt_kind_name(kind), name);
    buf[0] = '\0';
    for (const char *l = DT_NOT_BUILT; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (n > strlen(key) && !strncmp(l, key, strlen(key))) {
            snprintf(buf, len, "; this dt was built without it: %.*s",
                     (int)(n - strlen(key)), l + strlen(key));
            return;
        }
        l += n + (nl ? 1 : 0);
    }
}

static int call_available(void *arg, char *out, size_t out_len)
{
    const dt_plugin_t *p = arg;
    return p->available(out, out_len) == DT_OK;
}

/* p's own `available` check, in a child process: a third-party plugin
 * whose check crashes, exits or hangs is unavailable, saying so, and
 * takes neither dtctl nor the listing of the others with it. A check that
 * did not return is remembered: the loader does not run it again. */
static dt_status_t check_available(const dt_plugin_t *p, const char *path,
                                   char *why, size_t why_len)
{
    if (!p->available)
        return DT_OK;
    pthread_mutex_lock(&loader_lock);
    loaded_t *l = loaded_list;
    while (l && l->plugin != p)
        l = l->next;
    if (l && l->broken)
        snprintf(why, why_len, "%s", l->broken);
    int known_ok = l && l->available_ok;
    pthread_mutex_unlock(&loader_lock);
    if (l && l->broken)
        return DT_ERR_UNSUPPORTED;
    if (known_ok) /* "cheap, and not blocking": the answer holds */
        return DT_OK;
    dt_isolated_t res;
    if (dt_run_isolated(call_available, (void *)p, DT_PLUGIN_PROBE_TIMEOUT_S,
                        why, why_len, &res) != 0) {
        /* A worker, or no process to spare: ask it here, marked for the
         * crash report. */
        if (errno)
            dt_debug("%s: checking it in this process (fork: %s)", path,
                     strerror(errno));
        dt_plugin_call_t was = dt_plugin_call_begin(p, "available");
        dt_status_t st = p->available(why, why_len);
        dt_plugin_call_end(was);
        return st;
    }
    if (res.returned) {
        if (res.ret) {
            pthread_mutex_lock(&loader_lock);
            for (l = loaded_list; l; l = l->next)
                if (l->plugin == p)
                    l->available_ok = 1;
            pthread_mutex_unlock(&loader_lock);
        }
        return res.ret ? DT_OK : DT_ERR_UNSUPPORTED;
    }
    dt_isolated_describe(&res, "available", path, DT_PLUGIN_PROBE_TIMEOUT_S,
                         why, why_len);
    pthread_mutex_lock(&loader_lock);
    for (l = loaded_list; l; l = l->next)
        if (l->plugin == p && !l->broken)
            l->broken = strdup(why);
    pthread_mutex_unlock(&loader_lock);
    return DT_ERR_UNSUPPORTED;
}

dt_status_t dt_plugin_load(dt_kind_t kind, const char *name,
                           const dt_plugin_t **out, const char **path)
{
    if (!valid_plugin_name(name)) {
        char *names = dt_plugin_names(kind);
        /* Shown as far as a name may go (64), escaped: a long value would
         * push the rest out of the log line, a control byte reach the
         * terminal. */
        char shown[PLUGIN_NAME_SHOWN];
        dt_error("no %s plugin can be named '%s': " PLUGIN_NAME_RULE
                 "; available %ss: %s",
                 dt_kind_name(kind),
                 dt_config_printable(name, shown, sizeof shown),
                 dt_kind_name(kind), names ? names : "none");
        free(names);
        return DT_ERR_NOT_FOUND;
    }
    char **dirs = dt_plugin_search_path();
    char *file = find_plugin_file(kind, name, dirs);
    dt_status_t st;
    if (!file) {
        char *names = dt_plugin_names(kind), *where = join_dirs(dirs);
        char hint[256];
        not_built_hint(kind, name, hint, sizeof hint);
        dt_error("no %s plugin named '%s' (looked for dt_%s_%s.so in %s); "
                 "available %ss: %s%s",
                 dt_kind_name(kind), name ? name : "", dt_kind_name(kind),
                 name ? name : "", where ? where : "?", dt_kind_name(kind),
                 names ? names : "none", hint);
        free(names);
        free(where);
        st = DT_ERR_NOT_FOUND;
    } else {
        char why[1024];
        st = dt_plugin_load_file(file, out, why, sizeof why);
        if (st != DT_OK) {
            dt_error("%s plugin '%s': %s", dt_kind_name(kind), name, why);
        } else {
            char reason[512] = "";
            if (check_available(*out, file, reason, sizeof reason) !=
                DT_OK) {
                dt_error("%s plugin '%s' (%s) is not available here: %s",
                         dt_kind_name(kind), name, file, reason);
                st = DT_ERR_UNSUPPORTED;
            }
        }
        if (st == DT_OK && path) {
            /* Point at the copy kept in the loaded list. */
            for (loaded_t *l = loaded_list; l; l = l->next)
                if (l->plugin == *out)
                    *path = l->path;
        }
    }
    free(file);
    for (char **d = dirs; d && *d; d++)
        free(*d);
    free(dirs);
    return st;
}

static int entry_cmp(const void *a, const void *b)
{
    const dt_plugin_entry_t *x = a, *y = b;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    return strcmp(x->name, y->name);
}

dt_status_t dt_plugin_scan(dt_plugin_entry_t **out, size_t *n)
{
    char **dirs = dt_plugin_search_path();
    dt_plugin_entry_t *v = NULL;
    size_t count = 0;
    for (char **d = dirs; d && *d; d++) {
        DIR *dir = opendir(*d);
        if (!dir)
            continue;
        struct dirent *de;
        while ((de = readdir(dir))) {
            dt_kind_t kind;
            char *name = NULL;
            if (parse_file_name(de->d_name, &kind, &name) != 0)
                continue;
            int seen = 0;
            for (size_t i = 0; i < count; i++)
                if (v[i].kind == kind && strcmp(v[i].name, name) == 0)
                    seen = 1;
            dt_plugin_entry_t *nv =
                seen ? NULL : realloc(v, (count + 1) * sizeof *v);
            if (!nv) {
                free(name);
                continue;
            }
            v = nv;
            dt_plugin_entry_t *e = &v[count++];
            memset(e, 0, sizeof *e);
            e->kind = kind;
            e->name = name;
            if (asprintf(&e->path, "%s/%s", *d, de->d_name) < 0)
                e->path = NULL;
            const dt_plugin_t *p = NULL;
            if (e->path &&
                dt_plugin_load_file(e->path, &p, e->why, sizeof e->why) ==
                    DT_OK) {
                /* Never NULL once loaded: NULL says "refused" (a plugin
                 * that left them out loads, and runs). */
                e->version = p->version ? p->version : "";
                e->description = p->description ? p->description : "";
                e->available = check_available(p, e->path, e->why,
                                               sizeof e->why) == DT_OK;
            }
        }
        closedir(dir);
    }
    for (char **d = dirs; d && *d; d++)
        free(*d);
    free(dirs);
    if (count)
        qsort(v, count, sizeof *v, entry_cmp);
    *out = v;
    *n = count;
    return DT_OK;
}

/* The file names of kind's plugins on the search path: the first of each
 * name, sorted by name (malloc'd "path" strings, NULL-terminated). */
static char **kind_files(dt_kind_t kind)
{
    char **dirs = dt_plugin_search_path(), **files = NULL, **names = NULL;
    size_t n = 0;
    for (char **d = dirs; d && *d; d++) {
        DIR *dir = opendir(*d);
        if (!dir)
            continue;
        struct dirent *de;
        while ((de = readdir(dir))) {
            dt_kind_t k;
            char *name = NULL, *path = NULL;
            if (parse_file_name(de->d_name, &k, &name) != 0)
                continue;
            int seen = k != kind;
            for (size_t i = 0; !seen && i < n; i++)
                seen = strcmp(names[i], name) == 0;
            char **nf = seen ? NULL : realloc(files, (n + 2) * sizeof *nf);
            if (nf) {
                files = nf;
                files[n] = NULL; /* still a list when names' realloc fails */
            }
            char **nn = nf ? realloc(names, (n + 2) * sizeof *nn) : NULL;
            if (nn)
                names = nn;
            if (!nn || asprintf(&path, "%s/%s", *d, de->d_name) < 0) {
                free(name);
                continue;
            }
            /* insertion by name keeps the walk's order stable */
            size_t at = n;
            while (at > 0 && strcmp(names[at - 1], name) > 0) {
                names[at] = names[at - 1];
                files[at] = files[at - 1];
                at--;
            }
            names[at] = name;
            files[at] = path;
            files[++n] = NULL;
        }
        closedir(dir);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    for (char **d = dirs; d && *d; d++)
        free(*d);
    free(dirs);
    return files;
}

int dt_plugin_each(dt_kind_t kind,
                   int (*fn)(const dt_plugin_t *p, void *arg), void *arg)
{
    char **files = kind_files(kind);
    int r = 0;
    for (size_t i = 0; files && files[i]; i++) {
        const dt_plugin_t *p;
        char why[1024];
        if (r == 0) {
            if (dt_plugin_load_file(files[i], &p, why, sizeof why) == DT_OK)
                r = fn(p, arg);
            else
                dt_debug("skipping %s: %s", files[i], why);
        }
        free(files[i]);
    }
    free(files);
    return r;
}

void dt_plugin_entries_free(dt_plugin_entry_t *entries, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(entries[i].name);
        free(entries[i].path);
    }
    free(entries);
}

char *dt_plugin_names(dt_kind_t kind)
{
    dt_plugin_entry_t *v;
    size_t n;
    char *s = NULL;
    size_t len = 0;
    if (dt_plugin_scan(&v, &n) != DT_OK)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind != kind || !v[i].available)
            continue;
        size_t add = strlen(v[i].name) + 2;
        char *ns = realloc(s, len + add + 1);
        if (!ns)
            break;
        s = ns;
        len += (size_t)sprintf(s + len, "%s%s", len ? ", " : "", v[i].name);
    }
    dt_plugin_entries_free(v, n);
    return s ? s : strdup("none");
}

const dt_key_spec_t *dt_plugin_schema_lookup(const char *section, void *arg)
{
    (void)arg;
    const char *dot = section ? strchr(section, '.') : NULL;
    if (!dot)
        return NULL;
    for (int k = 0; k < DT_KIND_COUNT; k++) {
        const char *kn = dt_kind_name((dt_kind_t)k);
        if (strlen(kn) == (size_t)(dot - section) &&
            strncmp(section, kn, strlen(kn)) == 0) {
            static const dt_key_spec_t none[] = {{NULL, 0, NULL, NULL}};
            const dt_plugin_t *p;
            char **dirs = dt_plugin_search_path();
            char *file = valid_plugin_name(dot + 1)
                             ? find_plugin_file((dt_kind_t)k, dot + 1, dirs)
                             : NULL;
            char why[1024];
            const dt_key_spec_t *keys = NULL;
            if (file && dt_plugin_load_file(file, &p, why, sizeof why) == DT_OK)
                keys = p->keys ? p->keys : none;
            free(file);
            for (char **d = dirs; d && *d; d++)
                free(*d);
            free(dirs);
            return keys;
        }
    }
    return NULL;
}

void dt_plugins_unload_all(void)
{
    pthread_mutex_lock(&loader_lock);
    while (loaded_list) {
        loaded_t *l = loaded_list;
        loaded_list = l->next;
#ifdef __SANITIZE_THREAD__
        /* TSan's atexit interceptor runs every handler at exit, not at
         * dlclose: the one nvcc's static initializer registers in the nccl
         * transport (atexit(__cudaUnregisterBinaryUtil)) would be called
         * after dlclose unmapped it, and the process crashes on its way
         * out. Under TSan a plugin stays mapped. */
        lt_dlmakeresident(l->handle);
#endif
        lt_dlclose(l->handle);
        free(l->broken);
        free(l->path);
        free(l);
    }
    if (ltdl_ready) {
        lt_dlexit();
        ltdl_ready = 0;
    }
    pthread_mutex_unlock(&loader_lock);
}

const char *dt_plugin_path_of(const dt_plugin_t *p)
{
    for (const loaded_t *l = loaded_list; l; l = l->next)
        if (l->plugin == p)
            return l->path;
    return NULL;
}

void dt_ops_note_missing(char *missing, size_t len, int present,
                         const char *name)
{
    if (present || len == 0)
        return;
    size_t at = strlen(missing);
    snprintf(missing + at, len - at, "%s%s", at ? ", " : "", name);
}
