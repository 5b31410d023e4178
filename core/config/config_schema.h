/* config_schema.h — the core sections' key tables ([cluster], [train],
 * [model], [data]). Internal to libdt: dt_config_new() registers them. */
#ifndef DT_CONFIG_SCHEMA_H
#define DT_CONFIG_SCHEMA_H

#include <dt/config.h>

typedef struct dt_core_schema {
    const char *section;
    const dt_key_spec_t *keys;
} dt_core_schema_t;

/* The core schemas in the order `dtctl config` shows them; the entry after
 * the last has section NULL. */
const dt_core_schema_t *dt_config_core_schemas(void);

#endif /* DT_CONFIG_SCHEMA_H */
