/* nvml_procs.h - the entries nvmlDeviceGetComputeRunningProcesses_v3 writes, whichever
 * layout the driver uses. The first R535 drivers (CUDA 12.2.0's NVML, 12.2.81: its nvml.h
 * adds a usedGpuCcProtectedMemory field after computeInstanceId, and
 * nvmlDeviceGetConfComputeMemSizeInfo) wrote 32-byte entries; NVML 12.1's nvml.h (R530) has
 * neither, and by 12.2.140 nvmlProcessInfo_t is 24 bytes again and the field moved to
 * nvmlDeviceGetRunningProcessDetailList (no such driver was checked here).
 * The library tells which: it has nvmlDeviceGetConfComputeMemSizeInfo but not yet
 * nvmlDeviceGetRunningProcessDetailList only in that window. Reading 32-byte entries with a
 * 24-byte stride gives every process after the first a pid made of the wrong bytes. */
#ifndef CARVE_NVML_PROCS_H
#define CARVE_NVML_PROCS_H

#include <stdbool.h>
#include <stddef.h>

#include "carve/nvml_abi.h"

#define CARVE_NVML_PROC_STRIDE_MAX 32

/* The bytes between entries of _v3, from which of the two symbols the library has. */
size_t carve_nvml_v3_stride(bool has_conf_compute_mem_size_info, bool has_detail_list);
/* The same for a loaded NVML library (a dlopen handle). */
size_t carve_nvml_lib_v3_stride(void *nvml_lib);
/* Entry i of a list written with stride, as nvmlProcessInfo_t. */
nvmlProcessInfo_t carve_nvml_proc_at(const void *list, size_t stride, unsigned int i);
/* Keeps, in place and in order, the entries whose pid is one of pids; returns how many. Any
 * stride of at least 4 bytes: only the leading pid is read. */
unsigned int carve_nvml_keep_procs(void *list, size_t stride, unsigned int n,
                                   const unsigned int *pids, int npids);

#endif
