/* fuzz_idx.c — the IDX reader (MNIST, Fashion-MNIST), plain and gzip:
 * any bytes as a file. A header that claims more than the file holds is
 * refused before anything that size is allocated. */
#include "data/idx.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_idx_t idx;
    const char *path = fuzz_scratch_file(data, size, "");
    if (path && dt_idx_read(path, &idx) == DT_OK)
        dt_idx_free(&idx);
    return 0;
}
