/* host_local.h — is a host name this machine? Internal to libdt, dtctl and
 * in-tree plugins (the local launcher refuses other hosts; dtctl picks
 * 127.0.0.1 as MASTER_ADDR for an all-local job). */
#ifndef DT_HOST_LOCAL_H
#define DT_HOST_LOCAL_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 for "localhost", loopback addresses (127.x.y.z, ::1) and this
 * machine's own host name (full or short); 0 otherwise. Never resolves
 * names (no DNS: it must not block). */
int dt_host_is_local(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* DT_HOST_LOCAL_H */
