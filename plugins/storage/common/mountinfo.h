/* mountinfo.h — which mount a path is on, from the text of
 * /proc/self/mountinfo (read on each host through the launcher, parsed
 * here). Format (proc(5)), one mount per line:
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,...
 *   id parent dev root mountpoint options [optional...] - fstype source super
 * Space, tab, newline and backslash in paths are escaped as \040, \011,
 * \012 and \134. */
#ifndef DT_STG_MOUNTINFO_H
#define DT_STG_MOUNTINFO_H

#include <stddef.h>
#include <dt/status.h>

#define MI_FIELD 4096

typedef struct mi_entry {
    char root[MI_FIELD];        /* directory of the file system mounted
                                   ("/" unless a bind of a subdirectory) */
    char mount_point[MI_FIELD]; /* unescaped                             */
    char fstype[64];            /* "nfs4", "nfs", "ext4", ...            */
    char source[MI_FIELD];      /* "server:/export", "/dev/vda", ...     */
    char options[1024];         /* per-mount options (rw,noatime,...)    */
} mi_entry_t;

/* Parse one line. DT_ERR_INVALID for a line that is not in the format. */
dt_status_t mi_parse_line(const char *line, size_t len, mi_entry_t *e);

/* The mount that holds `path` (absolute, already resolved: no symlinks,
 * no "..") : the longest mount point that is path or a parent directory
 * of it; of several at the same point, the last (it hides the others).
 * DT_ERR_NOT_FOUND when none matches (no "/" line), DT_ERR_INVALID for a
 * relative path. Malformed lines are skipped. */
dt_status_t mi_find(const char *text, const char *path, mi_entry_t *out);

/* "\040" style escapes decoded into out (at most len-1 bytes). */
void mi_unescape(const char *in, size_t in_len, char *out, size_t len);

#endif /* DT_STG_MOUNTINFO_H */
