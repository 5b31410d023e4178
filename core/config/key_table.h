/* key_table.h — is a plugin's key table (dt_plugin_t.keys) one the
 * configuration can hold? The loader asks before it takes the plugin: a
 * key declared twice, a type the core does not know (its values then went
 * unchecked), a default that is not of the key's type, a name that no ini
 * line or --set can spell, or two keys set by one DT_* variable were taken
 * silently. */
#ifndef DT_CONFIG_KEY_TABLE_H
#define DT_CONFIG_KEY_TABLE_H

#include <stddef.h>

#include <dt/config.h>

/* Key names: anything an ini line ('key = value', split at the first '='
 * or ':'; a line starting with '#', ';' or '[' is no key) and --set
 * SECTION.KEY=VALUE (split at the last '.' before the first '=') can
 * spell, blanks around it trimmed by both. Out-of-tree plugins use '-'
 * and capitals (rx-depth, queueDepth): allowed. */
#define CFG_KEY_NAME_MAX 64
#define CFG_KEY_NAME_RULE                                                     \
    "a key name is 1 to 64 characters, none of them a blank, a control "      \
    "character or one of . = : # ; [ ] (an ini line and --set could not "     \
    "spell it)"

/* 0 when keys (NULL-name terminated), the keys of [section], is sound;
 * else -1 with the first problem, naming the key, written into why. */
int cfg_key_table_problem(const char *section, const dt_key_spec_t *keys,
                          char *why, size_t len);

#endif /* DT_CONFIG_KEY_TABLE_H */
