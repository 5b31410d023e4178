/* loss_scale.h — [train] precision and loss scaling for the trainer.
 *
 * precision = fp32 | bf16 | fp16 (cuda): float32 parameters, gradients
 * and optimizer state always (the master copy); bf16/fp16 let cuBLAS and
 * cuDNN compute on tensor cores with 16-bit inputs.
 *
 * loss_scale = none | dynamic | S (default: dynamic under fp16, else
 * none): backward runs on S x the loss, the averaged gradients are
 * divided by S before clipping and the optimizer, and a step whose
 * gradients overflowed (inf/nan) is skipped. dynamic: S halves on an
 * overflow and doubles after loss_scale_growth_interval finite steps in
 * a row (PyTorch's GradScaler). S is a power of two, so on finite
 * gradients the scaled run equals the unscaled one exactly. Every rank
 * decides alike: the gradients it looks at are the allreduced ones. */
#ifndef DT_TRAIN_LOSS_SCALE_H
#define DT_TRAIN_LOSS_SCALE_H

#include <stdbool.h>
#include <stdint.h>
#include <dt/config.h>
#include <dt/status.h>

typedef struct dt_loss_scale {
    int precision;      /* DT_PRECISION_* (cuda/backend.h)             */
    bool enabled;       /* loss_scale != none                          */
    bool dynamic;
    double scale;       /* S: a power of two                           */
    uint64_t interval;  /* growth after this many finite steps         */
    uint64_t good;      /* finite steps since S last changed           */
    uint64_t skipped;   /* steps skipped for overflow, whole job       */
    uint64_t skipped_epoch; /* ... in this epoch                       */
} dt_loss_scale_t;

#define DT_LOSS_SCALE_MIN 0x1p-24    /* an overflow at 2^-24 is not one
                                        scaling can cure: stop halving */

/* Read [train] precision, loss_scale, loss_scale_init and
 * loss_scale_growth_interval; errors name the file:line. */
dt_status_t dt_loss_scale_setup(dt_loss_scale_t *ls, const dt_config_t *cfg);

/* After a step's gradients were checked: finite -> true (apply the
 * step; maybe grow S); overflow -> false (skip it; a dynamic S halves). */
bool dt_loss_scale_update(dt_loss_scale_t *ls, bool finite);

/* "fp32", "bf16", "fp16". */
const char *dt_precision_name(int precision);

#endif /* DT_TRAIN_LOSS_SCALE_H */
