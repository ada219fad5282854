/* hooks.c - the tables generated from hooks.def and the two resolution paths that hand out
 * our wrappers: the exported dlsym, and cuGetProcAddress / cuGetProcAddress_v2.
 *
 * Real pointers are resolved with the real dlsym (dlvsym(RTLD_NEXT, "dlsym", ...)) on
 * RTLD_LOCAL handles of libcuda.so.1 and libnvidia-ml.so.1, never through our own dlsym. */
#include "libcarve.h"
#include "entries.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

struct carve_real carve__real;

const struct carve_hook carve__hooks[] = {
#define CARVE_HOOK(lib, name) \
    {#name, CARVE_LIB_##lib, (void *)&name, (void **)&carve__real.name},
#include "hooks.def"
};
const size_t carve__nhooks = sizeof(carve__hooks) / sizeof(carve__hooks[0]);

/* Functions libcarve calls but does not wrap: only resolved. */
static const struct {
    const char *name;
    enum carve_lib lib;
    void **real;
} reals[] = {
#define CARVE_REAL(lib, name) {#name, CARVE_LIB_##lib, (void **)&carve__real.name},
#include "hooks.def"
};

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym;

void *carve__real_dlsym(void *handle, const char *name)
{
    dlsym_fn f = atomic_load_explicit(&real_dlsym, memory_order_acquire);
    if (!f) {
        /* racing threads find the same function: storing it twice is harmless */
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        if (!f)
            return NULL;
        atomic_store_explicit(&real_dlsym, f, memory_order_release);
    }
    return f(handle, name);
}

static void *lib_handle(enum carve_lib lib)
{
    static void *handles[2];
    static const char *const names[2] = {"libcuda.so.1", "libnvidia-ml.so.1"};
    if (!handles[lib])
        handles[lib] = dlopen(names[lib], RTLD_NOW | RTLD_LOCAL);
    return handles[lib];
}

static void resolve_one(enum carve_lib lib, const char *name, void **slot)
{
    void *h = lib_handle(lib);
    if (h && !*slot)
        *slot = carve__real_dlsym(h, name);
}

/* Called once from carve__init_slow (serialised there). */
void carve__resolve_real(void)
{
    for (size_t i = 0; i < carve__nhooks; i++)
        resolve_one(carve__hooks[i].lib, carve__hooks[i].name, carve__hooks[i].real);
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++)
        resolve_one(reals[i].lib, reals[i].name, reals[i].real);
}

const struct carve_hook *carve__hook_by_name(const char *name)
{
    if (!name || (name[0] != 'c' && name[0] != 'n'))
        return NULL;
    for (size_t i = 0; i < carve__nhooks; i++)
        if (strcmp(carve__hooks[i].name, name) == 0)
            return &carve__hooks[i];
    return NULL;
}

/* For benchmarks: the driver's own function behind a wrapper, so that one process can time
 * both in alternation (bench/overhead --paired) and drift between processes cancels out. */
CARVE_EXPORT void *carve_real_symbol(const char *name)
{
    carve__init();
    const struct carve_hook *h = carve__hook_by_name(name);
    return h ? *h->real : NULL;
}

void *carve__wrap_pointer(void *p)
{
    if (!p)
        return p;
    for (size_t i = 0; i < carve__nhooks; i++)
        if (*carve__hooks[i].real == p)
            return carve__hooks[i].wrapper;
    return p;
}

/* Whether p is exactly one of a loaded library's exported symbols. */
static bool exported_symbol(void *p)
{
    Dl_info info;
    return dladdr(p, &info) && info.dli_sname && info.dli_saddr == p;
}

void *carve__gpa_answer(const char *symbol, int version, cuuint64_t flags, void *p)
{
    void *w = carve__wrap_pointer(p);
    if (w != p || !p || !symbol)
        return w;
    /* one of the driver's symbols that we do not wrap (another ABI version of a hooked
     * name, say): guessing by name could hand out a wrapper of another prototype */
    if (exported_symbol(p))
        return p;
    /* a pointer that is none of the driver's exported symbols: answer by name instead, with
     * the driver's own choice of version, so no entry point slips past the wrappers */
    int i = carve_entry_find(symbol, version,
                             (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, NULL);
    const struct carve_hook *h = i >= 0 ? carve__hook_by_name(carve_entries[i].name) : NULL;
    return h && *h->real ? h->wrapper : p;
}

/* dlsym(RTLD_NEXT, ...) means "after the caller's object": the real dlsym would take
 * libcarve as the caller, so walk the link map from the object that holds the caller. */
static void *dlsym_next(const char *name, const void *caller)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return NULL;
    for (lm = lm->l_next; lm; lm = lm->l_next) {
        /* a link_map of a start-up object is no dlopen handle: ask for one */
        void *h = lm->l_name && *lm->l_name ? dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD)
                                            : NULL;
        void *p = h ? carve__real_dlsym(h, name) : NULL;
        if (h)
            dlclose(h);
        if (p)
            return p;
    }
    return NULL;
}

CARVE_EXPORT void *dlsym(void *handle, const char *name)
{
    void *p = handle == RTLD_NEXT ? dlsym_next(name, __builtin_return_address(0))
                                  : carve__real_dlsym(handle, name);
    if (!p)
        return NULL;
    const struct carve_hook *h = carve__hook_by_name(name);
    return h ? h->wrapper : p;
}

CARVE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags)
{
    carve__init();
    if (!R.cuGetProcAddress)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = R.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = carve__gpa_answer(symbol, cudaVersion, flags, *pfn);
    return r;
}

CARVE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus)
{
    carve__init();
    if (!R.cuGetProcAddress_v2)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = R.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn)
        *pfn = carve__gpa_answer(symbol, cudaVersion, flags, *pfn);
    return r;
}
