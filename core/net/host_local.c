/* host_local.c — recognise names of this machine without DNS. */
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <dt/hosts.h>

/* a equals b, or a equals b's first label ("node1" vs "node1.example"). */
static int same_host(const char *a, const char *b)
{
    if (strcasecmp(a, b) == 0)
        return 1;
    size_t short_len = strcspn(b, ".");
    return strlen(a) == short_len && strncasecmp(a, b, short_len) == 0;
}

int dt_host_is_local(const char *name)
{
    if (!name || !*name)
        return 0;
    if (strcasecmp(name, "localhost") == 0 ||
        strcasecmp(name, "localhost.localdomain") == 0 ||
        strcmp(name, "::1") == 0 || strncmp(name, "127.", 4) == 0)
        return 1;
    char self[256];
    if (gethostname(self, sizeof self) != 0)
        return 0;
    self[sizeof self - 1] = '\0';
    return same_host(name, self) || same_host(self, name);
}
