/* fuzz_ckpt.c — the checkpoint reader: any bytes as a checkpoint file.
 * Magic, version, lengths and checksum are checked before any section is
 * trusted; every section found is looked up. */
#include "ckpt/ckpt.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_ckpt_t c;
    const char *path = fuzz_scratch_file(data, size, ".ckpt");
    if (!path || dt_ckpt_read(path, &c) != DT_OK)
        return 0;
    for (uint32_t tag = 0; tag < 16; tag++)
        dt_ckpt_find(&c, tag);
    dt_ckpt_free(&c);
    return 0;
}
