/* uuid.h - GPU UUIDs between their text form ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as
 * NVML and nvidia-smi print them) and the 16 bytes cuDeviceGetUuid returns; and GPUs as
 * users name them, by index or by UUID (gpus.h finds them among a node's GPUs). */
#ifndef CARVE_UUID_H
#define CARVE_UUID_H

#include <stddef.h>

/* 0 and out filled, or -1 when text is not a GPU UUID. */
int carve_uuid_parse(const char *text, unsigned char out[16]);
/* Whether text is a GPU UUID, and uuid's. */
int carve_uuid_is(const char *text, const unsigned char uuid[16]);
/* Writes the text form (at least 41 bytes of buf). */
void carve_uuid_format(const unsigned char uuid[16], char *buf, size_t len);

/* A GPU as a user names one: by the node's index (as carve ps and nvidia-smi list them) or by
 * its UUID. `carve slice create --gpus', carved's create request and the config's gpus key
 * all take these, and carved alone knows the node's GPUs to find them among. */
struct carve_gpu_ref {
    int index;              /* -1: named by uuid */
    unsigned char uuid[16];
};
/* A comma list of such names ("0,2", "GPU-8e6f...,1"; blanks around each allowed) into out:
 * their count (1 to max), or -EINVAL with why, which quotes the entry that is neither. */
int carve_gpu_refs_parse(const char *text, struct carve_gpu_ref *out, int max, char *why,
                         size_t whylen);
/* r as a user would write it ("1", "GPU-8e6f..."), for messages: at least 41 bytes of buf. */
void carve_gpu_ref_text(const struct carve_gpu_ref *r, char *buf, size_t len);

#endif
