/* conf.c — the settings the job-directory launchers (sge, yarn) read
 * alike: a duration key in milliseconds, the home directory that their
 * default shared_dir (~/.dt/NAME) is under. */
#define _GNU_SOURCE
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <dt/log.h>
#include "jobdir.h"

dt_status_t jobdir_conf_ms(const dt_config_t *cfg, const char *section,
                           const char *key, int *ms)
{
    double s = 0;
    DT_CHECK(dt_config_get_duration(cfg, section, key, &s));
    if (s <= 0 || s > 86400) {
        dt_error("[%s] %s must be between 1ms and 24h", section, key);
        return DT_ERR_CONFIG;
    }
    *ms = s * 1000 < 1 ? 1 : (int)(s * 1000);
    return DT_OK;
}

const char *jobdir_home(void)
{
    const char *home = getenv("HOME");
    /* HOME unset or empty (a minimal environment): the passwd entry's. */
    struct passwd *pw = home && *home ? NULL : getpwuid(getuid());
    if (pw)
        home = pw->pw_dir;
    return home && *home ? home : NULL;
}
