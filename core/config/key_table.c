/* key_table.c — a plugin's key table checked before it is used
 * (key_table.h). */
#include <stdio.h>
#include <string.h>

#include "config_internal.h"
#include "key_table.h"

/* Bytes no ini line or --set can hold inside a key: blanks and control
 * characters (trimmed or ending the line), '=' and ':' (inih splits
 * there), '.' (--set splits at the last one), '#' ';' '[' ']' (comments
 * and sections). */
static int unspellable_byte(unsigned char c)
{
    return c <= ' ' || c == 0x7f || strchr(".=:#;[]", c) != NULL;
}

static int valid_key_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > CFG_KEY_NAME_MAX)
        return 0;
    for (const char *c = name; *c; c++)
        if (unspellable_byte((unsigned char)*c))
            return 0;
    return 1;
}

int cfg_key_table_problem(const char *section, const dt_key_spec_t *keys,
                          char *why, size_t len)
{
    char pn[CFG_KEY_NAME_MAX + 8], pe[CFG_KEY_NAME_MAX + 8], pv[160];
    for (const dt_key_spec_t *k = keys; k && k->name; k++) {
        dt_config_printable(k->name, pn, sizeof pn);
        if (!valid_key_name(k->name)) {
            snprintf(why, len, "key '%s': " CFG_KEY_NAME_RULE, pn);
            return -1;
        }
        for (const dt_key_spec_t *e = keys; e < k; e++)
            if (strcmp(e->name, k->name) == 0) {
                snprintf(why, len, "key '%s' is declared twice (entries "
                         "%d and %d of its table)", pn, (int)(e - keys) + 1,
                         (int)(k - keys) + 1);
                return -1;
            }
        /* DT_<SECTION>_<KEY> upper-cases and writes '-' as '_': two such
         * keys would both take the one variable's value. */
        char ke[256], ee[256], pk[300];
        dt_config_env_name(section, k->name, ke, sizeof ke);
        for (const dt_key_spec_t *e = keys; e < k; e++) {
            dt_config_env_name(section, e->name, ee, sizeof ee);
            if (strcmp(ke, ee) == 0) {
                snprintf(why, len, "keys '%s' and '%s' (entries %d and %d "
                         "of its table) are both set by the variable %s "
                         "(upper case, '-' as '_')",
                         dt_config_printable(e->name, pe, sizeof pe), pn,
                         (int)(e - keys) + 1, (int)(k - keys) + 1,
                         dt_config_printable(ke, pk, sizeof pk));
                return -1;
            }
        }
        if ((unsigned)k->type > DT_KEY_WORDS) {
            snprintf(why, len, "key '%s' has type %d, which is no "
                     "dt_key_type_t (DT_KEY_STRING to DT_KEY_WORDS): its "
                     "values would go unchecked", pn, (int)k->type);
            return -1;
        }
        if (k->default_value &&
            cfg_value_parses(k->default_value, k->type) == DT_ERR_INVALID) {
            snprintf(why, len, "key '%s': its default '%s' %s", pn,
                     dt_config_printable(k->default_value, pv, sizeof pv),
                     cfg_type_expectation(k->type));
            return -1;
        }
    }
    return 0;
}
