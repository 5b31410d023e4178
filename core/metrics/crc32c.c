/* crc32c.c — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) as
 * TFRecord files need it; a byte-wise table is plenty for log records. */
#include <pthread.h>

#include "metrics.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t dt_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, make_table);
    const unsigned char *p = buf;
    crc = ~crc;
    while (len--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* TFRecord masks CRCs so that CRCs of data containing CRCs stay strong. */
uint32_t dt_crc32c_masked(const void *buf, size_t len)
{
    uint32_t crc = dt_crc32c(0, buf, len);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
