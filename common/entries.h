/* entries.h - cuGetProcAddress's rules over include/carve/driver_entries.def: which exported
 * entry point answers a base name at a CUDA version, with or without per-thread streams. */
#ifndef CARVE_ENTRIES_H
#define CARVE_ENTRIES_H

#include <stdbool.h>

struct carve_entry {
    const char *name, *base;
    int version;
    int flags; /* CARVE_PT */
};

#define CARVE_PT 1

extern const struct carve_entry carve_entries[];
extern const int carve_nentries;

/* Index in carve_entries of the newest ABI of symbol introduced at or before version (the
 * per-thread variant when per_thread and one exists); -1 when none: *found_name then says
 * whether the symbol exists at some later version. */
int carve_entry_find(const char *symbol, int version, bool per_thread, bool *found_name);

#endif
