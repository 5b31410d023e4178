/* fuzz_config.c — the job-file parser and validation: any bytes as an ini
 * file, then every typed getter on what came in. Must never crash, leak
 * or hang; bad input is an error naming file:line. */
#include <dt/config.h>
#include <dt/log.h>
#include "fuzz.h"

static int get_all(const char *section, const char *key, const char *value,
                    dt_config_source_t src, const char *where, void *arg)
{
    const dt_config_t *cfg = arg;
    const char *s;
    long long i;
    bool b;
    uint64_t z;
    double d;
    char **items = NULL;
    size_t n = 0;
    (void)value;
    (void)src;
    (void)where;
    dt_config_get_string(cfg, section, key, &s);
    dt_config_get_int(cfg, section, key, &i);
    dt_config_get_bool(cfg, section, key, &b);
    dt_config_get_size(cfg, section, key, &z);
    dt_config_get_duration(cfg, section, key, &d);
    dt_config_get_double(cfg, section, key, &d);
    if (dt_config_get_list(cfg, section, key, &items, &n) == DT_OK)
        dt_strv_free(items);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_config_t *cfg = NULL;
    const char *path = fuzz_scratch_file(data, size, ".ini");
    if (!path || dt_config_new(&cfg) != DT_OK)
        return 0;
    if (dt_config_load_file(cfg, path, DT_SRC_JOB_FILE) == DT_OK) {
        dt_config_validate(cfg, NULL, NULL);
        dt_config_foreach(cfg, get_all, cfg);
    }
    dt_config_free(cfg);
    return 0;
}
