/* utf8_chars.h — characters, not bytes, of text a message quotes: a caret
 * under a layer string must count what the terminal shows, and a word cut
 * inside a UTF-8 sequence would print a broken character. */
#ifndef DT_NN_UTF8_CHARS_H
#define DT_NN_UTF8_CHARS_H

/* Bytes of the character at s: the length of the well-formed UTF-8
 * sequence there, else 1 (a stray byte shows as one replacement
 * character); 0 at the terminating NUL. */
int dt_utf8_char_bytes(const char *s);

/* Characters in s[0, nbytes), counted as dt_utf8_char_bytes steps (a
 * sequence that crosses nbytes counts once). */
int dt_utf8_chars(const char *s, int nbytes);

#endif /* DT_NN_UTF8_CHARS_H */
