/* class_list.c — an image folder's labels said in words.
 *
 * Labels are train/'s class folders in byte order, a rule users meet
 * only when they read a prediction: "Zebra" is label 0 before "apple",
 * and a class test/ lacks keeps its label but is never evaluated. The
 * job says both once, so a label can be read back to its folder without
 * guessing the sort. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "dataset.h"

/* Classes named in the line; more are summed up (a line stays short). */
#define SHOWN_MAX 16

/* A folder name as it reads in one log line: quotes, backslashes and
 * bytes that are no printable text (a newline, an escape sequence) as
 * \', \\ and \xHH; UTF-8 letters as they are. */
static void put_name(FILE *f, const char *name)
{
    fputc('\'', f);
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        if (*c == '\'' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(f, "\\x%02x", *c);
        else
            fputc(*c, f);
    }
    fputc('\'', f);
}

/* ds's samples of each label, into count (nclasses of them). */
static void count_labels(const dt_dataset_t *ds, size_t *count, int nclasses)
{
    for (size_t i = 0; i < ds->n; i++)
        if (ds->labels[i] < nclasses)
            count[ds->labels[i]]++;
}

char *dt_dataset_class_list(const dt_dataset_t *train,
                            const dt_dataset_t *test)
{
    if (!train->class_names || train->nclasses < 1)
        return NULL;
    int k = train->nclasses;
    size_t *in_test = calloc((size_t)k, sizeof *in_test);
    char *text = NULL;
    size_t len = 0;
    FILE *f = in_test ? open_memstream(&text, &len) : NULL;
    if (!f) {
        free(in_test);
        return NULL;
    }
    if (test)
        count_labels(test, in_test, k);
    fprintf(f, "labels are train/'s class folders in byte order:");
    for (int c = 0; c < k && c < SHOWN_MAX; c++) {
        fprintf(f, "%s %d ", c ? "," : "", c);
        put_name(f, train->class_names[c]);
    }
    if (k > SHOWN_MAX) { /* ImageNet's 1000: the start, and the rule */
        fprintf(f, ", ... %d ", k - 1);
        put_name(f, train->class_names[k - 1]);
        fprintf(f, " (%d in all)", k);
    }
    size_t missing = 0;
    for (int c = 0; test && c < k; c++)
        missing += in_test[c] == 0;
    if (missing) {
        fprintf(f, "; no test samples of %zu of them (not evaluated):",
                missing);
        for (int c = 0, n = 0; c < k; c++)
            if (in_test[c] == 0 && n < SHOWN_MAX) {
                fprintf(f, "%s %d ", n++ ? "," : "", c);
                put_name(f, train->class_names[c]);
            }
        if (missing > SHOWN_MAX)
            fprintf(f, ", ...");
    }
    free(in_test);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
