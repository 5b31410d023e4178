/* grad_clip.h — gradient clipping after the allreduce (internal to the
 * trainer): [train] clip_grad_value, then clip_grad_norm.
 *
 * It runs on the averaged gradient, which is the same on every rank, and
 * the norm is summed in one fixed order (8 double lanes, then the lanes in
 * order), so every rank computes the same norm bit for bit and clips the
 * same way without communicating. */
#ifndef DT_GRAD_CLIP_H
#define DT_GRAD_CLIP_H

#include <stdbool.h>
#include <stddef.h>
#include <dt/config.h>
#include <dt/status.h>

typedef struct dt_grad_clip {
    double max_value; /* clip_grad_value: each element to [-v, v]; 0: off */
    double max_norm;  /* clip_grad_norm: global L2 norm at most; 0: off  */
} dt_grad_clip_t;

/* From [train] clip_grad_value and clip_grad_norm (each 0 or more; errors
 * name the key and its origin). */
dt_status_t dt_grad_clip_from_config(const dt_config_t *cfg,
                                     dt_grad_clip_t *out);

static inline bool dt_grad_clip_enabled(const dt_grad_clip_t *c)
{
    return c->max_value > 0 || c->max_norm > 0;
}

/* L2 norm of g[0..n), accumulated in double in a fixed order. */
double dt_grad_norm(const float *g, size_t n);

/* Clip g in place: each element to [-max_value, max_value] (NaN stays
 * NaN), then, when the L2 norm exceeds max_norm, scale everything by
 * max_norm / (norm + 1e-6) (PyTorch's clip_grad_norm_). Returns the norm
 * after value clipping and before norm clipping; when it is not finite
 * nothing is scaled (the caller reports the divergence). */
double dt_grad_clip_apply(const dt_grad_clip_t *c, float *g, size_t n);

#endif /* DT_GRAD_CLIP_H */
