/* gen_config_man.c — writes dt-config(5) from the key tables in the code:
 * the core sections (core/config/config_schema.c, the collectives' table)
 * and every plugin module in MODULES_DIR (each plugin's dt_plugin_t.keys).
 * Run by the build (man/Makefile.am), so the page cannot drift from the
 * tables. With --keys it prints "section.key" lines instead (the test
 * checks each appears in the page).
 *
 *   gen-config-man VERSION MODULES_DIR > dt-config.5
 *   gen-config-man --keys MODULES_DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dt/config.h>
#include <dt/loader.h>
#include <dt/log.h>
#include <dt/plugin.h>
#include "config/config_schema.h"

static const char *type_name(dt_key_type_t t)
{
    switch (t) {
    case DT_KEY_STRING: return "string";
    case DT_KEY_INT: return "integer";
    case DT_KEY_BOOL: return "boolean";
    case DT_KEY_SIZE: return "size";
    case DT_KEY_DURATION: return "duration";
    case DT_KEY_LIST: return "list";
    case DT_KEY_DOUBLE: return "number";
    case DT_KEY_WORDS: return "words";
    }
    return "value";
}

/* Text for roff: backslashes escaped, hyphens as \-, no line starting
 * with a control character; a break point after / and >. */
static void roff(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
        if (*s == '/' || *s == '>')
            fputs("\\:", f); /* a place to break a long path */
    }
}

static void section(FILE *f, const char *name, const dt_key_spec_t *keys,
                    const char *what, int keys_only)
{
    if (keys_only) {
        for (const dt_key_spec_t *k = keys; k && k->name; k++)
            printf("%s.%s\n", name, k->name);
        return;
    }
    fprintf(f, ".SS [%s]\n", name);
    if (what) {
        roff(f, what);
        fputc('\n', f);
    }
    for (const dt_key_spec_t *k = keys; k && k->name; k++) {
        fputs(".TP\n.B ", f);
        roff(f, k->name);
        fprintf(f, "\n(%s; default: ", type_name(k->type));
        if (k->default_value)
            fputs("\\fB", f), roff(f, k->default_value), fputs("\\fR", f);
        else
            fputs("unset", f);
        fputs(")\n.br\n", f);
        roff(f, k->doc ? k->doc : "");
        fputc('\n', f);
        /* The environment variable: DT_<SECTION>_<KEY>, dots as _. */
        fputs(".br\nEnvironment: \\fBDT_", f);
        for (const char *c = name; *c; c++)
            fputc(*c == '.' || *c == '-' ? '_' : (*c >= 'a' && *c <= 'z')
                                                     ? *c - 32 : *c, f);
        fputc('_', f);
        for (const char *c = k->name; *c; c++)
            fputc((*c >= 'a' && *c <= 'z') ? *c - 32 : *c, f);
        fputs("\\fR.\n", f);
    }
}

static const char head[] =
    ".TH DT\\-CONFIG 5 \"\" \"dt %s\" \"dt manual\"\n"
    ".SH NAME\n"
    "dt\\-config \\- configuration keys of dt, the distributed training "
    "framework\n"
    ".SH SYNOPSIS\n"
    ".B conf/cluster.ini\n"
    "(cluster file),\n"
    ".I JOB.ini\n"
    "(job file),\n"
    ".BI DT_ SECTION _ KEY\n"
    "(environment),\n"
    ".B dtctl \\-\\-set\n"
    ".IB section . key = value\n"
    ".ad l\n"
    ".SH DESCRIPTION\n"
    "Every setting of dt is a key of an INI section.\n"
    "The same key may come from several layers; the first that sets it "
    "wins:\n"
    "the command line (\\fB\\-\\-set\\fR, \\fB\\-n\\fR, \\fB\\-\\-launcher\\fR "
    "and the other options of \\fBdtctl\\fR(1)),\n"
    "the environment (\\fBDT_\\fISECTION\\fB_\\fIKEY\\fR, upper case, dots "
    "of a plugin section as underscores),\n"
    "the job file,\n"
    "the cluster file (\\fB\\-\\-config\\fR, \\fB$DT_CONFIG\\fR, else "
    "\\fI./conf/cluster.ini\\fR),\n"
    "and the built\\-in defaults below.\n"
    "\\fBdtctl config\\fR shows every effective value and where it came "
    "from.\n"
    "An unknown key or a value of the wrong type is an error naming the "
    "file and line.\n"
    ".PP\n"
    "Types: \\fIinteger\\fR; \\fInumber\\fR (a finite decimal); "
    "\\fIboolean\\fR (yes/no, true/false, on/off, 1/0);\n"
    "\\fIsize\\fR (bytes with K, M, G or T, powers of 2); \\fIduration\\fR "
    "(seconds, or with ns, us, ms, s, m, h);\n"
    "\\fIlist\\fR (comma\\- or space\\-separated); \\fIwords\\fR "
    "(another program's options, split at blanks as sh would: quotes and "
    "\\e group and escape, commas stay); \\fIstring\\fR.\n"
    ".PP\n"
    "This page is generated from the key tables in dt's code "
    "(core/config/config_schema.c and each plugin's table) when dt is "
    "built, so it lists exactly the keys this build knows.\n"
    ".SH CORE SECTIONS\n";

typedef struct walk {
    const char *dir;
    int keys_only;
} walk_t;

int main(int argc, char **argv)
{
    int keys_only = argc == 3 && strcmp(argv[1], "--keys") == 0;
    if (argc != 3) {
        fprintf(stderr, "usage: %s VERSION|--keys MODULES_DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[2];
    dt_log_set_level(DT_LOG_ERROR);
    setenv("DT_PLUGIN_PATH", dir, 1);
    if (!keys_only)
        printf(head, argv[1]);
    for (const dt_core_schema_t *s = dt_config_core_schemas(); s->section;
         s++)
        section(stdout, s->section, s->keys, NULL, keys_only);
    dt_plugin_entry_t *e = NULL;
    size_t n = 0;
    if (dt_plugin_scan(&e, &n) != DT_OK) {
        fprintf(stderr, "%s: cannot scan %s\n", argv[0], dir);
        return 1;
    }
    size_t dl = strlen(dir);
    if (!keys_only)
        printf(".SH PLUGIN SECTIONS\n"
               "Each plugin reads the keys of its own section, "
               "\\fB[\\fIkind\\fB.\\fIname\\fB]\\fR, e.g. "
               "\\fB[transport.tcp]\\fR. The plugins of this build:\n");
    for (size_t i = 0; i < n; i++) {
        /* only this build's modules, never an installed copy */
        if (strncmp(e[i].path, dir, dl) != 0 || e[i].path[dl] != '/')
            continue;
        const dt_plugin_t *p;
        char why[512];
        if (dt_plugin_load_file(e[i].path, &p, why, sizeof why) != DT_OK) {
            fprintf(stderr, "%s: %s: %s\n", argv[0], e[i].path, why);
            return 1;
        }
        char name[160];
        snprintf(name, sizeof name, "%s.%s", dt_kind_name(p->kind), p->name);
        char what[400];
        snprintf(what, sizeof what, "%s %s: %s%s", dt_kind_name(p->kind),
                 p->name, p->description ? p->description : "",
                 p->keys && p->keys->name ? "." : " (no keys).");
        section(stdout, name, p->keys, what, keys_only);
    }
    dt_plugin_entries_free(e, n);
    if (!keys_only)
        printf(".SH FILES\n"
               ".TP\n.I conf/cluster.ini\n"
               "the annotated cluster file: every key of the core and the "
               "default plugins, commented out.\n"
               ".SH SEE ALSO\n"
               "\\fBdtctl\\fR(1), \\fBdt\\-plugins\\fR(7); docs/CONFIG.md "
               "(hostfiles, placement).\n");
    dt_plugins_unload_all();
    return 0;
}
