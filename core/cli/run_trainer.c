/* run_trainer.c — find dt-train and preflight the model description. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include <dt/nn.h>
#include "run_trainer.h"
#include "train/train.h"

#define TRAINER "dt-train"

void dt_cli_worker_program(const char *build_subdir, const char *name,
                           char *buf, size_t len)
{
    const char *env = getenv("DT_LIBEXECDIR");
    if (env && *env) {
        snprintf(buf, len, "%s/%s", env, name);
        return;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    size_t bl = strlen(DT_BUILD_DIR);
    if (strncmp(self, DT_BUILD_DIR, bl) == 0 && self[bl] == '/') {
        snprintf(buf, len, "%s/%s/%s", DT_BUILD_DIR, build_subdir, name);
        return;
    }
    /* Beside this binary: a tree staged with DESTDIR (self is
     * <root><bindir>/dtctl: <root><libexecdir>), or moved whole
     * (<bin>/../libexec/dt). */
    char *slash = strrchr(self, '/');
    if (slash) {
        *slash = '\0';
        size_t sl = strlen(self), dl = strlen(DT_BIN_DIR);
        if (sl > dl && strcmp(self + sl - dl, DT_BIN_DIR) == 0) {
            snprintf(buf, len, "%.*s%s/%s", (int)(sl - dl), self,
                     DT_LIBEXEC_DIR, name);
            if (access(buf, X_OK) == 0)
                return;
        }
        snprintf(buf, len, "%s/../libexec/dt/%s", self, name);
        if (access(buf, X_OK) == 0)
            return;
    }
    snprintf(buf, len, "%s/%s", DT_LIBEXEC_DIR, name);
}

/* An image folder's shape: [data] channels x image_size, and the class
 * folders of path/train when this host can see them. DT_ERR_NOT_FOUND:
 * not known here (the workers load the data and check the model). */
static dt_status_t folder_shape(const dt_config_t *cfg, int shape[4],
                                char *why, size_t len)
{
    const char *size = dt_config_get(cfg, "data", "image_size");
    const char *ch = dt_config_get(cfg, "data", "channels");
    const char *dir = dt_config_get(cfg, "data", "path");
    int h = 0, w = 0, n = 0;
    char x = 0, extra = 0;
    if (!dir || !size) {
        snprintf(why, len, "no [data] %s", !dir ? "path" : "image_size");
        return DT_ERR_NOT_FOUND;
    }
    n = sscanf(size, "%d%c%d%c", &h, &x, &w, &extra);
    if (n == 1)
        w = h;
    else if (n != 3 || (x != 'x' && x != 'X'))
        h = 0; /* the workers' check says what is wrong, and where */
    if (h < 1 || w < 1) {
        snprintf(why, len, "[data] image_size = '%s' is not N or HxW", size);
        return DT_ERR_NOT_FOUND;
    }
    char train[4096];
    snprintf(train, sizeof train, "%s/train", dir);
    DIR *d = opendir(train);
    if (!d) {
        snprintf(why, len, "[data] path/train = %s: not a readable "
                 "directory here (%s)", train, strerror(errno));
        return DT_ERR_NOT_FOUND;
    }
    int classes = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p[8192];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", train, e->d_name);
        if (e->d_name[0] != '.' && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            classes++;
    }
    closedir(d);
    /* one class: the workers' loading says what is wrong, and where */
    if (classes < 2) {
        snprintf(why, len, "[data] path/train = %s holds %d class "
                 "folder%s (2 or more needed)", train, classes,
                 classes == 1 ? "" : "s");
        return DT_ERR_NOT_FOUND;
    }
    shape[0] = ch && strcmp(ch, "1") == 0 ? 1 : 3;
    shape[1] = h, shape[2] = w, shape[3] = classes;
    return DT_OK;
}

dt_status_t run_trainer_input_shape(const dt_config_t *cfg, int shape[4])
{
    char why[4400];
    return run_trainer_input_shape_why(cfg, shape, why, sizeof why);
}

dt_status_t run_trainer_input_shape_why(const dt_config_t *cfg, int shape[4],
                                        char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    const char *ds = dt_config_get(cfg, "data", "dataset");
    if (!ds || strcmp(ds, "fashion-mnist") == 0 || strcmp(ds, "mnist") == 0) {
        shape[0] = 1, shape[1] = 28, shape[2] = 28, shape[3] = 10;
        return DT_OK;
    }
    if (strcmp(ds, "cifar10") == 0) {
        shape[0] = 3, shape[1] = 32, shape[2] = 32, shape[3] = 10;
        return DT_OK;
    }
    if (strcmp(ds, "cifar100") == 0) {
        const char *l = dt_config_get(cfg, "data", "cifar100_labels");
        shape[0] = 3, shape[1] = 32, shape[2] = 32;
        shape[3] = l && strcmp(l, "coarse") == 0 ? 20 : 100;
        return DT_OK;
    }
    if (strcmp(ds, "stl10") == 0) {
        shape[0] = 3, shape[1] = 96, shape[2] = 96, shape[3] = 10;
        return DT_OK;
    }
    if (strcmp(ds, "folder") == 0)
        return folder_shape(cfg, shape, why, len);
    const char *where = "default";
    dt_config_origin(cfg, "data", "dataset", NULL, &where);
    dt_error("%s: [data] dataset '%s' is not known; use fashion-mnist, "
             "mnist, cifar10, cifar100, stl10 or folder", where, ds);
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
    dt_status_t st = run_trainer_input_shape(cfg, shape);
    if (st == DT_ERR_NOT_FOUND) {
        dt_debug("the model is checked by the workers: the image folder's "
                 "shape is not known here");
        st = DT_OK;
    } else if (st != DT_OK) {
        return st;
    } else {
        dt_config_origin(cfg, "model", "layers", NULL, &where);
        dt_model_t *m = NULL;
        st = dt_model_parse(layers, where, shape[0], shape[1], shape[2],
                            shape[3], &m, NULL);
        if (st == DT_OK)
            st = dt_train_check_model(cfg, m, np);
        dt_model_free(m);
    }
    if (st != DT_OK || dt_train_check_config(cfg, np) != DT_OK)
        return DT_ERR_CONFIG;
    dt_cli_worker_program("core", TRAINER, path, len);
    if (access(path, X_OK) != 0) {
        dt_error("the trainer program %s is missing or not executable: "
                 "build (make) or install dt first, or set DT_LIBEXECDIR "
                 "to the directory holding %s", path, TRAINER);
        return DT_ERR_NOT_FOUND;
    }
    return DT_OK;
}
