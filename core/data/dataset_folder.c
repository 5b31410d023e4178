/* dataset_folder.c — an image folder as a data set:
 *
 *   DIR/train/<class>/<image>.png|.jpg|.jpeg
 *   DIR/test/<class>/<image>...
 *
 * Classes are the subfolders of train/, sorted bytewise by name (as
 * Python's sorted() and torchvision's ImageFolder do), so a label means
 * the same class on every run, host and split. Within a class, files are
 * taken in name order. Hidden entries (a leading dot), lost+found (a
 * fresh volume's, never a class) and files with other extensions are
 * ignored; so are folders inside a class folder (with a warning naming
 * the first: torchvision would read them). Every image is decoded when
 * the data set is loaded (data/image_decode.c) into the in-memory bytes the other data
 * sets use (the decoded cache), or, with opts->lazy ([data] decode =
 * loader), only listed: each gather decodes its samples (in the input
 * pipeline's loader threads), so a folder larger than memory trains and
 * the job starts at once.
 *
 * Errors, each naming the path: no train/ (or test/) folder, no class
 * folder, a class folder of test/ that train/ lacks, an empty class folder
 * (like ImageFolder: a class without images is a mistake more often than
 * an intent, and dropping it would renumber every later class), an entry
 * among the class folders that cannot be followed (a broken symbolic link
 * or a link loop: dropping it would renumber too), a folder without any
 * image, and an unreadable or corrupt image (also one that is not a
 * regular file, e.g. a named pipe) unless skip_bad is set: then it is
 * skipped with a warning (the first 10 named, then a count), and a class
 * left without images is an error again. What a restart would meet again
 * (the layout, an image that does not decode) is DT_ERR_INVALID; a
 * missing or empty data, train/ or test/ folder (lost+found aside), a
 * link to a target not there and a stat or read the system failed are
 * DT_ERR_NOT_FOUND and DT_ERR_IO (storage not mounted yet may come). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dt/log.h>
#include "dataset.h"
#include "image_decode.h"

/* Skipped images named one by one before only counting them. */
#define SKIP_LOG_LINES 10
#define MAX_CLASSES 256 /* labels are bytes */

/* A growable list of strings. */
typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist_t;

static dt_status_t strlist_add(strlist_t *l, const char *s)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, ncap * sizeof *v);
        if (!v)
            return DT_ERR_NOMEM;
        l->v = v;
        l->cap = ncap;
    }
    if (!(l->v[l->n] = strdup(s)))
        return DT_ERR_NOMEM;
    l->n++;
    return DT_OK;
}

static void strlist_free(strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *a, const char *b)
{
    char *p = NULL;
    return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

/* A class folder entry that stat cannot follow (a dangling link, a link
 * loop) is an error naming it: leaving it out would renumber every later
 * class. */
static dt_status_t bad_class_entry(const char *p, int err)
{
    struct stat lb;
    char to[4096];
    ssize_t n = -1;
    if (lstat(p, &lb) == 0 && S_ISLNK(lb.st_mode))
        n = readlink(p, to, sizeof to - 1);
    if (n >= 0) {
        to[n] = '\0';
        dt_error("%s: %s (to %s: %s) among the class folders: point it at "
                 "the class's folder or remove it (classes are the folders "
                 "in name order: leaving one out would renumber the later "
                 "labels)", p, err == ELOOP ? "a symbolic link loop"
                                            : "a broken symbolic link",
                 to, strerror(err));
        return DT_ERR_INVALID;
    }
    dt_error("%s: cannot tell whether it is a class folder: %s (make it "
             "readable or remove it)", p, strerror(err));
    return DT_ERR_IO; /* the system's refusal (EIO, EACCES): may pass */
}

/* Entry name of dir into out when it is what list_dir wants. */
static dt_status_t take_entry(const char *dir, const char *name, int dirs,
                              strlist_t *out, size_t *ignored,
                              char **subdir)
{
    char *p = join(dir, name);
    struct stat sb;
    if (!p)
        return DT_ERR_NOMEM;
    int ok = stat(p, &sb) == 0; /* follows links, as users expect */
    int isdir = ok && S_ISDIR(sb.st_mode);
    dt_status_t st = DT_OK;
    if (dirs && !ok)
        st = bad_class_entry(p, errno);
    else if (dirs ? isdir : dt_image_name_ok(name) && !isdir)
        st = strlist_add(out, name); /* unreadable images: decode says */
    else if (ignored && !isdir)
        (*ignored)++;
    else if (subdir && isdir && !*subdir) { /* images in it: not read */
        *subdir = p;
        p = NULL;
    }
    free(p);
    return st;
}

/* An entry that says nothing about the data: hidden ones, and the
 * lost+found of a freshly made file system (a volume mounted but not
 * filled yet). */
static int entry_not_data(const char *name)
{
    return name[0] == '.' || strcmp(name, "lost+found") == 0;
}

/* The names in dir: subfolders (dirs = 1) or image files (dirs = 0),
 * sorted. Hidden entries and lost+found are ignored; *ignored counts
 * other files and *subdir (if NULL so far) gets the path of a subfolder
 * met among image files. An entry that may be a subfolder but cannot be
 * followed is an error. */
static dt_status_t list_dir(const char *dir, int dirs, strlist_t *out,
                            size_t *ignored, char **subdir)
{
    DIR *d = opendir(dir);
    if (!d) {
        dt_error("%s: cannot open the folder: %s", dir, strerror(errno));
        return errno == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
    }
    dt_status_t st = DT_OK;
    struct dirent *e;
    while (st == DT_OK && (errno = 0, e = readdir(d)))
        if (!entry_not_data(e->d_name))
            st = take_entry(dir, e->d_name, dirs, out, ignored, subdir);
    if (st == DT_OK && errno) {
        dt_error("%s: cannot list the folder: %s", dir, strerror(errno));
        st = DT_ERR_IO;
    }
    closedir(d);
    if (st == DT_OK && out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_str);
    return st;
}

/* dir exists and holds an entry that is data: its layout, not its
 * presence, is what is wrong. */
static int has_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int any = 0;
    while (d && !any && (e = readdir(d)))
        any = !entry_not_data(e->d_name);
    if (d)
        closedir(d);
    return any;
}

/* path, a symbolic link whose target stat could not follow (err): what a
 * restart may find there (a target not there yet: its storage not
 * mounted; a refusal of the system) or will not (a link loop, a name too
 * long). */
static dt_status_t split_link_error(const char *path, int err)
{
    char to[4096];
    ssize_t n = readlink(path, to, sizeof to - 1);
    to[n < 0 ? 0 : n] = '\0';
    int final = err == ELOOP || err == ENAMETOOLONG || err == ENOTDIR;
    dt_error("[data] path %s: a symbolic link to %s that cannot be "
             "followed: %s (%s)", path, n < 0 ? "?" : to, strerror(err),
             final ? "point it at the folder"
                   : "may pass: its storage not mounted yet?");
    return final ? DT_ERR_INVALID
           : err == ENOENT ? DT_ERR_NOT_FOUND : DT_ERR_IO;
}

/* dir/name, a folder. Really absent from a folder that holds data (a
 * test/ beside train/, class folders without train/ above them), or not
 * a folder: the layout is wrong and a restart meets it again
 * (DT_ERR_INVALID). Absent from a missing or empty folder, a link to a
 * target not there (network storage not mounted yet), a refusal of the
 * system (EIO, ESTALE, EACCES): may pass (DT_ERR_NOT_FOUND, DT_ERR_IO). */
static dt_status_t split_dir(const char *dir, const char *name, char **out)
{
    struct stat sb, lb;
    if (!(*out = join(dir, name)))
        return DT_ERR_NOMEM;
    int err = stat(*out, &sb) != 0 ? errno : 0;
    if (!err && S_ISDIR(sb.st_mode))
        return DT_OK;
    dt_status_t st;
    if (err && lstat(*out, &lb) == 0 && S_ISLNK(lb.st_mode))
        st = split_link_error(*out, err);
    else if (err && err != ENOENT && err != ENOTDIR && err != ELOOP &&
             err != ENAMETOOLONG) {
        dt_error("[data] path %s: cannot tell whether %s/ is there: %s "
                 "(the storage or a permission; may pass)", dir, name,
                 strerror(err));
        st = DT_ERR_IO;
    } else {
        dt_error("[data] path %s: no %s/ folder there (%s). dataset = "
                 "folder reads PATH/train/<class>/*.png|jpg|jpeg for "
                 "training and PATH/test/<class>/... for evaluation, one "
                 "subfolder per class", dir, name,
                 strerror(err ? err : ENOTDIR));
        st = !err || has_entries(dir) ? DT_ERR_INVALID : DT_ERR_NOT_FOUND;
    }
    free(*out);
    *out = NULL;
    return st;
}

/* path, train/ or test/, holds nothing (or only lost+found): a mount
 * point whose storage is not mounted yet, as an empty data folder is. */
static dt_status_t empty_split(const char *path)
{
    dt_error("%s: an empty folder, no class folders (may pass: its storage "
             "not mounted yet?); else put each class's images in a "
             "subfolder of its own (train/cat/1.png, train/dog/2.jpg)", path);
    return DT_ERR_NOT_FOUND;
}

/* Every sample's file and label, classes in order. */
static dt_status_t find_images(const char *dir, dt_split_t split,
                               strlist_t *classes, strlist_t *files,
                               uint8_t **labels)
{
    char *train = NULL, *base = NULL;
    strlist_t here = {0}, names = {0};
    size_t ignored = 0, cap = 0;
    char *subdir = NULL; /* the first folder inside a class folder */
    dt_status_t st = split_dir(dir, "train", &train);
    if (st == DT_OK)
        st = list_dir(train, 1, classes, NULL, NULL);
    if (st == DT_OK && !has_entries(train))
        st = empty_split(train);
    if (st == DT_OK && classes->n == 0) {
        dt_error("%s: no class folders: put each class's images in a "
                 "subfolder of its own (train/cat/1.png, train/dog/2.jpg)",
                 train);
        st = DT_ERR_INVALID;
    }
    if (st == DT_OK && classes->n == 1) { /* softmax over one: loss 0 */
        dt_error("%s: one class folder ('%s'): a classifier needs at least "
                 "2 classes; add a folder of images for each other class "
                 "(train/cat/1.png, train/dog/2.jpg)", train, classes->v[0]);
        st = DT_ERR_INVALID;
    }
    if (st == DT_OK && classes->n > MAX_CLASSES) {
        dt_error("%s: %zu class folders; dt takes at most %d classes", train,
                 classes->n, MAX_CLASSES);
        st = DT_ERR_INVALID;
    }
    if (st == DT_OK && split == DT_SPLIT_TEST) {
        st = split_dir(dir, "test", &base);
        if (st == DT_OK)
            st = list_dir(base, 1, &here, NULL, NULL);
        if (st == DT_OK && !has_entries(base))
            st = empty_split(base);
        for (size_t i = 0; st == DT_OK && i < here.n; i++)
            if (!bsearch(&here.v[i], classes->v, classes->n,
                         sizeof *classes->v, cmp_str)) {
                dt_error("%s/%s: a class that %s does not have: the test "
                         "classes must be training classes (labels come "
                         "from train/'s folders); add %s/%s, or move %s/%s "
                         "out of the test set", base, here.v[i], train,
                         train, here.v[i], base, here.v[i]);
                st = DT_ERR_INVALID;
            }
        if (st == DT_OK && here.n == 0) {
            dt_error("%s: no class folders", base);
            st = DT_ERR_INVALID;
        }
    } else if (st == DT_OK) {
        base = train;
        train = NULL;
    }
    for (size_t c = 0; st == DT_OK && c < classes->n; c++) {
        if (split == DT_SPLIT_TEST &&
            !bsearch(&classes->v[c], here.v, here.n, sizeof *here.v,
                     cmp_str))
            continue; /* no test images of this class */
        char *cdir = join(base, classes->v[c]);
        if (!cdir) {
            st = DT_ERR_NOMEM;
            break;
        }
        size_t before = ignored;
        st = list_dir(cdir, 0, &names, &ignored, &subdir);
        if (st == DT_OK && names.n == 0) {
            dt_error("%s: empty class folder: no .png, .jpg or .jpeg files%s "
                     "(add images or remove the folder; classes are "
                     "train/'s folders, so removing one renumbers the "
                     "later labels)", cdir,
                     ignored > before ? " (only files of other types)" : "");
            st = DT_ERR_INVALID;
        }
        for (size_t i = 0; st == DT_OK && i < names.n; i++) {
            char *p = join(cdir, names.v[i]);
            st = p ? strlist_add(files, p) : DT_ERR_NOMEM;
            free(p);
            if (st == DT_OK && files->n > cap) {
                size_t ncap = cap ? 2 * cap : 1024;
                uint8_t *l = realloc(*labels, ncap);
                if (!l)
                    st = DT_ERR_NOMEM;
                else {
                    *labels = l;
                    cap = ncap;
                }
            }
            if (st == DT_OK)
                (*labels)[files->n - 1] = (uint8_t)c;
        }
        strlist_free(&names);
        free(cdir);
    }
    /* torchvision's ImageFolder reads a class's subfolders too: say that
     * dt does not, rather than train on fewer images unawares. */
    if (subdir)
        dt_warn("%s: a folder inside a class folder: its images are not "
                "read (only the .png, .jpg and .jpeg files directly in "
                "each class folder are); move them up into the class "
                "folder to train on them", subdir);
    free(subdir);
    if (ignored)
        dt_debug("%s: ignored %zu files that are not .png, .jpg or .jpeg",
                 base, ignored);
    strlist_free(&here);
    free(train);
    free(base);
    return st;
}

/* The decoded cache: n images of channels x height x width bytes. */
static dt_status_t alloc_cache(const char *dir, const char *sub, size_t n,
                               const dt_folder_opts_t *o, uint8_t **px)
{
    size_t len = (size_t)o->channels * (size_t)o->height * (size_t)o->width;
    if (n <= SIZE_MAX / len && (*px = malloc(n * len)))
        return DT_OK;
    double bytes = (double)n * (double)len; /* may exceed size_t */
    dt_error("%s/%s: cannot allocate %.0f bytes (%.1f MiB) for the decoded "
             "images (%zu images of %dx%dx%d bytes): set [data] decode = "
             "loader (each image decoded when a batch needs it, none kept) "
             "or a smaller [data] image_size", dir, sub, bytes,
             bytes / 1048576.0, n, o->channels, o->height, o->width);
    return DT_ERR_NOMEM;
}

dt_status_t dt_dataset_load_folder(const char *dir, dt_split_t split,
                                   const dt_folder_opts_t *opts,
                                   dt_dataset_t *out)
{
    memset(out, 0, sizeof *out);
    if (!dt_image_have_png() && !dt_image_have_jpeg()) {
        dt_error("[data] dataset = folder: dt was built without PNG and "
                 "JPEG support; apt-get install libpng-dev "
                 "libjpeg62-turbo-dev, then configure and build dt again");
        return DT_ERR_UNSUPPORTED;
    }
    if ((opts->channels != 1 && opts->channels != 3) || opts->height < 1 ||
        opts->width < 1 || opts->height > DT_IMAGE_MAX_SIDE ||
        opts->width > DT_IMAGE_MAX_SIDE) {
        dt_error("[data] dataset = folder: channels must be 1 or 3 (is %d) "
                 "and image_size 1..%d a side (is %dx%d)", opts->channels,
                 DT_IMAGE_MAX_SIDE, opts->height, opts->width);
        return DT_ERR_CONFIG;
    }
    strlist_t classes = {0}, files = {0};
    uint8_t *labels = NULL;
    dt_status_t st = find_images(dir, split, &classes, &files, &labels);
    const char *sub = split == DT_SPLIT_TRAIN ? "train" : "test";
    if (st == DT_OK && files.n == 0) { /* test/ may lack some classes */
        dt_error("[data] path %s: no images in %s/", dir, sub);
        st = DT_ERR_INVALID;
    }
    dt_image_spec_t spec = {opts->channels, opts->height, opts->width};
    size_t len = (size_t)opts->channels * (size_t)opts->height *
                 (size_t)opts->width;
    if (st == DT_OK && opts->lazy && opts->skip_bad) {
        dt_error("[data] bad_images = skip needs decode = load: with decode "
                 "= loader no image is read before a batch needs it, so an "
                 "unreadable one cannot be left out of the sample list");
        st = DT_ERR_CONFIG;
    }
    if (st == DT_OK && opts->lazy) { /* the list is the data set */
        out->n = files.n;
        out->channels = opts->channels;
        out->height = opts->height;
        out->width = opts->width;
        out->sample_len = len;
        out->nclasses = (int)classes.n;
        out->labels = labels;
        out->paths = files.v;
        out->npaths = files.n;
        out->class_names = classes.v;
        out->decode_on_gather = 1;
        out->by_class = 1;
        for (int c = 0; c < opts->channels; c++) {
            out->mean[c] = 0.0f;
            out->std[c] = 1.0f;
        }
        dt_debug("%s/%s: %zu images in %zu classes, decoded to %dx%dx%d "
                 "when a batch needs them (decode = loader)", dir, sub,
                 files.n, classes.n, opts->channels, opts->height,
                 opts->width);
        return DT_OK;
    }
    if (st == DT_OK)
        st = alloc_cache(dir, sub, files.n, opts, &out->pixels);
    /* found[c]: files of class c; kept[c]: of them decoded */
    size_t *found = calloc(2 * (classes.n ? classes.n : 1), sizeof *found);
    size_t *kept = found ? found + classes.n : NULL;
    if (st == DT_OK && !found)
        st = DT_ERR_NOMEM;
    for (size_t i = 0; st == DT_OK && i < files.n; i++)
        found[labels[i]]++;
    size_t n = 0, skipped = 0;
    char err[1024];
    for (size_t i = 0; st == DT_OK && i < files.n; i++) {
        dt_status_t dst = dt_image_decode_u8(files.v[i], &spec,
                                             out->pixels + n * len, err,
                                             sizeof err);
        if (dst == DT_OK) { /* compact: sample n is file i */
            char *p = files.v[i];
            files.v[i] = files.v[n];
            files.v[n] = p;
            labels[n] = labels[i];
            kept[labels[n]]++;
            n++;
            continue;
        }
        int fatal = dst == DT_ERR_NOMEM || dst == DT_ERR_UNSUPPORTED;
        if (fatal || !opts->skip_bad) {
            dt_error("%s%s", err,
                     fatal ? "" : " ([data] bad_images = skip leaves such "
                                  "files out)");
            /* A read the system failed (or a file gone since it was
             * listed) may pass; a file that does not decode stays so. */
            st = fatal || dst == DT_ERR_IO || dst == DT_ERR_NOT_FOUND
                     ? dst : DT_ERR_INVALID;
            break;
        }
        if (++skipped <= SKIP_LOG_LINES)
            dt_warn("skipping %s", err);
    }
    if (st == DT_OK && skipped > SKIP_LOG_LINES)
        dt_warn("skipped %zu more unreadable images in %s/%s (%zu in all)",
                skipped - SKIP_LOG_LINES, dir, sub, skipped);
    for (size_t c = 0; st == DT_OK && c < classes.n; c++)
        if (found[c] > 0 && kept[c] == 0) {
            dt_error("%s/%s/%s: all %zu images of this class were skipped "
                     "as unreadable: the class has no samples", dir, sub,
                     classes.v[c], found[c]);
            st = DT_ERR_INVALID;
        }
    free(found);
    if (st != DT_OK) {
        strlist_free(&classes);
        strlist_free(&files);
        free(labels);
        dt_dataset_free(out);
        return st;
    }
    for (size_t i = n; i < files.n; i++)
        free(files.v[i]);
    out->n = n;
    out->channels = opts->channels;
    out->height = opts->height;
    out->width = opts->width;
    out->sample_len = len;
    out->nclasses = (int)classes.n;
    out->labels = labels;
    out->paths = files.v;
    out->npaths = n;
    out->class_names = classes.v;
    out->by_class = 1;
    for (int c = 0; c < opts->channels; c++) {
        out->mean[c] = 0.0f;
        out->std[c] = 1.0f;
    }
    dt_debug("%s/%s: %zu images in %zu classes decoded to %dx%dx%d%s", dir,
             sub, n, classes.n, opts->channels, opts->height, opts->width,
             skipped ? " (some skipped)" : "");
    return DT_OK;
}
