/* nfs_cmd.h — the mount command of the nfs and efs plugins, and EFS's DNS
 * name: pure text, unit-tested (a real NFS/EFS mount cannot be made on a
 * test machine). */
#ifndef DT_STG_NFS_CMD_H
#define DT_STG_NFS_CMD_H

#include <stddef.h>
#include <dt/status.h>

typedef struct nfs_mount_spec {
    const char *server;      /* NFS: host name or address of the server   */
    const char *export_path; /* exported directory, "/..."                */
    const char *mount_point; /* absolute                                  */
    const char *options;     /* "-o" list, NULL or "" for none            */
    const char *fs_id;       /* efs-utils: the file system id             */
    const char *region;      /* efs-utils: added as region=... if set     */
    int efs_utils;           /* 1: `mount -t efs FS_ID:EXPORT` (amazon-
                                efs-utils' mount.efs), else nfs4           */
} nfs_mount_spec_t;

/* argv of the mount command, NULL-terminated (free with dt_strv_free):
 *   mount -t nfs4 -o OPTIONS SERVER:EXPORT MOUNT_POINT
 *   mount -t efs -o OPTIONS[,region=R] FS_ID:EXPORT MOUNT_POINT
 * An IPv6 server address is bracketed. DT_ERR_INVALID (logged, naming
 * `section`) for a missing or malformed part. */
dt_status_t nfs_mount_argv(const char *section, const nfs_mount_spec_t *s,
                           char ***argv);

/* fs-0123abcd + us-east-1 -> fs-0123abcd.efs.us-east-1.amazonaws.com.
 * DT_ERR_INVALID (logged) for an id that is not fs-<hex> or a region
 * that is not lower-case letters, digits and dashes. */
dt_status_t efs_dns_name(const char *section, const char *fs_id,
                         const char *region, char *buf, size_t len);

/* The options EFS recommends for the NFS client (AWS docs). */
#define EFS_DEFAULT_OPTIONS                                                   \
    "nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,"       \
    "noresvport"

#endif /* DT_STG_NFS_CMD_H */
