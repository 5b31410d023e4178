/* proc_status.h — this process's own numbers from /proc/self/status. */
#ifndef DT_BASE_PROC_STATUS_H
#define DT_BASE_PROC_STATUS_H

/* Bytes this process maps (VmSize, what RLIMIT_AS counts); 0 when
 * /proc/self/status cannot be read or has no VmSize. */
unsigned long long dt_proc_mapped_bytes(void);

#endif /* DT_BASE_PROC_STATUS_H */
