/* uuid.c - GPU UUID text <-> bytes. */
#include "uuid.h"

#include <stdio.h>
#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int carve_uuid_parse(const char *text, unsigned char out[16])
{
    if (!text || strncmp(text, "GPU-", 4) != 0)
        return -1;
    const char *s = text + 4;
    for (int i = 0; i < 16; i++) {
        if (*s == '-')
            s++;
        int hi = hexval(s[0]), lo = hi < 0 ? -1 : hexval(s[1]);
        if (lo < 0)
            return -1;
        out[i] = (unsigned char)(hi << 4 | lo);
        s += 2;
    }
    return *s == '\0' ? 0 : -1;
}

int carve_uuid_is(const char *text, const unsigned char uuid[16])
{
    unsigned char u[16];
    return carve_uuid_parse(text, u) == 0 && memcmp(u, uuid, 16) == 0;
}

void carve_uuid_format(const unsigned char u[16], char *buf, size_t len)
{
    snprintf(buf, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
             u[13], u[14], u[15]);
}
