/* opt_call.h — an optimizer plugin's ops besides create and step (whose
 * callers mark them), each call marked as in flight
 * (plugin/plugin_crash.h): a rank that crashes inside one names the
 * plugin and the op. p is the plugin whose ops o are (NULL: a caller
 * without one, such as a test's table; nothing is named then). Internal
 * to libdt. */
#ifndef DT_TRAIN_OPT_CALL_H
#define DT_TRAIN_OPT_CALL_H

#include <dt/plugin.h>
#include "plugin/plugin_crash.h"

static inline size_t dt_opt_state_size(const dt_plugin_t *p,
                                       const dt_optimizer_ops_t *o,
                                       void *state)
{
    dt_plugin_call_t was = dt_plugin_call_begin(p, "state_size");
    size_t n = o->state_size(state);
    dt_plugin_call_end(was);
    return n;
}

static inline dt_status_t dt_opt_save(const dt_plugin_t *p,
                                      const dt_optimizer_ops_t *o,
                                      void *state, void *buf, size_t len)
{
    dt_plugin_call_t was = dt_plugin_call_begin(p, "save");
    dt_status_t st = o->save(state, buf, len);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_opt_load(const dt_plugin_t *p,
                                      const dt_optimizer_ops_t *o,
                                      void *state, const void *buf,
                                      size_t len)
{
    dt_plugin_call_t was = dt_plugin_call_begin(p, "load");
    dt_status_t st = o->load(state, buf, len);
    dt_plugin_call_end(was);
    return st;
}

static inline void dt_opt_destroy(const dt_plugin_t *p,
                                  const dt_optimizer_ops_t *o, void *state)
{
    dt_plugin_call_t was = dt_plugin_call_begin(p, "destroy");
    o->destroy(state);
    dt_plugin_call_end(was);
}

static inline dt_status_t dt_opt_set_tensors(const dt_plugin_t *p,
                                             const dt_optimizer_ops_t *o,
                                             void *state,
                                             const size_t *offsets,
                                             size_t ntensors)
{
    dt_plugin_call_t was = dt_plugin_call_begin(p, "set_tensors");
    dt_status_t st = o->set_tensors(state, offsets, ntensors);
    dt_plugin_call_end(was);
    return st;
}

static inline dt_status_t dt_opt_set_tensor_kinds(const dt_plugin_t *p,
                                                  const dt_optimizer_ops_t *o,
                                                  void *state,
                                                  const unsigned char *kinds,
                                                  size_t ntensors)
{
    dt_plugin_call_t was = dt_plugin_call_begin(p, "set_tensor_kinds");
    dt_status_t st = o->set_tensor_kinds(state, kinds, ntensors);
    dt_plugin_call_end(was);
    return st;
}

#endif /* DT_TRAIN_OPT_CALL_H */
