/* fuzz_image.c — the image decoders (libpng, libjpeg-turbo through
 * core/data/image_decode.c): any bytes as an image file, decoded to RGB
 * 16x16 (crop and downscale) and to gray 40x24 (upscale), as the image
 * folder data set would. */
#include <stdint.h>

#include "data/image_decode.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static float rgb[3 * 16 * 16];
    static uint8_t gray[40 * 24];
    char err[512];
    const char *path = fuzz_scratch_file(data, size, ".img");
    if (!path)
        return 0;
    const dt_image_spec_t a = {3, 16, 16}, b = {1, 24, 40};
    (void)dt_image_decode(path, &a, rgb, err, sizeof err);
    (void)dt_image_decode_u8(path, &b, gray, err, sizeof err);
    return 0;
}
