/* entries.c - the table of driver entry points and cuGetProcAddress's choice among them. */
#include "entries.h"

#include <string.h>

const struct carve_entry carve_entries[] = {
#define CARVE_ENTRY(name, base, ver, flags) {#name, #base, ver, flags},
#include "carve/driver_entries.def"
};
const int carve_nentries = sizeof(carve_entries) / sizeof(carve_entries[0]);

int carve_entry_find(const char *symbol, int version, bool per_thread, bool *found_name)
{
    int best = -1;
    if (found_name)
        *found_name = false;
    for (int i = 0; i < carve_nentries; i++) {
        const struct carve_entry *e = &carve_entries[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        if (found_name)
            *found_name = true;
        bool pt = e->flags & CARVE_PT;
        if (e->version > version || (pt && !per_thread))
            continue;
        /* the newer ABI wins; at equal version the per-thread variant when asked for */
        if (best < 0 || e->version > carve_entries[best].version ||
            (e->version == carve_entries[best].version && pt))
            best = i;
    }
    return best;
}
