/* config_parse.c — the typed value parsers (int, bool, size, duration,
 * list). They only parse: callers turn a failure into a message that names
 * the value's origin. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <dt/config.h>

dt_status_t dt_parse_int(const char *text, long long *out)
{
    if (!text || !out)
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*text))
        text++;
    if (!*text)
        return DT_ERR_INVALID;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno == ERANGE || end == text)
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return DT_ERR_INVALID;
    *out = v;
    return DT_OK;
}

dt_status_t dt_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    if (!text || !out)
        return DT_ERR_INVALID;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return DT_OK;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return DT_OK;
        }
    }
    return DT_ERR_INVALID;
}

/* A non-negative decimal integer without sign; end points past it. */
static dt_status_t parse_unsigned(const char *text, uint64_t *out,
                                  const char **end)
{
    if (!isdigit((unsigned char)*text))
        return DT_ERR_INVALID;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*text); text++) {
        unsigned d = (unsigned)(*text - '0');
        if (v > (UINT64_MAX - d) / 10)
            return DT_ERR_INVALID;
        v = v * 10 + d;
    }
    *out = v;
    *end = text;
    return DT_OK;
}

dt_status_t dt_parse_size(const char *text, uint64_t *out)
{
    if (!text || !out)
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*text))
        text++;
    uint64_t v;
    const char *p;
    if (parse_unsigned(text, &v, &p) != DT_OK)
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*p))
        p++;
    unsigned shift = 0;
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; p++; break;
    case 'M': shift = 20; p++; break;
    case 'G': shift = 30; p++; break;
    case 'T': shift = 40; p++; break;
    default: break;
    }
    /* Accept 25M, 25MB, 25MiB and 25B alike: all mean powers of two. */
    if (shift && (*p == 'i' || *p == 'I'))
        p++;
    if (*p == 'b' || *p == 'B')
        p++;
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return DT_ERR_INVALID;
    if (shift && v > (UINT64_MAX >> shift))
        return DT_ERR_INVALID;
    *out = v << shift;
    return DT_OK;
}

dt_status_t dt_parse_duration(const char *text, double *seconds)
{
    if (!text || !seconds)
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*text))
        text++;
    /* strtod also takes "inf", "nan", hex, exponents and signs: the number
     * must be plain digits and one optional '.'. */
    size_t span = strspn(text, "0123456789.");
    if (span == 0 || !isdigit((unsigned char)text[strspn(text, ".")]))
        return DT_ERR_INVALID;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno == ERANGE || end != text + span || !isfinite(v))
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*end))
        end++;
    double scale = 1.0;
    if (strcmp(end, "ms") == 0)
        scale = 1e-3;
    else if (strcmp(end, "us") == 0)
        scale = 1e-6;
    else if (strcmp(end, "ns") == 0)
        scale = 1e-9;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        scale = 1.0;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        scale = 60.0;
    else if (strcmp(end, "h") == 0)
        scale = 3600.0;
    else
        return DT_ERR_INVALID;
    *seconds = v * scale;
    return DT_OK;
}

dt_status_t dt_parse_double(const char *text, double *out)
{
    if (!text || !out)
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*text))
        text++;
    /* strtod also takes "nan", "inf" and hex: only a decimal number with an
     * optional sign, '.', and exponent is a value a person writes. */
    if (strspn(text, "+-0123456789.eE") == 0 || strpbrk(text, "xX"))
        return DT_ERR_INVALID;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE || !isfinite(v))
        return DT_ERR_INVALID;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return DT_ERR_INVALID;
    *out = v;
    return DT_OK;
}

void dt_strv_free(char **strv)
{
    if (!strv)
        return;
    for (char **s = strv; *s; s++)
        free(*s);
    free(strv);
}

dt_status_t dt_parse_list(const char *text, char ***items, size_t *n)
{
    if (!text || !items || !n)
        return DT_ERR_INVALID;
    size_t count = 0;
    char **v = calloc(1, sizeof *v);
    if (!v)
        return DT_ERR_NOMEM;
    const char *p = text;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ", \t\r\n\v\f");
        char **nv = realloc(v, (count + 2) * sizeof *nv);
        if (!nv)
            goto nomem;
        v = nv;
        if (!(v[count] = strndup(p, len)))
            goto nomem;
        v[++count] = NULL;
        p += len;
    }
    *items = v;
    *n = count;
    return DT_OK;
nomem:
    dt_strv_free(v);
    return DT_ERR_NOMEM;
}

/* One word from *p (past leading blanks), appended to out; *p moves past
 * it. DT_ERR_INVALID: a quote left open or a backslash at the end. */
static dt_status_t next_word(const char **p, char *out, size_t *len)
{
    const char *c = *p;
    size_t n = 0;
    while (*c && !isspace((unsigned char)*c)) {
        if (*c == '\'') {
            const char *end = strchr(c + 1, '\'');
            if (!end)
                return DT_ERR_INVALID;
            memcpy(out + n, c + 1, (size_t)(end - c - 1));
            n += (size_t)(end - c - 1);
            c = end + 1;
        } else if (*c == '"') {
            for (c++; *c != '"'; c++) {
                if (!*c)
                    return DT_ERR_INVALID;
                if (*c == '\\' && c[1] && strchr("\"\\$`", c[1]))
                    c++;
                out[n++] = *c;
            }
            c++;
        } else if (*c == '\\') {
            if (!c[1])
                return DT_ERR_INVALID;
            out[n++] = c[1];
            c += 2;
        } else {
            out[n++] = *c++;
        }
    }
    out[n] = '\0';
    *len = n;
    *p = c;
    return DT_OK;
}

dt_status_t dt_parse_words(const char *text, char ***words, size_t *n)
{
    if (!text || !words || !n)
        return DT_ERR_INVALID;
    size_t count = 0, len;
    /* No word is longer than the text. */
    char *buf = malloc(strlen(text) + 1), **v = calloc(1, sizeof *v);
    dt_status_t st = buf && v ? DT_OK : DT_ERR_NOMEM;
    const char *p = text;
    while (st == DT_OK) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        if ((st = next_word(&p, buf, &len)) != DT_OK)
            break;
        char **nv = realloc(v, (count + 2) * sizeof *nv);
        if (!nv || !(nv[count] = strndup(buf, len))) {
            if (nv)
                v = nv;
            st = DT_ERR_NOMEM;
            break;
        }
        v = nv;
        v[++count] = NULL;
    }
    free(buf);
    if (st != DT_OK) {
        dt_strv_free(v);
        return st;
    }
    *words = v;
    *n = count;
    return DT_OK;
}
