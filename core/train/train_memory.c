/* train_memory.c — where a GPU's memory goes, said once after the first
 * step (rank 0): the device's own count beside what the model holds by
 * part and what cuDNN holds, the rest being the CUDA context, the
 * libraries' code and workspaces, the optimizer's state and anything else
 * on the GPU. A memory target (peak against PyTorch's) is read by part
 * from this line. */
#include "config.h"

#include <dt/log.h>
#include "cuda/backend.h"
#include "train.h"

#define MIB(x) ((double)(x) / (1 << 20))

void dt_trainer_report_memory(dt_trainer_t *t)
{
    if (t->rank != 0 || t->dev->kind != DT_DEVICE_CUDA)
        return;
    const dt_cuda_backend_t *cu = dt_cuda_backend_loaded();
    size_t used = 0, total = 0, ws = 0, copies = 0;
    if (!cu || !cu->mem_info ||
        cu->mem_info(t->dev, &used, &total, &ws, &copies) != DT_OK)
        return;
    dt_model_memory_t m;
    dt_model_memory(t->model, &m);
    size_t mine = m.params + m.activations + m.act_grads + m.act_copies +
                  m.scratch + ws + copies;
    dt_info("GPU memory after the first step: %.1f MiB in use of %.1f on "
            "%s: activations %.1f (%s), what their gradients add %.1f "
            "and float32 copies %.1f (one block shared by lifetime), "
            "scratch %.1f, parameters and gradients %.1f, "
            "cuDNN workspace %.1f and bf16 conv copies %.1f; the rest "
            "(CUDA context, libraries, optimizer state, other processes) "
            "%.1f", MIB(used), MIB(total), t->dev->name,
            MIB(m.activations),
            dt_model_activations(t->model) == DT_ACTIVATIONS_BF16
                ? "bf16"
                : "float32",
            MIB(m.act_grads), MIB(m.act_copies), MIB(m.scratch),
            MIB(m.params), MIB(ws), MIB(copies),
            used > mine ? MIB(used - mine) : 0.0);
}
