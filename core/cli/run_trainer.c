/* run_trainer.c — find dt-train and preflight the model description. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/nn.h>
#include "run_trainer.h"
#include "train/train.h"

#define TRAINER "dt-train"

/* The worker next to this dtctl: the build tree's when dtctl runs from
 * the build tree (as plugins are found), else the installed one. */
static void trainer_path(char *buf, size_t len)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    size_t bl = strlen(DT_BUILD_DIR);
    if (strncmp(self, DT_BUILD_DIR, bl) == 0 && self[bl] == '/')
        snprintf(buf, len, "%s/core/%s", DT_BUILD_DIR, TRAINER);
    else
        snprintf(buf, len, "%s/%s", DT_LIBEXEC_DIR, TRAINER);
}

/* Input shape of each data set the trainer reads. */
static dt_status_t input_shape(const dt_config_t *cfg, int shape[4])
{
    const char *ds = dt_config_get(cfg, "data", "dataset");
    if (!ds || strcmp(ds, "fashion-mnist") == 0 || strcmp(ds, "mnist") == 0) {
        shape[0] = 1, shape[1] = 28, shape[2] = 28, shape[3] = 10;
        return DT_OK;
    }
    if (strcmp(ds, "cifar10") == 0) {
        shape[0] = 3, shape[1] = 32, shape[2] = 32, shape[3] = 10;
        return DT_OK;
    }
    const char *where = "default";
    dt_config_origin(cfg, "data", "dataset", NULL, &where);
    dt_error("%s: [data] dataset '%s' is not known; use fashion-mnist, "
             "mnist or cifar10", where, ds);
    return DT_ERR_CONFIG;
}

dt_status_t run_trainer_prepare(const dt_config_t *cfg, int np, char *path,
                                size_t len)
{
    const char *layers = dt_config_get(cfg, "model", "layers");
    const char *where = "default";
    int shape[4];
    if (!layers || !*layers) {
        dt_error("the job has no [model] layers: dt's trainer needs the "
                 "network, e.g. layers = linear(256) relu linear(10) (see "
                 "conf/examples/); to run your own program put it after "
                 "'--'");
        return DT_ERR_CONFIG;
    }
    DT_CHECK(input_shape(cfg, shape));
    dt_config_origin(cfg, "model", "layers", NULL, &where);
    dt_model_t *m = NULL;
    dt_status_t st = dt_model_parse(layers, where, shape[0], shape[1],
                                    shape[2], shape[3], &m, NULL);
    dt_model_free(m);
    if (st != DT_OK || dt_train_check_config(cfg, np) != DT_OK)
        return DT_ERR_CONFIG;
    trainer_path(path, len);
    if (access(path, X_OK) != 0) {
        dt_error("the trainer program %s is missing or not executable: "
                 "build (make) or install dt first", path);
        return DT_ERR_NOT_FOUND;
    }
    return DT_OK;
}
