/* size.h - parsing and printing byte sizes ("512MiB", "8G", "8GiB") and memory specs
 * ("8GiB" for every GPU, "0=8GiB,1=4GiB" per GPU index). */
#ifndef CARVE_SIZE_H
#define CARVE_SIZE_H

#include <stddef.h>
#include <stdint.h>

#define CARVE_SPEC_MAX_DEVICES 16

/* Parses a size. Units: none or B (bytes); K, M, G, T and KiB, MiB, GiB, TiB (binary,
 * 1024-based, as Slurm and Docker read "8G"); KB, MB, GB, TB (decimal). Unit letters are
 * case-insensitive; a decimal fraction is allowed with a unit ("1.5GiB").
 * Returns 0, or -EINVAL (malformed, negative, unknown unit), -ERANGE (overflow) or -EDOM
 * (zero) with a message in err naming the input and the accepted forms. */
int carve_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);

/* The least memory a cap or a GPU memory request may name: 1 MiB. A bare number is bytes,
 * so `8' meant as 8 GiB would otherwise be an 8-byte cap that no CUDA context fits. */
#define CARVE_CAP_MIN (1ULL << 20)

/* carve_parse_size for GPU memory (caps, MIG and advisor requests): also refuses a size
 * below CARVE_CAP_MIN with -EDOM, saying that a bare number is bytes. */
int carve_parse_cap(const char *s, uint64_t *out, char *err, size_t errlen);

/* "8.00 GiB", "512 MiB", "123 B": the largest binary unit that keeps the number >= 1. */
void carve_format_size(uint64_t bytes, char *buf, size_t len);

struct carve_memory_spec {
    uint64_t all;                          /* one size for every GPU, or 0 */
    uint64_t per_index[CARVE_SPEC_MAX_DEVICES]; /* per physical GPU index; 0 = not named */
    int per_index_count;                   /* how many indices were named */
};

/* Parses "SIZE" or "IDX=SIZE[,IDX=SIZE...]" (IDX 0-15, each at most once); each SIZE as
 * carve_parse_cap takes it (at least 1 MiB). */
int carve_parse_memory_spec(const char *s, struct carve_memory_spec *out, char *err,
                            size_t errlen);

#endif
