/* utf8_chars.c — counting UTF-8 characters for caret lines and quoted
 * words (utf8_chars.h). */
#include "config.h"

#include "utf8_chars.h"

int dt_utf8_char_bytes(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    int n;
    unsigned cp, min;
    if (s[0] == 0)
        return 0;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, min = 0x80, cp = s[0] & 0x1f;
    else if ((s[0] & 0xf0) == 0xe0)
        n = 3, min = 0x800, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, min = 0x10000, cp = s[0] & 0x07;
    else
        return 1;
    /* a NUL is no continuation byte, so this never reads past the end */
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and beyond U+10FFFF are not UTF-8 */
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 1;
    return n;
}

int dt_utf8_chars(const char *s, int nbytes)
{
    int chars = 0;
    for (int i = 0; i < nbytes && s[i]; chars++)
        i += dt_utf8_char_bytes(s + i);
    return chars;
}
