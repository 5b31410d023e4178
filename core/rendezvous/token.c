/* token.c — the per-job secret: generation and hex form for the
 * environment. Never log a token. */
#include <openssl/rand.h>
#include <string.h>

#include <dt/store.h>

dt_status_t dt_token_generate(uint8_t token[DT_TOKEN_BYTES])
{
    return RAND_bytes(token, DT_TOKEN_BYTES) == 1 ? DT_OK : DT_ERR_INTERNAL;
}

void dt_token_to_hex(const uint8_t token[DT_TOKEN_BYTES],
                     char hex[2 * DT_TOKEN_BYTES + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < DT_TOKEN_BYTES; i++) {
        hex[2 * i] = digits[token[i] >> 4];
        hex[2 * i + 1] = digits[token[i] & 15];
    }
    hex[2 * DT_TOKEN_BYTES] = '\0';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

dt_status_t dt_token_from_hex(const char *hex, uint8_t token[DT_TOKEN_BYTES])
{
    if (!hex || strlen(hex) != 2 * DT_TOKEN_BYTES)
        return DT_ERR_INVALID;
    for (int i = 0; i < DT_TOKEN_BYTES; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return DT_ERR_INVALID;
        token[i] = (uint8_t)(hi << 4 | lo);
    }
    return DT_OK;
}
