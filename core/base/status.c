/* status.c — names for dt_status_t and the dtype/kind helpers. */
#include <dt/plugin.h>
#include <dt/status.h>
#include <dt/types.h>

const char *dt_status_str(dt_status_t st)
{
    switch (st) {
    case DT_OK: return "ok";
    case DT_DECLINED: return "declined (left to the core)";
    case DT_ERR_INVALID: return "invalid argument";
    case DT_ERR_NOMEM: return "out of memory";
    case DT_ERR_IO: return "I/O error";
    case DT_ERR_NOT_FOUND: return "not found";
    case DT_ERR_UNSUPPORTED: return "not supported";
    case DT_ERR_TIMEOUT: return "timed out";
    case DT_ERR_PEER: return "peer failed";
    case DT_ERR_AUTH: return "authentication failed";
    case DT_ERR_CONFIG: return "configuration error";
    case DT_ERR_PLUGIN: return "plugin error";
    case DT_ERR_INTERRUPTED: return "interrupted";
    case DT_ERR_WORKER: return "worker failed";
    case DT_ERR_INTERNAL: return "internal error";
    case DT_ERR_DIVERGED: return "training diverged";
    case DT_ERR_BAD_DATA: return "bad data";
    }
    return "unknown status";
}

size_t dt_dtype_size(dt_dtype_t t)
{
    switch (t) {
    case DT_FLOAT32: return 4;
    case DT_FLOAT16: return 2;
    case DT_BFLOAT16: return 2;
    case DT_FLOAT64: return 8;
    case DT_INT32: return 4;
    default: return 0;
    }
}

const char *dt_dtype_name(dt_dtype_t t)
{
    static const char *const names[DT_DTYPE_COUNT] = {
        "float32", "float16", "bfloat16", "float64", "int32"};
    return (unsigned)t < DT_DTYPE_COUNT ? names[t] : "invalid";
}

const char *dt_kind_name(dt_kind_t kind)
{
    static const char *const names[DT_KIND_COUNT] = {
        "launcher", "transport", "storage", "optimizer"};
    return (unsigned)kind < DT_KIND_COUNT ? names[kind] : "invalid";
}
