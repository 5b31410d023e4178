/* ckpt_format.h — byte layout shared by the checkpoint writer and reader
 * (see ckpt.h for the format). */
#ifndef DT_CKPT_FORMAT_H
#define DT_CKPT_FORMAT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_MAGIC "DTCKPT\r\n"
#define CKPT_MAGIC_LEN 8
#define CKPT_HEADER_LEN 24  /* magic, version, nsections, step            */
#define CKPT_SECTION_HEAD 16 /* tag, zero, len                            */
#define CKPT_HASH_LEN 32    /* SHA-256                                    */
#define CKPT_PREFIX "ckpt-"
#define CKPT_SUFFIX ".dtckpt"
#define CKPT_TMP_PREFIX ".ckpt-tmp-"

static inline void ckpt_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void ckpt_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t ckpt_get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline uint64_t ckpt_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline size_t ckpt_pad8(size_t n) { return (8 - n % 8) % 8; }

/* A name of the series, ckpt-<digits>.dtckpt: 1 and its step in *step. */
static inline int ckpt_parse_name(const char *name, uint64_t *step)
{
    size_t len = strlen(name), pl = strlen(CKPT_PREFIX),
           sl = strlen(CKPT_SUFFIX);
    if (len <= pl + sl || len - pl - sl > 20 ||
        strncmp(name, CKPT_PREFIX, pl) != 0 ||
        strcmp(name + len - sl, CKPT_SUFFIX) != 0)
        return 0;
    for (size_t i = pl; i < len - sl; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    *step = strtoull(name + pl, NULL, 10);
    return 1;
}

#endif /* DT_CKPT_FORMAT_H */
