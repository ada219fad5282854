/* mig_visible.c - reading CUDA_VISIBLE_DEVICES for `carve run --mode mig`: which GPUs and
 * MIG devices it names; see mig_visible.h. */
#include "mig_visible.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMS "a GPU index as nvidia-smi numbers them, a GPU UUID (GPU-..., or a unique " \
              "prefix of one) or a MIG device UUID (MIG-..., see carve mig list)"
#define UUID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"

/* "7": the GPU whose NVML index it is */
static int by_index(const char *all, const char *e, const struct mig_gpu *gpus, int ngpu,
                    struct mig_visible *out, char *err, size_t errlen)
{
    if (e[strspn(e, "0123456789")]) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s: `%.100s' is not %s", all, e, FORMS);
        return -EINVAL;
    }
    errno = 0;
    unsigned long v = strtoul(e, NULL, 10);
    for (int i = 0; !errno && i < ngpu; i++)
        if (gpus[i].index == v) {
            out->gpu[i] = true;
            return 0;
        }
    snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s names GPU %.100s, which this machine "
             "does not have (nvidia-smi -L lists its GPUs)", all, e);
    return -EINVAL;
}

/* "GPU-8932f937..." or a unique prefix of a GPU's UUID */
static int by_gpu_uuid(const char *all, const char *e, const struct mig_gpu *gpus, int ngpu,
                       struct mig_visible *out, char *err, size_t errlen)
{
    int found = -1, matches = 0;
    for (int i = 0; i < ngpu && e[4]; i++)
        if (strncmp(gpus[i].uuid, e, strlen(e)) == 0) {
            found = i;
            matches++;
        }
    if (matches == 1) {
        out->gpu[found] = true;
        return 0;
    }
    if (matches == 0)
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s: `%.100s' names no GPU of this machine "
                 "(nvidia-smi -L lists their UUIDs)", all, e);
    else
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s: `%.100s' matches %d GPUs: give more of the "
                 "UUID", all, e, matches);
    return -EINVAL;
}

/* "MIG-6984cedb-...": kept for the caller, who knows the MIG devices */
static int by_mig_uuid(const char *all, const char *e, struct mig_visible *out, char *err,
                       size_t errlen)
{
    if (strncmp(e, "MIG-GPU-", 8) == 0 && strchr(e, '/')) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s: `%.100s' is the MIG-GPU-UUID/GI/CI form of "
                 "drivers before R470; give the MIG device's UUID (MIG-..., see carve mig list)",
                 all, e);
        return -EINVAL;
    }
    if (!e[4] || strspn(e, UUID_CHARS) != strlen(e) || strlen(e) >= sizeof(out->mig[0])) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s: `%.100s' is not %s", all, e, FORMS);
        return -EINVAL;
    }
    if (!mig_visible_names(out, e)) {
        if (out->nmig == MIG_VISIBLE_MAX) {
            snprintf(err, errlen, "CUDA_VISIBLE_DEVICES names more than %d MIG devices",
                     MIG_VISIBLE_MAX);
            return -EINVAL;
        }
        snprintf(out->mig[out->nmig++], sizeof(out->mig[0]), "%s", e);
    }
    return 0;
}

static int one_entry(const char *all, const char *e, const struct mig_gpu *gpus, int ngpu,
                     struct mig_visible *out, char *err, size_t errlen)
{
    if (!*e) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s has an empty entry; each is %s", all,
                 FORMS);
        return -EINVAL;
    }
    if (*e >= '0' && *e <= '9')
        return by_index(all, e, gpus, ngpu, out, err, errlen);
    if (strncmp(e, "GPU-", 4) == 0)
        return by_gpu_uuid(all, e, gpus, ngpu, out, err, errlen);
    if (strncmp(e, "MIG-", 4) == 0)
        return by_mig_uuid(all, e, out, err, errlen);
    snprintf(err, errlen, "CUDA_VISIBLE_DEVICES=%.200s: `%.100s' is not %s", all, e, FORMS);
    return -EINVAL;
}

int mig_visible_parse(const char *visible, const struct mig_gpu *gpus, int ngpu,
                      struct mig_visible *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!*visible) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES is empty, which hides every GPU: unset it, "
                 "or name the GPUs or MIG devices to choose an instance from");
        return -EINVAL;
    }
    char *copy = strdup(visible);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int r = 0;
    for (char *e = copy, *next; r == 0 && e; e = next) {
        next = strchr(e, ',');
        if (next)
            *next++ = '\0';
        r = one_entry(visible, e, gpus, ngpu, out, err, errlen);
    }
    free(copy);
    return r;
}

bool mig_visible_names(const struct mig_visible *v, const char *uuid)
{
    for (int i = 0; i < v->nmig; i++)
        if (strcmp(v->mig[i], uuid) == 0)
            return true;
    return false;
}
