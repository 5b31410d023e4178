/* dataset_idx.c — an image/label pair of IDX files as a data set. */
#include <stdlib.h>
#include <string.h>

#include <dt/log.h>
#include "dataset.h"
#include "idx.h"

static dt_status_t check_labels(const char *path, const uint8_t *labels,
                                size_t n, int nclasses)
{
    for (size_t i = 0; i < n; i++)
        if (labels[i] >= nclasses) {
            dt_error("%s: label %u of sample %zu is out of range 0..%d: the "
                     "labels file does not belong to this data set",
                     path, labels[i], i, nclasses - 1);
            return DT_ERR_INVALID;
        }
    return DT_OK;
}

dt_status_t dt_dataset_load_idx(const char *images_path,
                                const char *labels_path, int nclasses,
                                dt_dataset_t *out)
{
    dt_idx_t img, lab;
    dt_status_t st;
    memset(out, 0, sizeof *out);
    memset(&lab, 0, sizeof lab);
    if ((st = dt_idx_read(images_path, &img)) != DT_OK)
        return st;
    if ((st = dt_idx_read(labels_path, &lab)) != DT_OK)
        goto out;
    st = DT_ERR_INVALID;
    if (img.type != DT_IDX_U8 || img.ndims != 3) {
        dt_error("%s: expected images as unsigned bytes, n x height x width "
                 "(type 0x08, 3 dimensions); the file has type 0x%02x with "
                 "%d dimensions (is it a labels file?)",
                 images_path, img.type, img.ndims);
        goto out;
    }
    if (lab.type != DT_IDX_U8 || lab.ndims != 1) {
        dt_error("%s: expected labels as unsigned bytes, one dimension "
                 "(type 0x08); the file has type 0x%02x with %d dimensions "
                 "(is it an images file?)", labels_path, lab.type, lab.ndims);
        goto out;
    }
    if (lab.dims[0] != img.dims[0]) {
        dt_error("%s has %u labels but %s has %u images: the two files do "
                 "not belong together", labels_path, lab.dims[0],
                 images_path, img.dims[0]);
        goto out;
    }
    if ((st = check_labels(labels_path, lab.data, lab.count, nclasses)) !=
        DT_OK)
        goto out;
    out->n = img.dims[0];
    out->channels = 1;
    out->height = (int)img.dims[1];
    out->width = (int)img.dims[2];
    out->sample_len = (size_t)img.dims[1] * img.dims[2];
    out->nclasses = nclasses;
    out->pixels = img.data;
    out->labels = lab.data;
    out->mean[0] = 0.0f;
    out->std[0] = 1.0f;
    img.data = lab.data = NULL;
    st = DT_OK;
out:
    dt_idx_free(&img);
    dt_idx_free(&lab);
    return st;
}
