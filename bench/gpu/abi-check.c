/* abi-check.c - the ABI facts carve declares about the CUDA driver API and NVML
 * (include/carve/), printed as "name value" lines: struct sizes, alignments and member
 * offsets, enum and macro values, which entry points the driver libraries export, and what
 * cuGetProcAddress answers for each row of driver_entries.def. Built against NVIDIA's
 * <cuda.h> and <nvml.h> it prints the toolkit's and the driver's answers; built with
 * -DCARVE_SIDE it prints carve's (no GPU needed). bench/gpu/run-abi-check.sh builds both and
 * diffs them. One translation unit cannot hold both sets of declarations (same names). */
#ifdef CARVE_SIDE
#include "carve/cuda_abi.h"
#include "carve/nvml_mig_abi.h"
#include "entries.h"
#else
#include <cuda.h>
#include <nvml.h>
#if CUDA_VERSION < 12080
#error "abi-check wants the headers of CUDA 12.8 or later"
#endif
#ifndef nvmlProcessDetailList_v1
#error "abi-check wants an nvml.h with nvmlProcessDetailList (CUDA 12.2 update 2 or later)"
#endif
#define CARVE_PT 1
#endif

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE(T) printf("sizeof.%s %zu\nalignof.%s %zu\n", #T, sizeof(T), #T, _Alignof(T))
#define OFF(T, m) printf("offsetof.%s.%s %zu\n", #T, #m, offsetof(T, m))
#define VAL(x) printf("value.%s %lld\n", #x, (long long)(x))

static void *cuda_lib, *nvml_lib;

/* Whether the driver library exports name (carve's side: it declares it, so yes). */
static void sym(void **lib, const char *name)
{
#ifdef CARVE_SIDE
    (void)lib;
    printf("sym.%s 1\n", name);
#else
    printf("sym.%s %d\n", name, *lib && dlsym(*lib, name) ? 1 : 0);
#endif
}
#define SYM(lib, name) sym(&lib, #name);

/* Which exported entry point cuGetProcAddress gives for base at version, with per-thread
 * default streams or legacy ones: carve's table, or the driver's answer by its symbol name. */
static void gpa(const char *base, int version, int pt)
{
    const char *name = "none";
#ifdef CARVE_SIDE
    int i = carve_entry_find(base, version, pt, NULL);
    if (i >= 0)
        name = carve_entries[i].name;
#else
    typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
    static gpa_fn fn;
    static int ready = -1;
    if (ready < 0) {
        typedef CUresult (*init_fn)(unsigned int);
        init_fn init = cuda_lib ? (init_fn)dlsym(cuda_lib, "cuInit") : NULL;
        fn = cuda_lib ? (gpa_fn)dlsym(cuda_lib, "cuGetProcAddress_v2") : NULL;
        ready = init && fn && init(0) == CUDA_SUCCESS;
    }
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    Dl_info info;
    if (!ready)
        name = "unavailable";
    else if (fn(base, &p, version,
                pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                   : CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                &st) == CUDA_SUCCESS && p)
        name = dladdr(p, &info) && info.dli_sname && info.dli_saddr == p ? info.dli_sname
                                                                         : "unexported";
#endif
    printf("gpa.%s@%d%s %s\n", base, version, pt ? "+pt" : "", name);
}

static void cuda_facts(void)
{
    SIZE(CUresult); SIZE(CUdevice); SIZE(CUdeviceptr); SIZE(cuuint64_t);
    SIZE(CUmemGenericAllocationHandle); SIZE(CUdevice_attribute); SIZE(CUmemLocationType);
    SIZE(CUstreamCaptureMode); SIZE(CUgraphInstantiateResult);
    SIZE(CUuuid);
    SIZE(CUmemLocation); OFF(CUmemLocation, type); OFF(CUmemLocation, id);
    SIZE(CUmemAllocationProp); OFF(CUmemAllocationProp, type);
    OFF(CUmemAllocationProp, requestedHandleTypes); OFF(CUmemAllocationProp, location);
    OFF(CUmemAllocationProp, win32HandleMetaData); OFF(CUmemAllocationProp, allocFlags);
    OFF(CUmemAllocationProp, allocFlags.compressionType);
    OFF(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable);
    OFF(CUmemAllocationProp, allocFlags.usage); OFF(CUmemAllocationProp, allocFlags.reserved);
    SIZE(CUmemAccessDesc); OFF(CUmemAccessDesc, location); OFF(CUmemAccessDesc, flags);
    SIZE(CUmemPoolProps); OFF(CUmemPoolProps, allocType); OFF(CUmemPoolProps, handleTypes);
    OFF(CUmemPoolProps, location); OFF(CUmemPoolProps, win32SecurityAttributes);
    OFF(CUmemPoolProps, maxSize); OFF(CUmemPoolProps, usage); OFF(CUmemPoolProps, reserved);
    SIZE(CUDA_MEM_ALLOC_NODE_PARAMS); OFF(CUDA_MEM_ALLOC_NODE_PARAMS, poolProps);
    OFF(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs); OFF(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescCount);
    OFF(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize); OFF(CUDA_MEM_ALLOC_NODE_PARAMS, dptr);
    SIZE(CUDA_ARRAY_DESCRIPTOR); OFF(CUDA_ARRAY_DESCRIPTOR, Width);
    OFF(CUDA_ARRAY_DESCRIPTOR, Height); OFF(CUDA_ARRAY_DESCRIPTOR, Format);
    OFF(CUDA_ARRAY_DESCRIPTOR, NumChannels);
    SIZE(CUDA_ARRAY3D_DESCRIPTOR); OFF(CUDA_ARRAY3D_DESCRIPTOR, Depth);
    OFF(CUDA_ARRAY3D_DESCRIPTOR, Format); OFF(CUDA_ARRAY3D_DESCRIPTOR, NumChannels);
    OFF(CUDA_ARRAY3D_DESCRIPTOR, Flags);
    SIZE(CUDA_ARRAY_MEMORY_REQUIREMENTS); OFF(CUDA_ARRAY_MEMORY_REQUIREMENTS, size);
    OFF(CUDA_ARRAY_MEMORY_REQUIREMENTS, alignment); OFF(CUDA_ARRAY_MEMORY_REQUIREMENTS, reserved);
    SIZE(CUlaunchAttribute); OFF(CUlaunchAttribute, id); OFF(CUlaunchAttribute, value);
    SIZE(CUlaunchConfig); OFF(CUlaunchConfig, gridDimX); OFF(CUlaunchConfig, blockDimZ);
    OFF(CUlaunchConfig, sharedMemBytes); OFF(CUlaunchConfig, hStream); OFF(CUlaunchConfig, attrs);
    OFF(CUlaunchConfig, numAttrs);
    SIZE(CUDA_LAUNCH_PARAMS); OFF(CUDA_LAUNCH_PARAMS, function); OFF(CUDA_LAUNCH_PARAMS, gridDimX);
    OFF(CUDA_LAUNCH_PARAMS, sharedMemBytes); OFF(CUDA_LAUNCH_PARAMS, hStream);
    OFF(CUDA_LAUNCH_PARAMS, kernelParams);
    SIZE(CUDA_GRAPH_INSTANTIATE_PARAMS); OFF(CUDA_GRAPH_INSTANTIATE_PARAMS, flags);
    OFF(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream);
    OFF(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out);
    OFF(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out);
    SIZE(CUctxCreateParams); OFF(CUctxCreateParams, execAffinityParams);
    OFF(CUctxCreateParams, numExecAffinityParams); OFF(CUctxCreateParams, cigParams);

    VAL(CUDA_SUCCESS); VAL(CUDA_ERROR_INVALID_VALUE); VAL(CUDA_ERROR_OUT_OF_MEMORY);
    VAL(CUDA_ERROR_NOT_INITIALIZED); VAL(CUDA_ERROR_DEINITIALIZED); VAL(CUDA_ERROR_NO_DEVICE);
    VAL(CUDA_ERROR_INVALID_DEVICE); VAL(CUDA_ERROR_INVALID_IMAGE);
    VAL(CUDA_ERROR_DEVICE_UNAVAILABLE); VAL(CU_COMPUTEMODE_DEFAULT);
    VAL(CU_COMPUTEMODE_PROHIBITED); VAL(CU_COMPUTEMODE_EXCLUSIVE_PROCESS);
    VAL(CUDA_ERROR_INVALID_CONTEXT); VAL(CUDA_ERROR_INVALID_HANDLE); VAL(CUDA_ERROR_NOT_FOUND);
    VAL(CUDA_ERROR_NOT_READY); VAL(CUDA_ERROR_LAUNCH_FAILED); VAL(CUDA_ERROR_NOT_PERMITTED);
    VAL(CUDA_ERROR_NOT_SUPPORTED); VAL(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    VAL(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); VAL(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    VAL(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD); VAL(CUDA_ERROR_UNKNOWN);
    VAL(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK); VAL(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    VAL(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X); VAL(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    VAL(CU_DEVICE_ATTRIBUTE_CLOCK_RATE); VAL(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    VAL(CU_DEVICE_ATTRIBUTE_INTEGRATED); VAL(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
    VAL(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID); VAL(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    VAL(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING); VAL(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    VAL(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    VAL(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR); VAL(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
    VAL(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH);
    VAL(CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH);
    VAL(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
    VAL(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
    VAL(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
    VAL(CU_CTX_SCHED_AUTO); VAL(CU_MEM_ATTACH_GLOBAL); VAL(CU_MEM_ATTACH_HOST);
    VAL(CU_LIMIT_STACK_SIZE); VAL(CU_LIMIT_PRINTF_FIFO_SIZE); VAL(CU_LIMIT_MALLOC_HEAP_SIZE);
    VAL(CU_MEM_LOCATION_TYPE_INVALID); VAL(CU_MEM_LOCATION_TYPE_DEVICE);
    VAL(CU_MEM_LOCATION_TYPE_HOST); VAL(CU_MEM_LOCATION_TYPE_HOST_NUMA);
    VAL(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT); VAL(CU_MEM_ALLOCATION_TYPE_INVALID);
    VAL(CU_MEM_ALLOCATION_TYPE_PINNED); VAL(CU_MEM_HANDLE_TYPE_NONE);
    VAL(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR); VAL(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    VAL(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED); VAL(CU_MEM_ACCESS_FLAGS_PROT_NONE);
    VAL(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    VAL(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES);
    VAL(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC);
    VAL(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES); VAL(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
    VAL(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); VAL(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
    VAL(CU_MEMPOOL_ATTR_USED_MEM_CURRENT); VAL(CU_MEMPOOL_ATTR_USED_MEM_HIGH);
    VAL(CU_AD_FORMAT_UNSIGNED_INT8); VAL(CU_AD_FORMAT_UNSIGNED_INT16);
    VAL(CU_AD_FORMAT_UNSIGNED_INT32); VAL(CU_AD_FORMAT_SIGNED_INT8); VAL(CU_AD_FORMAT_SIGNED_INT16);
    VAL(CU_AD_FORMAT_SIGNED_INT32); VAL(CU_AD_FORMAT_HALF); VAL(CU_AD_FORMAT_FLOAT);
    VAL(CU_STREAM_DEFAULT); VAL(CU_STREAM_NON_BLOCKING); VAL(CU_STREAM_CAPTURE_MODE_GLOBAL);
    VAL(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); VAL(CU_STREAM_CAPTURE_MODE_RELAXED);
    VAL(CU_STREAM_CAPTURE_STATUS_NONE); VAL(CU_STREAM_CAPTURE_STATUS_ACTIVE);
    VAL(CU_STREAM_CAPTURE_STATUS_INVALIDATED); VAL(CU_EVENT_DEFAULT); VAL(CU_EVENT_BLOCKING_SYNC);
    VAL(CU_EVENT_DISABLE_TIMING); VAL(CU_GRAPH_NODE_TYPE_KERNEL); VAL(CU_GRAPH_NODE_TYPE_GRAPH);
    VAL(CU_GRAPH_NODE_TYPE_EMPTY); VAL(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    VAL(CU_GRAPH_NODE_TYPE_MEM_FREE); VAL(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
    VAL(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH); VAL(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    VAL(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH); VAL(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    VAL(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD); VAL(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
    VAL(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY); VAL(CUDA_GRAPH_INSTANTIATE_SUCCESS);
    VAL(CUDA_GRAPH_INSTANTIATE_ERROR); VAL(CU_GET_PROC_ADDRESS_DEFAULT);
    VAL(CU_GET_PROC_ADDRESS_LEGACY_STREAM); VAL(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    VAL(CU_GET_PROC_ADDRESS_SUCCESS); VAL(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    VAL(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void nvml_facts(void)
{
    SIZE(nvmlReturn_t);
    SIZE(nvmlMemory_t); OFF(nvmlMemory_t, free); OFF(nvmlMemory_t, used);
    SIZE(nvmlMemory_v2_t); OFF(nvmlMemory_v2_t, total); OFF(nvmlMemory_v2_t, reserved);
    OFF(nvmlMemory_v2_t, free); OFF(nvmlMemory_v2_t, used);
    SIZE(nvmlUtilization_t); OFF(nvmlUtilization_t, memory);
    SIZE(nvmlProcessInfo_v1_t); OFF(nvmlProcessInfo_v1_t, usedGpuMemory);
    SIZE(nvmlProcessInfo_t); OFF(nvmlProcessInfo_t, usedGpuMemory);
    OFF(nvmlProcessInfo_t, gpuInstanceId); OFF(nvmlProcessInfo_t, computeInstanceId);
    SIZE(nvmlProcessUtilizationSample_t); OFF(nvmlProcessUtilizationSample_t, timeStamp);
    OFF(nvmlProcessUtilizationSample_t, smUtil); OFF(nvmlProcessUtilizationSample_t, decUtil);
    SIZE(nvmlProcessDetail_v1_t); OFF(nvmlProcessDetail_v1_t, usedGpuMemory);
    OFF(nvmlProcessDetail_v1_t, computeInstanceId);
    OFF(nvmlProcessDetail_v1_t, usedGpuCcProtectedMemory);
    SIZE(nvmlProcessDetailList_t); OFF(nvmlProcessDetailList_t, mode);
    OFF(nvmlProcessDetailList_t, numProcArrayEntries); OFF(nvmlProcessDetailList_t, procArray);
    SIZE(nvmlGpuInstancePlacement_t); OFF(nvmlGpuInstancePlacement_t, size);
    SIZE(nvmlGpuInstanceProfileInfo_t); OFF(nvmlGpuInstanceProfileInfo_t, sliceCount);
    OFF(nvmlGpuInstanceProfileInfo_t, instanceCount); OFF(nvmlGpuInstanceProfileInfo_t, ofaCount);
    OFF(nvmlGpuInstanceProfileInfo_t, memorySizeMB);
    SIZE(nvmlGpuInstanceInfo_t); OFF(nvmlGpuInstanceInfo_t, id);
    OFF(nvmlGpuInstanceInfo_t, profileId); OFF(nvmlGpuInstanceInfo_t, placement);
    SIZE(nvmlComputeInstanceProfileInfo_t); OFF(nvmlComputeInstanceProfileInfo_t, sliceCount);
    OFF(nvmlComputeInstanceProfileInfo_t, sharedOfaCount);
    SIZE(nvmlDeviceAttributes_t); OFF(nvmlDeviceAttributes_t, gpuInstanceSliceCount);
    OFF(nvmlDeviceAttributes_t, memorySizeMB);

    VAL(NVML_SUCCESS); VAL(NVML_ERROR_UNINITIALIZED); VAL(NVML_ERROR_INVALID_ARGUMENT);
    VAL(NVML_ERROR_NOT_SUPPORTED); VAL(NVML_ERROR_NO_PERMISSION);
    VAL(NVML_ERROR_ALREADY_INITIALIZED); VAL(NVML_ERROR_NOT_FOUND);
    VAL(NVML_ERROR_INSUFFICIENT_SIZE); VAL(NVML_ERROR_DRIVER_NOT_LOADED);
    VAL(NVML_ERROR_FUNCTION_NOT_FOUND); VAL(NVML_ERROR_GPU_IS_LOST); VAL(NVML_ERROR_IN_USE);
    VAL(NVML_ERROR_INSUFFICIENT_RESOURCES); VAL(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    VAL(NVML_ERROR_UNKNOWN);
    VAL(NVML_DEVICE_UUID_V2_BUFFER_SIZE); VAL(NVML_DEVICE_NAME_V2_BUFFER_SIZE);
    VAL(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE); VAL(nvmlMemory_v2);
    VAL(nvmlProcessDetailList_v1); VAL(NVML_PROCESS_MODE_COMPUTE);
    VAL(NVML_PROCESS_MODE_GRAPHICS); VAL(NVML_PROCESS_MODE_MPS);
    VAL(NVML_DEVICE_MIG_DISABLE); VAL(NVML_DEVICE_MIG_ENABLE);
    VAL(NVML_COMPUTEMODE_DEFAULT); VAL(NVML_COMPUTEMODE_EXCLUSIVE_THREAD);
    VAL(NVML_COMPUTEMODE_PROHIBITED); VAL(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
    VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE); VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE);
    VAL(NVML_GPU_INSTANCE_PROFILE_3_SLICE); VAL(NVML_GPU_INSTANCE_PROFILE_4_SLICE);
    VAL(NVML_GPU_INSTANCE_PROFILE_7_SLICE); VAL(NVML_GPU_INSTANCE_PROFILE_8_SLICE);
    VAL(NVML_GPU_INSTANCE_PROFILE_6_SLICE); VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1);
    VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1); VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2);
#if defined(CARVE_SIDE) || defined(NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME) /* R575 on */
    VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX); VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX);
    VAL(NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX); VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME);
    VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME); VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME);
    VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME);
#endif
    VAL(NVML_GPU_INSTANCE_PROFILE_COUNT);
    VAL(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE); VAL(NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
    VAL(NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE); VAL(NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE);
    VAL(NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE); VAL(NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE);
    VAL(NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE); VAL(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1);
    VAL(NVML_COMPUTE_INSTANCE_PROFILE_COUNT); VAL(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED);
}

int main(void)
{
    const char *cu = getenv("ABI_LIBCUDA"), *nv = getenv("ABI_LIBNVML");
    cuda_lib = dlopen(cu ? cu : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_lib = dlopen(nv ? nv : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    cuda_facts();
    nvml_facts();
    /* every entry point carve declares: SYM(cuda_lib|nvml_lib, name) lines, which
     * run-abi-check.sh writes from include/carve/ into the file ABI_SYMS names */
#ifdef ABI_SYMS
#include ABI_SYMS
#endif
    /* each row of driver_entries.def at its version and just before it */
#define CARVE_ENTRY(name, base, ver, pt)                                                       \
    gpa(#base, ver, (pt) != 0);                                                                \
    gpa(#base, (ver) - 10, (pt) != 0);
#include "carve/driver_entries.def"
    return 0;
}
