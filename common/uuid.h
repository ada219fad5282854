/* uuid.h - GPU UUIDs between their text form ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as
 * NVML and nvidia-smi print them) and the 16 bytes cuDeviceGetUuid returns. */
#ifndef CARVE_UUID_H
#define CARVE_UUID_H

#include <stddef.h>

/* 0 and out filled, or -1 when text is not a GPU UUID. */
int carve_uuid_parse(const char *text, unsigned char out[16]);
/* Whether text is a GPU UUID, and uuid's. */
int carve_uuid_is(const char *text, const unsigned char uuid[16]);
/* Writes the text form (at least 41 bytes of buf). */
void carve_uuid_format(const unsigned char uuid[16], char *buf, size_t len);

#endif
