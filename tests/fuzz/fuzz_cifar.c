/* fuzz_cifar.c — the CIFAR-10 binary reader: any bytes as a batch file. */
#include "data/dataset.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_dataset_t ds;
    const char *path = fuzz_scratch_file(data, size, "");
    const char *paths[1] = {path};
    if (path && dt_dataset_load_cifar10(paths, 1, &ds) == DT_OK)
        dt_dataset_free(&ds);
    return 0;
}
