/* key_table.h — is a plugin's key table (dt_plugin_t.keys) one the
 * configuration can hold? The loader asks before it takes the plugin: a
 * key declared twice, a type the core does not know (its values then went
 * unchecked), a default that is not of the key's type, or a name that no
 * ini line, DT_* variable or --set can spell were taken silently. */
#ifndef DT_CONFIG_KEY_TABLE_H
#define DT_CONFIG_KEY_TABLE_H

#include <stddef.h>

#include <dt/config.h>

/* Key names: what an ini line, a DT_<SECTION>_<KEY> variable and --set
 * SECTION.KEY=VALUE all spell the same way (the core's keys follow it). */
#define CFG_KEY_NAME_MAX 64
#define CFG_KEY_NAME_RULE                                                     \
    "key names are lower case letters, digits and '_', starting with a "      \
    "letter (1 to 64)"

/* 0 when keys (NULL-name terminated) is sound; else -1 with the first
 * problem, naming the key, written into why. */
int cfg_key_table_problem(const dt_key_spec_t *keys, char *why, size_t len);

#endif /* DT_CONFIG_KEY_TABLE_H */
