/* uuid.c - GPU UUID text <-> bytes, and GPU names (an index or a UUID) in lists. */
#include "uuid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

int carve_gpu_refs_parse(const char *text, struct carve_gpu_ref *out, int max, char *why,
                         size_t whylen)
{
    int n = 0;
    const char *s = text;
    for (;;) {
        s += strspn(s, " \t");
        size_t len = strcspn(s, ","), word = len;
        while (word > 0 && (s[word - 1] == ' ' || s[word - 1] == '\t'))
            word--;
        char item[64];
        snprintf(item, sizeof(item), "%.*s%s", (int)(word < 48 ? word : 48), s,
                 word > 48 ? "..." : "");
        if (word == 0) {
            snprintf(why, whylen, "`%s' has an empty entry: give GPU indices or GPU-UUIDs, "
                     "separated by commas (0,1 or GPU-8e6f...)", text);
            return -EINVAL;
        }
        if (n == max) {
            snprintf(why, whylen, "`%s' names more than %d GPUs, the most a slice is on", text,
                     max);
            return -EINVAL;
        }
        struct carve_gpu_ref *r = &out[n];
        memset(r, 0, sizeof(*r));
        if (word <= 9 && strspn(item, "0123456789") == word)
            r->index = atoi(item);
        else if (word < 48 && carve_uuid_parse(item, r->uuid) == 0)
            r->index = -1;
        else {
            snprintf(why, whylen, "`%s' is neither a GPU index (0, 1, ... as carve ps lists "
                     "them) nor a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", item);
            return -EINVAL;
        }
        for (int k = 0; k < n; k++)
            if (out[k].index == r->index && (r->index >= 0 || !memcmp(out[k].uuid, r->uuid, 16))) {
                snprintf(why, whylen, "`%s' names GPU %s twice", text, item);
                return -EINVAL;
            }
        n++;
        if (s[len] != ',')
            return n;
        s += len + 1;
    }
}

void carve_gpu_ref_text(const struct carve_gpu_ref *r, char *buf, size_t len)
{
    if (r->index >= 0)
        snprintf(buf, len, "%d", r->index);
    else
        carve_uuid_format(r->uuid, buf, len);
}
