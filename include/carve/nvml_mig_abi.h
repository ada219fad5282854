/* nvml_mig_abi.h - carve's own declarations of NVML's MIG (Multi-Instance GPU) types,
 * constants and entry points, as nvml.h lays them out (checked against nvml.h's struct
 * definitions: placement {start, size}, GPU instance profile info ending in memorySizeMB,
 * GPU instance info {device, id, profileId, placement}). Used by `carve mig` (planner/
 * mig_nvml.c, through dlsym) and implemented by the simulated GPU (simgpu/sim_nvml.c). */
#ifndef CARVE_NVML_MIG_ABI_H
#define CARVE_NVML_MIG_ABI_H

#include "carve/nvml_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

/* nvmlDeviceGetGpuInstanceProfileInfo's `profile`: NVML_GPU_INSTANCE_PROFILE_* */
enum {
    NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1,
    NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2,
    NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3,
    NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4,
    NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5,
    NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x9,
    /* R575 on (graphics-capable and media-extension variants); older drivers refuse them */
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX = 0xA,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX = 0xB,
    NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX = 0xC,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME = 0xD,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME = 0xE,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME = 0xF,
    NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME = 0x10,
    NVML_GPU_INSTANCE_PROFILE_COUNT = 0x11,
};

/* nvmlGpuInstanceGetComputeInstanceProfileInfo's `profile`: NVML_COMPUTE_INSTANCE_PROFILE_* */
enum {
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0x0,
    NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 0x1,
    NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 0x2,
    NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 0x3,
    NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 0x4,
    NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE = 0x5,
    NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE = 0x6,
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
    NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x8,
};
enum { NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0 };

/* NVML_ERROR_IN_USE: a GPU instance still has compute instances, or a process runs in it;
   NVML_ERROR_INSUFFICIENT_RESOURCES: no room for the instance asked for */
enum { NVML_ERROR_IN_USE = 19, NVML_ERROR_INSUFFICIENT_RESOURCES = 23 };

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start; /* first memory slice */
    unsigned int size;  /* memory slices */
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
    unsigned int id; /* the profile ID (19 for 1g.10gb ...) that placements and creation take */
    unsigned int isP2pSupported;
    unsigned int sliceCount; /* compute slices */
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

/* what a MIG device handle is: its slices and memory (nvmlDeviceGetAttributes_v2) */
typedef struct nvmlDeviceAttributes_st {
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count);
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t *gpuInstances, unsigned int *count);
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t *gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t *computeInstances,
                                                unsigned int *count);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id);

#ifdef __cplusplus
}
#endif
#endif
